/* The number rule (see number.h): a scanner that accepts the grammar exactly and says why not,
 * then strtod on what it accepted (reals) or exact integer arithmetic (whole numbers, sizes). */
#include "base/number.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quote.h"

static int digit(char c) { return c >= '0' && c <= '9'; }

/* What was read: the value, or why not. */
typedef struct reading {
    int malformed;     /* the grammar refuses it; why says how */
    const char *why;
    int sign;          /* -1 for a leading '-' */
    double value;      /* the number (its sign included); +-HUGE_VAL past any range */
    long long whole;   /* whole numbers and sizes, when in long long's range */
    int whole_ok;
} reading;

/* The first thing the grammar refuses in s[0..n), as a reason; NULL when nothing stands out. */
static const char *refusal(const char *s, size_t n) {
    if (n == 0) return "empty";
    for (size_t i = 0; i < n; i++)
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') return "blanks are not read";
    if (s[0] == '+') return "no sign '+'";
    const char *p = s + (s[0] == '-'), *end = s + n;
    if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return "hexadecimal is not read: decimal only";
    char word[8] = "";
    size_t w = (size_t)(end - p) < sizeof word - 1 ? (size_t)(end - p) : sizeof word - 1;
    for (size_t i = 0; i < w; i++) word[i] = (char)(p[i] | 0x20);
    if (!strncmp(word, "inf", 3) || !strncmp(word, "nan", 3)) return "not a finite number";
    if (end - p >= 2 && p[0] == '0' && digit(p[1])) return "a leading zero: decimal digits from the first nonzero one";
    return NULL;
}

/* How many decimal digits stand at p (before end). */
static size_t scan_digits(const char *p, const char *end) {
    size_t n = 0;
    while (p + n < end && digit(p[n])) n++;
    return n;
}

static void read_whole(const char *s, size_t n, reading *r) {
    const char *p = s + (r->sign < 0), *end = s + n;
    size_t d = scan_digits(p, end);
    if (d == 0 || p + d != end) {
        r->malformed = 1;
        return;
    }
    unsigned long long v = 0;
    int overflow = 0;
    for (size_t i = 0; i < d; i++) {
        unsigned digit_value = (unsigned)(p[i] - '0');
        if (v > (9223372036854775807ULL - digit_value) / 10) overflow = 1;
        else v = v * 10 + digit_value;
    }
    r->whole_ok = !overflow;
    r->whole = overflow ? 0 : (long long)v * r->sign;
    r->value = overflow ? HUGE_VAL * r->sign : (double)r->whole;
}

static void read_real(const char *s, size_t n, reading *r) {
    const char *p = s + (r->sign < 0), *end = s + n;
    size_t before = scan_digits(p, end), after = 0;
    const char *q = p + before;
    if (q < end && *q == '.') {
        after = scan_digits(q + 1, end);
        q += 1 + after;
    }
    if (before + after == 0) {
        r->malformed = 1;
        return;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '-' || *q == '+')) q++;
        size_t e = scan_digits(q, end);
        if (e == 0) {
            r->malformed = 1;
            return;
        }
        q += e;
    }
    if (q != end) {
        r->malformed = 1;
        return;
    }
    char small[64], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) {
        r->malformed = 1, r->why = "out of memory";
        return;
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    r->value = strtod(buf, NULL); /* the grammar is a subset of strtod's; overflow gives HUGE_VAL */
    if (buf != small) free(buf);
}

static void read_size(const char *s, size_t n, reading *r) {
    const char *p = s + (r->sign < 0), *end = s + n;
    size_t before = scan_digits(p, end), after = 0;
    const char *q = p + before, *frac = NULL;
    if (before == 0) {
        r->malformed = 1;
        return;
    }
    if (q < end && *q == '.') {
        frac = q + 1;
        after = scan_digits(frac, end);
        if (after == 0) {
            r->malformed = 1;
            return;
        }
        q = frac + after;
    }
    int shift = 0;
    if (q < end) {
        switch (*q | 0x20) {
        case 'k': shift = 10; q++; break;
        case 'm': shift = 20; q++; break;
        case 'g': shift = 30; q++; break;
        case 't': shift = 40; q++; break;
        default: break;
        }
    }
    if (shift && end - q >= 2 && q[0] == 'i' && q[1] == 'B') q += 2;
    else if (q < end && *q == 'B') q++;
    if (q != end) {
        r->malformed = 1;
        r->why = "units are K, M, G, T, optionally followed by iB or B";
        return;
    }
    /* exact: whole part * 2^shift, plus the fraction's digits * 2^shift / 10^after, which must be whole */
    unsigned __int128 bytes = 0, limit = (unsigned __int128)9223372036854775807ULL;
    int overflow = 0;
    for (size_t i = 0; i < before && !overflow; i++) {
        bytes = bytes * 10 + (unsigned)(p[i] - '0');
        overflow = bytes > limit;
    }
    if (!overflow) {
        bytes <<= shift;
        overflow = bytes > limit;
    }
    if (!overflow && after) {
        if (after > 18) {
            r->malformed = 1;
            r->why = "not a whole number of bytes";
            return;
        }
        unsigned __int128 f = 0, ten = 1;
        for (size_t i = 0; i < after; i++) f = f * 10 + (unsigned)(frac[i] - '0'), ten *= 10;
        f <<= shift;
        if (f % ten) {
            r->malformed = 1;
            r->why = "not a whole number of bytes";
            return;
        }
        bytes += f / ten;
        overflow = bytes > limit;
    }
    r->whole_ok = !overflow;
    r->whole = overflow ? 0 : (long long)bytes * r->sign;
    r->value = overflow ? HUGE_VAL * r->sign : (double)r->whole;
}

