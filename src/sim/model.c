/*
 * model.c — the physics of the simulator: time and power of a kernel mix at an SM clock, the
 * power-limit throttle, and the raw helpers (one GEMM, one collective, a pipeline send, the
 * floor power of a waiting GPU). docs/sim.md explains the model with figures; docs/calibration.md
 * lists every constant with its source or its fit. All constants come from the kr_gpu (catalog.c).
 *
 * Design (units: seconds, bytes, watts, GHz inside, MHz at the API):
 *
 *   Compute op on n SMs at clock f:
 *     t_c   = FLOPs / (n · peak · f · eff)     peak = flops_per_sm_clk (tensor ops) or
 *                                               vec_flops_per_sm_clk (others, eff = 1)
 *     eff   GEMM: gemm_eff · Q(m,n,k,n_sm) / Q(8192,8192,8192,N): tile and wave quantization of a
 *           gemm_tile_m × gemm_tile_n output tiling over the n SMs the op has, times the small-K
 *           factor K/(K + gemm_k_half) (per-tile prologue/epilogue); backward = dgrad and wgrad,
 *           each with its own shape. gemm_eff is the measured 8192³ efficiency, so that GEMM is
 *           unchanged. Attention: attn_eff forward, attn_bwd_eff backward.
 *     C(f)  = hbm_bw · mem_eff · min(1, f / (mem_knee_frac·f_max))   achievable HBM bandwidth
 *     body  = max(t_c, bytes / g) · (1 + κ)
 *   where g is the HBM bandwidth the op gets: C(f) alone; with a comm kernel moving data, a
 *   max–min share weighted by the SMs each stream issues requests from. κ (tensor-core ops with
 *   a moving comm kernel, else 0) = kappa_tensor · min(1, g_comm / L2(f)), L2(f) =
 *   l2_bytes_per_clk · f: the operand tiles a GEMM or attention fetches through L2 queue behind
 *   the comm's traffic (all of which passes through L2), a larger share at a lower clock. Each
 *   op is preceded by its launch phase (partition_sim.c: the launch gap, or the wait for the
 *   host to dispatch it).
 *
 *   Two comm kernels. s CTAs of `block` threads, u = s·block/1024 thread-equivalents; both move
 *   data with SM-issued loads and stores, whose per-CTA rate follows the clock as
 *   (f/f_max)^comm_clock_exp (fitted on the measured tuned kernel alone):
 *     tuned (Kareus, MSCCL++-style read-based kernel, one CTA per SM):
 *       B(u, f) = B_sat · (1 − exp(−u · tuned_cta · (f/f_max)^comm_clock_exp / B_sat)),
 *       B_sat = min(link busbw, tuned_cap_frac · link busbw · (n−1)) (saturation per peer
 *       connection, fitted on 2 GPUs): bandwidth saturates smoothly in the CTA count;
 *       HBM traffic 2·S per GPU per all-reduce of S (read the peers' chunks, write the result).
 *     NCCL (the baselines; ring, Simple protocol, nccl_ctas channels of 512 threads):
 *       B(s, f) = min(link busbw, s · busbw_per_cta · (f/f_max)^comm_clock_exp),
 *       HBM traffic nccl_hbm_factor·S per GPU per all-reduce (FIFO staging), half that for
 *       all-gather / reduce-scatter.
 *     Overlapped with an op, the comm's copies are latency-bound (Little's law) and the op's
 *     HBM traffic raises the latency: B / (1 + comm_lat_slow · u_op), u_op = the op's HBM
 *     demand ÷ C(f) (fitted on the measured overlapped rows); then the HBM share above.
 *     Bus bytes k·S (k = 2(n−1)/n all-reduce, (n−1)/n otherwise) after a latency phase α; groups
 *     spanning nodes are capped by the cluster's per-GPU inter-node bandwidth.
 *
 *   Power of the mix at clock f:
 *     P     = P_floor(f) + mem_power_w · u_mem + c · f · V(f)² · u_sm
 *     P_floor(f) = floor_const_w + (static_w − floor_const_w) · f·V(f)² / (f_max·V(f_max)²)
 *             (leakage and board power, plus the clock tree and idle warps of a GPU holding a
 *             kernel; static_w is the floor measured at the top clock while blocked in a recv)
 *     u_mem = HBM bytes/s used / (hbm_bw·mem_eff)              (≤ 1)
 *     u_sm  = (n/N) · a_op + (u/N) · comm_activity
 *     a_op  = a_m + (1 − a_m) · achieved/(gemm_eff · peak) for GEMMs, a_m + (1 − a_m) ·
 *             attn_activity · achieved/(attn_eff · peak) for attention (power from the work
 *             actually done), a_m = sm_activity_membound for memory-bound ops
 *     V(f)  = v_min up to v_floor, then v_min + (v_max − v_min) · x^v_exp,
 *             x = (f − v_floor)/(f_max − v_floor); v_max is the *loaded* voltage at f_max.
 *   The same P_floor is the power of a GPU waiting in a pipeline bubble (pipesim.c) and of a
 *   simulated device with a locked clock and nothing running (device.c).
 *
 *   Throttle: the clock of a mix is min(f_req, f_cap), f_cap the highest clock in
 *   [clock_min, clock_max] with P ≤ tdp_w (bisection on a fixed interval, so every request above
 *   f_cap gets exactly the same clock and time is never increasing in the requested clock).
 *
 * Invariants: every function here is pure (no globals, no allocation); time is positive; P ≥
 * P_floor(f).
 */
