/* MPS control daemon of one run (see mps.h). The daemon forks itself into the background
 * (-d), so it is found again through the pid file it writes in its pipe folder. */
#define _GNU_SOURCE
#include "runner/suite/gpu/mps.h"

#include <ctype.h>
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

#include "base/list.h"
#include "base/number.h"
#include "kernels/knobs.h"

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

int mps_client_env(const mps_daemon *d, int sm_percent, long long mem_limit_bytes, int queues, job_env *env) {
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
    /* The server shares about 120 hardware work queues among its clients. A client keeps the MPS
     * default unless queues says otherwise (a GPU-decoding job: alone it asks for 32,
     * runner/train/workload_image.c, and at 32 a fourth JPEG-fed client failed to make its context);
     * more queues for every client slowed the partitioned clients of mig-emulate. */
    if (queues > 0) rc |= job_env_set(env, "CUDA_DEVICE_MAX_CONNECTIONS", "%d", queues);
    return rc ? -1 : 0;
}

/* Both lists by the list and number rules of every grammar (base/list.h, base/number.h). */
int mps_parse_sm_list(const char *text, int job_count, int *out, char *err, size_t err_size) {
    list_entry e[MIX_MAX_JOBS];
    if (list_per_job("--mps-sm", text, ',', job_count, e, err, err_size) != 0) return -1;
    for (int i = 0; i < job_count; i++) {
        char name[256];
        long long v;
        list_entry_name("--mps-sm", text, e[i].at == e[0].at && i ? 0 : i, name, sizeof name);
        if (number_parse(NUMBER_WHOLE, 1, 100, name, e[i].at, e[i].len, &v, NULL, err, err_size) != 0) return -1;
        out[i] = (int)v;
    }
    return 0;
}

int mps_parse_mem_list(const char *text, int job_count, long long *out, char *err, size_t err_size) {
    list_entry e[MIX_MAX_JOBS];
    if (list_per_job("--mps-mem", text, ',', job_count, e, err, err_size) != 0) return -1;
    for (int i = 0; i < job_count; i++) {
        char name[256];
        list_entry_name("--mps-mem", text, e[i].at == e[0].at && i ? 0 : i, name, sizeof name);
        if (number_parse(NUMBER_SIZE, MPS_MEM_LIMIT_MIN, MPS_MEM_LIMIT_MAX, name, e[i].at, e[i].len, &out[i], NULL, err,
                         err_size) != 0)
            return -1;
    }
    return 0;
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
    if (!envp) { /* the output is what the callers quote */
        snprintf(out, out_size, "its environment: %s", env.refused[0] ? env.refused : "out of memory");
        return -1;
    }
    const char *argv[3];
    mps_control_argv(d, stdin_text == NULL, argv);
    char program[PATH_MAX];
    int status = -1;
    if (jobs_find_program(argv[0], program, sizeof program) != 0) { /* exec needs a path */
        job_free_strv(envp);
        return -1;
    }
    argv[0] = program;
    status = jobs_run_capture((char *const *)argv, envp, stdin_text, out, out_size, 30.0);
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

/* --- ownership: no daemon outlives its run ------------------------------------------------- */

/* Field 22 of /proc/<pid>/stat: with the pid, it names one process for the machine's uptime. */
static unsigned long long process_start(long pid) {
    char line[1024];
    const char *p = mps_proc_stat(pid, line, sizeof line);
    unsigned long long start = 0;
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ') field++;
    if (p && sscanf(p, "%llu", &start) != 1) start = 0;
    return start;
}

int mps_state_dir(char *out, size_t size, char *err, size_t err_size) {
    const char *state = knob_text(KNOB_STATE_DIR), *tmp = getenv("TMPDIR");
    if (state && *state) snprintf(out, size, "%s", state);
    else snprintf(out, size, "%s/suite-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
    return make_private_dir(out, err, err_size);
}

static void record_owner(mps_daemon *d) {
    char path[PATH_MAX + 32], err[PATH_MAX + 128];
    static int sequence = 0;
    snprintf(path, sizeof path, "%s/" MPS_OWNER_FILE, d->pipe_dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld %llu\n", (long)getpid(), process_start((long)getpid()));
        if (fclose(f) != 0) f = NULL;
    }
    char dir[PATH_MAX];
    int ok = f != NULL && mps_state_dir(dir, sizeof dir, err, sizeof err) == 0;
    if (ok) {
        snprintf(d->record, sizeof d->record, "%.*s/mps-%ld-%d", PATH_MAX - 48, dir, (long)getpid(), sequence++);
        f = fopen(d->record, "w");
        ok = f && fprintf(f, "%s\n%s\n", d->pipe_dir, d->log_dir) > 0;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok) d->record[0] = 0;
    }
    if (!ok)
        fprintf(stderr, "warning: cannot record this run as the owner of its MPS daemon (%s); a run_suite "
                "killed with SIGKILL would leave the daemon for you to stop\n", f ? err : strerror(errno));
}

static void forget_owner(mps_daemon *d) {
    if (d->record[0]) unlink(d->record);
    d->record[0] = 0;
}

static int owner_alive(const char *pipe_dir) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" MPS_OWNER_FILE, pipe_dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    unsigned long long start = 0;
    if (f) {
        if (fscanf(f, "%ld %llu", &pid, &start) != 2) pid = 0;
        fclose(f);
    }
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM) && process_start(pid) == start;
}

