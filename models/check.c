#include "models/check.h"

#include <stdio.h>
#include <stdlib.h>

void suite_check_fail(const char *lib, const char *call, const char *file, int line, long code,
                      const char *message) {
    fprintf(stderr, "%s error %ld (%s) in %s at %s:%d\n", lib, code, message ? message : "?", call,
            file, line);
    fflush(stderr);
    exit(1);
}

const char *suite_cudnn_message(cudnnStatus_t status) {
    static _Thread_local char text[1024];
    char last[768] = "";
    cudnnGetLastErrorString(last, sizeof last);
    snprintf(text, sizeof text, "%s%s%s", cudnnGetErrorString(status), last[0] ? ": " : "", last);
    return text;
}
