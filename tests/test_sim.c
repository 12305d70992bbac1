/*
 * test_sim.c — the GPU simulator: calibration sources, the physical properties the model must
 * have on every GPU and every partition of the default job and of a CP=2 TP=4 job (clock,
 * SMs, overlap, energy valley, overlap paying off), the three variants and non-partition work,
 * power throttling, timelines, the backend and its simulated device.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "kareus/kareus.h"
#include "util/util.h"

#define CP_JOB "llama3.2-3b-cp2tp4-mbs8-s4096"

/* ---- helpers -------------------------------------------------------------------------- */

/* Loads a built-in job and puts GPU gi of the catalog in it, with that GPU's planning range
 * and static power. */
static void job_on_gpu(const char *name, int gi, kr_job *job)
{
    kr_error e = {0};
    assert_int_equal(kr_job_builtin(name, job, &e), KR_OK);
    kr_catalog_gpu_at(gi, &job->gpu);
    job->clock_min_mhz = (int)job->gpu.plan_min_mhz;
    job->clock_max_mhz = (int)job->gpu.plan_max_mhz;
    job->clock_step_mhz = (int)job->gpu.plan_step_mhz;
    job->static_power_w = job->gpu.static_w;
    if (kr_job_validate(job, &e) != KR_OK) {
        print_error("%s\n", e.msg);
        fail();
    }
}

static const kr_smlist *smlist_of(const kr_job *job, const kr_partition *p)
{
    return p->coll.kind == KR_COLL_ALLREDUCE ? &job->sms_allreduce : &job->sms_gather;
}

static kr_measurement measure(const kr_job *job, const kr_partition *p, int f, int sms, int slot)
{
    kr_config c = {f, sms, slot, 0};
    kr_measurement m;
    kr_error e = {0};
    if (kr_sim_measure(job, p, &c, &m, &e) != KR_OK) {
        print_error("%s %s f=%d sms=%d slot=%d: %s\n", job->gpu.name, p->key, f, sms, slot, e.msg);
        fail();
    }
    return m;
}

static const char *const jobs_under_test[] = {"default", CP_JOB};

/* ---- calibration -------------------------------------------------------------------------- */

static void every_constant_has_a_labelled_source(void **state)
{
    (void)state;
    for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
        kr_gpu g;
        kr_catalog_gpu_at(gi, &g);
        for (int i = 0; i < KR_GPU_NPARAMS; i++) {
            const char *s = g.source[i];
            size_t n = strlen(s);
            if (n < 4 || (strncmp(s, "M: ", 3) && strncmp(s, "D: ", 3) && strncmp(s, "E: ", 3) && strncmp(s, "F: ", 3)) ||
                n >= KR_SOURCE_MAX - 1 || !isfinite(kr_gpu_param_value(&g, i)) || kr_gpu_param_value(&g, i) <= 0) {
                print_error("%s.%s = %g: source '%s' (need an M:/D:/E:/F: label, < %d chars, a positive value)\n",
                            g.name, kr_gpu_param(i)->field, kr_gpu_param_value(&g, i), s, KR_SOURCE_MAX - 1);
                fail();
            }
        }
        assert_true(g.tdp_w > g.static_w && g.static_w > g.idle_w);
        assert_true(g.v_max > g.v_min && g.v_floor_mhz < g.clock_max_mhz);
    }
}

/* The published anchors the constants are derived from must come back out of the model. */
static void gemm_and_allreduce_match_published_figures(void **state)
{
    (void)state;
    kr_gpu a100, h100;
    kr_error e = {0};
    assert_int_equal(kr_catalog_gpu_find("a100-sxm4-40gb", &a100, &e), KR_OK);
    assert_int_equal(kr_catalog_gpu_find("h100-sxm", &h100, &e), KR_OK);
    kr_sim_kernel_result r;
    assert_int_equal(kr_sim_gemm(&a100, 8192, 8192, 8192, 1410, 0, &r, &e), KR_OK);
    assert_true(r.tflops >= 257 && r.tflops <= 271.2); /* thonking.ai 257, MAMF 271.2 */
    assert_int_equal(kr_sim_gemm(&h100, 8192, 8192, 8192, 1980, 0, &r, &e), KR_OK);
    assert_true(fabs(r.tflops - 794.5) / 794.5 < 0.02); /* MAMF 794.5 */
    kr_collective ar = {KR_COLL_ALLREDUCE, "tp", 8, 0, 1073741824.0, ""};
    kr_sim_coll_result cr;
    assert_int_equal(kr_sim_collective(&a100, NULL, &ar, 24, 1410, &cr, &e), KR_OK);
    assert_true(fabs(cr.busbw_Bps - 230e9) / 230e9 < 0.02);
    assert_int_equal(kr_sim_collective(&h100, NULL, &ar, 16, 1980, &cr, &e), KR_OK);
    assert_true(fabs(cr.busbw_Bps - 480e9) / 480e9 < 0.02);
    /* Waiting and idle power are the catalog's measured figures. */
    assert_true(kr_sim_wait_power_w(&a100) == 85.0 && kr_sim_idle_power_w(&a100) == 55.0);
}

/* ---- the basic contract ------------------------------------------------------------------ */

static void measure_basic_and_deterministic(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    const kr_partition *p = kr_partition_find(set, "fwd_attn");
    assert_non_null(p);
    kr_measurement a = measure(&job, p, 1410, 24, 0), b = measure(&job, p, 1410, 24, 0);
    assert_true(a.time_s > 0 && a.energy_j >= job.static_power_w * a.time_s);
    assert_memory_equal(&a, &b, sizeof a);
    KR_ASSERT_CLOSE(a.eff_energy_j, a.energy_j - job.static_power_w * a.time_s, 1e-12);
    assert_int_equal(a.repeats, 1);
    kr_sim_result r;
    kr_config c = {1410, 24, 0, 0};
    assert_int_equal(kr_sim_partition(&job, p, &c, &r, &e), KR_OK);
    assert_true(r.time_s == a.time_s && r.energy_j == a.energy_j);
    /* Power never below the floor, never above TDP. */
    assert_true(r.max_power_w <= job.gpu.tdp_w + 1e-9 && r.energy_j / r.time_s >= r.floor_w);
    free(set);
}

