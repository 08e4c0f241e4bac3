/* Job processes (see jobs.h; their event protocol is in job_events.c). One poll() loop serves every pipe of a
 * group plus the self-pipe of the stop signals, so nothing blocks on a single job and no work
 * happens in a signal handler. Children are started by spawn.h, so each is killed when the runner
 * dies: a `kill -9` of run_suite leaves no job behind. */
#define _GNU_SOURCE
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/start_barrier.h"
#include "base/clock.h"
#include "base/line_reader.h"
#include "runner/suite/jobs/progress.h"
#include "runner/suite/jobs/spawn.h"
#include "runner/suite/plan/mix.h"
#include "runner/train/step_window.h"
#include "kernels/knobs.h"
#include "results/results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

extern char **environ;

/* Signal handlers can reach only globals: the self-pipe and the signal that asked to stop. */
static int stop_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signo = 0;
static volatile sig_atomic_t stop_count = 0;

static void wake_loop(void) {
    int saved = errno;
    if (stop_pipe[1] >= 0) {
        ssize_t ignored = write(stop_pipe[1], "x", 1); /* full pipe: already awake */
        (void)ignored;
    }
    errno = saved;
}

static void on_stop_signal(int signo) {
    if (!stop_signo) stop_signo = signo;
    stop_count++;
    wake_loop();
}

static void on_child_signal(int signo) { wake_loop(); }

