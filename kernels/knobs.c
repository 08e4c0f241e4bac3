/* The table of environment knobs (see knobs.h). Its rows are docs/knobs.md's "Environment knobs"
 * table, in this order: change one and tests/kernels/test_knobs.c says what the other must become. */
#include "kernels/knobs.h"

#include <stdlib.h>
#include <string.h>

#define JOB_PROGRAMS "`train`, `job_host`, the benchmarks"
/* each row's kind and range (knobs.h): after the cells of docs/knobs.md */
#define FLAG .kind = KNOB_KIND_FLAG
#define CHOICE(list) .kind = KNOB_KIND_CHOICE, .choices = (list)
#define WHOLE(l, h) .kind = KNOB_KIND_WHOLE, .lo = (l), .hi = (h)
#define REAL(l, h) .kind = KNOB_KIND_REAL, .lo = (l), .hi = (h)
#define SIZE(l, h) .kind = KNOB_KIND_SIZE, .lo = (l), .hi = (h)
#define PATH .kind = KNOB_KIND_PATH
#define TEXT .kind = KNOB_KIND_TEXT

static const knob table[KNOB_COUNT] = {
    [KNOB_PDL] = {"SUITE_PDL", "`0` or `1`", "on",
                  "programmatic dependent launch of the suite's kernels (`kernels/pdl.cuh`), on GPUs of "
                  "compute capability 9.0 and later; `0` turns it off",
                  JOB_PROGRAMS, 0, FLAG},
    [KNOB_WGRAD_LANE] = {"SUITE_WGRAD_LANE", "`0`, `1` or `force`", "on",
                         "a ResNet's weight gradients on a second, low-priority stream beside the backward "
                         "pass (`models/core/wgrad_lane.h`); `0` turns it off. Asked for, a job still leaves "
                         "it off in a green-context partition and where its process has fewer hardware "
                         "work queues than two per job, and its setup event says so; `force` keeps it there too "
                         "(to measure what it costs)",
                         JOB_PROGRAMS, 0, CHOICE("0|1|force")},
    [KNOB_CONV_PATH] = {"SUITE_CONV_PATH", "`legacy` or `engine`", "both timed at set-up, the faster kept",
                        "forces every convolution onto cuDNN's legacy API or its graph API's engines "
                        "(for comparisons and diagnosis)",
                        JOB_PROGRAMS, 0, CHOICE("legacy|engine")},
    [KNOB_CONV_LOG] = {"SUITE_CONV_LOG", "`0` or `1`", "off",
                       "`1` prints each convolution's choice at set-up on stderr: the legacy algorithm's and "
                       "the best engine's times, and which one runs",
                       JOB_PROGRAMS, 0, FLAG},
    [KNOB_CONV_CHOICES] = {"SUITE_CONV_CHOICES", "a file, or `none`", "`none` (`run_suite`: `conv-choices.tsv` in its run folder)",
                           "where convolution choices (dense and depthwise) are kept across processes: a set-up takes the choice "
                           "recorded for its shape, GPU and cuDNN, and searches (one process at a time, under "
                           "the file's lock) only for what is missing. `run_suite` sets it for its jobs, so that "
                           "every run of an invocation (modes, repeats, a study's cells) uses the same choices, "
                           "made before any job trained",
                           JOB_PROGRAMS, 0, PATH},
    [KNOB_DEPTHWISE_PATH] = {"SUITE_DEPTHWISE_PATH", "`ours` or `cudnn`", "both timed at set-up, the faster kept",
                             "forces every depthwise convolution onto our NHWC kernels or cuDNN's grouped "
                             "convolution",
                             JOB_PROGRAMS, 0, CHOICE("ours|cudnn")},
    [KNOB_SM_TARGET] = {"SUITE_SM_TARGET", "`0` or `1`", "on",
                        "a job in a green-context partition tells cuBLASLt and cuDNN its SM count, as a MIG "
                        "instance's device tells them, and its convolutions are searched inside the partition "
                        "(`base/sm_target.h`; an MPS share, mig-emulate's too, is seen by the libraries without "
                        "telling). `0` tells nothing: the libraries plan for the whole device (the A/B of "
                        "`lab/device_run.sh sm-target`). The setup event says what was told",
                        JOB_PROGRAMS, 0, FLAG},
    [KNOB_CONCURRENT_JOBS] = {"SUITE_CONCURRENT_JOBS", "a whole number from 1 to 4096", "1",
                              "the jobs sharing the machine, which `--workers 0` divides the CPUs among; "
                              "`run_suite` sets it for its jobs",
                              "`train`, `job_host`", 0, WHOLE(1, 4096)},
    [KNOB_GPU_MEMORY] = {"SUITE_GPU_MEMORY", "a size from `1M` to `1024T` (`80G`, `512M`)", "NVML's",
                         "the GPU memory that mixes are planned and checked against (planning for another "
                         "GPU, tests); `run.json` says where its number came from",
                         "`run_suite`", 0, SIZE(1 << 20, 1125899906842624.0)},
    [KNOB_NVML_LIBRARY] = {"SUITE_NVML_LIBRARY", "a path", "`libnvidia-ml.so.1`",
                           "the NVML library loaded at run time (monitoring, MIG)", "`run_suite`", 0, PATH},
    [KNOB_JOB_HOST] = {"SUITE_JOB_HOST", "a path", "`job_host` beside `--train`'s program",
                       "the program that runs the in-process modes' jobs (`tests/support/fake_job_host.c` stands in)",
                       "`run_suite`", 0, PATH},
    [KNOB_STATE_DIR] = {"SUITE_STATE_DIR", "a folder", "`${TMPDIR:-/tmp}/suite-<uid>`",
                        "where `run_suite` records the MPS daemons it starts, so that the next run stops "
                        "those of a run killed with SIGKILL",
                        "`run_suite`", 0, PATH},
    [KNOB_PYTHON] = {"SUITE_PYTHON", "a program", "the first of `python3` and `/usr/bin/python3` with matplotlib",
                     "the interpreter of the report", "`run_suite report`, `--study`", 0, PATH},
    [KNOB_REPORT_SCRIPT] = {"SUITE_REPORT_SCRIPT", "a path", "`results/report.py` of the source tree built",
                            "the report generator", "`run_suite report`, `--study`", 0, PATH},
    [KNOB_WRITE_FAULT] = {"SUITE_WRITE_FAULT", "file names (`jobs.csv,run.json`), or `*`", "none",
                          "results files written as on a full disk (half their bytes, then \"No space left on "
                          "device\"): how the tests show that a failed write is exit 1 with its reason",
                          "`run_suite`", 0, TEXT},
    [KNOB_DDP_OVERLAP] = {"SUITE_DDP_OVERLAP", "`0` or `1`", "on",
                          "a data-parallel job's all-reduce of each gradient bucket as soon as the backward pass "
                          "has written it (`models/core/ddp.h`); `0` all-reduces every bucket after the pass (to "
                          "measure what the overlap hides)",
                          "`train`", 0, FLAG},
    [KNOB_DDP_BROADCAST_BUFFERS] = {"SUITE_DDP_BROADCAST_BUFFERS", "`0` or `1`", "on",
                                    "rank 0's buffers (batch norm's running statistics) broadcast to every rank after "
                                    "each pass, as PyTorch DDP's `broadcast_buffers` does; `0` leaves each rank its "
                                    "own until the end",
                                    "`train`", 0, FLAG},
    [KNOB_RENDEZVOUS_TIMEOUT] = {"SUITE_RENDEZVOUS_TIMEOUT", "seconds (0.1 to 86400)", "300",
                                 "how long the ranks of `train --launcher` wait for each other: rank 0 for every rank "
                                 "to arrive, each other rank for rank 0 to answer, and at the end for the others to "
                                 "finish; a rank missing then is named and the job ends (exit 1)",
                                 "`train`", 0, REAL(0.1, 86400)},
    [KNOB_DDP_RANK] = {"SUITE_DDP_RANK", "0 to N-1", "the launcher itself",
                       "makes this process that rank of a `train --gpus N` job", "`train`", 1, WHOLE(0, 4095)},
    [KNOB_DDP_WORLD] = {"SUITE_DDP_WORLD", "N", "-", "the job's ranks, which must be its `--gpus`", "`train`", 1, WHOLE(1, 4096)},
    [KNOB_DDP_ID] = {"SUITE_DDP_ID", "hex", "-", "the job's NCCL unique id, which every rank joins by", "`train`", 1, TEXT},
    [KNOB_DDP_PARENT] = {"SUITE_DDP_PARENT", "a process id", "-",
                         "the launcher's: a rank whose parent is another process stops", "`train`", 1, WHOLE(1, 2147483647)},
    [KNOB_GO_RELAY] = {"SUITE_GO_RELAY", "`G,R` (two file descriptors)", "the run's own start barrier and window",
                       "the start barrier and window of one run of `run_suite --gpus`: when every job is ready it "
                       "writes `ready` to R and releases the jobs when `go` (or the end of file) comes on G; under "
                       "the window measurement, when every job has warmed up it writes `warm` to R and opens the "
                       "window at the T0 of `window-start T0` on G (at the end of file: by itself)",
                       "`run_suite`", 1, TEXT},
    [KNOB_JOB_DEVICES] = {"SUITE_JOB_DEVICES", "a `CUDA_VISIBLE_DEVICES` list", "the `--gpu`'s",
                          "the jobs' `CUDA_VISIBLE_DEVICES` (and an MPS daemon's): a data-parallel job's cards in "
                          "`run_suite --gpus`", "`run_suite`", 1, TEXT},
    [KNOB_NODE_CHECKS] = {"SUITE_NODE_CHECKS", "`later`", "every check here",
                          "a dry run on a login node (`run_suite --slurm`'s check of its tasks): the checks that need "
                          "the compute node (that the GPUs exist, that an `--mps-pipe` daemon answers) are left to it, "
                          "and the dry run names them",
                          "`run_suite`", 1, CHOICE("later")},
};

#undef FLAG
#undef CHOICE
#undef WHOLE
#undef REAL
#undef SIZE
#undef PATH
#undef TEXT

const knob *knob_info(knob_id id) { return id >= 0 && id < KNOB_COUNT ? &table[id] : NULL; }

const char *knob_name(knob_id id) { return table[id].name; }

const char *knob_text(knob_id id) { return getenv(table[id].name); }

int knob_flag(knob_id id) {
    const char *value = knob_text(id);
    if (value && !strcmp(value, "0")) return 0;
    if (value && !strcmp(value, "1")) return 1;
    return !strcmp(table[id].fallback, "on");
}
