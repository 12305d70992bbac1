/*
 * calibrate.c — `kareus profile --calibrate`: measures a GPU's own constants with the profiler's
 * protocol and writes them into a GPU catalog entry the simulator uses (catalog.h), each measured
 * parameter's source saying "measured by kareus profile --calibrate on <GPU> <date>".
 *
 * Design. What is measured and what it sets (docs/profiler.md has the table):
 *   idle power           counter edges with nothing running, clocks unlocked  → idle_w
 *   blocked power        one CTA busy-waiting (a rank blocked in a collective; the artifact's
 *                        profile_p2p.py measures a rank blocked in recv), clocks unlocked → static_w
 *   launch overhead      64 empty kernels back to back, per kernel             → launch_s
 *   GEMM sweep           bf16 8192³ at gemm_clocks clocks: FLOP/s and power. gemm_eff = median over
 *                        the points that ran at their locked clock of FLOP/s ÷ (SMs × FLOP/SM/clk ×
 *                        clock read back); the power model of the simulator at full tensor activity,
 *                        P(f) = P0 + c·f·V(f)², fitted for c and v_max (V(f) is the catalog's curve,
 *                        kr_sim_voltage, with the base's v_min, v_floor and shape)  → gemm_eff,
 *                        dyn_coeff_w, v_max
 *   HBM copy sweep       bandwidth at stream_clocks clocks: mem_eff = best ÷ spec peak; the clock
 *                        fraction below which bandwidth falls (from the lowest clock: if it is
 *                        r < 0.97 of the best at fraction x, knee = x / r, the simulator's
 *                        min(1, f/knee) form; else the knee is at most x and x is kept)
 *                                                                               → mem_eff, mem_knee_frac
 *   collective sweep     all-reduce bus bandwidth against CTAs. With 8 GPUs (NCCL over the whole
 *                        node) → busbw_ar_Bps (best) and busbw_per_cta_Bps (one CTA); with fewer
 *                        GPUs, or the single-GPU proxy, the points are reported but no catalog
 *                        parameter is set (a proxy's HBM copy is not a link)
 *   clock switch         a one-CTA kernel samples (globaltimer, SM cycles) while the clock is
 *                        changed high→low and low→high; the latency is the time from the request
 *                        until the sampled clock stays within 2 % of the target → clock_switch_s
 * Every other parameter is the base entry's, with its source.
 */
#include "kareus/profiler.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler_internal.h"
#include "kareus/sim.h"
#include "util/util.h"

void kr_profiler_calib_config_default(kr_profiler_calib_config *co)
{
    memset(co, 0, sizeof *co);
    co->gemm_clocks = 5;
    co->gemm_size = 8192;
    co->stream_clocks = 3;
    co->stream_bytes = 2.0 * 1024 * 1024 * 1024;
    co->coll_bytes = 256e6;
    static const int ctas[] = {1, 2, 4, 8, 16, 32};
    for (size_t i = 0; i < KR_ARRAY_LEN(ctas); i++)
        co->coll_ctas[co->ncoll_ctas++] = ctas[i];
    co->switch_trace = 1;
}

/* ---- fits ------------------------------------------------------------------------------------ */

int kr_profiler_fit_power(const kr_profiler_point *pts, int n, const kr_gpu *base, double *p0_w, double *c_w,
                          double *v_max, double *rms_w, kr_error *err)
{
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= pts[j].freq_mhz == pts[i].freq_mhz;
        distinct += !seen;
    }
    if (n < 3 || distinct < 3)
        return kr_error_set(err, KR_EINVAL, "power fit: expected at least 3 distinct clocks, found %d", distinct);
    /* For each v_max on a grid, P = P0 + c·g with g = f[GHz]·V(f)² is linear: least squares. */
    kr_gpu g = *base;
    double best = INFINITY, best_p0 = 0, best_c = 0, best_v = base->v_max;
    for (double vm = base->v_min; vm <= 1.25 + 1e-12; vm += 0.0025) {
        g.v_max = vm;
        double sg = 0, sp = 0, sgg = 0, sgp = 0;
        for (int i = 0; i < n; i++) {
            double v = kr_sim_voltage(&g, pts[i].freq_mhz);
            double x = pts[i].freq_mhz / 1000.0 * v * v;
            sg += x, sp += pts[i].power_w, sgg += x * x, sgp += x * pts[i].power_w;
        }
        double den = n * sgg - sg * sg;
        if (!(fabs(den) > 1e-12))
            continue;
        double c = (n * sgp - sg * sp) / den, p0 = (sp - c * sg) / n;
        if (!(c > 0))
            continue;
        double ss = 0;
        for (int i = 0; i < n; i++) {
            double v = kr_sim_voltage(&g, pts[i].freq_mhz);
            double r = pts[i].power_w - (p0 + c * pts[i].freq_mhz / 1000.0 * v * v);
            ss += r * r;
        }
        double rms = sqrt(ss / n);
        /* Ties (v_max not identifiable when every clock is below the voltage floor): keep the
         * value nearest the base's. */
        if (rms < best - 1e-9 || (fabs(rms - best) <= 1e-9 && fabs(vm - base->v_max) < fabs(best_v - base->v_max))) {
            best = rms, best_p0 = p0, best_c = c, best_v = vm;
        }
    }
    if (!isfinite(best))
        return kr_error_set(err, KR_EINVAL, "power fit: power does not rise with the clock (no positive coefficient)");
    *p0_w = best_p0, *c_w = best_c, *v_max = best_v, *rms_w = best;
    return KR_OK;
}

