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

/* One calibration's points and scratch: n points (ix, their log time yt and log total energy
 * ye), N = 2n residuals, P constants; r the residuals at th, J (N × P) their Jacobian, JJ = JᵀJ
 * and Jr = Jᵀr, lam the prior precisions; the rest scratch. */
typedef struct cal {
    const kr__search *s;
    int n, N, P;
    size_t pd;
    long *ix;
    double *mem;
    double *yt, *ye, *r, *r2, *rp, *J, *JJ, *M, *W, *Jr, *g, *th, *cand, *lam, *tp, *tm, *dx;
} cal;

/* Allocates c's arrays for the search's s->n points; -1 when out of memory. */
static int cal_alloc(cal *c, const kr__search *s)
{
    size_t nd = (size_t)s->n, pd = (size_t)s->nsens;
    c->s = s;
    c->n = 0;
    c->P = s->nsens;
    c->pd = pd;
    c->ix = malloc(sizeof(long) * (nd + 1));
    c->mem = malloc(sizeof(double) * (8 * nd + 2 * nd * pd + 4 * pd * pd + 8 * pd + 8));
    if (c->ix == NULL || c->mem == NULL)
        return -1;
    c->yt = c->mem;
    c->ye = c->yt + nd;
    c->r = c->ye + nd;
    c->r2 = c->r + 2 * nd;
    c->rp = c->r2 + 2 * nd;
    c->J = c->rp + 2 * nd;
    c->JJ = c->J + 2 * nd * pd;
    c->M = c->JJ + pd * pd;
    c->W = c->M + pd * pd;
    c->Jr = c->W + pd * pd;
    c->g = c->Jr + pd;
    c->th = c->g + pd;
    c->cand = c->th + pd;
    c->lam = c->cand + pd;
    c->tp = c->lam + pd;
    c->tm = c->tp + pd;
    c->dx = c->tm + pd;
    return 0;
}

/* At most CAL_POINTS of the points, spread evenly over the search's history (a few dozen
 * identify the constants; the fit costs 2P simulations per point and step). */
static void cal_points(cal *c)
{
    const kr__search *s = c->s;
    long stride = KR_MAX(1L, (s->n + CAL_POINTS - 1) / CAL_POINTS);
    for (long i = 0; i < s->n; i += stride) {
        const kr_measured *p = &s->pts[i];
        if (!(p->time_s > 0) || !(p->energy_j > 0))
            continue;
        kr_search_space_index(&s->sp, &p->config, &c->ix[c->n], NULL);
        c->yt[c->n] = log(p->time_s);
        c->ye[c->n] = log(p->energy_j);
        c->n++;
    }
    c->N = 2 * c->n;
}

/* J, JJ and Jr at c->th: the Jacobian of the centred predictions by central differences
 * (residual = y − f, so ∂f/∂θ = −∂r/∂θ). Returns -1 where the simulator fails. */
static int cal_jacobian(cal *c)
{
    const kr__search *s = c->s;
    int P = c->P, N = c->N, n = c->n;
    size_t pd = c->pd;
    double *J = c->J;
    for (int j = 0; j < P; j++) {
        double h = CAL_STEP * kr_gpu_param_uncertainty(s->sens_param[j]);
        memcpy(c->tp, c->th, sizeof(double) * pd);
        memcpy(c->tm, c->th, sizeof(double) * pd);
        c->tp[j] += h;
        c->tm[j] -= h;
        if (!isfinite(residuals(s, c->ix, c->yt, c->ye, n, c->tp, c->r2)) ||
            !isfinite(residuals(s, c->ix, c->yt, c->ye, n, c->tm, c->rp)))
            return -1;
        for (int i = 0; i < N; i++)
            J[(size_t)i * pd + (size_t)j] = (c->rp[i] - c->r2[i]) / (2 * h);
    }
    for (int a = 0; a < P; a++) {
        double v = 0;
        for (int i = 0; i < N; i++)
            v += J[(size_t)i * pd + (size_t)a] * c->r[i];
        c->Jr[a] = v;
        for (int b = 0; b <= a; b++) {
            double w = 0;
            for (int i = 0; i < N; i++)
                w += J[(size_t)i * pd + (size_t)a] * J[(size_t)i * pd + (size_t)b];
            c->JJ[(size_t)a * pd + (size_t)b] = c->JJ[(size_t)b * pd + (size_t)a] = w;
        }
    }
    return 0;
}

