/*
 * excut.c — the exact model's step. The cut graph is every arc that is tight in the
 * earliest-start schedule π = ES (dependency arcs with ES(v) = EF(u) + lag, and every
 * operation arc). This is the min-cost tension step: the objective
 * Σ c_a(min(π(head) − π(tail), dmax_a)) is L-convex in the event times π, and the optimum for
 * T − 1 is reached from one for T by lowering the potentials of one node set by one unit; the
 * min cut picks that set. Lower bounds are handled in one max flow: with node imbalance
 * b(v) = Σ_in lb − Σ_out lb, cap(S,T) = Σ_{S→T}(ub − lb) + Σ_{v∈T, b>0} b(v)
 * + Σ_{v∈S, b<0} −b(v) − Σ_{b<0} −b(v), an ordinary s–t cut. After a step every operation with
 * free float is lengthened within it (free: no start time moves), which keeps π = ES optimal.
 * Capacities are int64 nano-joules; INF = 1e15 nJ (1 MJ), far above any real step.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* Marks op v's duration as changed since the last cut. */
static inline void mark_dirty(kr__solver *sv, int v)
{
    if (!sv->isdirty[v]) {
        sv->isdirty[v] = 1;
        sv->dirty[sv->ndirty++] = v;
    }
}

/*
 * Exact mode keeps one flow network for the whole run: AOA nodes, every operation and
 * dependency arc, and the balance arcs s → v_R and v_L → t of every op (design comment above).
 * Each step only changes capacities; the previous maximum flow is kept where it still fits,
 * arcs whose capacity fell below their flow are cut back, and the excesses and deficits that
 * leaves are repaired by two small flows through auxiliary nodes X and Y (phase A: every
 * excess to t, back to s, or into a deficit; phase B: every remaining deficit from s or t).
 * Then the flow is augmented to a maximum again. Only what changed costs work, which makes
 * the long pipelines fast (the cut moves little from step to step).
 */
int kr__ex_build(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    int n = sv->n, N = 2 * n;
    int s = KR__LNODE(KR_DAG_SOURCE), t = KR__RNODE(KR_DAG_SINK);
    sv->opa = malloc(sizeof(int) * (size_t)n);
    sv->depa = malloc(sizeof(int) * (size_t)(dag->nedges > 0 ? dag->nedges : 1));
    sv->sa = malloc(sizeof(int) * (size_t)N);
    sv->ta = malloc(sizeof(int) * (size_t)N);
    sv->ex = calloc((size_t)N, sizeof(int64_t));
    sv->cvis = calloc((size_t)N + 2, 1);
    sv->cpath = malloc(sizeof(int) * ((size_t)N + 2));
    sv->dirty = malloc(sizeof(int) * (size_t)n);
    sv->isdirty = calloc((size_t)n, 1);
    sv->exl = malloc(sizeof(int) * (size_t)N);
    sv->inexl = calloc((size_t)N, 1);
    if (!sv->opa || !sv->depa || !sv->sa || !sv->ta || !sv->ex || !sv->cvis || !sv->cpath || !sv->dirty || !sv->isdirty ||
        !sv->exl || !sv->inexl ||
        kr__flow_reset(&sv->flow, N + 2, 2 * (n + dag->nedges + 2 * N) + 4 * N + 16))
        return KR_ENOMEM;
    /* Balance arcs: node v_R's imbalance is lb(v) >= 0 and v_L's is −lb(v) <= 0 (the hull's
     * costs strictly decrease with the duration), so only s → v_R and v_L → t can carry
     * anything; the others are not built (they cost every search a look). Each op's arcs are
     * made together (its operation arc, balance arcs and out-going dependency arcs), so that
     * a node's adjacency list lies in a few nearby stretches of the arc arrays (measured on
     * (32,256): 30.3 -> 26.0 s with 2 threads; arcs in topological order instead: 30.2 s). */
    for (int x = 0; x < N; x++)
        sv->sa[x] = sv->ta[x] = -1;
    for (int v = 0; v < n; v++) {
        int xl = KR__LNODE(v), xr = KR__RNODE(v);
        sv->opa[v] = kr__flow_arc(&sv->flow, xl, xr, 0);
        sv->ta[xl] = kr__flow_arc(&sv->flow, xl, t, 0);
        sv->sa[xr] = kr__flow_arc(&sv->flow, s, xr, 0);
        for (int k = dag->out_off[v]; k < dag->out_off[v + 1]; k++) {
            int e = dag->out_e[k];
            sv->depa[e] = kr__flow_arc(&sv->flow, xr, KR__LNODE(dag->ev[e]), 0);
        }
    }
    if (sv->flow.m != 2 * (n + dag->nedges + N) || kr__flow_hub(&sv->flow, s, t))
        return KR_ENOMEM; /* an arc could not be added */
    /* Every op's capacities are set by the first cut; no dependency arc is tight yet. */
    for (int v = 0; v < n; v++) {
        sv->incut[v] = 1;
        sv->lb[v] = 0;
        mark_dirty(sv, v);
    }
    sv->sumlb = 0;
    memset(sv->incut + n, 0, (size_t)dag->nedges);
    sv->net_ready = 1;
    return KR_OK;
}