int mps_stop_stale(FILE *msg) {
    char dir[PATH_MAX], err[PATH_MAX + 128];
    if (mps_state_dir(dir, sizeof dir, err, sizeof err) != 0) return 0;
    DIR *dd = opendir(dir);
    if (!dd) return 0;
    int stopped = 0;
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (strncmp(e->d_name, "mps-", 4) != 0) continue;
        mps_daemon d;
        memset(&d, 0, sizeof d);
        snprintf(d.record, sizeof d.record, "%.*s/%s", PATH_MAX - 300, dir, e->d_name);
        FILE *f = fopen(d.record, "r");
        int read_ok = f && fgets(d.pipe_dir, sizeof d.pipe_dir, f) && fgets(d.log_dir, sizeof d.log_dir, f);
        if (f) fclose(f);
        d.pipe_dir[strcspn(d.pipe_dir, "\n")] = 0;
        d.log_dir[strcspn(d.log_dir, "\n")] = 0;
        if (read_ok && owner_alive(d.pipe_dir)) continue; /* another run's, still running */
        if (read_ok && mps_daemon_running(d.pipe_dir)) {
            long pid = mps_daemon_pid(d.pipe_dir);
            snprintf(d.program, sizeof d.program, "%s", MPS_CONTROL_PROGRAM);
            d.owned = d.pipe_dir_made = 1;
            int rc = mps_stop(&d, err, sizeof err);
            fprintf(msg, "note: stopped a stale MPS control daemon (pid %ld) that a run_suite which is gone "
                    "had started (pipe folder %s)%s%s\n", pid, d.pipe_dir, rc ? ": " : "", rc ? err : "");
            stopped++;
        } else if (read_ok) {
            remove_dir_entries(d.pipe_dir); /* its sockets and pid file, left by a daemon that died too */
            rmdir(d.pipe_dir);
        }
        forget_owner(&d);
    }
    closedir(dd);
    return stopped;
}

/* word in line as a word of its own (not "faults" in a folder's path), case aside */
static int has_word(const char *line, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strcasestr(line, word); p; p = strcasestr(p + 1, word)) {
        int before = p == line || !isalnum((unsigned char)p[-1]);
        int after = !isalnum((unsigned char)p[n]);
        if (before && after) return 1;
    }
    return 0;
}

void mps_fault_evidence(const mps_daemon *d, char *out, size_t size) {
    static const char *const names[] = {"server.log", "control.log"};
    static const char *const words[] = {"fatal", "exception", "xid", "fault", "illegal", "terminated", "error"};
    out[0] = 0;
    if (!d->log_dir[0]) return;
    for (size_t n = 0; n < 2 && !out[0]; n++) {
        char path[PATH_MAX + 32], line[1024];
        snprintf(path, sizeof path, "%s/%s", d->log_dir, names[n]);
        FILE *f = fopen(path, "r");
        while (f && !out[0] && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            for (size_t w = 0; w < sizeof words / sizeof words[0] && !out[0]; w++)
                if (has_word(line, words[w])) snprintf(out, size, "MPS %s: %s", names[n], line);
        }
        if (f) fclose(f);
    }
}

