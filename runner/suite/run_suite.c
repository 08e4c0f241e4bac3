/* run_suite: runs a mix of training jobs on one GPU under a collocation mode and writes what it
 * measured under runs/<run-id>/. This file is the command line only: every option is checked
 * here, before any GPU, daemon or process is touched (bad input: a message naming what is valid,
 * exit 2); the run itself is runner/suite/run/suite.c, each mode a runner/suite/mode_<name>.c. */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/gpu/mig.h"
#include "runner/suite/multi/gpus.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/run/suite.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/run/report_cmd.h"
#include "runner/suite/multi/slurm.h"
#include "runner/suite/multi/study.h"

/* What the command line fills: the run's options and the values checked once the mix is known. */
typedef struct run_args {
    suite_options o;
    const char *mode, *train, *mps_sm, *mps_mem;
    int list, have_epochs, have_steps;
    const char *gpus; int slurm; /* only for --help: both are run before this table (gpus.c, slurm.c) */
    int precision; /* index into PRECISIONS; 0: none given */
    int via;       /* VIAS: how mig-emulate realises its layout; 0: not given */
} run_args;

static const cli_choice PRECISIONS[] = {{"tf32", 1}, {"fp32", 2}, {"bf16", 3}, {0}};
enum { VIA_MPS = 1, VIA_GREEN = 2 };
static const cli_choice VIAS[] = {{"mps", VIA_MPS}, {"green", VIA_GREEN}, {0}};
static const cli_choice OBJECTIVES[] = {{"fill", MIG_OBJECTIVE_FILL}, {"compact", MIG_OBJECTIVE_COMPACT}, {0}};

#define T run_args
/* One row per option (the row format is in runner/cli.h). Checks that need the mix or the mode
 * (--mps-sm per job, which options go with which mode) follow in main. */
