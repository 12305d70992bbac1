/* test_frontier.c — Pareto filter, hypervolume, interpolation and hull against brute force on
 * random point sets; partition frontiers (flags, order, per-clock access) and their files. */
#include "testutil.h"

#include <math.h>

#include "kareus/frontier.h"
#include "util/util.h"

int main(int argc, char **argv);

/* Random points on a coarse grid so that ties and exact duplicates happen often. */
static void random_points(kr__rng *r, kr_fpoint *p, size_t n, int grid)
{
    for (size_t i = 0; i < n; i++) {
        p[i].time_s = 0.001 * (1 + (double)kr__rng_below(r, (uint64_t)grid));
        p[i].energy_j = 0.5 + 0.01 * (double)kr__rng_below(r, (uint64_t)grid) + 85.0 * p[i].time_s * 0.5;
        p[i].id = (long long)i;
    }
}

static double yof(const kr_fpoint *p, double P)
{
    return p->energy_j - P * p->time_s;
}

/* Brute force of the documented rule: keep p iff y_p < y_q − tol for every q that is faster,
 * or equally fast and ordered before p by (y, input index). */
static int brute_keep(const kr_fpoint *p, size_t n, size_t i, double P, double tol)
{
    for (size_t j = 0; j < n; j++) {
        if (j == i)
            continue;
        double tj = p[j].time_s, ti = p[i].time_s, yj = yof(&p[j], P), yi = yof(&p[i], P);
        int before = tj < ti || (tj == ti && (yj < yi || (yj == yi && j < i)));
        if (before && !(yi < yj - tol))
            return 0;
    }
    return 1;
}

static void pareto_matches_brute_force(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 7);
    kr_fpoint pts[200], out[200];
    for (int trial = 0; trial < 300; trial++) {
        size_t n = (size_t)kr__rng_below(&r, 120);
        int grid = 3 + (int)kr__rng_below(&r, 60);
        double P = trial % 2 ? 85.0 : 0.0;
        double tol = trial % 3 == 0 ? 0.015 : 0.0;
        random_points(&r, pts, n, grid);
        size_t k;
        kr_error e = {0};
        assert_int_equal(kr_frontier_pareto(pts, n, P, tol, out, &k, &e), KR_OK);
        size_t expect = 0;
        for (size_t i = 0; i < n; i++)
            expect += (size_t)brute_keep(pts, n, i, P, tol);
        assert_int_equal(k, expect);
        for (size_t i = 0; i < k; i++) {
            size_t id = (size_t)out[i].id;
            assert_true(brute_keep(pts, n, id, P, tol));
            assert_true(out[i].time_s == pts[id].time_s && out[i].energy_j == pts[id].energy_j);
            if (i > 0) {
                assert_true(out[i].time_s > out[i - 1].time_s);
                assert_true(yof(&out[i], P) < yof(&out[i - 1], P));
            }
        }
        /* In place gives the same answer. */
        kr_fpoint copy[200];
        memcpy(copy, pts, n * sizeof *pts);
        size_t k2;
        assert_int_equal(kr_frontier_pareto(copy, n, P, tol, copy, &k2, &e), KR_OK);
        assert_int_equal(k2, k);
        for (size_t i = 0; i < k; i++)
            assert_true(copy[i].id == out[i].id);
    }
}

static void pareto_rejects_bad_input(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_fpoint p[2] = {{1.0, 2.0, 0}, {NAN, 1.0, 1}}, out[2];
    size_t k;
    KR_ASSERT_ERR(kr_frontier_pareto(p, 2, 0, 0, out, &k, &e), KR_EINVAL, e, "point 1");
    KR_ASSERT_ERR(kr_frontier_pareto(p, 1, 0, -1, out, &k, &e), KR_EINVAL, e, "tolerance");
    assert_int_equal(kr_frontier_pareto(NULL, 0, 0, 0, NULL, &k, &e), KR_OK);
    assert_int_equal(k, 0);
}

/* Exact union area by coordinate compression: a grid cell is covered when some point is at
 * or below its lower-left corner. Independent of the staircase formula under test. */
