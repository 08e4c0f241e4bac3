/* The checks every run's request passes before anything runs, whichever way it came: from the
 * command line (run_args.h) or from request.json (request_file.h). */
#ifndef SUITE_REQUEST_CHECK_H
#define SUITE_REQUEST_CHECK_H

#include <stddef.h>

#include "runner/suite/request/run_request.h"

/* The mode (a mode of the table or all) and --skip; the jobs (the mix parsed where the request
 * holds only its text, run_request_set_mix); each mode's options against them (which sets the mode
 * that runs, suite_mode_check_options; not for a request over cards, whose cards' runs each check
 * their own share); --json with --dry-run; the reference folder; the results folder by the rule of
 * outputs (base/output_path.h); the train program. 0, or -1 with the message in err: the input is
 * at fault (exit 2). */
int request_check(run_request *r, char *err, size_t err_size);

#endif
