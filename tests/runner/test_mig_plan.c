/* MIG profile tables and planner (runner/suite/plan/mig_plan.h), CPU only: the shipped tables of
 * A100-40GB, A100-80GB, H100-80GB, H200-141GB and A30-24GB against NVIDIA's documented values,
 * plans for the study's mixes under both objectives, layout enumeration and overrides, the
 * placement checker, and every refusal with its numbers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/plan/mig_plan.h"
#include "tests/support/testutil.h"

#define GiB(x) ((unsigned long long)((x) * 1073741824.0))

static mig_plan plan;  /* a plan holds a whole table: kept off the test stack */
static char err[4096];

static const mig_gpu *gpu(const char *name) {
    const mig_gpu *g = mig_known_gpu(name);
    if (!g) fail_msg("no shipped table for %s", name);
    return g;
}

static void expect_in(const char *text, const char *word) {
    if (!strstr(text, word)) fail_msg("\"%s\" lacks \"%s\"", text, word);
}

static const mig_profile *planned_profile(int i) { return &plan.gpu.profiles[plan.instances[i].profile]; }

static void plan_ok(const char *gpu_name, const mig_job *jobs, int n, const char *layout) {
    if (mig_plan_jobs(&plan, gpu(gpu_name), jobs, n, layout, 0, 0, err, sizeof err) != 0)
        fail_msg("plan on %s failed: %s", gpu_name, err);
    assert_int_equal(plan.count, n);
    int profiles[MIG_MAX_INSTANCES];
    mig_placement placements[MIG_MAX_INSTANCES];
    for (int i = 0; i < n; i++) profiles[i] = plan.instances[i].profile, placements[i] = plan.instances[i].placement;
    assert_int_equal(mig_check_placements(&plan.gpu, profiles, placements, n, 0, 0, err, sizeof err), 0);
}

static void plan_fails(const char *gpu_name, const mig_job *jobs, int n, const char *layout, ...) {
    if (mig_plan_jobs(&plan, gpu(gpu_name), jobs, n, layout, 0, 0, err, sizeof err) == 0)
        fail_msg("plan on %s accepted what it should refuse", gpu_name);
    va_list ap;
    va_start(ap, layout);
    for (const char *word = va_arg(ap, const char *); word; word = va_arg(ap, const char *)) expect_in(err, word);
    va_end(ap);
}

/* ---- tables --------------------------------------------------------------------------------- */

static void test_tables_are_consistent(void **state) {
    const char *names[] = {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "A30-24GB"};
    for (int t = 0; t < 5; t++) {
        const mig_gpu *g = gpu(names[t]);
        expect_ge(g->profile_count, 5);
        expect_le(g->memory_slices, MIG_MAX_SLICES);
        for (int i = 0; i < g->profile_count; i++) {
            const mig_profile *p = &g->profiles[i];
            expect_ge(p->placement_count, 1);
            expect_gt(p->sm_count, 0); expect_le(p->sm_count, g->total_sms);
            expect_le(p->memory_mib, g->total_memory_mib);
            for (int k = 0; k < p->placement_count; k++) {
                assert_int_equal(p->placements[k].size, p->memory_slices);
                expect_le(p->placements[k].start + p->placements[k].size, g->memory_slices);
            }
            /* for the plain profiles the placements alone bound the instance count */
            if (p->plannable) assert_int_equal(p->max_instances, p->placement_count);
        }
        char report[256];
        assert_int_equal(mig_compare_tables(g, g, report, sizeof report), 0);
        assert_string_equal(report, "");
    }
    assert_ptr_equal(mig_known_gpu("a100-40gb"), gpu("A100-40GB"));
    assert_null(mig_known_gpu("V100-32GB"));
    assert_null(mig_known_gpu(NULL));
    expect_in(mig_known_gpu_names(), "H200-141GB");
}