static double brute_hv(const kr_fpoint *p, size_t n, double P, double rt, double ry)
{
    double xs[256], ys[256];
    size_t nx = 0, ny = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].time_s < rt)
            xs[nx++] = p[i].time_s;
        if (yof(&p[i], P) < ry)
            ys[ny++] = yof(&p[i], P);
    }
    xs[nx++] = rt;
    ys[ny++] = ry;
    for (size_t i = 0; i < nx; i++)
        for (size_t j = i + 1; j < nx; j++)
            if (xs[j] < xs[i]) {
                double t = xs[i];
                xs[i] = xs[j];
                xs[j] = t;
            }
    for (size_t i = 0; i < ny; i++)
        for (size_t j = i + 1; j < ny; j++)
            if (ys[j] < ys[i]) {
                double t = ys[i];
                ys[i] = ys[j];
                ys[j] = t;
            }
    double area = 0;
    for (size_t a = 0; a + 1 < nx; a++)
        for (size_t c = 0; c + 1 < ny; c++) {
            int covered = 0;
            for (size_t i = 0; i < n && !covered; i++)
                covered = p[i].time_s <= xs[a] && yof(&p[i], P) <= ys[c];
            if (covered)
                area += (xs[a + 1] - xs[a]) * (ys[c + 1] - ys[c]);
        }
    return area;
}

static void hypervolume_matches_brute_force(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 11);
    kr_fpoint pts[100], front[100];
    kr_error e = {0};
    for (int trial = 0; trial < 200; trial++) {
        size_t n = (size_t)kr__rng_below(&r, 60);
        random_points(&r, pts, n, 3 + (int)kr__rng_below(&r, 40));
        double P = trial % 2 ? 85.0 : 0.0;
        /* Reference points inside the cloud, too, to exercise clipping. */
        double rt = 0.001 * (2 + (double)kr__rng_below(&r, 50)), ry = 0.6 + 0.01 * (double)kr__rng_below(&r, 50);
        double hv, hv2;
        assert_int_equal(kr_frontier_hypervolume(pts, n, P, rt, ry, &hv, &e), KR_OK);
        KR_ASSERT_CLOSE(hv, brute_hv(pts, n, P, rt, ry), 1e-12);
        /* The frontier of the points has the same hypervolume (sorted fast path). */
        size_t k;
        assert_int_equal(kr_frontier_pareto(pts, n, P, 0, front, &k, &e), KR_OK);
        assert_int_equal(kr_frontier_hypervolume(front, k, P, rt, ry, &hv2, &e), KR_OK);
        KR_ASSERT_CLOSE(hv2, hv, 1e-12);
    }
    kr_fpoint one = {1.0, 3.0, 0};
    double hv;
    assert_int_equal(kr_frontier_hypervolume(&one, 1, 0, 2.0, 5.0, &hv, &e), KR_OK);
    KR_ASSERT_CLOSE(hv, 2.0, 1e-15);
    assert_int_equal(kr_frontier_hypervolume(&one, 1, 0, 0.5, 5.0, &hv, &e), KR_OK);
    assert_true(hv == 0.0);
    KR_ASSERT_ERR(kr_frontier_hypervolume(&one, 1, 0, INFINITY, 5.0, &hv, &e), KR_EINVAL, e, "reference");
}

