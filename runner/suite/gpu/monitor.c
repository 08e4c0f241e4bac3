/* GPU monitor (see monitor.h): the sampling thread, timeline.csv, the energy/memory series kept
 * for the summary, and the NVML data source. */
#define _GNU_SOURCE
#include "runner/suite/gpu/monitor.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "kernels/knobs.h"
#include "results/results.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/gpu/nvml.h"

/* CPU seconds the calling thread has used: what the sampler costs */
static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* --- CSV ----------------------------------------------------------------------------------- */

static const char *const columns[] = {
    "util_gpu_pct", "util_mem_pct", "sm_active_pct", "sm_occupancy_pct", "dram_active_pct",
    "mem_used_bytes", "mem_total_bytes", "power_w", "energy_j", "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s", "sm_clock_mhz"};

void monitor_csv_header(FILE *f, int job_count) {
    fprintf(f, "t,unit");
    for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++) fprintf(f, ",%s", columns[i]);
    for (int j = 0; j < job_count; j++) fprintf(f, ",job%d_mem_bytes", j);
    fprintf(f, ",markers\n");
}

static void cell(FILE *f, double v, int decimals) {
    if (isnan(v)) fputc(',', f);
    else fprintf(f, ",%.*f", decimals, v);
}

void monitor_csv_row(FILE *f, double t, const char *unit, const monitor_sample *s, int job_count,
                     const char *markers) {
    fprintf(f, "%.3f,%s", t, unit);
    const double values[] = {s->util_gpu, s->util_mem, s->sm_active, s->sm_occupancy,
                             s->dram_active, s->mem_used, s->mem_total, s->power_w, s->energy_j,
                             s->pcie_rx, s->pcie_tx, s->sm_clock_mhz};
    const int decimals[] = {1, 1, 2, 2, 2, 0, 0, 3, 3, 0, 0, 0};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) cell(f, values[i], decimals[i]);
    for (int j = 0; j < job_count; j++) cell(f, s->job_mem[j], 0);
    fprintf(f, ",%s", markers ? markers : ""); /* markers hold no commas or quotes */
}

static void sample_unknown(monitor_sample *s) {
    double *v = (double *)s;
    for (size_t i = 0; i < sizeof *s / sizeof(double); i++) v[i] = NAN;
}

/* --- sampling thread ----------------------------------------------------------------------- */

static void add_point(monitor *m, double t, double energy, double mem) {
    if (m->point_count == m->point_cap) {
        int cap = m->point_cap ? m->point_cap * 2 : 1024;
        monitor_point *p = realloc(m->points, (size_t)cap * sizeof *p);
        if (!p) return; /* the series stops growing; the timeline still has every row */
        m->points = p;
        m->point_cap = cap;
    }
    m->points[m->point_count++] = (monitor_point){t, energy, mem};
}

static void tick(monitor *m) {
    int pids[MIX_MAX_JOBS];
    char markers[sizeof m->markers];
    pthread_mutex_lock(&m->lock);
    memcpy(pids, m->pids, sizeof pids);
    memcpy(markers, m->markers, sizeof markers);
    m->markers[0] = 0;
    pthread_mutex_unlock(&m->lock);

    double start = thread_cpu_seconds();
    double t = clock_unix(), energy = NAN, mem = NAN;
    for (int u = 0; u < m->source.unit_count; u++) {
        monitor_sample s;
        sample_unknown(&s);
        if (m->source.read(m->source.self, u, pids, m->job_count, &s) != 0) sample_unknown(&s);
        if (!isnan(s.energy_j)) energy = isnan(energy) ? s.energy_j : energy + s.energy_j;
        if (u == 0) mem = s.mem_used;
        monitor_csv_row(m->csv, t, m->source.unit_names[u], &s, m->job_count, u == 0 ? markers : "");
        fputc('\n', m->csv);
    }
    fflush(m->csv); /* a run that dies midway still leaves the rows it sampled */
    m->busy_s += thread_cpu_seconds() - start;
    m->ticks++;
    add_point(m, t, energy, mem);
}

