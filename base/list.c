#include "base/list.h"

#include <stdio.h>
#include <string.h>

#include "base/quote.h"

static int blank_only(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t') return 0;
    return 1;
}

int list_split(const char *name, const char *text, char sep, list_entry *entries, int max, char *err,
               size_t err_size) {
    char shown[QUOTE_SHOWN * 4 + 48];
    quote_text(shown, sizeof shown, '\'', text, strlen(text));
    if (blank_only(text, strlen(text))) {
        snprintf(err, err_size, "%s %s: expected entries separated by '%c', got nothing", name, shown, sep);
        return -1;
    }
    int n = 0;
    for (const char *p = text;;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (blank_only(p, len)) {
            const char *where = n == 0 ? "before the first" : !end ? "after the last" : "between two";
            snprintf(err, err_size, "%s %s: entry %d is empty (%s '%c'); give entries separated by one '%c'", name,
                     shown, n + 1, where, sep, sep);
            return -1;
        }
        if (n == max) {
            snprintf(err, err_size, "%s %s: more than %d entries", name, shown, max);
            return -1;
        }
        entries[n++] = (list_entry){p, len};
        if (!end) return n;
        p = end + 1;
    }
}

int list_per_job(const char *name, const char *text, char sep, int jobs, list_entry *entries, char *err,
                 size_t err_size) {
    int count = 1;
    for (const char *p = strchr(text, sep); p; p = strchr(p + 1, sep)) count++;
    if (count != 1 && count != jobs) {
        char shown[QUOTE_SHOWN * 4 + 48];
        snprintf(err, err_size, "%s %s: %d entries for %d job(s); give one for all or one per job", name,
                 quote_text(shown, sizeof shown, '\'', text, strlen(text)), count, jobs);
        return -1;
    }
    if (list_split(name, text, sep, entries, count, err, err_size) < 0) return -1;
    for (int j = count; j < jobs; j++) entries[j] = entries[0];
    return 0;
}

const char *list_entry_name(const char *name, const char *text, int k, char *out, size_t size) {
    char shown[QUOTE_SHOWN * 4 + 48];
    snprintf(out, size, "%s: entry %d of %s", name, k + 1, quote_text(shown, sizeof shown, '\'', text, strlen(text)));
    return out;
}
