/*
 * dag.h — the pipeline DAG (activity on node): one node per instruction (the forward or
 * backward of one microbatch, of one model chunk, on one stage), a source and a sink, and
 * dependency edges that may carry a fixed lag (pipeline point-to-point transfer time).
 *
 * Built by kr_dag_pipeline for a schedule (design §6):
 *   every schedule   intra-stage chain in the stage's execution order (sched.h);
 *   1F1B, GPipe      F(s,m) → F(s+1,m) and B(s+1,m) → B(s,m);
 *   interleaved      virtual stage v = chunk·S + s: F(v) → F(v+1) (chunk c on stage S−1 feeds
 *                    chunk c+1 on stage 0), B(v+1) → B(v), and on the last stage the forward
 *                    of the last chunk → its backward;
 *   source → every node without predecessors, every node without successors → sink.
 * Node numbering follows lowtime's driver: 0 = source, 1 = sink, instructions from 2 stage by
 * stage in execution order. The critical path method works on node durations plus edge lags.
 */
#ifndef KAREUS_DAG_H
#define KAREUS_DAG_H

#include "kareus/job.h"
#include "kareus/sched.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_DAG_SOURCE 0
#define KR_DAG_SINK 1

/* One node. The source and sink have stage −1. */
typedef struct kr_dag_node {
    int stage;          /* Pipeline stage (−1 for source and sink). */
    kr_instr_kind kind; /* Forward or backward. */
    int microbatch;     /* Microbatch, 0-based. */
    int chunk;          /* Model chunk, 0 unless interleaved. */
    int order;          /* Position in its stage's execution order. */
} kr_dag_node;

typedef struct kr_dag {
    int n;                  /* Nodes, source and sink included. */
    int ncap;               /* Nodes allocated. */
    kr_dag_node *node;      /* n nodes (owned). */
    int nedges;             /* Edges. */
    int ecap;               /* Edges allocated. */
    int *eu, *ev;           /* Tail and head of each edge (owned). */
    double *lag_s;          /* Fixed lag of each edge, seconds (owned). */
    /* Set by kr_dag_finalize (and kept valid until the next add). */
    int finalized;          /* 1 when the arrays below are current. */
    int *topo;              /* Nodes in a topological order (n). */
    int *out_off, *out_e;   /* Outgoing edge ids of node v: out_e[out_off[v] .. out_off[v+1]). */
    int *in_off, *in_e;     /* Incoming edge ids, same layout. */
    /* Identity of a pipeline DAG (0 when built by hand). */
    int num_stages, num_microbatches, virtual_stages;
    kr_schedule schedule;
} kr_dag;

/* Creates an empty DAG with the source (0) and sink (1) nodes. Free with kr_dag_free. */
int kr_dag_init(kr_dag *d, kr_error *err);
void kr_dag_free(kr_dag *d);

/* Adds an instruction node; returns its id (>= 2) or a negative status. */
int kr_dag_add_node(kr_dag *d, int stage, kr_instr_kind kind, int microbatch, int chunk, kr_error *err);

/* Adds edge u → v with a fixed lag (>= 0, seconds). KR_ERANGE for a bad node, a self loop or
 * a negative/NaN lag. Duplicate edges are allowed (the larger lag binds). */
int kr_dag_add_edge(kr_dag *d, int u, int v, double lag_s, kr_error *err);

/* Connects the source to every other node without predecessors and every node without
 * successors to the sink. */
int kr_dag_connect_terminals(kr_dag *d, kr_error *err);

/* Builds the adjacency and a topological order. A cycle gives KR_ECYCLE with the nodes of
 * one cycle in the message ("F(s0,m1) -> B(s1,m0) -> F(s0,m1)"). */
int kr_dag_finalize(kr_dag *d, kr_error *err);

/*
 * Builds the pipeline DAG of a schedule with S stages, M microbatches and V chunks per stage
 * (see above), finalized. p2p_lag_s (may be NULL: zero lags) gives the lag of every
 * inter-stage edge between stage s and s+1 (index s, S−1 entries; for interleaved the edge
 * from stage S−1 back to stage 0 uses index S−1, so S entries are read then).
 */
int kr_dag_pipeline(kr_schedule sch, int stages, int microbatches, int virtual_stages,
                    const double *p2p_lag_s, kr_dag *out, kr_error *err);

/* Node id of an instruction, or −1. */
int kr_dag_find(const kr_dag *d, int stage, kr_instr_kind kind, int microbatch, int chunk);

/* Writes a label such as "F(s0,m3)", "B(s1,m0,c1)", "source", "sink" into buf. */
const char *kr_dag_label(const kr_dag *d, int v, char *buf, size_t cap);

/*
 * Critical path method on a finalized DAG. dur_s[v] is the duration of node v (the source
 * and sink should be 0). Fills (each may be NULL) es_s (earliest start), lf_s (latest finish
 * for the makespan) and returns the makespan in *makespan_s. Edge lags are added.
 */
int kr_dag_cpm(const kr_dag *d, const double *dur_s, double *es_s, double *lf_s, double *makespan_s,
               kr_error *err);

KR_END_DECLS
#endif
