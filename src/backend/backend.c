/*
 * backend.c — the backend wrapper: dispatch through the vtable, uniform "unsupported" errors,
 * and config validation shared by every backend.
 */
#include "kareus/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

int kr_backend_create(const kr_backend_ops *ops, void *impl, kr_backend **out)
{
    kr_backend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return KR_ENOMEM;
    b->ops = ops;
    b->impl = impl;
    *out = b;
    return KR_OK;
}

void kr_backend_destroy(kr_backend *b)
{
    if (b == NULL)
        return;
    if (b->ops && b->ops->destroy)
        b->ops->destroy(b);
    free(b);
}

const char *kr_backend_name(const kr_backend *b)
{
    return b && b->ops && b->ops->name ? b->ops->name : "?";
}

const char *kr_backend_errmsg(const kr_backend *b)
{
    return b ? b->err.msg : "";
}

#define DISPATCH(fn, ...)                                                                            \
    do {                                                                                             \
        if (b == NULL || b->ops == NULL || b->ops->fn == NULL)                                       \
            return b ? kr_error_set(&b->err, KR_EUNSUPPORTED, "backend %s: " #fn " is not supported", \
                                    kr_backend_name(b))                                              \
                     : KR_EINVAL;                                                                    \
        kr_error_clear(&b->err);                                                                     \
        return b->ops->fn(b, __VA_ARGS__);                                                           \
    } while (0)

int kr_backend_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    DISPATCH(measure, p, c, out);
}

int kr_backend_device_count(kr_backend *b, int *count)
{
    DISPATCH(device_count, count);
}

int kr_backend_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    DISPATCH(supported_clocks, dev, mhz, cap, n);
}

int kr_backend_get_clock(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz)
{
    DISPATCH(get_clock, dev, cur_mhz, locked_min_mhz, locked_max_mhz);
}

int kr_backend_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    DISPATCH(set_clock, dev, min_mhz, max_mhz);
}

int kr_backend_reset_clock(kr_backend *b, int dev)
{
    DISPATCH(reset_clock, dev);
}

int kr_backend_read_energy(kr_backend *b, int dev, double *energy_j)
{
    DISPATCH(read_energy, dev, energy_j);
}

int kr_backend_read_power(kr_backend *b, int dev, double *power_w)
{
    DISPATCH(read_power, dev, power_w);
}

int kr_config_validate(const kr_job *job, const kr_partition *p, const kr_config *c, kr_error *err)
{
    const kr_gpu *g = &job->gpu;
    if (!kr_gpu_clock_supported(g, c->freq_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "partition %s: clock: expected a clock the %s supports (%d..%d MHz in steps of %d), found %d",
                            p->key, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            c->freq_mhz);
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
