/* The advisor's model (run_suite advise): from each job's solo probes alone, what every mode this GPU
 * can run would give the mix, ranked by an objective. Pure (no GPU, no files): the form
 * (advise.c) measures the probes and reads the constants.
 *
 * A probe is one job alone over a short window: its samples/s on the whole GPU with its SM activity,
 * DRAM activity, power and memory, and its samples/s on each partition size the candidates need
 * (an MPS share, which the job's libraries see as the device's SM count). A job's speed on a
 * partition of s SMs is read off those points, linearly between them (0 at 0 SMs).
 *
 * Each job's normalized progress p (its samples/s here over its samples/s alone on the whole GPU):
 *   naive (time slices)      p = (1 - switch_cost) / max(1, sum of the jobs' SM activity)
 *   mps, streams (no shares) p = 1 / max(1, packing x sum of SM activity) / (1 + bandwidth x B)
 *                            x (1 - streams_cost for streams)
 *   a partition of s SMs     p = rate(s) / rate(whole) / (1 + bandwidth x B)
 *     (mps with shares, mig-emulate under a layout, green under a split)
 * where B is the sum of the other jobs' DRAM activity. STP = sum p, ANTT = mean 1/p, fairness =
 * min p / max p; energy per sample = the run's power (the highest solo power of its jobs) / the
 * samples/s of all jobs together. It fits when the jobs' solo peaks fit the GPU's memory together
 * (a MIG layout: each in its instance's). Energy per sample has no constant of its own; the four
 * constants (all the progress model's) start at round values that were fitted on
 * nothing (their source says "defaults"); `advise --fit RUN_DIR...` fits them to measured runs and
 * writes the file the advisor then reads (its source names it and the runs). */
#ifndef SUITE_ADVISE_MODEL_H
#define SUITE_ADVISE_MODEL_H

#include <stddef.h>

#define ADVISE_MAX_JOBS 16
#define ADVISE_MAX_POINTS 8          /* partition sizes probed per job */
#define ADVISE_MAX_CANDIDATES 24
#define ADVISE_JOB_TEXT 160

typedef struct advise_probe {
    char job[ADVISE_JOB_TEXT];       /* the job's spec, canonical (mix_job_format) */
    double rate;                     /* samples/s alone on the whole GPU */
    double sm_active;                /* 0..1 alone (GPM's SM activity, else utilisation); NaN unknown: 1 */
    double dram_active;              /* 0..1 alone (GPM); NaN unknown: 0 */
    double power_w;                  /* mean power alone; NaN unknown */
    double peak_bytes;               /* its memory alone; NaN unknown */
    int points;
    int sms[ADVISE_MAX_POINTS];      /* partition sizes probed */
    double part_rate[ADVISE_MAX_POINTS];
} advise_probe;

typedef struct advise_constants {
    double switch_cost, packing, bandwidth, streams_cost;
    char source[512];                /* where they came from: a file and the runs it was fitted on, or the defaults */
} advise_constants;
void advise_constants_default(advise_constants *c);

/* What the candidates are made of. */
typedef enum { ADVISE_NAIVE, ADVISE_SHARED, ADVISE_STREAMS, ADVISE_PARTITION } advise_kind;

typedef struct advise_candidate {
    char mode[16];                   /* run_suite's --mode: naive, mps, streams, mig-emulate, green */
    char label[96];                  /* "mps", "mps 33%", "mig-emulate 3g.40gb+4g.40gb", "green 64+64" */
    char option[32], value[96];      /* the mode option that realises it ("--mps-sm", "33"); "" none */
    advise_kind kind;
    int sms[ADVISE_MAX_JOBS];        /* partition: each job's SMs */
    double memory_bytes[ADVISE_MAX_JOBS]; /* partition with its own memory (MIG): each job's; 0 shared */
} advise_candidate;

typedef struct advise_mix {
    int count;                       /* jobs */
    const advise_probe *probe[ADVISE_MAX_JOBS]; /* each job's probe (identical jobs share one) */
    const char *label[ADVISE_MAX_JOBS];
    int total_sms;
    double memory_bytes;             /* the GPU's; NaN unknown */
} advise_mix;

typedef struct advise_prediction {
    const advise_candidate *c;
    double progress[ADVISE_MAX_JOBS];
    double stp, antt, fairness, energy_per_sample;
    int fits;                        /* 1 fits, 0 does not, -1 unknown */
    double score;                    /* by the objective: higher is better */
} advise_prediction;

/* The objectives; X(kind, name). */
#define ADVISE_OBJECTIVE_TABLE(X) X(ADVISE_STP, "stp") X(ADVISE_ANTT, "antt") X(ADVISE_FAIRNESS, "fairness") \
    X(ADVISE_ENERGY, "energy")
#define ADVISE_OBJECTIVE_ENUM_(kind, name) kind,
typedef enum { ADVISE_OBJECTIVE_TABLE(ADVISE_OBJECTIVE_ENUM_) } advise_objective;
#undef ADVISE_OBJECTIVE_ENUM_
const char *advise_objective_name(advise_objective o);
/* The objective's value of a prediction or a measurement, higher better (ANTT and energy negated). */
double advise_objective_score(advise_objective o, double stp, double antt, double fairness, double energy);

/* A job's samples/s on s SMs, from its probe's points. */
double advise_rate_at(const advise_probe *p, int sms);
/* One candidate's prediction (score by objective). */
void advise_predict(const advise_mix *m, const advise_candidate *c, const advise_constants *k,
                    advise_objective objective, advise_prediction *out);
/* Predicts every candidate and sorts them best first (those that do not fit last); returns n. */
int advise_rank(const advise_mix *m, const advise_candidate *cands, int n, const advise_constants *k,
                advise_objective objective, advise_prediction *out);
/* Why the first of the ranked predictions won, in a sentence naming the numbers a user can check
 * against the probes (each job's SM activity alone, its speed on its partition, the runner-up). */
void advise_explain(const advise_mix *m, const advise_prediction *ranked, int n, advise_objective objective,
                    char *out, size_t size);

/* A measured run for --fit: its candidate, each job's measured normalized progress and the run's
 * energy per trained sample over the window (summary.json's window_energy_per_sample_j; NaN unknown).
 * The energy model has no constant of its own (the jobs' solo power over their predicted samples/s):
 * the fit reports its residuals, which the progress constants move. */
typedef struct advise_measured {
    advise_mix mix;
    advise_candidate cand;
    double progress[ADVISE_MAX_JOBS];
    double energy_per_sample;
} advise_measured;
/* Fits the constants to the runs (least squares of the jobs' progress, a grid then its refinement);
 * the root mean square error before and after into rms_before / rms_after. 0, or -1 when no run
 * has a job whose progress is known. */
int advise_fit(const advise_measured *runs, int n, advise_constants *k, double *rms_before, double *rms_after);

#endif
