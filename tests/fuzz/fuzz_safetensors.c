/* libFuzzer target for the safetensors reader: any input must either parse into tensors whose
 * byte ranges lie inside the data section (every byte is read here, so ASan sees any overread) and
 * whose names st_find returns, or fail with a message; never crash, hang or leak.
 *   ./fuzz_safetensors -max_total_time=60 corpus/   (seeds: tests/fuzz/safetensors/) */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "models/core/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    st_file f;
    char err[512] = "";
    if (st_parse(&f, bytes, size, err, sizeof err) != 0) {
        if (err[0] == '\0') __builtin_trap(); /* every failure says why */
        return 0;
    }
    volatile uint64_t sum = 0;
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        const uint8_t *data = st_data(&f, t);
        if (!data || t->offset + t->nbytes > f.data_size || t->ndim < 0 || t->ndim > ST_MAX_DIMS ||
            st_dtype_size(t->dtype) == 0 || strlen(t->name) >= ST_MAX_NAME)
            __builtin_trap();
        for (size_t k = 0; k < t->nbytes; k++) sum += data[k];
        if (st_find(&f, t->name) != t) __builtin_trap(); /* names are unique */
    }
    (void)sum;
    st_close(&f);
    return 0;
}
