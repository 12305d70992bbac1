/*
 * bound.c — the lower bound (docs/solver.md, "Lower bound"). The exact mode's cuts solve the
 * relaxation R(D) = min Σ_v c_v(d_v) over integer durations d_v ∈ [dmin_v, dmax_v] whose quantized
 * makespan (with lags rounded up to units) is at most D, c_v being the lower convex hull of
 * v's options at their quantized times, exactly for every D they pass (min-cost tension
 * steps); step 0 is its global minimum. A plan with option o_v at every op and real makespan
 * T' maps to durations q(o_v) = floor(t/unit) whose quantized makespan is at most
 * T'/unit + slack (slack: the longest path of what rounding adds — lags rounded up, options
 * shorter than one unit counted as one — plus floating-point room), and c_v(q(o_v)) <= its
 * effective energy, so its effective energy is >= R(floor(T'/unit + slack)). Its total
 * energy is G·(eff + P·S·T') with T' >= max(unit·(D' − slack), T_fastest). Minimising over
 * every D' <= floor(T/unit + slack) bounds every plan of makespan <= T. rel holds the
 * relaxation's (quant_time, model_cost_j) pairs; gaps between them take the next larger
 * deadline's value (R is non-increasing).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "solver/solver_internal.h"
#include "util/util.h"

static int bound_build(kr_solve_result *out, const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg,
                       const kr_solve_result *rel, kr_error *err)
{
    int n = dag->n;
    double u = cfg->unit_time_s, G = cfg->gpus_per_stage, P = cfg->static_power_w, S = opts->num_stages;
    double *w = calloc((size_t)n * 2, sizeof(double));
    if (w == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    double *fast = w + n;
    /* Per node: rounding excess (over its options) and fastest time. */
    for (int v = 0; v < n; v++) {
        w[v] = fast[v] = 0;
        if (v < 2)
            continue;
        const kr_option_set *set = kr_options_get(opts, dag->node[v].stage, dag->node[v].kind, dag->node[v].chunk);
        fast[v] = INFINITY;
        for (int i = 0; i < set->n; i++) {
            double x = set->opt[i].time_s / u;
            double q = KR_MAX(1.0, floor(x + 1e-9));
            w[v] = KR_MAX(w[v], q - x);
            fast[v] = fmin(fast[v], set->opt[i].time_s);
        }
    }
    double tfast = 0;
    kr_dag_cpm(dag, fast, NULL, NULL, &tfast, NULL);
    /* Longest path of the excesses (fast[] reused for the path values). */
    double X = 0;
    for (int v = 0; v < n; v++)
        fast[v] = 0;
    for (int i = 0; i < n; i++) {
        int v = dag->topo[i];
        fast[v] += w[v];
        X = KR_MAX(X, fast[v]);
        for (int k = dag->out_off[v]; k < dag->out_off[v + 1]; k++) {
            int e = dag->out_e[k], y = dag->ev[e];
            double lq = KR_MAX(0.0, ceil(dag->lag_s[e] / u - 1e-9)); /* as setup() rounds lags */
            fast[y] = KR_MAX(fast[y], fast[v] + KR_MAX(0.0, lq - dag->lag_s[e] / u));
        }
    }
    free(w);
    long dlo = LONG_MAX, dhi = LONG_MIN;
    for (int k = 0; k < rel->nsteps; k++) {
        dlo = KR_MIN(dlo, rel->steps[k].quant_time);
        dhi = KR_MAX(dhi, rel->steps[k].quant_time);
    }
    if (rel->nsteps == 0 || dhi - dlo > 100000000L)
        return KR_OK; /* no table (an absurd range would only cost memory) */
    int nb = (int)(dhi - dlo + 1);
    double *lb = malloc(sizeof(double) * (size_t)nb);
    if (lb == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (int i = 0; i < nb; i++)
        lb[i] = INFINITY;
    for (int k = 0; k < rel->nsteps; k++) {
        double *c = &lb[rel->steps[k].quant_time - dlo];
        *c = fmin(*c, rel->steps[k].model_cost_j);
    }
    for (int i = nb - 2; i >= 0; i--)
        if (lb[i] == INFINITY)
            lb[i] = lb[i + 1];
    out->bound_slack = X + (double)n * 1e-9 + 1e-9;
    /* Whole-cluster term per D, then the running minimum over D' <= D. */
    for (int i = 0; i < nb; i++) {
        double tl = KR_MAX(u * ((double)(dlo + i) - out->bound_slack), tfast);
        double term = G * (lb[i] + P * S * tl);
        lb[i] = i > 0 ? fmin(term, lb[i - 1]) : term;
    }
    out->bound_min = lb;
    out->nbound = nb;
    out->bound_dlo = dlo;
    out->bound_tfast_s = tfast;
    out->bound_complete = rel->stop_reason == 0;
    for (int k = 0; k < out->nsteps; k++) {
        kr_solver_step *st = &out->steps[k];
        st->bound_j = kr_solve_result_bound(out, st->knob_time_s);
        st->gap = st->energy_j / st->bound_j - 1;
    }
    return KR_OK;
}

