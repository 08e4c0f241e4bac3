/* base/number.h, base/list.h and base/quote.h: the one rule for numbers, sizes and lists that
 * every grammar follows, on what it accepts and on each kind of refusal (malformed, said why; out
 * of range, said as such, however many digits), and the echo of input in messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/list.h"
#include "base/number.h"
#include "base/quote.h"

static char err[1024];

static void whole_ok(const char *text, double lo, double hi, long long expected) {
    long long v = -12345;
    if (number_whole("N", text, lo, hi, &v, err, sizeof err) != 0) fail_msg("'%s' refused: %s", text, err);
    if (v != expected) fail_msg("'%s' read as %lld, expected %lld", text, v, expected);
}

static void refused(number_kind kind, const char *text, double lo, double hi, const char *message) {
    long long w;
    double r;
    if (number_parse(kind, lo, hi, "N", text, strlen(text), &w, &r, err, sizeof err) == 0)
        fail_msg("'%s' accepted", text);
    if (strcmp(err, message) != 0) fail_msg("'%s': got\n  %s\nexpected\n  %s", text, err, message);
}

static void test_whole(void **state) {
    whole_ok("0", 0, 10, 0);
    whole_ok("7", 0, 10, 7);
    whole_ok("-3", -5, 10, -3);
    whole_ok("9223372036854775807", 0, 1e19, 9223372036854775807LL);
    const char *range = "N: expected a whole number from 1 to 10, got";
    char m[256];
    struct { const char *text, *why; } cases[] = {
        {"0", "(less than 1)"},
        {"11", "(more than 10)"},
        {"-5", "(less than 1)"},
        {"99999999999999999999999", "(more than 10)"},   /* beyond long long: out of range all the same */
        {"+3", "(no sign '+')"},
        {" 3", "(blanks are not read)"},
        {"3 ", "(blanks are not read)"},
        {"0x10", "(hexadecimal is not read: decimal only)"},
        {"010", "(a leading zero: decimal digits from the first nonzero one)"},
        {"2.5", "(not a whole number)"},
        {"1e3", "(not a whole number)"},
        {"inf", "(not a finite number)"},
        {"abc", NULL},
        {"3x", NULL},
        {"-", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(m, sizeof m, "%s '%s'%s%s", range, cases[i].text, cases[i].why ? " " : "", cases[i].why ? cases[i].why : "");
        refused(NUMBER_WHOLE, cases[i].text, 1, 10, m);
    }
    refused(NUMBER_WHOLE, "", 1, 10, "N: expected a whole number from 1 to 10, got ''");
}

static void test_real(void **state) {
    double v;
    const char *ok[] = {"0.5", ".9", "10", "1e-4", "2.5E+2", "-0.25", "5.", "0"};
    const double want[] = {0.5, 0.9, 10, 1e-4, 250, -0.25, 5, 0};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (number_real("R", ok[i], -1, 1000, &v, err, sizeof err) != 0) fail_msg("'%s' refused: %s", ok[i], err);
        assert_true(v == want[i]);
    }
    refused(NUMBER_REAL, "0x10", 0.1, 86400, "N: expected a number from 0.1 to 86400, got '0x10' (hexadecimal is not read: decimal only)");
    refused(NUMBER_REAL, "1e400", 0.1, 86400, "N: expected a number from 0.1 to 86400, got '1e400' (more than 86400)");
    refused(NUMBER_REAL, "nan", 0, 1, "N: expected a number from 0 to 1, got 'nan' (not a finite number)");
    refused(NUMBER_REAL, "-inf", 0, 1, "N: expected a number from 0 to 1, got '-inf' (not a finite number)");
    refused(NUMBER_REAL, "1e", 0, 1, "N: expected a number from 0 to 1, got '1e'");
    refused(NUMBER_REAL, ".", 0, 1, "N: expected a number from 0 to 1, got '.'");
    refused(NUMBER_REAL, "0.05", 0.1, 1, "N: expected a number from 0.1 to 1, got '0.05' (less than 0.1)");
    refused(NUMBER_REAL, "1,5", 0, 10, "N: expected a number from 0 to 10, got '1,5'");
}

