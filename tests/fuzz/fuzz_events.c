/* libFuzzer target: the event lines run_suite reads from its jobs (job_handle_line, the JSON-lines
 * protocol of runner/suite/jobs/jobs.h), one line at a time as the reader hands them over, into
 * one job's record. Whatever the lines say, the record stays within its bounds: epochs and windows
 * at most their maximum, step times finite and non-negative within the kept count, every text
 * field terminated, the phase returned one the observers know (job_events.h), and no number a job
 * wrote overflows a conversion (undefined behaviour is fatal here). Seeds: tests/fuzz/events/. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/watchdog.h"

/* The watchdog's note (runner/suite/jobs/watchdog.c, which signals processes): not what is fuzzed
 * here. */
void jobs_note_event(job_record *job, double mono) { (void)job, (void)mono; }

static int terminated(const char *text, size_t size) { return memchr(text, 0, size) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65536) return 0;
    static job_record job;
    static job_process proc;
    memset(&job, 0, sizeof job);
    memset(&proc, 0, sizeof proc);
    job.proc = &proc;
    proc.phase = data[0] & 1 ? JOB_TRAINING : JOB_STARTED;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        const char *phase = job_handle_line(&job, line, 1.0);
        if (phase && strcmp(phase, "ready") && strcmp(phase, "epoch") && strcmp(phase, "window") &&
            strcmp(phase, "kernels"))
            abort();
    }
    free(text);
    if (job.epoch_count < 0 || job.epoch_count > JOB_MAX_EPOCHS || job.window_count < 0 ||
        job.window_count > JOB_MAX_WINDOWS || job.step_count < 0 || job.step_count > job.step_cap)
        abort();
    for (long i = 0; i < job.step_count; i++)
        if (!isfinite(job.steps[i].ms) || job.steps[i].ms < 0) abort();
    if (!terminated(job.device, sizeof job.device) || !terminated(job.error_message, sizeof job.error_message) ||
        !terminated(job.fault_kind, sizeof job.fault_kind))
        abort();
    free(job.steps);
    return 0;
}
