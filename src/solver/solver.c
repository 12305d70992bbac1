/*
 * solver.c — Phillips–Dessouky frontier tracing on the activity-on-arc pipeline graph, with
 * the lowtime-compatible and the exact cost models (see solver.h and docs/solver.md).
 *
 * Formulation. The AON DAG's node v becomes arc v_L → v_R (its operation, duration d_v in
 * whole units); its edge u → v becomes arc u_R → v_L (duration = the edge's lag in units, 0 in
 * lowtime mode). Each step shortens the project by one unit along a minimum cut (S, T):
 * every arc S → T in the cut graph is shortened and every arc T → S lengthened, at cost
 *   cap(S, T) = Σ_{S→T} ub − Σ_{T→S} lb,
 * ub = cost of shortening by one unit, lb = saving of lengthening by one unit.
 *
 * lowtime mode (shared/reference/lowtime-solver.md §5): the cut graph is the critical arcs
 * (EF = LF); capacities as lowtime's annotate_capacities (INF = 10000, +ε where both moves are
 * possible, both floored to multiples of ε = 1e-6 by CPython float floor division); the cut is
 * found by lowtime's two phases (feasible flow with lower bounds through s', t' and an infinite
 * t → s arc; then augmentation from s to t), in integer units of 1e-6 so the flow is exact;
 * S = nodes reachable from s through residual capacity > 0 (source-minimal); durations change
 * as reduce_durations does (speed-ups first; a dummy or an op at its minimum in the cut, or a
 * lengthened op at its maximum, ends the run with +∞, without rollback); the run also stops
 * when |cost change| < 1e-6 or phase 1 is infeasible.
 *
 * exact mode: costs are the convex hull of the real options (times rounded down to units). The
 * cut graph is every arc that is tight in the earliest-start schedule π = ES (dependency arcs
 * with ES(v) = EF(u) + lag, and every operation arc). This is the min-cost tension step: the
 * objective Σ c_a(min(π(head) − π(tail), dmax_a)) is L-convex in the event times π, and the
 * optimum for T − 1 is reached from one for T by lowering the potentials of one node set by
 * one unit; the min cut picks that set. Lower bounds are handled in one max flow: with node
 * imbalance b(v) = Σ_in lb − Σ_out lb, cap(S,T) = Σ_{S→T}(ub − lb) + Σ_{v∈T, b>0} b(v)
 * + Σ_{v∈S, b<0} −b(v) − Σ_{b<0} −b(v), an ordinary s–t cut. After a step every operation with
 * free float is lengthened within it (free: no start time moves), which keeps π = ES optimal.
 * Capacities are int64 nano-joules; INF = 1e15 nJ (1 MJ), far above any real step.
 *
 * Rounding (exact mode, record()): the hull durations become real options — the cheapest that
 * fits each duration, then the final pass (each op slows into its room), then on graphs of up
 * to 256 instructions the exchange pass (one op slower, one faster) and the window search
 * (up to 6 nearby ops re-chosen by branch and bound), all against the budget max(real
 * critical path, T · unit). See each pass's comment for its cost and measured effect.
 */
#include "kareus/solver.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

#define LT_EPS 1e-6         /* lowtime FP_ERROR */
#define LT_INF 10000.0      /* lowtime annotate_capacities "inf" */
#define EX_SCALE 1e9        /* exact mode: capacity units per joule */
#define EX_INF ((int64_t)1000000000000000LL)
#define FLOW_BIG (INT64_MAX / 8)
#define KR__WINDOW_OPS 6       /* Window search: ops per window (see window_pass). */
#define KR__WINDOW_NODES 1000  /* Window search: branch-and-bound nodes per window. */
#define KR__WINDOW_MAX 10      /* Largest window (the deadline search's; array sizes). */
#define KR__BOUND_REFINE 8     /* Lower bound: relaxation grid = unit / min(8, 2048 / ops), >= 1. */

const char *kr_cost_model_name(kr_cost_model m)
{
    return m == KR_COST_LOWTIME ? "lowtime" : "exact";
}

int kr_cost_model_parse(const char *s, kr_cost_model *out)
{
    if (strcmp(s, "exact") == 0)
        *out = KR_COST_EXACT;
    else if (strcmp(s, "lowtime") == 0)
        *out = KR_COST_LOWTIME;
    else
        return KR_EINVAL;
    return KR_OK;
}

void kr_solver_config_default(kr_solver_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cost_model = KR_COST_EXACT;
    cfg->unit_time_s = 0.001;
    cfg->static_power_w = 85.0;
    cfg->gpus_per_stage = 1;
    cfg->final_pass = 1;
}

/* Per option set: the duration range and the cost table used by the cut. */
typedef struct group {
    const kr_option_set *set;
    long dmin, dmax;      /* Duration range in units. */
    double *cost;         /* cost[d − dmin], model cost (J) for d in [dmin, dmax]. */
    int64_t *icost;       /* Exact mode: cost in nJ (rounded). */
    int *knob;            /* knob[d − dmin]: option index run at duration d. */
    int npar;             /* Options on the (real time, effective energy) Pareto front. */
    int *par;             /* Their indices, time ascending (effective energy descending). */
    kr__lt_spec lt;       /* lowtime mode: candidates and model. */
} group;

typedef struct solver {
    const kr_dag *dag;
    const kr_options *opts;
    kr_solver_config cfg;
    int n;                /* AON nodes. */
    int ngroups;
    group *groups;
    int *gidx;            /* AON node → group (−1 for source/sink). */
    long *lagq;           /* Edge lag in units. */
    long *d;              /* Duration of each AON node (units). */
    long *es, *ef, *ls, *lf;
    double *rt, *res, *rlf; /* Real-time CPM scratch. */
    int *knob;            /* Current knob of each node. */
    char *mark;           /* Source side of the cut (AOA nodes + 2). */
    kr__flow flow;
    int64_t *lb, *ub;     /* Per AOA arc (ops: n, edges: nedges). */
    int64_t *bal;         /* Node imbalance. */
    char *incut;          /* Arc in the cut graph. */
    /* Exact mode: persistent flow network (warm-started across steps). */
    int *opa, *depa, *sa, *ta; /* Arc ids: op arcs, dependency arcs, s → x, x → t. */
    int64_t *ex;          /* Excess created by capacity cuts, per AOA node. */
    char *cvis;           /* cancel_to_sink scratch: 1 on the path, 2 dead end (N + 2). */
    int *cpath;           /* cancel_to_sink scratch: the path's arcs (N + 2). */
    int net_ready;        /* 1 once the network is built. */
    int relax_only;       /* Model figures only (the bound's relaxation run): no knobs. */
    /* Window search scratch (see bb_search, window_pass). */
    char *crit;           /* Op on the real critical path. */
    int *kbak;            /* Knobs before a search. */
    char *bfree;          /* Op free in the current window (source, sink: visited marks). */
    int *tpos;            /* Topological position of each node. */
    double *bbuf;         /* 3n doubles: durations, fixed-only heads, fixed-only tails. */
    int *bq;              /* Window BFS queue. */
    int *win_in, *win_out; /* Knobs entering and leaving the last window pass (n each). */
    int win_valid;
    /* The window's free ops in topological order and their reduced graph (bb_search). */
    int bk, bop[KR__WINDOW_MAX], bbestk[KR__WINDOW_MAX];
    double bdist[KR__WINDOW_MAX][KR__WINDOW_MAX], bhd[KR__WINDOW_MAX], btt[KR__WINDOW_MAX];
    double blbs[KR__WINDOW_MAX + 1], bes[KR__WINDOW_MAX], bdur[KR__WINDOW_MAX];
    int wops;             /* Ops per window (0: KR__WINDOW_OPS); at most KR__WINDOW_MAX. */
    long wnodes;          /* Search nodes per window (0: KR__WINDOW_NODES). */
    double bbound, bcur, bbest_e;
    long bnodes, blimit;
} solver;

static void groups_free(solver *sv)
{
    if (sv->groups == NULL)
        return;
    for (int g = 0; g < sv->ngroups; g++) {
        free(sv->groups[g].cost);
        free(sv->groups[g].icost);
        free(sv->groups[g].knob);
        free(sv->groups[g].par);
        kr__lt_spec_free(&sv->groups[g].lt);
    }
    free(sv->groups);
    sv->groups = NULL;
}

static void solver_free(solver *sv)
{
    groups_free(sv);
    free(sv->gidx);
    free(sv->lagq);
    free(sv->d);
    free(sv->es);
    free(sv->ef);
    free(sv->ls);
    free(sv->lf);
    free(sv->rt);
    free(sv->res);
    free(sv->rlf);
    free(sv->knob);
    free(sv->mark);
    free(sv->lb);
    free(sv->ub);
    free(sv->bal);
    free(sv->incut);
    free(sv->opa);
    free(sv->depa);
    free(sv->sa);
    free(sv->ta);
    free(sv->ex);
    free(sv->cvis);
    free(sv->cpath);
    kr__flow_free(&sv->flow);
    free(sv->crit);
    free(sv->kbak);
    free(sv->bfree);
    free(sv->bbuf);
    free(sv->tpos);
    free(sv->bq);
    free(sv->win_in);
}

static const char *set_name(const kr_option_set *set, char *buf, size_t cap)
{
    snprintf(buf, cap, "stage %d %s (chunk %d)", set->stage, kr_instr_kind_name(set->kind), set->chunk);
    return buf;
}

