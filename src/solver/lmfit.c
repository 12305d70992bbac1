/*
 * lmfit.c — Levenberg–Marquardt least squares, the algorithm of MINPACK's lmdif.
 *
 * Why a port of this particular algorithm: lowtime fits its exponential cost model with scipy's
 * curve_fit, which for unbounded problems calls MINPACK lmdif. To reproduce lowtime's fitted
 * models (and through them its frontier), we follow the same algorithm step by step, so that
 * the same start reaches the same local minimum by the same path. Written from the published
 * description: J. J. Moré, "The Levenberg–Marquardt algorithm: implementation and theory",
 * Numerical Analysis, LNM 630 (1978), and the MINPACK-1 user guide (Moré, Garbow, Hillstrom,
 * ANL-80-74, 1980): scaled trust region, QR factorization with column pivoting, the LM
 * parameter from a safeguarded Newton iteration (at most 10 steps), Givens-based solution of
 * the damped system, and the overflow-safe Euclidean norm.
 *
 * Constants (all from the user guide): step-acceptance ratio 1e-4; trust-region update
 * thresholds 0.25 / 0.75 and factors 0.5 / 0.1; LM-parameter tolerance 0.1·Δ; enorm limits
 * rdwarf = 3.834e-20, rgiant = 1.304e19; column-norm recompute threshold 0.05.
 * Storage: the Jacobian is column-major (m rows), as in the Fortran original, so that the
 * order of floating-point operations (and hence the rounding) matches.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_int.h"

#define LM_MAXN 8
#define LM_MAXM 4096

/* Euclidean norm without destructive underflow or overflow (user guide, enorm). */
static double enorm(int n, const double *x)
{
    const double rdwarf = 3.834e-20, rgiant = 1.304e19;
    double s1 = 0, s2 = 0, s3 = 0, x1max = 0, x3max = 0;
    double agiant = rgiant / (double)n;
    for (int i = 0; i < n; i++) {
        double xabs = fabs(x[i]);
        if (xabs > rdwarf && xabs < agiant) {
            s2 += xabs * xabs;
        } else if (xabs <= rdwarf) {
            if (xabs > x3max) {
                double r = x3max / xabs;
                s3 = 1.0 + s3 * r * r;
                x3max = xabs;
            } else if (xabs != 0) {
                double r = xabs / x3max;
                s3 += r * r;
            }
        } else {
            if (xabs > x1max) {
                double r = x1max / xabs;
                s1 = 1.0 + s1 * r * r;
                x1max = xabs;
            } else {
                double r = xabs / x1max;
                s1 += r * r;
            }
        }
    }
    if (s1 != 0)
        return x1max * sqrt(s1 + (s2 / x1max) / x1max);
    if (s2 != 0) {
        if (s2 >= x3max)
            return sqrt(s2 * (1.0 + (x3max / s2) * (x3max * s3)));
        return sqrt(x3max * ((s2 / x3max) + (x3max * s3)));
    }
    return x3max * sqrt(s3);
}

/* Householder QR of the m×n column-major a with column pivoting: R's off-diagonal in a's upper
 * triangle, its diagonal in rdiag, column norms of the input in acnorm, permutation in ipvt. */
static void qrfac(int m, int n, double *a, int *ipvt, double *rdiag, double *acnorm, double *wa)
{
    const double epsmch = DBL_EPSILON;
#define A(i, j) a[(size_t)(j) * (size_t)m + (size_t)(i)]
    for (int j = 0; j < n; j++) {
        acnorm[j] = enorm(m, &A(0, j));
        rdiag[j] = acnorm[j];
        wa[j] = rdiag[j];
        ipvt[j] = j;
    }
    int minmn = m < n ? m : n;
    for (int j = 0; j < minmn; j++) {
        int kmax = j;
        for (int k = j; k < n; k++)
            if (rdiag[k] > rdiag[kmax])
                kmax = k;
        if (kmax != j) {
            for (int i = 0; i < m; i++) {
                double t = A(i, j);
                A(i, j) = A(i, kmax);
                A(i, kmax) = t;
            }
            rdiag[kmax] = rdiag[j];
            wa[kmax] = wa[j];
            int k = ipvt[j];
            ipvt[j] = ipvt[kmax];
            ipvt[kmax] = k;
        }
        double ajnorm = enorm(m - j, &A(j, j));
        if (ajnorm != 0) {
            if (A(j, j) < 0)
                ajnorm = -ajnorm;
            for (int i = j; i < m; i++)
                A(i, j) /= ajnorm;
            A(j, j) += 1.0;
            for (int k = j + 1; k < n; k++) {
                double sum = 0;
                for (int i = j; i < m; i++)
                    sum += A(i, j) * A(i, k);
                double temp = sum / A(j, j);
                for (int i = j; i < m; i++)
                    A(i, k) -= temp * A(i, j);
                if (rdiag[k] != 0) {
                    temp = A(j, k) / rdiag[k];
                    double v = 1.0 - temp * temp;
                    rdiag[k] *= sqrt(v > 0 ? v : 0);
                    double r = rdiag[k] / wa[k];
                    if (0.05 * (r * r) <= epsmch) {
                        rdiag[k] = enorm(m - j - 1, &A(j + 1, k));
                        wa[k] = rdiag[k];
                    }
                }
            }
        }
        rdiag[j] = -ajnorm;
    }
#undef A
}

