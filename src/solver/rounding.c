/*
 * rounding.c — exact mode's rounding (record() in steps.c): the hull durations become real
 * options — the cheapest that fits each duration, then the final pass (each op slows into its
 * room), then on graphs of up to KR__EXCHANGE_MAX_OPS instructions the exchange pass (one op
 * slower, one faster) and the window search (up to 6 nearby ops re-chosen by branch and
 * bound, bb.c), all against the budget max(real critical path, T · unit). See each pass's
 * comment for its cost and measured effect.
 */
#include <math.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* The knobs' real durations into sv->rt (0 at the source and sink). */
static void round_durations(kr__solver *sv)
{
    const kr_option *const *vopt = sv->vopt;
    const int *knob = sv->knob;
    double *rt = sv->rt;
    rt[KR_DAG_SOURCE] = rt[KR_DAG_SINK] = 0;
    for (int v = 2; v < sv->n; v++)
        rt[v] = vopt[v][knob[v]].time_s;
}

/* kr_dag_cpm's forward half on the solver's edge rows (the same sums and maxima, so the same
 * doubles): earliest starts of the durations in sv->rt into sv->res; returns the makespan. */
double kr__round_forward(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    const int *off = dag->out_off, *succ = sv->osucc, *topo = dag->topo;
    const double *lag = sv->olags, *rt = sv->rt;
    double *es = sv->res, span = 0;
    for (int v = 0; v < sv->n; v++)
        es[v] = 0;
    for (int i = 0; i < sv->n; i++) {
        int u = topo[i];
        double fin = es[u] + rt[u];
        span = KR_MAX(span, fin);
        for (int k = off[u]; k < off[u + 1]; k++)
            if (fin + lag[k] > es[succ[k]])
                es[succ[k]] = fin + lag[k];
    }
    return span;
}

double kr__round_forward_from(kr__solver *sv, double *es, double *pmax, int p0, double span0)
{
    const int *topo = sv->dag->topo, *ioff = sv->dag->in_off, *ipred = sv->ipred;
    const double *rt = sv->rt, *ilag = sv->ilags;
    double span = span0;
    for (int i = p0; i < sv->n; i++) {
        int w = topo[i];
        double st = 0;
        for (int k = ioff[w]; k < ioff[w + 1]; k++) {
            int u = ipred[k];
            double fin = es[u] + rt[u];
            if (fin + ilag[k] > st)
                st = fin + ilag[k];
        }
        es[w] = st;
        span = KR_MAX(span, st + rt[w]);
        if (pmax)
            pmax[i] = span;
    }
    return span;
}

void kr__round_lf(kr__solver *sv, double *lf, double span)
{
    /* kr_dag_cpm's backward half on the edge rows (lf[w] − dur[w] − lag, in that order). */
    const kr_dag *dag = sv->dag;
    const int *off = dag->out_off, *succ = sv->osucc, *topo = dag->topo;
    const double *lag = sv->olags, *rt = sv->rt;
    for (int v = 0; v < sv->n; v++)
        lf[v] = span;
    for (int i = sv->n - 1; i >= 0; i--) {
        int u = topo[i];
        double m = lf[u];
        for (int k = off[u]; k < off[u + 1]; k++) {
            int w = succ[k];
            double t = lf[w] - rt[w] - lag[k];
            if (t < m)
                m = t;
        }
        lf[u] = m;
    }
}

/* Real-time critical path of the knobs in sv->knob; fills rt (durations), res (starts) and,
 * when lf is not NULL, the latest finishes. */
double kr__round_cpm_lf(kr__solver *sv, double *lf)
{
    round_durations(sv);
    double span = kr__round_forward(sv);
    if (lf)
        kr__round_lf(sv, lf, span);
    return span;
}

double kr__round_cpm(kr__solver *sv)
{
    return kr__round_cpm_lf(sv, NULL);
}

