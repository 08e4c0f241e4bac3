#include "base/sm_target.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define SM_TARGET_NAME_(kind, name) [kind] = name,
static const char *const NAMES[] = {SM_TARGET_TABLE(SM_TARGET_NAME_)};
#undef SM_TARGET_NAME_

const char *sm_target_from_name(sm_target_from from) {
    return (unsigned)from < sizeof NAMES / sizeof *NAMES ? NAMES[from] : "unknown";
}

int sm_target_of_share(int device_sms, int percent) {
    if (device_sms < 1 || percent < 1 || percent > 100) return 0;
    if (percent == 100) return device_sms;
    long long tpcs = (long long)percent * (device_sms / 2) / 100; /* whole TPCs, rounded down */
    if (tpcs < 1) tpcs = 1;
    long long sms = 2 * tpcs;
    return sms > device_sms ? device_sms : (int)sms;
}

int sm_target_percent_for(int device_sms, double fraction) {
    if (!(fraction > 0)) return 1;
    if (fraction >= 1) return 100;
    if (device_sms < 2) {
        long percent = (long)ceil(fraction * 100.0 - 1e-9);
        return percent < 1 ? 1 : percent > 100 ? 100 : (int)percent;
    }
    long want = lround(fraction * device_sms);
    for (int percent = 1; percent < 100; percent++)
        if (sm_target_of_share(device_sms, percent) >= want) return percent;
    return 100;
}

int sm_target_percent(const char *text) {
    if (!text || !*text) return 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= 1.0 && v <= 100.0)) return 0;
    return (int)v;
}

int sm_target_decide(const sm_target_place *p, sm_target_from *from) {
    int sms = 0;
    sm_target_from where = SM_TARGET_WHOLE;
    if (p->green_sms > 0) {
        sms = p->green_sms, where = SM_TARGET_GREEN;
    } else if (p->mps_client && p->percent > 0 && p->percent < 100 && p->context_sms > 0) {
        sms = p->context_sms;
        /* the device reporting no more than the context has: the libraries already see the share */
        where = p->device_sms > 0 && p->device_sms <= p->context_sms ? SM_TARGET_SEEN : SM_TARGET_MPS;
    }
    if (where == SM_TARGET_SEEN) { /* nothing to tell: the device's own count is the share */
        *from = where;
        return 0;
    }
    /* a share that is the whole device is nothing to tell */
    if (sms <= 0 || (p->device_sms > 0 && sms >= p->device_sms)) sms = 0, where = SM_TARGET_WHOLE;
    if (!p->telling && where != SM_TARGET_WHOLE) sms = 0, where = SM_TARGET_OFF;
    *from = where;
    return sms;
}
