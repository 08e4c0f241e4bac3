/* The two clocks every program reads: the wall clock, which the runner's window lines and the
 * jobs' events share across processes of one host (unix seconds), and the monotonic clock for
 * deadlines and durations within one process. */
#ifndef SUITE_BASE_CLOCK_H
#define SUITE_BASE_CLOCK_H

double clock_unix(void);       /* unix seconds (CLOCK_REALTIME) */
double clock_monotonic(void);  /* seconds since an arbitrary start (CLOCK_MONOTONIC) */

#endif
