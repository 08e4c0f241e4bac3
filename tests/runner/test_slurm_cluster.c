/* run_suite --slurm end to end on a real Slurm: the test writes a one-node configuration into a
 * temporary folder (its own ports, state and spool; auth/none, so no munge key; two "GPUs" whose
 * device files are /dev/null and /dev/zero: the plumbing is what is tested), starts slurmctld and
 * slurmd in the foreground, submits a sweep of two mixes and one data-parallel job alone with
 * run_suite (fake_train stands in for train), waits for the job array and the data-parallel job to
 * leave the queue and checks each array task's own run folder, and the data-parallel job's log:
 * its two ranks, started by srun from its batch script, found each other with train's rendezvous
 * (rank 0 on the first host of srun's node list, the port from the job's id) and got the same id.
 * Skipped (77) where Slurm's daemons are not installed or the test is not root (slurmd must be, to
 * start jobs). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/suite/jobs/jobs.h"
#include "tests/support/testutil.h"

#if !defined(RUN_SUITE_PATH) || !defined(FAKE_TRAIN_PATH)
#error "RUN_SUITE_PATH and FAKE_TRAIN_PATH must be defined (CMake passes them)"
#endif

extern char **environ;

static char dir[512], conf[700];
static pid_t daemons[2];

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "test_slurm_cluster: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static pid_t start(const char *program, const char *log) {
    char path[PATH_MAX], log_path[1024];
    if (jobs_find_program(program, path, sizeof path) != 0) fail("not found", program);
    snprintf(log_path, sizeof log_path, "%s/%s", dir, log);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *const argv[] = {path, "-D", "-i", NULL}; /* foreground; slurmctld: ignore old state */
    char *const argv_d[] = {path, "-D", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, NULL, strstr(program, "slurmctld") ? argv : argv_d, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) fail("cannot start", program);
    return pid;
}

static void stop_daemons(void) {
    for (int i = 0; i < 2; i++)
        if (daemons[i] > 0) kill(daemons[i], SIGTERM);
    for (int i = 0; i < 2; i++)
        if (daemons[i] > 0) waitpid(daemons[i], NULL, 0);
}

/* A Slurm client's output (argv[0] found on PATH). */
static int client(char *const argv[], char *out, size_t size) {
    char path[PATH_MAX], err[4096];
    if (jobs_find_program(argv[0], path, sizeof path) != 0) fail("not found", argv[0]);
    char *args[16] = {path};
    for (int i = 1; argv[i] && i < 15; i++) args[i] = argv[i];
    return test_run(args, out, size, err, sizeof err);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void write_conf(void) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2) cpus = 2; /* the data-parallel job's two tasks (config_overrides: the node is as said) */
    snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
    FILE *f = fopen(conf, "w");
    if (!f) fail("cannot write", conf);
    fprintf(f,
            "ClusterName=suitetest\nSlurmctldHost=%s\nSlurmctldPort=%d\nSlurmdPort=%d\n"
            "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/none\nCredType=cred/none\n"
            "StateSaveLocation=%s/state\nSlurmdSpoolDir=%s/spool\n"
            "SlurmctldPidFile=%s/slurmctld.pid\nSlurmdPidFile=%s/slurmd.pid\n"
            "SlurmctldLogFile=%s/slurmctld.log\nSlurmdLogFile=%s/slurmd.log\n"
            "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n"
            "SlurmdParameters=config_overrides\nGresTypes=gpu\n"
            "NodeName=%s CPUs=%ld Gres=gpu:2 State=UNKNOWN\n"
            "PartitionName=suite Nodes=%s Default=YES MaxTime=INFINITE State=UP\n",
            host, test_free_port(), test_free_port(), dir, dir, dir, dir, dir, dir, host, cpus, host);
    fclose(f);
    char gres[700];
    snprintf(gres, sizeof gres, "%s/gres.conf", dir);
    f = fopen(gres, "w");
    if (!f) fail("cannot write", gres);
    fprintf(f, "Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n"); /* Slurm counts a GPU by its device file */
    fclose(f);
}

