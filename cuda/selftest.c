/*
 * selftest.c — runs every kernel of the profiler on small shapes on one GPU and compares it with
 * its CPU reference (src/profiler/reference.c, compiled into this library too). Inputs are
 * bf16-exact values from the shared hash (refkern.h), so kernel and reference see the same
 * numbers; the error is max |gpu − ref| / max(1e-3, max |ref|) per output.
 *
 * Tolerances: 1e-2 for results stored in bf16 (one rounding is 2^-9 ≈ 2e-3 relative, a few
 * roundings of intermediates add to that); 3e-2 for attention (P and dS are rounded to bf16
 * before the tensor-core matmuls, as in FlashAttention) and for GEMM wgrad (fp32 output over long
 * reductions of bf16 products); exact (0) for pure data movement.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kr_cuda.h"
#include "profiler/refkern.h"
#include "util/util.h"

typedef struct ctx {
    kr__sb report;
    int failures;
    kr_error *err;
    int rc;            /* first CUDA error (stops the test) */
    void *allocs[64];
    int nallocs;
} ctx;

static void *dalloc(ctx *c, size_t bytes)
{
    void *p = NULL;
    if (c->rc)
        return NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        c->rc = kr_cu_fail(c->err, e, "self-test cudaMalloc");
        return NULL;
    }
    if (c->nallocs < 64)
        c->allocs[c->nallocs++] = p;
    cudaMemset(p, 0, bytes ? bytes : 16);
    return p;
}

static void check(ctx *c, cudaError_t e, const char *what)
{
    if (c->rc == KR_OK && e != cudaSuccess)
        c->rc = kr_cu_fail(c->err, e, what);
}

/* Host floats (bf16-exact) → device bf16. */
static void *up_bf16(ctx *c, const float *h, long n)
{
    void *d = dalloc(c, (size_t)n * 2);
    uint16_t *b = malloc((size_t)n * 2 + 2);
    if (d && b) {
        for (long i = 0; i < n; i++)
            b[i] = kr__bf16_bits(h[i]);
        check(c, cudaMemcpy(d, b, (size_t)n * 2, cudaMemcpyHostToDevice), "upload");
    }
    free(b);
    return d;
}

static void *up_raw(ctx *c, const void *h, size_t bytes)
{
    void *d = dalloc(c, bytes);
    if (d)
        check(c, cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "upload");
    return d;
}

static void down_bf16(ctx *c, const void *d, long n, float *h)
{
    uint16_t *b = malloc((size_t)n * 2 + 2);
    if (b && !c->rc) {
        check(c, cudaDeviceSynchronize(), "kernel");
        check(c, cudaMemcpy(b, d, (size_t)n * 2, cudaMemcpyDeviceToHost), "download");
        for (long i = 0; i < n && !c->rc; i++)
            h[i] = kr__bf16_float(b[i]);
    }
    free(b);
}

static void down_raw(ctx *c, const void *d, size_t bytes, void *h)
{
    if (c->rc)
        return;
    check(c, cudaDeviceSynchronize(), "kernel");
    check(c, cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "download");
}

static float *hvec(long n, uint64_t seed, float scale)
{
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (v)
        for (long i = 0; i < n; i++)
            v[i] = kr__init_value(seed, (uint64_t)i, scale);
    return v;
}

static void compare(ctx *c, const char *name, const float *got, const float *ref, long n, double tol)
{
    if (c->rc)
        return;
    double mx = 0, ref_max = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= mx)) /* catches NaN */
            mx = isnan(d) ? INFINITY : d;
        ref_max = fmax(ref_max, fabs(ref[i]));
    }
    double rel = mx / fmax(1e-3, ref_max);
    int ok = rel <= tol;
    c->failures += !ok;
    kr__sb_printf(&c->report, "  %-22s n=%-8ld max rel err %.2e (tol %.0e) %s\n", name, n, rel, tol,
                  ok ? "PASS" : "FAIL");
}

static void free_all(ctx *c)
{
    cudaDeviceSynchronize();
    for (int i = 0; i < c->nallocs; i++)
        cudaFree(c->allocs[i]);
    c->nallocs = 0;
}

