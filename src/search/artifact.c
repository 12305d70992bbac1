/*
 * artifact.c — the artifact strategy: the published search's selection rule, reimplemented from
 * its description (kareus-method.md §2–§3) as a baseline that runs through the same driver,
 * backend, log and quality figures as bo.
 *
 * As published:
 *   - budget n_init + batches × acq per key (the §2 table; unknown keys: 96 + 4 × 32), no
 *     convergence test; with artifact_budget B the same shape is scaled: n_init' =
 *     round(B · n_init / total), acq' = ceil((B − n_init') / batches), the last batch cut at B;
 *   - initial design drawn uniformly without replacement (seeded here; the artifact is not);
 *   - features [clock MHz, SM index, one-hot slot]; point models of effective energy and time,
 *     a derived real-energy model E_eff + P_static · t, and a 5-member bootstrap ensemble (80 %
 *     of the rows with replacement, seeds 42..46) used only for the spread σ_E + σ_t (raw J + s);
 *   - per candidate, the plug-in hypervolume gain of the mean prediction over the observed
 *     points, in two contexts, (E_eff, t) and (E_real, t), each min–max normalised with that
 *     round's observed extremes and a reference point at 1.1 × the observed maxima;
 *   - batch = top round(0.4k) by real-energy gain, then top round(0.2k) by effective-energy
 *     gain, top round(0.2k) by lowest predicted time, the rest by largest spread (each excluding
 *     earlier picks; Python's round, i.e. ties to even); any shortfall by max of the two gains.
 * Difference: the point regressor is our gradient-boosted trees (gbrt.c) with XGBoost's
 * formulation and the published settings, not XGBoost itself; ties are broken by configuration
 * order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gbrt.h"
#include "search_internal.h"

typedef struct budget_row {
    const char *key;
    int n_init, batches, acq;
} budget_row;

/* kareus-method.md §2 table. */
static const budget_row budget_table[] = {
    {"fwd_attn", 96, 4, 32},   {"fwd_mlp", 96, 4, 32},    {"bwd_attn", 96, 4, 32},   {"bwd_mlp", 96, 4, 32},
    {"fwd_qkv_ar", 48, 4, 16}, {"fwd_qkv_ag", 48, 4, 16}, {"fwd_ao_ag", 36, 3, 16},  {"fwd_ao_ar", 36, 3, 16},
    {"bwd_qkv_ar", 48, 4, 16}, {"bwd_qkv_rs", 48, 4, 16}, {"bwd_a_rs", 36, 3, 16},   {"bwd_a_ag", 36, 3, 16},
    {"bwd_o_ag", 36, 3, 16},   {"bwd_o_ar", 36, 3, 16},
};

#define ENSEMBLE 5


/* Where sms falls on the SM list, as a fractional index (the baseline's count off the list). */
static double sm_position(const kr_search_space *sp, int sms)
{
    if (sms <= sp->sms[0])
        return 0;
    for (int i = 1; i < sp->nsms; i++)
        if (sms <= sp->sms[i])
            return i - 1 + (double)(sms - sp->sms[i - 1]) / (sp->sms[i] - sp->sms[i - 1]);
    return sp->nsms - 1;
}

static void features(const kr__search *s, long idx, double *x)
{
    kr_config c;
    kr_search_space_config(&s->sp, idx, &c);
    int ci, cat, mi;
    kr__space_coords(&s->sp, idx, &ci, &cat, &mi);
    x[0] = c.freq_mhz;
    x[1] = mi >= 0 ? mi : sm_position(&s->sp, c.sms); /* the SM index, not the count, as published */
    /* One-hot of the launch; with kernels, of (kernel, slot) — the published tool had one kernel. */
    for (int i = 0; i < kr__space_ncat(&s->sp); i++)
        x[2 + i] = i == cat;
}

/* Plug-in HVI context: observed points normalised, reference 1.1 × max. */
typedef struct context {
    kr__front2 f;
    double tmin, ts, ymin, ys; /* normalisation: (v − min) / scale */
} context;

typedef struct art {
    int p;           /* features */
    double *F;       /* size × p features of every configuration */
    double *X, *ye, *yt, *Xb, *yeb, *ytb;
    double *pe, *pt, *sdE, *sdT, *hr, *hd; /* per candidate */
    double *acc_e, *acc_e2, *acc_t, *acc_t2;
    long *cand;
    int m;           /* candidates */
    unsigned char *taken;
    kr__gbrt me, mt, be, bt;
    context ce, cr; /* HVI contexts: effective and total energy */
} art;

