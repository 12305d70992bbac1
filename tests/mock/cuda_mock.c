/*
 * cuda_mock.c — a stand-in for libkareus_cuda.so in tests: exports kr_cuda_profiler_api with the
 * real ABI (src/profiler/device.h), so the loader, the GPU backend and `kareus profile` run end
 * to end on a machine without a GPU. Its "GPU" runs a plan in real time: one execution takes
 * flops / 100 TFLOP/s + bytes / 2 TB/s + 5 µs per kernel (+ the collective's bytes / 200 GB/s
 * when it launches after the compute), and nothing is computed.
 *
 * Environment: KAREUS_MOCK_CUDA_DEVICES (default 1) devices named "Kareus mock GPU";
 * KAREUS_MOCK_CUDA_FAIL = nodriver | nodev | prepare makes the probe or prepare fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/device.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(kr_error *err, int code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}

static const char *fail_mode(void)
{
    const char *f = getenv("KAREUS_MOCK_CUDA_FAIL");
    return f ? f : "";
}

static int ndevices(void)
{
    const char *d = getenv("KAREUS_MOCK_CUDA_DEVICES");
    int n = d ? atoi(d) : 1;
    return n < 1 ? 1 : n > KR_PROFILER_MAX_RANKS ? KR_PROFILER_MAX_RANKS : n;
}

typedef struct mock {
    kr_profiler_program plan;
    int prepared, running;
    double iter_s, start, end;
    long long iters;
} mock;

static int m_prepare(void *impl, const kr_profiler_program *plan, kr_error *err)
{
    mock *m = impl;
    if (strcmp(fail_mode(), "prepare") == 0)
        return fail(err, KR_EBACKEND, "mock: cudaMalloc: out of memory");
    m->plan = *plan;
    m->iter_s = plan->flops / 100e12 + plan->bytes / 2e12 + 5e-6 * plan->nsteps;
    if (plan->comm != KR_PROFILER_COMM_NONE && plan->launch_step == plan->nsteps)
        m->iter_s += plan->coll_bytes / 200e9;
    m->prepared = 1;
    return KR_OK;
}

static int m_start(void *impl, long long iters, kr_error *err)
{
    mock *m = impl;
    if (!m->prepared || m->running)
        return fail(err, KR_ESTATE, "mock: start out of order");
    m->iters = iters;
    m->start = now_s();
    m->end = m->start + (double)iters * m->iter_s;
    m->running = 1;
    return KR_OK;
}

static int m_poll(void *impl, int *done, kr_error *err)
{
    mock *m = impl;
    (void)err;
    *done = now_s() >= m->end;
    return KR_OK;
}

static int m_finish(void *impl, kr_profiler_run *out, kr_error *err)
{
    mock *m = impl;
    if (!m->running)
        return fail(err, KR_ESTATE, "mock: finish without start");
    double left = m->end - now_s();
    if (left > 0) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    memset(out, 0, sizeof *out);
    out->nranks = m->plan.ranks;
    for (int i = 0; i < m->plan.ranks; i++)
        out->time_s[i] = (double)m->iters * m->iter_s;
    m->running = 0;
    return KR_OK;
}

static void m_destroy(void *impl)
{
    free(impl);
}

static int m_selftest(void *impl, char *report, size_t cap, kr_error *err)
{
    (void)impl;
    (void)err;
    snprintf(report, cap, "mock: no kernels to check\n");
    return KR_OK;
}

static const kr_profiler_runner_ops mock_ops = {"mock", m_prepare, m_start, m_poll, m_finish, m_destroy, m_selftest,
                                                NULL};

static int probe(kr_profiler_probe_info *info, kr_error *err)
{
    if (strcmp(fail_mode(), "nodriver") == 0)
        return fail(err, KR_ENOLIB, "no CUDA driver: mock");
    if (strcmp(fail_mode(), "nodev") == 0)
        return fail(err, KR_ENODEV, "no GPU: mock");
    info->driver_version = 13000;
    info->ndevices = ndevices();
    for (int i = 0; i < info->ndevices; i++) {
        snprintf(info->name[i], sizeof info->name[i], "Kareus mock GPU");
        info->sm_count[i] = 132;
        info->cc_major[i] = 9;
        info->mem_bytes[i] = 141e9;
    }
    return KR_OK;
}

static int open_runner(int first, int devices, kr_profiler_runner *r, kr_error *err)
{
    int n = ndevices();
    if (devices <= 0)
        devices = n - first;
    if (first < 0 || devices < 1 || first + devices > n)
        return fail(err, KR_ERANGE, "mock: devices out of range");
    mock *m = calloc(1, sizeof *m);
    if (m == NULL)
        return fail(err, KR_ENOMEM, "out of memory");
    r->ops = &mock_ops;
    r->impl = m;
    r->ndevices = devices;
    for (int i = 0; i < devices; i++)
        r->device[i] = first + i;
    snprintf(r->device_name, sizeof r->device_name, "Kareus mock GPU");
    r->sm_count = 132;
    return KR_OK;
}

static const kr__prof_device_api api = {
    KR__PROF_DEVICE_ABI, sizeof(kr_profiler_program), sizeof(kr_profiler_probe_info), sizeof(kr_profiler_runner),
    "mock (no CUDA)",    probe,                    open_runner,
};

const kr__prof_device_api *kr_cuda_profiler_api(void);

const kr__prof_device_api *kr_cuda_profiler_api(void)
{
    return &api;
}
