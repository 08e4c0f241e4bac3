#include "runner/train/train_host.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/knob_value.h"
#include "kernels/check.h"

void *train_pinned_alloc(size_t bytes, void *user) {
    void *p = NULL;
    CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
}

void train_pinned_free(void *ptr, void *user) { CHECK_CUDA(cudaFreeHost(ptr)); }

int train_loader_workers(const train_options *o) {
    if (o->workers > 0) return o->workers;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long long jobs = 1; /* checked when the program started (knob_value_check_all) */
    char err[256];
    if (knob_value_whole(KNOB_CONCURRENT_JOBS, &jobs, err, sizeof err) <= 0) jobs = 1;
    long workers = (cpus < 1 ? 1 : cpus) / (jobs < 1 ? 1 : jobs);
    return workers < 1 ? 1 : workers > 16 ? 16 : (int)workers;
}
