/* One `train` process per job. This module starts them (spawn.h: argv only, never a shell, each
 * with its own environment and process group so a terminal's Ctrl-C reaches only the runner,
 * which then stops them in order, and killed when the runner dies), reads their JSON-lines events over a pipe, copies
 * their stdout and stderr into a per-job log, runs the start barrier (wait for every job's
 * "ready", then write "go" to all at once, so the timed work really overlaps) and stops them
 * (SIGTERM, then SIGKILL after a grace period). Modes, monitor and results only see the
 * records (results/job_record.h); the process behind each is its job_process. */
#ifndef SUITE_JOBS_H
#define SUITE_JOBS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "results/job_record.h"
#include "runner/suite/request/run_request.h"
#include "runner/suite/jobs/go_relay.h"
#include "runner/suite/jobs/job_events.h"
#include "runner/suite/jobs/job_faults.h"
#include "runner/suite/jobs/job_process.h"
#include "runner/suite/jobs/job_window.h"
#include "runner/suite/jobs/watchdog.h"

/* Fills a job record (not yet started): its one argv for `train` (job_build_argv: the run's request,
 * as it measures; with --kernels its traced files go to <log_dir>/kernels/job<index>), the
 * environment (the runner's own, changed by env) and its job_process. Returns 0, or -1 with a
 * message (out of memory, an environment that cannot be carried, a kernels folder that cannot be
 * made). */
int job_prepare(job_record *job, int index, const job_spec *spec, const run_request *r, const job_env *env,
                const char *log_dir, char *err, size_t err_size);
/* Frees what job_prepare allocated, the process included (its pipes closed), and the step times
 * the events brought; the record's other numbers stay. */
void job_release(job_record *job);

/* The argv of `train` for one job of the run's request r (malloc'd strings, NULL-terminated), the
 * one place a typed setting becomes train's text: the protocol's --json --wait-go form
 * (JOB_ARGV_RUN), with --window-protocol under the window measurement (r->window_s > 0: its
 * warm-up epoch r->warmup_steps long where that is shorter), or the --dry-run --json form
 * (JOB_ARGV_DRY_RUN: epochs and steps are then left out; the data root stays, so train checks it
 * before anything runs). The job's own epochs= and steps= win over the request's. With --kernels
 * (r->kernels) a run's job also gets --kernels kernels_prefix, where it writes its traced files
 * (PREFIX.kernels.csv, PREFIX.intervals.csv; NULL: the listing of a dry run, which traces nothing). Pure. */
enum { JOB_ARGV_RUN = 0, JOB_ARGV_DRY_RUN = 1 };
char **job_build_argv(const run_request *r, const job_spec *spec, int form, const char *kernels_prefix);
/* base (e.g. environ) with env applied; malloc'd, NULL-terminated. NULL when out of memory or when
 * env refused an entry (env->refused says which and why). */
char **job_build_env(char *const *base, const job_env *env);
void job_free_strv(char **v);
/* Appends "NAME=value" (value printf-formatted) or, with fmt NULL, a removal of NAME. -1 when it does
 * not fit (too many entries, or too long): recorded in env->refused. */
int job_env_set(job_env *env, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs every job of the group at once behind the start barrier, reads events until all are
 * finished, and fills each job's outcome. A stop signal (see below) stops them all. */
group_result jobs_run_group(job_record *jobs, int count, const jobs_settings *settings);

/* The job's footprint and FLOPs from `train --dry-run --json` (job_build_argv's JOB_ARGV_DRY_RUN of r).
 * 0, or -1 with a message (train could not run, refused the job or printed no footprint). */
int job_query_footprint(const run_request *r, const job_spec *spec, job_footprint *fp, char *err, size_t err_size);

/* Ctrl-C, SIGTERM and SIGHUP only set a flag and write to a self-pipe that the event loop
 * polls; SIGPIPE is ignored (a job that died before "go" must not kill the runner). */
int jobs_install_stop_signals(void);
int jobs_stop_signal(void);          /* the signal that asked to stop, 0 if none */
void jobs_request_stop(int signo);   /* the same from code (tests, a failed set-up) */

/* The program `name` as a shell would find it: as given when it holds a '/', else the first
 * executable in $PATH. 0 with its path in out, or -1 (errno ENOENT) when there is none. */
int jobs_find_program(const char *name, char *out, size_t size);
/* Runs argv to completion with stdin from /dev/null (or the given text), collecting stdout
 * (up to out_size-1 bytes, NUL-terminated); stderr is passed through. Used for `train --dry-run`
 * and the MPS control program. Returns the wait status, or -1 with errno on spawn failure or
 * -2 on timeout (the process is killed). */
int jobs_run_capture(char *const argv[], char *const envp[], const char *stdin_text,
                     char *out, size_t out_size, double timeout_s);
/* Waits for a child of spawn_child (a nested run_suite, report.py) and returns its wait status, or
 * -1 with errno. Each stop signal run_suite gets meanwhile is passed on to it at once (in its own
 * process group, it hears no terminal), so it stops now, as it would have on its own; a second
 * one, without grace. */
int jobs_wait_child(pid_t pid);

#endif
