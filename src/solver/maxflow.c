/*
 * maxflow.c — integer maximum flow (Dinic's blocking flows) for the solver's min cuts.
 *
 * Capacities are int64 in fixed-point cost units chosen by the caller (lowtime mode: 1e-6 J,
 * the granularity lowtime floors its capacities to; exact mode: 1e-9 J). Integer arithmetic
 * makes the flow exact, so the source-side reachable set of the final residual graph is the
 * source-minimal minimum cut (the intersection of all minimum cuts), independent of which
 * maximum flow was found. Arcs are stored in pairs (id, id^1 = reverse). The arrays are reused
 * across solver steps: kr__flow_reset keeps the allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "solver/solver_internal.h"
#include "util/util.h"

int kr__flow_reset(kr__flow *f, int n, int m_hint)
{
    if (n > f->ncap) {
        int *a = realloc(f->first, sizeof(int) * (size_t)n);
        if (a)
            f->first = a;
        int *b = realloc(f->level, sizeof(int) * (size_t)n);
        if (b)
            f->level = b;
        int *c = realloc(f->iter, sizeof(int) * (size_t)n);
        if (c)
            f->iter = c;
        int *d = realloc(f->queue, sizeof(int) * (size_t)n);
        if (d)
            f->queue = d;
        int *q = realloc(f->seen, sizeof(int) * (size_t)n);
        if (q)
            f->seen = q;
        if (!a || !b || !c || !d || !q)
            return KR_ENOMEM;
        f->ncap = n;
    }
    if (m_hint > f->mcap) {
        int *h = realloc(f->head, sizeof(int) * (size_t)m_hint);
        if (h)
            f->head = h;
        int *nx = realloc(f->next, sizeof(int) * (size_t)m_hint);
        if (nx)
            f->next = nx;
        int64_t *cp = realloc(f->cap, sizeof(int64_t) * (size_t)m_hint);
        if (cp)
            f->cap = cp;
        if (!h || !nx || !cp)
            return KR_ENOMEM;
        f->mcap = m_hint;
    }
    f->n = n;
    f->m = 0;
    for (int v = 0; v < n; v++) {
        f->first[v] = -1;
        f->level[v] = -1;
    }
    f->nseen = 0;
    f->hs.node = f->hs.track = f->ht.node = f->ht.track = -1;
    return KR_OK;
}

static int hub_init(kr__flow *f, kr__hub *h, int u)
{
    int deg = 0;
    for (int a = f->first[u]; a >= 0; a = f->next[a])
        deg++;
    free(h->arc);
    free(h->in);
    h->arc = malloc(sizeof(int) * (size_t)(deg + 1));
    h->in = calloc((size_t)f->m + 1, 1);
    if (!h->arc || !h->in)
        return KR_ENOMEM;
    h->node = h->track = u;
    h->n = h->i = 0;
    h->nflag = f->m;
    return KR_OK;
}

int kr__flow_hub(kr__flow *f, int s, int t)
{
    if (hub_init(f, &f->hs, s) || (t >= 0 && hub_init(f, &f->ht, t)))
        return KR_ENOMEM;
    kr__flow_hub_rebuild(f);
    return KR_OK;
}

void kr__flow_hub_rebuild(kr__flow *f)
{
    if (f->hs.node >= 0)
        for (int a = f->first[f->hs.node]; a >= 0; a = f->next[a])
            if (f->cap[a] > 0)
                kr__hub_add(&f->hs, a);
    if (f->ht.node >= 0)
        for (int a = f->first[f->ht.node]; a >= 0; a = f->next[a])
            if (f->cap[a ^ 1] > 0)
                kr__hub_add(&f->ht, a);
}

void kr__flow_free(kr__flow *f)
{
    free(f->first);
    free(f->level);
    free(f->iter);
    free(f->queue);
    free(f->seen);
    free(f->head);
    free(f->next);
    free(f->cap);
    free(f->hs.arc);
    free(f->hs.in);
    free(f->ht.arc);
    free(f->ht.in);
    memset(f, 0, sizeof *f);
}

int kr__flow_arc(kr__flow *f, int u, int v, int64_t c)
{
    if (f->m + 2 > f->mcap) {
        size_t cap = (size_t)f->mcap;
        size_t c1 = cap, c2 = cap, c3 = cap;
        if (kr__grow((void **)&f->head, &c1, (size_t)f->m + 2, sizeof(int)) ||
            kr__grow((void **)&f->next, &c2, (size_t)f->m + 2, sizeof(int)) ||
            kr__grow((void **)&f->cap, &c3, (size_t)f->m + 2, sizeof(int64_t)))
            return -1;
        f->mcap = (int)KR_MIN(c1, KR_MIN(c2, c3));
    }
    int id = f->m;
    f->head[id] = v;
    f->cap[id] = c;
    f->next[id] = f->first[u];
    f->first[u] = id;
    f->head[id + 1] = u;
    f->cap[id + 1] = 0;
    f->next[id + 1] = f->first[v];
    f->first[v] = id + 1;
    f->m += 2;
    return id;
}

void kr__flow_pop(kr__flow *f, int m_old)
{
    /* Arcs were pushed at the head of their tails' lists, so undoing in reverse order restores
     * the lists exactly. */
    while (f->m > m_old) {
        f->m -= 2;
        int id = f->m;
        f->first[f->head[id + 1]] = f->next[id];
        f->first[f->head[id]] = f->next[id + 1];
    }
}

