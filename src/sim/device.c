/*
 * device.c — the simulator as a backend (backend.h), with both interfaces: measuring simulates
 * partitions (kr_sim_measure), and a set of simulated devices answers the control calls the runtime makes
 * on real GPUs — supported clocks, get/set/reset of the locked SM clock, a cumulative energy
 * counter and the present power — and logs every clock change so tests can read back what a
 * plan applied.
 *
 * Device model: a device whose clock is locked at f draws the floor P_floor(f) (a kernel resident,
 * clocks up, waiting) plus `activity` × the power a large GEMM adds at f (throttled at TDP,
 * like every mix of the simulator); an unlocked device is idle at its idle clock and draws
 * idle_w. The energy counter integrates that piecewise-constant power over the time source
 * (CLOCK_MONOTONIC, or the injected now_s for deterministic tests). A clock change takes effect
 * at once (the settle time clock_switch_s is the pipeline simulator's business).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "util/util.h"

typedef struct sim_dev {
    int locked_min, locked_max; /* 0, 0 when unlocked */
    double activity;            /* 0..1 */
    double power_w;             /* present power */
    double energy_j;            /* counter */
    double last_s;              /* time of the last integration */
} sim_dev;

typedef struct sim_backend {
    kr_job job;
    kr__sim_gpu sg;
    double (*now_s)(void *ud);
    void *now_ud;
    pthread_mutex_t mu;
    int ndev;
    sim_dev *dev;
    kr_sim_clock_event *log;
    size_t nlog, caplog;
} sim_backend;

static const kr_backend_class sim_class;
#define STATE(b) ((sim_backend *)kr_backend_state((b), &sim_class))

static double monotonic_now(void *ud)
{
    (void)ud;
    return kr__now_s();
}

/* Board power of device d in its present state. */
static double device_power(const sim_backend *s, const sim_dev *d)
{
    const kr_gpu *g = &s->job.gpu;
    if (d->locked_max == 0)
        return g->idle_w;
    double floor_w = kr__sim_floor(&s->sg, d->locked_max / 1000.0);
    if (d->activity <= 0)
        return floor_w;
    /* A large square GEMM at the locked clock: the reference "fully busy" mix. */
    kr_op op;
    kr__sim_gemm_op(&op, 8192, 8192, 8192);
    kr__sim_mix mix = {&op, (int)g->sm_count, NULL, 0, 0};
    kr__sim_rates r;
    kr__sim_throttle(&s->sg, &mix, d->locked_max / 1000.0, &r);
    return floor_w + d->activity * (r.power_w - floor_w);
}

/* Integrates device d's power up to now. A time source that steps back adds nothing (the
 * counter never decreases and no interval is counted twice). */
static void advance(sim_backend *s, sim_dev *d, double now)
{
    (void)s;
    if (now > d->last_s) {
        d->energy_j += d->power_w * (now - d->last_s);
        d->last_s = now;
    }
}

static int check_dev(kr_backend *b, const sim_backend *s, int dev)
{
    if (dev < 0 || dev >= s->ndev)
        return kr_error_set(kr_backend_error(b), KR_ERANGE, "sim backend: device: expected 0..%d, found %d", s->ndev - 1, dev);
    return KR_OK;
}

static int sim_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    sim_backend *s = STATE(b);
    return kr_sim_measure(&s->job, p, c, out, kr_backend_error(b));
}

static int sim_device_count(kr_backend *b, int *count)
{
    *count = (STATE(b))->ndev;
    return KR_OK;
}

static int sim_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    int needed = 0;
    int got = kr_gpu_supported_clocks(&s->job.gpu, mhz, cap, &needed);
    if (got < 0) {
        *n = 0;
        return kr_error_set(kr_backend_error(b), got, "sim backend: supported clocks: %d entries needed, buffer holds %d",
                            needed, cap);
    }
    *n = got;
    return KR_OK;
}

static int sim_get_clock(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    const sim_dev *d = &s->dev[dev];
    *locked_min_mhz = d->locked_min;
    *locked_max_mhz = d->locked_max;
    /* Locked: the GPU runs at the top of its range. Unlocked: idle at the idle clock. */
    *cur_mhz = d->locked_max ? d->locked_max : (int)s->job.gpu.clock_min_mhz;
    pthread_mutex_unlock(&s->mu);
    return KR_OK;
}

static int log_change(sim_backend *s, double now, int dev, int lo, int hi)
{
    if (kr__grow((void **)&s->log, &s->caplog, s->nlog + 1, sizeof *s->log))
        return KR_ENOMEM;
    kr_sim_clock_event *e = &s->log[s->nlog++];
    e->time_s = now;
    e->dev = dev;
    e->min_mhz = lo;
    e->max_mhz = hi;
    return KR_OK;
}

