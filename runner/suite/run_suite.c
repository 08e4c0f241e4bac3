/* run_suite: runs a mix of training jobs on one GPU under a collocation mode and writes what it
 * measured under results/<run-id>/. This file is the command line only: every option is checked
 * here, before any GPU, daemon or process is touched (bad input: a message naming what is valid,
 * exit 2); the run itself is runner/suite/modes.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/suite/mig.h"
#include "runner/suite/mix.h"
#include "runner/suite/modes.h"
#include "runner/suite/mps.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: run_suite --mode MODE --mix MIX [options]\n"
        "       run_suite --list\n\n"
        "  --mode MODE          " MODE_NAMES "\n"
        "  --mix MIX            jobs, e.g. S+M+M, 7*S, resnet50:imagenet64@128 (--list shows presets)\n"
        "  --epochs E           epochs per job (default 2: the first warms up, the second is timed)\n"
        "  --steps-per-epoch T  steps per epoch (default: whole epochs)\n"
        "  --quick              2 epochs of 10 steps (a smoke test)\n"
        "  --data-root DIR      data sets' folder, passed to train\n"
        "  --results DIR        where run folders go (default: results)\n"
        "  --baseline DIR       an earlier serial run of the same mix: speed-up and slow-downs against it\n"
        "  --gpu N              GPU index, as NVML and nvidia-smi count (default 0)\n"
        "  --sample-ms MS       GPU sampling period (default 100)\n"
        "  --no-monitor         no GPU sampling (to measure the sampler's cost)\n"
        "  --mps-sm P[,P...]    MPS active thread percentage per job (1..100; one value: all jobs)\n"
        "  --mps-mem S[,S...]   MPS pinned device memory limit per job (4G, 512M; one value: all)\n"
        "  --mps-pipe DIR       use the MPS daemon already running there instead of starting one\n"
        "  --mig-layout L       MIG profiles, one per job in mix order (1g.10gb,2g.20gb,...)\n"
        "  --mig-gpu NAME       plan for this GPU's MIG table (%s)\n"
        "  --mig-create         create the MIG instances the plan needs (destroyed at the end)\n"
        "  --mig-emulate        realise the MIG plan through MPS (SM share and memory per instance)\n"
        "  --ready-timeout S    longest wait for every job's ready (default 600)\n"
        "  --grace S            SIGTERM to SIGKILL when stopping jobs (default 10)\n"
        "  --force              run a mix whose footprints exceed the GPU's memory\n"
        "  --dry-run            show jobs, footprints and the plan; run nothing (--json: as JSON)\n"
        "  --train PATH         the train program (default: next to run_suite)\n\n"
        "exit status: 0 all jobs ok, 1 run-time failure, 2 bad usage or refused mix, 3 some jobs\n"
        "failed (results written), 128+N stopped by signal N (results written)\n",
        mig_known_gpu_names());
}

static void print_list(int json) {
    int count;
    const mix_preset *p = mix_presets(&count);
    if (json) {
        printf("[");
        for (int i = 0; i < count; i++)
            printf("%s{\"name\":\"%s\",\"model\":\"%s\",\"data\":\"%s\",\"image_size\":%d,\"classes\":%d,"
                   "\"batch\":%d,\"max_rows\":%lld}", i ? "," : "", p[i].name, p[i].model, p[i].data,
                   p[i].image_size, p[i].classes, p[i].batch, p[i].max_rows);
        printf("]\n");
        return;
    }
    printf("%-6s %-18s %-16s %6s %8s %6s  %s\n", "preset", "model", "data", "size", "classes", "batch",
           "description");
    for (int i = 0; i < count; i++)
        printf("%-6s %-18s %-16s %6d %8d %6d  %s\n", p[i].name, p[i].model, p[i].data, p[i].image_size,
               p[i].classes, p[i].batch, p[i].description);
    printf("\nmodes: " MODE_NAMES "\nmix examples: S+M+M, 7*S, 2*S+M, resnet50:imagenet64@128, "
           "M[epochs=3,steps=100]\n");
}

static int fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    return EXIT_USAGE;
}

static int number(const char *opt, const char *text, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || end == text || *end || errno || v < lo || v > hi) {
        char range[96];
        snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
        fail("%s: expected %s", opt, range);
        return -1;
    }
    *out = v;
    return 0;
}

static int is_value_option(const char *a) {
    static const char *const with_value[] = {
        "--mode", "--mix", "--data-root", "--results", "--baseline", "--train", "--mps-sm",
        "--mps-mem", "--mps-pipe", "--mig-layout", "--mig-gpu", "--epochs", "--steps-per-epoch",
        "--sample-ms", "--gpu", "--ready-timeout", "--grace"};
    for (size_t i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
        if (!strcmp(a, with_value[i])) return 1;
    return 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The train program: --train PATH, else the one built next to this executable. */
