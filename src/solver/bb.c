/*
 * bb.c — branch and bound for one time budget B over the free ops (bfree, at most KR__WINDOW_OPS;
 * the others keep their knobs): minimise their total effective energy subject to the real
 * critical path <= B. The graph is first reduced to the free ops: dist[i][j] is the longest
 * path from free op i's end to free op j's start through fixed ops only (−∞ if none), hd[j]
 * the longest from the source to j's start and tl[i] from i's end to the sink through fixed
 * ops only (one forward pass per free op and two whole passes, O(k (V + E))). Then ES(j) =
 * max(hd[j], max_i ES(i) + d_i + dist[i][j]) exactly, and a path through no free op keeps its
 * current, feasible length. The free ops are branched in topological order on their Pareto
 * options, slowest (cheapest) first. Pruning: (a) time — ES(j) + d_j + tt[j] > B, tt[j] being
 * the longest path after j with the later free ops at their fastest options; when j is the
 * last free op on a path this is that path's exact length, so every leaf meets B; (b) energy —
 * the energy so far plus, for each free op not yet placed, the cheapest option that fits
 * between its head and tail bounds at all must stay below the best plan known. The incumbent
 * is the current knobs, so the search only returns something strictly better. Each node
 * counts against the limit: within it the search is exact (the optimum over the free ops), past
 * it the best plan found so far is kept.
 */
#include <math.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* One search's state: the window's free ops in topological order and their reduced graph. */
typedef struct kr__bb {
    kr__solver *sv;
    int k;                        /* Free ops. */
    int op[KR__WINDOW_MAX];       /* Their nodes, topological order. */
    int bestk[KR__WINDOW_MAX];    /* Their knobs in the best plan found. */
    double dist[KR__WINDOW_MAX][KR__WINDOW_MAX]; /* End of op i to start of op j, fixed ops only. */
    double hd[KR__WINDOW_MAX];    /* Source to op j's start through fixed ops only. */
    double tt[KR__WINDOW_MAX];    /* After op j, the later free ops at their fastest. */
    double lbs[KR__WINDOW_MAX + 1]; /* Σ_{i >= j} cheapest option of op i that can fit. */
    double es[KR__WINDOW_MAX], dur[KR__WINDOW_MAX]; /* Placed ops: start and duration. */
    double bound;                 /* The time budget B. */
    double cur, best_e;           /* Energy of the placed ops; of the best plan. */
    long nodes, limit;            /* Search nodes used and allowed. */
} kr__bb;

static void bb_dfs(kr__bb *bb, int j)
{
    kr__solver *sv = bb->sv;
    if (bb->nodes++ >= bb->limit)
        return;
    int k = bb->k;
    if (j == k) {
        if (bb->cur < bb->best_e - 1e-9) {
            bb->best_e = bb->cur;
            for (int i = 0; i < k; i++)
                bb->bestk[i] = sv->knob[bb->op[i]];
        }
        return;
    }
    /* Never taken: kr__bb_search sets k <= KR__WINDOW_MAX and the recursion stops at j == k,
     * so j < KR__WINDOW_MAX here and every index below is in bounds. GCC 12 at -O3 inlines
     * this recursion seven levels deep and, not knowing that invariant of a value loaded from
     * memory, reported -Warray-bounds for j = 6 on a path that cannot run (a false positive).
     * The test states the invariant where the compiler can see it. */
    if (j >= KR__WINDOW_MAX)
        return;
    double e0 = bb->hd[j];
    for (int i = 0; i < j; i++)
        e0 = fmax(e0, bb->es[i] + bb->dur[i] + bb->dist[i][j]);
    bb->es[j] = e0;
    double B = bb->bound + 1e-12;
    int v = bb->op[j];
    const kr__group *g = &sv->groups[sv->gidx[v]];
    int keep = sv->knob[v];
    for (int p = g->npar - 1; p >= 0 && bb->nodes < bb->limit; p--) {
        int o = g->par[p];
        double t = g->set->opt[o].time_s, eo = kr__opt_eff(sv, v, o);
        if (e0 + t + bb->tt[j] > B)
            continue;
        if (!(bb->cur + eo + bb->lbs[j + 1] < bb->best_e - 1e-9))
            break; /* faster options cost more */
        sv->knob[v] = o;
        bb->dur[j] = t;
        bb->cur += eo;
        bb_dfs(bb, j + 1);
        bb->cur -= eo;
    }
    sv->knob[v] = keep;
}

/* The current durations in dur[] and the free ops in bb->op; returns their count, or 0 when
 * there are none or more than KR__WINDOW_MAX. */
static int bb_collect(kr__bb *bb, double *dur)
{
    const kr__solver *sv = bb->sv;
    const kr_dag *dag = sv->dag;
    int k = 0;
    for (int i = 0; i < sv->n; i++) {
        int v = dag->topo[i];
        dur[v] = sv->gidx[v] >= 0 ? sv->groups[sv->gidx[v]].set->opt[sv->knob[v]].time_s : 0;
        if (sv->bfree[v]) {
            if (k == KR__WINDOW_MAX)
                return 0;
            bb->op[k++] = v;
        }
    }
    return k;
}

/* Index of node v among the free ops. */
static int bb_index(const kr__bb *bb, int v)
{
    for (int j = 0; j < bb->k; j++)
        if (bb->op[j] == v)
            return j;
    return -1;
}

/* Fixed-only heads (hf) forward into bb->hd, and tails (tf, from a node's start) backward
 * into tl; −∞ through a free op. */
