#include "results/job_record.h"

#include <math.h>

double job_end_time(const job_record *job) {
    if (!isnan(job->t_done)) return job->t_done;
    if (job->epoch_count > 0 && !isnan(job->epochs[job->epoch_count - 1].t_end))
        return job->epochs[job->epoch_count - 1].t_end;
    return job->t_exit;
}