static int find_train(const char *given, char *out, size_t size) {
    if (given) {
        if (!realpath(given, out)) snprintf(out, size, "%s", given);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return -1;
        self[n] = 0;
        snprintf(out, size, "%s/train", dirname(self));
    }
    return access(out, X_OK) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    suite_options o;
    memset(&o, 0, sizeof o);
    o.results_dir = "results";
    o.sample_ms = 100;
    o.ready_timeout_s = 600;
    o.grace_s = 10;
    o.argc = argc;
    o.argv = argv;
    const char *mode = NULL, *train = NULL, *mps_sm = NULL, *mps_mem = NULL;
    int list = 0, have_epochs = 0, have_steps = 0;
    double v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (next && strncmp(next, "--", 2) == 0) next = NULL; /* "--epochs --quick": no value */
        int takes = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return EXIT_OK; }
        else if (!strcmp(a, "--list")) list = 1, takes = 0;
        else if (!strcmp(a, "--quick")) o.quick = 1, takes = 0;
        else if (!strcmp(a, "--mig-create")) o.mig_create = 1, takes = 0;
        else if (!strcmp(a, "--mig-emulate")) o.mig_emulate = 1, takes = 0;
        else if (!strcmp(a, "--force")) o.force = 1, takes = 0;
        else if (!strcmp(a, "--dry-run")) o.dry_run = 1, takes = 0;
        else if (!strcmp(a, "--json")) o.json = 1, takes = 0;
        else if (!strcmp(a, "--no-monitor")) o.no_monitor = 1, takes = 0;
        else if (!is_value_option(a)) return fail("unknown option '%s'%s", a, "");
        else if (!next) return fail("%s: missing its value%s", a, "");
        else if (!strcmp(a, "--mode")) mode = next;
        else if (!strcmp(a, "--mix")) o.mix_text = next;
        else if (!strcmp(a, "--data-root")) o.data_root = next;
        else if (!strcmp(a, "--results")) o.results_dir = next;
        else if (!strcmp(a, "--baseline")) o.baseline_dir = next;
        else if (!strcmp(a, "--train")) train = next;
        else if (!strcmp(a, "--mps-sm")) mps_sm = next;
        else if (!strcmp(a, "--mps-mem")) mps_mem = next;
        else if (!strcmp(a, "--mps-pipe")) o.mps_pipe = next;
        else if (!strcmp(a, "--mig-layout")) o.mig_layout = next;
        else if (!strcmp(a, "--mig-gpu")) o.mig_gpu = next;
        else if (!strcmp(a, "--epochs")) { if (number(a, next, 1, 100000, &v)) return EXIT_USAGE; o.epochs = (int)v; have_epochs = 1; }
        else if (!strcmp(a, "--steps-per-epoch")) { if (number(a, next, 1, 1e12, &v)) return EXIT_USAGE; o.steps_per_epoch = (long)v; have_steps = 1; }
        else if (!strcmp(a, "--sample-ms")) { if (number(a, next, 10, 60000, &v)) return EXIT_USAGE; o.sample_ms = (int)v; }
        else if (!strcmp(a, "--gpu")) { if (number(a, next, 0, 1023, &v)) return EXIT_USAGE; o.gpu = (int)v; }
        else if (!strcmp(a, "--ready-timeout")) { if (number(a, next, 1, 86400, &v)) return EXIT_USAGE; o.ready_timeout_s = v; }
        else if (!strcmp(a, "--grace")) { if (number(a, next, 0, 3600, &v)) return EXIT_USAGE; o.grace_s = v; }
        i += takes;
    }
    if (list) {
        print_list(o.json);
        return EXIT_OK;
    }
    if (!mode) return fail("--mode is required: one of %s%s", MODE_NAMES, "");
    if (mode_parse(mode, &o.mode) != 0) return fail("--mode %s: expected one of %s", mode, MODE_NAMES);
    if (!o.mix_text) return fail("--mix is required, e.g. S+M+M (run_suite --list shows the presets)%s%s", "", "");
    char err[2048];
    if (mix_parse(&o.mix, o.mix_text, err, sizeof err) != 0) return fail("--mix: %s%s", err, "");
    if (o.mig_emulate) {
        if (o.mode == MODE_MIG) o.mode = MODE_MIG_EMULATE;
        else if (o.mode != MODE_ALL && o.mode != MODE_MIG_EMULATE)
            return fail("--mig-emulate goes with --mode mig or all, not %s%s", mode, "");
    }
    int mps_like = o.mode == MODE_MPS || o.mode == MODE_ALL;
    int mig_like = o.mode == MODE_MIG || o.mode == MODE_MIG_EMULATE || o.mode == MODE_ALL;
    if ((mps_sm || mps_mem) && !mps_like)
        return fail("--mps-sm and --mps-mem go with --mode mps or all, not %s%s", mode, "");
    if (mps_sm && mps_parse_sm_list(mps_sm, o.mix.count, o.mps_sm, err, sizeof err) != 0) return fail("%s%s", err, "");
    if (mps_mem && mps_parse_mem_list(mps_mem, o.mix.count, o.mps_mem, err, sizeof err) != 0) return fail("%s%s", err, "");
    o.have_mps_sm = mps_sm != NULL;
    o.have_mps_mem = mps_mem != NULL;
    if (o.mps_pipe && !(mps_like || o.mode == MODE_MIG_EMULATE))
        return fail("--mps-pipe goes with --mode mps, mig-emulate or all, not %s%s", mode, "");
    if (o.mps_pipe && !is_dir(o.mps_pipe)) return fail("--mps-pipe %s: not a folder%s", o.mps_pipe, "");
    if ((o.mig_layout || o.mig_gpu || o.mig_create) && !mig_like)
        return fail("--mig-layout, --mig-gpu and --mig-create go with --mode mig, mig-emulate or all, not %s%s", mode, "");
    if (o.mig_gpu && !mig_known_gpu(o.mig_gpu))
        return fail("--mig-gpu %s: unknown GPU; expected one of %s", o.mig_gpu, mig_known_gpu_names());
    if (o.mig_create && o.mode == MODE_MIG_EMULATE)
        return fail("--mig-create creates real instances; --mig-emulate needs none%s%s", "", "");
    if (o.mig_gpu && o.mode == MODE_MIG && !o.dry_run)
        return fail("--mig-gpu plans for a GPU that may not be present: use it with --dry-run or --mig-emulate%s%s", "", "");
    if (o.json && !o.dry_run) return fail("--json goes with --dry-run or --list%s%s", "", "");
    if (o.baseline_dir && !is_dir(o.baseline_dir)) return fail("--baseline %s: not a folder%s", o.baseline_dir, "");
    if (o.quick) {
        if (!have_epochs) o.epochs = 2;
        if (!have_steps) o.steps_per_epoch = 10;
    }
    char train_path[PATH_MAX];
    if (find_train(train, train_path, sizeof train_path) != 0)
        return fail("cannot run the train program at %s (build it, or give --train PATH)%s", train_path, "");
    o.train_path = train_path;
    /* Processes that daemonise under us (the MPS control daemon and its server) are re-parented
     * to run_suite rather than to init, so they are reaped here and none is left as a zombie. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int rc = suite_run(&o);
    while (waitpid(-1, NULL, WNOHANG) > 0) continue;
    return rc;
}