/*
 * Final pass (exact mode): in reverse topological order, each op may finish as late as its
 * successors' latest starts allow (given the choices already made after it) while its own
 * start stays at its earliest (predecessors not yet revisited keep their durations); it takes
 * the cheapest option (effective energy) that fits there. The makespan never grows. Every
 * node's rlf is written before a predecessor reads it (reverse topological order).
 */
int kr__round_final(kr__solver *sv, double span)
{
    const kr_dag *dag = sv->dag;
    const int *off = dag->out_off, *succ = sv->osucc, *topo = dag->topo, *gidx = sv->gidx;
    const double *lag = sv->olags, *res = sv->res;
    const kr__group *groups = sv->groups;
    double *rlf = sv->rlf, *rt = sv->rt;
    int *knob = sv->knob, changed = 0;
    sv->final_p0 = sv->n;
    for (int i = sv->n - 1; i >= 0; i--) {
        int u = topo[i];
        double fin = span;
        for (int k = off[u]; k < off[u + 1]; k++) {
            double t = rlf[succ[k]] - lag[k];
            if (t < fin)
                fin = t;
        }
        if (gidx[u] >= 0) {
            const kr__group *g = &groups[gidx[u]];
            const double *pt = g->par_t;
            double room = fin - res[u];
            /* Slowest Pareto option that fits: the last index with pt <= room (times strictly
             * ascend, so it is unique), searched from the current knob's place. */
            int best = knob[u], pick = g->ppos[best];
            if (pt[pick] <= room) {
                while (pick + 1 < g->npar && pt[pick + 1] <= room)
                    pick++;
            } else {
                do
                    pick--;
                while (pick >= 0 && pt[pick] > room);
            }
            if (pick >= 0 && g->par_e[pick] < g->eff[best]) {
                best = g->par[pick];
                changed++;
                sv->final_p0 = i;
            }
            knob[u] = best;
            rt[u] = sv->vopt[u][best].time_s;
        }
        /* rlf holds this node's latest start for its predecessors. */
        rlf[u] = fin - rt[u];
    }
    return changed;
}

/* Pareto option of v next slower (dir = +1) or next faster (dir = −1) than option k, or −1.
 * O(1) from ppos (the last Pareto option no slower than k; the Pareto times strictly ascend):
 * the fast end asks it of every critical op at every iteration. */
int kr__round_pareto_step(const kr__solver *sv, int v, int k, int dir)
{
    const kr__group *g = &sv->groups[sv->gidx[v]];
    double t = g->set->opt[k].time_s;
    int j = g->ppos[k]; /* par_t[j] <= t < par_t[j + 1], or j = 0 with par_t[0] > t */
    if (dir > 0) {
        if (g->par_t[j] > t)
            return g->par[j];
        return j + 1 < g->npar ? g->par[j + 1] : -1;
    }
    if (g->par_t[j] < t)
        return g->par[j];
    return j > 0 ? g->par[j - 1] : -1;
}

/*
 * Exchange pass (exact mode, small graphs): the final pass only moves one knob into free room;
 * the convex relaxation's rounding can also leave gains that need two ops to move at once —
 * slow op u to its next cheaper option and pay for the time by speeding another op w by one or
 * two options: w among u's DAG neighbours, and any op when the graph has at most
 * KR__EXCHANGE_ALL_OPS instructions. Each trial is checked with a full real-time critical path
 * against the budget; first improvement wins; rounds repeat while something improves (at most
 * 4). Cost O(rounds · ops · candidates · (V + E)) per step, hence only for graphs up to
 * KR__EXCHANGE_MAX_OPS instructions unless forced (the window search below shares the gate).
 * Measured effect: tests/test_solver.c and docs/solver.md (largest gap to brute force on
 * GPU-like options 1.5 % → 0.6 % before the window search existed).
 */
