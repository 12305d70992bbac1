/*
 * front2.c — small incremental 2-D frontiers for the acquisition functions of bo and artifact:
 * insertion with domination pruning, and the hypervolume improvement of one point, which the
 * strategies evaluate hundreds of thousands of times per batch (search_internal.h).
 *
 * The frontier is a staircase g(τ) = min{y_i : t_i ≤ τ} (clipped at the reference ry). The
 * improvement of (t, y) is ∫_t^{rt} max(0, g(τ) − y) dτ: start at the step in force at t
 * (binary search) and walk right until the staircase drops below y. Invariant: t strictly
 * ascending and y strictly descending.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

static int reserve(kr__front2 *f, int need)
{
    if (need <= f->cap)
        return KR_OK;
    int cap = need * 2 + 16;
    double *t = realloc(f->t, (size_t)cap * sizeof *t);
    if (t == NULL)
        return KR_ENOMEM;
    f->t = t;
    double *y = realloc(f->y, (size_t)cap * sizeof *y);
    if (y == NULL)
        return KR_ENOMEM;
    f->y = y;
    f->cap = cap;
    return KR_OK;
}

int kr__front2_add(kr__front2 *f, double t, double y)
{
    int k = 0;
    while (k < f->m && f->t[k] <= t)
        k++;
    if (k > 0 && f->y[k - 1] <= y)
        return KR_OK; /* a point no slower is no worse */
    int j = k;
    while (j < f->m && f->y[j] >= y)
        j++; /* slower and no better: dominated by the new point */
    if (reserve(f, f->m + 1))
        return KR_ENOMEM;
    memmove(f->t + k + 1, f->t + j, (size_t)(f->m - j) * sizeof *f->t);
    memmove(f->y + k + 1, f->y + j, (size_t)(f->m - j) * sizeof *f->y);
    f->t[k] = t;
    f->y[k] = y;
    f->m += 1 - (j - k);
    return KR_OK;
}

double kr__front2_hvi(const kr__front2 *f, double t, double y)
{
    if (t >= f->rt || y >= f->ry)
        return 0.0;
    int lo = 0, hi = f->m; /* first index with f->t > t */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    double cur = lo > 0 ? fmin(f->y[lo - 1], f->ry) : f->ry;
    double tau = t, area = 0;
    for (int i = lo; i < f->m && f->t[i] < f->rt && cur > y; i++) {
        area += (f->t[i] - tau) * (cur - y);
        tau = f->t[i];
        cur = fmin(cur, f->y[i]);
    }
    if (cur > y)
        area += (f->rt - tau) * (cur - y);
    return area;
}

double kr__front2_hv(const kr__front2 *f)
{
    double area = 0;
    for (int i = 0; i < f->m && f->t[i] < f->rt; i++) {
        if (f->y[i] >= f->ry)
            continue;
        double tn = i + 1 < f->m ? fmin(f->t[i + 1], f->rt) : f->rt;
        area += (tn - f->t[i]) * (f->ry - f->y[i]);
    }
    return area;
}

void kr__front2_set_ref(kr__front2 *f, double margin)
{
    double t0 = f->t[0], t1 = f->t[f->m - 1], y0 = f->y[f->m - 1], y1 = f->y[0];
    f->rt = t1 + margin * (t1 > t0 ? t1 - t0 : fabs(t1));
    f->ry = y1 + margin * (y1 > y0 ? y1 - y0 : fabs(y1) + 1e-12);
}

void kr__front2_free(kr__front2 *f)
{
    free(f->t);
    free(f->y);
    memset(f, 0, sizeof *f);
}
