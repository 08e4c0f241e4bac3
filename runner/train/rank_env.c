/* The launchers' environment conventions and Slurm's host lists (see rank_env.h). */
#include "runner/train/rank_env.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/cli.h"

#define HOSTLIST_MAX_HOSTS 1000000000L
#define HOSTLIST_MAX_PARTS 16
#define HOSTLIST_MAX_DIGITS 9

const char *rank_env_getenv(void *user, const char *name) {
    (void)user;
    return getenv(name);
}

const char *rank_env_launcher_name(rank_launcher from) {
    return from == RANK_LAUNCHER_ENV ? "env" : from == RANK_LAUNCHER_SLURM ? "slurm" : "none";
}

/* --- Slurm's host lists ------------------------------------------------------------------------- */

/* One piece of a host's pattern: literal text, or the inside of a bracket. */
typedef struct hostlist_part {
    const char *at;
    size_t len;
    int group;
} hostlist_part;

static int name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_'; }

/* The pieces of one comma-separated item of the list. */
static int split_item(const char *item, size_t len, hostlist_part *parts, int *count, char *err, size_t err_size) {
    *count = 0;
    if (len == 0) {
        snprintf(err, err_size, "an empty host name (two commas, or one at an end)");
        return -1;
    }
    for (size_t i = 0; i < len;) {
        if (*count == HOSTLIST_MAX_PARTS) {
            snprintf(err, err_size, "'%.*s' has more than %d bracketed ranges and names", (int)len, item,
                     HOSTLIST_MAX_PARTS);
            return -1;
        }
        hostlist_part *p = &parts[(*count)++];
        if (item[i] == '[') {
            size_t close = i + 1;
            while (close < len && item[close] != ']' && item[close] != '[') close++;
            if (close >= len || item[close] != ']') {
                snprintf(err, err_size, "'%.*s': a '[' is not closed by ']'", (int)len, item);
                return -1;
            }
            *p = (hostlist_part){item + i + 1, close - i - 1, 1};
            i = close + 1;
            continue;
        }
        size_t end = i;
        while (end < len && item[end] != '[') {
            if (!name_char(item[end])) {
                snprintf(err, err_size, "'%.*s': '%c' is not part of a host name (letters, digits, '-', '.', '_')",
                         (int)len, item, item[end]);
                return -1;
            }
            end++;
        }
        *p = (hostlist_part){item + i, end - i, 0};
        i = end;
    }
    return 0;
}

/* A number of 1 to HOSTLIST_MAX_DIGITS digits at *p; its digit count in width. */
static int scan_number(const char **p, const char *end, long *value, int *width) {
    const char *s = *p;
    long v = 0;
    int digits = 0;
    while (s < end && isdigit((unsigned char)*s) && digits < HOSTLIST_MAX_DIGITS + 1) v = v * 10 + (*s++ - '0'), digits++;
    if (digits == 0 || digits > HOSTLIST_MAX_DIGITS) return -1;
    *p = s, *value = v, *width = digits;
    return 0;
}

/* A bracket's inside ("01-03,07"): with n < 0 the count of its numbers; else the n-th number and
 * the width it is written in (the lower bound's digits: Slurm keeps zero padding). -1 with err
 * when malformed. */
static long scan_group(const hostlist_part *g, long n, long *value, int *width, char *err, size_t err_size) {
    const char *s = g->at, *end = g->at + g->len;
    long total = 0;
    for (;;) {
        long lo, hi;
        int lo_width, hi_width;
        if (scan_number(&s, end, &lo, &lo_width) != 0) break;
        hi = lo;
        if (s < end && *s == '-') {
            s++;
            if (scan_number(&s, end, &hi, &hi_width) != 0 || hi < lo) break;
        }
        if (s < end && *s != ',') break;
        if (n >= 0 && n < hi - lo + 1) {
            *value = lo + n, *width = lo_width;
            return total;
        }
        if (n >= 0) n -= hi - lo + 1;
        total += hi - lo + 1;
        if (total > HOSTLIST_MAX_HOSTS) break;
        if (s == end) return total;
        s++; /* the comma */
    }
    snprintf(err, err_size, "'[%.*s]': expected numbers and ranges LO-HI (LO <= HI, at most %d digits) separated "
             "by commas", (int)g->len, g->at, HOSTLIST_MAX_DIGITS);
    return -1;
}

