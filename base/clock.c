#include "base/clock.h"

#include <time.h>

static double read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double clock_unix(void) { return read_clock(CLOCK_REALTIME); }
double clock_monotonic(void) { return read_clock(CLOCK_MONOTONIC); }
