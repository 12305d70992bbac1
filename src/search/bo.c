/*
 * bo.c — the bo strategy: batch Bayesian optimisation of a partition's (time, effective energy)
 * and (time, total energy) frontiers with a stopping rule (search.h, docs/search.md).
 *
 * Surrogate. Three independent Gaussian processes (gp.c): log time, log effective energy and
 * log total energy (an energy is modelled raw if some measured value is not positive), over
 * the features
 *   x1 = (f − f_min) / (f_max − f_min)           (SM clock),
 *   x2 = log(s / s_min) / log(s_max / s_min)      (comm SMs; bandwidth grows ~ with s, so a log
 *                                                  axis makes the response smoother),
 * and the launch slot as a categorical input. Hyperparameters are refitted every batch by
 * marginal likelihood, warm-started from the previous batch.
 *
 * Initial design. n_init = max(number of clocks, 3 % of the space) configurations spread Latin-
 * hypercube style over (clock, comm SMs), slots balanced, all from the seed. With n_init >= the
 * number of clocks every clock (almost always) gets a point; composition combines configurations
 * of the same clock only (kareus-method.md §5), so after convergence any clock still without a
 * point gets its most promising configuration ("cover").
 *
 * With a prior (the simulator's prediction q of every configuration; docs/search.md) each model
 * is a + b·q plus a GP on the residual, and three things change, each measured on perturbed
 * simulated GPUs (docs/search.md, "Issue 16, round 2"): the initial design is the prior's
 * BO_PRIOR_DESIGN best frontier points (greedy by the hypervolume they add as predicted, both
 * planes) instead of a grid; each plane's reference box also covers the frontier the models
 * predict (widen_ref), so a predicted frontier extension beyond the measured one counts in the
 * acquisition and the stopping rule; batches are BO_PRIOR_BATCH and bo_stop BO_PRIOR_STOP.
 * With a simulator prior (round 5) the line also takes the prior's sensitivity features — the
 * simulator with each uncertain GPU constant at ± its stated uncertainty — as a Bayesian linear
 * model (bo_prior.c), and the design's last BO_PRIOR_DESIGN − BO_PRIOR_DESIGN_FIXED points
 * are picked from the models fitted to its first ones (refit_batch). With calibration (round 7,
 * bo_calib.c) the prior's uncertain constants are fitted to the measurements before every fit
 * (kr__bo_calibrate, bo_prior.c) and the prior becomes the simulator at the fitted constants;
 * the design is then BO_PRIOR_DESIGN_CALIB points from the nominal prior and the rest, in
 * batches of BO_PRIOR_BATCH, from the calibrated models.
 * A flat prior, whose frontiers hold fewer than BO_PRIOR_DESIGN configurations (e.g. one clock,
 * where predicted energy follows time), says little about where the frontier is: it keeps the
 * grid design (prior_grid) and the batch, threshold and box of a search without a prior
 * (docs/search.md, "Issue 16, round 3").
 *
 * Batch (size q). Built greedily; each member is the argmax of one criterion over the
 * unevaluated configurations, and after each pick the batch "believes" the pick's predicted
 * median (kriging believer): the median joins the current frontiers and the posterior
 * variances of all three GPs are updated exactly for one more observation at the pick (rank-one
 * downdates, so later picks avoid its neighbourhood). Criteria, in the repeating order
 * EFF, TOT, TIME, EFF, TOT, EXPLORE, EFF, TOT:
 *   EFF / TOT  expected hypervolume improvement in the (time, effective energy) / (time, total
 *              energy) plane, E[HVI(t, y)] over the predictive distribution, by Monte Carlo with
 *              S = 64 common normal draws per batch (seeded): t = exp(μ_t + σ_t z₁),
 *              E_eff = exp(μ_e + σ_e z₂), E = exp(μ_E + σ_E z₃). Candidates whose optimistic
 *              corner (μ − 3σ) is dominated are skipped (their EHVI is ~0).
 *   TIME       probability of beating the fastest time so far (falls back to EFF below 2 %).
 *   EXPLORE    the largest standardised predictive spread among configurations whose
 *              optimistic corner is not dominated.
 * Reference point of each plane: the current frontier's nadir plus 10 % of its range (the same
 * construction as the benchmark's quality figure, on the observed frontier).
 *
 * Stopping rule. Before building a batch, the search estimates the hypervolume still to be
 * gained anywhere in the space, E[HV(F ∪ all unmeasured)] − HV(F), by Monte Carlo over
 * independent draws of every configuration's predictive distribution (an overestimate: the
 * draws ignore the posterior correlation). It has converged, and stops, when in both planes
 * this estimate and the gain the last batch actually brought are below bo_stop (default
 * BO_DEFAULT_STOP = 2 %) of the current hypervolume. The second condition guards against a
 * surrogate that is confidently wrong: a batch that surprised it keeps the search going. A cap
 * (max_evals, default half the space) bounds the cost in any case. The default threshold was
 * chosen on the simulator (docs/search.md: quality against measurements for several values).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bo_internal.h"

#define BO_DEFAULT_STOP 0.02
#define BO_DEFAULT_STOP_ABS 1e-5 /* with a prior */
#define BO_SCALE_MARGIN 0.1      /* the absolute rule's box: at least 10 % of t_min and |E_min| */
#define BO_PRIOR_DESIGN 16       /* initial design with a prior: 16 points, of which */
#define BO_PRIOR_DESIGN_FIXED 12 /* the prior's 12 best frontier points, then 4 from the refitted models */
#define BO_PRIOR_DESIGN_CALIB 8  /* with calibration: 8, then 2 batches of 4 from the calibrated models */
#define BO_PRIOR_BATCH 4         /* batch size with a prior */
#define BO_PRIOR_STOP 0.01       /* bo_stop's default with a prior */

