/*
 * milp_ref.h — the exact reference for the frontier solver (issue 15): the mixed-integer
 * program "one measured option per instruction on the same DAG, makespan at most a deadline,
 * minimum whole-cluster energy", solved with CBC (COIN-OR, a Debian package; CMake defines
 * KR_HAVE_CBC when it finds it). Shared by tests/test_solver.c and bench/bench_solver.c.
 *
 * Formulation, for DAG nodes v (instructions v >= 2 with options o: time t_vo, energy E_vo on
 * one GPU, static included), start times s_v >= 0 and the makespan M:
 *   min  G · ( Σ_v Σ_o (E_vo − P·t_vo) x_vo + P·S·M )
 *   s.t. Σ_o x_vo = 1                                   (one option per instruction)
 *        s_v − s_u − Σ_o t_uo x_uo >= lag_e             (every edge e = u → v)
 *        M − s_v − Σ_o t_vo x_vo >= 0                   (every node)
 *        M <= deadline,   x_vo ∈ {0, 1}
 * which is Σ option energy + P·(S·M − Σ times) per GPU, the accounting of solver.h.
 */
#ifndef KR_MILP_REF_H
#define KR_MILP_REF_H

#include <math.h>
#include <stdlib.h>

#include "kareus/kareus.h"

/* The options of the first S stages of src (chunks and comm settings dropped: 1F1B only). */
static inline int kr_test_first_stages(const kr_options *src, int S, kr_options *dst)
{
    kr_error e = {0};
    if (kr_options_init(dst, S, 1, &e))
        return -1;
    for (int s = 0; s < S; s++)
        for (int k = 0; k < 2; k++) {
            const kr_option_set *set = kr_options_get(src, s, (kr_instr_kind)k, 0);
            for (int i = 0; set && i < set->n; i++)
                if (kr_options_add(dst, s, (kr_instr_kind)k, 0, &set->opt[i], NULL, 0, &e))
                    return -1;
        }
    return 0;
}

#ifdef KR_HAVE_CBC
/* CBC's headers test an undefined macro (-Wundef); they are not ours to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <Cbc_C_Interface.h>
#pragma GCC diagnostic pop

/* 1 if option i of set is dominated in (time, effective energy) by another (ties: the later
 * one of two equal options is dropped). Dropping dominated options keeps the optimum: the
 * dominating option is no slower (the makespan cannot grow) and no dearer. */
static inline int kr_test_dominated(const kr_option_set *set, int i, double P)
{
    double ti = set->opt[i].time_s, ei = set->opt[i].energy_j - P * ti;
    for (int j = 0; j < set->n; j++) {
        double tj = set->opt[j].time_s, ej = set->opt[j].energy_j - P * tj;
        if (j != i && tj <= ti && ej <= ei && (tj < ti || ej < ei || j < i))
            return 1;
    }
    return 0;
}

/*
 * Solves the program above for one deadline (dominated options left out, see above).
 * cutoff_j (INFINITY: none) is an energy some plan meeting the deadline achieves; CBC then
 * prunes everything above it. frac_gap: CBC stops when its incumbent is within this fraction
 * of its lower bound (1e-9: proven optimum). Fills [*lo_j, *hi_j] ∋ the optimum (hi: CBC's
 * incumbent, INFINITY without one) and, when choice is not NULL, the incumbent's options.
 * Returns 1 when CBC finished (optimal within frac_gap), 0 when infeasible (or nothing is
 * below the cutoff), −1 when it stopped at max_s.
 */