static void test_a100_40gb_is_nvidias_table(void **state) {
    const mig_gpu *g = gpu("A100-40GB");
    assert_int_equal(g->compute_slices, 7);
    assert_int_equal(g->memory_slices, 8);
    assert_int_equal(g->total_sms, 108);
    struct { const char *name; unsigned id; int cs, ms, sms, count, first, last; } want[] = {
        {"1g.5gb", 19, 1, 1, 14, 7, 0, 6}, {"1g.10gb", 15, 1, 2, 14, 4, 0, 6},
        {"2g.10gb", 14, 2, 2, 28, 3, 0, 4}, {"3g.20gb", 9, 3, 4, 42, 2, 0, 4},
        {"4g.20gb", 5, 4, 4, 56, 1, 0, 0}, {"7g.40gb", 0, 7, 8, 98, 1, 0, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int index = mig_find_profile(g, want[i].name);
        expect_ge(index, 0);
        const mig_profile *p = &g->profiles[index];
        assert_int_equal(p->id, want[i].id);
        assert_int_equal(p->compute_slices, want[i].cs);
        assert_int_equal(p->memory_slices, want[i].ms);
        assert_int_equal(p->sm_count, want[i].sms);
        assert_int_equal(p->placement_count, want[i].count);
        assert_int_equal(p->placements[0].start, want[i].first);
        assert_int_equal(p->placements[p->placement_count - 1].start, want[i].last);
        assert_true(p->plannable);
    }
    int me = mig_find_profile(g, "MIG 1g.5gb+me");  /* nvidia-smi's spelling works too */
    expect_ge(me, 0);
    assert_false(g->profiles[me].plannable);
    assert_int_equal(g->profiles[me].max_instances, 1);
}

static void test_other_tables(void **state) {
    const mig_gpu *h100 = gpu("H100-80GB"), *h200 = gpu("H200-141GB"), *a30 = gpu("A30-24GB"),
                  *a100 = gpu("A100-80GB");
    assert_int_equal(h100->total_sms, 132);
    assert_int_equal(h100->profiles[mig_find_profile(h100, "1g.10gb")].sm_count, 16);
    assert_int_equal(h100->profiles[mig_find_profile(h100, "3g.40gb")].sm_count, 60);
    assert_int_equal(h100->profiles[mig_find_profile(h100, "7g.80gb")].sm_count, 132);
    assert_int_equal(h200->profiles[mig_find_profile(h200, "3g.71gb")].sm_count, 60);
    /* memory as NVML reports it on H100 80GB HBM3 and H200 (driver 580.159.04) */
    assert_int_equal(h100->profiles[mig_find_profile(h100, "1g.10gb")].memory_mib, 9984);
    assert_int_equal(h100->profiles[mig_find_profile(h100, "7g.80gb")].memory_mib, 81152);
    assert_int_equal(h200->profiles[mig_find_profile(h200, "1g.18gb")].memory_mib, 16384);
    assert_int_equal(h200->profiles[mig_find_profile(h200, "2g.35gb")].memory_mib, 33280);
    assert_int_equal(h200->profiles[mig_find_profile(h200, "7g.141gb")].memory_mib, 143360);
    assert_int_equal(a100->profiles[mig_find_profile(a100, "7g.80gb")].memory_slices, 8);
    assert_int_equal(a30->compute_slices, 4);
    assert_int_equal(a30->memory_slices, 4);
    const mig_profile *a30_2g = &a30->profiles[mig_find_profile(a30, "2g.12gb")];
    assert_int_equal(a30_2g->placement_count, 2);
    assert_int_equal(a30_2g->placements[1].start, 2);
}

static void test_device_names_map_to_tables(void **state) {
    assert_ptr_equal(mig_known_gpu_for_device("NVIDIA A100-SXM4-40GB", 40960), gpu("A100-40GB"));
    assert_ptr_equal(mig_known_gpu_for_device("NVIDIA A100 80GB PCIe", 81920), gpu("A100-80GB"));
    assert_ptr_equal(mig_known_gpu_for_device("NVIDIA H100 80GB HBM3", 81559), gpu("H100-80GB"));
    assert_ptr_equal(mig_known_gpu_for_device("NVIDIA H200", 143771), gpu("H200-141GB"));
    assert_ptr_equal(mig_known_gpu_for_device("NVIDIA A30", 24576), gpu("A30-24GB"));
    assert_null(mig_known_gpu_for_device("NVIDIA H100 PCIe", 81559));  /* 114 SMs: other table */
    assert_null(mig_known_gpu_for_device("NVIDIA GeForce RTX 4090", 24564));
}

static void test_compare_reports_each_difference(void **state) {
    static mig_gpu changed;
    changed = *gpu("A100-40GB");
    int one = mig_find_profile(&changed, "1g.5gb"), three = mig_find_profile(&changed, "3g.20gb");
    changed.profiles[one].sm_count = 16;
    changed.profiles[three].placements[1].start = 3;
    changed.profiles[three].memory_mib += 100;  /* 0.5%: within what drivers differ by */
    char report[1024];
    assert_int_equal(mig_compare_tables(gpu("A100-40GB"), &changed, report, sizeof report), 2);
    expect_in(report, "1g.5gb SM count: shipped 14, NVML 16");
    expect_in(report, "3g.20gb placements: shipped {0,4}:4, NVML {0,3}:4");
    changed.profiles[three].memory_mib = 9000;
    changed.profile_count--;  /* drops 7g.40gb, the last entry */
    assert_int_equal(mig_compare_tables(gpu("A100-40GB"), &changed, report, sizeof report), 4);
    expect_in(report, "3g.20gb memory");
    expect_in(report, "7g.40gb (id 0) is not in NVML's table");
}

/* ---- the planner ---------------------------------------------------------------------------- */

static void test_seven_small_jobs_take_seven_1g_5gb(void **state) {
    mig_job jobs[7];
    for (int i = 0; i < 7; i++) jobs[i] = (mig_job){"S", GiB(1.5), 0};
    plan_ok("A100-40GB", jobs, 7, NULL);
    unsigned seen = 0;
    for (int i = 0; i < 7; i++) {
        assert_string_equal(planned_profile(i)->name, "1g.5gb");
        assert_int_equal(plan.instances[i].sm_count, 14);
        assert_int_equal(plan.instances[i].memory_bytes, 4864ULL << 20);
        expect_gt(plan.instances[i].sm_fraction, 0.129); expect_lt(plan.instances[i].sm_fraction, 0.130);
        seen |= 1u << plan.instances[i].placement.start;
    }
    assert_int_equal(seen, 0x7F);  /* slices 0..6, one each */
    char command[128];
    mig_plan_admin_command(&plan, 0, command, sizeof command);
    assert_string_equal(command, "nvidia-smi mig -i 0 -cgi 19,19,19,19,19,19,19 -C");
    plan_ok("H100-80GB", jobs, 7, NULL);
    assert_string_equal(planned_profile(6)->name, "1g.10gb");
    plan_ok("H200-141GB", jobs, 7, NULL);
    assert_string_equal(planned_profile(0)->name, "1g.18gb");
    plan_ok("A100-80GB", jobs, 7, NULL);
    assert_string_equal(planned_profile(3)->name, "1g.10gb");
}

static void test_too_many_jobs(void **state) {
    mig_job jobs[8];
    for (int i = 0; i < 8; i++) jobs[i] = (mig_job){"S", GiB(1), 0};
    plan_fails("A100-40GB", jobs, 8, NULL, "8 jobs", "7 compute slices", "at most 7", NULL);
    plan_fails("A30-24GB", jobs, 5, NULL, "5 jobs", "at most 4", NULL);
}

static void test_small_medium_large(void **state) {
    mig_job jobs[3] = {{"S", GiB(1.5), 0}, {"M", GiB(4), 0}, {"L", GiB(12), 0}};
    plan_ok("A100-40GB", jobs, 3, NULL);
    assert_string_equal(planned_profile(0)->name, "1g.5gb");
    assert_string_equal(planned_profile(1)->name, "1g.10gb");  /* 5.15 GiB: smallest that holds it */
    assert_string_equal(planned_profile(2)->name, "3g.20gb");
    assert_string_equal(plan.instances[2].label, "L");
    plan_ok("H100-80GB", jobs, 3, NULL);
    assert_string_equal(planned_profile(0)->name, "1g.10gb");
    assert_string_equal(planned_profile(2)->name, "1g.20gb");
    /* the study's static layout for S+M+L, given as an override */
    plan_ok("A100-40GB", jobs, 3, " 1g.5gb, 2g.10gb ,4g.20gb ");
    assert_string_equal(planned_profile(1)->name, "2g.10gb");
    assert_int_equal(plan.instances[2].placement.start, 0);  /* 4g.20gb may only start at 0 */
    assert_int_equal(plan.instances[1].placement.start, 4);
    assert_int_equal(plan.instances[0].placement.start, 6);
    plan_fails("A30-24GB", jobs, 3, NULL, "does not fit A30-24GB", "6 memory", "4 memory", NULL);
}

static void test_headroom_decides_the_profile(void **state) {
    const mig_gpu *g = gpu("A100-40GB");
    assert_int_equal(mig_required_bytes(GiB(4)), GiB(4) + GiB(0.4) + (768ULL << 20));
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(3.6))].name, "1g.5gb");   /* 4.71 */
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(3.7))].name, "1g.10gb");  /* 4.82 */
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(8))].name, "1g.10gb");
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(9))].name, "3g.20gb");
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(34))].name, "7g.40gb");
    assert_string_equal(g->profiles[mig_smallest_profile(g, GiB(35))].name, "7g.40gb"); /* 39.25: exactly */
    assert_int_equal(mig_smallest_profile(g, GiB(35.01)), -1);
}

