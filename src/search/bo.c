/*
 * bo.c — the bo strategy: batch Bayesian optimisation of a partition's (time, effective energy)
 * and (time, total energy) frontiers with a stopping rule (search.h, docs/search.md).
 *
 * Surrogate. Two independent Gaussian processes (gp.c): log time and log effective energy (raw
 * effective energy if some measured value is not positive), over the features
 *   x1 = (f − f_min) / (f_max − f_min)           (SM clock),
 *   x2 = log(s / s_min) / log(s_max / s_min)      (comm SMs; bandwidth grows ~ with s, so a log
 *                                                  axis makes the response smoother),
 * and the launch slot as a categorical input. Hyperparameters are refitted every batch by
 * marginal likelihood, warm-started from the previous batch.
 *
 * Initial design. One configuration per clock — composition combines configurations of the
 * same clock only (kareus-method.md §5), so every clock needs at least one point — with the
 * comm-SM strata spread Latin-hypercube style and slots balanced; then uniform random extras up
 * to n_init. All random choices come from the seed.
 *
 * Batch (size q). Built greedily; each member is the argmax of one criterion over the
 * unevaluated configurations, and after each pick the batch "believes" the pick's predicted
 * median (kriging believer): the median joins the current frontiers and the posterior
 * variances of both GPs are updated exactly for one more observation at the pick (rank-one
 * downdates, so later picks avoid its neighbourhood). Criteria, in the repeating order
 * EFF, TOT, TIME, EFF, TOT, EXPLORE, EFF, TOT:
 *   EFF / TOT  expected hypervolume improvement in the (time, effective energy) / (time, total
 *              energy) plane, E[HVI(t, y)] over the predictive distribution, by Monte Carlo with
 *              S = 64 common normal draws per batch (seeded): t = exp(μ_t + σ_t z₁),
 *              E_eff = exp(μ_e + σ_e z₂), E = E_eff + P_static·t. Candidates whose optimistic
 *              corner (μ − 3σ) is dominated are skipped (their EHVI is ~0).
 *   TIME       probability of beating the fastest time so far (falls back to EFF below 2 %).
 *   EXPLORE    the largest standardised predictive spread among configurations whose
 *              optimistic corner is not dominated.
 * Reference point of each plane: the current frontier's nadir plus 10 % of its range (the same
 * construction as the benchmark's quality figure, on the observed frontier).
 *
 * Stopping rule. Before measuring a batch, its expected improvement — the sum of the members'
 * EHVI in each plane, each computed under the fantasies of the members before it (greedy
 * q-EHVI) — is compared with the current hypervolume; when it is below bo_stop (default
 * 1e-3) in both planes the search has converged and stops without measuring that batch. A cap
 * (max_evals, default half the space) bounds the cost in any case.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "search_internal.h"

#define BO_SAMPLES 64
#define BO_REF_MARGIN 0.1
#define BO_DEFAULT_STOP 1e-3

enum role { EFF, TOT, TIME, EXPLORE };
static const enum role pattern[8] = {EFF, TOT, TIME, EFF, TOT, EXPLORE, EFF, TOT};
static const char *const role_names[] = {"ehvi_eff", "ehvi_total", "time", "explore"};

typedef struct bo {
    kr__search *s;
    double P;                /* static power */
    int log_e;               /* effective energy modelled on a log scale */
    /* candidates */
    int m;
    long *cand;
    double *xc;              /* m × 2 features */
    int *cc;                 /* m slot categories */
    double *mt, *vt, *me, *ve; /* posterior means/variances (target units) */
    double *Vt, *Ve;         /* m × n rows of L⁻¹k for each GP */
    double *ut, *ue;         /* q × m fantasy vectors */
    unsigned char *picked;
    kr__gp gpt, gpe;
    int have_hyper;
    kr__gp_hyper ht, he;
    double z[BO_SAMPLES][2];
    kr__front2 feff, ftot;
} bo;

static void feature(const kr__search *s, long idx, double *x, int *cat)
{
    kr_config c;
    kr_search_space_config(&s->sp, idx, &c);
    const kr_search_space *sp = &s->sp;
    double fmin = sp->clocks[sp->nclocks - 1], fmax = sp->clocks[0];
    x[0] = fmax > fmin ? (c.freq_mhz - fmin) / (fmax - fmin) : 0.0;
    double smin = sp->sms[0], smax = sp->sms[sp->nsms - 1];
    x[1] = smax > smin && smin > 0 ? log(c.sms / smin) / log(smax / smin) : 0.0;
    long per_clock = (long)sp->nslots * sp->nsms;
    *cat = (int)((idx % per_clock) / sp->nsms);
}