int mps_pipe_dir_fits(const char *pipe_dir) {
    struct sockaddr_un probe;
    return strlen(pipe_dir) + sizeof "/control_privileged" < sizeof probe.sun_path;
}

/* The guardian's task, in its own copy of d made at the fork: the daemon started after it. */
static void quit_orphaned_daemon(void *user) {
    mps_daemon *d = user;
    char err[PATH_MAX + 128];
    d->owned = 1;
    int rc = mps_stop(d, err, sizeof err);
    fprintf(stderr, "note: run_suite is gone without stopping its MPS control daemon; its guardian stopped it "
            "(pipe folder %s)%s%s\n", d->pipe_dir, rc ? ": " : "", rc ? err : "");
}

int mps_start(mps_daemon *d, const char *run_dir, const char *visible, char *err, size_t err_size) {
    if (!d->program[0]) snprintf(d->program, sizeof d->program, "%s", MPS_CONTROL_PROGRAM);
    if (!visible) visible = "";
    if (strlen(visible) >= sizeof d->visible) {
        snprintf(err, err_size, "the MPS daemon's CUDA_VISIBLE_DEVICES is %zu characters long: at most %zu fit",
                 strlen(visible), sizeof d->visible - 1);
        return -1;
    }
    snprintf(d->visible, sizeof d->visible, "%s", visible);
    snprintf(d->log_dir, sizeof d->log_dir, "%s/mps-log", run_dir);
    snprintf(d->pipe_dir, sizeof d->pipe_dir, "%s/mps-pipe", run_dir);
    if (make_private_dir(d->log_dir, err, err_size) != 0) return -1;
    if (!mps_pipe_dir_fits(d->pipe_dir)) {
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
    record_owner(d);
    /* Forked before the daemon, so no moment has a daemon without its guardian. Without one, the
     * next run_suite still stops what a killed one left (mps_stop_stale). */
    if (spawn_guardian_start(&d->guardian, quit_orphaned_daemon, d) != 0)
        fprintf(stderr, "warning: no guardian for the MPS daemon (%s): a run_suite killed with SIGKILL would "
                "leave it until the next run_suite starts\n", strerror(errno));
    char out[1024];
    int st = run_control(d, NULL, out, sizeof out);
    if (st == -1 || st == -2 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (st == -1) snprintf(err, err_size, "cannot run %s: %s (is the NVIDIA driver's MPS installed?)",
                               d->program, strerror(errno));
        else snprintf(err, err_size, "%s -d did not start (status %d)", d->program, st);
        spawn_guardian_dismiss(&d->guardian);
        forget_owner(d);
        remove_dir_entries(d->pipe_dir);
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
    char fault[768];
    mps_fault_evidence(d, fault, sizeof fault);
    if (fault[0]) /* a fatal fault may leave the server unusable: the next mode starts its own */
        fprintf(stderr, "note: %s; this MPS daemon is stopped, a later mode starts a fresh one\n", fault);
    long pid = mps_daemon_pid(d->pipe_dir);
    char out[1024];
    int st = run_control(d, "quit\n", out, sizeof out);
    int rc = 0;
    if (st == -1 || st == -2) {
        snprintf(err, err_size, "%s could not send quit (%s)", d->program,
                 st == -1 ? strerror(errno) : "timed out");
        rc = -1;
    }
    /* "quit" returns at once; the daemon and its server leave shortly after. */
    for (int i = 0; i < 150 && mps_pid_alive(pid); i++) usleep(100000);
    if (mps_pid_alive(pid)) {
        kill((pid_t)pid, SIGTERM);
        for (int i = 0; i < 50 && mps_pid_alive(pid); i++) usleep(100000);
        if (mps_pid_alive(pid)) kill((pid_t)pid, SIGKILL);
        snprintf(err, err_size, "the MPS control daemon (pid %ld) ignored quit and was killed", pid);
        rc = -1;
    }
    d->owned = 0;
    if (d->pipe_dir_made) {
        remove_dir_entries(d->pipe_dir);
        rmdir(d->pipe_dir);
        d->pipe_dir_made = 0;
    }
    forget_owner(d);
    spawn_guardian_dismiss(&d->guardian);
    return rc;
}
