#include "runner/train/train_host.h"

#include <stdlib.h>
#include <unistd.h>

#include "kernels/check.h"
#include "kernels/knobs.h"

void *train_pinned_alloc(size_t bytes, void *user) {
    void *p = NULL;
    CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
}

void train_pinned_free(void *ptr, void *user) { CHECK_CUDA(cudaFreeHost(ptr)); }

int train_loader_workers_for(int workers, long cpus, const char *concurrent_jobs) {
    if (workers > 0) return workers;
    long jobs = concurrent_jobs ? strtol(concurrent_jobs, NULL, 10) : 1;
    long share = (cpus < 1 ? 1 : cpus) / (jobs < 1 ? 1 : jobs);
    return share < 1 ? 1 : share > 16 ? 16 : (int)share;
}

int train_loader_workers(const train_options *o) {
    return train_loader_workers_for(o->workers, sysconf(_SC_NPROCESSORS_ONLN), knob_text(KNOB_CONCURRENT_JOBS));
}