enum role { EFF, TOT, TIME, EXPLORE };
static const enum role pattern[8] = {EFF, TOT, TIME, EFF, TOT, EXPLORE, EFF, TOT};
static const char *const role_names[] = {"ehvi_eff", "ehvi_total", "time", "explore"};


static void feature(const kr__search *s, long idx, double *x, int *cat)
{
    kr_config c;
    kr_search_space_config(&s->sp, idx, &c);
    const kr_search_space *sp = &s->sp;
    double fmin = sp->clocks[sp->nclocks - 1], fmax = sp->clocks[0];
    x[0] = fmax > fmin ? (c.freq_mhz - fmin) / (fmax - fmin) : 0.0;
    double smin = sp->sms[0], smax = sp->sms[sp->nsms - 1];
    x[1] = smax > smin && smin > 0 ? log(c.sms / smin) / log(smax / smin) : 0.0;
    /* The launch (kernel, slot) is one categorical: the kernel changes how the comm time depends
     * on the CTAs and the clock, which the category's own correlation absorbs. The baseline
     * entry's CTAs may lie off the list (an A100's 24 NCCL channels above sms_gather's 20): its
     * x[1] is then slightly outside [0, 1], an extrapolation the kernel's distance handles. */
    int ci, mi;
    kr__space_coords(sp, idx, &ci, cat, &mi);
}

/* Value of model k's latent v in target units. */
static double back(const bo *b, int k, double v)
{
    return b->md[k].log ? exp(v) : v;
}

static double sd(const bo *b, int k, int j)
{
    return sqrt(fmax(b->md[k].var[j], 0.0));
}

/* ---- frontiers ------------------------------------------------------------------------- */

/* Energy model of a plane. */
static int emodel(int total)
{
    return total ? M_TOTAL : M_EFF;
}

/* Rebuilds both frontiers from the first n evaluated points; with set_ref, sets their
 * reference points (otherwise the current ones are kept) and hypervolumes. */
static int build_fronts(bo *b, long n, int set_ref)
{
    kr__search *s = b->s;
    b->feff.m = b->ftot.m = 0;
    for (long i = 0; i < n; i++) {
        const kr_measured *p = &s->pts[i];
        if (kr__front2_add(&b->feff, p->time_s, p->eff_energy_j) || kr__front2_add(&b->ftot, p->time_s, p->energy_j))
            return KR_ENOMEM;
    }
    kr__front2 *fs[2] = {&b->feff, &b->ftot};
    for (int k = 0; k < 2; k++) {
        kr__front2 *f = fs[k];
        if (set_ref && f->m > 0)
            kr__front2_set_ref(f, KR__REF_MARGIN);
        f->hv = kr__front2_hv(f);
    }
    return KR_OK;
}