static void interpolation_staircase_and_linear(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 3);
    kr_fpoint pts[80], f[80];
    kr_error e = {0};
    for (int trial = 0; trial < 100; trial++) {
        size_t n = 1 + (size_t)kr__rng_below(&r, 60), k;
        random_points(&r, pts, n, 50);
        double P = trial % 2 ? 85.0 : 0.0;
        assert_int_equal(kr_frontier_pareto(pts, n, P, 0, f, &k, &e), KR_OK);
        for (int q = 0; q < 50; q++) {
            double T = 0.0005 + 0.0005 * (double)kr__rng_below(&r, 120), y, t;
            /* Staircase energy at T: the least y of points no slower than T. */
            double best = INFINITY;
            for (size_t i = 0; i < n; i++)
                if (pts[i].time_s <= T && yof(&pts[i], P) < best)
                    best = yof(&pts[i], P);
            int rc = kr_frontier_energy_at(f, k, P, T, KR_INTERP_STAIRCASE, &y, &e);
            if (best == INFINITY) {
                assert_int_equal(rc, KR_ERANGE);
            } else {
                assert_int_equal(rc, KR_OK);
                assert_true(y == best);
                double yl;
                assert_int_equal(kr_frontier_energy_at(f, k, P, T, KR_INTERP_LINEAR, &yl, &e), KR_OK);
                assert_true(yl <= y + 1e-12); /* the segment lies below the staircase */
            }
            /* Staircase time at energy E: the least time of points using at most E. */
            double E = yof(&f[0], P) - 0.6 + 0.01 * (double)kr__rng_below(&r, 80);
            double tbest = INFINITY;
            for (size_t i = 0; i < n; i++)
                if (yof(&pts[i], P) <= E && pts[i].time_s < tbest)
                    tbest = pts[i].time_s;
            rc = kr_frontier_time_at(f, k, P, E, KR_INTERP_STAIRCASE, &t, &e);
            if (tbest == INFINITY) {
                assert_int_equal(rc, KR_ERANGE);
            } else {
                assert_int_equal(rc, KR_OK);
                assert_true(t == tbest);
            }
        }
        /* Linear: exact at vertices, midpoints of segments are averages, and time_at inverts
         * energy_at on every segment. */
        for (size_t i = 0; i + 1 < k; i++) {
            double tm = 0.5 * (f[i].time_s + f[i + 1].time_s), y, t;
            assert_int_equal(kr_frontier_energy_at(f, k, P, f[i].time_s, KR_INTERP_LINEAR, &y, &e), KR_OK);
            assert_true(y == yof(&f[i], P));
            assert_int_equal(kr_frontier_energy_at(f, k, P, tm, KR_INTERP_LINEAR, &y, &e), KR_OK);
            KR_ASSERT_CLOSE(y, 0.5 * (yof(&f[i], P) + yof(&f[i + 1], P)), 1e-12);
            assert_int_equal(kr_frontier_time_at(f, k, P, y, KR_INTERP_LINEAR, &t, &e), KR_OK);
            KR_ASSERT_CLOSE(t, tm, 1e-9);
        }
        double y;
        assert_int_equal(kr_frontier_energy_at(f, k, P, 1e3, KR_INTERP_LINEAR, &y, &e), KR_OK);
        assert_true(y == yof(&f[k - 1], P));
    }
    kr_fpoint bad[2] = {{1.0, 1.0, 0}, {2.0, 2.0, 1}};
    double y;
    KR_ASSERT_ERR(kr_frontier_energy_at(bad, 2, 0, 1.5, KR_INTERP_LINEAR, &y, &e), KR_EINVAL, e, "point 1");
    KR_ASSERT_ERR(kr_frontier_energy_at(bad, 1, 0, 0.5, KR_INTERP_LINEAR, &y, &e), KR_ERANGE, e, "faster than");
    KR_ASSERT_ERR(kr_frontier_time_at(bad, 1, 0, 0.5, KR_INTERP_LINEAR, &y, &e), KR_ERANGE, e, "below");
    KR_ASSERT_ERR(kr_frontier_energy_at(bad, 0, 0, 0.5, KR_INTERP_LINEAR, &y, &e), KR_EINVAL, e, "non-empty");
}

static void lower_hull_matches_brute_force(void **state)
{
    (void)state;
    kr__rng r;
    kr__rng_seed(&r, 5);
    kr_fpoint pts[100], f[100], h[100];
    kr_error e = {0};
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + (size_t)kr__rng_below(&r, 80), k, m;
        random_points(&r, pts, n, 40);
        double P = trial % 2 ? 85.0 : 0.0;
        assert_int_equal(kr_frontier_pareto(pts, n, P, 0, f, &k, &e), KR_OK);
        assert_int_equal(kr_frontier_lower_hull(f, k, P, h, &m, &e), KR_OK);
        /* Brute force: f[i] is a vertex iff no pair a < i < b puts it on or above segment ab. */
        size_t expect = 0, j = 0;
        for (size_t i = 0; i < k; i++) {
            int vertex = 1;
            for (size_t a = 0; a < i && vertex; a++)
                for (size_t b = i + 1; b < k && vertex; b++) {
                    double ta = f[a].time_s, tb = f[b].time_s, ti = f[i].time_s;
                    double ya = yof(&f[a], P), yb = yof(&f[b], P), yi = yof(&f[i], P);
                    /* on or above the chord: (tb−ta)(yi−ya) − (yb−ya)(ti−ta) >= 0 */
                    if ((tb - ta) * (yi - ya) - (yb - ya) * (ti - ta) >= 0)
                        vertex = 0;
                }
            if (vertex) {
                expect++;
                assert_true(j < m && h[j].id == f[i].id);
                j++;
            }
        }
        assert_int_equal(m, expect);
    }
}

/* ---- partition frontiers ---------------------------------------------------------------- */

static void fixture(kr_job *job, kr_partition_set *set)
{
    kr_error e = {0};
    kr_job_default(job);
    assert_int_equal(kr_partition_catalog(job, KR_VARIANT_KAREUS, set, &e), KR_OK);
}