/*
 * One speed-up cut of the real critical graph (exact mode: the fast end, steps.c, and the
 * refine's repairs, refine.c). list[0 .. nl) holds the source, the sink, then the critical ops
 * (sv->crit set for each), sv->res and sv->rt their real earliest starts and durations; tol
 * is the tightness tolerance of a dependency arc. The network has only these ops, numbered in
 * list order (so s and t keep ids 0 and 3; pos[] is scratch of sv->n ints, read only for
 * listed ops), and the tight arcs between them (from the DAG's out-edge rows). An op's arc
 * costs the effective energy of moving it to its next faster Pareto option (∞ at its fastest,
 * for the source and sink, for op `pin` and for every dependency arc); every critical path
 * crosses the minimum cut, whose ops get that option (knob and real time). Returns the least
 * topological position of a changed op, −1 when the cut is infinite (some critical path can
 * go no faster) and −2 when out of memory.
 */
int kr__round_speedup(kr__solver *sv, const int *list, int *pos, int nl, double tol, int pin)
{
    const kr_dag *dag = sv->dag;
    int s = KR__LNODE(KR_DAG_SOURCE), t = KR__RNODE(KR_DAG_SINK);
    for (int i = 0; i < nl; i++)
        pos[list[i]] = i;
    if (kr__flow_reset(&sv->flow, 2 * nl, 2 * nl + 8))
        return -2;
    for (int i = 0; i < nl; i++) {
        int v = list[i];
        if (!sv->crit[v])
            continue;
        int64_t c = KR__EX_INF;
        int fo = sv->gidx[v] >= 0 && v != pin ? kr__round_pareto_step(sv, v, sv->knob[v], -1) : -1;
        if (fo >= 0)
            c = KR_MAX(1, llround((kr__opt_eff(sv, v, fo) - kr__opt_eff(sv, v, sv->knob[v])) * KR__EX_SCALE) + 1);
        kr__flow_arc(&sv->flow, KR__LNODE(i), KR__RNODE(i), c);
    }
    for (int i = 0; i < nl; i++) {
        int u = list[i];
        if (!sv->crit[u])
            continue;
        for (int k = dag->out_off[u]; k < dag->out_off[u + 1]; k++) {
            int v = sv->osucc[k];
            if (sv->crit[v] && sv->res[u] + sv->rt[u] + sv->olags[k] >= sv->res[v] - tol)
                kr__flow_arc(&sv->flow, KR__RNODE(i), KR__LNODE(pos[v]), KR__EX_INF);
        }
    }
    if (kr__flow_min_cut(&sv->flow, s, t, sv->mark) >= KR__EX_INF / 2)
        return -1;
    int p0 = sv->n;
    for (int i = 2; i < nl; i++) {
        int v = list[i];
        if (sv->mark[KR__LNODE(i)] && !sv->mark[KR__RNODE(i)]) {
            sv->knob[v] = kr__round_pareto_step(sv, v, sv->knob[v], -1);
            sv->rt[v] = sv->vopt[v][sv->knob[v]].time_s;
            p0 = KR_MIN(p0, sv->tpos[v]);
        }
    }
    return p0;
}

/* Exchange trial: u moves from ku to its next slower option su (saving `save`), w one or two
 * Pareto steps faster; kept if the real critical path meets the budget. Returns 1 if kept. */
static int exchange_try(kr__solver *sv, int u, int ku, int su, int w, double save, double budget)
{
    int kw = sv->knob[w], fw = kw;
    for (int stepn = 0; stepn < 2; stepn++) {
        fw = kr__round_pareto_step(sv, w, fw, -1);
        if (fw < 0)
            break;
        double cost = kr__opt_eff(sv, w, fw) - kr__opt_eff(sv, w, kw);
        if (!(cost < save - 1e-12))
            break;
        sv->knob[u] = su;
        sv->knob[w] = fw;
        if (kr__round_cpm(sv) <= budget + 1e-12)
            return 1;
        sv->knob[u] = ku;
        sv->knob[w] = kw;
    }
    return 0;
}

/* Slows op u by one Pareto step if some partner (predecessors, successors, then every op on
 * small graphs) can pay for the time; returns 1 if an exchange was made. */
