/*
 * calibration.c — the simulator's predictions next to the published figures they should
 * reproduce (docs/calibration.md; printed by `kareus catalog --check` and bench_sim). Rows
 * marked `input` compare a catalog constant with itself through the model (they show that the
 * model does not distort an input, e.g. the α term at 1 GiB); the others are predictions: a
 * figure the constants were not fitted to, or one derived from the same source by a different
 * path. Each row names the public source of its published figure.
 */
#include <math.h>
#include <string.h>

#include "kareus/job.h"
#include "kareus/sim.h"
#include "util/util.h"

typedef struct check_list {
    kr_sim_check *out;
    int cap;
    int n;
} check_list;

static void add(check_list *l, const char *what, const char *gpu, const char *unit, double pred, double lo, double hi,
                int input, const char *source)
{
    if (l->n < l->cap) {
        kr_sim_check *c = &l->out[l->n];
        memset(c, 0, sizeof *c);
        kr__strlcpy(c->what, what, sizeof c->what);
        kr__strlcpy(c->gpu, gpu, sizeof c->gpu);
        kr__strlcpy(c->unit, unit, sizeof c->unit);
        c->predicted = pred;
        c->published_lo = lo;
        c->published_hi = hi;
        c->input = input;
        c->within = pred >= lo && pred <= hi;
        kr__strlcpy(c->source, source, sizeof c->source);
    }
    l->n++;
}

static int find(const char *name, kr_gpu *g, kr_error *err)
{
    int rc = kr_catalog_gpu_find(name, g, err);
    return rc ? kr_error_set(err, KR_EINTERNAL, "calibration check: %s", err ? err->msg : name) : KR_OK;
}

/* GEMM throughput and effective clock at the max clock. */
static int gemm_rows(check_list *l, kr_error *err)
{
    static const struct {
        const char *gpu;
        double lo, hi;
        const char *src;
    } rows[] = {
        {"a100-sxm4-40gb", 257, 271.2,
         "M: cuBLAS 8192^3 randn 257 TF (thonking.ai/p/strangely-matrix-multiplications); MAMF 271.2 TF A100 SXM (stas00)"},
        {"a100-sxm4-80gb", 257, 271.2, "M: as A100 40GB (same die and 400 W limit; stas00 MAMF table A100 SXM 267.9-271.2)"},
        {"h100-sxm", 792.1, 797.5,
         "M: MAMF 794.5 TF (older 792.1, stas00 MAMF table); 797.5 TF at 8192^2 (zzc0721/torch-performance-test-data #79)"},
        {"h200", 792.1, 797.5, "M: stas00 MAMF table: H200 'same as H100' (794.5 TF)"},
    };
    for (size_t i = 0; i < KR_ARRAY_LEN(rows); i++) {
        kr_gpu g;
        kr_sim_kernel_result r;
        int rc = find(rows[i].gpu, &g, err);
        if (rc || (rc = kr_sim_gemm(&g, 8192, 8192, 8192, g.clock_max_mhz, 0, &r, err)))
            return rc;
        add(l, "bf16 8192^3 GEMM throughput at the max clock", g.name, "TFLOP/s", r.tflops, rows[i].lo, rows[i].hi,
            0, rows[i].src);
        if (i == 0)
            add(l, "effective SM clock of that GEMM (power-capped)", g.name, "MHz", r.f_eff_mhz, 1228, 1297, 0,
                "D: 1410 x 257/295 TF (randn vs zero inputs, thonking.ai) = 1228; 271.2 TF MAMF at 0.945 per-clock "
                "efficiency = 1297");
    }
    return KR_OK;
}