/* lowtime: candidates, fit, cost table over [min, max] and knob per duration. */
static int group_lowtime(group *g, const kr_solver_config *cfg, kr_error *err)
{
    char nm[64];
    int rc = kr__lt_filter(g->set, cfg->unit_time_s, cfg->static_power_w, &g->lt, err);
    if (rc == KR_OK)
        rc = kr__lt_fit(&g->lt, cfg->unit_time_s, err);
    if (rc) {
        kr_error_prefix(err, "%s", set_name(g->set, nm, sizeof nm));
        return rc;
    }
    g->dmin = g->lt.min_duration;
    g->dmax = g->lt.max_duration;
    size_t len = (size_t)(g->dmax - g->dmin + 1);
    g->cost = malloc(sizeof(double) * len);
    g->knob = malloc(sizeof(int) * len);
    if (g->cost == NULL || g->knob == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (long t = g->dmin; t <= g->dmax; t++) {
        g->cost[t - g->dmin] = kr__lt_cost(&g->lt, t);
        /* Knob: the candidate with the largest quant_time <= t (candidates sorted descending). */
        int k = g->lt.ncand - 1;
        for (int i = 0; i < g->lt.ncand; i++)
            if (g->lt.cand[i].quant_time <= t) {
                k = i;
                break;
            }
        g->knob[t - g->dmin] = g->lt.cand[k].index;
    }
    return KR_OK;
}

/* exact: lower convex hull of (ceil(time/unit), effective energy); cheapest option per d. */
static int group_exact(group *g, const kr_solver_config *cfg, kr_error *err)
{
    const kr_option_set *set = g->set;
    int n = set->n;
    long *q = malloc(sizeof(long) * (size_t)n);
    double *e = malloc(sizeof(double) * (size_t)n);
    int *ord = malloc(sizeof(int) * (size_t)n);
    int *hull = malloc(sizeof(int) * (size_t)n);
    if (!q || !e || !ord || !hull) {
        free(q);
        free(e);
        free(ord);
        free(hull);
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    }
    for (int i = 0; i < n; i++) {
        /* Round down as lowtime does (forgiving representation error: 0.042 s / 1 ms is 42).
         * Measured against rounding up or to nearest, rounding down gave the best true
         * frontiers (brute force and lowtime comparisons in tests/test_solver.c); the times
         * reported are always the knobs' real critical path, never the quantized one. */
        q[i] = (long)floor(set->opt[i].time_s / cfg->unit_time_s + 1e-9);
        if (q[i] < 1)
            q[i] = 1;
        e[i] = set->opt[i].energy_j - cfg->static_power_w * set->opt[i].time_s;
        ord[i] = i;
    }
    /* Sort by (q, e) ascending. */
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        while (j >= 0 && (q[ord[j]] > q[x] || (q[ord[j]] == q[x] && e[ord[j]] > e[x]))) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    /* Pareto staircase (strictly decreasing e with increasing q), then the lower hull. */
    int h = 0;
    for (int k = 0; k < n; k++) {
        int i = ord[k];
        if (h > 0 && (q[i] == q[hull[h - 1]] || e[i] >= e[hull[h - 1]]))
            continue;
        while (h >= 2) {
            int a = hull[h - 2], b = hull[h - 1];
            /* Drop b if it lies on or above the segment a → i. */
            double cross = (double)(q[b] - q[a]) * (e[i] - e[a]) - (e[b] - e[a]) * (double)(q[i] - q[a]);
            if (cross <= 0)
                h--;
            else
                break;
        }
        hull[h++] = i;
    }
    g->dmin = q[hull[0]];
    g->dmax = q[hull[h - 1]];
    size_t len = (size_t)(g->dmax - g->dmin + 1);
    g->cost = malloc(sizeof(double) * len);
    g->icost = malloc(sizeof(int64_t) * len);
    g->knob = malloc(sizeof(int) * len);
    if (!g->cost || !g->icost || !g->knob) {
        free(q);
        free(e);
        free(ord);
        free(hull);
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    }
    int seg = 0;
    for (long t = g->dmin; t <= g->dmax; t++) {
        while (seg + 1 < h && q[hull[seg + 1]] < t)
            seg++;
        double c;
        if (h == 1 || t == q[hull[seg]])
            c = e[hull[seg]];
        else {
            int a = hull[seg], b = hull[seg + 1];
            c = e[a] + (e[b] - e[a]) * (double)(t - q[a]) / (double)(q[b] - q[a]);
        }
        g->cost[t - g->dmin] = c;
        /* Integer costs exactly linear on each hull segment (slope rounded once), so the
         * capacities stay constant between vertices and the warm-started flow stays valid. */
        if (t == g->dmin)
            g->icost[0] = llround(c * EX_SCALE);
        else {
            int a = hull[seg], b = hull[seg + 1 < h ? seg + 1 : seg];
            int64_t slope = b == a ? 0 : llround((e[b] - e[a]) / (double)(q[b] - q[a]) * EX_SCALE);
            g->icost[t - g->dmin] = g->icost[t - 1 - g->dmin] + slope;
        }
        /* Cheapest real option that fits in t units. */
        int best = -1;
        for (int i = 0; i < n; i++)
            if (q[i] <= t && (best < 0 || e[i] < e[best]))
                best = i;
        g->knob[t - g->dmin] = best;
    }
    free(q);
    free(e);
    free(ord);
    free(hull);
    return KR_OK;
}

/* The options on the real (time, effective energy) Pareto front, time ascending: the final
 * pass picks the slowest of them that fits, which is the cheapest option that fits. */
static int group_pareto(group *g, double P, kr_error *err)
{
    const kr_option_set *set = g->set;
    int n = set->n;
    g->par = malloc(sizeof(int) * (size_t)n);
    if (g->par == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    int *ord = g->par;
    for (int i = 0; i < n; i++)
        ord[i] = i;
    /* Sort by time ascending, then effective energy ascending (insertion sort: n is small). */
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        double tx = set->opt[x].time_s, ex = set->opt[x].energy_j - P * tx;
        while (j >= 0) {
            double tj = set->opt[ord[j]].time_s, ej = set->opt[ord[j]].energy_j - P * tj;
            if (tj < tx || (tj == tx && ej <= ex))
                break;
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        double e = set->opt[ord[i]].energy_j - P * set->opt[ord[i]].time_s;
        if (k > 0 && !(e < set->opt[ord[k - 1]].energy_j - P * set->opt[ord[k - 1]].time_s))
            continue;
        ord[k++] = ord[i];
    }
    g->npar = k;
    return KR_OK;
}

static double gcost(const group *g, long d)
{
    return g->cost[d - g->dmin];
}

/* Integer CPM on the AON form: es/ef per node, and (unless forward_only) ls/lf against the
 * makespan; returns the makespan. */
static long cpm_pass(solver *sv, int forward_only)
{
    const kr_dag *dag = sv->dag;
    for (int i = 0; i < sv->n; i++)
        sv->es[i] = 0;
    for (int i = 0; i < sv->n; i++) {
        int u = dag->topo[i];
        sv->ef[u] = sv->es[u] + sv->d[u];
        for (int k = dag->out_off[u]; k < dag->out_off[u + 1]; k++) {
            int e = dag->out_e[k];
            long t = sv->ef[u] + sv->lagq[e];
            if (t > sv->es[dag->ev[e]])
                sv->es[dag->ev[e]] = t;
        }
    }
    long T = 0;
    for (int v = 0; v < sv->n; v++)
        T = KR_MAX(T, sv->ef[v]);
    if (forward_only)
        return T;
    for (int v = 0; v < sv->n; v++)
        sv->lf[v] = T;
    for (int i = sv->n - 1; i >= 0; i--) {
        int u = dag->topo[i];
        for (int k = dag->out_off[u]; k < dag->out_off[u + 1]; k++) {
            int e = dag->out_e[k];
            long t = sv->ls[dag->ev[e]] - sv->lagq[e];
            if (t < sv->lf[u])
                sv->lf[u] = t;
        }
        sv->ls[u] = sv->lf[u] - sv->d[u];
    }
    return T;
}

static long cpm(solver *sv)
{
    return cpm_pass(sv, 0);
}

static int64_t lt_q(double x)
{
    return (int64_t)kr__py_floordiv(x, LT_EPS);
}

/* lowtime capacities of op node v (critical). */
static void lt_caps(const solver *sv, int v, int64_t *lb, int64_t *ub)
{
    int gi = sv->gidx[v];
    if (gi < 0) {
        *lb = 0;
        *ub = lt_q(LT_INF);
        return;
    }
    const group *g = &sv->groups[gi];
    long d = sv->d[v];
    double l, u;
    if (d == g->dmin && d == g->dmax) {
        l = 0;
        u = LT_INF;
    } else if (d - 1 < g->dmin) {
        l = fabs(gcost(g, d) - gcost(g, d + 1));
        u = LT_INF;
    } else if (d + 1 > g->dmax) {
        l = 0;
        u = fabs(gcost(g, d - 1) - gcost(g, d));
    } else {
        l = fabs(gcost(g, d) - gcost(g, d + 1));
        u = fabs(gcost(g, d - 1) - gcost(g, d)) + LT_EPS;
    }
    *lb = lt_q(l);
    *ub = lt_q(u);
}

/* AOA node ids: v_L = 2v, v_R = 2v + 1. Arc ids: op v → v, edge e → n + e. */
#define LNODE(v) (2 * (v))
#define RNODE(v) (2 * (v) + 1)

/* One lowtime iteration's cut. Returns 1 with mark set, 0 if phase 1 is infeasible. */
static int lt_cut(solver *sv)
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
        kr__flow_arc(&sv->flow, LNODE(v), RNODE(v), sv->ub[v] - sv->lb[v]);
        inlb[RNODE(v)] += sv->lb[v];
        outlb[LNODE(v)] += sv->lb[v];
        total += sv->lb[v];
    }
    for (int e = 0; e < dag->nedges; e++) {
        int u = dag->eu[e], v = dag->ev[e];
        sv->incut[n + e] = sv->ef[u] + sv->lagq[e] == sv->ls[v];
        if (!sv->incut[n + e])
            continue;
        sv->lb[n + e] = 0;
        sv->ub[n + e] = lt_q(LT_INF);
        kr__flow_arc(&sv->flow, RNODE(u), LNODE(v), sv->ub[n + e]);
    }
    int first_aux = sv->flow.m;
    for (int x = 0; x < N; x++) {
        if (inlb[x])
            kr__flow_arc(&sv->flow, sp, x, inlb[x]);
        if (outlb[x])
            kr__flow_arc(&sv->flow, x, tp, outlb[x]);
    }
    kr__flow_arc(&sv->flow, RNODE(KR_DAG_SINK), LNODE(KR_DAG_SOURCE), FLOW_BIG);
    int64_t f1 = kr__flow_max(&sv->flow, sp, tp);
    if (f1 != total)
        return 0;
    /* Phase 2: the residual of f = f' + lb on the original arcs; drop the auxiliary arcs. */
    for (int a = first_aux; a < sv->flow.m; a++)
        sv->flow.cap[a] = 0;
    kr__flow_min_cut(&sv->flow, LNODE(KR_DAG_SOURCE), RNODE(KR_DAG_SINK), sv->mark);
    return 1;
}

