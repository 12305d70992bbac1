/*
 * search_fake.h — a synthetic backend for the search tests: a small, smooth, physically shaped
 * time/energy model of (clock, comm SMs, slot, kernel), independent of the real simulator so that the
 * search is tested on its own. It counts calls, remembers what it measured, and can fail on
 * call N (fault injection for the resume tests).
 *
 * Model (per GPU): compute ops run in order at the roofline of the SMs left to compute
 * (flops / (N_sm,avail · flops_per_sm_clk · f · 0.7), bytes / (0.8 · HBM bw)); the collective
 * launches when the ops before its slot finish and takes α + k·bytes / min(busbw, sms · cta_bw
 * · (0.5 + 0.5 f/f_max)) (NCCL, a kareus config's other kernel: 1.5 · cta_bw · (0.8 + 0.2 f/f_max));
 * while it runs, compute has N − sms SMs and a 10 % memory slowdown.
 * Power = static + dyn_coeff · f[GHz] · V(f)² · (active SM share) + comm activity; energy is its
 * integral. Not calibrated: it only has the right shape (time falls and energy rises with the
 * clock; the slot and SMs trade overlap against compute speed).
 */
#ifndef KR_SEARCH_FAKE_H
#define KR_SEARCH_FAKE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/backend.h"
#include "kareus/job.h"

typedef struct fake_impl {
    kr_job job;
    long calls;      /* measure() calls so far */
    long fail_on;    /* fail the call with this number (1-based); 0 = never */
    long ncfg;       /* configurations measured (successful calls), in order */
    kr_config cfg[20000];
    char key[20000][KR_KEY_MAX];
} fake_impl;

static double fake_voltage(const kr_gpu *g, double f)
{
    if (f <= g->v_floor_mhz)
        return g->v_min;
    return g->v_min + (g->v_max - g->v_min) * (f - g->v_floor_mhz) / (g->clock_max_mhz - g->v_floor_mhz);
}

static int fake_eval(const kr_job *job, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    const kr_gpu *g = &job->gpu;
    double f = c->freq_mhz, N = g->sm_count;
    int coll = p->coll.kind != KR_COLL_NONE;
    int sms = coll ? c->sms : 0;
    int start_op = !coll ? p->nops : c->slot == KR_SLOT_NONE ? p->nops : p->slots[c->slot].op_index;
    double kf = p->coll.kind == KR_COLL_ALLREDUCE ? 2.0 * (p->coll.group_size - 1) / p->coll.group_size
                                                   : (double)(p->coll.group_size - 1) / p->coll.group_size;
    /* NCCL (a kareus config's kernel): more bytes per CTA, less dependent on the clock. */
    int nccl = c->kernel == KR_KERNEL_NCCL && p->variant == KR_VARIANT_KAREUS;
    double bw = fmin(g->busbw_ar_Bps, nccl ? sms * g->busbw_per_cta_Bps * 1.5 * (0.8 + 0.2 * f / g->clock_max_mhz)
                                            : sms * g->busbw_per_cta_Bps * (0.5 + 0.5 * f / g->clock_max_mhz));
    double comm_left = coll ? g->coll_alpha_s + kf * p->coll.bytes / bw : 0.0;
    double v = fake_voltage(g, f), dyn = g->dyn_coeff_w * (f / 1000.0) * v * v;
    double t = 0, energy = 0;
    /* The comm kernel runs from op start_op on, overlapping the ops until it ends. */
    for (int i = 0; i < p->nops; i++) {
        const kr_op *op = &p->ops[i];
        double work = 1.0; /* fraction of the op left */
        while (work > 1e-12) {
            int overlapped = i >= start_op && comm_left > 0;
            double avail = overlapped ? N - sms : N;
            double tc = op->flops / (avail * g->flops_per_sm_clk * f * 1e6 * 0.7);
            double tm = op->bytes / (g->hbm_bw_Bps * 0.8);
            double dur = fmax(tc, tm) * (overlapped ? 1.1 : 1.0) + g->launch_s;
            double share = tc / fmax(tc, tm) * avail / N;
            double pw = g->static_w + dyn * share + (overlapped ? dyn * g->comm_activity * sms / N : 0) +
                        g->mem_power_w * tm / fmax(tc, tm);
            double need = work * dur;
            double step = overlapped && comm_left < need ? comm_left : need;
            t += step;
            energy += pw * step;
            work -= step / dur;
            if (overlapped)
                comm_left -= step;
        }
    }
    if (comm_left > 0) { /* the collective outlasts compute */
        double pw = g->static_w + dyn * g->comm_activity * sms / N;
        t += comm_left;
        energy += pw * comm_left;
    }
    memset(out, 0, sizeof *out);
    out->time_s = t;
    out->energy_j = energy;
    out->eff_energy_j = energy - job->static_power_w * t;
    out->repeats = 1;
    return KR_OK;
}

static const kr_backend_class fake_class;

static int fake_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    fake_impl *f = kr_backend_state(b, &fake_class);
    f->calls++;
    if (f->fail_on && f->calls == f->fail_on)
        return kr_error_set(kr_backend_error(b), KR_EBACKEND, "fake: injected failure on call %ld", f->calls);
    int rc = kr_config_validate(&f->job, p, c, kr_backend_error(b));
    if (rc)
        return rc;
    if (f->ncfg < 20000) {
        f->cfg[f->ncfg] = *c;
        snprintf(f->key[f->ncfg], KR_KEY_MAX, "%s", p->key);
        f->ncfg++;
    }
    return fake_eval(&f->job, p, c, out);
}

static const kr_measure_ops fake_measure_ops = {fake_measure};
static const kr_backend_class fake_class = {
    .name = "synthetic", .caps = KR_BACKEND_MEASURE, .measure = &fake_measure_ops, .destroy = free};

/* A fake backend for job; *impl (may be NULL) gives access to its counters. */
static kr_backend *fake_backend(const kr_job *job, long fail_on, fake_impl **impl)
{
    fake_impl *f = calloc(1, sizeof *f);
    kr_backend *b = NULL;
    if (f == NULL)
        return NULL;
    f->job = *job;
    f->fail_on = fail_on;
    if (kr_backend_create(&fake_class, f, &b) != KR_OK) {
        free(f);
        return NULL;
    }
    if (impl)
        *impl = f;
    return b;
}

#endif