static void test_footprint_too_large(void **state) {
    mig_job jobs[2] = {{"S", GiB(1), 0}, {"L", GiB(45), 0}};
    plan_fails("A100-40GB", jobs, 2, NULL, "job 1 \"L\"", "footprint 45.00 GiB", "needs 50.25 GiB",
               "10% + 768 MiB", "largest profile on A100-40GB is 7g.40gb with 39.25 GiB", NULL);
}

static void test_layout_4g_and_3g_together_is_valid(void **state) {
    /* NVIDIA lists 4g.20gb + 3g.20gb as a valid A100 configuration: 4g.20gb may start only at
     * slice 0, so the 3g.20gb must take slices 4..7. Given in either order it is placed so. */
    mig_job jobs[2] = {{"a", GiB(8), 0}, {"b", GiB(8), 0}};
    plan_ok("A100-40GB", jobs, 2, "3g.20gb,4g.20gb");
    assert_int_equal(plan.instances[0].placement.start, 4);
    assert_int_equal(plan.instances[1].placement.start, 0);
    /* What fails is 3g.20gb at slice 0, where nvidia-smi's default placement puts the first one;
     * after that no 4g.20gb fits. The checker names it. */
    const mig_gpu *g = gpu("A100-40GB");
    int profiles[2] = {mig_find_profile(g, "3g.20gb"), mig_find_profile(g, "4g.20gb")};
    mig_placement at[2] = {{0, 4}, {0, 4}};
    assert_int_equal(mig_check_placements(g, profiles, at, 2, 0, 0, err, sizeof err), -1);
    expect_in(err, "instance 1 (4g.20gb) at memory slices 0..3 overlaps instance 0 (3g.20gb) on slice 0");
}

static void test_placement_checker(void **state) {
    const mig_gpu *g = gpu("A100-40GB");
    int one = mig_find_profile(g, "1g.5gb"), two = mig_find_profile(g, "2g.10gb"),
        four = mig_find_profile(g, "4g.20gb"), me = mig_find_profile(g, "1g.5gb+me");
    int profiles[3] = {two, one, one};
    mig_placement ok[3] = {{0, 2}, {2, 1}, {3, 1}};
    assert_int_equal(mig_check_placements(g, profiles, ok, 3, 0, 0, err, sizeof err), 0);
    mig_placement odd[1] = {{1, 2}};
    assert_int_equal(mig_check_placements(g, profiles, odd, 1, 0, 0, err, sizeof err), -1);
    expect_in(err, "2g.10gb may start only at {0,2,4}:2");
    mig_placement last[1] = {{7, 1}};
    assert_int_equal(mig_check_placements(g, &one, last, 1, 0, 0, err, sizeof err), -1);
    expect_in(err, "1g.5gb may start only at {0,1,2,3,4,5,6}:1");
    assert_int_equal(mig_check_placements(g, &four, (mig_placement[]){{0, 4}}, 1, 1u << 2, 1, err, sizeof err), -1);
    expect_in(err, "overlaps slice 2, held by an instance that already exists");
    int twice[2] = {me, me};
    mig_placement two_me[2] = {{0, 1}, {1, 1}};
    assert_int_equal(mig_check_placements(g, twice, two_me, 2, 0, 0, err, sizeof err), -1);
    expect_in(err, "2 instances of 1g.5gb+me; A100-40GB allows 1");
    int seven[8] = {one, one, one, one, one, one, one, one};
    mig_placement eight[8] = {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {6, 1}};
    assert_int_equal(mig_check_placements(g, seven, eight, 8, 0, 0, err, sizeof err), -1);
    expect_in(err, "overlaps instance 6");
}

