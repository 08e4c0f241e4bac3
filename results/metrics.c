/* Normalized metrics (see metrics.h). */
#include "results/metrics.h"

#include <math.h>
#include <string.h>

static int positive(double v) { return isfinite(v) && v > 0; }

void metrics_input_init(metrics_input *in) {
    memset(in, 0, sizeof *in);
    in->makespan_s = in->energy_j = in->serial_makespan_s = in->serial_energy_j = NAN;
    for (int i = 0; i < MIX_MAX_JOBS; i++) {
        metrics_job_input *j = &in->jobs[i];
        j->rate = j->solo_rate = j->partition_rate = j->samples = j->turnaround_s = j->alone_s = NAN;
    }
}

int metrics_same_workload(const job_spec *specs, int count) {
    for (int i = 1; i < count; i++) {
        const job_spec *a = &specs[0], *b = &specs[i];
        if (strcmp(a->model, b->model) || strcmp(a->data, b->data) || a->image_size != b->image_size ||
            a->classes != b->classes || a->batch != b->batch || a->max_rows != b->max_rows ||
            a->precision_given != b->precision_given || (a->precision_given && a->precision != b->precision) ||
            a->decode_given != b->decode_given || (a->decode_given && a->decode != b->decode))
            return 0;
    }
    return count > 0;
}

void metrics_compute(const metrics_input *in, run_metrics *out) {
    memset(out, 0, sizeof *out);
    int n = in->count < 0 ? 0 : in->count > MIX_MAX_JOBS ? MIX_MAX_JOBS : in->count;
    out->count = n;
    double stp = 0, ntt_sum = 0, np_min = INFINITY, np_max = 0, work = 0, rate_sum = 0;
    double ir_sum = 0, ir_min = INFINITY;
    int np_all = n > 0, ntt_all = n > 0, work_all = n > 0, rate_all = n > 0, ir_count = 0;
    for (int i = 0; i < n; i++) {
        const metrics_job_input *j = &in->jobs[i];
        job_metrics *m = &out->jobs[i];
        /* alone, a sequential run's job progresses at its own solo speed by construction */
        m->normalized = in->sequential ? (positive(j->rate) ? 1.0 : NAN)
                        : positive(j->rate) && positive(j->solo_rate) ? j->rate / j->solo_rate : NAN;
        m->slowdown = positive(m->normalized) ? 1.0 / m->normalized : NAN;
        m->turnaround = positive(j->turnaround_s) && positive(j->alone_s) ? j->turnaround_s / j->alone_s : NAN;
        if (in->window) m->turnaround = m->slowdown; /* over the window: its mean is the mean slowdown */
        m->interference = positive(j->rate) && positive(j->partition_rate) ? j->rate / j->partition_rate : NAN;
        m->energy_per_sample = NAN;
        if (positive(m->normalized)) {
            stp += m->normalized;
            if (m->normalized < np_min) np_min = m->normalized;
            if (m->normalized > np_max) np_max = m->normalized;
        } else {
            np_all = 0;
        }
        if (positive(m->turnaround)) ntt_sum += m->turnaround;
        else ntt_all = 0;
        if (positive(j->samples) && positive(j->solo_rate)) work += j->samples / j->solo_rate;
        else work_all = 0;
        if (positive(j->rate)) rate_sum += j->rate;
        else rate_all = 0;
        if (!isnan(m->interference)) {
            ir_sum += m->interference, ir_count++;
            if (m->interference < ir_min) ir_min = m->interference;
        }
    }
    out->stp = np_all ? (in->sequential ? 1.0 : stp) : NAN;
    out->fairness = np_all ? np_min / np_max : NAN;
    out->antt = ntt_all ? ntt_sum / n : NAN;
    out->speedup = positive(in->serial_makespan_s) && positive(in->makespan_s) && !in->window
                       ? in->serial_makespan_s / in->makespan_s : NAN;
    out->energy_vs_serial = positive(in->serial_energy_j) && positive(in->energy_j) && !in->window
                                ? in->energy_j / in->serial_energy_j : NAN;
    out->samples_per_s_sum = in->same_workload && rate_all ? rate_sum : NAN;
    out->interference_min = ir_count ? ir_min : NAN;
    out->interference_mean = ir_count ? ir_sum / ir_count : NAN;
    /* Energy is measured for the whole GPU; each job is charged by the solo seconds its
     * samples are worth, so a job that got more of the GPU pays more. */
    for (int i = 0; work_all && positive(in->energy_j) && i < n; i++) {
        const metrics_job_input *j = &in->jobs[i];
        double share = j->samples / j->solo_rate / work;
        out->jobs[i].energy_per_sample = in->energy_j * share / j->samples;
    }
}