void number_format_size(double bytes, char *out, size_t size) {
    static const char units[] = "TGMK";
    for (int u = 0; u < 4; u++) {
        double unit = ldexp(1.0, 10 * (4 - u));
        if (bytes != 0 && fmod(bytes, unit) == 0) {
            snprintf(out, size, "%.0f%c", bytes / unit, units[u]);
            return;
        }
    }
    snprintf(out, size, "%.0f", bytes);
}

void number_expects(number_kind kind, double lo, double hi, char *out, size_t size) {
    char a[48], b[48];
    switch (kind) {
    case NUMBER_WHOLE: snprintf(out, size, "a whole number from %.0f to %.0f", lo, hi); break;
    case NUMBER_REAL: snprintf(out, size, "a number from %g to %g", lo, hi); break;
    default:
        number_format_size(lo, a, sizeof a);
        number_format_size(hi, b, sizeof b);
        snprintf(out, size, "a size from %s to %s", a, b);
        break;
    }
}

static void bound_text(number_kind kind, double v, char *out, size_t size) {
    if (kind == NUMBER_SIZE) number_format_size(v, out, size);
    else if (kind == NUMBER_WHOLE) snprintf(out, size, "%.0f", v);
    else snprintf(out, size, "%g", v);
}

int number_parse(number_kind kind, double lo, double hi, const char *name, const char *text, size_t len,
                 long long *whole, double *real, char *err, size_t err_size) {
    reading r = {.sign = 1};
    r.why = refusal(text, len);
    if (r.why) {
        r.malformed = 1;
    } else {
        r.sign = text[0] == '-' ? -1 : 1;
        if (kind == NUMBER_WHOLE) read_whole(text, len, &r);
        else if (kind == NUMBER_REAL) read_real(text, len, &r);
        else read_size(text, len, &r);
        if (kind == NUMBER_WHOLE && r.malformed) { /* "2.5", "1e6": a number, not a whole one */
            reading as_real = {.sign = r.sign};
            read_real(text, len, &as_real);
            if (!as_real.malformed) r.why = "not a whole number";
        }
    }
    const char *range = NULL;
    char bound[48];
    if (!r.malformed && r.value < lo) range = "less than";
    else if (!r.malformed && r.value > hi) range = "more than";
    if (!r.malformed && !range && (kind == NUMBER_REAL || r.whole_ok)) {
        if (whole && kind != NUMBER_REAL) *whole = r.whole;
        if (real) *real = r.value;
        return 0;
    }
    char what[160], shown[QUOTE_SHOWN * 4 + 48];
    number_expects(kind, lo, hi, what, sizeof what);
    quote_text(shown, sizeof shown, '\'', text, len);
    int n = snprintf(err, err_size, "%s: expected %s, got %s", name, what, shown);
    if (n < 0 || (size_t)n >= err_size) return -1;
    if (range) {
        bound_text(kind, range[0] == 'l' ? lo : hi, bound, sizeof bound);
        snprintf(err + n, err_size - (size_t)n, " (%s %s)", range, bound);
    } else if (r.why && len) {
        snprintf(err + n, err_size - (size_t)n, " (%s)", r.why);
    }
    return -1;
}

int number_whole(const char *name, const char *text, double lo, double hi, long long *out, char *err,
                 size_t err_size) {
    return number_parse(NUMBER_WHOLE, lo, hi, name, text, strlen(text), out, NULL, err, err_size);
}

int number_real(const char *name, const char *text, double lo, double hi, double *out, char *err, size_t err_size) {
    return number_parse(NUMBER_REAL, lo, hi, name, text, strlen(text), NULL, out, err, err_size);
}

int number_size(const char *name, const char *text, double lo, double hi, long long *out, char *err,
                size_t err_size) {
    return number_parse(NUMBER_SIZE, lo, hi, name, text, strlen(text), out, NULL, err, err_size);
}