static void test_layouts_that_break_the_rules(void **state) {
    mig_job three[3] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}, {"S", GiB(1), 0}};
    plan_fails("A100-40GB", three, 3, "3g.20gb,3g.20gb,1g.5gb", "the layout does not fit A100-40GB",
               "9 memory and 7 compute slices", "too few slices", "3g.20gb at {0,4}:4", NULL);
    plan_fails("A100-40GB", three, 3, "4g.20gb,2g.10gb,2g.10gb", "8 memory and 8 compute", NULL);
    plan_fails("A100-40GB", three, 2, "1g.5gb+me,1g.5gb+me", "at most 1 instance(s) of 1g.5gb+me", NULL);
    plan_fails("A100-40GB", three, 3, "1g.5gb,2g.10gb", "names 2 instance(s) for 3 job(s)", NULL);
    plan_fails("A100-40GB", three, 2, "1g.5gb,5g.25gb", "no profile \"5g.25gb\"", "3g.20gb (19.50 GiB)", NULL);
    plan_fails("A100-40GB", three, 2, "1g.5gb,,", "entry 2 is empty", NULL);
    mig_job big[1] = {{"M", GiB(6), 0}};
    plan_fails("A100-40GB", big, 1, "1g.5gb", "layout entry 1 1g.5gb (4.75 GiB) is too small for job 0 \"M\"",
               "needs 7.35 GiB", NULL);
    /* slices add up, but the only 4g.20gb placement is blocked by an existing instance on slice 3 */
    if (mig_plan_jobs(&plan, gpu("A100-40GB"), big, 1, "4g.20gb", 1u << 3, 1, err, sizeof err) == 0)
        fail_msg("4g.20gb placed over an existing instance");
    expect_in(err, "placement rules allow no arrangement");
    expect_in(err, "4g.20gb at {0}:4");
    expect_in(err, "held by existing instances");
}

static void test_free_space_and_existing_instances(void **state) {
    mig_job one[1] = {{"S", GiB(1), 0}};
    plan_ok("A100-40GB", one, 1, NULL);
    assert_int_equal(plan.instances[0].placement.start, 0);  /* leaves 1..7 free in one piece */
    /* with slice 0 taken, slice 1 keeps 2..7 together (slice 6 would leave 1..5 and 7) */
    assert_int_equal(mig_plan_jobs(&plan, gpu("A100-40GB"), one, 1, NULL, 1u, 1, err, sizeof err), 0);
    assert_int_equal(plan.instances[0].placement.start, 1);
    /* an existing 4g.20gb on 0..3: two more jobs go to 4..7 */
    mig_job two[2] = {{"S", GiB(1), 0}, {"M", GiB(4), 0}};
    assert_int_equal(mig_plan_jobs(&plan, gpu("A100-40GB"), two, 2, NULL, 0x0F, 4, err, sizeof err), 0);
    expect_ge(plan.instances[0].placement.start, 4); expect_ge(plan.instances[1].placement.start, 4);
    assert_int_equal(plan.occupied, 0x0F);
    mig_job four[4] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}, {"S", GiB(1), 0}, {"S", GiB(1), 0}};
    if (mig_plan_jobs(&plan, gpu("A100-40GB"), four, 4, NULL, 0x0F, 4, err, sizeof err) == 0)
        fail_msg("4 jobs placed beside a 4g.20gb");
    expect_in(err, "at most 3 jobs");
}

static void test_plan_print(void **state) {
    mig_job jobs[3] = {{"S", GiB(1.5), 0}, {"M", GiB(4), 0}, {"L", GiB(12), 0}};
    plan_ok("A100-40GB", jobs, 3, NULL);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    mig_plan_print(&plan, out);
    fclose(out);
    expect_in(text, "MIG plan for A100-40GB: 7 compute slices, 8 memory slices, 108 SMs");
    expect_in(text, "1g.5gb");
    expect_in(text, "3g.20gb");
    expect_in(text, "memory slice:   0   1   2   3   4   5   6   7");
    expect_in(text, "largest free run: 1 slices");
    expect_in(text, " 13.0%");
    free(text);
}

static void test_no_table(void **state) {
    static mig_gpu empty;
    snprintf(empty.name, sizeof empty.name, "Tesla T4");
    mig_job one[1] = {{"S", GiB(1), 0}};
    assert_int_equal(mig_plan_jobs(&plan, &empty, one, 1, NULL, 0, 0, err, sizeof err), -1);
    expect_in(err, "no MIG profile table for Tesla T4");
    expect_in(err, "A100-40GB | A100-80GB");
}

/* ---- objectives ----------------------------------------------------------------------------- */


