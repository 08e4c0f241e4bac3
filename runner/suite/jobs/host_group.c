/* Jobs in one job_host process (see host_group.h). One poll() loop over the host's stdout and
 * stderr, like jobs_run_group's over each job's pipes; the stop signals are checked on every
 * pass (the loop wakes at least every 100 ms). */
#define _GNU_SOURCE
#include "runner/suite/jobs/host_group.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "kernels/knobs.h"
#include "results/results.h"
#include "runner/suite/jobs/spawn.h"

void host_group_program(const char *train_path, char *out, size_t size) {
    const char *own = knob_text(KNOB_JOB_HOST);
    if (own && *own) {
        snprintf(out, size, "%s", own);
        return;
    }
    const char *slash = strrchr(train_path, '/');
    if (!slash) snprintf(out, size, "job_host");
    else snprintf(out, size, "%.*s/job_host", (int)(slash - train_path), train_path);
}

char **host_group_argv(const char *host_path, const job_record *jobs, int count, const int *green_sms) {
    size_t n = 4;
    for (int i = 0; i < count; i++)
        for (char **a = jobs[i].argv; a && *a; a++) n++;
    char **v = calloc(n + (size_t)count, sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    char list[16 * 12] = "";
    for (int i = 0; green_sms && i < count; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", green_sms[i]);
    v[k++] = strdup(host_path);
    if (green_sms) v[k++] = strdup("--green"), v[k++] = strdup(list);
    for (int i = 0; i < count; i++) {
        v[k++] = strdup("--job");
        for (char **a = jobs[i].argv ? jobs[i].argv + 1 : NULL; a && *a; a++) v[k++] = strdup(*a);
    }
    for (size_t i = 0; i < k; i++)
        if (!v[i]) {
            job_free_strv(v);
            return NULL;
        }
    return v;
}

typedef struct host_run {
    job_record *jobs;
    int count;
    const jobs_settings *s;
    int log_fd;                       /* job_host.log */
    char log_path[PATH_MAX + 32];
    char out_line[JOB_LINE_MAX], err_line[512];
    size_t out_len, err_len;
    int collateral_of[MIX_MAX_JOBS];  /* -1, or the job whose fault poisoned this one's context */
    char fault[MIX_MAX_JOBS][320];   /* what took the collateral down, as a clause */
} host_run;

static void progress(const host_run *h, const job_record *job, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void progress(const host_run *h, const job_record *job, const char *fmt, ...) {
    if (!h->s->tag) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] job %d %s: %s\n", h->s->tag, job->index, job->spec.label, text);
}

static void notify(const host_run *h, const job_record *job, const char *phase, double t) {
    if (h->s->observer.on_phase) h->s->observer.on_phase(h->s->observer.user, job, phase, t);
}

/* The host's stdin: all of it, or the pipe closed (the host is gone). */
static void write_all(int *fd, const char *data, size_t n) {
    while (*fd >= 0 && n > 0) {
        ssize_t w = write(*fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            close(*fd);
            *fd = -1;
            return;
        }
        data += w;
        n -= (size_t)w;
    }
}

/* The host's own events about a job: its thread ended, or its failure was another's fault. */
static void host_event(host_run *h, job_record *job, const cJSON *root, const char *name, double now) {
    if (strcmp(name, "exit") == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(root, "code");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "t");
        job->proc->wait_status = W_EXITCODE(cJSON_IsNumber(code) ? code->valueint & 0xff : 1, 0);
        job->proc->reaped = 1;
        job->t_exit = cJSON_IsNumber(t) ? t->valuedouble : now;
        job->proc->phase = JOB_FINISHED;
        notify(h, job, "end", job->t_exit);
    } else {
        const cJSON *origin = cJSON_GetObjectItemCaseSensitive(root, "origin");
        const cJSON *fault = cJSON_GetObjectItemCaseSensitive(root, "fault");
        if (!cJSON_IsNumber(origin) || origin->valueint < 0 || origin->valueint >= h->count) return; /* not its job */
        h->collateral_of[job->index] = origin->valueint;
        snprintf(h->fault[job->index], sizeof h->fault[0], "its CUDA fault (%.200s) poisoned the process both ran in",
                 cJSON_IsString(fault) ? fault->valuestring : "?");
    }
}

static void take_line(host_run *h, double now) {
    h->out_line[h->out_len] = 0;
    const char *line = h->out_line;
    cJSON *root = cJSON_Parse(line);
    const cJSON *index = cJSON_GetObjectItemCaseSensitive(root, "job");
    const cJSON *event = cJSON_GetObjectItemCaseSensitive(root, "event");
    int i = cJSON_IsNumber(index) ? index->valueint : -1;
    if (i < 0 || i >= h->count) { /* not a job's: kept in the host's log */
        results_append(&h->log_fd, h->log_path, line, h->out_len);
        results_append(&h->log_fd, h->log_path, "\n", 1);
        cJSON_Delete(root);
        return;
    }
    job_record *job = &h->jobs[i];
    results_append(&job->proc->log_fd, job->log_path, line, h->out_len);
    results_append(&job->proc->log_fd, job->log_path, "\n", 1);
    const char *name = cJSON_IsString(event) ? event->valuestring : "";
    if (!strcmp(name, "exit") || !strcmp(name, "collateral")) {
        host_event(h, job, root, name, now);
        cJSON_Delete(root);
        return;
    }
    cJSON_Delete(root);
    const char *phase = job_handle_line(job, line, now);
    if (phase && !strcmp(phase, "window")) {
        const job_window *w = &job->windows[job->window_count - 1];
        progress(h, job, "window %d: %.1f samples/s over %.0f steps", w->window + 1, w->samples_per_s, w->steps);
    } else if (phase && !strcmp(phase, "kernels")) {
        char text[PATH_MAX + 400];
        job_kernels_describe(job, text, sizeof text);
        progress(h, job, "%s", text);
    } else if (phase && !strcmp(phase, "ready")) {
        progress(h, job, "ready after %.1f s", job->t_ready - job->t_spawn);
        notify(h, job, phase, job->t_ready);
    } else if (phase) {
        const job_epoch *e = &job->epochs[job->epoch_count - 1];
        progress(h, job, "epoch %d: %.2f s, %.1f samples/s%s", e->epoch, e->seconds, e->samples_per_s,
                 e->diverged ? " (loss is NaN)" : "");
        notify(h, job, phase, isnan(e->t_end) ? clock_unix() : e->t_end);
    }
}

static void take_output(host_run *h, int is_stdout, const char *data, size_t n) {
    if (!is_stdout) results_append(&h->log_fd, h->log_path, data, n);
    for (size_t k = 0; k < n; k++) {
        char c = data[k];
        if (is_stdout) {
            if (c == '\n') take_line(h, clock_unix()), h->out_len = 0;
            else if (h->out_len + 1 < JOB_LINE_MAX) h->out_line[h->out_len++] = c;
        } else if (c == '\n') { /* the last line the host printed belongs to every job still running */
            h->err_line[h->err_len] = 0;
            for (int i = 0; i < h->count && h->err_len; i++) {
                job_process *p = h->jobs[i].proc;
                if (p->phase != JOB_FINISHED) memcpy(p->err_last, h->err_line, h->err_len + 1);
            }
            h->err_len = 0;
        } else if (h->err_len + 1 < sizeof h->err_line) {
            h->err_line[h->err_len++] = c;
        }
    }
}

static void drain(host_run *h, int *fd, int is_stdout) {
    char buf[65536];
    while (*fd >= 0) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            take_output(h, is_stdout, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        close(*fd);
        *fd = -1;
    }
}

static void release_barrier(host_run *h, int *stdin_fd) {
    int any = 0;
    for (int i = 0; i < h->count; i++) any |= h->jobs[i].proc->phase == JOB_READY;
    if (any) write_all(stdin_fd, "go\n", 3);
    /* completion: "go" is the only line, EOF tells the host nothing more comes; windows: more follow */
    if (*stdin_fd >= 0 && (h->s->window_s <= 0 || !any)) close(*stdin_fd), *stdin_fd = -1;
    double t = clock_unix();
    for (int i = 0; i < h->count; i++)
        if (h->jobs[i].proc->phase == JOB_READY) {
            h->jobs[i].proc->phase = JOB_TRAINING;
            h->jobs[i].t_go = t;
            h->jobs[i].proc->last_event_mono = clock_monotonic();
            progress(h, &h->jobs[i], "go");
            notify(h, &h->jobs[i], "start", t);
        }
}

/* The watchdog: a training job silent past its limit (jobs_stall_limit) is stopped. Its thread
 * cannot be stopped alone (a hang may sit in a CUDA call, and the process is one fault domain),
 * so the whole host goes, and the jobs still running are recorded as the stalled job's
 * collateral. 1 when it fired. */
static int watch_stalls(host_run *h, double mono) {
    int stalled = -1;
    for (int i = 0; i < h->count && stalled < 0; i++) {
        const job_record *job = &h->jobs[i];
        const job_process *p = job->proc;
        if (p->phase == JOB_TRAINING && mono - p->last_event_mono > jobs_stall_limit(job, h->s)) stalled = i;
    }
    if (stalled < 0) return 0;
    job_record *job = &h->jobs[stalled];
    job->stalled = 1;
    snprintf(job->reason, sizeof job->reason, "stopped by the watchdog: no event for %.0f s (--stall-timeout)",
             mono - job->proc->last_event_mono);
    progress(h, job, "%s; the job host holds every job, so it is stopped", job->reason);
    for (int i = 0; i < h->count; i++) {
        if (i == stalled || h->jobs[i].proc->phase == JOB_FINISHED || h->collateral_of[i] >= 0) continue;
        h->collateral_of[i] = stalled;
        snprintf(h->fault[i], sizeof h->fault[0], "no progress for %.0f s; the watchdog stopped the process",
                 mono - job->proc->last_event_mono);
        snprintf(h->jobs[i].reason, sizeof h->jobs[i].reason, "stopped with the job host");
    }
    return 1;
}

/* After the host: each job's outcome from its exit event, or from the host's end without one. */
static group_result settle_all(host_run *h, int host_status, int stopping) {
    int any_bad = 0;
    for (int i = 0; i < h->count; i++) {
        job_record *job = &h->jobs[i];
        if (!job->proc->reaped) { /* the host ended (crashed, was killed) before this job's thread did */
            job->proc->wait_status = host_status;
            job->t_exit = clock_unix();
            if (!job->reason[0] && !(WIFEXITED(host_status) && WEXITSTATUS(host_status) == 0))
                snprintf(job->reason, sizeof job->reason, "the job host ended (%s %d) before the job did",
                         WIFSIGNALED(host_status) ? "signal" : "exit",
                         WIFSIGNALED(host_status) ? WTERMSIG(host_status) : WEXITSTATUS(host_status));
            notify(h, job, "end", job->t_exit);
        }
        job_settle(job);
        job->proc->phase = JOB_FINISHED;
        int origin = h->collateral_of[i];
        if (origin >= 0 && job->status != JOB_OK) {
            char own[sizeof job->reason];
            snprintf(own, sizeof own, "%s", job->reason);
            snprintf(job->evidence, sizeof job->evidence, "job %d saw: %s", i, own);
            snprintf(job->reason, sizeof job->reason, "collateral of job %d (mode %s): %s; this job then failed: %s", origin,
                     h->s->tag ? h->s->tag : "one process", h->fault[i], own);
            job->collateral_of = origin;
        }
        if (job->proc->log_fd >= 0) close(job->proc->log_fd);
        job->proc->log_fd = -1;
        static const char *names[] = {"ok", "failed", "diverged"};
        progress(h, job, "%s%s%s", names[job->status], job->reason[0] ? ": " : "", job->reason);
        any_bad |= job->status != JOB_OK;
    }
    if (stopping) return GROUP_STOPPED;
    return any_bad ? GROUP_PARTIAL : GROUP_COMPLETE;
}

group_result host_group_run(job_record *jobs, int count, char **argv, const char *log_dir,
                            const jobs_settings *s) {
    jobs_install_stop_signals();
    host_run *h = calloc(1, sizeof *h);
    if (!h) return GROUP_PARTIAL;
    h->jobs = jobs, h->count = count, h->s = s;
    snprintf(h->log_path, sizeof h->log_path, "%s/job_host.log", log_dir);
    h->log_fd = results_open_log(h->log_path);
    double t = clock_unix();
    for (int i = 0; i < count; i++) {
        h->collateral_of[i] = -1;
        jobs[i].proc->phase = JOB_STARTED;
        jobs[i].t_spawn = t;
        jobs[i].proc->log_fd = results_open_log(jobs[i].log_path);
    }
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    pid_t pid = -1;
    int rc = pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC) ? errno : 0;
    if (!rc && jobs_stop_signal()) rc = EINTR;
    if (!rc) rc = spawn_child(&pid, argv, jobs[0].envp, in[0], out[1], er[1], SIGKILL);
    int fds[3] = {in[0], out[1], er[1]};
    for (int k = 0; k < 3; k++)
        if (fds[k] >= 0) close(fds[k]);
    if (rc) {
        for (int i = 0; i < count; i++)
            snprintf(jobs[i].reason, sizeof jobs[i].reason, rc == EINTR ? "not started: the run was stopped"
                     : "cannot start the job host %s: %s", argv[0], strerror(rc));
        int ours[3] = {in[1], out[0], er[0]};
        for (int k = 0; k < 3; k++)
            if (ours[k] >= 0) close(ours[k]);
        group_result g = settle_all(h, 0, rc == EINTR);
        if (h->log_fd >= 0) close(h->log_fd);
        free(h);
        return g;
    }
    int stdin_fd = in[1], out_fd = out[0], err_fd = er[0];
    fcntl(stdin_fd, F_SETFL, O_NONBLOCK);
    fcntl(out_fd, F_SETFL, O_NONBLOCK);
    fcntl(err_fd, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < count; i++) {
        jobs[i].proc->pid = pid;
        progress(h, &jobs[i], "started in the job host (pid %d)", (int)pid);
        notify(h, &jobs[i], "spawn", t);
    }
    int released = 0, stopping = 0, reaped = 0, status = 0, term_sent = 0, kill_sent = 0, stalled = 0;
    job_window_clock clock;
    job_window_clock_init(&clock, s);
    double ready_deadline = clock_monotonic() + s->ready_timeout_s, kill_at = 0, close_at = 0;
    for (;;) {
        double mono = clock_monotonic();
        if (jobs_stop_signal() && !stopping) {
            char why[96];
            snprintf(why, sizeof why, "stopped by run_suite (%s)", strsignal(jobs_stop_signal()));
            for (int i = 0; i < count; i++)
                if (jobs[i].proc->phase != JOB_FINISHED && !jobs[i].reason[0])
                    snprintf(jobs[i].reason, sizeof jobs[i].reason, "%s", why);
            stopping = 1;
        }
        if (released && !stalled && !stopping && !reaped) stalled = watch_stalls(h, mono);
        if ((stopping || stalled) && !term_sent && !reaped) {
            if (kill(-pid, SIGTERM) != 0) kill(pid, SIGTERM);
            term_sent = 1;
            kill_at = mono + s->grace_s;
        }
        if (term_sent && !kill_sent && !reaped && mono >= kill_at) {
            if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
            kill_sent = 1;
        }
        if (!released) {
            int waiting = 0;
            for (int i = 0; i < count; i++) waiting += jobs[i].proc->phase == JOB_STARTED;
            if (stopping || waiting == 0 || mono >= ready_deadline) {
                for (int i = 0; i < count && !stopping; i++)
                    if (jobs[i].proc->phase == JOB_STARTED && !jobs[i].reason[0])
                        snprintf(jobs[i].reason, sizeof jobs[i].reason, "not ready within %.0f s", s->ready_timeout_s);
                release_barrier(h, &stdin_fd);
                released = 1;
            }
        }
        char line[96]; /* the window measurement: one stdin for all jobs, which the host hands to each */
        if (released && !stopping && stdin_fd >= 0 && job_window_due(&clock, jobs, count, clock_unix(), line, sizeof line)) {
            write_all(&stdin_fd, line, strlen(line));
            if (clock.stop_sent && stdin_fd >= 0) close(stdin_fd), stdin_fd = -1;
        }
        if (reaped && mono >= close_at) { /* a grandchild may hold the pipes: do not wait for ever */
            if (out_fd >= 0) close(out_fd);
            if (err_fd >= 0) close(err_fd);
            out_fd = err_fd = -1;
        }
        if (reaped && out_fd < 0 && err_fd < 0) break;
        struct pollfd p[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
        if (poll(p, 2, 100) < 0 && errno != EINTR) {
            fprintf(stderr, "error: poll: %s\n", strerror(errno));
            jobs_request_stop(SIGTERM);
        }
        if (p[0].revents) drain(h, &out_fd, 1);
        if (p[1].revents) drain(h, &err_fd, 0);
        if (!reaped) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid || (w < 0 && errno == ECHILD)) {
                reaped = 1;
                if (w != pid) status = 0;
                close_at = clock_monotonic() + 2.0;
            }
        }
    }
    if (h->out_len) take_line(h, clock_unix()); /* a last line without '\n' */
    if (stdin_fd >= 0) close(stdin_fd);
    group_result g = settle_all(h, status, stopping);
    if (h->log_fd >= 0) close(h->log_fd);
    free(h);
    return g;
}