static int exchange_op(kr__solver *sv, int u, double budget)
{
    const kr_dag *dag = sv->dag;
    int ku = sv->knob[u], su = kr__round_pareto_step(sv, u, ku, +1);
    if (su < 0 || !(kr__opt_eff(sv, u, su) < kr__opt_eff(sv, u, ku)))
        return 0;
    double save = kr__opt_eff(sv, u, ku) - kr__opt_eff(sv, u, su);
    for (int side = 0; side < 3; side++) {
        int lo = side == 2 ? 2 : side ? dag->out_off[u] : dag->in_off[u];
        int hi = side == 2 ? (sv->n - 2 <= KR__EXCHANGE_ALL_OPS ? sv->n : 2) : side ? dag->out_off[u + 1] : dag->in_off[u + 1];
        for (int i = lo; i < hi; i++) {
            int w;
            if (side == 2)
                w = i;
            else {
                int e = side ? dag->out_e[i] : dag->in_e[i];
                w = side ? dag->ev[e] : dag->eu[e];
            }
            if (w < 2 || w == u)
                continue;
            if (exchange_try(sv, u, ku, su, w, save, budget))
                return 1;
        }
    }
    return 0;
}

void kr__round_exchange(kr__solver *sv, double budget)
{
    for (int round = 0; round < 4; round++) {
        int improved = 0;
        for (int u = 2; u < sv->n; u++)
            improved |= exchange_op(sv, u, budget);
        if (!improved)
            break;
    }
}

/*
 * Window search (exact mode, with the exchange pass): the convex relaxation's rounding can
 * leave gains that need several ops to move at once (slow two, speed one, ...), which the
 * single-op final pass and the pairwise exchange pass cannot see. For each op u on the real
 * critical path (only there can slowing something pay; an op with float already sits at its
 * cheapest option that fits), the window is u and the ops nearest to it in the DAG, breadth
 * first over predecessors and successors (the source and sink are passed through, so parts
 * linked only through them are reached), at most KR__WINDOW_OPS ops; bb_search re-chooses the
 * window's knobs optimally for the budget with the rest fixed, within KR__WINDOW_NODES
 * nodes. One sweep per step. A window that holds the whole graph is the last one: completed
 * within the node limit it is the exact optimum for the budget.
 * Cost per step: (critical ops) × (O(k (V + E)) reduction + at most KR__WINDOW_NODES search
 * nodes of O(k) each), k = KR__WINDOW_OPS; a step entering with the same knobs as the last
 * one reuses its result when that still meets the budget (frequent with fine units). The
 * limits were chosen on tests/test_solver.c's brute-force comparison (largest gap, GPU-like
 * 20 W / 0 W, arbitrary 20 W / 0 W): 6 ops, 1,000 nodes: 0.014 / 0.028 / 0 / 0 %; 6 ops, 300
 * nodes: 0.38 / 0.50 / 0 / 0 %; 5 ops: 0.36 / 0.41 / 0 / 1.37 %; 8 ops within 1,000 nodes:
 * 0.38 / 0.50 / 0 / 0 % (the search stops early). Solve times: docs/solver.md.
 */
void kr__round_window(kr__solver *sv, double budget)
{
    int n = sv->n;
    size_t nb = sizeof(int) * (size_t)n;
    /* Consecutive steps often enter with the same knobs (fine units): reuse the last result
     * when it still meets this budget (it is no worse than the entering knobs). */
    if (sv->win_valid && memcmp(sv->win_in, sv->knob, nb) == 0) {
        memcpy(sv->kbak, sv->knob, nb);
        memcpy(sv->knob, sv->win_out, nb);
        if (kr__round_cpm(sv) <= budget + 1e-12)
            return;
        memcpy(sv->knob, sv->kbak, nb);
    }
    memcpy(sv->win_in, sv->knob, nb);
    kr__round_sweep(sv, budget, 0);
    memcpy(sv->win_out, sv->knob, nb);
    sv->win_valid = 1;
}


/* Grows the window around op u breadth first over predecessors and successors (the source
 * and sink are passed through) to at most wk ops in sv->bfree; returns its op count. */