static void bad_configs_are_rejected(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    const kr_partition *p = kr_partition_find(set, "fwd_mlp");
    kr_measurement m;
    kr_config c = {1400, 12, 0, 0};
    KR_ASSERT_ERR(kr_sim_measure(&job, p, &c, &m, &e), KR_ERANGE, e, "found 1400");
    c = (kr_config){1410, 108, 0, 0};
    KR_ASSERT_ERR(kr_sim_measure(&job, p, &c, &m, &e), KR_ERANGE, e, "comm SMs: expected 1..107");
    c = (kr_config){1410, 0, 0, 0};
    KR_ASSERT_ERR(kr_sim_measure(&job, p, &c, &m, &e), KR_ERANGE, e, "found 0");
    c = (kr_config){1410, 12, 7, 0};
    KR_ASSERT_ERR(kr_sim_measure(&job, p, &c, &m, &e), KR_ENOTFOUND, e, "slot");
    KR_ASSERT_ERR(kr_sim_measure(&job, NULL, &c, &m, &e), KR_EINVAL, e, "required");
    kr_config fc;
    KR_ASSERT_ERR(kr_sim_fixed_config(p, 1410, &fc, &e), KR_EINVAL, e, "searched");
    kr_sim_kernel_result g;
    KR_ASSERT_ERR(kr_sim_gemm(&job.gpu, 0, 1, 1, 1410, 0, &g, &e), KR_EINVAL, e, "positive");
    KR_ASSERT_ERR(kr_sim_gemm(&job.gpu, 1, 1, 1, 2000, 0, &g, &e), KR_EINVAL, e, "clock");
    double t;
    KR_ASSERT_ERR(kr_sim_p2p_time(&job, 1, 1e6, &t, &e), KR_ERANGE, e, "stage");
    kr_collective inter = {KR_COLL_ALLREDUCE, "tp", 16, 1, 1e6, ""};
    kr_sim_coll_result cr;
    KR_ASSERT_ERR(kr_sim_collective(&job.gpu, NULL, &inter, 8, 1410, &cr, &e), KR_EINVAL, e, "cluster");
    free(set);
}

/* ---- physical properties on every GPU and partition ------------------------------------------ */

typedef void (*partition_check)(const kr_job *job, const kr_partition *p, const int *clocks, int nclocks);

/* Runs check on every partition (kareus variant) of both jobs on every GPU. */
static void for_every_partition(partition_check check)
{
    kr_partition_set *set = malloc(sizeof *set);
    for (size_t ji = 0; ji < KR_ARRAY_LEN(jobs_under_test); ji++)
        for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
            kr_job job;
            job_on_gpu(jobs_under_test[ji], gi, &job);
            kr_error e = {0};
            assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
            int clocks[128];
            int n = kr_job_clocks(&job, clocks, 128);
            assert_true(n > 1);
            for (int pi = 0; pi < set->n; pi++)
                check(&job, &set->p[pi], clocks, n);
        }
    free(set);
}

/* Time never increases with the clock (clocks are highest first), for every SM count and slot,
 * and for the partition's compute alone. */
static void check_time_vs_clock(const kr_job *job, const kr_partition *p, const int *clocks, int n)
{
    const kr_smlist *sl = smlist_of(job, p);
    for (int s = 0; s < sl->n; s++)
        for (int slot = -1; slot < p->nslots; slot++)
            for (int ci = 1; ci < n; ci++) {
                kr_measurement hi = measure(job, p, clocks[ci - 1], sl->v[s], slot);
                kr_measurement lo = measure(job, p, clocks[ci], sl->v[s], slot);
                /* Overlapped work may be a hair faster at a lower clock: a slower comm kernel
                 * takes less HBM bandwidth from the op it overlaps. Allow 0.1 %. */
                if (hi.time_s > lo.time_s * (1 + 1e-3)) {
                    print_error("%s %s sms=%d slot=%d: %.9g s at %d MHz > %.9g s at %d MHz\n", job->gpu.name, p->key,
                                sl->v[s], slot, hi.time_s, clocks[ci - 1], lo.time_s, clocks[ci]);
                    fail();
                }
            }
}

static void time_never_increases_with_clock(void **state)
{
    (void)state;
    for_every_partition(check_time_vs_clock);
}

/* The comm kernel alone never gets slower with more SMs (1..N−1), at every clock. */
static void check_comm_vs_sms(const kr_job *job, const kr_partition *p, const int *clocks, int n)
{
    for (int ci = 0; ci < n; ci++) {
        double prev = INFINITY;
        for (int s = 1; s < (int)job->gpu.sm_count; s++) {
            kr_sim_coll_result r;
            kr_error e = {0};
            assert_int_equal(kr_sim_collective(&job->gpu, &job->cluster, &p->coll, s, clocks[ci], &r, &e), KR_OK);
            if (r.time_s > prev * (1 + 1e-12)) {
                print_error("%s %s: comm with %d SMs at %d MHz takes %.9g s > %.9g s with one fewer\n", job->gpu.name,
                            p->key, s, clocks[ci], r.time_s, prev);
                fail();
            }
            prev = r.time_s;
        }
    }
}

static void comm_never_slower_with_more_sms(void **state)
{
    (void)state;
    for_every_partition(check_comm_vs_sms);
}

/* An overlapped partition takes at least as long as each of its streams alone. */
static void check_overlap_bound(const kr_job *job, const kr_partition *p, const int *clocks, int n)
{
    kr_partition compute_only = *p;
    compute_only.coll.kind = KR_COLL_NONE;
    compute_only.nslots = 0;
    const kr_smlist *sl = smlist_of(job, p);
    for (int ci = 0; ci < n; ci++) {
        kr_measurement alone = measure(job, &compute_only, clocks[ci], 1, KR_SLOT_NONE);
        for (int s = 0; s < sl->n; s++) {
            kr_sim_coll_result cr;
            kr_error e = {0};
            assert_int_equal(kr_sim_collective(&job->gpu, &job->cluster, &p->coll, sl->v[s], clocks[ci], &cr, &e),
                             KR_OK);
            for (int slot = 0; slot < p->nslots; slot++) {
                kr_measurement m = measure(job, p, clocks[ci], sl->v[s], slot);
                if (m.time_s < alone.time_s * (1 - 1e-12) || m.time_s < cr.time_s * (1 - 1e-12)) {
                    print_error("%s %s f=%d sms=%d slot=%d: %.9g s < compute alone %.9g s or comm alone %.9g s\n",
                                job->gpu.name, p->key, clocks[ci], sl->v[s], slot, m.time_s, alone.time_s, cr.time_s);
                    fail();
                }
            }
        }
    }
}

static void overlap_at_least_slower_stream(void **state)
{
    (void)state;
    for_every_partition(check_overlap_bound);
}

/* Minimum total energy over the partition's configs at clock f. */
static double min_energy_at(const kr_job *job, const kr_partition *p, int f)
{
    const kr_smlist *sl = smlist_of(job, p);
    double best = INFINITY;
    for (int s = 0; s < sl->n; s++)
        for (int slot = 0; slot < p->nslots; slot++)
            best = KR_MIN(best, measure(job, p, f, sl->v[s], slot).energy_j);
    return best;
}

/* For the most GEMM-heavy partition of each job on each GPU: energy (static included) at the
 * lowest and at the highest planning clock are both above the minimum over the range (A100; on
 * Hopper at least the highest) — for the best kareus config at each clock and for the
 * sequential execution. */
