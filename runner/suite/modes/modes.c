/* The table of collocation modes: one row per mode, in the order --help, --list and --mode all
 * show and run them. A mode's operations are in its own file (mode.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "runner/suite/modes/mode.h"
#include "runner/suite/run/suite.h"

extern const suite_mode mode_serial, mode_naive, mode_mps, mode_mig, mode_mig_emulate, mode_streams, mode_green;

static const suite_mode *const table[] = {
    &mode_serial,
    &mode_naive,
    &mode_mps,
    &mode_mig,
    &mode_mig_emulate,
    &mode_streams,
    &mode_green,
};

#define TABLE_COUNT ((int)(sizeof table / sizeof table[0]))
_Static_assert(TABLE_COUNT <= SUITE_MODES_MAX, "SUITE_MODES_MAX holds every mode");

const suite_mode *const *suite_modes(int *count) {
    *count = TABLE_COUNT;
    return table;
}

const suite_mode *suite_mode_find(const char *name) {
    for (int i = 0; name && i < TABLE_COUNT; i++)
        if (strcmp(name, table[i]->name) == 0) return table[i];
    return NULL;
}

const suite_mode *suite_mode_with(unsigned flag) {
    for (int i = 0; i < TABLE_COUNT; i++)
        if (table[i]->flags & flag) return table[i];
    return NULL;
}

static char names[512];

static void build_names(void) {
    size_t n = 0;
    for (int i = 0; i < TABLE_COUNT; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s, ", table[i]->name);
    snprintf(names + n, sizeof names - n, "%s", SUITE_ALL);
}

const char *suite_mode_names(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_names);
    return names;
}