static int context_build(context *c, const kr__search *s, int real)
{
    c->f.m = 0;
    double tmin = INFINITY, tmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (long i = 0; i < s->n; i++) {
        double y = real ? s->pts[i].energy_j : s->pts[i].eff_energy_j;
        tmin = fmin(tmin, s->pts[i].time_s);
        tmax = fmax(tmax, s->pts[i].time_s);
        ymin = fmin(ymin, y);
        ymax = fmax(ymax, y);
    }
    c->tmin = tmin;
    c->ymin = ymin;
    c->ts = tmax > tmin ? tmax - tmin : 1.0;
    c->ys = ymax > ymin ? ymax - ymin : 1.0;
    c->f.rt = (1.1 * tmax - tmin) / c->ts;
    c->f.ry = (1.1 * ymax - ymin) / c->ys;
    for (long i = 0; i < s->n; i++) {
        double y = real ? s->pts[i].energy_j : s->pts[i].eff_energy_j;
        if (kr__front2_add(&c->f, (s->pts[i].time_s - tmin) / c->ts, (y - ymin) / c->ys))
            return KR_ENOMEM;
    }
    return KR_OK;
}

static double context_hvi(const context *c, double t, double y)
{
    return kr__front2_hvi(&c->f, (t - c->tmin) / c->ts, (y - c->ymin) / c->ys);
}

/* Index (into cand) of the best untaken candidate by score (higher first; ties: lowest index). */
static int top(const art *a, int m, const double *score, int lower_is_better)
{
    int best = -1;
    for (int j = 0; j < m; j++) {
        if (a->taken[j])
            continue;
        double v = lower_is_better ? -score[j] : score[j];
        double bv = best < 0 ? 0 : lower_is_better ? -score[best] : score[best];
        if (best < 0 || v > bv)
            best = j;
    }
    return best;
}

static void art_free(art *a)
{
    kr__front2_free(&a->ce.f);
    kr__front2_free(&a->cr.f);
    free(a->F);
    free(a->X);
    free(a->ye);
    free(a->yt);
    free(a->Xb);
    free(a->yeb);
    free(a->ytb);
    free(a->pe);
    free(a->pt);
    free(a->sdE);
    free(a->sdT);
    free(a->hr);
    free(a->hd);
    free(a->acc_e);
    free(a->acc_e2);
    free(a->acc_t);
    free(a->acc_t2);
    free(a->cand);
    free(a->taken);
    kr__gbrt_free(&a->me);
    kr__gbrt_free(&a->mt);
    kr__gbrt_free(&a->be);
    kr__gbrt_free(&a->bt);
}

/* The schedule: the published row for the partition, scaled to o->artifact_budget if set. */
static void schedule(kr__search *s, long *n_init, long *acq, int *batches)
{
    const kr_search_config *o = s->opt;
    budget_row row = {s->p->key, 96, 4, 32};
    for (size_t i = 0; i < KR_ARRAY_LEN(budget_table); i++)
        if (strcmp(budget_table[i].key, s->p->key) == 0)
            row = budget_table[i];
    long total = row.n_init + (long)row.batches * row.acq;
    *n_init = row.n_init;
    *acq = row.acq;
    *batches = row.batches;
    if (o->artifact_budget > 0) {
        *n_init = KR_MAX(1L, (long)nearbyint((double)o->artifact_budget * row.n_init / total));
        *n_init = KR_MIN(*n_init, o->artifact_budget);
        *acq = KR_MAX(1L, (o->artifact_budget - *n_init + row.batches - 1) / row.batches);
        total = o->artifact_budget;
    }
    if (total < s->cap)
        s->cap = total;
}