#include "sim_internal.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

/* Tile/wave/small-K shape factor of an m×n×k GEMM on `sms` SMs (1 for a perfect fit). */
static double gemm_shape(const kr__sim_gpu *sg, double m, double n, double k, double sms)
{
    const kr_gpu *g = sg->g;
    double tm = g->gemm_tile_m, tn = g->gemm_tile_n;
    double rows = ceil(m / tm), cols = ceil(n / tn);
    double tiles = rows * cols;
    double fill = (m * n) / (tiles * tm * tn);     /* partial edge tiles */
    double waves = ceil(tiles / sms);
    double wave = tiles / (waves * sms);            /* the last wave leaves SMs idle */
    double kf = k / (k + g->gemm_k_half);
    return fill * wave * kf / sg->gemm_ref;
}

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
    sg->l2_Bps_per_ghz = g->l2_bytes_per_clk * 1e9;
    sg->v_floor_ghz = g->v_floor_mhz / 1000.0;
    double vm = kr__sim_volt(sg, sg->f_max_ghz);
    sg->fv2_max = sg->f_max_ghz * vm * vm;
    sg->gemm_ref = 1.0;
    sg->gemm_ref = gemm_shape(sg, 8192.0, 8192.0, 8192.0, sg->n_sm);
}

double kr__sim_floor(const kr__sim_gpu *sg, double f_ghz)
{
    const kr_gpu *g = sg->g;
    double v = kr__sim_volt(sg, f_ghz);
    double x = sg->fv2_max > 0 ? f_ghz * v * v / sg->fv2_max : 1.0;
    return g->floor_const_w + (g->static_w - g->floor_const_w) * x;
}

double kr_sim_floor_power_w(const kr_gpu *gpu, double freq_mhz)
{
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    return kr__sim_floor(&sg, freq_mhz / 1000.0);
}

double kr__sim_emax(int n)
{
    /* E[max of n standard normals] (tabulated order statistics; log-linear between 8 and 64). */
    static const double t[] = {0, 0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236};
    if (n <= 1)
        return 0.0;
    if (n <= 8)
        return t[n];
    double x = log2((double)KR_MIN(n, 64)) - 3.0; /* 0 at 8, 3 at 64 */
    static const double at[] = {1.4236, 1.7660, 2.0697, 2.3414};
    int i = (int)x;
    if (i >= 3)
        return at[3];
    return at[i] + (at[i + 1] - at[i]) * (x - i);
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
    return kr_sim_floor_power_w(gpu, gpu->clock_max_mhz);
}

double kr_sim_idle_power_w(const kr_gpu *gpu)
{
    return gpu->idle_w;
}

static int is_tensor(kr_op_kind k)
{
    return k == KR_OP_GEMM || k == KR_OP_ATTN;
}

/* Achievable fraction of the per-clock peak for op on `sms` SMs. */
static double op_eff(const kr__sim_gpu *sg, const kr_op *op, double sms)
{
    const kr_gpu *g = sg->g;
    if (op->kind == KR_OP_ATTN)
        return op->backward ? g->attn_bwd_eff : g->attn_eff;
    if (op->kind != KR_OP_GEMM)
        return 1.0;
    double m = (double)op->m, n = (double)op->n, k = (double)op->k;
    if (!(m > 0 && n > 0 && k > 0))
        return g->gemm_eff; /* shape unknown: the reference GEMM's efficiency */
    if (!op->backward || op->gemms < 2)
        return g->gemm_eff * gemm_shape(sg, m, n, k, sms);
    /* dgrad [m×n]·[n×k] and wgrad [k×m]·[m×n]: equal FLOPs, times add. */
    double e1 = gemm_shape(sg, m, k, n, sms), e2 = gemm_shape(sg, k, n, m, sms);
    return g->gemm_eff * 2.0 / (1.0 / e1 + 1.0 / e2);
}

