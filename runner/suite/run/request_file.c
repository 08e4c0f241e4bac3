/* request.json (see request_file.h). */
#include "runner/suite/run/request_file.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "results/results.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/run/request_check.h"
#include "runner/suite/run/run_args.h"

/* Each setting's place in the file and the option row that declares it. Required ones are written
 * even when zero (false, 0, the choice of value 0, null text); optional ones only when set, and
 * absent or null means unset (0: whole epochs, no reference, ...). */
typedef struct setting {
    const char *section;          /* NULL: the top level */
    const char *key;
    const char *option;
    int optional;
} setting;

static const setting SETTINGS[] = {
    {NULL, "mix", "--mix", 0},
    {NULL, "mode", "--mode", 0},
    {NULL, "skip", "--skip", 1},
    {NULL, "precision", "--precision", 1},
    {"length", "epochs", "--epochs", 0},
    {"length", "steps_per_epoch", "--steps-per-epoch", 1},
    {"length", "quick", "--quick", 0},
    {"measurement", "completion", "--completion", 0},
    {"measurement", "window_s", "--window", 1},
    {"measurement", "windows", "--windows", 0},
    {"measurement", "warmup_steps", "--warmup-steps", 0},
    {"measurement", "kernels", "--kernels", 1},
    {"measurement", "kernels_window_s", "--kernels-window", 1},
    {"where", "gpu", "--gpu", 0},
    {"where", "gpus", "--gpus", 1},
    {"where", "ddp_under", "--ddp-under", 0},
    {"where", "sample_ms", "--sample-ms", 0},
    {"where", "no_monitor", "--no-monitor", 0},
    {"where", "train", "--train", 0},
    {"where", "data_root", "--data-root", 1},
    {"outputs", "results", "--results", 0},
    {"outputs", "baseline", "--baseline", 1},
    {"control", "force", "--force", 0},
    {"control", "dry_run", "--dry-run", 0},
    {"control", "json", "--json", 0},
    {"control", "repeat", "--repeat", 0},
    {"control", "ready_timeout_s", "--ready-timeout", 0},
    {"control", "grace_s", "--grace", 0},
    {"control", "stall_timeout_s", "--stall-timeout", 0},
};
#define SETTING_COUNT (sizeof SETTINGS / sizeof SETTINGS[0])
static const char *const SECTIONS[] = {"length", "measurement", "where", "outputs", "control"};
#define SECTION_COUNT (sizeof SECTIONS / sizeof SECTIONS[0])
static const char *const TOP_KEYS[] = {"request_version", "command", "jobs", "mode_options", "length", "measurement",
                                       "where", "outputs", "control"};

static const cli_option *row_of(const setting *s) {
    const cli_option *r = cli_row(run_args_request_rows(), s->option);
    return r && r->offset + r->size <= sizeof(run_request) ? r : NULL;
}

/* --- writing --------------------------------------------------------------------------------- */

static cJSON *job_json(const job_spec *j) {
    cJSON *o = cJSON_CreateObject();
    char fault[48];
    cJSON_AddStringToObject(o, "label", j->label);
    cJSON_AddStringToObject(o, "model", j->model);
    cJSON_AddStringToObject(o, "data", j->data);
    cJSON_AddNumberToObject(o, "batch", j->batch);
    cJSON_AddNumberToObject(o, "image_size", j->image_size);
    cJSON_AddNumberToObject(o, "classes", j->classes);
    if (j->epochs > 0) cJSON_AddNumberToObject(o, "epochs", j->epochs);
    if (j->steps_per_epoch > 0) cJSON_AddNumberToObject(o, "steps_per_epoch", (double)j->steps_per_epoch);
    if (j->max_rows > 0) cJSON_AddNumberToObject(o, "max_rows", (double)j->max_rows);
    if (j->gpus > 1) cJSON_AddNumberToObject(o, "gpus", j->gpus);
    if (j->precision_given) cJSON_AddStringToObject(o, "precision", precision_name(j->precision));
    if (j->decode_given) cJSON_AddStringToObject(o, "decode", decode_kind_name(j->decode));
    if (j->decode_slots > 0) cJSON_AddNumberToObject(o, "decode_slots", j->decode_slots);
    if (j->fault.kind != FAULT_NONE && fault_format(&j->fault, fault, sizeof fault) > 0)
        cJSON_AddStringToObject(o, "fault", fault);
    return o;
}

/* The settings of the top level (top 1) or of the sections (top 0) into root. */
static void add_settings(cJSON *root, const run_request *r, int top) {
    for (size_t s = 0; s < SETTING_COUNT; s++) {
        const setting *one = &SETTINGS[s];
        const cli_option *row = row_of(one);
        cJSON *value = row && (!one->section) == top ? cli_value_json(row, r, !one->optional) : NULL;
        if (!value) continue;
        cJSON *in = root;
        if (one->section && !(in = cJSON_GetObjectItemCaseSensitive(root, one->section)))
            in = cJSON_AddObjectToObject(root, one->section);
        cJSON_AddItemToObject(in, one->key, value);
    }
}

