/* Mix grammar (runner/suite/plan/mix.h): the study's presets, repetition, explicit jobs, overrides,
 * whitespace rules, the formatter's round trip, and every rejected form with the words its
 * message must carry (the offending part and what would have been valid). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "tests/support/testutil.h"

static mix parsed;  /* 64 jobs are ~10 KB: kept off the test stack */

static void parse_ok(const char *text) {
    char err[1024];
    int rc = mix_parse(&parsed, text, err, sizeof err);
    if (rc != 0) fail_msg("mix_parse(\"%s\") failed: %s", text, err);
}

/* Parses text, expects failure, and checks that every NULL-terminated word is in the message. */
static void parse_fails(const char *text, ...) {
    char err[1024];
    int rc = mix_parse(&parsed, text, err, sizeof err);
    if (rc != -1) fail_msg("mix_parse(\"%s\") accepted a bad mix (%d jobs)", text, parsed.count);
    assert_int_equal(parsed.count, 0);
    va_list ap;
    va_start(ap, text);
    for (const char *word = va_arg(ap, const char *); word; word = va_arg(ap, const char *))
        if (!strstr(err, word)) fail_msg("message for \"%s\" lacks \"%s\": %s", text, word, err);
    va_end(ap);
}

static void expect_job(int i, const char *model, const char *data, int size, int classes,
                       int batch, int epochs, long steps) {
    const job_spec *j = &parsed.jobs[i];
    assert_string_equal(j->model, model);
    assert_string_equal(j->data, data);
    assert_int_equal(j->image_size, size);
    assert_int_equal(j->classes, classes);
    assert_int_equal(j->batch, batch);
    assert_int_equal(j->epochs, epochs);
    assert_int_equal(j->steps_per_epoch, steps);
}

static void test_presets_match_the_study(void **state) {
    int n = 0;
    const mix_preset *p = mix_presets(&n);
    assert_int_equal(n, 4);
    parse_ok("S+M+L+XL");
    assert_int_equal(parsed.count, 4);
    expect_job(0, "resnet26", "cifar10", 32, 10, 128, 0, 0);
    expect_job(1, "resnet50", "imagenet64", 64, 1000, 128, 0, 0);
    expect_job(2, "resnet152", "imagenet", 224, 1000, 32, 0, 0);
    expect_job(3, "dlrm", "criteo-terabyte", 0, 0, 2048, 0, 0);
    for (int i = 0; i < n; i++) {
        assert_string_equal(parsed.jobs[i].label, p[i].name);
        assert_string_equal(parsed.jobs[i].model, p[i].model);
        assert_non_null(p[i].description);
    }
    parse_ok("s+m+m");  /* names are matched without regard to case */
    assert_int_equal(parsed.count, 3);
    expect_job(2, "resnet50", "imagenet64", 64, 1000, 128, 0, 0);
}

static void test_repetition(void **state) {
    parse_ok("7*S");
    assert_int_equal(parsed.count, 7);
    for (int i = 0; i < 7; i++) expect_job(i, "resnet26", "cifar10", 32, 10, 128, 0, 0);
    parse_ok("2*S+3*M+L");
    assert_int_equal(parsed.count, 6);
    expect_job(1, "resnet26", "cifar10", 32, 10, 128, 0, 0);
    expect_job(4, "resnet50", "imagenet64", 64, 1000, 128, 0, 0);
    expect_job(5, "resnet152", "imagenet", 224, 1000, 32, 0, 0);
    parse_ok("64*S");
    assert_int_equal(parsed.count, 64);
    parse_ok("32*S+32*M");
    assert_int_equal(parsed.count, 64);
}