static const cli_option OPTIONS[] = {
    {"--mode", "MODE", "collocation mode", CLI_STR(T, mode), .values = suite_mode_names},
    {"--skip", "MODE,...", "with --mode all: leave these modes out (e.g. streams,green)", CLI_STR(T, o.skip_modes)},
    {"--mix", "MIX", "jobs, e.g. S+M+M, 7*S, resnet50:imagenet64@128 (--list shows presets)", CLI_STR(T, o.mix_text)},
    {"--list", NULL, "the presets and modes (--json: as JSON)", CLI_FLAG(T, list, 1)},
    {"--epochs", "E", "epochs per job (default 2: the first warms up, the second is timed)",
     CLI_INT(T, o.epochs, 1, 100000), CLI_MARK(T, have_epochs)},
    {"--steps-per-epoch", "T", "steps per epoch (default: whole epochs)", CLI_INT(T, o.steps_per_epoch, 1, 1e12),
     CLI_MARK(T, have_steps)},
    {"--quick", NULL, "2 epochs of 10 steps (a smoke test)", CLI_FLAG(T, o.quick, 1)},
    {"--data-root", "DIR", "data sets' folder, passed to train", CLI_STR(T, o.data_root)},
    {"--precision", NULL, "every job's numerics where the mix gives no precision= (train --precision)",
     CLI_CHOICE(T, precision, PRECISIONS)},
    {"--results", "DIR", "where run folders go", CLI_STR(T, o.results_dir), .fallback = RESULTS_DEFAULT_DIR},
    {"--baseline", "DIR", "an earlier serial run of the same mix: speed-up and slow-downs against it",
     CLI_STR(T, o.baseline_dir)},
    {"--gpu", "N", "GPU index, as NVML and nvidia-smi count", CLI_INT(T, o.gpu, 0, 1023), .fallback = "0"},
    {"--sample-ms", "MS", "GPU sampling period", CLI_INT(T, o.sample_ms, 10, 60000), .fallback = "100"},
    {"--no-monitor", NULL, "no GPU sampling (to measure the sampler's cost)", CLI_FLAG(T, o.no_monitor, 1)},
    {"--mps-sm", "P[,P...]", "MPS active thread percentage per job (1..100; one value: all jobs)",
     CLI_STR(T, mps_sm)},
    {"--mps-mem", "S[,S...]", "MPS pinned device memory limit per job (4G, 512M; one value: all)",
     CLI_STR(T, mps_mem)},
    {"--mps-pipe", "DIR", "use the MPS daemon already running there instead of starting one",
     CLI_STR(T, o.mps_pipe)},
    {"--mig-layout", "L", "MIG profiles, one per job in mix order (1g.10gb,2g.20gb,...)", CLI_STR(T, o.mig_layout)},
    {"--mig-gpu", "NAME", "plan for this GPU's MIG table", CLI_STR(T, o.mig_gpu), .values = mig_known_gpu_names},
    {"--mig-objective", NULL, "MIG plan: fill (the whole GPU, shared by compute demand) or compact (each job's "
     "smallest fit)", CLI_CHOICE(T, o.mig_objective, OBJECTIVES), .fallback = "fill"},
    {"--mig-layouts", "all|L;L...", "sweep: the mix under every valid MIG layout, or each one listed "
     "(1g.10gb+3g.40gb;2g.20gb+2g.20gb)", CLI_STR(T, o.mig_layouts)},
    {"--mig-create", NULL, "create the MIG instances the plan needs (destroyed at the end)",
     CLI_FLAG(T, o.mig_create, 1)},
    {"--mig-emulate", NULL, "realise the MIG plan through MPS (SM share and memory per instance)",
     CLI_FLAG(T, o.mig_emulate, 1)},
    {"--green-sm", "N[,N...]", "green: SMs per job, rounded to the GPU's partition size (one value: all jobs)",
     CLI_STR(T, o.green_sm)},
    {"--green-share", "P[,P...]", "green: percent of the SMs per job, at most 100 in all (one value: all jobs)",
     CLI_STR(T, o.green_share)},
    {"--via", "HOW", "mig-emulate: the layout's SM shares through MPS (default) or as green contexts",
     CLI_CHOICE(T, via, VIAS)},
    {"--ready-timeout", "S", "longest wait for every job's ready, in seconds", CLI_REAL(T, o.ready_timeout_s, 1, 86400),
     .fallback = "600"},
    {"--grace", "S", "seconds from SIGTERM to SIGKILL when stopping jobs", CLI_REAL(T, o.grace_s, 0, 3600),
     .fallback = "10"},
    {"--stall-timeout", "S", "stop a training job that reports no event for S seconds (0: 8 times the longest "
     "wait between its events so far, at least 30 s; 600 s before its first)", CLI_REAL(T, o.stall_timeout_s, 0, 86400),
     .fallback = "0"},
    {"--force", NULL, "run a mix whose footprints exceed the GPU's memory", CLI_FLAG(T, o.force, 1)},
    {"--dry-run", NULL, "show jobs, footprints and the plan; run nothing", CLI_FLAG(T, o.dry_run, 1)},
    {"--json", NULL, "with --dry-run or --list: as JSON", CLI_FLAG(T, o.json, 1)},
    {"--train", "PATH", "the train program (default: next to run_suite)", CLI_STR(T, train)},
    {"--gpus", "LIST", "the mix over several GPUs (0,1,2,3): placed by memory and compute, each GPU under the mode",
     CLI_STR(T, gpus)},
    {"--slurm", NULL, "a Slurm job array of mixes or a study, one node per task (run_suite --slurm --help)",
     CLI_FLAG(T, slurm, 1)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "run_suite",
    .synopsis = "usage: run_suite --mode MODE --mix MIX [options]\n       run_suite --list\n"
                "       run_suite --study small|medium|large|mixed|all [--quick] (run_suite --study --help)\n"
                "       run_suite report RUN_DIR [RUN_DIR...] [-o report.html]\n",
    .epilogue = "exit status: 0 all jobs ok, 1 run-time failure, 2 bad usage or refused mix, 3 some jobs\n"
                "failed (results written), 128+N stopped by signal N (results written)\n",
    .options = OPTIONS,
};

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
    printf("\nmodes: %s\nmix examples: S+M+M, 7*S, 2*S+M, resnet50:imagenet64@128, "
           "M[epochs=3,steps=100]\n", suite_mode_names());
}

