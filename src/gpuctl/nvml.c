/*
 * nvml.c — the NVML backend: SM clocks, the energy counter and power of NVIDIA GPUs, with
 * libnvidia-ml loaded at run time by dlopen, so that libkareus builds and runs on machines
 * without the driver (the way nvtop does it, reference/aesthetics.md §6).
 *
 * Design.
 * - Only the NVML ABI we use is declared here: nvmlReturn_t is stored as int, nvmlDevice_t is an
 *   opaque pointer, and each function is one pointer in a table. The soname with the ABI
 *   version ("libnvidia-ml.so.1", what the driver installs) is tried before the unversioned
 *   development link; newer symbol versions (…_v2) before older ones.
 * - Required symbols (init, shutdown, error string, device count and handle, name, clocks) make
 *   loading fail with KR_ENOLIB when missing; optional ones (locking, energy, power, UUID,
 *   memory clock) stay NULL and their callers return KR_EUNSUPPORTED.
 * - The symbol table is the one process-wide mutable global libkareus allows (style.md). It is
 *   guarded by a statically initialised mutex and reference-counted: the first backend loads
 *   the library and calls nvmlInit, the last one destroyed calls nvmlShutdown and dlclose.
 *   NVML itself is thread-safe; per-backend state (the lock we applied) has its own mutex.
 * - NVML cannot report an existing locked-clock range, so get_clock reports the lock this
 *   backend applied, or (0, 0).
 *
 * Units: NVML reports energy in mJ since driver load (updated about every 100 ms) and power in
 * mW (an instantaneous reading on GA100 and older, a 1 s average on later GPUs —
 * reference/gpu-model-data.md §4); this backend converts to J and W.
 */
#include "kareus/gpuctl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- the NVML ABI we use (values from nvml.h, stable since NVML 1) ---------------------- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_opaque *nvmlDevice_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_GPU_NOT_FOUND = 28
};
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

/* ---- the process-wide symbol table ------------------------------------------------------- */

/* The function pointers (zeroed as a whole when the library is unloaded). */
struct nvml_fns {
    /* required */
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*DeviceGetCount)(unsigned *);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*DeviceGetSupportedGraphicsClocks)(nvmlDevice_t, unsigned, unsigned *, unsigned *);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned *);
    /* optional */
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*DeviceGetSupportedMemoryClocks)(nvmlDevice_t, unsigned *, unsigned *);
    nvmlReturn_t (*DeviceSetGpuLockedClocks)(nvmlDevice_t, unsigned, unsigned);
    nvmlReturn_t (*DeviceResetGpuLockedClocks)(nvmlDevice_t);
    nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned *);
};

static struct nvml_lib {
    pthread_mutex_t mu; /* guards everything below */
    int refs;           /* backends alive */
    void *handle;       /* dlopen handle while refs > 0 */
    char path[256];     /* library name that was loaded */
    struct nvml_fns f;
} g_nvml = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* One symbol: the names to try (newest first), where to store it, required or not. */
typedef struct nvml_sym {
    const char *names[3];
    void *slot; /* address of the function pointer in g_nvml */
    int required;
} nvml_sym;

static void clear_symbols(void)
{
    memset(&g_nvml.f, 0, sizeof g_nvml.f);
    g_nvml.handle = NULL;
    g_nvml.path[0] = '\0';
}

