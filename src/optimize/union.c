/*
 * union.c — the Kareus iteration frontier of `kareus optimize` (issue 31): the Pareto front of
 * Kareus's own solver steps and Nanobatching+Perseus's.
 *
 * Kareus's partition space holds N+P's execution at every clock (search: the baseline's
 * execution), so Kareus's options hold N+P's; but the solver's frontier is a heuristic trace
 * (time quantised to its unit, the exact model's convex hull), so at some iteration times
 * Kareus's trace may land above N+P's. A step of N+P is a real plan Kareus's runtime executes —
 * the kareus variant with every collective on NCCL at its default CTAs, launched at partition
 * start (kr__union_np_plan) — so the frontier Kareus offers is the union: Kareus's steps, all
 * of them and in their order, with N+P's steps that no step of either dominates merged in by
 * time, and the solver's dominated flags recomputed over the whole (selection rules pick from
 * the undominated steps). At every iteration time N+P reaches, Kareus then offers no more
 * energy. When N+P adds nothing, the union is Kareus's own frontier exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/backend.h"
#include "optimize_internal.h"
#include "util/util.h"

typedef struct cand {
    double t, e;
    int src, step;
    int front; /* 1: on the Pareto front of the union */
} cand;

/* Time ascending, then energy, then Kareus's own first, then step: the sweep's order. */
static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

void kr__union_free(kr__union *u)
{
    if (u == NULL)
        return;
    kr_solve_result_free(&u->u);
    free(u->src);
    free(u->src_step);
    memset(u, 0, sizeof *u);
}

/* Marks c[i].front for the candidates on the Pareto front of all of them (an equal pair keeps
 * Kareus's own, then the earlier step). c is sorted by cmp_cand on return. */
static void mark_front(cand *c, int n)
{
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        c[i].front = c[i].e < best;
        best = fmin(best, c[i].e);
    }
}

/* The solver's dominated flag over steps[0..n): another step no slower and with less energy,
 * or equal in both and earlier. */
static void mark_dominated(kr_solver_step *steps, int n, cand *tmp)
{
    for (int i = 0; i < n; i++)
        tmp[i] = (cand){steps[i].knob_time_s, steps[i].energy_j, 0, i, 0};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_cand);
    double best = INFINITY; /* least energy of the earlier groups of equal (time, energy) */
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && tmp[j].t == tmp[i].t && tmp[j].e == tmp[i].e)
            j++;
        for (int k = i; k < j; k++)
            steps[tmp[k].step].dominated = k > i || best < tmp[i].e;
        best = fmin(best, tmp[i].e);
        i = j;
    }
}

int kr__union_build(const kr_solve_result *own, const kr_solve_result *np, kr__union *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int n = own->nsteps + (np ? np->nsteps : 0);
    cand *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    out->u = *own;
    out->u.plan_snap = NULL;
    out->u.plan_off = NULL;
    out->u.plan_chg = NULL;
    out->u.plan_last = NULL;
    out->u.bound_min = NULL;
    out->u.nbound = 0;
    memset(out->u.plan_cap, 0, sizeof out->u.plan_cap);
    out->u.steps = malloc(sizeof *out->u.steps * (size_t)(n > 0 ? n : 1));
    out->src = malloc(sizeof *out->src * (size_t)(n > 0 ? n : 1));
    out->src_step = malloc(sizeof *out->src_step * (size_t)(n > 0 ? n : 1));
    if (c == NULL || out->u.steps == NULL || out->src == NULL || out->src_step == NULL) {
        free(c);
        kr__union_free(out);
        return kr_error_set(err, KR_ENOMEM, "optimize: out of memory");
    }
    int k = 0;
    for (int src = 0; src < 2; src++) {
        const kr_solve_result *f = src == KR__SRC_OWN ? own : np;
        for (int i = 0; f && i < f->nsteps; i++)
            c[k++] = (cand){f->steps[i].knob_time_s, f->steps[i].energy_j, src, i, 0};
    }
    mark_front(c, k);
    /* N+P's steps on the front, fastest last: merged into Kareus's steps (kept whole, in their
     * order) before the first of Kareus's that is faster. */
    int nn = 0;
    for (int i = 0; i < k; i++) /* in place: nn <= i */
        if (c[i].front && c[i].src == KR__SRC_NP)
            c[nn++] = c[i];
    for (int i = 0; i < nn / 2; i++) {
        cand t = c[i];
        c[i] = c[nn - 1 - i];
        c[nn - 1 - i] = t;
    }
    int m = 0, j = 0;
    for (int i = 0; i <= own->nsteps; i++) {
        for (; j < nn && (i == own->nsteps || c[j].t > own->steps[i].knob_time_s); j++) {
            out->u.steps[m] = np->steps[c[j].step];
            out->src[m] = KR__SRC_NP;
            out->src_step[m++] = c[j].step;
        }
        if (i < own->nsteps) {
            out->u.steps[m] = own->steps[i];
            out->src[m] = KR__SRC_OWN;
            out->src_step[m++] = i;
        }
    }
    for (int i = 0; i < m; i++)
        out->u.steps[i].step = i;
    out->u.nsteps = m;
    out->own = own->nsteps;
    if (nn > 0)
        mark_dominated(out->u.steps, m, c);
    free(c);
    return KR_OK;
}

int kr__union_np_plan(kr_plan *plan, const kr_job *job, kr_error *err)
{
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return kr_error_set(err, KR_ENOMEM, "optimize: out of memory");
    int rc = kr_partition_catalog(job, KR_VARIANT_KAREUS, set, err);
    for (int s = 0; rc == KR_OK && s < plan->num_stages; s++)
        for (int i = 0; i < plan->stages[s].ninstr; i++) {
            kr_plan_instr *in = &plan->stages[s].instr[i];
            for (int c = 0; c < in->ncomm; c++) {
                const kr_partition *p = kr_partition_find(set, in->comm[c].key);
                if (p && p->coll.kind != KR_COLL_NONE)
                    in->comm[c].kernel = KR_KERNEL_NCCL;
            }
        }
    free(set);
    if (rc == KR_OK) {
        kr__strlcpy(plan->method, kr_method_slug(KR_METHOD_KAREUS), sizeof plan->method);
        kr__strlcpy(plan->variant, kr_variant_name(KR_VARIANT_KAREUS), sizeof plan->variant);
    }
    return rc;
}
