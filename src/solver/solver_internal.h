/*
 * solver_internal.h — internal pieces of the solver module shared by its files and its tests:
 * CPython-compatible float floor division, lowtime's candidate filtering and exponential
 * fit (a Levenberg–Marquardt least-squares solver following MINPACK's lmdif), and an integer
 * max-flow (Dinic) with source-side reachability.
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

typedef struct kr__flow {
    int n, m, ncap, mcap;  /* Nodes, arcs (each with its reverse at id^1). */
    int *head, *next;      /* Arc target and adjacency list link. */
    int64_t *cap;          /* Residual capacity of each arc. */
    int *first;            /* First arc of each node (-1). */
    int *level, *iter, *queue;
    int *seen, nseen;      /* The last BFS's nodes in visiting order (its queue): only their
                              labels are reset by the next one, so a phase costs what it visits,
                              not the whole node count. */
} kr__flow;

int kr__flow_reset(kr__flow *f, int n, int m_hint);
void kr__flow_free(kr__flow *f);
/* Adds u → v with capacity c (and its reverse with 0); returns the arc id (even). */
int kr__flow_arc(kr__flow *f, int u, int v, int64_t c);
/* Removes the arcs added after the first m_old arcs (most recent first). */
void kr__flow_pop(kr__flow *f, int m_old);
/* Augments a maximum flow from s to t on the current residual capacities; returns its value. */
int64_t kr__flow_max(kr__flow *f, int s, int t);
/* A maximum flow as kr__flow_max, then the source side of the source-minimal minimum cut in
 * mark[] (1/0): what kr__flow_reach(f, s, 0, mark) gives, without walking the graph again. */
int64_t kr__flow_min_cut(kr__flow *f, int s, int t, char *mark);
/* Marks in mark[] (1/0) the nodes reachable from s through arcs with residual > thresh. */
void kr__flow_reach(const kr__flow *f, int s, int64_t thresh, char *mark);

#endif