static void test_gemm(ctx *c, void *lt)
{
    long T = 128, n = 96, k = 64;
    float *x = hvec(T * k, 1, 1), *w = hvec(n * k, 2, 1), *dy = hvec(T * n, 3, 1);
    float *y = malloc(sizeof(float) * T * n), *ry = malloc(sizeof(float) * T * n);
    float *dx = malloc(sizeof(float) * T * k), *rdx = malloc(sizeof(float) * T * k);
    float *dw = calloc((size_t)(n * k), sizeof(float)), *rdw = calloc((size_t)(n * k), sizeof(float));
    void *ws = dalloc(c, 32u << 20);
    void *dX = up_bf16(c, x, T * k), *dW = up_bf16(c, w, n * k), *dDY = up_bf16(c, dy, T * n);
    void *dY = dalloc(c, (size_t)(T * n) * 2), *dDX = dalloc(c, (size_t)(T * k) * 2);
    float *dDW = dalloc(c, sizeof(float) * (size_t)(n * k)); /* zeroed: wgrad accumulates */
    kr_profiler_kernel kinds[3] = {KR_PK_GEMM_FPROP, KR_PK_GEMM_DGRAD, KR_PK_GEMM_WGRAD};
    for (int i = 0; i < 3 && !c->rc; i++) {
        kr_cu_gemm *g = NULL;
        if ((c->rc = kr_cu_gemm_create(lt, kinds[i], T, n, k, 32u << 20, &g, c->err)))
            break;
        const void *a = i == 0 ? dX : dDY, *b = i == 2 ? dX : dW;
        void *o = i == 0 ? dY : i == 1 ? dDX : (void *)dDW;
        c->rc = kr_cu_gemm_run(g, a, b, o, ws, 0, c->err);
        check(c, cudaDeviceSynchronize(), "gemm");
        kr_cu_gemm_destroy(g);
    }
    down_bf16(c, dY, T * n, y);
    down_bf16(c, dDX, T * k, dx);
    down_raw(c, dDW, sizeof(float) * (size_t)(n * k), dw);
    kr__pref_gemm_fprop(x, w, ry, T, n, k);
    kr__pref_gemm_dgrad(dy, w, rdx, T, n, k);
    kr__pref_gemm_wgrad(dy, x, rdw, T, n, k);
    compare(c, "gemm_fprop", y, ry, T * n, 1e-2);
    compare(c, "gemm_dgrad", dx, rdx, T * k, 1e-2);
    compare(c, "gemm_wgrad", dw, rdw, n * k, 3e-2);
    free(x), free(w), free(dy), free(y), free(ry), free(dx), free(rdx), free(dw), free(rdw);
    free_all(c);
}