/* lowtime reduce_durations on the cut in mark; returns the cost change (INFINITY to stop). */
static double lt_apply(solver *sv)
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
                if (!sv->incut[v] || !(S[LNODE(v)] && !S[RNODE(v)]))
                    continue;
                any = 1;
                int gi = sv->gidx[v];
                if (gi < 0)
                    return INFINITY; /* "Cannot speed up dummy operation." */
                const group *g = &sv->groups[gi];
                if (sv->d[v] - 1 < g->dmin)
                    return INFINITY;
                change += fabs(gcost(g, sv->d[v] - 1) - gcost(g, sv->d[v]));
                sv->d[v]--;
            } else {
                for (int k = dag->out_off[v]; k < dag->out_off[v + 1]; k++) {
                    int e = dag->out_e[k];
                    if (sv->incut[n + e] && S[RNODE(v)] && !S[LNODE(dag->ev[e])]) {
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
        if (!sv->incut[v] || !(!S[LNODE(v)] && S[RNODE(v)]))
            continue;
        int gi = sv->gidx[v];
        if (gi < 0)
            continue;
        const group *g = &sv->groups[gi];
        if (sv->d[v] + 1 > g->dmax)
            return INFINITY;
        change -= fabs(gcost(g, sv->d[v]) - gcost(g, sv->d[v] + 1));
        sv->d[v]++;
    }
    return change;
}

/*
 * Exact mode keeps one flow network for the whole run: AOA nodes, every operation and
 * dependency arc, and the balance arcs s → x and x → t of every node (design comment above).
 * Each step only changes capacities; the previous maximum flow is kept where it still fits,
 * arcs whose capacity fell below their flow are cut back, and the excesses and deficits that
 * leaves are repaired by two small flows through auxiliary nodes X and Y (phase A: every
 * excess to t, back to s, or into a deficit; phase B: every remaining deficit from s or t).
 * Then the flow is augmented to a maximum again. Only what changed costs work, which makes
 * the long pipelines fast (the cut moves little from step to step).
 */
static int net_build(solver *sv)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, N = 2 * n;
    int s = LNODE(KR_DAG_SOURCE), t = RNODE(KR_DAG_SINK);
    sv->opa = malloc(sizeof(int) * (size_t)n);
    sv->depa = malloc(sizeof(int) * (size_t)(dag->nedges > 0 ? dag->nedges : 1));
    sv->sa = malloc(sizeof(int) * (size_t)N);
    sv->ta = malloc(sizeof(int) * (size_t)N);
    sv->ex = calloc((size_t)N, sizeof(int64_t));
    sv->cvis = calloc((size_t)N + 2, 1);
    sv->cpath = malloc(sizeof(int) * ((size_t)N + 2));
    if (!sv->opa || !sv->depa || !sv->sa || !sv->ta || !sv->ex || !sv->cvis || !sv->cpath ||
        kr__flow_reset(&sv->flow, N + 2, 2 * (n + dag->nedges + 2 * N) + 4 * N + 16))
        return KR_ENOMEM;
    for (int v = 0; v < n; v++)
        sv->opa[v] = kr__flow_arc(&sv->flow, LNODE(v), RNODE(v), 0);
    for (int e = 0; e < dag->nedges; e++)
        sv->depa[e] = kr__flow_arc(&sv->flow, RNODE(dag->eu[e]), LNODE(dag->ev[e]), 0);
    for (int x = 0; x < N; x++) {
        sv->sa[x] = x == s ? -1 : kr__flow_arc(&sv->flow, s, x, 0);
        sv->ta[x] = x == t ? -1 : kr__flow_arc(&sv->flow, x, t, 0);
    }
    if (sv->flow.m != 2 * (n + dag->nedges + 2 * (N - 1)))
        return KR_ENOMEM; /* an arc could not be added */
    sv->net_ready = 1;
    return KR_OK;
}

/* set_cap's rare case: the arc's flow exceeds its new capacity c. The cut-back flow becomes
 * excess at its tail and deficit at its head (s and t need no balance). */
static void set_cap_cut(solver *sv, int a, int64_t c)
{
    kr__flow *f = &sv->flow;
    int64_t d = f->cap[a ^ 1] - c;
    f->cap[a] = 0;
    f->cap[a ^ 1] = c;
    int u = f->head[a ^ 1], v = f->head[a];
    int s = LNODE(KR_DAG_SOURCE), t = RNODE(KR_DAG_SINK);
    if (u != s && u != t)
        sv->ex[u] += d;
    if (v != s && v != t)
        sv->ex[v] -= d;
}

/* Sets arc a's capacity to c, keeping as much of its flow as fits (set_cap_cut otherwise).
 * Inline: it runs for every arc of the network at every step. */
static inline void set_cap(solver *sv, int a, int64_t c)
{
    if (a < 0)
        return;
    int64_t *cap = sv->flow.cap;
    if (cap[a ^ 1] <= c)
        cap[a] = c - cap[a ^ 1];
    else
        set_cap_cut(sv, a, c);
}

/*
 * Cancels up to `need` units of flow on flow-carrying paths from v to t and returns how much it
 * cancelled. Used for a deficit at v (v sends more than it receives) once no excess is left:
 * every other node but s and t is then balanced, so by flow decomposition at least the deficit
 * of v's outflow reaches t along arcs that carry flow. A depth-first walk finds such paths and
 * lowers their flow (the flow stays feasible, its value drops by what was cancelled, and the
 * next maximum flow restores it). Cost: the arcs it walks — far less than a maximum flow from
 * s and t, which explores most of the graph (that was 20 % of a (8,64) solve). Nodes found to
 * lead nowhere stay marked for the call; f->iter is free scratch between maximum flows.
 */
static int64_t cancel_to_sink(solver *sv, int v, int64_t need)
{
    kr__flow *f = &sv->flow;
    int t = RNODE(KR_DAG_SINK);
    char *vis = sv->cvis;
    int *path = sv->cpath;
    int depth = 0, u = v;
    int64_t done = 0;
    memset(vis, 0, (size_t)f->n);
    vis[v] = 1;
    f->iter[v] = f->first[v];
    while (done < need) {
        if (u == t) {
            int64_t b = need - done;
            for (int i = 0; i < depth; i++)
                b = KR_MIN(b, f->cap[path[i] ^ 1]);
            for (int i = 0; i < depth; i++) {
                f->cap[path[i]] += b;
                f->cap[path[i] ^ 1] -= b;
                vis[f->head[path[i]]] = 0;
            }
            done += b;
            depth = 0;
            u = v;
            continue;
        }
        int a = f->iter[u];
        /* Forward arcs (even ids) that carry flow (their reverse's residual) to a free node. */
        while (a >= 0 && !((a & 1) == 0 && f->cap[a ^ 1] > 0 && !vis[f->head[a]]))
            a = f->next[a];
        f->iter[u] = a;
        if (a < 0) {
            vis[u] = 2;
            if (depth == 0)
                break;
            depth--;
            u = depth ? f->head[path[depth - 1]] : v;
            f->iter[u] = f->next[f->iter[u]];
            continue;
        }
        path[depth++] = a;
        u = f->head[a];
        vis[u] = 1;
        f->iter[u] = f->first[u];
    }
    return done;
}

/* Routes the excesses and deficits in sv->ex (see above). Returns 0, or -1 if some could
 * not be routed (then the caller rebuilds the flow from zero). */
