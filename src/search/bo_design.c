/*
 * bo_design.c — what bo measures before its first model (bo.c, docs/search.md): the Latin-
 * hypercube design of a search without a prior, the prior's predictions of every configuration,
 * and the two designs with a prior (the prior's best frontier points, then a clock × comm-SM
 * grid when those run out). They need only the search context, so they live apart from the
 * surrogate and the loop.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/sim.h"
#include "search_internal.h"

/* Shuffles v[0..n) with r (Fisher–Yates). */
static void shuffle(int *v, int n, kr__rng *r)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)kr__rng_below(r, (uint64_t)i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/*
 * n0 configurations spread Latin-hypercube style over (clock, comm SMs) with the slots
 * balanced: point i takes clock stratum π₁(i) and SM stratum π₂(i) of n0 equal strata (a random
 * position inside each), launch category (kernel, slot) π₃(i) mod nkernels·nslots. With n0 >=
 * nclocks every clock gets a point.
 */
int kr__search_lhs_design(kr__search *s, long n0, kr_error *err)
{
    const kr_search_space *sp = &s->sp;
    n0 = KR_MIN(n0, s->size);
    kr__rng r;
    kr__rng_seed(&r, s->opt->seed * 0x9e3779b97f4a7c15ULL + 17);
    int *p1 = malloc((size_t)n0 * sizeof *p1), *p2 = malloc((size_t)n0 * sizeof *p2),
        *p3 = malloc((size_t)n0 * sizeof *p3);
    if (!p1 || !p2 || !p3) {
        free(p1);
        free(p2);
        free(p3);
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    }
    for (int i = 0; i < n0; i++)
        p1[i] = p2[i] = p3[i] = i;
    shuffle(p1, (int)n0, &r);
    shuffle(p2, (int)n0, &r);
    shuffle(p3, (int)n0, &r);
    int rc = KR_OK;
    for (long i = 0; i < n0 && rc == KR_OK && kr__search_left(s) > 0; i++) {
        long ci = (long)((p1[i] + kr__rng_uniform(&r)) * sp->nclocks / n0);
        long mi = (long)((p2[i] + kr__rng_uniform(&r)) * sp->nsms / n0);
        int si = p3[i] % (sp->nkernels * sp->nslots); /* (kernel, slot) balanced */
        long idx = kr__space_grid_index(sp, (int)KR_MIN(ci, sp->nclocks - 1), si, (int)KR_MIN(mi, sp->nsms - 1));
        while (s->done[idx]) /* a collision of strata: the next free configuration */
            idx = (idx + 1) % s->size;
        rc = kr__search_eval(s, idx, "init", NAN, NAN, err);
    }
    free(p1);
    free(p2);
    free(p3);
    return rc;
}

void kr__prior_at_init(kr__prior_at *a, const kr__search *s, const double *theta)
{
    a->s = s;
    a->theta = theta != NULL;
    if (theta == NULL)
        return;
    for (int j = 0; j < s->nsens; j++)
        a->factor[j] = 1 + theta[j];
    if (s->opt->prior_fn)
        return;
    a->job = *s->opt->prior;
    for (int j = 0; j < s->nsens; j++) {
        int par = s->sens_param[j];
        kr_gpu_param_set(&a->job.gpu, par, kr_gpu_param_value(&a->job.gpu, par) * a->factor[j]);
    }
    kr_gpu_clamp(&a->job.gpu);
}

int kr__prior_at_measure(const kr__prior_at *a, long idx, kr_config *c, kr_measurement *m, kr_error *e)
{
    const kr__search *s = a->s;
    const kr_search_config *o = s->opt;
    kr_search_space_config(&s->sp, idx, c);
    memset(m, 0, sizeof *m);
    int rc;
    if (o->prior_fn)
        rc = a->theta ? o->prior_at_fn(o->prior_ud, s->p, c, s->nsens, s->sens_param, a->factor, &m->time_s,
                                       &m->energy_j)
                      : o->prior_fn(o->prior_ud, s->p, c, &m->time_s, &m->energy_j);
    else
        return kr_sim_measure(a->theta ? &a->job : o->prior, s->p, c, m, e);
    if (rc)
        snprintf(e->msg, sizeof e->msg, "%s", kr_strerror(rc));
    return rc;
}

/* Configuration i's time, effective energy and total energy into out[0..2][i]. */
static void prior_store(const kr__search *s, double *const out[3], long i, double t, double energy)
{
    out[0][i] = t;
    out[1][i] = energy - s->job->static_power_w * t;
    out[2][i] = energy;
}

/* The prior's predictions of every configuration, nominal or at theta (kr__prior_at_init). */
int kr__search_prior_compute(kr__search *s, const double *theta, double *const pr[3], int ppos[3], kr_error *err)
{
    const kr_job *pj = s->opt->prior_fn ? NULL : s->opt->prior;
    const char *what = theta ? "calibrated prior" : "prior";
    kr__prior_at a;
    kr__prior_at_init(&a, s, theta);
    for (int k = 0; k < 3; k++)
        ppos[k] = 1;
    for (long i = 0; i < s->size; i++) {
        kr_config c;
        kr_measurement m;
        kr_error e = {0};
        int rc = kr__prior_at_measure(&a, i, &c, &m, &e);
        if (rc)
            return kr_error_set(err, rc, "%s for partition %s (%s) at %d MHz, %d SMs: %s", what, s->p->key,
                                pj ? pj->gpu.name : "prior_fn", c.freq_mhz, c.sms, e.msg);
        if (!(m.time_s > 0) || !isfinite(m.time_s) || !isfinite(m.energy_j))
            return kr_error_set(err, KR_EINVAL, "%s for partition %s: predicted time %g s, energy %g J at %d MHz", what,
                                s->p->key, m.time_s, m.energy_j, c.freq_mhz);
        prior_store(s, pr, i, m.time_s, m.energy_j);
        for (int k = 0; k < 3; k++)
            ppos[k] &= pr[k][i] > 0;
    }
    return KR_OK;
}

/*
 * The sensitivity features of a simulator prior: for each constant of the prior's GPU with a
 * stated uncertainty u_j (kr_gpu_param_uncertainty), the simulator's prediction of every
 * configuration with that constant at (1 + u_j) and at (1 − u_j) times its value (the others
 * nominal, the entry clamped to its physical limits), into sens[(2j + side)·3·size + model·size +
 * idx] (models: time, effective energy, total energy; NaN where the simulator cannot predict).
 * *np gets the number of constants (at most KR__SENS_MAX); par[j] their parameter indices.
 * With a prior_fn the same comes from prior_sens_fn (a parameter it cannot vary is NaN).
 */
int kr__search_prior_sens(kr__search *s, double **sens_out, int *np, int *par, kr_error *err)
{
    const kr_search_config *o = s->opt;
    const kr_job *pj = o->prior_fn ? NULL : o->prior;
    int n = 0;
    for (int i = 0; i < KR_GPU_NPARAMS && n < KR__SENS_MAX; i++)
        if (kr_gpu_param_uncertainty(i) > 0 && (pj == NULL || kr_gpu_param_value(&pj->gpu, i) != 0))
            par[n++] = i;
    *np = n;
    size_t sz = (size_t)s->size;
    double *sens = malloc(sizeof(double) * (size_t)n * 2 * 3 * sz);
    if (sens == NULL && n > 0)
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    for (int j = 0; j < n; j++)
        for (int side = 0; side < 2; side++) {
            double u = kr_gpu_param_uncertainty(par[j]), factor = side ? 1 - u : 1 + u;
            kr_job job;
            if (pj) {
                job = *pj;
                kr_gpu_param_set(&job.gpu, par[j], kr_gpu_param_value(&job.gpu, par[j]) * factor);
                kr_gpu_clamp(&job.gpu);
            }
            double *base = sens + (size_t)(2 * j + side) * 3 * sz;
            double *const out[3] = {base, base + sz, base + 2 * sz};
            for (long i = 0; i < s->size; i++) {
                kr_config c;
                kr_measurement m = {0};
                kr_error e = {0};
                kr_search_space_config(&s->sp, i, &c);
                int rc = pj ? kr_sim_measure(&job, s->p, &c, &m, &e)
                            : o->prior_sens_fn(o->prior_ud, s->p, &c, par[j], factor, &m.time_s, &m.energy_j);
                if (rc || !(m.time_s > 0) || !isfinite(m.time_s) || !isfinite(m.energy_j))
                    m.time_s = m.energy_j = NAN;
                prior_store(s, out, i, m.time_s, m.energy_j);
            }
        }
    *sens_out = sens;
    return KR_OK;
}

/*
 * The rest of the initial design with a prior when its frontiers hold fewer than
 * BO_PRIOR_DESIGN points (kr__search_prior_front_design): a grid that identifies the prior's line and a
 * first residual — clocks {highest, middle, lowest} × comm-SM counts {lowest, (middle,) highest}
 * (the middle one for spaces of 400 or more), each at a slot rotated by the seed. (Until issue
 * 16 round 2 this grid was the whole design; the prior's frontier points reach Q 0.99 with
 * about half the measurements.)
 */
int kr__search_prior_grid(kr__search *s, kr_error *err)
{
    const kr_search_space *sp = &s->sp;
    int ci[3] = {0, (sp->nclocks - 1) / 2, sp->nclocks - 1};
    int nm = s->size >= 400 ? 3 : 2;
    int mi[3] = {0, nm == 3 ? (sp->nsms - 1) / 2 : sp->nsms - 1, sp->nsms - 1};
    int ncat = sp->nkernels * sp->nslots;
    int rot = (int)(s->opt->seed % (unsigned long long)ncat);
    int rc = KR_OK, k = 0;
    for (int a = 0; a < 3 && rc == KR_OK; a++) {
        if (a > 0 && ci[a] == ci[a - 1])
            continue;
        for (int c = 0; c < nm && rc == KR_OK && kr__search_left(s) > 0; c++, k++) {
            if (c > 0 && mi[c] == mi[c - 1])
                continue;
            int si = (k + rot) % ncat;
            long idx = kr__space_grid_index(sp, ci[a], si, mi[c]);
            rc = kr__search_eval(s, idx, "init", NAN, NAN, err);
        }
    }
    return rc;
}

/*
 * The initial design from the prior's own frontiers: k configurations picked greedily by the
 * hypervolume they add, as the prior predicts them, to the set picked so far, summed over the
 * two planes with each plane's gain a fraction of the hypervolume of the prior's whole
 * frontier in that plane (reference: its nadir + 10 % of its range), so both planes weigh
 * alike. The first picks are the prior's extremes and the knees of both frontiers: the
 * configurations a frontier most likely needs, spread over the prior's time and energy range,
 * which is what identifies the line a + b·q. Ties go to the lower index; when nothing adds
 * (a frontier of fewer than k points) the rest of the design is the grid (kr__search_prior_grid).
 * With from_done the measured configurations (their values in pr) start the picked set: the
 * design's refitted part (bo.c, refit_batch), with pr the refitted models' predictions.
 */
int kr__search_front_picks(kr__search *s, const double *const pr[3], int k, int from_done, long *picks, int *picked_n,
                           kr_error *err)
{
    kr__front2 full[2], got[2];
    memset(full, 0, sizeof full);
    memset(got, 0, sizeof got);
    int rc = KR_OK;
    *picked_n = 0;
    for (int pl = 0; pl < 2 && rc == KR_OK; pl++) {
        for (long i = 0; i < s->size && rc == KR_OK; i++)
            rc = kr__front2_add(&full[pl], pr[0][i], pr[1 + pl][i]);
        if (rc)
            break;
        kr__front2 *f = &full[pl];
        kr__front2_set_ref(f, KR__REF_MARGIN);
        f->hv = kr__front2_hv(f);
        got[pl].rt = f->rt;
        got[pl].ry = f->ry;
        for (long i = 0; from_done && i < s->size && rc == KR_OK; i++)
            if (s->done[i] && isfinite(pr[0][i]) && isfinite(pr[1 + pl][i]))
                rc = kr__front2_add(&got[pl], pr[0][i], pr[1 + pl][i]);
    }
    for (int it = 0; it < k && rc == KR_OK && kr__search_left(s) > 0; it++) {
        long best = -1;
        double bv = 0;
        for (long i = 0; i < s->size; i++) {
            if (s->done[i])
                continue;
            double v = 0;
            for (int pl = 0; pl < 2; pl++)
                if (full[pl].hv > 0)
                    v += kr__front2_hvi(&got[pl], pr[0][i], pr[1 + pl][i]) / full[pl].hv;
            if (v > bv) {
                bv = v;
                best = i;
            }
        }
        if (best < 0)
            break;
        for (int pl = 0; pl < 2 && rc == KR_OK; pl++)
            rc = kr__front2_add(&got[pl], pr[0][best], pr[1 + pl][best]);
        if (rc == KR_OK)
            picks[(*picked_n)++] = best;
    }
    for (int pl = 0; pl < 2; pl++) {
        kr__front2_free(&full[pl]);
        kr__front2_free(&got[pl]);
    }
    if (rc == KR_ENOMEM)
        return kr_error_set(err, KR_ENOMEM, "bo: out of memory");
    return rc;
}

int kr__search_prior_eval_picks(kr__search *s, const double *const pr[3], const long *picks, int n, kr_error *err)
{
    int rc = KR_OK;
    for (int i = 0; i < n && rc == KR_OK && kr__search_left(s) > 0; i++)
        rc = kr__search_eval(s, picks[i], "init", pr[0][picks[i]], pr[1][picks[i]], err);
    return rc;
}
