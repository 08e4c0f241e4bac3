/* Where a job's training JPEGs decode: on the host's loader threads, or on the GPU
 * (runner/train/jpeg_decoder.h); auto: the GPU where it can. One table that train's --decode, the
 * mix's decode= override and the job spec read, so a job's decoder stays this enum from the mix to
 * train's command line. Host only. */
#ifndef SUITE_BASE_DECODE_H
#define SUITE_BASE_DECODE_H

#include <stddef.h>

/* X(kind, name) for each place, in the order of their values. */
#define DECODE_TABLE(X) X(DECODE_AUTO, "auto") X(DECODE_CPU, "cpu") X(DECODE_GPU, "gpu")

#define DECODE_ENUM_(kind, name) kind,
typedef enum decode_kind { DECODE_TABLE(DECODE_ENUM_) } decode_kind;
#undef DECODE_ENUM_

/* "auto", "cpu", "gpu"; "unknown" outside the table. */
const char *decode_kind_name(decode_kind kind);
/* The place named by the n characters at text, any case (the mix's override); -1 if none. */
int decode_find(const char *text, size_t n);

#endif
