/* The run request: parsed once from a command line (run_args.h), written as request.json and read
 * back (request_file.h) to the same request, every setting typed; a malformed file is refused by
 * run_suite --request with exit 2, naming the file and the field; a request handed to run_suite runs
 * as the command line it came from would, and the run folder keeps it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "runner/suite/multi/gpus.h"
#include "runner/suite/multi/slurm.h"
#include "runner/suite/multi/study.h"
#include "runner/suite/run/request_check.h"
#include "runner/suite/run/request_file.h"
#include "runner/suite/run/run_args.h"
#include "tests/support/testutil.h"

static char dir[512];

static int setup(void **state) {
    (void)state;
    test_tmpdir(dir, sizeof dir);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    test_rmtree(dir);
    return 0;
}

static const run_form *const NO_FORMS[] = {NULL};

/* run_suite's parse of args under forms (the train program and the program's name added). */
static run_args *parsed_as(const run_form *const *forms, const char *const *args) {
    static char *argv[64];
    int n = 0;
    argv[n++] = "run_suite";
    for (; *args; args++) argv[n++] = (char *)*args;
    argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
    argv[n] = NULL;
    run_args *a;
    int rc = run_args_parse(&a, forms, n, argv);
    if (rc >= 0) fail_msg("parse of %s ... gave %d", argv[1], rc);
    return a;
}

/* One run's parse, checked. */
static run_args *parsed(const char *const *args) {
    run_args *a = parsed_as(NO_FORMS, args);
    char err[2048];
    if (request_check(&a->req, err, sizeof err) != 0) fail_msg("check: %s", err);
    return a;
}

static char *text_of(const run_request *r) {
    cJSON *j = request_file_json(r);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
}

/* parse -> write -> read gives the same request: the same file again, and the same typed settings. */
static void test_round_trip(void **state) {
    (void)state;
    char baseline[600];
    snprintf(baseline, sizeof baseline, "%s/baseline", dir);
    mkdir(baseline, 0700);
    const char *lines[][24] = {
        {"--mode", "naive", "--mix", "S+M", NULL},
        {"--mode", "mps", "--mix", "S+S+M[precision=bf16,steps=40]", "--mps-sm", "25,25,50", "--mps-mem", "4G",
         "--quick", "--precision", "fp32", NULL},
        {"--mode", "serial", "--mix", "2*S[fault=illegal-address@50]+XL", "--completion", "--quick", "--epochs", "3",
         "--baseline", baseline, NULL},
        {"--mode", "all", "--skip", "streams,green", "--mix", "S+M", "--window", "0.5", "--windows", "3",
         "--warmup-steps", "7", "--data-root", "/data", "--gpu", "2", "--sample-ms", "50", NULL},
        {"--mode", "mig-emulate", "--via", "green", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--mig-objective",
         "compact", "--dry-run", "--json", NULL},
        {"--mode", "mig", "--mig-emulate", "--mix", "resnet50:imagenet@64[decode=gpu,decode_slots=3,gpus=2]+S",
         "--repeat", "3", "--grace", "2.5", "--stall-timeout", "90", "--ready-timeout", "30", "--force", NULL},
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        run_args *a = parsed(lines[i]);
        char *first = text_of(&a->req), err[2048];
        cJSON *json = cJSON_Parse(first);
        run_request back;
        if (request_file_from_json(json, &back, err, sizeof err) != 0) fail_msg("line %zu: %s\n%s", i, err, first);
        cJSON_Delete(json);
        char *second = text_of(&back);
        if (strcmp(first, second)) fail_msg("line %zu: read back as\n%s\nnot\n%s", i, second, first);
        const run_request *r = &a->req;
        assert_int_equal(back.mix.count, r->mix.count);
        for (int j = 0; j < r->mix.count; j++) {
            char x[256], y[256];
            mix_job_format(&r->mix.jobs[j], x, sizeof x);
            mix_job_format(&back.mix.jobs[j], y, sizeof y);
            assert_string_equal(x, y);
            assert_string_equal(back.mix.jobs[j].label, r->mix.jobs[j].label);
            assert_int_equal(back.mix.jobs[j].precision, r->mix.jobs[j].precision);
            assert_int_equal(back.mix.jobs[j].fault.kind, r->mix.jobs[j].fault.kind);
        }
        assert_ptr_equal(back.mode, r->mode);
        assert_int_equal(back.epochs, r->epochs);
        assert_int_equal(back.steps_per_epoch, r->steps_per_epoch);
        assert_true(back.window_s == r->window_s);
        assert_int_equal(back.windows, r->windows);
        assert_int_equal(back.warmup_steps, r->warmup_steps);
        assert_int_equal(back.completion, r->completion);
        assert_int_equal(back.gpu, r->gpu);
        assert_int_equal(back.sample_ms, r->sample_ms);
        assert_true(back.grace_s == r->grace_s && back.stall_timeout_s == r->stall_timeout_s);
        assert_int_equal(back.argc, r->argc);
        assert_string_equal(back.train_path, r->train_path);
        free(first);
        free(second);
        run_request_free(&back);
        run_args_free(a);
    }
}