static void fill_ok(const char *gpu_name, const mig_job *jobs, int n) {
    if (mig_plan_objective(&plan, gpu(gpu_name), jobs, n, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0, err,
                           sizeof err) != 0)
        fail_msg("fill on %s failed: %s", gpu_name, err);
    assert_int_equal(plan.count, n);
    int profiles[MIG_MAX_INSTANCES];
    mig_placement placements[MIG_MAX_INSTANCES];
    for (int i = 0; i < n; i++) profiles[i] = plan.instances[i].profile, placements[i] = plan.instances[i].placement;
    assert_int_equal(mig_check_placements(&plan.gpu, profiles, placements, n, 0, 0, err, sizeof err), 0);
}

static void expect_layout(const char *want) {
    char text[256];
    mig_plan_layout_text(&plan, text, sizeof text);
    assert_string_equal(text, want);
}

/* Figure 1 of the study: uniform mixes of 1, 2, 3 and 7 jobs use the whole GPU. */
static void test_fill_gives_the_study_layouts(void **state) {
    mig_job s[7];
    for (int i = 0; i < 7; i++) s[i] = (mig_job){"S", GiB(1.5), 1.5e13};
    struct { const char *gpu, *one, *two, *three, *seven; } want[] = {
        {"A100-40GB", "7g.40gb", "3g.20gb,3g.20gb", "2g.10gb,2g.10gb,2g.10gb", "1g.5gb"},
        {"A100-80GB", "7g.80gb", "3g.40gb,3g.40gb", "2g.20gb,2g.20gb,2g.20gb", "1g.10gb"},
        {"H100-80GB", "7g.80gb", "3g.40gb,3g.40gb", "2g.20gb,2g.20gb,2g.20gb", "1g.10gb"},
        {"H200-141GB", "7g.141gb", "3g.71gb,3g.71gb", "2g.35gb,2g.35gb,2g.35gb", "1g.18gb"}};
    for (size_t g = 0; g < sizeof want / sizeof want[0]; g++) {
        fill_ok(want[g].gpu, s, 1);
        expect_layout(want[g].one);
        fill_ok(want[g].gpu, s, 2);
        expect_layout(want[g].two);
        fill_ok(want[g].gpu, s, 3);
        expect_layout(want[g].three);
        fill_ok(want[g].gpu, s, 7);
        for (int i = 0; i < 7; i++) assert_string_equal(planned_profile(i)->name, want[g].seven);
        assert_int_equal(plan.choice.relaxed, 0);
    }
    /* unknown demands (0) count alike; different jobs need not be on equal profiles */
    mig_job unknown[3] = {{"a", GiB(1), 0}, {"b", GiB(2), 0}, {"c", GiB(3), 0}};
    fill_ok("H100-80GB", unknown, 3);
    assert_int_equal(plan.choice.candidates[0].sms, 32 + 32 + 60);  /* all 7 compute slices */
    assert_false(plan.choice.demands_differ);
}

static void test_fill_follows_demand(void **state) {
    /* S+M+M as the suite measures them: ResNet-26 at 32x32 and ResNet-50 at 64x64, 100 steps */
    mig_job smm[3] = {{"S", GiB(0.43), 3.8e10 * 100}, {"M", GiB(1.48), 2.58e11 * 100}, {"M", GiB(1.48), 2.58e11 * 100}};
    const char *gpus[] = {"A100-40GB", "H100-80GB", "H200-141GB"};
    for (int g = 0; g < 3; g++) {
        fill_ok(gpus[g], smm, 3);
        expect_gt(plan.instances[1].sm_count, plan.instances[0].sm_count);
        assert_int_equal(plan.instances[1].profile, plan.instances[2].profile);  /* identical jobs */
        assert_true(plan.choice.demands_differ);
        expect_gt(plan.choice.share[1], 0.46); expect_lt(plan.choice.share[1], 0.47);
    }
    expect_layout("1g.35gb,2g.35gb,2g.35gb");  /* H200: 26 SMs beat 1g.18gb's 16 */
    fill_ok("A100-40GB", smm, 3);
    expect_layout("1g.5gb,2g.10gb,2g.10gb");
    /* the runner-ups explain the choice: 2g.10gb x3 uses more SMs but gives S as many as M */
    expect_ge(plan.choice.candidate_count, 3);
    assert_int_equal(plan.choice.candidates[0].broken, 0);
    int shown_broken = 0;
    for (int i = 1; i < plan.choice.candidate_count; i++) shown_broken |= plan.choice.candidates[i].broken == 1;
    assert_true(shown_broken);
    /* S+M on an H100: the large job gets the 4g, the small one the largest profile beside it */
    fill_ok("H100-80GB", smm, 2);
    expect_layout("3g.40gb,4g.40gb");
    /* the study's static S+M+L layout on A100-40GB falls out of fill */
    mig_job sml[3] = {{"S", GiB(0.43), 3.8e10 * 100}, {"M", GiB(1.48), 2.58e11 * 100}, {"L", GiB(7.0), 2.2e12 * 100}};
    fill_ok("A100-40GB", sml, 3);
    expect_layout("1g.5gb,2g.10gb,4g.20gb");
}

