/*
 * solver_internal.h — the one internal header of the solver module, shared by its files and
 * its tests: CPython-compatible float floor division, lowtime's candidate filtering and
 * exponential fit (a Levenberg–Marquardt least-squares solver following MINPACK's lmdif), an
 * integer max-flow (Dinic) with source-side reachability, and the frontier tracer's state and
 * the functions its files share. The files by role:
 *
 *   solver.c    the driver: configuration, setup, the Phillips–Dessouky step loop (kr_solve)
 *   costs.c     per option set: the lowtime fit or the exact convex hull, and the Pareto front
 *   ltcut.c     the lowtime-compatible cut and duration change
 *   excut.c     the exact cut on the warm-started flow network, and the float relaxation
 *   rounding.c  real-time critical paths and the rounding passes (final, exchange, windows)
 *   bb.c        branch and bound over one window of ops (its own state, kr__bb)
 *   steps.c     recording steps and plans, the fast end, the result's accessors and CSV
 *   bound.c     the lower bound (the relaxation run on a finer grid) and its lookup
 *   refine.c    the per-deadline local search (kr_solve_refine)
 *   maxflow.c, ltmodel.c, lmfit.c, select.c   as before: flow, lowtime's model, the fit,
 *               step selection and plans
 */
#ifndef KR_SOLVER_INTERNAL_H
#define KR_SOLVER_INTERNAL_H

#include <stdint.h>

#include "kareus/solver.h"

/* a // b as CPython computes it for floats (fmod-based; not always floor(a / b)). */
double kr__py_floordiv(double a, double b);

/* ---- least squares ------------------------------------------------------------------ */

/* Residual function: fills fvec[0..m) at x[0..n). Returns 0, or non-zero to abort. */
typedef int (*kr__lm_fn)(void *ud, int m, int n, const double *x, double *fvec);

typedef struct kr__lm_opts {
    double ftol, xtol, gtol; /* MINPACK tolerances (scipy leastsq: 1.49012e-8, 1.49012e-8, 0). */
    int maxfev;              /* Function evaluations allowed. */
    double epsfcn;           /* Forward-difference step parameter (0: machine epsilon). */
    double factor;           /* Initial step bound factor (100). */
} kr__lm_opts;

/*
 * Minimises Σ fvec² over x (n <= 8 parameters, m >= n residuals) with MINPACK's lmdif
 * algorithm: forward-difference Jacobian, QR with column pivoting, Levenberg–Marquardt
 * parameter by Moré's method, internal scaling (mode 1). x is updated in place.
 * Returns MINPACK's info (1..8; 0 for bad input, negative if fn aborted); *nfev counts calls.
 * If cov is not NULL and R is non-singular, fills the n×n matrix (RᵀR)⁻¹ (unscaled
 * covariance, row-major) and sets *cov_ok = 1.
 */
int kr__lm_minimize(kr__lm_fn fn, void *ud, int m, int n, double *x, const kr__lm_opts *o, int *nfev,
                    double *cov, int *cov_ok);

/* ---- lowtime cost model -------------------------------------------------------------- */

#define KR__LT_MAX_OPTS 4096

/* One option prepared as lowtime does: quantized time and cost net of static power. */
typedef struct kr__lt_cand {
    int index;       /* Index of the option in its kr_option_set. */
    double real_time; /* Seconds. */
    long quant_time; /* real_time // unit_time. */
    double cost;     /* energy − P_static·quant_time·unit_time. */
} kr__lt_cand;

/* Candidates and model of one instruction type, as lowtime builds them. */
typedef struct kr__lt_spec {
    int ncand;             /* Candidates after filtering (sorted by quant_time descending). */
    kr__lt_cand *cand;     /* Owned. */
    double noise_factor;   /* 1.0, or 0.95 after a refilter. */
    long min_duration, max_duration;
    double a, b, c;        /* cost(t) = a·exp(b·t) + c. */
    double mse;            /* Mean squared error of the chosen fit. */
} kr__lt_spec;

/* Quantizes, subtracts static power, filters (Pareto with noise, dedup, refilter at 0.95)
 * into spec->cand. */
int kr__lt_filter(const kr_option_set *set, double unit_time_s, double static_power_w, kr__lt_spec *spec,
                  kr_error *err);