static int fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    return EXIT_USAGE;
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
    if (argc > 1 && strcmp(argv[1], "report") == 0) return report_main(argc - 1, argv + 1);
    if (slurm_requested(argc, argv)) return slurm_main(argc, argv); /* before --study: it sweeps one */
    if (gpus_requested(argc, argv)) return gpus_main(argc, argv);
    if (study_requested(argc, argv)) return study_main(argc, argv);
    run_args args;
    memset(&args, 0, sizeof args);
    char err[2048];
    int parsed = cli_parse(&PROGRAM, &args, argc, argv, err, sizeof err);
    if (parsed == 1) return EXIT_OK;
    if (parsed != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return EXIT_USAGE;
    }
    suite_options o = args.o;
    o.argc = argc;
    o.argv = argv;
    const char *mode = args.mode, *train = args.train, *mps_sm = args.mps_sm, *mps_mem = args.mps_mem;
    int list = args.list, have_epochs = args.have_epochs, have_steps = args.have_steps;
    if (list) {
        print_list(o.json);
        return EXIT_OK;
    }
    if (!mode) return fail("--mode is required: one of %s%s", suite_mode_names(), "");
    int all = strcmp(mode, SUITE_ALL) == 0;
    o.mode = suite_mode_find(mode);
    if (!all && !o.mode) return fail("--mode %s: expected one of %s", mode, suite_mode_names());
    if (o.skip_modes && !all) return fail("--skip goes with --mode all, not %s%s", mode, "");
    if (o.skip_modes && !*o.skip_modes) return fail("--skip: expected modes, e.g. streams,green%s%s", "", "");
    for (const char *p = o.skip_modes; p && *p;) {
        size_t n = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
        const suite_mode *m = suite_mode_find(name);
        if (!m || !strcmp(name, SUITE_ALL))
            return fail("--skip %s: expected modes of --mode all, one of %s", o.skip_modes, suite_mode_names());
        p += n + (p[n] == ',');
    }
    if (!o.mix_text) return fail("--mix is required, e.g. S+M+M (run_suite --list shows the presets)%s%s", "", "");
    if (mix_parse(&o.mix, o.mix_text, err, sizeof err) != 0) return fail("--mix: %s%s", err, "");
    for (int i = 0; args.precision && i < o.mix.count; i++)
        if (!o.mix.jobs[i].precision[0])
            snprintf(o.mix.jobs[i].precision, sizeof o.mix.jobs[i].precision, "%s", PRECISIONS[args.precision - 1].name);
    if (o.mig_emulate) {
        if (o.mode && (o.mode->flags & MODE_NEEDS_MIG)) o.mode = suite_mode_with(MODE_MIG_EMULATION);
        else if (o.mode && !(o.mode->flags & MODE_MIG_EMULATION))
            return fail("--mig-emulate goes with --mode mig or all, not %s%s", mode, "");
    }
    unsigned flags = o.mode ? o.mode->flags : 0;
    int mps_like = all || o.mode == suite_mode_find("mps");
    int mig_like = all || (flags & (MODE_NEEDS_MIG | MODE_MIG_EMULATION));
    int green = o.mode == suite_mode_find("green");
    if ((mps_sm || mps_mem) && !mps_like)
        return fail("--mps-sm and --mps-mem go with --mode mps or all, not %s%s", mode, "");
    if (mps_sm && mps_parse_sm_list(mps_sm, o.mix.count, o.mps_sm, err, sizeof err) != 0) return fail("%s%s", err, "");
    if (mps_mem && mps_parse_mem_list(mps_mem, o.mix.count, o.mps_mem, err, sizeof err) != 0) return fail("%s%s", err, "");
    o.have_mps_sm = mps_sm != NULL;
    o.have_mps_mem = mps_mem != NULL;
    if (o.mps_pipe && !(mps_like || (flags & MODE_MIG_EMULATION)))
        return fail("--mps-pipe goes with --mode mps, mig-emulate or all, not %s%s", mode, "");
    if (o.mps_pipe && !is_dir(o.mps_pipe)) return fail("--mps-pipe %s: not a folder%s", o.mps_pipe, "");
    if ((o.mig_layout || o.mig_create) && !mig_like)
        return fail("--mig-layout and --mig-create go with --mode mig, mig-emulate or all, not %s%s", mode, "");
    if (o.mig_objective != MIG_OBJECTIVE_FILL && !(mig_like || green))
        return fail("--mig-objective goes with --mode mig, mig-emulate, green or all, not %s%s", mode, "");
    if (o.mig_layouts && (all || !(flags & (MODE_NEEDS_MIG | MODE_MIG_EMULATION))))
        return fail("--mig-layouts sweeps MIG layouts: give --mode mig-emulate (or mig with --mig-create), "
                    "not %s%s", mode, "");
    if (o.mig_layouts && o.mig_layout)
        return fail("--mig-layouts runs each of its layouts; --mig-layout gives one: not both%s%s", "", "");
    if (o.mig_gpu && !(mig_like || green))
        return fail("--mig-gpu goes with --mode mig, mig-emulate, green or all, not %s%s", mode, "");
    if (o.mig_gpu && !mig_known_gpu(o.mig_gpu))
        return fail("--mig-gpu %s: unknown GPU; expected one of %s", o.mig_gpu, mig_known_gpu_names());
    if (o.mig_create && (flags & MODE_MIG_EMULATION))
        return fail("--mig-create creates real instances; --mig-emulate needs none%s%s", "", "");
    if (o.mig_gpu && (flags & MODE_NEEDS_MIG) && !o.dry_run)
        return fail("--mig-gpu plans for a GPU that may not be present: use it with --dry-run or --mig-emulate%s%s", "", "");
    if ((o.green_sm || o.green_share) && !(all || green))
        return fail("--green-sm and --green-share go with --mode green or all, not %s%s", mode, "");
    if (args.via && !(flags & MODE_MIG_EMULATION))
        return fail("--via goes with --mode mig-emulate (or mig --mig-emulate), not %s%s", mode, "");
    if (args.via == VIA_GREEN) { /* the same layout, its SM counts as green contexts (mode_green.c) */
        if (o.green_sm || o.green_share) return fail("--via green takes the SMs from the MIG layout: no --green-sm "
                                                     "or --green-share%s%s", "", "");
        o.via_green = 1;
        o.mode = suite_mode_find("green");
    }
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
