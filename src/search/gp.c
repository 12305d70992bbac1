/*
 * gp.c — Gaussian-process regression for the bo strategy (gp.h).
 *
 * Model. y = m + f(x, c) + ε with f ~ GP(0, σ² k), ε ~ N(0, σ² g):
 *   k((x, c), (x', c')) = M52(r) · (c == c' ? 1 : ρ),   r² = Σ_d ((x_d − x'_d) / ℓ_d)²,
 *   M52(r) = (1 + √5 r + 5 r² / 3) exp(−√5 r)   (Matérn ν = 5/2, Rasmussen & Williams 2006,
 *   eq. 4.17): twice differentiable, so it follows the kinks of max(compute, comm) better than
 *   a squared exponential. The compound-symmetry factor shares one smooth trend across
 *   categories while letting each keep its own offsets (ρ is fitted).
 * Targets are standardised (mean m and spread removed); σ² is profiled out of the marginal
 * likelihood: σ̂² = yᵀ A⁻¹ y / n with A = K + g I, so
 *   log L(ℓ, ρ, g) = −(n/2) log σ̂² − Σ_i log L_ii − n/2     (L = chol(A)).
 * Hyperparameters maximise it by a coarse grid (cold start) followed by a deterministic
 * coordinate search in log ℓ, logit ρ, log g with halving steps; a warm start (the previous
 * batch's values) skips the grid. Bounds: ℓ ∈ [0.03, 20] (features live in [0, 1]), ρ ∈ [0,
 * 0.995], g ∈ [1e-8, 0.3]. Cholesky and triangular solves are LAPACKE's (dpotrf, dtrtrs,
 * dpotrs). Posterior: mean = m + s·kᵀα, var = s²σ²(1 − vᵀv) with v = L⁻¹k (s = target spread).
 */
#include "gp.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define LS_MIN 0.03
#define LS_MAX 20.0
#define RHO_MAX 0.995
#define NUG_MIN 1e-8
#define NUG_MAX 0.3

void kr__gp_free(kr__gp *gp)
{
    free(gp->X);
    free(gp->cat);
    free(gp->L);
    free(gp->alpha);
    memset(gp, 0, sizeof *gp);
}

static double m52(double r)
{
    const double s5 = 2.23606797749979;
    return (1.0 + s5 * r + 5.0 / 3.0 * r * r) * exp(-s5 * r);
}

static double corr_h(const kr__gp_hyper *h, int d, const double *xa, int ca, const double *xb, int cb)
{
    double r2 = 0;
    for (int i = 0; i < d; i++) {
        double z = (xa[i] - xb[i]) / h->ls[i];
        r2 += z * z;
    }
    double k = m52(sqrt(r2));
    return ca == cb ? k : h->rho * k;
}

double kr__gp_corr(const kr__gp *gp, const double *xa, int ca, const double *xb, int cb)
{
    return corr_h(&gp->h, gp->d, xa, ca, xb, cb);
}

/* Factorises A = K + gI into gp->L and solves alpha; returns the profiled log-likelihood or
 * -inf if A is not positive definite. ys is the standardised target. */
static double factor(kr__gp *gp, const kr__gp_hyper *h, const double *ys)
{
    int n = gp->n, d = gp->d;
    double *A = gp->L;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            A[i * n + j] = corr_h(h, d, gp->X + i * d, gp->cat[i], gp->X + j * d, gp->cat[j]);
        A[i * n + i] = 1.0 + h->nugget;
        for (int j = i + 1; j < n; j++)
            A[i * n + j] = 0.0;
    }
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, A, n) != 0)
        return -INFINITY;
    memcpy(gp->alpha, ys, (size_t)n * sizeof *ys);
    if (LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n, 1, A, n, gp->alpha, 1) != 0)
        return -INFINITY;
    double quad = 0, logdet = 0;
    for (int i = 0; i < n; i++) {
        quad += ys[i] * gp->alpha[i];
        logdet += log(A[i * n + i]);
    }
    if (!(quad > 0))
        quad = 1e-300;
    gp->sigma2 = quad / n;
    return -0.5 * n * log(gp->sigma2) - logdet - 0.5 * n;
}

/* Coordinates of the search: log ℓ_i, logit(ρ/RHO_MAX), log g. */
static int ncoords(const kr__gp *gp, int multi_cat)
{
    return gp->d + (multi_cat ? 1 : 0) + 1;
}

