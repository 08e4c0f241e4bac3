#include "runner/train/train_options.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/job_spec.h"
#include "base/quote.h"
#include "data/data_check.h"
#include "models/catalog.h"
#include "models/core/safetensors.h"
#include "base/output_path.h"
#include "runner/cli.h"
#include "runner/train/kernel_files.h"
#include "runner/train/train_rules.h"

#define DATA_SETS "synthetic, fashion-mnist, cifar10, imagenet64, imagenet, criteo-kaggle, criteo-terabyte"

static int is_criteo(const char *data) { return !strncmp(data, "criteo-", 7); }

static const cli_choice LAUNCHERS[] = {{"env", RANK_LAUNCHER_ENV}, {"slurm", RANK_LAUNCHER_SLURM}, {0}};
#define DECODE_CHOICE_(kind, name) {name, kind},
static const cli_choice DECODES[] = {DECODE_TABLE(DECODE_CHOICE_){0}};
#undef DECODE_CHOICE_
#define PRECISION_CHOICE_(kind, name) {name, kind},
static const cli_choice PRECISIONS[] = {PRECISION_TABLE(PRECISION_CHOICE_){0}};
#undef PRECISION_CHOICE_

/* Lists of models from the catalog, for the help and the messages; built once, whichever job
 * thread parses first. */
static struct {
    char all[256], model_help[300], click_logs[256];
} lists;
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static void build_lists(void) {
    catalog_filter click_logs = CATALOG_ALL;
    click_logs.input = MODEL_INPUT_CLICK_LOGS;
    catalog_list(lists.all, sizeof lists.all, CATALOG_ALL, ", ");
    snprintf(lists.model_help, sizeof lists.model_help, "one of %s (required)", lists.all);
    catalog_list(lists.click_logs, sizeof lists.click_logs, click_logs, ", ");
}

#define T train_options
/* One row per option (the row format is in runner/cli.h). Defaults that depend on the model
 * (optimizer, rates, schedule) are applied after parsing, in train_options_parse. */
