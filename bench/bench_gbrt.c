/*
 * bench_gbrt.c — the artifact strategy's regressor (src/search/gbrt.c, our gradient-boosted trees
 * with the published search's XGBoost settings) against libxgboost itself (Debian's
 * libxgboost-dev, C API) with the same settings: squared error, 100 rounds, η 0.3, depth 6,
 * subsample and colsample_bytree 0.8, min child weight 1, λ 1, exact splits, base score = the
 * target mean, one thread. Data: every configuration of the default job's partitions on the
 * simulator (features as the artifact strategy builds them: clock MHz, SM index, one-hot slot;
 * targets: time in s and in ms, effective energy in J; the units matter to XGBoost, which
 * takes no split whose gain is below a fixed threshold, and not to ours). For training sizes 96 and 224 (the artifact's initial
 * and full budget for fwd_attn) and 5 random draws each, both models are trained on the draw
 * and predict every other configuration. Prints the held-out error (RMSE over the target's
 * standard deviation, and the mean absolute percentage error) and the CPU time of training +
 * prediction. Built with libxgboost when CMake finds it (KR_HAVE_XGBOOST); our figures only
 * otherwise. docs/search.md records the result and the decision.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kareus/kareus.h"
#include "search/gbrt.h"

#ifdef KR_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

#define DRAWS 5

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct data {
    int n, p;
    double *X, *y[3]; /* y[0] time (s), y[1] effective energy (J), y[2] time (ms) */
} data;

/* Trains on rows tr[0..ntr) of target y, predicts rows te[0..nte) into out. 0 on success. */
typedef int (*model_fn)(const data *d, const double *y, const int *tr, int ntr, const int *te, int nte,
                        uint64_t seed, double *out);

static int ours(const data *d, const double *y, const int *tr, int ntr, const int *te, int nte, uint64_t seed,
                double *out)
{
    double *X = malloc(sizeof(double) * (size_t)ntr * (size_t)d->p), *yy = malloc(sizeof(double) * (size_t)ntr);
    if (!X || !yy) {
        free(X);
        free(yy);
        return -1;
    }
    for (int i = 0; i < ntr; i++) {
        memcpy(X + (size_t)i * d->p, d->X + (size_t)tr[i] * d->p, sizeof(double) * (size_t)d->p);
        yy[i] = y[tr[i]];
    }
    kr__gbrt m;
    memset(&m, 0, sizeof m);
    kr_error e = {0};
    int rc = kr__gbrt_train(&m, X, yy, ntr, d->p, seed, &e);
    for (int j = 0; rc == KR_OK && j < nte; j++)
        out[j] = kr__gbrt_predict(&m, d->X + (size_t)te[j] * d->p);
    kr__gbrt_free(&m);
    free(X);
    free(yy);
    return rc;
}