/*
 * A Levenberg–Marquardt step on the penalised objective ss/σ² + Σ λ_j θ_j²: the normal matrix
 * M = JᵀJ/σ² + Λ, the gradient g = Jᵀr/σ² − Λθ, the damping *mu raised until the objective
 * falls. On a step taken, c->th, c->r and *ss move to the new point. Returns whether the
 * calibration goes on (a step taken that moved some θ_j by at least CAL_TOL of u_j and lowered
 * the objective by at least CAL_FTOL of it).
 */
static int cal_step(cal *c, double s2, double *ss, double *mu)
{
    const kr__search *s = c->s;
    int P = c->P;
    size_t pd = c->pd;
    for (int a = 0; a < P; a++) {
        for (int b = 0; b < P; b++)
            c->M[(size_t)a * pd + (size_t)b] = c->JJ[(size_t)a * pd + (size_t)b] / s2 + (a == b ? c->lam[a] : 0);
        c->g[a] = c->Jr[a] / s2 - c->lam[a] * c->th[a];
    }
    double f0 = objective(s, *ss, s2, c->th), f1 = f0, move = 0;
    int took = 0;
    for (int tries = 0; tries < 10 && !took; tries++) {
        if (solve_damped(c->M, *mu, c->g, P, c->W, c->dx)) {
            *mu = fmax(*mu * 10, 1e-6);
            continue;
        }
        for (int j = 0; j < P; j++) {
            double u = kr_gpu_param_uncertainty(s->sens_param[j]);
            c->cand[j] = fmin(fmax(c->th[j] + c->dx[j], -CAL_RANGE * u), CAL_RANGE * u);
        }
        double ssn = residuals(s, c->ix, c->yt, c->ye, c->n, c->cand, c->r2);
        if (isfinite(ssn) && (f1 = objective(s, ssn, s2, c->cand)) < f0) {
            for (int j = 0; j < P; j++)
                move = fmax(move, fabs(c->cand[j] - c->th[j]) / kr_gpu_param_uncertainty(s->sens_param[j]));
            memcpy(c->th, c->cand, sizeof(double) * pd);
            memcpy(c->r, c->r2, sizeof(double) * (size_t)c->N);
            *ss = ssn;
            took = 1;
            *mu = fmax(*mu / 10, 1e-9);
        } else {
            *mu *= 10;
        }
    }
    return took && !(move < CAL_TOL || f0 - f1 < CAL_FTOL * f0);
}

int kr__search_prior_calibrate(kr__search *s, double *theta, kr_error *err)
{
    int P = s->nsens;
    if (P == 0)
        return KR_OK;
    cal c;
    if (cal_alloc(&c, s)) {
        free(c.ix);
        free(c.mem);
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    }
    int warm = 0;
    for (int j = 0; j < P; j++)
        warm |= theta[j] != 0;
    cal_points(&c);
    if (c.n < 3)
        goto done; /* too few to say anything: θ stays where it was */
    for (int j = 0; j < P; j++) {
        double u = kr_gpu_param_uncertainty(s->sens_param[j]);
        c.lam[j] = 3 / (u * u);
        c.th[j] = fmin(fmax(theta[j], -CAL_RANGE * u), CAL_RANGE * u);
    }
    double ss = residuals(s, c.ix, c.yt, c.ye, c.n, c.th, c.r), mu = 1e-3, s2 = 1e-4;
    if (!isfinite(ss))
        goto done;
    for (int it = 0; it < (warm ? CAL_ITERS_WARM : CAL_ITERS); it++) {
        if (cal_jacobian(&c))
            break;
        if (it == 0 && !(s2 = noise_by_evidence(c.J, c.r, c.th, c.JJ, c.lam, c.N, P, c.rp, c.tp, c.M, c.g, c.W, c.dx)))
            break;
        if (!cal_step(&c, s2, &ss, &mu))
            break;
    }
    memcpy(theta, c.th, sizeof(double) * c.pd);
done:
    free(c.ix);
    free(c.mem);
    return KR_OK;
}