/*
 * The searches run either way. Forward (rev = 0): levels are distances from s and arc a is
 * usable when cap[a] > 0. Backward (rev = 1, kr__flow_min_cut_rev): levels are distances to t;
 * from node w, the arc a of w's list is usable when its reverse (an arc into w) has residual
 * capacity, and the DFS walks from t to s. Each direction has its hub (hs / ht). The callers
 * pass constants, so each direction compiles to its own loop.
 */
static inline int64_t res(const kr__flow *f, int a, int rev)
{
    return f->cap[a ^ rev];
}

/* Drops the hub's arcs without residual capacity from its list (they are listed again when
 * they gain some: kr__flow_gained) and rewinds its DFS place. */
static inline void hub_prune(kr__flow *f, kr__hub *h, int rev)
{
    int k2 = 0;
    for (int k = 0; k < h->n; k++) {
        int a = h->arc[k];
        if (res(f, a, rev) <= 0)
            h->in[a] = 0;
        else
            h->arc[k2++] = a;
    }
    h->n = k2;
    h->i = 0;
}

/* The hub's part of a BFS: labels its arcs' heads (after dropping the arcs at 0). */
static inline int bfs_hub(kr__flow *f, kr__hub *h, int u, int *q, int qt, int rev)
{
    hub_prune(f, h, rev);
    for (int k = 0; k < h->n; k++) {
        int w = f->head[h->arc[k]];
        if (f->level[w] < 0) {
            f->level[w] = f->level[u] + 1;
            f->iter[w] = f->first[w];
            q[qt++] = w;
        }
    }
    return qt;
}

/* Levels from `from` until `to`'s level (the next dfs's arc pointers are reset for the nodes
 * it labels); between calls every node outside f->seen has level −1. */
static inline int bfs_dir(kr__flow *f, int from, int to, int rev)
{
    kr__hub *h = rev ? &f->ht : &f->hs;
    int *q = f->seen;
    for (int i = 0; i < f->nseen; i++)
        f->level[q[i]] = -1;
    int qh = 0, qt = 0;
    f->level[from] = 0;
    f->iter[from] = f->first[from];
    q[qt++] = from;
    while (qh < qt) {
        int u = q[qh++];
        /* Nodes at the target's level or beyond cannot be on a shortest augmenting path. */
        if (f->level[to] >= 0 && f->level[u] >= f->level[to])
            break;
        if (u == h->node) {
            qt = bfs_hub(f, h, u, q, qt, rev);
            continue;
        }
        for (int a = f->first[u]; a >= 0; a = f->next[a])
            if (f->level[f->head[a]] < 0 && res(f, a, rev) > 0) {
                int w = f->head[a];
                f->level[w] = f->level[u] + 1;
                f->iter[w] = f->first[w];
                q[qt++] = w;
            }
    }
    f->nseen = qt;
    return f->level[to] >= 0;
}

static int bfs(kr__flow *f, int s, int t)
{
    return bfs_dir(f, s, t, 0);
}

/* The hub's current arc in a DFS: the next of its list that leads a level up (-1: none). */
static inline int dfs_hub_arc(kr__flow *f, kr__hub *h, int u, int rev)
{
    while (h->i < h->n) {
        int a = h->arc[h->i];
        if (res(f, a, rev) > 0 && f->level[f->head[a]] == f->level[u] + 1)
            return a;
        h->i++;
    }
    return -1;
}

/* Pushes up to limit along level-increasing arcs from `from` to `to` (iterative path search;
 * path[] holds the arcs walked, each one's a ^ rev is the flow's arc). */
