/* test_search_bo.c — the sample-efficient strategies and their parts: Gaussian-process
 * regression, gradient-boosted trees, incremental 2-D frontiers, and the bo and artifact
 * strategies end to end (determinism, quality against exhaustive search, the published batch
 * split, resume after a crash in the middle of a batch, replay). Searches run on the synthetic
 * backend of search_fake.h. */
#include "testutil.h"

#include <math.h>

#include "kareus/search.h"
#include "kareus/sim.h"
#include "search/gbrt.h"
#include "search/gp.h"
#include "search/search_internal.h"
#include "search_fake.h"

int main(int argc, char **argv);

static double f2(double x, double y, int c)
{
    return sin(3 * x) + 0.5 * cos(5 * y) + 0.3 * c;
}

static void gp_interpolates_and_knows_its_uncertainty(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 1);
    enum { N = 40 };
    double X[2 * N], y[N];
    int cat[N];
    for (int i = 0; i < N; i++) {
        X[2 * i] = kr__rng_uniform(&r);
        X[2 * i + 1] = kr__rng_uniform(&r);
        cat[i] = i % 2;
        y[i] = f2(X[2 * i], X[2 * i + 1], cat[i]);
    }
    kr__gp gp;
    memset(&gp, 0, sizeof gp);
    kr_error e = {0};
    assert_int_equal(kr__gp_fit(&gp, X, cat, y, N, 2, NULL, &e), KR_OK);
    assert_true(gp.h.rho > 0.5); /* the categories share the same smooth trend */
    /* At the training points: the targets, with small variance. */
    double mu[N], var[N], V[N * N];
    assert_int_equal(kr__gp_predict(&gp, X, cat, N, mu, var, V, &e), KR_OK);
    for (int i = 0; i < N; i++) {
        KR_ASSERT_CLOSE(mu[i], y[i], 1e-2);
        assert_true(var[i] < 1e-3);
    }
    /* Held-out points are predicted well; far outside the data the variance grows. */
    double err2 = 0;
    for (int i = 0; i < 50; i++) {
        double x[2] = {kr__rng_uniform(&r), kr__rng_uniform(&r)}, m, v;
        int c = i % 2;
        assert_int_equal(kr__gp_predict(&gp, x, &c, 1, &m, &v, NULL, &e), KR_OK);
        err2 += (m - f2(x[0], x[1], c)) * (m - f2(x[0], x[1], c));
    }
    assert_true(sqrt(err2 / 50) < 0.05);
    double far[2] = {4.0, 4.0}, m, vfar, vin;
    int c0 = 0;
    assert_int_equal(kr__gp_predict(&gp, far, &c0, 1, &m, &vfar, NULL, &e), KR_OK);
    assert_int_equal(kr__gp_predict(&gp, X, cat, 1, &m, &vin, NULL, &e), KR_OK);
    assert_true(vfar > 100 * vin);
    /* The fitted hyperparameters beat the cold-start grid's best and a warm start. */
    kr__gp_hyper bad = gp.h;
    bad.ls[0] = bad.ls[1] = 5.0;
    kr__gp g2;
    memset(&g2, 0, sizeof g2);
    assert_int_equal(kr__gp_fit(&g2, X, cat, y, N, 2, &bad, &e), KR_OK);
    assert_true(g2.loglik >= gp.loglik - 1.0);
    /* Posterior covariance with itself is the variance. */
    double pc = kr__gp_post_cov(&gp, X, cat[0], V, X, cat[0], V);
    KR_ASSERT_CLOSE(pc, var[0], 1e-6);
    kr__gp_free(&gp);
    kr__gp_free(&g2);
    KR_ASSERT_ERR(kr__gp_fit(&gp, X, cat, y, 1, 2, NULL, &e), KR_EINVAL, e, "at least 2 points");
}

static void gbrt_fits_steps_and_is_deterministic(void **state)
{
    (void)state;
    enum { N = 120, P = 3 };
    double X[N * P], y[N];
    for (int i = 0; i < N; i++) {
        X[i * P] = i % 12;
        X[i * P + 1] = (i / 12) % 5;
        X[i * P + 2] = i % 2;
        y[i] = (X[i * P] < 6 ? 1.0 : 3.0) + 0.5 * X[i * P + 1] + (X[i * P + 2] > 0.5 ? 2.0 : 0.0);
    }
    kr__gbrt a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    kr_error e = {0};
    assert_int_equal(kr__gbrt_train(&a, X, y, N, P, 7, &e), KR_OK);
    assert_int_equal(kr__gbrt_train(&b, X, y, N, P, 7, &e), KR_OK);
    double sse = 0;
    for (int i = 0; i < N; i++) {
        double pa = kr__gbrt_predict(&a, X + i * P);
        assert_true(pa == kr__gbrt_predict(&b, X + i * P));
        sse += (pa - y[i]) * (pa - y[i]);
    }
    assert_true(sqrt(sse / N) < 0.05);
    assert_int_equal(a.ntrees, 100);
    kr__gbrt_free(&a);
    kr__gbrt_free(&b);
    KR_ASSERT_ERR(kr__gbrt_train(&a, X, y, 0, P, 1, &e), KR_EINVAL, e, "rows and features");
}

