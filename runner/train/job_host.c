/* job_host: several training jobs in one process, one host thread and one job context each (own
 * stream, cuDNN/cuBLASLt handles, arena, CUDA graph), on the whole device (run_suite --mode
 * streams) or each in a green context holding its own SMs (--green, run_suite --mode green).
 *
 *   job_host [--device N] [--green SMS,SMS,...] --job TRAIN-ARGS... [--job TRAIN-ARGS...]
 *   job_host [--device N] --probe        the device's SMs and its green-context group size (JSON)
 *
 * Each --job takes train's own options up to the next --job. The protocol is train's (JSON lines
 * on stdout) with "job": <index> in every event, one start barrier for all ("go" once on stdin
 * when the jobs ask --wait-go; with --window-protocol the runner's later lines, "window T0 T1" and
 * "stop", are read by the host and handed to every job), an "exit" event when a job's thread ends (its exit code, its fault)
 * and, once all have ended, a "collateral" event for each job that failed after another job's
 * CUDA fault poisoned the context they share, naming that job ("origin"). A failing check unwinds
 * only its job (a trap per thread, kernels/check.h).
 * Exit status: 0 when every job ended 0, 2 for bad input (before any GPU work), else 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kernels/check.h"
#include "base/clock.h"
#include "base/knob_value.h"
#include "base/line_reader.h"
#include "base/list.h"
#include "base/number.h"
#include "models/core/context.h"
#include "runner/train/job.h"
#include "runner/train/step_window.h"
#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

#define HOST_MAX_JOBS CONTEXT_MAX_PARTITIONS
#define HOST_MAX_COMMANDS (STEP_WINDOW_MAX + 8)

typedef struct host host;

typedef struct host_job {
    host *h;
    int index;
    train_options opt;
    train_events ev;
    context_place place;
    pthread_t thread;
    int code;                 /* the job's exit code */
    int commands_read;        /* the host's command lines this job has taken */
    int ended;                /* its thread is done */
    int bad;                  /* its options were refused */
    int faulted;              /* a failing check unwound it */
    int poisoned;             /* after its fault, the context reported an error too (sticky) */
    int injected;             /* its fault was the one it was asked to inject (--inject-fault) */
    double fault_t;
    char fault[1024];
} host_job;

struct host {
    pthread_mutex_t lock;     /* stdout and the barrier */
    pthread_cond_t changed;
    int go;                   /* 0 waiting, 1 go, -1 never */
    /* the runner's lines after "go" (the window protocol), for every job to take in turn */
    char commands[HOST_MAX_COMMANDS][128];
    int command_count, commands_ended;
    int count;
    host_job jobs[HOST_MAX_JOBS];
};

static void write_line(void *user, const char *line) {
    host_job *hj = user;
    pthread_mutex_lock(&hj->h->lock);
    /* every event is a non-empty object: the job's index goes in front of its first key */
    printf("{\"job\":%d,%s\n", hj->index, line + 1);
    fflush(stdout);
    pthread_mutex_unlock(&hj->h->lock);
}

static int go_barrier(void *user) {
    host *h = ((host_job *)user)->h;
    pthread_mutex_lock(&h->lock);
    while (h->go == 0) pthread_cond_wait(&h->changed, &h->lock);
    int go = h->go;
    pthread_mutex_unlock(&h->lock);
    return go > 0 ? 0 : -1;
}

static int next_command(void *user, char *line, size_t size) {
    host_job *hj = user;
    host *h = hj->h;
    pthread_mutex_lock(&h->lock);
    int got = hj->commands_read < h->command_count ? 1 : h->commands_ended ? -1 : 0;
    if (got == 1) snprintf(line, size, "%s", h->commands[hj->commands_read++]);
    pthread_mutex_unlock(&h->lock);
    return got;
}

/* After "go": the runner's lines go to every job until stdin ends or every job has ended. */
static void read_commands(host *h, line_reader *in) {
    for (;;) {
        int running = 0;
        pthread_mutex_lock(&h->lock);
        for (int i = 0; i < h->count; i++) running += !h->jobs[i].ended;
        pthread_mutex_unlock(&h->lock);
        char line[128];
        int got = running ? line_reader_next(in, 100, line, sizeof line) : -1;
        pthread_mutex_lock(&h->lock);
        if (got == 1 && h->command_count < HOST_MAX_COMMANDS) snprintf(h->commands[h->command_count++], sizeof h->commands[0], "%s", line);
        if (got < 0) h->commands_ended = 1;
        pthread_mutex_unlock(&h->lock);
        if (got < 0) return;
    }
}

static void mark_ended(host_job *hj) {
    pthread_mutex_lock(&hj->h->lock);
    hj->ended = 1;
    pthread_mutex_unlock(&hj->h->lock);
}

