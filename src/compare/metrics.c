/*
 * metrics.c — iso-time / iso-energy / max-throughput / robust comparison of frontiers and the
 * artifact's 10-point plan selection (see metrics.h for the definitions and their source).
 */
#include "kareus/metrics.h"

#include <math.h>

#include "util/util.h"

static int check(const kr_tradeoff *t, const char *what, kr_error *err)
{
    if (t == NULL || t->n < 1)
        return kr_error_set(err, KR_EINVAL, "metrics: %s: expected at least one plan, found none", what);
    for (int i = 0; i < t->n; i++)
        if (!isfinite(t->time_s[i]) || !isfinite(t->energy_j[i]) || t->time_s[i] <= 0 || t->energy_j[i] < 0)
            return kr_error_set(err, KR_EINVAL,
                                "metrics: %s: plan %d: expected a positive finite time and a finite energy >= 0, "
                                "found %g s, %g J",
                                what, i, t->time_s[i], t->energy_j[i]);
    return KR_OK;
}

/* Index of the fastest plan (ties: lower energy) and of the most frugal plan (ties: faster). */
static int fastest(const kr_tradeoff *t)
{
    int b = 0;
    for (int i = 1; i < t->n; i++)
        if (t->time_s[i] < t->time_s[b] || (t->time_s[i] == t->time_s[b] && t->energy_j[i] < t->energy_j[b]))
            b = i;
    return b;
}

static int frugal(const kr_tradeoff *t)
{
    int b = 0;
    for (int i = 1; i < t->n; i++)
        if (t->energy_j[i] < t->energy_j[b] || (t->energy_j[i] == t->energy_j[b] && t->time_s[i] < t->time_s[b]))
            b = i;
    return b;
}

double kr_metric_energy_at(const kr_tradeoff *x, double t)
{
    double best = INFINITY;
    for (int i = 0; i < x->n; i++)
        if (x->time_s[i] <= t && x->energy_j[i] < best)
            best = x->energy_j[i];
    return best;
}

int kr_metric_iso_time(const kr_tradeoff *ref, const kr_tradeoff *x, double *reduction, kr_error *err)
{
    int rc;
    if ((rc = check(ref, "reference", err)) || (rc = check(x, "method", err)))
        return rc;
    int pt = fastest(ref);
    double best = kr_metric_energy_at(x, ref->time_s[pt]);
    if (!isfinite(best))
        return kr_error_set(err, KR_ENOTFOUND, "metrics: no plan is as fast as the reference's fastest (%.4f s)",
                            ref->time_s[pt]);
    *reduction = (ref->energy_j[pt] - best) / ref->energy_j[pt];
    return KR_OK;
}

int kr_metric_iso_energy(const kr_tradeoff *ref, const kr_tradeoff *x, double *reduction, kr_error *err)
{
    int rc;
    if ((rc = check(ref, "reference", err)) || (rc = check(x, "method", err)))
        return rc;
    int pe = frugal(ref);
    double best = INFINITY;
    for (int i = 0; i < x->n; i++)
        if (x->energy_j[i] <= ref->energy_j[pe] && x->time_s[i] < best)
            best = x->time_s[i];
    if (!isfinite(best))
        return kr_error_set(err, KR_ENOTFOUND,
                            "metrics: no plan uses as little energy as the reference's most frugal (%.1f J)",
                            ref->energy_j[pe]);
    *reduction = (ref->time_s[pe] - best) / ref->time_s[pe];
    return KR_OK;
}

int kr_metric_max_throughput(double t_ref, double e_ref, const kr_tradeoff *x, double *time_reduction,
                             double *energy_reduction, kr_error *err)
{
    int rc = check(x, "method", err);
    if (rc)
        return rc;
    if (!(t_ref > 0) || !(e_ref > 0))
        return kr_error_set(err, KR_EINVAL, "metrics: reference point: expected positive time and energy, found %g s, %g J",
                            t_ref, e_ref);
    int f = fastest(x);
    *time_reduction = (t_ref - x->time_s[f]) / t_ref;
    *energy_reduction = (e_ref - x->energy_j[f]) / e_ref;
    return KR_OK;
}

int kr_metric_robust(const kr_tradeoff *ref, const kr_tradeoff *x, int samples, double *mean, double *max,
                     double *lo_s, double *hi_s, kr_error *err)
{
    int rc;
    if ((rc = check(ref, "reference", err)) || (rc = check(x, "method", err)))
        return rc;
    if (samples < 2)
        return kr_error_set(err, KR_EINVAL, "metrics: expected at least 2 samples, found %d", samples);
    double lo = KR_MAX(ref->time_s[fastest(ref)], x->time_s[fastest(x)]);
    double hi = -INFINITY;
    for (int i = 0; i < ref->n; i++)
        hi = KR_MAX(hi, ref->time_s[i]);
    for (int i = 0; i < x->n; i++)
        hi = KR_MAX(hi, x->time_s[i]);
    if (!(hi >= lo))
        return kr_error_set(err, KR_ENOTFOUND, "metrics: the frontiers share no iteration time");
    double sum = 0, mx = -INFINITY;
    for (int k = 0; k < samples; k++) {
        double t = lo + (hi - lo) * k / (samples - 1);
        double er = kr_metric_energy_at(ref, t), ex = kr_metric_energy_at(x, t);
        double r = (er - ex) / er;
        sum += r;
        mx = KR_MAX(mx, r);
    }
    *mean = sum / samples;
    *max = mx;
    *lo_s = lo;
    *hi_s = hi;
    return KR_OK;
}

int kr_select_artifact10(int n, int *out, int cap)
{
    if (n < 1 || cap < 15)
        return KR_EINVAL;
    int stride = (n + 14) / 15;
    int samples[15], ns = 0;
    for (int i = n - 1; i >= 0 && ns < 15; i -= stride)
        samples[ns++] = i;
    /* ascending */
    for (int a = 0, b = ns - 1; a < b; a++, b--) {
        int t = samples[a];
        samples[a] = samples[b];
        samples[b] = t;
    }
    int k = 0;
    for (int i = 0; i < ns; i++)
        if (!(i <= 8 && i % 2 == 0))
            out[k++] = samples[i];
    return k;
}
