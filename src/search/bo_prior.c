/*
 * bo_prior.c — the bo strategy's model of its prior (bo.c, docs/search.md): each surrogate is
 * a + b·q plus a GP on the residual, q the prior's prediction on the model's scale; with a
 * simulator prior's sensitivity features (the simulator with each uncertain GPU constant at ±
 * its stated uncertainty) the line becomes a Bayesian linear model in q and those features
 * (prior_fit, "Sensitivity features"); with calibration the prior is first moved to the
 * simulator at the constants bo_calib.c fits to the measurements (kr__bo_calibrate).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "bo_internal.h"

/* The prior of model k at configuration idx, on the model's scale. */
static double prior_q(const bo *b, int k, long idx)
{
    double v = b->pr[k][idx];
    return b->md[k].log ? log(v) : v;
}

/*
 * The prior's line for model k: y ≈ a + b·q over the n evaluated points (md->y already on the
 * model's scale), least squares with a ridge pulling b toward 1 (λ = BO_PRIOR_RIDGE·Σ(q − q̄)²,
 * so a handful of points cannot tilt a good prior), b kept in [0.25, 4]. md->y becomes the
 * residual the GP models (the line is global: the points' features do not enter).
 */
static void prior_line(bo *b, int k, int n)
{
    kr__search *s = b->s;
    model *md = &b->md[k];
    double qm = 0, ym = 0;
    double *q = md->u; /* scratch: u is rebuilt by every batch's fantasies */
    for (int i = 0; i < n; i++) {
        long idx;
        kr_search_space_index(&s->sp, &s->pts[i].config, &idx, NULL);
        q[i] = prior_q(b, k, idx);
        qm += q[i];
        ym += md->y[i];
    }
    qm /= n;
    ym /= n;
    double sqq = 0, sqy = 0;
    for (int i = 0; i < n; i++) {
        sqq += (q[i] - qm) * (q[i] - qm);
        sqy += (q[i] - qm) * (md->y[i] - ym);
    }
    double lam = BO_PRIOR_RIDGE * sqq + 1e-300;
    double slope = (sqy + lam) / (sqq + lam);
    slope = fmin(fmax(slope, 0.25), 4.0);
    b->pb[k] = slope;
    b->pa[k] = ym - slope * qm;
    for (int i = 0; i < n; i++)
        md->y[i] -= b->pa[k] + slope * q[i];
    s->prior_b[k] = slope;
}

/* Sensitivity feature j of model k at idx on the model's scale: half the change of the prior's
 * prediction between the constant at +/− its stated uncertainty (0 where undefined). */
static double sens_j(const bo *b, int k, int j, long idx)
{
    size_t sz = (size_t)b->s->size;
    double p = b->sens[((size_t)(2 * j) * NMODELS + (size_t)k) * sz + (size_t)idx];
    double m = b->sens[((size_t)(2 * j + 1) * NMODELS + (size_t)k) * sz + (size_t)idx];
    if (!isfinite(p) || !isfinite(m))
        return 0;
    if (b->md[k].log) {
        if (!(p > 0) || !(m > 0))
            return 0;
        return 0.5 * (log(p) - log(m));
    }
    return 0.5 * (p - m);
}

/* C = Φ diag(sw) Φᵀ + s2·I (n × n, row-major) for the n × p centred features Φ. */
static void blr_cov(const double *Phi, int n, int p, const double *sw, double s2, double *C)
{
    for (int i = 0; i < n; i++)
        for (int l = 0; l <= i; l++) {
            double v = 0;
            for (int c = 0; c < p; c++)
                v += Phi[i * p + c] * sw[c] * Phi[l * p + c];
            C[i * n + l] = C[l * n + i] = v + (i == l ? s2 : 0);
        }
}