static int window_grow(kr__solver *sv, int u, int wk)
{
    const kr_dag *dag = sv->dag;
    memset(sv->bfree, 0, (size_t)sv->n);
    int qh = 0, qt = 0, cnt = 1;
    sv->bq[qt++] = u;
    sv->bfree[u] = 1;
    while (qh < qt && cnt < wk) {
        int x = sv->bq[qh++];
        for (int side = 0; side < 2 && cnt < wk; side++) {
            int lo = side ? dag->out_off[x] : dag->in_off[x], hi = side ? dag->out_off[x + 1] : dag->in_off[x + 1];
            for (int k = lo; k < hi && cnt < wk; k++) {
                int e = side ? dag->out_e[k] : dag->in_e[k];
                int y = side ? dag->ev[e] : dag->eu[e];
                if (sv->bfree[y])
                    continue;
                sv->bfree[y] = 1; /* for the source and sink: visited, cleared below */
                sv->bq[qt++] = y;
                cnt += y >= 2;
            }
        }
    }
    sv->bfree[KR_DAG_SOURCE] = sv->bfree[KR_DAG_SINK] = 0;
    return cnt;
}

/* One sweep of windows centred on the critical ops, or (every) on every op: an op with float
 * can also gain, by handing its room to a neighbour that saves more per second. */
void kr__round_sweep(kr__solver *sv, double budget, int every)
{
    int n = sv->n;
    double span = kr__round_cpm_lf(sv, sv->rlf);
    for (int v = 0; v < n; v++)
        sv->crit[v] = v >= 2 && (every || sv->rlf[v] - sv->res[v] - sv->rt[v] <= 1e-9 * (1 + span));
    int wk = sv->wops > 0 ? KR_MIN(sv->wops, KR__WINDOW_MAX) : KR__WINDOW_OPS;
    long wn = sv->wnodes > 0 ? sv->wnodes : KR__WINDOW_NODES;
    for (int u = 2; u < n; u++) {
        if (!sv->crit[u])
            continue;
        int cnt = window_grow(sv, u, wk);
        (void)kr__bb_search(sv, budget, wn);
        if (cnt >= n - 2)
            return; /* the window was the whole graph */
    }
}

/*
 * The rounding passes of exact mode on the knobs in sv->knob for a time budget (>= their real
 * critical path): the final pass, then on small graphs the exchange pass, the final pass again
 * and the window search. Returns the knobs' real critical path (never above the budget).
 * One final pass is a fixed point: when the knobs are the cheapest that fit their durations,
 * a move is always to a strictly slower option; durations only grow, earliest starts only
 * grow, and each op's latest finish is unchanged, so a second pass finds no room the first
 * did not (it moved nothing on every golden case, test and the paper suite when it ran up to
 * 3 times; IEEE addition and max are monotone, so this holds exactly).
 */
double kr__round_improve(kr__solver *sv, double span0, double budget)
{
    const kr_solver_config *cfg = &sv->cfg;
    /* A final pass that changed no knob leaves the critical path as it was; one that did
     * left every op's real time in rt (it writes each op's). */
    double span = span0;
    if (kr__round_final(sv, budget)) {
        /* Starts before the first changed knob stand; where the caller knows the running
         * maximum finish of sv->res (record()), only the rest is recomputed. */
        int p = sv->final_p0;
        span = sv->res_pmax ? kr__round_forward_from(sv, sv->res, NULL, p, p > 0 ? sv->res_pmax[p - 1] : 0)
                            : kr__round_forward(sv);
    }
    if (kr__exchange_runs(cfg, sv->n - 2)) {
        kr__round_exchange(sv, KR_MAX(span, budget));
        /* The final pass reads the earliest starts in sv->res: the exchange pass's last
         * critical path may have been of a rejected trial, so compute them afresh (stale
         * starts let the pass overrun the budget: issue 15's fast end). */
        (void)kr__round_cpm(sv);
        (void)kr__round_final(sv, KR_MAX(span, budget));
        span = kr__round_cpm(sv);
        kr__round_window(sv, KR_MAX(span, budget));
        span = kr__round_cpm(sv);
    }
    return span;
}