/* Fits the exponential model with lowtime's 54-start grid and the "best" rule. */
int kr__lt_fit(kr__lt_spec *spec, double unit_time_s, kr_error *err);
void kr__lt_spec_free(kr__lt_spec *spec);
/* a·exp(b·t) + c evaluated as numpy does for an integer t. */
double kr__lt_cost(const kr__lt_spec *spec, long t);

/* ---- max flow ------------------------------------------------------------------------ */

typedef struct kr__hub {
    int node, track, n, i, nflag; /* Hub node (-1: none), tracked node, list length, DFS place,
                                     arcs with a flag (ids < nflag). */
    int *arc;                     /* The list. */
    char *in;                     /* Arc is in the list. */
} kr__hub;

typedef struct kr__flow {
    int n, m, ncap, mcap;  /* Nodes, arcs (each with its reverse at id^1). */
    int *head, *next;      /* Arc target and adjacency list link. */
    int64_t *cap;          /* Residual capacity of each arc. */
    int *first;            /* First arc of each node (-1). */
    int *level, *iter, *queue;
    int *seen, nseen;      /* The last BFS's nodes in visiting order (its queue): only their
                              labels are reset by the next one, so a phase costs what it visits,
                              not the whole node count. */
    /* Optional hubs (exact mode's s and t, whose lists hold an arc to or from every op): a
     * search at a hub walks its list of useful arcs instead of the node's whole list. hs: the
     * arcs out of s with residual capacity > 0 (forward searches); ht: the arcs of t's list
     * whose reverse (an arc into t) has residual capacity > 0 (searches towards t, backwards).
     * The owner keeps each list a superset of those arcs (kr__hub_add, kr__flow_hub_rebuild);
     * each BFS drops the arcs it finds at 0. node = -1: none (kr__flow_reset). Augmentations
     * list the arcs they give capacity to while track is the hub's node, also when the
     * searches leave the hub aside (node = -1 for a flow in which it is an inner node). */
    kr__hub hs, ht;
} kr__flow;

int kr__flow_reset(kr__flow *f, int n, int m_hint);
void kr__flow_free(kr__flow *f);
/* Makes s the source hub and t (or -1) the sink hub (see kr__flow), each with every useful arc
 * of its list; KR_ENOMEM. */
int kr__flow_hub(kr__flow *f, int s, int t);
/* Adds every useful arc of each hub's list that the hub lacks (after a change that bypassed
 * the tracking). */
void kr__flow_hub_rebuild(kr__flow *f);
/* Lists arc a in hub h. */
static inline void kr__hub_add(kr__hub *h, int a)
{
    if (a < h->nflag && !h->in[a]) {
        h->in[a] = 1;
        h->arc[h->n++] = a;
    }
}
/* The tracking for arc a whose residual capacity just grew: lists it in the source hub if it
 * leaves the tracked source, its reverse in the sink hub if it enters the tracked sink. */
static inline void kr__flow_gained(kr__flow *f, int a)
{
    if (f->head[a ^ 1] == f->hs.track)
        kr__hub_add(&f->hs, a);
    if (f->head[a] == f->ht.track)
        kr__hub_add(&f->ht, a ^ 1);
}
/* Adds u → v with capacity c (and its reverse with 0); returns the arc id (even). */
int kr__flow_arc(kr__flow *f, int u, int v, int64_t c);
/* Removes the arcs added after the first m_old arcs (most recent first). */
void kr__flow_pop(kr__flow *f, int m_old);
/* Augments a maximum flow from s to t on the current residual capacities; returns its value. */
int64_t kr__flow_max(kr__flow *f, int s, int t);
/* A maximum flow as kr__flow_max, then the source side of the source-minimal minimum cut in
 * mark[] (1/0): what kr__flow_reach(f, s, mark) gives, without walking the graph again. */
int64_t kr__flow_min_cut(kr__flow *f, int s, int t, char *mark);
/* The same cut, by a maximum flow whose phases search backwards from t (they visit what can
 * reach t, which near a maximum flow is far less than what s reaches), then one walk of the
 * source side from s. Uses the hubs when set. */
