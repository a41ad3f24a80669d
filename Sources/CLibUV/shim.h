#ifndef OUTATIME_CLIBUV_SHIM_H
#define OUTATIME_CLIBUV_SHIM_H
#include <uv.h>
#endif
