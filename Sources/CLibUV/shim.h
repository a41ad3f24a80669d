#ifndef OUTATIME_CLIBUV_SHIM_H
#define OUTATIME_CLIBUV_SHIM_H
#include <uv.h>
#ifdef __linux__
#include <sys/timerfd.h>
#endif
#endif