/*
 * With a prior, the predictions are good enough to say where the frontier ends, so each
 * plane's reference point also covers the frontier the models predict: the nadir of the Pareto
 * set of (the measured points ∪ every unmeasured configuration's predicted median) plus 10 % of
 * its range, when that lies beyond the measured frontier's. Without it the box ends 10 % past
 * the slowest measured frontier point, and a configuration predicted to extend the frontier
 * further (the frugal end: the lowest clocks with the fewest comm SMs, often twice as slow as
 * the next frontier point) has no expected improvement and no remaining gain: the search stops
 * without it, below Q 0.99 (docs/search.md, "Issue 16, round 2"). The box only grows, so a
 * measured frontier point never falls outside it.
 */
static int widen_ref(bo *b, kr__front2 *scratch)
{
    kr__front2 *fs[2] = {&b->feff, &b->ftot};
    for (int pl = 0; pl < 2; pl++) {
        kr__front2 *f = fs[pl];
        int k = emodel(pl);
        scratch->m = 0;
        for (int j = 0; j < f->m; j++)
            if (kr__front2_add(scratch, f->t[j], f->y[j]))
                return KR_ENOMEM;
        for (int j = 0; j < b->m; j++)
            if (kr__front2_add(scratch, back(b, M_TIME, b->md[M_TIME].mu[j]), back(b, k, b->md[k].mu[j])))
                return KR_ENOMEM;
        if (scratch->m < 2)
            continue;
        double t0 = scratch->t[0], t1 = scratch->t[scratch->m - 1], y0 = scratch->y[scratch->m - 1],
               y1 = scratch->y[0];
        f->rt = fmax(f->rt, t1 + KR__REF_MARGIN * (t1 - t0));
        f->ry = fmax(f->ry, y1 + KR__REF_MARGIN * (y1 - y0));
    }
    return KR_OK;
}

/* Hypervolume of the first n evaluated points in plane pl (1: total energy) against that
 * plane's current reference point, in *hv, without changing the frontiers. */
static int build_fronts_keep(bo *b, long n, int pl, double *hv)
{
    kr__front2 f;
    memset(&f, 0, sizeof f);
    const kr__front2 *src = pl ? &b->ftot : &b->feff;
    f.rt = src->rt;
    f.ry = src->ry;
    for (long i = 0; i < n; i++) {
        const kr_measured *p = &b->s->pts[i];
        if (kr__front2_add(&f, p->time_s, pl ? p->energy_j : p->eff_energy_j)) {
            kr__front2_free(&f);
            return KR_ENOMEM;
        }
    }
    *hv = kr__front2_hv(&f);
    kr__front2_free(&f);
    return KR_OK;
}

/* ---- acquisition ------------------------------------------------------------------------ */

/* Is candidate j's optimistic corner (μ − 3σ in both coordinates) dominated in the plane? */
static int hopeless(const bo *b, int j, const kr__front2 *f, int total)
{
    int k = emodel(total);
    double t = back(b, M_TIME, b->md[M_TIME].mu[j] - 3 * sd(b, M_TIME, j));
    double y = back(b, k, b->md[k].mu[j] - 3 * sd(b, k, j));
    return kr__front2_hvi(f, t, y) <= 0.0;
}

static double ehvi(const bo *b, int j, const kr__front2 *f, int total)
{
    if (hopeless(b, j, f, total))
        return 0.0;
    int k = emodel(total);
    double mt = b->md[M_TIME].mu[j], st = sd(b, M_TIME, j), me = b->md[k].mu[j], se = sd(b, k, j), sum = 0;
    for (int i = 0; i < BO_SAMPLES; i++)
        sum += kr__front2_hvi(f, back(b, M_TIME, mt + st * b->z[i][M_TIME]), back(b, k, me + se * b->z[i][k]));
    return sum / BO_SAMPLES;
}

/*
 * Expected hypervolume still to be gained anywhere in the space: E[HV(F ∪ {all candidates})] −
 * HV(F), by Monte Carlo over independent draws of every candidate's predictive distribution
 * (candidates whose optimistic corner is dominated cannot add anything and are skipped).
 * Independent draws ignore the posterior correlation between candidates, which can only
 * overstate the gain: the estimate errs on the side of measuring more.
 */