static int net_repair(solver *sv)
{
    kr__flow *f = &sv->flow;
    int N = 2 * sv->n, X = N, Y = N + 1;
    int s = LNODE(KR_DAG_SOURCE), t = RNODE(KR_DAG_SINK);
    int any = 0;
    for (int x = 0; x < N && !any; x++)
        any = sv->ex[x] != 0;
    if (!any)
        return 0;
    int base = f->m;
    int64_t want = 0;
    for (int x = 0; x < N; x++) {
        if (sv->ex[x] > 0) {
            kr__flow_arc(f, X, x, sv->ex[x]);
            want += sv->ex[x];
        } else if (sv->ex[x] < 0) {
            kr__flow_arc(f, x, Y, -sv->ex[x]);
        }
    }
    kr__flow_arc(f, s, Y, FLOW_BIG);
    kr__flow_arc(f, t, Y, FLOW_BIG);
    int64_t got = want ? kr__flow_max(f, X, Y) : 0;
    /* Remaining deficits: the residual of each x → Y arc. */
    for (int a = base; a < f->m; a += 2)
        if (f->head[a] == Y && f->head[a ^ 1] != s && f->head[a ^ 1] != t)
            sv->ex[f->head[a ^ 1]] = -f->cap[a];
    kr__flow_pop(f, base);
    if (got != want)
        return -1;
    /* Remaining deficits: cancel flow from them to t; what a walk cannot cancel (should not
     * happen) goes to a maximum flow that may also draw from s. */
    for (int x = 0; x < N; x++)
        if (sv->ex[x] < 0 && x != t)
            sv->ex[x] += cancel_to_sink(sv, x, -sv->ex[x]);
    int64_t need = 0;
    for (int x = 0; x < N; x++)
        if (sv->ex[x] < 0) {
            kr__flow_arc(f, x, Y, -sv->ex[x]);
            need += -sv->ex[x];
        }
    if (need) {
        kr__flow_arc(f, X, s, FLOW_BIG);
        kr__flow_arc(f, X, t, FLOW_BIG);
        got = kr__flow_max(f, X, Y);
        kr__flow_pop(f, base);
        if (got != need)
            return -1;
    }
    memset(sv->ex, 0, sizeof(int64_t) * (size_t)N);
    return 0;
}

/* One exact-mode cut; returns the cut value in nJ (>= EX_INF/2 means no finite cut). */
static int64_t ex_cut(solver *sv)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, N = 2 * n;
    int s = LNODE(KR_DAG_SOURCE), t = RNODE(KR_DAG_SINK);
    memset(sv->bal, 0, sizeof(int64_t) * (size_t)N);
    for (int pass = 0; pass < 2; pass++) {
        for (int v = 0; v < n; v++) {
            int gi = sv->gidx[v];
            int64_t lb = 0, ub = EX_INF;
            if (gi >= 0) {
                const group *g = &sv->groups[gi];
                long d = sv->d[v];
                const int64_t *c = g->icost - g->dmin;
                if (d > g->dmin)
                    ub = c[d - 1] - c[d];
                if (d < g->dmax)
                    lb = c[d] - c[d + 1];
            }
            sv->incut[v] = 1;
            sv->lb[v] = lb;
            sv->ub[v] = ub;
            set_cap(sv, sv->opa[v], ub > lb ? ub - lb : 0);
            if (pass == 0) {
                sv->bal[RNODE(v)] += lb;
                sv->bal[LNODE(v)] -= lb;
            }
        }
        for (int e = 0; e < dag->nedges; e++) {
            int u = dag->eu[e], v = dag->ev[e];
            sv->incut[n + e] = sv->ef[u] + sv->lagq[e] == sv->es[v];
            set_cap(sv, sv->depa[e], sv->incut[n + e] ? EX_INF : 0);
        }
        for (int x = 0; x < N; x++) {
            set_cap(sv, sv->sa[x], sv->bal[x] > 0 ? sv->bal[x] : 0);
            set_cap(sv, sv->ta[x], sv->bal[x] < 0 ? -sv->bal[x] : 0);
        }
        if (net_repair(sv) == 0)
            break;
        /* Could not repair (should not happen): drop all flow and start from zero. */
        kr__flow *f = &sv->flow;
        for (int a = 0; a < f->m; a += 2) {
            f->cap[a] += f->cap[a + 1];
            f->cap[a + 1] = 0;
        }
        memset(sv->ex, 0, sizeof(int64_t) * (size_t)N);
    }
    kr__flow_min_cut(&sv->flow, s, t, sv->mark);
    /* cap(S, T) = Σ_{S→T} ub − Σ_{T→S} lb over the cut graph. */
    int64_t cut = 0;
    for (int v = 0; v < n; v++) {
        int a = sv->mark[LNODE(v)], b = sv->mark[RNODE(v)];
        if (a && !b)
            cut += sv->ub[v];
        else if (!a && b)
            cut -= sv->lb[v];
    }
    for (int e = 0; e < dag->nedges; e++)
        if (sv->incut[n + e] && sv->mark[RNODE(dag->eu[e])] && !sv->mark[LNODE(dag->ev[e])])
            cut += EX_INF;
    return cut;
}

static void ex_apply(solver *sv)
{
    const char *S = sv->mark;
    for (int v = 2; v < sv->n; v++) {
        const group *g = &sv->groups[sv->gidx[v]];
        if (!sv->incut[v])
            continue;
        if (S[LNODE(v)] && !S[RNODE(v)])
            sv->d[v]--;
        else if (!S[LNODE(v)] && S[RNODE(v)] && sv->d[v] < g->dmax)
            sv->d[v]++;
    }
}

/* Lengthens every op within its free float (no start time moves); needs a fresh cpm(). */
static void ex_relax(solver *sv)
{
    const kr_dag *dag = sv->dag;
    for (int v = 2; v < sv->n; v++) {
        const group *g = &sv->groups[sv->gidx[v]];
        if (sv->d[v] >= g->dmax)
            continue;
        long fin = LONG_MAX;
        for (int k = dag->out_off[v]; k < dag->out_off[v + 1]; k++) {
            int e = dag->out_e[k];
            long t = sv->es[dag->ev[e]] - sv->lagq[e];
            if (t < fin)
                fin = t;
        }
        long room = fin - sv->ef[v];
        if (room > 0) {
            long nd = KR_MIN(sv->d[v] + room, g->dmax);
            sv->ef[v] += nd - sv->d[v];
            sv->d[v] = nd;
        }
    }
}

/* Real-time critical path of the knobs in sv->knob; fills rt (durations), res (starts) and,
 * when lf is not NULL, the latest finishes. */
static double knob_cpm_lf(solver *sv, double *lf)
{
    const kr_dag *dag = sv->dag;
    for (int v = 0; v < sv->n; v++) {
        sv->rt[v] = 0;
        if (sv->gidx[v] >= 0)
            sv->rt[v] = sv->groups[sv->gidx[v]].set->opt[sv->knob[v]].time_s;
    }
    double span;
    kr_dag_cpm(dag, sv->rt, sv->res, lf, &span, NULL);
    return span;
}

static double knob_cpm(solver *sv)
{
    return knob_cpm_lf(sv, NULL);
}

/*
 * Final pass (exact mode): in reverse topological order, each op may finish as late as its
 * successors' latest starts allow (given the choices already made after it) while its own
 * start stays at its earliest (predecessors not yet revisited keep their durations); it takes
 * the cheapest option (effective energy) that fits there. The makespan never grows.
 */