double kr_profiler_sample_mhz(const double *t_ns, const double *clk, int i, int j)
{
    double dt = t_ns[j] - t_ns[i];
    return dt > 0 ? (clk[j] - clk[i]) / dt * 1000.0 : 0.0;
}

int kr_profiler_switch_latency(const double *t_ns, const double *clk, int n, int req_index, int target_mhz,
                               double tol, double *latency_s, kr_error *err)
{
    if (n < 4 || req_index < 1 || req_index >= n || target_mhz <= 0)
        return kr_error_set(err, KR_EINVAL, "switch latency: expected >= 4 samples and a request inside them, found %d "
                                            "samples, request at %d",
                            n, req_index);
    /* The clock of each interval [i, i+1]; the settle point is the first interval after the
     * request from which every later one is within tol of the target. */
    int settle = -1;
    for (int i = n - 2; i >= req_index - 1 && i >= 0; i--) {
        double f = kr_profiler_sample_mhz(t_ns, clk, i, i + 1);
        if (fabs(f - target_mhz) > tol * target_mhz)
            break;
        settle = i;
    }
    if (settle < 0 || settle >= n - 2)
        return kr_error_set(err, KR_ENOTFOUND, "switch latency: the sampled clock never settled within %.0f%% of %d MHz",
                            tol * 100, target_mhz);
    double t_req = t_ns[req_index - 1] + 0.5 * (t_ns[req_index] - t_ns[req_index - 1]);
    *latency_s = settle < req_index ? 0.0 : (t_ns[settle] - t_req) * 1e-9;
    if (*latency_s < 0)
        *latency_s = 0;
    return KR_OK;
}

/* ---- the entry --------------------------------------------------------------------------- */

