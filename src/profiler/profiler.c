/*
 * profiler.c — the measurement protocol and the GPU backend (profiler.h).
 *
 * Design. The published artifact measures a configuration as: lock the clock, sleep 2 s,
 * 10 warm-up iterations, 100 calibration iterations, 5 s cooldown, 10 more warm-up
 * iterations, then N = 5 s / t iterations inside one window of the NVML energy counter
 * (kareus-method.md §3.1). We keep its structure and cut its cost and its error:
 *   - settle: after a clock change, poll the clock until it reads back the target (at least
 *     settle_min_s, at most settle_s) instead of a fixed 2 s; no wait when the clock is
 *     unchanged since the previous measurement;
 *   - warm-up by time (warmup_s) and count; calibration doubles a run until it lasts
 *     calib_min_s, so short and long partitions are both timed well;
 *   - energy: the counter (mJ since driver load) advances in steps every ~100 ms
 *     (gpu-model-data.md §4), so a window read at arbitrary instants is off by up to one step
 *     at each end (±20 % for 1 s at worst). We instead time the window between two update
 *     edges of the counter while the GPU is kept busy: the mean power between edges is exact
 *     up to the polling interval (2 ms), and the energy of one execution is that power times
 *     the CUDA-event time of one execution. This makes a 1 s window as good as a long one and
 *     lets us spend the time on repeats (>= 3) that give a spread;
 *   - cooldown proportional to the busy time (default half, 0.5–5 s) instead of a fixed 5 s;
 *     the ml.energy note (thermally-stable-profiling) shows the energy of a trial follows the
 *     GPU temperature at its start, so the idle time must scale with the heat put in.
 * Energy is per GPU (mean over ranks) and time is the slowest rank, as in the artifact.
 */
#include "kareus/profiler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler_internal.h"
#include "util/util.h"

void kr_profiler_config_default(kr_profiler_config *o)
{
    memset(o, 0, sizeof *o);
    o->window_s = 1.0;
    o->repeats = 3;
    o->warmup_s = 0.3;
    o->warmup_iters = 10;
    o->calib_min_s = 0.1;
    o->min_iters = 10;
    o->max_iters = 100000000;
    o->settle_s = 1.0;
    o->settle_min_s = 0.1;
    o->cooldown_ratio = 0.5;
    o->cooldown_min_s = 0.5;
    o->cooldown_max_s = 5.0;
    o->energy_period_s = 0.1;
    o->poll_s = 0.002;
    o->edge_timeout_s = 2.0;
    o->lock_clock = 1;
}

