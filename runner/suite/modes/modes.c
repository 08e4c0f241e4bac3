/* The table of collocation modes: one row per mode, in the order --help, --list and --mode all
 * show and run them. A mode's operations are in its own file (mode.h), and so are its options:
 * run_suite's table takes each mode's rows in this order, request.json carries them by the
 * declaring mode's name, and the check here refuses an option the mode does not take with a
 * message made from the modes' declarations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/modes/mode.h"
#include "runner/suite/modes/mode_run.h"

/* One line per mode: the `const suite_mode mode_<name>` of its mode_<name>.c. */
#define MODE_TABLE(X)   \
    X(mode_serial)      \
    X(mode_naive)       \
    X(mode_mps)         \
    X(mode_mig)         \
    X(mode_mig_emulate) \
    X(mode_streams)     \
    X(mode_green)

#define DECLARE(m) extern const suite_mode m;
#define ROW(m) &m,
MODE_TABLE(DECLARE)
static const suite_mode *const table[] = {MODE_TABLE(ROW)};
#undef DECLARE
#undef ROW

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

int suite_mode_is(const char *name, unsigned flags) {
    const suite_mode *m = suite_mode_find(name);
    return m && (m->flags & flags) == flags;
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

/* m, the mode that runs in its place, and so on (a mode's runs_as may lead to one more); the
 * count. None for m NULL (--mode all). */
static int chain_of(const suite_mode *m, const run_request *o, const suite_mode **chain) {
    int n = 0;
    while (m && n < SUITE_MODES_MAX) {
        chain[n++] = m;
        const suite_mode *next = m->runs_as ? m->runs_as(o) : NULL;
        m = next != m ? next : NULL;
    }
    return n;
}

const suite_mode *suite_mode_resolve(const suite_mode *m, const run_request *o) {
    const suite_mode *chain[SUITE_MODES_MAX];
    int n = chain_of(m, o, chain);
    return n ? chain[n - 1] : NULL;
}

const suite_mode *mode_check_runs(const mode_check *ck) {
    return ck->chain_count ? ck->chain[ck->chain_count - 1] : NULL;
}

int mode_check_any(const mode_check *ck, unsigned flags) {
    for (int i = 0; i < ck->chain_count; i++)
        if (ck->chain[i]->flags & flags) return 1;
    return 0;
}

static int place_of(const suite_mode *m) {
    for (int k = 0; k < TABLE_COUNT; k++)
        if (table[k] == m) return k;
    return -1;
}

void *suite_mode_options(const run_request *o, const suite_mode *declarer) {
    int k = place_of(declarer);
    return k >= 0 ? o->mode_options[k] : NULL;
}

/* --- the options modes declare -------------------------------------------------------------- */

static int takes(const suite_mode *m, const char *group) {
    for (const char *const *g = m->takes; g && *g; g++)
        if (!strcmp(*g, group)) return 1;
    return 0;
}

static int declared(const char *group) {
    for (int k = 0; k < TABLE_COUNT; k++)
        for (const char *const *g = table[k]->options ? table[k]->options->groups : NULL; g && *g; g++)
            if (!strcmp(*g, group)) return 1;
    return 0;
}

int suite_mode_option_parts(cli_part *out, int *place, int max, char *err, size_t err_size) {
    int n = 0;
    for (int k = 0; k < TABLE_COUNT; k++) {
        for (const char *const *g = table[k]->takes; g && *g; g++)
            if (!declared(*g)) {
                snprintf(err, err_size, "mode %s takes options \"%s\" that no mode declares", table[k]->name, *g);
                return -1;
            }
        if (!table[k]->options) continue;
        if (n == max) {
            snprintf(err, err_size, "more than %d modes declare options", max);
            return -1;
        }
        out[n] = (cli_part){.rows = table[k]->options->rows, .size = table[k]->options->size};
        place[n++] = k;
    }
    return n;
}

int suite_mode_options_own(run_request *o) {
    for (int k = 0; k < TABLE_COUNT; k++) {
        if (!table[k]->options) continue;
        void *copy = run_request_alloc(o, table[k]->options->size);
        if (!copy) return -1;
        if (o->mode_options[k]) memcpy(copy, o->mode_options[k], table[k]->options->size);
        o->mode_options[k] = copy;
    }
    return 0;
}

cJSON *suite_mode_options_json(const run_request *o) {
    cJSON *all = cJSON_CreateObject();
    for (int k = 0; k < TABLE_COUNT; k++) {
        if (!table[k]->options || !o->mode_options[k]) continue;
        cJSON *one = cli_values_json(table[k]->options->rows, o->mode_options[k]);
        if (one->child) cJSON_AddItemToObject(all, table[k]->name, one);
        else cJSON_Delete(one);
    }
    return all;
}

static const char *keep_in(void *request, const char *text) { return run_request_keep(request, text); }

int suite_mode_options_from_json(run_request *o, const cJSON *object, char *err, size_t err_size) {
    char why[512];
    for (const cJSON *item = object ? object->child : NULL; item; item = item->next) {
        const suite_mode *m = suite_mode_find(item->string);
        int k = place_of(m);
        if (!m || !m->options) {
            snprintf(err, err_size, "%s: no mode of that name declares options (those that do: see run_suite --help)",
                     item->string);
            return -1;
        }
        if (cli_values_from_json(m->options->rows, o->mode_options[k], item, keep_in, o, why, sizeof why) != 0) {
            snprintf(err, err_size, "%s: %s", item->string, why);
            return -1;
        }
    }
    return 0;
}

/* --- the check ------------------------------------------------------------------------------- */

/* Whether the command line set an option of the group: its field is no longer all zero bytes
 * (a default such as --mig-objective's fill is zero, as it was before the parse). */
static int group_given(const mode_options *mo, const void *options, const char *group) {
    for (const char *p = group; *p;) {
        size_t len = strcspn(p, " ");
        for (const cli_option *r = mo->rows; r->name; r++) {
            if (strlen(r->name) != len || strncmp(r->name, p, len)) continue;
            const unsigned char *field = (const unsigned char *)options + r->offset;
            for (size_t b = 0; b < r->size; b++)
                if (field[b]) return 1;
        }
        p += len + (p[len] == ' ');
    }
    return 0;
}

/* Whether the mode given (its chain; --mode all: some mode of all) takes the group. */
static int group_taken(const mode_check *ck, const char *group) {
    for (int i = 0; i < ck->chain_count; i++)
        if (takes(ck->chain[i], group)) return 1;
    for (int k = 0; !ck->chain_count && k < TABLE_COUNT; k++)
        if ((table[k]->flags & MODE_IN_ALL) && takes(table[k], group)) return 1;
    return 0;
}

/* "--mps-sm and --mps-mem go with --mode mps or all, not naive": the group's options, the modes
 * that take them and all where one of those runs in all. */
static void refuse(const mode_check *ck, const char *group, char *err, size_t err_size) {
    char opts[256] = "", modes[512] = "";
    const char *mode_names[SUITE_MODES_MAX + 1];
    int n = 0, words = 0, in_all = 0;
    for (const char *p = group; *p; words++) {
        size_t len = strcspn(p, " ");
        const char *next = p + len + (p[len] == ' ');
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s%.*s",
                 !words ? "" : *next ? ", " : " and ", (int)len, p);
        p = next;
    }
    for (int k = 0; k < TABLE_COUNT; k++)
        if (takes(table[k], group)) {
            mode_names[n++] = table[k]->name;
            in_all |= (table[k]->flags & MODE_IN_ALL) != 0;
        }
    if (in_all) mode_names[n++] = SUITE_ALL;
    for (int i = 0; i < n; i++)
        snprintf(modes + strlen(modes), sizeof modes - strlen(modes), "%s%s",
                 !i ? "" : i == n - 1 ? " or " : ", ", mode_names[i]);
    snprintf(err, err_size, "%s %s with --mode %s, not %s", opts, words > 1 ? "go" : "goes", modes, ck->given);
}

int suite_mode_check_options(run_request *o, char *err, size_t err_size) {
    mode_check ck = {.given = o->mode_name, .o = o};
    o->mode = suite_mode_find(o->mode_name);
    for (int k = 0; k < TABLE_COUNT; k++)
        if (table[k]->options && !o->mode_options[k]) {
            snprintf(err, err_size, "the request holds no options of mode %s", table[k]->name);
            return -1;
        }
    ck.chain_count = chain_of(o->mode, o, ck.chain);
    for (int k = 0; k < TABLE_COUNT; k++) {
        const mode_options *mo = table[k]->options;
        if (!mo) continue;
        for (const char *const *g = mo->groups; g && *g; g++)
            if (group_given(mo, o->mode_options[k], *g) && !group_taken(&ck, *g)) {
                refuse(&ck, *g, err, err_size);
                return -1;
            }
        if (mo->check && mo->check(&ck, o->mode_options[k], err, err_size) != 0) return -1;
    }
    o->mode = suite_mode_resolve(o->mode, o);
    return 0;
}
