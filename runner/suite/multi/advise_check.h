/* The advisor's check (run_suite advise --check): each ranked candidate measured under --repeat
 * ADVISE_CHECK_REPEATS against one serial run of the mix, then predicted against measured.
 *
 * Per candidate: each job's normalized progress (the median of its repeats), STP and ANTT, and the
 * prediction's error on each, relative to the measured median ((predicted - measured) / measured).
 * Over the candidates that were measured: the Spearman rank correlation of the predicted against the
 * measured objective (ties share their mean rank), and the regret: how far the recommended
 * candidate's measured median falls behind the best measured one on the objective, relative to the
 * best's; a tie when the two candidates' ranges across the repeats overlap (spread_rank says
 * neither lies wholly above the other), since a gap inside the repeats' spread is no gap at all.
 * Energy per trained sample over the window (summary.json's window_energy_per_sample_j, a metric of the
 * repeats) is compared whatever the objective: its error per candidate, and the energy objective's
 * Spearman and regret over the same rows, its choice being the row predicted lowest (what --objective
 * energy recommends among the rows), so that one check scores both. Pure apart from reading
 * repeats.json (and a repeat's summary.json for why energy is missing) and writing check.json/check.csv. */
#ifndef SUITE_ADVISE_CHECK_H
#define SUITE_ADVISE_CHECK_H

#include <stddef.h>
#include <stdio.h>

#include "base/spread.h"
#include "runner/suite/multi/advise_model.h"

#define ADVISE_CHECK_REPEATS 3

typedef struct advise_check_row {
    const advise_prediction *pred;   /* the candidate's prediction (its label, mode, option) */
    int measured;                    /* 1: its repeats were read */
    double progress[ADVISE_MAX_JOBS]; /* each job's measured median */
    spread stp, antt, fairness;      /* across the repeats */
    spread energy;                   /* energy per trained sample over the window (J), across the repeats */
    char energy_note[256];           /* why no repeat measured it (the first repeat's summary.json); "" */
    /* filled by advise_check_compare: */
    double progress_error[ADVISE_MAX_JOBS], stp_error, antt_error, fairness_error, energy_error;
    double measured_score;           /* the objective's measured median, higher better (NaN: none) */
} advise_check_row;

typedef struct advise_check_summary {
    int measured;                    /* candidates measured */
    double spearman;                 /* NaN under two candidates */
    int recommended_measured;        /* the first row (the recommendation) was measured */
    int best;                        /* the row measured best on the objective; -1 none */
    double regret;                   /* (best - recommended) / |best| on the objective's value; 0 when best */
    int tie;                         /* the recommendation's range overlaps the best's */
    double median_abs_stp_error, median_abs_antt_error, median_abs_progress_error, median_abs_energy_error;
    /* the energy objective over the same rows, whatever the check's: its choice (the row predicted
     * lowest; -1 none), the best measured (-1 none), Spearman, regret and tie as above */
    int energy_recommended, energy_best, energy_tie;
    double energy_spearman, energy_regret;
} advise_check_summary;

/* Reads a check run's repeats.json (one mode) into row (jobs: the mix's count). 0, or -1 with a
 * message naming the file and what was missing. */
int advise_check_read(const char *run_dir, int jobs, advise_check_row *row, char *err, size_t err_size);

/* The errors of each row and the summary over rows[0..n), rows in the ranking's order (the first is the
 * recommendation). */
void advise_check_compare(advise_check_row *rows, int n, int jobs, advise_objective objective,
                          advise_check_summary *out);

/* The Spearman rank correlation of x and y over the pairs where both are finite (NaN under two). */
double advise_spearman(const double *x, const double *y, int n);

/* The table on out; check.json and check.csv in dir. labels: the jobs'; probes: the probe setting
 * (advise_plan.h's name), recorded in check.json beside each candidate's sizes read off the law
 * (its prediction's law), so that an error can be traced to the law. 0, or -1 with a message. */
void advise_check_print(FILE *out, const advise_check_row *rows, int n, int jobs, const char *const *labels,
                        const advise_check_summary *s, advise_objective objective);
int advise_check_write(const char *dir, const advise_check_row *rows, int n, int jobs, const char *const *labels,
                       const advise_check_summary *s, advise_objective objective, const char *probes, char *err,
                       size_t err_size);

#endif