#define CHECK_RANGE(field, lo, hi)                                                                          \
    do {                                                                                                    \
        double v_ = (double)o->field;                                                                       \
        if (!(v_ >= (lo) && v_ <= (hi)))                                                                    \
            return kr_error_set(err, KR_EINVAL, "profiler option %s: expected a value in [%g, %g], found %g", \
                                #field, (double)(lo), (double)(hi), v_);                                    \
    } while (0)

int kr_profiler_options_validate(const kr_profiler_config *o, kr_error *err)
{
    CHECK_RANGE(window_s, 1.0, 600.0); /* the counter's ~100 ms update needs windows of seconds */
    CHECK_RANGE(repeats, 3, KR_PROFILER_MAX_REPEATS);
    CHECK_RANGE(warmup_s, 0.0, 600.0);
    CHECK_RANGE(warmup_iters, 0, 1000000);
    CHECK_RANGE(calib_min_s, 0.001, 60.0);
    CHECK_RANGE(min_iters, 1, 1e12);
    CHECK_RANGE(max_iters, (double)o->min_iters, 1e12);
    CHECK_RANGE(settle_s, 0.0, 60.0);
    CHECK_RANGE(settle_min_s, 0.0, o->settle_s);
    CHECK_RANGE(cooldown_ratio, 0.0, 100.0);
    CHECK_RANGE(cooldown_min_s, 0.0, 600.0);
    CHECK_RANGE(cooldown_max_s, o->cooldown_min_s, 600.0);
    CHECK_RANGE(energy_period_s, 0.001, 10.0);
    CHECK_RANGE(poll_s, 1e-5, o->energy_period_s);
    CHECK_RANGE(edge_timeout_s, o->energy_period_s, 600.0);
    CHECK_RANGE(lock_clock, 0, 1);
    return KR_OK;
}

int kr_profiler_iters_for_window(double iter_time_s, double window_s, long long min_iters, long long max_iters,
                                 long long *iters, kr_error *err)
{
    if (!(iter_time_s > 0) || !isfinite(iter_time_s) || !(window_s > 0) || !isfinite(window_s))
        return kr_error_set(err, KR_EINVAL,
                            "window sizing: expected positive finite iteration time and window, found %g s and %g s",
                            iter_time_s, window_s);
    if (min_iters < 1 || max_iters < min_iters)
        return kr_error_set(err, KR_EINVAL, "window sizing: expected 1 <= min_iters <= max_iters, found %lld, %lld",
                            min_iters, max_iters);
    double n = ceil(window_s / iter_time_s);
    *iters = n < (double)min_iters ? min_iters : n > (double)max_iters ? max_iters : (long long)n;
    return KR_OK;
}

int kr_profiler_stats(const double *x, int n, double *mean, double *sd)
{
    if (n < 1)
        return KR_EINVAL;
    double m = 0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m /= n;
    double ss = 0; /* two-pass: exact for the small n used here */
    for (int i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    return KR_OK;
}

double kr_profiler_cooldown_s(const kr_profiler_config *o, double busy_s)
{
    double c = o->cooldown_ratio * (busy_s > 0 ? busy_s : 0);
    return c < o->cooldown_min_s ? o->cooldown_min_s : c > o->cooldown_max_s ? o->cooldown_max_s : c;
}

/* ---- time ------------------------------------------------------------------------------------ */

static double clk_now(const kr_profiler_clock *c)
{
    return c && c->now_s ? c->now_s(c->ud) : kr__now_s();
}

static void clk_sleep(const kr_profiler_clock *c, double s)
{
    if (s <= 0)
        return;
    if (c && c->sleep_s) {
        c->sleep_s(c->ud, s);
        return;
    }
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- the protocol ---------------------------------------------------------------------------- */

typedef struct proto {
    kr_profiler_runner *r;
    kr_backend *ctl;
    const kr_profiler_config *o;
    const kr_profiler_clock *clk;
    const kr_profiler_program *plan;
    kr_error *err;
    int nr;
} proto;

/* Copies the control backend's message into err, prefixed with what we were doing. */
static int ctl_fail(proto *P, int rc, const char *what, int dev)
{
    const char *m = kr_backend_errmsg(P->ctl);
    if (rc == KR_EPERM)
        return kr_error_set(P->err, rc,
                            "no permission to %s on GPU %d (locking clocks needs root or an administrator's "
                            "grant): %s",
                            what, dev, m[0] ? m : kr_strerror(rc));
    if (rc == KR_EUNSUPPORTED)
        return kr_error_set(P->err, rc, "the control backend '%s' cannot %s: %s", kr_backend_name(P->ctl), what,
                            m[0] ? m : kr_strerror(rc));
    return kr_error_set(P->err, rc, "%s on GPU %d failed: %s", what, dev, m[0] ? m : kr_strerror(rc));
}

static double max_rank_time(const kr_profiler_run *run)
{
    double t = 0;
    for (int i = 0; i < run->nranks; i++)
        t = run->time_s[i] > t ? run->time_s[i] : t;
    return t;
}

static int run_sync(proto *P, long long iters, double *time_s)
{
    kr_profiler_run run;
    memset(&run, 0, sizeof run);
    int rc = P->r->ops->start(P->r->impl, iters, P->err);
    if (rc == KR_OK)
        rc = P->r->ops->finish(P->r->impl, &run, P->err);
    if (rc)
        return rc;
    *time_s = max_rank_time(&run);
    if (!(*time_s > 0))
        return kr_error_set(P->err, KR_EBACKEND, "runner %s: a run of %lld iterations took %g s", P->r->ops->name,
                            iters, *time_s);
    return KR_OK;
}

static int lock_and_settle(proto *P, int *locked_mhz, kr_profiler_result *out)
{
    int f = P->plan->freq_mhz;
    if (!P->o->lock_clock || f <= 0 || *locked_mhz == f)
        return KR_OK;
    *locked_mhz = 0; /* unknown until every device is locked */
    for (int i = 0; i < P->nr; i++) {
        int rc = kr_backend_set_clock(P->ctl, P->r->device[i], f, f);
        if (rc)
            return ctl_fail(P, rc, "lock the SM clock", P->r->device[i]);
    }
    *locked_mhz = f;
    double t0 = clk_now(P->clk);
    clk_sleep(P->clk, P->o->settle_min_s);
    for (;;) {
        int cur = 0, lo = 0, hi = 0;
        if (kr_backend_get_clock(P->ctl, P->r->device[0], &cur, &lo, &hi) != KR_OK || cur == f)
            break;
        if (clk_now(P->clk) - t0 >= P->o->settle_s)
            break;
        clk_sleep(P->clk, 0.01);
    }
    out->settle_s = clk_now(P->clk) - t0;
    return KR_OK;
}

/*
 * Edge tracking of one energy counter: feed every reading; the first change is the opening
 * edge, the first change at least window_s later the closing one. An edge is placed halfway
 * between the reading before it and the reading that shows it (error <= half the polling
 * interval). Returns 1 when the closing edge was just found.
 */
int kr__profiler_edge_feed(kr__profiler_edges *E, double e, double now, double window_s)
{
    int closed = 0;
    if (e != E->last_e) {
        double edge_t = 0.5 * (E->last_t + now);
        E->changed_t = now;
        if (E->a_t < 0) {
            E->a_e = e, E->a_t = edge_t;
        } else if (E->b_t < 0 && edge_t - E->a_t >= window_s) {
            E->b_e = e, E->b_t = edge_t;
            closed = 1;
        }
    }
    E->last_e = e, E->last_t = now;
    return closed;
}

void kr__profiler_edge_init(kr__profiler_edges *E, double e, double now)
{
    *E = (kr__profiler_edges){e, now, 0, -1, 0, -1, now};
}

/* One window: start a run, find the edges on every device, finish. *short_run = 1 when the run
 * ended before every closing edge (the caller retries with more iterations). */
static int window(proto *P, long long iters, double *power_w, double *iter_s, double *win_s, int *short_run,
                  int *clock_read)
{
    kr__profiler_edges ed[KR_PROFILER_MAX_RANKS];
    int rc = P->r->ops->start(P->r->impl, iters, P->err);
    if (rc)
        return rc;
    *short_run = 0;
    double t = clk_now(P->clk);
    for (int i = 0; i < P->nr; i++) {
        double e;
        if ((rc = kr_backend_read_energy(P->ctl, P->r->device[i], &e))) {
            kr_profiler_run dummy;
            P->r->ops->finish(P->r->impl, &dummy, NULL);
            return ctl_fail(P, rc, "read the energy counter", P->r->device[i]);
        }
        kr__profiler_edge_init(&ed[i], e, t);
    }
    int pending = P->nr;
    while (pending > 0) {
        clk_sleep(P->clk, P->o->poll_s);
        int done = 0;
        if ((rc = P->r->ops->poll(P->r->impl, &done, P->err)))
            break;
        for (int i = 0; i < P->nr; i++) {
            kr__profiler_edges *E = &ed[i];
            if (E->b_t >= 0)
                continue;
            double e;
            if ((rc = kr_backend_read_energy(P->ctl, P->r->device[i], &e))) {
                rc = ctl_fail(P, rc, "read the energy counter", P->r->device[i]);
                break;
            }
            double now = clk_now(P->clk);
            if (kr__profiler_edge_feed(E, e, now, P->o->window_s)) {
                pending--;
                if (i == 0 && *clock_read == 0) {
                    int cur = 0, lo, hi;
                    if (kr_backend_get_clock(P->ctl, P->r->device[0], &cur, &lo, &hi) == KR_OK)
                        *clock_read = cur;
                }
            } else if (now - E->changed_t > P->o->edge_timeout_s) {
                rc = kr_error_set(P->err, KR_ETIMEDOUT,
                                  "the energy counter of GPU %d did not change for %.1f s (is the NVML energy counter "
                                  "supported on this GPU?)",
                                  P->r->device[i], now - E->changed_t);
                break;
            }
        }
        if (rc)
            break;
        if (done && pending > 0) {
            *short_run = 1;
            break;
        }
    }
    kr_profiler_run run;
    memset(&run, 0, sizeof run);
    kr_error ferr = {0};
    int frc = P->r->ops->finish(P->r->impl, &run, &ferr);
    if (rc)
        return rc;
    if (frc)
        return kr_error_set(P->err, frc, "%s", ferr.msg);
    if (*short_run)
        return KR_OK;
    double pw = 0, ws = 0;
    for (int i = 0; i < P->nr; i++) {
        double dt = ed[i].b_t - ed[i].a_t;
        pw += (ed[i].b_e - ed[i].a_e) / dt;
        ws += dt;
    }
    *power_w = pw / P->nr;
    *win_s = ws / P->nr;
    *iter_s = max_rank_time(&run) / (double)iters;
    if (!(*power_w > 0) || !(*iter_s > 0))
        return kr_error_set(P->err, KR_EBACKEND, "window gave power %g W and iteration time %g s", *power_w, *iter_s);
    return KR_OK;
}

int kr__profiler_idle_power(kr_backend *ctl, int dev, const kr_profiler_config *o, const kr_profiler_clock *clk,
                            double *power_w, kr_error *err)
{
    double e;
    int rc = kr_backend_read_energy(ctl, dev, &e);
    if (rc)
        return kr_error_set(err, rc, "reading the energy counter of GPU %d: %s", dev, kr_backend_errmsg(ctl));
    kr__profiler_edges E;
    kr__profiler_edge_init(&E, e, clk_now(clk));
    for (;;) {
        clk_sleep(clk, o->poll_s);
        if ((rc = kr_backend_read_energy(ctl, dev, &e)))
            return kr_error_set(err, rc, "reading the energy counter of GPU %d: %s", dev, kr_backend_errmsg(ctl));
        double now = clk_now(clk);
        if (kr__profiler_edge_feed(&E, e, now, o->window_s))
            break;
        if (now - E.changed_t > o->edge_timeout_s)
            return kr_error_set(err, KR_ETIMEDOUT, "the energy counter of GPU %d did not change for %.1f s", dev,
                                now - E.changed_t);
    }
    *power_w = (E.b_e - E.a_e) / (E.b_t - E.a_t);
    return KR_OK;
}

void kr__profiler_sleep(const kr_profiler_clock *clk, double s)
{
    clk_sleep(clk, s);
}

double kr__profiler_now(const kr_profiler_clock *clk)
{
    return clk_now(clk);
}

int kr_profiler_measure(kr_profiler_runner *runner, kr_backend *ctl, const kr_profiler_config *o,
                        const kr_profiler_clock *clk, const kr_profiler_program *plan, double static_power_w,
                        int *locked_mhz, kr_profiler_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = kr_profiler_options_validate(o, err);
    if (rc)
        return rc;
    if (runner == NULL || runner->ops == NULL || ctl == NULL)
        return kr_error_set(err, KR_EINVAL, "profiler: a runner and a control backend are required");
    if (plan->ranks < 1 || plan->ranks > runner->ndevices)
        return kr_error_set(err, KR_EINVAL, "plan %s needs %d GPUs, the runner has %d", plan->key, plan->ranks,
                            runner->ndevices);
    proto P = {runner, ctl, o, clk, plan, err, plan->ranks};
    double t_begin = clk_now(clk);
    out->nranks = P.nr;
    kr_profiler_comm_label(plan, out->comm, sizeof out->comm);
    if ((rc = lock_and_settle(&P, locked_mhz, out)))
        return rc;
    out->freq_mhz = o->lock_clock ? plan->freq_mhz : 0;

    /* Warm-up, then calibration of the iteration time. */
    double t0 = clk_now(clk), tr;
    long long n = o->warmup_iters > 0 ? o->warmup_iters : 1;
    do {
        if ((rc = run_sync(&P, n, &tr)))
            return rc;
    } while (clk_now(clk) - t0 < o->warmup_s);
    n = o->min_iters;
    for (;;) {
        if ((rc = run_sync(&P, n, &tr)))
            return rc;
        if (tr >= o->calib_min_s || n >= o->max_iters)
            break;
        double grow = ceil(1.2 * o->calib_min_s / tr);
        n = (long long)fmin((double)o->max_iters, (double)n * (grow < 2 ? 2 : grow));
    }
    out->calib_iter_s = tr / (double)n;
    /* A window must span the edge wait before it (one period), the window itself and the wait
     * for the closing edge (one period), with a period of margin. */
    double span = o->window_s + 3.0 * o->energy_period_s;
    long long iters;
    if ((rc = kr_profiler_iters_for_window(out->calib_iter_s, span, o->min_iters, o->max_iters, &iters, err)))
        return rc;

    double win_sum = 0;
    for (int r = 0; r < o->repeats; r++) {
        double pw = 0, it = 0, ws = 0;
        int short_run = 0, tries = 0;
        for (;;) {
            if ((rc = window(&P, iters, &pw, &it, &ws, &short_run, &out->clock_read_mhz)))
                return rc;
            if (!short_run)
                break;
            out->retries++;
            if (++tries > 4 || iters >= o->max_iters)
                return kr_error_set(err, KR_ETIMEDOUT,
                                    "plan %s: runs of %lld iterations end before the energy counter shows a %.1f s "
                                    "window (iteration time %.3g s)",
                                    plan->key, iters, o->window_s, out->calib_iter_s);
            iters = iters * 2 > o->max_iters ? o->max_iters : iters * 2;
        }
        out->time_s[r] = it;
        out->energy_j[r] = pw * it;
        win_sum += ws;
    }
    out->iters = iters;
    out->window_s = win_sum / o->repeats;
    kr_measurement *m = &out->m;
    kr_profiler_stats(out->time_s, o->repeats, &m->time_s, &m->time_sd_s);
    kr_profiler_stats(out->energy_j, o->repeats, &m->energy_j, &m->energy_sd_j);
    m->eff_energy_j = m->energy_j - static_power_w * m->time_s;
    m->repeats = o->repeats;
    out->busy_s = clk_now(clk) - t_begin;
    out->cooldown_s = kr_profiler_cooldown_s(o, out->busy_s);
    clk_sleep(clk, out->cooldown_s);
    return KR_OK;
}

/* ---- the GPU backend ------------------------------------------------------------------------- */

typedef struct gpu_backend {
    kr_job job;
    kr_profiler_runner *runner;
    kr_backend *ctl;
    kr_profiler_config o;
    kr_profiler_program_params pp;
    kr_profiler_clock clk;
    int has_clk;
    kr_profiler_observer observer;
    void *observer_ud;
    int locked_mhz;            /* clock locked on the devices by us (0: none / unknown) */
    int ever_locked;           /* reset the clocks at destroy */
    int prepared;              /* `plan` is prepared on the runner */
    kr_profiler_program plan;     /* last prepared plan */
    kr_profiler_program next;     /* scratch for the plan being built */
    kr_profiler_result last;
    int have_last;
    void *owned;               /* freed by owned_free after everything else (open.c) */
    void (*owned_free)(void *);
} gpu_backend;

static const kr_backend_class gpu_class;
#define STATE(b) ((gpu_backend *)kr_backend_state((b), &gpu_class))

static int gb_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    gpu_backend *g = STATE(b);
    int rc = kr_profiler_program_build(&g->job, p, c, &g->pp, &g->next, kr_backend_error(b));
    if (rc)
        return rc;
    if (!g->prepared || memcmp(&g->next, &g->plan, sizeof g->plan) != 0) {
        g->prepared = 0;
        if ((rc = g->runner->ops->prepare(g->runner->impl, &g->next, kr_backend_error(b))))
            return rc;
        g->plan = g->next;
        g->prepared = 1;
    }
    kr_profiler_result res;
    if (g->o.lock_clock)
        g->ever_locked = 1; /* even a partly failed lock leaves clocks to restore */
    rc = kr_profiler_measure(g->runner, g->ctl, &g->o, g->has_clk ? &g->clk : NULL, &g->plan,
                             g->job.static_power_w, &g->locked_mhz, &res, kr_backend_error(b));
    if (rc) {
        kr_error_prefix(kr_backend_error(b), "partition %s at %d MHz, %d SMs, slot %s", p->key, c->freq_mhz, c->sms,
                        kr_partition_slot_name(p, c->slot));
        return rc;
    }
    *out = res.m;
    g->last = res;
    g->have_last = 1;
    if (g->observer)
        g->observer(g->observer_ud, p, c, &res);
    return KR_OK;
}

static int gb_device_count(kr_backend *b, int *count)
{
    gpu_backend *g = STATE(b);
    *count = g->runner->ndevices;
    return KR_OK;
}

/* The clock and energy entries forward to the control backend, copying its message. */
#define FORWARD(call)                                                                   \
    do {                                                                                \
        gpu_backend *g = STATE(b);                                                       \
        int rc_ = (call);                                                               \
        if (rc_)                                                                        \
            kr_error_set(kr_backend_error(b), rc_, "%s", kr_backend_errmsg(g->ctl));                \
        return rc_;                                                                     \
    } while (0)

static int gb_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    FORWARD(kr_backend_supported_clocks(g->ctl, dev, mhz, cap, n));
}

static int gb_get_clock(kr_backend *b, int dev, int *cur, int *lo, int *hi)
{
    FORWARD(kr_backend_get_clock(g->ctl, dev, cur, lo, hi));
}

static int gb_set_clock(kr_backend *b, int dev, int lo, int hi)
{
    (STATE(b))->locked_mhz = 0; /* someone else changed it: re-lock next time */
    FORWARD(kr_backend_set_clock(g->ctl, dev, lo, hi));
}

static int gb_reset_clock(kr_backend *b, int dev)
{
    (STATE(b))->locked_mhz = 0;
    FORWARD(kr_backend_reset_clock(g->ctl, dev));
}

static int gb_read_energy(kr_backend *b, int dev, double *e)
{
    FORWARD(kr_backend_read_energy(g->ctl, dev, e));
}

static int gb_read_power(kr_backend *b, int dev, double *p)
{
    FORWARD(kr_backend_read_power(g->ctl, dev, p));
}

static void gb_destroy(void *state)
{
    gpu_backend *g = state;
    if (g->ever_locked)
        for (int i = 0; i < g->runner->ndevices; i++)
            kr_backend_reset_clock(g->ctl, g->runner->device[i]);
    kr_profiler_runner_destroy(g->runner);
    if (g->owned_free)
        g->owned_free(g->owned);
    free(g);
}

static const kr_measure_ops gpu_measure_ops = {gb_measure};
static const kr_control_ops gpu_control_ops = {
    .device_count = gb_device_count,
    .supported_clocks = gb_supported_clocks,
    .get_clock = gb_get_clock,
    .set_clock = gb_set_clock,
    .reset_clock = gb_reset_clock,
    .read_energy = gb_read_energy,
    .read_power = gb_read_power,
};
/* The control entries forward to the control backend, which answers KR_EUNSUPPORTED for what
 * it lacks. */
static const kr_backend_class gpu_class = {
    .name = "gpu",
    .caps = KR_BACKEND_MEASURE | KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER,
    .measure = &gpu_measure_ops,
    .control = &gpu_control_ops,
    .destroy = gb_destroy,
};

int kr_profiler_backend_create(const kr_job *job, kr_profiler_runner *runner, kr_backend *ctl,
                               const kr_profiler_config *o, const kr_profiler_program_params *pp,
                               const kr_profiler_clock *clk, kr_profiler_observer observer, void *observer_ud,
                               kr_backend **out, kr_error *err)
{
    *out = NULL;
    if (job == NULL || runner == NULL || ctl == NULL || o == NULL)
        return kr_error_set(err, KR_EINVAL, "profiler backend: job, runner, control backend and options are required");
    int rc = kr_profiler_options_validate(o, err);
    if (rc)
        return rc;
    gpu_backend *g = calloc(1, sizeof *g);
    if (g == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    g->job = *job;
    g->runner = runner;
    g->ctl = ctl;
    g->o = *o;
    if (pp)
        g->pp = *pp;
    else
        kr_profiler_program_params_default(&g->pp);
    g->pp.devices = runner->ndevices;
    if (clk) {
        g->clk = *clk;
        g->has_clk = 1;
    }
    g->observer = observer;
    g->observer_ud = observer_ud;
    rc = kr_backend_create(&gpu_class, g, out);
    if (rc) {
        free(g);
        return kr_error_set(err, rc, "out of memory");
    }
    return KR_OK;
}

const char *kr_profiler_backend_device(const kr_backend *b)
{
    const gpu_backend *g = STATE(b);
    return g ? g->runner->device_name : "";
}

void kr__profiler_backend_own(kr_backend *b, void *ud, void (*free_fn)(void *ud))
{
    gpu_backend *g = STATE(b);
    g->owned = ud;
    g->owned_free = free_fn;
}

int kr_profiler_backend_last(kr_backend *b, kr_profiler_result *out)
{
    gpu_backend *g = STATE(b);
    if (g == NULL)
        return KR_EINVAL;
    if (!g->have_last)
        return KR_ESTATE;
    *out = g->last;
    return KR_OK;
}
