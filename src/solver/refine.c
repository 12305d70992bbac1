/*
 * refine.c — kr_solve_refine: a per-deadline local search on a frontier's plans (the passes
 * of rounding.c with wider windows and, on small graphs, slow-and-repair moves, from several
 * starts, then seeded kicks); the best plan found joins the frontier as a new step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* Whole-graph effective energy of the knobs in sv->knob (one GPU per stage). */
static double knob_eff(const kr__solver *sv)
{
    double e = 0;
    for (int v = 2; v < sv->n; v++)
        e += kr__opt_eff(sv, v, sv->knob[v]);
    return e;
}

/*
 * Speeds up ops of the real critical graph until the real makespan meets the budget: each
 * round, a minimum cut of the critical graph (kr__round_speedup(), as the fast end does; op
 * `pin` is not sped up) moves the ops it crosses one Pareto step faster; every critical path
 * crosses the cut, so the makespan falls or another path becomes critical. list holds 2 ×
 * sv->n ints of scratch. Returns 1 when the budget is met, 0 when some critical path can go no
 * faster (the knobs are then partly changed: the caller restores them).
 */
static int cut_repair(kr__solver *sv, int pin, double budget, int *list)
{
    int n = sv->n;
    for (int it = 0; it < 4 * n; it++) {
        double span = kr__round_cpm_lf(sv, sv->rlf);
        if (span <= budget + 1e-12)
            return 1;
        double tol = 1e-9 * (1 + span);
        int nl = 2;
        list[0] = KR_DAG_SOURCE;
        list[1] = KR_DAG_SINK;
        for (int v = 0; v < n; v++) {
            sv->crit[v] = v < 2 || sv->rlf[v] - sv->res[v] - sv->rt[v] <= tol;
            if (v >= 2 && sv->crit[v])
                list[nl++] = v;
        }
        if (kr__round_speedup(sv, list, list + n, nl, tol, pin) < 0)
            return 0;
    }
    return 0;
}

/*
 * Slow-and-repair moves on the knobs in sv->knob: each op in turn one Pareto step slower,
 * then each two steps slower; the time it costs is bought back by cut_repair() (any number of
 * ops, anywhere on the critical graph, each one step faster per round) and the room left is
 * handed out by the final pass; a move is kept when the whole energy (effective energy plus
 * static power over the makespan) falls. These reach plans that differ from the start at many
 * ops spread over stages, which windows of a few neighbours do not (docs/solver.md, issue 15
 * round 8). Returns the moves kept.
 */
static int slow_repair(kr__solver *sv, double budget)
{
    int n = sv->n, kept = 0;
    size_t nb = sizeof(int) * (size_t)n;
    double PS = sv->cfg.static_power_w * sv->opts->num_stages;
    int *list = malloc(sizeof(int) * 2 * (size_t)n);
    if (!list)
        return 0; /* no move: the plan stays as it is */
    double e0 = knob_eff(sv) + PS * kr__round_cpm(sv);
    for (int uu = 2; uu < 2 * n; uu++) {
        int u = uu % n, so = sv->knob[u];
        if (u < 2)
            continue; /* the source and sink */
        for (int j = 0; j <= uu / n && so >= 0; j++)
            so = kr__round_pareto_step(sv, u, so, +1);
        if (so < 0)
            continue;
        memcpy(sv->kbak, sv->knob, nb);
        sv->knob[u] = so;
        if (cut_repair(sv, u, budget, list)) {
            (void)kr__round_cpm(sv);
            (void)kr__round_final(sv, budget);
            double e = knob_eff(sv) + PS * kr__round_cpm(sv);
            if (e < e0 - 1e-9) {
                e0 = e;
                kept++;
                continue;
            }
        }
        memcpy(sv->knob, sv->kbak, nb);
    }
    free(list);
    return kept;
}

/*
 * The deadline search (kr_solve_refine): the rounding passes for the budget, then rounds of
 * the exchange pass, the final pass, a window sweep centred on every op (not only the
 * critical ones, as after each step) and, up to KR__EXCHANGE_MAX_OPS instructions, the
 * slow-and-repair moves, while a round lowers the effective energy; at most
 * KR__REFINE_ROUNDS rounds. Every move keeps the real critical path within the budget, and
 * static power is charged for the whole budget-bounded makespan, so lowering the effective
 * energy at a makespan within the budget lowers the plan's energy only when the makespan does
 * not grow: the caller compares whole energies.
 */