static int final_pass(solver *sv, double span)
{
    const kr_dag *dag = sv->dag;
    int changed = 0;
    double P = sv->cfg.static_power_w;
    for (int v = 0; v < sv->n; v++)
        sv->rlf[v] = span;
    for (int i = sv->n - 1; i >= 0; i--) {
        int u = dag->topo[i];
        double fin = span;
        for (int k = dag->out_off[u]; k < dag->out_off[u + 1]; k++) {
            int e = dag->out_e[k];
            double t = sv->rlf[dag->ev[e]] - dag->lag_s[e];
            if (t < fin)
                fin = t;
        }
        if (sv->gidx[u] >= 0) {
            const group *g = &sv->groups[sv->gidx[u]];
            const kr_option_set *set = g->set;
            double room = fin - sv->res[u];
            /* Slowest Pareto option that fits (binary search on time). */
            int lo = 0, hi = g->npar - 1, pick = -1;
            while (lo <= hi) {
                int mid = (lo + hi) / 2;
                if (set->opt[g->par[mid]].time_s <= room) {
                    pick = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            int best = sv->knob[u];
            if (pick >= 0) {
                int k = g->par[pick];
                double ek = set->opt[k].energy_j - P * set->opt[k].time_s;
                if (ek < set->opt[best].energy_j - P * set->opt[best].time_s) {
                    best = k;
                    changed++;
                }
            }
            sv->knob[u] = best;
            sv->rt[u] = set->opt[best].time_s;
        }
        /* rlf holds this node's latest start for its predecessors. */
        sv->rlf[u] = fin - sv->rt[u];
    }
    return changed;
}

/* Effective energy of option k of op v's set. */
static double opt_eff(const solver *sv, int v, int k)
{
    const kr_option *o = &sv->groups[sv->gidx[v]].set->opt[k];
    return o->energy_j - sv->cfg.static_power_w * o->time_s;
}

/* Pareto option of v next slower (dir = +1) or next faster (dir = −1) than option k, or −1. */
static int pareto_step(const solver *sv, int v, int k, int dir)
{
    const group *g = &sv->groups[sv->gidx[v]];
    double t = g->set->opt[k].time_s;
    if (dir > 0) {
        for (int i = 0; i < g->npar; i++)
            if (g->set->opt[g->par[i]].time_s > t)
                return g->par[i];
        return -1;
    }
    for (int i = g->npar - 1; i >= 0; i--)
        if (g->set->opt[g->par[i]].time_s < t)
            return g->par[i];
    return -1;
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
#define KR__EXCHANGE_MAX_OPS 256
#define KR__EXCHANGE_ALL_OPS 64
static void exchange_pass(solver *sv, double budget)
{
    const kr_dag *dag = sv->dag;
    for (int round = 0; round < 4; round++) {
        int improved = 0;
        for (int u = 2; u < sv->n; u++) {
            int ku = sv->knob[u], su = pareto_step(sv, u, ku, +1);
            if (su < 0 || !(opt_eff(sv, u, su) < opt_eff(sv, u, ku)))
                continue;
            double save = opt_eff(sv, u, ku) - opt_eff(sv, u, su);
            int done = 0;
            for (int side = 0; side < 3 && !done; side++) {
                int lo = side == 2 ? 2 : side ? dag->out_off[u] : dag->in_off[u];
                int hi = side == 2 ? (sv->n - 2 <= KR__EXCHANGE_ALL_OPS ? sv->n : 2) : side ? dag->out_off[u + 1] : dag->in_off[u + 1];
                for (int i = lo; i < hi && !done; i++) {
                    int w;
                    if (side == 2)
                        w = i;
                    else {
                        int e = side ? dag->out_e[i] : dag->in_e[i];
                        w = side ? dag->ev[e] : dag->eu[e];
                    }
                    if (w < 2 || w == u)
                        continue;
                    int kw = sv->knob[w], fw = kw;
                    for (int stepn = 0; stepn < 2 && !done; stepn++) {
                        fw = pareto_step(sv, w, fw, -1);
                        if (fw < 0)
                            break;
                        double cost = opt_eff(sv, w, fw) - opt_eff(sv, w, kw);
                        if (!(cost < save - 1e-12))
                            break;
                        sv->knob[u] = su;
                        sv->knob[w] = fw;
                        if (knob_cpm(sv) <= budget + 1e-12) {
                            done = improved = 1;
                        } else {
                            sv->knob[u] = ku;
                            sv->knob[w] = kw;
                        }
                    }
                }
            }
        }
        if (!improved)
            break;
    }
}

/*
 * Branch and bound for one time budget B over the free ops (bfree, at most KR__WINDOW_OPS;
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
 * counts against blimit: within it the search is exact (the optimum over the free ops), past
 * it the best plan found so far is kept.
 */
static void bb_dfs(solver *sv, int j)
{
    if (sv->bnodes++ >= sv->blimit)
        return;
    int k = sv->bk;
    if (j == k) {
        if (sv->bcur < sv->bbest_e - 1e-9) {
            sv->bbest_e = sv->bcur;
            for (int i = 0; i < k; i++)
                sv->bbestk[i] = sv->knob[sv->bop[i]];
        }
        return;
    }
    /* Never taken: bb_search sets bk <= KR__WINDOW_MAX and the recursion stops at j == bk, so
     * j < KR__WINDOW_MAX here and every index below is in bounds. GCC 12 at -O3 inlines this
     * recursion seven levels deep and, not knowing that invariant of a value loaded from
     * memory, reported -Warray-bounds for j = 6 on a path that cannot run (a false positive).
     * The test states the invariant where the compiler can see it. */
    if (j >= KR__WINDOW_MAX)
        return;
    double e0 = sv->bhd[j];
    for (int i = 0; i < j; i++)
        e0 = fmax(e0, sv->bes[i] + sv->bdur[i] + sv->bdist[i][j]);
    sv->bes[j] = e0;
    double B = sv->bbound + 1e-12;
    int v = sv->bop[j];
    const group *g = &sv->groups[sv->gidx[v]];
    int keep = sv->knob[v];
    for (int p = g->npar - 1; p >= 0 && sv->bnodes < sv->blimit; p--) {
        int o = g->par[p];
        double t = g->set->opt[o].time_s, eo = opt_eff(sv, v, o);
        if (e0 + t + sv->btt[j] > B)
            continue;
        if (!(sv->bcur + eo + sv->blbs[j + 1] < sv->bbest_e - 1e-9))
            break; /* faster options cost more */
        sv->knob[v] = o;
        sv->bdur[j] = t;
        sv->bcur += eo;
        bb_dfs(sv, j + 1);
        sv->bcur -= eo;
    }
    sv->knob[v] = keep;
}

/* Runs the branch and bound above on the ops marked in bfree within `limit` nodes; applies
 * the best plan if it beats the current knobs and meets the budget. Returns 1 if it did. */
static int bb_search(solver *sv, double budget, long limit)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, k = 0;
    double *dur = sv->bbuf, *hf = sv->bbuf + n, *tf = sv->bbuf + 2 * n;
    for (int i = 0; i < n; i++) {
        int v = dag->topo[i];
        dur[v] = sv->gidx[v] >= 0 ? sv->groups[sv->gidx[v]].set->opt[sv->knob[v]].time_s : 0;
        if (sv->bfree[v]) {
            if (k == KR__WINDOW_MAX)
                return 0;
            sv->bop[k++] = v;
        }
    }
    if (k == 0)
        return 0;
    sv->bk = k;
    /* Fixed-only heads (hf) forward and tails (tf, from a node's start) backward; −∞ through
     * a free op. */
    for (int i = 0; i < n; i++) {
        int v = dag->topo[i];
        double h = dag->in_off[v] == dag->in_off[v + 1] ? 0 : -INFINITY;
        for (int q = dag->in_off[v]; q < dag->in_off[v + 1]; q++) {
            int e = dag->in_e[q], u = dag->eu[e];
            if (!sv->bfree[u])
                h = fmax(h, hf[u] + dur[u] + dag->lag_s[e]);
        }
        hf[v] = h; /* for a free op: its head bound through fixed ops */
        if (sv->bfree[v])
            for (int j = 0; j < k; j++)
                if (sv->bop[j] == v)
                    sv->bhd[j] = h;
        if (sv->bfree[v])
            hf[v] = -INFINITY;
    }
    double tl[KR__WINDOW_MAX];
    for (int i = n - 1; i >= 0; i--) {
        int v = dag->topo[i];
        double t = dag->out_off[v] == dag->out_off[v + 1] ? 0 : -INFINITY;
        for (int q = dag->out_off[v]; q < dag->out_off[v + 1]; q++) {
            int e = dag->out_e[q];
            t = fmax(t, dag->lag_s[e] + tf[dag->ev[e]]);
        }
        if (sv->bfree[v]) {
            for (int j = 0; j < k; j++)
                if (sv->bop[j] == v)
                    tl[j] = t;
            tf[v] = -INFINITY;
        } else {
            tf[v] = dur[v] + t;
        }
    }
    /* dist[i][j]: forward from free op i over the fixed ops up to the last free op (hf is
     * reused as scratch). */
    int last = sv->tpos[sv->bop[k - 1]];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++)
            sv->bdist[i][j] = -INFINITY;
        int a = sv->bop[i];
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
                for (int j = 0; j < k; j++)
                    if (sv->bop[j] == v)
                        sv->bdist[i][j] = h;
                hf[v] = -INFINITY;
            }
        }
    }
    /* Bounds with the free ops at their fastest options: tails tt, heads hh. */
    double tmin[KR__WINDOW_MAX], hh[KR__WINDOW_MAX];
    for (int j = 0; j < k; j++) {
        const group *g = &sv->groups[sv->gidx[sv->bop[j]]];
        tmin[j] = g->set->opt[g->par[0]].time_s;
    }
    for (int j = k - 1; j >= 0; j--) {
        sv->btt[j] = tl[j];
        for (int m = j + 1; m < k; m++)
            sv->btt[j] = fmax(sv->btt[j], sv->bdist[j][m] + tmin[m] + sv->btt[m]);
    }
    for (int j = 0; j < k; j++) {
        hh[j] = sv->bhd[j];
        for (int i = 0; i < j; i++)
            hh[j] = fmax(hh[j], hh[i] + tmin[i] + sv->bdist[i][j]);
    }
    double cur = 0;
    sv->blbs[k] = 0;
    for (int j = k - 1; j >= 0; j--) {
        int v = sv->bop[j];
        const group *g = &sv->groups[sv->gidx[v]];
        double lb = opt_eff(sv, v, sv->knob[v]);
        for (int p = g->npar - 1; p >= 0; p--)
            if (hh[j] + g->set->opt[g->par[p]].time_s + sv->btt[j] <= budget + 1e-12) {
                lb = fmin(lb, opt_eff(sv, v, g->par[p]));
                break;
            }
        cur += opt_eff(sv, v, sv->knob[v]);
        sv->blbs[j] = sv->blbs[j + 1] + lb;
    }
    sv->bbound = budget;
    sv->bcur = 0;
    sv->bbest_e = cur;
    sv->bnodes = 0;
    sv->blimit = limit;
    bb_dfs(sv, 0);
    if (!(sv->bbest_e < cur - 1e-9))
        return 0;
    int keep[KR__WINDOW_MAX];
    for (int j = 0; j < k; j++) {
        keep[j] = sv->knob[sv->bop[j]];
        sv->knob[sv->bop[j]] = sv->bbestk[j];
    }
    if (knob_cpm(sv) <= budget + 1e-12)
        return 1;
    for (int j = 0; j < k; j++)
        sv->knob[sv->bop[j]] = keep[j];
    return 0;
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
static void window_sweep(solver *sv, double budget, int every);
static void window_pass(solver *sv, double budget)
{
    int n = sv->n;
    size_t nb = sizeof(int) * (size_t)n;
    /* Consecutive steps often enter with the same knobs (fine units): reuse the last result
     * when it still meets this budget (it is no worse than the entering knobs). */
    if (sv->win_valid && memcmp(sv->win_in, sv->knob, nb) == 0) {
        memcpy(sv->kbak, sv->knob, nb);
        memcpy(sv->knob, sv->win_out, nb);
        if (knob_cpm(sv) <= budget + 1e-12)
            return;
        memcpy(sv->knob, sv->kbak, nb);
    }
    memcpy(sv->win_in, sv->knob, nb);
    window_sweep(sv, budget, 0);
    memcpy(sv->win_out, sv->knob, nb);
    sv->win_valid = 1;
}

