/*
 * ltmodel.c — lowtime 0.2.0's per-instruction cost model, reproduced for the compatibility
 * mode (reference: shared/reference/lowtime-solver.md §2–§4).
 *
 *   quant_time = real_time // unit_time           CPython float floor division (fmod-based)
 *   cost       = energy − P_static·quant_time·unit_time   (Kareus recipe, before filtering;
 *                evaluated left to right as Python does: ((P·q)·u))
 *   candidates = Pareto filter with noise factor nf (o dropped if some p has
 *                p.time < o.time·nf and p.cost < o.cost·nf), then one option per quant_time
 *                (the most expensive: stable sort by cost descending, first wins), sorted by
 *                quant_time descending; if 3 or fewer survive, redo with nf = 0.95.
 *   model      = a·exp(b·t) + c fitted by least squares (MINPACK lmdif, as scipy curve_fit
 *                with maxfev 50000) from each of the 54 starts a ∈ {10,100,1000},
 *                b ∈ −{0.01,0.02,0.03,0.04,0.05,0.1}·unit/1 ms, c ∈ {10,100,1000}
 *                (itertools.product order); a fit is rejected when its covariance is
 *                infinite (singular R, or at most 3 points), its MSE is infinite, or a < 0;
 *                the lowest MSE wins, ties keep the earlier start ("best" strategy).
 * A non-converging fit (MINPACK info 5–8) makes scipy raise RuntimeError, which lowtime does
 * not catch; we return KR_EINFEASIBLE with the instruction named instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

double kr__py_floordiv(double a, double b)
{
    /* CPython's float floor division (Objects/floatobject.c, float_floor_div): the quotient
     * of a − fmod(a, b), corrected when the remainder's sign differs from b's, then snapped
     * to the nearest integer with an exact .5 rounded down. */
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0))
            div -= 1.0;
    }
    double fl;
    if (div != 0) {
        fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    return fl;
}

void kr__lt_spec_free(kr__lt_spec *spec)
{
    free(spec->cand);
    memset(spec, 0, sizeof *spec);
}

double kr__lt_cost(const kr__lt_spec *spec, long t)
{
    return spec->a * exp(spec->b * (double)t) + spec->c;
}

/* Filters all[0..n) with noise factor nf into out (returns the count). */
static int filter(const kr__lt_cand *all, int n, double nf, kr__lt_cand *out, kr__lt_cand *tmp)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++)
            dominated = j != i && all[j].real_time < all[i].real_time * nf && all[j].cost < all[i].cost * nf;
        if (!dominated)
            tmp[k++] = all[i];
    }
    /* Stable sort by cost descending (insertion sort: n is small). */
    for (int i = 1; i < k; i++) {
        kr__lt_cand x = tmp[i];
        int j = i - 1;
        while (j >= 0 && tmp[j].cost < x.cost) {
            tmp[j + 1] = tmp[j];
            j--;
        }
        tmp[j + 1] = x;
    }
    int m = 0;
    for (int i = 0; i < k; i++) {
        int dup = 0;
        for (int j = 0; j < m && !dup; j++)
            dup = out[j].quant_time == tmp[i].quant_time;
        if (!dup)
            out[m++] = tmp[i];
    }
    /* Sort by quant_time descending (distinct after dedup). */
    for (int i = 1; i < m; i++) {
        kr__lt_cand x = out[i];
        int j = i - 1;
        while (j >= 0 && out[j].quant_time < x.quant_time) {
            out[j + 1] = out[j];
            j--;
        }
        out[j + 1] = x;
    }
    return m;
}

