/* The one rule for numbers and sizes, in every grammar the suite reads: the option tables
 * (runner/cli.h), the mix's overrides, every list (base/list.h), the fault grammar, the environment
 * knobs (base/knob_value.h) and the launchers' variables.
 *
 *   whole  := ['-'] digits                          e.g. 3, 0, -1
 *   real   := ['-'] (digits ['.' [digits]] | '.' digits) [('e'|'E') ['-'|'+'] digits]
 *                                                    e.g. 0.5, .9, 10, 1e-4
 *   size   := ['-'] digits ['.' digits] [unit] ['iB' | 'B']     e.g. 80G, 512MiB, 1.5G, 4096
 *   unit   := K | M | G | T (either case): 2^10, 2^20, 2^30, 2^40 bytes
 *   digits := decimal digits, without a leading zero ("0" itself, and "0.5", are fine)
 *
 * Nothing else is read: no blank at either end or inside, no sign '+', no hexadecimal ("0x10"),
 * no leading zero (which C would read as octal elsewhere), no inf or nan, no fraction of a byte.
 * Each refusal says which, and a number outside the range is said to be below or above it,
 * however many digits it has (never "not a number"). The message shape is every parser's:
 *   "<name>: expected a whole number from 1 to 65536, got '0' (less than 1)"
 *   "<name>: expected a size from 1M to 1024T, got '99999999T' (more than 1024T)"
 *   "<name>: expected a number from 0.1 to 86400, got '0x10' (hexadecimal is not read: decimal only)" */
#ifndef SUITE_BASE_NUMBER_H
#define SUITE_BASE_NUMBER_H

#include <stddef.h>

typedef enum number_kind { NUMBER_WHOLE = 1, NUMBER_REAL, NUMBER_SIZE } number_kind;

/* Reads text[0..len) as `kind` in [lo, hi] (a size in bytes). 0 with the value in *whole (whole
 * numbers and sizes) or *real (every kind; either pointer may be NULL), else -1 with the message
 * above in err, named after `name`. */
int number_parse(number_kind kind, double lo, double hi, const char *name, const char *text, size_t len,
                 long long *whole, double *real, char *err, size_t err_size);

/* The NUL-terminated forms. */
int number_whole(const char *name, const char *text, double lo, double hi, long long *out, char *err,
                 size_t err_size);
int number_real(const char *name, const char *text, double lo, double hi, double *out, char *err, size_t err_size);
int number_size(const char *name, const char *text, double lo, double hi, long long *out, char *err,
                size_t err_size);

/* What a kind and range accept, for messages and --help: "a whole number from 1 to 65536",
 * "a number from 0.1 to 86400", "a size from 1M to 1024T". */
void number_expects(number_kind kind, double lo, double hi, char *out, size_t size);

/* Bytes in the size grammar: the largest unit that divides them ("80G", "1536M", "1000"). */
void number_format_size(double bytes, char *out, size_t size);

#endif