/* 8-GPU all-reduce bus bandwidth at 1 GiB with NCCL's default CTAs at the max clock. */
static int allreduce_rows(check_list *l, kr_error *err)
{
    static const struct {
        const char *gpu;
        double lo, hi;
        const char *src;
    } rows[] = {
        {"a100-sxm4-40gb", 220, 240, "M: ~230 GB/s, 240 effective line rate (NVIDIA/nccl-tests #149, sjeaugey)"},
        {"a100-sxm4-80gb", 200, 220, "M: 200-220 GB/s (NVIDIA/nccl-tests #149, #228)"},
        {"h100-sxm", 470, 490, "M: ~480 GB/s with NVLS (NVIDIA/nccl-tests #212; GTC S62129 via NVIDIA/nccl #1374)"},
        {"h200", 465, 485, "M: 475 GB/s peak (NVIDIA/nccl-tests #272)"},
    };
    kr_collective ar = {KR_COLL_ALLREDUCE, "tp", 8, 0, 1073741824.0, "nccl-tests buffer"};
    for (size_t i = 0; i < KR_ARRAY_LEN(rows); i++) {
        kr_gpu g;
        kr_sim_coll_result r;
        int rc = find(rows[i].gpu, &g, err);
        if (rc || (rc = kr_sim_collective(&g, NULL, &ar, (int)g.nccl_ctas, g.clock_max_mhz, &r, err)))
            return rc;
        add(l, "8-GPU all-reduce busbw at 1 GiB, NCCL CTAs, max clock", g.name, "GB/s", r.busbw_Bps / 1e9,
            rows[i].lo, rows[i].hi, 1, rows[i].src);
    }
    /* The latency term against a published size curve: Hopper NVLink4 ring all-reduce on 8 x
     * H20 (peak 358 GB/s), modelled with the Hopper alpha and that peak. */
    static const struct {
        double mb, busbw;
    } curve[] = {{1, 66}, {4, 138}, {16, 242}, {128, 335}, {1024, 358}};
    kr_gpu h;
    int rc = find("h100-sxm", &h, err);
    if (rc)
        return rc;
    h.busbw_ar_Bps = 358e9;
    for (size_t i = 0; i < KR_ARRAY_LEN(curve); i++) {
        kr_collective c = ar;
        c.bytes = curve[i].mb * 1048576.0;
        kr_sim_coll_result r;
        if ((rc = kr_sim_collective(&h, NULL, &c, (int)h.nccl_ctas, h.clock_max_mhz, &r, err)))
            return rc;
        char what[80];
        snprintf(what, sizeof what, "all-reduce busbw at %g MB, Hopper ring peak 358 GB/s (+-15%%)", curve[i].mb);
        add(l, what, "h100-sxm", "GB/s", r.busbw_Bps / 1e9, 0.85 * curve[i].busbw, 1.15 * curve[i].busbw, 0,
            "M: 8xH20 nccl-tests 2.19.7 all_reduce_perf (kvcache-ai/Mooncake PR #3484); checks coll_alpha_s");
    }
    return KR_OK;
}

/* Idle, blocked and memory-bound power. */
static int power_rows(check_list *l, kr_error *err)
{
    kr_gpu a100, h100, h200;
    int rc;
    if ((rc = find("a100-sxm4-40gb", &a100, err)) || (rc = find("h100-sxm", &h100, err)) ||
        (rc = find("h200", &h200, err)))
        return rc;
    add(l, "idle power (no kernel, idle clock)", a100.name, "W", kr_sim_idle_power_w(&a100), 52, 59.7, 1,
        "M: 52-53 W at 22 C, 59.7 W at 46 C (A100-40 nvidia-smi dump, brick-house.org)");
    add(l, "power blocked on communication (static)", a100.name, "W", kr_sim_wait_power_w(&a100), 85, 85, 1,
        "M: Kareus p2p_power_w = 85 W, measured blocked in recv (ml-energy/kareus:tests/data/profile_p2p.py)");
    add(l, "idle power (no kernel, idle clock)", h100.name, "W", kr_sim_idle_power_w(&h100), 75, 101, 1,
        "M: 75-101 W per GPU across one node (thamada/nvidia-smi:gls/H100SXMx8_smi.py)");
    add(l, "idle power (no kernel, idle clock)", h200.name, "W", kr_sim_idle_power_w(&h200), 74.6, 74.6, 1,
        "M: 74.6 W (thamada/gls:gls/H200_smi.py)");
    /* An HBM-streaming kernel (1 GiB moved) at the max clock on H200, against the power of
     * memory-bound LLM decode on H200. */
    kr_sim_kernel_result r;
    if ((rc = kr_sim_stream(&h200, 1073741824.0, h200.clock_max_mhz, &r, err)))
        return rc;
    add(l, "memory-bound (HBM streaming) kernel power, max clock", h200.name, "W", r.power_w, 137, 300, 0,
        "M: memory-bound LLM decode on H200 draws 137-300 W (arxiv.org/html/2605.11999v1); decode is a looser mix");
    return KR_OK;
}