static void test_explicit_jobs(void **state) {
    parse_ok("resnet50:imagenet64@128+efficientnetv2_s:imagenet64@128+cait_xxs24:imagenet@128");
    assert_int_equal(parsed.count, 3);
    expect_job(0, "resnet50", "imagenet64", 64, 1000, 128, 0, 0);
    expect_job(1, "efficientnetv2_s", "imagenet64", 64, 1000, 128, 0, 0);
    expect_job(2, "cait_xxs24", "imagenet", 224, 1000, 128, 0, 0);
    assert_string_equal(parsed.jobs[1].label, "efficientnetv2_s:imagenet64@128");
    parse_ok("resnet26:fashion-mnist@256+resnet26:synthetic@1+dlrm:criteo-kaggle@65536");
    expect_job(0, "resnet26", "fashion-mnist", 32, 10, 256, 0, 0);
    expect_job(1, "resnet26", "synthetic", 32, 10, 1, 0, 0);
    expect_job(2, "dlrm", "criteo-kaggle", 0, 0, 65536, 0, 0);
    parse_ok("resnet50:imagenet64@128/96+cait_xxs24:imagenet@64/160");  /* size overrides */
    expect_job(0, "resnet50", "imagenet64", 96, 1000, 128, 0, 0);
    expect_job(1, "cait_xxs24", "imagenet", 160, 1000, 64, 0, 0);
    parse_ok("ResNet50:ImageNet64@32");
    expect_job(0, "resnet50", "imagenet64", 64, 1000, 32, 0, 0);
}

static void test_overrides(void **state) {
    parse_ok("M[epochs=3,steps=100]");
    expect_job(0, "resnet50", "imagenet64", 64, 1000, 128, 3, 100);
    assert_string_equal(parsed.jobs[0].label, "M[epochs=3,steps=100]");
    parse_ok("resnet26:cifar10@64[steps=20]");
    expect_job(0, "resnet26", "cifar10", 32, 10, 64, 0, 20);
    parse_ok("3*S[epochs=2]+XL[steps=5]");
    assert_int_equal(parsed.count, 4);
    expect_job(2, "resnet26", "cifar10", 32, 10, 128, 2, 0);
    expect_job(3, "dlrm", "criteo-terabyte", 0, 0, 2048, 0, 5);
    parse_ok("resnet50:synthetic@64/128[classes=100,epochs=1]");
    expect_job(0, "resnet50", "synthetic", 128, 100, 64, 1, 0);
}

/* decode= reaches train as --decode, in the canonical name whatever the case, and only for the
 * set whose files are JPEGs. */
static void test_decode_override(void **state) {
    parse_ok("4*resnet50:imagenet@256[precision=bf16,decode=GPU]");
    assert_int_equal(parsed.count, 4);
    assert_int_equal(parsed.jobs[3].decode, DECODE_GPU);
    assert_true(parsed.jobs[3].decode_given);
    char text[256];
    expect_gt(mix_job_format(&parsed.jobs[0], text, sizeof text), 0);
    assert_string_equal(text, "resnet50:imagenet@256[precision=bf16,decode=gpu]");
    parse_ok("L[decode=cpu]+L");
    assert_int_equal(parsed.jobs[0].decode, DECODE_CPU);
    assert_false(parsed.jobs[1].decode_given); /* train's default */
    parse_fails("L[decode=dali]", "decode=\"dali\" must be cpu, gpu or auto", NULL);
    parse_fails("M[decode=gpu]", "decode= chooses where ImageNet's JPEG files decode; resnet50 reads imagenet64",
                NULL);
    parse_fails("M[foo=1]", "decode=cpu|gpu|auto", NULL);
}

/* decode_slots= reaches train as --decode-slots and the label keeps it; refused where there is no
 * GPU decoder to size. */
