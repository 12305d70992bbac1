/*
 * worker.c — the runtime's worker thread: it applies clock requests, restores the found clocks
 * when asked (off-plan steps, failures, signals, exit, close), polls the energy counter and turns
 * finished steps into energy figures. Every backend call of a running runtime happens here, so
 * the training thread never waits for NVML.
 *
 * Design.
 * - Requests: the training thread stores the wanted clock in `desired` (latest wins) and writes
 *   the eventfd only when `sleeping` is set. The worker sets `sleeping`, re-checks for work, then
 *   polls the eventfd; both sides use sequentially consistent atomics, so a request made while
 *   the worker goes to sleep is never lost (store desired / load sleeping against store
 *   sleeping / load desired).
 * - The worker runs under SCHED_BATCH: a normal-weight time-sharing policy (it cannot be starved)
 *   whose threads do not preempt the thread that wakes them. Without it, the kernel's wake-up
 *   preemption runs the worker on the training thread's core right inside the eventfd write, and
 *   the hook pays for the worker's whole turn (bench_runtime: about 4 µs instead of well under 1).
 * - The worker never holds mu while calling the backend, and a restore requested by a signal
 *   handler is served before mu is taken, so a handler waiting for the restore cannot deadlock
 *   with a thread it interrupted (threads other than the worker hold mu only with SIGINT,
 *   SIGTERM, SIGHUP, SIGQUIT and SIGPIPE blocked).
 * - Energy: the counter is read every poll_s; a reading that differs from the previous one is a
 *   change point (t_i, E_i). E(t) between change points is linear interpolation — the counter's
 *   increment is spread evenly over the interval it accumulated in, which is all a counter
 *   updated every ~100 ms can tell (the published artifact fits the same piecewise-linear curve
 *   offline, reference/user-needs.md §3.6). A window [a, b] is final once a change point at or
 *   after b exists. The first window starts from the reading taken at open, which may lag the
 *   counter's own update by up to one period: a bias of at most one period on the first step.
 */
#include "runtime/runtime_internal.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kr__rt_wake(kr_runtime *rt)
{
    uint64_t one = 1;
    if (write(rt->wake_fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is saturated, so the worker is woken anyway. */
    }
}

void kr__rt_lock_mu(kr_runtime *rt, sigset_t *saved)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, saved);
    pthread_mutex_lock(&rt->mu);
}

void kr__rt_unlock_mu(kr_runtime *rt, const sigset_t *saved)
{
    pthread_mutex_unlock(&rt->mu);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

void kr__rt_warn_locked(kr_runtime *rt, int kind, int code, const char *fmt, ...)
{
    if (kind <= 0 || kind >= 5 || (rt->warned_mask & (1 << kind)))
        return;
    rt->warned_mask |= 1 << kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->warn_msg[kind], sizeof rt->warn_msg[kind], fmt, ap);
    va_end(ap);
    rt->warn_code[kind] = code;
    rt->warn_queued |= 1 << kind;
    atomic_store(&rt->warn_pending, 1);
}

int kr__rt_restore(kr_runtime *rt, kr_error *err)
{
    if (!rt->dirty)
        return KR_OK;
    int rc = KR_OK;
    /* A restore is the one call that must not be lost to a transient failure: try three times. */
    for (int attempt = 0; attempt < 3; attempt++) {
        rc = rt->restore_max > 0 ? kr_backend_set_clock(rt->backend, rt->device, rt->restore_min, rt->restore_max)
                                 : kr_backend_reset_clock(rt->backend, rt->device);
        if (rc == KR_OK) {
            rt->dirty = 0;
            rt->applied = 0;
            atomic_store(&rt->applied_mhz, 0);
            return KR_OK;
        }
    }
    return kr_error_set(err, rc, "%s", kr_backend_errmsg(rt->backend));
}

/* Describes the restore target for messages. */
static void restore_target(const kr_runtime *rt, char *buf, size_t cap)
{
    if (rt->restore_max > 0)
        snprintf(buf, cap, "the lock [%d, %d] MHz found at open", rt->restore_min, rt->restore_max);
    else
        snprintf(buf, cap, "the driver's default (lock reset)");
}

