/* What a traced kernel did and for which pass (issue 49): the classes and passes that the job's
 * tracer (models/core/kernel_scope.h) files kernels under and the runner's attribution
 * (results/kernel_trace.h) reads back, by the names its files carry. Host only. */
#ifndef SUITE_BASE_KERNEL_CLASS_H
#define SUITE_BASE_KERNEL_CLASS_H

/* X(kind, name): the classes of issue 49, in their report order; the names are the interface
 * with the runner's attribution (results/kernel_trace.h: the files' format). */
#define KERNEL_CLASS_TABLE(X)                                                                       \
    X(KCLASS_CONV_FWD, "conv_fwd") X(KCLASS_CONV_DGRAD, "conv_dgrad") X(KCLASS_CONV_WGRAD, "conv_wgrad")    \
    X(KCLASS_GEMM, "gemm") X(KCLASS_BATCHNORM, "batchnorm") X(KCLASS_ELEMENTWISE, "elementwise")           \
    X(KCLASS_POOLING, "pooling") X(KCLASS_ATTENTION, "attention") X(KCLASS_EMBEDDING, "embedding")         \
    X(KCLASS_OPTIMIZER, "optimizer") X(KCLASS_LOSS, "loss") X(KCLASS_COPY, "copy")                        \
    X(KCLASS_COLLECTIVE, "collective") X(KCLASS_OTHER, "other")
#define KERNEL_CLASS_ENUM_(kind, name) kind,
typedef enum { KERNEL_CLASS_TABLE(KERNEL_CLASS_ENUM_) KCLASS_COUNT } kernel_class;
#undef KERNEL_CLASS_ENUM_

#define KERNEL_PASS_TABLE(X)                                                                        \
    X(KPASS_FORWARD, "forward") X(KPASS_DGRAD, "dgrad") X(KPASS_WGRAD, "wgrad")                     \
    X(KPASS_BACKWARD, "backward") X(KPASS_UPDATE, "update") X(KPASS_NONE, "-")
#define KERNEL_PASS_ENUM_(kind, name) kind,
typedef enum { KERNEL_PASS_TABLE(KERNEL_PASS_ENUM_) KPASS_COUNT } kernel_pass;
#undef KERNEL_PASS_ENUM_

const char *kernel_class_name(kernel_class c);  /* "other" outside the table */
int kernel_class_parse(const char *name);       /* the class, or -1 */
const char *kernel_pass_name(kernel_pass p);    /* "-" outside the table */
int kernel_pass_parse(const char *name);        /* the pass, or -1 */

#endif
