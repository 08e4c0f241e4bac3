/* A job's process as the runner's pieces share it while a group runs (jobs.h runs the group; the
 * barrier, the go relay, the window clock and the watchdog each act on it): the process, its
 * phase, the settings the group runs under. Types only. */
#ifndef SUITE_JOB_PROCESS_H
#define SUITE_JOB_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

#include "results/job_record.h"

#define JOB_LINE_MAX 16384       /* longest event line kept; longer lines are logged, not parsed */
#define JOB_ENV_MAX 16           /* environment entries a mode may set or remove per job */
#define JOB_ENV_ENTRY 4352       /* "NAME=" plus a path, or a list of GPU_LIST_MAX characters */

typedef enum { JOB_NEW, JOB_STARTED, JOB_READY, JOB_TRAINING, JOB_FINISHED } job_phase;

/* Environment changes a mode makes for one job: "NAME=value" sets, a bare "NAME" removes. An entry
 * that does not fit is never cut: it is named in refused, and job_build_env then builds nothing. */
typedef struct job_env {
    int count;
    char entries[JOB_ENV_MAX][JOB_ENV_ENTRY];
    char refused[160];
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
    double trace_s;              /* run_suite --kernels: the traced window after them (job_window.h); 0: none */
    const jobs_relay *relay;     /* NULL: the barrier releases on its own */
} jobs_settings;

typedef enum { GROUP_COMPLETE = 0, GROUP_PARTIAL = 1, GROUP_STOPPED = 2 } group_result;

#endif