double kr__sim_comm_bw(const kr__sim_gpu *sg, const kr__sim_comm *c, double f)
{
    double x = f / sg->f_max_ghz;
    double raw = c->units * c->cta_Bps * (c->clk_exp == 1.0 ? x : pow(x, c->clk_exp));
    if (c->tuned)
        return c->busbw_cap * -expm1(-raw / c->busbw_cap);
    return KR_MIN(c->busbw_cap, raw);
}

/* Weighted max–min share of the achievable HBM bandwidth cap between the op's demand d_op and
 * the comm's d_comm (bytes/s), weights = the SMs issuing requests: what each gets. */
static void hbm_share(const kr__sim_mix *m, double cap, double d_op, double d_comm, double *g_op, double *g_comm)
{
    *g_op = d_op;
    *g_comm = d_comm;
    if (d_op + d_comm <= cap)
        return;
    double w = m->comm ? (double)m->comm->sms / ((double)m->op_sms + m->comm->sms) : 0.0;
    if (!m->op)
        w = 1.0;
    double share_comm = cap * w, share_op = cap - share_comm;
    if (d_op <= share_op) {
        *g_comm = cap - d_op;
    } else if (d_comm <= share_comm) {
        *g_op = cap - d_comm;
    } else {
        *g_op = share_op;
        *g_comm = share_comm;
    }
}

void kr__sim_eval(const kr__sim_gpu *sg, const kr__sim_mix *m, double f, kr__sim_rates *out)
{
    const kr_gpu *g = sg->g;
    double cap = sg->hbm_Bps * KR_MIN(1.0, f / sg->mem_knee_ghz);
    /* What each stream would take from HBM on its own. */
    double t_c = 0, t_peak = 0, t_alone = 0, d_op = 0, bytes = 0;
    if (m->op) {
        bytes = m->op->bytes;
        if (m->op->flops > 0 && m->op_sms > 0) {
            double sms = (double)m->op_sms;
            if (is_tensor(m->op->kind)) {
                t_peak = m->op->flops / (sms * sg->tensor_rate * f);
                t_c = t_peak / (m->op_eff > 0 ? m->op_eff : op_eff(sg, m->op, sms));
            } else {
                t_c = m->op->flops / (sms * sg->vec_rate * f);
            }
        }
        t_alone = KR_MAX(t_c, bytes / cap);
        d_op = t_alone > 0 ? bytes / t_alone : 0.0;
    }
    /* The comm kernel's copies are latency-bound (Little's law: bytes in flight / latency); the
     * overlapped op's HBM traffic raises the latency of every access, here and at the peers that
     * run the same op, so the comm slows by 1 + comm_lat_slow · the op's HBM utilization. */
    double bus = 0, d_comm = 0;
    if (m->comm && m->comm_moving) {
        bus = kr__sim_comm_bw(sg, m->comm, f);
        if (m->op && d_op > 0)
            bus /= 1.0 + g->comm_lat_slow * KR_MIN(1.0, d_op / cap);
        d_comm = m->comm->hbm_per_bus * bus;
    }
    double g_op, g_comm;
    hbm_share(m, cap, d_op, d_comm, &g_op, &g_comm);
    if (m->comm && m->comm_moving)
        bus = g_comm / m->comm->hbm_per_bus;
    out->bus_Bps = bus;

    double u_sm = 0, used_Bps = g_comm;
    out->op_time_s = 0;
    if (m->op) {
        double body = t_c;
        if (bytes > 0)
            body = KR_MAX(body, bytes / g_op);
        /* A tensor-core op fetches its operand tiles through L2; a moving comm kernel's traffic
         * (all of it passes through L2 on its way to and from HBM) takes its share of the L2
         * bandwidth, which scales with the clock, and the op's fetches queue behind it. */
        if (m->comm && is_tensor(m->op->kind) && g_comm > 0)
            body *= 1.0 + g->kappa_tensor * KR_MIN(1.0, g_comm / (sg->l2_Bps_per_ghz * f));
        /* Power from the work done: a GEMM's activity is its achieved tensor throughput relative
         * to the best GEMM's (gemm_eff of the per-clock peak), so tiles and waves that leave SMs
         * idle, a small K, HBM stalls and interference lower it in proportion; attention's is
         * attn_activity (its tensor and softmax work at its own efficiency, fitted) scaled the
         * same way. */
        double am = g->sm_activity_membound, act = am;
        if (m->op->kind == KR_OP_GEMM && body > 0)
            act = am + (1.0 - am) * KR_MIN(1.0, t_peak / (g->gemm_eff * body));
        else if (m->op->kind == KR_OP_ATTN && body > 0)
            act = am + (1.0 - am) * g->attn_activity *
                           KR_MIN(1.0, t_peak / ((m->op->backward ? g->attn_bwd_eff : g->attn_eff) * body));
        u_sm += (double)m->op_sms / sg->n_sm * act;
        if (body > 0)
            used_Bps += bytes / body;
        out->op_time_s = body;
    }
    if (m->comm)
        u_sm += m->comm->units / sg->n_sm * g->comm_activity;
    double u_mem = KR_MIN(1.0, used_Bps / sg->hbm_Bps);
    double v = kr__sim_volt(sg, f);
    out->floor_w = g->floor_const_w + (g->static_w - g->floor_const_w) * (f * v * v / sg->fv2_max);
    out->power_w = out->floor_w + g->mem_power_w * u_mem + g->dyn_coeff_w * f * v * v * u_sm;
}

