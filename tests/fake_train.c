/* A stand-in for `train` that speaks its protocol without a GPU, so run_suite's orchestration
 * (barrier, events, failures, signals, results) is tested on any machine. It checks its argv as
 * train does (exit 2 on bad usage) and takes its behaviour from the environment:
 *
 *   FAKE_TRAIN="KEY:ACTION,ACTION;KEY:ACTION..."   KEY: "*", a model, "@BATCH" or "MODEL@BATCH"
 *     setup_ms=N      time from start to "ready" (default 20)
 *     epoch_ms=N      time per epoch (default 50)
 *     steps=N         steps per epoch when --steps-per-epoch is absent (default 10)
 *     crash=SIG/K     raise signal SIG at the start of epoch K (K=0: before ready)
 *     fail=K          error event "out of memory" and exit 1 at epoch K (K=0: during setup)
 *     nan=K           epoch K reports "loss":null,"diverged":true, then error event and exit 1
 *     fail_in_window  with --window-protocol: error event "out of memory, inside the window" and exit
 *                     1 at the first step after the runner's first window line, before anything of
 *                     that window is reported (a failure after the window opened, by order, not time)
 *     never_ready     print setup, then wait without ever printing ready
 *     ignore_term     ignore SIGTERM (the runner must escalate to SIGKILL)
 *     no_done         exit 0 without the done event
 *     footprint=B     bytes reported as the total by --dry-run (default 1 GiB)
 *   FAKE_TRAIN_RECORD=DIR   write DIR/<pid>.txt with argv and the CUDA_*, NCCL_* and SUITE_CONV_*
 *                           environment
 * It reports "mps":1 when $CUDA_MPS_PIPE_DIRECTORY holds a control socket, as a CUDA program
 * would find a daemon there.
 *
 * Training prints a "progress" event after every step. With --window-protocol (run_suite's window
 * measurement) it trains past its planned epochs until "stop" on stdin, and reports each
 * "window T0 T1" it is given with runner/train/step_window.h, as train does, from each step's end;
 * without it each epoch's step times go before its epoch event ("steps" events), as train's do. --inject-fault KIND@STEP imitates train's
 * injected faults (runner/train/fault.h) with its "fault" event and error texts: oom and
 * illegal-address fail with the CUDA error, nan diverges, exit, hang, sigkill. As an MPS client
 * (a control socket in the pipe folder) illegal-address also does what MPS does with a fatal
 * fault: it writes a line in the server's log (server.log in $CUDA_MPS_LOG_DIRECTORY) and marks
 * the pipe folder, and every other client fails at its next step with the error MPS gives them.
 *
 * With --launcher env|slurm it is one rank of ranks another program started (srun in
 * tests/test_slurm_cluster.c), as train is: it reads its rank from the environment and joins the
 * others with train's own code (runner/train/rank_env.h, runner/train/rendezvous.h), rank 0 handing
 * out an id of its own; each rank prints "fake_train: rank R of W (local L) on HOST: id ID from
 * ADDR:PORT (where they came from)", rank 0 also each line the others send it ("rank 0 heard rank
 * K: ..."); then they finish together (exit 0), or a refusal exits 2 and a failure 1, as train's.
 *
 * Run under the name nvidia-cuda-mps-control (a symlink), it imitates MPS's control program:
 * "-d" puts a daemon in the background that holds $CUDA_MPS_PIPE_DIRECTORY/control (a socket)
 * and writes nvidia-cuda-mps-control.pid there; without arguments it reads commands on stdin
 * and "quit" stops that daemon. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runner/train/rank_env.h"
#include "runner/train/rendezvous.h"
#include "runner/train/step_window.h"
#include "base/line_reader.h"

extern char **environ;

typedef struct behaviour {
    long setup_ms, epoch_ms, steps, footprint;
    int crash_signal, crash_epoch, fail_epoch, nan_epoch;
    int never_ready, ignore_term, no_done, fail_in_window;
} behaviour;

typedef struct options {
    const char *model, *data, *data_root, *fault, *launcher;
    long batch, image_size, classes, epochs, steps;
    int json, wait_go, dry_run, have_image_size, have_classes, window_protocol;
    long warmup_steps; /* the window protocol's first epoch, where shorter */
} options;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