static inline int kr_test_milp(const kr_dag *d, const kr_options *o, double P, int G, double deadline_s,
                               double cutoff_j, double max_s, double frac_gap, double *lo_j, double *hi_j,
                               int *choice)
{
    int n = d->n, S = o->num_stages;
    Cbc_Model *m = Cbc_newModel();
    Cbc_setLogLevel(m, 0);
    int *first = malloc(sizeof(int) * (size_t)(n + 1));
    /* Time windows with every op at its fastest option: hd[v] the longest path from the source
     * to v's start, tl[v] from v's end to the sink. An option o of v with hd + t_vo + tl >
     * deadline fits no plan meeting it, so its column is fixed at 0, and s_v lies in
     * [hd[v], deadline − tl[v] − tmin_v]. Both only remove what no feasible plan uses, so the
     * optimum stays; they tighten the LP (the slow hull part of near-critical ops goes) and
     * let CBC prove far more deadlines (issue 15). */
    double *hd = calloc((size_t)n * 3, sizeof(double)), *tl = hd + n, *tmin = hd + 2 * n;
    for (int v = 2; v < n; v++) {
        const kr_option_set *set = kr_options_get(o, d->node[v].stage, d->node[v].kind, d->node[v].chunk);
        tmin[v] = INFINITY;
        for (int i = 0; i < set->n; i++)
            tmin[v] = fmin(tmin[v], set->opt[i].time_s);
    }
    for (int i = 0; i < n; i++) {
        int v = d->topo[i];
        for (int k = d->out_off[v]; k < d->out_off[v + 1]; k++) {
            int e = d->out_e[k];
            hd[d->ev[e]] = fmax(hd[d->ev[e]], hd[v] + tmin[v] + d->lag_s[e]);
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        int v = d->topo[i];
        for (int k = d->out_off[v]; k < d->out_off[v + 1]; k++) {
            int e = d->out_e[k];
            tl[v] = fmax(tl[v], d->lag_s[e] + tmin[d->ev[e]] + tl[d->ev[e]]);
        }
    }
    double slack = 1e-9 * (1 + deadline_s);
    /* Columns: x_vo per instruction and option, then s_v per node, then M. */
    int nc = 0;
    for (int v = 0; v < n; v++) {
        first[v] = nc;
        if (v >= 2) {
            const kr_option_set *set = kr_options_get(o, d->node[v].stage, d->node[v].kind, d->node[v].chunk);
            for (int i = 0; i < set->n; i++) {
                const kr_option *op = &set->opt[i];
                /* A dominated option, or one that cannot meet the deadline, is a column fixed
                 * at 0 (keeps the indexing simple). */
                int out = kr_test_dominated(set, i, P) || hd[v] + op->time_s + tl[v] > deadline_s + slack;
                Cbc_addCol(m, "", 0, out ? 0 : 1, G * (op->energy_j - P * op->time_s), 1, 0, NULL, NULL);
                nc++;
            }
        }
    }
    first[n] = nc;
    int s0 = nc;
    for (int v = 0; v < n; v++)
        Cbc_addCol(m, "", fmin(hd[v], deadline_s), fmax(hd[v], deadline_s - tl[v] - tmin[v] + slack), 0, 0, 0, NULL, NULL);
    int Mc = s0 + n;
    Cbc_addCol(m, "", 0, deadline_s, G * P * S, 0, 0, NULL, NULL);
    int cap = 8 + 2 * (nc + n);
    int *idx = malloc(sizeof(int) * (size_t)cap);
    double *val = malloc(sizeof(double) * (size_t)cap);
    for (int v = 2; v < n; v++) {
        int k = 0;
        for (int c = first[v]; c < first[v + 1]; c++) {
            idx[k] = c;
            val[k++] = 1;
        }
        Cbc_addRow(m, "", k, idx, val, 'E', 1);
    }
    /* Σ_o t_vo x_vo of node v appended to a row with coefficient sign. */
#define KR__DUR_TERMS(v, sign)                                                                                 \
    do {                                                                                                       \
        if ((v) >= 2) {                                                                                        \
            const kr_option_set *set_ = kr_options_get(o, d->node[v].stage, d->node[v].kind, d->node[v].chunk); \
            for (int i_ = 0; i_ < set_->n; i_++) {                                                             \
                idx[k] = first[v] + i_;                                                                        \
                val[k++] = (sign) * set_->opt[i_].time_s;                                                      \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)
    for (int e = 0; e < d->nedges; e++) {
        int u = d->eu[e], v = d->ev[e], k = 0;
        idx[k] = s0 + v;
        val[k++] = 1;
        idx[k] = s0 + u;
        val[k++] = -1;
        KR__DUR_TERMS(u, -1.0);
        Cbc_addRow(m, "", k, idx, val, 'G', d->lag_s[e]);
    }
    for (int v = 0; v < n; v++) {
        int k = 0;
        idx[k] = Mc;
        val[k++] = 1;
        idx[k] = s0 + v;
        val[k++] = -1;
        KR__DUR_TERMS(v, -1.0);
        Cbc_addRow(m, "", k, idx, val, 'G', 0);
    }
#undef KR__DUR_TERMS
    Cbc_setAllowableFractionGap(m, frac_gap);
    Cbc_setAllowableGap(m, 1e-9);
    Cbc_setMaximumSeconds(m, max_s);
    if (isfinite(cutoff_j))
        Cbc_setCutoff(m, cutoff_j * (1 + 1e-9) + 1e-9);
    Cbc_setParameter(m, "threads", "1");
    (void)Cbc_solve(m);
    int rc;
    *lo_j = Cbc_getBestPossibleObjValue(m);
    *hi_j = Cbc_getColSolution(m) != NULL && Cbc_getObjValue(m) < 1e29 ? Cbc_getObjValue(m) : INFINITY;
    /* The incumbent's option per instruction (node v ≥ 2 at choice[v − 2]; −1 without one). */
    const double *x = Cbc_getColSolution(m);
    for (int v = 2; choice && v < n; v++) {
        choice[v - 2] = -1;
        for (int c = first[v]; x && isfinite(*hi_j) && c < first[v + 1]; c++)
            if (x[c] > 0.5)
                choice[v - 2] = c - first[v];
    }
    if (Cbc_isProvenOptimal(m)) {
        rc = 1;
        *lo_j = fmin(*lo_j, *hi_j);
    } else if (Cbc_isProvenInfeasible(m)) {
        rc = 0;
    } else {
        rc = -1;
    }
    free(first);
    free(hd);
    free(idx);
    free(val);
    Cbc_deleteModel(m);
    return rc;
}
#endif
#endif
