/* The checks of a run's request (see request_check.h). */
#include "runner/suite/run/request_check.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/list.h"
#include "base/output_path.h"
#include "runner/suite/modes/mode.h"

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --skip: a list of the modes of --mode all, by the list rule of every grammar (base/list.h), each
 * named once (as an option is given once). */
static int check_skip(const run_request *r, int all, char *err, size_t err_size) {
    if (!r->skip_modes) return 0;
    if (!all) {
        snprintf(err, err_size, "--skip goes with --mode all, not %s", r->mode_name);
        return -1;
    }
    list_entry skip[SUITE_MODES_MAX + 1];
    int skips = list_split("--skip", r->skip_modes, ',', skip, SUITE_MODES_MAX, err, err_size);
    for (int k = 0; k < skips; k++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(skip[k].len < sizeof name ? skip[k].len : sizeof name - 1), skip[k].at);
        if (!suite_mode_find(name) || !strcmp(name, SUITE_ALL)) {
            snprintf(err, err_size, "--skip %s: expected modes of --mode all, one of %s", r->skip_modes,
                     suite_mode_names());
            return -1;
        }
        for (int j = 0; j < k; j++)
            if (skip[j].len == skip[k].len && !strncmp(skip[j].at, skip[k].at, skip[k].len)) {
                snprintf(err, err_size, "--skip %s: %s named twice; name each mode once", r->skip_modes, name);
                return -1;
            }
    }
    return skips < 0 ? -1 : 0;
}

int request_check(run_request *r, char *err, size_t err_size) {
    if (!r->mode_name) {
        snprintf(err, err_size, "--mode is required: one of %s", suite_mode_names());
        return -1;
    }
    int all = strcmp(r->mode_name, SUITE_ALL) == 0;
    if (!all && !suite_mode_find(r->mode_name)) {
        snprintf(err, err_size, "--mode %s: expected one of %s", r->mode_name, suite_mode_names());
        return -1;
    }
    if (check_skip(r, all, err, err_size) != 0) return -1;
    if (!r->mix.count && !r->mix_text) {
        snprintf(err, err_size, "--mix is required, e.g. S+M+M (run_suite --list shows the presets)");
        return -1;
    }
    if (!r->mix.count && run_request_set_mix(r, r->mix_text, err, err_size) != 0) return -1;
    /* over cards (--gpus) each card's run checks the options against its own jobs (gpus_run_request) */
    if (!r->gpus_text && suite_mode_check_options(r, err, err_size) != 0) return -1;
    if (r->json && !r->dry_run) {
        snprintf(err, err_size, "--json goes with --dry-run or --list");
        return -1;
    }
    if (r->baseline_dir && !is_dir(r->baseline_dir)) {
        snprintf(err, err_size, "--baseline %s: not a folder", r->baseline_dir);
        return -1;
    }
    /* the rule of every output (base/output_path.h), in the dry run too */
    const char *inputs[] = {r->data_root ? r->data_root : "", r->baseline_dir ? r->baseline_dir : "", NULL};
    const output_path_rule results = {"--results", OUTPUT_PATH_FOLDER, inputs, NULL};
    if (output_path_check(&results, r->results_dir, err, err_size) != 0) return -1;
    if (!r->train_path || access(r->train_path, X_OK) != 0) {
        snprintf(err, err_size, "cannot run the train program at %s (build it, or give --train PATH)",
                 r->train_path ? r->train_path : "(none)");
        return -1;
    }
    return 0;
}