/* Initial design: a seeded uniform draw of n_init configurations without replacement. */
static int init_design(kr__search *s, long n_init, kr_error *err)
{
    long size = s->size;
    kr__rng r;
    kr__rng_seed(&r, s->opt->seed * 0x9e3779b97f4a7c15ULL + 29);
    long *perm = malloc((size_t)size * sizeof *perm);
    if (perm == NULL)
        return kr_error_set(err, KR_ENOMEM, "artifact: out of memory");
    for (long i = 0; i < size; i++)
        perm[i] = i;
    int rc = KR_OK;
    for (long i = 0; i < size && s->n < n_init && kr__search_left(s) > 0 && rc == KR_OK; i++) {
        long j = i + (long)kr__rng_below(&r, (uint64_t)(size - i)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        rc = kr__search_eval(s, perm[i], "init", NAN, NAN, err);
    }
    free(perm);
    return rc ? rc : kr__search_batch_end(s, 0, err);
}

/* The rounds' memory, and every configuration's features in a->F. */
static int art_alloc(art *a, const kr__search *s, kr_error *err)
{
    a->p = 2 + kr__space_ncat(&s->sp);
    size_t sz = (size_t)s->size, p = (size_t)a->p;
    a->F = malloc(sz * p * sizeof *a->F);
    a->X = malloc(sz * p * sizeof *a->X);
    a->Xb = malloc(sz * p * sizeof *a->Xb);
    a->ye = malloc(sz * sizeof *a->ye);
    a->yt = malloc(sz * sizeof *a->yt);
    a->yeb = malloc(sz * sizeof *a->yeb);
    a->ytb = malloc(sz * sizeof *a->ytb);
    double **vec[] = {&a->pe, &a->pt, &a->sdE, &a->sdT, &a->hr, &a->hd, &a->acc_e, &a->acc_e2, &a->acc_t, &a->acc_t2};
    int ok = a->F && a->X && a->Xb && a->ye && a->yt && a->yeb && a->ytb;
    for (size_t i = 0; i < KR_ARRAY_LEN(vec); i++)
        ok &= (*vec[i] = malloc(sz * sizeof **vec[i])) != NULL;
    a->cand = malloc(sz * sizeof *a->cand);
    a->taken = malloc(sz);
    if (!ok || !a->cand || !a->taken)
        return kr_error_set(err, KR_ENOMEM, "artifact: out of memory");
    for (long i = 0; i < s->size; i++)
        features(s, i, a->F + (size_t)i * p);
    return KR_OK;
}

/* Round `round`'s models: the two GBRTs on every evaluated point, their predictions of the
 * candidates (a->m of them), and a bootstrap ensemble's sums for the uncertainty score. */
static int fit_round(art *a, const kr__search *s, int round, kr_error *err)
{
    size_t p = (size_t)a->p;
    int n = (int)s->n, rc;
    for (int i = 0; i < n; i++) {
        long idx;
        kr_search_space_index(&s->sp, &s->pts[i].config, &idx, NULL);
        memcpy(a->X + (size_t)i * p, a->F + (size_t)idx * p, p * sizeof *a->X);
        a->ye[i] = s->pts[i].eff_energy_j;
        a->yt[i] = s->pts[i].time_s;
    }
    uint64_t rs = s->opt->seed * 1000003ULL + (uint64_t)round;
    if ((rc = kr__gbrt_train(&a->me, a->X, a->ye, n, a->p, rs, err)) ||
        (rc = kr__gbrt_train(&a->mt, a->X, a->yt, n, a->p, rs + 1, err)))
        return rc;
    a->m = 0;
    for (long i = 0; i < s->size; i++)
        if (!s->done[i])
            a->cand[a->m++] = i;
    for (int j = 0; j < a->m; j++) {
        const double *x = a->F + (size_t)a->cand[j] * p;
        a->pe[j] = kr__gbrt_predict(&a->me, x);
        a->pt[j] = kr__gbrt_predict(&a->mt, x);
        a->acc_e[j] = a->acc_e2[j] = a->acc_t[j] = a->acc_t2[j] = 0;
    }
    int nb = KR_MAX(1, (int)(0.8 * n));
    for (int k = 0; k < ENSEMBLE; k++) {
        kr__rng br;
        kr__rng_seed(&br, 42 + (uint64_t)k);
        for (int i = 0; i < nb; i++) {
            int src = (int)kr__rng_below(&br, (uint64_t)n);
            memcpy(a->Xb + (size_t)i * p, a->X + (size_t)src * p, p * sizeof *a->X);
            a->yeb[i] = a->ye[src];
            a->ytb[i] = a->yt[src];
        }
        if ((rc = kr__gbrt_train(&a->be, a->Xb, a->yeb, nb, a->p, 42 + (uint64_t)k, err)) ||
            (rc = kr__gbrt_train(&a->bt, a->Xb, a->ytb, nb, a->p, 142 + (uint64_t)k, err)))
            return rc;
        for (int j = 0; j < a->m; j++) {
            const double *x = a->F + (size_t)a->cand[j] * p;
            double e = kr__gbrt_predict(&a->be, x), t = kr__gbrt_predict(&a->bt, x);
            a->acc_e[j] += e;
            a->acc_e2[j] += e * e;
            a->acc_t[j] += t;
            a->acc_t2[j] += t * t;
        }
    }
    return KR_OK;
}

/* The candidates' scores: the uncertainty σ_E + σ_t (in sdE) and the plug-in HVIs. */
static int score(art *a, const kr__search *s, kr_error *err)
{
    const double P = s->job->static_power_w;
    if (context_build(&a->ce, s, 0) || context_build(&a->cr, s, 1))
        return kr_error_set(err, KR_ENOMEM, "artifact: out of memory");
    for (int j = 0; j < a->m; j++) {
        double me = a->acc_e[j] / ENSEMBLE, mt = a->acc_t[j] / ENSEMBLE;
        a->sdE[j] = sqrt(fmax(a->acc_e2[j] / ENSEMBLE - me * me, 0));
        a->sdT[j] = sqrt(fmax(a->acc_t2[j] / ENSEMBLE - mt * mt, 0));
        a->sdE[j] += a->sdT[j]; /* the uncertainty score σ_E + σ_t */
        a->hd[j] = context_hvi(&a->ce, a->pt[j], a->pe[j]);
        a->hr[j] = context_hvi(&a->cr, a->pt[j], a->pe[j] + P * a->pt[j]);
    }
    return KR_OK;
}

/* Picks up to k candidates: 40 % by real-energy HVI, 20 % by dynamic-energy HVI, 20 % fastest,
 * the rest by uncertainty, a shortfall by the larger gain. Returns how many (≤ 512). */
static int choose(art *a, long k, int chosen[512], const char *why[512])
{
    int m = a->m;
    long k_real = (long)nearbyint(0.4 * (double)k), k_dyn = (long)nearbyint(0.2 * (double)k);
    long k_time = (long)nearbyint(0.2 * (double)k);
    long k_unc = KR_MAX(0L, k - k_real - k_dyn - k_time);
    memset(a->taken, 0, (size_t)m);
    const struct {
        long count;
        const double *score;
        int lower;
        const char *why;
    } passes[4] = {{k_real, a->hr, 0, "hvi_real"},
                   {k_dyn, a->hd, 0, "hvi_dyn"},
                   {k_time, a->pt, 1, "time"},
                   {k_unc, a->sdE, 0, "uncertainty"}};
    int nchosen = 0;
    for (int ps = 0; ps < 4; ps++)
        for (long c = 0; c < passes[ps].count && nchosen < 512; c++) {
            int j = top(a, m, passes[ps].score, passes[ps].lower);
            if (j < 0)
                break;
            a->taken[j] = 1;
            chosen[nchosen] = j;
            why[nchosen++] = passes[ps].why;
        }
    while (nchosen < k && nchosen < 512) { /* shortfall: max of the two gains */
        for (int j = 0; j < m; j++)
            a->hd[j] = fmax(a->hd[j], a->hr[j]);
        int j = top(a, m, a->hd, 0);
        if (j < 0)
            break;
        a->taken[j] = 1;
        chosen[nchosen] = j;
        why[nchosen++] = "fill";
    }
    return nchosen;
}

/* The rounds after the initial design. */
static int rounds(art *a, kr__search *s, long acq, int batches, kr_error *err)
{
    int rc;
    for (int round = 1; round <= batches; round++) {
        if (kr__search_left(s) <= 0 || s->n >= s->size)
            break;
        if ((rc = fit_round(a, s, round, err)) || (rc = score(a, s, err)))
            return rc;
        int chosen[512];
        const char *why[512];
        int nchosen = choose(a, KR_MIN(acq, KR_MIN(kr__search_left(s), (long)a->m)), chosen, why);
        s->batch = round;
        for (int c = 0; c < nchosen; c++)
            if ((rc = kr__search_eval(s, a->cand[chosen[c]], why[c], a->pt[chosen[c]], a->pe[chosen[c]], err)))
                return rc;
        if ((rc = kr__search_batch_end(s, 0, err)))
            return rc;
    }
    return KR_OK;
}

int kr__search_artifact(kr__search *s, kr_error *err)
{
    long n_init, acq;
    int batches;
    schedule(s, &n_init, &acq, &batches);
    int rc = init_design(s, n_init, err);
    if (rc)
        return rc;
    art a;
    memset(&a, 0, sizeof a);
    if ((rc = art_alloc(&a, s, err)) == KR_OK && (rc = rounds(&a, s, acq, batches, err)) == KR_OK)
        snprintf(s->stop, sizeof s->stop, "%s", s->n >= s->size ? "space exhausted" : "fixed budget");
    art_free(&a);
    return rc;
}