static void usage_error(const char *message, const char *arg) {
    printf("{\"event\":\"error\",\"message\":\"%s%s\"}\n", message, arg ? arg : "");
    fprintf(stderr, "fake_train: %s%s\n", message, arg ? arg : "");
    exit(2);
}

static void apply_action(behaviour *b, const char *action) {
    if (sscanf(action, "setup_ms=%ld", &b->setup_ms) == 1) return;
    if (sscanf(action, "epoch_ms=%ld", &b->epoch_ms) == 1) return;
    if (sscanf(action, "steps=%ld", &b->steps) == 1) return;
    if (sscanf(action, "crash=%d/%d", &b->crash_signal, &b->crash_epoch) == 2) return;
    if (sscanf(action, "fail=%d", &b->fail_epoch) == 1) return;
    if (sscanf(action, "nan=%d", &b->nan_epoch) == 1) return;
    if (sscanf(action, "footprint=%ld", &b->footprint) == 1) return;
    if (strcmp(action, "never_ready") == 0) b->never_ready = 1;
    else if (strcmp(action, "ignore_term") == 0) b->ignore_term = 1;
    else if (strcmp(action, "no_done") == 0) b->no_done = 1;
    else if (strcmp(action, "fail_in_window") == 0) b->fail_in_window = 1;
    else fprintf(stderr, "fake_train: unknown FAKE_TRAIN action '%s'\n", action);
}

static int key_matches(const char *key, const options *o) {
    if (strcmp(key, "*") == 0) return 1;
    char with_batch[128];
    snprintf(with_batch, sizeof with_batch, "%s@%ld", o->model, o->batch);
    if (key[0] == '@') return atol(key + 1) == o->batch;
    return strcmp(key, o->model) == 0 || strcmp(key, with_batch) == 0;
}

static behaviour read_behaviour(const options *o) {
    behaviour b = {.setup_ms = 20, .epoch_ms = 50, .steps = 10, .footprint = 1L << 30,
                   .crash_epoch = -1, .fail_epoch = -1, .nan_epoch = -1};
    const char *spec = getenv("FAKE_TRAIN");
    if (!spec) return b;
    char *copy = strdup(spec), *save_rule = NULL;
    for (char *rule = strtok_r(copy, ";", &save_rule); rule; rule = strtok_r(NULL, ";", &save_rule)) {
        char *colon = strchr(rule, ':');
        if (!colon) continue;
        *colon = 0;
        if (!key_matches(rule, o)) continue;
        char *save_action = NULL;
        for (char *a = strtok_r(colon + 1, ",", &save_action); a; a = strtok_r(NULL, ",", &save_action))
            apply_action(&b, a);
    }
    free(copy);
    return b;
}

static long need_number(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) usage_error("missing value after ", argv[*i]);
    char *end;
    long v = strtol(argv[*i + 1], &end, 10);
    if (*end || v < 0) usage_error("expected a non-negative integer after ", argv[*i]);
    (*i)++;
    return v;
}

