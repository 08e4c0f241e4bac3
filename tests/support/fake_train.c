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
 *     share_speed=P   its speed follows its share of the SMs as an MPS client sees it: the SMs
 *                     $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE gives on its 132-SM device by the driver's
 *                     rule (base/sm_target.h: whole TPCs, rounded down), else all 132; each epoch
 *                     takes epoch_ms x (132 / SMs)^(P / 100), P from 0 (share does not matter) to 100
 *                     (speed in proportion to its SMs); run_suite advise's tests control its probes
 *                     with it
 *     crowd_slow=P    slowed by the others where it shares the SMs without a share of its own: with
 *                     $SUITE_CONCURRENT_JOBS n above 1 and no MPS share below 100, each epoch takes
 *                     epoch_ms x (1 + P/100 x (n - 1)) (naive, mps without shares, streams); run_suite
 *                     advise --check's tests give the modes measured contrast with it
 *     trace_error     answers the runner's "trace" line with a kernels event that says it cannot trace
 *   FAKE_TRAIN_RECORD=DIR   write DIR/<pid>.txt with argv and the CUDA_*, NCCL_* and SUITE_CONV_*
 *                           environment
 * It reports "mps":1 when $CUDA_MPS_PIPE_DIRECTORY holds a control socket, as a CUDA program
 * would find a daemon there.
 *
 * With --kernels PREFIX (run_suite --kernels) it answers the window protocol's "trace T0 T1" as train
 * does (the format in results/kernel_trace.h): once a step has completed after T1 it writes
 * PREFIX.kernels.csv and PREFIX.intervals.csv of synthetic but plausible kernels (a ResNet block's
 * scopes and classes, the weight gradients on a second stream beside the data gradients, a gap at
 * each step's start) laid over the steps that completed in [T0, T1], and sends its "kernels" event.
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
 * tests/runner/test_slurm_cluster.c), as train is: it reads its rank from the environment and joins the
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
#include <math.h>
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
#include "base/sm_target.h"

extern char **environ;

#define FAKE_DEVICE_SMS 132          /* its device's SMs (an H100's), as its kernel trace says */

typedef struct behaviour {
    long setup_ms, epoch_ms, steps, footprint, share_speed, crowd_slow;
    int crash_signal, crash_epoch, fail_epoch, nan_epoch;
    int never_ready, ignore_term, no_done, fail_in_window, trace_error;
} behaviour;