static void *sampler(void *arg) {
    monitor *m = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        pthread_mutex_unlock(&m->lock);
        tick(m);
        pthread_mutex_lock(&m->lock);
        next.tv_nsec += (long)m->sample_ms * 1000000L;
        next.tv_sec += next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &next) != ETIMEDOUT) {}
    }
    pthread_mutex_unlock(&m->lock);
    tick(m); /* the last markers ("end") get their row */
    return NULL;
}

int monitor_start(monitor *m, const monitor_source *src, const char *path, int job_count,
                  int sample_ms, char *err, size_t err_size) {
    memset(m, 0, sizeof *m);
    m->source = *src;
    m->job_count = job_count;
    m->sample_ms = sample_ms > 0 ? sample_ms : 100;
    snprintf(m->path, sizeof m->path, "%s", path);
    snprintf(m->partial_path, sizeof m->partial_path, "%s.partial", path);
    m->csv = fopen(m->partial_path, "w");
    if (!m->csv) {
        snprintf(err, err_size, "cannot write %s: %s", m->partial_path, strerror(errno));
        if (m->source.close) m->source.close(m->source.self);
        m->source.close = NULL;
        return -1;
    }
    monitor_csv_header(m->csv, job_count);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&m->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&m->lock, NULL);
    m->started_mono = clock_monotonic();
    if (pthread_create(&m->thread, NULL, sampler, m) != 0) {
        snprintf(err, err_size, "cannot start the sampling thread");
        fclose(m->csv);
        m->csv = NULL;
        remove(m->partial_path);
        return -1;
    }
    m->running = 1;
    return 0;
}

void monitor_set_pid(monitor *m, int job, int pid) {
    if (!m->running || job < 0 || job >= MIX_MAX_JOBS) return;
    pthread_mutex_lock(&m->lock);
    m->pids[job] = pid;
    pthread_mutex_unlock(&m->lock);
}

void monitor_mark(monitor *m, int job, const char *phase, int epoch) {
    if (!m->running) return;
    char text[64];
    if (epoch > 0) snprintf(text, sizeof text, "job%d:%s%d", job, phase, epoch);
    else snprintf(text, sizeof text, "job%d:%s", job, phase);
    pthread_mutex_lock(&m->lock);
    size_t used = strlen(m->markers);
    if (used + strlen(text) + 2 < sizeof m->markers)
        snprintf(m->markers + used, sizeof m->markers - used, "%s%s", used ? " " : "", text);
    pthread_mutex_unlock(&m->lock);
}

void monitor_job_phase(monitor *m, int job, int pid, const char *phase, int epoch) {
    if (strcmp(phase, "spawn") == 0) {
        monitor_set_pid(m, job, pid);
        return;
    }
    monitor_mark(m, job, phase, strcmp(phase, "epoch") == 0 ? epoch : 0);
    if (strcmp(phase, "end") == 0) monitor_set_pid(m, job, 0);
}

void monitor_stop(monitor *m) {
    if (!m->running) return;
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    m->running = 0;
    m->stopped_mono = clock_monotonic();
    char err[PATH_MAX + 512];
    if (results_commit_stream(m->csv, m->partial_path, m->path, err, sizeof err) != 0)
        fprintf(stderr, "error: the GPU timeline: %s\n", err);
    m->csv = NULL;
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    if (m->source.close) m->source.close(m->source.self);
    m->source.close = NULL;
}

void monitor_free(monitor *m) {
    monitor_stop(m);
    free(m->points);
    m->points = NULL;
    m->point_count = m->point_cap = 0;
}

/* --- queries ------------------------------------------------------------------------------- */

/* Counter value at time t, linear between the samples around it; NaN outside them. */
static double energy_at(const monitor *m, double t) {
    const monitor_point *p = m->points;
    int first = -1, last = -1;
    for (int i = 0; i < m->point_count; i++) {
        if (isnan(p[i].energy_j)) continue;
        if (p[i].t <= t) first = i;
        if (p[i].t >= t && last < 0) last = i;
    }
    /* Half a tick of slack each side: the window's edges fall between samples. */
    double slack = m->sample_ms * 1e-3 * 0.5 + 0.05;
    if (first < 0 && last >= 0 && p[last].t - t <= slack) return p[last].energy_j;
    if (last < 0 && first >= 0 && t - p[first].t <= slack) return p[first].energy_j;
    if (first < 0 || last < 0) return NAN;
    if (first == last || p[last].t == p[first].t) return p[first].energy_j;
    double w = (t - p[first].t) / (p[last].t - p[first].t);
    return p[first].energy_j + w * (p[last].energy_j - p[first].energy_j);
}