/* The one run folder under dir/task-<task>/ (beside the task's request.json), checked: complete,
 * with `jobs` jobs. */
static void check_task(const char *sweep, int task, int jobs) {
    char task_dir[1400], path[2000], what[64];
    snprintf(what, sizeof what, "array task %d", task);
    snprintf(task_dir, sizeof task_dir, "%s/task-%d", sweep, task);
    DIR *d = opendir(task_dir);
    if (!d) fail("no result folder of", what);
    struct dirent *e;
    char run[1024] = "";
    while ((e = readdir(d))) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", task_dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(run, sizeof run, "%s", e->d_name);
    }
    closedir(d);
    if (!run[0]) fail("empty result folder of", what);
    snprintf(path, sizeof path, "%s/%s/summary.json", task_dir, run);
    FILE *f = fopen(path, "r");
    if (!f) fail("no summary.json of", what);
    char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *s = cJSON_Parse(text);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(s, "status");
    if (!cJSON_IsString(status) || strcmp(status->valuestring, "complete") != 0) fail("status not complete in", path);
    cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/%s/jobs.csv", task_dir, run);
    f = fopen(path, "r");
    if (!f) fail("no jobs.csv of", what);
    int lines = 0;
    while (fgets(text, sizeof text, f)) lines++;
    fclose(f);
    if (lines != jobs + 1) fail("wrong number of jobs in", path);
    snprintf(path, sizeof path, "%s/task-%d.out", sweep, task);
    if (access(path, R_OK) != 0) fail("no Slurm log", path);
}

/* The data-parallel job's batch script and log: two ranks that srun started, the same id handed out by
 * rank 0 on the node list's first host at the port derived from the job's id, rank 1's line heard. */
static void check_ddp_job(const char *sweep, const char *log_path, const char *job_id) {
    char path[1400], err[512], want[256], host[256] = "";
    snprintf(path, sizeof path, "%s/ddp-0.sbatch", sweep);
    char *script = test_read_text(path, err, sizeof err);
    if (!script) fail("no data-parallel batch script", err);
    if (!strstr(script, "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n") ||
        !strstr(script, "exec srun '" FAKE_TRAIN_PATH "' '--model' 'resnet50'") ||
        !strstr(script, "'--launcher' 'slurm' '--epochs' '2' '--steps-per-epoch' '10'\n"))
        fail("unexpected data-parallel batch script", script);
    free(script);
    char *log = test_read_text(log_path, err, sizeof err);
    if (!log) fail("no data-parallel job log", err);
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = 0;
    char id[64] = "";
    for (int rank = 0; rank < 2; rank++) {
        snprintf(want, sizeof want, "fake_train: rank %d of 2 (local %d) on ", rank, rank);
        const char *line = strstr(log, want);
        const char *at = line ? strstr(line, ": id ") : NULL;
        char got[64] = "";
        if (!at || sscanf(at, ": id %63s", got) != 1) fail("a rank is missing from the log", log);
        if (rank == 0) snprintf(id, sizeof id, "%s", got);
        else if (strcmp(id, got)) fail("the ranks got different ids", log);
    }
    long job = atol(job_id);
    snprintf(want, sizeof want, "from %s:%ld (the first host of SLURM_STEP_NODELIST; port from SLURM_JOB_ID %ld)",
             host, 10000 + job % 20000, job);
    if (!strstr(log, want)) fail("rank 0's address or port not as derived", log);
    if (!strstr(log, "fake_train: rank 0 heard rank 1: {\"event\":\"done\",\"model\":\"resnet50\",\"rank\":1}"))
        fail("rank 0 did not hear rank 1", log);
    free(log);
}

