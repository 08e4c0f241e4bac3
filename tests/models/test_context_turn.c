/* Turns at the device's process-wide work (models/core/context.h): the jobs of one process take
 * turns for set-up and teardown, since a capture fails when another thread synchronises the device.
 * On the host (no GPU): one holder at a time, a second take by the holder and a give by a thread
 * that holds nothing change nothing, and a job that failed while holding gives it back. The order
 * is read from what each thread saw, never from how long anything took. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "models/core/context.h"

static atomic_int inside, most_inside, entered;

/* Each thread takes the turn, counts how many threads are inside with it, and gives it back. */
static void *take_count_give(void *arg) {
    (void)arg;
    for (int round = 0; round < 2000; round++) {
        context_turn_take();
        context_turn_take(); /* the holder again: nothing */
        int now = atomic_fetch_add(&inside, 1) + 1;
        int seen = atomic_load(&most_inside);
        while (now > seen && !atomic_compare_exchange_weak(&most_inside, &seen, now)) {}
        atomic_fetch_add(&entered, 1);
        atomic_fetch_sub(&inside, 1);
        context_turn_give();
        context_turn_give(); /* holds nothing now: nothing */
    }
    return NULL;
}

static void test_one_holder_at_a_time(void **state) {
    (void)state;
    enum { THREADS = 6 };
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, take_count_give, NULL), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&entered), THREADS * 2000);
    assert_int_equal(atomic_load(&most_inside), 1);
}

/* A thread that ends while holding the turn would stop every other job's set-up: the failing
 * job's unwinding gives it back (runner/train/job_host.c), which this stands for. */
static void *take_and_fail(void *arg) {
    jmp_buf *unwind = arg;
    context_turn_take();
    longjmp(*unwind, 1);
}

static void *fail_then_give(void *arg) {
    (void)arg;
    jmp_buf unwind;
    if (setjmp(unwind) == 0) take_and_fail(&unwind);
    context_turn_give();
    return NULL;
}

static void test_a_failed_holder_gives_back(void **state) {
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_then_give, NULL), 0);
    pthread_join(t, NULL);
    context_turn_take(); /* would wait for ever if the failed thread still held it */
    context_turn_give();
}

static void test_giving_without_holding_is_nothing(void **state) {
    (void)state;
    context_turn_give();
    context_turn_take();
    context_turn_give();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_holder_at_a_time),
        cmocka_unit_test(test_a_failed_holder_gives_back),
        cmocka_unit_test(test_giving_without_holding_is_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