static void test_attention(ctx *c, int d, int cp)
{
    long b = 2, s = cp > 1 ? 64 : 128, S = s * cp;
    int nh = 4, nkv = 2;
    long qn = b * nh * s * d, kn = b * nkv * S * d, rows = b * nh * s;
    float *q = hvec(qn, 10, 1), *k = hvec(kn, 11, 1), *v = hvec(kn, 12, 1), *dO = hvec(qn, 13, 1);
    float *o = malloc(sizeof(float) * qn), *ro = malloc(sizeof(float) * qn);
    float *lse = malloc(sizeof(float) * rows), *rlse = malloc(sizeof(float) * rows);
    float *dq = malloc(sizeof(float) * qn), *rdq = malloc(sizeof(float) * qn);
    float *dk = malloc(sizeof(float) * kn), *rdk = malloc(sizeof(float) * kn);
    float *dv = malloc(sizeof(float) * kn), *rdv = malloc(sizeof(float) * kn);
    void *dQ = up_bf16(c, q, qn), *dK = up_bf16(c, k, kn), *dV = up_bf16(c, v, kn), *dDO = up_bf16(c, dO, qn);
    void *dOut = dalloc(c, (size_t)qn * 2), *dDQ = dalloc(c, (size_t)qn * 2);
    void *dDK = dalloc(c, (size_t)kn * 2), *dDV = dalloc(c, (size_t)kn * 2);
    float *dLSE = dalloc(c, sizeof(float) * rows), *dD = dalloc(c, sizeof(float) * rows);
    float *dAcc = dalloc(c, sizeof(float) * qn);
    if (!c->rc) {
        check(c, kr_cu_attn_fwd(dQ, dK, dV, dOut, dLSE, b, nh, nkv, s, S, d, cp, 0), "attn_fwd");
        check(c, kr_cu_attn_bwd_pre(dOut, dDO, dD, dAcc, b, nh, s, d, 0), "attn_bwd_pre");
        check(c, kr_cu_attn_bwd(dQ, dK, dV, dDO, dLSE, dD, dAcc, dDK, dDV, b, nh, nkv, s, S, d, cp, 0), "attn_bwd");
        check(c, kr_cu_f32_to_bf16(dAcc, dDQ, qn, 0), "attn_bwd_dq");
    }
    down_bf16(c, dOut, qn, o);
    down_raw(c, dLSE, sizeof(float) * rows, lse);
    down_bf16(c, dDQ, qn, dq);
    down_bf16(c, dDK, kn, dk);
    down_bf16(c, dDV, kn, dv);
    kr__pref_attn_fwd(q, k, v, ro, rlse, b, nh, nkv, s, S, d, cp);
    kr__pref_attn_bwd(q, k, v, ro, dO, rlse, rdq, rdk, rdv, b, nh, nkv, s, S, d, cp);
    char name[40];
    snprintf(name, sizeof name, "attn_fwd d%d cp%d", d, cp);
    compare(c, name, o, ro, qn, 3e-2);
    snprintf(name, sizeof name, "attn_lse d%d cp%d", d, cp);
    compare(c, name, lse, rlse, rows, 1e-3);
    snprintf(name, sizeof name, "attn_bwd dq d%d cp%d", d, cp);
    compare(c, name, dq, rdq, qn, 3e-2);
    snprintf(name, sizeof name, "attn_bwd dk d%d cp%d", d, cp);
    compare(c, name, dk, rdk, kn, 3e-2);
    snprintf(name, sizeof name, "attn_bwd dv d%d cp%d", d, cp);
    compare(c, name, dv, rdv, kn, 3e-2);
    free(q), free(k), free(v), free(dO), free(o), free(ro), free(lse), free(rlse);
    free(dq), free(rdq), free(dk), free(rdk), free(dv), free(rdv);
    free_all(c);
}