int main(void) {
    char path[PATH_MAX];
    const char *needed[] = {"slurmctld", "slurmd", "sbatch", "squeue", "sinfo"};
    const char *system_path = getenv("PATH");
    char search[8192];
    snprintf(search, sizeof search, "%s:/usr/sbin:/sbin", system_path ? system_path : "/usr/bin:/bin");
    setenv("PATH", search, 1);
    for (size_t i = 0; i < sizeof needed / sizeof *needed; i++)
        if (jobs_find_program(needed[i], path, sizeof path) != 0) {
            printf("skipped: %s is not installed (apt-get install slurmctld slurmd slurm-client)\n", needed[i]);
            return 77;
        }
    if (geteuid() != 0) {
        printf("skipped: slurmd starts jobs only as root\n");
        return 77;
    }
    test_tmpdir(dir, sizeof dir);
    char sub[700];
    snprintf(sub, sizeof sub, "%s/state", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/spool", dir);
    mkdir(sub, 0700);
    write_conf();
    setenv("SLURM_CONF", conf, 1);
    daemons[0] = start("slurmctld", "slurmctld.out");
    daemons[1] = start("slurmd", "slurmd.out");
    atexit(stop_daemons);

    char out[8192];
    double t0 = now();
    for (;;) { /* the node registers within seconds */
        char *const sinfo[] = {"sinfo", "-h", "-o", "%t", NULL};
        if (client(sinfo, out, sizeof out) == 0 && strncmp(out, "idle", 4) == 0) break;
        if (now() - t0 > 30) fail("the node never became idle; logs in", dir);
        usleep(200000);
    }

    /* What the array tasks run is a plain run_suite: fake_train, no NVML, no MPS daemon. */
    char results[700], nomps[700];
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(nomps, sizeof nomps, "%s/no-mps", dir);
    mkdir(nomps, 0700);
    setenv("FAKE_TRAIN", "*:setup_ms=10,epoch_ms=20", 1);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", nomps, 1);
    char *const submit[] = {RUN_SUITE_PATH, "--slurm", "--mode", "naive", "--mixes", "S;2*S+M;M[gpus=2]", "--quick",
                            "--gpus-per-node", "2", "--train", FAKE_TRAIN_PATH, "--results", results, "--job-name",
                            "suite-e2e", NULL};
    char err[8192];
    int rc = test_run(submit, out, sizeof out, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s%s", out, err);
        fail("run_suite --slurm failed", NULL);
    }
    char job_id[64] = "", ddp_id[64] = "", ddp_log[1100] = "", sweep[1100] = "";
    if (sscanf(out, "submitted job array %63[0-9]", job_id) != 1) fail("no job id in", out);
    const char *logs = strstr(out, "; logs ");
    if (!logs || sscanf(logs, "; logs %1099[^ ]", sweep) != 1) fail("no sweep folder in", out);
    char *slash = strrchr(sweep, '/');
    if (slash) *slash = 0; /* ".../task-<i>.out" */
    const char *ddp = strstr(out, "submitted data-parallel job ");
    if (!ddp || sscanf(ddp, "submitted data-parallel job %63[0-9]: M[gpus=2] as 2 ranks over 1 node(s); log %1099s",
                       ddp_id, ddp_log) != 2)
        fail("no data-parallel job in", out);

    for (const char *id = job_id; id; id = id == job_id ? ddp_id : NULL) {
        for (;;) {
            char *const squeue[] = {"squeue", "-h", "-j", (char *)id, NULL};
            if (client(squeue, out, sizeof out) == 0 && !out[0]) break;
            if (now() - t0 > 90) fail("the jobs did not finish in 90 s; logs in", dir);
            usleep(250000);
        }
    }
    check_task(sweep, 0, 1);
    check_task(sweep, 1, 3);
    check_ddp_job(sweep, ddp_log, ddp_id);
    printf("job array %s: 2 tasks, each with its own complete run folder; data-parallel job %s: 2 ranks that srun "
           "started found each other; in %.1f s\n", job_id, ddp_id, now() - t0);
    stop_daemons();
    daemons[0] = daemons[1] = 0;
    test_rmtree(dir);
    return 0;
}