#define KR__REFINE_ROUNDS 8
static double deadline_search(kr__solver *sv, double budget)
{
    (void)kr__round_cpm(sv);
    (void)kr__round_final(sv, budget);
    double prev = knob_eff(sv);
    for (int round = 0; round < KR__REFINE_ROUNDS; round++) {
        kr__round_exchange(sv, budget);
        (void)kr__round_cpm(sv);
        (void)kr__round_final(sv, budget);
        sv->wops = sv->wnodes = 0;
        kr__round_sweep(sv, budget, 1);
        sv->wops = 8;
        sv->wnodes = 5000;
        kr__round_sweep(sv, budget, 1);
        sv->wops = sv->wnodes = 0;
        if (sv->n - 2 <= KR__EXCHANGE_MAX_OPS)
            (void)slow_repair(sv, budget);
        double e = knob_eff(sv);
        if (!(e < prev - 1e-9))
            break;
        prev = e;
    }
    return kr__round_cpm(sv);
}

/*
 * Starts and kicks, measured on bench_solver's 40 deadlines of (2,4) … (4,8) against the
 * frontier's best plan at each: one start and 6-op windows lowered the energy by 0–0.11 %;
 * four starts and 8-op windows as well by up to 0.17 %; 32 kicks (iterated local search) by a
 * further 0–0.04 % (e.g. (3,6) at 1.1154 s: 854.447 → 854.124 J) at 5–8 times the cost
 * (0.2–0.8 s per deadline on (4,8) on a loaded machine), so kicks only run up to
 * KR__EXCHANGE_MAX_OPS instructions. The random stream is seeded: results are deterministic.
 */
#define KR__REFINE_STARTS 4
#define KR__REFINE_KICKS 32
/* One refinement: the tracer's state for the passes and the best plan found. */
typedef struct refine_run {
    kr__solver sv;
    kr_solve_result *f;
    double deadline_s;
    kr_solver_step best; /* Figures of the best plan (the lowest-energy step that meets it). */
    int *bestk;          /* Its knobs (nops), when found. */
    int *startk;         /* Scratch: a start's knobs (nops). */
    int found;           /* 1 once a plan beat the frontier's best. */
} refine_run;

/* Starts: the KR__REFINE_STARTS undominated steps nearest below the deadline (the first is the
 * lowest-energy step that meets it); insertion by time, latest first. Returns that
 * lowest-energy step, or −1 if no step meets the deadline. */
static int pick_starts(const kr_solve_result *f, double deadline_s, int *start, int *ns_out)
{
    int ns = 0, k0 = -1;
    for (int k = 0; k < f->nsteps; k++) {
        const kr_solver_step *st = &f->steps[k];
        if (!(st->knob_time_s <= deadline_s + 1e-12))
            continue;
        if (k0 < 0 || st->energy_j < f->steps[k0].energy_j)
            k0 = k;
        if (st->dominated)
            continue;
        int i = ns < KR__REFINE_STARTS ? ns++ : KR__REFINE_STARTS;
        while (i > 0 && f->steps[start[i - 1]].knob_time_s < st->knob_time_s) {
            if (i < KR__REFINE_STARTS)
                start[i] = start[i - 1];
            i--;
        }
        if (i < KR__REFINE_STARTS)
            start[i] = k;
    }
    if (k0 >= 0 && ns == 0)
        start[ns++] = k0;
    *ns_out = ns;
    return k0;
}

/* Searches from the knobs in rr->sv.knob; keeps the plan if it beats the best (figures from
 * step `base`). Returns 1 if it did. */
static int search_keep(refine_run *rr, int base)
{
    double span = deadline_search(&rr->sv, rr->deadline_s);
    kr_solver_step st = rr->f->steps[base];
    kr__step_figures(&rr->sv, &st, span);
    if (!(st.energy_j < rr->best.energy_j * (1 - 1e-12)))
        return 0;
    rr->best = st;
    memcpy(rr->bestk, rr->sv.knob + 2, sizeof(int) * (size_t)rr->f->nops);
    rr->found = 1;
    return 1;
}

/* The deadline search from each start. */
static int from_starts(refine_run *rr, const int *start, int ns, kr_error *err)
{
    kr__solver *sv = &rr->sv;
    for (int i = 0; i < ns; i++) {
        (void)kr_solve_result_config(rr->f, start[i], rr->startk);
        for (int v = 2; v < sv->n; v++) {
            int o = rr->startk[v - 2];
            if (o < 0 || o >= sv->groups[sv->gidx[v]].set->n)
                return kr_error_set(err, KR_EINVAL, "refine: step %d assigns option %d to node %d, outside its set",
                                    start[i], o, v);
            sv->knob[v] = o;
        }
        (void)search_keep(rr, start[i]);
    }
    return KR_OK;
}

