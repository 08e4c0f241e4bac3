/* request.json: a run request (runner/suite/request/run_request.h) as a file, the way one run_suite
 * hands a run to another (a study's cell, a card's run under --gpus, a Slurm task: `run_suite
 * --request FILE`), and beside run.json in every run folder, what the run was asked. Version 1:
 *
 *   {"request_version": 1, "command": [the person's command line],
 *    "mix": "S+M", "jobs": [{"label", "model", "data", "batch", "image_size", "classes", and where
 *       set "epochs", "steps_per_epoch", "max_rows", "gpus", "precision", "decode", "decode_slots",
 *       "fault": "KIND@STEP"}, ...],
 *    "mode": "mps", "skip", "precision", "mode_options": {"<mode>": {"--<option>": value, ...}},
 *    "length": {"epochs", "steps_per_epoch", "quick"},
 *    "measurement": {"completion", "window_s" (not with completion), "windows", "warmup_steps"},
 *    "where": {"gpu", "gpus", "ddp_under", "sample_ms", "no_monitor", "train", "data_root"},
 *    "outputs": {"results", "baseline"},
 *    "control": {"force", "dry_run", "json", "repeat", "ready_timeout_s", "grace_s", "stall_timeout_s"}}
 *
 * Each setting is read back through the option row that declares it (run_args.c, a mode's file):
 * its kind and range are the command line's. A job is checked by the mix grammar (it must read
 * back the same from its explicit form, mix_job_format). "mix" names the run; "jobs" are what runs.
 * A key this version does not know, a missing one, a value of the wrong type or out of range is an
 * error naming the file and the field; then the request is checked as a command line's is
 * (request_check). */
#ifndef SUITE_REQUEST_FILE_H
#define SUITE_REQUEST_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "runner/suite/request/run_request.h"

#define REQUEST_FILE_VERSION 1
#define REQUEST_FILE_NAME "request.json"

/* The request as request.json holds it. */
cJSON *request_file_json(const run_request *r);
/* Back: r zeroed, then filled (its strings and the modes' options in its own memory: free it with
 * run_request_free whatever this returns), then request_check. 0, or -1 with "<field>: <what was
 * expected>" in err. */
int request_file_from_json(const cJSON *root, run_request *r, char *err, size_t err_size);
/* Writes dir/request.json (atomically). 0, or -1 with a message. */
int request_file_write(const run_request *r, const char *dir, char *err, size_t err_size);
/* Reads a request from path ("-": stdin): 0, or -1 with "<path>: <field>: <what was expected>". */
int request_file_read(const char *path, run_request *r, char *err, size_t err_size);

/* Hands r to another run_suite (self: this program) on stdin, `run_suite --request -`, and collects
 * what it prints into out (out_size bytes; NULL: nothing kept): its wait status (jobs_run_capture),
 * or -1 when it could not be started or r could not be written. */
int request_file_hand(const char *self, const run_request *r, char *out, size_t out_size, double timeout_s);
/* What a run_suite handed r would refuse, found before anything is written: request_check here,
 * then that run_suite's dry run of r (--dry-run: its plans and footprints). 0; -1 with
 * request_check's message in err; else the dry run's exit status (its message printed), 1 when it
 * could not run. */
int request_file_dry_check(const char *self, const run_request *r, char *err, size_t err_size);

#endif
