/*
 * model.c — the physics of the simulator: time and power of a kernel mix at an SM clock, the
 * power-limit throttle, and the raw helpers (one GEMM, one collective, a pipeline send, the
 * power of a waiting GPU). docs/sim.md explains the model with figures; docs/calibration.md
 * lists every constant with its source. All constants come from the kr_gpu (catalog.c).
 *
 * Design (units: seconds, bytes, watts, GHz inside, MHz at the API):
 *
 *   Compute op on n SMs at clock f:
 *     t_c   = FLOPs / (n · rate · f)      rate = flops_per_sm_clk·gemm_eff (GEMM),
 *                                          ·attn_eff (attention), vec_flops_per_sm_clk (others)
 *     C(f)  = hbm_bw · mem_eff · min(1, f / (mem_knee_frac·f_max))   achievable HBM bandwidth
 *     t     = launch_s + max(t_c, bytes / g) · (1 + κ)
 *   The launch overhead is a phase of its own before the body (the stream waits, the SMs are
 *   idle): only the body shares SMs and HBM, so the bytes an op moves are conserved whatever
 *   the comm kernel does.
 *   where g is the HBM bandwidth the op gets: C(f) alone; with a comm kernel moving data, a
 *   max–min share weighted by the SMs each stream issues requests from (a stream asking for less
 *   than its share gets what it asks, the other gets the rest), and κ = kappa_tensor for a tensor-core op overlapped by a comm kernel (cache and
 *   crossbar interference the bandwidth share does not capture), else 0.
 *
 *   Comm kernel with s CTAs (one per SM) moving k·S bus bytes after a latency phase α:
 *     B(s, f) = min(busbw_cap, s · busbw_per_cta · min(1, f / (comm_knee_frac·f_max)))
 *   busbw_cap = busbw_ar (all-reduce) or busbw_ag (all-gather/reduce-scatter), or the cluster's
 *   per-GPU inter-node bandwidth for groups spanning nodes (α then adds the cluster latency).
 *   Its HBM demand is (n/(n−1)) · B: a read-based collective (MSCCL++ allreduce1: each rank reads
 *   its 1/n chunk from every peer and writes the reduced chunk to every peer) moves 2S bytes
 *   through each GPU's HBM while moving 2(n−1)S/n bytes over its links in each direction.
 *
 *   Power of the mix at clock f:
 *     P = static_w + mem_power_w · u_mem + c · f · V(f)² · u_sm
 *     u_mem = HBM bytes/s used / (hbm_bw·mem_eff)              (≤ 1)
 *     u_sm  = (n/N) · a_op + (s/N) · comm_activity
 *     a_op  = max(t_c / body [tensor ops only], sm_activity_membound)   during the body
 *     V(f)  = v_min up to v_floor, then v_min + (v_max − v_min) · x^v_exp,
 *             x = (f − v_floor)/(f_max − v_floor)
 *   The floor is static_w, not idle_w: a GPU with any kernel resident runs its clocks and
 *   voltage up and spins; static_w is exactly the power measured for such a GPU blocked in a
 *   receive (Kareus p2p_power_w). So effective energy E − static·t is the dynamic energy and is
 *   never negative. An idle GPU (no kernel, idle clock) draws idle_w (the simulated device).
 *
 *   Throttle: the clock of a mix is min(f_req, f_cap), f_cap the highest clock in
 *   [clock_min, clock_max] with P ≤ tdp_w (bisection on a fixed interval, so every request above
 *   f_cap gets exactly the same clock and time is never increasing in the requested clock).
 *
 * Invariants: every function here is pure (no globals, no allocation); time is positive; P ≥
 * static_w.
 */
#include "sim_internal.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

void kr__sim_gpu_init(kr__sim_gpu *sg, const kr_gpu *g)
{
    sg->g = g;
    sg->n_sm = g->sm_count;
    sg->f_min_ghz = g->clock_min_mhz / 1000.0;
    sg->f_max_ghz = g->clock_max_mhz / 1000.0;
    sg->tensor_rate = g->flops_per_sm_clk * 1e9;
    sg->vec_rate = g->vec_flops_per_sm_clk * 1e9;
    sg->hbm_Bps = g->hbm_bw_Bps * g->mem_eff;
    sg->mem_knee_ghz = g->mem_knee_frac * sg->f_max_ghz;
    sg->comm_knee_ghz = g->comm_knee_frac * sg->f_max_ghz;
    sg->v_floor_ghz = g->v_floor_mhz / 1000.0;
}

