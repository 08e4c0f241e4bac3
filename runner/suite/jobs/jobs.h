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

#define JOB_LINE_MAX 16384       /* longest event line kept; longer lines are logged, not parsed */
#define JOB_ENV_MAX 16           /* environment entries a mode may set or remove per job */
#define JOB_ENV_ENTRY 4352       /* "NAME=" plus a path */

typedef enum { JOB_NEW, JOB_STARTED, JOB_READY, JOB_TRAINING, JOB_FINISHED } job_phase;

/* Environment changes a mode makes for one job: "NAME=value" sets, a bare "NAME" removes. */
typedef struct job_env {
    int count;
    char entries[JOB_ENV_MAX][JOB_ENV_ENTRY];
} job_env;

/* A job's process while its group runs (job->proc of its record): owned by jobs_run_group and
 * host_group_run, allocated by job_prepare and freed by job_release. What it measured goes to the
 * record; this holds only what running it takes. */
typedef struct job_process {
    pid_t pid;
    int stdin_fd, out_fd, err_fd, log_fd;
    int reaped, wait_status, term_sent, kill_sent;
    double kill_at, close_at;    /* monotonic deadlines */
    char out_line[JOB_LINE_MAX];
    size_t out_len;
    int out_overflow;
    char err_line[512];          /* the stderr line being assembled, then the last one */
    size_t err_len;
    char err_last[512];
    job_phase phase;
    /* the watchdog */
    double last_event_mono;      /* monotonic time of the last event line, or of "go" */
    double longest_gap_s;        /* longest wait between two events since "go"; 0 before one */
} job_process;

/* What the rest of the run hears while a group runs: phase is "spawn", "ready", "start",
 * "epoch" (job->epochs[job->epoch_count-1] is the new one) or "end". */
typedef struct jobs_observer {
    void *user;
    void (*on_phase)(void *user, const job_record *job, const char *phase, double t);
} jobs_observer;

/* The go relay of run_suite --gpus (runner/suite/multi/gpus.h): several runs, one per card and one
 * per data-parallel job, share one start barrier and, under the window measurement, one window.
 * Each run has two pipes to the --gpus process; every message is one line:
 *
 *   run -> --gpus (ready_fd)   "ready"           every job is ready (or has ended)
 *   --gpus -> run (go_fd)      "go"              every run has said ready (or ended): release the jobs
 *   run -> --gpus              "warm"            (window) every job still training has finished its
 *                                                warm-up epoch (job_window_warm); the run waits
 *   --gpus -> run              "window-start T0" (window) every run has said warm (or ended): the
 *                                                first window opens at T0 (unix seconds,
 *                                                CLOCK_REALTIME, the window lines' clock), the next
 *                                                windows and "stop" follow from it as in a run alone
 *
 * A run that ended counts as having said both (its end of file). The end of file on go_fd (the
 * --gpus process stopped, or gave up) releases whatever the run still waits for: the jobs at once,
 * or the window, which then opens as in a run alone (when its own jobs have warmed up; at once when
 * they have). One relay serves one group of jobs (jobs_run_group). */
typedef struct jobs_relay {
    int go_fd, ready_fd;
} jobs_relay;

/* The relay that SUITE_GO_RELAY ("G,R") names, its descriptors made close-on-exec (no job holds
 * them) and go_fd non-blocking: 1 with *r filled, 0 when unset, -1 with a message when malformed. */
int jobs_relay_from_env(jobs_relay *r, char *err, size_t err_size);

typedef struct jobs_settings {
    double ready_timeout_s;      /* barrier: longest wait for "ready" after spawning */
    double grace_s;              /* SIGTERM -> SIGKILL */
    const char *tag;             /* progress prefix on stderr, e.g. "naive"; NULL: quiet */
    jobs_observer observer;
    double stall_timeout_s;      /* watchdog: a training job silent this long is stopped.
                                    0: derived from the job's own pace (jobs_stall_limit); < 0: off */
    struct progress_board *board;/* jobs_run_group's status lines (progress.h); callers leave NULL */
    double window_s;             /* the window measurement (job_window_clock below): each window's length;
                                    0: the completion measurement, stdin closed after "go" */
    int windows;                 /* consecutive windows of that length (0: 1) */
    const jobs_relay *relay;     /* NULL: the barrier releases on its own */
} jobs_settings;

/* The watchdog's limit for one job now: the setting when given, else JOBS_STALL_FACTOR times the
 * longest wait between its events so far (events come every epoch or progress report, so this is
 * its measured step time times the steps between reports), at least JOBS_STALL_MIN_S; before its
 * first event after "go" nothing is measured yet: JOBS_STALL_FIRST_S. */
#define JOBS_STALL_FACTOR 8.0
#define JOBS_STALL_MIN_S 30.0
#define JOBS_STALL_FIRST_S 600.0
double jobs_stall_limit(const job_record *job, const jobs_settings *settings);
/* Records an event line's arrival (monotonic now) for the watchdog. */
void jobs_note_event(job_record *job, double mono);

/* After a group ended: in a mode where one job's fatal fault ends the others (faults_spread: MPS
 * clients of one server, jobs of one process), every job that failed after the first job that
 * failed of its own (results_first_failure: an announced fault first, else the earliest to fail)
 * is re-recorded as "collateral of job N (mode M)", with its own error and the mode's evidence
 * (e.g. the MPS server log line) in job->evidence. Elsewhere failures stay each job's own.
 * Returns how many were classified collateral. */
