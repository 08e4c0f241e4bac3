/* serial: the jobs one after another, each alone on the whole GPU as a plain process: the
 * baseline of every comparison and each job's solo time. */
#include <stdio.h>

#include "runner/suite/modes/mode_run.h"

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    (void)c;
    if (!json) fprintf(out, "serial: each job alone, in mix order\n");
}

const suite_mode mode_serial = {
    .name = "serial",
    .help = "the jobs one after another (the baseline, and each job's solo time)",
    .flags = MODE_SEQUENTIAL | MODE_IN_ALL,
    .describe = describe,
    .start = mode_plain_start,
    .job_env = mode_plain_job_env,
    .stop = mode_plain_stop,
};