static double remaining_gain(const bo *b, const kr__front2 *f, int total, kr__rng *r, kr__front2 *scratch)
{
    int k = emodel(total);
    double sum = 0;
    for (int i = 0; i < BO_SAMPLES; i++) {
        scratch->m = 0;
        scratch->rt = f->rt;
        scratch->ry = f->ry;
        for (int j = 0; j < f->m; j++)
            if (kr__front2_add(scratch, f->t[j], f->y[j]))
                return INFINITY;
        for (int j = 0; j < b->m; j++) {
            if (hopeless(b, j, f, total))
                continue;
            double t = back(b, M_TIME, b->md[M_TIME].mu[j] + sd(b, M_TIME, j) * kr__rng_normal(r));
            double y = back(b, k, b->md[k].mu[j] + sd(b, k, j) * kr__rng_normal(r));
            if (kr__front2_add(scratch, t, y))
                return INFINITY;
        }
        sum += kr__front2_hv(scratch) - f->hv;
    }
    return sum / BO_SAMPLES;
}

/* Standard normal CDF. */
static double phi(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* Picks the best unpicked candidate for role *r (which may fall back); returns it or -1. */
static int pick(bo *b, enum role *r, double tbest)
{
    int best = -1;
    double bv = 0;
    if (*r == TIME) {
        for (int j = 0; j < b->m; j++) {
            if (b->picked[j])
                continue;
            double v = phi((log(tbest) - b->md[M_TIME].mu[j]) / fmax(sd(b, M_TIME, j), 1e-12));
            if (v > bv) {
                bv = v;
                best = j;
            }
        }
        if (bv >= 0.02)
            return best;
        *r = EFF;
        best = -1;
        bv = 0;
    }
    if (*r == EFF || *r == TOT) {
        const kr__front2 *f = *r == EFF ? &b->feff : &b->ftot;
        for (int j = 0; j < b->m; j++) {
            if (b->picked[j])
                continue;
            double v = ehvi(b, j, f, *r == TOT);
            if (v > bv) {
                bv = v;
                best = j;
            }
        }
        if (best >= 0)
            return best;
        *r = EXPLORE; /* nothing is expected to improve: learn where the model is unsure */
    }
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int j = 0; j < b->m; j++) {
            if (b->picked[j] || (pass == 0 && hopeless(b, j, &b->feff, 0) && hopeless(b, j, &b->ftot, 1)))
                continue;
            double v = 0;
            for (int k = 0; k < NMODELS; k++)
                v += sd(b, k, j) / (b->md[k].gp.ysd > 0 ? b->md[k].gp.ysd : 1.0);
            if (best < 0 || v > bv) {
                bv = v;
                best = j;
            }
        }
    return best;
}

/* Kriging-believer update after picking candidate a as the i-th member of the batch. */
static void fantasise(bo *b, int a, int i)
{
    int n0 = b->md[0].gp.n;
    for (int k = 0; k < NMODELS; k++) {
        model *md = &b->md[k];
        double denom = sqrt(fmax(md->var[a], 0.0) + kr__gp_noise_var(&md->gp) + 1e-300);
        double *u = md->u + (size_t)i * b->m;
        const double *va = md->V + (size_t)a * n0;
        for (int j = 0; j < b->m; j++) {
            double c = kr__gp_post_cov(&md->gp, b->xc + 2 * j, b->cc[j], md->V + (size_t)j * n0, b->xc + 2 * a, b->cc[a],
                                       va);
            for (int l = 0; l < i; l++)
                c -= md->u[(size_t)l * b->m + j] * md->u[(size_t)l * b->m + a];
            u[j] = c / denom;
        }
        for (int j = 0; j < b->m; j++)
            md->var[j] -= u[j] * u[j];
    }
    double t = back(b, M_TIME, b->md[M_TIME].mu[a]);
    kr__front2_add(&b->feff, t, back(b, M_EFF, b->md[M_EFF].mu[a]));
    kr__front2_add(&b->ftot, t, back(b, M_TOTAL, b->md[M_TOTAL].mu[a]));
}

/*
 * Composition combines configurations of the same clock only, so every clock needs a point.
 * After convergence (the models are current), each clock still without one gets the
 * configuration with the largest EHVI in the (time, effective energy) plane among its own,
 * or, if none is expected to improve it, the fastest predicted one.
 */
static int cover_clocks(bo *b, kr_error *err)
{
    kr__search *s = b->s;
    long per_clock = kr_search_space_per_clock(&s->sp);
    for (int c = 0; c < s->sp.nclocks && kr__search_left(s) > 0; c++) {
        int covered = 0;
        for (long i = c * per_clock; i < (c + 1) * per_clock && !covered; i++)
            covered = s->done[i];
        if (covered)
            continue;
        int best = -1;
        double bv = 0, bt = INFINITY;
        for (int j = 0; j < b->m; j++) {
            if (b->cand[j] / per_clock != c)
                continue;
            double v = ehvi(b, j, &b->feff, 0), t = b->md[M_TIME].mu[j];
            if (v > bv || (bv == 0 && v == 0 && t < bt)) {
                best = j;
                bv = v;
                bt = t;
            }
        }
        if (best < 0)
            continue;
        int rc = kr__search_eval(s, b->cand[best], "cover", back(b, M_TIME, b->md[M_TIME].mu[best]),
                                 back(b, M_EFF, b->md[M_EFF].mu[best]), err);
        if (rc)
            return rc;
    }
    return KR_OK;
}