static options parse_options(int argc, char **argv) {
    options o = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--model") == 0 && i + 1 < argc) o.model = argv[++i];
        else if (strcmp(a, "--data") == 0 && i + 1 < argc) o.data = argv[++i];
        else if (strcmp(a, "--data-root") == 0 && i + 1 < argc) o.data_root = argv[++i];
        else if (strcmp(a, "--data-if-present") == 0) continue; /* run_suite passes it with every root */
        else if (strcmp(a, "--batch") == 0) o.batch = need_number(argc, argv, &i);
        else if (strcmp(a, "--image-size") == 0) { o.image_size = need_number(argc, argv, &i); o.have_image_size = 1; }
        else if (strcmp(a, "--classes") == 0) { o.classes = need_number(argc, argv, &i); o.have_classes = 1; }
        else if (strcmp(a, "--epochs") == 0) o.epochs = need_number(argc, argv, &i);
        else if (strcmp(a, "--steps-per-epoch") == 0) o.steps = need_number(argc, argv, &i);
        else if (strcmp(a, "--seed") == 0) need_number(argc, argv, &i);
        else if (strcmp(a, "--gpus") == 0) need_number(argc, argv, &i); /* data-parallel ranks */
        else if (strcmp(a, "--max-rows") == 0) need_number(argc, argv, &i); /* a recommender's table cap */
        else if (strcmp(a, "--precision") == 0 && i + 1 < argc) i++;
        else if (strcmp(a, "--inject-fault") == 0 && i + 1 < argc) o.fault = argv[++i];
        else if (strcmp(a, "--json") == 0) o.json = 1;
        else if (strcmp(a, "--wait-go") == 0) o.wait_go = 1;
        else if (strcmp(a, "--window-protocol") == 0) o.window_protocol = 1;
        else if (strcmp(a, "--warmup-steps") == 0) o.warmup_steps = need_number(argc, argv, &i);
        else if (strcmp(a, "--dry-run") == 0) o.dry_run = 1;
        else if (strcmp(a, "--launcher") == 0 && i + 1 < argc) o.launcher = argv[++i];
        else usage_error("unknown option ", a);
    }
    if (!o.model || !o.data) usage_error("--model and --data are required", NULL);
    if (o.batch <= 0) usage_error("--batch is required", NULL);
    if ((o.have_image_size && o.image_size < 8) || (o.have_classes && o.classes < 1))
        usage_error("--image-size must be at least 8 and --classes at least 1", NULL);
    if (o.launcher && strcmp(o.launcher, "env") && strcmp(o.launcher, "slurm"))
        usage_error("--launcher: expected env or slurm, got ", o.launcher);
    if (o.launcher && !o.dry_run) return o; /* a rank: no runner's protocol */
    if (!o.json) usage_error("--json is required by this fake", NULL);
    if (!o.dry_run && (o.epochs <= 0 || !o.wait_go))
        usage_error("--epochs N and --wait-go are required when training", NULL);
    return o;
}

static void record(int argc, char **argv) {
    const char *dir = getenv("FAKE_TRAIN_RECORD");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%d.txt", dir, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < argc; i++) fprintf(f, "argv %s\n", argv[i]);
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "CUDA_", 5) == 0 || strncmp(*e, "NCCL_", 5) == 0 || strncmp(*e, "SUITE_CONV_", 11) == 0)
            fprintf(f, "env %s\n", *e);
    fclose(f);
}

static void wait_for_go(line_reader *in) {
    char line[64];
    while (line_reader_next(in, -1, line, sizeof line) == 1) {
        if (strncmp(line, "go", 2) == 0) return;
    }
    printf("{\"event\":\"error\",\"message\":\"stdin closed before go\"}\n");
    exit(1);
}

static void fail_now(const char *message) {
    printf("{\"event\":\"error\",\"message\":\"%s\"}\n", message);
    fprintf(stderr, "fake_train: %s\n", message);
    exit(1);
}

static int has_control_socket(const char *dir) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/control", dir ? dir : "");
    return dir && *dir && stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

#define FATAL_MARK "fake-mps-fatal-fault"

/* The pipe folder's mark of a fatal fault, when this process is an MPS client. */
static int mps_poisoned(void) {
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[4200];
    snprintf(path, sizeof path, "%s/" FATAL_MARK, dir ? dir : "");
    return has_control_socket(dir) && access(path, F_OK) == 0;
}

static void fail_cuda(const char *message) {
    fprintf(stderr, "%s\n", message); /* CHECK_CUDA's way: stderr and exit 1, no event */
    exit(1);
}