static void set_param(kr_profiler_calib *c, int idx, double v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_param(kr_profiler_calib *c, int idx, double v, const char *fmt, ...)
{
    char detail[KR_SOURCE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    kr_gpu_param_set(&c->gpu, idx, v);
    snprintf(c->gpu.source[idx], KR_SOURCE_MAX, "measured by kareus profile --calibrate on %s %s: %s", c->device,
             c->date, detail);
    c->measured[idx] = 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GEMM efficiency (median over the points that ran at their locked clock) and the dynamic
 * power fit (dyn_coeff_w, v_max) from the GEMM points. */
static void entry_gemm(const kr_gpu *base, kr_profiler_calib *c)
{
    double eff[KR_PROFILER_CALIB_POINTS];
    int neff = 0;
    double peak_per_mhz = base->sm_count * base->flops_per_sm_clk * 1e6;
    for (int pass = 0; pass < 2 && neff == 0; pass++)
        for (int i = 0; i < c->ngemm; i++) {
            const kr_profiler_point *p = &c->gemm[i];
            double f = p->y > 0 ? p->y : p->freq_mhz;
            if (pass == 0 && p->y > 0 && p->y < p->freq_mhz - base->clock_step_mhz)
                continue; /* power-throttled: the clock read back is below the lock */
            if (f > 0 && p->x > 0)
                eff[neff++] = p->x / (peak_per_mhz * f);
        }
    if (neff > 0) {
        qsort(eff, (size_t)neff, sizeof eff[0], cmp_double);
        double med = neff % 2 ? eff[neff / 2] : 0.5 * (eff[neff / 2 - 1] + eff[neff / 2]);
        set_param(c, KR_GPU_P_gemm_eff, med, "bf16 GEMM, median of %d clocks, FLOP/s / (SMs x %g FLOP/clk x clock)",
                  neff, base->flops_per_sm_clk);
    }
    if (c->ngemm >= 3) {
        kr_profiler_point pts[KR_PROFILER_CALIB_POINTS];
        for (int i = 0; i < c->ngemm; i++) {
            pts[i] = c->gemm[i];
            if (pts[i].y > 0)
                pts[i].freq_mhz = (int)lround(pts[i].y); /* the clock it really ran at */
        }
        kr_error fe = {0};
        if (kr_profiler_fit_power(pts, c->ngemm, base, &c->fit_p0_w, &c->fit_c_w, &c->fit_v_max, &c->fit_rms_w, &fe) ==
            KR_OK) {
            set_param(c, KR_GPU_P_dyn_coeff_w, c->fit_c_w, "fit of GEMM power at %d clocks, P0 %.1f W, rms %.1f W",
                      c->ngemm, c->fit_p0_w, c->fit_rms_w);
            set_param(c, KR_GPU_P_v_max, c->fit_v_max, "same fit (V(f) shape, v_min and v_floor from the base)");
        }
    }
}

/* Memory efficiency and the bandwidth knee from the copy points. */
static void entry_stream(const kr_gpu *base, kr_profiler_calib *c)
{
    double best_bw = 0;
    int best_i = -1, low_i = -1;
    for (int i = 0; i < c->nstream; i++) {
        if (c->stream[i].x > best_bw)
            best_bw = c->stream[i].x, best_i = i;
        if (low_i < 0 || c->stream[i].freq_mhz < c->stream[low_i].freq_mhz)
            low_i = i;
    }
    if (best_i < 0 || !(base->hbm_bw_Bps > 0))
        return;
    set_param(c, KR_GPU_P_mem_eff, best_bw / base->hbm_bw_Bps, "HBM copy %.0f GB/s / spec %.0f GB/s", best_bw / 1e9,
              base->hbm_bw_Bps / 1e9);
    if (c->nstream >= 2) {
        double x = c->stream[low_i].freq_mhz / base->clock_max_mhz, r = c->stream[low_i].x / best_bw;
        if (r < 0.97)
            set_param(c, KR_GPU_P_mem_knee_frac, fmin(1.0, x / r), "copy bandwidth %.0f%% of best at %d MHz", 100 * r,
                      c->stream[low_i].freq_mhz);
        else
            set_param(c, KR_GPU_P_mem_knee_frac, x, "upper bound: full copy bandwidth down to %d MHz",
                      c->stream[low_i].freq_mhz);
    }
}

int kr_profiler_calib_entry(const kr_gpu *base, kr_profiler_calib *c, kr_error *err)
{
    c->gpu = *base;
    memset(c->measured, 0, sizeof c->measured);
    if (c->device[0])
        kr__strlcpy(c->gpu.display, c->device, sizeof c->gpu.display);
    if (c->idle_w > 0)
        set_param(c, KR_GPU_P_idle_w, c->idle_w, "counter between update edges, nothing running, clocks unlocked");
    if (c->blocked_w > 0)
        set_param(c, KR_GPU_P_static_w, c->blocked_w, "one CTA busy-waiting, clocks unlocked");
    if (c->launch_s > 0)
        set_param(c, KR_GPU_P_launch_s, c->launch_s, "64 empty kernels back to back, time per kernel");
    entry_gemm(base, c);
    entry_stream(base, c);
    if (c->ncoll > 0 && strstr(c->coll_label, "nccl") && strstr(c->coll_label, "x8 ")) {
        double best = 0, one = 0;
        for (int i = 0; i < c->ncoll; i++) {
            best = fmax(best, c->coll[i].y);
            if (c->coll[i].x == 1)
                one = c->coll[i].y;
        }
        set_param(c, KR_GPU_P_busbw_ar_Bps, best, "NCCL all-reduce over 8 GPUs, best over %d CTA counts", c->ncoll);
        if (one > 0)
            set_param(c, KR_GPU_P_busbw_per_cta_Bps, one, "NCCL all-reduce over 8 GPUs with 1 CTA");
    }
    double sw = fmax(c->switch_down_s, c->switch_up_s);
    if (sw > 0)
        set_param(c, KR_GPU_P_clock_switch_s, sw, "sampled SM clock settles: down %.1f ms, up %.1f ms",
                  c->switch_down_s * 1e3, c->switch_up_s * 1e3);
    (void)err;
    return KR_OK;
}

/* ---- the measurements ------------------------------------------------------------------------ */

typedef struct calib_run {
    kr_profiler_runner *r;
    kr_backend *ctl;
    const kr_profiler_calib_config *co;
    const kr_profiler_config *o;
    const kr_profiler_clock *clk;
    int locked;
    kr_profiler_program prog;
    kr_error *err;
} calib_run;

/* Measures C->prog at clock f (0: unlocked) and returns the result. */
static int run_program(calib_run *C, int f, kr_profiler_result *res)
{
    kr_profiler_config o = *C->o;
    C->prog.freq_mhz = f;
    if (f <= 0) {
        o.lock_clock = 0;
        if (C->locked) {
            for (int i = 0; i < C->r->ndevices; i++)
                kr_backend_reset_clock(C->ctl, C->r->device[i]);
            C->locked = 0;
        }
    }
    int rc = C->r->ops->prepare(C->r->impl, &C->prog, C->err);
    if (rc == KR_OK)
        rc = kr_profiler_measure(C->r, C->ctl, &o, C->clk, &C->prog, 0.0, &C->locked, res, C->err);
    return rc;
}

/* Clock i of n spread over [lo, hi], on the GPU's clock grid (counted down from its maximum). */
static int spread_clock(const kr_gpu *g, int i, int n, double lo, double hi)
{
    double f = n > 1 ? hi - (hi - lo) * i / (n - 1) : hi;
    double step = g->clock_step_mhz > 0 ? g->clock_step_mhz : 1;
    double k = floor((g->clock_max_mhz - f) / step + 0.5);
    return (int)(g->clock_max_mhz - k * step);
}

typedef struct trace_req {
    kr_backend *ctl;
    int dev, mhz;
    const kr_profiler_clock *clk;
    double call_s;
} trace_req;

static int do_request(void *ud)
{
    trace_req *t = ud;
    double t0 = kr__now_s();
    int rc = kr_backend_set_clock(t->ctl, t->dev, t->mhz, t->mhz);
    t->call_s = kr__now_s() - t0;
    return rc;
}

static int switch_latency(calib_run *C, int from, int to, double *lat, double *call_s)
{
    enum { CAP = 40000 };
    double *t = malloc(sizeof(double) * CAP), *k = malloc(sizeof(double) * CAP);
    int rc = KR_OK, n = 0, req = -1;
    if (t == NULL || k == NULL) {
        free(t), free(k);
        return kr_error_set(C->err, KR_ENOMEM, "out of memory");
    }
    int dev = C->r->device[0];
    if ((rc = kr_backend_set_clock(C->ctl, dev, from, from))) {
        rc = kr_error_set(C->err, rc, "locking GPU %d at %d MHz: %s", dev, from, kr_backend_errmsg(C->ctl));
        goto done;
    }
    C->locked = 0; /* the protocol must re-lock before its next measurement */
    kr__profiler_sleep(C->clk, 0.5);
    trace_req tr = {C->ctl, dev, to, C->clk, 0};
    rc = C->r->ops->clock_trace(C->r->impl, 0.4, 0.1, do_request, &tr, t, k, CAP, &n, &req, C->err);
    if (rc == KR_OK)
        rc = kr_profiler_switch_latency(t, k, n, req, to, 0.02, lat, C->err);
    *call_s = tr.call_s;
done:
    free(t), free(k);
    return rc;
}

/* A GEMM or copy point: clock f, rate x, the measured power and the clock read back. */
static void put_point(kr_profiler_point *p, int f, double x, const kr_profiler_result *res)
{
    p->freq_mhz = f;
    p->x = x;
    p->power_w = res->m.energy_j / res->m.time_s;
    p->y = res->clock_read_mhz;
}

/* Idle power, blocked (static) power and launch overhead, clocks unlocked. */
static int calib_fixed(calib_run *C, int dev, kr_profiler_calib *out)
{
    kr_profiler_result res;
    int rc;
    kr__progress(C->co->progress, C->co->progress_ud, "idle power (clocks unlocked)");
    if ((rc = kr_backend_reset_clock(C->ctl, dev)))
        return kr_error_set(C->err, rc, "%s", kr_backend_errmsg(C->ctl));
    kr__profiler_sleep(C->clk, 1.0);
    if ((rc = kr__profiler_idle_power(C->ctl, dev, C->o, C->clk, &out->idle_w, C->err)))
        return rc;

    kr__progress(C->co->progress, C->co->progress_ud, "blocked power (one CTA busy-waiting)");
    if ((rc = kr_profiler_program_spin(1, 1000000, 1, &C->prog, C->err)) || (rc = run_program(C, 0, &res)))
        return rc;
    out->blocked_w = res.m.energy_j / res.m.time_s;

    kr__progress(C->co->progress, C->co->progress_ud, "launch overhead (64 empty kernels)");
    if ((rc = kr_profiler_program_spin(1, 0, 64, &C->prog, C->err)) || (rc = run_program(C, 0, &res)))
        return rc;
    out->launch_s = res.m.time_s / 64.0;
    return KR_OK;
}

/* The GEMM and HBM-copy points at clocks spread over [lo, hi]. */
static int calib_gemm_stream(calib_run *C, const kr_gpu *base, double lo, double hi, kr_profiler_calib *out)
{
    const kr_profiler_calib_config *co = C->co;
    kr_profiler_result res;
    int rc;
    for (int i = 0; i < co->gemm_clocks; i++) {
        int f = spread_clock(base, i, co->gemm_clocks, lo, hi);
        kr__progress(C->co->progress, C->co->progress_ud, "bf16 GEMM %lld^3 at %d MHz", co->gemm_size, f);
        if ((rc = kr_profiler_program_gemm(co->gemm_size, co->gemm_size, co->gemm_size, &C->prog, C->err)) ||
            (rc = run_program(C, f, &res)))
            return rc;
        put_point(&out->gemm[out->ngemm++], f, C->prog.flops / res.m.time_s, &res);
    }
    for (int i = 0; i < co->stream_clocks; i++) {
        int f = spread_clock(base, i, co->stream_clocks, lo, hi);
        kr__progress(C->co->progress, C->co->progress_ud, "HBM copy of %.2f GB at %d MHz", co->stream_bytes / 1e9, f);
        if ((rc = kr_profiler_program_stream(co->stream_bytes, &C->prog, C->err)) || (rc = run_program(C, f, &res)))
            return rc;
        put_point(&out->stream[out->nstream++], f, C->prog.bytes / res.m.time_s, &res);
    }
    return KR_OK;
}

/* The all-reduce points (NCCL over the runner's GPUs, or the single-GPU proxy) and the clock
 * switch latencies. */
static int calib_coll_switch(calib_run *C, const kr_gpu *base, double lo, double hi, kr_profiler_calib *out)
{
    const kr_profiler_calib_config *co = C->co;
    kr_profiler_runner *runner = C->r;
    kr_profiler_result res;
    int rc;
    int nccl = runner->ndevices >= 2;
    int group = nccl ? KR_MIN(runner->ndevices, 8) : 8;
    for (int i = 0; i < co->ncoll_ctas; i++) {
        int f = spread_clock(base, 0, 1, lo, hi);
        kr__progress(C->co->progress, C->co->progress_ud, "all-reduce of %.0f MB with %d CTAs (%s)", co->coll_bytes / 1e6, co->coll_ctas[i],
                 nccl ? "nccl" : "single-GPU proxy");
        if ((rc = kr_profiler_program_collective(KR_COLL_ALLREDUCE, co->coll_bytes, group, co->coll_ctas[i],
                                              nccl ? KR_PROFILER_COMM_NCCL : KR_PROFILER_COMM_PROXY_UNPACED,
                                              runner->ndevices, &C->prog, C->err)) ||
            (rc = run_program(C, f, &res)))
            return rc;
        int n = nccl ? C->prog.ranks : group;
        kr_profiler_point *p = &out->coll[out->ncoll++];
        p->freq_mhz = f;
        p->x = co->coll_ctas[i];
        p->power_w = res.m.energy_j / res.m.time_s;
        p->y = 2.0 * (n - 1) / n * co->coll_bytes / res.m.time_s;
        kr_profiler_comm_label(&C->prog, out->coll_label, sizeof out->coll_label);
    }
    if (co->switch_trace && runner->ops->clock_trace) {
        int f_hi = spread_clock(base, 0, 2, lo, hi), f_lo = spread_clock(base, 1, 2, lo, hi);
        kr__progress(C->co->progress, C->co->progress_ud, "clock switch %d -> %d -> %d MHz", f_hi, f_lo, f_hi);
        if ((rc = switch_latency(C, f_hi, f_lo, &out->switch_down_s, &out->set_clock_call_s)) ||
            (rc = switch_latency(C, f_lo, f_hi, &out->switch_up_s, &out->set_clock_call_s)))
            return rc;
    }
    return KR_OK;
}

int kr_profiler_calibrate(kr_profiler_runner *runner, kr_backend *ctl, const kr_gpu *base,
                          const kr_profiler_calib_config *co_in, const kr_profiler_config *o,
                          const kr_profiler_clock *clk, kr_profiler_calib *out, kr_error *err)
{
    kr_profiler_calib_config co;
    if (co_in)
        co = *co_in;
    else
        kr_profiler_calib_config_default(&co);
    memset(out, 0, sizeof *out);
    int rc = kr_profiler_options_validate(o, err);
    if (rc)
        return rc;
    if (co.gemm_clocks < 3 || co.gemm_clocks > KR_PROFILER_CALIB_POINTS || co.stream_clocks < 1 ||
        co.stream_clocks > KR_PROFILER_CALIB_POINTS || co.ncoll_ctas > 8 || co.gemm_size < 256)
        return kr_error_set(err, KR_EINVAL,
                            "calibration options: expected 3..%d GEMM clocks, 1..%d copy clocks, <= 8 CTA counts and a "
                            "GEMM of at least 256; found %d, %d, %d, %lld",
                            KR_PROFILER_CALIB_POINTS, KR_PROFILER_CALIB_POINTS, co.gemm_clocks, co.stream_clocks,
                            co.ncoll_ctas, co.gemm_size);
    kr__strlcpy(out->device, runner->device_name[0] ? runner->device_name : base->display, sizeof out->device);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out->date, sizeof out->date, "%Y-%m-%d", &tmv);
    calib_run C;
    memset(&C, 0, sizeof C);
    C.r = runner, C.ctl = ctl, C.co = &co, C.o = o, C.clk = clk, C.err = err;
    double lo = base->plan_min_mhz, hi = base->plan_max_mhz;
    rc = calib_fixed(&C, runner->device[0], out);
    if (rc == KR_OK)
        rc = calib_gemm_stream(&C, base, lo, hi, out);
    if (rc == KR_OK)
        rc = calib_coll_switch(&C, base, lo, hi, out);
    for (int i = 0; i < runner->ndevices; i++)
        kr_backend_reset_clock(ctl, runner->device[i]);
    return rc ? rc : kr_profiler_calib_entry(base, out, err);
}

/* ---- raw output -------------------------------------------------------------------------------- */

static json_t *points_json(const kr_profiler_point *p, int n, const char *x, const char *y)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "freq_mhz", json_integer(p[i].freq_mhz));
        kr__jset_real(o, x, p[i].x);
        kr__jset_real(o, "power_w", p[i].power_w);
        kr__jset_real(o, y, p[i].y);
        json_array_append_new(a, o);
    }
    return a;
}

