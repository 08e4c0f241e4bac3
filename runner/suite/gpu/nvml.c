/* Run-time loading of NVML (see nvml.h for why). The handle is heap-allocated and owned by its
 * caller; a process may hold several (the monitor thread and the MIG setup each open their own,
 * which NVML's reference-counted nvmlInit_v2/nvmlShutdown allow). */
#define _GNU_SOURCE
#include "runner/suite/gpu/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/knobs.h"

static void set_why(char *why, size_t why_size, const char *fmt, const char *a, const char *b) {
    if (why && why_size) snprintf(why, why_size, fmt, a, b);
}

nvml *nvml_open(const char *path, char *why, size_t why_size) {
    if (!path || !*path) {
        const char *env = knob_text(KNOB_NVML_LIBRARY);
        path = env && *env ? env : NVML_DEFAULT_LIBRARY;
    }
    if (strlen(path) >= sizeof(((nvml *)0)->path)) {
        set_why(why, why_size, "NVML library path is too long: %s%s", path, "");
        return NULL;
    }
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *reason = dlerror();
        if (why && why_size)
            snprintf(why, why_size, "NVML is not available: cannot load %s (%s); GPU monitoring and MIG need the "
                     "NVIDIA driver (set %s to load it from elsewhere)",
                     path, reason ? reason : "unknown reason", knob_name(KNOB_NVML_LIBRARY));
        return NULL;
    }
    nvml *nv = calloc(1, sizeof *nv);
    if (!nv) {
        dlclose(library);
        set_why(why, why_size, "out of host memory while loading %s%s", path, "");
        return NULL;
    }
    nv->library = library;
    snprintf(nv->path, sizeof nv->path, "%s", path);

    /* dlsym returns void *; memcpy into the typed pointer is the conversion POSIX sanctions. */
#define NVML_LOAD_REQUIRED(ret, name, params)                                                     \
    {                                                                                             \
        void *symbol = dlsym(library, #name);                                                     \
        if (!symbol) {                                                                            \
            set_why(why, why_size, "%s lacks the NVML function %s (driver too old?)", path, #name); \
            dlclose(library);                                                                     \
            free(nv);                                                                             \
            return NULL;                                                                          \
        }                                                                                         \
        memcpy(&nv->name, &symbol, sizeof symbol);                                                \
    }
#define NVML_LOAD_OPTIONAL(ret, name, params)                                                     \
    {                                                                                             \
        void *symbol = dlsym(library, #name);                                                     \
        if (symbol) memcpy(&nv->name, &symbol, sizeof symbol);                                    \
    }
    NVML_REQUIRED_FUNCTIONS(NVML_LOAD_REQUIRED)
    NVML_OPTIONAL_FUNCTIONS(NVML_LOAD_OPTIONAL)
#undef NVML_LOAD_REQUIRED
#undef NVML_LOAD_OPTIONAL

    nvmlReturn_t status = nv->nvmlInit_v2();
    if (status != NVML_SUCCESS) {
        if (why && why_size)
            snprintf(why, why_size, "NVML error %d (%s) in nvmlInit_v2() from %s", (int)status,
                     nv->nvmlErrorString(status), path);
        dlclose(library);
        free(nv);
        return NULL;
    }
    return nv;
}

void nvml_close(nvml *nv) {
    if (!nv) return;
    nvml_check(nv, nv->nvmlShutdown(), NVML_SUCCESS, "nvmlShutdown()", __FILE__, __LINE__);
    dlclose(nv->library);
    free(nv);
}

const char *nvml_error_string(const nvml *nv, nvmlReturn_t status) {
    if (status == NVML_ERROR_FUNCTION_NOT_FOUND) return "Function Not Found in this driver";
    const char *text = nv && nv->nvmlErrorString ? nv->nvmlErrorString(status) : NULL;
    return text ? text : "unknown NVML status";
}

nvmlReturn_t nvml_check(nvml *nv, nvmlReturn_t status, nvmlReturn_t expected, const char *call,
                        const char *file, int line) {
    if (status == NVML_SUCCESS || status == expected) return status;
    char message[sizeof nv->last_error];
    snprintf(message, sizeof message, "NVML error %d (%s) in %s at %s:%d", (int)status,
             nvml_error_string(nv, status), call, file, line);
    if (nv) {
        memcpy(nv->last_error, message, sizeof message);
        if (!nv->quiet) fprintf(stderr, "%s\n", message);
    } else {
        fprintf(stderr, "%s\n", message);
    }
    return status;
}