static void test_decode_slots_override(void **state) {
    parse_ok("4*resnet50:imagenet@256[precision=bf16,decode=gpu,decode_slots=3]");
    assert_int_equal(parsed.jobs[2].decode_slots, 3);
    char text[256];
    expect_gt(mix_job_format(&parsed.jobs[0], text, sizeof text), 0);
    assert_string_equal(text, "resnet50:imagenet@256[precision=bf16,decode=gpu,decode_slots=3]");
    const run_request run = {.train_path = "train", .epochs = 2, .data_root = "/data"};
    char **argv = job_build_argv(&run, &parsed.jobs[0], JOB_ARGV_RUN, NULL);
    int found = 0;
    for (int i = 0; argv[i]; i++)
        found += !strcmp(argv[i], "--decode-slots") && argv[i + 1] && !strcmp(argv[i + 1], "3");
    assert_int_equal(found, 1);
    job_free_strv(argv);
    parse_ok("L+L[decode_slots=2]");
    assert_int_equal(parsed.jobs[0].decode_slots, 0); /* train's default */
    assert_int_equal(parsed.jobs[1].decode_slots, 2);
    parse_fails("L[decode_slots=0]", "decode_slots: expected a whole number from 1 to 8, got '0' (less than 1)", NULL);
    parse_fails("L[decode_slots=9]", "decode_slots: expected a whole number from 1 to 8, got '9' (more than 8)", NULL);
    parse_fails("L[decode_slots=two]", "decode_slots: expected a whole number from 1 to 8, got 'two'", NULL);
    parse_fails("M[decode_slots=2]",
                "decode_slots= sizes the GPU decoder of ImageNet's JPEG files; resnet50 reads imagenet64", NULL);
    parse_fails("L[decode=cpu,decode_slots=2]", "decode=cpu decodes on the host", NULL);
    parse_fails("L[decode_slots=2,decode=cpu]", "decode=cpu decodes on the host", NULL);
}

static void test_whitespace_rules(void **state) {
    parse_ok("  7 * S  ");
    assert_int_equal(parsed.count, 7);
    parse_ok("S + M\t+ M");
    assert_int_equal(parsed.count, 3);
    parse_ok("M[ epochs = 3 , steps = 100 ]");
    expect_job(0, "resnet50", "imagenet64", 64, 1000, 128, 3, 100);
    parse_fails("resnet50 :imagenet64@128", "part 1", "whitespace inside the job", NULL);
    parse_fails("resnet50:imagenet64@ 128", "whitespace inside the job", NULL);
    parse_fails("M [epochs=3]", "whitespace inside the job", NULL);
    parse_fails("resnet50:image net64@128", "whitespace", NULL);
}

static void test_unknown_names_list_the_valid_ones(void **state) {
    parse_fails("S+Q", "part 2 \"Q\"", "unknown job \"Q\"", "S (resnet26:cifar10@128)",
                "XL (dlrm:criteo-terabyte@2048[rows=10000000])", "efficientnetv2_s", "fashion-mnist", NULL);
    parse_fails("resnet18:cifar10@128", "unknown model \"resnet18\"", "resnet26, resnet50",
                "cait_xxs24, dlrm", NULL);
    parse_fails("resnet50:mnist@128", "unknown data set \"mnist\"", "cifar10, imagenet64", NULL);
    parse_fails("resnet50:imagenet64", "expected \"@batch\"", "resnet50:imagenet64@128", NULL);
}

static void test_empty_parts_and_trailing_plus(void **state) {
    parse_fails("S++M", "part 2", "empty part between two '+'", "S+M+M", NULL);
    parse_fails("S+M+", "part 3", "trailing '+'", NULL);
    parse_fails("+S", "part 1", "before the first '+'", NULL);
    parse_fails("", "empty mix", "S+M+M", NULL);
    parse_fails("   ", "empty mix", NULL);
    parse_fails(NULL, "empty mix", NULL);
    parse_fails("S+ +M", "part 2", "empty part", NULL);
}