static const cli_option OPTIONS[] = {
    {"--model", "NAME", lists.model_help, CLI_TEXT(T, model)},
    {"--data", "SET", "one of " DATA_SETS, CLI_TEXT(T, data), .fallback = "synthetic"},
    {"--data-root", "DIR", "real files: fashion-mnist (defaults to the installed copy), cifar10 (binary "
     "version), imagenet64 (npz), imagenet (JPEG folders), criteo-* (a TSV file or a folder of train.txt "
     "or day_N); without it, synthetic data shaped like the set", CLI_TEXT(T, data_root)},
    {"--data-if-present", NULL, "with --data-root: where that set's files are absent (or no reader exists "
     "for it yet), synthetic data of its shape", CLI_FLAG(T, data_if_present, 1)},
    {"--skip-bad", NULL, "skip (and count) images that fail to decode", CLI_FLAG(T, skip_bad, 1)},
    {"--decode", NULL, "imagenet JPEG folders: decode on the loader's CPU threads, or on the GPU with nvJPEG "
     "(its JPEG engines where it has them); auto: the GPU where the build has nvJPEG", CLI_CHOICE(T, decode, DECODES),
     .fallback = "auto"},
    {"--decode-slots", "N", "with the GPU decoder: batches decoding at once, each in a slot of its own (a batch of "
     "pictures in memory each); alone on a GPU one is fastest; jobs sharing a GPU may gain from more", CLI_INT(T, decode_slots, 1, JOB_DECODE_SLOTS_MAX),
     .fallback = "1", CLI_MARK(T, decode_slots_set)},
    {"--batch", "N", "samples per step", CLI_INT(T, batch, 1, 65536), .fallback = "128"},
    {"--epochs", "N", "epochs; the first warms up", CLI_INT(T, epochs, 1, 100000), .fallback = "2"},
    {"--steps-per-epoch", "N", "steps per epoch (default: whole epochs)", CLI_INT(T, steps_per_epoch, 1, 1LL << 40)},
    {"--image-size", "N", "image side (default: the data set's)", CLI_INT(T, image_size, 8, 2048)},
    {"--classes", "N", "classes (default: the data set's)", CLI_INT(T, classes, 2, 1000000)},
    {"--optimizer", NULL, "cait_*: adamw with lr 1e-3, weight decay 0.05, cosine after a 5% warm-up; others: "
     "sgd (efficientnetv2_s: lr 0.05, Nesterov)", CLI_CHOICE(T, optimizer, TRAIN_OPTIMIZERS), CLI_MARK(T, optimizer_set)},
    {"--lr", "X", "learning rate", CLI_REAL(T, lr, 0, 100), .fallback = "0.1", CLI_MARK(T, lr_set)},
    {"--momentum", "X", "SGD momentum", CLI_REAL(T, momentum, 0, 0.9999), .fallback = "0.9", CLI_MARK(T, momentum_set)},
    {"--weight-decay", "X", "weight decay (not on norms and biases unless --wd-all)",
     CLI_REAL(T, weight_decay, 0, 1), .fallback = "5e-4", CLI_MARK(T, weight_decay_set)},
    {"--nesterov", NULL, "Nesterov momentum", CLI_FLAG(T, nesterov, 1)},
    {"--wd-all", NULL, "weight decay on every parameter", CLI_FLAG(T, decay_all, 1)},
    {"--schedule", NULL, "learning-rate schedule", CLI_CHOICE(T, schedule, TRAIN_SCHEDULES), .fallback = "one-cycle",
     CLI_MARK(T, schedule_set)},
    {"--warmup-pct", "X", "share of the steps spent warming up (one-cycle rise, cosine warm-up)",
     CLI_REAL(T, warmup_pct, 0, 0.999), .fallback = "0.15", CLI_MARK(T, warmup_set)},
    {"--step-epochs", "N", "step schedule: epochs between decays", CLI_INT(T, step_epochs, 1, 100000), .fallback = "30"},
    {"--gamma", "X", "step schedule: decay factor", CLI_REAL(T, gamma, 0, 1), .fallback = "0.1"},
    {"--min-lr", "X", "the schedule's lowest rate", CLI_REAL(T, min_lr, 0, 100), .fallback = "0"},
    {"--label-smoothing", "X", "cross-entropy label smoothing", CLI_REAL(T, label_smoothing, 0, 0.999), .fallback = "0"},
    {"--patch-size", "N", "cait_*: patch side (16; e.g. 4 for 32x32 inputs)", CLI_INT(T, patch_size, 1, 1024)},
    {"--drop-path", "X", "efficientnetv2_s: stochastic depth rate", CLI_REAL(T, drop_path, 0, 0.999), .fallback = "0"},
    {"--max-rows", "N", "dlrm: cap every embedding table at N rows (hash modulo)", CLI_INT(T, max_rows, 1, 2147483647)},
    {"--block-steps", "N", "dlrm: steps per timed training block", CLI_INT(T, block_steps, 1, 1LL << 40),
     .fallback = "1000"},
    {"--lr-warmup-steps", "N", "dlrm: linear warm-up steps (0: none)", CLI_INT(T, lr_warmup_steps, 0, 1LL << 40)},
    {"--lr-decay-start", "N", "dlrm: step where the polynomial decay starts", CLI_INT(T, lr_decay_start, 0, 1LL << 40)},
    {"--lr-decay-steps", "N", "dlrm: steps the decay lasts (0: none)", CLI_INT(T, lr_decay_steps, 0, 1LL << 40)},
    {"--seed", "N", "random seed", CLI_INT(T, seed, 0, 1LL << 62), .fallback = "0"},
    {"--save", "FILE", "write a safetensors checkpoint at the end", CLI_TEXT(T, save)},
    {"--load", "FILE", "start from a safetensors checkpoint", CLI_TEXT(T, load)},
    {"--kernels", "PREFIX", "time every kernel in place (CUPTI) over one window, named by layer, pass and class: "
     "with --window-protocol the runner's \"trace T0 T1\" after the measured windows, else the last epoch; writes "
     "PREFIX.kernels.csv and PREFIX.intervals.csv and a kernels event", CLI_TEXT(T, kernels)},
    {"--eval", NULL, "test-set accuracy after each epoch", CLI_FLAG(T, eval, 1)},
    {"--json", NULL, "one JSON event per line on stdout", CLI_FLAG(T, json, 1)},
    {"--dry-run", NULL, "no GPU: parameters and the planned GPU footprint", CLI_FLAG(T, dry_run, 1)},
    {"--wait-go", NULL, "after warm-up print a ready event and wait for \"go\" on stdin", CLI_FLAG(T, wait_go, 1)},
    {"--window-protocol", NULL, "with --wait-go: after the warm-up epoch train until \"stop\" on stdin and report "
     "each \"window T0 T1\" given there (run_suite's window measurement)", CLI_FLAG(T, window_protocol, 1)},
    {"--warmup-steps", "N", "with --window-protocol: the warm-up epoch's steps, when fewer than an epoch's (0: "
     "the whole epoch); the epochs after it are whole", CLI_INT(T, warmup_steps, 0, 1LL << 40), .fallback = "0"},
    {"--workers", "N", "data loader threads (0: the CPU count divided by the jobs sharing the machine "
     "(SUITE_CONCURRENT_JOBS, set by run_suite), at least 1 and at most 16)", CLI_INT(T, workers, 0, 256),
     .fallback = "0"},
    {"--device", "N", "CUDA device", CLI_INT(T, device, 0, 1023), .fallback = "0"},
    {"--gpus", "N", "data-parallel over N GPUs (devices 0..N-1), one process each; --batch is per GPU",
     CLI_INT(T, gpus, 1, 64)},
    {"--launcher", NULL, "this process is one rank of a data-parallel job whose ranks another program started: env "
     "reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (as torchrun sets them), slurm srun's "
     "SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_NODELIST; the rank trains on --device + its local rank, "
     "rank 0 hands NCCL's id to the others over TCP and prints the job's events", CLI_CHOICE(T, launcher, LAUNCHERS)},
    {"--no-graph", NULL, "run the step kernel by kernel instead of as a CUDA graph", CLI_FLAG(T, use_graph, 0)},
    {"--precision", NULL, "tf32: float32 with TF32 tensor-core math; fp32: strict float32; bf16: mixed precision "
     "as torch.autocast (bfloat16 activations, float32 weights, gradients, statistics and loss; the vision models)",
     CLI_CHOICE(T, precision, PRECISIONS), .fallback = "tf32"},
    {"--no-tf32", NULL, "strict float32 (no TF32 tensor-core math): --precision fp32", CLI_FLAG(T, allow_tf32, 0)},
    {"--workspace-mb", "N", "cuDNN workspace bound", CLI_INT(T, workspace_mb, 0, 1 << 20), .fallback = "512"},
    {"--inject-fault", "KIND@STEP", "fail on purpose at that training step (counted over all epochs), to test "
     "how the runner and each sharing mode take it; KIND: " FAULT_KINDS, CLI_TEXT(T, inject_fault)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "train",
    .synopsis = "usage: train --model NAME [--data SET] [--batch N] [--epochs N] [options]",
    .epilogue = "exit status: 0 done, 1 run-time error, 2 bad input (reported before the GPU is touched)\n",
    .options = OPTIONS,
};

decode_kind train_decode_plan(const train_options *o, int jpeg_files, int nvjpeg_built, char *why,
                              size_t why_size) {
    if (!jpeg_files) {
        snprintf(why, why_size, "no JPEG files to decode (%s data)",
                 strcmp(o->data, "imagenet") ? o->data : "synthetic");
        return DECODE_CPU;
    }
    if (o->decode == DECODE_CPU) {
        snprintf(why, why_size, "--decode cpu");
        return DECODE_CPU;
    }
    if (!nvjpeg_built) {
        snprintf(why, why_size, "--decode %s: this build has no nvJPEG", decode_kind_name(o->decode));
        return DECODE_CPU;
    }
    snprintf(why, why_size, "--decode %s%s", decode_kind_name(o->decode),
             o->decode == DECODE_AUTO ? ": JPEG files, and nvJPEG is built in" : "");
    return DECODE_GPU;
}

const char *lr_kind_name(lr_kind kind) {
    for (const cli_choice *c = TRAIN_SCHEDULES; c->name; c++)
        if (c->value == (int)kind) return c->name;
    return "one-cycle";
}

/* Image size, classes and epoch length of each data set; synthetic follows the options. */
static int data_defaults(train_options *o, const model_spec *spec, char *err, size_t err_size) {
    int size = 32, classes = 10;
    int64_t count = 50000;
    int click_logs = spec && spec->input == MODEL_INPUT_CLICK_LOGS;
    char sets[256];
    if (is_criteo(o->data)) {
        /* a recommender: samples are click-log rows, not images */
        if (!click_logs) {
            snprintf(err, err_size, "--data %s: click logs are for --model %s, not %s", o->data, lists.click_logs,
                     o->model);
            return -1;
        }
        if (!catalog_takes(spec, o->data)) {
            snprintf(err, err_size, "--data: unknown data set '%s': %s trains on %s", o->data, o->model,
                     catalog_data_list(sets, sizeof sets, spec, " or "));
            return -1;
        }
        if (!o->synthetic_count)
            o->synthetic_count = !strcmp(o->data, "criteo-kaggle") ? 45840617 : 4373472329LL;
        return 0;
    }
    if (click_logs) {
        snprintf(err, err_size, "--model %s trains on click logs: --data %s (got '%s')", o->model,
                 catalog_data_list(sets, sizeof sets, spec, " or "), o->data);
        return -1;
    }
    if (strcmp(o->data, "fashion-mnist") == 0) count = 60000;
    else if (strcmp(o->data, "imagenet64") == 0) size = 64, classes = 1000, count = 1281167;
    else if (strcmp(o->data, "imagenet") == 0) size = 224, classes = 1000, count = 1281167;
    else if (strcmp(o->data, "cifar10") != 0 && strcmp(o->data, "synthetic") != 0) {
        snprintf(err, err_size, "--data: unknown data set '%s': expected one of %s", o->data, DATA_SETS);
        return -1;
    }
    /* Real files fix the classes, and the image size except for ImageNet's crops. With
     * --data-if-present the files may turn out absent: the options must suit synthetic data too. */
    int real = !strcmp(o->data, "fashion-mnist") || (o->data_root[0] && !o->data_if_present);
    int fixed_size = strcmp(o->data, "imagenet") != 0;
    if (real && ((fixed_size && o->image_size && o->image_size != size) || (o->classes && o->classes != classes))) {
        snprintf(err, err_size, "--data %s: its images are %dx%d with %d classes (got --image-size %d "
                 "--classes %d)", o->data, size, size, classes, o->image_size, o->classes);
        return -1;
    }
    if (o->data_root[0] && !strcmp(o->data, "synthetic")) {
        snprintf(err, err_size, "--data-root: synthetic data has no files; name the data set with --data "
                 "(fashion-mnist, cifar10, imagenet64, imagenet)");
        return -1;
    }
    if (!o->image_size) o->image_size = size;
    if (!o->classes) o->classes = classes;
    if (!o->synthetic_count) o->synthetic_count = count;
    return 0;
}

int train_options_parse(train_options *o, int argc, char **argv, char *err, size_t err_size) {
    pthread_once(&lists_once, build_lists);
    memset(o, 0, sizeof *o);
    o->use_graph = 1, o->allow_tf32 = 1; /* the --no-graph and --no-tf32 switches clear them */
    int rc = cli_parse(&PROGRAM, o, argc, argv, err, err_size);
    if (rc != 0) return rc;
    o->workspace_limit = (size_t)o->workspace_mb << 20;
    if (o->inject_fault[0]) {
        char why[256];
        if (fault_parse(o->inject_fault, strlen(o->inject_fault), &o->fault, why, sizeof why) != 0) {
            snprintf(err, err_size, "--inject-fault: %s", why);
            return -1;
        }
    }
    if (!o->allow_tf32 && cli_given(argc, argv, "--precision") && o->precision != PRECISION_FP32) {
        snprintf(err, err_size, "--no-tf32 is --precision fp32; --precision %s contradicts it (give one of them)",
                 precision_name(o->precision));
        return -1;
    }
    if (!o->allow_tf32 && o->precision == PRECISION_TF32) o->precision = PRECISION_FP32;
    if (o->precision == PRECISION_FP32) o->allow_tf32 = 0;
    if (!o->model[0]) {
        snprintf(err, err_size, "--model is required: one of %s", lists.all);
        return -1;
    }
    /* every model the catalog holds, whichever workload trains it (the recommender too) */
    const model_spec *spec = catalog_find(o->model);
    if (!spec) {
        char shown[QUOTE_SHOWN * 4 + 48];
        snprintf(err, err_size, "--model: expected one of %s, got %s", lists.all,
                 quote_text(shown, sizeof shown, '\'', o->model, strlen(o->model)));
        return -1;
    }
    if (o->data_if_present && !o->data_root[0]) { /* an option that applies to nothing is refused, not ignored */
        snprintf(err, err_size, "--data-if-present goes with --data-root (it says what a job trains on where that "
                 "folder lacks its set's files); without --data-root every set but fashion-mnist is synthetic");
        return -1;
    }
    if (train_rule_precision(spec, o->model, o->precision, err, err_size) != 0) return -1;
    /* The model's recipe (models/catalog.c) where the command line names no optimizer; explicit
     * options still win. */
    if (spec && !o->optimizer_set) {
        o->optimizer = spec->optimizer;
        if (o->optimizer == OPTIMIZER_SGD && spec->lr > 0 && !o->lr_set) o->lr = spec->lr;
        if (o->optimizer == OPTIMIZER_SGD && spec->nesterov && o->momentum > 0) o->nesterov = 1;
    }
    /* AdamW's own defaults, whichever model trains with it (timm's recipe for CaiT). */
    if (o->optimizer == OPTIMIZER_ADAMW) {
        if (!o->lr_set) o->lr = 1e-3f;
        if (!o->weight_decay_set) o->weight_decay = 0.05f;
        if (!o->schedule_set) o->schedule = train_rule_default_schedule(o->optimizer);
        if (!o->warmup_set) o->warmup_pct = 0.05f;
    }
    /* every option given that applies only to some models, optimizers or schedules, against this
       job's as they now stand (runner/train/train_rules.h) */
    train_rule_job job = {spec, o->model, o->optimizer, o->schedule};
    if (train_rule_check_given(argc, argv, &job, err, err_size) != 0) return -1;
    if (o->min_lr > o->lr) {
        snprintf(err, err_size, "--min-lr %g is above --lr %g%s: the schedule's lowest rate above its highest", o->min_lr,
                 o->lr, o->lr_set ? "" : " (the default for this model and optimizer)");
        return -1;
    }
    if (o->nesterov && o->momentum == 0) {
        snprintf(err, err_size, "--nesterov needs a momentum above 0");
        return -1;
    }
    if (o->warmup_steps > 0 && !o->window_protocol) {
        snprintf(err, err_size, "--warmup-steps shortens the window protocol's warm-up epoch: it goes with "
                 "--window-protocol");
        return -1;
    }
    if (o->decode == DECODE_GPU && (strcmp(o->data, "imagenet") != 0 || !o->data_root[0])) {
        snprintf(err, err_size, "--decode gpu decodes ImageNet's JPEG files: --data imagenet --data-root DIR "
                 "(got --data %s%s)", o->data, o->data_root[0] ? "" : " without --data-root");
        return -1;
    }
    if (o->decode_slots_set && o->decode == DECODE_CPU) {
        snprintf(err, err_size, "--decode-slots %d sizes the GPU decoder; --decode cpu decodes on the loader's threads",
                 o->decode_slots);
        return -1;
    }
    if (o->decode == DECODE_GPU && !SUITE_HAVE_NVJPEG) {
        snprintf(err, err_size, "--decode gpu: this build has no nvJPEG (pip install nvidia-nvjpeg, then configure "
                 "and build again, as README's set-up does); --decode cpu decodes on the loader's threads");
        return -1;
    }
    if ((o->gpus || o->launcher) && spec && !(spec->options & MODEL_DATA_PARALLEL)) {
        snprintf(err, err_size, "%s: data-parallel training covers the image models, not %s",
                 o->launcher ? "--launcher" : "--gpus", o->model);
        return -1;
    }
    if (o->launcher && o->gpus) {
        snprintf(err, err_size, "--launcher %s with --gpus %d: the launcher starts the job's ranks and says how many "
                 "(WORLD_SIZE, SLURM_NTASKS); --gpus is train starting its own: give one of them",
                 rank_env_launcher_name(o->launcher), o->gpus);
        return -1;
    }
    if (o->launcher && (o->wait_go || o->window_protocol)) {
        snprintf(err, err_size, "--launcher %s with %s: that is run_suite's protocol with the job it starts; the ranks a "
                 "launcher starts begin together by themselves (rank 0 releases them)",
                 rank_env_launcher_name(o->launcher), o->window_protocol ? "--window-protocol" : "--wait-go");
        return -1;
    }
    if (o->kernels[0] && (o->gpus || o->launcher)) {
        snprintf(err, err_size, "--kernels with %s: a data-parallel job's kernels run in several processes, and the "
                 "trace is one process's; trace the job on one GPU", o->gpus ? "--gpus" : "--launcher");
        return -1;
    }
    if (o->window_protocol && !o->wait_go) {
        snprintf(err, err_size, "--window-protocol goes with --wait-go (the runner's commands come after \"go\")");
        return -1;
    }
    return data_defaults(o, spec, err, err_size);
}

int train_options_check_files(const train_options *o, char *err, size_t err_size) {
    char why[1024];
    /* a root given that cannot be used is bad input, never a reason for synthetic data */
    if (data_root_check(o->data, o->data_root, err, err_size) != 0) return -1;
    if (o->load[0] && st_check_file(o->load, why, sizeof why) != 0) {
        snprintf(err, err_size, "--load %s", why);
        return -1;
    }
    /* the one rule of outputs (base/output_path.h): never onto what the job reads */
    const char *inputs[] = {o->load, o->data_root, NULL};
    const output_path_rule save = {"--save", OUTPUT_PATH_FILE, inputs, ".safetensors"};
    if (o->save[0] && output_path_check(&save, o->save, err, err_size) != 0) return -1;
    /* --kernels' two files, each by the same rule */
    const output_path_rule kernels = {"--kernels", OUTPUT_PATH_FILE, inputs, ".csv"};
    char files[2][1100];
    kernel_files_paths(o->kernels, files[0], files[1], sizeof files[0]);
    for (int i = 0; o->kernels[0] && i < 2; i++)
        if (output_path_check(&kernels, files[i], err, err_size) != 0) return -1;
    return 0;
}
