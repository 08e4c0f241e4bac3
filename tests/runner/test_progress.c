/* The status board of run_suite (runner/suite/jobs/progress.c): the line a progress event becomes,
 * plain lines off a terminal (a job's progress at most every PROGRESS_PLAIN_S), and in-place
 * rewriting on one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/jobs/progress.h"

static void test_format(void **state) {
    char text[PROGRESS_LINE];
    assert_int_equal(progress_format("{\"event\":\"progress\",\"epoch\":2,\"step\":340,\"steps\":1000,"
                                     "\"samples_per_s\":12345.6,\"eta_s\":42.5,\"t\":1}", text, sizeof text), 0);
    assert_string_equal(text, "epoch 2 step 340/1000 (34%), 12346 samples/s, ETA 0:42");
    assert_int_equal(progress_format("{\"event\":\"progress\",\"epoch\":1,\"step\":7,\"t\":1}", text, sizeof text), 0);
    assert_string_equal(text, "epoch 1 step 7");
    assert_int_equal(progress_format("{\"event\":\"progress\",\"epoch\":1,\"step\":1,\"steps\":9,\"eta_s\":7384}",
                                     text, sizeof text), 0);
    assert_string_equal(text, "epoch 1 step 1/9 (11%), ETA 2:03:04");
    assert_int_equal(progress_format("{\"event\":\"epoch\",\"epoch\":1}", text, sizeof text), -1);
    assert_int_equal(progress_format("{\"event\":\"progress\"}", text, sizeof text), -1);
    assert_int_equal(progress_format("not json \"progress\"", text, sizeof text), -1);
    char small[12];
    assert_int_equal(progress_format("{\"event\":\"progress\",\"epoch\":2,\"step\":340,\"steps\":1000,\"eta_s\":4}",
                                     small, sizeof small), 0);
    assert_int_equal(strlen(small), sizeof small - 1);
}

static job_record *two_jobs(void) {
    job_record *jobs = calloc(2, sizeof *jobs);
    for (int i = 0; i < 2; i++) {
        jobs[i].index = i;
        snprintf(jobs[i].spec.label, sizeof jobs[i].spec.label, "%s", i ? "M" : "S");
    }
    return jobs;
}

static void test_plain(void **state) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    job_record *jobs = two_jobs();
    progress_board b;
    progress_begin(&b, f, 0, jobs, 2, "mps");
    progress_show(&b, &jobs[1], "ready after 1.0 s");
    const char *ev = "{\"event\":\"progress\",\"epoch\":1,\"step\":5,\"steps\":10,\"samples_per_s\":100,\"eta_s\":3}";
    progress_line(&b, &jobs[0], ev, 100.0);
    progress_line(&b, &jobs[0], ev, 100.0 + PROGRESS_PLAIN_S - 1); /* within PROGRESS_PLAIN_S: not repeated */
    progress_line(&b, &jobs[1], ev, 101.0); /* another job's first: shown */
    progress_line(&b, &jobs[1], "{\"event\":\"epoch\",\"epoch\":1}", 102.0);
    progress_line(&b, &jobs[0], ev, 100.0 + PROGRESS_PLAIN_S); /* once the pace allows: again */
    progress_end(&b);
    fclose(f);
    assert_string_equal(text, "[mps] job 1 M: ready after 1.0 s\n"
                              "[mps] job 0 S: epoch 1 step 5/10 (50%), 100 samples/s, ETA 0:03\n"
                              "[mps] job 1 M: epoch 1 step 5/10 (50%), 100 samples/s, ETA 0:03\n"
                              "[mps] job 0 S: epoch 1 step 5/10 (50%), 100 samples/s, ETA 0:03\n");
    assert_null(strchr(text, '\033'));
    free(text);
    /* a quiet group (no tag) prints nothing */
    f = open_memstream(&text, &size);
    progress_begin(&b, f, 0, jobs, 2, NULL);
    progress_show(&b, &jobs[0], "go");
    progress_line(&b, &jobs[0], ev, 100.0);
    fclose(f);
    assert_int_equal(size, 0);
    free(text);
    free(jobs);
}

static void test_terminal(void **state) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    job_record *jobs = two_jobs();
    progress_board b;
    progress_begin(&b, f, 1, jobs, 2, "naive");
    progress_show(&b, &jobs[0], "go");
    progress_line(&b, &jobs[1], "{\"event\":\"progress\",\"epoch\":2,\"step\":1,\"steps\":4}", 100.0);
    progress_end(&b);
    fclose(f);
    /* first draw: both lines; second: up two lines, both rewritten */
    assert_string_equal(text, "\r\033[K[naive] job 0 S: go\n\r\033[K[naive] job 1 M: waiting\n"
                              "\033[2A\r\033[K[naive] job 0 S: go\n\r\033[K[naive] job 1 M: epoch 2 step 1/4 (25%)\n");
    free(text);
    free(jobs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
