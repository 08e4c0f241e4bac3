/* `run_suite --study small|medium|large|mixed|all [--quick]`: the collocation study's matrix on
 * this GPU, as a sequence of ordinary run_suite runs (this program started again per cell, handed
 * the cell's request: study_cell_request), into one study folder with study.json and the report at
 * its top.
 *
 * Uniform cells (Figures 2-4): S, M, L, EfficientNetV2-S (medium) and CaiT-XXS24 (large) at
 * degrees 2, 3 and 7, each under naive, mps and mig-emulate (and real MIG, --mig-create, where
 * MIG mode is on), plus each workload alone under serial (the baseline) and under mps (MPS's
 * cost to one client, left out by --quick; alone, naive is serial and mig-emulate's whole-GPU
 * instance is mps). Mixed cells: S+M+M+M (Figure 9) and the recommender with ResNet-152
 * (Table 2) under --mode all --skip streams,green (the paper's modes); the recommender's cell
 * with --mig-share-memory, its jobs on compute instances of one GPU instance as the paper's
 * "MIG (shared)" (the recommender fits no smaller GPU instance of the A100-40GB). A cell whose jobs do not
 * fit (run_suite's own footprint check, asked with --dry-run first) is recorded as "does not
 * fit", as the study reports, and not run. */
#ifndef SUITE_STUDY_H
#define SUITE_STUDY_H

#include <stddef.h>

#include "runner/suite/run/run_args.h"

/* The program form (run_args.h): checks the study's options, runs it and writes the report; its
 * main returns the exit status (0 every cell ran or was refused for memory, 2 bad usage, 3 some
 * cell failed, 128+N stopped by signal N). */
extern const run_form study_form;

/* The cells of a set (pure, for tests): how many, and with out non-NULL, their mode, mix and
 * degree ("does not fit" is decided when the study runs). degrees: 0-terminated, NULL = 1,2,3,7. */
typedef struct study_cell {
    char workload[48];   /* "S", "EfficientNetV2-S", "S+M+M+M" */
    char mode[16];       /* "serial", "naive", "mps", "mig-emulate", "mig", "all" */
    char mix[160];       /* what run_suite gets as --mix */
    int degree;          /* jobs in the mix */
    long steps;          /* --steps-per-epoch for the run; 0: the run's default */
    int share_memory;    /* --mig-share-memory: MIG as compute instances sharing one GPU instance */
} study_cell;
int study_cells(const char *set, int quick, const int *degrees, int with_mig, study_cell *out, int max);

/* The hop to a cell's run: the study's request with the cell's part: its mode and jobs (and what the
 * mode asks: --mode all the paper's modes, emulated MIG and --skip streams,green; real MIG its
 * instances created, unless dry; Table 2's shared memory), its warm-up (--quick's steps, where no
 * --steps-per-epoch), its GPU and its folder (dir; NULL: the study's), a dry run (--dry-run --json:
 * the fit check) or not. out owns its memory (run_request_free). 0, or -1 with a message. */
int study_cell_request(const run_request *study, const study_cell *c, int gpu, const char *dir, int dry,
                       run_request *out, char *err, size_t err_size);

/* The suite's revision as study.json records it: git (found on PATH) reading source_dir where that
 * is a checkout (git is never asked of a tree without .git, so its "not a git repository" is not
 * shown), else `built` (the revision at build time), else "unknown", said so on stderr. */
void study_revision(const char *source_dir, const char *built, char *out, size_t size);

#endif
