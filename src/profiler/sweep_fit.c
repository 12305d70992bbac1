/*
 * sweep_fit.c — the comm clock law fitted to a comm sweep (kr_profiler_sweep_fit_law), what
 * `kareus calibrate` does with a log of `kareus profile --comm-sweep`.
 *
 * Design. The simulator (src/sim/model.c) gives both comm kernels a per-CTA rate that follows
 * the SM clock as x^e, x = f/f_max, e = comm_clock_exp; the kernels differ in how the rate
 * saturates in the CTA count s:
 *     tuned (and the single-GPU proxy):  B(s, f) = B_sat · (1 − exp(−s · c · x^e / B_sat))
 *     nccl:                              B(s, f) = min(B_sat, s · c · x^e)
 * and a collective alone takes t = alpha + k·S / B (k·S its bus bytes). The points of one kernel
 * on one collective form a group with its own c, B_sat and alpha; e is shared by all groups, as
 * the simulator shares it. The fit minimises Σ (log t_model − log t)² (relative errors, as the
 * harness fit does): for a given e each group is an independent 3-parameter least-squares problem
 * (MINPACK lmdif through src/solver/lmfit.c, parameters in logs so they stay positive), and e is
 * found by a profile over a grid (0.05..2.5 step 0.01) refined by golden-section search. The
 * profile also gives the range of e the data allow: where the residual sum of squares stays
 * within SSR_min · (1 + 3.84 / (m − p)) (the F-test bound for one parameter at 95 %, m points,
 * p parameters). Which clock a point ran at is the one it reports (read back on a GPU), so a
 * GPU that throttled is fitted at its real clock.
 *
 * What a single GPU pins: its proxy kernel's copies go to HBM, not over NVLink, so its c and
 * B_sat are not a link's (they are not written to the entry); only e, the clock law of
 * SM-issued copies, is carried over to the comm kernels (docs/calibration.md).
 */
#include "kareus/profiler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

#define E_LO 0.05
#define E_HI 2.5
#define E_STEP 0.01

/* One group's points and the exponent the inner fit holds. */
typedef struct group_fit {
    const kr_profiler_sweep_point *p;
    const int *idx; /* indices of the group's points in p */
    int n;
    int nccl;       /* 1: hard-min law, 0: exponential saturation */
    double fmax, e;
    double max_bw;
} group_fit;

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Model time of point i of the group at parameters x = (log c, log B_sat, log alpha). */
static double model_time(const group_fit *g, const double *x, const kr_profiler_sweep_point *q)
{
    double c = exp(clampd(x[0], -40, 80)), sat = exp(clampd(x[1], log(0.1 * g->max_bw), log(1e4 * g->max_bw)));
    double alpha = exp(clampd(x[2], log(1e-9), log(1e-1)));
    double xf = q->clock_mhz / g->fmax;
    double lin = q->ctas * c * pow(xf, g->e);
    double bw = g->nccl ? fmin(sat, lin) : sat * -expm1(-lin / sat);
    return alpha + kr_profiler_sweep_bus_bytes(q) / bw;
}

static int residuals(void *ud, int m, int n, const double *x, double *fvec)
{
    (void)n;
    const group_fit *g = ud;
    for (int i = 0; i < m; i++) {
        const kr_profiler_sweep_point *q = &g->p[g->idx[i]];
        double r = log(model_time(g, x, q)) - log(q->time_s);
        fvec[i] = isfinite(r) ? r : 1e3;
    }
    return 0;
}

