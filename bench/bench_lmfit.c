/*
 * bench_lmfit.c — the least-squares fits the lowtime cost model makes, a·exp(b·t) + c over every
 * (stage, instruction) of the golden specs (tests/golden/lowtime/spec_S2_M8_u{1ms,0.1ms}.json,
 * which hold scipy's fitted a, b, c), from each of the 54 starting points of lowtime's grid
 * (a × b × c: 3 × 6 × 3), through kr__lm_minimize (src/solver/lmfit.c) and through libcminpack's
 * lmdif called directly. Prints the largest relative deviation from scipy's fit (best start by
 * mean squared error, a >= 0), function evaluations, CPU time of the whole grid, and the
 * per-start difference between the two. Until commit a71ac77 (this bench's first version)
 * kr__lm_minimize was our own lmdif port; docs/solver.md ("Least squares") has the figures that
 * led to using libcminpack.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/solver_internal.h"
#include "util/util.h"

#ifdef KR_HAVE_CMINPACK
#include <cminpack.h>
#endif

#define MAXC 64
#define REPEATS 200

typedef struct prob {
    int m;
    double t[MAXC], y[MAXC];
    double a, b, c; /* scipy's fit (golden) */
} prob;

static int resid(void *ud, int m, int n, const double *x, double *f)
{
    (void)n;
    const prob *p = ud;
    for (int i = 0; i < m; i++)
        f[i] = (x[0] * exp(x[1] * p->t[i]) + x[2]) - p->y[i];
    return 0;
}

#ifdef KR_HAVE_CMINPACK
static int resid_cm(void *ud, int m, int n, const double *x, double *f, int iflag)
{
    (void)iflag;
    return resid(ud, m, n, x, f);
}

static int cm_minimize(prob *p, double *x, int *nfev)
{
    int m = p->m, n = 3, ipvt[3];
    double fvec[MAXC], diag[3], fjac[MAXC * 3], qtf[3], wa1[3], wa2[3], wa3[3], wa4[MAXC];
    return lmdif(resid_cm, p, m, n, x, fvec, 1.49012e-8, 1.49012e-8, 0.0, 50000, 0.0, diag, 1, 100.0, 0, nfev, fjac,
                 m, ipvt, qtf, wa1, wa2, wa3, wa4);
}
#endif

static int ours_minimize(prob *p, double *x, int *nfev)
{
    kr__lm_opts o = {1.49012e-8, 1.49012e-8, 0.0, 50000, 0.0, 100.0};
    return kr__lm_minimize(resid, p, p->m, 3, x, &o, nfev, NULL, NULL);
}

typedef int (*minimizer)(prob *p, double *x, int *nfev);

static double mse(const prob *p, const double *x)
{
    double s = 0;
    for (int i = 0; i < p->m; i++) {
        double d = p->y[i] - (x[0] * exp(x[1] * p->t[i]) + x[2]);
        s += d * d;
    }
    return s / p->m;
}

/* lowtime's grid of starts; xs[54][3] receives each start's result; returns the best start. */
static int grid(minimizer fn, prob *p, double unit, double xs[54][3], long *nfev_total)
{
    static const double ag[3] = {1e1, 1e2, 1e3}, cg[3] = {1e1, 1e2, 1e3};
    static const double bk[6] = {0.01, 0.02, 0.03, 0.04, 0.05, 0.1};
    int k = 0, best = -1;
    double bmse = INFINITY;
    for (int ia = 0; ia < 3; ia++)
        for (int ib = 0; ib < 6; ib++)
            for (int ic = 0; ic < 3; ic++, k++) {
                double *x = xs[k];
                x[0] = ag[ia];
                x[1] = -bk[ib] * unit / 0.001;
                x[2] = cg[ic];
                int nfev = 0;
                fn(p, x, &nfev);
                *nfev_total += nfev;
                double e = mse(p, x);
                if (x[0] >= 0 && e < bmse) {
                    bmse = e;
                    best = k;
                }
            }
    return best;
}

static int load(const char *path, double *unit, prob *probs, int *np)
{
    kr_error e = {0};
    json_t *root;
    if (kr__json_load_file(path, &root, &e)) {
        fprintf(stderr, "bench_lmfit: %s\n", e.msg);
        return 1;
    }
    *unit = json_real_value(json_object_get(root, "unit_time"));
    const json_t *specs = json_object_get(root, "specs");
    for (size_t i = 0; i < json_array_size(specs); i++) {
        const json_t *sp = json_array_get(specs, i), *c = json_object_get(sp, "candidates");
        prob *p = &probs[(*np)++];
        p->m = (int)json_array_size(c);
        for (int j = 0; j < p->m && j < MAXC; j++) {
            p->t[j] = (double)json_integer_value(json_object_get(json_array_get(c, (size_t)j), "quant_time"));
            p->y[j] = json_real_value(json_object_get(json_array_get(c, (size_t)j), "cost"));
        }
        p->a = json_real_value(json_object_get(sp, "model_a"));
        p->b = json_real_value(json_object_get(sp, "model_b"));
        p->c = json_real_value(json_object_get(sp, "model_c"));
    }
    json_decref(root);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run(const char *name, minimizer fn, prob *probs, const double *units, int np, double out[][54][3])
{
    double worst = 0;
    long nfev = 0;
    for (int i = 0; i < np; i++) {
        int b = grid(fn, &probs[i], units[i], out[i], &nfev);
        const double *x = out[i][b];
        worst = fmax(worst, fmax(fabs(x[0] / probs[i].a - 1), fmax(fabs(x[1] / probs[i].b - 1), fabs(x[2] / probs[i].c - 1))));
    }
    double t0 = now_s();
    long dummy = 0;
    double scratch[54][3];
    for (int r = 0; r < REPEATS; r++)
        for (int i = 0; i < np; i++)
            grid(fn, &probs[i], units[i], scratch, &dummy);
    double dt = (now_s() - t0) / REPEATS;
    printf("%-22s largest relative deviation from scipy's a, b, c: %.3g; %ld function evaluations; "
           "%.3f ms CPU per grid of all %d fits\n", name, worst, nfev, 1e3 * dt, np);
}

int main(void)
{
    static prob probs[16];
    double units[16];
    int np = 0;
    const char *files[2] = {KR_TESTDATA_DIR "/golden/lowtime/spec_S2_M8_u1ms.json",
                            KR_TESTDATA_DIR "/golden/lowtime/spec_S2_M8_u0.1ms.json"};
    for (int f = 0; f < 2; f++) {
        double u;
        int before = np;
        if (load(files[f], &u, probs, &np))
            return 1;
        for (int i = before; i < np; i++)
            units[i] = u;
    }
    static double ours[16][54][3];
    printf("bench_lmfit: %d exponential fits (golden specs), 54 starts each, %d repeats for timing\n", np, REPEATS);
    run("kr__lm_minimize", ours_minimize, probs, units, np, ours);
#ifdef KR_HAVE_CMINPACK
    static double cm[16][54][3];
    run("lmdif (direct)", cm_minimize, probs, units, np, cm);
    double dis = 0;
    for (int i = 0; i < np; i++)
        for (int k = 0; k < 54; k++)
            for (int j = 0; j < 3; j++)
                dis = fmax(dis, fabs(ours[i][k][j] - cm[i][k][j]) / fmax(1e-300, fabs(cm[i][k][j])));
    printf("per start, largest relative difference between the two minimisers' results: %.3g\n", dis);
#else
    printf("libcminpack not found at configure time: no comparison\n");
#endif
    return 0;
}