static void inject_fault(const char *kind, long step) {
    printf("{\"event\":\"fault\",\"kind\":\"%s\",\"step\":%ld,\"t\":%.6f}\n", kind, step, now());
    fprintf(stderr, "train: injecting fault %s at step %ld\n", kind, step);
    char message[256];
    if (strcmp(kind, "oom") == 0) {
        snprintf(message, sizeof message, "cudaMalloc: out of memory (cudaErrorMemoryAllocation) after taking "
                 "1.00 GiB more (injected fault oom at step %ld)", step);
        fail_now(message);
    } else if (strcmp(kind, "illegal-address") == 0) {
        const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY"), *log_dir = getenv("CUDA_MPS_LOG_DIRECTORY");
        if (has_control_socket(dir)) {
            char path[4200];
            snprintf(path, sizeof path, "%s/" FATAL_MARK, dir);
            FILE *f = fopen(path, "w");
            if (f) fclose(f);
            snprintf(path, sizeof path, "%s/server.log", log_dir ? log_dir : dir);
            f = fopen(path, "a");
            if (f) fprintf(f, "[fake] Server 1: Client %d encountered a fatal GPU error: illegal address; "
                           "terminating all clients\n", (int)getpid()), fclose(f);
        }
        snprintf(message, sizeof message, "cudaStreamSynchronize: an illegal memory access was encountered "
                 "(cudaErrorIllegalAddress) (injected fault illegal-address at step %ld)", step);
        fail_now(message);
    } else if (strcmp(kind, "exit") == 0) {
        exit(1);
    } else if (strcmp(kind, "hang") == 0) {
        for (;;) pause();
    } else if (strcmp(kind, "sigkill") == 0) {
        raise(SIGKILL);
    }
}

static volatile sig_atomic_t daemon_stop = 0;
static void on_daemon_term(int signo) { daemon_stop = signo; }

/* The MPS control program's two uses: start a daemon (-d), or pass "quit" to it. */
static int fake_mps_control(int argc, char **argv) {
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *log_dir = getenv("CUDA_MPS_LOG_DIRECTORY");
    if (!dir || !*dir) dir = "/tmp/nvidia-mps";
    char control[4200], pid_path[4200];
    snprintf(control, sizeof control, "%s/control", dir);
    snprintf(pid_path, sizeof pid_path, "%s/nvidia-cuda-mps-control.pid", dir);
    if (argc > 1 && strcmp(argv[1], "-d") == 0) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        if (strlen(control) >= sizeof addr.sun_path) {
            fprintf(stderr, "fake mps: socket path too long: %s\n", control);
            return 1;
        }
        memcpy(addr.sun_path, control, strlen(control) + 1);
        if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 4) != 0) {
            fprintf(stderr, "fake mps: cannot listen on %s: %s\n", control, strerror(errno));
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid > 0) {
            FILE *f = fopen(pid_path, "w");
            if (f) fprintf(f, "%d\n", (int)pid), fclose(f);
            return 0;
        }
        setsid();
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        if (log_dir) {
            char log[4200];
            snprintf(log, sizeof log, "%s/control.log", log_dir);
            FILE *f = fopen(log, "a");
            if (f) fprintf(f, "fake control daemon %d started\n", (int)getpid()), fclose(f);
        }
        signal(SIGTERM, on_daemon_term);
        while (!daemon_stop) pause();
        close(fd);
        unlink(control);
        unlink(pid_path);
        _exit(0);
    }
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "quit", 4) != 0) continue;
        FILE *f = fopen(pid_path, "r");
        int pid = 0;
        if (f) {
            if (fscanf(f, "%d", &pid) != 1) pid = 0;
            fclose(f);
        }
        if (pid > 0) kill(pid, SIGTERM);
    }
    return 0;
}

static void emit(cJSON *e) {
    char *text = cJSON_PrintUnformatted(e);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(e);
}

/* The window protocol after a step that ended at t after ms: the runner's lines are read without
 * waiting; each window whose figures are final is reported (or, with fail_in_window, the job fails
 * once it has been given one). */
static void window_step(step_windows *win, line_reader *in, double t, double ms, const behaviour *b) {
    step_windows_add(win, t, ms);
    char line[256];
    int got;
    while ((got = line_reader_next(in, 0, line, sizeof line)) == 1) step_windows_command(win, line);
    if (got < 0) win->stopped = 1; /* the runner closed stdin: nothing more will come */
    if (b->fail_in_window && win->window_count > 0) fail_now("out of memory, inside the window");
    for (cJSON *e; (e = step_windows_next_event(win, 0));) emit(e);
}