double kr_solve_result_bound(const kr_solve_result *f, double time_s)
{
    if (f->bound_min == NULL || f->nbound <= 0)
        return 0;
    double x = time_s / f->bound_unit_s;
    double D = floor(x + f->bound_slack + 1e-12 * fabs(x));
    if (D < (double)f->bound_dlo) {
        if (f->bound_complete || time_s < f->bound_tfast_s)
            return INFINITY;
        return f->bound_min[0] - f->gpus_per_stage * f->static_power_w * f->num_stages *
                                     (KR_MAX(f->bound_unit_s * ((double)f->bound_dlo - f->bound_slack), f->bound_tfast_s) -
                                      f->bound_tfast_s);
    }
    long i = (long)(D - (double)f->bound_dlo);
    if (i >= f->nbound)
        i = f->nbound - 1;
    return f->bound_min[i];
}

/* The relaxation on a finer time grid (bound_refine sub-units per unit; the lowtime model's
 * costs bound nothing, so it always runs there): rounding each option down to the grid loses
 * up to one grid unit per op on a path, which is what separates the bound from the optimum
 * (docs/solver.md). out is the finished run of cfg. */
int kr__bound_attach(kr_solve_result *out, const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg,
                     kr_error *err)
{
    kr_solver_config rc_cfg = *cfg;
    int nops = dag->n - 2;
    /* Default: a finer grid only up to KR__BOUND_FINE_OPS ops, where the second run is cheap;
     * above, the run just made (its cost is the solve's: on (8,64) the finer grid doubled it). */
    int r = cfg->bound_refine > 0           ? cfg->bound_refine
            : nops > KR__BOUND_FINE_OPS     ? 1
                                            : KR_MAX(1, KR_MIN(KR__BOUND_REFINE, 2048 / KR_MAX(nops, 1)));
    rc_cfg.cost_model = KR_COST_EXACT;
    rc_cfg.final_pass = 0;
    rc_cfg.exchange = -1;
    rc_cfg.max_steps = 0;
    rc_cfg.unit_time_s = cfg->unit_time_s / r;
    if (r == 1 && cfg->cost_model == KR_COST_EXACT && out->stop_reason == 0) {
        /* Same grid: the run just made is the relaxation (its fast-end and appended steps
         * repeat the last quantized step's figures). */
        out->bound_unit_s = cfg->unit_time_s;
        return bound_build(out, dag, opts, &rc_cfg, out, err);
    }
    kr_solve_result rel;
    int rc = kr__sv_solve(dag, opts, &rc_cfg, &rel, 1, err);
    if (rc == KR_OK) {
        out->bound_unit_s = rc_cfg.unit_time_s;
        rc = bound_build(out, dag, opts, &rc_cfg, &rel, err);
    }
    kr_solve_result_free(&rel);
    return rc;
}
