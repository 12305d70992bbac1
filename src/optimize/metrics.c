/*
 * metrics.c — the paper's figures of every method of a kr_optimize run (optimize.h,
 * kr_metric_row): max throughput against Megatron, iso-time and iso-energy reductions against
 * Perseus on the simulated 10-point frontiers and the predicted full ones, the robust comparison,
 * and the largest prediction error over the simulated plans. Split from optimize.c, which calls
 * kr__optimize_metrics once every method has run.
 */
#include <math.h>

#include "kareus/metrics.h"
#include "optimize_internal.h"
#include "util/util.h"

static void tradeoff_of_ten(const kr_method_result *mr, double *t, double *e, kr_tradeoff *out)
{
    for (int i = 0; i < mr->nten; i++) {
        t[i] = mr->plans[mr->ten[i]].sim_time_s;
        e[i] = mr->plans[mr->ten[i]].sim_energy_j;
    }
    out->n = mr->nten;
    out->time_s = t;
    out->energy_j = e;
}

/* A metric that may not exist ("no plan qualifies"): NaN then. */
typedef int (*metric_fn)(const kr_tradeoff *, const kr_tradeoff *, double *, kr_error *);

static double metric_or_nan(metric_fn fn, const kr_tradeoff *ref, const kr_tradeoff *x)
{
    double v;
    kr_error e = {0};
    return fn(ref, x, &v, &e) == KR_OK ? v : NAN;
}

void kr__optimize_metrics(kr_optimize_result *o)
{
    const kr_method_result *meg = &o->m[KR_METHOD_MEGATRON], *per = &o->m[KR_METHOD_PERSEUS];
    double rt[10], re[10];
    kr_tradeoff ref10 = {0}, reffull = {0};
    if (per->enabled) {
        tradeoff_of_ten(per, rt, re, &ref10);
        reffull = (kr_tradeoff){per->nsteps, per->time_s, per->energy_j};
    }
    double max_terr = 0, max_eerr = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &o->m[m];
        kr_metric_row *row = &o->rows[m];
        row->mt_time_red = row->mt_energy_red = row->iso_time_10pt = row->iso_energy_10pt = NAN;
        row->iso_time_full = row->iso_energy_full = row->robust_mean = row->robust_max = NAN;
        if (!mr->enabled)
            continue;
        for (int i = 0; i < mr->nplans; i++) {
            const kr_opt_plan *p = &mr->plans[i];
            max_terr = KR_MAX(max_terr, fabs(p->sim_time_s - p->pred_time_s) / p->pred_time_s);
            max_eerr = KR_MAX(max_eerr, fabs(p->sim_energy_j - p->pred_energy_j) / p->pred_energy_j);
        }
        double xt[10], xe[10];
        kr_tradeoff x10, xfull = {mr->nsteps, mr->time_s, mr->energy_j};
        tradeoff_of_ten(mr, xt, xe, &x10);
        /* Max throughput: the method's fastest simulated plan against Megatron's. */
        if (meg->enabled) {
            const kr_opt_plan *mp = &meg->plans[meg->fastest], *fp = &mr->plans[mr->fastest];
            row->mt_time_red = (mp->sim_time_s - fp->sim_time_s) / mp->sim_time_s;
            row->mt_energy_red = (mp->sim_energy_j - fp->sim_energy_j) / mp->sim_energy_j;
        }
        if (!per->enabled)
            continue;
        double mean, mx, lo, hi;
        kr_error e = {0};
        row->iso_time_10pt = metric_or_nan(kr_metric_iso_time, &ref10, &x10);
        row->iso_energy_10pt = metric_or_nan(kr_metric_iso_energy, &ref10, &x10);
        row->iso_time_full = metric_or_nan(kr_metric_iso_time, &reffull, &xfull);
        row->iso_energy_full = metric_or_nan(kr_metric_iso_energy, &reffull, &xfull);
        if (kr_metric_robust(&reffull, &xfull, 1000, &mean, &mx, &lo, &hi, &e) == KR_OK) {
            row->robust_mean = mean;
            row->robust_max = mx;
        }
    }
    o->max_time_err = max_terr;
    o->max_energy_err = max_eerr;
}