typedef struct options {
    const char *model, *data, *data_root, *fault, *launcher, *kernels;
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
    if (sscanf(action, "share_speed=%ld", &b->share_speed) == 1) return;
    if (sscanf(action, "crowd_slow=%ld", &b->crowd_slow) == 1) return;
    if (strcmp(action, "never_ready") == 0) b->never_ready = 1;
    else if (strcmp(action, "ignore_term") == 0) b->ignore_term = 1;
    else if (strcmp(action, "no_done") == 0) b->no_done = 1;
    else if (strcmp(action, "fail_in_window") == 0) b->fail_in_window = 1;
    else if (strcmp(action, "trace_error") == 0) b->trace_error = 1;
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
    const char *share = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    double percent = share ? atof(share) : 100;
    if (b.share_speed > 0 && percent > 0 && percent < 100)
        b.epoch_ms = (long)(b.epoch_ms * pow((double)FAKE_DEVICE_SMS / sm_target_of_share(FAKE_DEVICE_SMS, (int)percent),
                                             b.share_speed / 100.0) + 0.5);
    const char *crowd = getenv("SUITE_CONCURRENT_JOBS");
    long others = crowd ? atol(crowd) - 1 : 0;
    if (b.crowd_slow > 0 && others > 0 && !(percent > 0 && percent < 100))
        b.epoch_ms = (long)(b.epoch_ms * (1 + b.crowd_slow / 100.0 * others) + 0.5);
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
        else if (strcmp(a, "--kernels") == 0 && i + 1 < argc) o.kernels = argv[++i];
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

/* --- the traced window (--kernels) ------------------------------------------------------------ */

typedef struct fake_trace {
    const char *prefix;          /* NULL: not asked to trace */
    double t0, t1;
    int armed, done;
    double *start, *end;         /* the steps completed in [t0, t1] */
    long count, cap;
} fake_trace;

/* One scope of the synthetic step: where its kernel lies in the step (fractions of it), its stream. */
typedef struct fake_scope {
    const char *layer, *pass, *cls, *kernel;
    double from, to, flops, bytes;
    int stream;
} fake_scope;

/* A step: a gap (the host's work: waiting), the forward, the backward with each weight gradient on
 * a second stream beside the next data gradient, the optimizer. */
static const fake_scope FAKE_SCOPES[] = {
    {"conv1", "forward", "conv_fwd", "void cudnn::implicit_gemm_fwd<float, 128>(params)", 0.05, 0.17, 2.4e9, 3.2e7, 7},
    {"bn1", "forward", "batchnorm", "bn_fw_tr_1C11_kernel_NCHW", 0.17, 0.24, 1.6e7, 9.6e7, 7},
    {"relu", "forward", "elementwise", "relu_forward", 0.24, 0.28, 4.0e6, 6.4e7, 7},
    {"layer1.0.conv1", "forward", "conv_fwd", "sm90_xmma_fprop_implicit_gemm", 0.28, 0.40, 2.8e9, 3.0e7, 7},
    {"fc", "forward", "gemm", "cublasLt::gemm_tn", 0.40, 0.43, 4.1e8, 8.2e6, 7},
    {"loss", "-", "loss", "softmax_cross_entropy", 0.43, 0.45, 2.0e6, 4.0e6, 7},
    {"fc", "dgrad", "gemm", "cublasLt::gemm_nn", 0.45, 0.48, 4.1e8, 8.2e6, 7},
    {"layer1.0.conv1", "dgrad", "conv_dgrad", "sm90_xmma_dgrad_implicit_gemm", 0.48, 0.62, 2.8e9, 3.0e7, 7},
    {"layer1.0.conv1", "wgrad", "conv_wgrad", "sm90_xmma_wgrad_implicit_gemm", 0.50, 0.66, 2.8e9, 3.4e7, 8},
    {"bn1", "backward", "batchnorm", "bn_bw_1C11_kernel_NCHW", 0.62, 0.72, 2.4e7, 1.3e8, 7},
    {"conv1", "wgrad", "conv_wgrad", "sm90_xmma_wgrad_implicit_gemm", 0.72, 0.86, 2.4e9, 3.4e7, 8},
    {"optimizer", "update", "optimizer", "sgd_momentum_update", 0.88, 0.96, 1.2e8, 4.8e8, 7},
};
#define FAKE_SCOPE_COUNT (sizeof FAKE_SCOPES / sizeof FAKE_SCOPES[0])

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A name quoted per RFC 4180 (the kernels' names hold commas). */
static void csv_quoted(FILE *f, const char *text) {
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

/* The two files of the traced window, then the "kernels" event. */
static void trace_finish(fake_trace *tr, const options *o) {
    char path[4200], intervals[4200];
    snprintf(path, sizeof path, "%s.kernels.csv", tr->prefix);
    snprintf(intervals, sizeof intervals, "%s.intervals.csv", tr->prefix);
    tr->done = 1;
    if (tr->count == 0) {
        printf("{\"event\":\"kernels\",\"error\":\"no step completed in the traced window\"}\n");
        return;
    }
    FILE *k = fopen(path, "w"), *v = fopen(intervals, "w");
    if (!k || !v) {
        printf("{\"event\":\"kernels\",\"error\":\"cannot write %s: %s\"}\n", path, strerror(errno));
        if (k) fclose(k);
        if (v) fclose(v);
        return;
    }
    double *ms = malloc((size_t)tr->count * sizeof *ms), total[FAKE_SCOPE_COUNT] = {0}, lo[FAKE_SCOPE_COUNT],
           hi[FAKE_SCOPE_COUNT] = {0};
    for (size_t c = 0; c < FAKE_SCOPE_COUNT; c++) lo[c] = 1e300;
    fprintf(v, "start_ns,end_ns,scope,class,stream\n");
    for (long i = 0; i < tr->count; i++) {
        double step_ns = (tr->end[i] - tr->start[i]) * 1e9, base = (tr->start[i] - tr->t0) * 1e9;
        ms[i] = step_ns / 1e6;
        for (size_t c = 0; c < FAKE_SCOPE_COUNT; c++) { /* by start: the wgrad lane's begin inside dgrad's */
            const fake_scope *f = &FAKE_SCOPES[c];
            long long a = (long long)(base + f->from * step_ns), b = (long long)(base + f->to * step_ns);
            fprintf(v, "%lld,%lld,%zu,%s,%d\n", a, b, c, f->cls, f->stream);
            total[c] += (double)(b - a);
            if (b - a < lo[c]) lo[c] = (double)(b - a);
            if (b - a > hi[c]) hi[c] = (double)(b - a);
        }
    }
    qsort(ms, (size_t)tr->count, sizeof *ms, by_value);
    fprintf(k, "# job=%s\n# model=%s\n# precision=fp32\n# batch=%ld\n# device_name=Fake GPU\n# device_sms=132\n"
            "# sm_count=132\n# clock=realtime\n# t0=%.9f\n# t1=%.9f\n# steps=%ld\n# step_ms=%.3f\n# kernels=%ld\n"
            "# dropped=0\n# peak_flops=494700000000000\n# peak_bytes_s=3350000000000\n"
            "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes\n",
            o->model, o->model, o->batch, tr->t0, tr->t1, tr->count, ms[tr->count / 2],
            tr->count * (long)FAKE_SCOPE_COUNT);
    for (size_t c = 0; c < FAKE_SCOPE_COUNT; c++) {
        const fake_scope *f = &FAKE_SCOPES[c];
        fprintf(k, "%zu,%s,%s,%s,", c, f->layer, f->pass, f->cls);
        csv_quoted(k, f->kernel);
        fprintf(k, ",%ld,%.0f,%.0f,%.0f,%.0f,%.0f\n", tr->count, total[c], lo[c], hi[c], f->flops, f->bytes);
    }
    fclose(k);
    fclose(v);
    printf("{\"event\":\"kernels\",\"file\":\"%s\",\"intervals\":\"%s\",\"kernels\":%ld,\"dropped\":0,"
           "\"steps\":%ld,\"t0\":%.6f,\"t1\":%.6f,\"step_ms\":%.3f}\n", path, intervals,
           tr->count * (long)FAKE_SCOPE_COUNT, tr->count, tr->t0, tr->t1, ms[tr->count / 2]);
    free(ms);
}

/* A step [t - ms, t] under the traced window: kept when it lies in it; the files once one ends after it. */
static void trace_step(fake_trace *tr, const options *o, double t, double ms) {
    if (!tr->armed || tr->done) return;
    double start = t - ms / 1000.0;
    if (t > tr->t1) {
        trace_finish(tr, o);
        return;
    }
    if (start < tr->t0) return;
    if (tr->count == tr->cap) {
        tr->cap = tr->cap ? tr->cap * 2 : 256;
        tr->start = realloc(tr->start, (size_t)tr->cap * sizeof *tr->start);
        tr->end = realloc(tr->end, (size_t)tr->cap * sizeof *tr->end);
        if (!tr->start || !tr->end) fail_now("out of memory for the traced steps");
    }
    tr->start[tr->count] = start;
    tr->end[tr->count++] = t;
}

/* "trace T0 T1": 1 when line is one (armed, or answered at once when it cannot trace). */
static int trace_command(fake_trace *tr, const char *line, const behaviour *b) {
    double t0, t1;
    if (sscanf(line, "trace %lf %lf", &t0, &t1) != 2) return 0;
    if (b->trace_error || !tr->prefix) {
        printf("{\"event\":\"kernels\",\"error\":\"%s\"}\n",
               tr->prefix ? "CUPTI cannot trace here (fake_train trace_error)" : "not started with --kernels");
        tr->done = 1;
        return 1;
    }
    tr->t0 = t0, tr->t1 = t1, tr->armed = 1;
    return 1;
}

/* The window protocol after a step that ended at t after ms: the runner's lines are read without
 * waiting; each window whose figures are final is reported (or, with fail_in_window, the job fails
 * once it has been given one); a traced window is answered by trace_step. */
static void window_step(step_windows *win, fake_trace *tr, const options *o, line_reader *in, double t, double ms,
                        const behaviour *b) {
    step_windows_add(win, t, ms);
    trace_step(tr, o, t, ms);
    char line[256];
    int got;
    while ((got = line_reader_next(in, 0, line, sizeof line)) == 1)
        if (!trace_command(tr, line, b)) step_windows_command(win, line);
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
    fake_trace trace = {.prefix = o.kernels};
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
            if (o.window_protocol) window_step(&win, &trace, &o, &in, t_end, step_ms[s - 1], &b);
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
    free(trace.start);
    free(trace.end);
    free(step_ms);
    if (!b.no_done) printf("{\"event\":\"done\",\"t\":%.6f}\n", now());
    fprintf(stderr, "fake_train: done\n");
    return 0;
}
