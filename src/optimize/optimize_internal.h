/*
 * optimize_internal.h — what the files of the optimize module share (not public API): the
 * Kareus iteration frontier as the union of its own solver steps and N+P's (union.c).
 */
#ifndef KR_OPTIMIZE_INTERNAL_H
#define KR_OPTIMIZE_INTERNAL_H

#include "kareus/optimize.h"
#include "kareus/plan.h"

/* Where a step of the Kareus frontier comes from. */
enum { KR__SRC_OWN = 0, KR__SRC_NP = 1 };

/* Kareus's steps ∪ N+P's undominated steps. */
typedef struct kr__union {
    kr_solve_result u; /* the union's steps (renumbered 0..n-1, dominated flags recomputed); no
                          plans stored:
                          kr_solve_select works on it, kr_solve_plan does not */
    int *src;          /* per step: KR__SRC_OWN or KR__SRC_NP (owned) */
    int *src_step;     /* per step: its step in its source frontier (owned) */
    int own;           /* steps from Kareus's own frontier */
} kr__union;

/*
 * The union of frontiers own (Kareus's) and np (Nanobatching+Perseus's; may be NULL): every step
 * of own in its order, and the steps of np that no step of either dominates on (knob time,
 * energy; an equal pair keeps Kareus's own) merged in by time, slowest first; dominated flags
 * recomputed when np adds a step. Returns KR_OK or KR_ENOMEM. Free with kr__union_free.
 */
int kr__union_build(const kr_solve_result *own, const kr_solve_result *np, kr__union *out, kr_error *err);
void kr__union_free(kr__union *u);

/*
 * Turns plan, a Nanobatching+Perseus plan (its comm settings: NCCL's default CTAs at the
 * partition start), into the same execution as a Kareus plan: method and variant "kareus", and
 * every setting of a partition with a collective on the NCCL kernel (kr_comm_setting.kernel),
 * which is how the kareus variant names that execution. Returns KR_OK or the catalog's error.
 */
int kr__union_np_plan(kr_plan *plan, const kr_job *job, kr_error *err);

/* The paper's figures (o->rows) and the largest prediction errors of o's methods (metrics.c). */
void kr__optimize_metrics(kr_optimize_result *o);

#endif
