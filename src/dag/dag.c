/*
 * dag.c — the pipeline DAG: construction for 1F1B, GPipe and interleaved 1F1B, topological
 * order with cycle reporting, and the critical path method (see dag.h).
 */
#include "kareus/dag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void drop_index(kr_dag *d)
{
    free(d->topo);
    free(d->out_off);
    free(d->out_e);
    free(d->in_off);
    free(d->in_e);
    d->topo = d->out_off = d->out_e = d->in_off = d->in_e = NULL;
    d->finalized = 0;
}

void kr_dag_free(kr_dag *d)
{
    if (d == NULL)
        return;
    drop_index(d);
    free(d->node);
    free(d->eu);
    free(d->ev);
    free(d->lag_s);
    memset(d, 0, sizeof *d);
}

static int push_node(kr_dag *d, int stage, kr_instr_kind kind, int mb, int chunk, kr_error *err)
{
    size_t cap = (size_t)d->ncap;
    if (kr__grow((void **)&d->node, &cap, (size_t)d->n + 1, sizeof *d->node))
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    d->ncap = (int)cap;
    kr_dag_node *nd = &d->node[d->n];
    nd->stage = stage;
    nd->kind = kind;
    nd->microbatch = mb;
    nd->chunk = chunk;
    nd->order = 0;
    drop_index(d);
    return d->n++;
}

int kr_dag_init(kr_dag *d, kr_error *err)
{
    memset(d, 0, sizeof *d);
    int rc;
    if ((rc = push_node(d, -1, KR_INSTR_FORWARD, -1, 0, err)) < 0 || (rc = push_node(d, -1, KR_INSTR_BACKWARD, -1, 0, err)) < 0) {
        kr_dag_free(d);
        return rc;
    }
    return KR_OK;
}

int kr_dag_add_node(kr_dag *d, int stage, kr_instr_kind kind, int microbatch, int chunk, kr_error *err)
{
    if (stage < 0 || microbatch < 0 || chunk < 0)
        return kr_error_set(err, KR_ERANGE, "dag: expected stage, microbatch and chunk >= 0, found %d, %d, %d", stage,
                            microbatch, chunk);
    return push_node(d, stage, kind, microbatch, chunk, err);
}

int kr_dag_add_edge(kr_dag *d, int u, int v, double lag_s, kr_error *err)
{
    if (u < 0 || u >= d->n || v < 0 || v >= d->n || u == v)
        return kr_error_set(err, KR_ERANGE, "dag: expected an edge between two distinct nodes in [0, %d], found %d -> %d",
                            d->n - 1, u, v);
    if (!(lag_s >= 0) || !isfinite(lag_s))
        return kr_error_set(err, KR_ERANGE, "dag: edge %d -> %d: expected a lag >= 0 s, found %g", u, v, lag_s);
    size_t c1 = (size_t)d->ecap, c2 = c1, c3 = c1;
    if (kr__grow((void **)&d->eu, &c1, (size_t)d->nedges + 1, sizeof(int)) ||
        kr__grow((void **)&d->ev, &c2, (size_t)d->nedges + 1, sizeof(int)) ||
        kr__grow((void **)&d->lag_s, &c3, (size_t)d->nedges + 1, sizeof(double)))
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    d->ecap = (int)KR_MIN(c1, KR_MIN(c2, c3));
    d->eu[d->nedges] = u;
    d->ev[d->nedges] = v;
    d->lag_s[d->nedges] = lag_s;
    d->nedges++;
    drop_index(d);
    return KR_OK;
}

const char *kr_dag_label(const kr_dag *d, int v, char *buf, size_t cap)
{
    if (v == KR_DAG_SOURCE)
        snprintf(buf, cap, "source");
    else if (v == KR_DAG_SINK)
        snprintf(buf, cap, "sink");
    else if (v < 0 || v >= d->n)
        snprintf(buf, cap, "node%d", v);
    else if (d->node[v].chunk > 0 || d->virtual_stages > 1)
        snprintf(buf, cap, "%c(s%d,m%d,c%d)", d->node[v].kind == KR_INSTR_FORWARD ? 'F' : 'B', d->node[v].stage,
                 d->node[v].microbatch, d->node[v].chunk);
    else
        snprintf(buf, cap, "%c(s%d,m%d)", d->node[v].kind == KR_INSTR_FORWARD ? 'F' : 'B', d->node[v].stage,
                 d->node[v].microbatch);
    return buf;
}

static int build_csr(int n, int m, const int *key, int **off_out, int **idx_out)
{
    int *off = calloc((size_t)n + 1, sizeof(int));
    int *idx = malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
    if (off == NULL || idx == NULL) {
        free(off);
        free(idx);
        return KR_ENOMEM;
    }
    for (int e = 0; e < m; e++)
        off[key[e] + 1]++;
    for (int v = 0; v < n; v++)
        off[v + 1] += off[v];
    int *pos = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (pos == NULL) {
        free(off);
        free(idx);
        return KR_ENOMEM;
    }
    memcpy(pos, off, sizeof(int) * (size_t)n);
    for (int e = 0; e < m; e++)
        idx[pos[key[e]]++] = e;
    free(pos);
    *off_out = off;
    *idx_out = idx;
    return KR_OK;
}