cJSON *request_file_json(const run_request *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "request_version", REQUEST_FILE_VERSION);
    cJSON *command = cJSON_AddArrayToObject(root, "command");
    for (int i = 0; i < r->argc && r->argv; i++) cJSON_AddItemToArray(command, cJSON_CreateString(r->argv[i]));
    add_settings(root, r, 1);
    cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
    for (int i = 0; i < r->mix.count; i++) cJSON_AddItemToArray(jobs, job_json(&r->mix.jobs[i]));
    cJSON_AddItemToObject(root, "mode_options", suite_mode_options_json(r));
    add_settings(root, r, 0);
    return root;
}

int request_file_write(const run_request *r, const char *dir, char *err, size_t err_size) {
    cJSON *root = request_file_json(r);
    int rc = results_write_json(dir, REQUEST_FILE_NAME, root, err, err_size);
    cJSON_Delete(root);
    return rc;
}

/* --- reading --------------------------------------------------------------------------------- */

static int bad(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t err_size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *keep_in(void *request, const char *text) { return run_request_keep(request, text); }

/* Every key of object is one of known (count of them), or one the settings place in section. */
static int known_keys(const cJSON *object, const char *where, const char *section, const char *const *known,
                      size_t count, char *err, size_t err_size) {
    for (const cJSON *item = object->child; item; item = item->next) {
        int ok = 0;
        for (size_t k = 0; k < count && !ok; k++) ok = !strcmp(item->string, known[k]);
        for (size_t s = 0; s < SETTING_COUNT && !ok; s++)
            ok = !strcmp(item->string, SETTINGS[s].key) &&
                 (section ? SETTINGS[s].section && !strcmp(SETTINGS[s].section, section) : !SETTINGS[s].section);
        if (!ok) return bad(err, err_size, "%s%s%s: not a key of request version %d", where, *where ? "." : "",
                            item->string, REQUEST_FILE_VERSION);
    }
    return 0;
}

static int read_settings(const cJSON *root, run_request *r, char *err, size_t err_size) {
    char why[1024];
    if (known_keys(root, "", NULL, TOP_KEYS, sizeof TOP_KEYS / sizeof TOP_KEYS[0], err, err_size) != 0) return -1;
    for (size_t k = 0; k < SECTION_COUNT; k++) {
        const cJSON *section = cJSON_GetObjectItemCaseSensitive(root, SECTIONS[k]);
        if (!cJSON_IsObject(section)) return bad(err, err_size, "%s: expected an object of settings", SECTIONS[k]);
        if (known_keys(section, SECTIONS[k], SECTIONS[k], NULL, 0, err, err_size) != 0) return -1;
    }
    for (size_t s = 0; s < SETTING_COUNT; s++) {
        const setting *one = &SETTINGS[s];
        const cJSON *in = one->section ? cJSON_GetObjectItemCaseSensitive(root, one->section) : root;
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(in, one->key);
        const cli_option *row = row_of(one);
        if (!row) return bad(err, err_size, "%s: no option declares it (a mistake in request_file.c)", one->key);
        if (!item || cJSON_IsNull(item)) {
            if (one->optional) continue;
            return bad(err, err_size, "%s%s%s: missing (%s)", one->section ? one->section : "", one->section ? "." : "",
                       one->key, row->name);
        }
        if (cli_value_from_json(row, r, item, keep_in, r, why, sizeof why) != 0)
            return bad(err, err_size, "%s%s%s: %s", one->section ? one->section : "", one->section ? "." : "", one->key,
                       why);
    }
    if (r->completion && r->window_s != 0)
        return bad(err, err_size, "measurement.window_s: the completion measurement has no window");
    if (r->completion && r->windows != 1)
        return bad(err, err_size, "measurement.windows: the completion measurement has one (got %d)", r->windows);
    if (!r->completion && r->window_s == 0) return bad(err, err_size, "measurement.window_s: missing (--window)");
    if (r->kernels && r->completion)
        return bad(err, err_size, "measurement.kernels: the completion measurement has no window to trace after");
    if (r->kernels && r->kernels_window_s <= 0)
        return bad(err, err_size, "measurement.kernels_window_s: missing (--kernels-window)");
    if (!r->kernels && r->kernels_window_s != 0)
        return bad(err, err_size, "measurement.kernels_window_s: set without measurement.kernels");
    return 0;
}

/* A job's number: a whole number the field holds (the grammar judges its range). */
static int job_number(const cJSON *job, const char *key, int required, long long hi, long long *out, char *err,
                      size_t err_size, int i) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
    *out = 0;
    if (!v && !required) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(long long)v->valuedouble)
        return bad(err, err_size, "jobs[%d].%s: expected a whole number", i, key);
    *out = (long long)v->valuedouble;
    return 0;
}