static int apply(kr_backend *b, int dev, int lo, int hi)
{
    sim_backend *s = STATE(b);
    pthread_mutex_lock(&s->mu);
    double now = s->now_s(s->now_ud);
    sim_dev *d = &s->dev[dev];
    advance(s, d, now);
    int rc = log_change(s, now, dev, lo, hi);
    if (rc == KR_OK) {
        d->locked_min = lo;
        d->locked_max = hi;
        d->power_w = device_power(s, d);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return kr_error_set(kr_backend_error(b), rc, "sim backend: out of memory logging a clock change");
    return KR_OK;
}

static int sim_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    const kr_gpu *g = &s->job.gpu;
    if (!kr_gpu_clock_supported(g, min_mhz) || !kr_gpu_clock_supported(g, max_mhz) || min_mhz > max_mhz)
        return kr_error_set(kr_backend_error(b), KR_ERANGE,
                            "sim backend: device %d: clock range: expected min <= max, both clocks the %s supports "
                            "(%d..%d MHz in steps of %d), found [%d, %d]",
                            dev, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            min_mhz, max_mhz);
    return apply(b, dev, min_mhz, max_mhz);
}

static int sim_reset_clock(kr_backend *b, int dev)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    return apply(b, dev, 0, 0);
}

static int sim_read_energy(kr_backend *b, int dev, double *energy_j)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    sim_dev *d = &s->dev[dev];
    advance(s, d, s->now_s(s->now_ud));
    *energy_j = d->energy_j;
    pthread_mutex_unlock(&s->mu);
    return KR_OK;
}

static int sim_read_power(kr_backend *b, int dev, double *power_w)
{
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->mu);
    *power_w = s->dev[dev].power_w;
    pthread_mutex_unlock(&s->mu);
    return KR_OK;
}

static void sim_destroy(void *state)
{
    sim_backend *s = state;
    pthread_mutex_destroy(&s->mu);
    free(s->dev);
    free(s->log);
    free(s);
}

static const kr_measure_ops sim_measure_ops = {sim_measure};
static const kr_control_ops sim_control_ops = {
    .device_count = sim_device_count,
    .supported_clocks = sim_supported_clocks,
    .get_clock = sim_get_clock,
    .set_clock = sim_set_clock,
    .reset_clock = sim_reset_clock,
    .read_energy = sim_read_energy,
    .read_power = sim_read_power,
};
static const kr_backend_class sim_class = {
    .name = "sim",
    .caps = KR_BACKEND_MEASURE | KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER |
            KR_BACKEND_SIMULATED,
    .measure = &sim_measure_ops,
    .control = &sim_control_ops,
    .destroy = sim_destroy,
};

int kr_sim_backend_create(const kr_job *job, const kr_sim_config *opts, kr_backend **out, kr_error *err)
{
    *out = NULL;
    kr_sim_config o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    if (o.device_count < 0 || o.device_count > 4096)
        return kr_error_set(err, KR_EINVAL, "sim backend: device_count: expected 0 (one device) to 4096, found %d",
                            o.device_count);
    if (!(o.activity >= 0 && o.activity <= 1))
        return kr_error_set(err, KR_EINVAL, "sim backend: activity: expected 0..1, found %g", o.activity);
    int rc = kr_job_validate(job, err);
    if (rc)
        return rc;
    sim_backend *s = calloc(1, sizeof *s);
    if (s == NULL)
        return kr_error_set(err, KR_ENOMEM, "sim backend: out of memory");
    s->job = *job;
    kr__sim_gpu_init(&s->sg, &s->job.gpu);
    s->now_s = o.now_s ? o.now_s : monotonic_now;
    s->now_ud = o.now_ud;
    s->ndev = o.device_count ? o.device_count : 1;
    s->dev = calloc((size_t)s->ndev, sizeof *s->dev);
    if (s->dev == NULL || pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->dev);
        free(s);
        return kr_error_set(err, KR_ENOMEM, "sim backend: out of memory");
    }
    double now = s->now_s(s->now_ud);
    for (int i = 0; i < s->ndev; i++) {
        s->dev[i].activity = o.activity;
        s->dev[i].last_s = now;
        s->dev[i].power_w = device_power(s, &s->dev[i]);
    }
    rc = kr_backend_create(&sim_class, s, out);
    if (rc) {
        pthread_mutex_destroy(&s->mu);
        free(s->dev);
        free(s);
        return kr_error_set(err, rc, "sim backend: out of memory");
    }
    return KR_OK;
}

int kr_sim_backend_is(const kr_backend *b)
{
    return kr_backend_is(b, &sim_class);
}

int kr_sim_backend_clock_log(kr_backend *b, kr_sim_clock_event *out, int cap, int *n)
{
    if (!kr_sim_backend_is(b))
        return KR_EINVAL;
    sim_backend *s = STATE(b);
    pthread_mutex_lock(&s->mu);
    *n = (int)s->nlog;
    for (int i = 0; i < cap && (size_t)i < s->nlog; i++)
        out[i] = s->log[i];
    pthread_mutex_unlock(&s->mu);
    return KR_OK;
}

int kr_sim_backend_set_activity(kr_backend *b, int dev, double activity)
{
    if (!kr_sim_backend_is(b))
        return KR_EINVAL;
    sim_backend *s = STATE(b);
    int rc = check_dev(b, s, dev);
    if (rc)
        return rc;
    if (!(activity >= 0 && activity <= 1))
        return kr_error_set(kr_backend_error(b), KR_ERANGE, "sim backend: activity: expected 0..1, found %g", activity);
    pthread_mutex_lock(&s->mu);
    sim_dev *d = &s->dev[dev];
    advance(s, d, s->now_s(s->now_ud));
    d->activity = activity;
    d->power_w = device_power(s, d);
    pthread_mutex_unlock(&s->mu);
    return KR_OK;
}
