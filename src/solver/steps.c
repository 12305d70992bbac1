/*
 * steps.c — what a run records: each step's figures from the current durations (record(),
 * which runs exact mode's rounding passes), its plan (a snapshot every KR_SOLVE_PLAN_SNAP
 * steps, otherwise the changes against the step before), the fast end of exact mode (real-time
 * steps past the last quantized one, and the all-fastest plan), the dominated flags, and the
 * result's accessors and CSV writer (solver.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* The rounding passes of a record for the budget, from the knobs of the durations in sv->knob
 * with their starts in sv->res and running maximum finish in sv->fw_pmax; returns the knobs'
 * makespan. Where only the final pass runs, knobs and a budget equal to the last record's
 * (same: the knobs are) give its result again — a deterministic pass on the same knobs, starts
 * and budget; about a fifth of (8,64)'s steps. */
static double record_passes(kr__solver *sv, double span, double budget, int same)
{
    int only_final = !kr__exchange_runs(&sv->cfg, sv->n - 2);
    if (only_final && same && sv->rec_ok && budget == sv->rec_budget) {
        memcpy(sv->knob, sv->rec_knob, sizeof(int) * (size_t)sv->n);
        return sv->rec_span;
    }
    sv->res_pmax = sv->fw_pmax;
    span = kr__round_improve(sv, span, budget);
    sv->res_pmax = NULL;
    if (only_final) {
        memcpy(sv->rec_knob, sv->knob, sizeof(int) * (size_t)sv->n);
        sv->rec_budget = budget;
        sv->rec_span = span;
        sv->rec_ok = 1;
    }
    return span;
}

/* Fills the step's figures from the durations d (n entries: the current ones, or the
 * recording thread's snapshot); knobs per the cost model. Reads nothing else the cut writes. */
static void record(kr__solver *sv, kr_solver_step *st, long T, const long *d)
{
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    double model = 0;
    if (sv->relax_only) {
        for (int v = 2; v < sv->n; v++)
            model += kr__gcost(&sv->groups[sv->gidx[v]], d[v]);
        st->quant_time = T;
        st->model_cost_j = model;
        return;
    }
    /* The knobs of the durations and their real times (what kr__round_cpm's first loop
     * would fill in again), then the forward half of the critical path. A step changes the
     * durations of a few ops, so the last record's starts (sv->fw_es) stand before the first
     * of them in topological order and only the rest is recomputed (the same doubles as a
     * whole pass: kr__round_forward_from); on (32,256) about half the graph per step. */
    int p0 = sv->fw_ok ? sv->n : 0, same = sv->fw_ok;
    sv->rt[KR_DAG_SOURCE] = sv->rt[KR_DAG_SINK] = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr__group *g = &sv->groups[sv->gidx[v]];
        model += kr__gcost(g, d[v]);
        long dv = KR_MIN(KR_MAX(d[v], g->dmin), g->dmax);
        int k = g->knob[dv - g->dmin];
        sv->knob[v] = k;
        if (k != sv->fw_knob[v]) {
            sv->fw_knob[v] = k;
            same = 0;
        }
        double r = sv->vopt[v][k].time_s;
        sv->rt[v] = r;
        if (r != sv->fw_rt[v]) {
            sv->fw_rt[v] = r;
            p0 = KR_MIN(p0, sv->tpos[v]);
        }
    }
    double span = kr__round_forward_from(sv, sv->fw_es, sv->fw_pmax, p0, p0 > 0 ? sv->fw_pmax[p0 - 1] : 0);
    sv->fw_ok = 1;
    memcpy(sv->res, sv->fw_es, sizeof(double) * (size_t)sv->n);
    if (cfg->cost_model == KR_COST_EXACT && cfg->final_pass) {
        /* The quantized plan promises T units; when the real critical path is shorter, let the
         * final pass use the difference. */
        span = record_passes(sv, span, KR_MAX(span, (double)T * cfg->unit_time_s), same);
    }
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->vopt[v][sv->knob[v]];
        e += o->energy_j;
        t += o->time_s;
    }
    st->quant_time = T;
    st->model_cost_j = model;
    st->model_energy_j = G * (model + S * ((double)T * cfg->unit_time_s) * P);
    st->knob_time_s = span;
    st->energy_j = G * (e + P * (S * span - t));
    st->eff_energy_j = G * (e - P * t);
    st->time_s = cfg->cost_model == KR_COST_LOWTIME ? (double)T * cfg->unit_time_s : span;
}