/* The centred features of model k's n evaluated points (ix: their configurations): Phi (n × p,
 * p = 1 + s->nsens) the prior and its sensitivity features less their means (mean), r the
 * centred targets less the centred prior (the slope's offset from 1 is fitted), *ym the mean
 * target, *sqq Σ(q − q̄)². */
static void blr_features(const bo *b, int k, int n, long *ix, double *Phi, double *mean, double *r, double *ym,
                         double *sqq)
{
    const kr__search *s = b->s;
    const model *md = &b->md[k];
    int P = s->nsens, p = P + 1;
    memset(mean, 0, sizeof(double) * (size_t)p);
    *ym = 0;
    *sqq = 0;
    for (int i = 0; i < n; i++) {
        kr_search_space_index(&s->sp, &s->pts[i].config, &ix[i], NULL);
        Phi[i * p] = prior_q(b, k, ix[i]);
        for (int j = 0; j < P; j++)
            Phi[i * p + 1 + j] = sens_j(b, k, j, ix[i]);
        for (int c = 0; c < p; c++)
            mean[c] += Phi[i * p + c] / n;
        *ym += md->y[i] / n;
    }
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < p; c++)
            Phi[i * p + c] -= mean[c];
        r[i] = md->y[i] - *ym - Phi[i * p];
        *sqq += Phi[i * p] * Phi[i * p];
    }
}

/* The noise σ² that maximises the evidence −½ rᵀC⁻¹r − ½ log|C| on the grid 10⁻⁹ … 10⁻² (1e-6
 * where no grid value gives a positive definite C); sw[1..p) are the coefficients' prior
 * variances, sw[0] is set per grid value; C (n × n) and al (n) are scratch. */
static double blr_noise(const double *Phi, const double *r, int n, int p, double lam, double *sw, double *C,
                        double *al)
{
    double best = -INFINITY, bs2 = 1e-6;
    for (int g = 0; g <= 14; g++) {
        double s2 = pow(10.0, -9.0 + 0.5 * g);
        sw[0] = s2 / lam;
        blr_cov(Phi, n, p, sw, s2, C);
        if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, C, n) != 0)
            continue;
        memcpy(al, r, sizeof(double) * (size_t)n);
        LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n, 1, C, n, al, 1);
        double ev = 0;
        for (int i = 0; i < n; i++)
            ev += -0.5 * r[i] * al[i] - log(C[i * n + i]);
        if (ev > best) {
            best = ev;
            bs2 = s2;
        }
    }
    return bs2;
}

/*
 * With sensitivity features: y ≈ a + b·q + Σ_j c_j J_j, a Bayesian linear model (docs/search.md,
 * "Sensitivity features"). After centring (a is flat), r = y − ȳ − (q − q̄) = (b − 1)(q − q̄) +
 * Σ_j c_j (J_j − J̄_j) + ε with b − 1 ~ N(0, σ²/λ) (the line's ridge, λ = BO_PRIOR_RIDGE·Σ(q − q̄)²),
 * c_j ~ N(0, 1/3) (a constant uniform within ± its uncertainty) and ε ~ N(0, σ²); σ² maximises
 * the evidence −½ rᵀC⁻¹r − ½ log|C| (C = Φ Σ_w Φᵀ + σ² I) on a grid 10⁻⁹ … 10⁻², and the
 * coefficients are the posterior means Σ_w Φᵀ C⁻¹ r (n × n solves: n is small). md->y becomes
 * the residual the GP models; b is kept in [0.25, 4] as the line's.
 */
