#ifndef OUTATIME_CLIBUV_SHIM_H
#define OUTATIME_CLIBUV_SHIM_H
#include <uv.h>
#ifdef __linux__
#include <sys/timerfd.h>
#include <sys/prctl.h>

// prctl is variadic, which Swift cannot call.
static inline int outatime_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

static inline int outatime_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}
#endif
#endif