/*
 * Appends the plan opt[0 .. nops) of step f->nsteps (the caller then counts the step): in full
 * at every KR_SOLVE_PLAN_SNAP-th step, else as its changes against the step before (kept in
 * plan_last). Returns 0 or KR_ENOMEM (the step's plan is then not stored).
 */
int kr__step_plan_push(kr_solve_result *f, const int *opt)
{
    size_t k = (size_t)f->nsteps, nops = (size_t)f->nops, w = nops > 0 ? nops : 1;
    if (f->plan_last == NULL && (f->plan_last = calloc(w, sizeof(int))) == NULL)
        return KR_ENOMEM;
    if (kr__grow((void **)&f->plan_off, &f->plan_cap[1], k + 2, sizeof(long)))
        return KR_ENOMEM;
    if (k == 0)
        f->plan_off[0] = 0;
    long at = f->plan_off[k];
    if (k % KR_SOLVE_PLAN_SNAP == 0) {
        if (kr__grow((void **)&f->plan_snap, &f->plan_cap[0], (k / KR_SOLVE_PLAN_SNAP + 1) * w, sizeof(int)))
            return KR_ENOMEM;
        memcpy(f->plan_snap + k / KR_SOLVE_PLAN_SNAP * nops, opt, sizeof(int) * nops);
    } else {
        size_t nch = 0;
        for (size_t i = 0; i < nops; i++)
            nch += opt[i] != f->plan_last[i];
        if (kr__grow((void **)&f->plan_chg, &f->plan_cap[2], 2 * ((size_t)at + nch) + 2, sizeof(int)))
            return KR_ENOMEM;
        for (size_t i = 0; i < nops; i++)
            if (opt[i] != f->plan_last[i]) {
                f->plan_chg[2 * at] = (int)i;
                f->plan_chg[2 * at + 1] = opt[i];
                at++;
            }
    }
    f->plan_off[k + 1] = at;
    memcpy(f->plan_last, opt, sizeof(int) * nops);
    return 0;
}

int kr__step_plans_rewrite(kr_solve_result *f, const int *P)
{
    int ns = f->nsteps, rc = 0;
    free(f->plan_snap);
    free(f->plan_off);
    free(f->plan_chg);
    free(f->plan_last);
    f->plan_snap = f->plan_chg = f->plan_last = NULL;
    f->plan_off = NULL;
    memset(f->plan_cap, 0, sizeof f->plan_cap);
    for (int k = 0; k < ns && rc == 0; k++) {
        f->nsteps = k; /* kr__step_plan_push stores the plan of step f->nsteps */
        rc = kr__step_plan_push(f, P + (size_t)k * (size_t)f->nops);
    }
    f->nsteps = ns;
    return rc;
}

int kr__step_push(kr_solve_result *f, kr__solver *sv, size_t *scap, double change, long T, const long *d,
                  kr_error *err)
{
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    kr_solver_step *st = &f->steps[f->nsteps];
    memset(st, 0, sizeof *st);
    st->step = f->nsteps;
    st->cost_change_j = change;
    record(sv, st, T, d);
    if (!sv->relax_only && kr__step_plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    f->nsteps++;
    return KR_OK;
}

/* True figures of the knobs in sv->knob at real makespan span into st. */
void kr__step_figures(const kr__solver *sv, kr_solver_step *st, double span)
{
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->vopt[v][sv->knob[v]];
        e += o->energy_j;
        t += o->time_s;
    }
    st->knob_time_s = span;
    st->energy_j = G * (e + P * (S * span - t));
    st->eff_energy_j = G * (e - P * t);
    if (cfg->cost_model == KR_COST_EXACT)
        st->time_s = span;
}

/* Appends a step that copies the last one's model figures and carries the knobs in sv->knob
 * at real makespan span (exact mode's fast-end steps). */
static int push_knob_step(kr_solve_result *f, kr__solver *sv, size_t *scap, double span, kr_error *err)
{
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps) || kr__step_plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    kr_solver_step *st = &f->steps[f->nsteps];
    *st = f->steps[f->nsteps - 1];
    st->step = f->nsteps;
    st->cost_change_j = 0;
    kr__step_figures(sv, st, span);
    f->nsteps++;
    return KR_OK;
}