int jobs_install_stop_signals(void) {
    if (stop_pipe[0] >= 0) return 0;
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_child_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int jobs_stop_signal(void) { return stop_signo; }

void jobs_request_stop(int signo) {
    if (!stop_signo) stop_signo = signo;
    stop_count++;
    wake_loop();
}

/* --- argv and environment ------------------------------------------------------------------ */

typedef struct strv { char **v; int n, cap; int failed; } strv;

static void strv_push(strv *s, const char *text) {
    if (s->failed) return;
    if (s->n + 2 > s->cap) {
        int cap = s->cap ? s->cap * 2 : 32;
        char **v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) { s->failed = 1; return; }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = strdup(text);
    if (!s->v[s->n]) { s->failed = 1; return; }
    s->v[++s->n] = NULL;
}

static char **strv_finish(strv *s) {
    if (!s->v && !s->failed) s->v = calloc(1, sizeof *s->v); /* an empty vector, still terminated */
    if (s->failed || !s->v) {
        job_free_strv(s->v);
        return NULL;
    }
    return s->v;
}

void job_free_strv(char **v) {
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

static int env_refuse(job_env *env, const char *name, const char *why) {
    if (!env->refused[0]) snprintf(env->refused, sizeof env->refused, "%.64s: %s", name, why);
    return -1;
}

int job_env_set(job_env *env, const char *name, const char *fmt, ...) {
    char why[96];
    if (env->count >= JOB_ENV_MAX) {
        snprintf(why, sizeof why, "more than %d variables set for one job", JOB_ENV_MAX);
        return env_refuse(env, name, why);
    }
    char *entry = env->entries[env->count];
    int used = snprintf(entry, JOB_ENV_ENTRY, "%s%s", name, fmt ? "=" : "");
    if (used < 0 || used >= JOB_ENV_ENTRY) return env_refuse(env, name, "its name is too long");
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int more = vsnprintf(entry + used, JOB_ENV_ENTRY - (size_t)used, fmt, ap);
        va_end(ap);
        if (more < 0 || used + more >= JOB_ENV_ENTRY) {
            snprintf(why, sizeof why, "a value of %d characters (at most %d fit)", more, JOB_ENV_ENTRY - 1 - used);
            return env_refuse(env, name, why);
        }
    }
    env->count++;
    return 0;
}

static size_t env_name_len(const char *entry) {
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

char **job_build_env(char *const *base, const job_env *env) {
    if (env && env->refused[0]) return NULL;
    strv s = {0};
    for (char *const *p = base; p && *p; p++) {
        int replaced = 0;
        for (int i = 0; env && i < env->count && !replaced; i++) {
            size_t n = env_name_len(env->entries[i]);
            replaced = env_name_len(*p) == n && strncmp(*p, env->entries[i], n) == 0;
        }
        if (!replaced) strv_push(&s, *p);
    }
    for (int i = 0; env && i < env->count; i++)
        if (strchr(env->entries[i], '=')) strv_push(&s, env->entries[i]);
    return strv_finish(&s);
}

char **job_build_argv(const run_request *r, const job_spec *spec, int form, const char *kernels_prefix) {
    int dry_run = form == JOB_ARGV_DRY_RUN, window = !dry_run && r->window_s > 0;
    long steps_per_epoch = run_request_job_steps(r, spec), warmup_steps = r->warmup_steps;
    const char *data_root = r->data_root;
    strv s = {0};
    char num[32];
#define ARG(flag, value) (strv_push(&s, flag), strv_push(&s, value))
#define NUM(flag, fmt, v) (snprintf(num, sizeof num, fmt, v), ARG(flag, num))
    strv_push(&s, r->train_path);
    ARG("--model", spec->model);
    ARG("--data", spec->data);
    NUM("--batch", "%d", spec->batch);
    if (spec->image_size > 0) NUM("--image-size", "%d", spec->image_size); /* 0: criteo */
    if (spec->classes > 0) NUM("--classes", "%d", spec->classes);
    if (spec->max_rows > 0) NUM("--max-rows", "%lld", spec->max_rows);
    if (spec->precision_given) ARG("--precision", precision_name(spec->precision)); /* also for the footprint */
    if (spec->gpus > 1) NUM("--gpus", "%d", spec->gpus);
    /* the GPU decoder's buffers are the job's too */
    if (spec->decode_given) ARG("--decode", decode_kind_name(spec->decode));
    if (spec->decode_slots > 0) NUM("--decode-slots", "%d", spec->decode_slots);
    if (!dry_run) {
        NUM("--epochs", "%d", run_request_job_epochs(r, spec));
        if (steps_per_epoch > 0) NUM("--steps-per-epoch", "%ld", steps_per_epoch);
        if (spec->fault.kind != FAULT_NONE && fault_format(&spec->fault, num, sizeof num) > 0)
            ARG("--inject-fault", num);
    }
    strv_push(&s, dry_run ? "--dry-run" : "--json");
    strv_push(&s, dry_run ? "--json" : "--wait-go");
    if (window) strv_push(&s, "--window-protocol");
    if (window && warmup_steps > 0 && (steps_per_epoch <= 0 || warmup_steps < steps_per_epoch))
        NUM("--warmup-steps", "%ld", warmup_steps);
    if (window && r->kernels && kernels_prefix) ARG("--kernels", kernels_prefix);
    if (data_root && *data_root) {
        /* real files where they are present; synthetic data of the set's shape elsewhere */
        ARG("--data-root", data_root);
        strv_push(&s, "--data-if-present");
    }
#undef ARG
#undef NUM
    return strv_finish(&s);
}

int job_prepare(job_record *job, int index, const job_spec *spec, const run_request *r, const job_env *env,
                const char *log_dir, char *err, size_t err_size) {
    memset(job, 0, sizeof *job);
    job->index = index;
    job->spec = *spec;
    job->epochs_planned = run_request_job_epochs(r, spec);
    job->steps_per_epoch = run_request_job_steps(r, spec);
    char safe[64];
    job_safe_name(safe, sizeof safe, spec->label);
    snprintf(job->name, sizeof job->name, "job-%d-%s", index, safe);
    snprintf(job->log_path, sizeof job->log_path, "%s/%s.log", log_dir, job->name);
    mix_job_format(spec, job->canonical, sizeof job->canonical);
    job->mps = job->mig = -1;
    job->collateral_of = -1;
    job->params = job->footprint_bytes = NAN;
    job->t_spawn = job->t_ready = job->t_go = job->t_done = job->t_exit = job->t_fault = NAN;
    char kernels[PATH_MAX + 64] = "";
    if (r->kernels) {
        snprintf(kernels, sizeof kernels, "%s/kernels", log_dir);
        if (results_make_dirs(kernels, err, err_size) != 0) return -1;
        snprintf(kernels, sizeof kernels, "%s/kernels/job%d", log_dir, index);
    }
    job->argv = job_build_argv(r, spec, JOB_ARGV_RUN, kernels[0] ? kernels : NULL);
    job->envp = job_build_env(environ, env);
    job->proc = calloc(1, sizeof *job->proc);
    if (job->proc) {
        job->proc->pid = -1;
        job->proc->stdin_fd = job->proc->out_fd = job->proc->err_fd = job->proc->log_fd = -1;
    }
    if (env && env->refused[0]) {
        snprintf(err, err_size, "job %d: its environment cannot be carried: %s", index, env->refused);
        job_release(job);
        return -1;
    }
    if (!job->argv || !job->envp || !job->proc) {
        snprintf(err, err_size, "out of memory building the command of job %d", index);
        job_release(job);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

void job_release(job_record *job) {
    job_free_strv(job->argv);
    job_free_strv(job->envp);
    job->argv = job->envp = NULL;
    free(job->steps);
    job->steps = NULL;
    job->step_count = job->step_cap = 0;
    job_process *p = job->proc;
    if (!p) return;
    close_fd(&p->stdin_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->log_fd);
    free(p);
    job->proc = NULL;
}

/* --- process handling ---------------------------------------------------------------------- */

static void progress(const jobs_settings *s, const job_record *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void progress(const jobs_settings *s, const job_record *job, const char *fmt, ...) {
    if (!s->tag) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (s->board) progress_show(s->board, job, text);
    else fprintf(stderr, "[%s] job %d %s: %s\n", s->tag, job->index, job->spec.label, text);
}

static void notify(const jobs_settings *s, const job_record *job, const char *phase, double t) {
    if (s->observer.on_phase) s->observer.on_phase(s->observer.user, job, phase, t);
}

static int start_job(job_record *job, const jobs_settings *s) {
    job_process *p = job->proc;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    job->t_spawn = clock_unix();
    p->phase = JOB_STARTED;
    p->log_fd = results_open_log(job->log_path);
    int rc = 0;
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) rc = errno;
    if (!rc) rc = spawn_child(&p->pid, job->argv, job->envp, in[0], out[1], er[1], SIGKILL);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&er[1]);
    if (rc) {
        close_fd(&in[1]);
        close_fd(&out[0]);
        close_fd(&er[0]);
        p->pid = -1;
        snprintf(job->reason, sizeof job->reason, "cannot start %s: %s", job->argv[0], strerror(rc));
        return -1;
    }
    p->stdin_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = er[0];
    fcntl(p->stdin_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
    progress(s, job, "started (pid %d)", (int)p->pid);
    return 0;
}


static void take_stdout_line(job_record *job, const jobs_settings *s) {
    job_process *p = job->proc;
    p->out_line[p->out_len] = 0;
    const char *phase = p->out_overflow ? NULL : job_handle_line(job, p->out_line, clock_unix());
    if (!p->out_overflow && s->board) progress_line(s->board, job, p->out_line, clock_monotonic());
    p->out_len = 0;
    p->out_overflow = 0;
    if (!phase) return;
    if (strcmp(phase, "window") == 0) {
        const job_window *w = &job->windows[job->window_count - 1];
        progress(s, job, "window %d: %.1f samples/s over %.0f steps", w->window + 1, w->samples_per_s, w->steps);
    } else if (strcmp(phase, "kernels") == 0) {
        char text[PATH_MAX + 400];
        job_kernels_describe(job, text, sizeof text);
        progress(s, job, "%s", text);
    } else if (strcmp(phase, "ready") == 0) {
        progress(s, job, "ready after %.1f s", job->t_ready - job->t_spawn);
        notify(s, job, phase, job->t_ready);
    } else {
        const job_epoch *e = &job->epochs[job->epoch_count - 1];
        progress(s, job, "epoch %d: %.2f s, %.1f samples/s%s", e->epoch, e->seconds,
                 e->samples_per_s, e->diverged ? " (loss is NaN)" : "");
        notify(s, job, phase, isnan(e->t_end) ? clock_unix() : e->t_end);
    }
}

static void take_output(job_record *job, int is_stdout, const char *data, size_t n,
                        const jobs_settings *s) {
    job_process *p = job->proc;
    results_append(&job->proc->log_fd, job->log_path, data, n);
    for (size_t i = 0; i < n; i++) {
        char c = data[i];
        if (is_stdout) {
            if (c == '\n') take_stdout_line(job, s);
            else if (p->out_len + 1 < JOB_LINE_MAX) p->out_line[p->out_len++] = c;
            else p->out_overflow = 1;
        } else if (c == '\n') {
            p->err_line[p->err_len] = 0;
            if (p->err_len) memcpy(p->err_last, p->err_line, p->err_len + 1);
            p->err_len = 0;
        } else if (p->err_len + 1 < sizeof p->err_line) {
            p->err_line[p->err_len++] = c;
        }
    }
}

/* Reads what a pipe holds now; closes it at end of file. */
static void drain_pipe(job_record *job, int is_stdout, const jobs_settings *s) {
    job_process *p = job->proc;
    int *fd = is_stdout ? &p->out_fd : &p->err_fd;
    char buf[65536];
    while (*fd >= 0) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            take_output(job, is_stdout, buf, (size_t)n, s);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        close_fd(fd);
        if (is_stdout && p->out_len) take_stdout_line(job, s); /* last line without '\n' */
    }
}

static void reap(job_record *job) {
    job_process *p = job->proc;
    if (p->pid <= 0 || p->reaped) return;
    int st;
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid || (r < 0 && errno == ECHILD)) {
        p->reaped = 1;
        p->wait_status = r == p->pid ? st : 0;
        job->t_exit = clock_unix();
        p->close_at = clock_monotonic() + 2.0; /* a grandchild may still hold the pipes */
        close_fd(&p->stdin_fd);
    }
}

static void release_barrier(job_record *jobs, int count, const jobs_settings *s) {
    double t = barrier_release(jobs, count, s->window_s > 0);
    for (int i = 0; i < count; i++)
        if (jobs[i].proc->phase == JOB_TRAINING) {
            progress(s, &jobs[i], "go");
            notify(s, &jobs[i], "start", t);
        }
}

static void finish_job(job_record *job, const jobs_settings *s) {
    job_process *p = job->proc;
    job_settle(job);
    p->phase = JOB_FINISHED;
    close_fd(&p->log_fd);
    static const char *names[] = {"ok", "failed", "diverged"};
    progress(s, job, "%s%s%s", names[job->status], job->reason[0] ? ": " : "", job->reason);
    notify(s, job, "end", isnan(job->t_exit) ? clock_unix() : job->t_exit);
}

/* The window measurement's lines to every training job ("window T0 T1", then "stop", after which
 * stdin closes). */
static void announce_windows(job_window_clock *clock, job_record *jobs, int count, const jobs_settings *s) {
    char line[96];
    if (!job_window_due(clock, jobs, count, clock_unix(), line, sizeof line)) return;
    for (int i = 0; i < count; i++) {
        job_process *p = jobs[i].proc;
        if (p->phase != JOB_TRAINING || p->stdin_fd < 0) continue;
        ssize_t w;
        do w = write(p->stdin_fd, line, strlen(line));
        while (w < 0 && errno == EINTR);
        if (clock->stop_sent) close_fd(&p->stdin_fd);
    }
    if (s->tag && !s->board) fprintf(stderr, "[%s] %.*s\n", s->tag, (int)strlen(line) - 1, line);
}

group_result jobs_run_group(job_record *jobs, int count, const jobs_settings *s) {
    progress_board board;
    jobs_settings shown = *s;
    shown.board = &board;
    progress_begin(&board, stderr, -1, jobs, count, s->tag);
    s = &shown;
    jobs_install_stop_signals();
    int stopping = 0, released = 0, any_bad = 0;
    go_relay relay;
    go_relay_init(&relay, s->relay);
    double ready_deadline = clock_monotonic() + s->ready_timeout_s;
    for (int i = 0; i < count; i++) {
        if (stop_signo) {
            snprintf(jobs[i].reason, sizeof jobs[i].reason, "not started: the run was stopped");
            finish_job(&jobs[i], s);
            continue;
        }
        if (start_job(&jobs[i], s) != 0) finish_job(&jobs[i], s);
        else notify(s, &jobs[i], "spawn", jobs[i].t_spawn);
    }
    struct pollfd *fds = calloc((size_t)count * 2 + 2, sizeof *fds);
    int *owner = calloc((size_t)count * 2 + 2, sizeof *owner);
    if (!fds || !owner) {
        fprintf(stderr, "error: out of memory watching %d jobs\n", count);
        jobs_request_stop(SIGTERM);
    }
    int seen_stop_count = 0;
    job_window_clock clock;
    job_window_clock_init(&clock, s);
    clock.from_relay = s->relay && clock.length_s > 0;
    for (;;) {
        double mono = clock_monotonic();
        if (stop_signo && stop_count != seen_stop_count) {
            char why[96];
            snprintf(why, sizeof why, "stopped by run_suite (%s)", strsignal(stop_signo));
            for (int i = 0; i < count; i++) {
                if (jobs[i].proc->phase == JOB_FINISHED) continue;
                watchdog_terminate(&jobs[i], s->grace_s, why);
                if (stopping) jobs[i].proc->kill_at = mono; /* a second Ctrl-C: no more grace */
            }
            stopping = 1;
            seen_stop_count = stop_count;
        }
        if (!released) {
            if (stopping) {
                released = 1;
            } else if (!barrier_waiting(jobs, count) || mono >= ready_deadline) {
                char why[96];
                snprintf(why, sizeof why, "not ready within %.0f s", s->ready_timeout_s);
                for (int i = 0; i < count; i++)
                    if (jobs[i].proc->phase == JOB_STARTED && !jobs[i].proc->term_sent)
                        watchdog_terminate(&jobs[i], s->grace_s, why);
                if (go_relay_ready(&relay)) {
                    release_barrier(jobs, count, s);
                    released = 1;
                }
            }
        }
        if (released && !stopping && clock.from_relay) go_relay_window(&relay, &clock, jobs, count);
        if (released && !stopping) announce_windows(&clock, jobs, count, s);
        int alive = 0, nfds = 0;
        if (fds) {
            fds[nfds].fd = stop_pipe[0];
            fds[nfds].events = POLLIN;
            owner[nfds++] = -1;
            int relay_fd = go_relay_fd(&relay, released, &clock);
            if (relay_fd >= 0) {
                fds[nfds] = (struct pollfd){relay_fd, POLLIN, 0};
                owner[nfds++] = -1;
            }
        }
        for (int i = 0; i < count; i++) {
            job_record *job = &jobs[i];
            job_process *p = job->proc;
            if (p->phase == JOB_FINISHED) continue;
            char why[160];
            if (watchdog_stalled(job, s, mono, why, sizeof why)) {
                job->stalled = 1;
                progress(s, job, "%s", why);
                watchdog_terminate(job, s->grace_s, why);
            }
            watchdog_escalate(job, mono);
            if (p->reaped && mono >= p->close_at) {
                close_fd(&p->out_fd);
                close_fd(&p->err_fd);
            }
            if (p->reaped && p->out_fd < 0 && p->err_fd < 0) {
                finish_job(job, s);
                any_bad |= job->status != JOB_OK;
                continue;
            }
            alive++;
            if (!fds) continue;
            if (p->out_fd >= 0) { fds[nfds] = (struct pollfd){p->out_fd, POLLIN, 0}; owner[nfds++] = 2 * i; }
            if (p->err_fd >= 0) { fds[nfds] = (struct pollfd){p->err_fd, POLLIN, 0}; owner[nfds++] = 2 * i + 1; }
        }
        if (!alive) break;
        if (!fds) usleep(100000);
        else if (poll(fds, (nfds_t)nfds, 100) < 0 && errno != EINTR) {
            fprintf(stderr, "error: poll: %s\n", strerror(errno));
            jobs_request_stop(SIGTERM);
        }
        char sink[64];
        while (stop_pipe[0] >= 0 && read(stop_pipe[0], sink, sizeof sink) > 0) {}
        for (int k = 0; fds && k < nfds; k++)
            if (owner[k] >= 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                drain_pipe(&jobs[owner[k] / 2], owner[k] % 2 == 0, s);
        for (int i = 0; i < count; i++) reap(&jobs[i]);
    }
    free(fds);
    free(owner);
    progress_end(&board);
    if (stopping) return GROUP_STOPPED;
    for (int i = 0; i < count; i++) any_bad |= jobs[i].status != JOB_OK;
    return any_bad ? GROUP_PARTIAL : GROUP_COMPLETE;
}

/* --- one-shot commands --------------------------------------------------------------------- */

int jobs_run_capture(char *const argv[], char *const envp[], const char *stdin_text, char *out,
                     size_t out_size, double timeout_s) {
    jobs_install_stop_signals();
    int in[2] = {-1, -1}, pipe_out[2] = {-1, -1};
    if (stdin_text && pipe2(in, O_CLOEXEC) != 0) return -1;
    if (pipe2(pipe_out, O_CLOEXEC) != 0) {
        close_fd(&in[0]);
        close_fd(&in[1]);
        return -1;
    }
    pid_t pid;
    int rc = spawn_child(&pid, argv, envp ? envp : environ, in[0], pipe_out[1], -1, SIGKILL);
    close_fd(&in[0]);
    close_fd(&pipe_out[1]);
    if (rc) {
        close_fd(&in[1]);
        close_fd(&pipe_out[0]);
        errno = rc;
        return -1;
    }
    for (size_t done = 0, n = stdin_text ? strlen(stdin_text) : 0; done < n;) { /* a command line */
        ssize_t w = write(in[1], stdin_text + done, n - done);
        if (w <= 0 && errno != EINTR) break;
        if (w > 0) done += (size_t)w;
    }
    close_fd(&in[1]);
    /* Non-blocking reads: a daemon forked by the command may keep the pipe open after it exits. */
    fcntl(pipe_out[0], F_SETFL, O_NONBLOCK);
    size_t len = 0;
    double deadline = clock_monotonic() + timeout_s;
    int status = 0, reaped = 0, timed_out = 0;
    for (;;) {
        if (pipe_out[0] >= 0) {
            char buf[4096];
            ssize_t n;
            while ((n = read(pipe_out[0], buf, sizeof buf)) > 0) {
                size_t room = out_size > len + 1 ? out_size - 1 - len : 0;
                size_t keep = (size_t)n < room ? (size_t)n : room;
                memcpy(out + len, buf, keep);
                len += keep;
            }
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) close_fd(&pipe_out[0]);
        }
        if (reaped) break;
        if (!timed_out && clock_monotonic() >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            timed_out = 1;
        }
        pid_t r = waitpid(pid, &status, timed_out ? 0 : WNOHANG);
        if (r == pid) { reaped = 1; continue; } /* one more read for what it wrote last */
        if (r < 0 && errno != EINTR) break;
        if (pipe_out[0] >= 0) {
            struct pollfd p = {pipe_out[0], POLLIN, 0};
            poll(&p, 1, 20);
        } else {
            usleep(10000);
        }
    }
    close_fd(&pipe_out[0]);
    if (out_size) out[len] = 0;
    return timed_out ? -2 : status;
}

int jobs_wait_child(pid_t pid) {
    jobs_install_stop_signals(); /* SIGCHLD and the stop signals wake the poll below */
    int passed_on = stop_count;  /* a stop before it started is the caller's to act on */
    for (;;) {
        if (stop_count != passed_on && stop_signo) {
            kill(pid, stop_signo);
            passed_on = stop_count;
        }
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        if (r < 0 && errno != EINTR) return -1;
        struct pollfd p = {stop_pipe[0], POLLIN, 0};
        poll(&p, 1, 200);
        char sink[64];
        while (read(stop_pipe[0], sink, sizeof sink) > 0) {}
    }
}

int job_query_footprint(const run_request *r, const job_spec *spec, job_footprint *fp, char *err, size_t err_size) {
    const char *train_path = r->train_path;
    char **argv = job_build_argv(r, spec, JOB_ARGV_DRY_RUN, NULL);
    if (!argv) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    char out[16384];
    int st = jobs_run_capture(argv, NULL, NULL, out, sizeof out, 60.0);
    int rc = -1;
    if (st == -1) snprintf(err, err_size, "cannot run %s: %s", train_path, strerror(errno));
    else if (st == -2) snprintf(err, err_size, "%s --dry-run took over 60 s", train_path);
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        snprintf(err, err_size, "%s --dry-run for %s failed (%s %d; its message is above)", train_path, spec->label,
                 WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    else rc = job_parse_footprint(out, fp, err, err_size);
    job_free_strv(argv);
    return rc;
}

int jobs_find_program(const char *name, char *out, size_t size) {
    out[0] = 0;
    if (strchr(name, '/')) {
        snprintf(out, size, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !out[0]; dir = strtok_r(NULL, ":", &save)) {
        char candidate[PATH_MAX];
        snprintf(candidate, sizeof candidate, "%s/%s", dir, name);
        if (access(candidate, X_OK) == 0) snprintf(out, size, "%s", candidate);
    }
    free(copy);
    if (out[0]) return 0;
    errno = ENOENT;
    return -1;
}