static void energy_valley_inside_planning_range(void **state)
{
    (void)state;
    kr_partition_set *set = malloc(sizeof *set), *seq = malloc(sizeof *seq);
    for (size_t ji = 0; ji < KR_ARRAY_LEN(jobs_under_test); ji++)
        for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
            kr_job job;
            job_on_gpu(jobs_under_test[ji], gi, &job);
            kr_error e = {0};
            assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
            assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_SEQUENTIAL, seq, &e), KR_OK);
            const kr_partition *heavy = &set->p[0];
            for (int i = 1; i < set->n; i++)
                if (kr_partition_flops(&set->p[i]) > kr_partition_flops(heavy))
                    heavy = &set->p[i];
            const kr_partition *heavy_seq = kr_partition_find(seq, heavy->key);
            assert_non_null(heavy_seq);
            int clocks[128];
            int n = kr_job_clocks(&job, clocks, 128);
            double e_k[128], e_s[128], min_k = INFINITY, min_s = INFINITY;
            for (int ci = 0; ci < n; ci++) {
                kr_config c;
                kr_measurement m;
                assert_int_equal(kr_sim_fixed_config(heavy_seq, clocks[ci], &c, &e), KR_OK);
                assert_int_equal(kr_sim_measure(&job, heavy_seq, &c, &m, &e), KR_OK);
                e_s[ci] = m.energy_j;
                e_k[ci] = min_energy_at(&job, heavy, clocks[ci]);
                min_k = KR_MIN(min_k, e_k[ci]);
                min_s = KR_MIN(min_s, e_s[ci]);
            }
            /* A100 (its power model fitted to measured partitions): the valley is inside the
             * planning range. Hopper's voltage curve and floor have no measured basis yet
             * (docs/calibration.md): there only the top clock must not be the optimum. */
            int measured = strncmp(job.gpu.name, "a100", 4) == 0;
            int inside = e_k[0] > min_k && e_s[0] > min_s && (!measured || (e_k[n - 1] > min_k && e_s[n - 1] > min_s));
            if (!inside) {
                print_error("%s %s %s: no interior energy valley: kareus %.6g@%d %.6g@%d min %.6g; "
                            "sequential %.6g@%d %.6g@%d min %.6g\n",
                            jobs_under_test[ji], job.gpu.name, heavy->key, e_k[0], clocks[0], e_k[n - 1],
                            clocks[n - 1], min_k, e_s[0], clocks[0], e_s[n - 1], clocks[n - 1], min_s);
                fail();
            }
        }
    free(set);
    free(seq);
}

/* Default job: at every planning clock, the two nanobatches' partitions at their fastest
 * config take less time than the sequential execution of the same segment for the whole
 * microbatch. */
static void overlap_pays_off_on_default_job(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set), *seq = malloc(sizeof *seq);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_SEQUENTIAL, seq, &e), KR_OK);
    int clocks[64];
    int n = kr_job_clocks(&job, clocks, 64);
    for (int pi = 0; pi < set->n; pi++) {
        const kr_partition *p = &set->p[pi], *ps = kr_partition_find(seq, p->key);
        assert_non_null(ps);
        const kr_smlist *sl = smlist_of(&job, p);
        for (int ci = 0; ci < n; ci++) {
            double best = INFINITY;
            for (int s = 0; s < sl->n; s++)
                for (int slot = 0; slot < p->nslots; slot++)
                    best = KR_MIN(best, measure(&job, p, clocks[ci], sl->v[s], slot).time_s);
            kr_config c;
            assert_int_equal(kr_sim_fixed_config(ps, clocks[ci], &c, &e), KR_OK);
            kr_measurement m;
            assert_int_equal(kr_sim_measure(&job, ps, &c, &m, &e), KR_OK);
            if (!(2 * best < m.time_s)) {
                print_error("%s at %d MHz: two nanobatches %.6g s >= sequential %.6g s\n", p->key, clocks[ci],
                            2 * best, m.time_s);
                fail();
            }
        }
    }
    free(set);
    free(seq);
}

/* ---- variants and non-partition work ------------------------------------------------------- */

static void variants_launch_where_they_should(void **state)
{
    (void)state;
    kr_partition_set *set = malloc(sizeof *set);
    for (size_t ji = 0; ji < KR_ARRAY_LEN(jobs_under_test); ji++) {
        kr_job job;
        kr_error e = {0};
        assert_int_equal(kr_job_builtin(jobs_under_test[ji], &job, &e), KR_OK);
        for (int v = KR_VARIANT_SEQUENTIAL; v <= KR_VARIANT_DEFAULT_OVERLAP; v++) {
            assert_int_equal(kr_partition_catalog(&job, (kr_variant)v, set, &e), KR_OK);
            for (int pi = 0; pi < set->n; pi++) {
                const kr_partition *p = &set->p[pi];
                kr_config c;
                kr_sim_result r;
                assert_int_equal(kr_sim_fixed_config(p, 1200, &c, &e), KR_OK);
                assert_int_equal(c.sms, (int)job.gpu.nccl_ctas);
                assert_int_equal(kr_sim_partition(&job, p, &c, &r, &e), KR_OK);
                if (v == KR_VARIANT_SEQUENTIAL) {
                    /* compute, then the collective */
                    assert_true(r.comm_start_s == r.compute_end_s);
                    KR_ASSERT_CLOSE(r.time_s, r.comm_end_s + r.skew_s, 1e-9);
                } else {
                    assert_true(r.comm_start_s == 0.0 && r.comm_end_s <= r.time_s);
                }
            }
        }
    }
    free(set);
}

static void nonpartition_work(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set set;
    kr_error e = {0};
    int seen_coll = 0, seen_plain = 0;
    for (int stage = 0; stage < job.pp; stage++)
        for (int bwd = 0; bwd <= 1; bwd++) {
            assert_int_equal(kr_partition_nonpartition(&job, stage, bwd, &set, &e), KR_OK);
            for (int i = 0; i < set.n; i++) {
                const kr_partition *p = &set.p[i];
                kr_config c;
                kr_sim_result hi, lo;
                assert_int_equal(kr_sim_fixed_config(p, 1410, &c, &e), KR_OK);
                assert_int_equal(kr_sim_partition(&job, p, &c, &hi, &e), KR_OK);
                c.freq_mhz = 900;
                assert_int_equal(kr_sim_partition(&job, p, &c, &lo, &e), KR_OK);
                assert_true(hi.time_s > 0 && lo.time_s >= hi.time_s);
                if (p->coll.kind != KR_COLL_NONE) {
                    seen_coll++;
                    assert_true(hi.comm_start_s == hi.compute_end_s && hi.comm_end_s > hi.comm_start_s);
                } else {
                    seen_plain++;
                    assert_true(hi.comm_end_s == 0 && hi.compute_end_s == hi.time_s);
                }
            }
        }
    assert_true(seen_coll >= 2 && seen_plain >= 2); /* embed_fwd and lmhead_bwd carry one */
}

/* ---- throttling --------------------------------------------------------------------------- */

static void big_gemms_throttle_at_max_clock(void **state)
{
    (void)state;
    for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
        kr_gpu g;
        kr_catalog_gpu_at(gi, &g);
        kr_sim_kernel_result hi, lo;
        kr_error e = {0};
        assert_int_equal(kr_sim_gemm(&g, 8192, 8192, 8192, g.clock_max_mhz, 0, &hi, &e), KR_OK);
        assert_true(hi.throttled && hi.f_eff_mhz < g.clock_max_mhz);
        KR_ASSERT_CLOSE(hi.power_w, g.tdp_w, 1e-6);
        assert_int_equal(kr_sim_gemm(&g, 8192, 8192, 8192, g.plan_min_mhz, 0, &lo, &e), KR_OK);
        assert_false(lo.throttled);
        assert_true(lo.power_w < g.tdp_w && lo.f_eff_mhz == g.plan_min_mhz);
        /* A small GEMM does not reach TDP. */
        assert_int_equal(kr_sim_gemm(&g, 256, 256, 256, g.clock_max_mhz, 0, &lo, &e), KR_OK);
        assert_false(lo.throttled);
    }
    /* In a partition, the GEMM-heavy default job runs below the requested 1410 MHz. */
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    kr_config c = {1410, 12, 0, 0};
    kr_sim_result r;
    assert_int_equal(kr_sim_partition(&job, kr_partition_find(set, "fwd_mlp"), &c, &r, &e), KR_OK);
    assert_true(r.min_f_eff_mhz < 1400 && r.max_power_w <= job.gpu.tdp_w + 1e-9);
    free(set);
}

