/* The advisor's model (run_suite advise): from each job's solo probes alone, what every mode this GPU
 * can run would give the mix, ranked by an objective. Pure (no GPU, no files): the form
 * (advise.c) measures the probes and reads the constants.
 *
 * A probe is one job alone over a short window: its samples/s on the whole GPU with its busy share
 * (the share of the time a kernel of it runs: NVML's utilisation), SM activity, DRAM activity, power
 * and memory, and its samples/s on partition sizes (an MPS share, which the
 * job's libraries see as the device's SM count): by default only the smallest size any candidate
 * gives the job (advise_plan.h: two probes a job), every size with --probes all.
 *
 * A job's speed on a partition of s SMs is read off the law
 *   1 / rate(s) = a + b / s
 * a step's time as a part that does not shrink with SMs (a: the host's share of a step, launches,
 * the serial kernels, whatever waits on something other than the SMs) and a part spread over them
 * (b / s: the kernels' waves). Two points fix it exactly; the whole GPU is one (the total SMs), the
 * smallest partition the other, so a size between them is interpolated by what costs time, not by a
 * line through the rates (which reads a job with a large fixed part as losing speed in proportion
 * to its SMs). a and b are clamped at 0: a < 0 would be a job faster than in proportion to its SMs,
 * b < 0 one faster on fewer SMs; both are a probe's noise, and a clamped law is the one-parameter law
 * through the larger of its two sizes (rate in proportion to s; the rate there, whatever s), so
 * that the whole GPU keeps its measured rate and rate never grows as s shrinks. Where more sizes
 * were probed, a size between two of them takes the law through those two neighbours, one outside
 * them the nearest pair's, one probed its measured rate.
 *
 * Each job's normalized progress p (its samples/s here over its samples/s alone on the whole GPU):
 *   naive (time slices)      p = (1 - switch_cost) / n
 *   mps, streams (no shares) p = 1 / (1 + packing x D / d^victim) / (1 + bandwidth x B)
 *                            x (1 - streams_cost for streams)
 *   a partition of s SMs     p = f / (1 + corun x F) x (1 - green_cost for green)
 *     (mps with shares, mig-emulate under a layout, green under a split)
 * where n is the jobs, d the job's SM activity alone, D the sum of the other jobs' SM activity alone,
 * B the sum of the other jobs' DRAM activity alone, f = rate(s) / rate(whole) the job's speed on its
 * partition alone and F the sum of the other jobs' f. Why these forms (measured on the fit mixes of
 * tools/advise_check.sh):
 * - Time slices give the GPU to one context at a time, and a training step keeps its kernels queued
 *   (a graph launched ahead), so a job holds its slices even where its kernels leave gaps: naive
 *   divides time by the jobs, whatever their busy share alone.
 * - Under MPS and streams the kernels run side by side: a job is slowed by how much of the SMs the
 *   others keep busy, and the more so the fewer it fills alone (small kernels wait behind the others'
 *   waves), hence the victim's exponent on its own activity.
 * - A partition keeps the SMs apart but not the rest (L2, DRAM, power, the host): each co-runner costs
 *   a job in proportion to how much of its own work it does there (f), and green partitions, which
 *   live in one process, pay green_cost beyond an MPS share of the same size.
 * STP = sum p, ANTT = mean 1/p, fairness = min p / max p. Energy per sample = the run's power over
 * the samples/s of all jobs together, where the run's power is the sum of what each job drew alone at
 * the samples/s it is predicted to run at (its probes' power against their samples/s, linear between
 * them): it has no constant. It fits when the jobs' solo peaks fit the GPU's memory together (a MIG
 * layout: each in its instance's). The seven constants (ADVISE_CONSTANT_TABLE) start at round values
 * fitted on nothing (their source says "defaults"); `advise --fit RUN_DIR...` fits them to measured
 * runs and writes the file the advisor then reads (its source names it and the runs). */
#ifndef SUITE_ADVISE_MODEL_H
#define SUITE_ADVISE_MODEL_H

#include <stddef.h>

#define ADVISE_MAX_JOBS 16
#define ADVISE_MAX_CANDIDATES 24
#define ADVISE_MAX_POINTS (ADVISE_MAX_CANDIDATES + 1) /* a job's probed sizes: one a candidate, the whole GPU */
#define ADVISE_JOB_TEXT 160

