/* The process's kernel tracer (models/core/kernel_trace.c) on the host, CUPTI played by this file:
 * the CUPTI functions the tracer calls are defined here, so the linker takes them before
 * libcupti's. Two jobs of one process trace one window each, one after the other, as job_host's
 * jobs do since they set up in turn (each job's window comes while the other sets up or tears
 * down, inside CUDA calls): the API callbacks go on with the subscription and no window switches
 * them, each job's eager copy is filed under its own scope, and the last job out unsubscribes.
 * tests/runner/gpu_kernel_trace.c traces real jobs. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cupti.h>

#include "models/core/kernel_trace.h"

/* --- CUPTI, as the tracer sees it ------------------------------------------------------------- */

static CUpti_CallbackFunc subscribed;
static CUpti_BuffersCallbackRequestFunc buffer_requested;
static CUpti_BuffersCallbackCompleteFunc buffer_completed;
static int api_on[CUPTI_CB_DOMAIN_SIZE];
static int api_switches;      /* runtime or driver domain turned on or off */
static int records_on;
static CUpti_ActivityMemcpy6 pending[16]; /* records made, not handed over yet */
static size_t pending_count;
static char subscriber_handle;

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *user) {
    *subscriber = (CUpti_SubscriberHandle)&subscriber_handle;
    subscribed = callback;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    subscribed = NULL;
    memset(api_on, 0, sizeof api_on);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc clock) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
    buffer_requested = requested, buffer_completed = completed;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        api_switches += api_on[domain] != (enable != 0);
        api_on[domain] = enable != 0;
    }
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) records_on = 1;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) records_on = 0;
    return CUPTI_SUCCESS;
}

/* Every record made so far, in one buffer, through the tracer's own callbacks. */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    if (!pending_count) return CUPTI_SUCCESS;
    uint8_t *buffer = NULL;
    size_t size = 0, most = 0, valid = pending_count * sizeof pending[0];
    buffer_requested(&buffer, &size, &most);
    assert_true(buffer && size >= valid);
    memcpy(buffer, pending, valid);
    pending_count = 0;
    buffer_completed(NULL, 0, buffer, size, valid);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    uint8_t *next = *record ? (uint8_t *)*record + sizeof pending[0] : buffer;
    if (next + sizeof pending[0] > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped) {
    *dropped = 0;
    return CUPTI_SUCCESS;
}

/* --- the jobs' side ----------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A copy's record, run now on a stream no job made, while copies are recorded. */
static void copy_ran(uint32_t correlation) {
    if (!records_on) return;
    assert_true(pending_count < sizeof pending / sizeof pending[0]);
    CUpti_ActivityMemcpy6 *m = &pending[pending_count++];
    memset(m, 0, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY, m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m->start = now_ns(), m->end = m->start + 1000;
    m->contextId = 1, m->streamId = 99, m->correlationId = correlation;
}

/* A cudaMemcpyAsync by the job's thread in its scope `name`: CUPTI calls back at its entry while
 * the runtime's domain is on, then the copy runs. The scope's id. */
static int copy(kernel_scopes *s, const char *name, uint32_t correlation) {
    kernel_scope_bind_thread(s);
    int token = kernel_scope_enter(s, NULL, name, KPASS_NONE, KCLASS_COPY, 0, 0), scope;
    kernel_scope_current(&scope);
    CUpti_CallbackData entry = {.callbackSite = CUPTI_API_ENTER, .functionName = "cudaMemcpyAsync",
                                .correlationId = correlation};
    if (subscribed && api_on[CUPTI_CB_DOMAIN_RUNTIME_API])
        subscribed(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &entry);
    copy_ran(correlation);
    kernel_scope_leave(token);
    return scope;
}

/* The job's window with one copy in it: the tally holds that copy, in its scope. */
static void trace_window(kernel_trace_job *j, kernel_scopes *s, const char *name, uint32_t correlation) {
    char err[512];
    double t0 = (double)now_ns() * 1e-9 - 10, t1 = t0 + 20;
    assert_int_equal(kernel_trace_start(j, t0, t1, err, sizeof err), 0);
    int scope = copy(s, name, correlation);
    assert_true(scope > 0);
    kernel_tally *t = kernel_trace_stop(j, t1, err, sizeof err);
    assert_non_null(t);
    const kernel_tally_row *rows;
    assert_int_equal(kernel_tally_kernels(t), 1);
    assert_int_equal(kernel_tally_rows(t, &rows), 1);
    assert_int_equal(rows[0].scope, scope);
    assert_int_equal(rows[0].count, 1);
    kernel_tally_free(t);
}

static void test_two_jobs_one_window_each(void **state) {
    char err[512];
    kernel_scopes *sa = kernel_scopes_create(), *sb = kernel_scopes_create();
    assert_true(sa && sb);
    kernel_trace_job *a = kernel_trace_join(sa, err, sizeof err);
    kernel_trace_job *b = kernel_trace_join(sb, err, sizeof err);
    assert_true(a && b);
    assert_int_equal(api_switches, 2); /* the runtime's and the driver's callbacks, on */
    trace_window(a, sa, "input", 101);
    copy(sb, "model", 201); /* between the windows: the second job sets up */
    trace_window(b, sb, "input.upload", 301);
    assert_int_equal(api_switches, 2); /* neither window switched them */
    kernel_trace_leave(a);
    kernel_trace_leave(b);
    assert_null(subscribed); /* the last job out unsubscribed */
    kernel_scopes_free(sa);
    kernel_scopes_free(sb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_jobs_one_window_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