/* A synthetic measured set: 3 clocks × 3 slots × 4 SM counts with a few exact duplicates in
 * time/energy between configurations. */
static size_t make_points(kr_measured *m)
{
    size_t n = 0;
    int clocks[] = {1410, 1200, 900};
    for (int c = 0; c < 3; c++)
        for (int s = 0; s < 3; s++)
            for (int k = 0; k < 4; k++) {
                kr_measured *p = &m[n++];
                memset(p, 0, sizeof *p);
                p->config.freq_mhz = clocks[c];
                p->config.slot = s;
                p->config.sms = 3 * (k + 1);
                double f = clocks[c] / 1410.0;
                p->time_s = 0.010 / f * (1.0 + 0.05 * ((s + k) % 3)) + 0.0002 * k;
                p->energy_j = 2.0 * f * f * (1.0 + 0.03 * ((s * 7 + k * 3) % 5)) + 85.0 * p->time_s;
            }
    return n;
}

static void partition_frontier_flags_and_order(void **state)
{
    (void)state;
    kr_job job;
    kr_partition_set set;
    fixture(&job, &set);
    const kr_partition *p = kr_partition_find(&set, "fwd_attn");
    kr_partition_frontier f;
    kr_frontier_init(&f, &job, p);
    kr_measured m[64];
    size_t n = make_points(m);
    kr_error e = {0};
    assert_int_equal(kr_frontier_set_points(&f, m, n, &e), KR_OK);
    assert_int_equal(f.n, n);
    /* Flags agree with brute-force domination in each plane. */
    for (size_t i = 0; i < f.n; i++) {
        const kr_measured *a = &f.pts[i];
        int dom_eff = 0, dom_tot = 0, dom_clk = 0;
        for (size_t j = 0; j < f.n; j++) {
            const kr_measured *b = &f.pts[j];
            if (i == j)
                continue;
            int le = b->time_s <= a->time_s && b->eff_energy_j <= a->eff_energy_j &&
                     (b->time_s < a->time_s || b->eff_energy_j < a->eff_energy_j);
            int lt = b->time_s <= a->time_s && b->energy_j <= a->energy_j &&
                     (b->time_s < a->time_s || b->energy_j < a->energy_j);
            dom_eff |= le;
            dom_tot |= lt;
            dom_clk |= le && b->config.freq_mhz == a->config.freq_mhz;
        }
        assert_int_equal(!dom_eff, (a->flags & KR_FP_PARETO_EFF) != 0);
        assert_int_equal(!dom_tot, (a->flags & KR_FP_PARETO_TOTAL) != 0);
        assert_int_equal(!dom_clk, (a->flags & KR_FP_PARETO_CLOCK) != 0);
        KR_ASSERT_CLOSE(a->eff_energy_j, a->energy_j - 85.0 * a->time_s, 1e-15);
    }
    int clocks[8];
    assert_int_equal(kr_frontier_clocks(&f, clocks, 8), 3);
    assert_int_equal(clocks[0], 1410);
    assert_int_equal(clocks[2], 900);
    assert_int_equal(kr_frontier_clocks(&f, clocks, 2), KR_ERANGE);
    const kr_measured *first;
    size_t k, kall;
    kr_frontier_at_clock(&f, 1200, 0, &first, &kall);
    assert_int_equal(kall, 12);
    kr_frontier_at_clock(&f, 1200, 1, &first, &k);
    assert_true(k >= 1 && k < kall);
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(first[i].config.freq_mhz, 1200);
        assert_true(first[i].flags & KR_FP_PARETO_CLOCK);
        if (i)
            assert_true(first[i].time_s > first[i - 1].time_s);
    }
    kr_frontier_at_clock(&f, 1000, 0, &first, &k);
    assert_int_equal(k, 0);
    assert_null(first);
    /* Duplicate configurations and bad slots are rejected with the configuration named. */
    m[1] = m[0];
    KR_ASSERT_ERR(kr_frontier_set_points(&f, m, n, &e), KR_EINVAL, e, "appears twice");
    m[1].config.sms = 99;
    m[1].config.slot = 9;
    KR_ASSERT_ERR(kr_frontier_set_points(&f, m, n, &e), KR_EINVAL, e, "slot");
    assert_int_equal(f.n, n); /* unchanged on error */
    kr_frontier_free(&f);
}