/* Resolves every symbol; on a missing required one names it in err and returns KR_ENOLIB. */
static int resolve_symbols(void *h, const char *lib, kr_error *err)
{
    const nvml_sym syms[] = {
        {{"nvmlInit_v2", "nvmlInit", NULL}, &g_nvml.f.Init, 1},
        {{"nvmlShutdown", NULL, NULL}, &g_nvml.f.Shutdown, 1},
        {{"nvmlErrorString", NULL, NULL}, &g_nvml.f.ErrorString, 1},
        {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL}, &g_nvml.f.DeviceGetCount, 1},
        {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", NULL}, &g_nvml.f.DeviceGetHandleByIndex, 1},
        {{"nvmlDeviceGetName", NULL, NULL}, &g_nvml.f.DeviceGetName, 1},
        {{"nvmlDeviceGetSupportedGraphicsClocks", NULL, NULL}, &g_nvml.f.DeviceGetSupportedGraphicsClocks, 1},
        {{"nvmlDeviceGetClockInfo", NULL, NULL}, &g_nvml.f.DeviceGetClockInfo, 1},
        {{"nvmlDeviceGetUUID", NULL, NULL}, &g_nvml.f.DeviceGetUUID, 0},
        {{"nvmlDeviceGetSupportedMemoryClocks", NULL, NULL}, &g_nvml.f.DeviceGetSupportedMemoryClocks, 0},
        {{"nvmlDeviceSetGpuLockedClocks", NULL, NULL}, &g_nvml.f.DeviceSetGpuLockedClocks, 0},
        {{"nvmlDeviceResetGpuLockedClocks", NULL, NULL}, &g_nvml.f.DeviceResetGpuLockedClocks, 0},
        {{"nvmlDeviceGetTotalEnergyConsumption", NULL, NULL}, &g_nvml.f.DeviceGetTotalEnergyConsumption, 0},
        {{"nvmlDeviceGetPowerUsage", NULL, NULL}, &g_nvml.f.DeviceGetPowerUsage, 0},
    };
    for (size_t i = 0; i < KR_ARRAY_LEN(syms); i++) {
        void *p = NULL;
        for (int k = 0; k < 3 && syms[i].names[k] && p == NULL; k++)
            p = dlsym(h, syms[i].names[k]);
        /* dlsym returns an object pointer; copying its bytes into the function pointer is the
         * POSIX-sanctioned way to convert without an ISO C diagnostic. */
        memcpy(syms[i].slot, &p, sizeof p);
        if (p == NULL && syms[i].required)
            return kr_error_set(err, KR_ENOLIB, "NVML: %s has no symbol %s: not an NVML library, or one too old",
                                lib, syms[i].names[0]);
    }
    return KR_OK;
}

int kr_gpuctl_nvml_status(int r)
{
    switch (r) {
    case NVML_SUCCESS: return KR_OK;
    case NVML_ERROR_NO_PERMISSION: return KR_EPERM;
    case NVML_ERROR_NOT_SUPPORTED: return KR_EUNSUPPORTED;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_GPU_NOT_FOUND:
    case NVML_ERROR_LIBRARY_NOT_FOUND: return KR_ENODEV;
    case NVML_ERROR_TIMEOUT: return KR_ETIMEDOUT;
    case NVML_ERROR_IN_USE: return KR_EBUSY;
    case NVML_ERROR_INVALID_ARGUMENT:
    case NVML_ERROR_NOT_FOUND: return KR_EINVAL;
    default: return KR_EBACKEND;
    }
}

static const char *nvml_errstr(nvmlReturn_t r)
{
    const char *s = g_nvml.f.ErrorString ? g_nvml.f.ErrorString(r) : NULL;
    return s ? s : "unknown NVML error";
}

/* What to do about a failure, appended to the message. */
static const char *nvml_hint(nvmlReturn_t r)
{
    switch (r) {
    case NVML_ERROR_NO_PERMISSION:
        return ": changing clocks needs root or CAP_SYS_ADMIN (run as root, start the container with "
               "--cap-add SYS_ADMIN, or open the runtime read-only to measure without changing clocks)";
    case NVML_ERROR_NOT_SUPPORTED: return ": this GPU or driver does not support it (locked clocks need Volta or newer)";
    case NVML_ERROR_DRIVER_NOT_LOADED: return ": the NVIDIA kernel driver is not loaded";
    case NVML_ERROR_GPU_IS_LOST: return ": the GPU fell off the bus or is inaccessible";
    default: return "";
    }
}

/* Formats an NVML failure: "NVML CALL(ARGS): STRING (code N)HINT". */
static int nvml_fail(kr_error *err, nvmlReturn_t r, const char *call)
{
    return kr_error_set(err, kr_gpuctl_nvml_status(r), "NVML %s: %s (NVML code %d)%s", call, nvml_errstr(r), r, nvml_hint(r));
}