/* Solves the damped least-squares system for (R, D) with Givens rotations (user guide, qrsolv).
 * r is n×n column-major with leading dimension ldr. */
static void qrsolv(int n, double *r, int ldr, const int *ipvt, const double *diag, const double *qtb, double *x,
                   double *sdiag, double *wa)
{
#define R(i, j) r[(size_t)(j) * (size_t)ldr + (size_t)(i)]
    for (int j = 0; j < n; j++) {
        for (int i = j; i < n; i++)
            R(i, j) = R(j, i);
        x[j] = R(j, j);
        wa[j] = qtb[j];
    }
    for (int j = 0; j < n; j++) {
        int l = ipvt[j];
        if (diag[l] != 0) {
            for (int k = j; k < n; k++)
                sdiag[k] = 0;
            sdiag[j] = diag[l];
            double qtbpj = 0;
            for (int k = j; k < n; k++) {
                if (sdiag[k] == 0)
                    continue;
                double sn, cs;
                if (fabs(R(k, k)) < fabs(sdiag[k])) {
                    double cotan = R(k, k) / sdiag[k];
                    sn = 0.5 / sqrt(0.25 + 0.25 * cotan * cotan);
                    cs = sn * cotan;
                } else {
                    double tn = sdiag[k] / R(k, k);
                    cs = 0.5 / sqrt(0.25 + 0.25 * tn * tn);
                    sn = cs * tn;
                }
                R(k, k) = cs * R(k, k) + sn * sdiag[k];
                double temp = cs * wa[k] + sn * qtbpj;
                qtbpj = -sn * wa[k] + cs * qtbpj;
                wa[k] = temp;
                for (int i = k + 1; i < n; i++) {
                    temp = cs * R(i, k) + sn * sdiag[i];
                    sdiag[i] = -sn * R(i, k) + cs * sdiag[i];
                    R(i, k) = temp;
                }
            }
        }
        sdiag[j] = R(j, j);
        R(j, j) = x[j];
    }
    int nsing = n;
    for (int j = 0; j < n; j++) {
        if (sdiag[j] == 0 && nsing == n)
            nsing = j;
        if (nsing < n)
            wa[j] = 0;
    }
    for (int k = 0; k < nsing; k++) {
        int j = nsing - 1 - k;
        double sum = 0;
        for (int i = j + 1; i < nsing; i++)
            sum += R(i, j) * wa[i];
        wa[j] = (wa[j] - sum) / sdiag[j];
    }
    for (int j = 0; j < n; j++)
        x[ipvt[j]] = wa[j];
#undef R
}

