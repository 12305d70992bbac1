/*
 * bo_calib.c — calibrating a simulator prior's GPU constants to the points measured so far
 * (bo.c, docs/search.md: "Calibrated prior"). The prior's GPU has constants with a stated
 * uncertainty (kr_gpu_param_uncertainty); a measured GPU differs from the simulator mostly
 * through them, and the same constants move both the time and the energy of every
 * configuration. So before each fit the search finds the relative changes θ of those constants
 * that best explain the measured times and total energies together (a maximum a posteriori
 * estimate on the log scale: each θ_j ~ N(0, u_j²/3), the variance of a constant uniform within
 * ± its uncertainty, a free offset per quantity and the noise picked by the evidence of the
 * fit's first linearised step; Levenberg–Marquardt on the simulator itself), then predicts every
 * configuration with the simulator at θ (kr__search_prior_compute). The line, the sensitivity
 * features and the residual GP (bo.c) then model what the calibrated simulator still gets wrong.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "search_internal.h"

#define CAL_ITERS 30     /* Levenberg–Marquardt steps at most, */
#define CAL_ITERS_WARM 8 /* or this many from the last batch's estimate */
#define CAL_POINTS 64    /* points the fit uses at most */
#define CAL_STEP 0.05    /* central-difference step, a fraction of each constant's uncertainty */
#define CAL_RANGE 2.0    /* θ_j kept within ± this many times its uncertainty */
#define CAL_TOL 1e-4     /* converged when no θ_j moves by more than this fraction of u_j, */
#define CAL_FTOL 1e-6    /* or the objective falls by less than this fraction */

/* log time and log total energy of configuration idx on the prior a (0 on success). */
static int predict_log(const kr__prior_at *a, long idx, double *lt, double *le)
{
    kr_config c;
    kr_measurement m;
    kr_error e = {0};
    if (kr__prior_at_measure(a, idx, &c, &m, &e) || !(m.time_s > 0) || !(m.energy_j > 0) || !isfinite(m.time_s) ||
        !isfinite(m.energy_j))
        return -1;
    *lt = log(m.time_s);
    *le = log(m.energy_j);
    return 0;
}

/* Residuals r[0..2n) (time block, then energy block) of the points at θ, each block centred
 * (the free offsets); returns the sum of squares, or INFINITY where the simulator fails. */
static double residuals(const kr__search *s, const long *ix, const double *yt, const double *ye, int n,
                        const double *theta, double *r)
{
    kr__prior_at a;
    kr__prior_at_init(&a, s, theta);
    double mt = 0, me = 0;
    for (int i = 0; i < n; i++) {
        double lt, le;
        if (predict_log(&a, ix[i], &lt, &le))
            return INFINITY;
        r[i] = yt[i] - lt;
        r[n + i] = ye[i] - le;
        mt += r[i] / n;
        me += r[n + i] / n;
    }
    double ss = 0;
    for (int i = 0; i < n; i++) {
        r[i] -= mt;
        r[n + i] -= me;
        ss += r[i] * r[i] + r[n + i] * r[n + i];
    }
    return ss;
}

/* The penalised objective at θ: ss/σ² + Σ θ_j² · 3/u_j². */
static double objective(const kr__search *s, double ss, double s2, const double *theta)
{
    double v = ss / s2;
    for (int j = 0; j < s->nsens; j++) {
        double u = kr_gpu_param_uncertainty(s->sens_param[j]);
        v += theta[j] * theta[j] * 3 / (u * u);
    }
    return v;
}

/* Solves the P × P system (M + mu·diag(M)) x = g (M symmetric positive definite, row-major;
 * W scratch P × P). Returns 0 on success. */
static int solve_damped(const double *M, double mu, const double *g, int P, double *W, double *x)
{
    size_t pd = (size_t)P;
    memcpy(W, M, sizeof(double) * pd * pd);
    for (int a = 0; a < P; a++)
        W[(size_t)a * pd + (size_t)a] *= 1 + mu;
    memcpy(x, g, sizeof(double) * pd);
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', P, W, P) != 0)
        return -1;
    LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', P, 1, W, P, x, 1);
    return 0;
}