static void test_fill_needs_memory_and_may_relax(void **state) {
    /* a recommender that needs 30 GiB beside a small job: only the 3g/4g/7g profiles hold it */
    mig_job sxl[2] = {{"S", GiB(0.43), 3.8e12}, {"XL", GiB(30), 1e15}};
    fill_ok("H100-80GB", sxl, 2);
    expect_ge(plan.instances[1].memory_bytes, mig_required_bytes(GiB(30)));
    expect_gt(plan.choice.too_small, 0);
    /* the two small jobs demand more, but only a 4-slice profile holds the recommender's memory
     * and no pair of equal profiles beside it has more SMs: the demand order gives way */
    mig_job inverted[3] = {{"XL", GiB(16), 1e12}, {"S", GiB(0.43), 1e16}, {"S", GiB(0.43), 1e16}};
    fill_ok("A100-40GB", inverted, 3);
    assert_int_equal(planned_profile(0)->memory_slices, 4);
    assert_int_equal(plan.instances[1].profile, plan.instances[2].profile);
    assert_int_equal(plan.choice.relaxed, 1);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    mig_choice_print(&plan, out);
    fclose(out);
    expect_in(text, "the demand order is relaxed");
    free(text);
    /* impossible either way: the compact planner's numbers explain it */
    mig_job eight[8];
    for (int i = 0; i < 8; i++) eight[i] = (mig_job){"S", GiB(1), 1e12};
    assert_int_equal(mig_plan_objective(&plan, gpu("A100-40GB"), eight, 8, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0,
                                        err, sizeof err), -1);
    expect_in(err, "at most 7 jobs");
    mig_job huge[2] = {{"S", GiB(1), 1e12}, {"L", GiB(45), 1e13}};
    assert_int_equal(mig_plan_objective(&plan, gpu("A100-40GB"), huge, 2, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0,
                                        err, sizeof err), -1);
    expect_in(err, "largest profile on A100-40GB is 7g.40gb");
}

static void test_compact_keeps_smallest_fit(void **state) {
    mig_job jobs[3] = {{"S", GiB(1.5), 1e12}, {"M", GiB(4), 1e13}, {"L", GiB(12), 1e14}};
    const char *gpus[] = {"A100-40GB", "H100-80GB"};
    for (int g = 0; g < 2; g++) {
        static mig_plan today;
        assert_int_equal(mig_plan_jobs(&today, gpu(gpus[g]), jobs, 3, NULL, 0, 0, err, sizeof err), 0);
        assert_int_equal(mig_plan_objective(&plan, gpu(gpus[g]), jobs, 3, NULL, MIG_OBJECTIVE_COMPACT, 0, 0, 0,
                                            err, sizeof err), 0);
        assert_memory_equal(&plan, &today, offsetof(mig_plan, choice));
    }
    expect_layout("1g.10gb,1g.10gb,1g.20gb");
    /* a layout string wins over either objective */
    assert_int_equal(mig_plan_objective(&plan, gpu("H100-80GB"), jobs, 3, "1g.10gb+2g.20gb+4g.40gb",
                                        MIG_OBJECTIVE_FILL, 0, 0, 0, err, sizeof err), 0);
    expect_layout("1g.10gb,2g.20gb,4g.40gb");
    mig_objective o;
    assert_int_equal(mig_objective_parse("compact", &o), 0);
    assert_int_equal(o, MIG_OBJECTIVE_COMPACT);
    assert_int_equal(mig_objective_parse("fill", &o), 0);
    assert_int_equal(o, MIG_OBJECTIVE_FILL);
    assert_int_equal(mig_objective_parse("smallest", &o), -1);
    assert_string_equal(mig_objective_name(MIG_OBJECTIVE_COMPACT), "compact");
}

static void test_enumerated_layouts_are_distinct_and_valid(void **state) {
    const char *gpus[] = {"A100-40GB", "H100-80GB", "A30-24GB"};
    static mig_layout layouts[MIG_MAX_LAYOUTS];
    for (int g = 0; g < 3; g++) {
        const mig_gpu *G = gpu(gpus[g]);
        int total = 0;
        for (int n = 1; n <= G->compute_slices; n++) {
            int count = mig_enumerate_layouts(G, n, 0, 0, layouts, MIG_MAX_LAYOUTS);
            expect_gt(count, 0);
            total += count;
            for (int i = 0; i < count; i++) {
                assert_int_equal(layouts[i].count, n);
                char text[256];
                mig_layout_text(G, &layouts[i], text, sizeof text);
                mig_job jobs[MIG_MAX_INSTANCES];
                for (int j = 0; j < n; j++) jobs[j] = (mig_job){"x", 0, 0};
                if (mig_plan_jobs(&plan, G, jobs, n, text, 0, 0, err, sizeof err) != 0)
                    fail_msg("%s: enumerated layout %s cannot be placed: %s", gpus[g], text, err);
                for (int k = 0; k < i; k++)
                    assert_false(memcmp(&layouts[k], &layouts[i], sizeof layouts[i]) == 0);
                for (int j = 0; j < n; j++) assert_true(G->profiles[layouts[i].profiles[j]].plannable);
            }
        }
        assert_int_equal(mig_enumerate_layouts(G, G->compute_slices + 1, 0, 0, layouts, MIG_MAX_LAYOUTS), 0);
        if (g == 1) assert_int_equal(total, 6 + 14 + 21 + 19 + 10 + 5 + 2);
    }
    /* two jobs on an H100: 14 layouts, with 4g+3g but never two 4g */
    const mig_gpu *h100 = gpu("H100-80GB");
    int count = mig_enumerate_layouts(h100, 2, 0, 0, layouts, MIG_MAX_LAYOUTS);
    assert_int_equal(count, 14);
    char text[256];
    mig_layout_text(h100, &layouts[0], text, sizeof text);
    assert_string_equal(text, "4g.40gb+3g.40gb");
    for (int i = 0; i < count; i++) {
        mig_layout_text(h100, &layouts[i], text, sizeof text);
        assert_null(strstr(text, "4g.40gb+4g.40gb"));
    }
    /* beside an existing 4g on slices 0..3 only what fits 4..7 remains */
    count = mig_enumerate_layouts(h100, 1, 0x0F, 4, layouts, MIG_MAX_LAYOUTS);
    for (int i = 0; i < count; i++) expect_le(h100->profiles[layouts[i].profiles[0]].compute_slices, 3);
    /* the best assignment of a given layout puts the larger profile on the larger demand */
    mig_job sm[2] = {{"S", GiB(0.4), 1e12}, {"M", GiB(1.5), 1e13}};
    mig_layout given = {2, {mig_find_profile(h100, "3g.40gb"), mig_find_profile(h100, "1g.10gb")}};
    mig_candidate c;
    assert_int_equal(mig_assign_layout(h100, sm, 2, &given, &c), 0);
    assert_string_equal(h100->profiles[c.profile[0]].name, "1g.10gb");
    assert_string_equal(h100->profiles[c.profile[1]].name, "3g.40gb");
    mig_job big[2] = {{"a", GiB(15), 1}, {"b", GiB(15), 1}};
    assert_int_equal(mig_assign_layout(h100, big, 2, &given, &c), -1);
}

