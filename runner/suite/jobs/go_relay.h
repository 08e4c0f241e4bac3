/* The go relay, a run's end of it (the --gpus process serves the other end). */
#ifndef SUITE_GO_RELAY_H
#define SUITE_GO_RELAY_H

#include "base/line_reader.h"
#include "runner/suite/jobs/job_process.h"
#include "runner/suite/jobs/job_window.h"

/* The relay that SUITE_GO_RELAY ("G,R") names, its descriptors made close-on-exec (no job holds
 * them) and go_fd non-blocking: 1 with *r filled, 0 when unset, -1 with a message when malformed. */
int jobs_relay_from_env(jobs_relay *r, char *err, size_t err_size);

/* The run's end of the go relay: what it has said on it and heard from it so far. */
typedef struct go_relay {
    const jobs_relay *fds;       /* NULL: no relay */
    line_reader heard;           /* go_fd's lines */
    int said_ready, said_warm;
    int go;                      /* "go" came, or the end of file */
    int gone;                    /* the end of file (or a failed read or write): nothing more comes */
    double window_start;         /* "window-start T0": T0; NaN before it came */
} go_relay;

void go_relay_init(go_relay *r, const jobs_relay *fds);
/* The barrier's part: says "ready" once (every job here is ready or ended) and reads; 1 when the
 * jobs may go ("go" came, the relay is gone, or there is none). */
int go_relay_ready(go_relay *r);
/* A relayed window measurement before the window opened: "warm" once every job training here has
 * warmed up, then the common T0 when "window-start" comes; a relay gone leaves the window to this
 * run alone (job_window_due opens it when its jobs have warmed up). */
void go_relay_window(go_relay *r, job_window_clock *clock, const job_record *jobs, int count);
/* The descriptor to wait on for the relay's next line, -1 when nothing is awaited from it. */
int go_relay_fd(const go_relay *r, int released, const job_window_clock *clock);

#endif
