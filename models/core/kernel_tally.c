#include "models/core/kernel_tally.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ptr_slot {
    const char *ptr;
    int name;
} ptr_slot;

typedef struct row_slot {
    uint64_t key;              /* scope << 32 | name; 0 with row < 0: empty */
    int row;
} row_slot;

struct kernel_tally {
    int64_t t0_ns, t1_ns;
    double t0, t1;
    char **names;
    int name_count, name_cap;
    ptr_slot *by_ptr;          /* CUPTI's name pointers seen, to their name */
    int ptr_cap, ptr_count;
    kernel_tally_row *rows;
    size_t row_count, row_cap;
    row_slot *by_key;
    size_t key_cap;
    int rows_sorted;
    kernel_interval *intervals;
    size_t interval_count, interval_cap, interval_max;
    int intervals_sorted;
    uint64_t kernels, dropped;
};

/* Unix seconds to ns, exact to the double: seconds and fraction apart. */
static int64_t ns_of(double t) {
    if (!isfinite(t)) return t > 0 ? INT64_MAX : INT64_MIN;
    double whole = floor(t);
    return (int64_t)whole * 1000000000LL + llround((t - whole) * 1e9);
}

kernel_tally *kernel_tally_create(double t0, double t1, size_t interval_cap) {
    kernel_tally *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->t0 = t0, t->t1 = t1;
    t->t0_ns = ns_of(t0), t->t1_ns = ns_of(t1);
    t->interval_max = interval_cap;
    t->rows_sorted = t->intervals_sorted = 1;
    return t;
}

void kernel_tally_free(kernel_tally *t) {
    if (!t) return;
    for (int i = 0; i < t->name_count; i++) free(t->names[i]);
    free(t->names);
    free(t->by_ptr);
    free(t->rows);
    free(t->by_key);
    free(t->intervals);
    free(t);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
    return x;
}

static void ptr_put(ptr_slot *table, int cap, const char *ptr, int name) {
    for (uint64_t i = mix64((uint64_t)(uintptr_t)ptr);; i++) {
        ptr_slot *slot = &table[i & (uint64_t)(cap - 1)];
        if (!slot->ptr) {
            *slot = (ptr_slot){ptr, name};
            return;
        }
    }
}

/* The name's index: by CUPTI's pointer (its names are shared by every record of one kernel), else
 * by its text (few distinct kernels); -1 when out of memory. */
static int name_of(kernel_tally *t, const char *name) {
    if (!name) name = "?";
    for (uint64_t i = mix64((uint64_t)(uintptr_t)name); t->ptr_cap; i++) {
        const ptr_slot *slot = &t->by_ptr[i & (uint64_t)(t->ptr_cap - 1)];
        if (!slot->ptr) break;
        if (slot->ptr == name) return slot->name;
    }
    int found = -1;
    for (int k = 0; k < t->name_count && found < 0; k++)
        if (!strcmp(t->names[k], name)) found = k;
    if (found < 0) {
        if (t->name_count == t->name_cap) {
            int cap = t->name_cap ? 2 * t->name_cap : 64;
            char **grown = realloc(t->names, (size_t)cap * sizeof *grown);
            if (!grown) return -1;
            t->names = grown, t->name_cap = cap;
        }
        char *copy = strdup(name);
        if (!copy) return -1;
        found = t->name_count;
        t->names[t->name_count++] = copy;
    }
    if (2 * (t->ptr_count + 1) > t->ptr_cap) {
        int cap = t->ptr_cap ? 2 * t->ptr_cap : 128;
        ptr_slot *table = calloc((size_t)cap, sizeof *table);
        if (!table) return found; /* found, only not remembered by its pointer */
        for (int k = 0; k < t->ptr_cap; k++)
            if (t->by_ptr[k].ptr) ptr_put(table, cap, t->by_ptr[k].ptr, t->by_ptr[k].name);
        free(t->by_ptr);
        t->by_ptr = table, t->ptr_cap = cap;
    }
    ptr_put(t->by_ptr, t->ptr_cap, name, found);
    t->ptr_count++;
    return found;
}

static void key_put(row_slot *table, size_t cap, uint64_t key, int row) {
    for (uint64_t i = mix64(key);; i++) {
        row_slot *slot = &table[i & (cap - 1)];
        if (slot->row < 0) {
            *slot = (row_slot){key, row};
            return;
        }
    }
}