int monitor_energy_between(const monitor *m, double t0, double t1, double *joules) {
    double e0 = energy_at(m, t0), e1 = energy_at(m, t1);
    if (isnan(e0) || isnan(e1) || !(t1 >= t0)) return -1;
    *joules = e1 - e0;
    return 0;
}

int monitor_energy_windows(const monitor *m, const double *t0, const double *t1, int count,
                           double *joules) {
    double total = 0, e;
    for (int i = 0; i < count; i++) {
        if (isnan(t0[i]) || isnan(t1[i])) continue;
        if (monitor_energy_between(m, t0[i], t1[i], &e) != 0) return -1;
        total += e;
    }
    *joules = total;
    return 0;
}

double monitor_peak_memory(const monitor *m, double t0, double t1) {
    double peak = NAN;
    for (int i = 0; i < m->point_count; i++) {
        const monitor_point *p = &m->points[i];
        if (p->t < t0 || p->t > t1 || isnan(p->mem_used)) continue;
        if (isnan(peak) || p->mem_used > peak) peak = p->mem_used;
    }
    return peak;
}

void monitor_cost(const monitor *m, long *ticks, double *mean_ms, double *busy_fraction) {
    double wall = (m->running ? clock_monotonic() : m->stopped_mono) - m->started_mono;
    *ticks = m->ticks;
    *mean_ms = m->ticks ? m->busy_s * 1e3 / (double)m->ticks : NAN;
    *busy_fraction = wall > 0 ? m->busy_s / wall : NAN;
}

/* --- the GPU's identity ----------------------------------------------------------------------- */

void monitor_probe_gpu(int gpu_index, monitor_gpu *g) {
    memset(g, 0, sizeof *g);
    g->memory_bytes = NAN;
    snprintf(g->visible, sizeof g->visible, "%d", gpu_index);
    nvml *nv = nvml_open(NULL, g->why, sizeof g->why);
    if (nv) nv->quiet = 1; /* what a GPU cannot tell is left out, not reported */
    nvmlDevice_t dev;
    if (nv && NVML_CALL(nv, nvmlDeviceGetHandleByIndex_v2, ((unsigned)gpu_index, &dev)) == NVML_SUCCESS) {
        g->nvml_ok = 1;
        nvmlMemory_t mem;
        NVML_CALL(nv, nvmlDeviceGetName, (dev, g->name, sizeof g->name));
        NVML_CALL(nv, nvmlSystemGetDriverVersion, (g->driver, sizeof g->driver));
        if (NVML_CALL(nv, nvmlDeviceGetUUID, (dev, g->uuid, sizeof g->uuid)) == NVML_SUCCESS)
            snprintf(g->visible, sizeof g->visible, "%s", g->uuid);
        if (NVML_CALL(nv, nvmlDeviceGetMemoryInfo, (dev, &mem)) == NVML_SUCCESS) {
            g->memory_bytes = (double)mem.total;
            g->memory_source = "NVML";
        }
        /* Not in nvml.h's table: looked up here, optional. */
        nvmlReturn_t (*cuda_version)(int *) = NULL;
        void *symbol = dlsym(nv->library, "nvmlSystemGetCudaDriverVersion_v2");
        memcpy(&cuda_version, &symbol, sizeof symbol);
        if (cuda_version && cuda_version(&g->cuda_version) != NVML_SUCCESS) g->cuda_version = 0;
    } else if (nv) {
        snprintf(g->why, sizeof g->why, "NVML has no GPU %d (%.400s)", gpu_index, nv->last_error);
    }
    nvml_close(nv);
    const char *fake = knob_text(KNOB_GPU_MEMORY);
    if (fake && *fake && mps_parse_bytes(fake) > 0) {
        g->memory_bytes = (double)mps_parse_bytes(fake);
        g->memory_source = knob_name(KNOB_GPU_MEMORY);
    }
}

/* --- NVML source --------------------------------------------------------------------------- */