/* Levenberg–Marquardt parameter for trust radius delta (user guide, lmpar). */
static void lmpar(int n, double *r, int ldr, const int *ipvt, const double *diag, const double *qtb, double delta,
                  double *par, double *x, double *sdiag, double *wa1, double *wa2)
{
    const double dwarf = DBL_MIN;
#define R(i, j) r[(size_t)(j) * (size_t)ldr + (size_t)(i)]
    int nsing = n;
    for (int j = 0; j < n; j++) {
        wa1[j] = qtb[j];
        if (R(j, j) == 0 && nsing == n)
            nsing = j;
        if (nsing < n)
            wa1[j] = 0;
    }
    for (int k = 0; k < nsing; k++) {
        int j = nsing - 1 - k;
        wa1[j] /= R(j, j);
        double temp = wa1[j];
        for (int i = 0; i < j; i++)
            wa1[i] -= R(i, j) * temp;
    }
    for (int j = 0; j < n; j++)
        x[ipvt[j]] = wa1[j];
    int iter = 0;
    for (int j = 0; j < n; j++)
        wa2[j] = diag[j] * x[j];
    double dxnorm = enorm(n, wa2);
    double fp = dxnorm - delta;
    if (fp <= 0.1 * delta) {
        *par = 0;
        return;
    }
    double parl = 0;
    if (nsing >= n) {
        for (int j = 0; j < n; j++) {
            int l = ipvt[j];
            wa1[j] = diag[l] * (wa2[l] / dxnorm);
        }
        for (int j = 0; j < n; j++) {
            double sum = 0;
            for (int i = 0; i < j; i++)
                sum += R(i, j) * wa1[i];
            wa1[j] = (wa1[j] - sum) / R(j, j);
        }
        double temp = enorm(n, wa1);
        parl = ((fp / delta) / temp) / temp;
    }
    for (int j = 0; j < n; j++) {
        double sum = 0;
        for (int i = 0; i <= j; i++)
            sum += R(i, j) * qtb[i];
        wa1[j] = sum / diag[ipvt[j]];
    }
    double gnorm = enorm(n, wa1);
    double paru = gnorm / delta;
    if (paru == 0)
        paru = dwarf / (delta < 0.1 ? delta : 0.1);
    if (*par < parl)
        *par = parl;
    if (*par > paru)
        *par = paru;
    if (*par == 0)
        *par = gnorm / dxnorm;
    for (;;) {
        iter++;
        if (*par == 0)
            *par = dwarf > 0.001 * paru ? dwarf : 0.001 * paru;
        double temp = sqrt(*par);
        for (int j = 0; j < n; j++)
            wa1[j] = temp * diag[j];
        qrsolv(n, r, ldr, ipvt, wa1, qtb, x, sdiag, wa2);
        for (int j = 0; j < n; j++)
            wa2[j] = diag[j] * x[j];
        dxnorm = enorm(n, wa2);
        temp = fp;
        fp = dxnorm - delta;
        if (fabs(fp) <= 0.1 * delta || (parl == 0 && fp <= temp && temp < 0) || iter == 10)
            break;
        for (int j = 0; j < n; j++) {
            int l = ipvt[j];
            wa1[j] = diag[l] * (wa2[l] / dxnorm);
        }
        for (int j = 0; j < n; j++) {
            wa1[j] /= sdiag[j];
            temp = wa1[j];
            for (int i = j + 1; i < n; i++)
                wa1[i] -= R(i, j) * temp;
        }
        temp = enorm(n, wa1);
        double parc = ((fp / delta) / temp) / temp;
        if (fp > 0 && *par > parl)
            parl = *par;
        if (fp < 0 && *par < paru)
            paru = *par;
        *par = parl > *par + parc ? parl : *par + parc;
    }
#undef R
}

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

