/*
 * nvml_mock.c — a stand-in for libnvidia-ml used by tests/test_gpuctl.c: the NVML entry points
 * the gpuctl backend loads, with an A100-like device (SM clocks 1410..210 step 15 at memory
 * clock 1215, energy growing at 200 W in 100 ms steps, like the real counter).
 *
 * Behaviour is chosen through environment variables read at nvmlInit:
 *   MOCK_NVML_INIT_RC        return code of nvmlInit_v2 (e.g. 9, NVML_ERROR_DRIVER_NOT_LOADED)
 *   MOCK_NVML_DEVICES        number of devices (default 1)
 *   MOCK_NVML_NO_PERMISSION  1: clock lock and reset return NVML_ERROR_NO_PERMISSION (4)
 * The unversioned nvmlInit / nvmlDeviceGetCount / nvmlDeviceGetHandleByIndex return
 * NVML_ERROR_UNKNOWN so that a test passes only if the loader prefers the _v2 symbols.
 * Test-only code: its globals stand for the driver's state.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_opaque *nvmlDevice_t;

#define MOCK_MAX_DEV 8
#define MOCK_UNKNOWN 999

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
nvmlReturn_t nvmlDeviceGetCount(unsigned *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *h);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *h);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t h, unsigned *n, unsigned *mhz);
nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t h, unsigned mem, unsigned *n, unsigned *mhz);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *mhz);
nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t h, unsigned lo, unsigned hi);
nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t h);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *mw);

static int initialised, ndev = 1, no_perm;
static unsigned locked[MOCK_MAX_DEV]; /* locked max clock per device, 0 if none */
static char dev_tag[MOCK_MAX_DEV];    /* handles point here */
static double t_init;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

static int dev_index(nvmlDevice_t h)
{
    for (int i = 0; i < ndev; i++)
        if ((void *)h == (void *)&dev_tag[i])
            return i;
    return -1;
}

nvmlReturn_t nvmlInit_v2(void)
{
    int rc = env_int("MOCK_NVML_INIT_RC", 0);
    if (rc)
        return rc;
    ndev = env_int("MOCK_NVML_DEVICES", 1);
    if (ndev < 0 || ndev > MOCK_MAX_DEV)
        ndev = 1;
    no_perm = env_int("MOCK_NVML_NO_PERMISSION", 0);
    memset(locked, 0, sizeof locked);
    t_init = now_s();
    initialised = 1;
    return 0;
}

nvmlReturn_t nvmlInit(void)
{
    return MOCK_UNKNOWN;
}

nvmlReturn_t nvmlShutdown(void)
{
    initialised = 0;
    return 0;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 4: return "Insufficient Permissions";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!initialised)
        return 1;
    *n = (unsigned)ndev;
    return 0;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
    (void)n;
    return MOCK_UNKNOWN;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *h)
{
    if (!initialised)
        return 1;
    if (i >= (unsigned)ndev)
        return 2;
    *h = (nvmlDevice_t)(void *)&dev_tag[i];
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *h)
{
    (void)i;
    (void)h;
    return MOCK_UNKNOWN;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned len)
{
    if (dev_index(h) < 0 || len < 32)
        return 2;
    strcpy(buf, "NVIDIA A100-SXM4-40GB (mock)");
    return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned len)
{
    int d = dev_index(h);
    if (d < 0 || len < 48)
        return 2;
    strcpy(buf, "GPU-00000000-mock-0000-0000-00000000000");
    buf[strlen(buf) - 1] = (char)('0' + d);
    return 0;
}

nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t h, unsigned *n, unsigned *mhz)
{
    if (dev_index(h) < 0)
        return 2;
    if (*n < 1) {
        *n = 1;
        return 7;
    }
    mhz[0] = 1215;
    *n = 1;
    return 0;
}

nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t h, unsigned mem, unsigned *n, unsigned *mhz)
{
    if (dev_index(h) < 0 || mem != 1215)
        return 2;
    unsigned cnt = (1410 - 210) / 15 + 1;
    if (*n < cnt) {
        *n = cnt;
        return 7;
    }
    for (unsigned i = 0; i < cnt; i++)
        mhz[i] = 1410 - 15 * i;
    *n = cnt;
    return 0;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *mhz)
{
    int d = dev_index(h);
    if (d < 0)
        return 2;
    if (type == 2)
        *mhz = 1215;
    else
        *mhz = locked[d] ? locked[d] : 1410;
    return 0;
}

nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t h, unsigned lo, unsigned hi)
{
    int d = dev_index(h);
    if (d < 0 || lo > hi)
        return 2;
    if (no_perm)
        return 4;
    locked[d] = hi;
    return 0;
}

nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t h)
{
    int d = dev_index(h);
    if (d < 0)
        return 2;
    if (no_perm)
        return 4;
    locked[d] = 0;
    return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj)
{
    if (dev_index(h) < 0)
        return 2;
    double t = now_s() - t_init;
    *mj = 1000000ULL + 200ULL * 100ULL * (unsigned long long)(t / 0.1); /* 200 W in 0.1 s steps */
    return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *mw)
{
    if (dev_index(h) < 0)
        return 2;
    *mw = 200000;
    return 0;
}