/* ---- timelines ---------------------------------------------------------------------------- */

static void timeline_is_consistent(void **state)
{
    (void)state;
    kr_partition_set *set = malloc(sizeof *set);
    kr_sim_timeline *tl = malloc(sizeof *tl);
    for (size_t ji = 0; ji < KR_ARRAY_LEN(jobs_under_test); ji++) {
        kr_job job;
        kr_error e = {0};
        assert_int_equal(kr_job_builtin(jobs_under_test[ji], &job, &e), KR_OK);
        assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
        for (int pi = 0; pi < set->n; pi++) {
            const kr_partition *p = &set->p[pi];
            for (int slot = -1; slot < p->nslots; slot++) {
                kr_config c = {1200, smlist_of(&job, p)->v[2], slot, 0};
                assert_int_equal(kr_sim_partition_timeline(&job, p, &c, tl, &e), KR_OK);
                kr_measurement m = measure(&job, p, c.freq_mhz, c.sms, c.slot);
                assert_true(tl->result.time_s == m.time_s && tl->result.energy_j == m.energy_j);
                double t = 0, energy = 0;
                for (int i = 0; i < tl->nsegments; i++) {
                    const kr_sim_segment *s = &tl->segments[i];
                    assert_true(s->start_s == t && s->end_s >= s->start_s);
                    assert_true(s->power_w >= kr_sim_floor_power_w(&job.gpu, s->f_eff_mhz) - 1e-9 &&
                                s->power_w <= job.gpu.tdp_w + 1e-9);
                    energy += s->power_w * (s->end_s - s->start_s);
                    t = s->end_s;
                }
                assert_true(t == tl->result.time_s);
                KR_ASSERT_CLOSE(energy, tl->result.energy_j, 1e-12);
                int ncompute = 0, ncomm = 0;
                double prev_end = 0;
                for (int i = 0; i < tl->nevents; i++) {
                    const kr_sim_event *ev = &tl->events[i];
                    assert_true(ev->start_s >= 0 && ev->end_s <= tl->result.time_s && ev->end_s > ev->start_s);
                    assert_true(ev->power_w >= kr_sim_floor_power_w(&job.gpu, job.gpu.plan_min_mhz) - 1e-9);
                    if (ev->stream == KR_SIM_STREAM_COMPUTE) {
                        assert_string_equal(ev->name, p->ops[ncompute].name);
                        assert_true(ev->start_s == prev_end);
                        prev_end = ev->end_s;
                        ncompute++;
                    } else {
                        ncomm++;
                        assert_true(ev->start_s == tl->result.comm_start_s && ev->end_s == tl->result.comm_end_s);
                        /* The comm launches when the ops before its slot are done. */
                        int first = slot == KR_SLOT_NONE ? p->nops : p->slots[slot].op_index;
                        double expect = first == 0 ? 0.0 : tl->events[first - 1].end_s;
                        assert_true(ev->start_s == expect);
                    }
                }
                assert_int_equal(ncompute, p->nops);
                assert_int_equal(ncomm, 1);
            }
        }
        /* The JSON form carries the same numbers. */
        const kr_partition *p = &set->p[0];
        kr_config c = {1200, smlist_of(&job, p)->v[0], 0, 0};
        assert_int_equal(kr_sim_partition_timeline(&job, p, &c, tl, &e), KR_OK);
        char path[1200];
        snprintf(path, sizeof path, "%s/t.json", kr_test_tmpdir("sim_timeline"));
        assert_int_equal(kr_sim_timeline_write_json(path, &job, p, &c, tl, &e), KR_OK);
        json_error_t je;
        json_t *root = json_load_file(path, 0, &je);
        assert_non_null(root);
        assert_string_equal(json_string_value(json_object_get(root, "schema")), "kareus.timeline");
        assert_true(json_real_value(json_object_get(json_object_get(root, "result"), "time_s")) == tl->result.time_s);
        assert_int_equal((int)json_array_size(json_object_get(root, "events")), tl->nevents);
        json_decref(root);
    }
    free(tl);
    free(set);
}

/* ---- raw helpers ------------------------------------------------------------------------- */

static void p2p_and_collective_helpers(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job); /* 2 stages of 8 GPUs on 2 nodes of 8: the send crosses nodes */
    kr_error e = {0};
    double t;
    assert_int_equal(kr_sim_p2p_time(&job, 0, 1e9, &t, &e), KR_OK);
    KR_ASSERT_CLOSE(t, job.gpu.coll_alpha_s + job.cluster.inter_node_latency_s + 1e9 / job.cluster.inter_node_bw_Bps,
                    1e-12);
    job.tp = 4; /* 2 stages of 4 GPUs on one node: NVLink */
    job.cluster.nodes = 1;
    assert_int_equal(kr_sim_p2p_time(&job, 0, 1e9, &t, &e), KR_OK);
    KR_ASSERT_CLOSE(t, job.gpu.coll_alpha_s + 1e9 / job.gpu.p2p_bw_Bps, 1e-12);
    assert_int_equal(kr_sim_p2p_time(&job, 0, 0, &t, &e), KR_OK);
    assert_true(t == 0);
    /* A collective over one rank, or of nothing, takes no time. */
    kr_collective one = {KR_COLL_ALLREDUCE, "tp", 1, 0, 1e6, ""};
    kr_sim_coll_result cr;
    assert_int_equal(kr_sim_collective(&job.gpu, NULL, &one, 8, 1410, &cr, &e), KR_OK);
    assert_true(cr.time_s == 0);
    /* Inter-node groups are limited by the cluster link and pay its latency. */
    kr_collective inter = {KR_COLL_ALLREDUCE, "tp", 16, 1, 1e9, ""};
    assert_int_equal(kr_sim_collective(&job.gpu, &job.cluster, &inter, 24, 1410, &cr, &e), KR_OK);
    assert_true(cr.busbw_Bps <= job.cluster.inter_node_bw_Bps);
    /* Few CTAs at a low clock are slower than at the max clock; many are not. */
    kr_collective ar = {KR_COLL_ALLREDUCE, "tp", 8, 0, 1e8, ""};
    kr_sim_coll_result a, b;
    assert_int_equal(kr_sim_collective(&job.gpu, NULL, &ar, 4, 1410, &a, &e), KR_OK);
    assert_int_equal(kr_sim_collective(&job.gpu, NULL, &ar, 4, 600, &b, &e), KR_OK);
    assert_true(b.time_s > a.time_s * 1.2);
    /* An HBM-streaming kernel: flat in time above the memory knee, slower below it, and cheaper
     * in power at a lower clock. */
    kr_sim_kernel_result s1, s2, s3;
    assert_int_equal(kr_sim_stream(&job.gpu, 1e9, 1410, &s1, &e), KR_OK);
    assert_int_equal(kr_sim_stream(&job.gpu, 1e9, 900, &s2, &e), KR_OK);
    assert_int_equal(kr_sim_stream(&job.gpu, 1e9, 500, &s3, &e), KR_OK);
    assert_true(s1.time_s == s2.time_s && s3.time_s > s2.time_s && s2.power_w < s1.power_w);
    KR_ASSERT_CLOSE(s1.time_s, job.gpu.launch_s + 1e9 / (job.gpu.hbm_bw_Bps * job.gpu.mem_eff), 1e-12);
    KR_ASSERT_ERR(kr_sim_stream(&job.gpu, 0, 1410, &s1, &e), KR_EINVAL, e, "bytes");
    /* Voltage: flat at the floor, v_max at the top. */
    KR_ASSERT_CLOSE(kr_sim_voltage(&job.gpu, 300), job.gpu.v_min, 1e-12);
    KR_ASSERT_CLOSE(kr_sim_voltage(&job.gpu, job.gpu.clock_max_mhz), job.gpu.v_max, 1e-12);
}