static void to_coords(const kr__gp_hyper *h, int d, int multi_cat, double *z)
{
    int k = 0;
    for (int i = 0; i < d; i++)
        z[k++] = log(h->ls[i]);
    if (multi_cat) {
        double r = fmin(fmax(h->rho / RHO_MAX, 1e-4), 1 - 1e-4);
        z[k++] = log(r / (1 - r));
    }
    z[k] = log(h->nugget);
}

static void from_coords(const double *z, int d, int multi_cat, kr__gp_hyper *h)
{
    int k = 0;
    for (int i = 0; i < d; i++)
        h->ls[i] = fmin(fmax(exp(z[k++]), LS_MIN), LS_MAX);
    if (multi_cat)
        h->rho = RHO_MAX / (1 + exp(-z[k++]));
    h->nugget = fmin(fmax(exp(z[k]), NUG_MIN), NUG_MAX);
}

/* Standardises y into ys (and sets gp->ymean, gp->ysd). */
static void standardise(kr__gp *gp, const double *y, int n, double *ys)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    double sd = sqrt(var / n);
    if (!(sd > 1e-12 * (1 + fabs(mean))))
        sd = 1e-12 * (1 + fabs(mean)) + 1e-300;
    gp->ymean = mean;
    gp->ysd = sd;
    for (int i = 0; i < n; i++)
        ys[i] = (y[i] - mean) / sd;
}

/* Cold start: a coarse grid (3^d length scales × 2 correlations × 2 nuggets); improves on
 * (*best, *best_ll). */
static void grid_start(kr__gp *gp, int multi_cat, const double *ys, kr__gp_hyper *best, double *best_ll)
{
    static const double lsg[] = {0.15, 0.4, 1.2}, rhog[] = {0.5, 0.9}, nugg[] = {1e-6, 1e-3};
    int d = gp->d, combos = 1;
    for (int i = 0; i < d; i++)
        combos *= 3;
    for (int c = 0; c < combos; c++)
        for (int r = 0; r < (multi_cat ? 2 : 1); r++)
            for (int g = 0; g < 2; g++) {
                kr__gp_hyper h;
                memset(&h, 0, sizeof h);
                for (int i = 0, cc = c; i < d; i++, cc /= 3)
                    h.ls[i] = lsg[cc % 3];
                h.rho = multi_cat ? rhog[r] : 0.5;
                h.nugget = nugg[g];
                double ll = factor(gp, &h, ys);
                if (ll > *best_ll) {
                    *best_ll = ll;
                    *best = h;
                }
            }
}

/* Coordinate search with halving steps from (*best, *best_ll), at most 80 evaluations. */
static void coord_search(kr__gp *gp, int multi_cat, const double *ys, double step, kr__gp_hyper *best,
                         double *best_ll)
{
    int d = gp->d, nz = ncoords(gp, multi_cat);
    double z[KR_GP_MAX_DIM + 2];
    to_coords(best, d, multi_cat, z);
    int evals = 0;
    while (step > 0.08 && evals < 80) {
        int moved = 0;
        for (int k = 0; k < nz; k++)
            for (int dir = -1; dir <= 1; dir += 2) {
                double zt[KR_GP_MAX_DIM + 2];
                memcpy(zt, z, sizeof zt);
                zt[k] += dir * step;
                kr__gp_hyper h = *best;
                from_coords(zt, d, multi_cat, &h);
                double ll = factor(gp, &h, ys);
                evals++;
                if (ll > *best_ll + 1e-9) {
                    *best_ll = ll;
                    *best = h;
                    to_coords(best, d, multi_cat, z);
                    moved = 1;
                    break;
                }
            }
        if (!moved)
            step *= 0.5;
    }
}