/*
 * The noise σ² of the linearised problem r + Jθ ≈ Jθ' + ε, θ' ~ N(0, Λ⁻¹), ε ~ N(0, σ²), by its
 * evidence on a grid 10⁻⁹ … 10⁻² (the matrix determinant lemma keeps it P × P); 0 when no grid
 * value gives a positive definite system. Chosen once per fit, so the steps minimise one
 * objective. rp (N), tp, g, dx (P), M, W (P × P): scratch.
 */
static double noise_by_evidence(const double *J, const double *r, const double *th, const double *JJ,
                                const double *lam, int N, int P, double *rp, double *tp, double *M, double *g,
                                double *W, double *dx)
{
    size_t pd = (size_t)P;
    double best_ev = -INFINITY, rr = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        double v = r[i];
        for (int j = 0; j < P; j++)
            v += J[(size_t)i * pd + (size_t)j] * th[j];
        rp[i] = v;
        rr += v * v;
    }
    for (int a = 0; a < P; a++) {
        double v = 0;
        for (int i = 0; i < N; i++)
            v += J[(size_t)i * pd + (size_t)a] * rp[i];
        tp[a] = v; /* Jᵀ(r + Jθ) */
    }
    for (int gi = 0; gi <= 14; gi++) {
        double v2 = pow(10.0, -9 + 0.5 * gi);
        for (int a = 0; a < P; a++) {
            for (int c = 0; c < P; c++)
                M[(size_t)a * pd + (size_t)c] = JJ[(size_t)a * pd + (size_t)c] / v2 + (a == c ? lam[a] : 0);
            g[a] = tp[a] / v2;
        }
        if (solve_damped(M, 0, g, P, W, dx))
            continue;
        double logdet = 0, quad = rr / v2;
        for (int a = 0; a < P; a++) {
            logdet += 2 * log(W[(size_t)a * pd + (size_t)a]) - log(lam[a]);
            quad -= g[a] * dx[a];
        }
        double ev = -0.5 * quad - 0.5 * logdet - 0.5 * (N - 2) * log(v2);
        if (ev > best_ev) {
            best_ev = ev;
            s2 = v2;
        }
    }
    return s2;
}