/* Clock control failed: measure only from now on, put the clocks back, tell the user once. */
static void degrade(kr_runtime *rt, int rc, const char *what)
{
    atomic_store(&rt->mode, KR_RUNTIME_MEASURE_ONLY);
    kr_error e = {0};
    int rrc = kr__rt_restore(rt, &e);
    char target[96];
    restore_target(rt, target, sizeof target);
    pthread_mutex_lock(&rt->mu);
    rt->st.degraded = 1;
    rt->st.degrade_code = rc;
    rt->st.restored = rrc == KR_OK;
    rt->st.restore_failed = rrc != KR_OK;
    if (rrc == KR_OK)
        snprintf(rt->st.reason, sizeof rt->st.reason,
                 "clock control switched off, measuring only: %s; clocks restored to %s", what, target);
    else
        snprintf(rt->st.reason, sizeof rt->st.reason,
                 "clock control switched off, measuring only: %s; restoring %s FAILED too: %s", what, target, e.msg);
    kr__rt_warn_locked(rt, KR_RUNTIME_WARN_DEGRADED, rc, "%s", rt->st.reason);
    pthread_mutex_unlock(&rt->mu);
}

static void apply_desired(kr_runtime *rt)
{
    int d = atomic_load(&rt->desired);
    if (d == 0 || d == rt->applied)
        return;
    char what[600];
    if (d == RT_RESTORE_REQ) {
        kr_error e = {0};
        int rc = kr__rt_restore(rt, &e);
        if (rc == KR_OK)
            rt->applied = RT_RESTORE_REQ;
        else {
            snprintf(what, sizeof what, "restoring the found clocks for an off-plan step failed: %s", e.msg);
            degrade(rt, rc, what);
        }
        return;
    }
    int rc = kr_backend_set_clock(rt->backend, rt->device, d, d);
    if (rc == KR_OK) {
        rt->applied = d;
        rt->dirty = 1;
        atomic_store(&rt->applied_mhz, d);
        atomic_store(&rt->n_sets, atomic_load(&rt->n_sets) + 1);
        return;
    }
    /* A refused call (no permission, unsupported) changed nothing; any other failure leaves the
     * clock unknown, so it must be put back. */
    if (rc != KR_EPERM && rc != KR_EUNSUPPORTED)
        rt->dirty = 1;
    snprintf(what, sizeof what, "setting the SM clock of device %d to %d MHz failed: %s", rt->device, d,
             kr_backend_errmsg(rt->backend));
    degrade(rt, rc, what);
}

/* A signal handler or the atexit handler asked for the clocks back. */
static void serve_restore_request(kr_runtime *rt)
{
    kr_error e = {0};
    int rrc = kr__rt_restore(rt, &e);
    atomic_store(&rt->mode, KR_RUNTIME_STOPPED);
    atomic_store(&rt->restore_done, 1);
    int sig = atomic_load(&rt->restore_signal);
    char target[96];
    restore_target(rt, target, sizeof target);
    pthread_mutex_lock(&rt->mu);
    rt->st.signal = sig;
    rt->st.restored = rrc == KR_OK;
    rt->st.restore_failed = rrc != KR_OK;
    if (sig)
        snprintf(rt->st.reason, sizeof rt->st.reason, "signal %d (%s): clocks %s %s; clock control stopped", sig,
                 strsignal(sig), rrc == KR_OK ? "restored to" : "could NOT be restored to", target);
    else
        snprintf(rt->st.reason, sizeof rt->st.reason, "process exit: clocks %s %s",
                 rrc == KR_OK ? "restored to" : "could NOT be restored to", target);
    kr__rt_warn_locked(rt, KR_RUNTIME_WARN_SIGNAL, rrc, "%s", rt->st.reason);
    pthread_mutex_unlock(&rt->mu);
}

/* ---- energy ----------------------------------------------------------------------------- */

static int smp_phys(const kr_runtime *rt, int i)
{
    return (rt->smp_head - rt->smp_n + i + 2 * RT_SAMPLES) % RT_SAMPLES;
}

static double smp_t(const kr_runtime *rt, int i)
{
    return rt->smp_t[smp_phys(rt, i)];
}