/* The hosts one item's pattern names (the product of its brackets' counts). */
static long item_count(const hostlist_part *parts, int count, char *err, size_t err_size) {
    long hosts = 1;
    for (int k = 0; k < count; k++) {
        if (!parts[k].group) continue;
        long v;
        int w;
        long n = scan_group(&parts[k], -1, &v, &w, err, err_size);
        if (n < 0) return -1;
        if (hosts > HOSTLIST_MAX_HOSTS / n) {
            snprintf(err, err_size, "more than %ld hosts", HOSTLIST_MAX_HOSTS);
            return -1;
        }
        hosts *= n;
    }
    return hosts;
}

/* The next item of the list at *p (up to a comma outside brackets); 0 at the end. */
static int next_item(const char **p, const char **item, size_t *len) {
    const char *s = *p;
    if (!*s) return 0;
    int depth = 0;
    const char *e = s;
    while (*e && (depth || *e != ',')) {
        if (*e == '[') depth = 1;
        else if (*e == ']') depth = 0;
        e++;
    }
    *item = s, *len = (size_t)(e - s);
    *p = *e ? e + 1 : e;
    return 1;
}

/* The index-th host of one item's pattern into host. */
static int item_host(const hostlist_part *parts, int count, long index, char *host, size_t size, char *err,
                     size_t err_size) {
    long value[HOSTLIST_MAX_PARTS];
    int width[HOSTLIST_MAX_PARTS];
    for (int k = count - 1; k >= 0; k--) { /* the last bracket varies fastest, as Slurm expands them */
        if (!parts[k].group) continue;
        long in_group = scan_group(&parts[k], -1, &value[k], &width[k], err, err_size);
        scan_group(&parts[k], index % in_group, &value[k], &width[k], err, err_size);
        index /= in_group;
    }
    size_t used = 0;
    for (int k = 0; k < count; k++) {
        int wrote = parts[k].group ? snprintf(host + used, size - used, "%0*ld", width[k], value[k])
                                   : snprintf(host + used, size - used, "%.*s", (int)parts[k].len, parts[k].at);
        if (wrote < 0 || (size_t)wrote >= size - used) {
            snprintf(err, err_size, "a host of the list is longer than %zu characters", size - 1);
            return -1;
        }
        used += (size_t)wrote;
    }
    return 0;
}

/* Walks the whole list (a malformed one is refused whole): the count of its hosts; with index >= 0
 * also the index-th into host. */
static long hostlist_walk(const char *list, long index, char *host, size_t size, char *err, size_t err_size) {
    if (!list || !*list) {
        snprintf(err, err_size, "an empty host list");
        return -1;
    }
    if (list[strlen(list) - 1] == ',') {
        snprintf(err, err_size, "an empty host name (two commas, or one at an end)");
        return -1;
    }
    const char *p = list, *item;
    size_t len;
    long total = 0;
    hostlist_part parts[HOSTLIST_MAX_PARTS];
    int count, found = 0;
    while (next_item(&p, &item, &len)) {
        if (split_item(item, len, parts, &count, err, err_size) != 0) return -1;
        long n = item_count(parts, count, err, err_size);
        if (n < 0) return -1;
        if (index >= total && index < total + n) {
            if (item_host(parts, count, index - total, host, size, err, err_size) != 0) return -1;
            found = 1;
        }
        total += n;
        if (total > HOSTLIST_MAX_HOSTS) {
            snprintf(err, err_size, "more than %ld hosts", HOSTLIST_MAX_HOSTS);
            return -1;
        }
    }
    if (index >= 0 && !found) {
        snprintf(err, err_size, "the list names %ld host(s), none at index %ld", total, index);
        return -1;
    }
    return total;
}

