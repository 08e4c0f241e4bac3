/* Mix parsing (grammar in mix.h). A hand-written scanner rather than sscanf so that every
 * rejection can name the exact part of the mix at fault and list what would have been valid:
 * a mix is typed on the command line, and "bad mix" alone helps nobody. */
#include "runner/suite/plan/mix.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/number.h"
#include "base/quote.h"
#include "models/catalog.h"
#include "runner/train/train_rules.h"

#define MIX_MAX_BATCH 65536
#define MIX_MAX_EPOCHS 100000
#define MIX_MAX_STEPS 1000000000L
#define MIX_MAX_CLASSES 100000
#define MIX_MAX_ROWS 2147483647LL
#define MIX_MIN_SIZE 16
#define MIX_MAX_SIZE 1024

static const mix_preset presets[] = {
    {"S", "resnet26", "cifar10", 32, 10, 128, 0, "small: ResNet-26 on CIFAR-10, 32x32, batch 128"},
    {"M", "resnet50", "imagenet64", 64, 1000, 128, 0,
     "medium: ResNet-50 on ImageNet 64x64, batch 128"},
    {"L", "resnet152", "imagenet", 224, 1000, 32, 0,
     "large: ResNet-152 on ImageNet 224x224, batch 32"},
    {"XL", "dlrm", "criteo-terabyte", 0, 0, 2048, 10000000,
     "very large: DLRM-style recommender on Criteo Terabyte, tables capped at 10M rows (~28 GB), "
     "batch 2048"},
};
#define PRESET_COUNT ((int)(sizeof presets / sizeof presets[0]))

typedef struct data_set {
    const char *name;
    int image_size, classes;
} data_set;
static const data_set data_sets[] = {
    {"cifar10", 32, 10},       {"imagenet64", 64, 1000}, {"imagenet", 224, 1000},
    {"criteo-kaggle", 0, 0},   {"criteo-terabyte", 0, 0}, {"fashion-mnist", 32, 10},
    {"synthetic", 32, 10},
};
#define DATA_COUNT ((int)(sizeof data_sets / sizeof data_sets[0]))

#define VALID_PRESETS                                                                             \
    "presets S (resnet26:cifar10@128), M (resnet50:imagenet64@128), L (resnet152:imagenet@32), " \
    "XL (dlrm:criteo-terabyte@2048[rows=10000000])"
#define VALID_DATA \
    "cifar10, imagenet64, imagenet, criteo-kaggle, criteo-terabyte, fashion-mnist, synthetic"
#define VALID_OVERRIDES                                                                           \
    "epochs=1..100000, steps=1..1000000000 (steps per epoch), classes=2..100000 (synthetic only), " \
    "rows=1..2147483647 (dlrm only: rows per embedding table at most), "                           \
    "precision=tf32|fp32|bf16, gpus=1..64 (data-parallel, one rank per GPU), "                     \
    "decode=cpu|gpu|auto (imagenet only: where its JPEGs decode), "                                 \
    "decode_slots=1..8 (imagenet only: batches the GPU decoder decodes at once), "                   \
    "fault=KIND@STEP (KIND: " FAULT_KINDS ")"

const mix_preset *mix_presets(int *count) {
    if (count) *count = PRESET_COUNT;
    return presets;
}

/* ---- small scanning helpers ----------------------------------------------------------------- */

typedef struct span {
    const char *p;
    size_t n;
} span;

static span trim(span s) {
    while (s.n && (s.p[0] == ' ' || s.p[0] == '\t')) s.p++, s.n--;
    while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t')) s.n--;
    return s;
}

static int span_has_space(span s) {
    for (size_t i = 0; i < s.n; i++)
        if (isspace((unsigned char)s.p[i])) return 1;
    return 0;
}

static int span_is(span s, const char *word) {
    return strlen(word) == s.n && strncasecmp(s.p, word, s.n) == 0;
}

/* First position of c in s outside brackets, or -1. */
static long find_top(span s, char c) {
    int depth = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] == c && depth == 0) return (long)i;
        if (s.p[i] == '[') depth++;
        if (s.p[i] == ']') depth--;
    }
    return -1;
}