int kr_profiler_calib_write_raw(const char *path, const kr_profiler_calib *c, kr_error *err)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kareus.calibration"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "device", json_string(c->device));
    json_object_set_new(root, "date", json_string(c->date));
    kr__jset_real(root, "idle_w", c->idle_w);
    kr__jset_real(root, "blocked_w", c->blocked_w);
    kr__jset_real(root, "launch_s", c->launch_s);
    json_object_set_new(root, "gemm", points_json(c->gemm, c->ngemm, "flops_per_s", "clock_read_mhz"));
    json_t *fit = json_object();
    kr__jset_real(fit, "p0_w", c->fit_p0_w);
    kr__jset_real(fit, "c_w_per_ghz_v2", c->fit_c_w);
    kr__jset_real(fit, "v_max", c->fit_v_max);
    kr__jset_real(fit, "rms_w", c->fit_rms_w);
    json_object_set_new(root, "gemm_power_fit", fit);
    json_object_set_new(root, "stream", points_json(c->stream, c->nstream, "bytes_per_s", "clock_read_mhz"));
    json_object_set_new(root, "collective", points_json(c->coll, c->ncoll, "ctas", "busbw_Bps"));
    json_object_set_new(root, "collective_runs_as", json_string(c->coll_label));
    kr__jset_real(root, "switch_down_s", c->switch_down_s);
    kr__jset_real(root, "switch_up_s", c->switch_up_s);
    kr__jset_real(root, "set_clock_call_s", c->set_clock_call_s);
    json_t *m = json_array();
    for (int i = 0; i < KR_GPU_NPARAMS; i++)
        if (c->measured[i])
            json_array_append_new(m, json_string(kr_gpu_param(i)->field));
    json_object_set_new(root, "measured_parameters", m);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}