/* Takes a reference on the library, loading it (and calling nvmlInit) on the first one. */
static int lib_acquire(const char *want, kr_error *err)
{
    int rc = KR_OK;
    pthread_mutex_lock(&g_nvml.mu);
    if (g_nvml.refs > 0) {
        if (want && strcmp(want, g_nvml.path) != 0)
            rc = kr_error_set(err, KR_EBUSY, "NVML: already loaded from %s in this process; cannot also load %s",
                              g_nvml.path, want);
        else
            g_nvml.refs++;
        pthread_mutex_unlock(&g_nvml.mu);
        return rc;
    }
    const char *names[2] = {want ? want : "libnvidia-ml.so.1", want ? NULL : "libnvidia-ml.so"};
    char why[2][384] = {"", ""};
    void *h = NULL;
    const char *used = NULL;
    for (int i = 0; i < 2 && names[i] && h == NULL; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            used = names[i];
        else {
            const char *d = dlerror();
            kr__strlcpy(why[i], d ? d : "unknown dlopen error", sizeof why[i]);
        }
    }
    if (h == NULL) {
        rc = kr_error_set(err, KR_ENOLIB,
                          "NVML: cannot load the NVIDIA management library (%s%s%s): no NVIDIA driver on this "
                          "machine, or its libraries are not on the loader path",
                          why[0], why[1][0] ? "; " : "", why[1]);
        pthread_mutex_unlock(&g_nvml.mu);
        return rc;
    }
    if ((rc = resolve_symbols(h, used, err)) == KR_OK) {
        nvmlReturn_t r = g_nvml.f.Init();
        if (r != NVML_SUCCESS)
            rc = nvml_fail(err, r, "nvmlInit");
    }
    if (rc != KR_OK) {
        dlclose(h);
        clear_symbols();
    } else {
        g_nvml.handle = h;
        kr__strlcpy(g_nvml.path, used, sizeof g_nvml.path);
        g_nvml.refs = 1;
    }
    pthread_mutex_unlock(&g_nvml.mu);
    return rc;
}

static void lib_release(void)
{
    pthread_mutex_lock(&g_nvml.mu);
    if (g_nvml.refs > 0 && --g_nvml.refs == 0) {
        g_nvml.f.Shutdown();
        dlclose(g_nvml.handle);
        clear_symbols();
    }
    pthread_mutex_unlock(&g_nvml.mu);
}

/* ---- the backend ------------------------------------------------------------------------- */

typedef struct nvml_dev {
    nvmlDevice_t h;
    int locked_min_mhz, locked_max_mhz; /* the lock this backend applied (0, 0: none) */
} nvml_dev;

typedef struct nvml_impl {
    pthread_mutex_t mu; /* guards the lock fields */
    int ndev;
    nvml_dev *dev;
} nvml_impl;

static const kr_backend_class nvml_class;

static nvml_impl *impl_of(const kr_backend *b)
{
    return kr_backend_state(b, &nvml_class);
}

static int check_dev(kr_backend *b, int dev)
{
    nvml_impl *m = impl_of(b);
    if (dev < 0 || dev >= m->ndev)
        return kr_error_set(kr_backend_error(b), KR_EINVAL, "NVML: device %d: expected an index in [0, %d) (%d GPU%s visible)", dev,
                            m->ndev, m->ndev, m->ndev == 1 ? "" : "s");
    return KR_OK;
}

static int nvml_device_count(kr_backend *b, int *count)
{
    *count = impl_of(b)->ndev;
    return KR_OK;
}

/* Highest supported memory clock of a device (0 if it cannot be listed). */
static unsigned max_mem_clock(nvmlDevice_t h)
{
    if (g_nvml.f.DeviceGetSupportedMemoryClocks == NULL)
        return 0;
    unsigned mem[64], n = 64, best = 0;
    if (g_nvml.f.DeviceGetSupportedMemoryClocks(h, &n, mem) != NVML_SUCCESS)
        return 0;
    for (unsigned i = 0; i < n && i < 64; i++)
        best = mem[i] > best ? mem[i] : best;
    return best;
}

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int nvml_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    nvmlDevice_t h = impl_of(b)->dev[dev].h;
    unsigned buf[KR_GPU_MAX_CLOCKS], cnt = KR_GPU_MAX_CLOCKS;
    unsigned mem = max_mem_clock(h);
    nvmlReturn_t r = g_nvml.f.DeviceGetSupportedGraphicsClocks(h, mem, &cnt, buf);
    if (r != NVML_SUCCESS)
        return nvml_fail(kr_backend_error(b), r, "nvmlDeviceGetSupportedGraphicsClocks");
    if ((int)cnt > cap)
        return kr_error_set(kr_backend_error(b), KR_ERANGE, "NVML: device %d lists %u SM clocks, room for %d", dev, cnt, cap);
    for (unsigned i = 0; i < cnt; i++)
        mhz[i] = (int)buf[i];
    qsort(mhz, cnt, sizeof *mhz, cmp_desc);
    *n = (int)cnt;
    return KR_OK;
}