double kr__sim_volt(const kr__sim_gpu *sg, double f_ghz)
{
    const kr_gpu *g = sg->g;
    if (f_ghz <= sg->v_floor_ghz || sg->f_max_ghz <= sg->v_floor_ghz)
        return g->v_min;
    double x = (f_ghz - sg->v_floor_ghz) / (sg->f_max_ghz - sg->v_floor_ghz);
    double shape = g->v_exp == 2.0 ? x * x : pow(x, g->v_exp);
    return g->v_min + (g->v_max - g->v_min) * shape;
}

double kr_sim_voltage(const kr_gpu *gpu, double freq_mhz)
{
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    return kr__sim_volt(&sg, freq_mhz / 1000.0);
}

double kr_sim_wait_power_w(const kr_gpu *gpu)
{
    return gpu->static_w;
}

double kr_sim_idle_power_w(const kr_gpu *gpu)
{
    return gpu->idle_w;
}

static int is_tensor(kr_op_kind k)
{
    return k == KR_OP_GEMM || k == KR_OP_ATTN;
}

static double op_rate(const kr__sim_gpu *sg, kr_op_kind k)
{
    if (k == KR_OP_GEMM)
        return sg->tensor_rate * sg->g->gemm_eff;
    if (k == KR_OP_ATTN)
        return sg->tensor_rate * sg->g->attn_eff;
    return sg->vec_rate;
}

void kr__sim_eval(const kr__sim_gpu *sg, const kr__sim_mix *m, double f, kr__sim_rates *out)
{
    const kr_gpu *g = sg->g;
    double cap = sg->hbm_Bps * KR_MIN(1.0, f / sg->mem_knee_ghz);
    /* What each stream would take from HBM on its own. */
    double t_c = 0, t_alone = 0, d_op = 0, bytes = 0;
    if (m->op) {
        bytes = m->op->bytes;
        t_c = m->op->flops > 0 ? m->op->flops / ((double)m->op_sms * op_rate(sg, m->op->kind) * f) : 0.0;
        t_alone = KR_MAX(t_c, bytes / cap);
        d_op = t_alone > 0 ? bytes / t_alone : 0.0;
    }
    double bus = 0, d_comm = 0;
    if (m->comm && m->comm_moving) {
        const kr__sim_comm *c = m->comm;
        double cta = c->cta_Bps * KR_MIN(1.0, f / sg->comm_knee_ghz);
        bus = KR_MIN(c->busbw_cap, c->sms * cta);
        d_comm = c->hbm_per_bus * bus;
    }
    /* Weighted max–min share of the achievable bandwidth, weights = SMs issuing requests. */
    double g_op = d_op, g_comm = d_comm;
    if (d_op + d_comm > cap) {
        double w = m->comm ? (double)m->comm->sms / ((double)m->op_sms + m->comm->sms) : 0.0;
        if (!m->op)
            w = 1.0;
        double share_comm = cap * w, share_op = cap - share_comm;
        if (d_op <= share_op)
            g_comm = cap - d_op;
        else if (d_comm <= share_comm)
            g_op = cap - d_comm;
        else {
            g_op = share_op;
            g_comm = share_comm;
        }
    }
    if (m->comm && m->comm_moving)
        bus = g_comm / m->comm->hbm_per_bus;
    out->bus_Bps = bus;

    double u_sm = 0, used_Bps = g_comm;
    out->op_time_s = 0;
    if (m->op) {
        double body = t_c;
        if (bytes > 0)
            body = KR_MAX(body, bytes / g_op);
        if (m->comm && is_tensor(m->op->kind))
            body *= 1.0 + g->kappa_tensor;
        double act = g->sm_activity_membound;
        if (is_tensor(m->op->kind) && body > 0)
            act = KR_MAX(act, t_c / body);
        u_sm += (double)m->op_sms / sg->n_sm * act;
        if (body > 0)
            used_Bps += bytes / body;
        out->op_time_s = body;
    }
    if (m->comm)
        u_sm += (double)m->comm->sms / sg->n_sm * g->comm_activity;
    double u_mem = KR_MIN(1.0, used_Bps / sg->hbm_Bps);
    double v = kr__sim_volt(sg, f);
    out->power_w = g->static_w + g->mem_power_w * u_mem + g->dyn_coeff_w * f * v * v * u_sm;
}

