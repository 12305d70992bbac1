/*
 * costs.c — the cost table of each option set the tracer steps on: lowtime's fitted
 * exponential over its quantized candidates (shared/reference/lowtime-solver.md §4), or the
 * exact model's lower convex hull of the real options at their quantized times, with the
 * cheapest real option for every duration; and the options on the real (time, effective
 * energy) Pareto front that the rounding passes choose from.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "solver/solver_internal.h"
#include "util/util.h"

static const char *set_name(const kr_option_set *set, char *buf, size_t cap)
{
    snprintf(buf, cap, "stage %d %s (chunk %d)", set->stage, kr_instr_kind_name(set->kind), set->chunk);
    return buf;
}

/* lowtime: candidates, fit, cost table over [min, max] and knob per duration. */
int kr__cost_lowtime(kr__group *g, const kr_solver_config *cfg, kr_error *err)
{
    char nm[64];
    int rc = kr__lt_filter(g->set, cfg->unit_time_s, cfg->static_power_w, &g->lt, err);
    if (rc == KR_OK)
        rc = kr__lt_fit(&g->lt, cfg->unit_time_s, err);
    if (rc) {
        kr_error_prefix(err, "%s", set_name(g->set, nm, sizeof nm));
        return rc;
    }
    g->dmin = g->lt.min_duration;
    g->dmax = g->lt.max_duration;
    size_t len = (size_t)(g->dmax - g->dmin + 1);
    g->cost = malloc(sizeof(double) * len);
    g->knob = malloc(sizeof(int) * len);
    if (g->cost == NULL || g->knob == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (long t = g->dmin; t <= g->dmax; t++) {
        g->cost[t - g->dmin] = kr__lt_cost(&g->lt, t);
        /* Knob: the candidate with the largest quant_time <= t (candidates sorted descending). */
        int k = g->lt.ncand - 1;
        for (int i = 0; i < g->lt.ncand; i++)
            if (g->lt.cand[i].quant_time <= t) {
                k = i;
                break;
            }
        g->knob[t - g->dmin] = g->lt.cand[k].index;
    }
    return KR_OK;
}

/* exact, first half: each option's quantized time q and effective energy e, and the lower
 * convex hull of the points (q, e) in hull[0 .. h); returns h. */
static int exact_hull(const kr_option_set *set, const kr_solver_config *cfg, long *q, double *e, int *ord, int *hull)
{
    int n = set->n;
    for (int i = 0; i < n; i++) {
        /* Round down as lowtime does (forgiving representation error: 0.042 s / 1 ms is 42).
         * Measured against rounding up or to nearest, rounding down gave the best true
         * frontiers (brute force and lowtime comparisons in tests/test_solver.c); the times
         * reported are always the knobs' real critical path, never the quantized one. */
        q[i] = (long)floor(set->opt[i].time_s / cfg->unit_time_s + 1e-9);
        if (q[i] < 1)
            q[i] = 1;
        e[i] = set->opt[i].energy_j - cfg->static_power_w * set->opt[i].time_s;
        ord[i] = i;
    }
    /* Sort by (q, e) ascending. */
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        while (j >= 0 && (q[ord[j]] > q[x] || (q[ord[j]] == q[x] && e[ord[j]] > e[x]))) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    /* Pareto staircase (strictly decreasing e with increasing q), then the lower hull. */
    int h = 0;
    for (int k = 0; k < n; k++) {
        int i = ord[k];
        if (h > 0 && (q[i] == q[hull[h - 1]] || e[i] >= e[hull[h - 1]]))
            continue;
        while (h >= 2) {
            int a = hull[h - 2], b = hull[h - 1];
            /* Drop b if it lies on or above the segment a → i. */
            double cross = (double)(q[b] - q[a]) * (e[i] - e[a]) - (e[b] - e[a]) * (double)(q[i] - q[a]);
            if (cross <= 0)
                h--;
            else
                break;
        }
        hull[h++] = i;
    }
    return h;
}

/* exact, second half: the cost tables of g over [dmin, dmax] from the hull (see above). */
static int exact_tables(kr__group *g, const long *q, const double *e, const int *hull, int h, kr_error *err)
{
    int n = g->set->n;
    g->dmin = q[hull[0]];
    g->dmax = q[hull[h - 1]];
    size_t len = (size_t)(g->dmax - g->dmin + 1);
    g->cost = malloc(sizeof(double) * len);
    g->icost = malloc(sizeof(int64_t) * len);
    g->knob = malloc(sizeof(int) * len);
    if (!g->cost || !g->icost || !g->knob)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    int seg = 0;
    for (long t = g->dmin; t <= g->dmax; t++) {
        while (seg + 1 < h && q[hull[seg + 1]] < t)
            seg++;
        double c;
        if (h == 1 || t == q[hull[seg]])
            c = e[hull[seg]];
        else {
            int a = hull[seg], b = hull[seg + 1];
            c = e[a] + (e[b] - e[a]) * (double)(t - q[a]) / (double)(q[b] - q[a]);
        }
        g->cost[t - g->dmin] = c;
        /* Integer costs exactly linear on each hull segment (slope rounded once), so the
         * capacities stay constant between vertices and the warm-started flow stays valid. */
        if (t == g->dmin)
            g->icost[0] = llround(c * KR__EX_SCALE);
        else {
            int a = hull[seg], b = hull[seg + 1 < h ? seg + 1 : seg];
            int64_t slope = b == a ? 0 : llround((e[b] - e[a]) / (double)(q[b] - q[a]) * KR__EX_SCALE);
            g->icost[t - g->dmin] = g->icost[t - 1 - g->dmin] + slope;
        }
        /* Cheapest real option that fits in t units. */
        int best = -1;
        for (int i = 0; i < n; i++)
            if (q[i] <= t && (best < 0 || e[i] < e[best]))
                best = i;
        g->knob[t - g->dmin] = best;
    }
    return KR_OK;
}

/* exact: lower convex hull of (ceil(time/unit), effective energy); cheapest option per d. */
int kr__cost_exact(kr__group *g, const kr_solver_config *cfg, kr_error *err)
{
    int n = g->set->n;
    long *q = malloc(sizeof(long) * (size_t)n);
    double *e = malloc(sizeof(double) * (size_t)n);
    int *ord = malloc(sizeof(int) * (size_t)n);
    int *hull = malloc(sizeof(int) * (size_t)n);
    int rc = KR_OK;
    if (!q || !e || !ord || !hull)
        rc = kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    else
        rc = exact_tables(g, q, e, hull, exact_hull(g->set, cfg, q, e, ord, hull), err);
    free(q);
    free(e);
    free(ord);
    free(hull);
    return rc;
}

/* The options on the real (time, effective energy) Pareto front, time ascending: the final
 * pass picks the slowest of them that fits, which is the cheapest option that fits. */
int kr__cost_pareto(kr__group *g, double P, kr_error *err)
{
    const kr_option_set *set = g->set;
    int n = set->n;
    g->par = malloc(sizeof(int) * (size_t)n);
    if (g->par == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    int *ord = g->par;
    for (int i = 0; i < n; i++)
        ord[i] = i;
    /* Sort by time ascending, then effective energy ascending (insertion sort: n is small). */
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        double tx = set->opt[x].time_s, ex = set->opt[x].energy_j - P * tx;
        while (j >= 0) {
            double tj = set->opt[ord[j]].time_s, ej = set->opt[ord[j]].energy_j - P * tj;
            if (tj < tx || (tj == tx && ej <= ex))
                break;
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        double e = set->opt[ord[i]].energy_j - P * set->opt[ord[i]].time_s;
        if (k > 0 && !(e < set->opt[ord[k - 1]].energy_j - P * set->opt[ord[k - 1]].time_s))
            continue;
        ord[k++] = ord[i];
    }
    g->npar = k;
    /* The rounding passes' tables, in the same block as par (freed with it): the Pareto
     * options' times and effective energies, and every option's effective energy (the same
     * expression as above, so the same doubles). */
    size_t ib = ((sizeof(int) * 2 * (size_t)(n > 0 ? n : 1) + sizeof(double) - 1) / sizeof(double)) * sizeof(double);
    char *blk = realloc(g->par, ib + sizeof(double) * (2 * (size_t)k + (size_t)n));
    if (blk == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    g->par = (int *)blk;
    g->ppos = g->par + n;
    g->par_t = (double *)(blk + ib);
    g->par_e = g->par_t + k;
    g->eff = g->par_e + k;
    for (int i = 0; i < k; i++) {
        g->par_t[i] = set->opt[g->par[i]].time_s;
        g->par_e[i] = set->opt[g->par[i]].energy_j - P * set->opt[g->par[i]].time_s;
    }
    for (int i = 0; i < n; i++) {
        g->eff[i] = set->opt[i].energy_j - P * set->opt[i].time_s;
        /* The last Pareto option no slower than option i (0 if none): binary search on the
         * ascending times, so sets of thousands of options cost n·log k at setup. */
        int lo = 1, hi = k - 1, j = 0;
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            if (g->par_t[mid] <= set->opt[i].time_s) {
                j = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        g->ppos[i] = j;
    }
    return KR_OK;
}