/* Reports one cycle among the nodes Kahn's algorithm could not order (indeg > 0). */
static int report_cycle(const kr_dag *d, const int *indeg, kr_error *err)
{
    /* Walk backwards along in-edges from unordered nodes: every unordered node has an
     * unordered predecessor, so the walk must revisit a node; that closes a cycle. */
    int start = -1;
    for (int v = 0; v < d->n && start < 0; v++)
        if (indeg[v] > 0)
            start = v;
    int *seen = calloc((size_t)d->n, sizeof(int));
    int *path = malloc(sizeof(int) * (size_t)(d->n + 1));
    if (seen == NULL || path == NULL) {
        free(seen);
        free(path);
        return kr_error_set(err, KR_ECYCLE, "dag: the graph has a cycle");
    }
    int v = start, len = 0;
    while (!seen[v]) {
        seen[v] = len + 1;
        path[len++] = v;
        int next = -1;
        for (int i = d->in_off[v]; i < d->in_off[v + 1] && next < 0; i++)
            if (indeg[d->eu[d->in_e[i]]] > 0)
                next = d->eu[d->in_e[i]];
        v = next;
    }
    /* path[seen[v]-1 .. len-1] walked backwards is the cycle; print it forwards. */
    kr__sb sb = {0};
    char lbl[48];
    int first = seen[v] - 1;
    for (int i = len - 1; i >= first; i--)
        kr__sb_printf(&sb, "%s -> ", kr_dag_label(d, path[i], lbl, sizeof lbl));
    kr__sb_puts(&sb, kr_dag_label(d, path[len - 1], lbl, sizeof lbl));
    int rc = kr_error_set(err, KR_ECYCLE, "dag: expected an acyclic graph, found the cycle %s", kr__sb_str(&sb));
    kr__sb_free(&sb);
    free(seen);
    free(path);
    return rc;
}

int kr_dag_finalize(kr_dag *d, kr_error *err)
{
    drop_index(d);
    if (build_csr(d->n, d->nedges, d->eu, &d->out_off, &d->out_e) ||
        build_csr(d->n, d->nedges, d->ev, &d->in_off, &d->in_e)) {
        drop_index(d);
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    }
    d->topo = malloc(sizeof(int) * (size_t)d->n);
    int *indeg = malloc(sizeof(int) * (size_t)d->n);
    if (d->topo == NULL || indeg == NULL) {
        free(indeg);
        drop_index(d);
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    }
    for (int v = 0; v < d->n; v++)
        indeg[v] = d->in_off[v + 1] - d->in_off[v];
    int head = 0, tail = 0;
    for (int v = 0; v < d->n; v++)
        if (indeg[v] == 0)
            d->topo[tail++] = v;
    while (head < tail) {
        int u = d->topo[head++];
        for (int i = d->out_off[u]; i < d->out_off[u + 1]; i++) {
            int w = d->ev[d->out_e[i]];
            if (--indeg[w] == 0)
                d->topo[tail++] = w;
        }
    }
    if (tail < d->n) {
        int rc = report_cycle(d, indeg, err);
        free(indeg);
        drop_index(d);
        return rc;
    }
    free(indeg);
    d->finalized = 1;
    return KR_OK;
}

int kr_dag_connect_terminals(kr_dag *d, kr_error *err)
{
    char *has_in = calloc((size_t)d->n, 1), *has_out = calloc((size_t)d->n, 1);
    if (has_in == NULL || has_out == NULL) {
        free(has_in);
        free(has_out);
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    }
    for (int e = 0; e < d->nedges; e++) {
        has_out[d->eu[e]] = 1;
        has_in[d->ev[e]] = 1;
    }
    int rc = KR_OK;
    int n = d->n;
    for (int v = 2; v < n && rc == KR_OK; v++) {
        if (!has_in[v])
            rc = kr_dag_add_edge(d, KR_DAG_SOURCE, v, 0, err);
        if (!has_out[v] && rc == KR_OK)
            rc = kr_dag_add_edge(d, v, KR_DAG_SINK, 0, err);
    }
    free(has_in);
    free(has_out);
    return rc;
}

int kr_dag_find(const kr_dag *d, int stage, kr_instr_kind kind, int microbatch, int chunk)
{
    for (int v = 2; v < d->n; v++) {
        const kr_dag_node *nd = &d->node[v];
        if (nd->stage == stage && nd->kind == kind && nd->microbatch == microbatch && nd->chunk == chunk)
            return v;
    }
    return -1;
}