static void front2_improvement_matches_hypervolume(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 9);
    for (int trial = 0; trial < 200; trial++) {
        kr__front2 f;
        memset(&f, 0, sizeof f);
        f.rt = 1.0;
        f.ry = 1.0;
        kr_fpoint pts[64];
        int n = (int)kr__rng_below(&r, 40);
        for (int i = 0; i < n; i++) {
            pts[i] = (kr_fpoint){kr__rng_uniform(&r) * 1.2, kr__rng_uniform(&r) * 1.2, i};
            assert_int_equal(kr__front2_add(&f, pts[i].time_s, pts[i].energy_j), KR_OK);
        }
        for (int i = 1; i < f.m; i++)
            assert_true(f.t[i] > f.t[i - 1] && f.y[i] < f.y[i - 1]);
        double hv, hv2;
        assert_int_equal(kr_frontier_hypervolume(pts, (size_t)n, 0, 1.0, 1.0, &hv, NULL), KR_OK);
        KR_ASSERT_CLOSE(kr__front2_hv(&f), hv, 1e-12);
        pts[n] = (kr_fpoint){kr__rng_uniform(&r) * 1.1, kr__rng_uniform(&r) * 1.1, n};
        assert_int_equal(kr_frontier_hypervolume(pts, (size_t)n + 1, 0, 1.0, 1.0, &hv2, NULL), KR_OK);
        KR_ASSERT_CLOSE(kr__front2_hvi(&f, pts[n].time_s, pts[n].energy_j), hv2 - hv, 1e-12);
        kr__front2_free(&f);
    }
}

/* HV ratio of found against the exhaustive reference (nadir + 10 % of the range). */
static double hv_ratio(const kr_partition_frontier *ref, const kr_partition_frontier *f, double P)
{
    kr_fpoint a[2000], b[2000];
    for (size_t i = 0; i < ref->n; i++)
        a[i] = (kr_fpoint){ref->pts[i].time_s, ref->pts[i].energy_j, (long long)i};
    for (size_t i = 0; i < f->n; i++)
        b[i] = (kr_fpoint){f->pts[i].time_s, f->pts[i].energy_j, (long long)i};
    size_t k;
    assert_int_equal(kr_frontier_pareto(a, ref->n, P, 0, a, &k, NULL), KR_OK);
    double t0 = a[0].time_s, t1 = a[k - 1].time_s, y0 = a[k - 1].energy_j - P * t1, y1 = a[0].energy_j - P * t0;
    double h1, h2;
    kr_frontier_hypervolume(a, k, P, t1 + 0.1 * (t1 - t0), y1 + 0.1 * (y1 - y0), &h1, NULL);
    kr_frontier_hypervolume(b, f->n, P, t1 + 0.1 * (t1 - t0), y1 + 0.1 * (y1 - y0), &h2, NULL);
    return h2 / h1;
}

typedef struct fixture {
    kr_job job;
    kr_partition_set set;
} fixture;

static void setup_fixture(fixture *fx)
{
    kr_error e = {0};
    kr_job_default(&fx->job);
    assert_int_equal(kr_partition_catalog(&fx->job, KR_VARIANT_KAREUS, &fx->set, &e), KR_OK);
}

static void assert_same(const kr_partition_frontier *a, const kr_partition_frontier *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_memory_equal(&a->pts[i].config, &b->pts[i].config, sizeof(kr_config));
        assert_true(a->pts[i].time_s == b->pts[i].time_s && a->pts[i].energy_j == b->pts[i].energy_j);
        assert_int_equal(a->pts[i].flags, b->pts[i].flags);
    }
}

/* The clocks at which f holds the baseline's execution (NCCL, its CTAs, launched at partition
 * start: slot 0 of every key of the default job). */