/* Kicks: speed up three random ops by one Pareto step (room for the others), then search
 * again from there; keep the best plan and restart from it. */
static int kicks(refine_run *rr, int k0, int nkick, kr_error *err)
{
    kr__solver *sv = &rr->sv;
    kr__rng r;
    kr__rng_seed(&r, 15);
    if (rr->found)
        memcpy(sv->knob + 2, rr->bestk, sizeof(int) * (size_t)rr->f->nops);
    else if (kr_solve_result_config(rr->f, k0, sv->knob + 2) != KR_OK)
        return kr_error_set(err, KR_EINVAL, "refine: no plan at step %d", k0);
    for (int it = 0; it < nkick; it++) {
        for (int j = 0; j < 3; j++) {
            int v = 2 + (int)(kr__rng_next(&r) % (uint64_t)(sv->n - 2));
            int fo = kr__round_pareto_step(sv, v, sv->knob[v], -1);
            if (fo >= 0)
                sv->knob[v] = fo;
        }
        if (!search_keep(rr, k0) && rr->found)
            memcpy(sv->knob + 2, rr->bestk, sizeof(int) * (size_t)rr->f->nops);
    }
    return KR_OK;
}

/* After the kicks: slow-and-repair moves from the best plan while they keep finding some (at
 * most 4 rounds), each followed by the deadline search; kept as the kicks are. */
static int repair_rounds(refine_run *rr, int k0, kr_error *err)
{
    kr__solver *sv = &rr->sv;
    for (int round = 0; round < 4; round++) {
        if (rr->found)
            memcpy(sv->knob + 2, rr->bestk, sizeof(int) * (size_t)rr->f->nops);
        else if (kr_solve_result_config(rr->f, k0, sv->knob + 2) != KR_OK)
            return kr_error_set(err, KR_EINVAL, "refine: no plan at step %d", k0);
        if (!slow_repair(sv, rr->deadline_s) || !search_keep(rr, k0))
            break;
    }
    return KR_OK;
}

/* Appends the best plan to the frontier as a new step; its index in *step_out. */
static int append_best(refine_run *rr, int *step_out, kr_error *err)
{
    kr_solve_result *f = rr->f;
    size_t scap = (size_t)f->nsteps;
    if (kr__grow((void **)&f->steps, &scap, (size_t)f->nsteps + 1, sizeof *f->steps) ||
        kr__step_plan_push(f, rr->bestk))
        return kr_error_set(err, KR_ENOMEM, "refine: out of memory");
    kr_solver_step best = rr->best;
    best.step = f->nsteps;
    best.cost_change_j = 0;
    best.bound_j = f->bound_min ? kr_solve_result_bound(f, best.knob_time_s) : INFINITY;
    best.gap = isfinite(best.bound_j) ? best.energy_j / best.bound_j - 1 : NAN;
    f->steps[f->nsteps] = best;
    *step_out = f->nsteps++;
    return kr__step_mark_dominated(f, err);
}

int kr_solve_refine(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *f,
                    double deadline_s, int *step_out, kr_error *err)
{
    int start[KR__REFINE_STARTS], ns = 0;
    int k0 = pick_starts(f, deadline_s, start, &ns);
    if (k0 < 0)
        return kr_error_set(err, KR_ERANGE, "refine: no step meets the deadline of %g s", deadline_s);
    if (!dag->finalized || dag->n - 2 != f->nops)
        return kr_error_set(err, KR_EINVAL, "refine: the DAG is not the frontier's (%d instructions, expected %d)",
                            dag->n - 2, f->nops);
    refine_run rr;
    memset(&rr, 0, sizeof rr);
    rr.sv.dag = dag;
    rr.sv.opts = opts;
    rr.sv.cfg = *cfg;
    rr.sv.cfg.cost_model = KR_COST_EXACT; /* the passes use the real options only (no lowtime fit) */
    rr.f = f;
    rr.deadline_s = deadline_s;
    int rc = kr__sv_setup(&rr.sv, err);
    *step_out = k0;
    rr.best = f->steps[k0];
    size_t w = (size_t)(f->nops > 0 ? f->nops : 1);
    if (rc == KR_OK && ((rr.bestk = malloc(sizeof(int) * w)) == NULL || (rr.startk = malloc(sizeof(int) * w)) == NULL))
        rc = kr_error_set(err, KR_ENOMEM, "refine: out of memory");
    if (rc == KR_OK)
        rc = from_starts(&rr, start, ns, err);
    if (rc == KR_OK && f->nops <= KR__EXCHANGE_MAX_OPS)
        rc = kicks(&rr, k0, KR__REFINE_KICKS, err);
    if (rc == KR_OK && f->nops <= KR__EXCHANGE_MAX_OPS)
        rc = repair_rounds(&rr, k0, err);
    if (rc == KR_OK && rr.found)
        rc = append_best(&rr, step_out, err);
    free(rr.bestk);
    free(rr.startk);
    kr__sv_free(&rr.sv);
    return rc;
}