/* Fits the group at its exponent g->e; x gets the parameters, returns the residual sum of squares. */
static double fit_group(group_fit *g, double *x)
{
    /* Start: the per-CTA rate from the point with the fewest CTAs at the highest clock, the
     * saturation just above the best bandwidth seen, alpha 10 µs. */
    const kr_profiler_sweep_point *s0 = NULL;
    for (int i = 0; i < g->n; i++) {
        const kr_profiler_sweep_point *q = &g->p[g->idx[i]];
        if (!s0 || q->ctas < s0->ctas || (q->ctas == s0->ctas && q->clock_mhz > s0->clock_mhz))
            s0 = q;
    }
    double bw0 = kr_profiler_sweep_bus_bytes(s0) / s0->time_s;
    x[0] = log(bw0 / (s0->ctas * pow(s0->clock_mhz / g->fmax, g->e)));
    x[1] = log(1.05 * g->max_bw);
    x[2] = log(1e-5);
    kr__lm_opts o = {1e-12, 1e-12, 0, 2000, 1e-7, 100};
    int nfev;
    double *fvec = malloc((size_t)g->n * sizeof *fvec);
    if (fvec == NULL)
        return NAN;
    kr__lm_minimize(residuals, g, g->n, 3, x, &o, &nfev, NULL, NULL);
    residuals(g, g->n, 3, x, fvec);
    double ssr = 0;
    for (int i = 0; i < g->n; i++)
        ssr += fvec[i] * fvec[i];
    free(fvec);
    return ssr;
}

typedef struct fit_ctx {
    group_fit g[24];
    int ng;
    double x[24][3];
} fit_ctx;

static double total_ssr(fit_ctx *F, double e)
{
    double s = 0;
    for (int k = 0; k < F->ng; k++) {
        F->g[k].e = e;
        s += fit_group(&F->g[k], F->x[k]);
    }
    return s;
}

static int same_group(const kr_profiler_sweep_group *G, const kr_profiler_sweep_point *q)
{
    return G->kernel == q->kernel && G->coll == q->coll && G->bytes == q->bytes && G->group == q->group &&
           G->ranks == q->ranks;
}

/* Groups the points by (kernel, collective, size, group size, ranks); idx holds the indices. */
static int make_groups(const kr_profiler_sweep_point *p, int n, double f_max, int *idx, fit_ctx *F,
                       kr_profiler_sweep_fit *out, kr_error *err)
{
    int used = 0;
    F->ng = 0;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < F->ng; k++) {
            const kr_profiler_sweep_group *G = &out->groups[k];
            if (same_group(G, &p[i]))
                break;
        }
        if (k == F->ng) {
            if (F->ng == (int)KR_ARRAY_LEN(F->g))
                return kr_error_set(err, KR_EINVAL, "comm fit: more than %d kernel x collective groups",
                                    (int)KR_ARRAY_LEN(F->g));
            kr_profiler_sweep_group *G = &out->groups[F->ng++];
            G->kernel = p[i].kernel;
            G->coll = p[i].coll;
            G->bytes = p[i].bytes;
            G->group = p[i].group;
            G->ranks = p[i].ranks;
        }
    }
    for (int k = 0; k < F->ng; k++) {
        group_fit *g = &F->g[k];
        const kr_profiler_sweep_group *G = &out->groups[k];
        g->p = p;
        g->idx = idx + used;
        g->nccl = G->kernel == KR_SWEEP_NCCL;
        g->fmax = f_max;
        for (int i = 0; i < n; i++)
            if (same_group(G, &p[i])) {
                idx[used++] = i;
                g->max_bw = fmax(g->max_bw, kr_profiler_sweep_bus_bytes(&p[i]) / p[i].time_s);
                g->n++;
            }
        out->groups[k].points = g->n;
    }
    /* A group of fewer than 4 points has as many parameters as points (3) or more: it fits any
     * exponent exactly and says nothing about it, so it is left out. */
    int kept = 0, npts = 0;
    for (int k = 0; k < F->ng; k++)
        if (F->g[k].n >= 4) {
            F->g[kept] = F->g[k];
            out->groups[kept++] = out->groups[k];
            npts += F->g[k].n;
        }
    F->ng = out->ngroups = kept;
    out->npoints = npts;
    if (kept == 0)
        return kr_error_set(err, KR_EINVAL, "comm fit: no kernel x collective group has 4 or more points");
    return KR_OK;
}