int kr__lm_minimize(kr__lm_fn fn, void *ud, int m, int n, double *x, const kr__lm_opts *o, int *nfev_out,
                    double *cov, int *cov_ok)
{
    const double epsmch = DBL_EPSILON;
    if (cov_ok)
        *cov_ok = 0;
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
    int ipvt[LM_MAXN];
    int info = 0, nfev = 0;
    double par = 0, delta = 0, xnorm = 0;
#define J(i, j) fjac[(size_t)(j) * (size_t)m + (size_t)(i)]
    nfev = 1;
    if (fn(ud, m, n, x, fvec)) {
        info = -1;
        goto done;
    }
    double fnorm = enorm(m, fvec);
    int iter = 1;
    double eps = sqrt(o->epsfcn > epsmch ? o->epsfcn : epsmch);
    for (;;) {
        /* Forward-difference Jacobian. */
        for (int j = 0; j < n; j++) {
            double temp = x[j];
            double h = eps * fabs(temp);
            if (h == 0)
                h = eps;
            x[j] = temp + h;
            int bad = fn(ud, m, n, x, wa4);
            x[j] = temp;
            if (bad) {
                info = -1;
                goto done;
            }
            for (int i = 0; i < m; i++)
                J(i, j) = (wa4[i] - fvec[i]) / h;
        }
        nfev += n;
        qrfac(m, n, fjac, ipvt, wa1, wa2, wa3);
        if (iter == 1) {
            for (int j = 0; j < n; j++) {
                diag[j] = wa2[j];
                if (wa2[j] == 0)
                    diag[j] = 1.0;
            }
            for (int j = 0; j < n; j++)
                wa3[j] = diag[j] * x[j];
            xnorm = enorm(n, wa3);
            delta = o->factor * xnorm;
            if (delta == 0)
                delta = o->factor;
        }
        /* qtf = Qᵀ fvec (first n components). */
        for (int i = 0; i < m; i++)
            wa4[i] = fvec[i];
        for (int j = 0; j < n; j++) {
            if (J(j, j) != 0) {
                double sum = 0;
                for (int i = j; i < m; i++)
                    sum += J(i, j) * wa4[i];
                double temp = -sum / J(j, j);
                for (int i = j; i < m; i++)
                    wa4[i] += J(i, j) * temp;
            }
            J(j, j) = wa1[j];
            qtf[j] = wa4[j];
        }
        double gnorm = 0;
        if (fnorm != 0) {
            for (int j = 0; j < n; j++) {
                int l = ipvt[j];
                if (wa2[l] != 0) {
                    double sum = 0;
                    for (int i = 0; i <= j; i++)
                        sum += J(i, j) * (qtf[i] / fnorm);
                    double g = fabs(sum / wa2[l]);
                    if (g > gnorm)
                        gnorm = g;
                }
            }
        }
        if (gnorm <= o->gtol)
            info = 4;
        if (info != 0)
            goto done;
        for (int j = 0; j < n; j++)
            if (wa2[j] > diag[j])
                diag[j] = wa2[j];
        double ratio;
        do {
            lmpar(n, fjac, m, ipvt, diag, qtf, delta, &par, wa1, wa2, wa3, wa4);
            for (int j = 0; j < n; j++) {
                wa1[j] = -wa1[j];
                wa2[j] = x[j] + wa1[j];
                wa3[j] = diag[j] * wa1[j];
            }
            double pnorm = enorm(n, wa3);
            if (iter == 1 && pnorm < delta)
                delta = pnorm;
            nfev++;
            if (fn(ud, m, n, wa2, wa4)) {
                info = -1;
                goto done;
            }
            double fnorm1 = enorm(m, wa4);
            double actred = -1.0;
            if (0.1 * fnorm1 < fnorm) {
                double r = fnorm1 / fnorm;
                actred = 1.0 - r * r;
            }
            for (int j = 0; j < n; j++) {
                wa3[j] = 0;
                double temp = wa1[ipvt[j]];
                for (int i = 0; i <= j; i++)
                    wa3[i] += J(i, j) * temp;
            }
            double temp1 = enorm(n, wa3) / fnorm;
            double temp2 = (sqrt(par) * pnorm) / fnorm;
            double prered = temp1 * temp1 + temp2 * temp2 / 0.5;
            double dirder = -(temp1 * temp1 + temp2 * temp2);
            ratio = 0;
            if (prered != 0)
                ratio = actred / prered;
            if (ratio <= 0.25) {
                double temp;
                if (actred >= 0)
                    temp = 0.5;
                else
                    temp = 0.5 * dirder / (dirder + 0.5 * actred);
                if (0.1 * fnorm1 >= fnorm || temp < 0.1)
                    temp = 0.1;
                delta = temp * (delta < pnorm / 0.1 ? delta : pnorm / 0.1);
                par = par / temp;
            } else if (par == 0 || ratio >= 0.75) {
                delta = pnorm / 0.5;
                par = 0.5 * par;
            }
            if (ratio >= 1e-4) {
                for (int j = 0; j < n; j++) {
                    x[j] = wa2[j];
                    wa2[j] = diag[j] * x[j];
                }
                for (int i = 0; i < m; i++)
                    fvec[i] = wa4[i];
                xnorm = enorm(n, wa2);
                fnorm = fnorm1;
                iter++;
            }
            if (fabs(actred) <= o->ftol && prered <= o->ftol && 0.5 * ratio <= 1)
                info = 1;
            if (delta <= o->xtol * xnorm)
                info = 2;
            if (fabs(actred) <= o->ftol && prered <= o->ftol && 0.5 * ratio <= 1 && info == 2)
                info = 3;
            if (info != 0)
                goto done;
            if (nfev >= o->maxfev)
                info = 5;
            if (fabs(actred) <= epsmch && prered <= epsmch && 0.5 * ratio <= 1)
                info = 6;
            if (delta <= epsmch * xnorm)
                info = 7;
            if (gnorm <= epsmch)
                info = 8;
            if (info != 0)
                goto done;
        } while (ratio < 1e-4);
    }
done:
    if (info > 0 && cov != NULL) {
        /* R with the permutation undone: covariance (RᵀR)⁻¹ in the original parameter order
         * (what scipy's leastsq returns as cov_x). fjac holds R in its upper triangle, with
         * the diagonal restored above (J(j,j) = rdiag). */
        double rp[LM_MAXN * LM_MAXN] = {0};
        for (int j = 0; j < n; j++)
            for (int i = 0; i <= j; i++)
                rp[i * n + ipvt[j]] = J(i, j);
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
#undef J
    if (nfev_out)
        *nfev_out = nfev;
    free(fjac);
    free(fvec);
    free(wa4);
    return info;
}
