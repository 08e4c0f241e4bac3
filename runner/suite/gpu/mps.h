/* The runner's own MPS control daemon: started with private pipe and log folders (mode 0700) so
 * it never mixes with another user's or another run's daemon, its clients (the jobs) inherit
 * those folders plus their own SM share and memory limit, and it is stopped with "quit" written
 * to nvidia-cuda-mps-control's stdin at the end of the run, whatever ended the run: a run_suite
 * killed with SIGKILL leaves its guardian (spawn.h), which sends the quit. The argv and
 * environment builders are pure so they are tested without a GPU. */
#ifndef SUITE_MPS_H
#define SUITE_MPS_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "runner/mps_probe.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/spawn.h"
#include "runner/suite/plan/placement.h"

#define MPS_CONTROL_PROGRAM "nvidia-cuda-mps-control"

typedef struct mps_daemon {
    char program[PATH_MAX];    /* control program, looked up in PATH when it has no '/' */
    char pipe_dir[PATH_MAX];
    char log_dir[PATH_MAX];
    char visible[GPU_LIST_MAX]; /* CUDA_VISIBLE_DEVICES of the daemon ("" = all GPUs) */
    int owned;                 /* this run started it and it still runs: mps_stop quits it */
    int started;               /* this run started it (stays set after mps_stop) */
    int pipe_dir_made;         /* this run made pipe_dir: mps_stop removes it */
    char record[PATH_MAX];     /* this run's entry for it in the runner's state folder, or "" */
    spawn_guardian guardian;   /* stops it if this run_suite dies before mps_stop (pid 0: none) */
} mps_daemon;

/* {program, "-d", NULL} to start the daemon, {program, NULL} to send it commands on stdin. */
void mps_control_argv(const mps_daemon *d, int start, const char *argv[3]);
/* What the daemon and the control client need: pipe and log folders, the GPU. */
int mps_daemon_env(const mps_daemon *d, job_env *env);
/* What a job needs as a client: the daemon's folders, and, when > 0, its active thread
 * percentage (1..100) and its pinned device memory limit in bytes ("0=4G" form). */
int mps_client_env(const mps_daemon *d, int sm_percent, long long mem_limit_bytes, int queues, job_env *env);
/* "0=4G" for whole GiB, else "0=<MiB>M" (device 0 as the client sees it). */
void mps_format_mem_limit(char *out, size_t size, long long bytes);

/* Comma lists for --mps-sm (1..100 each) and --mps-mem (sizes from MPS_MEM_LIMIT_MIN to _MAX:
 * "4G", "512M", "1.5GiB", base/number.h's rule). One value applies to every job; otherwise there
 * must be one per job. Returns 0, or -1 with a message. */
#define MPS_MEM_LIMIT_MIN (1 << 20)
#define MPS_MEM_LIMIT_MAX 1125899906842624.0 /* 1024T: beyond any GPU's memory */
int mps_parse_sm_list(const char *text, int job_count, int *out, char *err, size_t err_size);
int mps_parse_mem_list(const char *text, int job_count, long long *out, char *err, size_t err_size);

/* 1 when MPS's sockets in pipe_dir fit a socket address (sun_path). A CUDA client given a longer
 * folder does not just fail to connect: on driver 580 it lost its stdin (the start barrier read
 * EOF), so even the empty folder that keeps plain processes off MPS must fit. */
int mps_pipe_dir_fits(const char *pipe_dir);

/* Starts a private daemon: folders under run_dir (the pipe folder moves to /tmp when the run
 * folder's path is too long for a socket name). visible: the daemon's CUDA_VISIBLE_DEVICES or
 * "". Its guardian is forked first: when this run_suite is gone without mps_stop, it quits the
 * daemon as mps_stop does, says so on stderr, and exits. Returns 0, or -1 with a message (nothing
 * left running). */
int mps_start(mps_daemon *d, const char *run_dir, const char *visible, char *err, size_t err_size);
/* Uses a daemon someone else started (--mps-pipe DIR); never stopped by this run. */
int mps_attach(mps_daemon *d, const char *pipe_dir, char *err, size_t err_size);
/* Quits an owned daemon and waits for it to go; kills it if "quit" does not work; then dismisses
 * its guardian. Idempotent. */
int mps_stop(mps_daemon *d, char *err, size_t err_size);

/* A daemon must not outlive its run, even one whose guardian was killed too. Before it starts, its pipe
 * folder gets MPS_OWNER_FILE ("<pid> <start time>" of this run_suite) and the runner's state
 * folder (mps_state_dir) an entry naming the pipe and log folders; mps_stop removes both.
 * mps_stop_stale, at the next run_suite's start, quits every recorded daemon whose owner is gone
 * (a pid reused by another process does not count: the start time must match) and says so on msg.
 * Returns how many it stopped. */
#define MPS_OWNER_FILE "suite-owner"
int mps_stop_stale(FILE *msg);
/* $SUITE_STATE_DIR, else ${TMPDIR:-/tmp}/suite-<uid>, created private (0700). 0, or -1 with a message. */
int mps_state_dir(char *out, size_t size, char *err, size_t err_size);
/* The first line of the daemon's logs that reports a fault (a client's fatal GPU error, a server
 * exception), for the record of the jobs it took down; "" when there is none. */
void mps_fault_evidence(const mps_daemon *d, char *out, size_t size);

#endif