static void test_norms(ctx *c)
{
    long T = 64, h = 320; /* h not a multiple of the block: exercises the guards */
    float eps = 1e-5f;
    float *x = hvec(T * h, 20, 2), *g = hvec(h, 21, 1), *dy = hvec(T * h, 22, 1);
    float *y = malloc(sizeof(float) * T * h), *ry = malloc(sizeof(float) * T * h);
    float *dx = malloc(sizeof(float) * T * h), *rdx = malloc(sizeof(float) * T * h);
    float rstd[64], rrstd[64], dg[320], rdg[320];
    memset(rdg, 0, sizeof rdg);
    void *dX = up_bf16(c, x, T * h), *dG = up_bf16(c, g, h), *dDY = up_bf16(c, dy, T * h);
    void *dY = dalloc(c, (size_t)(T * h) * 2), *dDX = dalloc(c, (size_t)(T * h) * 2);
    float *dR = dalloc(c, sizeof rstd), *dDG = dalloc(c, sizeof dg);
    if (!c->rc) {
        check(c, kr_cu_rmsnorm_fwd(dX, dG, dY, dR, T, h, eps, 0), "rmsnorm_fwd");
        check(c, kr_cu_rmsnorm_bwd(dX, dG, dDY, dR, dDX, dDG, T, h, 0), "rmsnorm_bwd");
    }
    down_bf16(c, dY, T * h, y);
    down_raw(c, dR, sizeof rstd, rstd);
    down_bf16(c, dDX, T * h, dx);
    down_raw(c, dDG, sizeof dg, dg);
    kr__pref_rmsnorm_fwd(x, g, ry, rrstd, T, h, eps);
    kr__pref_rmsnorm_bwd(x, g, dy, rrstd, rdx, rdg, T, h);
    compare(c, "rmsnorm_fwd", y, ry, T * h, 1e-2);
    compare(c, "rmsnorm_fwd rstd", rstd, rrstd, T, 1e-4);
    compare(c, "rmsnorm_bwd dx", dx, rdx, T * h, 1e-2);
    compare(c, "rmsnorm_bwd dgamma", dg, rdg, h, 1e-3);
    /* q/k norm: rows of d = 64. */
    long rq = 24, rk = 8;
    int d = 64;
    float *xq = hvec(rq * d, 23, 2), *xk = hvec(rk * d, 24, 2), *gq = hvec(d, 25, 1), *gk = hvec(d, 26, 1);
    float *dyq = hvec(rq * d, 27, 1), *dyk = hvec(rk * d, 28, 1);
    float *oq = malloc(sizeof(float) * rq * d), *ok_ = malloc(sizeof(float) * rk * d);
    float *roq = malloc(sizeof(float) * rq * d), *rok = malloc(sizeof(float) * rk * d);
    float *gxq = malloc(sizeof(float) * rq * d), *rgxq = malloc(sizeof(float) * rq * d);
    float rsq[24], rsk[8], dgq[64] = {0};
    void *dQ = up_bf16(c, xq, rq * d), *dK = up_bf16(c, xk, rk * d), *dGQ = up_bf16(c, gq, d), *dGK = up_bf16(c, gk, d);
    void *dXQ = up_bf16(c, xq, rq * d), *dXK = up_bf16(c, xk, rk * d);
    void *dDYQ = up_bf16(c, dyq, rq * d), *dDYK = up_bf16(c, dyk, rk * d);
    void *dDXQ = dalloc(c, (size_t)(rq * d) * 2), *dDXK = dalloc(c, (size_t)(rk * d) * 2);
    float *dRQ = dalloc(c, sizeof rsq), *dRK = dalloc(c, sizeof rsk);
    if (!c->rc) {
        check(c, kr_cu_qknorm_fwd(dQ, dK, dGQ, dGK, dRQ, dRK, rq, rk, d, eps, 0), "qknorm_fwd");
        check(c, kr_cu_qknorm_bwd(dXQ, dXK, dGQ, dGK, dRQ, dRK, dDYQ, dDYK, dDXQ, dDXK, rq, rk, d, 0), "qknorm_bwd");
    }
    down_bf16(c, dQ, rq * d, oq);
    down_bf16(c, dK, rk * d, ok_);
    down_bf16(c, dDXQ, rq * d, gxq);
    kr__pref_rmsnorm_fwd(xq, gq, roq, rsq, rq, d, eps);
    kr__pref_rmsnorm_fwd(xk, gk, rok, rsk, rk, d, eps);
    kr__pref_rmsnorm_bwd(xq, gq, dyq, rsq, rgxq, dgq, rq, d);
    compare(c, "qknorm_fwd q", oq, roq, rq * d, 1e-2);
    compare(c, "qknorm_fwd k", ok_, rok, rk * d, 1e-2);
    compare(c, "qknorm_bwd dq", gxq, rgxq, rq * d, 1e-2);
    free(x), free(g), free(dy), free(y), free(ry), free(dx), free(rdx);
    free(xq), free(xk), free(gq), free(gk), free(dyq), free(dyk), free(oq), free(ok_), free(roq), free(rok), free(gxq),
        free(rgxq);
    free_all(c);
}