/*
 * The frontier's polish (exact mode; kr_solver_config.polish). Each step's own rounding starts
 * afresh from the relaxation's durations, so a good choice found at one step is lost at the
 * next. The polish carries each step's plan to its neighbours' makespans:
 * - from a faster neighbour (sweeping from the fastest step to the slowest): its plan meets
 *   the step's makespan as it is, and the rounding passes hand it the room left;
 * - from a slower neighbour (sweeping the other way): its plan is sped up to the step's
 *   makespan by minimum cuts of its real critical graph (cut_repair(), as the fast end does),
 *   then gets the passes.
 * A carried plan that costs less than the step's replaces it: the step keeps its quantized
 * time and model figures, its real makespan never exceeds the one it had (each step's budget
 * is its makespan before the polish) and its energy falls. Chained, a good choice travels
 * along the frontier. Sweeps alternate until a pair of them changes nothing (at most
 * KR__POLISH_SWEEPS pairs); a step is tried again from a neighbour only when that neighbour's
 * plan changed since, and a carried plan that the final pass turns into the step's own is not
 * searched further. Cost: one round of the passes per step, direction and sweep with a change
 * (about three times the frontier's own time where the exchange passes run: 0.66 -> 2.0 s on
 * the golden (4,8)); effect: docs/solver.md, issue 15 round 9.
 */
#define KR__POLISH_SWEEPS 8
int kr__step_polish(kr_solve_result *f, kr__solver *sv, kr_error *err)
{
    int n = sv->n, nops = f->nops, ns = f->nsteps;
    if (ns < 2 || nops <= 0)
        return KR_OK;
    size_t w = (size_t)nops, nb = sizeof(int) * w;
    int *P = malloc(nb * (size_t)ns), *list = malloc(sizeof(int) * 2 * (size_t)n);
    long *ver = calloc((size_t)ns, sizeof(long)), *tried = malloc(sizeof(long) * 2 * (size_t)ns);
    double *bud = malloc(sizeof(double) * (size_t)ns);
    int rc = KR_OK;
    long changed = 0;
    if (!P || !list || !ver || !tried || !bud) {
        rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory");
        goto out;
    }
    for (int k = 0; k < ns; k++) {
        if (kr_solve_result_config(f, k, P + (size_t)k * w) != KR_OK)
            goto out; /* a step without its plan (out of memory while recording): leave all */
        bud[k] = f->steps[k].knob_time_s;
        tried[2 * k] = tried[2 * k + 1] = -1;
    }
    for (int sweep = 0; sweep < KR__POLISH_SWEEPS; sweep++) {
        long before = changed;
        for (int dir = 0; dir < 2; dir++)
            for (int i = 1; i < ns; i++) {
                /* dir 0: from the faster neighbour k + 1; dir 1: from the slower one k − 1. */
                int k = dir == 0 ? ns - 1 - i : i, src = dir == 0 ? k + 1 : k - 1;
                if (tried[2 * k + dir] == ver[src])
                    continue;
                tried[2 * k + dir] = ver[src];
                kr_solver_step *st = &f->steps[k];
                int *pk = P + (size_t)k * w;
                memcpy(sv->knob + 2, P + (size_t)src * w, nb);
                /* Starts and durations of the carried plan (cut_repair() leaves them current). */
                if (kr__round_cpm(sv) > bud[k] + 1e-12 && (dir == 0 || !cut_repair(sv, -1, bud[k], list)))
                    continue;
                (void)kr__round_final(sv, bud[k]);
                if (memcmp(sv->knob + 2, pk, nb) == 0)
                    continue;
                double span = kr__round_improve(sv, kr__round_cpm(sv), bud[k]);
                kr_solver_step c = *st;
                kr__step_figures(sv, &c, span);
                if (span <= bud[k] + 1e-12 && c.energy_j < st->energy_j * (1 - 1e-12)) {
                    *st = c;
                    memcpy(pk, sv->knob + 2, nb);
                    ver[k]++;
                    changed++;
                }
            }
        if (changed == before)
            break;
    }
    if (changed > 0 && kr__step_plans_rewrite(f, P))
        rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory storing the polished plans");
out:
    free(P);
    free(list);
    free(ver);
    free(tried);
    free(bud);
    return rc;
}