int kr_dag_pipeline(kr_schedule sch, int stages, int microbatches, int virtual_stages, const double *p2p_lag_s,
                    kr_dag *out, kr_error *err)
{
    int rc = kr_sched_check(sch, stages, microbatches, virtual_stages, err);
    if (rc)
        return rc;
    if ((rc = kr_dag_init(out, err)))
        return rc;
    out->num_stages = stages;
    out->num_microbatches = microbatches;
    out->virtual_stages = virtual_stages;
    out->schedule = sch;
    int len = kr_sched_length(microbatches, virtual_stages);
    kr_sched_item *order = malloc(sizeof *order * (size_t)len);
    /* id[((s·V + c)·M + m)·2 + kind] = node id. */
    size_t nid = (size_t)stages * (size_t)virtual_stages * (size_t)microbatches * 2;
    int *id = malloc(sizeof(int) * nid);
    if (order == NULL || id == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "dag: out of memory");
        goto fail;
    }
#define ID(s, c, m, k) id[((((size_t)(s) * (size_t)virtual_stages + (size_t)(c)) * (size_t)microbatches + (size_t)(m)) * 2 + (size_t)(k))]
    for (int s = 0; s < stages; s++) {
        int n = kr_sched_order(sch, stages, microbatches, virtual_stages, s, order, len, err);
        if (n < 0) {
            rc = n;
            goto fail;
        }
        int prev = -1;
        for (int i = 0; i < n; i++) {
            int v = kr_dag_add_node(out, s, order[i].kind, order[i].microbatch, order[i].chunk, err);
            if (v < 0) {
                rc = v;
                goto fail;
            }
            out->node[v].order = i;
            ID(s, order[i].chunk, order[i].microbatch, order[i].kind) = v;
            if (prev >= 0 && (rc = kr_dag_add_edge(out, prev, v, 0, err)))
                goto fail;
            prev = v;
        }
    }
    /* Inter-stage dependencies over the virtual pipeline vs = c·S + s. */
    int nv = stages * virtual_stages;
    for (int m = 0; m < microbatches; m++) {
        for (int vs = 0; vs + 1 < nv; vs++) {
            int s = vs % stages, c = vs / stages, s2 = (vs + 1) % stages, c2 = (vs + 1) / stages;
            double lag = p2p_lag_s ? p2p_lag_s[s] : 0.0;
            if ((rc = kr_dag_add_edge(out, ID(s, c, m, KR_INSTR_FORWARD), ID(s2, c2, m, KR_INSTR_FORWARD), lag, err)) ||
                (rc = kr_dag_add_edge(out, ID(s2, c2, m, KR_INSTR_BACKWARD), ID(s, c, m, KR_INSTR_BACKWARD), lag, err)))
                goto fail;
        }
        if (sch == KR_SCHEDULE_INTERLEAVED_1F1B &&
            (rc = kr_dag_add_edge(out, ID(stages - 1, virtual_stages - 1, m, KR_INSTR_FORWARD),
                                  ID(stages - 1, virtual_stages - 1, m, KR_INSTR_BACKWARD), 0, err)))
            goto fail;
    }
#undef ID
    if ((rc = kr_dag_connect_terminals(out, err)) || (rc = kr_dag_finalize(out, err)))
        goto fail;
    free(order);
    free(id);
    return KR_OK;
fail:
    free(order);
    free(id);
    kr_dag_free(out);
    return rc;
}

int kr_dag_cpm(const kr_dag *d, const double *dur_s, double *es_s, double *lf_s, double *makespan_s, kr_error *err)
{
    if (!d->finalized)
        return kr_error_set(err, KR_ESTATE, "dag: kr_dag_cpm needs a finalized DAG (call kr_dag_finalize)");
    double *es = es_s ? es_s : malloc(sizeof(double) * (size_t)d->n);
    if (es == NULL)
        return kr_error_set(err, KR_ENOMEM, "dag: out of memory");
    for (int v = 0; v < d->n; v++)
        es[v] = 0;
    double span = 0;
    for (int i = 0; i < d->n; i++) {
        int u = d->topo[i];
        double fin = es[u] + dur_s[u];
        span = KR_MAX(span, fin);
        for (int k = d->out_off[u]; k < d->out_off[u + 1]; k++) {
            int e = d->out_e[k];
            double t = fin + d->lag_s[e];
            if (t > es[d->ev[e]])
                es[d->ev[e]] = t;
        }
    }
    if (lf_s) {
        for (int v = 0; v < d->n; v++)
            lf_s[v] = span;
        for (int i = d->n - 1; i >= 0; i--) {
            int u = d->topo[i];
            for (int k = d->out_off[u]; k < d->out_off[u + 1]; k++) {
                int e = d->out_e[k];
                int w = d->ev[e];
                double t = lf_s[w] - dur_s[w] - d->lag_s[e];
                if (t < lf_s[u])
                    lf_s[u] = t;
            }
        }
    }
    if (makespan_s)
        *makespan_s = span;
    if (es_s == NULL)
        free(es);
    return KR_OK;
}