/* ---- the backend and the simulated device ------------------------------------------------- */

typedef struct fake_clock {
    double t;
} fake_clock;

static double fake_now(void *ud)
{
    return ((fake_clock *)ud)->t;
}

static void backend_measure_matches(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_backend *b;
    kr_error e = {0};
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "sim");
    assert_true(kr_sim_backend_is(b));
    kr_partition_set *set = malloc(sizeof *set);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    kr_config c = {1200, 12, 1, 0};
    kr_measurement a, m = measure(&job, &set->p[1], 1200, 12, 1);
    assert_int_equal(kr_backend_measure(b, &set->p[1], &c, &a), KR_OK);
    assert_memory_equal(&a, &m, sizeof a);
    c.freq_mhz = 1201;
    assert_int_equal(kr_backend_measure(b, &set->p[1], &c, &a), KR_ERANGE);
    assert_non_null(strstr(kr_backend_errmsg(b), "found 1201"));
    int count;
    assert_int_equal(kr_backend_device_count(b, &count), KR_OK);
    assert_int_equal(count, 1);
    kr_backend_destroy(b);
    kr_sim_config bad = {0};
    bad.activity = 2;
    KR_ASSERT_ERR(kr_sim_backend_create(&job, &bad, &b, &e), KR_EINVAL, e, "activity");
    job.tp = 5;
    KR_ASSERT_ERR(kr_sim_backend_create(&job, NULL, &b, &e), KR_EINVAL, e, "tp");
    free(set);
}

static void device_energy_counter_and_clock_log(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    fake_clock clk = {100.0};
    kr_sim_config o = {0};
    o.device_count = 2;
    o.now_s = fake_now;
    o.now_ud = &clk;
    kr_backend *b;
    kr_error e = {0};
    assert_int_equal(kr_sim_backend_create(&job, &o, &b, &e), KR_OK);
    int count, cur, lo, hi;
    assert_int_equal(kr_backend_device_count(b, &count), KR_OK);
    assert_int_equal(count, 2);
    /* Unlocked: idle power at the idle clock. */
    double en, p;
    clk.t = 110.0;
    assert_int_equal(kr_backend_read_energy(b, 0, &en), KR_OK);
    KR_ASSERT_CLOSE(en, 10 * job.gpu.idle_w, 1e-12);
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_true(cur == 210 && lo == 0 && hi == 0);
    /* Locked: the floor power at the locked clock (activity 0). */
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_OK);
    clk.t = 115.0;
    assert_int_equal(kr_backend_read_energy(b, 0, &en), KR_OK);
    KR_ASSERT_CLOSE(en, 10 * job.gpu.idle_w + 5 * kr_sim_floor_power_w(&job.gpu, 1200), 1e-12);
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_true(cur == 1200 && lo == 1200 && hi == 1200);
    /* Fully active at 1410 MHz: a big GEMM's power, capped at TDP. */
    assert_int_equal(kr_sim_backend_set_activity(b, 0, 1.0), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 1410, 1410), KR_OK);
    assert_int_equal(kr_backend_read_power(b, 0, &p), KR_OK);
    KR_ASSERT_CLOSE(p, job.gpu.tdp_w, 1e-6);
    assert_int_equal(kr_backend_set_clock(b, 0, 900, 900), KR_OK);
    double p900;
    assert_int_equal(kr_backend_read_power(b, 0, &p900), KR_OK);
    assert_true(p900 > kr_sim_floor_power_w(&job.gpu, 900) && p900 < p);
    clk.t = 117.0;
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_OK);
    assert_int_equal(kr_backend_read_energy(b, 0, &en), KR_OK);
    KR_ASSERT_CLOSE(en, 10 * job.gpu.idle_w + 5 * kr_sim_floor_power_w(&job.gpu, 1200) + 2 * p900, 1e-12);
    /* A time source stepping back adds nothing, and nothing is counted twice afterwards. */
    double before = en;
    clk.t = 116.0;
    assert_int_equal(kr_backend_read_energy(b, 0, &en), KR_OK);
    assert_true(en == before);
    clk.t = 118.0;
    assert_int_equal(kr_backend_read_energy(b, 0, &en), KR_OK);
    KR_ASSERT_CLOSE(en, before + 1 * job.gpu.idle_w, 1e-12);
    clk.t = 117.0;
    /* Device 1 stayed idle all along. */
    assert_int_equal(kr_backend_read_energy(b, 1, &en), KR_OK);
    KR_ASSERT_CLOSE(en, 17 * job.gpu.idle_w, 1e-12);
    /* The log holds every change, in order. */
    kr_sim_clock_event log[8];
    int n;
    assert_int_equal(kr_sim_backend_clock_log(b, log, 8, &n), KR_OK);
    assert_int_equal(n, 4);
    assert_true(log[0].time_s == 110.0 && log[0].dev == 0 && log[0].min_mhz == 1200 && log[0].max_mhz == 1200);
    assert_true(log[1].time_s == 115.0 && log[1].max_mhz == 1410);
    assert_true(log[2].max_mhz == 900 && log[3].time_s == 117.0 && log[3].min_mhz == 0 && log[3].max_mhz == 0);
    assert_int_equal(kr_sim_backend_clock_log(b, log, 1, &n), KR_OK);
    assert_int_equal(n, 4);
    /* Bad requests. */
    assert_int_equal(kr_backend_set_clock(b, 2, 1200, 1200), KR_ERANGE);
    assert_int_equal(kr_backend_set_clock(b, 0, 1201, 1201), KR_ERANGE);
    assert_non_null(strstr(kr_backend_errmsg(b), "1201"));
    assert_int_equal(kr_backend_set_clock(b, 0, 1410, 900), KR_ERANGE);
    assert_int_equal(kr_sim_backend_set_activity(b, 0, -0.5), KR_ERANGE);
    int clocks[200], nc;
    assert_int_equal(kr_backend_supported_clocks(b, 0, clocks, 200, &nc), KR_OK);
    assert_int_equal(nc, 81);
    assert_true(clocks[0] == 1410 && clocks[80] == 210);
    assert_int_equal(kr_backend_supported_clocks(b, 0, clocks, 10, &nc), KR_ERANGE);
    assert_int_equal(kr_sim_backend_clock_log(NULL, log, 8, &n), KR_EINVAL);
    kr_backend_destroy(b);
}