typedef struct advise_probe {
    char job[ADVISE_JOB_TEXT];       /* the job's spec, canonical (mix_job_format) */
    double rate;                     /* samples/s alone on the whole GPU */
    double busy;                     /* 0..1 alone, the time a kernel of it runs (utilisation); NaN unknown: 1 */
    double sm_active;                /* 0..1 alone (GPM's SM activity, else utilisation); NaN unknown: 1 */
    double dram_active;              /* 0..1 alone (GPM); NaN unknown: 0 */
    double power_w;                  /* mean power alone on the whole GPU; NaN unknown */
    double peak_bytes;               /* its memory alone; NaN unknown */
    int points;
    int sms[ADVISE_MAX_POINTS];      /* sizes probed (the whole GPU's SMs among them where known) */
    double part_rate[ADVISE_MAX_POINTS];
    double part_power[ADVISE_MAX_POINTS]; /* mean power at each size (W); NaN unknown */
} advise_probe;

/* The model's constants; X(name, default, lowest, highest): the fit keeps each in its range, and a
 * constants file with one outside it is refused. */
#define ADVISE_CONSTANT_TABLE(X) \
    X(switch_cost, 0.05, 0, 0.5)    /* naive: the time lost to switching contexts */ \
    X(packing, 1.0, 0.1, 4)         /* mps, streams: slowdown per unit of the others' SM activity */ \
    X(victim, 0.5, 0, 2)            /* mps, streams: the exponent of a job's own SM activity */ \
    X(bandwidth, 0.2, 0, 2)         /* mps, streams: slowdown per unit of the others' DRAM activity */ \
    X(streams_cost, 0.02, -0.3, 0.5) /* streams against mps (negative: streams is faster) */ \
    X(corun, 0.1, 0, 2)             /* a partition: slowdown per co-runner at its full solo speed */ \
    X(green_cost, 0, -0.3, 0.5)     /* green against an MPS share of the same SMs */
#define ADVISE_CONSTANT_FIELD_(name, initial, lo, hi) double name;
typedef struct advise_constants {
    ADVISE_CONSTANT_TABLE(ADVISE_CONSTANT_FIELD_)
    char source[512];                /* where they came from: a file and the runs it was fitted on, or the defaults */
} advise_constants;
#undef ADVISE_CONSTANT_FIELD_
void advise_constants_default(advise_constants *c);
/* The table's rows, for whoever reads, writes or fits the constants by name. */
typedef struct advise_constant_info {
    const char *name;
    size_t offset;                   /* in advise_constants */
    double initial, lo, hi;
} advise_constant_info;
#define ADVISE_CONSTANT_ONE_(name, initial, lo, hi) +1
enum { ADVISE_CONSTANT_COUNT = 0 ADVISE_CONSTANT_TABLE(ADVISE_CONSTANT_ONE_) };
#undef ADVISE_CONSTANT_ONE_
extern const advise_constant_info advise_constant_infos[ADVISE_CONSTANT_COUNT];
double *advise_constant_at(advise_constants *k, int i);

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
    int law[ADVISE_MAX_JOBS];        /* 1: the job's partition size was not probed, its rate read off the law */
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

/* A job's mean power (W) at a samples/s, from its probes' power against their samples/s: linear
 * between two of them, the line through the two lowest below them (not below 0), the highest's
 * power above them; one point: its power; none: NaN. */
double advise_power_at(const advise_probe *p, double samples_per_s);
/* The law 1 / rate(s) = a + b / s (seconds a sample; b in SM-seconds a sample). */
typedef struct advise_law {
    double a, b;
} advise_law;
/* The law through (s1, r1) and (s2, r2), s1 != s2, rates > 0, clamped as above (NaN a and b where a
 * point is not one). */
advise_law advise_law_through(int s1, double r1, int s2, double r2);
/* Its samples/s on s SMs. */
double advise_law_rate(advise_law law, int sms);
/* A job's samples/s on s SMs, from its probe's points: the measured rate at a probed size, else the
 * law through the neighbouring points (the nearest pair outside them; one point: in proportion to s
 * below it, its rate above; none: NaN). */
double advise_rate_at(const advise_probe *p, int sms);
/* 1 when s is one of the probe's sizes (its rate measured), 0 when read off the law. */
int advise_rate_probed(const advise_probe *p, int sms);
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
 * The energy model has no constant of its own (the jobs' solo power at their predicted samples/s):
 * the fit reports its residuals, which the progress constants move. */
typedef struct advise_measured {
    advise_mix mix;
    advise_candidate cand;
    double progress[ADVISE_MAX_JOBS];
    double energy_per_sample;
} advise_measured;
/* Fits the constants to the runs (least squares of the jobs' relative progress error, predicted over
 * measured less 1, by coordinate descent within each constant's range); the root mean square relative
 * error before and after into rms_before / rms_after. 0, or -1 when no run
 * has a job whose progress is known. */
int advise_fit(const advise_measured *runs, int n, advise_constants *k, double *rms_before, double *rms_after);

#endif
