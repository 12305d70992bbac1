/*
 * ltcut.c — the lowtime-compatible step (shared/reference/lowtime-solver.md §5): the cut graph
 * is the critical arcs (EF = LF); capacities as lowtime's annotate_capacities (INF = 10000, +ε
 * where both moves are possible, both floored to multiples of ε = 1e-6 by CPython float floor
 * division); the cut is found by lowtime's two phases (feasible flow with lower bounds through
 * s', t' and an infinite t → s arc; then augmentation from s to t), in integer units of 1e-6 so
 * the flow is exact; S = nodes reachable from s through residual capacity > 0
 * (source-minimal); durations change as reduce_durations does (speed-ups first; a dummy or an
 * op at its minimum in the cut, or a lengthened op at its maximum, ends the run with +∞,
 * without rollback); the run also stops when |cost change| < 1e-6 or phase 1 is infeasible.
 */
#include <math.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

static int64_t lt_q(double x)
{
    return (int64_t)kr__py_floordiv(x, KR__LT_EPS);
}

/* lowtime capacities of op node v (critical). */
static void lt_caps(const kr__solver *sv, int v, int64_t *lb, int64_t *ub)
{
    int gi = sv->gidx[v];
    if (gi < 0) {
        *lb = 0;
        *ub = lt_q(KR__LT_INF);
        return;
    }
    const kr__group *g = &sv->groups[gi];
    long d = sv->d[v];
    double l, u;
    if (d == g->dmin && d == g->dmax) {
        l = 0;
        u = KR__LT_INF;
    } else if (d - 1 < g->dmin) {
        l = fabs(kr__gcost(g, d) - kr__gcost(g, d + 1));
        u = KR__LT_INF;
    } else if (d + 1 > g->dmax) {
        l = 0;
        u = fabs(kr__gcost(g, d - 1) - kr__gcost(g, d));
    } else {
        l = fabs(kr__gcost(g, d) - kr__gcost(g, d + 1));
        u = fabs(kr__gcost(g, d - 1) - kr__gcost(g, d)) + KR__LT_EPS;
    }
    *lb = lt_q(l);
    *ub = lt_q(u);
}

/* One lowtime iteration's cut. Returns 1 with mark set, 0 if phase 1 is infeasible. */
int kr__lt_cut(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, N = 2 * n;
    int sp = N, tp = N + 1;
    kr__flow_reset(&sv->flow, N + 2, 4 * (n + dag->nedges) + 4 * N + 4);
    memset(sv->bal, 0, sizeof(int64_t) * (size_t)N * 2);
    int64_t *inlb = sv->bal, *outlb = sv->bal + N;
    int64_t total = 0;
    for (int v = 0; v < n; v++) {
        sv->incut[v] = sv->es[v] + sv->d[v] == sv->lf[v];
        if (!sv->incut[v])
            continue;
        lt_caps(sv, v, &sv->lb[v], &sv->ub[v]);
        kr__flow_arc(&sv->flow, KR__LNODE(v), KR__RNODE(v), sv->ub[v] - sv->lb[v]);
        inlb[KR__RNODE(v)] += sv->lb[v];
        outlb[KR__LNODE(v)] += sv->lb[v];
        total += sv->lb[v];
    }
    for (int e = 0; e < dag->nedges; e++) {
        int u = dag->eu[e], v = dag->ev[e];
        sv->incut[n + e] = sv->ef[u] + sv->lagq[e] == sv->ls[v];
        if (!sv->incut[n + e])
            continue;
        sv->lb[n + e] = 0;
        sv->ub[n + e] = lt_q(KR__LT_INF);
        kr__flow_arc(&sv->flow, KR__RNODE(u), KR__LNODE(v), sv->ub[n + e]);
    }
    int first_aux = sv->flow.m;
    for (int x = 0; x < N; x++) {
        if (inlb[x])
            kr__flow_arc(&sv->flow, sp, x, inlb[x]);
        if (outlb[x])
            kr__flow_arc(&sv->flow, x, tp, outlb[x]);
    }
    kr__flow_arc(&sv->flow, KR__RNODE(KR_DAG_SINK), KR__LNODE(KR_DAG_SOURCE), KR__FLOW_BIG);
    int64_t f1 = kr__flow_max(&sv->flow, sp, tp);
    if (f1 != total)
        return 0;
    /* Phase 2: the residual of f = f' + lb on the original arcs; drop the auxiliary arcs. */
    for (int a = first_aux; a < sv->flow.m; a++)
        sv->flow.cap[a] = 0;
    kr__flow_min_cut(&sv->flow, KR__LNODE(KR_DAG_SOURCE), KR__RNODE(KR_DAG_SINK), sv->mark);
    return 1;
}

/* lowtime reduce_durations on the cut in mark; returns the cost change (INFINITY to stop). */
double kr__lt_apply(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n;
    const char *S = sv->mark;
    double change = 0;
    int any = 0;
    /* Speed-ups: critical arcs from S to T, in AOA node order. */
    for (int v = 0; v < n; v++) {
        for (int side = 0; side < 2; side++) {
            if (side == 0) {
                if (!sv->incut[v] || !(S[KR__LNODE(v)] && !S[KR__RNODE(v)]))
                    continue;
                any = 1;
                int gi = sv->gidx[v];
                if (gi < 0)
                    return INFINITY; /* "Cannot speed up dummy operation." */
                const kr__group *g = &sv->groups[gi];
                if (sv->d[v] - 1 < g->dmin)
                    return INFINITY;
                change += fabs(kr__gcost(g, sv->d[v] - 1) - kr__gcost(g, sv->d[v]));
                sv->d[v]--;
            } else {
                for (int k = dag->out_off[v]; k < dag->out_off[v + 1]; k++) {
                    int e = dag->out_e[k];
                    if (sv->incut[n + e] && S[KR__RNODE(v)] && !S[KR__LNODE(dag->ev[e])]) {
                        any = 1;
                        return INFINITY; /* a dependency arc is a dummy */
                    }
                }
            }
        }
    }
    if (!any)
        return 0.0;
    /* Slow-downs: critical arcs from T to S (dependency arcs are dummies: skipped). */
    for (int v = 0; v < n; v++) {
        if (!sv->incut[v] || !(!S[KR__LNODE(v)] && S[KR__RNODE(v)]))
            continue;
        int gi = sv->gidx[v];
        if (gi < 0)
            continue;
        const kr__group *g = &sv->groups[gi];
        if (sv->d[v] + 1 > g->dmax)
            return INFINITY;
        change -= fabs(kr__gcost(g, sv->d[v]) - kr__gcost(g, sv->d[v] + 1));
        sv->d[v]++;
    }
    return change;
}