/* ---- the loop --------------------------------------------------------------------------- */

static void bo_free(bo *b)
{
    free(b->cand);
    free(b->xc);
    free(b->cc);
    free(b->picked);
    for (int k = 0; k < NMODELS; k++) {
        model *md = &b->md[k];
        free(md->y);
        free(md->mu);
        free(md->var);
        free(md->V);
        free(md->u);
        kr__gp_free(&md->gp);
    }
    kr__front2_free(&b->feff);
    kr__front2_free(&b->ftot);
    free(b->prior_v);
    free(b->cal_v);
    free(b->sens);
    free(b->X);
    free(b->cat);
    kr__front2_free(&b->scratch);
}

/* Fits the three models to the evaluated points and predicts every unevaluated configuration. */
static int fit_and_predict(bo *b, double *X, int *cat, kr_error *err)
{
    kr__search *s = b->s;
    int n = (int)s->n, rc;
    if (s->calib && (rc = kr__bo_calibrate(b, err)))
        return rc;
    for (int i = 0; i < n; i++) {
        long idx;
        kr_search_space_index(&s->sp, &s->pts[i].config, &idx, NULL);
        feature(s, idx, X + 2 * i, &cat[i]);
    }
    for (int k = 0; k < NMODELS; k++) {
        model *md = &b->md[k];
        md->log = 1;
        for (int i = 0; i < n; i++) {
            const kr_measured *p = &s->pts[i];
            double v = k == M_TIME ? p->time_s : k == M_EFF ? p->eff_energy_j : p->energy_j;
            md->y[i] = v;
            md->log &= v > 0;
        }
        if (b->pr[0])
            md->log &= b->ppos[k];
        if (md->log)
            for (int i = 0; i < n; i++)
                md->y[i] = log(md->y[i]);
        if (b->pr[0])
            kr__bo_prior_fit(b, k, n);
        if ((rc = kr__gp_fit(&md->gp, X, cat, md->y, n, 2, md->have_h ? &md->h : NULL, err)))
            return rc;
        md->h = md->gp.h;
        md->have_h = 1;
    }
    b->m = 0;
    for (long i = 0; i < s->size; i++)
        if (!s->done[i]) {
            b->cand[b->m] = i;
            feature(s, i, b->xc + 2 * b->m, &b->cc[b->m]);
            b->m++;
        }
    for (int k = 0; k < NMODELS; k++) {
        model *md = &b->md[k];
        free(md->V);
        md->V = malloc((size_t)b->m * n * sizeof *md->V);
        if (md->V == NULL)
            return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
        if ((rc = kr__gp_predict(&md->gp, b->xc, b->cc, b->m, md->mu, md->var, md->V, err)))
            return rc;
        if (b->pr[0])
            for (int j = 0; j < b->m; j++)
                kr__bo_prior_add(b, k, b->cand[j], &md->mu[j]);
    }
    return KR_OK;
}