#define GPM_RING 4
#define GPM_MIN_SPAN_S 0.1

typedef struct nvml_source {
    nvml *nv;
    nvmlDevice_t device;
    nvmlDevice_t unit_device[MONITOR_MAX_UNITS]; /* unit 0: the GPU; then MIG device handles */
    unsigned gi_id[MONITOR_MAX_UNITS];
    int gpm;
    /* GPM spans must exceed 100 ms (the counters' refresh): a ring of the last samples, so a
     * tick compares with the newest one old enough even when the period is 100 ms or less. */
    nvmlGpmSample_t gpm_ring[MONITOR_MAX_UNITS][GPM_RING];
    double gpm_t[MONITOR_MAX_UNITS][GPM_RING];
    int gpm_next[MONITOR_MAX_UNITS];
    nvmlProcessInfo_t procs[256];
} nvml_source;

/* Direct calls: an unsupported reading is an empty cell, never a message every 100 ms. */
#define NV(src, fn, args) ((src)->nv->fn ? (src)->nv->fn args : NVML_ERROR_FUNCTION_NOT_FOUND)

static void read_gpm(nvml_source *src, int unit, monitor_sample *s) {
    int slot = src->gpm_next[unit];
    nvmlGpmSample_t now = src->gpm_ring[unit][slot];
    nvmlReturn_t rc = unit == 0 ? NV(src, nvmlGpmSampleGet, (src->device, now))
                                : NV(src, nvmlGpmMigSampleGet, (src->device, src->gi_id[unit], now));
    if (rc != NVML_SUCCESS) return;
    double t = clock_monotonic();
    src->gpm_t[unit][slot] = t;
    src->gpm_next[unit] = (slot + 1) % GPM_RING;
    int base = -1; /* the newest earlier sample at least GPM_MIN_SPAN_S old */
    for (int k = 1; k < GPM_RING && base < 0; k++) {
        int i = (slot - k + GPM_RING) % GPM_RING;
        if (src->gpm_t[unit][i] > 0 && t - src->gpm_t[unit][i] >= GPM_MIN_SPAN_S) base = i;
    }
    if (base < 0) return;
    nvmlGpmMetricsGet_t get;
    memset(&get, 0, sizeof get);
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.sample1 = src->gpm_ring[unit][base];
    get.sample2 = now;
    const unsigned ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                            NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                            NVML_GPM_METRIC_PCIE_TX_PER_SEC};
    get.numMetrics = sizeof ids / sizeof ids[0];
    for (unsigned i = 0; i < get.numMetrics; i++) get.metrics[i].metricId = ids[i];
    if (NV(src, nvmlGpmMetricsGet, (&get)) != NVML_SUCCESS) return;
    double *out[] = {&s->sm_active, &s->sm_occupancy, &s->dram_active, &s->pcie_rx, &s->pcie_tx};
    const double scale[] = {1, 1, 1, 1048576.0, 1048576.0}; /* PCIe: MiB/s */
    for (unsigned i = 0; i < get.numMetrics; i++)
        if (get.metrics[i].nvmlReturn == NVML_SUCCESS) *out[i] = get.metrics[i].value * scale[i];
}