/* A job's text into a field of size bytes. */
static int job_text(const cJSON *job, const char *key, int required, char *out, size_t size, char *err,
                    size_t err_size, int i) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
    out[0] = 0;
    if (!v && !required) return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= size)
        return bad(err, err_size, "jobs[%d].%s: expected a string of 1 to %zu characters", i, key, size - 1);
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

#define NAME_WORD_(kind, name) " " name
#define PRECISION_NAMES_ PRECISION_TABLE(NAME_WORD_)
#define DECODE_NAMES_ DECODE_TABLE(NAME_WORD_)

static const char *const JOB_KEYS[] = {"label", "model", "data", "batch", "image_size", "classes", "epochs",
                                       "steps_per_epoch", "max_rows", "gpus", "precision", "decode", "decode_slots",
                                       "fault"};

/* One job, typed; then the mix grammar's check: its explicit form must read back as the same job. */
static int read_job(const cJSON *item, int i, job_spec *j, char *err, size_t err_size) {
    memset(j, 0, sizeof *j);
    char where[32], text[64], why[1024];
    snprintf(where, sizeof where, "jobs[%d]", i);
    if (!cJSON_IsObject(item)) return bad(err, err_size, "%s: expected an object", where);
    if (known_keys(item, where, "", JOB_KEYS, sizeof JOB_KEYS / sizeof JOB_KEYS[0], err, err_size) != 0) return -1;
    long long n;
    if (job_text(item, "label", 1, j->label, sizeof j->label, err, err_size, i) != 0 ||
        job_text(item, "model", 1, j->model, sizeof j->model, err, err_size, i) != 0 ||
        job_text(item, "data", 1, j->data, sizeof j->data, err, err_size, i) != 0)
        return -1;
    if (job_number(item, "batch", 1, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->batch = (int)n;
    if (job_number(item, "image_size", 1, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->image_size = (int)n;
    if (job_number(item, "classes", 1, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->classes = (int)n;
    if (job_number(item, "epochs", 0, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->epochs = (int)n;
    if (job_number(item, "steps_per_epoch", 0, LONG_MAX, &n, err, err_size, i) != 0) return -1;
    j->steps_per_epoch = (long)n;
    if (job_number(item, "max_rows", 0, LLONG_MAX, &n, err, err_size, i) != 0) return -1;
    j->max_rows = n;
    if (job_number(item, "gpus", 0, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->gpus = (int)n;
    if (job_number(item, "decode_slots", 0, INT_MAX, &n, err, err_size, i) != 0) return -1;
    j->decode_slots = (int)n;
    if (job_text(item, "decode", 0, text, sizeof text, err, err_size, i) != 0) return -1;
    int place = text[0] ? decode_find(text, strlen(text)) : (int)DECODE_AUTO;
    if (place < 0) return bad(err, err_size, "%s.decode: expected one of" DECODE_NAMES_ ", got '%s'", where, text);
    j->decode = (decode_kind)place;
    j->decode_given = text[0] != 0;
    if (job_text(item, "precision", 0, text, sizeof text, err, err_size, i) != 0) return -1;
    if (text[0] && precision_parse(text, &j->precision) != 0)
        return bad(err, err_size, "%s.precision: expected one of" PRECISION_NAMES_ ", got '%s'", where, text);
    j->precision_given = text[0] != 0;
    if (job_text(item, "fault", 0, text, sizeof text, err, err_size, i) != 0) return -1;
    if (text[0] && fault_parse(text, strlen(text), &j->fault, why, sizeof why) != 0)
        return bad(err, err_size, "%s.fault: %s", where, why);
    /* the grammar is the judge of what a job may be: its explicit form read back is this job */
    char form[256], again[256];
    mix_job_format(j, form, sizeof form);
    static mix back;
    if (mix_parse(&back, form, why, sizeof why) != 0) return bad(err, err_size, "%s: %s", where, why);
    if (back.count != 1 || mix_job_format(&back.jobs[0], again, sizeof again) < 0 || strcmp(form, again) != 0)
        return bad(err, err_size, "%s: %s reads back as %s", where, form, again);
    return 0;
}

static int read_jobs(const cJSON *root, run_request *r, char *err, size_t err_size) {
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    int count = cJSON_GetArraySize(jobs);
    if (!cJSON_IsArray(jobs) || count < 1 || count > MIX_MAX_JOBS)
        return bad(err, err_size, "jobs: expected an array of 1 to %d jobs", MIX_MAX_JOBS);
    for (int i = 0; i < count; i++)
        if (read_job(cJSON_GetArrayItem(jobs, i), i, &r->mix.jobs[i], err, err_size) != 0) return -1;
    r->mix.count = count;
    return 0;
}

static int read_command(const cJSON *root, run_request *r, char *err, size_t err_size) {
    const cJSON *command = cJSON_GetObjectItemCaseSensitive(root, "command");
    int count = cJSON_GetArraySize(command);
    if (!cJSON_IsArray(command)) return bad(err, err_size, "command: expected an array of strings");
    r->argv = run_request_alloc(r, ((size_t)count + 1) * sizeof *r->argv);
    if (!r->argv) return bad(err, err_size, "out of memory");
    for (int i = 0; i < count; i++) {
        const cJSON *word = cJSON_GetArrayItem(command, i);
        if (!cJSON_IsString(word)) return bad(err, err_size, "command[%d]: expected a string", i);
        if (!(r->argv[i] = (char *)run_request_keep(r, word->valuestring))) return bad(err, err_size, "out of memory");
    }
    r->argc = count;
    return 0;
}

int request_file_from_json(const cJSON *root, run_request *r, char *err, size_t err_size) {
    memset(r, 0, sizeof *r);
    char why[1536];
    if (!cJSON_IsObject(root)) return bad(err, err_size, "expected a JSON object (a run request)");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "request_version");
    if (!cJSON_IsNumber(version)) return bad(err, err_size, "request_version: missing (this run_suite reads %d)",
                                             REQUEST_FILE_VERSION);
    if (version->valuedouble != REQUEST_FILE_VERSION)
        return bad(err, err_size, "request_version: %g; this run_suite reads %d", version->valuedouble,
                   REQUEST_FILE_VERSION);
    if (read_command(root, r, err, err_size) != 0 || read_jobs(root, r, err, err_size) != 0) return -1;
    if (suite_mode_options_own(r) != 0) return bad(err, err_size, "out of memory");
    if (read_settings(root, r, err, err_size) != 0) return -1;
    const cJSON *options = cJSON_GetObjectItemCaseSensitive(root, "mode_options");
    if (options && !cJSON_IsObject(options)) return bad(err, err_size, "mode_options: expected an object");
    if (suite_mode_options_from_json(r, options, why, sizeof why) != 0)
        return bad(err, err_size, "mode_options.%s", why);
    if (request_check(r, why, sizeof why) != 0) return bad(err, err_size, "%s", why);
    return 0;
}

/* The file (or stdin) whole, at most 16 MiB; NULL with the reason. */
static char *read_text(const char *path, char *err, size_t err_size) {
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        bad(err, err_size, "%s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, max = 16u << 20;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (len + 1 == cap && cap < max) {
            char *more = realloc(text, cap * 2);
            if (!more) free(text);
            text = more, cap *= 2;
        } else if (len + 1 == cap) {
            free(text), text = NULL;
            bad(err, err_size, "larger than %zu bytes", max);
        }
    }
    if (text) text[len] = 0;
    else if (!err[0]) bad(err, err_size, "out of memory");
    if (f != stdin) fclose(f);
    return text;
}

int request_file_read(const char *path, run_request *r, char *err, size_t err_size) {
    char why[2048] = "";
    const char *name = strcmp(path, "-") ? path : "the request on stdin";
    memset(r, 0, sizeof *r);
    char *text = read_text(path, why, sizeof why);
    if (!text) return bad(err, err_size, "%s: %s", name, why);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) return bad(err, err_size, "%s: not JSON (a run request, request.json, is expected)", name);
    int rc = request_file_from_json(root, r, why, sizeof why);
    cJSON_Delete(root);
    if (rc != 0) {
        run_request_free(r);
        return bad(err, err_size, "%s: %s", name, why);
    }
    return 0;
}

/* --- handing a request to a run_suite -------------------------------------------------------- */

int request_file_hand(const char *self, const run_request *r, char *out, size_t out_size, double timeout_s) {
    cJSON *json = request_file_json(r);
    char *text = cJSON_PrintUnformatted(json), sink[256];
    cJSON_Delete(json);
    char *argv[] = {(char *)self, "--request", "-", NULL};
    int status = text && self[0] ? jobs_run_capture(argv, NULL, text, out ? out : sink, out ? out_size : sizeof sink,
                                                    timeout_s)
                                 : -1;
    free(text);
    return status;
}

int request_file_dry_check(const char *self, const run_request *r, char *err, size_t err_size) {
    run_request dry = *r;
    dry.memory = NULL;
    if (suite_mode_options_own(&dry) != 0) return bad(err, err_size, "out of memory");
    dry.dry_run = 1;
    dry.json = 0;
    int status = request_check(&dry, err, err_size) == 0 ? request_file_hand(self, &dry, NULL, 0, 300.0) : -2;
    run_request_free(&dry);
    if (status == -2) return -1;
    if (status >= 0 && WIFEXITED(status)) return WEXITSTATUS(status);
    return 1;
}
