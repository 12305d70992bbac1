/*
 * gpuctl_internal.h — what the files of the gpuctl module share: the device-info entry points
 * of the NVML and fake backends (kr_gpuctl_device_info dispatches to them).
 */
#ifndef KR_GPUCTL_INTERNAL_H
#define KR_GPUCTL_INTERNAL_H

#include "kareus/gpuctl.h"

int kr__nvml_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);
int kr__fake_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);
int kr__kareusd_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);

#endif