int kr__lt_filter(const kr_option_set *set, double unit_time_s, double static_power_w, kr__lt_spec *spec,
                  kr_error *err)
{
    memset(spec, 0, sizeof *spec);
    int n = set->n;
    if (n < 1 || n > KR__LT_MAX_OPTS)
        return kr_error_set(err, KR_EINVAL, "stage %d %s: expected 1..%d options, found %d", set->stage,
                            kr_instr_kind_name(set->kind), KR__LT_MAX_OPTS, n);
    kr__lt_cand *all = malloc(sizeof *all * (size_t)n * 3);
    if (all == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    kr__lt_cand *out = all + n, *tmp = all + 2 * n;
    for (int i = 0; i < n; i++) {
        double q = kr__py_floordiv(set->opt[i].time_s, unit_time_s);
        all[i].index = i;
        all[i].real_time = set->opt[i].time_s;
        all[i].quant_time = (long)q;
        all[i].cost = set->opt[i].energy_j - static_power_w * (double)all[i].quant_time * unit_time_s;
    }
    double nf = 1.0;
    int m = filter(all, n, nf, out, tmp);
    if (m <= 3) {
        nf = 0.95;
        m = filter(all, n, nf, out, tmp);
    }
    spec->cand = malloc(sizeof *spec->cand * (size_t)m);
    if (spec->cand == NULL) {
        free(all);
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    }
    memcpy(spec->cand, out, sizeof *out * (size_t)m);
    spec->ncand = m;
    spec->noise_factor = nf;
    spec->max_duration = out[0].quant_time;
    spec->min_duration = out[m - 1].quant_time;
    free(all);
    return KR_OK;
}

typedef struct fitdata {
    int m;
    const double *t, *y;
} fitdata;

static int residuals(void *ud, int m, int n, const double *x, double *f)
{
    (void)n;
    const fitdata *d = ud;
    for (int i = 0; i < m; i++)
        f[i] = (x[0] * exp(x[1] * d->t[i]) + x[2]) - d->y[i];
    return 0;
}

/* numpy's mean of squared errors: pairwise summation (8 accumulators for 8 <= n <= 128). */
static double np_mse(const double *t, const double *y, int m, double a, double b, double c)
{
    double sq[KR__LT_MAX_OPTS];
    for (int i = 0; i < m; i++) {
        double d = y[i] - (a * exp(b * t[i]) + c);
        sq[i] = d * d;
    }
    double res;
    if (m < 8) {
        res = 0;
        for (int i = 0; i < m; i++)
            res += sq[i];
    } else if (m <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++)
            r[j] = sq[j];
        int i;
        for (i = 8; i < m - (m % 8); i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += sq[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < m; i++)
            res += sq[i];
    } else {
        /* Beyond numpy's block size the grouping differs; a plain sum is close enough for
         * ranking fits (never reached with profiled clock sets). */
        res = 0;
        for (int i = 0; i < m; i++)
            res += sq[i];
    }
    return res / (double)m;
}

int kr__lt_fit(kr__lt_spec *spec, double unit_time_s, kr_error *err)
{
    int m = spec->ncand;
    double *t = malloc(sizeof(double) * (size_t)m * 2);
    if (t == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    double *y = t + m;
    for (int i = 0; i < m; i++) {
        t[i] = (double)spec->cand[i].quant_time;
        y[i] = spec->cand[i].cost;
    }
    static const double ag[3] = {1e1, 1e2, 1e3}, cg[3] = {1e1, 1e2, 1e3};
    static const double bk[6] = {0.01, 0.02, 0.03, 0.04, 0.05, 0.1};
    kr__lm_opts o = {1.49012e-8, 1.49012e-8, 0.0, 50000, 0.0, 100.0};
    fitdata fd = {m, t, y};
    double best = INFINITY, bx[3] = {INFINITY, INFINITY, INFINITY};
    int rc = KR_OK;
    for (int ia = 0; ia < 3 && rc == KR_OK; ia++)
        for (int ib = 0; ib < 6 && rc == KR_OK; ib++)
            for (int ic = 0; ic < 3 && rc == KR_OK; ic++) {
                double x[3] = {ag[ia], -bk[ib] * unit_time_s / 0.001, cg[ic]};
                double cov[9];
                int cov_ok = 0, nfev = 0;
                int info = kr__lm_minimize(residuals, &fd, m, 3, x, &o, &nfev, m > 3 ? cov : NULL, &cov_ok);
                if (info < 1 || info > 4) {
                    rc = kr_error_set(err, KR_EINFEASIBLE,
                                      "exponential fit from a=%g b=%g c=%g did not converge (MINPACK info %d after %d "
                                      "evaluations)",
                                      ag[ia], -bk[ib] * unit_time_s / 0.001, cg[ic], info, nfev);
                    break;
                }
                /* curve_fit scales cov_x by the residual variance; infinite when m <= n. */
                if (m <= 3 || !cov_ok)
                    continue;
                double ssq = 0;
                for (int i = 0; i < m; i++) {
                    double r = (x[0] * exp(x[1] * t[i]) + x[2]) - y[i];
                    ssq += r * r;
                }
                double s = ssq / (double)(m - 3);
                int inf = 0;
                for (int k = 0; k < 9; k++)
                    inf |= isinf(cov[k] * s);
                if (inf)
                    continue;
                double mse = np_mse(t, y, m, x[0], x[1], x[2]);
                if (isinf(mse) || x[0] < 0.0)
                    continue;
                if (mse < best) {
                    best = mse;
                    memcpy(bx, x, sizeof bx);
                }
            }
    free(t);
    if (rc)
        return rc;
    if (best == INFINITY)
        return kr_error_set(err, KR_EINFEASIBLE,
                            "no start of the exponential-fit grid gave an acceptable fit (%d candidates)", m);
    spec->a = bx[0];
    spec->b = bx[1];
    spec->c = bx[2];
    spec->mse = best;
    return KR_OK;
}