static double tr_e(const bo *b, double v)
{
    return b->log_e ? exp(v) : v;
}

/* ---- frontiers ------------------------------------------------------------------------- */

/* Rebuilds both frontiers from the evaluated points and sets their reference points. */
static int build_fronts(bo *b)
{
    kr__search *s = b->s;
    b->feff.m = b->ftot.m = 0;
    for (long i = 0; i < s->n; i++) {
        const kr_measured *p = &s->pts[i];
        if (kr__front2_add(&b->feff, p->time_s, p->eff_energy_j) || kr__front2_add(&b->ftot, p->time_s, p->energy_j))
            return KR_ENOMEM;
    }
    kr__front2 *fs[2] = {&b->feff, &b->ftot};
    for (int k = 0; k < 2; k++) {
        kr__front2 *f = fs[k];
        double t0 = f->t[0], t1 = f->t[f->m - 1], y0 = f->y[f->m - 1], y1 = f->y[0];
        f->rt = t1 + BO_REF_MARGIN * (t1 > t0 ? t1 - t0 : fabs(t1));
        f->ry = y1 + BO_REF_MARGIN * (y1 > y0 ? y1 - y0 : fabs(y1) + 1e-12);
        f->hv = kr__front2_hv(f);
    }
    return KR_OK;
}

/* ---- acquisition ------------------------------------------------------------------------ */

/* Current (fantasy-updated) posterior sd of candidate j. */
static double sd_t(const bo *b, int j)
{
    return sqrt(fmax(b->vt[j], 0.0));
}

static double sd_e(const bo *b, int j)
{
    return sqrt(fmax(b->ve[j], 0.0));
}

/* Optimistic corner of candidate j in a plane: is it dominated by the plane's frontier? */
static int hopeless(const bo *b, int j, const kr__front2 *f, int total)
{
    double t = exp(b->mt[j] - 3 * sd_t(b, j)), e = tr_e(b, b->me[j] - 3 * sd_e(b, j));
    double y = total ? e + b->P * t : e;
    return kr__front2_hvi(f, t, y) <= 0.0;
}

static double ehvi(const bo *b, int j, const kr__front2 *f, int total)
{
    if (hopeless(b, j, f, total))
        return 0.0;
    double st = sd_t(b, j), se = sd_e(b, j), sum = 0;
    for (int k = 0; k < BO_SAMPLES; k++) {
        double t = exp(b->mt[j] + st * b->z[k][0]), e = tr_e(b, b->me[j] + se * b->z[k][1]);
        sum += kr__front2_hvi(f, t, total ? e + b->P * t : e);
    }
    return sum / BO_SAMPLES;
}

