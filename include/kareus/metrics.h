/*
 * metrics.h — the paper's comparison metrics on iteration-level frontiers.
 *
 * A frontier here is a list of plans' (iteration time, energy) pairs, whole cluster. The
 * definitions follow the artifact's compare_method.py (kareus-method.md §10.4):
 *   iso-time energy reduction   (E(P_t) − min{E(x) : T(x) ≤ T(P_t)}) / E(P_t), P_t = the
 *                               reference's fastest plan;
 *   iso-energy time reduction   (T(P_e) − min{T(x) : E(x) ≤ E(P_e)}) / T(P_e), P_e = the
 *                               reference's lowest-energy plan;
 *   max-throughput reduction    of the method's fastest plan against a single reference point
 *                               (Megatron), in time and in energy;
 * and "no plan qualifies" is a distinct result (the paper's "--"), never a number. The robust
 * figure compares the two lower envelopes E(t) = min{E(x) : T(x) ≤ t} at every iteration time
 * both frontiers reach (t ≥ the slower of the two fastest plans, up to the later of the two
 * slowest plans), sampled uniformly, and reports the mean and the maximum relative saving.
 */
#ifndef KAREUS_METRICS_H
#define KAREUS_METRICS_H

#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* A frontier (or any set of plans) as parallel arrays. */
typedef struct kr_tradeoff {
    int n;                 /* Plans. */
    const double *time_s;  /* Iteration time of each plan. */
    const double *energy_j;/* Energy of each plan (whole cluster). */
} kr_tradeoff;

/* Iso-time energy reduction of x against ref. KR_ENOTFOUND if no plan of x is as fast as ref's
 * fastest (*reduction untouched); KR_EINVAL for empty or non-finite input. */
int kr_metric_iso_time(const kr_tradeoff *ref, const kr_tradeoff *x, double *reduction, kr_error *err);

/* Iso-energy time reduction of x against ref; KR_ENOTFOUND if no plan of x uses as little energy
 * as ref's most frugal plan. */
int kr_metric_iso_energy(const kr_tradeoff *ref, const kr_tradeoff *x, double *reduction, kr_error *err);

/* Max-throughput reductions of x's fastest plan against a reference point (t_ref, e_ref):
 * (t_ref − T)/t_ref and (e_ref − E)/e_ref (ties on time: the lower energy). */
int kr_metric_max_throughput(double t_ref, double e_ref, const kr_tradeoff *x, double *time_reduction,
                             double *energy_reduction, kr_error *err);

/* Robust comparison: mean and max of (E_ref(t) − E_x(t)) / E_ref(t) over `samples` uniformly
 * spaced times in [lo, hi] (both returned). KR_ENOTFOUND if the range is empty. */
int kr_metric_robust(const kr_tradeoff *ref, const kr_tradeoff *x, int samples, double *mean, double *max,
                     double *lo_s, double *hi_s, kr_error *err);

/* Lower envelope of a set of plans at time t: min{E : T ≤ t}; +inf when no plan is that fast. */
double kr_metric_energy_at(const kr_tradeoff *x, double t);

/*
 * The artifact's 10-point frontier (create_frontier.sh, kareus-method.md §6): given n plans
 * indexed by solver step (0 = slowest … n−1 = fastest), stride = ceil(n/15); sample n−1,
 * n−1−stride, … (at most 15, not below 0), sort ascending and drop sample positions 0, 2, 4, 6, 8.
 * Writes the chosen step indices ascending into out (cap ≥ 15) and returns their count.
 */
int kr_select_artifact10(int n, int *out, int cap);

KR_END_DECLS
#endif
