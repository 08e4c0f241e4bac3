/* The one rule for lists, in every grammar that takes one (--gpus 0,1, --degrees 2,3, --mps-sm
 * 25,75, --green-sm, --mixes 'S;M', job_host --green, ...): entries separated by one character, and
 * no entry empty: an empty text, a separator at either end or two in a row is refused, naming the
 * entry ("entry 2 of '0,,1' is empty"), never dropped. Each entry is then read by its own grammar
 * (numbers by base/number.h). */
#ifndef SUITE_BASE_LIST_H
#define SUITE_BASE_LIST_H

#include <stddef.h>

typedef struct list_entry {
    const char *at;  /* into the text: not NUL-terminated */
    size_t len;
} list_entry;

/* text split at sep into entries[0..max): the count, or -1 with "<name> <text>: ..." in err (an
 * empty entry; more than max entries). An entry of blanks only is empty too. */
int list_split(const char *name, const char *text, char sep, list_entry *entries, int max, char *err,
               size_t err_size);

/* A list of one entry for every job or one entry per job (--mps-sm 50 or 25,75): split, then
 * expanded so that entries[j] is job j's (entries holds jobs of them). 0, or -1 with the message. */
int list_per_job(const char *name, const char *text, char sep, int jobs, list_entry *entries, char *err,
                 size_t err_size);

/* "<name>: entry K of 'TEXT'" for an entry's own refusal (K from 1), into out; returns out. */
const char *list_entry_name(const char *name, const char *text, int k, char *out, size_t size);

#endif