static int baseline_clocks(const kr_job *job, const kr_partition_frontier *f)
{
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const kr_config *c = &f->pts[i].config;
        n += c->kernel == KR_KERNEL_NCCL && c->sms == (int)job->gpu.nccl_ctas && c->slot == 0;
    }
    return n;
}

static void bo_is_deterministic_and_converges(void **state)
{
    (void)state;
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "fwd_attn");
    kr_error e = {0};
    kr_backend *b = fake_backend(&fx.job, 0, NULL);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    kr_partition_frontier ref, f1, f2x, f3;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &ref, NULL, &e), KR_OK);
    o.strategy = KR_STRATEGY_BO;
    o.seed = 5;
    kr_search_stats st, st2;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f1, &st, &e), KR_OK);
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f2x, &st2, &e), KR_OK);
    assert_same(&f1, &f2x);
    assert_int_equal(st.evaluated, st2.evaluated);
    assert_string_equal(st.stop, "converged");
    assert_true(st.batches >= 1);
    /* Well below the cap (half the space), close to the exhaustive frontier. */
    assert_true(st.evaluated < 720 / 4);
    assert_true(hv_ratio(&ref, &f1, fx.job.static_power_w) > 0.99);
    assert_true(hv_ratio(&ref, &f1, 0.0) > 0.99);
    /* Every clock has a point (composition needs each clock). */
    int clocks[32];
    assert_int_equal(kr_frontier_clocks(&f1, clocks, 32), 18);
    /* Another seed makes other choices. */
    o.seed = 6;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f3, NULL, &e), KR_OK);
    int differ = f3.n != f1.n;
    for (size_t i = 0; !differ && i < f1.n; i++)
        differ = memcmp(&f1.pts[i].config, &f3.pts[i].config, sizeof(kr_config)) != 0;
    assert_true(differ);
    /* A cap holds, and bo_stop < 0 runs to it. */
    kr_frontier_free(&f3);
    o.bo_stop = -1;
    o.max_evals = 200;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f3, &st, &e), KR_OK);
    /* The cap, and beyond it only the baseline's execution at the clocks bo left it out. */
    assert_true(f3.n >= 200 && f3.n <= 200 + 18);
    assert_string_equal(st.stop, "budget");
    assert_int_equal(baseline_clocks(&fx.job, &f3), 18);
    kr_frontier_free(&ref);
    kr_frontier_free(&f1);
    kr_frontier_free(&f2x);
    kr_frontier_free(&f3);
    kr_backend_destroy(b);
}

/* Counts log lines whose "selected" is why, in batch `batch`. */
static int count_selected(const char *path, int batch, const char *why)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096], a[64], bb[64];
    snprintf(a, sizeof a, "\"batch\":%d,", batch);
    snprintf(bb, sizeof bb, "\"selected\":\"%s\"", why);
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, a) != NULL && strstr(line, bb) != NULL;
    fclose(f);
    return n;
}

static void artifact_follows_the_published_rule(void **state)
{
    (void)state;
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "fwd_attn");
    kr_error e = {0};
    kr_backend *b = fake_backend(&fx.job, 0, NULL);
    const char *dir = kr_test_tmpdir("search_artifact");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &fx.job, &log, &e), KR_OK);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_ARTIFACT;
    /* The published rule on the published space: the tuned kernel alone, no baseline entry. */
    o.restrict_space = KR_SEARCH_ONLY_TUNED;
    kr_partition_frontier f, g;
    kr_search_stats st;
    assert_int_equal(kr_search_partition(&fx.job, p, b, log, &o, &f, &st, &e), KR_OK);
    kr_search_log_close(log);
    /* 96 initial + 4 batches of 32 (kareus-method.md §2), split 13 / 6 / 6 / 7. */
    assert_int_equal(st.evaluated, 224);
    assert_int_equal(st.batches, 4);
    assert_string_equal(st.stop, "fixed budget");
    assert_int_equal(count_selected(path, 0, "init"), 96);
    for (int batch = 1; batch <= 4; batch++) {
        assert_int_equal(count_selected(path, batch, "hvi_real"), 13);
        assert_int_equal(count_selected(path, batch, "hvi_dyn"), 6);
        assert_int_equal(count_selected(path, batch, "time"), 6);
        assert_int_equal(count_selected(path, batch, "uncertainty"), 7);
    }
    /* Deterministic for a seed. */
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &g, NULL, &e), KR_OK);
    assert_same(&f, &g);
    kr_frontier_free(&g);
    /* A budget scales the shape: 100 → round(100·96/224) = 43 initial, batches of 15 (the last
     * one cut). */
    o.artifact_budget = 100;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &g, &st, &e), KR_OK);
    assert_int_equal(st.evaluated, 100);
    kr_frontier_free(&g);
    /* A CP key with 16-wide batches: 6 / 3 / 3 / 4 (checked through the total only). */
    kr_job cp;
    kr_partition_set cset;
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &cp, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&cp, KR_VARIANT_KAREUS, &cset, &e), KR_OK);
    kr_backend *bc = fake_backend(&cp, 0, NULL);
    o.artifact_budget = 0;
    assert_int_equal(kr_search_partition(&cp, kr_partition_find(&cset, "bwd_o_ar"), bc, NULL, &o, &g, &st, &e), KR_OK);
    assert_int_equal(st.evaluated, 84);
    kr_frontier_free(&g);
    /* Our whole space (both kernels): the rule's 224, then the baseline's execution at every
     * clock the rule left it out. */
    o.restrict_space = 0;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &g, &st, &e), KR_OK);
    assert_true(st.evaluated >= 224 && st.evaluated <= 224 + 18);
    assert_int_equal(baseline_clocks(&fx.job, &g), 18);
    kr_frontier_free(&g);
    kr_frontier_free(&f);
    kr_backend_destroy(b);
    kr_backend_destroy(bc);
}

