/* train: one training job = one process (the job itself is runner/train/job.c). With --json it
 * speaks the runner's protocol on stdout (one JSON object per line: setup, ready, epoch, done,
 * error); human-readable lines go to stderr then. Exit codes: 0 done, 1 runtime error (no GPU, out
 * of memory, diverged), 2 bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/knob_value.h"
#include "runner/mps_probe.h"
#include "runner/train/job.h"
#include "runner/train/train_ddp.h"
#include "runner/train/train_events.h"
#include "runner/train/train_launched.h"
#include "runner/train/train_options.h"

int main(int argc, char **argv) {
    static train_options opt; /* large (paths); zeroed */
    train_events ev = {0};
    char err[1024];
    ev.human = stdout;
    int parsed = train_options_parse(&opt, argc, argv, err, sizeof err);
    if (parsed == 1) return 0;
    ev.json = opt.json;
    if (opt.json) ev.human = stderr;
    if (parsed != 0) return train_fail(&ev, 2, err);
    /* Started by a person under their own MPS daemon, no mode set a GPU-decoding job's work queues:
     * it asks for an MPS client's share (run_suite's modes set the variable in such a job's
     * environment, and a plain job's private pipe folder has no daemon); other jobs keep the
     * default. */
    if (!strcmp(opt.data, "imagenet") && opt.decode != DECODE_CPU && !getenv("CUDA_DEVICE_MAX_CONNECTIONS") &&
        mps_daemon_running(mps_default_pipe_dir())) {
        char queues[16];
        snprintf(queues, sizeof queues, "%d", MPS_CLIENT_CONNECTIONS);
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues, 1);
    }
    if (knob_value_check_all(err, sizeof err) != 0) return train_fail(&ev, 2, err); /* the environment's values */
    if (opt.launcher) return train_launched_main(&opt, &ev);
    if (opt.gpus) return train_ddp_main(&opt, &ev, argc, argv);
    context_place whole = {.device = opt.device};
    return train_job_run(&opt, &ev, &whole);
}
