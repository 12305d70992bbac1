/*
 * device.h — the binary interface between libkareus (src/profiler/shim.c) and the CUDA
 * library libkareus_cuda.so (cuda/), which the shim loads with dlopen. Not public API.
 *
 * The library exports one symbol, kr_cuda_profiler_api, returning a table of entry points.
 * The shim refuses a table whose ABI number or struct sizes differ from its own, so a stale
 * libkareus_cuda.so from another build fails with a clear message instead of corrupting
 * memory. Bump KR__PROF_DEVICE_ABI whenever profiler.h's plan, runner or probe structs change
 * meaning.
 */
#ifndef KR_PROFILER_DEVICE_H
#define KR_PROFILER_DEVICE_H

#include <stddef.h>

#include "kareus/profiler.h"

#define KR__PROF_DEVICE_ABI 1
#define KR__PROF_DEVICE_SYMBOL "kr_cuda_profiler_api"

typedef struct kr__prof_device_api {
    int abi;                  /* KR__PROF_DEVICE_ABI of the library. */
    size_t plan_size;         /* sizeof(kr_profiler_program) it was built with. */
    size_t probe_size;        /* sizeof(kr_profiler_probe_info). */
    size_t runner_size;       /* sizeof(kr_profiler_runner). */
    const char *build;        /* "CUDA runtime 13000, cuBLASLt 130000, NCCL 22809" */
    /* Fills info from the CUDA runtime. KR_ENOLIB (no driver), KR_ENODEV (no GPU). */
    int (*probe)(kr_profiler_probe_info *info, kr_error *err);
    /* Opens devices [first, first+devices) (devices <= 0: all from first) and fills r's ops,
     * impl and device fields. */
    int (*open)(int first, int devices, kr_profiler_runner *r, kr_error *err);
} kr__prof_device_api;

typedef const kr__prof_device_api *(*kr__prof_device_entry)(void);

/*
 * Checks that CUDA numbers GPUs as NVML does (the control backend takes NVML indices):
 * CUDA_DEVICE_ORDER must be PCI_BUS_ID when more than one GPU is present, and
 * CUDA_VISIBLE_DEVICES, when set, must list 0, 1, … in order. order/visible are the variables'
 * values (NULL when unset); nvisible is the count of GPUs CUDA sees. KR_EINVAL with the fix.
 */
int kr__profiler_env_check(const char *order, const char *visible, int nvisible, kr_error *err);

#endif
