#include "models/core/kernel_scope.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


kernel_class kernel_class_of_name(const char *kernel) {
    if (!kernel) return KCLASS_OTHER;
    if (!strncmp(kernel, "[memcpy", 7) || !strncmp(kernel, "[memset", 7)) return KCLASS_COPY;
    if (strstr(kernel, "nccl") || strstr(kernel, "NCCL")) return KCLASS_COLLECTIVE;
    return KCLASS_OTHER;
}

/* --- the table --------------------------------------------------------------------------------- */

/* Open addressing over a power of two; a slot's `used` says it holds an entry. */
typedef struct name_slot {
    const void *key;
    int name;                 /* index into names */
    int used;
} name_slot;

typedef struct scope_slot {
    uint64_t hash;
    int id;                   /* 0: empty (scope 0 is never looked up) */
} scope_slot;

struct kernel_scopes {
    pthread_mutex_t lock;
    char (*names)[KERNEL_LAYER_MAX];
    int name_count, name_cap;
    name_slot *by_key;
    int key_cap, key_count;
    kernel_scope_info *scopes;
    int scope_count, scope_cap;
    scope_slot *by_scope;
    int slot_cap;
};

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
    return x;
}

static uint64_t scope_hash(const char *layer, kernel_pass pass, kernel_class cls) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the name, then the pass and class */
    for (const unsigned char *p = (const unsigned char *)layer; *p; p++) h = (h ^ *p) * 1099511628211ULL;
    return mix64(h ^ ((uint64_t)pass << 40) ^ ((uint64_t)cls << 48));
}

kernel_scopes *kernel_scopes_create(void) {
    kernel_scopes *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->scope_cap = 64;
    s->scopes = calloc((size_t)s->scope_cap, sizeof *s->scopes);
    s->slot_cap = 128;
    s->by_scope = calloc((size_t)s->slot_cap, sizeof *s->by_scope);
    if (!s->scopes || !s->by_scope) {
        kernel_scopes_free(s);
        return NULL;
    }
    kernel_scope_info *none = &s->scopes[s->scope_count++];
    snprintf(none->layer, sizeof none->layer, "-");
    none->pass = KPASS_NONE, none->cls = KCLASS_OTHER;
    return s;
}

void kernel_scopes_free(kernel_scopes *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->lock);
    free(s->names);
    free(s->by_key);
    free(s->scopes);
    free(s->by_scope);
    free(s);
}

static int key_find(const kernel_scopes *s, const void *key) {
    if (!s->key_cap) return -1;
    for (uint64_t i = mix64((uint64_t)(uintptr_t)key);; i++) {
        const name_slot *slot = &s->by_key[i & (uint64_t)(s->key_cap - 1)];
        if (!slot->used) return -1;
        if (slot->key == key) return slot->name;
    }
}

static void key_put(name_slot *table, int cap, const void *key, int name) {
    for (uint64_t i = mix64((uint64_t)(uintptr_t)key);; i++) {
        name_slot *slot = &table[i & (uint64_t)(cap - 1)];
        if (!slot->used) {
            *slot = (name_slot){key, name, 1};
            return;
        }
    }
}

static int name_locked(kernel_scopes *s, const void *key, const char *layer) {
    if (key_find(s, key) >= 0) return 0;
    if (s->name_count == s->name_cap) {
        int cap = s->name_cap ? 2 * s->name_cap : 256;
        void *grown = realloc(s->names, (size_t)cap * sizeof *s->names);
        if (!grown) return -1;
        s->names = grown, s->name_cap = cap;
    }
    if (2 * (s->key_count + 1) > s->key_cap) { /* at most half full */
        int cap = s->key_cap ? 2 * s->key_cap : 512;
        name_slot *table = calloc((size_t)cap, sizeof *table);
        if (!table) return -1;
        for (int i = 0; i < s->key_cap; i++)
            if (s->by_key[i].used) key_put(table, cap, s->by_key[i].key, s->by_key[i].name);
        free(s->by_key);
        s->by_key = table, s->key_cap = cap;
    }
    snprintf(s->names[s->name_count], KERNEL_LAYER_MAX, "%s", layer);
    key_put(s->by_key, s->key_cap, key, s->name_count++);
    s->key_count++;
    return 0;
}