double kr__sim_throttle(const kr__sim_gpu *sg, const kr__sim_mix *m, double f_req, kr__sim_rates *r)
{
    double tdp = sg->g->tdp_w;
    kr__sim_eval(sg, m, f_req, r);
    if (r->power_w <= tdp)
        return f_req;
    /* Highest clock of [f_min, f_max] under TDP; the interval does not depend on f_req. */
    double lo = sg->f_min_ghz, hi = sg->f_max_ghz;
    kr__sim_rates probe;
    kr__sim_eval(sg, m, lo, &probe);
    if (probe.power_w > tdp) {
        *r = probe; /* Cannot get under TDP at all: run at the lowest clock. */
        return lo;
    }
    for (int it = 0; it < 36; it++) {
        double mid = 0.5 * (lo + hi);
        kr__sim_eval(sg, m, mid, &probe);
        if (probe.power_w <= tdp)
            lo = mid;
        else
            hi = mid;
    }
    if (lo > f_req)
        lo = f_req;
    kr__sim_eval(sg, m, lo, r);
    return lo;
}

static int check_clock(const kr_gpu *gpu, const char *what, double freq_mhz, kr_error *err)
{
    if (!(freq_mhz > 0) || freq_mhz > gpu->clock_max_mhz)
        return kr_error_set(err, KR_EINVAL, "%s: clock: expected (0, %g] MHz, found %g", what, gpu->clock_max_mhz,
                            freq_mhz);
    return KR_OK;
}

/* ---- collectives ----------------------------------------------------------------------- */

int kr__sim_comm_init(kr__sim_comm *c, const kr__sim_gpu *sg, const kr_cluster *cluster,
                      const kr_collective *coll, int sms, kr_error *err)
{
    const kr_gpu *g = sg->g;
    memset(c, 0, sizeof *c);
    int n = coll->group_size;
    if (coll->kind == KR_COLL_NONE || n <= 1 || coll->bytes <= 0)
        return 0;
    c->sms = sms;
    c->cta_Bps = g->busbw_per_cta_Bps;
    c->hbm_per_bus = (double)n / (n - 1);
    c->alpha_s = g->coll_alpha_s;
    if (coll->kind == KR_COLL_ALLREDUCE) {
        c->k = 2.0 * (n - 1) / n;
        c->busbw_cap = g->busbw_ar_Bps;
    } else {
        c->k = (double)(n - 1) / n;
        c->busbw_cap = g->busbw_ag_Bps;
    }
    if (coll->inter_node) {
        if (cluster == NULL)
            return kr_error_set(err, KR_EINVAL, "collective %s over %d ranks spans nodes but no cluster was given",
                                kr_coll_kind_name(coll->kind), n);
        c->busbw_cap = KR_MIN(c->busbw_cap, cluster->inter_node_bw_Bps);
        c->alpha_s += cluster->inter_node_latency_s;
    }
    c->bus_bytes = c->k * coll->bytes;
    return 1;
}

int kr_sim_collective(const kr_gpu *gpu, const kr_cluster *cluster, const kr_collective *c, int sms,
                      double freq_mhz, kr_sim_coll_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_clock(gpu, "collective", freq_mhz, err);
    if (rc)
        return rc;
    if (sms < 1 || sms >= (int)gpu->sm_count)
        return kr_error_set(err, KR_EINVAL, "collective: comm SMs: expected 1..%d, found %d", (int)gpu->sm_count - 1,
                            sms);
    if (!(c->bytes >= 0))
        return kr_error_set(err, KR_EINVAL, "collective: bytes: expected >= 0, found %g", c->bytes);
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    kr__sim_comm cm;
    rc = kr__sim_comm_init(&cm, &sg, cluster, c, sms, err);
    if (rc < 0)
        return rc;
    out->f_eff_mhz = freq_mhz;
    if (rc == 0) {
        out->power_w = gpu->static_w;
        return KR_OK;
    }
    /* The latency phase moves no bytes; the time and power reported are the bytes phase's. */
    kr__sim_mix m = {NULL, 0, &cm, 1};
    kr__sim_rates mov;
    double f = kr__sim_throttle(&sg, &m, freq_mhz / 1000.0, &mov);
    out->time_s = cm.alpha_s + cm.bus_bytes / mov.bus_Bps;
    out->busbw_Bps = cm.bus_bytes / out->time_s;
    out->algbw_Bps = c->bytes / out->time_s;
    out->power_w = mov.power_w;
    out->f_eff_mhz = f * 1000.0;
    return KR_OK;
}

