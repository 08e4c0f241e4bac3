/* train --launcher on the host, before any GPU work: the options it is refused with (exit 2), the
 * environment refused by variable (exit 2), the dry run (one rank's footprint, no environment), and
 * the rendezvous' failures as train reports them: a port in use and a rank that never arrives
 * (exit 1, after SUITE_RENDEZVOUS_TIMEOUT), a master address that does not resolve (exit 2). Then
 * two ranks that join and fail on a device that does not exist, wherever this runs: their errors
 * travel to rank 0, which ends the job naming a rank, and both exit 1. The rendezvous itself, with
 * processes dying midway, is tests/runner/test_rendezvous.c. */
#define _GNU_SOURCE
#include <netdb.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/testutil.h"

static char out[65536], err[65536];

static const char *const VARS[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                                   "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODELIST", "SLURM_STEP_NODELIST",
                                   "SLURM_JOB_ID", "SUITE_RENDEZVOUS_TIMEOUT", NULL};

/* The launcher's variables as given ("NAME=value", NULL-terminated); every other one unset. */
static void environment(const char *const *set) {
    for (const char *const *v = VARS; *v; v++) unsetenv(*v);
    for (; set && *set; set++) {
        char name[64];
        const char *eq = strchr(*set, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *set), *set);
        setenv(name, eq + 1, 1);
    }
}

static int train(const char *launcher, const char *extra) {
    return test_run_binary("train", out, sizeof out, err, sizeof err, "--launcher", launcher, "--model", "resnet26",
                           "--data", "synthetic", "--epochs", "1", "--steps-per-epoch", "2", "--json",
                           extra ? extra : NULL, NULL);
}

static void expect(int rc, int code, const char *text) {
    if (rc != code || !strstr(out, text) || !strstr(err, text))
        fail_msg("expected exit %d with '%s' (event and stderr), got %d:\n%s\n%s", code, text, rc, out, err);
}

/* NCCL makes rank 0's id: without it in the build, rank 0 says so (exit 1) and these cases skip. */
static int without_nccl(void) { return strstr(err, "this build has no NCCL") != NULL; }

static void test_options(void **state) {
    (void)state;
    environment(NULL);
    expect(test_run_binary("train", out, sizeof out, err, sizeof err, "--launcher", "env", "--gpus", "2", "--model",
                           "resnet26", "--json", NULL),
           2, "--launcher env with --gpus 2: the launcher starts the job's ranks");
    expect(train("slurm", "--wait-go"), 2, "--launcher slurm with --wait-go: that is run_suite's protocol");
    expect(test_run_binary("train", out, sizeof out, err, sizeof err, "--launcher", "env", "--model", "dlrm",
                           "--data", "criteo-kaggle", "--json", NULL),
           2, "--launcher: data-parallel training covers the image models, not dlrm");
    assert_int_equal(train("mpirun", NULL), 2);
    assert_non_null(strstr(err, "--launcher: expected env or slurm, got 'mpirun'"));
    /* the dry run is one rank's footprint, without the environment */
    assert_int_equal(train("env", "--dry-run"), 0);
    assert_non_null(strstr(out, "\"footprint\""));
}

