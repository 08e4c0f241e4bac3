/* The start barrier (start_barrier.h). */
#include "runner/suite/jobs/start_barrier.h"

#include <errno.h>
#include <unistd.h>

#include "base/clock.h"

int barrier_waiting(const job_record *jobs, int count) {
    int waiting = 0;
    for (int i = 0; i < count; i++) waiting += jobs[i].proc->phase == JOB_STARTED;
    return waiting;
}

double barrier_release(job_record *jobs, int count, int windows) {
    /* Everything before the writes is done first, so "go" reaches all jobs back to back. */
    static const char go[] = "go\n";
    double t = clock_unix();
    for (int i = 0; i < count; i++) {
        job_record *job = &jobs[i];
        job_process *p = job->proc;
        if (p->phase != JOB_READY) continue;
        ssize_t w;
        do w = write(p->stdin_fd, go, sizeof go - 1);
        while (w < 0 && errno == EINTR);
        /* completion: "go" is the only line, EOF tells train nothing more comes; windows: more follow */
        if (!windows && p->stdin_fd >= 0) close(p->stdin_fd), p->stdin_fd = -1;
        job->t_go = t;
        p->last_event_mono = clock_monotonic();
        p->phase = JOB_TRAINING;
    }
    return t;
}

