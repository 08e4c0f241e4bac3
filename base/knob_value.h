/* The environment knobs' values (kernels/knobs.h) checked against each row's kind and range, by the
 * number rule every grammar follows (base/number.h). Every program (train, job_host, run_suite)
 * calls knob_value_check_all when it starts: a knob set to a value no reader takes is exit 2 there,
 * naming the variable and what it expects, never a value silently read as unset. An empty value is
 * unset. Readers of a number or a size read it through here, by the same rule. */
#ifndef SUITE_BASE_KNOB_VALUE_H
#define SUITE_BASE_KNOB_VALUE_H

#include <stddef.h>

#include "kernels/knobs.h"

/* text against the row of id: 0, or -1 with "<NAME>: expected <what>, got '<text>'[ (<why>)]". */
int knob_value_check(knob_id id, const char *text, char *err, size_t err_size);
/* Every knob that is set (not empty): 0, or -1 with the first refusal. */
int knob_value_check_all(char *err, size_t err_size);

/* What the row accepts, in a message's words ("a size from 1M to 1024T", "0 or 1", "legacy or engine"). */
void knob_value_expects(const knob *k, char *out, size_t size);

/* A number or size knob's value: 1 with *out when set and valid, 0 when unset or empty, -1 with the
 * refusal in err when set and not valid. */
int knob_value_whole(knob_id id, long long *out, char *err, size_t err_size);
int knob_value_real(knob_id id, double *out, char *err, size_t err_size);
int knob_value_size(knob_id id, long long *out, char *err, size_t err_size);

#endif