int kr__gp_fit(kr__gp *gp, const double *X, const int *cat, const double *y, int n, int d, const kr__gp_hyper *start,
               kr_error *err)
{
    if (n < 2 || d < 1 || d > KR_GP_MAX_DIM)
        return kr_error_set(err, KR_EINVAL, "gp: expected at least 2 points and 1..%d features, found %d, %d",
                            KR_GP_MAX_DIM, n, d);
    double *nX = realloc(gp->X, (size_t)n * d * sizeof *nX);
    if (nX)
        gp->X = nX;
    int *nc = realloc(gp->cat, (size_t)n * sizeof *nc);
    if (nc)
        gp->cat = nc;
    double *nL = realloc(gp->L, (size_t)n * n * sizeof *nL);
    if (nL)
        gp->L = nL;
    double *na = realloc(gp->alpha, (size_t)n * sizeof *na);
    if (na)
        gp->alpha = na;
    double *ys = malloc((size_t)n * sizeof *ys);
    if (!nX || !nc || !nL || !na || !ys) {
        free(ys);
        return kr_error_set(err, KR_ENOMEM, "gp: out of memory for %d points", n);
    }
    gp->n = n;
    gp->d = d;
    memcpy(gp->X, X, (size_t)n * d * sizeof *X);
    memcpy(gp->cat, cat, (size_t)n * sizeof *cat);
    standardise(gp, y, n, ys);
    int multi_cat = 0;
    for (int i = 1; i < n; i++)
        multi_cat |= cat[i] != cat[0];
    kr__gp_hyper best;
    memset(&best, 0, sizeof best);
    double best_ll = -INFINITY;
    if (start) {
        best = *start;
        best_ll = factor(gp, &best, ys);
    }
    if (start == NULL || !isfinite(best_ll))
        grid_start(gp, multi_cat, ys, &best, &best_ll);
    coord_search(gp, multi_cat, ys, start ? 0.35 : 0.7, &best, &best_ll);
    /* Refactor at the best point (the search leaves the last trial in L). If even that fails,
     * raise the nugget until it factors. */
    double ll = factor(gp, &best, ys);
    while (!isfinite(ll) && best.nugget < NUG_MAX) {
        best.nugget = fmin(best.nugget * 10 + 1e-8, NUG_MAX);
        ll = factor(gp, &best, ys);
    }
    free(ys);
    if (!isfinite(ll))
        return kr_error_set(err, KR_EINTERNAL, "gp: covariance matrix of %d points is not positive definite", n);
    gp->h = best;
    gp->loglik = ll;
    return KR_OK;
}

int kr__gp_predict(const kr__gp *gp, const double *Xc, const int *catc, int m, double *mean, double *var, double *V,
                   kr_error *err)
{
    enum { CHUNK = 256 };
    int n = gp->n, d = gp->d;
    double *K = malloc((size_t)n * CHUNK * sizeof *K);
    if (K == NULL)
        return kr_error_set(err, KR_ENOMEM, "gp: out of memory predicting %d points", m);
    double s2 = gp->ysd * gp->ysd * gp->sigma2;
    for (int c0 = 0; c0 < m; c0 += CHUNK) {
        int cm = KR_MIN(CHUNK, m - c0);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < cm; j++)
                K[i * cm + j] = corr_h(&gp->h, d, gp->X + i * d, gp->cat[i], Xc + (size_t)(c0 + j) * d, catc[c0 + j]);
        for (int j = 0; j < cm; j++) {
            double mu = 0;
            for (int i = 0; i < n; i++)
                mu += K[i * cm + j] * gp->alpha[i];
            mean[c0 + j] = gp->ymean + gp->ysd * mu;
        }
        LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, 'L', 'N', 'N', n, cm, gp->L, n, K, cm);
        for (int j = 0; j < cm; j++) {
            double q = 0;
            for (int i = 0; i < n; i++) {
                double v = K[i * cm + j];
                q += v * v;
                if (V)
                    V[(size_t)(c0 + j) * n + i] = v;
            }
            double lat = 1.0 - q;
            var[c0 + j] = s2 * (lat > 1e-12 ? lat : 1e-12);
        }
    }
    free(K);
    return KR_OK;
}

double kr__gp_post_cov(const kr__gp *gp, const double *xa, int ca, const double *va, const double *xb, int cb,
                       const double *vb)
{
    double dot = 0;
    for (int i = 0; i < gp->n; i++)
        dot += va[i] * vb[i];
    return gp->ysd * gp->ysd * gp->sigma2 * (kr__gp_corr(gp, xa, ca, xb, cb) - dot);
}

double kr__gp_noise_var(const kr__gp *gp)
{
    return gp->ysd * gp->ysd * gp->sigma2 * gp->h.nugget;
}