static void emit_exit(host_job *hj) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "exit");
    cJSON_AddNumberToObject(e, "code", hj->code);
    if (hj->faulted) cJSON_AddStringToObject(e, "fault", hj->fault);
    cJSON_AddBoolToObject(e, "poisoned", hj->poisoned);
    cJSON_AddNumberToObject(e, "t", clock_unix());
    train_emit(&hj->ev, e);
}

static void *job_thread(void *arg) {
    host_job *hj = arg;
    suite_check_trap trap;
    if (setjmp(trap.unwind) == 0) {
        suite_check_set_trap(&trap);
        hj->code = train_job_run(&hj->opt, &hj->ev, &hj->place);
        suite_check_set_trap(NULL);
        emit_exit(hj);
        mark_ended(hj);
        return NULL;
    }
    /* A check failed: this job is over. A sticky error (a kernel fault) is reported again by every
     * later call in the same context, including a plain synchronisation. */
    hj->code = trap.exit_code;
    hj->faulted = 1;
    hj->fault_t = trap.t;
    snprintf(hj->fault, sizeof hj->fault, "%s", trap.message);
    hj->injected = hj->opt.fault.kind != FAULT_NONE && strstr(trap.message, "injected fault") != NULL;
    (void)cudaGetLastError();
    /* the turn it held when it failed (set-up, teardown) goes back; its synchronisation waits for one */
    context_turn_give();
    context_turn_take();
    hj->poisoned = cudaDeviceSynchronize() != cudaSuccess;
    context_turn_give();
    if (!trap.reported) train_fail(&hj->ev, hj->code, trap.message);
    emit_exit(hj);
    mark_ended(hj);
    /* What the job held (memory, loader threads) stays until the process ends: unwinding skipped
     * its clean-up, and a poisoned context could not run it anyway. */
    return NULL;
}

/* The job whose fault poisoned the process a failed job ran in, or -1. A sticky error is seen by
 * whichever job synchronises next, so the first to see it need not be the one that caused it: a
 * job that injected its fault is the origin; otherwise the earliest to see it. Green contexts do
 * not contain it: on the H100 an illegal address in one green context failed the job in the other
 * too (tests/runner/gpu_job_host.c), so the whole process is one fault domain. */
static int origin_of(const host *h, const host_job *hj) {
    if (hj->code == 0 || hj->injected) return -1;
    int origin = -1;
    for (int k = 0; k < h->count; k++) {
        const host_job *o = &h->jobs[k];
        if (o == hj || !o->poisoned) continue;
        if (o->injected) return k;
        if (hj->faulted && o->fault_t > hj->fault_t) continue;
        if (origin < 0 || o->fault_t < h->jobs[origin].fault_t) origin = k;
    }
    return origin;
}

static void emit_collateral(host *h, host_job *hj) {
    int origin = origin_of(h, hj);
    if (origin < 0) return;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "collateral");
    cJSON_AddNumberToObject(e, "origin", origin);
    cJSON_AddStringToObject(e, "fault", h->jobs[origin].fault);
    train_emit(&hj->ev, e);
}

/* --green's SM counts, one per job: by the list and number rules every grammar follows. */
static int parse_green(const char *text, int *out, char *err, size_t err_size) {
    list_entry e[HOST_MAX_JOBS];
    int n = list_split("--green", text, ',', e, HOST_MAX_JOBS, err, err_size);
    for (int i = 0; i < n; i++) {
        char name[256];
        long long v;
        list_entry_name("--green", text, i, name, sizeof name);
        if (number_parse(NUMBER_WHOLE, 1, 100000, name, e[i].at, e[i].len, &v, NULL, err, err_size) != 0) return -1;
        out[i] = (int)v;
    }
    return n;
}

static int usage_error(const char *message) {
    fprintf(stderr, "job_host: %s\nusage: job_host [--device N] [--green SMS,SMS,...] --job TRAIN-ARGS... "
            "[--job TRAIN-ARGS...]\n       job_host [--device N] --probe\n", message);
    return 2;
}

static int probe(int device) {
    int sms, unit, groups;
    char err[512];
    if (context_sm_granularity(device, &sms, &unit, &groups, err, sizeof err) != 0) {
        fprintf(stderr, "job_host: %s\n", err);
        return 1;
    }
    printf("{\"device\":%d,\"device_sms\":%d,\"unit\":%d,\"groups\":%d}\n", device, sms, unit, groups);
    return 0;
}