static inline int64_t dfs_dir(kr__flow *f, int from, int to, int64_t limit, int rev)
{
    kr__hub *h = rev ? &f->ht : &f->hs;
    int *path = f->queue; /* queue[] is free during the DFS phase */
    int depth = 0;
    int u = from;
    int64_t total = 0;
    while (total < limit) {
        if (u == to) {
            int64_t push = limit - total;
            for (int i = 0; i < depth; i++)
                if (res(f, path[i], rev) < push)
                    push = res(f, path[i], rev);
            for (int i = 0; i < depth; i++) {
                int a = path[i] ^ rev;
                f->cap[a] -= push;
                f->cap[a ^ 1] += push;
                kr__flow_gained(f, a ^ 1);
            }
            total += push;
            /* Back up to the first saturated arc. */
            int k = 0;
            while (k < depth && res(f, path[k], rev) > 0)
                k++;
            depth = k;
            u = depth ? f->head[path[depth - 1]] : from;
            continue;
        }
        int a = u == h->node ? dfs_hub_arc(f, h, u, rev) : f->iter[u];
        while (a >= 0 && !(f->level[f->head[a]] == f->level[u] + 1 && res(f, a, rev) > 0))
            a = f->next[a];
        if (u != h->node)
            f->iter[u] = a;
        if (a < 0) {
            /* Dead end: retreat. */
            f->level[u] = -1;
            if (depth == 0)
                break;
            depth--;
            u = depth ? f->head[path[depth - 1]] : from;
            if (u == h->node)
                h->i++;
            else
                f->iter[u] = f->next[f->iter[u]];
            continue;
        }
        path[depth++] = a;
        u = f->head[a];
    }
    return total;
}

static int64_t dfs(kr__flow *f, int s, int t, int64_t limit)
{
    return dfs_dir(f, s, t, limit, 0);
}

/* Runs Dinic's phases; returns the flow and sets *exhausted when the last BFS found no path
 * (then level[v] >= 0 marks exactly the nodes reachable from s in the residual graph: a BFS that
 * never reaches t never stops early). */
static int64_t flow_run(kr__flow *f, int s, int t, int *exhausted)
{
    const int64_t big = INT64_MAX / 4;
    int64_t flow = 0;
    *exhausted = 0;
    for (;;) {
        if (!bfs(f, s, t)) {
            *exhausted = 1;
            break;
        }
        int64_t pushed = dfs(f, s, t, big);
        if (pushed == 0)
            break;
        flow += pushed;
        if (flow >= big)
            break;
    }
    return flow;
}

int64_t kr__flow_max(kr__flow *f, int s, int t)
{
    int exhausted;
    return flow_run(f, s, t, &exhausted);
}

int64_t kr__flow_min_cut(kr__flow *f, int s, int t, char *mark)
{
    int exhausted;
    int64_t flow = flow_run(f, s, t, &exhausted);
    if (exhausted) {
        /* The failed BFS already walked the residual graph from s: reuse its labels (it
         * visited exactly the nodes reachable from s, all still labelled). */
        memset(mark, 0, (size_t)f->n);
        for (int i = 0; i < f->nseen; i++)
            mark[f->seen[i]] = 1;
    } else {
        kr__flow_reach(f, s, mark);
    }
    return flow;
}

int64_t kr__flow_min_cut_rev(kr__flow *f, int s, int t, char *mark)
{
    const int64_t big = INT64_MAX / 4;
    int64_t flow = 0;
    while (flow < big && bfs_dir(f, t, s, 1)) {
        int64_t pushed = dfs_dir(f, t, s, big, 1);
        if (pushed == 0)
            break;
        flow += pushed;
    }
    /* The source side by a walk on marks alone (no levels: the last BFS's labels and list
     * stay as they are). */
    kr__flow_reach(f, s, mark);
    return flow;
}

void kr__flow_reach(kr__flow *f, int s, char *mark)
{
    memset(mark, 0, (size_t)f->n);
    int *stack = f->queue, top = 0; /* each node is pushed once */
    stack[top++] = s;
    mark[s] = 1;
    while (top > 0) {
        int u = stack[--top];
        if (u == f->hs.node) {
            /* The hub's list holds every arc of it with residual capacity (and drops its
             * empty ones here, as a BFS would). */
            hub_prune(f, &f->hs, 0);
            for (int k = 0; k < f->hs.n; k++) {
                int w = f->head[f->hs.arc[k]];
                if (!mark[w]) {
                    mark[w] = 1;
                    stack[top++] = w;
                }
            }
            continue;
        }
        for (int a = f->first[u]; a >= 0; a = f->next[a])
            if (!mark[f->head[a]] && f->cap[a] > 0) {
                mark[f->head[a]] = 1;
                stack[top++] = f->head[a];
            }
    }
}
