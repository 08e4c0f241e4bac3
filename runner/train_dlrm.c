#include "runner/train_dlrm.h"

int train_dlrm(const train_options *o, const train_events *ev) {
    (void)o;
    return train_fail(ev, 2, "--model dlrm: not built yet");
}