/* The defaults are decided once, by the parser: --quick's window and warm-up, the completion
 * measurement's window, the run's epochs. */
static void test_defaults(void **state) {
    (void)state;
    const char *quick[] = {"--mode", "naive", "--mix", "S", "--quick", NULL};
    run_args *a = parsed(quick);
    assert_true(a->req.window_s == 2.0);
    assert_int_equal(a->req.warmup_steps, 10);
    assert_int_equal(a->req.epochs, 2);
    assert_int_equal(a->req.steps_per_epoch, 0);
    run_args_free(a);
    const char *completion[] = {"--mode", "naive", "--mix", "S", "--quick", "--completion", NULL};
    a = parsed(completion);
    assert_true(a->req.window_s == 0);
    assert_int_equal(a->req.steps_per_epoch, 10);
    run_args_free(a);
    const char *plain[] = {"--mode", "naive", "--mix", "S", NULL};
    a = parsed(plain);
    assert_true(a->req.window_s == 10.0);
    assert_int_equal(a->req.warmup_steps, 50);
    assert_int_equal(a->req.sample_ms, 100);
    run_args_free(a);
}

/* A valid request's JSON with one change made by edit, run through run_suite --request: exit 2 and
 * a message naming the file and the field. */
static void expect_refused(cJSON *(*edit)(cJSON *root), const char *field) {
    const char *line[] = {"--mode", "mps", "--mix", "S+M", "--mps-sm", "30,70", NULL};
    run_args *a = parsed(line);
    cJSON *root = edit(request_file_json(&a->req));
    run_args_free(a);
    char path[700], out[8192], err[8192];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    if (root) test_write_json(path, root);
    else test_write_text(path, "{ not json");
    cJSON_Delete(root);
    char *argv[] = {RUN_SUITE_PATH, "--request", path, NULL};
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 2 || !strstr(err, path) || !strstr(err, field))
        fail_msg("refused with %d, '%s' expected in: %s", rc, field, err);
}

