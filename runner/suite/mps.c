/* MPS control daemon of one run (see mps.h). The daemon forks itself into the background
 * (-d), so it is found again through the pid file it writes in its pipe folder. */
#define _GNU_SOURCE
#include "runner/suite/mps.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void mps_control_argv(const mps_daemon *d, int start, const char *argv[3]) {
    argv[0] = d->program[0] ? d->program : MPS_CONTROL_PROGRAM;
    argv[1] = start ? "-d" : NULL;
    argv[2] = NULL;
}

int mps_daemon_env(const mps_daemon *d, job_env *env) {
    int rc = job_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", "%s", d->pipe_dir);
    rc |= job_env_set(env, "CUDA_MPS_LOG_DIRECTORY", "%s", d->log_dir);
    if (d->visible[0]) rc |= job_env_set(env, "CUDA_VISIBLE_DEVICES", "%s", d->visible);
    return rc ? -1 : 0;
}

void mps_format_mem_limit(char *out, size_t size, long long bytes) {
    const long long mib = 1LL << 20, gib = 1LL << 30;
    if (bytes % gib == 0) snprintf(out, size, "0=%lldG", bytes / gib);
    else snprintf(out, size, "0=%lldM", (bytes + mib - 1) / mib);
}

int mps_client_env(const mps_daemon *d, int sm_percent, long long mem_limit_bytes, job_env *env) {
    int rc = job_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", "%s", d->pipe_dir);
    rc |= job_env_set(env, "CUDA_MPS_LOG_DIRECTORY", "%s", d->log_dir);
    /* The server renumbers the GPUs it was given: a client repeats a UUID (stable), but an index
     * would name the wrong device, so clients then see whatever the server exposes. */
    if (strncmp(d->visible, "GPU-", 4) == 0 || strncmp(d->visible, "MIG-", 4) == 0)
        rc |= job_env_set(env, "CUDA_VISIBLE_DEVICES", "%s", d->visible);
    else
        rc |= job_env_set(env, "CUDA_VISIBLE_DEVICES", NULL);
    if (sm_percent > 0) rc |= job_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "%d", sm_percent);
    else rc |= job_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL);
    if (mem_limit_bytes > 0) {
        char limit[64];
        mps_format_mem_limit(limit, sizeof limit, mem_limit_bytes);
        rc |= job_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "%s", limit);
    } else {
        rc |= job_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", NULL);
    }
    return rc ? -1 : 0;
}

long long mps_parse_bytes(const char *text) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !(v >= 0) || isinf(v)) return -1;
    double scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1024.0; end++; break;
    case 'm': case 'M': scale = 1048576.0; end++; break;
    case 'g': case 'G': scale = 1073741824.0; end++; break;
    case 't': case 'T': scale = 1099511627776.0; end++; break;
    default: break;
    }
    if (scale > 1 && *end == 'i') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return -1;
    double bytes = v * scale;
    return bytes < 9e18 ? (long long)llround(bytes) : -1;
}

/* Splits a comma list into at most max items; returns the count or -1. */
static int split_list(const char *text, char items[][64], int max) {
    int n = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n >= max || len == 0 || len >= 64) return -1;
        memcpy(items[n], p, len);
        items[n++][len] = 0;
        if (!comma) return n;
        p = comma + 1;
    }
}

int mps_parse_sm_list(const char *text, int job_count, int *out, char *err, size_t err_size) {
    char items[MIX_MAX_JOBS][64];
    int n = split_list(text, items, MIX_MAX_JOBS);
    if (n < 0 || (n != 1 && n != job_count)) {
        snprintf(err, err_size, "--mps-sm '%s': expected one percentage, or one per job (%d), "
                 "separated by commas, e.g. 25,25,50", text, job_count);
        return -1;
    }
    for (int i = 0; i < job_count; i++) {
        const char *item = items[n == 1 ? 0 : i];
        char *end;
        long v = strtol(item, &end, 10);
        if (*end || v < 1 || v > 100) {
            snprintf(err, err_size, "--mps-sm: '%s' is not a percentage from 1 to 100", item);
            return -1;
        }
        out[i] = (int)v;
    }
    return 0;
}

