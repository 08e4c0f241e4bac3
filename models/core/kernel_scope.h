/* What launched a kernel: the layer and pass, and the kind of work (issue 49's classes), as one
 * small integer per job, the scope. Layers mark the span of their launches with a scope; the
 * kernel tracer (models/core/kernel_trace.h) reads the launching thread's mark when a kernel
 * becomes a graph node at capture or is launched eagerly, and files every kernel it records under
 * that scope. Host only: the tracer and the CPU tests use the same table.
 *
 * A layer is named by its model's parameter names (models/core/model.h's param table: the weight
 * "layer3.2.conv2.weight" names the layer "layer3.2.conv2"), looked up by the weight's address,
 * so that the layer functions, which hold the weight, can mark their launches without each model
 * naming its layers again. Layers without a weight (pooling, the loss, the optimizer) give a name.
 *
 * The mark is a thread's (each job launches from its own thread: runner/train/job_host.c), and it
 * costs one test when the job does not trace: a job's scope table is NULL then
 * (job_context.scopes). */
#ifndef SUITE_KERNEL_SCOPE_H
#define SUITE_KERNEL_SCOPE_H

#include <stddef.h>

#include "base/kernel_class.h"

/* A kernel recorded outside every scope, by its name alone: copies and memsets (CUPTI names them
 * "[memcpy ...]", "[memset]"), NCCL's collectives; other otherwise. */
kernel_class kernel_class_of_name(const char *kernel);

#define KERNEL_LAYER_MAX 96

typedef struct kernel_scope_info {
    char layer[KERNEL_LAYER_MAX];  /* "layer3.2.conv2", "bn1", "loss"; "-" for scope 0 */
    kernel_pass pass;
    kernel_class cls;
    double flops, bytes;           /* per launch of the scope, from the layer's shape; 0: unknown */
} kernel_scope_info;

/* One job's table: its layers' names by their weights' addresses, and its scopes. Scope 0 is the
 * job's kernels that no mark covers ("-", "-", other). Thread-safe for the job's threads. */
typedef struct kernel_scopes kernel_scopes;

kernel_scopes *kernel_scopes_create(void);   /* NULL when out of memory */
void kernel_scopes_free(kernel_scopes *s);
/* Names the layer whose weight is at key (the name given whole: no ".weight" to strip). 0, or -1
 * when out of memory. A key named twice keeps its first name. */
int kernel_scopes_name(kernel_scopes *s, const void *key, const char *layer);
/* Names every layer of a parameter table's form: for each (name, address), a name ending in
 * ".weight" names the layer before it (embedding tables, whose weight is the table, too). */
int kernel_scopes_name_params(kernel_scopes *s, const char *const *names, const void *const *keys, int count);
/* The scope of (layer, pass, class), made on first use; flops and bytes are the first use's. The
 * layer is key's name, else `name`, else "?" (a layer no table named). -1 when out of memory. */
int kernel_scopes_intern(kernel_scopes *s, const void *key, const char *name, kernel_pass pass, kernel_class cls,
                         double flops, double bytes);
int kernel_scopes_count(const kernel_scopes *s);
/* Scope id's description (a copy: the table may grow meanwhile); scope 0's for an id outside. */
kernel_scope_info kernel_scopes_info(const kernel_scopes *s, int id);

/* --- the mark -------------------------------------------------------------------------------- */

/* This thread launches the job's work: until kernel_scope_unbind_thread, its launches belong to s
 * (scope 0 outside every mark). */
void kernel_scope_bind_thread(kernel_scopes *s);
void kernel_scope_unbind_thread(void);
/* The calling thread's job and scope (the tracer's callbacks read them); NULL when unbound. */
kernel_scopes *kernel_scope_current(int *scope);

/* Marks the launches that follow on this thread as (key's layer or name, pass, class) until
 * kernel_scope_leave with the returned token; marks nest. s NULL (the job does not trace):
 * nothing, and the token is -1. */
int kernel_scope_enter(kernel_scopes *s, const void *key, const char *name, kernel_pass pass, kernel_class cls,
                       double flops, double bytes);
void kernel_scope_leave(int token);

#endif
