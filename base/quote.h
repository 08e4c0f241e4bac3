/* Input echoed in a message: between quotes, every byte that is not printable ASCII written as an
 * escape (\n, \t, \r, \\, \xHH, the quote itself as \' or \"), and a long input cut after
 * QUOTE_SHOWN characters with its length said. A message never carries a raw control character
 * (a terminal would act on it) and never hides what was typed. */
#ifndef SUITE_BASE_QUOTE_H
#define SUITE_BASE_QUOTE_H

#include <stddef.h>

#define QUOTE_SHOWN 120

/* text[0..len) between `quote` characters ('\'' or '"') into out; returns out. */
const char *quote_text(char *out, size_t size, char quote, const char *text, size_t len);

#endif
