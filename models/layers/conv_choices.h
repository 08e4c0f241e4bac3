/* Convolution choices kept in a file (SUITE_CONV_CHOICES) so that a set-up need not search again:
 * every process of a run_suite invocation, alone or collocated, then runs the same algorithms, and
 * a run's set-up costs milliseconds where cuDNN's search cost seconds. One line per searched
 * convolution, "KEY<tab>VALUE": the key names the shape, the GPU and cuDNN (conv.c builds it), the
 * value what was chosen. Here are the file, its lock, its lines, the GPU's part of a key and the
 * flow from key to choice that the dense (conv.c) and depthwise (depthwise.c) layers share.
 *
 * A set-up reads under a shared lock and rebuilds what it found with no lock held, so that seven
 * jobs starting at once restore their plans side by side. One that finds nothing takes the
 * exclusive lock, looks again (another may have just written the line), and searches and writes
 * under it, so no two searches overlap. flock's lock is on the open file, so it also keeps apart
 * the jobs of one process (job_host's threads). */
#ifndef SUITE_CONV_CHOICES_H
#define SUITE_CONV_CHOICES_H

#include <stddef.h>

typedef struct conv_choices {
    int fd;          /* the file, open and locked; -1: none */
    char path[1024];
} conv_choices;

/* The file the environment names (SUITE_CONV_CHOICES), or NULL when it names none ("none"). */
const char *conv_choices_path(void);
/* Opens (creating) path and waits for its lock: shared to read, exclusive to search and write.
 * 0, or -1 with err naming the file. */
int conv_choices_open(conv_choices *f, const char *path, int exclusive, char *err, size_t err_size);
/* The value recorded under key (the first such line): 1 with value filled, 0 when there is none,
 * -1 with err when the file cannot be read or the value is longer than value_size. */
int conv_choices_get(conv_choices *f, const char *key, char *value, size_t value_size, char *err,
                     size_t err_size);
/* Appends "key<tab>value\n" in one write. Neither may hold a tab or a newline. 0, or -1 with err. */
int conv_choices_put(conv_choices *f, const char *key, const char *value, char *err, size_t err_size);
/* Releases the lock and closes the file. Idempotent. */
void conv_choices_close(conv_choices *f);

/* What a choice depends on besides the layer: the GPU (name and SMs: a MIG slice is another device),
 * the SMs the libraries were told (a green context's or an MPS share's, job_context.sm_target; 0:
 * none), so a choice made for the whole GPU is never taken in a partition of another size nor the
 * other way round, cuDNN, the workspace limit and TF32:
 * "gpu=NAME/Nsm told=T cudnn=V ws=BYTES tf32=0|1 written=1" (written: models/layers/written.h). */
void conv_choices_device_key(char *out, size_t size, int device, int sm_target, size_t workspace_limit,
                             int allow_tf32);

/* The names of a convolution's three directions in a value, in the order of conv_direction and
 * of the depthwise layers' directions: forward, backward-data, backward-filter. */
extern const char *const CONV_CHOICES_DIRECTIONS[3];

/* One layer's choice, as conv_choices_choose asks for it. */
typedef struct conv_choices_layer {
    void *user;
    /* sets the layer from a kept value: 0, or -1 with err (the value does not apply: search) */
    int (*restore)(void *user, const char *value, char *err, size_t err_size);
    void (*search)(void *user);                        /* measures and sets the layer */
    void (*describe)(void *user, char *value, size_t size); /* what search chose, as a value */
} conv_choices_layer;

/* The layer's choice for key: kept in the file SUITE_CONV_CHOICES names, restored with no lock
 * held; else searched under the exclusive lock and kept. Without a file, a search. A file that
 * cannot be read or written stops the job (exit 2, naming it); a kept value that does not apply
 * is said on stderr and searched again. "what" names the layer kind in messages. */
void conv_choices_choose(const char *what, const char *key, const conv_choices_layer *layer);

#endif