/* The fast end's critical-path state: the running maximum of the finishes along the
 * topological order, and a stack for the critical ops' search (the in-edge rows are the
 * solver's, sv->ipred and sv->ilags). */
typedef struct {
    int *stack;
    double *pmax;
} tail_cpm;

/* Forward half of the critical path from topological position p0 on (kr__round_forward_from
 * on sv->res with the fast end's running maximum). */
static double tail_forward(kr__solver *sv, const tail_cpm *c, int p0)
{
    return kr__round_forward_from(sv, sv->res, c->pmax, p0, p0 > 0 ? c->pmax[p0 - 1] : 0);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/*
 * The critical ops, found from the sink back along tight arcs (finish + lag within tol of the
 * successor's start): sv->crit set for them and cleared for the nl listed before, and list[2 ..)
 * the ops in increasing id (after the source and the sink). An op is critical when a chain of
 * tight arcs leads from it to the sink: zero float up to tol per arc, the test the network's
 * dependency arcs use (a float summed over a chain may exceed tol: such ops count too, where
 * before float was tested as a whole against tol). Costs the critical part of the graph only,
 * not a backward pass over all nodes. Returns the new nl.
 */
static int tail_critical(kr__solver *sv, const tail_cpm *c, int *list, int nl, double tol)
{
    const int *ioff = sv->dag->in_off, *ipred = sv->ipred;
    const double *rt = sv->rt, *es = sv->res, *ilag = sv->ilags;
    char *crit = sv->crit;
    int *stack = c->stack, top = 0;
    for (int i = 0; i < nl; i++)
        crit[list[i]] = 0;
    crit[KR_DAG_SINK] = 1;
    stack[top++] = KR_DAG_SINK;
    nl = 2;
    while (top > 0) {
        int w = stack[--top];
        for (int k = ioff[w]; k < ioff[w + 1]; k++) {
            int u = ipred[k];
            if (!crit[u] && es[u] + rt[u] + ilag[k] >= es[w] - tol) {
                crit[u] = 1;
                stack[top++] = u;
                if (u >= 2)
                    list[nl++] = u;
            }
        }
    }
    qsort(list + 2, (size_t)(nl - 2), sizeof(int), cmp_int);
    return nl;
}

/*
 * The fast end (exact mode). The quantized steps end when a quantized critical path has every
 * op at its shortest quantized duration, but times are rounded down, so the last step's real
 * critical path can still be well above the all-fastest plan's (2–3 % of the energy was left
 * in that window on the golden pipelines: issue 15). From the last step's knobs this keeps
 * stepping in real time until the real makespan reaches its minimum: on the real critical
 * graph (ops and dependency arcs with zero float in the real-time CPM: tail_critical()), a minimum cut whose
 * capacity is the effective energy of moving each op to its next faster Pareto option (∞ for
 * an op already at its fastest, the source and sink, and every dependency arc) chooses the ops
 * to speed up; every critical path crosses the cut, so the real makespan drops or stays (a
 * near-critical path can take over). When it drops, the plan gets the rounding passes for its
 * new makespan (kr__round_improve()) and becomes a step. Termination: between recorded steps knobs only
 * get faster; each recorded step has a strictly shorter makespan, of which there are finitely
 * many; an iteration cap guards it anyway. The loop ends at an infinite cut: some critical
 * path has every op at its fastest option, so the makespan is the all-fastest plan's.
 */
int kr__step_tail(kr_solve_result *f, kr__solver *sv, size_t *scap, kr_error *err)
{
    int n = sv->n;
    double last = f->steps[f->nsteps - 1].knob_time_s;
    long cap_iter = 4L * (n + 16);
    int p0 = -1; /* >= 0: the knobs' durations are in rt, and starts before position p0 in res */
    /* Each iteration's network has only the critical ops (a few hundred of thousands; one op
     * changes per iteration on the golden pipelines): kr__round_speedup() on the list. */
    int *list = malloc(sizeof(int) * 2 * (size_t)n), *pos = list ? list + n : NULL;
    tail_cpm cp = {malloc(sizeof(int) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    int rc = KR_OK, nl = 0;
    if (!list || !cp.stack || !cp.pmax) {
        rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory");
        goto out;
    }
    for (long it = 0; it < cap_iter; it++) {
        if (p0 < 0) {
            /* The durations of the knobs into rt; no op marked critical (the rounding passes
             * of a recorded step mark their own in sv->crit). */
            (void)kr__round_cpm(sv);
            memset(sv->crit, 0, (size_t)n);
            p0 = nl = 0;
        }
        double span = tail_forward(sv, &cp, p0);
        double tol = 1e-9 * (1 + span);
        nl = tail_critical(sv, &cp, list, nl, tol);
        list[0] = KR_DAG_SOURCE;
        list[1] = KR_DAG_SINK;
        p0 = kr__round_speedup(sv, list, pos, nl, tol, -1);
        if (p0 == -2) {
            rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory");
            break;
        }
        if (p0 < 0)
            break;
        /* A step is recorded once the makespan has dropped by a quarter unit (the rounding
         * passes are what costs; each recorded step gets them). Otherwise the next iteration
         * goes on from these knobs: only the cut's ops changed, so starts before the first of
         * them stand. */
        double ns = tail_forward(sv, &cp, p0);
        p0 = n; /* res is complete */
        if (!(ns < last - 0.25 * sv->cfg.unit_time_s))
            continue;
        p0 = -1;
        if (sv->cfg.final_pass)
            ns = kr__round_improve(sv, ns, ns);
        if ((rc = push_knob_step(f, sv, scap, ns, err)))
            break;
        last = ns;
    }
out:
    free(list);
    free(cp.stack);
    free(cp.pmax);
    if (rc)
        return rc;
    /* The last speed-ups may have lowered the makespan by less than the quarter unit: that
     * plan is the fastest one, and it gets the rounding passes too (before, only the appended
     * all-fastest plan with one final pass stood at this makespan: issue 15). */
    double ns = kr__round_cpm(sv);
    if (ns < last - 1e-12) {
        if (sv->cfg.final_pass)
            ns = kr__round_improve(sv, ns, ns);
        return push_knob_step(f, sv, scap, ns, err);
    }
    return KR_OK;
}

/*
 * Exact mode: times are quantized, so the last step's real critical path can be longer than
 * the all-fastest plan's (an op off the quantized critical path may run slower than it
 * could). The all-fastest plan is the frontier's true fastest point: append it when it is
 * faster than the last step.
 */
int kr__step_fastest(kr_solve_result *f, kr__solver *sv, size_t *scap, kr_error *err)
{
    for (int v = 2; v < sv->n; v++) {
        const kr_option_set *set = sv->groups[sv->gidx[v]].set;
        int best = 0;
        for (int k = 1; k < set->n; k++) {
            const kr_option *o = &set->opt[k], *b = &set->opt[best];
            if (o->time_s < b->time_s || (o->time_s == b->time_s && o->energy_j < b->energy_j))
                best = k;
        }
        sv->knob[v] = best;
    }
    double span = kr__round_cpm(sv);
    if (!(span < f->steps[f->nsteps - 1].knob_time_s - 1e-12))
        return KR_OK;
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    if (cfg->final_pass)
        span = kr__round_improve(sv, span, span);
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->vopt[v][sv->knob[v]];
        e += o->energy_j;
        t += o->time_s;
    }
    kr_solver_step *st = &f->steps[f->nsteps];
    *st = f->steps[f->nsteps - 1];
    st->step = f->nsteps;
    st->cost_change_j = 0;
    st->knob_time_s = st->time_s = span;
    st->energy_j = G * (e + P * (S * span - t));
    st->eff_energy_j = G * (e - P * t);
    if (kr__step_plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    f->nsteps++;
    return KR_OK;
}

typedef struct dom_key {
    double time_s, energy_j;
    int step;
} dom_key;

static int dom_cmp(const void *a, const void *b)
{
    const dom_key *x = a, *y = b;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    if (x->energy_j != y->energy_j)
        return x->energy_j < y->energy_j ? -1 : 1;
    return x->step - y->step;
}

/* Flags the dominated steps (solver.h): in order of time, then energy, then step, a step is
 * dominated unless its energy is below every one before it. */
int kr__step_mark_dominated(kr_solve_result *f, kr_error *err)
{
    dom_key *ord = malloc(sizeof(dom_key) * (size_t)(f->nsteps > 0 ? f->nsteps : 1));
    if (ord == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (int k = 0; k < f->nsteps; k++)
        ord[k] = (dom_key){f->steps[k].knob_time_s, f->steps[k].energy_j, k};
    qsort(ord, (size_t)f->nsteps, sizeof ord[0], dom_cmp);
    double best = INFINITY;
    for (int i = 0; i < f->nsteps; i++) {
        kr_solver_step *st = &f->steps[ord[i].step];
        st->dominated = !(st->energy_j < best);
        if (!st->dominated)
            best = st->energy_j;
    }
    free(ord);
    return KR_OK;
}

void kr_solve_result_free(kr_solve_result *f)
{
    if (f == NULL)
        return;
    free(f->steps);
    free(f->plan_snap);
    free(f->plan_off);
    free(f->plan_chg);
    free(f->plan_last);
    free(f->bound_min);
    memset(f, 0, sizeof *f);
}

int kr_solve_result_option(const kr_solve_result *f, int step, int node)
{
    if (step < 0 || step >= f->nsteps || node < 2 || node - 2 >= f->nops || f->plan_snap == NULL)
        return -1;
    int s = step / KR_SOLVE_PLAN_SNAP, i = node - 2;
    int o = f->plan_snap[(size_t)s * (size_t)f->nops + (size_t)i];
    for (int k = s * KR_SOLVE_PLAN_SNAP + 1; k <= step; k++)
        for (long c = f->plan_off[k]; c < f->plan_off[k + 1]; c++)
            if (f->plan_chg[2 * c] == i)
                o = f->plan_chg[2 * c + 1];
    return o;
}

int kr_solve_result_config(const kr_solve_result *f, int step, int *out)
{
    if (step < 0 || step >= f->nsteps || f->plan_snap == NULL)
        return KR_ERANGE;
    int s = step / KR_SOLVE_PLAN_SNAP;
    memcpy(out, f->plan_snap + (size_t)s * (size_t)f->nops, sizeof(int) * (size_t)f->nops);
    for (int k = s * KR_SOLVE_PLAN_SNAP + 1; k <= step; k++)
        for (long c = f->plan_off[k]; c < f->plan_off[k + 1]; c++)
            out[f->plan_chg[2 * c]] = f->plan_chg[2 * c + 1];
    return KR_OK;
}

int kr_solve_result_write_csv(const kr_solve_result *f, const char *path, kr_error *err)
{
    return kr_solve_result_write_csv_sourced(f, NULL, NULL, path, err);
}

int kr_solve_result_write_csv_sourced(const kr_solve_result *f, const char *const *source, const int *source_step,
                                      const char *path, kr_error *err)
{
    kr__sb sb = {0};
    kr__sb_puts(&sb, "step,quant_time,time_s,cost_change_j,model_cost_j,model_energy_j,knob_time_s,energy_j,eff_energy_j,"
                     "bound_j,gap,dominated");
    kr__sb_puts(&sb, source ? ",source,source_step\n" : "\n");
    for (int i = 0; i < f->nsteps; i++) {
        const kr_solver_step *s = &f->steps[i];
        double v[7] = {s->time_s, s->cost_change_j, s->model_cost_j, s->model_energy_j, s->knob_time_s, s->energy_j,
                       s->eff_energy_j};
        kr__sb_printf(&sb, "%d,%ld", s->step, s->quant_time);
        for (int k = 0; k < 7; k++) {
            char buf[40];
            kr__fmt_double(buf, sizeof buf, v[k]);
            kr__sb_printf(&sb, ",%s", buf);
        }
        /* Appended columns: the bound and the gap, empty when no bound is known. */
        if (isfinite(s->bound_j)) {
            char b1[40], b2[40];
            kr__fmt_double(b1, sizeof b1, s->bound_j);
            kr__fmt_double(b2, sizeof b2, s->gap);
            kr__sb_printf(&sb, ",%s,%s", b1, b2);
        } else {
            kr__sb_puts(&sb, ",,");
        }
        kr__sb_printf(&sb, ",%d", s->dominated);
        if (source)
            kr__sb_printf(&sb, ",%s,%d", source[i], source_step[i]);
        kr__sb_puts(&sb, "\n");
    }
    return kr__sb_write_atomic(&sb, path, err);
}