/* Crash on call `fail_on` (inside a batch), rerun with the same log: same frontier as an
 * uninterrupted run, the same number of backend calls in total, no configuration twice. */
static void crash_and_resume_prior(kr_strategy strategy, long fail_on, const kr_job *prior)
{
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "fwd_mlp");
    kr_error e = {0};
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = strategy;
    o.seed = 11;
    o.prior = prior;
    fake_impl *fr = NULL;
    kr_backend *b = fake_backend(&fx.job, 0, &fr);
    kr_partition_frontier ref, f;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &ref, NULL, &e), KR_OK);
    long uninterrupted = fr->calls;
    assert_true(fail_on < uninterrupted);
    const char *dir = kr_test_tmpdir(prior ? "resume_bo_prior" : strategy == KR_STRATEGY_BO ? "resume_bo" : "resume_artifact");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    fake_impl *f1 = NULL, *f2 = NULL;
    kr_backend *b1 = fake_backend(&fx.job, fail_on, &f1);
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &fx.job, &log, &e), KR_OK);
    KR_ASSERT_ERR(kr_search_partition(&fx.job, p, b1, log, &o, &f, NULL, &e), KR_EBACKEND, e, "injected failure");
    kr_search_log_close(log);
    kr_backend *b2 = fake_backend(&fx.job, 0, &f2);
    assert_int_equal(kr_search_log_open(path, &fx.job, &log, &e), KR_OK);
    assert_int_equal(kr_search_log_count(log), fail_on - 1);
    kr_search_stats st;
    assert_int_equal(kr_search_partition(&fx.job, p, b2, log, &o, &f, &st, &e), KR_OK);
    kr_search_log_close(log);
    assert_same(&ref, &f);
    assert_int_equal(st.from_log, fail_on - 1);
    assert_int_equal(f1->ncfg + f2->ncfg, uninterrupted);
    for (long i = 0; i < f2->ncfg; i++)
        for (long j = 0; j < f1->ncfg; j++)
            assert_false(memcmp(&f2->cfg[i], &f1->cfg[j], sizeof(kr_config)) == 0);
    /* The log holds each configuration once, and replaying it gives the same frontier. */
    assert_int_equal(kr_search_log_open(path, &fx.job, &log, &e), KR_OK);
    assert_string_equal(kr_search_log_warning(log), "");
    assert_int_equal(kr_search_log_count(log), uninterrupted);
    kr_search_log_close(log);
    const char *paths[] = {path};
    kr_backend *rb;
    assert_int_equal(kr_replay_backend_create(&fx.job, paths, 1, &rb, &e), KR_OK);
    kr_partition_frontier rf;
    assert_int_equal(kr_search_partition(&fx.job, p, rb, NULL, &o, &rf, NULL, &e), KR_OK);
    assert_same(&ref, &rf);
    kr_frontier_free(&rf);
    kr_frontier_free(&ref);
    kr_frontier_free(&f);
    kr_backend_destroy(b);
    kr_backend_destroy(b1);
    kr_backend_destroy(b2);
    kr_backend_destroy(rb);
}

static void crash_and_resume(kr_strategy strategy, long fail_on)
{
    crash_and_resume_prior(strategy, fail_on, NULL);
}