static void test_repetition_bounds(void **state) {
    parse_fails("0*S", "count before '*': expected a whole number from 1 to 64, got '0' (less than 1)", NULL);
    parse_fails("65*S", "count before '*': expected a whole number from 1 to 64, got '65' (more than 64)", NULL);
    parse_fails("1000000*S", "got '1000000' (more than 64)", NULL);
    parse_fails("-2*S", "got '-2' (less than 1)", NULL);
    parse_fails("x*S", "count before '*'", "got 'x'", NULL);
    parse_fails("02*S", "got '02' (a leading zero", NULL);
    parse_fails("7*", "nothing after '*'", NULL);
    parse_fails("2*3*S", "more than one '*'", NULL);
    parse_fails("40*S+30*M", "part 2", "would hold 70 jobs", "at most 64", NULL);
    parse_fails("60*S+M+M+M+M+M", "would hold 65 jobs", NULL);
}

static void test_batch_bounds(void **state) {
    parse_fails("resnet50:imagenet64@0", "batch: expected a whole number from 1 to 65536, got '0' (less than 1)", NULL);
    parse_fails("resnet50:imagenet64@65537", "got '65537' (more than 65536)", NULL);
    parse_fails("resnet50:imagenet64@", "batch: expected a whole number from 1 to 65536, got ''", NULL);
    parse_fails("resnet50:imagenet64@12x", "batch", "got '12x'", NULL);
    parse_fails("resnet50:imagenet64@99999999999999999999", "got '99999999999999999999' (more than 65536)", NULL);
    parse_fails("resnet50:imagenet64@0x80", "(hexadecimal is not read", NULL);
}

static void test_sizes(void **state) {
    parse_fails("resnet50:imagenet64@128/0", "image size: expected a whole number from 16 to 1024, got '0' (less than 16)",
                NULL);
    parse_fails("resnet50:imagenet64@128/100", "multiple of 8", NULL);
    parse_fails("cait_xxs24:imagenet@128/200", "multiple of 16 for cait_xxs24", NULL);
    parse_fails("resnet50:imagenet64@128/2048", "image size", NULL);
    parse_fails("dlrm:criteo-kaggle@2048/64", "criteo has no images", NULL);
}

static void test_bad_overrides(void **state) {
    parse_fails("M[foo=1]", "unknown override \"foo\"", "epochs=1..100000", "steps=", NULL);
    parse_fails("M[epochs=0]", "epochs: expected a whole number from 1 to 100000, got '0' (less than 1)", NULL);
    parse_fails("M[epochs=abc]", "epochs: expected a whole number from 1 to 100000, got 'abc'", NULL);
    parse_fails("M[steps=-5]", "steps: expected a whole number from 1 to 1000000000, got '-5' (less than 1)", NULL);
    parse_fails("M[steps=+5]", "got '+5' (no sign '+')", NULL);
    parse_fails("M[steps=99999999999999999999]", "got '99999999999999999999' (more than 1000000000)", NULL);
    parse_fails("M[epochs=2,epochs=3]", "override epochs= given twice; give it once", NULL);
    parse_fails("M[epochs=2, EPOCHS=3]", "given twice", NULL);
    parse_fails("M[epochs]", "not key=value", NULL);
    parse_fails("M[]", "empty brackets", NULL);
    parse_fails("M[epochs=3,]", "trailing ','", NULL);
    parse_fails("M[epochs=3,,steps=1]", "empty override", NULL);
    parse_fails("M[epochs=3", "not closed", NULL);
    parse_fails("Mepochs=3]", "']' without '['", NULL);
    parse_fails("M[epochs=3][steps=2]", "brackets", NULL);
    parse_fails("[epochs=3]", "no job before '['", NULL);
    parse_fails("S[classes=5]", "synthetic data only", "cifar10 has 10 classes", NULL);
    parse_fails("resnet26:synthetic@8[classes=1]", "classes: expected a whole number from 2 to 100000, got '1'", NULL);
}

