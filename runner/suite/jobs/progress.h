/* What run_suite shows while a group of jobs runs: on a terminal, one status line per job that
 * is rewritten in place (phase, epoch, step of steps, samples/s so far, ETA from train's
 * "progress" events); elsewhere (CI, a log file) plain lines as before, with a job's in-epoch
 * progress at most every PROGRESS_PLAIN_S seconds. jobs_run_group owns one board per group; the
 * board reads only the jobs' records (results/job_record.h). */
#ifndef SUITE_PROGRESS_H
#define SUITE_PROGRESS_H

#include <stdio.h>

#include "results/job_record.h"

#define PROGRESS_PLAIN_S 30.0
#define PROGRESS_LINE 200

typedef struct progress_board {
    FILE *out;                   /* stderr */
    int tty;                     /* out is a terminal: the lines are rewritten in place */
    int width;                   /* columns of the terminal (lines are cut to fit) */
    const char *tag;             /* "[naive] ..."; NULL: the group is quiet */
    const job_record *jobs;      /* the group's array */
    int count, drawn;            /* jobs; lines of the board now on the terminal */
    char lines[MIX_MAX_JOBS][PROGRESS_LINE];
    double last_plain[MIX_MAX_JOBS];
} progress_board;

/* tty: -1 asks isatty(fileno(out)); 0 or 1 forces it (tests). */
void progress_begin(progress_board *b, FILE *out, int tty, const job_record *jobs, int count,
                    const char *tag);
/* A job's news (the runner's own lines: started, ready, epoch, ok/failed). */
void progress_show(progress_board *b, const job_record *job, const char *text);
/* One stdout line of a job: a "progress" event updates its line; other lines are ignored.
 * now: monotonic seconds (clock_monotonic), for the plain lines' pace. */
void progress_line(progress_board *b, const job_record *job, const char *line, double now);
/* Leaves the board where it is (the cursor below it). */
void progress_end(progress_board *b);
/* "epoch 2 step 340/1000 (34%), 12,345 samples/s, ETA 0:42" from a progress event (pure).
 * 0, or -1 when the line is not a progress event. */
int progress_format(const char *line, char *out, size_t size);

#endif