static void test_elementwise(ctx *c)
{
    /* Bias-dropout-add. */
    long n = 5000;
    float p = 0.1f, *x = hvec(n, 30, 1), *res = hvec(n, 31, 1), *dy = hvec(n, 32, 1);
    float *out = malloc(sizeof(float) * n), *rout = malloc(sizeof(float) * n);
    float *dx = malloc(sizeof(float) * n), *rdx = malloc(sizeof(float) * n);
    unsigned char *mask = malloc((size_t)n), *rmask = malloc((size_t)n);
    void *dX = up_bf16(c, x, n), *dR = up_bf16(c, res, n), *dDY = up_bf16(c, dy, n);
    void *dO = dalloc(c, (size_t)n * 2), *dDX = dalloc(c, (size_t)n * 2);
    unsigned char *dM = dalloc(c, (size_t)n);
    if (!c->rc) {
        check(c, kr_cu_bda_fwd(dX, dR, dO, dM, n, p, 99, 0), "bda_fwd");
        check(c, kr_cu_bda_bwd(dDY, dM, dDX, n, p, 0), "bda_bwd");
    }
    down_bf16(c, dO, n, out);
    down_raw(c, dM, (size_t)n, mask);
    down_bf16(c, dDX, n, dx);
    kr__pref_bda_fwd(x, res, rout, rmask, n, p, 99);
    kr__pref_bda_bwd(dy, rmask, rdx, n, p);
    float *fm = malloc(sizeof(float) * n), *frm = malloc(sizeof(float) * n);
    for (long i = 0; i < n; i++)
        fm[i] = mask[i], frm[i] = rmask[i];
    compare(c, "bda_fwd", out, rout, n, 1e-2);
    compare(c, "bda_fwd mask", fm, frm, n, 0);
    compare(c, "bda_bwd", dx, rdx, n, 1e-2);
    free(x), free(res), free(dy), free(out), free(rout), free(dx), free(rdx), free(mask), free(rmask), free(fm),
        free(frm);
    free_all(c);

    /* SwiGLU. */
    long T = 37, F = 129;
    float *in = hvec(T * 2 * F, 33, 3), *g = hvec(T * F, 34, 1);
    float *o = malloc(sizeof(float) * T * F), *ro = malloc(sizeof(float) * T * F);
    float *di = malloc(sizeof(float) * T * 2 * F), *rdi = malloc(sizeof(float) * T * 2 * F);
    void *dIn = up_bf16(c, in, T * 2 * F), *dG = up_bf16(c, g, T * F);
    void *dOut = dalloc(c, (size_t)(T * F) * 2), *dDI = dalloc(c, (size_t)(T * 2 * F) * 2);
    if (!c->rc) {
        check(c, kr_cu_swiglu_fwd(dIn, dOut, T, F, 0), "swiglu_fwd");
        check(c, kr_cu_swiglu_bwd(dIn, dG, dDI, T, F, 0), "swiglu_bwd");
    }
    down_bf16(c, dOut, T * F, o);
    down_bf16(c, dDI, T * 2 * F, di);
    kr__pref_swiglu_fwd(in, ro, T, F);
    kr__pref_swiglu_bwd(in, g, rdi, T, F);
    compare(c, "swiglu_fwd", o, ro, T * F, 1e-2);
    compare(c, "swiglu_bwd", di, rdi, T * 2 * F, 1e-2);
    free(in), free(g), free(o), free(ro), free(di), free(rdi);
    free_all(c);

    /* HBM copy. */
    long m = 100003;
    float *a = hvec(m, 35, 1), *b = malloc(sizeof(float) * m);
    void *dA = up_bf16(c, a, m), *dB = dalloc(c, (size_t)m * 2);
    if (!c->rc)
        check(c, kr_cu_stream(dA, dB, m, 0), "stream");
    down_bf16(c, dB, m, b);
    compare(c, "stream", b, a, m, 0);
    free(a), free(b);
    free_all(c);
}