/* ---- sim v2: floor, DVFS depth, the two comm kernels, the calibration harness --------------- */

static void floor_power_follows_the_clock(void **state)
{
    (void)state;
    for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
        kr_gpu g;
        kr_catalog_gpu_at(gi, &g);
        /* The floor is static_w at the top clock and idle_w at the idle clock (both measured), and
         * falls monotonically in between. */
        KR_ASSERT_CLOSE(kr_sim_floor_power_w(&g, g.clock_max_mhz), g.static_w, 1e-9);
        KR_ASSERT_CLOSE(kr_sim_floor_power_w(&g, g.clock_min_mhz), g.idle_w, 1e-3);
        double prev = 0;
        for (int f = (int)g.clock_min_mhz; f <= (int)g.clock_max_mhz; f += (int)g.clock_step_mhz) {
            double p = kr_sim_floor_power_w(&g, f);
            assert_true(p >= prev - 1e-12);
            prev = p;
        }
        /* The catalog's c is the one its own anchor derives. */
        double tf = strncmp(g.name, "a100", 4) == 0 ? 264.0 : 794.5;
        KR_ASSERT_CLOSE(kr_sim_derive_dyn_coeff(&g, tf), g.dyn_coeff_w, 2e-4);
    }
}

/* Lowest energy over the clocks of the planning range at the best comm config, and at 1410 MHz. */
static void best_energy(const kr_job *job, const kr_partition *p, int clock, double *e_out)
{
    const kr_smlist *sl = smlist_of(job, p);
    double best = INFINITY;
    for (int s = 0; s < sl->n; s++)
        for (int slot = 0; slot < p->nslots; slot++)
            best = KR_MIN(best, measure(job, p, clock, sl->v[s], slot).energy_j);
    *e_out = best;
}

static void dvfs_pays_on_gemm_heavy_partitions(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    int clocks[64];
    int n = kr_job_clocks(&job, clocks, 64);
    for (int pi = 0; pi < set->n; pi++) {
        const kr_partition *p = &set->p[pi];
        double e_max, e_min = INFINITY;
        int f_min = 0;
        best_energy(&job, p, clocks[0], &e_max);
        for (int ci = 0; ci < n; ci++) {
            double e1;
            best_energy(&job, p, clocks[ci], &e1);
            if (e1 < e_min) {
                e_min = e1;
                f_min = clocks[ci];
            }
        }
        /* The fitted model (loaded V(f), floor ∝ f·V²) puts every GEMM-heavy partition's energy
         * at its optimal clock 20-30 % below its energy at 1410 MHz (docs/calibration.md); assert
         * at least 15 %, with the optimum strictly inside the planning range. */
        print_message("%s: optimum %d MHz, %.1f %% below 1410 MHz\n", p->key, f_min, 100 * (1 - e_min / e_max));
        assert_true(e_min < 0.85 * e_max);
        assert_true(f_min > clocks[n - 1] && f_min < clocks[0]);
    }
    free(set);
}

static void comm_kernels_differ_as_modelled(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_collective c = {KR_COLL_ALLREDUCE, "tp", 8, 0, 100e6, "x"};
    kr_sim_coll_result hi, lo, nhi, nlo;
    kr_error e = {0};
    /* A CTA-starved tuned kernel slows as the SM clock falls — by (1410/900)^comm_clock_exp, the
     * exponent fitted to the measured partition's sequential rows —; NCCL's 24 channels are
     * link-bound at 1200 MHz and do not. */
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_TUNED, 3, 1410, &hi, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_TUNED, 3, 900, &lo, &e), KR_OK);
    print_message("tuned, 3 CTAs: %.4g ms at 1410 MHz, %.4g ms at 900 MHz\n", 1e3 * hi.time_s, 1e3 * lo.time_s);
    assert_true(lo.time_s > hi.time_s * (1 + 0.9 * (pow(1410.0 / 900.0, job.gpu.comm_clock_exp) - 1)));
    assert_true(job.gpu.comm_clock_exp > 0);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 24, 1410, &nhi, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 24, 1200, &nlo, &e), KR_OK);
    KR_ASSERT_CLOSE(nlo.time_s, nhi.time_s, 1e-12);
    /* Bandwidth saturates in the CTA count: doubling 15 -> 30 CTAs gains less than 2x. */
    kr_sim_coll_result t15, t30;
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_TUNED, 15, 1410, &t15, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_TUNED, 30, 1410, &t30, &e), KR_OK);
    assert_true(t30.time_s < t15.time_s && t15.time_s < 2 * t30.time_s * 0.95);
    /* HBM bytes per bus byte: 2S per GPU for the read-based kernel (n/(n-1) of the bus bytes),
     * nccl_hbm_factor·S for NCCL's ring; each holds the SMs it was given. */
    double bus = 2.0 * 7 / 8 * c.bytes;
    KR_ASSERT_CLOSE(hi.hbm_Bps / (bus / (hi.time_s - job.gpu.coll_alpha_s)), 8.0 / 7.0, 1e-9);
    KR_ASSERT_CLOSE(nhi.hbm_Bps / (bus / (nhi.time_s - job.gpu.coll_alpha_s)), job.gpu.nccl_hbm_factor / (2.0 * 7 / 8),
                    1e-9);
    assert_true(hi.sms == 3 && nhi.sms == 24);
    /* Inside a partition: the baselines run NCCL on nccl_ctas SMs, Kareus the tuned kernel. */
    kr_partition_set *set = malloc(sizeof *set);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, set, &e), KR_OK);
    kr_config cfg;
    kr_sim_result r;
    assert_int_equal(kr_sim_fixed_config(&set->p[0], 1410, &cfg, &e), KR_OK);
    assert_int_equal(kr_sim_partition(&job, &set->p[0], &cfg, &r, &e), KR_OK);
    assert_true(r.comm_kernel == KR_SIM_NCCL && r.comm_sms == (int)job.gpu.nccl_ctas);
    KR_ASSERT_CLOSE(r.comm_hbm_bytes, job.gpu.nccl_hbm_factor * set->p[0].coll.bytes, 1e-6);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e), KR_OK);
    kr_config k = {1410, 12, 0, 0};
    assert_int_equal(kr_sim_partition(&job, &set->p[0], &k, &r, &e), KR_OK);
    assert_true(r.comm_kernel == KR_SIM_TUNED && r.comm_sms == 12);
    KR_ASSERT_CLOSE(r.comm_hbm_bytes, 2.0 * set->p[0].coll.bytes, 1e-6);
    /* Where energy goes adds up: the floor part is below the total, the overheads are time. */
    assert_true(r.floor_energy_j > 0 && r.floor_energy_j < r.energy_j);
    assert_true(r.skew_s > 0 && r.dispatch_s > 0 && r.time_s > r.skew_s + r.dispatch_s);
    free(set);
}