int kr__search_prior_calibrate(kr__search *s, double *theta, kr_error *err)
{
    int n = 0, P = s->nsens, N;
    if (P == 0)
        return KR_OK;
    size_t nd = (size_t)s->n, pd = (size_t)P;
    long *ix = malloc(sizeof(long) * (nd + 1));
    double *mem = malloc(sizeof(double) * (8 * nd + 2 * nd * pd + 4 * pd * pd + 8 * pd + 8));
    if (ix == NULL || mem == NULL) {
        free(ix);
        free(mem);
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    }
    double *yt = mem, *ye = yt + nd, *r = ye + nd, *r2 = r + 2 * nd, *rp = r2 + 2 * nd, *J = rp + 2 * nd,
           *JJ = J + 2 * nd * pd, *M = JJ + pd * pd, *W = M + pd * pd, *Jr = W + pd * pd, *g = Jr + pd,
           *th = g + pd, *cand = th + pd, *lam = cand + pd, *tp = lam + pd, *tm = tp + pd, *dx = tm + pd;
    /* At most CAL_POINTS of the points, spread evenly over the search's history (a few dozen
     * identify the constants; the fit costs 2P simulations per point and step). */
    long stride = KR_MAX(1L, (s->n + CAL_POINTS - 1) / CAL_POINTS);
    int warm = 0;
    for (int j = 0; j < P; j++)
        warm |= theta[j] != 0;
    for (long i = 0; i < s->n; i += stride) {
        const kr_measured *p = &s->pts[i];
        if (!(p->time_s > 0) || !(p->energy_j > 0))
            continue;
        kr_search_space_index(&s->sp, &p->config, &ix[n], NULL);
        yt[n] = log(p->time_s);
        ye[n] = log(p->energy_j);
        n++;
    }
    N = 2 * n;
    if (n < 3)
        goto done; /* too few to say anything: θ stays where it was */
    for (int j = 0; j < P; j++) {
        double u = kr_gpu_param_uncertainty(s->sens_param[j]);
        lam[j] = 3 / (u * u);
        th[j] = fmin(fmax(theta[j], -CAL_RANGE * u), CAL_RANGE * u);
    }
    double ss = residuals(s, ix, yt, ye, n, th, r), mu = 1e-3, s2 = 1e-4;
    if (!isfinite(ss))
        goto done;
    for (int it = 0; it < (warm ? CAL_ITERS_WARM : CAL_ITERS); it++) {
        /* Jacobian of the centred predictions by central differences (residual = y − f, so
         * ∂f/∂θ = −∂r/∂θ). */
        int bad = 0;
        for (int j = 0; j < P && !bad; j++) {
            double h = CAL_STEP * kr_gpu_param_uncertainty(s->sens_param[j]);
            memcpy(tp, th, sizeof(double) * pd);
            memcpy(tm, th, sizeof(double) * pd);
            tp[j] += h;
            tm[j] -= h;
            bad = !isfinite(residuals(s, ix, yt, ye, n, tp, r2)) || !isfinite(residuals(s, ix, yt, ye, n, tm, rp));
            for (int i = 0; i < N && !bad; i++)
                J[(size_t)i * pd + (size_t)j] = (rp[i] - r2[i]) / (2 * h);
        }
        if (bad)
            break;
        for (int a = 0; a < P; a++) {
            double v = 0;
            for (int i = 0; i < N; i++)
                v += J[(size_t)i * pd + (size_t)a] * r[i];
            Jr[a] = v;
            for (int c = 0; c <= a; c++) {
                double w = 0;
                for (int i = 0; i < N; i++)
                    w += J[(size_t)i * pd + (size_t)a] * J[(size_t)i * pd + (size_t)c];
                JJ[(size_t)a * pd + (size_t)c] = JJ[(size_t)c * pd + (size_t)a] = w;
            }
        }
        if (it == 0 && !(s2 = noise_by_evidence(J, r, th, JJ, lam, N, P, rp, tp, M, g, W, dx)))
            break;
        /* A Levenberg–Marquardt step on the penalised objective ss/σ² + Σ λ_j θ_j²: the normal
         * matrix M = JᵀJ/σ² + Λ, the gradient g = Jᵀr/σ² − Λθ, the damping raised until the
         * objective falls. */
        for (int a = 0; a < P; a++) {
            for (int c = 0; c < P; c++)
                M[(size_t)a * pd + (size_t)c] = JJ[(size_t)a * pd + (size_t)c] / s2 + (a == c ? lam[a] : 0);
            g[a] = Jr[a] / s2 - lam[a] * th[a];
        }
        double f0 = objective(s, ss, s2, th), f1 = f0, move = 0;
        int took = 0;
        for (int tries = 0; tries < 10 && !took; tries++) {
            if (solve_damped(M, mu, g, P, W, dx)) {
                mu = fmax(mu * 10, 1e-6);
                continue;
            }
            for (int j = 0; j < P; j++) {
                double u = kr_gpu_param_uncertainty(s->sens_param[j]);
                cand[j] = fmin(fmax(th[j] + dx[j], -CAL_RANGE * u), CAL_RANGE * u);
            }
            double ssn = residuals(s, ix, yt, ye, n, cand, r2);
            if (isfinite(ssn) && (f1 = objective(s, ssn, s2, cand)) < f0) {
                for (int j = 0; j < P; j++)
                    move = fmax(move, fabs(cand[j] - th[j]) / kr_gpu_param_uncertainty(s->sens_param[j]));
                memcpy(th, cand, sizeof(double) * pd);
                memcpy(r, r2, sizeof(double) * (size_t)N);
                ss = ssn;
                took = 1;
                mu = fmax(mu / 10, 1e-9);
            } else {
                mu *= 10;
            }
        }
        if (!took || move < CAL_TOL || f0 - f1 < CAL_FTOL * f0)
            break;
    }
    memcpy(theta, th, sizeof(double) * pd);
done:
    free(ix);
    free(mem);
    return KR_OK;
}