static void heard(void *user, int rank, const char *line) {
    (void)user;
    printf("fake_train: rank 0 heard rank %d: %s\n", rank, line);
}

/* One rank of ranks a launcher started: the rendezvous, a line to rank 0, the end together. */
static int launched_rank(const options *o) {
    rank_env env;
    char err[2048], id[RENDEZVOUS_ID_MAX], host[256] = "", where[200];
    if (rank_env_read(strcmp(o->launcher, "env") ? RANK_LAUNCHER_SLURM : RANK_LAUNCHER_ENV, rank_env_getenv, NULL,
                      &env, err, sizeof err) != 0) {
        fprintf(stderr, "fake_train: %s\n", err);
        return 2;
    }
    snprintf(id, sizeof id, "fake-id-%d", (int)getpid());
    snprintf(where, sizeof where, "%s; port from %s", env.addr_from, env.port_from);
    rendezvous_config c = {env.rank, env.world, env.master_addr, env.master_port, 60, where};
    int code;
    rendezvous *r = rendezvous_join(&c, id, id, sizeof id, &code, err, sizeof err);
    if (!r) {
        fprintf(stderr, "fake_train: rank %d of %d: %s\n", env.rank, env.world, err);
        return code;
    }
    gethostname(host, sizeof host - 1);
    printf("fake_train: rank %d of %d (local %d) on %s: id %s from %s:%d (%s)\n", env.rank, env.world,
           env.local_rank, host, id, env.master_addr, env.master_port, where);
    rendezvous_hooks hooks = {heard, NULL, NULL};
    if (rendezvous_watch(r, &hooks, err, sizeof err) != 0) return 1;
    if (env.rank == 0) rendezvous_release(r);
    else rendezvous_wait_release(r);
    char line[128];
    snprintf(line, sizeof line, "{\"event\":\"done\",\"model\":\"%s\",\"rank\":%d}", o->model, env.rank);
    if (env.rank) rendezvous_send(r, line);
    int rc = rendezvous_finish(r, err, sizeof err);
    if (rc != 0) fprintf(stderr, "fake_train: %s\n", err);
    rendezvous_close(r);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(basename(argv[0]), "nvidia-cuda-mps-control") == 0) return fake_mps_control(argc, argv);
    options o = parse_options(argc, argv);
    behaviour b = read_behaviour(&o);
    if (o.launcher && !o.dry_run) return launched_rank(&o);
    if (o.dry_run) {
        long f = b.footprint;
        printf("{\"model\":\"%s\",\"params\":%ld,\"footprint\":{\"parameters\":%ld,\"gradients\":%ld,"
               "\"optimizer\":%ld,\"buffers\":0,\"activations\":%ld,\"workspace\":0,\"total\":%ld}}\n",
               o.model, f / 16, f / 4, f / 4, f / 4, f - 3 * (f / 4), f);
        return 0;
    }
    record(argc, argv);
    if (b.ignore_term) signal(SIGTERM, SIG_IGN);
    const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    fprintf(stderr, "fake_train: building %s on %s\n", o.model, o.data);
    printf("{\"event\":\"setup\",\"model\":\"%s\",\"params\":%ld,\"footprint_bytes\":%ld,"
           "\"device\":\"Fake GPU\",\"mps\":%d,\"mig\":%d,\"pid\":%d}\n",
           o.model, b.footprint / 16, b.footprint, has_control_socket(pipe_dir),
           visible && strncmp(visible, "MIG-", 4) == 0 ? 1 : 0, (int)getpid());
    if (b.crash_epoch == 0) raise(b.crash_signal);
    if (b.fail_epoch == 0) fail_now("out of memory");
    sleep_ms(b.setup_ms);
    if (b.never_ready)
        for (;;) pause();
    printf("{\"event\":\"ready\",\"t\":%.6f}\n", now());
    line_reader in = {.fd = 0};
    wait_for_go(&in);
    step_windows win;
    step_windows_init(&win, (int)o.batch);
    long steps = o.steps > 0 ? o.steps : b.steps, fault_step = 0;
    char fault_kind[32] = "";
    if (o.fault) {
        const char *at = strchr(o.fault, '@');
        if (!at || at == o.fault || (size_t)(at - o.fault) >= sizeof fault_kind || atol(at + 1) < 1)
            usage_error("--inject-fault: expected KIND@STEP, got ", o.fault);
        memcpy(fault_kind, o.fault, (size_t)(at - o.fault));
        fault_step = atol(at + 1);
    }
    float *step_ms = malloc((size_t)(steps > 0 ? steps : 1) * sizeof *step_ms); /* this epoch's, as train keeps */
    if (!step_ms) fail_now("out of memory for the step times");
    for (long k = 1; o.window_protocol ? k == 1 || !win.stopped : k <= o.epochs; k++) {
        if (b.crash_epoch == k) raise(b.crash_signal);
        if (b.fail_epoch == k) fail_now("out of memory");
        double t0 = now();
        long s = 1, planned = o.window_protocol && k == 1 && o.warmup_steps > 0 && o.warmup_steps < steps
                                  ? o.warmup_steps : steps;
        for (; s <= planned && !(o.window_protocol && win.stopped && k > 1); s++) {
            double t_step = now();
            sleep_ms(b.epoch_ms / steps);
            double t_end = now();
            step_ms[s - 1] = (float)((t_end - t_step) * 1000.0);
            if (o.window_protocol) window_step(&win, &in, t_end, step_ms[s - 1], &b);
            long global = (k - 1) * steps + s;
            if (mps_poisoned())
                fail_cuda("CUDA error 808 (the MPS client has been terminated by the server) in "
                          "cudaStreamSynchronize(stream) at fake_train.c");
            printf("{\"event\":\"progress\",\"epoch\":%ld,\"step\":%ld,\"steps\":%ld,\"t\":%.6f}\n", k, s,
                   steps, now());
            if (global != fault_step) continue;
            inject_fault(fault_kind, global); /* returns only for nan */
            b.nan_epoch = (int)k;
        }
        if (s > steps) sleep_ms(b.epoch_ms % steps);
        long done = s - 1;
        if (done == 0) break; /* stopped as the epoch began */
        double t1 = now();
        double samples = (double)done * o.batch, seconds = t1 - t0;
        char loss[64], accuracy[64];
        snprintf(loss, sizeof loss, "%.4f", 2.3 / (double)k);
        snprintf(accuracy, sizeof accuracy, "%.4f", 0.1 * (double)k);
        if (strcmp(o.model, "dlrm") == 0) snprintf(accuracy, sizeof accuracy, "null");
        int diverged = b.nan_epoch == k;
        if (diverged) snprintf(loss, sizeof loss, "null");
        size_t sent = 0;
        for (cJSON *e; !o.window_protocol && (e = step_times_event("epoch", (int)k, step_ms, (size_t)done, &sent));)
            emit(e);
        printf("{\"event\":\"epoch\",\"epoch\":%ld,\"warmup\":%s,\"samples\":%.0f,\"seconds\":%.6f,"
               "\"samples_per_s\":%.3f,\"loss\":%s,\"accuracy\":%s,\"peak_bytes\":%ld,"
               "\"t_start\":%.6f,\"t_end\":%.6f,\"step_ms_median\":%.3f,\"step_ms_p90\":%.3f%s}\n",
               k, k == 1 ? "true" : "false", samples, seconds, samples / seconds, loss, accuracy,
               b.footprint, t0, t1, seconds * 1000.0 / (double)done,
               seconds * 1100.0 / (double)done, diverged ? ",\"diverged\":true" : "");
        if (diverged) fail_now("loss is NaN");
    }
    for (cJSON *e; o.window_protocol && (e = step_windows_next_event(&win, 1));) emit(e);
    step_windows_free(&win);
    free(step_ms);
    if (!b.no_done) printf("{\"event\":\"done\",\"t\":%.6f}\n", now());
    fprintf(stderr, "fake_train: done\n");
    return 0;
}