int64_t kr__flow_min_cut_rev(kr__flow *f, int s, int t, char *mark);
/* Marks in mark[] (1/0) the nodes reachable from s through arcs with residual capacity (the
 * hub's arcs from its list, pruned of empty ones). */
void kr__flow_reach(kr__flow *f, int s, char *mark);

/* ---- the frontier tracer (solver.c and the files listed above) ---------------------- */

#define KR__LT_EPS 1e-6        /* lowtime FP_ERROR */
#define KR__LT_INF 10000.0     /* lowtime annotate_capacities "inf" */
#define KR__EX_SCALE 1e9       /* exact mode: capacity units per joule */
#define KR__EX_INF ((int64_t)1000000000000000LL)
#define KR__FLOW_BIG (INT64_MAX / 8)
#define KR__WINDOW_OPS 6       /* Window search: ops per window (see kr__round_window). */
#define KR__WINDOW_NODES 1000  /* Window search: branch-and-bound nodes per window. */
#define KR__WINDOW_MAX 10      /* Largest window (the deadline search's; array sizes). */
#define KR__BOUND_REFINE 8     /* Lower bound: relaxation grid = unit / min(8, 2048 / ops), >= 1 */
#define KR__BOUND_FINE_OPS 512 /* Lower bound: above this many ops, the main run is the relaxation. */
#define KR__EXCHANGE_MAX_OPS KR_SOLVE_EXCHANGE_OPS /* Exchange pass and window search: largest graph. */
#define KR__EXCHANGE_ALL_OPS 64  /* Exchange pass: any op as partner up to this size. */

/* AOA node ids: v_L = 2v, v_R = 2v + 1. Arc ids: op v → v, edge e → n + e. */
#define KR__LNODE(v) (2 * (v))
#define KR__RNODE(v) (2 * (v) + 1)

/* Per option set: the duration range and the cost table used by the cut. */
typedef struct kr__group {
    const kr_option_set *set;
    long dmin, dmax;      /* Duration range in units. */
    double *cost;         /* cost[d − dmin], model cost (J) for d in [dmin, dmax]. */
    int64_t *icost;       /* Exact mode: cost in nJ (rounded). */
    int *knob;            /* knob[d − dmin]: option index run at duration d. */
    int npar;             /* Options on the (real time, effective energy) Pareto front. */
    int *par;             /* Their indices, time ascending (effective energy descending). */
    double *par_t, *par_e; /* Their times and effective energies (in par's block). */
    double *eff;          /* Effective energy of every option of set (in par's block). */
    int *ppos;            /* Per option: the last Pareto option no slower (index into par; 0 if
                             none): where the final pass starts its search (in par's block). */
    kr__lt_spec lt;       /* lowtime mode: candidates and model. */
} kr__group;