static void test_layout(ctx *c)
{
    long b = 2, s = 64;
    int nh = 8, nkv = 2, d = 64;
    long row = (long)(nh + 2 * nkv) * d, n = b * s * row, qn = b * nh * s * d, kn = b * nkv * s * d;
    float *qkv = hvec(n, 40, 1), *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn),
          *v = malloc(sizeof(float) * kn);
    float *gq = malloc(sizeof(float) * qn), *gk = malloc(sizeof(float) * kn), *gv = malloc(sizeof(float) * kn),
          *back = malloc(sizeof(float) * n);
    void *dQKV = up_bf16(c, qkv, n), *dQ = dalloc(c, (size_t)qn * 2), *dK = dalloc(c, (size_t)kn * 2),
         *dV = dalloc(c, (size_t)kn * 2), *dBack = dalloc(c, (size_t)n * 2);
    if (!c->rc) {
        check(c, kr_cu_qkv_split(dQKV, dQ, dK, dV, b, s, nh, nkv, d, 0), "qkv_split");
        check(c, kr_cu_qkv_merge(dQ, dK, dV, dBack, b, s, nh, nkv, d, 0), "qkv_merge");
    }
    down_bf16(c, dQ, qn, gq);
    down_bf16(c, dK, kn, gk);
    down_bf16(c, dV, kn, gv);
    down_bf16(c, dBack, n, back);
    kr__pref_qkv_split(qkv, q, k, v, b, s, nh, nkv, d);
    compare(c, "qkv_split q", gq, q, qn, 0);
    compare(c, "qkv_split k", gk, k, kn, 0);
    compare(c, "qkv_split v", gv, v, kn, 0);
    compare(c, "qkv_merge", back, qkv, n, 0);
    /* Rotary on q and k, context-parallel positions; forward then backward. */
    float lb = logf(500000.0f);
    float *rq = malloc(sizeof(float) * qn), *rk = malloc(sizeof(float) * kn);
    memcpy(rq, q, sizeof(float) * qn);
    memcpy(rk, k, sizeof(float) * kn);
    if (!c->rc)
        check(c, kr_cu_rope(dQ, dK, b, nh, nkv, s, d, 2, lb, 0, 0), "rope_fwd");
    down_bf16(c, dQ, qn, gq);
    down_bf16(c, dK, kn, gk);
    kr__pref_rope(rq, b, nh, s, d, 2, lb, 0);
    kr__pref_rope(rk, b, nkv, s, d, 2, lb, 0);
    compare(c, "rope_fwd q", gq, rq, qn, 1e-2);
    compare(c, "rope_fwd k", gk, rk, kn, 1e-2);
    if (!c->rc)
        check(c, kr_cu_rope(dQ, dK, b, nh, nkv, s, d, 2, lb, 1, 0), "rope_bwd");
    down_bf16(c, dQ, qn, gq);
    kr__pref_rope(rq, b, nh, s, d, 2, lb, 1); /* rq back to the split q */
    compare(c, "rope_bwd q", gq, rq, qn, 2e-2);
    free(qkv), free(q), free(k), free(v), free(gq), free(gk), free(gv), free(back), free(rq), free(rk);
    free_all(c);
}

static void test_vocab(ctx *c)
{
    long T = 16, h = 96, V = 50, vstart = 100, vocab = 200;
    long ids[16];
    for (long t = 0; t < T; t++)
        ids[t] = (long)(kr__hash64(7, (uint64_t)t) % (uint64_t)vocab);
    ids[0] = vstart, ids[1] = vstart + V - 1; /* both ends of the shard */
    float *table = hvec(V * h, 41, 1), *dy = hvec(T * h, 42, 1);
    float *out = malloc(sizeof(float) * T * h), *rout = malloc(sizeof(float) * T * h);
    float *dt = malloc(sizeof(float) * V * h), *rdt = calloc((size_t)(V * h), sizeof(float));
    long long lids[16];
    for (int i = 0; i < 16; i++)
        lids[i] = ids[i];
    long long *dIds = up_raw(c, lids, sizeof lids);
    void *dT = up_bf16(c, table, V * h), *dDY = up_bf16(c, dy, T * h), *dOut = dalloc(c, (size_t)(T * h) * 2);
    float *dDT = dalloc(c, sizeof(float) * (size_t)(V * h));
    if (!c->rc) {
        check(c, kr_cu_embed_fwd(dIds, dT, dOut, T, h, vstart, V, 0), "embed_fwd");
        check(c, kr_cu_embed_bwd(dIds, dDY, dDT, T, h, vstart, V, 0), "embed_bwd");
    }
    down_bf16(c, dOut, T * h, out);
    down_raw(c, dDT, sizeof(float) * (size_t)(V * h), dt);
    kr__pref_embed_fwd(ids, table, rout, T, h, vstart, V);
    kr__pref_embed_bwd(ids, dy, rdt, T, h, vstart, V);
    compare(c, "embed_fwd", out, rout, T * h, 0);
    compare(c, "embed_bwd", dt, rdt, V * h, 1e-5);
    free(table), free(dy), free(out), free(rout), free(dt), free(rdt);
    free_all(c);

    /* Cross-entropy on a shard holding the targets of some rows only. */
    long Vl = 1000;
    float *lg = hvec(T * Vl, 43, 4), *dl = hvec(T, 44, 1);
    long tg[16];
    long long ltg[16];
    for (long t = 0; t < T; t++)
        ltg[t] = tg[t] = t % 3 == 0 ? 5000 : (long)(kr__hash64(8, (uint64_t)t) % (uint64_t)Vl);
    float mx[16], tl[16], sm[16], ls[16], rmx[16], rsm[16], rls[16];
    float *gr = malloc(sizeof(float) * T * Vl), *rgr = malloc(sizeof(float) * T * Vl);
    void *dL = up_bf16(c, lg, T * Vl), *dGR = dalloc(c, (size_t)(T * Vl) * 2);
    long long *dTg = up_raw(c, ltg, sizeof ltg);
    float *dMX = dalloc(c, sizeof mx), *dTL = dalloc(c, sizeof tl), *dSM = dalloc(c, sizeof sm),
          *dLS = dalloc(c, sizeof ls), *dDL = up_raw(c, dl, sizeof(float) * (size_t)T);
    if (!c->rc) {
        check(c, kr_cu_xent_max(dL, dTg, dMX, dTL, T, Vl, 0, 0), "xent_max");
        check(c, kr_cu_xent_sum(dL, dMX, dTL, dSM, dLS, T, Vl, 0), "xent_sum");
        check(c, kr_cu_xent_bwd(dL, dTg, dMX, dSM, dDL, dGR, T, Vl, 0, 0), "xent_bwd");
    }
    down_raw(c, dMX, sizeof mx, mx);
    down_raw(c, dSM, sizeof sm, sm);
    down_raw(c, dLS, sizeof ls, ls);
    down_bf16(c, dGR, T * Vl, gr);
    kr__pref_xent_fwd(lg, tg, rls, rmx, rsm, T, Vl, 0);
    kr__pref_xent_bwd(lg, tg, rmx, rsm, dl, rgr, T, Vl, 0);
    compare(c, "xent rowmax", mx, rmx, T, 0);
    compare(c, "xent rowsum", sm, rsm, T, 1e-4);
    compare(c, "xent loss", ls, rls, T, 1e-4);
    compare(c, "xent_bwd", gr, rgr, T * Vl, 1e-2);
    free(lg), free(dl), free(gr), free(rgr);
    free_all(c);
}

