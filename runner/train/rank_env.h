/* Which rank of a data-parallel job this process is when a launcher other than `train --gpus`
 * started it (`train --launcher`): the field's two conventions, read as pure functions of a
 * variable lookup so that tests drive them from a table.
 *
 *   env    the convention PyTorch's launcher made common: RANK, WORLD_SIZE, LOCAL_RANK (the
 *          process's index on its node: its GPU), MASTER_ADDR and MASTER_PORT (where rank 0
 *          listens), all required.
 *   slurm  what srun sets for each task: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; rank 0's host
 *          is MASTER_ADDR where set, else the first host of the step's node list
 *          (SLURM_STEP_NODELIST, else SLURM_NODELIST: task 0 runs there); the port is MASTER_PORT
 *          where set, else derived from SLURM_JOB_ID (RANK_ENV_PORT_BASE + the id modulo
 *          RANK_ENV_PORT_SPAN: below Linux's ephemeral ports, the same on every task of the job).
 *
 * Numbers are checked as the command line's are (runner/cli.h: the same rules and message shape,
 * naming the variable); every refusal is bad input (exit 2). Host only, no CUDA. */
#ifndef SUITE_RANK_ENV_H
#define SUITE_RANK_ENV_H

#include <stddef.h>

typedef enum rank_launcher { RANK_LAUNCHER_NONE = 0, RANK_LAUNCHER_ENV, RANK_LAUNCHER_SLURM } rank_launcher;

#define RANK_ENV_WORLD_MAX 4096  /* rank 0 keeps a connection to each of the others */
#define RANK_ENV_HOST_MAX 256
#define RANK_ENV_PORT_BASE 10000
#define RANK_ENV_PORT_SPAN 20000

typedef struct rank_env {
    int rank, world, local_rank;
    char master_addr[RANK_ENV_HOST_MAX];
    int master_port;
    char addr_from[64], port_from[64]; /* where each came from, for messages ("MASTER_PORT") */
} rank_env;

/* A variable's value, or NULL where it is unset (getenv's shape). */
typedef const char *(*rank_env_lookup)(void *user, const char *name);
/* The process's environment (user unused). */
const char *rank_env_getenv(void *user, const char *name);

/* The launcher's name as --launcher takes it ("env", "slurm"). */
const char *rank_env_launcher_name(rank_launcher from);

/* Reads the convention `from` through lookup into out. 0, or -1 with a message naming the variable
 * and what it expects. An empty value counts as unset. */
int rank_env_read(rank_launcher from, rank_env_lookup lookup, void *user, rank_env *out, char *err,
                  size_t err_size);

/* Slurm's compressed host lists, as SLURM_NODELIST writes them: hosts separated by commas, each
 * with bracketed number ranges that keep their zero padding ("node[01-03,07],gpu-a" is node01,
 * node02, node03, node07, gpu-a; "r[1-2]n[1-2]" is r1n1, r1n2, r2n1, r2n2). The number of hosts, or
 * -1 with a message when the list is malformed. */
long rank_env_hostlist_count(const char *list, char *err, size_t err_size);
/* The index-th host (from 0) into host. 0, or -1 with a message (malformed, index past the end,
 * a name longer than size - 1). */
int rank_env_hostlist_host(const char *list, long index, char *host, size_t size, char *err, size_t err_size);

#endif