/* The tracer's state for one run (kr_solve) or one refinement (kr_solve_refine). */
typedef struct kr__solver {
    const kr_dag *dag;
    const kr_options *opts;
    kr_solver_config cfg;
    int n;                /* AON nodes. */
    int ngroups;
    kr__group *groups;
    int *gidx;            /* AON node → group (−1 for source/sink). */
    long *lagq;           /* Edge lag in units. */
    /* The DAG's out-edges as contiguous rows (k in out_off[v] .. out_off[v+1]): head, lag in
     * units and in seconds, so the per-step passes read one array per edge, not three. */
    int *osucc;
    long *olagq;
    double *olags;
    /* The in-edges as rows in the DAG's in_off layout (tail, lag in units), and the first
     * topological position whose duration changed since the last forward CPM (n: none): the
     * exact step's CPM starts there (solver.c, cpm_from). */
    int *ipred;
    long *ilagq;
    double *ilags;
    int cpm_p0;
    /* The free-float relaxation after such a CPM needs only positions from relax_lo[p] on (p:
     * the CPM's start, kept in relax_p0; 0 for a whole pass): relax_lo[p] is the least position
     * of a node at or after p or of a predecessor of one (n + 1 entries). */
    int *relax_lo, relax_p0;
    /* record()'s forward half of the knobs of the durations, kept from the last step (steps.c):
     * their real times, earliest starts and running maximum finish per topological position
     * (n each); fw_ok once filled. res_pmax: that maximum while sv->res holds those starts
     * (record() sets it around kr__round_improve; NULL otherwise). final_p0: the first
     * topological position whose knob the last kr__round_final changed (n: none). */
    double *fw_rt, *fw_es, *fw_pmax;
    const double *res_pmax;
    int fw_ok, final_p0;
    /* record()'s last result where only the final pass runs (steps.c): the knobs of the
     * durations it started from (fw_knob), its budget, and the knobs and makespan the pass
     * left (rec_knob, rec_span); rec_ok once filled. */
    int *fw_knob, *rec_knob, rec_ok;
    double rec_budget, rec_span;
    long *d;              /* Duration of each AON node (units). */
    long *es, *ef, *ls, *lf;
    double *rt, *res, *rlf; /* Real-time CPM scratch. */
    int *knob;            /* Current knob of each node. */
    const kr_option **vopt; /* Each op's options (its group's set->opt; NULL: source, sink). */
    char *mark;           /* Source side of the cut (AOA nodes + 2). */
    kr__flow flow;
    int64_t *lb, *ub;     /* Per AOA arc (ops: n, edges: nedges). */
    int64_t *bal;         /* Node imbalance. */
    char *incut;          /* Arc in the cut graph. */
    /* Exact mode: persistent flow network (warm-started across steps). */
    int *opa, *depa, *sa, *ta; /* Arc ids: op arcs, dependency arcs, s → x, x → t (−1: none). */
    int64_t *ex;          /* Excess created by capacity cuts, per AOA node. */
    int *exl, nexl;       /* The nodes whose excess may be non-zero (N). */
    char *inexl;          /* Node is in exl (N). */
    char *cvis;           /* cancel_to_sink scratch: 1 on the path, 2 dead end (N + 2). */
    int *cpath;           /* cancel_to_sink scratch: the path's arcs (N + 2). */
    int *dirty, ndirty;   /* Ops whose duration changed since the last cut (their capacities). */
    char *isdirty;        /* Op is in dirty (n). */
    int net_ready;        /* 1 once the network is built. */
    int64_t sumlb;        /* Σ lb over the ops (the network's cut exceeds the step's by it). */
    int relax_only;       /* Model figures only (the bound's relaxation run): no knobs. */
    /* Window search scratch (see kr__bb_search, kr__round_window). */
    char *crit;           /* Op on the real critical path. */
    int *kbak;            /* Knobs before a search. */
    char *bfree;          /* Op free in the current window (source, sink: visited marks). */
    int *tpos;            /* Topological position of each node. */
    double *bbuf;         /* 3n doubles: durations, fixed-only heads, fixed-only tails. */
    int *bq;              /* Window BFS queue. */
    int *win_in, *win_out; /* Knobs entering and leaving the last window pass (n each). */
    int win_valid;
    int wops;             /* Ops per window (0: KR__WINDOW_OPS); at most KR__WINDOW_MAX. */
    long wnodes;          /* Search nodes per window (0: KR__WINDOW_NODES). */
} kr__solver;

/* Model cost of group g at duration d (units, within [dmin, dmax]). */
static inline double kr__gcost(const kr__group *g, long d)
{
    return g->cost[d - g->dmin];
}

/* Effective energy (energy − static power × time) of option k of op v's set. */
static inline double kr__opt_eff(const kr__solver *sv, int v, int k)
{
    return sv->groups[sv->gidx[v]].eff[k]; /* energy − P·time, computed once (costs.c) */
}

/* solver.c: allocates the state of sv (dag, opts, cfg set) and builds every used group. */
int kr__sv_setup(kr__solver *sv, kr_error *err);
void kr__sv_free(kr__solver *sv);
/* kr_solve; relax_only: exact mode without the fast end, the appended fastest plan, knobs
 * and a bound table (the relaxation run behind the bound). */
int kr__sv_solve(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out,
                 int relax_only, kr_error *err);

/* costs.c: the lowtime candidates and fit, or the exact hull; the Pareto options. */
int kr__cost_lowtime(kr__group *g, const kr_solver_config *cfg, kr_error *err);
int kr__cost_exact(kr__group *g, const kr_solver_config *cfg, kr_error *err);
int kr__cost_pareto(kr__group *g, double P, kr_error *err);

/* ltcut.c: one lowtime cut (1 with mark set, 0 if phase 1 is infeasible) and its duration
 * change (the cost change, INFINITY to stop). */