/* ---- one GEMM ------------------------------------------------------------------------- */

/* Runs one op alone on `sms` SMs at freq_mhz (already checked) and fills out. */
static void kernel_alone(const kr_gpu *gpu, const kr_op *op, int sms, double freq_mhz, kr_sim_kernel_result *out)
{
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    kr__sim_mix mix = {op, sms, NULL, 0};
    kr__sim_rates r;
    double f = kr__sim_throttle(&sg, &mix, freq_mhz / 1000.0, &r);
    out->time_s = gpu->launch_s + r.op_time_s;
    out->tflops = op->flops / out->time_s / 1e12;
    out->power_w = r.power_w;
    out->f_eff_mhz = f * 1000.0;
    out->throttled = f < freq_mhz / 1000.0;
}

int kr_sim_gemm(const kr_gpu *gpu, double m, double n, double k, double freq_mhz, int sms,
                kr_sim_kernel_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(m > 0 && n > 0 && k > 0))
        return kr_error_set(err, KR_EINVAL, "gemm: expected positive m, n, k, found %g x %g x %g", m, n, k);
    int rc = check_clock(gpu, "gemm", freq_mhz, err);
    if (rc)
        return rc;
    if (sms < 0 || sms > (int)gpu->sm_count)
        return kr_error_set(err, KR_EINVAL, "gemm: SMs: expected 0 (all) or 1..%d, found %d", (int)gpu->sm_count,
                            sms);
    kr_op op;
    memset(&op, 0, sizeof op);
    op.kind = KR_OP_GEMM;
    op.flops = 2.0 * m * n * k;
    op.bytes = 2.0 * (m * k + k * n + m * n);
    kernel_alone(gpu, &op, sms ? sms : (int)gpu->sm_count, freq_mhz, out);
    return KR_OK;
}

int kr_sim_stream(const kr_gpu *gpu, double bytes, double freq_mhz, kr_sim_kernel_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(bytes > 0))
        return kr_error_set(err, KR_EINVAL, "stream: bytes: expected > 0, found %g", bytes);
    int rc = check_clock(gpu, "stream", freq_mhz, err);
    if (rc)
        return rc;
    /* An RMSNorm-like kernel: about one FLOP per byte, on the CUDA cores. */
    kr_op op;
    memset(&op, 0, sizeof op);
    op.kind = KR_OP_NORM;
    op.flops = bytes;
    op.bytes = bytes;
    kernel_alone(gpu, &op, (int)gpu->sm_count, freq_mhz, out);
    return KR_OK;
}

/* ---- pipeline sends --------------------------------------------------------------------- */

int kr_sim_p2p_time(const kr_job *job, int stage, double bytes, double *time_s, kr_error *err)
{
    *time_s = 0;
    if (stage < 0 || stage > job->pp - 2)
        return kr_error_set(err, KR_ERANGE, "p2p: stage: expected 0..%d (a stage with a successor), found %d",
                            job->pp - 2, stage);
    if (!(bytes >= 0))
        return kr_error_set(err, KR_EINVAL, "p2p: bytes: expected >= 0, found %g", bytes);
    if (bytes == 0)
        return KR_OK;
    /* A send is one message: the collective latency term plus the bytes over the link (NVLink
     * within a node; the per-GPU share of the node's network between nodes). */
    if (kr_job_p2p_inter_node(job, stage))
        *time_s = job->gpu.coll_alpha_s + job->cluster.inter_node_latency_s + bytes / job->cluster.inter_node_bw_Bps;
    else
        *time_s = job->gpu.coll_alpha_s + bytes / job->gpu.p2p_bw_Bps;
    return KR_OK;
}