/* Standard normal CDF. */
static double phi(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* Picks the best unpicked candidate for role r; returns its index or -1. */
static int pick(bo *b, enum role *r, double tbest)
{
    int best = -1;
    double bv = 0;
    if (*r == TIME) {
        for (int j = 0; j < b->m; j++) {
            if (b->picked[j])
                continue;
            double v = phi((log(tbest) - b->mt[j]) / fmax(sd_t(b, j), 1e-12));
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
    double gt = b->gpt.ysd > 0 ? b->gpt.ysd : 1, ge = b->gpe.ysd > 0 ? b->gpe.ysd : 1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int j = 0; j < b->m; j++) {
            if (b->picked[j] || (pass == 0 && hopeless(b, j, &b->feff, 0) && hopeless(b, j, &b->ftot, 1)))
                continue;
            double v = sd_t(b, j) / gt + sd_e(b, j) / ge;
            if (best < 0 || v > bv) {
                bv = v;
                best = j;
            }
        }
    return best;
}

/* Kriging-believer update after picking candidate a (the k-th pick of the batch). */
static void fantasise(bo *b, int a, int k)
{
    kr__gp *gps[2] = {&b->gpt, &b->gpe};
    double *vars[2] = {b->vt, b->ve};
    double *V[2] = {b->Vt, b->Ve};
    double *U[2] = {b->ut, b->ue};
    int n0 = b->gpt.n;
    for (int g = 0; g < 2; g++) {
        double denom = sqrt(fmax(vars[g][a], 0.0) + kr__gp_noise_var(gps[g]) + 1e-300);
        double *u = U[g] + (size_t)k * b->m;
        const double *va = V[g] + (size_t)a * n0;
        for (int j = 0; j < b->m; j++) {
            double c = kr__gp_post_cov(gps[g], b->xc + 2 * j, b->cc[j], V[g] + (size_t)j * n0, b->xc + 2 * a, b->cc[a], va);
            for (int i = 0; i < k; i++)
                c -= U[g][(size_t)i * b->m + j] * U[g][(size_t)i * b->m + a];
            u[j] = c / denom;
        }
        for (int j = 0; j < b->m; j++)
            vars[g][j] -= u[j] * u[j];
    }
    double t = exp(b->mt[a]), e = tr_e(b, b->me[a]);
    kr__front2_add(&b->feff, t, e);
    kr__front2_add(&b->ftot, t, e + b->P * t);
}

/* ---- the loop --------------------------------------------------------------------------- */

static void bo_free(bo *b)
{
    free(b->cand);
    free(b->xc);
    free(b->cc);
    free(b->mt);
    free(b->vt);
    free(b->me);
    free(b->ve);
    free(b->Vt);
    free(b->Ve);
    free(b->ut);
    free(b->ue);
    free(b->picked);
    kr__front2_free(&b->feff);
    kr__front2_free(&b->ftot);
    kr__gp_free(&b->gpt);
    kr__gp_free(&b->gpe);
}

static int initial_design(kr__search *s, long n0, kr_error *err)
{
    const kr_search_space *sp = &s->sp;
    kr__rng r;
    kr__rng_seed(&r, s->opt->seed * 0x9e3779b97f4a7c15ULL + 17);
    int nc = sp->nclocks;
    int *perm = malloc((size_t)nc * sizeof *perm), *slotp = malloc((size_t)nc * sizeof *slotp);
    if (!perm || !slotp) {
        free(perm);
        free(slotp);
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    }
    for (int i = 0; i < nc; i++)
        perm[i] = slotp[i] = i;
    for (int i = nc - 1; i > 0; i--) { /* Fisher–Yates, twice */
        int j = (int)kr__rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        j = (int)kr__rng_below(&r, (uint64_t)i + 1);
        t = slotp[i];
        slotp[i] = slotp[j];
        slotp[j] = t;
    }
    int rc = KR_OK;
    for (int i = 0; i < nc && rc == KR_OK && kr__search_left(s) > 0 && s->n < n0; i++) {
        int smi = (int)(((long)perm[i] * sp->nsms + (long)kr__rng_below(&r, (uint64_t)sp->nsms)) / nc);
        smi = KR_MIN(smi, sp->nsms - 1);
        int sli = slotp[i] % sp->nslots;
        rc = kr__search_eval(s, ((long)i * sp->nslots + sli) * sp->nsms + smi, "init", NAN, NAN, err);
    }
    free(perm);
    free(slotp);
    while (rc == KR_OK && s->n < n0 && kr__search_left(s) > 0 && s->n < s->size) {
        long idx = (long)kr__rng_below(&r, (uint64_t)s->size);
        while (s->done[idx])
            idx = (idx + 1) % s->size;
        rc = kr__search_eval(s, idx, "init", NAN, NAN, err);
    }
    return rc;
}

int kr__search_bo(kr__search *s, kr_error *err)
{
    const kr_search_options *o = s->opt;
    const kr_search_space *sp = &s->sp;
    long size = s->size;
    if (o->max_evals == 0)
        s->cap = KR_MAX(size / 2, KR_MIN(size, (long)sp->nclocks + 8));
    long n0 = o->bo_init > 0 ? o->bo_init : KR_MAX((long)sp->nclocks, (long)ceil(0.03 * size));
    int q = o->bo_batch > 0 ? o->bo_batch : size >= 400 ? 8 : 4;
    double stop = o->bo_stop == 0 ? BO_DEFAULT_STOP : o->bo_stop;
    int rc = initial_design(s, n0, err);
    if (rc)
        return rc;
    s->batch = 0;
    kr__search_progress(s, 0);
    bo b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.P = s->job->static_power_w;
    size_t sz = (size_t)size;
    b.cand = malloc(sz * sizeof *b.cand);
    b.xc = malloc(sz * 2 * sizeof *b.xc);
    b.cc = malloc(sz * sizeof *b.cc);
    b.mt = malloc(sz * sizeof *b.mt);
    b.vt = malloc(sz * sizeof *b.vt);
    b.me = malloc(sz * sizeof *b.me);
    b.ve = malloc(sz * sizeof *b.ve);
    b.ut = malloc(sz * (size_t)q * sizeof *b.ut);
    b.ue = malloc(sz * (size_t)q * sizeof *b.ue);
    b.picked = malloc(sz);
    double *X = malloc(sz * 2 * sizeof *X), *yt = malloc(sz * sizeof *yt), *ye = malloc(sz * sizeof *ye);
    int *cat = malloc(sz * sizeof *cat);
    if (!b.cand || !b.xc || !b.cc || !b.mt || !b.vt || !b.me || !b.ve || !b.ut || !b.ue || !b.picked || !X || !yt ||
        !ye || !cat) {
        rc = kr_error_set(err, KR_ENOMEM, "bo: out of memory");
        goto out;
    }
    kr__rng r;
    for (;;) {
        if (s->n >= size) {
            snprintf(s->stop, sizeof s->stop, "space exhausted");
            break;
        }
        if (kr__search_left(s) <= 0) {
            snprintf(s->stop, sizeof s->stop, "budget");
            break;
        }
        /* Training data. */
        int n = (int)s->n;
        b.log_e = 1;
        for (int i = 0; i < n; i++)
            b.log_e &= s->pts[i].eff_energy_j > 0;
        for (int i = 0; i < n; i++) {
            long idx;
            kr_search_space_index(sp, &s->pts[i].config, &idx, NULL);
            feature(s, idx, X + 2 * i, &cat[i]);
            yt[i] = log(s->pts[i].time_s);
            ye[i] = b.log_e ? log(s->pts[i].eff_energy_j) : s->pts[i].eff_energy_j;
        }
        if ((rc = kr__gp_fit(&b.gpt, X, cat, yt, n, 2, b.have_hyper ? &b.ht : NULL, err)) ||
            (rc = kr__gp_fit(&b.gpe, X, cat, ye, n, 2, b.have_hyper ? &b.he : NULL, err)))
            goto out;
        b.ht = b.gpt.h;
        b.he = b.gpe.h;
        b.have_hyper = 1;
        /* Candidates: every configuration not evaluated yet. */
        b.m = 0;
        for (long i = 0; i < size; i++)
            if (!s->done[i]) {
                b.cand[b.m] = i;
                feature(s, i, b.xc + 2 * b.m, &b.cc[b.m]);
                b.m++;
            }
        free(b.Vt);
        free(b.Ve);
        b.Vt = malloc((size_t)b.m * n * sizeof *b.Vt);
        b.Ve = malloc((size_t)b.m * n * sizeof *b.Ve);
        if (!b.Vt || !b.Ve) {
            rc = kr_error_set(err, KR_ENOMEM, "bo: out of memory");
            goto out;
        }
        if ((rc = kr__gp_predict(&b.gpt, b.xc, b.cc, b.m, b.mt, b.vt, b.Vt, err)) ||
            (rc = kr__gp_predict(&b.gpe, b.xc, b.cc, b.m, b.me, b.ve, b.Ve, err)))
            goto out;
        if (build_fronts(&b)) {
            rc = kr_error_set(err, KR_ENOMEM, "bo: out of memory");
            goto out;
        }
        double hv_eff = b.feff.hv, hv_tot = b.ftot.hv, tbest = b.feff.t[0];
        kr__rng_seed(&r, o->seed * 0x2545f4914f6cdd1dULL + (uint64_t)s->batch * 7919 + 3);
        for (int k = 0; k < BO_SAMPLES; k++) {
            b.z[k][0] = kr__rng_normal(&r);
            b.z[k][1] = kr__rng_normal(&r);
        }
        /* Greedy batch with fantasies. */
        memset(b.picked, 0, (size_t)b.m);
        int qb = (int)KR_MIN((long)q, KR_MIN(kr__search_left(s), (long)b.m));
        int chosen[64];
        enum role roles[64];
        double gain_eff = 0, gain_tot = 0;
        for (int k = 0; k < qb && k < 64; k++) {
            enum role ro = pattern[k % 8];
            int a = pick(&b, &ro, tbest);
            if (a < 0) {
                qb = k;
                break;
            }
            gain_eff += ehvi(&b, a, &b.feff, 0);
            gain_tot += ehvi(&b, a, &b.ftot, 1);
            chosen[k] = a;
            roles[k] = ro;
            b.picked[a] = 1;
            fantasise(&b, a, k);
            tbest = fmin(tbest, exp(b.mt[a]));
        }
        if (qb == 0 || (gain_eff < stop * hv_eff && gain_tot < stop * hv_tot)) {
            snprintf(s->stop, sizeof s->stop, "converged");
            break;
        }
        s->batch++;
        for (int k = 0; k < qb; k++) {
            int a = chosen[k];
            if ((rc = kr__search_eval(s, b.cand[a], role_names[roles[k]], exp(b.mt[a]), tr_e(&b, b.me[a]), err)))
                goto out;
        }
        kr__search_progress(s, 0);
    }
out:
    free(X);
    free(yt);
    free(ye);
    free(cat);
    bo_free(&b);
    return rc;
}