static void test_model_and_data_must_go_together(void **state) {
    parse_fails("dlrm:cifar10@128", "part 1 \"dlrm:cifar10@128\"", "dlrm cannot train on cifar10",
                "dlrm takes criteo-kaggle or criteo-terabyte only", "fashion-mnist", NULL);
    parse_fails("S+resnet50:criteo-kaggle@128", "part 2", "resnet50 cannot train on criteo-kaggle", NULL);
    parse_fails("S[rows=5]", "rows= (train's --max-rows): --max-rows does not apply to resnet26", NULL);
    parse_fails("XL[precision=bf16]", "precision= (train's --precision): --precision bf16 does not apply to dlrm", NULL);
    parse_fails("XL[rows=0]", "rows: expected a whole number from 1 to 2147483647, got '0'", NULL);
}

static void test_control_characters(void **state) {
    parse_fails("S+M\n+M", "control or non-ASCII", NULL);
    /* the mix is echoed with the character escaped, never raw (a terminal would act on it) */
    parse_fails("S+\x1b[2J+M", "mix \"S+\\x1b[2J+M\"", NULL);
    char err[512];
    assert_int_equal(mix_parse(&parsed, "S+\x1b[2J+M", err, sizeof err), -1);
    for (const char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20) fail_msg("a control character in the message: %s", err);
}

static void test_format_round_trips(void **state) {
    const char *texts[] = {"S", "M", "L", "XL", "resnet50:imagenet64@128/96[epochs=2,steps=7]",
                           "resnet26:synthetic@64/48[classes=100]", "cait_xxs24:imagenet@16"};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        parse_ok(texts[t]);
        job_spec original = parsed.jobs[0];
        char formatted[160];
        expect_gt(mix_job_format(&original, formatted, sizeof formatted), 0);
        parse_ok(formatted);
        const job_spec *back = &parsed.jobs[0];
        assert_string_equal(back->model, original.model);
        assert_string_equal(back->data, original.data);
        assert_int_equal(back->image_size, original.image_size);
        assert_int_equal(back->classes, original.classes);
        assert_int_equal(back->batch, original.batch);
        assert_int_equal(back->epochs, original.epochs);
        assert_int_equal(back->steps_per_epoch, original.steps_per_epoch);
        expect_eq(back->max_rows, original.max_rows);
    }
    parse_ok("XL");
    expect_eq(parsed.jobs[0].max_rows, 10000000);
    char formatted[64];
    mix_job_format(&parsed.jobs[0], formatted, sizeof formatted);
    assert_string_equal(formatted, "dlrm:criteo-terabyte@2048[rows=10000000]");
}

static void test_small_error_buffers_are_safe(void **state) {
    char tiny[8];
    assert_int_equal(mix_parse(&parsed, "S+Q", tiny, sizeof tiny), -1);
    expect_lt(strlen(tiny), sizeof tiny);
    assert_int_equal(mix_parse(&parsed, "S+Q", NULL, 0), -1);
    char long_label[300];
    memset(long_label, 0, sizeof long_label);
    strcpy(long_label, "resnet50:imagenet64@128[epochs=1");
    for (int i = 0; i < 200; i++) strcat(long_label, " ");
    strcat(long_label, "]");
    parse_ok(long_label);
    assert_int_equal((int)strlen(parsed.jobs[0].label), (int)sizeof parsed.jobs[0].label - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_match_the_study),
        cmocka_unit_test(test_repetition),
        cmocka_unit_test(test_explicit_jobs),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_decode_override), cmocka_unit_test(test_decode_slots_override),
        cmocka_unit_test(test_whitespace_rules),
        cmocka_unit_test(test_unknown_names_list_the_valid_ones),
        cmocka_unit_test(test_empty_parts_and_trailing_plus),
        cmocka_unit_test(test_repetition_bounds),
        cmocka_unit_test(test_batch_bounds),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_bad_overrides),
        cmocka_unit_test(test_model_and_data_must_go_together),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_format_round_trips),
        cmocka_unit_test(test_small_error_buffers_are_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
