/* The file of kept convolution choices (models/layers/conv_choices.h), without a GPU: lines found
 * by key (the first wins; a line not yet ended is not one), appended whole, refused with a tab in
 * them; a path that cannot be opened named with the knob; the exclusive lock keeping a second
 * opener (another process here) waiting, the shared one letting readers in and keeping a writer
 * out; SUITE_CONV_CHOICES=none naming no file. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "models/layers/conv_choices.h"
#include "tests/support/testutil.h"

static char dir[512], path[600];

static void test_get_and_put(void **state) {
    (void)state;
    char value[64], err[256];
    conv_choices f;
    test_write_text(path, "");
    assert_int_equal(conv_choices_open(&f, path, 1, err, sizeof err), 0);
    assert_int_equal(conv_choices_get(&f, "k1", value, sizeof value, err, sizeof err), 0);
    assert_int_equal(conv_choices_put(&f, "k1", "first", err, sizeof err), 0);
    assert_int_equal(conv_choices_put(&f, "k1", "second", err, sizeof err), 0);
    assert_int_equal(conv_choices_put(&f, "k10", "other", err, sizeof err), 0);
    assert_int_equal(conv_choices_get(&f, "k1", value, sizeof value, err, sizeof err), 1);
    assert_string_equal(value, "first"); /* the first line wins */
    assert_int_equal(conv_choices_get(&f, "k10", value, sizeof value, err, sizeof err), 1);
    assert_string_equal(value, "other"); /* a key is whole: k1 is not k10's prefix match */
    assert_int_equal(conv_choices_put(&f, "bad\tkey", "v", err, sizeof err), -1);
    assert_non_null(strstr(err, "tab"));
    assert_int_equal(conv_choices_get(&f, "k1", value, 3, err, sizeof err), -1); /* "first" does not fit */
    assert_non_null(strstr(err, "longer than 2 bytes"));
    conv_choices_close(&f);
    conv_choices_close(&f); /* idempotent */
    char *text = test_read_text(path, err, sizeof err);
    assert_string_equal(text, "k1\tfirst\nk1\tsecond\nk10\tother\n");
    free(text);
}

static void test_unfinished_line(void **state) {
    (void)state;
    char value[64], err[256];
    conv_choices f;
    test_write_text(path, "a\t1\nb\t2"); /* b's line is still being written */
    assert_int_equal(conv_choices_open(&f, path, 1, err, sizeof err), 0);
    assert_int_equal(conv_choices_get(&f, "a", value, sizeof value, err, sizeof err), 1);
    assert_int_equal(conv_choices_get(&f, "b", value, sizeof value, err, sizeof err), 0);
    conv_choices_close(&f);
}

static void test_bad_path(void **state) {
    (void)state;
    char err[512], missing[700];
    conv_choices f;
    snprintf(missing, sizeof missing, "%s/no/such/folder/choices.tsv", dir);
    assert_int_equal(conv_choices_open(&f, missing, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "SUITE_CONV_CHOICES"));
    assert_non_null(strstr(err, missing));
    assert_int_equal(f.fd, -1);
    conv_choices_close(&f);
}

/* While one process holds the file, another cannot lock it. */
static void test_lock(void **state) {
    (void)state;
    char err[256];
    conv_choices f;
    assert_int_equal(conv_choices_open(&f, path, 1, err, sizeof err), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        _exit(flock(fd, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); expect_eq(WEXITSTATUS(status), 0);
    conv_choices_close(&f);
    pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        _exit(flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); expect_eq(WEXITSTATUS(status), 0); /* released */
}

/* Readers share the file; a writer waits for them. */
static void test_shared_lock(void **state) {
    (void)state;
    char err[256];
    conv_choices f;
    assert_int_equal(conv_choices_open(&f, path, 0, err, sizeof err), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        int shared = flock(fd, LOCK_SH | LOCK_NB) == 0;
        flock(fd, LOCK_UN);
        int exclusive_refused = flock(fd, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK;
        _exit(shared && exclusive_refused ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); expect_eq(WEXITSTATUS(status), 0);
    conv_choices_close(&f);
}

static void test_path_knob(void **state) {
    (void)state;
    unsetenv("SUITE_CONV_CHOICES");
    assert_null(conv_choices_path());
    setenv("SUITE_CONV_CHOICES", "none", 1);
    assert_null(conv_choices_path());
    setenv("SUITE_CONV_CHOICES", path, 1);
    assert_string_equal(conv_choices_path(), path);
    unsetenv("SUITE_CONV_CHOICES");
}

int main(void) {
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/choices.tsv", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_and_put), cmocka_unit_test(test_unfinished_line), cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_lock), cmocka_unit_test(test_shared_lock), cmocka_unit_test(test_path_knob)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_rmtree(dir);
    return rc;
}