/* The error context: the whole mix and the part at fault, then the problem. */
typedef struct parse_ctx {
    const char *text;
    char *err;
    size_t err_size;
} parse_ctx;

__attribute__((format(printf, 4, 5))) static int fail(const parse_ctx *c, int part, span where,
                                                     const char *fmt, ...) {
    if (!c->err || !c->err_size) return -1;
    char mix[QUOTE_SHOWN * 4 + 48], at[QUOTE_SHOWN * 4 + 48]; /* escaped and cut: base/quote.h */
    quote_text(mix, sizeof mix, '"', c->text, strlen(c->text));
    int n;
    if (part > 0) {
        quote_text(at, sizeof at, '"', where.p, where.n);
        n = snprintf(c->err, c->err_size, "mix %s, part %d %s: ", mix, part, at);
    } else {
        n = snprintf(c->err, c->err_size, "mix %s: ", mix);
    }
    if (n < 0 || (size_t)n >= c->err_size) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->err_size - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* A whole number of the mix by the rule every grammar follows (base/number.h), its refusal in the
 * mix's context: "mix "S[epochs=0]", part 1 "S[epochs=0]": epochs: expected a whole number from 1
 * to 100000, got '0' (less than 1)". */
static int whole_in(const parse_ctx *c, int part, span where, const char *name, span value, long long lo,
                    long long hi, long long *out) {
    char why[512];
    if (number_parse(NUMBER_WHOLE, (double)lo, (double)hi, name, value.p, value.n, out, NULL, why, sizeof why) == 0)
        return 0;
    return fail(c, part, where, "%s", why);
}

static const data_set *find_data(span s) {
    for (int i = 0; i < DATA_COUNT; i++)
        if (span_is(s, data_sets[i].name)) return &data_sets[i];
    return NULL;
}

/* The models come from the catalog (models/catalog.h), matched in any case. */
static const model_spec *find_model(span s) {
    for (int i = 0; i < catalog_count(); i++)
        if (span_is(s, catalog_at(i)->name)) return catalog_at(i);
    return NULL;
}

static const char *valid_models(char *out, size_t size) { return catalog_list(out, size, CATALOG_ALL, ", "); }

/* What a job may be, for messages: the presets, or a model and a data set. */
static const char *valid_jobs(char *out, size_t size) {
    char models[256];
    snprintf(out, size, VALID_PRESETS ", or model:data@batch[/size] with model one of %s and data one of " VALID_DATA,
             valid_models(models, sizeof models));
    return out;
}

/* Which data sets feed which models, for messages: "dlrm takes criteo-kaggle or criteo-terabyte
 * only, and they feed only dlrm; image models (resnet26, ...) take cifar10, ...". */
static const char *who_takes_what(char *out, size_t size) {
    const model_spec *click = NULL, *image = NULL;
    for (int i = 0; i < catalog_count(); i++) {
        const model_spec *spec = catalog_at(i);
        if (spec->input == MODEL_INPUT_CLICK_LOGS && !click) click = spec;
        if (spec->input == MODEL_INPUT_IMAGES && !image) image = spec;
    }
    catalog_filter clicks = CATALOG_ALL, images = CATALOG_ALL;
    clicks.input = MODEL_INPUT_CLICK_LOGS, images.input = MODEL_INPUT_IMAGES;
    char click_models[128], click_sets[128], image_models[256], image_sets[256];
    catalog_list(click_models, sizeof click_models, clicks, ", ");
    snprintf(out, size, "%s takes %s only, and they feed only %s; image models (%s) take %s", click_models,
             catalog_data_list(click_sets, sizeof click_sets, click, " or "), click_models,
             catalog_list(image_models, sizeof image_models, images, ", "),
             catalog_data_list(image_sets, sizeof image_sets, image, ", "));
    return out;
}

/* ---- one job --------------------------------------------------------------------------------- */

/* model ':' data '@' batch [ '/' size ] */
static int parse_explicit(const parse_ctx *c, int part, span where, span core, job_spec *job) {
    long colon = find_top(core, ':');
    span model_s = {core.p, (size_t)colon};
    span rest = {core.p + colon + 1, core.n - (size_t)colon - 1};
    long at = find_top(rest, '@');
    span data_s = at < 0 ? rest : (span){rest.p, (size_t)at};
    const model_spec *spec = find_model(model_s);
    char list[1024];
    if (!spec)
        return fail(c, part, where, "unknown model \"%.*s\"; models: %s", (int)model_s.n, model_s.p,
                    valid_models(list, sizeof list));
    const char *model = spec->name;
    const data_set *data = find_data(data_s);
    if (!data)
        return fail(c, part, where, "unknown data set \"%.*s\"; data sets: " VALID_DATA,
                    (int)data_s.n, data_s.p);
    if (at < 0)
        return fail(c, part, where,
                    "expected \"@batch\" after \"%.*s\" (e.g. %s:%s@128); batch is 1..%d",
                    (int)core.n, core.p, model, data->name, MIX_MAX_BATCH);
    int is_criteo = strncmp(data->name, "criteo-", 7) == 0;
    if (!catalog_takes(spec, data->name))
        return fail(c, part, where, "model %s cannot train on %s: %s", model, data->name,
                    who_takes_what(list, sizeof list));

    span after = {rest.p + at + 1, rest.n - (size_t)at - 1};
    long slash = find_top(after, '/');
    span batch_s = slash < 0 ? after : (span){after.p, (size_t)slash};
    long long batch = 0;
    if (whole_in(c, part, where, "batch", batch_s, 1, MIX_MAX_BATCH, &batch) != 0) return -1;
    int size = data->image_size;
    if (slash >= 0) {
        span size_s = {after.p + slash + 1, after.n - (size_t)slash - 1};
        long long v = 0;
        int multiple = spec->size_multiple;
        if (is_criteo)
            return fail(c, part, where, "criteo has no images, so no \"/size\"; drop \"/%.*s\"",
                        (int)size_s.n, size_s.p);
        if (whole_in(c, part, where, "image size", size_s, MIX_MIN_SIZE, MIX_MAX_SIZE, &v) != 0) return -1;
        if (v % multiple)
            return fail(c, part, where, "image size %lld: expected a multiple of %d for %s", v, multiple, model);
        size = (int)v;
    }
    snprintf(job->model, sizeof job->model, "%s", model);
    snprintf(job->data, sizeof job->data, "%s", data->name);
    job->image_size = size;
    job->classes = data->classes;
    job->batch = (int)batch;
    return 0;
}

/* An override that becomes a train option passes train's table of where its options apply
 * (runner/train/train_rules.h), for the job's model and its catalog recipe: the mix refuses what
 * train would refuse the job for. */
static int applies(const parse_ctx *c, int part, span where, const job_spec *job, const char *key,
                   const char *option) {
    char why[512];
    train_rule_job recipe = train_rule_recipe(catalog_find(job->model), job->model);
    if (train_rule_check(option, &recipe, why, sizeof why) == 0) return 0;
    return fail(c, part, where, "%s= (train's %s): %s", key, option, why);
}

static int parse_overrides(const parse_ctx *c, int part, span where, span list, job_spec *job) {
    if (trim(list).n == 0)
        return fail(c, part, where, "empty brackets; overrides: " VALID_OVERRIDES);
    span seen[16];
    int keys_seen = 0;
    while (list.n) {
        long comma = find_top(list, ',');
        span item = trim(comma < 0 ? list : (span){list.p, (size_t)comma});
        list = comma < 0 ? (span){list.p + list.n, 0}
                         : (span){list.p + comma + 1, list.n - (size_t)comma - 1};
        if (comma >= 0 && trim(list).n == 0)
            return fail(c, part, where, "trailing ',' in the overrides; overrides: " VALID_OVERRIDES);
        if (item.n == 0)
            return fail(c, part, where, "empty override between ','; overrides: " VALID_OVERRIDES);
        long eq = find_top(item, '=');
        if (eq < 0)
            return fail(c, part, where, "override \"%.*s\" is not key=value; overrides: "
                        VALID_OVERRIDES, (int)item.n, item.p);
        span key = trim((span){item.p, (size_t)eq});
        span value = trim((span){item.p + eq + 1, item.n - (size_t)eq - 1});
        long long v = 0;
        /* a key once per job, as an option once per command line */
        for (int k = 0; k < keys_seen; k++)
            if (seen[k].n == key.n && !strncasecmp(seen[k].p, key.p, key.n))
                return fail(c, part, where, "override %.*s= given twice; give it once", (int)key.n, key.p);
        if (keys_seen < (int)(sizeof seen / sizeof seen[0])) seen[keys_seen++] = key;
        if (span_is(key, "epochs")) {
            if (whole_in(c, part, where, "epochs", value, 1, MIX_MAX_EPOCHS, &v) != 0) return -1;
            job->epochs = (int)v;
        } else if (span_is(key, "steps")) {
            if (whole_in(c, part, where, "steps", value, 1, MIX_MAX_STEPS, &v) != 0) return -1;
            job->steps_per_epoch = (long)v;
        } else if (span_is(key, "rows")) {
            if (applies(c, part, where, job, "rows", "--max-rows") != 0) return -1;
            if (whole_in(c, part, where, "rows", value, 1, MIX_MAX_ROWS, &v) != 0) return -1;
            job->max_rows = v;
        } else if (span_is(key, "precision")) {
            int precision = precision_find(value.p, value.n);
            if (precision < 0)
                return fail(c, part, where, "precision=\"%.*s\" must be tf32, fp32 or bf16", (int)value.n,
                            value.p);
            char why[512];
            if (train_rule_precision(catalog_find(job->model), job->model, (precision_kind)precision, why,
                                     sizeof why) != 0)
                return fail(c, part, where, "precision= (train's --precision): %s", why);
            job->precision = (precision_kind)precision;
            job->precision_given = 1;
        } else if (span_is(key, "decode")) {
            int place = decode_find(value.p, value.n); /* train --decode's names */
            if (place < 0)
                return fail(c, part, where, "decode=\"%.*s\" must be cpu, gpu or auto", (int)value.n, value.p);
            if (strcmp(job->data, "imagenet") != 0)
                return fail(c, part, where, "decode= chooses where ImageNet's JPEG files decode; %s reads %s",
                            job->model, job->data);
            job->decode = (decode_kind)place;
            job->decode_given = 1;
            if (job->decode_slots > 0 && job->decode == DECODE_CPU)
                return fail(c, part, where, "decode_slots= sizes the GPU decoder; decode=cpu decodes on the host");
        } else if (span_is(key, "decode_slots")) {
            if (strcmp(job->data, "imagenet") != 0)
                return fail(c, part, where, "decode_slots= sizes the GPU decoder of ImageNet's JPEG files; %s reads %s",
                            job->model, job->data);
            if (whole_in(c, part, where, "decode_slots", value, 1, JOB_DECODE_SLOTS_MAX, &v) != 0) return -1;
            if (job->decode_given && job->decode == DECODE_CPU)
                return fail(c, part, where, "decode_slots= sizes the GPU decoder; decode=cpu decodes on the host");
            job->decode_slots = (int)v;
        } else if (span_is(key, "gpus")) {
            if (whole_in(c, part, where, "gpus", value, 1, 64, &v) != 0) return -1;
            job->gpus = v > 1 ? (int)v : 0;
        } else if (span_is(key, "fault")) {
            char why[256];
            if (fault_parse(value.p, value.n, &job->fault, why, sizeof why) != 0)
                return fail(c, part, where, "%s", why);
        } else if (span_is(key, "classes")) {
            if (applies(c, part, where, job, "classes", "--classes") != 0) return -1;
            if (strcmp(job->data, "synthetic") != 0)
                return fail(c, part, where,
                            "classes= is for synthetic data only; %s has %d classes",
                            job->data, job->classes);
            if (whole_in(c, part, where, "classes", value, 2, MIX_MAX_CLASSES, &v) != 0) return -1;
            job->classes = (int)v;
        } else {
            return fail(c, part, where, "unknown override \"%.*s\"; overrides: " VALID_OVERRIDES,
                        (int)key.n, key.p);
        }
    }
    return 0;
}

/* job [ '[' overrides ']' ], already without the count. */
static int parse_job(const parse_ctx *c, int part, span where, span text, job_spec *job) {
    memset(job, 0, sizeof *job);
    size_t label_n = text.n < sizeof job->label ? text.n : sizeof job->label - 1;
    memcpy(job->label, text.p, label_n);
    job->label[label_n] = '\0';

    long open = find_top(text, '[');
    const char *close = memchr(text.p, ']', text.n);
    if (close && (open < 0 || close < text.p + open))
        return fail(c, part, where, "']' without '['; overrides are written M[epochs=3,steps=100]");
    span core = open < 0 ? text : (span){text.p, (size_t)open};
    span overrides = {NULL, 0};
    if (open >= 0) {
        if (text.p[text.n - 1] != ']')
            return fail(c, part, where, "'[' is not closed by a final ']'; overrides are written "
                        "M[epochs=3,steps=100]");
        overrides = (span){text.p + open + 1, text.n - (size_t)open - 2};
        if (memchr(overrides.p, '[', overrides.n) || memchr(overrides.p, ']', overrides.n))
            return fail(c, part, where, "nested or repeated brackets; one [...] per job");
    }
    char jobs[1024];
    if (core.n == 0) return fail(c, part, where, "no job before '['; jobs: %s", valid_jobs(jobs, sizeof jobs));
    if (span_has_space(core))
        return fail(c, part, where,
                    "whitespace inside the job \"%.*s\"; write jobs without spaces, e.g. "
                    "resnet50:imagenet64@128 (spaces may stand around '+', '*', ',' and '=')",
                    (int)core.n, core.p);
    if (find_top(core, ':') >= 0) {
        if (parse_explicit(c, part, where, core, job) != 0) return -1;
    } else {
        const mix_preset *preset = NULL;
        for (int i = 0; i < PRESET_COUNT; i++)
            if (span_is(core, presets[i].name)) preset = &presets[i];
        if (!preset)
            return fail(c, part, where, "unknown job \"%.*s\"; jobs: %s", (int)core.n, core.p,
                        valid_jobs(jobs, sizeof jobs));
        snprintf(job->model, sizeof job->model, "%s", preset->model);
        snprintf(job->data, sizeof job->data, "%s", preset->data);
        job->image_size = preset->image_size;
        job->classes = preset->classes;
        job->batch = preset->batch;
        job->max_rows = preset->max_rows;
    }
    return open >= 0 ? parse_overrides(c, part, where, overrides, job) : 0;
}

/* ---- the mix --------------------------------------------------------------------------------- */

int mix_parse(mix *m, const char *text, char *err, size_t err_size) {
    parse_ctx c = {text ? text : "", err, err_size};
    m->count = 0;
    if (err && err_size) err[0] = '\0';
    span all = trim((span){c.text, strlen(c.text)});
    char jobs[1024];
    if (all.n == 0)
        return fail(&c, 0, all, "empty mix; write jobs joined by '+', e.g. S+M+M or 7*S; jobs: %s",
                    valid_jobs(jobs, sizeof jobs));
    for (size_t i = 0; i < all.n; i++)
        if (!isprint((unsigned char)all.p[i]) && all.p[i] != '\t')
            return fail(&c, 0, all, "control or non-ASCII character at offset %zu; a mix is "
                        "plain text such as S+M+M", i);

    int part = 0;
    span rest = all;
    for (;;) {
        part++;
        long plus = find_top(rest, '+');
        span piece = plus < 0 ? rest : (span){rest.p, (size_t)plus};
        span item = trim(piece);
        if (item.n == 0) {
            const char *where = part == 1 ? "before the first '+'"
                                : plus < 0 ? "after the last '+' (trailing '+')"
                                           : "between two '+'";
            m->count = 0;
            return fail(&c, part, item, "empty part %s; a mix is jobs joined by '+', e.g. S+M+M",
                        where);
        }
        long star = find_top(item, '*');
        long long count = 1;
        span job_text = item;
        if (star >= 0) {
            span count_s = trim((span){item.p, (size_t)star});
            job_text = trim((span){item.p + star + 1, item.n - (size_t)star - 1});
            if (whole_in(&c, part, item, "count before '*'", count_s, 1, MIX_MAX_JOBS, &count) != 0) {
                m->count = 0;
                return -1;
            }
            if (job_text.n == 0) {
                m->count = 0;
                return fail(&c, part, item, "nothing after '*'; write count*job, e.g. 7*S");
            }
            if (find_top(job_text, '*') >= 0) {
                m->count = 0;
                return fail(&c, part, item, "more than one '*'; write count*job, e.g. 7*S");
            }
        }
        if (m->count + count > MIX_MAX_JOBS) {
            long long total = m->count + count;
            for (span r = plus < 0 ? (span){rest.p + rest.n, 0}
                                   : (span){rest.p + plus + 1, rest.n - (size_t)plus - 1};
                 r.n;) {
                long next = find_top(r, '+');
                span it = trim(next < 0 ? r : (span){r.p, (size_t)next});
                long s = find_top(it, '*');
                long long k = 1;
                span ks = trim((span){it.p, (size_t)(s >= 0 ? s : 0)});
                if (s >= 0 && number_parse(NUMBER_WHOLE, 1, 1e12, "", ks.p, ks.n, &k, NULL, NULL, 0) != 0) k = 1;
                total += k;
                r = next < 0 ? (span){r.p + r.n, 0} : (span){r.p + next + 1, r.n - (size_t)next - 1};
            }
            m->count = 0;
            return fail(&c, part, item, "the mix would hold %lld jobs; at most %d jobs in one mix",
                        total, MIX_MAX_JOBS);
        }
        job_spec job;
        if (parse_job(&c, part, item, job_text, &job) != 0) {
            m->count = 0;
            return -1;
        }
        for (long long k = 0; k < count; k++) m->jobs[m->count++] = job;
        if (plus < 0) break;
        rest = (span){rest.p + plus + 1, rest.n - (size_t)plus - 1};
    }
    return 0;
}

int mix_job_format(const job_spec *job, char *out, size_t size) {
    int default_size = 0, default_classes = 0;
    for (int i = 0; i < DATA_COUNT; i++)
        if (strcmp(job->data, data_sets[i].name) == 0) {
            default_size = data_sets[i].image_size;
            default_classes = data_sets[i].classes;
        }
    char size_part[24] = "", overrides[160] = "", fault[48];
    if (job->image_size != default_size) snprintf(size_part, sizeof size_part, "/%d", job->image_size);
    size_t n = 0;
#define ADD_OVERRIDE(...)                                                                         \
    do {                                                                                          \
        int w = snprintf(overrides + n, sizeof overrides - n, "%s", n ? "," : "[");               \
        if (w > 0 && (size_t)w < sizeof overrides - n) n += (size_t)w;                            \
        w = snprintf(overrides + n, sizeof overrides - n, __VA_ARGS__);                           \
        if (w > 0 && (size_t)w < sizeof overrides - n) n += (size_t)w;                            \
    } while (0)
    if (job->epochs > 0) ADD_OVERRIDE("epochs=%d", job->epochs);
    if (job->steps_per_epoch > 0) ADD_OVERRIDE("steps=%ld", job->steps_per_epoch);
    if (job->classes != default_classes) ADD_OVERRIDE("classes=%d", job->classes);
    if (job->max_rows > 0) ADD_OVERRIDE("rows=%lld", job->max_rows);
    if (job->gpus > 1) ADD_OVERRIDE("gpus=%d", job->gpus);
    if (job->precision_given) ADD_OVERRIDE("precision=%s", precision_name(job->precision));
    if (job->decode_given) ADD_OVERRIDE("decode=%s", decode_kind_name(job->decode));
    if (job->decode_slots > 0) ADD_OVERRIDE("decode_slots=%d", job->decode_slots);
    if (job->fault.kind != FAULT_NONE && fault_format(&job->fault, fault, sizeof fault) > 0)
        ADD_OVERRIDE("fault=%s", fault);
#undef ADD_OVERRIDE
    if (n && n < sizeof overrides - 1) overrides[n++] = ']', overrides[n] = '\0';
    return snprintf(out, size, "%s:%s@%d%s%s", job->model, job->data, job->batch, size_part,
                    overrides);
}