/* One sweep of windows centred on the critical ops, or (every) on every op: an op with float
 * can also gain, by handing its room to a neighbour that saves more per second. */
static void window_sweep(solver *sv, double budget, int every)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n;
    double span = knob_cpm_lf(sv, sv->rlf);
    for (int v = 0; v < n; v++)
        sv->crit[v] = v >= 2 && (every || sv->rlf[v] - sv->res[v] - sv->rt[v] <= 1e-9 * (1 + span));
    int wk = sv->wops > 0 ? KR_MIN(sv->wops, KR__WINDOW_MAX) : KR__WINDOW_OPS;
    long wn = sv->wnodes > 0 ? sv->wnodes : KR__WINDOW_NODES;
    for (int u = 2; u < n; u++) {
        if (!sv->crit[u])
            continue;
        memset(sv->bfree, 0, (size_t)n);
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
        (void)bb_search(sv, budget, wn);
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
static double improve(solver *sv, double budget)
{
    const kr_solver_config *cfg = &sv->cfg;
    (void)final_pass(sv, budget);
    double span = knob_cpm(sv);
    if (cfg->exchange > 0 || (cfg->exchange == 0 && sv->n - 2 <= KR__EXCHANGE_MAX_OPS)) {
        exchange_pass(sv, KR_MAX(span, budget));
        /* The final pass reads the earliest starts in sv->res: the exchange pass's last
         * critical path may have been of a rejected trial, so compute them afresh (stale
         * starts let the pass overrun the budget: issue 15's fast end). */
        (void)knob_cpm(sv);
        (void)final_pass(sv, KR_MAX(span, budget));
        span = knob_cpm(sv);
        window_pass(sv, KR_MAX(span, budget));
        span = knob_cpm(sv);
    }
    return span;
}

/* Fills the step's figures from the current durations; knobs per the cost model. */
static void record(solver *sv, kr_solver_step *st, long T)
{
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    double model = 0;
    if (sv->relax_only) {
        for (int v = 2; v < sv->n; v++)
            model += gcost(&sv->groups[sv->gidx[v]], sv->d[v]);
        st->quant_time = T;
        st->model_cost_j = model;
        return;
    }
    for (int v = 2; v < sv->n; v++) {
        const group *g = &sv->groups[sv->gidx[v]];
        model += gcost(g, sv->d[v]);
        long d = KR_MIN(KR_MAX(sv->d[v], g->dmin), g->dmax);
        sv->knob[v] = g->knob[d - g->dmin];
    }
    double span = knob_cpm(sv);
    if (cfg->cost_model == KR_COST_EXACT && cfg->final_pass) {
        /* The quantized plan promises T units; when the real critical path is shorter, let the
         * final pass use the difference. */
        span = improve(sv, KR_MAX(span, (double)T * cfg->unit_time_s));
    }
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->groups[sv->gidx[v]].set->opt[sv->knob[v]];
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
static int plan_push(kr_solve_result *f, const int *opt)
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

static int push_step(kr_solve_result *f, solver *sv, size_t *scap, double change, long T, kr_error *err)
{
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    kr_solver_step *st = &f->steps[f->nsteps];
    memset(st, 0, sizeof *st);
    st->step = f->nsteps;
    st->cost_change_j = change;
    record(sv, st, T);
    if (!sv->relax_only && plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    f->nsteps++;
    return KR_OK;
}

/* True figures of the knobs in sv->knob at real makespan span into st. */
static void knob_figures(const solver *sv, kr_solver_step *st, double span)
{
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->groups[sv->gidx[v]].set->opt[sv->knob[v]];
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
static int push_knob_step(kr_solve_result *f, solver *sv, size_t *scap, double span, kr_error *err)
{
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps) || plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    kr_solver_step *st = &f->steps[f->nsteps];
    *st = f->steps[f->nsteps - 1];
    st->step = f->nsteps;
    st->cost_change_j = 0;
    knob_figures(sv, st, span);
    f->nsteps++;
    return KR_OK;
}

/*
 * The fast end (exact mode). The quantized steps end when a quantized critical path has every
 * op at its shortest quantized duration, but times are rounded down, so the last step's real
 * critical path can still be well above the all-fastest plan's (2–3 % of the energy was left
 * in that window on the golden pipelines: issue 15). From the last step's knobs this keeps
 * stepping in real time until the real makespan reaches its minimum: on the real critical
 * graph (ops and dependency arcs with zero float in the real-time CPM), a minimum cut whose
 * capacity is the effective energy of moving each op to its next faster Pareto option (∞ for
 * an op already at its fastest, the source and sink, and every dependency arc) chooses the ops
 * to speed up; every critical path crosses the cut, so the real makespan drops or stays (a
 * near-critical path can take over). When it drops, the plan gets the rounding passes for its
 * new makespan (improve()) and becomes a step. Termination: between recorded steps knobs only
 * get faster; each recorded step has a strictly shorter makespan, of which there are finitely
 * many; an iteration cap guards it anyway. The loop ends at an infinite cut: some critical
 * path has every op at its fastest option, so the makespan is the all-fastest plan's.
 */
static int tail_steps(kr_solve_result *f, solver *sv, size_t *scap, kr_error *err)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, N = 2 * n;
    int s = LNODE(KR_DAG_SOURCE), t = RNODE(KR_DAG_SINK);
    double last = f->steps[f->nsteps - 1].knob_time_s;
    long cap_iter = 4L * (n + 16);
    for (long it = 0; it < cap_iter; it++) {
        double span = knob_cpm_lf(sv, sv->rlf);
        double tol = 1e-9 * (1 + span);
        if (kr__flow_reset(&sv->flow, N + 2, 2 * (n + dag->nedges) + 8))
            return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
        for (int v = 0; v < n; v++) {
            sv->crit[v] = sv->rlf[v] - sv->res[v] - sv->rt[v] <= tol;
            if (!sv->crit[v])
                continue;
            int64_t c = EX_INF;
            if (sv->gidx[v] >= 0) {
                int fo = pareto_step(sv, v, sv->knob[v], -1);
                if (fo >= 0)
                    c = llround((opt_eff(sv, v, fo) - opt_eff(sv, v, sv->knob[v])) * EX_SCALE) + 1;
                if (c < 1)
                    c = 1;
            }
            kr__flow_arc(&sv->flow, LNODE(v), RNODE(v), c);
        }
        for (int e = 0; e < dag->nedges; e++) {
            int u = dag->eu[e], v = dag->ev[e];
            if (sv->crit[u] && sv->crit[v] && sv->res[u] + sv->rt[u] + dag->lag_s[e] >= sv->res[v] - tol)
                kr__flow_arc(&sv->flow, RNODE(u), LNODE(v), EX_INF);
        }
        if (kr__flow_min_cut(&sv->flow, s, t, sv->mark) >= EX_INF / 2)
            break;
        for (int v = 2; v < n; v++)
            if (sv->crit[v] && sv->mark[LNODE(v)] && !sv->mark[RNODE(v)])
                sv->knob[v] = pareto_step(sv, v, sv->knob[v], -1);
        /* A step is recorded once the makespan has dropped by a quarter unit (the rounding
         * passes are what costs; each recorded step gets them). */
        double ns = knob_cpm(sv);
        if (!(ns < last - 0.25 * sv->cfg.unit_time_s))
            continue;
        if (sv->cfg.final_pass)
            ns = improve(sv, ns);
        int rc = push_knob_step(f, sv, scap, ns, err);
        if (rc)
            return rc;
        last = ns;
    }
    /* The last speed-ups may have lowered the makespan by less than the quarter unit: that
     * plan is the fastest one, and it gets the rounding passes too (before, only the appended
     * all-fastest plan with one final pass stood at this makespan: issue 15). */
    double ns = knob_cpm(sv);
    if (ns < last - 1e-12) {
        if (sv->cfg.final_pass)
            ns = improve(sv, ns);
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
static int append_fastest(kr_solve_result *f, solver *sv, size_t *scap, kr_error *err)
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
    double span = knob_cpm(sv);
    if (!(span < f->steps[f->nsteps - 1].knob_time_s - 1e-12))
        return KR_OK;
    if (kr__grow((void **)&f->steps, scap, (size_t)f->nsteps + 1, sizeof *f->steps))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    const kr_solver_config *cfg = &sv->cfg;
    double G = cfg->gpus_per_stage, P = cfg->static_power_w, S = sv->opts->num_stages;
    if (cfg->final_pass)
        span = improve(sv, span);
    double e = 0, t = 0;
    for (int v = 2; v < sv->n; v++) {
        const kr_option *o = &sv->groups[sv->gidx[v]].set->opt[sv->knob[v]];
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
    if (plan_push(f, sv->knob + 2))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory storing step %d", f->nsteps);
    f->nsteps++;
    return KR_OK;
}

static int setup(solver *sv, kr_error *err)
{
    const kr_dag *dag = sv->dag;
    const kr_options *opts = sv->opts;
    const kr_solver_config *cfg = &sv->cfg;
    int n = dag->n, N = 2 * n, A = n + dag->nedges;
    sv->n = n;
    sv->gidx = malloc(sizeof(int) * (size_t)n);
    sv->lagq = calloc((size_t)(dag->nedges > 0 ? dag->nedges : 1), sizeof(long));
    sv->d = calloc((size_t)n, sizeof(long));
    sv->es = malloc(sizeof(long) * (size_t)n);
    sv->ef = malloc(sizeof(long) * (size_t)n);
    sv->ls = malloc(sizeof(long) * (size_t)n);
    sv->lf = malloc(sizeof(long) * (size_t)n);
    sv->rt = malloc(sizeof(double) * (size_t)n);
    sv->res = malloc(sizeof(double) * (size_t)n);
    sv->rlf = malloc(sizeof(double) * (size_t)n);
    sv->knob = calloc((size_t)n, sizeof(int));
    sv->kbak = calloc((size_t)n, sizeof(int));
    sv->crit = malloc((size_t)n);
    sv->bfree = calloc((size_t)n, 1);
    sv->bbuf = malloc(sizeof(double) * 3 * (size_t)n);
    sv->tpos = malloc(sizeof(int) * (size_t)n);
    sv->bq = malloc(sizeof(int) * (size_t)n);
    sv->win_in = malloc(sizeof(int) * 2 * (size_t)n);
    if (sv->win_in)
        sv->win_out = sv->win_in + n;
    sv->mark = malloc((size_t)N + 2);
    sv->lb = malloc(sizeof(int64_t) * (size_t)A);
    sv->ub = malloc(sizeof(int64_t) * (size_t)A);
    sv->bal = malloc(sizeof(int64_t) * (size_t)N * 2);
    sv->incut = malloc((size_t)A);
    sv->ngroups = opts->nsets;
    sv->groups = calloc((size_t)opts->nsets, sizeof *sv->groups);
    if (!sv->gidx || !sv->lagq || !sv->d || !sv->es || !sv->ef || !sv->ls || !sv->lf || !sv->rt || !sv->res ||
        !sv->rlf || !sv->knob || !sv->kbak || !sv->crit || !sv->bfree || !sv->bbuf || !sv->tpos || !sv->bq || !sv->win_in || !sv->mark || !sv->lb || !sv->ub || !sv->bal || !sv->incut || !sv->groups)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    sv->gidx[KR_DAG_SOURCE] = sv->gidx[KR_DAG_SINK] = -1;
    for (int i = 0; i < n; i++)
        sv->tpos[dag->topo[i]] = i;
    for (int v = 2; v < n; v++) {
        const kr_dag_node *nd = &dag->node[v];
        int gi = kr_options_index(opts, nd->stage, nd->kind, nd->chunk);
        char lbl[48];
        if (gi < 0 || opts->sets[gi].n == 0)
            return kr_error_set(err, KR_EINVAL, "solver: instruction %s: expected options for stage %d %s (chunk %d), found %s",
                                kr_dag_label(dag, v, lbl, sizeof lbl), nd->stage, kr_instr_kind_name(nd->kind), nd->chunk,
                                gi < 0 ? "no such stage/chunk in the options" : "none");
        sv->gidx[v] = gi;
    }
    for (int e = 0; e < dag->nedges; e++) {
        if (dag->lag_s[e] > 0 && cfg->cost_model == KR_COST_LOWTIME)
            return kr_error_set(err, KR_EINVAL,
                                "solver: the lowtime cost model has no edge lags (lowtime models p2p as free), found a "
                                "lag of %g s; use the exact cost model",
                                dag->lag_s[e]);
        sv->lagq[e] = (long)ceil(dag->lag_s[e] / cfg->unit_time_s - 1e-9);
        if (sv->lagq[e] < 0)
            sv->lagq[e] = 0;
    }
    /* Fit or hull each option set that some node uses. */
    char *used = calloc((size_t)opts->nsets, 1);
    if (used == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (int v = 2; v < n; v++)
        used[sv->gidx[v]] = 1;
    int rc = KR_OK;
    for (int g = 0; g < opts->nsets && rc == KR_OK; g++) {
        sv->groups[g].set = &opts->sets[g];
        if (!used[g])
            continue;
        rc = cfg->cost_model == KR_COST_LOWTIME ? group_lowtime(&sv->groups[g], cfg, err)
                                                : group_exact(&sv->groups[g], cfg, err);
        if (rc == KR_OK)
            rc = group_pareto(&sv->groups[g], cfg->static_power_w, err);
    }
    free(used);
    return rc;
}

/*
 * The lower bound (docs/solver.md, "Lower bound"). The exact mode's cuts solve the relaxation
 * R(D) = min Σ_v c_v(d_v) over integer durations d_v ∈ [dmin_v, dmax_v] whose quantized
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

static int solve_impl(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out,
                      int relax_only, kr_error *err);

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
static int mark_dominated(kr_solve_result *f, kr_error *err)
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

int kr_solve(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out, kr_error *err)
{
    return solve_impl(dag, opts, cfg, out, 0, err);
}

/* relax_only: exact mode without the fast end, the appended fastest plan, knobs and a bound
 * table (the relaxation run behind the bound). */
static int solve_impl(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out,
                      int relax_only, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(cfg->unit_time_s > 0) || !isfinite(cfg->unit_time_s))
        return kr_error_set(err, KR_EINVAL, "solver: expected a unit time > 0 s, found %g", cfg->unit_time_s);
    if (!(cfg->static_power_w >= 0) || !isfinite(cfg->static_power_w))
        return kr_error_set(err, KR_EINVAL, "solver: expected a static power >= 0 W, found %g", cfg->static_power_w);
    if (cfg->gpus_per_stage < 1)
        return kr_error_set(err, KR_EINVAL, "solver: expected >= 1 GPU per stage, found %d", cfg->gpus_per_stage);
    if (cfg->cost_model != KR_COST_EXACT && cfg->cost_model != KR_COST_LOWTIME)
        return kr_error_set(err, KR_EINVAL, "solver: unknown cost model %d", (int)cfg->cost_model);
    if (!dag->finalized)
        return kr_error_set(err, KR_EINVAL, "solver: the DAG is not finalized (kr_dag_finalize)");
    int rc;
    solver sv;
    memset(&sv, 0, sizeof sv);
    sv.dag = dag;
    sv.opts = opts;
    sv.cfg = *cfg;
    sv.relax_only = relax_only;
    double t0 = kr__now_s();
    if ((rc = setup(&sv, err)))
        goto done;
    out->cost_model = cfg->cost_model;
    out->unit_time_s = cfg->unit_time_s;
    out->static_power_w = cfg->static_power_w;
    out->gpus_per_stage = cfg->gpus_per_stage;
    out->num_stages = opts->num_stages;
    out->nops = dag->n - 2;
    double t1 = kr__now_s();
    out->setup_s = t1 - t0;
    size_t scap = 0;
    for (int v = 2; v < sv.n; v++)
        sv.d[v] = sv.groups[sv.gidx[v]].dmax;
    if (cfg->cost_model == KR_COST_EXACT && net_build(&sv)) {
        rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory");
        goto done;
    }
    long T = cpm(&sv);
    if (cfg->cost_model == KR_COST_EXACT) {
        ex_relax(&sv);
        T = cpm(&sv);
    }
    if ((rc = push_step(out, &sv, &scap, 0.0, T, err)))
        goto done;
    for (;;) {
        if (cfg->max_steps > 0 && out->nsteps > cfg->max_steps) {
            out->stop_reason = 1;
            break;
        }
        double change;
        if (cfg->cost_model == KR_COST_LOWTIME) {
            if (!lt_cut(&sv)) {
                out->stop_reason = 2;
                break;
            }
            change = lt_apply(&sv);
            if (change == INFINITY || fabs(change) < LT_EPS)
                break;
            T = cpm(&sv);
        } else {
            int64_t cut = ex_cut(&sv);
            if (cut >= EX_INF / 2)
                break;
            ex_apply(&sv);
            cpm_pass(&sv, 1);
            ex_relax(&sv); /* keeps every start time; updates ef of the ops it lengthens */
            T = 0;
            for (int v = 0; v < sv.n; v++)
                T = KR_MAX(T, sv.ef[v]);
            change = (double)cut / EX_SCALE;
        }
        if ((rc = push_step(out, &sv, &scap, change, T, err)))
            goto done;
    }
    if (cfg->cost_model == KR_COST_EXACT && out->stop_reason == 0 && !relax_only &&
        ((rc = tail_steps(out, &sv, &scap, err)) || (rc = append_fastest(out, &sv, &scap, err))))
        goto done;
    for (int k = 0; k < out->nsteps; k++) {
        out->steps[k].bound_j = INFINITY;
        out->steps[k].gap = NAN;
    }
    if (!relax_only && cfg->bound_refine >= 0) {
        /* The relaxation on a finer time grid (bound_refine sub-units per unit; the lowtime
         * model's costs bound nothing, so it always runs there): rounding each option down
         * to the grid loses up to one grid unit per op on a path, which is what separates
         * the bound from the optimum (docs/solver.md). */
        kr_solver_config rc_cfg = *cfg;
        int nops = dag->n - 2;
        int r = cfg->bound_refine > 0 ? cfg->bound_refine : KR_MAX(1, KR_MIN(KR__BOUND_REFINE, 2048 / KR_MAX(nops, 1)));
        rc_cfg.cost_model = KR_COST_EXACT;
        rc_cfg.final_pass = 0;
        rc_cfg.exchange = -1;
        rc_cfg.max_steps = 0;
        rc_cfg.unit_time_s = cfg->unit_time_s / r;
        if (r == 1 && cfg->cost_model == KR_COST_EXACT && out->stop_reason == 0) {
            /* Same grid: the run just made is the relaxation (its fast-end and appended steps
             * repeat the last quantized step's figures). */
            out->bound_unit_s = cfg->unit_time_s;
            rc = bound_build(out, dag, opts, &rc_cfg, out, err);
        } else {
            kr_solve_result rel;
            rc = solve_impl(dag, opts, &rc_cfg, &rel, 1, err);
            if (rc == KR_OK) {
                out->bound_unit_s = rc_cfg.unit_time_s;
                rc = bound_build(out, dag, opts, &rc_cfg, &rel, err);
            }
            kr_solve_result_free(&rel);
        }
        if (rc)
            goto done;
    }
    if (!relax_only && (rc = mark_dominated(out, err)))
        goto done;
    out->solve_s = kr__now_s() - t1;
done:
    solver_free(&sv);
    if (rc)
        kr_solve_result_free(out);
    return rc;
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

int kr_solve_result_options(const kr_solve_result *f, int step, int *out)
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

/* Whole-graph effective energy of the knobs in sv->knob (one GPU per stage). */
static double knob_eff(const solver *sv)
{
    double e = 0;
    for (int v = 2; v < sv->n; v++)
        e += opt_eff(sv, v, sv->knob[v]);
    return e;
}

/*
 * The deadline search (kr_solve_refine): the rounding passes for the budget, then rounds of
 * the exchange pass, the final pass and a window sweep centred on every op (not only the
 * critical ones, as after each step), while a round lowers the effective energy; at most
 * KR__REFINE_ROUNDS rounds. Every move keeps the real critical path within the budget, and
 * static power is charged for the whole budget-bounded makespan, so lowering the effective
 * energy at a makespan within the budget lowers the plan's energy only when the makespan does
 * not grow: the caller compares whole energies.
 */
#define KR__REFINE_ROUNDS 8
static double deadline_search(solver *sv, double budget)
{
    (void)knob_cpm(sv);
    (void)final_pass(sv, budget);
    double prev = knob_eff(sv);
    for (int round = 0; round < KR__REFINE_ROUNDS; round++) {
        exchange_pass(sv, budget);
        (void)knob_cpm(sv);
        (void)final_pass(sv, budget);
        sv->wops = sv->wnodes = 0;
        window_sweep(sv, budget, 1);
        sv->wops = 8;
        sv->wnodes = 5000;
        window_sweep(sv, budget, 1);
        sv->wops = sv->wnodes = 0;
        double e = knob_eff(sv);
        if (!(e < prev - 1e-9))
            break;
        prev = e;
    }
    return knob_cpm(sv);
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
int kr_solve_refine(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *f,
                    double deadline_s, int *step_out, kr_error *err)
{
    /* Starts: the KR__REFINE_STARTS undominated steps nearest below the deadline (the first
     * is the lowest-energy step that meets it); insertion by time, latest first. */
    int start[KR__REFINE_STARTS], ns = 0, k0 = -1;
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
    if (k0 < 0)
        return kr_error_set(err, KR_ERANGE, "refine: no step meets the deadline of %g s", deadline_s);
    if (ns == 0)
        start[ns++] = k0;
    if (!dag->finalized || dag->n - 2 != f->nops)
        return kr_error_set(err, KR_EINVAL, "refine: the DAG is not the frontier's (%d instructions, expected %d)",
                            dag->n - 2, f->nops);
    solver sv;
    memset(&sv, 0, sizeof sv);
    sv.dag = dag;
    sv.opts = opts;
    sv.cfg = *cfg;
    sv.cfg.cost_model = KR_COST_EXACT; /* the passes use the real options only (no lowtime fit) */
    int rc = setup(&sv, err);
    *step_out = k0;
    kr_solver_step best = f->steps[k0];
    int *bestk = rc == KR_OK ? malloc(sizeof(int) * (size_t)(f->nops > 0 ? f->nops : 1)) : NULL;
    if (rc == KR_OK && bestk == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "refine: out of memory");
    int found = 0, *startk = rc == KR_OK ? malloc(sizeof(int) * (size_t)(f->nops > 0 ? f->nops : 1)) : NULL;
    if (rc == KR_OK && startk == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "refine: out of memory");
    int nkick = f->nops <= KR__EXCHANGE_MAX_OPS ? KR__REFINE_KICKS : 0;
    for (int i = 0; i < ns && rc == KR_OK; i++) {
        (void)kr_solve_result_options(f, start[i], startk);
        for (int v = 2; v < sv.n; v++) {
            int o = startk[v - 2];
            if (o < 0 || o >= sv.groups[sv.gidx[v]].set->n) {
                rc = kr_error_set(err, KR_EINVAL, "refine: step %d assigns option %d to node %d, outside its set", start[i], o, v);
                break;
            }
            sv.knob[v] = o;
        }
        if (rc)
            break;
        double span = deadline_search(&sv, deadline_s);
        kr_solver_step st = f->steps[start[i]];
        knob_figures(&sv, &st, span);
        if (st.energy_j < best.energy_j * (1 - 1e-12)) {
            best = st;
            memcpy(bestk, sv.knob + 2, sizeof(int) * (size_t)f->nops);
            found = 1;
        }
    }
    if (rc == KR_OK && nkick > 0) {
        kr__rng r;
        kr__rng_seed(&r, 15);
        if (found)
            memcpy(sv.knob + 2, bestk, sizeof(int) * (size_t)f->nops);
        else if (kr_solve_result_options(f, k0, sv.knob + 2) != KR_OK)
            rc = kr_error_set(err, KR_EINVAL, "refine: no plan at step %d", k0);
        for (int it = 0; it < nkick && rc == KR_OK; it++) {
            /* Kick: speed up three random ops by one Pareto step (room for the others),
             * then search again from there; keep the best plan and restart from it. */
            for (int j = 0; j < 3; j++) {
                int v = 2 + (int)(kr__rng_next(&r) % (uint64_t)(sv.n - 2));
                int fo = pareto_step(&sv, v, sv.knob[v], -1);
                if (fo >= 0)
                    sv.knob[v] = fo;
            }
            double span = deadline_search(&sv, deadline_s);
            kr_solver_step st = f->steps[k0];
            knob_figures(&sv, &st, span);
            if (st.energy_j < best.energy_j * (1 - 1e-12)) {
                best = st;
                memcpy(bestk, sv.knob + 2, sizeof(int) * (size_t)f->nops);
                found = 1;
            } else if (found) {
                memcpy(sv.knob + 2, bestk, sizeof(int) * (size_t)f->nops);
            }
        }
    }
    if (rc == KR_OK && found) {
        size_t scap = (size_t)f->nsteps;
        if (kr__grow((void **)&f->steps, &scap, (size_t)f->nsteps + 1, sizeof *f->steps) || plan_push(f, bestk))
            rc = kr_error_set(err, KR_ENOMEM, "refine: out of memory");
        else {
            best.step = f->nsteps;
            best.cost_change_j = 0;
            best.bound_j = f->bound_min ? kr_solve_result_bound(f, best.knob_time_s) : INFINITY;
            best.gap = isfinite(best.bound_j) ? best.energy_j / best.bound_j - 1 : NAN;
            f->steps[f->nsteps] = best;
            *step_out = f->nsteps++;
            rc = mark_dominated(f, err);
        }
    }
    free(bestk);
    free(startk);
    solver_free(&sv);
    return rc;
}

int kr_solve_result_write_csv(const kr_solve_result *f, const char *path, kr_error *err)
{
    kr__sb sb = {0};
    kr__sb_puts(&sb, "step,quant_time,time_s,cost_change_j,model_cost_j,model_energy_j,knob_time_s,energy_j,eff_energy_j,"
                     "bound_j,gap,dominated\n");
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
        kr__sb_printf(&sb, ",%d\n", s->dominated);
    }
    return kr__sb_write_atomic(&sb, path, err);
}