static void bo_resumes_after_a_crash_mid_batch(void **state)
{
    (void)state;
    /* fwd_mlp: 18 initial points, then batches of 8: call 18 + 8 + 3 = 29 is mid-batch 2. */
    crash_and_resume(KR_STRATEGY_BO, 29);
}

static void artifact_resumes_after_a_crash_mid_batch(void **state)
{
    (void)state;
    /* fwd_mlp: 96 initial points, then batches of 32: call 96 + 32 + 10 is mid-batch 2. */
    crash_and_resume(KR_STRATEGY_ARTIFACT, 138);
}

static void clock_only_spaces_are_measured_at_every_clock(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_job_default(&job);
    kr_partition_set set;
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, &set, &e), KR_OK);
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_search_config o;
    kr_search_config_default(&o);
    for (int s = KR_STRATEGY_BO; s <= KR_STRATEGY_ARTIFACT; s++) {
        o.strategy = (kr_strategy)s;
        kr_partition_frontier f;
        assert_int_equal(kr_search_partition(&job, &set.p[0], b, NULL, &o, &f, NULL, &e), KR_OK);
        assert_int_equal(f.n, 18);
        assert_int_equal(f.pts[0].config.sms, (int)job.gpu.nccl_ctas);
        kr_frontier_free(&f);
    }
    kr_backend_destroy(b);
}

/* Hypervolume of pts[0..n) in plane P against (rt, ry); 0 for no point. */
static double hv_of(const kr_fpoint *pts, size_t n, double P, double rt, double ry)
{
    double hv = 0;
    if (n > 0)
        assert_int_equal(kr_frontier_hypervolume(pts, n, P, rt, ry, &hv, NULL), KR_OK);
    return hv;
}

/*
 * The initial design with a prior against a brute-force reference: each of the n first
 * configurations measured (cfg) maximises, up to rounding, the prior's hypervolume gain over the
 * earlier picks, summed over the two planes with each gain a fraction of the hypervolume of the
 * prior's whole frontier in that plane (reference point: its nadir + 10 % of its range).
 */
static void assert_greedy_prior_design(const kr_job *job, const kr_partition *p, const kr_config *cfg, int n)
{
    kr_search_space sp;
    kr_error e = {0};
    assert_int_equal(kr_search_space_init(job, p, &sp, &e), KR_OK);
    long size = kr_search_space_size(&sp);
    kr_fpoint *all = malloc((size_t)size * sizeof *all), *tmp = malloc((size_t)size * sizeof *tmp),
              *sel = malloc((size_t)(n + 1) * sizeof *sel);
    assert_non_null(all);
    assert_non_null(tmp);
    assert_non_null(sel);
    for (long i = 0; i < size; i++) {
        kr_config c;
        kr_search_space_config(&sp, i, &c);
        kr_measurement m;
        assert_int_equal(kr_sim_measure(job, p, &c, &m, &e), KR_OK);
        all[i] = (kr_fpoint){m.time_s, m.energy_j, i};
    }
    double P[2] = {job->static_power_w, 0.0}, rt[2], ry[2], full[2];
    for (int pl = 0; pl < 2; pl++) {
        size_t k;
        memcpy(tmp, all, (size_t)size * sizeof *tmp);
        assert_int_equal(kr_frontier_pareto(tmp, (size_t)size, P[pl], 0, tmp, &k, NULL), KR_OK);
        double t0 = tmp[0].time_s, t1 = tmp[k - 1].time_s;
        double y_fast = tmp[0].energy_j - P[pl] * t0, y_slow = tmp[k - 1].energy_j - P[pl] * t1;
        rt[pl] = t1 + 0.1 * (t1 - t0);
        ry[pl] = y_fast + 0.1 * (y_fast - y_slow);
        full[pl] = hv_of(tmp, k, P[pl], rt[pl], ry[pl]);
        assert_true(full[pl] > 0);
    }
    for (int j = 0; j < n; j++) {
        long mine;
        assert_int_equal(kr_search_space_index(&sp, &cfg[j], &mine, &e), KR_OK);
        double hv0[2] = {hv_of(sel, (size_t)j, P[0], rt[0], ry[0]), hv_of(sel, (size_t)j, P[1], rt[1], ry[1])};
        double best = -INFINITY, vmine = NAN;
        for (long i = 0; i < size; i++) {
            int used = 0;
            for (int l = 0; l < j; l++)
                used |= sel[l].id == i;
            if (used)
                continue;
            sel[j] = all[i];
            double v = 0;
            for (int pl = 0; pl < 2; pl++)
                v += (hv_of(sel, (size_t)j + 1, P[pl], rt[pl], ry[pl]) - hv0[pl]) / full[pl];
            best = fmax(best, v);
            if (i == mine)
                vmine = v;
        }
        assert_true(best > 0);
        assert_true(vmine >= best - 1e-9 * best);
        sel[j] = all[mine];
    }
    free(all);
    free(tmp);
    free(sel);
}