static void test_environment_refused(void **state) {
    (void)state;
    static const struct {
        const char *launcher, *vars[8], *message;
    } cases[] = {
        {"env", {NULL}, "RANK is not set: --launcher env reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT"},
        {"env", {"RANK=2", "WORLD_SIZE=2", "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", NULL},
         "RANK: expected a whole number from 0 to 1, got '2' (more than 1); WORLD_SIZE is 2: ranks 0 to 1"},
        {"env", {"RANK=0", "WORLD_SIZE=two", "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", NULL},
         "WORLD_SIZE: expected a whole number from 1 to 4096, got 'two'"},
        {"env", {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=80000", NULL},
         "MASTER_PORT: expected a whole number from 1 to 65535, got '80000' (more than 65535)"},
        {"slurm", {"SLURM_NTASKS=2", NULL}, "SLURM_PROCID is not set: --launcher slurm runs under srun"},
        {"slurm", {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODELIST=n[1-", "SLURM_JOB_ID=9", NULL},
         "SLURM_NODELIST 'n[1-': 'n[1-': a '[' is not closed by ']'"},
        {"env", {"SUITE_RENDEZVOUS_TIMEOUT=soon", NULL},
         "SUITE_RENDEZVOUS_TIMEOUT: expected a number from 0.1 to 86400, got 'soon'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        environment(cases[i].vars);
        expect(train(cases[i].launcher, NULL), 2, cases[i].message);
    }
    environment(NULL);
}

static void test_port_in_use(void **state) {
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof a;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    assert_true(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
                getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    char port[32], text[200];
    snprintf(port, sizeof port, "MASTER_PORT=%d", ntohs(a.sin_port));
    environment((const char *const[]){"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", port, NULL});
    int rc = train("env", NULL);
    close(fd);
    if (rc == 1 && without_nccl()) skip();
    snprintf(text, sizeof text, "rank 0 of 2 (--launcher env): port %d (MASTER_ADDR; port from MASTER_PORT) is in use "
             "on this host", ntohs(a.sin_port));
    expect(rc, 1, text);
    environment(NULL);
}

static void test_rank_never_arrives(void **state) {
    (void)state;
    char port[32];
    snprintf(port, sizeof port, "MASTER_PORT=%d", test_free_port());
    environment((const char *const[]){"RANK=0", "WORLD_SIZE=3", "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", port,
                                      "SUITE_RENDEZVOUS_TIMEOUT=1", NULL});
    int rc = train("env", NULL);
    if (rc == 1 && without_nccl()) skip();
    expect(rc, 1, "rank 0 of 3 (--launcher env): ranks 1-2 of 3 did not arrive within 1 s");
    /* and a rank whose rank 0 never answers */
    environment((const char *const[]){"RANK=1", "WORLD_SIZE=3", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", port,
                                      "SUITE_RENDEZVOUS_TIMEOUT=1", NULL});
    expect(train("env", NULL), 1, "rank 1 of 3 (--launcher env): rank 0 did not answer at 127.0.0.1:");
    environment(NULL);
}

static void test_master_does_not_resolve(void **state) {
    (void)state;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *found = NULL;
    int rc = getaddrinfo("no-such-host.invalid", "80", &hints, &found);
    if (rc == 0) freeaddrinfo(found);
    if (rc != EAI_NONAME) skip(); /* this resolver cannot tell (no DNS answers at all) */
    char port[32];
    snprintf(port, sizeof port, "MASTER_PORT=%d", test_free_port());
    environment((const char *const[]){"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_ID=5",
                                      "SLURM_NODELIST=node[01-02]", "MASTER_ADDR=no-such-host.invalid", port,
                                      "SUITE_RENDEZVOUS_TIMEOUT=1", NULL});
    expect(train("slurm", NULL), 2,
           "rank 1 of 2 (--launcher slurm): rank 0's host 'no-such-host.invalid' (MASTER_ADDR; port from MASTER_PORT) "
           "does not resolve");
    environment(NULL);
}

/* Two ranks on device 900: rank 1 in the background (its stderr in a file), rank 0 here. */
static void test_ranks_that_fail(void **state) {
    (void)state;
    char port[32], dir[512], log[600];
    snprintf(port, sizeof port, "MASTER_PORT=%d", test_free_port());
    test_tmpdir(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/rank1.log", dir);
    environment((const char *const[]){"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", port,
                                      "SUITE_RENDEZVOUS_TIMEOUT=20", NULL});
    pid_t rank1 = fork();
    assert_true(rank1 >= 0);
    if (rank1 == 0) {
        FILE *f = freopen(log, "w", stderr);
        if (!f || !freopen("/dev/null", "w", stdout)) _exit(99);
        execl(test_binary("train"), "train", "--launcher", "env", "--model", "resnet26", "--data", "synthetic",
              "--device", "900", "--epochs", "1", "--steps-per-epoch", "2", (char *)NULL);
        _exit(98);
    }
    setenv("RANK", "0", 1);
    setenv("LOCAL_RANK", "0", 1);
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--launcher", "env", "--model", "resnet26",
                             "--data", "synthetic", "--device", "900", "--epochs", "1", "--steps-per-epoch", "2", "--json",
                             NULL);
    int status = 0;
    struct timespec pause = {0, 50000000L};
    for (int waited = 0; waited < 600 && waitpid(rank1, &status, WNOHANG) != rank1; waited++) nanosleep(&pause, NULL);
    if (waitpid(rank1, &status, WNOHANG) == 0) { /* still running after 30 s: the job did not end it */
        kill(rank1, SIGKILL);
        waitpid(rank1, &status, 0);
        fail_msg("rank 1 still ran 30 s after rank 0 ended (rank 0: %d)\n%s", rc, err);
    }
    environment(NULL);
    char why[512];
    char *rank1_err = test_read_text(log, why, sizeof why);
    test_rmtree(dir);
    if (rc == 1 && without_nccl()) {
        free(rank1_err);
        skip();
    }
    /* rank 0 speaks for the job: both ranks' errors as rank_error, the job's error naming one */
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "{\"event\":\"rank_error\""));
    const char *job = strstr(out, "{\"event\":\"error\"");
    assert_non_null(job);
    assert_true(strstr(job, "\"message\":\"rank 0 of 2: ") || strstr(job, "\"message\":\"rank 1 of 2: "));
    assert_non_null(strstr(job, "; the other ranks were told to stop"));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    assert_non_null(rank1_err);
    assert_non_null(strstr(rank1_err, "train: "));
    free(rank1_err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options), cmocka_unit_test(test_environment_refused), cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_rank_never_arrives), cmocka_unit_test(test_master_does_not_resolve),
        cmocka_unit_test(test_ranks_that_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