static int nvml_read(void *self, int unit, const int *pids, int job_count, monitor_sample *s) {
    nvml_source *src = self;
    nvmlDevice_t dev = src->unit_device[unit];
    nvmlMemory_t mem;
    if (NV(src, nvmlDeviceGetMemoryInfo, (dev, &mem)) == NVML_SUCCESS) {
        s->mem_used = (double)mem.used;
        s->mem_total = (double)mem.total;
    }
    unsigned count = sizeof src->procs / sizeof src->procs[0];
    if (NV(src, nvmlDeviceGetComputeRunningProcesses_v3, (dev, &count, src->procs)) == NVML_SUCCESS)
        for (unsigned p = 0; p < count; p++)
            for (int j = 0; j < job_count; j++)
                if (pids[j] > 0 && (unsigned)pids[j] == src->procs[p].pid)
                    s->job_mem[j] = (double)src->procs[p].usedGpuMemory;
    if (src->gpm) read_gpm(src, unit, s);
    if (unit > 0) return 0; /* the rest is the whole GPU's */
    nvmlUtilization_t u;
    if (NV(src, nvmlDeviceGetUtilizationRates, (dev, &u)) == NVML_SUCCESS) {
        s->util_gpu = u.gpu;
        s->util_mem = u.memory;
    }
    unsigned mw, mhz;
    unsigned long long mj;
    if (NV(src, nvmlDeviceGetPowerUsage, (dev, &mw)) == NVML_SUCCESS) s->power_w = mw / 1000.0;
    if (NV(src, nvmlDeviceGetTotalEnergyConsumption, (dev, &mj)) == NVML_SUCCESS) s->energy_j = (double)mj / 1000.0;
    if (NV(src, nvmlDeviceGetClockInfo, (dev, NVML_CLOCK_SM, &mhz)) == NVML_SUCCESS) s->sm_clock_mhz = mhz;
    if (!src->gpm) { /* each call waits 20 ms in the driver (no CPU): only without GPM */
        unsigned kb;
        if (NV(src, nvmlDeviceGetPcieThroughput, (dev, NVML_PCIE_UTIL_RX_BYTES, &kb)) == NVML_SUCCESS) s->pcie_rx = kb * 1024.0;
        if (NV(src, nvmlDeviceGetPcieThroughput, (dev, NVML_PCIE_UTIL_TX_BYTES, &kb)) == NVML_SUCCESS) s->pcie_tx = kb * 1024.0;
    }
    return 0;
}

static void nvml_source_close(void *self) {
    nvml_source *src = self;
    for (int u = 0; u < MONITOR_MAX_UNITS; u++)
        for (int k = 0; k < GPM_RING; k++)
            if (src->gpm_ring[u][k]) NV(src, nvmlGpmSampleFree, (src->gpm_ring[u][k]));
    nvml_close(src->nv);
    free(src);
}

int monitor_nvml_source(monitor_source *out, int gpu_index, const unsigned *gi_ids, int gi_count,
                        char *why, size_t why_size) {
    memset(out, 0, sizeof *out);
    nvml_source *src = calloc(1, sizeof *src);
    if (!src) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    src->nv = nvml_open(NULL, why, why_size);
    if (!src->nv) {
        free(src);
        return -1;
    }
    src->nv->quiet = 1;
    if (NV(src, nvmlDeviceGetHandleByIndex_v2, ((unsigned)gpu_index, &src->device)) != NVML_SUCCESS) {
        snprintf(why, why_size, "NVML has no GPU %d", gpu_index);
        nvml_source_close(src);
        return -1;
    }
    int units = 1;
    src->unit_device[0] = src->device;
    snprintf(out->unit_names[0], sizeof out->unit_names[0], "gpu%d", gpu_index);
    unsigned max_mig = 0;
    NV(src, nvmlDeviceGetMaxMigDeviceCount, (src->device, &max_mig));
    for (int g = 0; g < gi_count && units < MONITOR_MAX_UNITS; g++) {
        for (unsigned i = 0; i < max_mig; i++) {
            nvmlDevice_t mig;
            unsigned id;
            if (NV(src, nvmlDeviceGetMigDeviceHandleByIndex, (src->device, i, &mig)) != NVML_SUCCESS ||
                NV(src, nvmlDeviceGetGpuInstanceId, (mig, &id)) != NVML_SUCCESS || id != gi_ids[g])
                continue;
            src->unit_device[units] = mig;
            src->gi_id[units] = id;
            snprintf(out->unit_names[units], sizeof out->unit_names[0], "gpu%d-gi%u", gpu_index, id);
            units++;
            break;
        }
    }
    nvmlGpmSupport_t support = {.version = NVML_GPM_SUPPORT_VERSION};
    src->gpm = NV(src, nvmlGpmQueryDeviceSupport, (src->device, &support)) == NVML_SUCCESS &&
               support.isSupportedDevice;
    for (int u = 0; src->gpm && u < units; u++)
        for (int k = 0; k < GPM_RING; k++)
            if (NV(src, nvmlGpmSampleAlloc, (&src->gpm_ring[u][k])) != NVML_SUCCESS) src->gpm = 0;
    out->self = src;
    out->unit_count = units;
    out->read = nvml_read;
    out->close = nvml_source_close;
    return 0;
}