#ifdef KR_HAVE_XGBOOST
static int xgb(const data *d, const double *y, const int *tr, int ntr, const int *te, int nte, uint64_t seed,
               double *out)
{
    float *Xt = malloc(sizeof(float) * (size_t)ntr * (size_t)d->p), *yt = malloc(sizeof(float) * (size_t)ntr);
    float *Xe = malloc(sizeof(float) * (size_t)nte * (size_t)d->p);
    if (!Xt || !yt || !Xe) {
        free(Xt);
        free(yt);
        free(Xe);
        return -1;
    }
    double mean = 0;
    for (int i = 0; i < ntr; i++) {
        for (int f = 0; f < d->p; f++)
            Xt[(size_t)i * d->p + f] = (float)d->X[(size_t)tr[i] * d->p + f];
        yt[i] = (float)y[tr[i]];
        mean += y[tr[i]] / ntr;
    }
    for (int j = 0; j < nte; j++)
        for (int f = 0; f < d->p; f++)
            Xe[(size_t)j * d->p + f] = (float)d->X[(size_t)te[j] * d->p + f];
    DMatrixHandle dt = NULL, de = NULL;
    BoosterHandle b = NULL;
    int rc = XGDMatrixCreateFromMat(Xt, (bst_ulong)ntr, (bst_ulong)d->p, NAN, &dt) ||
             XGDMatrixSetFloatInfo(dt, "label", yt, (bst_ulong)ntr) ||
             XGDMatrixCreateFromMat(Xe, (bst_ulong)nte, (bst_ulong)d->p, NAN, &de) || XGBoosterCreate(&dt, 1, &b);
    char base[64], sd[32];
    snprintf(base, sizeof base, "%.17g", mean);
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)(seed % 2147483647ULL));
    const char *params[][2] = {{"objective", "reg:squarederror"}, {"max_depth", "6"}, {"eta", "0.3"},
                               {"subsample", "0.8"}, {"colsample_bytree", "0.8"}, {"min_child_weight", "1"},
                               {"lambda", "1"}, {"tree_method", "exact"}, {"nthread", "1"},
                               {"base_score", base}, {"seed", sd}, {"verbosity", "0"}};
    for (size_t i = 0; rc == 0 && i < sizeof params / sizeof params[0]; i++)
        rc = XGBoosterSetParam(b, params[i][0], params[i][1]);
    for (int it = 0; rc == 0 && it < 100; it++)
        rc = XGBoosterUpdateOneIter(b, it, dt);
    bst_ulong len = 0;
    const float *pred = NULL;
    if (rc == 0)
        rc = XGBoosterPredict(b, de, 0, 0, 0, &len, &pred);
    if (rc == 0 && len == (bst_ulong)nte)
        for (int j = 0; j < nte; j++)
            out[j] = pred[j];
    else if (rc == 0)
        rc = -1;
    if (rc)
        fprintf(stderr, "bench_gbrt: xgboost: %s\n", XGBGetLastError());
    XGBoosterFree(b);
    XGDMatrixFree(dt);
    XGDMatrixFree(de);
    free(Xt);
    free(yt);
    free(Xe);
    return rc;
}
#endif

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Mean over draws of: RMSE / sd of the held-out target, and mean |error| / |target|. */
static void evaluate(const char *name, model_fn fn, const data *d, int ntr)
{
    static const char *const tname[3] = {"time (s)", "eff. energy (J)", "time (ms)"};
    for (int t = 0; t < 3; t++) {
        double nrmse = 0, mape = 0, cpu = 0;
        int ok = 1;
        for (int k = 0; k < DRAWS && ok; k++) {
            int *perm = malloc(sizeof(int) * (size_t)d->n);
            double *pred = malloc(sizeof(double) * (size_t)d->n);
            if (!perm || !pred) {
                free(perm);
                free(pred);
                return;
            }
            uint64_t s = 0x9e3779b97f4a7c15ULL + (uint64_t)k * 7919;
            for (int i = 0; i < d->n; i++)
                perm[i] = i;
            for (int i = d->n - 1; i > 0; i--) {
                int j = (int)(rng_next(&s) % (uint64_t)(i + 1)), tmp = perm[i];
                perm[i] = perm[j];
                perm[j] = tmp;
            }
            int nte = d->n - ntr;
            double c0 = cpu_s();
            ok = fn(d, d->y[t], perm, ntr, perm + ntr, nte, 1000 + (uint64_t)k, pred) == 0;
            cpu += cpu_s() - c0;
            double mean = 0, se = 0, var = 0, ape = 0;
            for (int j = 0; j < nte; j++)
                mean += d->y[t][perm[ntr + j]] / nte;
            for (int j = 0; j < nte; j++) {
                double yv = d->y[t][perm[ntr + j]], e = pred[j] - yv;
                se += e * e;
                var += (yv - mean) * (yv - mean);
                ape += fabs(e) / fabs(yv);
            }
            nrmse += sqrt(se / var) / DRAWS;
            mape += 100 * ape / nte / DRAWS;
            free(perm);
            free(pred);
        }
        if (ok)
            printf("  %-10s %-16s train %3d: held-out RMSE/sd %.4f, mean |error| %.3f %%, %.1f ms CPU per fit\n", name,
                   tname[t], ntr, nrmse, mape, 1e3 * cpu / DRAWS);
    }
}

int main(void)
{
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_backend *b = NULL;
    if (kr_job_builtin("default", &job, &e) || kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e) ||
        kr_sim_backend_create(&job, NULL, &b, &e)) {
        fprintf(stderr, "bench_gbrt: %s\n", e.msg);
        return 1;
    }
    printf("bench_gbrt: our gbrt.c vs libxgboost (%s), same settings, %d random draws per size\n",
#ifdef KR_HAVE_XGBOOST
           "linked",
#else
           "not found at configure time: ours only",
#endif
           DRAWS);
    for (int k = 0; k < set.n; k++) {
        kr_search_space sp;
        if (kr_search_space_init(&job, &set.p[k], &sp, &e))
            continue;
        data d;
        d.n = (int)kr_search_space_size(&sp);
        d.p = 2 + sp.nslots;
        if (d.n < 300)
            continue;
        d.X = malloc(sizeof(double) * (size_t)d.n * (size_t)d.p);
        d.y[0] = malloc(sizeof(double) * (size_t)d.n);
        d.y[1] = malloc(sizeof(double) * (size_t)d.n);
        d.y[2] = malloc(sizeof(double) * (size_t)d.n);
        if (!d.X || !d.y[0] || !d.y[1] || !d.y[2])
            return 1;
        for (int i = 0; i < d.n; i++) {
            kr_config c;
            kr_measurement m;
            kr_search_space_config(&sp, i, &c);
            if (kr_backend_measure(b, &set.p[k], &c, &m)) {
                fprintf(stderr, "bench_gbrt: %s: measurement %d failed\n", sp.key, i);
                return 1;
            }
            long per_clock = (long)sp.nslots * sp.nsms;
            int slot = (int)((i % per_clock) / sp.nsms);
            double *x = d.X + (size_t)i * d.p;
            x[0] = c.freq_mhz;
            x[1] = (double)(i % sp.nsms);
            for (int s = 0; s < sp.nslots; s++)
                x[2 + s] = s == slot;
            d.y[0][i] = m.time_s;
            d.y[1][i] = m.eff_energy_j;
            d.y[2][i] = 1e3 * m.time_s;
        }
        printf("%s: %d configurations, %d features\n", sp.key, d.n, d.p);
        for (int ntr = 96; ntr <= 224; ntr += 128) {
            evaluate("gbrt.c", ours, &d, ntr);
#ifdef KR_HAVE_XGBOOST
            evaluate("xgboost", xgb, &d, ntr);
#endif
        }
        free(d.X);
        free(d.y[0]);
        free(d.y[1]);
        free(d.y[2]);
    }
    kr_backend_destroy(b);
    return 0;
}