/* With a prior (the simulator, while the "GPU" is the synthetic backend: a wrong prior in
 * shape and scale): deterministic, converges, covers every clock, starts from the small design,
 * resumes after a crash, and reports a stop reason and remaining gains. */
static void bo_with_a_prior(void **state)
{
    (void)state;
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "fwd_attn");
    kr_error e = {0};
    fake_impl *fi = NULL;
    kr_backend *b = fake_backend(&fx.job, 0, &fi);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    kr_partition_frontier ref, f1, f2x, f0;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &ref, NULL, &e), KR_OK);
    kr_search_config_default(&o);
    kr_search_stats s0, st, st2;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f0, &s0, &e), KR_OK);
    assert_int_equal(s0.prior, 0);
    assert_true(isnan(s0.gain_eff) && isnan(s0.gain_total));
    o.prior = &fx.job;
    o.seed = 5;
    long before = fi->ncfg;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f1, &st, &e), KR_OK);
    /* The initial design: the prior's 8 best frontier points, greedily by hypervolume (then 2 × 4
     * picked the same way from the calibrated models: not the prior's next 8 in general). */
    assert_true(fi->ncfg - before >= 16);
    assert_greedy_prior_design(&fx.job, p, &fi->cfg[before], 8);
    assert_int_equal(st.prior_calibrated, 1);
    /* Without calibration: 12 (then 4 from the refitted models). */
    o.prior_calib = -1;
    before = fi->ncfg;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f2x, &st2, &e), KR_OK);
    assert_true(fi->ncfg - before >= 16);
    assert_greedy_prior_design(&fx.job, p, &fi->cfg[before], 12);
    assert_int_equal(st2.prior_calibrated, 0);
    kr_frontier_free(&f2x);
    o.prior_calib = 0;
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f2x, &st2, &e), KR_OK);
    assert_same(&f1, &f2x);
    assert_int_equal(st.prior, 1);
    assert_true(strncmp(st.stop, "converged (eff ", 15) == 0);
    assert_true(isfinite(st.gain_eff) && st.gain_eff >= 0 && isfinite(st.gain_total) && st.gain_total >= 0);
    assert_true(st.prior_b_time > 0 && st.prior_b_energy > 0);
    assert_true(st.evaluated <= 360);
    int clocks[32];
    assert_int_equal(kr_frontier_clocks(&f1, clocks, 32), 18);
    assert_true(hv_ratio(&ref, &f1, fx.job.static_power_w) > 0.95);
    assert_true(hv_ratio(&ref, &f1, 0.0) > 0.95);
    /* bo_stop_abs < 0 turns the absolute rule off: the plain "converged". */
    o.bo_stop_abs = -1;
    kr_frontier_free(&f2x);
    assert_int_equal(kr_search_partition(&fx.job, p, b, NULL, &o, &f2x, &st2, &e), KR_OK);
    assert_string_equal(st2.stop, "converged");
    /* A prior that cannot predict the space is an error naming it, before any measurement. */
    kr_job bad = fx.job;
    bad.gpu.clock_step_mhz = 7;
    bad.gpu.clock_max_mhz = 1000;
    o.prior = &bad;
    o.bo_stop_abs = 0;
    long calls = fi->calls;
    kr_partition_frontier fb;
    int rc = kr_search_partition(&fx.job, p, b, NULL, &o, &fb, NULL, &e);
    assert_int_not_equal(rc, KR_OK);
    assert_non_null(strstr(e.msg, "prior for partition fwd_attn"));
    assert_int_equal(fi->calls, calls);
    kr_frontier_free(&fb);
    kr_frontier_free(&ref);
    kr_frontier_free(&f0);
    kr_frontier_free(&f1);
    kr_frontier_free(&f2x);
    kr_backend_destroy(b);
    /* Resume with a prior: fwd_mlp (540): 8 initial points, the 2 × 4 calibrated ones, then
     * batches of 4; call 23 is mid-batch 2. */
    crash_and_resume_prior(KR_STRATEGY_BO, 23, &fx.job);
}

/* The simulator measuring on job (the "GPU" of the prior tests). */
static kr_backend *sim_backend(const kr_job *job)
{
    kr_backend_open_config bc;
    memset(&bc, 0, sizeof bc);
    bc.job = job;
    kr_backend *b = NULL;
    kr_error e = {0};
    assert_int_equal(kr_backend_open("sim", &bc, &b, &e), KR_OK);
    return b;
}