int mps_parse_mem_list(const char *text, int job_count, long long *out, char *err, size_t err_size) {
    char items[MIX_MAX_JOBS][64];
    int n = split_list(text, items, MIX_MAX_JOBS);
    if (n < 0 || (n != 1 && n != job_count)) {
        snprintf(err, err_size, "--mps-mem '%s': expected one size, or one per job (%d), separated "
                 "by commas, e.g. 4G,4G,8G", text, job_count);
        return -1;
    }
    for (int i = 0; i < job_count; i++) {
        const char *item = items[n == 1 ? 0 : i];
        long long v = mps_parse_bytes(item);
        if (v < (1LL << 20)) {
            snprintf(err, err_size, "--mps-mem: '%s' is not a size of at least 1M (use K, M, G, T)", item);
            return -1;
        }
        out[i] = v;
    }
    return 0;
}

static int is_socket(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static long read_pid_file(const char *pipe_dir) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/nvidia-cuda-mps-control.pid", pipe_dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1) pid = 0;
        fclose(f);
    }
    return pid;
}

/* Alive and not a zombie: a daemon that exited stays a zombie until whoever adopted it reaps it. */
static int pid_alive(long pid) {
    if (pid <= 0) return 0;
    /* run_suite is a subreaper: the daemon, orphaned by its own fork, is our child; reap it */
    if (waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid) return 0;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM) return 0;
    char path[64], stat_line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(stat_line, 1, sizeof stat_line - 1, f);
    fclose(f);
    stat_line[n] = 0;
    const char *after_name = strrchr(stat_line, ')'); /* "pid (comm) S ..." */
    return !(after_name && after_name[1] == ' ' && after_name[2] == 'Z');
}

int mps_daemon_running(const char *pipe_dir) {
    char control[PATH_MAX + 16];
    snprintf(control, sizeof control, "%s/control", pipe_dir);
    if (!is_socket(control)) return 0;
    long pid = read_pid_file(pipe_dir);
    return pid == 0 || pid_alive(pid); /* no pid file: trust the socket */
}

const char *mps_default_pipe_dir(void) {
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    return dir && *dir ? dir : MPS_DEFAULT_PIPE_DIR;
}

static int make_private_dir(const char *path, char *err, size_t err_size) {
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_size, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    if (chmod(path, 0700) != 0) { /* the umask may have narrowed it; an old folder may be wider */
        snprintf(err, err_size, "cannot make %s private (mode 0700): %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Runs the control program with the daemon's environment; stdin_text NULL starts the daemon. */
static int run_control(const mps_daemon *d, const char *stdin_text, char *out, size_t out_size) {
    job_env env = {0};
    mps_daemon_env(d, &env);
    char **envp = job_build_env(environ, &env);
    const char *argv[3];
    mps_control_argv(d, stdin_text == NULL, argv);
    char program[PATH_MAX];
    int status = -1;
    if (strchr(argv[0], '/')) {
        snprintf(program, sizeof program, "%s", argv[0]);
    } else { /* posix_spawn needs a path: search PATH as a shell would */
        const char *path = getenv("PATH");
        char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
        program[0] = 0;
        for (char *dir = strtok_r(copy, ":", &save); dir && !program[0]; dir = strtok_r(NULL, ":", &save)) {
            char candidate[PATH_MAX];
            snprintf(candidate, sizeof candidate, "%s/%s", dir, argv[0]);
            if (access(candidate, X_OK) == 0) snprintf(program, sizeof program, "%s", candidate);
        }
        free(copy);
        if (!program[0]) {
            job_free_strv(envp);
            errno = ENOENT;
            return -1;
        }
    }
    argv[0] = program;
    if (envp) status = jobs_run_capture((char *const *)argv, envp, stdin_text, out, out_size, 30.0);
    job_free_strv(envp);
    return status;
}

static void remove_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path); /* sockets, fifos, the pid file: never folders */
    }
    closedir(d);
}

static void log_tail(const mps_daemon *d, char *out, size_t size) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/control.log", d->log_dir);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) snprintf(out, size, "%s", line);
    fclose(f);
    out[strcspn(out, "\n")] = 0;
}