static void test_size(void **state) {
    const double lo = 1 << 20, hi = 1125899906842624.0; /* 1M to 1024T */
    struct { const char *text; long long bytes; } ok[] = {
        {"1M", 1 << 20}, {"80G", 80LL << 30}, {"512MiB", 512LL << 20}, {"1.5G", 3LL << 29}, {"2gb", 0},
        {"1048576", 1 << 20}, {"4096K", 4LL << 20}, {"1T", 1LL << 40}, {"1024T", 1LL << 50}, {"2GB", 2LL << 30},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        long long v;
        int rc = number_size("S", ok[i].text, lo, hi, &v, err, sizeof err);
        if (ok[i].bytes == 0) { /* "2gb": a lower-case b is not bytes */
            assert_int_equal(rc, -1);
            continue;
        }
        if (rc != 0) fail_msg("'%s' refused: %s", ok[i].text, err);
        assert_true(v == ok[i].bytes);
    }
    refused(NUMBER_SIZE, "99999999T", lo, hi, "N: expected a size from 1M to 1024T, got '99999999T' (more than 1024T)");
    refused(NUMBER_SIZE, "99999999999999999999T", lo, hi,
            "N: expected a size from 1M to 1024T, got '99999999999999999999T' (more than 1024T)");
    refused(NUMBER_SIZE, "0", lo, hi, "N: expected a size from 1M to 1024T, got '0' (less than 1M)");
    refused(NUMBER_SIZE, "-5G", lo, hi, "N: expected a size from 1M to 1024T, got '-5G' (less than 1M)");
    refused(NUMBER_SIZE, "abc", lo, hi, "N: expected a size from 1M to 1024T, got 'abc'");
    refused(NUMBER_SIZE, "4X", lo, hi,
            "N: expected a size from 1M to 1024T, got '4X' (units are K, M, G, T, optionally followed by iB or B)");
    refused(NUMBER_SIZE, "1.0000001M", lo, hi, "N: expected a size from 1M to 1024T, got '1.0000001M' (not a whole number of bytes)");
    refused(NUMBER_SIZE, "0x10G", lo, hi, "N: expected a size from 1M to 1024T, got '0x10G' (hexadecimal is not read: decimal only)");
    refused(NUMBER_SIZE, "+4G", lo, hi, "N: expected a size from 1M to 1024T, got '+4G' (no sign '+')");
    char text[32];
    number_format_size(80.0 * (1 << 30), text, sizeof text);
    assert_string_equal(text, "80G");
    number_format_size(1536.0 * (1 << 20), text, sizeof text);
    assert_string_equal(text, "1536M");
    number_format_size(1000, text, sizeof text);
    assert_string_equal(text, "1000");
}

static void test_list(void **state) {
    list_entry e[8];
    assert_int_equal(list_split("--gpus", "0,1,2", ',', e, 8, err, sizeof err), 3);
    assert_int_equal((int)e[2].len, 1);
    assert_int_equal(e[2].at[0], '2');
    assert_int_equal(list_split("--mixes", "S; M", ';', e, 8, err, sizeof err), 2); /* blanks: the entry's grammar */
    struct { const char *text, *message; } bad[] = {
        {"0,,1", "--gpus '0,,1': entry 2 is empty (between two ','); give entries separated by one ','"},
        {"0,", "--gpus '0,': entry 2 is empty (after the last ','); give entries separated by one ','"},
        {",0", "--gpus ',0': entry 1 is empty (before the first ','); give entries separated by one ','"},
        {"0, ,1", "--gpus '0, ,1': entry 2 is empty (between two ','); give entries separated by one ','"},
        {"", "--gpus '': expected entries separated by ',', got nothing"},
        {"1,2,3,4,5,6,7,8,9", "--gpus '1,2,3,4,5,6,7,8,9': more than 8 entries"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(list_split("--gpus", bad[i].text, ',', e, 8, err, sizeof err), -1);
        assert_string_equal(err, bad[i].message);
    }
    assert_int_equal(list_per_job("--mps-sm", "50", ',', 3, e, err, sizeof err), 0);
    assert_int_equal(e[2].at[0], '5');
    assert_int_equal(list_per_job("--mps-sm", "25,75", ',', 3, e, err, sizeof err), -1);
    assert_string_equal(err, "--mps-sm '25,75': 2 entries for 3 job(s); give one for all or one per job");
    assert_int_equal(list_per_job("--mps-sm", "25,,50", ',', 3, e, err, sizeof err), -1);
    assert_string_equal(err, "--mps-sm '25,,50': entry 2 is empty (between two ','); give entries separated by one ','");
    char name[128];
    assert_string_equal(list_entry_name("--gpus", "0,x", 1, name, sizeof name), "--gpus: entry 2 of '0,x'");
}

static void test_quote(void **state) {
    char out[512];
    assert_string_equal(quote_text(out, sizeof out, '\'', "a\x1b[31mb\n\t\\'", 11), "'a\\x1b[31mb\\n\\t\\\\\\''");
    assert_string_equal(quote_text(out, sizeof out, '"', "S+\"M\"", 5), "\"S+\\\"M\\\"\"");
    char long_text[300];
    memset(long_text, 'S', sizeof long_text);
    quote_text(out, sizeof out, '\'', long_text, sizeof long_text);
    assert_non_null(strstr(out, "...' (300 characters)"));
    assert_int_equal(strlen(out), 1 + QUOTE_SHOWN + strlen("...' (300 characters)"));
    quote_text(out, 8, '\'', "abcdefghijkl", 12); /* cut by the buffer, still terminated */
    assert_int_equal(strlen(out), 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole), cmocka_unit_test(test_real), cmocka_unit_test(test_size),
        cmocka_unit_test(test_list),  cmocka_unit_test(test_quote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