int kernel_scopes_name(kernel_scopes *s, const void *key, const char *layer) {
    pthread_mutex_lock(&s->lock);
    int rc = name_locked(s, key, layer);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int kernel_scopes_name_params(kernel_scopes *s, const char *const *names, const void *const *keys, int count) {
    static const char suffix[] = ".weight";
    const size_t n = sizeof suffix - 1;
    for (int i = 0; i < count; i++) {
        size_t len = strlen(names[i]);
        if (!keys[i] || len <= n || strcmp(names[i] + len - n, suffix) != 0) continue;
        char layer[KERNEL_LAYER_MAX];
        snprintf(layer, sizeof layer, "%.*s", (int)(len - n), names[i]);
        if (kernel_scopes_name(s, keys[i], layer) != 0) return -1;
    }
    return 0;
}

static int slot_of(const kernel_scopes *s, uint64_t hash, const char *layer, kernel_pass pass, kernel_class cls,
                   int *found) {
    for (uint64_t i = hash;; i++) {
        int at = (int)(i & (uint64_t)(s->slot_cap - 1));
        const scope_slot *slot = &s->by_scope[at];
        if (!slot->id) {
            *found = 0;
            return at;
        }
        const kernel_scope_info *info = &s->scopes[slot->id];
        if (slot->hash == hash && info->pass == pass && info->cls == cls && !strcmp(info->layer, layer)) {
            *found = slot->id;
            return at;
        }
    }
}

static int grow_scopes(kernel_scopes *s) {
    if (s->scope_count == s->scope_cap) {
        int cap = 2 * s->scope_cap;
        void *grown = realloc(s->scopes, (size_t)cap * sizeof *s->scopes);
        if (!grown) return -1;
        s->scopes = grown, s->scope_cap = cap;
    }
    if (2 * (s->scope_count + 1) <= s->slot_cap) return 0;
    int cap = 2 * s->slot_cap;
    scope_slot *table = calloc((size_t)cap, sizeof *table);
    if (!table) return -1;
    for (int i = 0; i < s->slot_cap; i++) {
        if (!s->by_scope[i].id) continue;
        uint64_t j = s->by_scope[i].hash;
        while (table[j & (uint64_t)(cap - 1)].id) j++;
        table[j & (uint64_t)(cap - 1)] = s->by_scope[i];
    }
    free(s->by_scope);
    s->by_scope = table, s->slot_cap = cap;
    return 0;
}

int kernel_scopes_intern(kernel_scopes *s, const void *key, const char *name, kernel_pass pass, kernel_class cls,
                         double flops, double bytes) {
    pthread_mutex_lock(&s->lock);
    int named = key ? key_find(s, key) : -1;
    const char *layer = named >= 0 ? s->names[named] : name ? name : "?";
    uint64_t hash = scope_hash(layer, pass, cls);
    int id = 0, at = slot_of(s, hash, layer, pass, cls, &id);
    if (!id && grow_scopes(s) == 0) {
        at = slot_of(s, hash, layer, pass, cls, &id); /* the table may have grown */
        id = s->scope_count++;
        kernel_scope_info *info = &s->scopes[id];
        snprintf(info->layer, sizeof info->layer, "%s", layer);
        info->pass = pass, info->cls = cls, info->flops = flops, info->bytes = bytes;
        s->by_scope[at] = (scope_slot){hash, id};
    } else if (!id) {
        id = -1;
    }
    pthread_mutex_unlock(&s->lock);
    return id;
}

int kernel_scopes_count(const kernel_scopes *s) {
    pthread_mutex_lock((pthread_mutex_t *)&s->lock);
    int n = s->scope_count;
    pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    return n;
}

kernel_scope_info kernel_scopes_info(const kernel_scopes *s, int id) {
    pthread_mutex_lock((pthread_mutex_t *)&s->lock);
    kernel_scope_info info = s->scopes[id > 0 && id < s->scope_count ? id : 0];
    pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    return info;
}

/* --- the mark ---------------------------------------------------------------------------------- */

static _Thread_local kernel_scopes *bound;
static _Thread_local int current;

#define TOKEN_BOUND_HERE (1 << 30) /* the mark bound the thread: its leave unbinds it */

void kernel_scope_bind_thread(kernel_scopes *s) { bound = s, current = 0; }
void kernel_scope_unbind_thread(void) { bound = NULL, current = 0; }

kernel_scopes *kernel_scope_current(int *scope) {
    *scope = bound ? current : 0;
    return bound;
}

int kernel_scope_enter(kernel_scopes *s, const void *key, const char *name, kernel_pass pass, kernel_class cls,
                       double flops, double bytes) {
    if (!s) return -1;
    int id = kernel_scopes_intern(s, key, name, pass, cls, flops, bytes);
    int token = current | (bound ? 0 : TOKEN_BOUND_HERE);
    if (!bound) bound = s;
    if (id >= 0) current = id; /* out of memory: the launches stay in the enclosing scope */
    return token;
}

void kernel_scope_leave(int token) {
    if (token < 0) return;
    current = token & ~TOKEN_BOUND_HERE;
    if (token & TOKEN_BOUND_HERE) bound = NULL, current = 0;
}