int main(int argc, char **argv) {
    static host h;
    int device = 0, green_count = 0, want_probe = 0, green[HOST_MAX_JOBS];
    char err[1024];
    if (knob_value_check_all(err, sizeof err) != 0) return usage_error(err); /* the environment's values */
    int a = 1;
    for (; a < argc && strcmp(argv[a], "--job") != 0; a++) {
        long long v;
        if (!strcmp(argv[a], "--probe")) want_probe = 1;
        else if (!strcmp(argv[a], "--device") && a + 1 < argc) {
            if (number_whole("--device", argv[++a], 0, 1023, &v, err, sizeof err) != 0) return usage_error(err);
            device = (int)v;
        } else if (!strcmp(argv[a], "--green") && a + 1 < argc) {
            green_count = parse_green(argv[++a], green, err, sizeof err);
            if (green_count < 0) return usage_error(err);
        } else {
            snprintf(err, sizeof err, "unknown option %s", argv[a]);
            return usage_error(err);
        }
    }
    if (want_probe) return probe(device);
    /* Every job here has two streams (its chain and its weight-gradient lane) in one process, and
     * streams beyond the process's hardware work queues share one: a job's lane then stalls another
     * job's chain (models/core/wgrad_lane.h). The most the driver gives, unless the user chose. */
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.changed, NULL);
    int bad = 0, wait_go = 0, window_protocol = 0;
    while (a < argc) { /* argv[a] is "--job" */
        int end = a + 1;
        while (end < argc && strcmp(argv[end], "--job") != 0) end++;
        if (h.count == HOST_MAX_JOBS) return usage_error("too many --job (at most 16)");
        host_job *hj = &h.jobs[h.count];
        hj->h = &h;
        hj->index = h.count++;
        hj->ev = (train_events){1, stderr, write_line, go_barrier, next_command, hj};
        argv[a] = "train"; /* train's parser reads its options after the program name */
        if (train_options_parse(&hj->opt, end - a, argv + a, err, sizeof err) != 0) {
            hj->code = train_fail(&hj->ev, 2, err);
            bad = 1;
        } else if (hj->opt.device != device) {
            snprintf(err, sizeof err, "--device %d: the host runs its jobs on device %d", hj->opt.device, device);
            hj->code = train_fail(&hj->ev, 2, err);
            bad = 1;
        }
        hj->bad = bad && hj->code != 0;
        hj->opt.json = 1;
        wait_go |= hj->opt.wait_go;
        window_protocol |= hj->opt.window_protocol;
        a = end;
    }
    if (h.count == 0) return usage_error("no --job given");
    for (int i = 0; bad && i < h.count; i++) /* one job's bad input stops all before any GPU work */
        if (!h.jobs[i].bad) h.jobs[i].code = train_fail(&h.jobs[i].ev, 2, "not started: another job of the host has bad options");
    if (green_count && green_count != h.count) {
        snprintf(err, sizeof err, "--green gives %d SM counts for %d jobs", green_count, h.count);
        return usage_error(err);
    }
    context_partitions parts = {0};
    if (!bad && green_count && context_partitions_create(&parts, device, green, green_count, err, sizeof err) != 0) {
        for (int i = 0; i < h.count; i++) h.jobs[i].code = train_fail(&h.jobs[i].ev, 1, err);
        bad = 1;
    }
    for (int i = 0; !bad && i < h.count; i++) {
        host_job *hj = &h.jobs[i];
        hj->place = green_count ? context_partition_place(&parts, i) : (context_place){.device = device};
        hj->place.process_jobs = h.count;
        if (pthread_create(&hj->thread, NULL, job_thread, hj) != 0) {
            fprintf(stderr, "job_host: cannot start the thread of job %d\n", i);
            return 1;
        }
    }
    line_reader in = {.fd = 0};
    if (!bad && wait_go) {
        char line[64];
        int go = line_reader_next(&in, -1, line, sizeof line) == 1 && !strncmp(line, "go", 2) ? 1 : -1;
        pthread_mutex_lock(&h.lock);
        h.go = go;
        pthread_cond_broadcast(&h.changed);
        pthread_mutex_unlock(&h.lock);
        if (go > 0 && window_protocol) read_commands(&h, &in);
    }
    int status = bad ? 2 : 0;
    for (int i = 0; i < h.count; i++) {
        if (!bad) pthread_join(h.jobs[i].thread, NULL);
        if (h.jobs[i].code != 0 && status == 0) status = 1;
    }
    for (int i = 0; i < h.count; i++) {
        if (bad) emit_exit(&h.jobs[i]); /* no thread ran */
        else emit_collateral(&h, &h.jobs[i]);
    }
    int poisoned = 0;
    for (int i = 0; i < h.count; i++) poisoned |= h.jobs[i].poisoned;
    if (!poisoned) context_partitions_free(&parts);
    return status;
}
