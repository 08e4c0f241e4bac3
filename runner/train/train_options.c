#include "runner/train/train_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *DATA_SETS = "synthetic, fashion-mnist, cifar10, imagenet64, imagenet, criteo-kaggle, "
                                "criteo-terabyte";
static const char *MODELS = "resnet26, resnet50, resnet152, efficientnetv2_s, cait_xxs24, dlrm";

static int is_criteo(const char *data) { return !strncmp(data, "criteo-", 7); }

void train_options_usage(void *file) {
    fprintf((FILE *)file,
            "usage: train --model NAME [--data SET] [--batch N] [--epochs N] [options]\n"
            "  --model resnet26|resnet50|resnet152|efficientnetv2_s|cait_xxs24|dlrm\n"
            "  --data %s (default synthetic)\n"
            "  --data-root DIR        real files: fashion-mnist (defaults to the installed copy),\n"
            "                         cifar10 (binary version), imagenet64 (npz), imagenet (JPEG\n"
            "                         folders); without it, synthetic data shaped like the set\n"
            "  --skip-bad             skip (and count) images that fail to decode\n"
            "  --data-if-present      with --data-root: where that set's files are absent (or no\n"
            "                         reader exists for it yet), synthetic data of its shape\n"
            "                         (criteo-*: DIR is a TSV file or a folder of train.txt or day_N)\n"
            "  --batch N (128)  --epochs N (2)  --steps-per-epoch N (whole epochs)\n"
            "  --image-size N  --classes N     (default from the data set)\n"
            "  --lr X (0.1)  --momentum X (0.9)  --weight-decay X (5e-4)  --nesterov  --wd-all\n"
            "  --schedule constant|step|cosine|one-cycle (one-cycle)  --warmup-pct X (0.15)\n"
            "  --step-epochs N (30)  --gamma X (0.1)  --min-lr X (0)  --label-smoothing X (0)\n"
            "  --optimizer sgd|adamw  (cait_*: adamw, lr 1e-3, weight decay 0.05, cosine with 5%%\n"
            "                         warm-up; others: sgd; efficientnetv2_s: lr 0.05, Nesterov)\n"
            "  --patch-size N         vision transformers: patch side (16; e.g. 4 for 32x32 inputs)\n"
            "  --drop-path X (0)      stochastic depth rate\n"
            "  --max-rows N           dlrm: cap every embedding table at N rows (hash modulo)\n"
            "  --block-steps N (1000) dlrm: steps per timed training block\n"
            "  --lr-warmup-steps N  --lr-decay-start N  --lr-decay-steps N\n"
            "                         dlrm: the reference's policy (linear warm-up, then polynomial\n"
            "                         decay from the start step over that many steps; 0: none)\n"
            "  --seed N (0)  --save FILE  --load FILE  --eval  --json  --dry-run\n"
            "  --wait-go              after warm-up print a ready event and wait for \"go\" on stdin\n"
            "  --workers N            data loader threads (0: the CPU count divided by the jobs\n"
            "                         sharing the machine (SUITE_CONCURRENT_JOBS, set by run_suite),\n"
            "                         at least 1 and at most 16)\n"
            "  --device N (0)  --no-graph  --no-tf32  --workspace-mb N (512)\n",
            DATA_SETS);
}

const char *lr_kind_name(lr_kind kind) {
    switch (kind) {
    case LR_CONSTANT: return "constant";
    case LR_STEP: return "step";
    case LR_COSINE: return "cosine";
    default: return "one-cycle";
    }
}

static int parse_long(const char *option, const char *text, long lo, long hi, long *out, char *err,
                      size_t err_size) {
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno || v < lo || v > hi) {
        snprintf(err, err_size, "%s: expected a whole number from %ld to %ld, got '%s'", option, lo, hi,
                 text ? text : "(nothing)");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_float(const char *option, const char *text, double lo, double hi, float *out,
                       char *err, size_t err_size) {
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || *end || errno || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, err_size, "%s: expected a number from %g to %g, got '%s'", option, lo, hi,
                 text ? text : "(nothing)");
        return -1;
    }
    *out = (float)v;
    return 0;
}

static int copy_text(const char *option, const char *text, char *dst, size_t size, char *err,
                     size_t err_size) {
    if (!text || !*text || strlen(text) >= size) {
        snprintf(err, err_size, "%s: expected a value of 1 to %zu characters", option, size - 1);
        return -1;
    }
    strcpy(dst, text);
    return 0;
}