static double smp_e(const kr_runtime *rt, int i)
{
    return rt->smp_e[smp_phys(rt, i)];
}

void kr__rt_sample(kr_runtime *rt)
{
    if (!rt->energy_on)
        return;
    double t = kr__rt_now(rt), e = 0;
    int rc = kr_backend_read_energy(rt->backend, rt->device, &e);
    if (rc != KR_OK) {
        rt->energy_on = 0;
        pthread_mutex_lock(&rt->mu);
        rt->en.available = 0;
        kr__rt_warn_locked(rt, KR_RUNTIME_WARN_ENERGY, rc, "energy counter of device %d failed, no more energy figures: %s",
                           rt->device, kr_backend_errmsg(rt->backend));
        pthread_mutex_unlock(&rt->mu);
        return;
    }
    if (rt->smp_n == 0 || e != rt->last_e) {
        rt->smp_t[rt->smp_head] = t;
        rt->smp_e[rt->smp_head] = e;
        rt->smp_head = (rt->smp_head + 1) % RT_SAMPLES;
        if (rt->smp_n < RT_SAMPLES)
            rt->smp_n++;
    }
    rt->last_e = e;
    pthread_mutex_lock(&rt->mu);
    rt->en.counter_j = e - rt->e0;
    pthread_mutex_unlock(&rt->mu);
}

/* Index of the last change point with time <= t (-1 if none). */
static int smp_floor(const kr_runtime *rt, double t)
{
    int lo = 0, hi = rt->smp_n - 1, ans = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (smp_t(rt, mid) <= t) {
            ans = mid;
            lo = mid + 1;
        } else
            hi = mid - 1;
    }
    return ans;
}