int jobs_classify_collateral(job_record *jobs, int count, const char *mode, int faults_spread,
                             const char *mode_evidence);

typedef enum { GROUP_COMPLETE = 0, GROUP_PARTIAL = 1, GROUP_STOPPED = 2 } group_result;

/* Fills a job record (not yet started): argv for `train`, the environment (the runner's own,
 * changed by env) and its job_process. epochs/steps: the run's defaults, used where the spec
 * leaves 0. Returns 0, or -1 with a message (out of memory). */
int job_prepare(job_record *job, int index, const job_spec *spec, const char *train_path,
                int epochs, long steps_per_epoch, const char *data_root, const job_env *env,
                const char *log_dir, char *err, size_t err_size);
/* Frees what job_prepare allocated, the process included (its pipes closed), and the step times
 * the events brought; the record's other numbers stay. */
void job_release(job_record *job);

/* The argv of `train` for one job (malloc'd strings, NULL-terminated): the protocol's
 * --json --wait-go form (JOB_ARGV_RUN), the same with --window-protocol (JOB_ARGV_WINDOW: the
 * window measurement, whose warm-up epoch is warmup_steps long where that is shorter; 0: whole),
 * or the --dry-run --json form (JOB_ARGV_DRY_RUN: epochs and steps are then left out; the data root
 * stays, so train checks it before anything runs). Pure. */
enum { JOB_ARGV_RUN = 0, JOB_ARGV_DRY_RUN = 1, JOB_ARGV_WINDOW = 2 };
char **job_build_argv(const char *train_path, const job_spec *spec, int epochs,
                      long steps_per_epoch, long warmup_steps, const char *data_root, int form);
/* base (e.g. environ) with env applied; malloc'd, NULL-terminated. */
char **job_build_env(char *const *base, const job_env *env);
void job_free_strv(char **v);
/* Appends "NAME=value" (value printf-formatted) or, with fmt NULL, a removal of NAME. */
int job_env_set(job_env *env, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs every job of the group at once behind the start barrier, reads events until all are
 * finished, and fills each job's outcome. A stop signal (see below) stops them all. */
group_result jobs_run_group(job_record *jobs, int count, const jobs_settings *settings);

/* Parses one stdout line of a job (an event); unknown or malformed lines are ignored.
 * Returns the observer phase it causes ("ready", "epoch") or NULL. */
const char *job_handle_line(job_record *job, const char *line, double now);
/* Sets status and reason from the events and the wait status (after the job ended). */
void job_settle(job_record *job);

/* `train --dry-run --json` for one job: its footprint in bytes, without a GPU. */
typedef struct job_footprint {
    double params, parameters, gradients, optimizer, buffers, activations, workspace, total;
    double flops_per_step;       /* forward + backward, multiply-adds x 2; NaN when not reported */
    double samples_per_epoch;    /* a whole epoch of the job's data set; NaN when not reported */
} job_footprint;
int job_query_footprint(const char *train_path, const job_spec *spec, const char *data_root,
                        job_footprint *fp, char *err, size_t err_size);
/* Parses the dry-run object; 0, or -1 with a message naming what is missing. */
int job_parse_footprint(const char *text, job_footprint *fp, char *err, size_t err_size);
/* A job's compute demand in FLOPs: FLOPs per step x the steps it is planned to train (epochs x
 * its fixed steps per epoch, else x a whole epoch's batches). NaN when the dry run did not say. */
double job_demand(const job_footprint *fp, const job_spec *spec, int epochs, long steps_per_epoch);

/* The window measurement, the runner's side (see runner/train/step_window.h for the job's): once
 * the last job training has reported its warm-up epoch, the window opens (T0 = then, on the
 * runner's clock; a relayed run's T0 is the go relay's common one, above) and "window T0 T1" goes
 * to every training job, T1 = T0 + the length; with K windows the next one, T1..T1 + length, goes
 * when it opens. After the last window has closed and every job still training has reported it
 * ("window" event), "stop" goes to all; they then end normally. A job that failed or ended holds
 * nothing open; a job that reports late is waited for at most JOB_WINDOW_REPORT_S after the end.
 * jobs_run_group and host_group_run write what it says to their jobs' stdin; job_window.c holds it. */
#define JOB_WINDOW_REPORT_S 60.0

typedef struct job_window_clock {
    double length_s;             /* 0: the completion measurement (no windows) */
    int count;                   /* windows of one launch */
    int sent;                    /* windows announced so far */
    double t0;                   /* the first window's start; NaN before it opened */
    int stop_sent;
    int from_relay;              /* 1: t0 comes from the go relay's "window-start" (jobs_run_group
                                    sets it); job_window_due does not open the window itself */
} job_window_clock;

void job_window_clock_init(job_window_clock *c, const jobs_settings *s);
/* 1 when the window may open: a job is training and every job training has finished its warm-up
 * epoch. */
int job_window_warm(const job_record *jobs, int count);
/* The line every training job gets now ("window T0 T1\n" or "stop\n", in line), 1; 0 when
 * nothing is due. Call after the start barrier released the jobs, on every pass of the loop. */
int job_window_due(job_window_clock *c, const job_record *jobs, int count, double now, char *line, size_t size);

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