/* The relative change the time model's sensitivity feature of GPU parameter `param` fitted (NaN
 * when the search had no such feature). */
static double sens_time(const kr_search_stats *st, int param)
{
    for (int j = 0; j < st->prior_nsens; j++)
        if (st->prior_sens_param[j] == param)
            return st->prior_sens_time[j];
    return NAN;
}

/* The calibrated relative change of GPU parameter `param` (NaN when not calibrated). */
static double calib_of(const kr_search_stats *st, int param)
{
    for (int j = 0; st->prior_calibrated && j < st->prior_nsens; j++)
        if (st->prior_sens_param[j] == param)
            return st->prior_calib[j];
    return NAN;
}

/* A measured GPU (the simulator on a job whose GPU differs from the prior's in one constant,
 * within its stated uncertainty and clamped to its physical limits like any GPU entry): the
 * calibration finds which constant and how much from the search's own measurements (within
 * 0.005 of the true relative change; the time model's features add almost nothing then); the
 * sensitivity features alone (prior_calib < 0) find its sign and roughly its size (within 0.09:
 * each model fits its own coefficients, to first order; since the comm kernel's latency-bound
 * copies slow beside the ops they overlap (sim v3), a GEMM 8 % slower also lengthens the part of
 * the collective it hides, and the first-order estimate of gemm_eff × 0.92 is −0.16 for −0.08);
 * with prior_sens < 0 there are none. */
static void bo_prior_sensitivities_find_a_changed_constant(void **state)
{
    (void)state;
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "fwd_mlp");
    static const struct {
        int param;
        double factor;
    } cases[] = {
        {KR_GPU_P_gemm_eff, 1.08}, /* clamped to 0.98: +3.7 % */
        {KR_GPU_P_tuned_cta_Bps, 0.87},
        {KR_GPU_P_gemm_eff, 0.92},
        {KR_GPU_P_mem_eff, 0.93},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int par = cases[c].param;
        kr_job truth = fx.job;
        kr_gpu_param_set(&truth.gpu, par, kr_gpu_param_value(&truth.gpu, par) * cases[c].factor);
        kr_gpu_clamp(&truth.gpu);
        double rel = kr_gpu_param_value(&truth.gpu, par) / kr_gpu_param_value(&fx.job.gpu, par) - 1;
        assert_true(fabs(cases[c].factor - 1) <= kr_gpu_param_uncertainty(par) && fabs(rel) > 0.03);
        kr_backend *b = sim_backend(&truth);
        kr_error e = {0};
        kr_search_config o;
        kr_search_config_default(&o);
        o.prior = &fx.job;
        kr_partition_frontier f;
        kr_search_stats st;
        assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f, &st, &e), KR_OK);
        assert_true(st.prior_nsens >= 10 && st.prior_nsens <= KR_SEARCH_SENS_MAX);
        assert_int_equal(st.prior_calibrated, 1);
        assert_true(fabs(calib_of(&st, par) - rel) <= 0.005);
        assert_true(fabs(sens_time(&st, par) - rel) <= 0.01);
        kr_frontier_free(&f);
        o.prior_calib = -1;
        assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f, &st, &e), KR_OK);
        assert_int_equal(st.prior_calibrated, 0);
        assert_true(isnan(calib_of(&st, par)));
        double d = sens_time(&st, par);
        print_message("%s x %.2f: relative change %+.4f, features alone %+.4f\n", kr_gpu_param(par)->field,
                      cases[c].factor, rel, d);
        assert_true(d * rel > 0 && fabs(d - rel) <= 0.09);
        kr_frontier_free(&f);
        o.prior_sens = -1;
        o.prior_calib = 0;
        assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f, &st, &e), KR_OK);
        assert_int_equal(st.prior_nsens, 0);
        assert_int_equal(st.prior_calibrated, 0);
        kr_frontier_free(&f);
        kr_backend_destroy(b);
    }
    assert_true(kr_gpu_param_uncertainty(KR_GPU_P_sm_count) == 0);
    assert_true(kr_gpu_param_uncertainty(-1) == 0 && kr_gpu_param_uncertainty(KR_GPU_NPARAMS) == 0);
}