/* The prior's predictions (with a prior) and the initial design, which ends batch 0. */
static int start(bo *b, long n0, kr_error *err)
{
    kr__search *s = b->s;
    const kr_search_config *o = s->opt;
    int rc;
    if (b->has_prior) {
        b->prior_v = malloc((size_t)s->size * NMODELS * sizeof *b->prior_v);
        if (b->prior_v == NULL)
            return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
        for (int k = 0; k < NMODELS; k++)
            b->pr[k] = b->prior_v + (size_t)k * s->size;
        s->prior = 1;
        if ((rc = kr__search_prior_compute(s, NULL, b->pr, b->ppos, err)))
            return rc;
        if (o->prior_sens >= 0 && (o->prior_fn ? o->prior_sens_fn != NULL : o->prior != NULL)) {
            if ((rc = kr__search_prior_sens(s, &b->sens, &s->nsens, s->sens_param, err)))
                return rc;
            s->calib = s->nsens > 0 && o->prior_calib >= 0 && (o->prior_fn ? o->prior_at_fn != NULL : 1);
        }
    }
    if (b->has_prior && o->bo_init == 0) {
        /* A prior whose frontiers hold fewer than BO_PRIOR_DESIGN configurations says little
         * about where the frontier is (flat: see the stopping rule's settings below). */
        int got = 0;
        long picks[BO_PRIOR_DESIGN];
        const double *const *pr = (const double *const *)b->pr;
        rc = kr__search_front_picks(s, pr, BO_PRIOR_DESIGN, 0, picks, &got, err);
        b->flat = rc == KR_OK && got < BO_PRIOR_DESIGN;
        if (!b->flat && s->nsens > 0) {
            /* With sensitivity features: the first BO_PRIOR_DESIGN_FIXED as the prior predicts,
             * the rest once the models are fitted to them (refit_batch). With the line alone a
             * refit moves no point on or off the predicted frontiers (a + b·q is monotone in q),
             * and measured it was worse (docs/search.md, round 5): the 16 at once. */
            got = KR_MIN(got, s->calib ? BO_PRIOR_DESIGN_CALIB : BO_PRIOR_DESIGN_FIXED);
            b->refit_left = BO_PRIOR_DESIGN - got;
        }
        if (rc == KR_OK)
            rc = b->flat ? kr__search_prior_grid(s, err) : kr__search_prior_eval_picks(s, pr, picks, got, err);
    } else {
        rc = kr__search_lhs_design(s, n0, err);
    }
    if (rc == KR_OK) {
        s->batch = 0;
        rc = kr__search_batch_end(s, 0, err);
    }
    return rc;
}

/* The loop's memory: candidates, per-model vectors and the points' features. */
static int alloc_loop(bo *b, kr_error *err)
{
    size_t sz = (size_t)b->s->size;
    b->cand = malloc(sz * sizeof *b->cand);
    b->xc = malloc(sz * 2 * sizeof *b->xc);
    b->cc = malloc(sz * sizeof *b->cc);
    b->picked = malloc(sz);
    int ok = b->cand && b->xc && b->cc && b->picked;
    for (int k = 0; k < NMODELS; k++) {
        model *md = &b->md[k];
        ok &= (md->y = malloc(sz * sizeof *md->y)) != NULL;
        ok &= (md->mu = malloc(sz * sizeof *md->mu)) != NULL;
        ok &= (md->var = malloc(sz * sizeof *md->var)) != NULL;
        ok &= (md->u = malloc(sz * (size_t)b->q * sizeof *md->u)) != NULL;
    }
    b->X = malloc(sz * 2 * sizeof *b->X);
    b->cat = malloc(sz * sizeof *b->cat);
    if (!ok || !b->X || !b->cat)
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    return KR_OK;
}

/* The seed of batch s->batch's remaining-gain draws. */
static uint64_t gain_seed(const bo *b)
{
    return b->s->opt->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)b->s->batch * 104729 + 5;
}

/*
 * The absolute rule: in each plane, gains in a box of at least BO_SCALE_MARGIN of the
 * partition's time and energy scale, against max(relative, absolute) bounds. *conv: both planes
 * have converged (s->stop is set then).
 */
static int converged_abs(bo *b, int *conv, kr_error *err)
{
    kr__search *s = b->s;
    int cv[2], absb[2];
    double emin = INFINITY; /* the energy scale of both planes: the lowest total energy */
    for (long i = 0; i < s->n; i++)
        emin = fmin(emin, s->pts[i].energy_j);
    double gain[2];
    for (int pl = 0; pl < 2; pl++) {
        kr__front2 *f = pl ? &b->ftot : &b->feff;
        double hv_tight = f->hv, tmin = f->t[0], ymin = f->y[f->m - 1];
        double scale = tmin * emin + 1e-300;
        double rt0 = f->rt, ry0 = f->ry;
        f->rt = fmax(f->rt, tmin * (1 + BO_SCALE_MARGIN));
        f->ry = fmax(f->ry, ymin + BO_SCALE_MARGIN * emin);
        double real_x = 0;
        if (build_fronts_keep(b, b->n_prev, pl, &real_x))
            return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
        f->hv = kr__front2_hv(f);
        real_x = f->hv - real_x;
        kr__rng r;
        kr__rng_seed(&r, gain_seed(b) + (uint64_t)pl);
        double rem_x = remaining_gain(b, f, pl, &r, &b->scratch);
        double rel = b->stop * hv_tight, ab = b->stop_abs * scale;
        cv[pl] = rem_x < fmax(rel, ab) && real_x < fmax(rel, ab);
        absb[pl] = ab > rel;
        gain[pl] = rem_x / scale;
        f->rt = rt0;
        f->ry = ry0;
        f->hv = hv_tight;
    }
    s->gain_eff = gain[0];
    s->gain_total = gain[1];
    *conv = cv[0] && cv[1];
    if (*conv)
        snprintf(s->stop, sizeof s->stop, "converged (eff %s, total %s)", absb[0] ? "A" : "R", absb[1] ? "A" : "R");
    return KR_OK;
}