static int nvml_get_clock(kr_backend *b, int dev, int *cur, int *lmin, int *lmax)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    nvml_impl *m = impl_of(b);
    unsigned c = 0;
    nvmlReturn_t r = g_nvml.f.DeviceGetClockInfo(m->dev[dev].h, NVML_CLOCK_SM, &c);
    if (r != NVML_SUCCESS)
        return nvml_fail(kr_backend_error(b), r, "nvmlDeviceGetClockInfo(SM)");
    *cur = (int)c;
    pthread_mutex_lock(&m->mu);
    *lmin = m->dev[dev].locked_min_mhz;
    *lmax = m->dev[dev].locked_max_mhz;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int nvml_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    if (min_mhz <= 0 || max_mhz < min_mhz)
        return kr_error_set(kr_backend_error(b), KR_EINVAL, "NVML: clock lock: expected 0 < min <= max, found [%d, %d] MHz", min_mhz,
                            max_mhz);
    if (g_nvml.f.DeviceSetGpuLockedClocks == NULL)
        return kr_error_set(kr_backend_error(b), KR_EUNSUPPORTED, "NVML: %s has no nvmlDeviceSetGpuLockedClocks (driver too old)",
                            g_nvml.path);
    nvml_impl *m = impl_of(b);
    nvmlReturn_t r = g_nvml.f.DeviceSetGpuLockedClocks(m->dev[dev].h, (unsigned)min_mhz, (unsigned)max_mhz);
    if (r != NVML_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "nvmlDeviceSetGpuLockedClocks(device %d, %d, %d)", dev, min_mhz, max_mhz);
        return nvml_fail(kr_backend_error(b), r, call);
    }
    pthread_mutex_lock(&m->mu);
    m->dev[dev].locked_min_mhz = min_mhz;
    m->dev[dev].locked_max_mhz = max_mhz;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int nvml_reset_clock(kr_backend *b, int dev)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    if (g_nvml.f.DeviceResetGpuLockedClocks == NULL)
        return kr_error_set(kr_backend_error(b), KR_EUNSUPPORTED, "NVML: %s has no nvmlDeviceResetGpuLockedClocks (driver too old)",
                            g_nvml.path);
    nvml_impl *m = impl_of(b);
    nvmlReturn_t r = g_nvml.f.DeviceResetGpuLockedClocks(m->dev[dev].h);
    if (r != NVML_SUCCESS) {
        char call[80];
        snprintf(call, sizeof call, "nvmlDeviceResetGpuLockedClocks(device %d)", dev);
        return nvml_fail(kr_backend_error(b), r, call);
    }
    pthread_mutex_lock(&m->mu);
    m->dev[dev].locked_min_mhz = m->dev[dev].locked_max_mhz = 0;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int nvml_read_energy(kr_backend *b, int dev, double *energy_j)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    if (g_nvml.f.DeviceGetTotalEnergyConsumption == NULL)
        return kr_error_set(kr_backend_error(b), KR_EUNSUPPORTED, "NVML: %s has no nvmlDeviceGetTotalEnergyConsumption", g_nvml.path);
    unsigned long long mj = 0;
    nvmlReturn_t r = g_nvml.f.DeviceGetTotalEnergyConsumption(impl_of(b)->dev[dev].h, &mj);
    if (r != NVML_SUCCESS)
        return nvml_fail(kr_backend_error(b), r, "nvmlDeviceGetTotalEnergyConsumption");
    *energy_j = (double)mj * 1e-3;
    return KR_OK;
}