static kernel_tally_row *row_of(kernel_tally *t, int scope, kernel_class cls, int name) {
    uint64_t key = (uint64_t)(uint32_t)scope << 32 | (uint32_t)name;
    for (uint64_t i = mix64(key); t->key_cap; i++) {
        const row_slot *slot = &t->by_key[i & (t->key_cap - 1)];
        if (slot->row < 0) break;
        if (slot->key == key) return &t->rows[slot->row];
    }
    if (t->row_count == t->row_cap) {
        size_t cap = t->row_cap ? 2 * t->row_cap : 256;
        kernel_tally_row *grown = realloc(t->rows, cap * sizeof *grown);
        if (!grown) return NULL;
        t->rows = grown, t->row_cap = cap;
    }
    if (2 * (t->row_count + 1) > t->key_cap) {
        size_t cap = t->key_cap ? 2 * t->key_cap : 512;
        row_slot *table = malloc(cap * sizeof *table);
        if (!table) return NULL;
        for (size_t k = 0; k < cap; k++) table[k].row = -1;
        for (size_t k = 0; k < t->key_cap; k++)
            if (t->by_key[k].row >= 0) key_put(table, cap, t->by_key[k].key, t->by_key[k].row);
        free(t->by_key);
        t->by_key = table, t->key_cap = cap;
    }
    kernel_tally_row *r = &t->rows[t->row_count];
    *r = (kernel_tally_row){.scope = scope, .cls = cls, .name = name, .min_ns = INT64_MAX};
    key_put(t->by_key, t->key_cap, key, (int)t->row_count++);
    return r;
}

int kernel_tally_add(kernel_tally *t, uint64_t start_ns, uint64_t end_ns, int scope, kernel_class cls,
                     uint32_t stream, const char *name) {
    int64_t start = (int64_t)start_ns, end = (int64_t)end_ns;
    if (start < t->t0_ns || start > t->t1_ns || end < start) return 0;
    t->kernels++;
    int n = name_of(t, name);
    kernel_tally_row *r = n >= 0 ? row_of(t, scope, cls, n) : NULL;
    if (!r) {
        t->dropped++;
        return -1;
    }
    int64_t ns = end - start;
    r->count++;
    r->total_ns += ns;
    if (ns < r->min_ns) r->min_ns = ns;
    if (ns > r->max_ns) r->max_ns = ns;
    t->rows_sorted = 0;
    if (t->interval_count == t->interval_max) {
        t->dropped++;
        return 0;
    }
    if (t->interval_count == t->interval_cap) {
        size_t cap = t->interval_cap ? 2 * t->interval_cap : 65536;
        if (cap > t->interval_max) cap = t->interval_max;
        kernel_interval *grown = realloc(t->intervals, cap * sizeof *grown);
        if (!grown) {
            t->dropped++;
            return -1;
        }
        t->intervals = grown, t->interval_cap = cap;
    }
    t->intervals[t->interval_count++] =
        (kernel_interval){start - t->t0_ns, end - t->t0_ns, scope, (int16_t)cls, stream};
    t->intervals_sorted = 0;
    return 0;
}

void kernel_tally_lost(kernel_tally *t, uint64_t records) { t->dropped += records; }

void kernel_tally_close(kernel_tally *t, double t1) {
    t->t1 = t1;
    t->t1_ns = ns_of(t1);
}

double kernel_tally_t0(const kernel_tally *t) { return t->t0; }
double kernel_tally_t1(const kernel_tally *t) { return t->t1; }
uint64_t kernel_tally_kernels(const kernel_tally *t) { return t->kernels; }
uint64_t kernel_tally_dropped(const kernel_tally *t) { return t->dropped; }
const char *kernel_tally_name(const kernel_tally *t, int name) {
    return name >= 0 && name < t->name_count ? t->names[name] : "?";
}

static int by_scope_then_total(const void *a, const void *b) {
    const kernel_tally_row *x = a, *y = b;
    if (x->scope != y->scope) return x->scope < y->scope ? -1 : 1;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

size_t kernel_tally_rows(kernel_tally *t, const kernel_tally_row **rows) {
    if (!t->rows_sorted && t->row_count) {
        qsort(t->rows, t->row_count, sizeof *t->rows, by_scope_then_total);
        for (size_t k = 0; k < t->key_cap; k++) t->by_key[k].row = -1; /* the rows moved: index them again */
        for (size_t r = 0; r < t->row_count; r++)
            key_put(t->by_key, t->key_cap, (uint64_t)(uint32_t)t->rows[r].scope << 32 | (uint32_t)t->rows[r].name,
                    (int)r);
    }
    t->rows_sorted = 1;
    *rows = t->rows;
    return t->row_count;
}

static int by_start(const void *a, const void *b) {
    const kernel_interval *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

size_t kernel_tally_intervals(kernel_tally *t, const kernel_interval **intervals) {
    if (!t->intervals_sorted && t->interval_count) qsort(t->intervals, t->interval_count, sizeof *t->intervals, by_start);
    t->intervals_sorted = 1;
    *intervals = t->intervals;
    return t->interval_count;
}