int kr__lt_cut(kr__solver *sv);
double kr__lt_apply(kr__solver *sv);

/* excut.c: the persistent network, one exact cut (nJ; >= KR__EX_INF / 2: none finite), its
 * duration change and the free-float relaxation (needs a fresh CPM). */
int kr__ex_build(kr__solver *sv);
int64_t kr__ex_cut(kr__solver *sv);
void kr__ex_apply(kr__solver *sv);
long kr__ex_relax(kr__solver *sv);

/* rounding.c: real-time critical path of sv->knob (rt, res and, if lf, latest finishes); the
 * final pass; the next slower (+1) / faster (−1) Pareto option or −1; the exchange pass; the
 * window pass (reusing the last result) and one sweep (every: windows on every op, not only
 * the critical ones); all the passes for a budget (span0: the real critical path of the
 * knobs, with rt and res from it, as kr__round_cpm just left them; returns the new one). */
double kr__round_cpm_lf(kr__solver *sv, double *lf);
double kr__round_cpm(kr__solver *sv);
/* Its forward half alone: earliest starts of the durations already in sv->rt into sv->res;
 * returns the makespan. */
double kr__round_forward(kr__solver *sv);
/* The same from topological position p0 on, for durations of which none before p0 changed
 * since es was filled (earlier starts stand): each start pulled from its predecessors (the
 * same sums and maxima, so the same doubles), span0 the largest finish before p0; pmax[i]
 * (if not NULL) gets the largest finish of positions 0 .. i. Returns the makespan. */
double kr__round_forward_from(kr__solver *sv, double *es, double *pmax, int p0, double span0);
/* The latest finishes of the durations in sv->rt against makespan span into lf (the backward
 * half of kr__round_cpm_lf). */
void kr__round_lf(kr__solver *sv, double *lf, double span);
int kr__round_final(kr__solver *sv, double span);
int kr__round_pareto_step(const kr__solver *sv, int v, int k, int dir);
int kr__round_speedup(kr__solver *sv, const int *list, int *pos, int nl, double tol, int pin);
void kr__round_exchange(kr__solver *sv, double budget);
void kr__round_window(kr__solver *sv, double budget);
void kr__round_sweep(kr__solver *sv, double budget, int every);
double kr__round_improve(kr__solver *sv, double span0, double budget);
int kr__step_polish(kr_solve_result *f, kr__solver *sv, kr_error *err);

/* bb.c: branch and bound over the ops marked in sv->bfree within `limit` nodes; applies the
 * best plan if it beats the current knobs and meets the budget. Returns 1 if it did. */
int kr__bb_search(kr__solver *sv, double budget, long limit);

/* steps.c: storing plans and steps, the fast end, the dominated flags. */
int kr__step_plan_push(kr_solve_result *f, const int *opt);
/* Stores every step's plan anew from P (nsteps × nops options, step by step); 0 or KR_ENOMEM. */
int kr__step_plans_rewrite(kr_solve_result *f, const int *P);
/* Whether the exchange passes (and, with polish 0, the polish) run on a graph of n_ops
 * instructions under cfg->exchange. */
static inline int kr__exchange_runs(const kr_solver_config *cfg, int n_ops)
{
    return cfg->exchange > 0 || (cfg->exchange == 0 && n_ops <= KR__EXCHANGE_MAX_OPS);
}
/* Records a step from durations d (sv->d, or a snapshot of it: see solver.c's recorder). */
int kr__step_push(kr_solve_result *f, kr__solver *sv, size_t *scap, double change, long T, const long *d,
                  kr_error *err);
void kr__step_figures(const kr__solver *sv, kr_solver_step *st, double span);
int kr__step_tail(kr_solve_result *f, kr__solver *sv, size_t *scap, kr_error *err);
int kr__step_fastest(kr_solve_result *f, kr__solver *sv, size_t *scap, kr_error *err);
int kr__step_mark_dominated(kr_solve_result *f, kr_error *err);

/* bound.c: runs the relaxation behind the lower bound and fills out's bound table and every
 * step's bound and gap. */
int kr__bound_attach(kr_solve_result *out, const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg,
                     kr_error *err);

#endif