/*
 * Fits the models and applies the stopping rule; *conv: converged (the clocks are covered then).
 * *tbest: the fastest measured time.
 */
static int fit_and_check(bo *b, int *conv, double *tbest, kr_error *err)
{
    kr__search *s = b->s;
    int rc;
    if ((rc = fit_and_predict(b, b->X, b->cat, err)))
        return rc;
    /* What the last batch actually gained (against the current reference points), then the
     * frontiers of everything measured. */
    if (build_fronts(b, s->n, 1) || (b->has_prior && !b->flat && widen_ref(b, &b->scratch)) || build_fronts(b, b->n_prev, 0))
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    double real_eff = b->feff.hv, real_tot = b->ftot.hv;
    if (build_fronts(b, s->n, 0))
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    double hv_eff = b->feff.hv, hv_tot = b->ftot.hv;
    *tbest = b->feff.t[0];
    real_eff = hv_eff - real_eff;
    real_tot = hv_tot - real_tot;
    if (b->stop_abs > 0) {
        if ((rc = converged_abs(b, conv, err)))
            return rc;
    } else {
        kr__rng r;
        kr__rng_seed(&r, gain_seed(b));
        double rem_eff = remaining_gain(b, &b->feff, 0, &r, &b->scratch);
        double rem_tot = remaining_gain(b, &b->ftot, 1, &r, &b->scratch);
        double st = b->stop;
        *conv = rem_eff < st * hv_eff && rem_tot < st * hv_tot && real_eff < st * hv_eff && real_tot < st * hv_tot;
        if (*conv)
            snprintf(s->stop, sizeof s->stop, "converged");
    }
    return *conv ? cover_clocks(b, err) : KR_OK;
}

/*
 * The design's last BO_PRIOR_DESIGN − BO_PRIOR_DESIGN_FIXED points (with a prior that is not
 * flat): picked as the first ones were — greedily by the hypervolume they add, both planes — but
 * from the models just fitted to the first (the prior's line, its sensitivity features and the
 * residual GP; posterior means), with the measured points as the base. The first picks are where
 * the nominal prior puts the frontier; these are where the measurements say it is.
 */
static int refit_batch(bo *b, int *measured, kr_error *err)
{
    kr__search *s = b->s;
    size_t sz = (size_t)s->size;
    double *pv = malloc(sizeof(double) * 3 * sz);
    if (pv == NULL)
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    double *pp[3] = {pv, pv + sz, pv + 2 * sz};
    for (long i = 0; i < s->size; i++) {
        pp[0][i] = s->done[i] ? s->t[i] : NAN;
        pp[1][i] = s->done[i] ? s->ee[i] : NAN;
        pp[2][i] = s->done[i] ? s->e[i] : NAN;
    }
    for (int j = 0; j < b->m; j++)
        for (int k = 0; k < NMODELS; k++)
            pp[k][b->cand[j]] = back(b, k, b->md[k].mu[j]);
    long picks[BO_PRIOR_BATCH];
    int got = 0;
    int want = (int)KR_MIN((long)KR_MIN(BO_PRIOR_BATCH, b->refit_left), kr__search_left(s));
    b->refit_left -= want;
    int rc = kr__search_front_picks(s, (const double *const *)pp, want, 1, picks, &got, err);
    if (rc == KR_OK && got > 0) {
        s->batch++;
        b->n_prev = s->n;
        for (int i = 0; i < got && rc == KR_OK; i++)
            rc = kr__search_eval(s, picks[i], "refit", pp[0][picks[i]], pp[1][picks[i]], err);
        if (rc == KR_OK)
            rc = kr__search_batch_end(s, 0, err);
    }
    free(pv);
    *measured = got > 0; /* else (every prediction dominated) a usual batch on the same fit */
    return rc;
}

