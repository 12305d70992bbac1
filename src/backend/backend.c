/*
 * backend.c — the backend handle: dispatch through the measuring and control interfaces by
 * capability, uniform "unsupported" errors, device identity whatever the backend, and config
 * validation shared by every backend.
 */
#include "kareus/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The handle: the implementation's class and state, and the detail of the last failure. */
struct kr_backend {
    const kr_backend_class *cls;
    void *state;
    kr_error err;
};

/* 1 when cls has every entry its capabilities name. */
static int class_complete(const kr_backend_class *cls)
{
    const kr_measure_ops *m = cls->measure;
    const kr_control_ops *c = cls->control;
    unsigned caps = cls->caps;
    if ((caps & KR_BACKEND_MEASURE) && (m == NULL || m->measure == NULL))
        return 0;
    if (c == NULL)
        return (caps & (KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER |
                        KR_BACKEND_DEVICE_INFO)) == 0;
    return c->device_count && (!(caps & KR_BACKEND_CLOCK_LIST) || c->supported_clocks) &&
           (!(caps & KR_BACKEND_CLOCK_LOCK) || (c->get_clock && c->set_clock && c->reset_clock)) &&
           (!(caps & KR_BACKEND_ENERGY) || c->read_energy) && (!(caps & KR_BACKEND_POWER) || c->read_power) &&
           (!(caps & KR_BACKEND_DEVICE_INFO) || c->device_info);
}

int kr_backend_create(const kr_backend_class *cls, void *state, kr_backend **out)
{
    *out = NULL;
    if (cls == NULL || !class_complete(cls))
        return KR_EINVAL;
    kr_backend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return KR_ENOMEM;
    b->cls = cls;
    b->state = state;
    *out = b;
    return KR_OK;
}

void kr_backend_destroy(kr_backend *b)
{
    if (b == NULL)
        return;
    if (b->cls->destroy && b->state)
        b->cls->destroy(b->state);
    free(b);
}

const char *kr_backend_name(const kr_backend *b)
{
    return b && b->cls->name ? b->cls->name : "?";
}

unsigned kr_backend_caps(const kr_backend *b)
{
    return b ? b->cls->caps : 0;
}

const char *kr_backend_errmsg(const kr_backend *b)
{
    return b ? b->err.msg : "";
}

kr_error *kr_backend_error(kr_backend *b)
{
    return &b->err;
}

void *kr_backend_state(const kr_backend *b, const kr_backend_class *cls)
{
    return b && b->cls == cls ? b->state : NULL;
}

int kr_backend_is(const kr_backend *b, const kr_backend_class *cls)
{
    return b != NULL && b->cls == cls;
}

/* Calls entry fn of interface iface when b has capability cap, else KR_EUNSUPPORTED naming it. */
#define DISPATCH(cap, iface, fn, ...)                                                                \
    do {                                                                                             \
        if (b == NULL)                                                                               \
            return KR_EINVAL;                                                                        \
        if (((cap) && !(b->cls->caps & (unsigned)(cap))) || b->cls->iface == NULL)                   \
            return kr_error_set(&b->err, KR_EUNSUPPORTED, "backend %s: " #fn " is not supported",    \
                                kr_backend_name(b));                                                 \
        kr_error_clear(&b->err);                                                                     \
        return b->cls->iface->fn(b, __VA_ARGS__);                                                    \
    } while (0)

int kr_backend_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    DISPATCH(KR_BACKEND_MEASURE, measure, measure, p, c, out);
}

int kr_backend_device_count(kr_backend *b, int *count)
{
    DISPATCH(0, control, device_count, count);
}

int kr_backend_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    DISPATCH(KR_BACKEND_CLOCK_LIST, control, supported_clocks, dev, mhz, cap, n);
}

int kr_backend_get_clock(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz)
{
    DISPATCH(KR_BACKEND_CLOCK_LOCK, control, get_clock, dev, cur_mhz, locked_min_mhz, locked_max_mhz);
}

int kr_backend_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    DISPATCH(KR_BACKEND_CLOCK_LOCK, control, set_clock, dev, min_mhz, max_mhz);
}

int kr_backend_reset_clock(kr_backend *b, int dev)
{
    DISPATCH(KR_BACKEND_CLOCK_LOCK, control, reset_clock, dev);
}

int kr_backend_read_energy(kr_backend *b, int dev, double *energy_j)
{
    DISPATCH(KR_BACKEND_ENERGY, control, read_energy, dev, energy_j);
}

int kr_backend_read_power(kr_backend *b, int dev, double *power_w)
{
    DISPATCH(KR_BACKEND_POWER, control, read_power, dev, power_w);
}

int kr_backend_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err)
{
    if (b == NULL || out == NULL)
        return kr_error_set(err, KR_EINVAL, "gpuctl: device info: NULL argument");
    if (b->cls->caps & KR_BACKEND_DEVICE_INFO)
        return b->cls->control->device_info(b, dev, out, err);
    int n = 0;
    int rc = kr_backend_device_count(b, &n);
    if (rc == KR_OK && (dev < 0 || dev >= n))
        return kr_error_set(err, KR_EINVAL, "%s backend: device %d: expected an index in [0, %d)", kr_backend_name(b), dev,
                            n);
    memset(out, 0, sizeof *out);
    kr__strlcpy(out->name, kr_backend_name(b), sizeof out->name);
    return KR_OK;
}

/* The comm kernels' names, X(value, name). */
#define COMM_KERNEL_NAMES(X)   \
    X(KR_KERNEL_TUNED, "tuned") \
    X(KR_KERNEL_NCCL, "nccl")
static const kr__ename comm_kernel_names[] = {COMM_KERNEL_NAMES(KR__ENAME_ROW)};

const char *kr_comm_kernel_name(int kernel)
{
    return kr__ename_of(comm_kernel_names, KR_ARRAY_LEN(comm_kernel_names), kernel);
}

int kr_comm_kernel_parse(const char *name, int *out)
{
    return kr__ename_parse(comm_kernel_names, KR_ARRAY_LEN(comm_kernel_names), name, out);
}

int kr_config_validate(const kr_job *job, const kr_partition *p, const kr_config *c, kr_error *err)
{
    const kr_gpu *g = &job->gpu;
    if (!kr_gpu_clock_supported(g, c->freq_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "partition %s: clock: expected a clock the %s supports (%d..%d MHz in steps of %d), found %d",
                            p->key, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            c->freq_mhz);
    if (c->kernel != KR_KERNEL_TUNED && c->kernel != KR_KERNEL_NCCL)
        return kr_error_set(err, KR_EINVAL, "partition %s: kernel: expected 0 (tuned) or 1 (nccl), found %d", p->key,
                            c->kernel);
    if (p->coll.kind == KR_COLL_NONE)
        return KR_OK;
    if (c->sms < 1 || c->sms >= (int)g->sm_count)
        return kr_error_set(err, KR_ERANGE,
                            "partition %s: comm SMs: expected 1..%d (the %s has %d SMs and compute needs at least one), found %d",
                            p->key, (int)g->sm_count - 1, g->name, (int)g->sm_count, c->sms);
    if (c->slot == KR_SLOT_NONE)
        return KR_OK;
    if (c->slot < 0 || c->slot >= p->nslots)
        return kr_error_set(err, KR_ENOTFOUND, "partition %s: slot: expected an index in [0, %d) or none, found %d",
                            p->key, p->nslots, c->slot);
    return KR_OK;
}