static void assert_same_frontier(const kr_partition_frontier *a, const kr_partition_frontier *b)
{
    assert_string_equal(a->job_name, b->job_name);
    assert_string_equal(a->fingerprint, b->fingerprint);
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->variant, b->variant);
    assert_true(a->static_power_w == b->static_power_w);
    assert_int_equal(a->nslots, b->nslots);
    for (int i = 0; i < a->nslots; i++)
        assert_string_equal(a->slots[i], b->slots[i]);
    assert_string_equal(a->strategy, b->strategy);
    assert_string_equal(a->backend, b->backend);
    assert_true(a->seed == b->seed);
    assert_int_equal(a->space_size, b->space_size);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_memory_equal(&a->pts[i].config, &b->pts[i].config, sizeof(kr_config));
        assert_true(a->pts[i].time_s == b->pts[i].time_s);
        assert_true(a->pts[i].energy_j == b->pts[i].energy_j);
        assert_true(a->pts[i].eff_energy_j == b->pts[i].eff_energy_j);
        assert_true(a->pts[i].time_sd_s == b->pts[i].time_sd_s);
        assert_int_equal(a->pts[i].flags, b->pts[i].flags);
    }
}

static void partition_frontier_files_round_trip(void **state)
{
    (void)state;
    kr_job job;
    kr_partition_set set;
    fixture(&job, &set);
    kr_partition_frontier f, g;
    kr_frontier_init(&f, &job, kr_partition_find(&set, "fwd_mlp"));
    snprintf(f.strategy, sizeof f.strategy, "bo");
    snprintf(f.backend, sizeof f.backend, "sim");
    f.seed = 42;
    f.space_size = 540;
    kr_measured m[64];
    size_t n = make_points(m);
    m[3].time_sd_s = 1.0 / 3.0;
    m[3].energy_sd_j = 0.1;
    /* The same clock, slot and CTAs on NCCL (issue 31): another configuration, "kernel": "nccl"
     * in JSON and a kernel column in CSV, and faster, so it is on the frontier. */
    m[n] = m[0];
    m[n].config.kernel = KR_KERNEL_NCCL;
    m[n].time_s *= 0.9;
    n++;
    kr_error e = {0};
    assert_int_equal(kr_frontier_set_points(&f, m, n, &e), KR_OK);
    const char *dir = kr_test_tmpdir("frontier_files");
    char name[64], pj[1200], pc[1200];
    kr_frontier_file_name(f.key, f.variant, "json", name, sizeof name);
    assert_string_equal(name, "fwd_mlp.kareus.json");
    snprintf(pj, sizeof pj, "%s/%s", dir, name);
    kr_frontier_file_name(f.key, f.variant, "csv", name, sizeof name);
    snprintf(pc, sizeof pc, "%s/%s", dir, name);
    assert_int_equal(kr_frontier_write_json(pj, &f, &e), KR_OK);
    assert_int_equal(kr_frontier_write_csv(pc, &f, &e), KR_OK);
    assert_int_equal(kr_frontier_read(pj, &g, &e), KR_OK);
    assert_same_frontier(&f, &g);
    assert_int_equal(kr_frontier_check_job(&g, &job, &e), KR_OK);
    kr_frontier_free(&g);
    assert_int_equal(kr_frontier_read(pc, &g, &e), KR_OK);
    assert_same_frontier(&f, &g);
    size_t nccl = 0;
    for (size_t i = 0; i < g.n; i++)
        nccl += g.pts[i].config.kernel == KR_KERNEL_NCCL;
    assert_int_equal(nccl, 1);
    kr_frontier_free(&g);
    /* A CSV from before kernels (no kernel column) reads every point as tuned. */
    char *text;
    assert_int_equal(kr__read_file(pc, &text, NULL, &e), KR_OK);
    for (char *k = strstr(text, ",kernel"); k; k = strstr(k, ",kernel"))
        memmove(k, k + 7, strlen(k + 7) + 1);
    for (char *k = strstr(text, ",tuned\n"); k; k = strstr(k, ",tuned\n"))
        memmove(k, k + 6, strlen(k + 6) + 1);
    for (char *k = strstr(text, ",nccl\n"); k; k = strstr(k, ",nccl\n"))
        memmove(k, k + 5, strlen(k + 5) + 1);
    char old[1300];
    snprintf(old, sizeof old, "%s/old.csv", dir);
    kr_test_write(old, text);
    free(text); /* the NCCL row is now a second tuned one */
    KR_ASSERT_ERR(kr_frontier_read(old, &g, &e), KR_EINVAL, e, "appears twice");
    /* A copy is deep. */
    assert_int_equal(kr_frontier_copy(&g, &f, &e), KR_OK);
    assert_ptr_not_equal(g.pts, f.pts);
    assert_same_frontier(&f, &g);
    kr_frontier_free(&g);
    /* Another job is a mismatch. */
    kr_job other;
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &other, &e), KR_OK);
    KR_ASSERT_ERR(kr_frontier_check_job(&f, &other, &e), KR_EMISMATCH, e, "fingerprint");
    kr_frontier_free(&f);
}