static cJSON *set(cJSON *root, const char *section, const char *key, cJSON *value) {
    cJSON *in = section ? cJSON_GetObjectItemCaseSensitive(root, section) : root;
    if (value) cJSON_ReplaceItemInObjectCaseSensitive(in, key, value);
    else cJSON_DeleteItemFromObjectCaseSensitive(in, key);
    return root;
}
static cJSON *not_json(cJSON *root) { cJSON_Delete(root); return NULL; }
static cJSON *no_version(cJSON *root) { return set(root, NULL, "request_version", NULL); }
static cJSON *next_version(cJSON *root) { return set(root, NULL, "request_version", cJSON_CreateNumber(2)); }
static cJSON *unknown_key(cJSON *root) {
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(root, "where"), "gpu_index", 1);
    return root;
}
static cJSON *missing_epochs(cJSON *root) { return set(root, "length", "epochs", NULL); }
static cJSON *text_epochs(cJSON *root) { return set(root, "length", "epochs", cJSON_CreateString("2")); }
static cJSON *zero_epochs(cJSON *root) { return set(root, "length", "epochs", cJSON_CreateNumber(0)); }
static cJSON *half_window(cJSON *root) { return set(root, "measurement", "windows", cJSON_CreateNumber(1.5)); }
static cJSON *quick_text(cJSON *root) { return set(root, "length", "quick", cJSON_CreateString("yes")); }
static cJSON *bad_mode(cJSON *root) { return set(root, NULL, "mode", cJSON_CreateString("warp")); }
static cJSON *bad_batch(cJSON *root) {
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "jobs"), 1), "batch",
                                           cJSON_CreateNumber(0));
    return root;
}
static cJSON *bad_model(cJSON *root) {
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "jobs"), 0), "model",
                                           cJSON_CreateString("resnet9"));
    return root;
}
static cJSON *bad_job_key(cJSON *root) {
    cJSON_AddNumberToObject(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "jobs"), 0), "lr", 0.1);
    return root;
}
static cJSON *no_jobs(cJSON *root) { return set(root, NULL, "jobs", cJSON_CreateArray()); }
static cJSON *bad_option(cJSON *root) {
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "mode_options"),
                                                             "mps"), "--mps-smm", "50");
    return root;
}
static cJSON *option_for_three(cJSON *root) {
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(
                                               cJSON_GetObjectItemCaseSensitive(root, "mode_options"), "mps"),
                                           "--mps-sm", cJSON_CreateString("30,30,40"));
    return root;
}
static cJSON *window_with_completion(cJSON *root) {
    return set(root, "measurement", "completion", cJSON_CreateBool(1));
}
static cJSON *no_train(cJSON *root) { return set(root, "where", "train", cJSON_CreateString("/nonexistent/train")); }