double kr__sim_throttle(const kr__sim_gpu *sg, const kr__sim_mix *m0, double f_req, kr__sim_rates *r)
{
    kr__sim_mix mm = *m0; /* the op's efficiency does not depend on the clock: once per mix */
    if (mm.op && is_tensor(mm.op->kind) && mm.op_sms > 0 && mm.op_eff <= 0)
        mm.op_eff = op_eff(sg, mm.op, (double)mm.op_sms);
    const kr__sim_mix *m = &mm;
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
                      const kr_collective *coll, int tuned, int sms, int block, kr_error *err)
{
    const kr_gpu *g = sg->g;
    memset(c, 0, sizeof *c);
    int n = coll->group_size;
    if (coll->kind == KR_COLL_NONE || n <= 1 || coll->bytes <= 0)
        return 0;
    if (block <= 0)
        block = tuned ? 1024 : 512; /* MSCCL++ kernels are built for 1024; NCCL_NTHREADS defaults to 512 */
    c->sms = sms;
    c->tuned = tuned;
    c->units = (double)sms * block / 1024.0;
    c->alpha_s = g->coll_alpha_s;
    int ar = coll->kind == KR_COLL_ALLREDUCE;
    c->k = ar ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
    double link = ar ? g->busbw_ar_Bps : g->busbw_ag_Bps;
    if (coll->inter_node) {
        if (cluster == NULL)
            return kr_error_set(err, KR_EINVAL, "collective %s over %d ranks spans nodes but no cluster was given",
                                kr_coll_kind_name(coll->kind), n);
        link = KR_MIN(link, cluster->inter_node_bw_Bps);
        c->alpha_s += cluster->inter_node_latency_s;
    }
    if (tuned) {
        /* The saturation measured on 2 GPUs is that of one peer connection (one memory channel
         * of the read-based kernel); with n−1 peers the channels run side by side, up to the
         * link (a stated hypothesis: no 8-GPU measurement of the tuned kernel yet). */
        c->busbw_cap = KR_MIN(link, g->tuned_cap_frac * link * (n - 1));
        c->cta_Bps = g->tuned_cta_Bps;
        c->clk_exp = g->comm_clock_exp;
        c->hbm_per_bus = (double)n / (n - 1); /* 2·S per GPU for an all-reduce */
    } else {
        /* busbw_per_cta_Bps is one channel's, a channel being one CTA of NCCL_NTHREADS = 512
         * threads: per 1024 thread-equivalents that is twice as much. Its copies are SM-issued
         * loads and stores like the tuned kernel's, so they follow the same clock law (the
         * exponent is fitted on the tuned kernel; NCCL's 24 channels are link-bound at the top
         * clocks, so it shows only at low clocks or few channels). */
        c->busbw_cap = link;
        c->cta_Bps = g->busbw_per_cta_Bps * 1024.0 / 512.0;
        c->clk_exp = g->comm_clock_exp;
        c->hbm_per_bus = (ar ? g->nccl_hbm_factor : 0.5 * g->nccl_hbm_factor) / c->k;
    }
    c->bus_bytes = c->k * coll->bytes;
    return 1;
}