/* NCCL's channels are SM-issued copies too: few of them slow with the clock by the same law;
 * the default 24 stay link-bound down to about 1070 MHz and slow below it. */
static void nccl_follows_the_clock_law(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_collective c = {KR_COLL_ALLREDUCE, "tp", 8, 0, 100e6, "x"};
    kr_sim_coll_result hi, lo, d14, d12, d09;
    kr_error e = {0};
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 4, 1410, &hi, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 4, 900, &lo, &e), KR_OK);
    double a = job.gpu.coll_alpha_s;
    KR_ASSERT_CLOSE((lo.time_s - a) / (hi.time_s - a), pow(1410.0 / 900.0, job.gpu.comm_clock_exp), 1e-9);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 24, 1410, &d14, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 24, 1200, &d12, &e), KR_OK);
    assert_int_equal(kr_sim_collective_kernel(&job.gpu, &job.cluster, &c, KR_SIM_NCCL, 24, 900, &d09, &e), KR_OK);
    KR_ASSERT_CLOSE(d12.time_s, d14.time_s, 1e-12);
    assert_true(d09.time_s > d14.time_s * 1.05);
}

/* Overlap costs both streams, by the mechanisms of docs/sim.md: the comm kernel's SMs and
 * traffic slow the compute (more for NCCL, whose ring stages 5.25·S through HBM, than for the
 * read-based kernel at the same CTAs), and the compute's HBM traffic slows the comm's
 * latency-bound copies. Each mechanism switched off removes its share. NCCL-overlapped compute
 * stays inside the published envelope (18.9 % average, 40 % at most: arXiv 2507.03114). */
static void overlap_costs_both_streams(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *k = malloc(sizeof *k), *b = malloc(sizeof *b);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, k, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, b, &e), KR_OK);
    for (int i = 0; i < k->n; i++) {
        const kr_partition *p = &k->p[i], *q = kr_partition_find(b, p->key);
        assert_non_null(q);
        for (int f = 1410; f >= 1020; f -= 390) {
            kr_config cn = {f, q->fixed_sms, q->fixed_slot, 0};
            kr_sim_overlap on, ot, off;
            assert_int_equal(kr_sim_overlap_effects(&job, q, &cn, KR_SIM_NCCL, &on, &e), KR_OK);
            assert_int_equal(kr_sim_overlap_effects(&job, p, &cn, KR_SIM_TUNED, &ot, &e), KR_OK);
            print_message("%s %d MHz: NCCL compute +%.1f%% comm %+.1f%%; tuned (same CTAs) compute +%.1f%% comm %+.1f%%\n",
                          p->key, f, 100 * on.compute_slowdown, 100 * on.comm_slowdown, 100 * ot.compute_slowdown,
                          100 * ot.comm_slowdown);
            assert_true(on.compute_slowdown > 0.05 && on.compute_slowdown <= 0.40);
            assert_true(on.comm_slowdown > 0 && ot.comm_slowdown > 0);
            assert_true(on.compute_slowdown > ot.compute_slowdown);
            assert_true(on.compute_alone_s <= on.compute_s && on.comm_alone_s <= on.comm_s);
            /* Each direction's own mechanism off: that stream's slowdown falls. */
            kr_job j2 = job;
            j2.gpu.comm_lat_slow = 0;
            assert_int_equal(kr_sim_overlap_effects(&j2, q, &cn, KR_SIM_NCCL, &off, &e), KR_OK);
            assert_true(off.comm_slowdown < on.comm_slowdown);
            j2 = job;
            j2.gpu.kappa_tensor = 0;
            assert_int_equal(kr_sim_overlap_effects(&j2, q, &cn, KR_SIM_NCCL, &off, &e), KR_OK);
            assert_true(off.compute_slowdown < on.compute_slowdown);
        }
    }
    kr_config bad = {1410, 24, 0, 0};
    kr_sim_overlap o;
    KR_ASSERT_ERR(kr_sim_overlap_effects(&job, &k->p[0], &bad, (kr_sim_comm_kernel)7, &o, &e), KR_EINVAL, e,
                  "expected tuned or nccl");
    free(k);
    free(b);
}

#define CALIB KR_TESTDATA_DIR "/data/calibration/a100-attn-tp2/calib.json"

static void calibration_set_reads_predicts_and_fits(void **state)
{
    (void)state;
    kr_sim_calib *cs = calloc(1, sizeof *cs);
    kr_error e = {0};
    assert_int_equal(kr_sim_calib_read(CALIB, cs, &e), KR_OK);
    assert_int_equal(cs->n, 640 + 236);
    assert_string_equal(cs->partition, "fwd_attn");
    /* Row 1 of default_clock.csv: window -1,-1, 1 CTA of 512, medians of 3 repetitions, energy
     * per GPU = total / 2 ranks. */
    const kr_sim_calib_row *r0 = &cs->rows[0];
    assert_true(r0->start == -1 && r0->end == -1 && r0->ctas == 1 && r0->block == 512 && r0->clock_mhz == 1410);
    KR_ASSERT_CLOSE(r0->time_s, 0.011435330114332586, 1e-15);
    KR_ASSERT_CLOSE(r0->energy_j, 3.3235587905935966 / 2, 1e-15);
    assert_true(cs->rows[640].clock_mhz == 1200);
    /* Deterministic predictions; the check sees both clocks. */
    kr_sim_result a, b;
    assert_int_equal(kr_sim_calib_predict(cs, NULL, 17, &a, &e), KR_OK);
    assert_int_equal(kr_sim_calib_predict(cs, NULL, 17, &b, &e), KR_OK);
    assert_true(a.time_s == b.time_s && a.energy_j == b.energy_j);
    kr_sim_calib_report rep;
    assert_int_equal(kr_sim_calib_check(cs, NULL, KR_CALIB_ALL, &rep, &e), KR_OK);
    assert_int_equal(rep.nclocks, 2);
    assert_true(rep.clocks[0].rows == 640 && rep.clocks[1].rows == 236 && rep.clocks[1].pairs == 236);
    assert_true(isfinite(rep.clocks[0].time_med) && isfinite(rep.clocks[1].meas_energy_ratio));
    kr_sim_calib_report odd, even;
    assert_int_equal(kr_sim_calib_check(cs, NULL, KR_CALIB_ODD, &odd, &e), KR_OK);
    assert_int_equal(kr_sim_calib_check(cs, NULL, KR_CALIB_EVEN, &even, &e), KR_OK);
    assert_int_equal(odd.clocks[0].rows + even.clocks[0].rows, 640);
    /* The fit is deterministic and no worse than its start on the rows it fits. */
    kr_gpu *f1 = malloc(sizeof *f1), *f2 = malloc(sizeof *f2);
    double rms1, rms2;
    assert_int_equal(kr_sim_calib_fit(cs, &cs->job.gpu, KR_CALIB_ODD, f1, &rms1, &e), KR_OK);
    assert_int_equal(kr_sim_calib_fit(cs, &cs->job.gpu, KR_CALIB_ODD, f2, &rms2, &e), KR_OK);
    assert_true(rms1 == rms2 && f1->v_max == f2->v_max && f1->attn_eff == f2->attn_eff);
    assert_true(f1->v_max >= 0.76 && f1->v_max <= 1.1 && f1->tuned_cap_frac <= 1.0);
    assert_true(f1->comm_lat_slow >= 0 && f1->comm_lat_slow <= 3.0);
    /* A constant held: it keeps its value, the others move; an unfitted one is refused. */
    int fix[] = {KR_GPU_P_comm_clock_exp};
    kr_gpu start = cs->job.gpu;
    start.comm_clock_exp = 0.3;
    assert_int_equal(kr_sim_calib_fit_fixed(cs, &start, KR_CALIB_ODD, fix, 1, f2, &rms2, &e), KR_OK);
    assert_true(f2->comm_clock_exp == 0.3 && isfinite(rms2));
    int bad[] = {KR_GPU_P_sm_count};
    KR_ASSERT_ERR(kr_sim_calib_fit_fixed(cs, &start, KR_CALIB_ODD, bad, 1, f2, &rms2, &e), KR_EINVAL, e,
                  "sm_count: expected one of the fitted");
    KR_ASSERT_CLOSE(kr_sim_floor_power_w(f1, f1->clock_min_mhz), f1->idle_w, 1e-3);
    free(f1);
    free(f2);
    kr_sim_calib_free(cs);
    /* Spearman: a perfect ranking, a reversed one, ties. */
    double x[] = {1, 2, 3, 4}, y[] = {10, 20, 30, 40}, z[] = {4, 3, 2, 1}, t[] = {1, 1, 2, 2};
    KR_ASSERT_CLOSE(kr_sim_spearman(x, y, 4), 1.0, 1e-12);
    KR_ASSERT_CLOSE(kr_sim_spearman(x, z, 4), -1.0, 1e-12);
    KR_ASSERT_CLOSE(kr_sim_spearman(x, t, 4), 0.894427190999916, 1e-12);
    assert_true(isnan(kr_sim_spearman(x, y, 1)));
    free(cs);
}