long rank_env_hostlist_count(const char *list, char *err, size_t err_size) {
    return hostlist_walk(list, -1, NULL, 0, err, err_size);
}

int rank_env_hostlist_host(const char *list, long index, char *host, size_t size, char *err, size_t err_size) {
    if (index < 0) {
        snprintf(err, err_size, "no host at index %ld", index);
        return -1;
    }
    return hostlist_walk(list, index, host, size, err, err_size) < 0 ? -1 : 0;
}

/* --- the conventions ---------------------------------------------------------------------------- */

typedef struct whole {
    int64_t value;
} whole;

static const char *lookup_set(rank_env_lookup lookup, void *user, const char *name) {
    const char *v = lookup(user, name);
    return v && *v ? v : NULL;
}

/* A whole number in [lo, hi] from the variable `name`, checked as the command line's are. */
static int read_whole(const char *name, const char *text, long long lo, long long hi, int64_t *out, char *err,
                      size_t err_size) {
    cli_option row = {name, NULL, "", CLI_INT(whole, value, lo, hi)};
    whole w;
    if (cli_parse_value(&row, text, &w, err, err_size) != 0) return -1;
    *out = w.value;
    return 0;
}

static int missing(const char *name, rank_launcher from, char *err, size_t err_size) {
    if (from == RANK_LAUNCHER_SLURM)
        snprintf(err, err_size, "%s is not set: --launcher slurm runs under srun, which sets SLURM_PROCID, "
                 "SLURM_NTASKS, SLURM_LOCALID and SLURM_NODELIST for each task", name);
    else
        snprintf(err, err_size, "%s is not set: --launcher env reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                 "MASTER_PORT (as torchrun sets them)", name);
    return -1;
}

/* rank, world and local rank from the launcher's three variables. */
static int read_ranks(rank_launcher from, rank_env_lookup lookup, void *user, const char *const names[3],
                      rank_env *out, char *err, size_t err_size) {
    const char *text[3];
    for (int k = 0; k < 3; k++)
        if (!(text[k] = lookup_set(lookup, user, names[k]))) return missing(names[k], from, err, err_size);
    int64_t world, rank, local;
    if (read_whole(names[1], text[1], 1, RANK_ENV_WORLD_MAX, &world, err, err_size) != 0) return -1;
    char why[512];
    if (read_whole(names[0], text[0], 0, world - 1, &rank, why, sizeof why) != 0 ||
        read_whole(names[2], text[2], 0, world - 1, &local, why, sizeof why) != 0) {
        snprintf(err, err_size, "%s (%s is %lld: ranks 0 to %lld)", why, names[1], (long long)world,
                 (long long)world - 1);
        return -1;
    }
    out->rank = (int)rank, out->world = (int)world, out->local_rank = (int)local;
    return 0;
}

static int read_master_addr(const char *text, const char *from, rank_env *out, char *err, size_t err_size) {
    size_t len = strlen(text);
    int ok = len > 0 && len < sizeof out->master_addr;
    for (size_t i = 0; ok && i < len; i++) ok = isgraph((unsigned char)text[i]);
    if (!ok) {
        snprintf(err, err_size, "%s: expected rank 0's host name or address (1 to %zu characters, no blanks), got "
                 "'%s'", from, sizeof out->master_addr - 1, text);
        return -1;
    }
    memcpy(out->master_addr, text, len + 1);
    snprintf(out->addr_from, sizeof out->addr_from, "%s", from);
    return 0;
}

static int read_port(const char *text, rank_env *out, char *err, size_t err_size) {
    int64_t port;
    if (read_whole("MASTER_PORT", text, 1, 65535, &port, err, err_size) != 0) return -1;
    out->master_port = (int)port;
    snprintf(out->port_from, sizeof out->port_from, "MASTER_PORT");
    return 0;
}

static int read_env(rank_env_lookup lookup, void *user, rank_env *out, char *err, size_t err_size) {
    static const char *const names[3] = {"RANK", "WORLD_SIZE", "LOCAL_RANK"};
    if (read_ranks(RANK_LAUNCHER_ENV, lookup, user, names, out, err, err_size) != 0) return -1;
    const char *addr = lookup_set(lookup, user, "MASTER_ADDR"), *port = lookup_set(lookup, user, "MASTER_PORT");
    if (!addr) return missing("MASTER_ADDR", RANK_LAUNCHER_ENV, err, err_size);
    if (!port) return missing("MASTER_PORT", RANK_LAUNCHER_ENV, err, err_size);
    if (read_master_addr(addr, "MASTER_ADDR", out, err, err_size) != 0) return -1;
    return read_port(port, out, err, err_size);
}

static int read_slurm(rank_env_lookup lookup, void *user, rank_env *out, char *err, size_t err_size) {
    static const char *const names[3] = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};
    if (read_ranks(RANK_LAUNCHER_SLURM, lookup, user, names, out, err, err_size) != 0) return -1;
    const char *addr = lookup_set(lookup, user, "MASTER_ADDR");
    if (addr) {
        if (read_master_addr(addr, "MASTER_ADDR", out, err, err_size) != 0) return -1;
    } else {
        const char *list_name = "SLURM_STEP_NODELIST", *list = lookup_set(lookup, user, list_name);
        if (!list) list_name = "SLURM_NODELIST", list = lookup_set(lookup, user, list_name);
        if (!list) {
            snprintf(err, err_size, "neither MASTER_ADDR nor SLURM_STEP_NODELIST or SLURM_NODELIST is set: rank 0's "
                     "host is the first of srun's nodes (run under srun, or set MASTER_ADDR)");
            return -1;
        }
        char host[RANK_ENV_HOST_MAX], why[512], from[64];
        if (rank_env_hostlist_host(list, 0, host, sizeof host, why, sizeof why) != 0) {
            snprintf(err, err_size, "%s '%s': %s", list_name, list, why);
            return -1;
        }
        snprintf(from, sizeof from, "the first host of %s", list_name);
        if (read_master_addr(host, from, out, err, err_size) != 0) return -1;
    }
    const char *port = lookup_set(lookup, user, "MASTER_PORT");
    if (port) return read_port(port, out, err, err_size);
    const char *job = lookup_set(lookup, user, "SLURM_JOB_ID");
    if (!job) {
        snprintf(err, err_size, "neither MASTER_PORT nor SLURM_JOB_ID is set: rank 0's port is MASTER_PORT, else "
                 "derived from the job's id (run under srun, or set MASTER_PORT)");
        return -1;
    }
    int64_t id;
    if (read_whole("SLURM_JOB_ID", job, 0, INT64_MAX / 2, &id, err, err_size) != 0) return -1;
    out->master_port = RANK_ENV_PORT_BASE + (int)(id % RANK_ENV_PORT_SPAN);
    snprintf(out->port_from, sizeof out->port_from, "SLURM_JOB_ID %lld", (long long)id);
    return 0;
}

int rank_env_read(rank_launcher from, rank_env_lookup lookup, void *user, rank_env *out, char *err,
                  size_t err_size) {
    memset(out, 0, sizeof *out);
    if (from == RANK_LAUNCHER_ENV) return read_env(lookup, user, out, err, err_size);
    if (from == RANK_LAUNCHER_SLURM) return read_slurm(lookup, user, out, err, err_size);
    snprintf(err, err_size, "no launcher named: --launcher env or slurm");
    return -1;
}
