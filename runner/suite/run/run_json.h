/* run.json of a run folder: the command line, the mix, the machine, the settings, each job's
 * spec, footprint, command and CUDA environment, and what its mode reports (daemon, instances,
 * partitions). The dry run shows the same pieces (--dry-run --json). */
#ifndef SUITE_RUN_JSON_H
#define SUITE_RUN_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "runner/suite/modes/mode_run.h"

/* Writes <dir>/run.json; mode: "naive", ..., "all"; status: "running", "complete", ... r may be
 * NULL (--mode all's top folder): the mix's jobs then, no mode's report. Errors are printed. */
void run_json_write(const suite_ctx *c, const mode_run *r, const char *dir, const char *mode,
                    const char *status);
cJSON *run_json_gpu(const monitor_gpu *g, int index);
/* The run's jobs (r NULL: the mix's, with the commands they would run). */
cJSON *run_json_jobs(const suite_ctx *c, const mode_run *r);
/* Now as run.json writes times: "2026-11-24T15:20:02Z". */
void run_json_time(char *out, size_t size);

#endif