/* The range of e where the profile stays within bound, from the grid around the minimum. */
static void exp_range(const double *ssr, int ngrid, int best, double bound, double e, kr_profiler_sweep_fit *out)
{
    int lo = best, hi = best;
    while (lo > 0 && ssr[lo - 1] <= bound)
        lo--;
    while (hi + 1 < ngrid && ssr[hi + 1] <= bound)
        hi++;
    out->clock_exp_lo = fmin(e, E_LO + lo * E_STEP);
    out->clock_exp_hi = fmax(e, E_LO + hi * E_STEP);
}

/* Golden-section search for the least SSR within one grid step either side of the grid's best;
 * returns the exponent (the grid point if the search found nothing lower) and its SSR in *s. */
static double refine(fit_ctx *F, const double *ssr, int ngrid, int best, double *s)
{
    const double gr = 0.5 * (sqrt(5.0) - 1);
    double a = E_LO + fmax(0, best - 1) * E_STEP, b = E_LO + fmin(ngrid - 1, best + 1) * E_STEP;
    double c = b - gr * (b - a), d = a + gr * (b - a), fc = total_ssr(F, c), fd = total_ssr(F, d);
    for (int it = 0; it < 40 && b - a > 1e-6; it++) {
        if (fc < fd)
            b = d, d = c, fd = fc, c = b - gr * (b - a), fc = total_ssr(F, c);
        else
            a = c, c = d, fc = fd, d = a + gr * (b - a), fd = total_ssr(F, d);
    }
    double e = 0.5 * (a + b);
    *s = total_ssr(F, e);
    if (!(*s <= ssr[best]))
        e = E_LO + best * E_STEP, *s = total_ssr(F, e);
    return e;
}

int kr_profiler_sweep_fit_law(const kr_profiler_sweep_point *p, int n, double clock_max_mhz,
                              kr_profiler_sweep_fit *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int clocks = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = p[j].clock_mhz == p[i].clock_mhz;
        clocks += !seen;
    }
    if (n < 4 || clocks < 2)
        return kr_error_set(err, KR_EINVAL,
                            "comm fit: expected at least 4 points at 2 or more clocks, found %d points at %d clocks", n,
                            clocks);
    if (!(clock_max_mhz > 0))
        return kr_error_set(err, KR_EINVAL, "comm fit: clock_max_mhz: expected > 0, found %g", clock_max_mhz);
    int *idx = malloc((size_t)n * sizeof *idx);
    fit_ctx *F = calloc(1, sizeof *F);
    int ngrid = (int)lround((E_HI - E_LO) / E_STEP) + 1;
    double *ssr = malloc((size_t)ngrid * sizeof *ssr);
    int rc = idx && F && ssr ? KR_OK : kr_error_set(err, KR_ENOMEM, "comm fit: out of memory");
    if (rc == KR_OK)
        rc = make_groups(p, n, clock_max_mhz, idx, F, out, err);
    int best = 0;
    if (rc == KR_OK) {
        for (int k = 0; k < ngrid; k++) {
            ssr[k] = total_ssr(F, E_LO + k * E_STEP);
            if (isnan(ssr[k])) {
                rc = kr_error_set(err, KR_ENOMEM, "comm fit: out of memory");
                break;
            }
            if (ssr[k] < ssr[best])
                best = k;
        }
    }
    if (rc == KR_OK) {
        double s, e = refine(F, ssr, ngrid, best, &s);
        int m = out->npoints, dof = m - (3 * F->ng + 1);
        double bound = dof > 0 ? s * (1 + 3.84 / dof) : INFINITY;
        out->clock_exp = e;
        out->rms_log = sqrt(s / m);
        exp_range(ssr, ngrid, best, fmax(bound, s + 1e-300), e, out);
        for (int k = 0; k < F->ng; k++) { /* the groups' parameters at the fitted exponent */
            const double *x = F->x[k];
            out->groups[k].cta_Bps = exp(clampd(x[0], -40, 80));
            out->groups[k].sat_Bps = exp(clampd(x[1], log(0.1 * F->g[k].max_bw), log(1e4 * F->g[k].max_bw)));
            out->groups[k].alpha_s = exp(clampd(x[2], log(1e-9), log(1e-1)));
        }
    }
    free(ssr);
    free(F);
    free(idx);
    return rc;
}