static void prior_fit(bo *b, int k, int n)
{
    kr__search *s = b->s;
    model *md = &b->md[k];
    int P = s->nsens, p = P + 1;
    size_t nd = (size_t)n;
    double *mem = malloc(sizeof(double) * (nd * (size_t)p + nd * nd + 2 * nd + 2 * (size_t)p));
    long *ix = malloc(sizeof(long) * nd);
    if (mem == NULL || ix == NULL) {
        free(mem);
        free(ix);
        prior_line(b, k, n); /* out of memory: the line alone still works */
        return;
    }
    double *Phi = mem, *C = Phi + nd * (size_t)p, *r = C + nd * nd, *al = r + nd, *sw = al + nd,
           *mean = sw + p;
    double ym, sqq;
    blr_features(b, k, n, ix, Phi, mean, r, &ym, &sqq);
    double lam = BO_PRIOR_RIDGE * sqq + 1e-300;
    for (int j = 0; j < P; j++)
        sw[1 + j] = 1.0 / 3.0;
    double bs2 = blr_noise(Phi, r, n, p, lam, sw, C, al);
    sw[0] = bs2 / lam;
    blr_cov(Phi, n, p, sw, bs2, C);
    double w[KR__SENS_MAX + 1] = {0};
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, C, n) == 0) {
        memcpy(al, r, sizeof(double) * nd);
        LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n, 1, C, n, al, 1);
        for (int c = 0; c < p; c++) {
            double v = 0;
            for (int i = 0; i < n; i++)
                v += Phi[i * p + c] * al[i];
            w[c] = sw[c] * v;
        }
    }
    double slope = fmin(fmax(1 + w[0], 0.25), 4.0);
    double a = ym - slope * mean[0];
    for (int j = 0; j < P; j++) {
        s->sens_c[k][j] = w[1 + j];
        a -= w[1 + j] * mean[1 + j];
    }
    b->pa[k] = a;
    b->pb[k] = slope;
    s->prior_b[k] = slope;
    for (int i = 0; i < n; i++) {
        double v = a + slope * prior_q(b, k, ix[i]);
        for (int j = 0; j < P; j++)
            v += s->sens_c[k][j] * sens_j(b, k, j, ix[i]);
        md->y[i] -= v;
    }
    free(mem);
    free(ix);
}

/*
 * Calibrates the prior to the points measured so far (bo_calib.c) and replaces its predictions
 * with the simulator's at the calibrated constants. Where the calibrated simulator cannot
 * predict some configuration, the previous constants and predictions stay (a calibration never
 * fails a search that the prior alone would carry).
 */
int kr__bo_calibrate(bo *b, kr_error *err)
{
    kr__search *s = b->s;
    double prev[KR__SENS_MAX];
    memcpy(prev, s->theta, sizeof prev);
    int rc = kr__search_prior_calibrate(s, s->theta, err);
    if (rc)
        return rc;
    size_t sz = (size_t)s->size;
    if (b->cal_v != NULL && memcmp(prev, s->theta, sizeof prev) == 0)
        return KR_OK; /* the constants did not move: b->pr already holds their predictions */
    if (b->cal_v == NULL && (b->cal_v = malloc(sizeof(double) * NMODELS * sz)) == NULL)
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    double *const pr[NMODELS] = {b->cal_v, b->cal_v + sz, b->cal_v + 2 * sz};
    int ppos[NMODELS];
    kr_error e = {0};
    if (kr__search_prior_compute(s, s->theta, pr, ppos, &e)) {
        memcpy(s->theta, prev, sizeof prev);
        free(b->cal_v); /* b->pr keeps predictions made otherwise: none to skip to next time */
        b->cal_v = NULL;
        return KR_OK;
    }
    for (int k = 0; k < NMODELS; k++) {
        memcpy(b->pr[k], pr[k], sizeof(double) * sz);
        b->ppos[k] = ppos[k];
    }
    return KR_OK;
}

void kr__bo_prior_fit(bo *b, int k, int n)
{
    if (b->s->nsens)
        prior_fit(b, k, n);
    else
        prior_line(b, k, n);
}

void kr__bo_prior_add(const bo *b, int k, long idx, double *mu)
{
    *mu += b->pa[k] + b->pb[k] * prior_q(b, k, idx);
    for (int l = 0; l < b->s->nsens; l++)
        *mu += b->s->sens_c[k][l] * sens_j(b, k, l, idx);
}