int kr_sim_collective(const kr_gpu *gpu, const kr_cluster *cluster, const kr_collective *c, int sms,
                      double freq_mhz, kr_sim_coll_result *out, kr_error *err)
{
    return kr_sim_collective_kernel(gpu, cluster, c, KR_SIM_NCCL, sms, freq_mhz, out, err);
}

int kr_sim_collective_kernel(const kr_gpu *gpu, const kr_cluster *cluster, const kr_collective *c,
                             kr_sim_comm_kernel kernel, int sms, double freq_mhz, kr_sim_coll_result *out,
                             kr_error *err)
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
    rc = kr__sim_comm_init(&cm, &sg, cluster, c, kernel == KR_SIM_TUNED, sms, 0, err);
    if (rc < 0)
        return rc;
    out->f_eff_mhz = freq_mhz;
    if (rc == 0) {
        out->power_w = kr__sim_floor(&sg, freq_mhz / 1000.0);
        return KR_OK;
    }
    /* The latency phase moves no bytes; the time and power reported are the bytes phase's. */
    kr__sim_mix m = {NULL, 0, &cm, 1, 0};
    kr__sim_rates mov;
    double f = kr__sim_throttle(&sg, &m, freq_mhz / 1000.0, &mov);
    out->time_s = cm.alpha_s + cm.bus_bytes / mov.bus_Bps;
    out->busbw_Bps = cm.bus_bytes / out->time_s;
    out->algbw_Bps = c->bytes / out->time_s;
    out->power_w = mov.power_w;
    out->f_eff_mhz = f * 1000.0;
    out->hbm_Bps = cm.hbm_per_bus * mov.bus_Bps;
    out->sms = sms;
    return KR_OK;
}

/* ---- one GEMM ------------------------------------------------------------------------- */

/* Runs one op alone on `sms` SMs at freq_mhz (already checked) and fills out. */
static void kernel_alone(const kr_gpu *gpu, const kr_op *op, int sms, double freq_mhz, kr_sim_kernel_result *out)
{
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    kr__sim_mix mix = {op, sms, NULL, 0, 0};
    kr__sim_rates r;
    double f = kr__sim_throttle(&sg, &mix, freq_mhz / 1000.0, &r);
    out->time_s = gpu->launch_s + r.op_time_s;
    out->tflops = op->flops / out->time_s / 1e12;
    out->power_w = r.power_w;
    out->f_eff_mhz = f * 1000.0;
    out->throttled = f < freq_mhz / 1000.0;
}

void kr__sim_gemm_op(kr_op *op, double m, double n, double k)
{
    memset(op, 0, sizeof *op);
    op->kind = KR_OP_GEMM;
    op->m = (long)m;
    op->n = (long)n;
    op->k = (long)k;
    op->gemms = 1;
    op->flops = 2.0 * m * n * k;
    op->bytes = 2.0 * (m * k + k * n + m * n);
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
    kr__sim_gemm_op(&op, m, n, k);
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

double kr_sim_derive_dyn_coeff(const kr_gpu *gpu, double tflops)
{
    /* The reference GEMM at the max clock requested draws exactly TDP while delivering tflops:
     * its clock is f = tflops / (SMs · FLOP/clk · gemm_eff); solve P(f) = TDP for c. */
    kr_gpu g = *gpu;
    kr__sim_gpu sg;
    g.dyn_coeff_w = 1.0;
    kr__sim_gpu_init(&sg, &g);
    double f = tflops * 1e12 / (g.sm_count * g.flops_per_sm_clk * g.gemm_eff * 1e9);
    kr_op op;
    kr__sim_gemm_op(&op, 8192, 8192, 8192);
    kr__sim_mix mix = {&op, (int)g.sm_count, NULL, 0, 0};
    kr__sim_rates r;
    kr__sim_eval(&sg, &mix, f, &r);
    double per_c = r.power_w - r.floor_w - g.mem_power_w * KR_MIN(1.0, op.bytes / r.op_time_s / sg.hbm_Bps);
    return per_c > 0 ? (g.tdp_w - r.floor_w - (r.power_w - r.floor_w - per_c)) / per_c : NAN;
}

void kr_sim_derive_floor(kr_gpu *gpu)
{
    /* P_floor(clock_min) = idle_w and P_floor(clock_max) = static_w, the part between ∝ f·V². */
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, gpu);
    double v = kr__sim_volt(&sg, sg.f_min_ghz);
    double x = sg.f_min_ghz * v * v / sg.fv2_max;
    if (x < 1)
        gpu->floor_const_w = KR_MAX(0.0, (gpu->idle_w - gpu->static_w * x) / (1.0 - x));
}