static void test_layout_strings_with_plus(void **state) {
    const mig_gpu *h100 = gpu("H100-80GB");
    int profiles[MIG_MAX_INSTANCES];
    assert_int_equal(mig_parse_layout(h100, "1g.10gb+3g.40gb", 2, profiles, err, sizeof err), 0);
    assert_string_equal(h100->profiles[profiles[1]].name, "3g.40gb");
    assert_int_equal(mig_parse_layout(h100, "1g.10gb+me+3g.40gb", 2, profiles, err, sizeof err), 0);
    assert_string_equal(h100->profiles[profiles[0]].name, "1g.10gb+me");
    assert_int_equal(mig_parse_layout(h100, "2g.20gb + 2g.20gb, 1g.10gb", 3, profiles, err, sizeof err), 0);
    assert_int_equal(mig_parse_layout(h100, "2g.20gb+2g.20gb", 3, profiles, err, sizeof err), -1);
    expect_in(err, "names 2 instance(s) for 3 job(s)");
}

static void test_fill_choice_print(void **state) {
    mig_job smm[3] = {{"S", GiB(0.43), 3.8e12}, {"M", GiB(1.48), 2.58e13}, {"M", GiB(1.48), 2.58e13}};
    fill_ok("H100-80GB", smm, 3);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    mig_choice_print(&plan, out);
    fclose(out);
    expect_in(text, "MIG objective fill");
    expect_in(text, "job 0 S 6.9%");
    expect_in(text, "21 distinct layout(s) of 3 instance(s) fit H100-80GB");
    expect_in(text, "chosen    1g.20gb,2g.20gb,2g.20gb");
    expect_in(text, "runner-up 1g.10gb,2g.20gb,2g.20gb");
    expect_in(text, "fewer SMs at work (80 < 90)");
    expect_in(text, "no more SMs than one with less");
    free(text);
    assert_int_equal(mig_plan_objective(&plan, gpu("H100-80GB"), smm, 3, NULL, MIG_OBJECTIVE_COMPACT, 0, 0, 0,
                                        err, sizeof err), 0);
    out = open_memstream(&text, &size);
    mig_choice_print(&plan, out);
    fclose(out);
    expect_in(text, "MIG objective compact: each job on the smallest profile");
    free(text);
}

/* ---- compute instances sharing one GPU instance ("MIG (shared)") ---------------------------- */

static void test_shared_notation(void **state) {
    mig_slot slots[MIG_MAX_INSTANCES];
    assert_int_equal(mig_parse_slots(gpu("A100-40GB"), "7g.40gb:3c+4c", 2, slots, err, sizeof err), 0);
    assert_int_equal(slots[0].ci_slices, 3);
    assert_int_equal(slots[1].ci_slices, 4);
    assert_int_equal(slots[0].gpu_instance, slots[1].gpu_instance);
    assert_int_equal(mig_parse_slots(gpu("H100-80GB"), "3g.40gb:1c+2c+3g.40gb", 3, slots, err, sizeof err), 0);
    assert_int_equal(slots[2].ci_slices, 0);
    assert_int_equal(slots[2].gpu_instance, 1);
    assert_int_equal(mig_parse_slots(gpu("H100-80GB"), "1g.10gb, 7g.80gb:2c + 2c + 3c", 4, slots, err, sizeof err), 0);
    assert_int_equal(slots[3].ci_slices, 3);
    struct { const char *layout, *want; } bad[] = {
        {"7g.40gb:5c+2c", "has no such compute instance"},
        {"7g.40gb:7c+0c", "has no such compute instance"},
        {"7g.40gb:4c+4c", "take 8 compute slices; it has 7"},
        {"7g.40gb:3c+", "malformed compute-instance list"},
        {"7g.40gb:3x+4c", "malformed compute-instance list"},
        {"9g.40gb:3c+4c", "has no profile \"9g.40gb\""},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (mig_parse_slots(gpu("A100-40GB"), bad[k].layout, 2, slots, err, sizeof err) == 0)
            fail_msg("%s accepted", bad[k].layout);
        expect_in(err, bad[k].layout);
        expect_in(err, bad[k].want);
    }
    assert_int_equal(mig_parse_slots(gpu("A100-40GB"), "7g.40gb:3c+4c", 3, slots, err, sizeof err), -1);
    expect_in(err, "names 2 instance(s) for 3 job(s)");
    mig_job jobs[2] = {{"XL", GiB(28), 1e12}, {"L", GiB(8), 1e13}};  /* 41.1 GiB with headroom */
    plan_fails("A100-40GB", jobs, 2, "7g.40gb:3c+3c", "shared GPU instance 7g.40gb", "too small", NULL);
}