/* Counter interpolated at t; -1 if t lies outside the change points kept. */
static int energy_at(const kr_runtime *rt, double t, double *e)
{
    int i = smp_floor(rt, t);
    if (i < 0)
        return -1;
    if (i == rt->smp_n - 1) {
        if (smp_t(rt, i) != t)
            return -1;
        *e = smp_e(rt, i);
        return 0;
    }
    double t0 = smp_t(rt, i), t1 = smp_t(rt, i + 1), e0 = smp_e(rt, i), e1 = smp_e(rt, i + 1);
    *e = t1 > t0 ? e0 + (e1 - e0) * (t - t0) / (t1 - t0) : e1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median interval between the last (up to 32) change points; 0 with fewer than two. */
static double counter_period(const kr_runtime *rt)
{
    double d[31];
    int n = 0;
    for (int i = rt->smp_n - 1; i > 0 && n < 31; i--)
        d[n++] = smp_t(rt, i) - smp_t(rt, i - 1);
    if (n == 0)
        return 0;
    qsort(d, (size_t)n, sizeof *d, cmp_double);
    return n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
}

/* Turns the finished steps whose window the counter has passed into energy figures. */
static void process_pending(kr_runtime *rt)
{
    for (;;) {
        pthread_mutex_lock(&rt->mu);
        if (rt->npending == 0) {
            pthread_mutex_unlock(&rt->mu);
            return;
        }
        rt_step *s = &rt->pending[rt->pending_head];
        int final_ok = !rt->energy_on || (rt->smp_n > 0 && smp_t(rt, rt->smp_n - 1) >= s->t_end);
        if (!final_ok) {
            pthread_mutex_unlock(&rt->mu);
            return;
        }
        double a = s->t_start, b = s->t_end;
        memcpy(rt->tmp_b, s->begin, sizeof(double) * (size_t)rt->ninstr);
        memcpy(rt->tmp_e, s->end, sizeof(double) * (size_t)rt->ninstr);
        rt->pending_head = (rt->pending_head + 1) % RT_PENDING;
        rt->npending--;
        pthread_mutex_unlock(&rt->mu);

        double ea = 0, eb = 0;
        int have = rt->energy_on && energy_at(rt, a, &ea) == 0 && energy_at(rt, b, &eb) == 0;
        pthread_mutex_lock(&rt->mu);
        if (rt->energy_on && !have) {
            rt->en.steps_dropped++; /* its start fell out of the change points kept */
            pthread_mutex_unlock(&rt->mu);
            continue;
        }
        rt->en.steps++;
        rt->en.step_time_s = b - a;
        rt->en.step_energy_j = have ? eb - ea : 0;
        rt->en.total_time_s += b - a;
        rt->en.total_energy_j += rt->en.step_energy_j;
        rt->en.counter_period_s = counter_period(rt);
        rt->en.ninstr = rt->ninstr;
        for (int i = 0; i < rt->ninstr; i++) {
            kr_runtime_instr_energy *ie = &rt->en_instr[i];
            const rt_instr *in = &rt->instr[i];
            double tb = rt->tmp_b[i], te = rt->tmp_e[i];
            ie->kind = (int)in->kind;
            ie->microbatch = in->microbatch;
            ie->chunk = in->chunk;
            ie->freq_mhz = in->freq_mhz;
            ie->begin_s = isnan(tb) ? NAN : tb - a;
            ie->time_s = isnan(tb) || isnan(te) ? NAN : te - tb;
            ie->energy_j = NAN;
            ie->counter_updates = 0;
            double e1, e2;
            if (have && !isnan(tb) && !isnan(te) && energy_at(rt, tb, &e1) == 0 && energy_at(rt, te, &e2) == 0) {
                ie->energy_j = e2 - e1;
                ie->counter_updates = smp_floor(rt, te) - smp_floor(rt, tb);
            }
        }
        pthread_mutex_unlock(&rt->mu);
    }
}

/* ---- the loop ----------------------------------------------------------------------------- */

static int has_work(kr_runtime *rt, long restore_seen, long sync_seen)
{
    if (atomic_load(&rt->stop) || atomic_load(&rt->restore_req) != restore_seen || atomic_load(&rt->sync_req) != sync_seen)
        return 1;
    int d = atomic_load(&rt->desired);
    return atomic_load(&rt->mode) == KR_RUNTIME_CONTROL && d != 0 && d != rt->applied;
}

#ifndef SCHED_BATCH
#define SCHED_BATCH 3 /* Linux's value (<linux/sched.h>); glibc shows it only under _GNU_SOURCE */
#endif

void *kr__rt_worker_main(void *arg)
{
    kr_runtime *rt = arg;
    struct sched_param sp = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp) != 0) {
        /* Not Linux, or a policy the process may not use: only the hook cost changes. */
    }
    long restore_seen = 0, sync_seen = 0;
    double next_poll = kr__now_s() + rt->poll_s;
    for (;;) {
        int stopping = atomic_load(&rt->stop);
        long rq = atomic_load(&rt->restore_req);
        if (rq != restore_seen) {
            restore_seen = rq;
            serve_restore_request(rt);
        }
        long sreq = atomic_load(&rt->sync_req);
        if (!stopping && atomic_load(&rt->mode) == KR_RUNTIME_CONTROL)
            apply_desired(rt);
        double now = kr__now_s();
        if ((rt->poll_s > 0 && now >= next_poll) || sreq != sync_seen || stopping) {
            kr__rt_sample(rt);
            next_poll = now + rt->poll_s;
        }
        process_pending(rt);
        if (sreq != sync_seen) {
            sync_seen = sreq;
            pthread_mutex_lock(&rt->mu);
            rt->sync_done = sreq;
            pthread_cond_broadcast(&rt->cv);
            pthread_mutex_unlock(&rt->mu);
        }
        if (stopping)
            return NULL;
        atomic_store(&rt->sleeping, 1);
        if (has_work(rt, restore_seen, sync_seen)) {
            atomic_store(&rt->sleeping, 0);
            continue;
        }
        int timeout_ms = -1;
        if (rt->poll_s > 0) {
            double left = next_poll - kr__now_s();
            timeout_ms = left <= 0 ? 0 : (int)ceil(left * 1e3);
        }
        struct pollfd p = {.fd = rt->wake_fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR)
            timeout_ms = 0; /* cannot happen with a valid fd; keep looping */
        atomic_store(&rt->sleeping, 0);
        uint64_t v;
        if (read(rt->wake_fd, &v, sizeof v) < 0) {
            /* EAGAIN: woken by the timeout, nothing to drain. */
        }
    }
}
