/* The status board (see progress.h). */
#define _GNU_SOURCE
#include "runner/suite/jobs/progress.h"

#include <math.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static void set_line(progress_board *b, int k, const job_record *job, const char *text) {
    snprintf(b->lines[k], sizeof b->lines[k], "[%s] job %d %s: %s", b->tag, job->index, job->spec.label, text);
}

void progress_begin(progress_board *b, FILE *out, int tty, const job_record *jobs, int count,
                    const char *tag) {
    memset(b, 0, sizeof *b);
    b->out = out;
    b->tty = tty >= 0 ? tty : isatty(fileno(out));
    b->width = PROGRESS_LINE - 1;
    struct winsize ws;
    if (b->tty && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 && ws.ws_col < PROGRESS_LINE)
        b->width = ws.ws_col - 1;
    b->tag = tag;
    b->jobs = jobs;
    b->count = count < MIX_MAX_JOBS ? count : MIX_MAX_JOBS;
    for (int i = 0; tag && i < b->count; i++) set_line(b, i, &jobs[i], "waiting");
}

static int slot_of(const progress_board *b, const job_record *job) {
    long k = job - b->jobs;
    return k >= 0 && k < b->count ? (int)k : -1;
}

/* Rewrites the whole board: up to its first line, then every job's line, cleared to its end. */
static void redraw(progress_board *b) {
    if (b->drawn) fprintf(b->out, "\033[%dA", b->drawn);
    for (int i = 0; i < b->count; i++)
        fprintf(b->out, "\r\033[K%.*s\n", b->width, b->lines[i]);
    b->drawn = b->count;
    fflush(b->out);
}

void progress_show(progress_board *b, const job_record *job, const char *text) {
    if (!b->tag) return;
    int k = slot_of(b, job);
    if (!b->tty || k < 0) {
        fprintf(b->out, "[%s] job %d %s: %s\n", b->tag, job->index, job->spec.label, text);
        return;
    }
    set_line(b, k, job, text);
    redraw(b);
}

static void clock_text(char *out, size_t size, double s) {
    if (!(s >= 0) || s > 359999) snprintf(out, size, "?");
    else if (s >= 3600) snprintf(out, size, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
    else snprintf(out, size, "%d:%02d", (int)s / 60, (int)s % 60);
}

int progress_format(const char *line, char *out, size_t size) {
    if (!strstr(line, "\"progress\"")) return -1;
    cJSON *root = cJSON_Parse(line);
    const cJSON *event = cJSON_GetObjectItemCaseSensitive(root, "event");
    if (!cJSON_IsString(event) || strcmp(event->valuestring, "progress") != 0) {
        cJSON_Delete(root);
        return -1;
    }
    double v[5];
    static const char *const keys[] = {"epoch", "step", "steps", "samples_per_s", "eta_s"};
    for (int i = 0; i < 5; i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        v[i] = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    }
    cJSON_Delete(root);
    if (isnan(v[1])) return -1;
    /* what the event leaves out is left out of the line (a bare heartbeat names only its step) */
    size_t n = (size_t)snprintf(out, size, "epoch %.0f step %.0f", isnan(v[0]) ? 0.0 : v[0], v[1]);
    if (n < size && v[2] > 0)
        n += (size_t)snprintf(out + n, size - n, "/%.0f (%.0f%%)", v[2], 100.0 * v[1] / v[2]);
    if (n < size && !isnan(v[3])) n += (size_t)snprintf(out + n, size - n, ", %.0f samples/s", v[3]);
    if (n < size && !isnan(v[4])) {
        char eta[32];
        clock_text(eta, sizeof eta, v[4]);
        snprintf(out + n, size - n, ", ETA %s", eta);
    }
    return 0;
}

void progress_line(progress_board *b, const job_record *job, const char *line, double now) {
    char text[PROGRESS_LINE];
    if (!b->tag || progress_format(line, text, sizeof text) != 0) return;
    int k = slot_of(b, job);
    if (b->tty && k >= 0) {
        set_line(b, k, job, text);
        redraw(b);
        return;
    }
    if (k >= 0 && b->last_plain[k] > 0 && now - b->last_plain[k] < PROGRESS_PLAIN_S) return;
    if (k >= 0) b->last_plain[k] = now;
    fprintf(b->out, "[%s] job %d %s: %s\n", b->tag, job->index, job->spec.label, text);
}

void progress_end(progress_board *b) {
    if (b->out) fflush(b->out);
    b->drawn = 0;
}