static void test_shared_plans(void **state) {
    /* the recommender fits no smaller GPU instance of the A100-40GB: fill shares the 7g.40gb */
    mig_job jobs[2] = {{"XL", GiB(25.97), 1e12}, {"L", GiB(7.99), 1e13}};
    assert_int_equal(mig_plan_objective(&plan, gpu("A100-40GB"), jobs, 2, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0, err,
                                        sizeof err), 0);
    assert_int_equal(plan.choice.shared, MIG_SHARED_NEEDED);
    char text[256];
    mig_plan_layout_text(&plan, text, sizeof text);
    assert_string_equal(text, "7g.40gb:3c+4c");  /* more demand, more compute slices */
    assert_int_equal(plan.instances[0].sm_count, 42);
    assert_int_equal(plan.instances[1].sm_count, 56);
    assert_int_equal(plan.instances[0].memory_bytes, 40192ULL << 20);
    int second[1] = {1};
    mig_plan_layout_for(&plan, second, 1, text, sizeof text);
    assert_string_equal(text, "7g.40gb:4c");  /* a job alone in its partition */
    mig_plan_admin_command(&plan, 0, text, sizeof text);
    expect_in(text, "-cgi 0 && sudo nvidia-smi mig -i 0 -gi <id of the 7g.40gb> -cci 3c.7g.40gb,4c.7g.40gb");
    char *printed = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&printed, &size);
    mig_plan_print(&plan, out);
    fclose(out);
    expect_in(printed, "no layout of separate GPU instances holds every job's memory");
    expect_in(printed, "not verified on hardware");
    expect_in(printed, "3c.7g.40gb");
    expect_in(printed, "new, shared");
    free(printed);
    /* on the H100 XL fits a 3g.40gb: shared only when asked */
    assert_int_equal(mig_plan_objective(&plan, gpu("H100-80GB"), jobs, 2, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0, err,
                                        sizeof err), 0);
    assert_int_equal(plan.choice.shared, 0);
    mig_plan_layout_text(&plan, text, sizeof text);
    assert_string_equal(text, "3g.40gb,4g.40gb");
    assert_int_equal(mig_plan_objective(&plan, gpu("H100-80GB"), jobs, 2, NULL, MIG_OBJECTIVE_FILL, 1, 0, 0, err,
                                        sizeof err), 0);
    assert_int_equal(plan.choice.shared, MIG_SHARED_ASKED);
    mig_plan_layout_text(&plan, text, sizeof text);
    assert_string_equal(text, "7g.80gb:3c+4c");
    assert_int_equal(plan.instances[0].sm_count + plan.instances[1].sm_count, 124);
    /* identical jobs get identical compute instances */
    mig_job two[2] = {{"M", GiB(2), 1e12}, {"M", GiB(2), 1e12}};
    assert_int_equal(mig_plan_objective(&plan, gpu("A100-40GB"), two, 2, NULL, MIG_OBJECTIVE_FILL, 1, 0, 0, err,
                                        sizeof err), 0);
    mig_plan_layout_text(&plan, text, sizeof text);
    assert_string_equal(text, "7g.40gb:3c+3c");  /* the paper's "two 3g MIG compute instances" */
    /* too much together for any GPU instance: refused with why */
    mig_job big[2] = {{"XL", GiB(30), 1e12}, {"XL", GiB(30), 1e12}};
    assert_int_equal(mig_plan_objective(&plan, gpu("A100-40GB"), big, 2, NULL, MIG_OBJECTIVE_FILL, 1, 0, 0, err,
                                        sizeof err), -1);
    expect_in(err, "--mig-share-memory: no GPU instance of A100-40GB holds the 2 jobs' memory together");
    /* A30 has no 3-slice compute instance */
    assert_int_equal(mig_ci_sms(gpu("A30-24GB"), mig_find_profile(gpu("A30-24GB"), "4g.24gb"), 3), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_are_consistent),
        cmocka_unit_test(test_a100_40gb_is_nvidias_table),
        cmocka_unit_test(test_other_tables),
        cmocka_unit_test(test_device_names_map_to_tables),
        cmocka_unit_test(test_compare_reports_each_difference),
        cmocka_unit_test(test_seven_small_jobs_take_seven_1g_5gb),
        cmocka_unit_test(test_too_many_jobs),
        cmocka_unit_test(test_small_medium_large),
        cmocka_unit_test(test_headroom_decides_the_profile),
        cmocka_unit_test(test_footprint_too_large),
        cmocka_unit_test(test_layout_4g_and_3g_together_is_valid),
        cmocka_unit_test(test_placement_checker),
        cmocka_unit_test(test_layouts_that_break_the_rules),
        cmocka_unit_test(test_free_space_and_existing_instances),
        cmocka_unit_test(test_plan_print),
        cmocka_unit_test(test_no_table),
        cmocka_unit_test(test_fill_gives_the_study_layouts),
        cmocka_unit_test(test_fill_follows_demand),
        cmocka_unit_test(test_fill_needs_memory_and_may_relax),
        cmocka_unit_test(test_compact_keeps_smallest_fit),
        cmocka_unit_test(test_enumerated_layouts_are_distinct_and_valid),
        cmocka_unit_test(test_layout_strings_with_plus),
        cmocka_unit_test(test_fill_choice_print),
        cmocka_unit_test(test_shared_notation),
        cmocka_unit_test(test_shared_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
