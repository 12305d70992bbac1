/*
 * api.c — the one exported symbol of libkareus_cuda.so (kr_cuda_profiler_api) and the probe
 * that tells the shim what is there: a CUDA driver, GPUs, their names and sizes. Every way of
 * not having a usable GPU becomes KR_ENOLIB ("no CUDA driver") or KR_ENODEV ("no GPU") with the
 * runtime's own words, so `kareus profile` can say exactly what is missing.
 */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kr_cuda.h"
#include "profiler/device.h"

static int probe(kr_profiler_probe_info *info, kr_error *err)
{
    int drv = 0, count = 0;
    cudaDriverGetVersion(&drv); /* 0 when no driver is installed */
    info->driver_version = drv;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (drv == 0 || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary)
        return kr_error_set(err, KR_ENOLIB,
                            "no CUDA driver: %s (libcuda.so.1 comes with the NVIDIA driver; this machine has none, or "
                            "an older one than the CUDA %d.%d runtime needs)",
                            e != cudaSuccess ? cudaGetErrorString(e) : "driver version 0", CUDART_VERSION / 1000,
                            (CUDART_VERSION % 1000) / 10);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
        return kr_error_set(err, KR_ENODEV, "no GPU: the CUDA driver (version %d) sees no device%s%s", drv,
                            getenv("CUDA_VISIBLE_DEVICES") ? "; CUDA_VISIBLE_DEVICES=" : "",
                            getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "");
    if (e != cudaSuccess)
        return kr_cu_fail(err, e, "cudaGetDeviceCount");
    info->ndevices = count;
    for (int i = 0; i < count && i < KR_PROFILER_MAX_RANKS; i++) {
        struct cudaDeviceProp p;
        if ((e = cudaGetDeviceProperties(&p, i)) != cudaSuccess)
            return kr_cu_fail(err, e, "cudaGetDeviceProperties");
        snprintf(info->name[i], sizeof info->name[i], "%s", p.name);
        info->sm_count[i] = p.multiProcessorCount;
        info->cc_major[i] = p.major;
        info->cc_minor[i] = p.minor;
        info->mem_bytes[i] = (double)p.totalGlobalMem;
    }
    return KR_OK;
}

#define STR_(x) #x
#define STR(x) STR_(x)
/* What the library was built with (fixed at compile time). */
#define BUILD                                                                                          \
    "CUDA " STR(CUDART_VERSION) ", cuBLASLt " STR(CUBLAS_VER_MAJOR) "." STR(CUBLAS_VER_MINOR) "." STR( \
        CUBLAS_VER_PATCH) ", NCCL " STR(NCCL_MAJOR) "." STR(NCCL_MINOR) "." STR(NCCL_PATCH)

static const kr__prof_device_api api = {
    KR__PROF_DEVICE_ABI,
    sizeof(kr_profiler_program),
    sizeof(kr_profiler_probe_info),
    sizeof(kr_profiler_runner),
    BUILD,
    probe,
    kr_cu_runner_open,
};

__attribute__((visibility("default"))) const kr__prof_device_api *kr_cuda_profiler_api(void);

const kr__prof_device_api *kr_cuda_profiler_api(void)
{
    return &api;
}