static void test_malformed(void **state) {
    (void)state;
    const struct { cJSON *(*edit)(cJSON *); const char *field; } cases[] = {
        {not_json, "not JSON"},
        {no_version, "request_version: missing"},
        {next_version, "request_version: 2; this run_suite reads 1"},
        {unknown_key, "where.gpu_index: not a key"},
        {missing_epochs, "length.epochs: missing (--epochs)"},
        {text_epochs, "length.epochs: --epochs: expected a whole number from 1 to 100000, got \"2\""},
        {zero_epochs, "length.epochs: --epochs: expected a whole number from 1 to 100000, got '0'"},
        {half_window, "measurement.windows: --windows: expected a whole number from 1 to 64, got '1.5'"},
        {quick_text, "length.quick: --quick: expected true or false"},
        {bad_mode, "--mode warp: expected one of"},
        {bad_batch, "jobs[1]: "},
        {bad_model, "jobs[0]: "},
        {bad_job_key, "jobs[0].lr: not a key"},
        {no_jobs, "jobs: expected an array of 1 to 64 jobs"},
        {bad_option, "mode_options.mps: --mps-smm: no such option"},
        {option_for_three, "--mps-sm"},
        {window_with_completion, "measurement.window_s: the completion measurement has no window"},
        {no_train, "cannot run the train program at /nonexistent/train"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_refused(cases[i].edit, cases[i].field);
    /* the request comes whole: no other option beside it */
    char out[4096], err[4096];
    char *argv[] = {RUN_SUITE_PATH, "--request", "x.json", "--dry-run", NULL};
    assert_int_equal(test_run(argv, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "a request comes whole"));
}

/* A request handed to run_suite runs as its command line would: the same run folder's files, and
 * the folder keeps the request it ran. */
static void test_handed_down_runs(void **state) {
    (void)state;
    char results[600], path[1400], out[16384], err[16384];
    snprintf(results, sizeof results, "%s/results", dir);
    const char *line[] = {"--mode", "naive", "--mix", "S+M", "--quick", "--no-monitor", "--results", results, NULL};
    run_args *a = parsed(line);
    char why[512];
    assert_int_equal(request_file_write(&a->req, dir, why, sizeof why), 0);
    char *written = text_of(&a->req);
    run_args_free(a);
    snprintf(path, sizeof path, "%s/request.json", dir);
    char *argv[] = {RUN_SUITE_PATH, "--request", path, NULL};
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 0) fail_msg("run_suite --request: %d\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, "naive: 2 ok"));
    char *const find[] = {"/usr/bin/find", results, "-name", "request.json", NULL};
    char found[1024], ferr[64];
    assert_int_equal(test_run(find, found, sizeof found, ferr, sizeof ferr), 0);
    found[strcspn(found, "\n")] = 0;
    char *kept = test_read_text(found, why, sizeof why);
    assert_non_null(kept);
    /* the run's own copy is the request it was handed, as results_write_json lays it out */
    cJSON *x = cJSON_Parse(kept), *y = cJSON_Parse(written);
    assert_true(cJSON_Compare(x, y, 1));
    cJSON_Delete(x);
    cJSON_Delete(y);
    free(kept);
    free(written);
}

/* A request that names cards, handed down (a Slurm task given --gpus), runs the --gpus form: each
 * card's share of the jobs meets the mode's options, not the whole mix. */
static void test_handed_down_over_cards(void **state) {
    (void)state;
    static const run_form *const gpus_forms[] = {&gpus_form, NULL};
    const char *over[] = {"--gpus", "0,1", "--mode", "mps", "--mix", "4*S", "--mps-sm", "50,50", "--dry-run", NULL};
    run_args *a = parsed_as(gpus_forms, over);
    char why[512], path[700], out[16384], err[16384];
    assert_int_equal(request_check(&a->req, why, sizeof why), 0); /* the whole mix's four jobs: not the cards' */
    snprintf(path, sizeof path, "%s/cards", dir);
    mkdir(path, 0700);
    assert_int_equal(request_file_write(&a->req, path, why, sizeof why), 0);
    run_args_free(a);
    snprintf(path, sizeof path, "%s/cards/request.json", dir);
    char *argv[] = {RUN_SUITE_PATH, "--request", path, NULL};
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 0) fail_msg("run_suite --request (over cards): %d\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, "placement over 2 GPUs"));
}

/* The keys (a.b paths, jobs and mode_options whole) where two requests' files differ, joined by
 * spaces in sorted order, the command line left out. */
static void differences(const run_request *x, const run_request *y, char *out, size_t size) {
    cJSON *a = request_file_json(x), *b = request_file_json(y);
    const char *keys[64];
    int n = 0;
    for (int side = 0; side < 2; side++)
        for (const cJSON *item = (side ? b : a)->child; item; item = item->next) {
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(side ? a : b, item->string);
            if (!strcmp(item->string, "command")) continue;
            if (cJSON_IsObject(item) && other && strcmp(item->string, "mode_options")) {
                for (const cJSON *in = item->child; in; in = in->next) {
                    const cJSON *there = cJSON_GetObjectItemCaseSensitive(other, in->string);
                    static char paths[64][64];
                    if (there && cJSON_Compare(in, there, 1)) continue;
                    snprintf(paths[n], sizeof paths[n], "%s.%s", item->string, in->string);
                    keys[n] = paths[n], n++;
                }
            } else if (!other || !cJSON_Compare(item, other, 1)) {
                keys[n++] = item->string;
            }
        }
    /* sorted, each once */
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (strcmp(keys[k], keys[i]) < 0) {
                const char *t = keys[i];
                keys[i] = keys[k], keys[k] = t;
            }
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++)
        if (!i || strcmp(keys[i], keys[i - 1]))
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? " " : "", keys[i]);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* Each hop changes only its own part of the request it is handed. */
static void test_each_hop_changes_its_part(void **state) {
    (void)state;
    char changed[1024], err[1024], ref[600];
    snprintf(ref, sizeof ref, "%s", dir);
    /* a card's run under --gpus: its jobs, GPU, folder and reference; no cards of its own */
    static const run_form *const gpus_forms[] = {&gpus_form, NULL};
    const char *over[] = {"--gpus", "0,1", "--mode", "mps", "--mix", "S+M+S", "--mps-sm", "40", "--quick", NULL};
    run_args *a = parsed_as(gpus_forms, over);
    assert_ptr_equal(a->form, &gpus_form);
    assert_int_equal(run_request_set_mix(&a->req, a->req.mix_text, err, sizeof err), 0);
    gpus_card card = {.gpu = 1, .mix = "resnet26:cifar10@128+resnet26:cifar10@128", .jobs = {0, 2}, .job_count = 2};
    snprintf(card.reference, sizeof card.reference, "%s", ref);
    run_request one;
    assert_int_equal(gpus_run_request(&a->req, &card, NULL, "/runs/gpu-1", 0, &one), 0);
    assert_int_equal(request_check(&one, err, sizeof err), 0);
    differences(&a->req, &one, changed, sizeof changed);
    assert_string_equal(changed, "jobs mix outputs.baseline outputs.results where.gpu where.gpus");
    assert_string_equal(one.mix.jobs[1].label, "S"); /* the jobs as the person named them */
    run_request_free(&one);
    /* a data-parallel job's run in a pass of --mode all: its mode too, unmonitored */
    card.ddp = 1, card.reference[0] = 0;
    assert_int_equal(gpus_run_request(&a->req, &card, "naive", "/runs/naive/ddp-0", 0, &one), 0);
    differences(&a->req, &one, changed, sizeof changed);
    assert_string_equal(changed, "jobs mix mode outputs.results where.gpu where.gpus where.no_monitor");
    run_request_free(&one);
    run_args_free(a);

    /* a study's cell: its mode and what the mode asks, its jobs, its warm-up, GPU and folder */
    static const run_form *const study_forms[] = {&study_form, &gpus_form, NULL};
    const char *study[] = {"--study", "small", "--quick", "--gpus", "0,1", NULL};
    a = parsed_as(study_forms, study);
    assert_ptr_equal(a->form, &study_form);
    assert_int_equal(a->req.sample_ms, 50); /* the study's own --quick sampling, decided by the parser */
    study_cell cells[16];
    int count = study_cells("small", 1, NULL, 0, cells, 16);
    assert_int_equal(study_cell_request(&a->req, &cells[count - 1], 1, "/runs/cell", 0, &one, err, sizeof err), 0);
    assert_int_equal(request_check(&one, err, sizeof err), 0);
    differences(&a->req, &one, changed, sizeof changed);
    assert_string_equal(changed, "jobs measurement.warmup_steps mix mode outputs.results where.gpu where.gpus");
    run_request_free(&one);
    study_cell all = {.workload = "S+M+M+M", .mode = "all", .mix = "S+M+M+M", .degree = 4, .share_memory = 1};
    assert_int_equal(study_cell_request(&a->req, &all, 0, NULL, 1, &one, err, sizeof err), 0);
    differences(&a->req, &one, changed, sizeof changed);
    assert_string_equal(changed, "control.dry_run control.json jobs mix mode mode_options skip where.gpus");
    run_request_free(&one);
    run_args_free(a);

    /* a Slurm task: its jobs and folder; it runs (the sweep's --dry-run writes the script) */
    static const run_form *const slurm_forms[] = {&slurm_form, NULL};
    const char *sweep[] = {"--slurm", "--mode", "naive", "--mixes", "S;M", "--dry-run", "--precision", "bf16", NULL};
    a = parsed_as(slurm_forms, sweep);
    assert_ptr_equal(a->form, &slurm_form);
    assert_int_equal(slurm_task_request(&a->req, "2*S", "/runs/task-0", &one, err, sizeof err), 0);
    differences(&a->req, &one, changed, sizeof changed);
    assert_string_equal(changed, "control.dry_run jobs mix outputs.results");
    assert_int_equal(one.mix.jobs[1].precision, PRECISION_BF16); /* the sweep's --precision, given to each task's jobs */
    run_request_free(&one);
    run_args_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_handed_down_runs),
        cmocka_unit_test(test_each_hop_changes_its_part),
        cmocka_unit_test(test_handed_down_over_cards),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
