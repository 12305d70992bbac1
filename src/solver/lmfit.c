/*
 * lmfit.c — Levenberg–Marquardt least squares: MINPACK's lmdif, through Debian's libcminpack.
 *
 * Why lmdif: lowtime fits its exponential cost model with scipy's curve_fit, which for
 * unbounded problems calls MINPACK lmdif; to reproduce lowtime's fitted models (and through
 * them its frontier), the same algorithm must take the same path from the same start.
 * libcminpack is the C version of that MINPACK (J. J. Moré, B. S. Garbow, K. E. Hillstrom,
 * MINPACK-1 user guide, ANL-80-74, 1980; C translation by F. Devernay, packaged by Debian as
 * libcminpack-dev). Until 2026-12 this file held our own port of lmdif (541 lines); on the
 * golden fits (bench/bench_lmfit.c: 8 fits × 54 starts of tests/golden/lowtime) both give
 * bit-identical parameters and the same number of evaluations, in the same time, so we use
 * the maintained library (docs/solver.md, "Least squares").
 *
 * What stays here: the covariance (RᵀR)⁻¹ scipy's leastsq reports as cov_x, which curve_fit
 * uses to reject a start (an infinite covariance), computed from lmdif's R and pivots as
 * scipy does (invert below); lmdif's pivots are 1-based, as in the Fortran original.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cminpack.h>

#include "solver/solver_internal.h"

#define LM_MAXN 8
#define LM_MAXM 4096

/* Inverts the n×n symmetric positive matrix m (row-major) by Gauss–Jordan with partial
 * pivoting; returns 0, or -1 when a pivot is exactly zero (numpy's inv raises then). */
static int invert(int n, double *mat)
{
    double aug[LM_MAXN][2 * LM_MAXN];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2 * n; j++)
            aug[i][j] = j < n ? mat[i * n + j] : (j - n == i ? 1.0 : 0.0);
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(aug[i][c]) > fabs(aug[p][c]))
                p = i;
        if (aug[p][c] == 0)
            return -1;
        if (p != c)
            for (int j = 0; j < 2 * n; j++) {
                double t = aug[p][j];
                aug[p][j] = aug[c][j];
                aug[c][j] = t;
            }
        double piv = aug[c][c];
        for (int j = 0; j < 2 * n; j++)
            aug[c][j] /= piv;
        for (int i = 0; i < n; i++)
            if (i != c && aug[i][c] != 0) {
                double f = aug[i][c];
                for (int j = 0; j < 2 * n; j++)
                    aug[i][j] -= f * aug[c][j];
            }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            mat[i * n + j] = aug[i][n + j];
    return 0;
}

typedef struct trampoline {
    kr__lm_fn fn;
    void *ud;
} trampoline;

/* cminpack's callback: a negative return stops lmdif, which then returns it as its info. */
static int call_fn(void *p, int m, int n, const double *x, double *fvec, int iflag)
{
    const trampoline *t = p;
    (void)iflag;
    return t->fn(t->ud, m, n, x, fvec) ? -1 : 0;
}

int kr__lm_minimize(kr__lm_fn fn, void *ud, int m, int n, double *x, const kr__lm_opts *o, int *nfev_out,
                    double *cov, int *cov_ok)
{
    if (cov_ok)
        *cov_ok = 0;
    if (nfev_out)
        *nfev_out = 0;
    if (n < 1 || n > LM_MAXN || m < n || m > LM_MAXM || o->ftol < 0 || o->xtol < 0 || o->gtol < 0 || o->maxfev <= 0 ||
        o->factor <= 0)
        return 0;
    double *fjac = malloc(sizeof(double) * (size_t)m * (size_t)n);
    double *fvec = malloc(sizeof(double) * (size_t)m);
    double *wa4 = malloc(sizeof(double) * (size_t)m);
    if (fjac == NULL || fvec == NULL || wa4 == NULL) {
        free(fjac);
        free(fvec);
        free(wa4);
        return 0;
    }
    double diag[LM_MAXN], qtf[LM_MAXN], wa1[LM_MAXN], wa2[LM_MAXN], wa3[LM_MAXN];
    int ipvt[LM_MAXN], nfev = 0;
    trampoline t = {fn, ud};
    /* mode 1: lmdif scales the variables itself; nprint 0: no progress callbacks. */
    int info = lmdif(call_fn, &t, m, n, x, fvec, o->ftol, o->xtol, o->gtol, o->maxfev, o->epsfcn, diag, 1, o->factor,
                     0, &nfev, fjac, m, ipvt, qtf, wa1, wa2, wa3, wa4);
    if (info < 0)
        info = -1;
    if (info > 0 && cov != NULL) {
        /* R with the permutation undone: covariance (RᵀR)⁻¹ in the original parameter order
         * (what scipy's leastsq returns as cov_x). fjac holds R in its upper triangle. */
        double rp[LM_MAXN * LM_MAXN] = {0};
        for (int j = 0; j < n; j++)
            for (int i = 0; i <= j; i++)
                rp[i * n + (ipvt[j] - 1)] = fjac[(size_t)j * (size_t)m + (size_t)i];
        double rtr[LM_MAXN * LM_MAXN];
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                double s = 0;
                for (int k = 0; k < n; k++)
                    s += rp[k * n + a] * rp[k * n + b];
                rtr[a * n + b] = s;
            }
        if (invert(n, rtr) == 0) {
            memcpy(cov, rtr, sizeof(double) * (size_t)n * (size_t)n);
            if (cov_ok)
                *cov_ok = 1;
        }
    }
    if (nfev_out)
        *nfev_out = nfev;
    free(fjac);
    free(fvec);
    free(wa4);
    return info;
}