/* prior_fn / prior_sens_fn computing what the simulator prior computes (ud: the prior job). */
static int sim_prior_fn(void *ud, const kr_partition *p, const kr_config *c, double *t, double *e)
{
    kr_measurement m;
    kr_error err = {0};
    int rc = kr_sim_measure(ud, p, c, &m, &err);
    *t = m.time_s;
    *e = m.energy_j;
    return rc;
}

static int sim_prior_at_fn(void *ud, const kr_partition *p, const kr_config *c, int n, const int *param,
                           const double *factor, double *t, double *e)
{
    kr_job job = *(const kr_job *)ud;
    for (int j = 0; j < n; j++)
        kr_gpu_param_set(&job.gpu, param[j], kr_gpu_param_value(&job.gpu, param[j]) * factor[j]);
    kr_gpu_clamp(&job.gpu);
    return sim_prior_fn(&job, p, c, t, e);
}

static int sim_prior_sens_fn(void *ud, const kr_partition *p, const kr_config *c, int param, double factor, double *t,
                             double *e)
{
    return sim_prior_at_fn(ud, p, c, 1, &param, &factor, t, e);
}

/* The same prior through prior_fn, prior_sens_fn and prior_at_fn takes the same decisions as the
 * simulator prior with its features and calibration; without prior_at_fn a prior_fn is not
 * calibrated, without prior_sens_fn it has no features. */
static void bo_prior_sens_fn_matches_the_simulator_prior(void **state)
{
    (void)state;
    fixture fx;
    setup_fixture(&fx);
    const kr_partition *p = kr_partition_find(&fx.set, "bwd_mlp");
    kr_job truth = fx.job;
    kr_gpu_param_set(&truth.gpu, KR_GPU_P_kappa_tensor, kr_gpu_param_value(&truth.gpu, KR_GPU_P_kappa_tensor) * 1.15);
    kr_backend *b = sim_backend(&truth);
    kr_error e = {0};
    kr_search_config o;
    kr_search_config_default(&o);
    o.prior = &fx.job;
    kr_partition_frontier f1, f2, f3;
    kr_search_stats s1, s2, s3;
    assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f1, &s1, &e), KR_OK);
    o.prior_fn = sim_prior_fn;
    o.prior_sens_fn = sim_prior_sens_fn;
    o.prior_at_fn = sim_prior_at_fn;
    o.prior_ud = &fx.job;
    assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f2, &s2, &e), KR_OK);
    assert_same(&f1, &f2);
    assert_true(s1.prior_calibrated && s2.prior_calibrated);
    assert_int_equal(s1.evaluated, s2.evaluated);
    assert_true(s1.prior_nsens > 0 && s2.prior_nsens >= s1.prior_nsens);
    for (int j = 0, k = 0; j < s2.prior_nsens; j++) {
        /* prior_fn has no GPU entry to skip zero-valued constants: it lists every uncertain one */
        while (k < s1.prior_nsens && s1.prior_sens_param[k] != s2.prior_sens_param[j])
            k++;
        if (k < s1.prior_nsens)
            assert_true(s1.prior_sens_time[k] == s2.prior_sens_time[j] && s1.prior_calib[k] == s2.prior_calib[j]);
    }
    /* Without prior_at_fn a prior_fn is not calibrated (its features still apply). */
    o.prior_at_fn = NULL;
    kr_frontier_free(&f2);
    assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f2, &s2, &e), KR_OK);
    assert_true(s2.prior_nsens > 0 && !s2.prior_calibrated);
    o.prior_sens_fn = NULL;
    assert_int_equal(kr_search_partition(&truth, p, b, NULL, &o, &f3, &s3, &e), KR_OK);
    assert_int_equal(s3.prior_nsens, 0);
    kr_frontier_free(&f1);
    kr_frontier_free(&f2);
    kr_frontier_free(&f3);
    kr_backend_destroy(b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gp_interpolates_and_knows_its_uncertainty),
    cmocka_unit_test(gbrt_fits_steps_and_is_deterministic),
    cmocka_unit_test(front2_improvement_matches_hypervolume),
    cmocka_unit_test(bo_is_deterministic_and_converges),
    cmocka_unit_test(artifact_follows_the_published_rule),
    cmocka_unit_test(bo_resumes_after_a_crash_mid_batch),
    cmocka_unit_test(artifact_resumes_after_a_crash_mid_batch),
    cmocka_unit_test(clock_only_spaces_are_measured_at_every_clock),
    cmocka_unit_test(bo_with_a_prior),
    cmocka_unit_test(bo_prior_sensitivities_find_a_changed_constant),
    cmocka_unit_test(bo_prior_sens_fn_matches_the_simulator_prior),
};

KR_TEST_MAIN(tests)