/* Builds the next batch greedily with fantasies and measures it; *empty: nothing to pick. */
static int run_batch(bo *b, double tbest, int *empty, kr_error *err)
{
    kr__search *s = b->s;
    kr__rng r;
    kr__rng_seed(&r, s->opt->seed * 0x2545f4914f6cdd1dULL + (uint64_t)s->batch * 7919 + 3);
    for (int i = 0; i < BO_SAMPLES; i++)
        for (int k = 0; k < NMODELS; k++)
            b->z[i][k] = kr__rng_normal(&r);
    memset(b->picked, 0, (size_t)b->m);
    int qb = (int)KR_MIN((long)b->q, KR_MIN(kr__search_left(s), (long)b->m));
    int chosen[64];
    enum role roles[64];
    for (int i = 0; i < qb; i++) {
        enum role ro = pattern[i % 8];
        int a = pick(b, &ro, tbest);
        if (a < 0) {
            qb = i;
            break;
        }
        chosen[i] = a;
        roles[i] = ro;
        b->picked[a] = 1;
        fantasise(b, a, i);
        tbest = fmin(tbest, back(b, M_TIME, b->md[M_TIME].mu[a]));
    }
    *empty = qb == 0;
    if (*empty)
        return KR_OK;
    s->batch++;
    b->n_prev = s->n;
    int rc;
    for (int i = 0; i < qb; i++) {
        int a = chosen[i];
        if ((rc = kr__search_eval(s, b->cand[a], role_names[roles[i]], back(b, M_TIME, b->md[M_TIME].mu[a]),
                                  back(b, M_EFF, b->md[M_EFF].mu[a]), err)))
            return rc;
    }
    return kr__search_batch_end(s, 0, err);
}

/* The loop: fit, check the stopping rule, measure a batch, until converged or out of budget. */
static int loop(bo *b, kr_error *err)
{
    kr__search *s = b->s;
    for (;;) {
        if (s->n >= s->size) {
            snprintf(s->stop, sizeof s->stop, "space exhausted");
            return KR_OK;
        }
        if (kr__search_left(s) <= 0) {
            snprintf(s->stop, sizeof s->stop, "budget");
            return KR_OK;
        }
        int conv = 0, empty = 0, rc;
        double tbest = 0;
        if ((rc = fit_and_check(b, &conv, &tbest, err)) || conv)
            return rc;
        int refitted = 0;
        if ((b->refit_left && (rc = refit_batch(b, &refitted, err))) ||
            (!refitted && (rc = run_batch(b, tbest, &empty, err))))
            return rc;
        if (empty) {
            snprintf(s->stop, sizeof s->stop, "converged");
            return KR_OK;
        }
    }
}

int kr__search_bo(kr__search *s, kr_error *err)
{
    const kr_search_config *o = s->opt;
    const kr_search_space *sp = &s->sp;
    long size = s->size;
    if (o->max_evals == 0)
        s->cap = KR_MIN(s->cap, KR_MAX(size / 2, KR_MIN(size, (long)sp->nclocks + 8)));
    long n0 = o->bo_init > 0 ? o->bo_init : KR_MAX((long)sp->nclocks, (long)ceil(0.03 * size));
    bo b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.has_prior = o->prior != NULL || o->prior_fn != NULL;
    b.stop_abs = o->bo_stop_abs != 0 ? o->bo_stop_abs : b.has_prior ? BO_DEFAULT_STOP_ABS : -1;
    int rc = start(&b, n0, err);
    /* A flat prior keeps the settings of a search without one: the round-2 settings (batches of
     * BO_PRIOR_BATCH, BO_PRIOR_STOP, the box widened to the predicted frontier) trust the
     * prior's frontier, and on the replayed A100 partition, whose prior frontier is one point,
     * they stopped before the total-energy plane was found (docs/search.md, round 3). */
    int trust = b.has_prior && !b.flat;
    b.stop = o->bo_stop != 0 ? o->bo_stop : trust ? BO_PRIOR_STOP : BO_DEFAULT_STOP;
    if (rc == KR_OK) {
        b.q = KR_MIN(64, o->bo_batch > 0 ? o->bo_batch : trust ? BO_PRIOR_BATCH : size >= 400 ? 8 : 4);
        rc = alloc_loop(&b, err);
    }
    if (rc == KR_OK)
        rc = loop(&b, err);
    bo_free(&b);
    return rc;
}
