/* train --launcher's environment (runner/train/rank_env.h), table-driven: the env convention
 * (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and srun's (SLURM_PROCID, SLURM_NTASKS,
 * SLURM_LOCALID, the node list, the port from the job's id), each refusal naming the variable and
 * what it expects; and Slurm's compressed host lists expanded, malformed ones refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runner/train/rank_env.h"

/* A lookup over "NAME=value" strings (NULL-terminated). */
static const char *from_table(void *user, const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = user; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

typedef struct env_case {
    rank_launcher from;
    const char *vars[12];
    const char *error;  /* NULL: accepted, with the fields below */
    int rank, world, local_rank;
    const char *addr, *addr_from;
    int port;
    const char *port_from;
} env_case;

#define ENV_OK "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500"

static const env_case CASES[] = {
    {RANK_LAUNCHER_ENV, {ENV_OK, NULL}, NULL, 1, 4, 1, "127.0.0.1", "MASTER_ADDR", 29500, "MASTER_PORT"},
    {RANK_LAUNCHER_ENV, {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "MASTER_ADDR=head-node.cluster", "MASTER_PORT=1", NULL},
     NULL, 0, 1, 0, "head-node.cluster", "MASTER_ADDR", 1, "MASTER_PORT"},
    {RANK_LAUNCHER_ENV, {"WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK is not set: --launcher env reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT"},
    {RANK_LAUNCHER_ENV, {"RANK=", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK is not set"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "MASTER_ADDR=h", "MASTER_PORT=2", NULL}, .error = "LOCAL_RANK is not set"},
    {RANK_LAUNCHER_ENV, {"RANK=x", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK: expected a whole number from 0 to 3, got 'x'; WORLD_SIZE is 4: ranks 0 to 3"},
    {RANK_LAUNCHER_ENV, {"RANK=4", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK: expected a whole number from 0 to 3, got '4' (more than 3); WORLD_SIZE is 4: ranks 0 to 3"},
    {RANK_LAUNCHER_ENV, {"RANK=-1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK: expected a whole number from 0 to 3, got '-1' (less than 0); WORLD_SIZE is 4: ranks 0 to 3"},
    {RANK_LAUNCHER_ENV, {"RANK=1 ", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "RANK: expected a whole number from 0 to 3, got '1 ' (blanks are not read); WORLD_SIZE is 4: ranks 0 to 3"},
    {RANK_LAUNCHER_ENV, {"RANK=0", "WORLD_SIZE=0", "LOCAL_RANK=0", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "WORLD_SIZE: expected a whole number from 1 to 4096, got '0' (less than 1)"},
    {RANK_LAUNCHER_ENV, {"RANK=0", "WORLD_SIZE=4097", "LOCAL_RANK=0", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "WORLD_SIZE: expected a whole number from 1 to 4096, got '4097' (more than 4096)"},
    {RANK_LAUNCHER_ENV, {"RANK=0", "WORLD_SIZE=four", "LOCAL_RANK=0", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "WORLD_SIZE: expected a whole number from 1 to 4096, got 'four'"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=2", "MASTER_ADDR=h", "MASTER_PORT=2", NULL},
     .error = "LOCAL_RANK: expected a whole number from 0 to 1, got '2' (more than 1); WORLD_SIZE is 2: ranks 0 to 1"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_PORT=2", NULL}, .error = "MASTER_ADDR is not set"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", NULL}, .error = "MASTER_PORT is not set"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=a b", "MASTER_PORT=2", NULL},
     .error = "MASTER_ADDR: expected rank 0's host name or address (1 to 255 characters, no blanks), got 'a b'"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=0", NULL},
     .error = "MASTER_PORT: expected a whole number from 1 to 65535, got '0' (less than 1)"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=65536", NULL},
     .error = "MASTER_PORT: expected a whole number from 1 to 65535, got '65536' (more than 65535)"},
    {RANK_LAUNCHER_ENV, {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=h", "MASTER_PORT=29500x", NULL},
     .error = "MASTER_PORT: expected a whole number from 1 to 65535, got '29500x'"},
    /* srun's: the first host of the step's nodes, the port from the job's id */
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODELIST=gpu[07-10]",
                           "SLURM_JOB_ID=123456", NULL},
     NULL, 5, 8, 1, "gpu07", "the first host of SLURM_NODELIST", 13456, "SLURM_JOB_ID 123456"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a[1-9]",
                           "SLURM_STEP_NODELIST=b[3-4],a1", "SLURM_JOB_ID=7", NULL},
     NULL, 0, 2, 0, "b3", "the first host of SLURM_STEP_NODELIST", 10007, "SLURM_JOB_ID 7"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a[1-9]",
                           "SLURM_JOB_ID=7", "MASTER_ADDR=10.0.0.5", "MASTER_PORT=29400", NULL},
     NULL, 1, 2, 0, "10.0.0.5", "MASTER_ADDR", 29400, "MASTER_PORT"},
    {RANK_LAUNCHER_SLURM, {"SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a", "SLURM_JOB_ID=7", NULL},
     .error = "SLURM_PROCID is not set: --launcher slurm runs under srun, which sets SLURM_PROCID, SLURM_NTASKS, "
     "SLURM_LOCALID and SLURM_NODELIST"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=2", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a", "SLURM_JOB_ID=7", NULL},
     .error = "SLURM_PROCID: expected a whole number from 0 to 1, got '2' (more than 1); SLURM_NTASKS is 2: ranks 0 to 1"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_ID=7", NULL},
     .error = "neither MASTER_ADDR nor SLURM_STEP_NODELIST or SLURM_NODELIST is set"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=node[01-", "SLURM_JOB_ID=7", NULL},
     .error = "SLURM_NODELIST 'node[01-': 'node[01-': a '[' is not closed by ']'"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a", NULL},
     .error = "neither MASTER_PORT nor SLURM_JOB_ID is set"},
    {RANK_LAUNCHER_SLURM, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=a", "SLURM_JOB_ID=x7", NULL},
     .error = "SLURM_JOB_ID: expected a whole number from 0 to"},
    {RANK_LAUNCHER_NONE, {NULL}, .error = "no launcher named"},
};

static void test_conventions(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const env_case *c = &CASES[i];
        rank_env env;
        char err[1024] = "";
        int rc = rank_env_read(c->from, from_table, (void *)c->vars, &env, err, sizeof err);
        if (c->error) {
            if (rc != -1 || !strstr(err, c->error)) fail_msg("case %zu: expected '%s', got %d '%s'", i, c->error, rc, err);
            continue;
        }
        if (rc != 0) fail_msg("case %zu: refused: %s", i, err);
        assert_int_equal(env.rank, c->rank);
        assert_int_equal(env.world, c->world);
        assert_int_equal(env.local_rank, c->local_rank);
        assert_string_equal(env.master_addr, c->addr);
        assert_string_equal(env.addr_from, c->addr_from);
        assert_int_equal(env.master_port, c->port);
        assert_string_equal(env.port_from, c->port_from);
    }
}

typedef struct list_case {
    const char *list;
    const char *hosts; /* the expansion joined by blanks; NULL: refused */
    const char *error;
} list_case;

static const list_case LISTS[] = {
    {"node01", "node01", NULL},
    {"node[01-03,07]", "node01 node02 node03 node07", NULL},
    {"a,b[1-2],c", "a b1 b2 c", NULL},
    {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2", NULL},
    {"n[8-11]", "n8 n9 n10 n11", NULL},
    {"n[08-11]", "n08 n09 n10 n11", NULL},
    {"n[7]", "n7", NULL},
    {"gpu-a[1-2]-ib", "gpu-a1-ib gpu-a2-ib", NULL},
    {"host.example.com,x_y", "host.example.com x_y", NULL},
    {"[1-2]", "1 2", NULL},
    {"", NULL, .error = "an empty host list"},
    {"a,,b", NULL, .error = "an empty host name"},
    {"a,", NULL, .error = "an empty host name"},
    {",a", NULL, .error = "an empty host name"},
    {"n[1-", NULL, .error = "'n[1-': a '[' is not closed by ']'"},
    {"n[1-2", NULL, .error = "a '[' is not closed"},
    {"n[1[2]]", NULL, .error = "a '[' is not closed"},
    {"n]1", NULL, .error = "']' is not part of a host name"},
    {"a b", NULL, .error = "' ' is not part of a host name"},
    {"n[3-1]", NULL, .error = "'[3-1]': expected numbers and ranges LO-HI (LO <= HI"},
    {"n[]", NULL, .error = "'[]': expected numbers"},
    {"n[a]", NULL, .error = "'[a]': expected numbers"},
    {"n[1--2]", NULL, .error = "'[1--2]': expected numbers"},
    {"n[1,]", NULL, .error = "'[1,]': expected numbers"},
    {"n[0-1234567890]", NULL, .error = "at most 9 digits"},
    {"a[0-99999]b[0-99999]", NULL, .error = "more than 1000000000 hosts"},
};

static void test_hostlists(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof LISTS / sizeof *LISTS; i++) {
        const list_case *c = &LISTS[i];
        char err[512] = "", host[64], joined[256] = "";
        long n = rank_env_hostlist_count(c->list, err, sizeof err);
        if (!c->hosts) {
            if (n != -1 || !strstr(err, c->error)) fail_msg("'%s': expected '%s', got %ld '%s'", c->list, c->error, n, err);
            if (rank_env_hostlist_host(c->list, 0, host, sizeof host, err, sizeof err) != -1)
                fail_msg("'%s': its first host is '%s'", c->list, host);
            continue;
        }
        if (n < 1) fail_msg("'%s': refused: %s", c->list, err);
        for (long k = 0; k < n; k++) {
            if (rank_env_hostlist_host(c->list, k, host, sizeof host, err, sizeof err) != 0)
                fail_msg("'%s' host %ld: %s", c->list, k, err);
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", k ? " " : "", host);
        }
        if (strcmp(joined, c->hosts)) fail_msg("'%s': expanded to '%s', expected '%s'", c->list, joined, c->hosts);
        assert_int_equal(rank_env_hostlist_host(c->list, n, host, sizeof host, err, sizeof err), -1);
        assert_non_null(strstr(err, "none at index"));
    }
    /* a name longer than the buffer is refused, not cut */
    char small[4], err[256];
    assert_int_equal(rank_env_hostlist_host("node[100-101]", 1, small, sizeof small, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than 3 characters"));
    assert_int_equal(rank_env_hostlist_host("a", -1, small, sizeof small, err, sizeof err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_conventions), cmocka_unit_test(test_hostlists)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
