/*
 * geometry.c — 2-D time–energy geometry: Pareto filter with provenance, hypervolume,
 * staircase/linear interpolation and the lower convex hull (frontier.h).
 *
 * Design. Everything works in the plane (t, y) with y = energy − P·t (P = static power; 0 for
 * total energy) and minimises both coordinates.
 *   Pareto: sort by (t, y, input index) — O(n log n) — then one sweep keeping a point when its
 *     y is below the running minimum of every earlier (faster or equally fast) point by more
 *     than the tolerance. With tolerance 0 this is exactly "no other point is at least as good
 *     in both coordinates and better in one", with exact duplicates reduced to their first
 *     occurrence. The result is sorted by t ascending and therefore y strictly descending.
 *   Hypervolume: on the Pareto set of the points strictly inside the reference box, the
 *     dominated region is a staircase, so HV = Σ_i (t_{i+1} − t_i)(ref_y − y_i) with
 *     t_m = ref_t. Input that is already such a frontier skips the sort (O(n)).
 *   Hull: Andrew's monotone chain over the (already sorted) frontier, lower chain only.
 * Invariants checked on entry: finite coordinates; interpolation and hull require a frontier
 * (t strictly ascending, y strictly descending) and say which index breaks it.
 */
#include "kareus/frontier.h"

#include <math.h>
#include <stdlib.h>

#include "util/util.h"

typedef struct sorted_pt {
    double t, y;   /* plane coordinates */
    size_t idx;    /* input position (stable tie-break) */
    kr_fpoint p;   /* the original point, copied so that out may alias the input */
} sorted_pt;

static int cmp_sorted(const void *a, const void *b)
{
    const sorted_pt *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->y != y->y)
        return x->y < y->y ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int check_points(const kr_fpoint *pts, size_t n, const char *what, kr_error *err)
{
    if (n > 0 && pts == NULL)
        return kr_error_set(err, KR_EINVAL, "%s: points: expected an array, found NULL", what);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(pts[i].time_s) || !isfinite(pts[i].energy_j))
            return kr_error_set(err, KR_EINVAL, "%s: point %zu: expected finite time and energy, found (%g s, %g J)",
                                what, i, pts[i].time_s, pts[i].energy_j);
    return KR_OK;
}

/* Sorted copies of the points with plane coordinates; *out is malloc'ed (NULL when n = 0). */
static int sorted_copy(const kr_fpoint *pts, size_t n, double P, sorted_pt **out, kr_error *err)
{
    *out = NULL;
    if (n == 0)
        return KR_OK;
    sorted_pt *s = malloc(n * sizeof *s);
    if (s == NULL)
        return kr_error_set(err, KR_ENOMEM, "pareto: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++) {
        s[i].t = pts[i].time_s;
        s[i].y = pts[i].energy_j - P * pts[i].time_s;
        s[i].idx = i;
        s[i].p = pts[i];
    }
    qsort(s, n, sizeof *s, cmp_sorted);
    *out = s;
    return KR_OK;
}

/* Keeps the non-dominated entries of a sorted array in place; returns how many. */
static size_t sweep(sorted_pt *s, size_t n, double tol)
{
    size_t k = 0;
    double best = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (s[i].y < best - tol) /* the first point always passes: best is +inf */
            s[k++] = s[i];
        if (s[i].y < best)
            best = s[i].y;
    }
    return k;
}

int kr_frontier_pareto(const kr_fpoint *pts, size_t n, double static_power_w, double tol_j, kr_fpoint *out,
                       size_t *nout, kr_error *err)
{
    if (nout == NULL || (n > 0 && out == NULL))
        return kr_error_set(err, KR_EINVAL, "pareto: expected output arrays, found NULL");
    int rc = check_points(pts, n, "pareto", err);
    if (rc)
        return rc;
    if (!(tol_j >= 0) || !isfinite(static_power_w))
        return kr_error_set(err, KR_EINVAL, "pareto: expected tolerance >= 0 and a finite static power, found %g, %g",
                            tol_j, static_power_w);
    sorted_pt *s;
    if ((rc = sorted_copy(pts, n, static_power_w, &s, err)))
        return rc;
    size_t k = sweep(s, n, tol_j);
    for (size_t i = 0; i < k; i++)
        out[i] = s[i].p;
    *nout = k;
    free(s);
    return KR_OK;
}

/* 1 if pts is a frontier in the plane: t strictly ascending, y strictly descending. Sets *bad
 * to the first offending index otherwise. */
static int is_front(const kr_fpoint *pts, size_t n, double P, size_t *bad)
{
    for (size_t i = 1; i < n; i++) {
        double y0 = pts[i - 1].energy_j - P * pts[i - 1].time_s, y1 = pts[i].energy_j - P * pts[i].time_s;
        if (!(pts[i].time_s > pts[i - 1].time_s) || !(y1 < y0)) {
            *bad = i;
            return 0;
        }
    }
    return 1;
}