static int nvml_read_power(kr_backend *b, int dev, double *power_w)
{
    int rc = check_dev(b, dev);
    if (rc)
        return rc;
    if (g_nvml.f.DeviceGetPowerUsage == NULL)
        return kr_error_set(kr_backend_error(b), KR_EUNSUPPORTED, "NVML: %s has no nvmlDeviceGetPowerUsage", g_nvml.path);
    unsigned mw = 0;
    nvmlReturn_t r = g_nvml.f.DeviceGetPowerUsage(impl_of(b)->dev[dev].h, &mw);
    if (r != NVML_SUCCESS)
        return nvml_fail(kr_backend_error(b), r, "nvmlDeviceGetPowerUsage");
    *power_w = (double)mw * 1e-3;
    return KR_OK;
}

static void nvml_destroy(void *state)
{
    nvml_impl *m = state;
    pthread_mutex_destroy(&m->mu);
    free(m->dev);
    free(m);
    lib_release();
}

static int nvml_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);

/* Control only: partitions are measured by the CUDA profiler, which uses this backend. */
static const kr_control_ops nvml_control_ops = {
    .device_count = nvml_device_count,
    .supported_clocks = nvml_supported_clocks,
    .get_clock = nvml_get_clock,
    .set_clock = nvml_set_clock,
    .reset_clock = nvml_reset_clock,
    .read_energy = nvml_read_energy,
    .read_power = nvml_read_power,
    .device_info = nvml_device_info,
};
static const kr_backend_class nvml_class = {
    .name = "nvml",
    .caps = KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER | KR_BACKEND_DEVICE_INFO,
    .control = &nvml_control_ops,
    .destroy = nvml_destroy,
};


static int nvml_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err)
{
    int rc = check_dev(b, dev);
    if (rc)
        return kr_error_set(err, rc, "%s", kr_backend_errmsg(b));
    nvmlDevice_t h = impl_of(b)->dev[dev].h;
    memset(out, 0, sizeof *out);
    nvmlReturn_t r = g_nvml.f.DeviceGetName(h, out->name, sizeof out->name);
    if (r != NVML_SUCCESS)
        return nvml_fail(err, r, "nvmlDeviceGetName");
    if (g_nvml.f.DeviceGetUUID && (r = g_nvml.f.DeviceGetUUID(h, out->uuid, sizeof out->uuid)) != NVML_SUCCESS)
        return nvml_fail(err, r, "nvmlDeviceGetUUID");
    out->mem_clock_mhz = (int)max_mem_clock(h);
    unsigned c = 0;
    if (g_nvml.f.DeviceGetClockInfo(h, NVML_CLOCK_MEM, &c) == NVML_SUCCESS)
        out->cur_mem_clock_mhz = (int)c;
    return KR_OK;
}

int kr_gpuctl_nvml_create(const kr_gpuctl_nvml_config *opt, kr_backend **out, kr_error *err)
{
    *out = NULL;
    int rc = lib_acquire(opt ? opt->library : NULL, err);
    if (rc)
        return rc;
    nvml_impl *m = calloc(1, sizeof *m);
    unsigned n = 0;
    if (m == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "NVML: out of memory");
        goto fail;
    }
    pthread_mutex_init(&m->mu, NULL);
    nvmlReturn_t r = g_nvml.f.DeviceGetCount(&n);
    if (r != NVML_SUCCESS) {
        rc = nvml_fail(err, r, "nvmlDeviceGetCount");
        goto fail;
    }
    if (n == 0) {
        rc = kr_error_set(err, KR_ENODEV, "NVML: the driver is loaded but no GPU is visible (check CUDA_VISIBLE_DEVICES "
                                          "and the container's device list)");
        goto fail;
    }
    m->dev = calloc(n, sizeof *m->dev);
    if (m->dev == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "NVML: out of memory");
        goto fail;
    }
    m->ndev = (int)n;
    for (unsigned i = 0; i < n; i++)
        if ((r = g_nvml.f.DeviceGetHandleByIndex(i, &m->dev[i].h)) != NVML_SUCCESS) {
            char call[64];
            snprintf(call, sizeof call, "nvmlDeviceGetHandleByIndex(%u)", i);
            rc = nvml_fail(err, r, call);
            goto fail;
        }
    if ((rc = kr_backend_create(&nvml_class, m, out)) != KR_OK) {
        kr_error_set(err, rc, "NVML: out of memory");
        goto fail;
    }
    return KR_OK;
fail:
    if (m) {
        pthread_mutex_destroy(&m->mu);
        free(m->dev);
        free(m);
    }
    lib_release();
    return rc;
}