/* The energy-optimal clock of the default job's most GEMM-heavy partition (best config per
 * clock, static power charged) against Perseus's min-energy plan for the same job on A100. */
static int valley_row(check_list *l, kr_error *err)
{
    kr_job job;
    kr_job_default(&job);
    kr_partition_set set;
    int rc = kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, err);
    if (rc)
        return rc;
    const kr_partition *heavy = &set.p[0];
    for (int i = 1; i < set.n; i++)
        if (kr_partition_flops(&set.p[i]) > kr_partition_flops(heavy))
            heavy = &set.p[i];
    int clocks[128];
    int nc = kr_job_clocks(&job, clocks, 128);
    double best_e = INFINITY;
    int best_f = 0;
    for (int ci = 0; ci < nc; ci++)
        for (int s = 0; s < job.sms_allreduce.n; s++)
            for (int slot = 0; slot < heavy->nslots; slot++) {
                kr_config c = {clocks[ci], job.sms_allreduce.v[s], slot, 0};
                kr_measurement m;
                if ((rc = kr_sim_measure(&job, heavy, &c, &m, err)))
                    return rc;
                if (m.energy_j < best_e) {
                    best_e = m.energy_j;
                    best_f = clocks[ci];
                }
            }
    char what[80];
    snprintf(what, sizeof what, "energy-optimal clock of %s, default job", heavy->key);
    add(l, what, job.gpu.name, "MHz", best_f, 900, 1110, 0,
        "D: Perseus min-energy plan, Llama-3.2-3B TP8 PP2 on A100, static 85 W: clocks 900-1110, mean 1062 MHz "
        "(ml-energy/kareus frontier files)");
    return KR_OK;
}

/* How much NCCL's default all-reduce slows the compute it overlaps (kr_sim_overlap_effects:
 * extra compute time per second of overlap), over the default job's layer partitions at the
 * top planning clock and at 1020 MHz, against the published characterisation of overlap on
 * A100/H100/MI250/MI210 (GPT and LLaMA layers): 18.9 % on average, 40 % at most. */
static int overlap_rows(check_list *l, kr_error *err)
{
    kr_job job;
    kr_job_default(&job);
    kr_partition_set set;
    int rc = kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, &set, err);
    if (rc)
        return rc;
    double sum = 0, worst = 0;
    int n = 0;
    const int clocks[] = {job.clock_max_mhz, 1020};
    for (int i = 0; i < set.n; i++)
        for (int k = 0; k < 2 && set.p[i].coll.kind != KR_COLL_NONE; k++) {
            kr_config c = {clocks[k], set.p[i].fixed_sms, set.p[i].fixed_slot, 0};
            kr_sim_overlap o;
            if ((rc = kr_sim_overlap_effects(&job, &set.p[i], &c, KR_SIM_NCCL, &o, err)))
                return rc;
            sum += o.compute_slowdown;
            worst = fmax(worst, o.compute_slowdown);
            n++;
        }
    static const char src[] = "M: overlapped compute 18.9 % slower on average, up to 40 % (Lee et al. 2025, "
                              "arxiv.org/html/2507.03114v1); the mean is checked within x1.5 of theirs";
    add(l, "compute slowdown under NCCL's overlapped all-reduce, mean (default job)", job.gpu.name, "%",
        100 * sum / (n ? n : 1), 18.9 / 1.5, 18.9 * 1.5, 0, src);
    add(l, "compute slowdown under NCCL's overlapped all-reduce, largest (default job)", job.gpu.name, "%",
        100 * worst, 0, 40, 0, src);
    return KR_OK;
}

int kr_sim_calibration_checks(kr_sim_check *out, int cap, int *n, kr_error *err)
{
    check_list l = {out, cap, 0};
    int rc;
    if ((rc = gemm_rows(&l, err)) || (rc = allreduce_rows(&l, err)) || (rc = power_rows(&l, err)) ||
        (rc = valley_row(&l, err)) || (rc = overlap_rows(&l, err)))
        return rc;
    *n = l.n;
    return KR_OK;
}
