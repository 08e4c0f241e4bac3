/* The environment knobs: every SUITE_ variable the programs read, in one table (kernels/knobs.c)
 * that README.md's "Environment knobs" section shows row for row (tests/kernels/test_knobs.c compares
 * them). Host-only C with no CUDA, in its own library (suite_knobs) at the bottom of the layer
 * order, so that every layer reads its knobs here and run_suite links no CUDA for it. A knob is
 * read where it takes effect, through knob_text or knob_flag, never with getenv. */
#ifndef SUITE_KNOBS_H
#define SUITE_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum knob_id {
    KNOB_PDL,
    KNOB_WGRAD_LANE,
    KNOB_CONV_PATH,
    KNOB_CONV_LOG,
    KNOB_CONV_CHOICES,
    KNOB_DEPTHWISE_PATH,
    KNOB_SM_TARGET,
    KNOB_CONCURRENT_JOBS,
    KNOB_GPU_MEMORY,
    KNOB_NVML_LIBRARY,
    KNOB_JOB_HOST,
    KNOB_STATE_DIR,
    KNOB_PYTHON,
    KNOB_REPORT_SCRIPT,
    KNOB_WRITE_FAULT,
    KNOB_DDP_OVERLAP,
    KNOB_DDP_BROADCAST_BUFFERS,
    KNOB_RENDEZVOUS_TIMEOUT,
    /* set by `train --gpus` for its ranks (runner/train/train_ddp.h), not by users */
    KNOB_DDP_RANK,
    KNOB_DDP_WORLD,
    KNOB_DDP_ID,
    KNOB_DDP_PARENT,
    /* set by `run_suite --gpus` for each run it starts (runner/suite/multi/gpus.h), not by users */
    KNOB_GO_RELAY,
    KNOB_JOB_DEVICES,
    /* set by `run_suite --slurm` for its check of a task on the login node (runner/suite/multi/slurm.c) */
    KNOB_NODE_CHECKS,
    KNOB_COUNT
} knob_id;

/* What a knob's value may be: every program checks every knob that is set, against its row, when it
 * starts (base/knob_value.h), so a value no reader takes is refused there, never read as unset. */
typedef enum knob_kind {
    KNOB_KIND_FLAG = 1, /* `0` or `1` */
    KNOB_KIND_CHOICE,   /* one of the row's choices ("legacy|engine") */
    KNOB_KIND_WHOLE,    /* a whole number from lo to hi (base/number.h's rule) */
    KNOB_KIND_REAL,     /* a number from lo to hi */
    KNOB_KIND_SIZE,     /* a size (80G, 512M) from lo to hi bytes */
    KNOB_KIND_PATH,     /* a path or a program's name: one line, shorter than PATH_MAX */
    KNOB_KIND_TEXT,     /* one line that the reader parses (the suite's own protocol values) */
} knob_kind;

/* One row of the table; the texts are README.md's cells (Markdown). */
typedef struct knob {
    const char *name;     /* the environment variable */
    const char *values;   /* what it accepts (README's words; the range below is what is checked) */
    const char *fallback; /* what holds when it is unset or empty; for a flag "on" or "off" */
    const char *meaning;  /* what it does */
    const char *readers;  /* the programs that read it */
    int internal;         /* passed between the suite's own processes: a protocol, not a setting */
    knob_kind kind;
    double lo, hi;        /* KNOB_KIND_WHOLE, _REAL, _SIZE */
    const char *choices;  /* KNOB_KIND_CHOICE: the values joined by '|' */
} knob;

/* The row of a knob; NULL for an id out of range. */
const knob *knob_info(knob_id id);
const char *knob_name(knob_id id);
/* The knob's value as set (getenv), NULL when unset. Empty values are the reader's to treat: every
 * knob but the ranks' reads "" as unset. */
const char *knob_text(knob_id id);
/* An on/off knob: "0" is off, "1" is on, unset or empty is the knob's fallback (any other value is
 * refused when the program starts, base/knob_value.h; read here, it is the fallback too). */
int knob_flag(knob_id id);

#ifdef __cplusplus
}
#endif

#endif