int kr_frontier_hypervolume(const kr_fpoint *pts, size_t n, double static_power_w, double ref_time_s,
                            double ref_y, double *hv, kr_error *err)
{
    if (hv == NULL)
        return kr_error_set(err, KR_EINVAL, "hypervolume: expected an output, found NULL");
    int rc = check_points(pts, n, "hypervolume", err);
    if (rc)
        return rc;
    if (!isfinite(ref_time_s) || !isfinite(ref_y) || !isfinite(static_power_w))
        return kr_error_set(err, KR_EINVAL, "hypervolume: expected a finite reference point, found (%g, %g)",
                            ref_time_s, ref_y);
    const double P = static_power_w;
    double area = 0;
    size_t bad;
    if (is_front(pts, n, P, &bad)) {
        /* Already a frontier: clip to the box and integrate the staircase directly. */
        for (size_t i = 0; i < n; i++) {
            double t = pts[i].time_s, y = pts[i].energy_j - P * t;
            if (t >= ref_time_s)
                break;
            if (y >= ref_y)
                continue;
            double t_next = i + 1 < n && pts[i + 1].time_s < ref_time_s ? pts[i + 1].time_s : ref_time_s;
            area += (t_next - t) * (ref_y - y);
        }
        *hv = area;
        return KR_OK;
    }
    sorted_pt *s;
    if ((rc = sorted_copy(pts, n, P, &s, err)))
        return rc;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].t < ref_time_s && s[i].y < ref_y)
            s[m++] = s[i];
    m = sweep(s, m, 0.0);
    for (size_t i = 0; i < m; i++) {
        double t_next = i + 1 < m ? s[i + 1].t : ref_time_s;
        area += (t_next - s[i].t) * (ref_y - s[i].y);
    }
    free(s);
    *hv = area;
    return KR_OK;
}

static int check_front(const kr_fpoint *front, size_t n, double P, const char *what, kr_error *err)
{
    if (n == 0 || front == NULL)
        return kr_error_set(err, KR_EINVAL, "%s: expected a non-empty frontier, found %s", what,
                            front == NULL ? "NULL" : "0 points");
    int rc = check_points(front, n, what, err);
    if (rc)
        return rc;
    size_t bad;
    if (!is_front(front, n, P, &bad))
        return kr_error_set(err, KR_EINVAL,
                            "%s: point %zu: expected a Pareto frontier sorted by time (time ascending, energy "
                            "descending; see kr_frontier_pareto), found (%g s, %g J) after (%g s, %g J)",
                            what, bad, front[bad].time_s, front[bad].energy_j, front[bad - 1].time_s,
                            front[bad - 1].energy_j);
    return KR_OK;
}

int kr_frontier_energy_at(const kr_fpoint *front, size_t n, double static_power_w, double time_s, kr_interp mode,
                          double *y_j, kr_error *err)
{
    const double P = static_power_w;
    int rc = check_front(front, n, P, "energy_at", err);
    if (rc)
        return rc;
    if (!isfinite(time_s) || (mode != KR_INTERP_STAIRCASE && mode != KR_INTERP_LINEAR) || y_j == NULL)
        return kr_error_set(err, KR_EINVAL, "energy_at: expected a finite time, a known mode and an output");
    if (time_s < front[0].time_s)
        return kr_error_set(err, KR_ERANGE, "energy_at: time %.9g s is faster than the fastest point (%.9g s)", time_s,
                            front[0].time_s);
    /* k = last point no slower than time_s (binary search; front[0] qualifies). */
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (front[mid].time_s <= time_s)
            lo = mid;
        else
            hi = mid - 1;
    }
    double yk = front[lo].energy_j - P * front[lo].time_s;
    if (mode == KR_INTERP_STAIRCASE || lo == n - 1 || front[lo].time_s == time_s) {
        *y_j = yk;
        return KR_OK;
    }
    double t0 = front[lo].time_s, t1 = front[lo + 1].time_s;
    double y1 = front[lo + 1].energy_j - P * t1;
    *y_j = yk + (y1 - yk) * (time_s - t0) / (t1 - t0);
    return KR_OK;
}

int kr_frontier_time_at(const kr_fpoint *front, size_t n, double static_power_w, double y_j, kr_interp mode,
                        double *time_s, kr_error *err)
{
    const double P = static_power_w;
    int rc = check_front(front, n, P, "time_at", err);
    if (rc)
        return rc;
    if (!isfinite(y_j) || (mode != KR_INTERP_STAIRCASE && mode != KR_INTERP_LINEAR) || time_s == NULL)
        return kr_error_set(err, KR_EINVAL, "time_at: expected a finite energy, a known mode and an output");
#define Y(i) (front[i].energy_j - P * front[i].time_s)
    if (y_j < Y(n - 1))
        return kr_error_set(err, KR_ERANGE, "time_at: energy %.9g J is below the most frugal point (%.9g J)", y_j,
                            Y(n - 1));
    /* k = first point with y <= y_j (y descends, so binary search). */
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (Y(mid) <= y_j)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (mode == KR_INTERP_STAIRCASE || lo == 0 || Y(lo) == y_j) {
        *time_s = front[lo].time_s;
        return KR_OK;
    }
    double ya = Y(lo - 1), yb = Y(lo), ta = front[lo - 1].time_s, tb = front[lo].time_s;
#undef Y
    *time_s = ta + (tb - ta) * (ya - y_j) / (ya - yb);
    return KR_OK;
}

int kr_frontier_lower_hull(const kr_fpoint *front, size_t n, double static_power_w, kr_fpoint *out, size_t *nout,
                           kr_error *err)
{
    const double P = static_power_w;
    int rc = check_front(front, n, P, "lower_hull", err);
    if (rc)
        return rc;
    if (out == NULL || nout == NULL)
        return kr_error_set(err, KR_EINVAL, "lower_hull: expected output arrays, found NULL");
    size_t h = 0;
    for (size_t i = 0; i < n; i++) {
        kr_fpoint p = front[i];
        double px = p.time_s, py = p.energy_j - P * p.time_s;
        while (h >= 2) {
            double ox = out[h - 2].time_s, oy = out[h - 2].energy_j - P * ox;
            double ax = out[h - 1].time_s, ay = out[h - 1].energy_j - P * ax;
            /* Keep a strict counter-clockwise turn; collinear middle points are dropped. */
            if ((ax - ox) * (py - oy) - (ay - oy) * (px - ox) > 0)
                break;
            h--;
        }
        out[h++] = p;
    }
    *nout = h;
    return KR_OK;
}