int mps_start(mps_daemon *d, const char *run_dir, const char *visible, char *err, size_t err_size) {
    if (!d->program[0]) snprintf(d->program, sizeof d->program, "%s", MPS_CONTROL_PROGRAM);
    snprintf(d->visible, sizeof d->visible, "%s", visible ? visible : "");
    snprintf(d->log_dir, sizeof d->log_dir, "%s/mps-log", run_dir);
    snprintf(d->pipe_dir, sizeof d->pipe_dir, "%s/mps-pipe", run_dir);
    if (make_private_dir(d->log_dir, err, err_size) != 0) return -1;
    struct sockaddr_un probe;
    /* The daemon's sockets live in the pipe folder: the name must fit sun_path. */
    if (strlen(d->pipe_dir) + sizeof "/control_privileged" >= sizeof probe.sun_path) {
        snprintf(d->pipe_dir, sizeof d->pipe_dir, "/tmp/suite-mps-XXXXXX");
        if (!mkdtemp(d->pipe_dir)) {
            snprintf(err, err_size, "cannot create a private MPS pipe folder in /tmp: %s", strerror(errno));
            return -1;
        }
        fprintf(stderr, "note: the run folder's path is too long for MPS sockets; pipe folder: %s\n",
                d->pipe_dir);
    } else if (make_private_dir(d->pipe_dir, err, err_size) != 0) {
        return -1;
    }
    d->pipe_dir_made = 1;
    char out[1024];
    int st = run_control(d, NULL, out, sizeof out);
    if (st == -1 || st == -2 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (st == -1) snprintf(err, err_size, "cannot run %s: %s (is the NVIDIA driver's MPS installed?)",
                               d->program, strerror(errno));
        else snprintf(err, err_size, "%s -d did not start (status %d)", d->program, st);
        rmdir(d->pipe_dir);
        d->pipe_dir_made = 0;
        return -1;
    }
    d->owned = d->started = 1;
    for (int i = 0; i < 100 && !mps_daemon_running(d->pipe_dir); i++) usleep(100000);
    if (!mps_daemon_running(d->pipe_dir)) {
        char tail[512];
        log_tail(d, tail, sizeof tail);
        snprintf(err, err_size, "the MPS control daemon did not open %s/control within 10 s%s%s",
                 d->pipe_dir, tail[0] ? "; its log says: " : "", tail);
        char ignored[256];
        mps_stop(d, ignored, sizeof ignored);
        return -1;
    }
    return 0;
}

int mps_attach(mps_daemon *d, const char *pipe_dir, char *err, size_t err_size) {
    if (!d->program[0]) snprintf(d->program, sizeof d->program, "%s", MPS_CONTROL_PROGRAM);
    snprintf(d->pipe_dir, sizeof d->pipe_dir, "%s", pipe_dir);
    const char *log = getenv("CUDA_MPS_LOG_DIRECTORY");
    snprintf(d->log_dir, sizeof d->log_dir, "%s", log && *log ? log : "/var/log/nvidia-mps");
    d->owned = 0;
    d->pipe_dir_made = 0;
    if (!mps_daemon_running(pipe_dir)) {
        snprintf(err, err_size, "--mps-pipe %s: no MPS control daemon answers there (no %s/control "
                 "socket with a live pid)", pipe_dir, pipe_dir);
        return -1;
    }
    return 0;
}

int mps_stop(mps_daemon *d, char *err, size_t err_size) {
    err[0] = 0;
    if (!d->owned) return 0;
    long pid = read_pid_file(d->pipe_dir);
    char out[1024];
    int st = run_control(d, "quit\n", out, sizeof out);
    int rc = 0;
    if (st == -1 || st == -2) {
        snprintf(err, err_size, "%s could not send quit (%s)", d->program,
                 st == -1 ? strerror(errno) : "timed out");
        rc = -1;
    }
    /* "quit" returns at once; the daemon and its server leave shortly after. */
    for (int i = 0; i < 150 && pid_alive(pid); i++) usleep(100000);
    if (pid_alive(pid)) {
        kill((pid_t)pid, SIGTERM);
        for (int i = 0; i < 50 && pid_alive(pid); i++) usleep(100000);
        if (pid_alive(pid)) kill((pid_t)pid, SIGKILL);
        snprintf(err, err_size, "the MPS control daemon (pid %ld) ignored quit and was killed", pid);
        rc = -1;
    }
    d->owned = 0;
    if (d->pipe_dir_made) {
        remove_dir_entries(d->pipe_dir);
        rmdir(d->pipe_dir);
        d->pipe_dir_made = 0;
    }
    return rc;
}