static void partition_frontier_read_errors(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("frontier_errors");
    char path[1200];
    kr_partition_frontier f;
    kr_error e = {0};
    const char *head = "{\"schema\": \"kareus.frontier\", \"version\": 1, \"job\": {\"name\": \"d\", \"fingerprint\": "
                       "\"0123456789abcdef\"}, \"key\": \"fwd_attn\", \"variant\": \"kareus\", \"static_power_w\": 85, "
                       "\"slots\": [\"norm_0\", \"rope_0\"], \"search\": {\"strategy\": \"bo\", \"backend\": \"sim\", "
                       "\"seed\": 1, \"space_size\": 10}, \"points\": [";
    char text[2048];
    snprintf(path, sizeof path, "%s/f.json", dir);
    snprintf(text, sizeof text, "%s{\"freq_mhz\": 1410, \"slot\": \"rope_0\", \"sms\": \"six\", \"time_s\": 0.01, "
             "\"energy_j\": 3}]}", head);
    kr_test_write(path, text);
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "$.points[0].sms: expected an integer, found string");
    snprintf(text, sizeof text, "%s{\"freq_mhz\": 1410, \"slot\": \"attn_0\", \"sms\": 6, \"time_s\": 0.01, "
             "\"energy_j\": 3}]}", head);
    kr_test_write(path, text);
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "$.points[0].slot: expected one of the file's slots");
    snprintf(text, sizeof text, "%s{\"freq_mhz\": 1410, \"slot\": \"none\", \"sms\": 6, \"time_s\": 0.01, "
             "\"energy_j\": 3, \"colour\": 1}]}", head);
    kr_test_write(path, text);
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "$.points[0].colour: unknown field");
    snprintf(text, sizeof text, "%s{\"freq_mhz\": 1410, \"slot\": \"none\", \"sms\": 6, \"time_s\": -1, "
             "\"energy_j\": 3}]}", head);
    kr_test_write(path, text);
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_ERANGE, e, "$.points[0].time_s");
    kr_test_write(path, "{\"schema\": \"kareus.plan\"}");
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "expected \"kareus.frontier\"");
    snprintf(path, sizeof path, "%s/f.csv", dir);
    kr_test_write(path, "# kareus.frontier 1\n# job: d\n# fingerprint: 0123456789abcdef\n# key: k\n# variant: kareus\n"
                        "# static_power_w: 85\n# slots: norm_0\n# strategy: bo\n# backend: sim\n# seed: 1\n"
                        "# space_size: 4\nfreq_mhz,slot,sms,time_s,energy_j,eff_energy_j,time_sd_s,energy_sd_j,"
                        "pareto_eff,pareto_total,pareto_clock\n1410,norm_0,3,0.01,2,1.15,0,0,1,1,1\n"
                        "1410,norm_0,6,fast,2,1.15,0,0,1,1,1\n");
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "f.csv:14: column 'time_s': expected a finite number");
    kr_test_write(path, "# kareus.frontier 1\n# job: d\n# colour: red\n");
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "f.csv:3: unknown header 'colour'");
    kr_test_write(path, "freq_mhz,slot\n");
    KR_ASSERT_ERR(kr_frontier_read(path, &f, &e), KR_EPARSE, e, "f.csv:1: expected a kareus.frontier file");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pareto_matches_brute_force),
    cmocka_unit_test(pareto_rejects_bad_input),
    cmocka_unit_test(hypervolume_matches_brute_force),
    cmocka_unit_test(interpolation_staircase_and_linear),
    cmocka_unit_test(lower_hull_matches_brute_force),
    cmocka_unit_test(partition_frontier_flags_and_order),
    cmocka_unit_test(partition_frontier_files_round_trip),
    cmocka_unit_test(partition_frontier_read_errors),
};

KR_TEST_MAIN(tests)