static void test_proxy(ctx *c, int device)
{
    long chunk = 1000, elems = 8000;
    int reduce = 3, copy = 2, smem = 0;
    float *src = hvec(elems, 50, 1), *dst = hvec(elems, 51, 1), *got = malloc(sizeof(float) * elems);
    void *dS = up_bf16(c, src, elems), *dD = up_bf16(c, dst, elems);
    check(c, kr_cu_proxy_setup(device, &smem), "proxy setup");
    if (!c->rc) /* paced at 1 ns/byte with a 10 µs alpha: must not change the result */
        check(c, kr_cu_proxy(dS, dD, chunk, reduce, copy, elems, 3, smem, 1.0, 10000.0, 0), "proxy");
    down_bf16(c, dD, elems, got);
    kr__pref_proxy(src, dst, chunk, reduce, elems, 1);
    for (long i = 0; i < chunk * copy; i++) /* the copy phase overwrites chunks 0..copy-1 */
        dst[i] = src[i];
    compare(c, "proxy (3 CTAs, paced)", got, dst, elems, 1e-2);
    free(src), free(dst), free(got);
    free_all(c);
}

int kr_cu_selftest(int device, void *lt, char *report, size_t cap, kr_error *err)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        kr__sb_printf(&c.report, "kernel self-test on GPU %d (%s), against the CPU references:\n", device, prop.name);
    test_gemm(&c, lt);
    for (int d = 64; d <= 128 && !c.rc; d += 64) {
        test_attention(&c, d, 1);
        test_attention(&c, d, 2);
    }
    if (!c.rc)
        test_norms(&c);
    if (!c.rc)
        test_elementwise(&c);
    if (!c.rc)
        test_layout(&c);
    if (!c.rc)
        test_vocab(&c);
    if (!c.rc)
        test_proxy(&c, device);
    free_all(&c);
    if (c.rc)
        kr__sb_printf(&c.report, "  stopped: %s\n", err ? err->msg : "CUDA error");
    else
        kr__sb_printf(&c.report, "%d check(s) failed\n", c.failures);
    kr__strlcpy(report, c.report.oom ? "out of memory" : kr__sb_str(&c.report), cap);
    kr__sb_free(&c.report);
    if (c.rc)
        return c.rc;
    return c.failures ? kr_error_set(err, KR_EMISMATCH, "%d kernel check(s) failed (see the report)", c.failures)
                      : KR_OK;
}