/* Image size, classes and epoch length of each data set; synthetic follows the options. */
static int data_defaults(train_options *o, char *err, size_t err_size) {
    int size = 32, classes = 10;
    int64_t count = 50000;
    if (is_criteo(o->data)) {
        /* a recommender: samples are click-log rows, not images */
        int dlrm = !strcmp(o->model, "dlrm");
        if (!dlrm || (strcmp(o->data, "criteo-kaggle") && strcmp(o->data, "criteo-terabyte"))) {
            snprintf(err, err_size, dlrm ? "--data: unknown data set '%s': dlrm trains on criteo-kaggle or "
                     "criteo-terabyte" : "--data %s: click logs are for --model dlrm, not %s", o->data,
                     o->model);
            return -1;
        }
        if (!o->synthetic_count)
            o->synthetic_count = !strcmp(o->data, "criteo-kaggle") ? 45840617 : 4373472329LL;
        return 0;
    }
    if (!strcmp(o->model, "dlrm")) {
        snprintf(err, err_size, "--model dlrm trains on click logs: --data criteo-kaggle or criteo-terabyte "
                 "(got '%s')", o->data);
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
    memset(o, 0, sizeof *o);
    strcpy(o->data, "synthetic");
    o->batch = 128, o->epochs = 2;
    o->lr = 0.1f, o->momentum = 0.9f, o->weight_decay = 5e-4f, o->warmup_pct = 0.15f;
    o->gamma = 0.1f, o->step_epochs = 30, o->schedule = LR_ONE_CYCLE;
    o->use_graph = 1, o->allow_tf32 = 1, o->workspace_limit = (size_t)512 << 20;
    o->block_steps = 1000;
    int optimizer_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int rc = 0, takes_value = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            train_options_usage(stdout);
            return 1;
        } else if (!strcmp(a, "--model")) rc = copy_text(a, v, o->model, sizeof o->model, err, err_size);
        else if (!strcmp(a, "--data")) rc = copy_text(a, v, o->data, sizeof o->data, err, err_size);
        else if (!strcmp(a, "--data-root")) rc = copy_text(a, v, o->data_root, sizeof o->data_root, err, err_size);
        else if (!strcmp(a, "--save")) rc = copy_text(a, v, o->save, sizeof o->save, err, err_size);
        else if (!strcmp(a, "--load")) rc = copy_text(a, v, o->load, sizeof o->load, err, err_size);
        else if (!strcmp(a, "--batch")) rc = parse_long(a, v, 1, 65536, &n, err, err_size), o->batch = (int)n;
        else if (!strcmp(a, "--epochs")) rc = parse_long(a, v, 1, 100000, &n, err, err_size), o->epochs = (int)n;
        else if (!strcmp(a, "--steps-per-epoch")) rc = parse_long(a, v, 1, 1L << 40, &n, err, err_size), o->steps_per_epoch = n;
        else if (!strcmp(a, "--image-size")) rc = parse_long(a, v, 8, 2048, &n, err, err_size), o->image_size = (int)n;
        else if (!strcmp(a, "--classes")) rc = parse_long(a, v, 2, 1000000, &n, err, err_size), o->classes = (int)n;
        else if (!strcmp(a, "--seed")) rc = parse_long(a, v, 0, 1L << 62, &n, err, err_size), o->seed = (uint64_t)n;
        else if (!strcmp(a, "--step-epochs")) rc = parse_long(a, v, 1, 100000, &n, err, err_size), o->step_epochs = (int)n;
        else if (!strcmp(a, "--device")) rc = parse_long(a, v, 0, 1023, &n, err, err_size), o->device = (int)n;
        else if (!strcmp(a, "--workers")) rc = parse_long(a, v, 0, 256, &n, err, err_size), o->workers = (int)n;
        else if (!strcmp(a, "--workspace-mb")) rc = parse_long(a, v, 0, 1 << 20, &n, err, err_size), o->workspace_limit = (size_t)n << 20;
        else if (!strcmp(a, "--patch-size")) rc = parse_long(a, v, 1, 1024, &n, err, err_size), o->patch_size = (int)n;
        else if (!strcmp(a, "--max-rows")) rc = parse_long(a, v, 1, 2147483647L, &n, err, err_size), o->max_rows = n;
        else if (!strcmp(a, "--block-steps")) rc = parse_long(a, v, 1, 1L << 40, &n, err, err_size), o->block_steps = n;
        else if (!strcmp(a, "--lr-warmup-steps")) rc = parse_long(a, v, 0, 1L << 40, &n, err, err_size), o->lr_warmup_steps = n;
        else if (!strcmp(a, "--lr-decay-start")) rc = parse_long(a, v, 0, 1L << 40, &n, err, err_size), o->lr_decay_start = n;
        else if (!strcmp(a, "--lr-decay-steps")) rc = parse_long(a, v, 0, 1L << 40, &n, err, err_size), o->lr_decay_steps = n;
        else if (!strcmp(a, "--drop-path")) rc = parse_float(a, v, 0, 0.999, &o->drop_path, err, err_size);
        else if (!strcmp(a, "--lr")) rc = parse_float(a, v, 0, 100, &o->lr, err, err_size), o->lr_set = 1;
        else if (!strcmp(a, "--momentum"))
            rc = parse_float(a, v, 0, 0.9999, &o->momentum, err, err_size), o->momentum_set = 1;
        else if (!strcmp(a, "--weight-decay"))
            rc = parse_float(a, v, 0, 1, &o->weight_decay, err, err_size), o->weight_decay_set = 1;
        else if (!strcmp(a, "--optimizer")) {
            if (v && !strcmp(v, "sgd")) o->optimizer = OPTIMIZER_SGD;
            else if (v && !strcmp(v, "adamw")) o->optimizer = OPTIMIZER_ADAMW;
            else {
                snprintf(err, err_size, "--optimizer: expected sgd or adamw, got '%s'", v ? v : "(nothing)");
                rc = -1;
            }
            optimizer_set = 1;
        }
        else if (!strcmp(a, "--label-smoothing")) rc = parse_float(a, v, 0, 0.999, &o->label_smoothing, err, err_size);
        else if (!strcmp(a, "--warmup-pct"))
            rc = parse_float(a, v, 0, 0.999, &o->warmup_pct, err, err_size), o->warmup_set = 1;
        else if (!strcmp(a, "--gamma")) rc = parse_float(a, v, 0, 1, &o->gamma, err, err_size);
        else if (!strcmp(a, "--min-lr")) rc = parse_float(a, v, 0, 100, &o->min_lr, err, err_size);
        else if (!strcmp(a, "--schedule")) {
            o->schedule_set = 1;
            if (v && !strcmp(v, "constant")) o->schedule = LR_CONSTANT;
            else if (v && !strcmp(v, "step")) o->schedule = LR_STEP;
            else if (v && !strcmp(v, "cosine")) o->schedule = LR_COSINE;
            else if (v && !strcmp(v, "one-cycle")) o->schedule = LR_ONE_CYCLE;
            else {
                snprintf(err, err_size, "--schedule: expected constant, step, cosine or one-cycle, got '%s'",
                         v ? v : "(nothing)");
                rc = -1;
            }
        } else {
            takes_value = 0;
            if (!strcmp(a, "--nesterov")) o->nesterov = 1;
            else if (!strcmp(a, "--wd-all")) o->decay_all = 1;
            else if (!strcmp(a, "--eval")) o->eval = 1;
            else if (!strcmp(a, "--json")) o->json = 1;
            else if (!strcmp(a, "--dry-run")) o->dry_run = 1;
            else if (!strcmp(a, "--wait-go")) o->wait_go = 1;
            else if (!strcmp(a, "--data-if-present")) o->data_if_present = 1;
            else if (!strcmp(a, "--skip-bad")) o->skip_bad = 1;
            else if (!strcmp(a, "--no-graph")) o->use_graph = 0;
            else if (!strcmp(a, "--no-tf32")) o->allow_tf32 = 0;
            else {
                snprintf(err, err_size, "unknown option '%s' (train --help lists them)", a);
                return -1;
            }
        }
        if (rc) return -1;
        i += takes_value;
    }
    if (!o->model[0]) {
        snprintf(err, err_size, "--model is required: one of %s", MODELS);
        return -1;
    }
    if (strcmp(o->model, "dlrm") != 0 && (o->max_rows || o->lr_warmup_steps || o->lr_decay_start || o->lr_decay_steps)) {
        snprintf(err, err_size, "--max-rows and --lr-warmup-steps/--lr-decay-start/--lr-decay-steps are the "
                 "recommender's (--model dlrm), not %s's", o->model);
        return -1;
    }
    if (o->patch_size && strncmp(o->model, "cait", 4) != 0) {
        snprintf(err, err_size, "--patch-size: %s has no patches (it is for cait_xxs24)", o->model);
        return -1;
    }
    if (o->drop_path > 0 && strcmp(o->model, "efficientnetv2_s") != 0) {
        snprintf(err, err_size, "--drop-path: stochastic depth is built for efficientnetv2_s, not %s", o->model);
        return -1;
    }
    /* EfficientNetV2 learns best here with a lower SGD rate and Nesterov momentum (5 epochs of
     * Fashion-MNIST at 32x32: 0.90 test accuracy, against 0.79 at ResNet's 0.1; bench/NOTES.md) */
    if (!strcmp(o->model, "efficientnetv2_s") && o->optimizer == OPTIMIZER_SGD && !optimizer_set) {
        if (!o->lr_set) o->lr = 0.05f;
        if (o->momentum > 0) o->nesterov = 1;
    }
    /* CaiT trains with AdamW as timm's recipe does; explicit options still win. */
    if (!optimizer_set && !strncmp(o->model, "cait", 4)) o->optimizer = OPTIMIZER_ADAMW;
    if (o->optimizer == OPTIMIZER_ADAMW) {
        if (!o->lr_set) o->lr = 1e-3f;
        if (!o->weight_decay_set) o->weight_decay = 0.05f;
        if (!o->schedule_set) o->schedule = LR_COSINE;
        if (!o->warmup_set) o->warmup_pct = 0.05f;
    }
    if (o->nesterov && o->momentum == 0) {
        snprintf(err, err_size, "--nesterov needs a momentum above 0");
        return -1;
    }
    return data_defaults(o, err, err_size);
}