static void bb_heads_tails(kr__bb *bb, const double *dur, double *hf, double *tf, double *tl)
{
    const kr__solver *sv = bb->sv;
    const kr_dag *dag = sv->dag;
    int n = sv->n;
    for (int i = 0; i < n; i++) {
        int v = dag->topo[i];
        double h = dag->in_off[v] == dag->in_off[v + 1] ? 0 : -INFINITY;
        for (int q = dag->in_off[v]; q < dag->in_off[v + 1]; q++) {
            int e = dag->in_e[q], u = dag->eu[e];
            if (!sv->bfree[u])
                h = fmax(h, hf[u] + dur[u] + dag->lag_s[e]);
        }
        hf[v] = h; /* for a free op: its head bound through fixed ops */
        if (sv->bfree[v]) {
            bb->hd[bb_index(bb, v)] = h;
            hf[v] = -INFINITY;
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        int v = dag->topo[i];
        double t = dag->out_off[v] == dag->out_off[v + 1] ? 0 : -INFINITY;
        for (int q = dag->out_off[v]; q < dag->out_off[v + 1]; q++) {
            int e = dag->out_e[q];
            t = fmax(t, dag->lag_s[e] + tf[dag->ev[e]]);
        }
        if (sv->bfree[v]) {
            tl[bb_index(bb, v)] = t;
            tf[v] = -INFINITY;
        } else {
            tf[v] = dur[v] + t;
        }
    }
}

/* dist[i][j]: forward from free op i over the fixed ops up to the last free op (hf is
 * scratch). */
static void bb_dist(kr__bb *bb, const double *dur, double *hf)
{
    const kr__solver *sv = bb->sv;
    const kr_dag *dag = sv->dag;
    int k = bb->k, last = sv->tpos[bb->op[k - 1]];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++)
            bb->dist[i][j] = -INFINITY;
        int a = bb->op[i];
        for (int p = sv->tpos[a] + 1; p <= last; p++) {
            int v = dag->topo[p];
            double h = -INFINITY;
            for (int q = dag->in_off[v]; q < dag->in_off[v + 1]; q++) {
                int e = dag->in_e[q], u = dag->eu[e];
                if (u == a)
                    h = fmax(h, dag->lag_s[e]);
                else if (!sv->bfree[u] && sv->tpos[u] > sv->tpos[a])
                    h = fmax(h, hf[u] + dur[u] + dag->lag_s[e]);
            }
            hf[v] = h;
            if (sv->bfree[v]) {
                bb->dist[i][bb_index(bb, v)] = h;
                hf[v] = -INFINITY;
            }
        }
    }
}

/* Bounds with the free ops at their fastest options: tails tt, heads hh, and the energy
 * bounds lbs; returns the free ops' current energy (the incumbent). */
static double bb_bounds(kr__bb *bb, const double *tl, double budget)
{
    const kr__solver *sv = bb->sv;
    int k = bb->k;
    double tmin[KR__WINDOW_MAX], hh[KR__WINDOW_MAX];
    for (int j = 0; j < k; j++) {
        const kr__group *g = &sv->groups[sv->gidx[bb->op[j]]];
        tmin[j] = g->set->opt[g->par[0]].time_s;
    }
    for (int j = k - 1; j >= 0; j--) {
        bb->tt[j] = tl[j];
        for (int m = j + 1; m < k; m++)
            bb->tt[j] = fmax(bb->tt[j], bb->dist[j][m] + tmin[m] + bb->tt[m]);
    }
    for (int j = 0; j < k; j++) {
        hh[j] = bb->hd[j];
        for (int i = 0; i < j; i++)
            hh[j] = fmax(hh[j], hh[i] + tmin[i] + bb->dist[i][j]);
    }
    double cur = 0;
    bb->lbs[k] = 0;
    for (int j = k - 1; j >= 0; j--) {
        int v = bb->op[j];
        const kr__group *g = &sv->groups[sv->gidx[v]];
        double lb = kr__opt_eff(sv, v, sv->knob[v]);
        for (int p = g->npar - 1; p >= 0; p--)
            if (hh[j] + g->set->opt[g->par[p]].time_s + bb->tt[j] <= budget + 1e-12) {
                lb = fmin(lb, kr__opt_eff(sv, v, g->par[p]));
                break;
            }
        cur += kr__opt_eff(sv, v, sv->knob[v]);
        bb->lbs[j] = bb->lbs[j + 1] + lb;
    }
    return cur;
}

int kr__bb_search(kr__solver *sv, double budget, long limit)
{
    kr__bb bb;
    bb.sv = sv;
    int n = sv->n;
    double *dur = sv->bbuf, *hf = sv->bbuf + n, *tf = sv->bbuf + 2 * n;
    int k = bb_collect(&bb, dur);
    if (k == 0)
        return 0;
    bb.k = k;
    double tl[KR__WINDOW_MAX];
    bb_heads_tails(&bb, dur, hf, tf, tl);
    bb_dist(&bb, dur, hf);
    double cur = bb_bounds(&bb, tl, budget);
    bb.bound = budget;
    bb.cur = 0;
    bb.best_e = cur;
    bb.nodes = 0;
    bb.limit = limit;
    bb_dfs(&bb, 0);
    if (!(bb.best_e < cur - 1e-9))
        return 0;
    int keep[KR__WINDOW_MAX];
    for (int j = 0; j < k; j++) {
        keep[j] = sv->knob[bb.op[j]];
        sv->knob[bb.op[j]] = bb.bestk[j];
    }
    if (kr__round_cpm(sv) <= budget + 1e-12)
        return 1;
    for (int j = 0; j < k; j++)
        sv->knob[bb.op[j]] = keep[j];
    return 0;
}