/* Lists node x among those whose excess may be non-zero (sv->exl). */
static inline void ex_touch(kr__solver *sv, int x)
{
    if (!sv->inexl[x]) {
        sv->inexl[x] = 1;
        sv->exl[sv->nexl++] = x;
    }
}

/* Zeroes every excess and empties the list. */
static void ex_clear(kr__solver *sv)
{
    for (int i = 0; i < sv->nexl; i++) {
        sv->ex[sv->exl[i]] = 0;
        sv->inexl[sv->exl[i]] = 0;
    }
    sv->nexl = 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* set_cap's rare case: the arc's flow exceeds its new capacity c. The cut-back flow becomes
 * excess at its tail and deficit at its head (s and t need no balance). */
static void set_cap_cut(kr__solver *sv, int a, int64_t c)
{
    kr__flow *f = &sv->flow;
    int64_t d = f->cap[a ^ 1] - c;
    f->cap[a] = 0;
    f->cap[a ^ 1] = c;
    int u = f->head[a ^ 1], v = f->head[a];
    int s = KR__LNODE(KR_DAG_SOURCE), t = KR__RNODE(KR_DAG_SINK);
    if (u != s && u != t) {
        sv->ex[u] += d;
        ex_touch(sv, u);
    }
    if (v != s && v != t) {
        sv->ex[v] -= d;
        ex_touch(sv, v);
    }
}

/* Sets arc a's capacity to c, keeping as much of its flow as fits (set_cap_cut otherwise).
 * Inline: it runs for every arc of the network at every step. */
static inline void set_cap(kr__solver *sv, int a, int64_t c)
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
static int64_t cancel_to_sink(kr__solver *sv, int v, int64_t need)
{
    kr__flow *f = &sv->flow;
    int t = KR__RNODE(KR_DAG_SINK);
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
                kr__flow_gained(f, path[i]);
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
 * not be routed (then the caller rebuilds the flow from zero). Its flows run without the hub
 * (s is an inner node there, with arcs to Y; the caller sets that). */
static int net_repair(kr__solver *sv)
{
    kr__flow *f = &sv->flow;
    int N = 2 * sv->n, X = N, Y = N + 1;
    int s = KR__LNODE(KR_DAG_SOURCE), t = KR__RNODE(KR_DAG_SINK);
    /* Only the listed nodes can hold an excess; in node order, as a walk over all would. */
    int *L = sv->exl, nl = sv->nexl, any = 0;
    for (int i = 0; i < nl && !any; i++)
        any = sv->ex[L[i]] != 0;
    if (!any) {
        ex_clear(sv);
        return 0;
    }
    qsort(L, (size_t)nl, sizeof(int), cmp_int);
    int base = f->m;
    int64_t want = 0;
    for (int i = 0; i < nl; i++) {
        int x = L[i];
        if (sv->ex[x] > 0) {
            kr__flow_arc(f, X, x, sv->ex[x]);
            want += sv->ex[x];
        } else if (sv->ex[x] < 0) {
            kr__flow_arc(f, x, Y, -sv->ex[x]);
        }
    }
    kr__flow_arc(f, s, Y, KR__FLOW_BIG);
    kr__flow_arc(f, t, Y, KR__FLOW_BIG);
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
    for (int i = 0; i < nl; i++)
        if (sv->ex[L[i]] < 0 && L[i] != t)
            sv->ex[L[i]] += cancel_to_sink(sv, L[i], -sv->ex[L[i]]);
    int64_t need = 0;
    for (int i = 0; i < nl; i++)
        if (sv->ex[L[i]] < 0) {
            kr__flow_arc(f, L[i], Y, -sv->ex[L[i]]);
            need += -sv->ex[L[i]];
        }
    if (need) {
        kr__flow_arc(f, X, s, KR__FLOW_BIG);
        kr__flow_arc(f, X, t, KR__FLOW_BIG);
        got = kr__flow_max(f, X, Y);
        kr__flow_pop(f, base);
        if (got != need)
            return -1;
    }
    ex_clear(sv);
    return 0;
}

/* Lists arc a in the hubs (kr__flow) if it leaves s or enters t and has capacity. */
static inline void hub_note(kr__solver *sv, int a)
{
    if (a >= 0 && sv->flow.cap[a] > 0)
        kr__flow_gained(&sv->flow, a);
}

/* The capacities of the changed ops: their op arcs and the balance arcs of their two nodes
 * (node v_R's imbalance is lb(v), v_L's is −lb(v): each AOA node has one op arc; lb >= 0). */
static void update_ops(kr__solver *sv)
{
    for (int i = 0; i < sv->ndirty; i++) {
        int v = sv->dirty[i], gi = sv->gidx[v];
        sv->isdirty[v] = 0;
        int64_t lb = 0, ub = KR__EX_INF;
        if (gi >= 0) {
            const kr__group *g = &sv->groups[gi];
            long d = sv->d[v];
            const int64_t *c = g->icost - g->dmin;
            if (d > g->dmin)
                ub = c[d - 1] - c[d];
            if (d < g->dmax)
                lb = c[d] - c[d + 1];
        }
        sv->sumlb += lb - sv->lb[v];
        sv->lb[v] = lb;
        sv->ub[v] = ub;
        set_cap(sv, sv->opa[v], ub > lb ? ub - lb : 0);
        set_cap(sv, sv->sa[KR__RNODE(v)], lb);
        set_cap(sv, sv->ta[KR__LNODE(v)], lb);
        hub_note(sv, sv->opa[v]);
        hub_note(sv, sv->sa[KR__RNODE(v)]);
        hub_note(sv, sv->ta[KR__LNODE(v)]);
    }
    sv->ndirty = 0;
}

/*
 * One exact-mode cut; returns the cut value in nJ (>= KR__EX_INF/2 means no finite cut).
 * Only what changed is touched: the ops whose durations changed since the last cut (and
 * their balance arcs); the dependency arcs whose tightness changed were set by
 * kr__ex_relax. The network is the one a full update gives.
 */
int64_t kr__ex_cut(kr__solver *sv)
{
    int s = KR__LNODE(KR_DAG_SOURCE), t = KR__RNODE(KR_DAG_SINK);
    update_ops(sv);
    kr__flow *f = &sv->flow;
    int hub = f->hs.node;
    f->hs.node = -1; /* its augmentations still list what they free on s's arcs (track) */
    int rc = net_repair(sv);
    f->hs.node = hub;
    if (rc != 0) {
        /* Could not repair (should not happen): drop all flow and start from zero. */
        for (int a = 0; a < f->m; a += 2) {
            f->cap[a] += f->cap[a + 1];
            f->cap[a + 1] = 0;
        }
        ex_clear(sv);
        kr__flow_hub_rebuild(f);
    }
    kr__flow_min_cut_rev(f, s, t, sv->mark);
    /* cap(S, T) = Σ_{S→T} ub − Σ_{T→S} lb over the cut graph (INF per tight dependency arc
     * S → T). The network's cut is that plus Σ lb: op v adds ub − lb when v_L ∈ S, v_R ∈ T and
     * its balance arcs s → v_R, v_L → t add lb(v) each when they cross, which gives lb(v) on
     * every side assignment. The network's minimum cut is its maximum flow, what leaves s
     * (no arc enters s; an arc's flow is its reverse's residual): exact integers, so the
     * same value as summing over the cut, without a pass over the graph. */
    int64_t flow = 0;
    for (int a = f->first[s]; a >= 0; a = f->next[a])
        flow += f->cap[a ^ 1];
    return flow - sv->sumlb;
}

void kr__ex_apply(kr__solver *sv)
{
    const char *S = sv->mark;
    int p0 = sv->cpm_p0;
    for (int v = 2; v < sv->n; v++) {
        const kr__group *g = &sv->groups[sv->gidx[v]];
        if (!sv->incut[v])
            continue;
        if (S[KR__LNODE(v)] && !S[KR__RNODE(v)]) {
            sv->d[v]--;
            mark_dirty(sv, v);
            p0 = KR_MIN(p0, sv->tpos[v]);
        } else if (!S[KR__LNODE(v)] && S[KR__RNODE(v)] && sv->d[v] < g->dmax) {
            sv->d[v]++;
            mark_dirty(sv, v);
            p0 = KR_MIN(p0, sv->tpos[v]);
        }
    }
    sv->cpm_p0 = p0;
}

/* Lengthens every op within its free float (no start time moves; needs a fresh forward CPM),
 * then sets each dependency arc's tightness in the network (tight: ef(u) + lag = es(v), which
 * the lengthening of u decides and nothing after it changes; set_cap with an unchanged
 * capacity would leave an arc as it is, so only the changes are applied) and returns the
 * makespan. One pass over the out-edge rows does all three (they were three passes, one of
 * them over the edges in id order). */
long kr__ex_relax(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    const int *off = dag->out_off, *succ = sv->osucc, *oe = dag->out_e;
    const long *lag = sv->olagq, *es = sv->es;
    long *ef = sv->ef, T = 0;
    char *tight = sv->incut + sv->n;
    /* After a CPM that started at position p (solver.c, cpm_from) no start or finish before p
     * moved: a node whose successors all lie before p has the room and tight arcs it had, so
     * only nodes at positions from relax_lo[p] on are visited (in node order, which keeps the
     * arrays' reads sequential: visiting them in topological order was slower on (32,256);
     * each node's work reads only starts, which the pass does not write). */
    const int lo = sv->relax_lo[sv->relax_p0], *tpos = sv->tpos;
    for (int v = 0; v < sv->n; v++) {
        if (tpos[v] < lo)
            continue;
        if (v >= 2) {
            const kr__group *g = &sv->groups[sv->gidx[v]];
            if (sv->d[v] < g->dmax) {
                long fin = LONG_MAX;
                for (int k = off[v]; k < off[v + 1]; k++) {
                    long t = es[succ[k]] - lag[k];
                    if (t < fin)
                        fin = t;
                }
                long room = fin - ef[v];
                if (room > 0) {
                    long nd = KR_MIN(sv->d[v] + room, g->dmax);
                    ef[v] += nd - sv->d[v];
                    sv->d[v] = nd;
                    mark_dirty(sv, v);
                }
            }
        }
        long fv = ef[v];
        if (!sv->net_ready)
            continue;
        for (int k = off[v]; k < off[v + 1]; k++) {
            char tk = fv + lag[k] == es[succ[k]];
            int e = oe[k];
            if (tk != tight[e]) {
                tight[e] = tk;
                set_cap(sv, sv->depa[e], tk ? KR__EX_INF : 0);
            }
        }
    }
    sv->relax_p0 = 0;
    for (int v = 0; v < sv->n; v++)
        T = KR_MAX(T, ef[v]);
    return T;
}