static void bad_calibration_sets_are_rejected(void **state)
{
    (void)state;
    char dir[] = "/tmp/kr-calib-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], csv[256];
    snprintf(csv, sizeof csv, "%s/m.csv", dir);
    snprintf(path, sizeof path, "%s/calib.json", dir);
    static const struct {
        const char *manifest, *csv, *want;
        int rc;
    } cases[] = {
        {"{\"schema\":\"kareus.calib\",\"version\":1,\"job\":\"" KR_TESTDATA_DIR
         "/data/calibration/a100-attn-tp2/job.json\",\"partition\":\"fwd_attn\",\"files\":[{\"file\":\"m.csv\",\"clock\":1200}]}",
         "overlap_start,overlap_end,comm_sm_number,comm_block_size,0:time (s),0:total energy (J)\n7,7,1,512,0.01,1\n",
         "window 7..7 outside", KR_ERANGE},
        {"{\"schema\":\"kareus.calib\",\"version\":1,\"job\":\"" KR_TESTDATA_DIR
         "/data/calibration/a100-attn-tp2/job.json\",\"partition\":\"fwd_attn\",\"files\":[{\"file\":\"m.csv\",\"clock\":1200}]}",
         "overlap_start,overlap_end,comm_sm_number,comm_block_size,0:time (s),0:total energy (J)\n0,6,1,512,-0.01,1\n",
         "line 2: repetition 0: expected positive", KR_ERANGE},
        {"{\"schema\":\"kareus.calib\",\"version\":1,\"job\":\"" KR_TESTDATA_DIR
         "/data/calibration/a100-attn-tp2/job.json\",\"partition\":\"fwd_attn\",\"files\":[{\"file\":\"m.csv\",\"clock\":1200}]}",
         "overlap_start,overlap_end,comm_sm_number,comm_block_size\n0,6,1,512\n", "expected repetition columns",
         KR_EPARSE},
        {"{\"schema\":\"kareus.calib\",\"version\":1,\"job\":\"" KR_TESTDATA_DIR
         "/data/calibration/a100-attn-tp2/job.json\",\"partition\":\"fwd_attn\",\"files\":[{\"file\":\"m.csv\",\"clock\":5000}]}",
         "", "$.files[0].clock", KR_EPARSE},
        {"{\"schema\":\"kareus.calib\",\"version\":1,\"job\":\"" KR_TESTDATA_DIR
         "/data/calibration/a100-attn-tp2/job.json\",\"partition\":\"nope\",\"files\":[{\"file\":\"m.csv\",\"clock\":1200}]}",
         "overlap_start,overlap_end,comm_sm_number,comm_block_size,0:time (s),0:total energy (J)\n0,6,1,512,0.01,1\n",
         "no partition 'nope'", KR_ENOTFOUND},
        {"{\"schema\":\"kareus.job\",\"version\":1}", "", "$.schema", KR_EPARSE},
    };
    for (size_t i = 0; i < KR_ARRAY_LEN(cases); i++) {
        FILE *f = fopen(path, "w");
        fputs(cases[i].manifest, f);
        fclose(f);
        f = fopen(csv, "w");
        fputs(cases[i].csv, f);
        fclose(f);
        kr_sim_calib *cs = calloc(1, sizeof *cs);
        kr_error e = {0};
        int rc = kr_sim_calib_read(path, cs, &e);
        if (rc != cases[i].rc || strstr(e.msg, cases[i].want) == NULL) {
            print_error("case %zu: rc %d (want %d), message '%s' (want '%s')\n", i, rc, cases[i].rc, e.msg,
                        cases[i].want);
            fail();
        }
        assert_int_equal(cs->n, 0);
        assert_null(cs->rows);
        free(cs);
    }
    unlink(path);
    unlink(csv);
    rmdir(dir);
}

int main(int argc, char **argv);

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_constant_has_a_labelled_source),
    cmocka_unit_test(gemm_and_allreduce_match_published_figures),
    cmocka_unit_test(measure_basic_and_deterministic),
    cmocka_unit_test(bad_configs_are_rejected),
    cmocka_unit_test(time_never_increases_with_clock),
    cmocka_unit_test(comm_never_slower_with_more_sms),
    cmocka_unit_test(overlap_at_least_slower_stream),
    cmocka_unit_test(energy_valley_inside_planning_range),
    cmocka_unit_test(overlap_pays_off_on_default_job),
    cmocka_unit_test(variants_launch_where_they_should),
    cmocka_unit_test(nonpartition_work),
    cmocka_unit_test(big_gemms_throttle_at_max_clock),
    cmocka_unit_test(timeline_is_consistent),
    cmocka_unit_test(p2p_and_collective_helpers),
    cmocka_unit_test(backend_measure_matches),
    cmocka_unit_test(device_energy_counter_and_clock_log),
    cmocka_unit_test(floor_power_follows_the_clock),
    cmocka_unit_test(dvfs_pays_on_gemm_heavy_partitions),
    cmocka_unit_test(comm_kernels_differ_as_modelled),
    cmocka_unit_test(nccl_follows_the_clock_law),
    cmocka_unit_test(overlap_costs_both_streams),
    cmocka_unit_test(calibration_set_reads_predicts_and_fits),
    cmocka_unit_test(bad_calibration_sets_are_rejected),
};

KR_TEST_MAIN(tests)
