/*
 * kernels.cu — the memory-bound kernels of a transformer layer (RMSNorm, bias-dropout-add,
 * QKV split/merge, q/k norm, rotary, SwiGLU, embedding, cross-entropy), buffer initialisation,
 * and the calibration kernels (HBM copy, spin, the single-GPU collective proxy, the clock
 * tracer). What each computes is defined in src/profiler/refkern.h and checked against the CPU
 * references by cuda/selftest.c; the byte counts they must respect are in src/profiler/program.c.
 *
 * Written for clarity first: grid-stride loops, one block per row for row reductions, 16-byte
 * vector loads where the layout allows (streaming kernels), fp32 arithmetic, bf16 storage.
 */
#include <cuda_bf16.h>
#include <stdint.h>

#include "kr_cuda.h"
#include "profiler/refkern.h"

typedef __nv_bfloat16 bf16;

#define THREADS 256

static __device__ __forceinline__ float ld(const bf16 *p, long long i)
{
    return __bfloat162float(p[i]);
}

static __device__ __forceinline__ void st(bf16 *p, long long i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

/* Blocks for a grid-stride loop over n items, capped so launches stay cheap. */
static unsigned grid_for(long long n, int threads)
{
    long long b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return (unsigned)(b > 65535LL * 16 ? 65535LL * 16 : b);
}

#define GRID_LOOP(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

/* Sum over a block of up to 1024 threads (every thread gets the result). */
static __device__ float block_sum(float v, float *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int w = threadIdx.x / 32, l = threadIdx.x % 32, nw = (blockDim.x + 31) / 32;
    __syncthreads();
    if (l == 0)
        scratch[w] = v;
    __syncthreads();
    float t = 0;
    for (int i = 0; i < nw; i++)
        t += scratch[i];
    return t;
}

static __device__ float block_max(float v, float *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int w = threadIdx.x / 32, l = threadIdx.x % 32, nw = (blockDim.x + 31) / 32;
    __syncthreads();
    if (l == 0)
        scratch[w] = v;
    __syncthreads();
    float t = -INFINITY;
    for (int i = 0; i < nw; i++)
        t = fmaxf(t, scratch[i]);
    return t;
}

/* ---- initialisation ------------------------------------------------------------------------ */

static __global__ void init_bf16_k(bf16 *p, long long n, uint64_t seed, float lo, float hi)
{
    GRID_LOOP(i, n) p[i] = __float2bfloat16_rn(lo + (hi - lo) * kr__hash_uniform(seed, (uint64_t)i));
}

static __global__ void init_f32_k(float *p, long long n, uint64_t seed, float lo, float hi)
{
    GRID_LOOP(i, n) p[i] = lo + (hi - lo) * kr__hash_uniform(seed, (uint64_t)i);
}

static __global__ void init_ids_k(long long *p, long long n, uint64_t seed, long long vocab)
{
    GRID_LOOP(i, n) p[i] = (long long)(kr__hash64(seed, (uint64_t)i) % (uint64_t)vocab);
}

static __global__ void init_mask_k(unsigned char *p, long long n, uint64_t seed, float keep)
{
    GRID_LOOP(i, n) p[i] = kr__hash_uniform(seed, (uint64_t)i) < keep;
}

extern "C" cudaError_t kr_cu_init_bf16(void *p, long long n, uint64_t seed, float lo, float hi, cudaStream_t s)
{
    init_bf16_k<<<grid_for(n, THREADS), THREADS, 0, s>>>((bf16 *)p, n, seed, lo, hi);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_init_f32(float *p, long long n, uint64_t seed, float lo, float hi, cudaStream_t s)
{
    init_f32_k<<<grid_for(n, THREADS), THREADS, 0, s>>>(p, n, seed, lo, hi);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_init_ids(long long *p, long long n, uint64_t seed, long long vocab, cudaStream_t s)
{
    if (vocab < 1)
        return cudaErrorInvalidValue;
    init_ids_k<<<grid_for(n, THREADS), THREADS, 0, s>>>(p, n, seed, vocab);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_init_mask(unsigned char *p, long long n, uint64_t seed, float keep, cudaStream_t s)
{
    init_mask_k<<<grid_for(n, THREADS), THREADS, 0, s>>>(p, n, seed, keep);
    return cudaGetLastError();
}

/* ---- HBM copy and spin ----------------------------------------------------------------------- */

static __global__ void stream_k(const uint4 *src, uint4 *dst, long long nvec, const bf16 *s2, bf16 *d2,
                                long long tail0, long long n)
{
    GRID_LOOP(i, nvec) dst[i] = src[i];
    GRID_LOOP(j, n - tail0) d2[tail0 + j] = s2[tail0 + j];
}

extern "C" cudaError_t kr_cu_stream(const void *src, void *dst, long long n, cudaStream_t s)
{
    long long nvec = n / 8; /* 8 bf16 per 16-byte vector; cudaMalloc'd buffers are aligned */
    stream_k<<<grid_for(nvec > 0 ? nvec : 1, THREADS), THREADS, 0, s>>>((const uint4 *)src, (uint4 *)dst, nvec,
                                                                      (const bf16 *)src, (bf16 *)dst, nvec * 8, n);
    return cudaGetLastError();
}

static __device__ __forceinline__ unsigned long long globaltimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __global__ void spin_k(long long ns)
{
    if (ns <= 0)
        return;
    unsigned long long t0 = globaltimer();
    while ((long long)(globaltimer() - t0) < ns) {
    }
}

extern "C" cudaError_t kr_cu_spin(int ctas, long long ns, cudaStream_t s)
{
    spin_k<<<ctas, 32, 0, s>>>(ns);
    return cudaGetLastError();
}

/* ---- the collective proxy ------------------------------------------------------------------- */

#define PROXY_THREADS 512
#define PROXY_VEC 8 /* bf16 per thread per sub-step */

static __global__ void __launch_bounds__(PROXY_THREADS, 1)
    proxy_k(const bf16 *src, bf16 *dst, long long chunk, int reduce_steps, int copy_steps, long long elems,
            double ns_per_byte, double alpha_ns)
{
    extern __shared__ unsigned char occupancy_only[]; /* reserved so no two proxy CTAs share an SM */
    (void)occupancy_only;
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0)
        t0 = globaltimer();
    __syncthreads();
    /* This CTA's slice of every chunk. */
    long long per = (chunk + gridDim.x - 1) / gridDim.x;
    long long lo = (long long)blockIdx.x * per, hi = lo + per < chunk ? lo + per : chunk;
    double done_bytes = 0;
    const long long sub = (long long)PROXY_THREADS * PROXY_VEC;
    for (int stp = 0; stp < reduce_steps + copy_steps; stp++) {
        int reduce = stp < reduce_steps;
        long long base = ((long long)(reduce ? stp : stp - reduce_steps) * chunk) % elems;
        for (long long off = lo; off < hi; off += sub) {
            long long end = off + sub < hi ? off + sub : hi;
            for (long long i = off + threadIdx.x; i < end; i += PROXY_THREADS) {
                long long j = (base + i) % elems;
                float v = ld(src, j);
                st(dst, j, reduce ? ld(dst, j) + v : v);
            }
            done_bytes += (double)(end - off) * 2.0;
            if (ns_per_byte > 0) {
                /* Pacing: hold the CTA (like a link-bound collective's CTAs) until the link would
                 * have carried this many bytes. */
                if (threadIdx.x == 0) {
                    unsigned long long target = t0 + (unsigned long long)(alpha_ns + done_bytes * ns_per_byte);
                    while (globaltimer() < target) {
                    }
                }
                __syncthreads();
            }
        }
    }
    if (ns_per_byte > 0 && threadIdx.x == 0) {
        unsigned long long target = t0 + (unsigned long long)alpha_ns;
        while (globaltimer() < target) {
        }
    }
}

extern "C" cudaError_t kr_cu_proxy_setup(int device, int *smem_bytes)
{
    int per_sm = 0, per_block = 0;
    cudaError_t e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e != cudaSuccess)
        return e;
    int want = per_sm / 2 + 1024; /* more than half an SM: one proxy CTA per SM */
    if (want > per_block)
        want = per_block;
    e = cudaFuncSetAttribute(proxy_k, cudaFuncAttributeMaxDynamicSharedMemorySize, want);
    *smem_bytes = want;
    return e;
}

extern "C" cudaError_t kr_cu_proxy(const void *src, void *dst, long long chunk, int reduce_steps, int copy_steps,
                                   long long elems, int ctas, int smem_bytes, double ns_per_byte, double alpha_ns,
                                   cudaStream_t s)
{
    if (ctas < 1 || elems < 1 || chunk < 1)
        return cudaErrorInvalidValue;
    proxy_k<<<ctas, PROXY_THREADS, smem_bytes, s>>>((const bf16 *)src, (bf16 *)dst, chunk, reduce_steps, copy_steps,
                                                    elems, ns_per_byte, alpha_ns);
    return cudaGetLastError();
}

/* ---- clock tracer ---------------------------------------------------------------------------- */

static __global__ void clock_trace_k(unsigned long long *t_ns, unsigned long long *clk, int cap, int *n,
                                     int *req_index, volatile int *started, volatile int *request,
                                     long long duration_ns, long long interval_ns)
{
    unsigned long long t0 = globaltimer(), next = t0;
    int i = 0, req = -1;
    *started = 1;
    __threadfence_system();
    while (i < cap) {
        unsigned long long t = globaltimer();
        if ((long long)(t - t0) > duration_ns)
            break;
        if (req < 0 && *request != 0)
            req = i;
        if (t >= next) {
            t_ns[i] = t;
            clk[i] = (unsigned long long)clock64();
            i++;
            next = t + (unsigned long long)interval_ns;
        }
    }
    *n = i;
    *req_index = req;
}

extern "C" cudaError_t kr_cu_clock_trace(unsigned long long *t_ns, unsigned long long *clk, int cap, int *n,
                                         int *req_index, volatile int *started, volatile int *request,
                                         long long duration_ns, long long interval_ns, cudaStream_t s)
{
    clock_trace_k<<<1, 1, 0, s>>>(t_ns, clk, cap, n, req_index, started, request, duration_ns, interval_ns);
    return cudaGetLastError();
}

/* ---- RMSNorm --------------------------------------------------------------------------------- */

static __global__ void rmsnorm_fwd_k(const bf16 *x, const bf16 *g, bf16 *y, float *rstd, long long T, long long h,
                                     float eps)
{
    __shared__ float scratch[32];
    for (long long r = blockIdx.x; r < T; r += gridDim.x) {
        const bf16 *xr = x + r * h;
        float ss = 0;
        for (long long i = threadIdx.x; i < h; i += blockDim.x) {
            float v = ld(xr, i);
            ss += v * v;
        }
        float rs = rsqrtf(block_sum(ss, scratch) / (float)h + eps);
        for (long long i = threadIdx.x; i < h; i += blockDim.x)
            st(y, r * h + i, ld(xr, i) * rs * ld(g, i));
        if (threadIdx.x == 0)
            rstd[r] = rs;
    }
}

#define RMS_ROWS_PER_BLOCK 32
#define RMS_MAX_COLS_PER_THREAD 32 /* h <= 32 · 256 = 8192 */

static __global__ void rmsnorm_bwd_k(const bf16 *x, const bf16 *g, const bf16 *dy, const float *rstd, bf16 *dx,
                                     float *dgamma, long long T, long long h)
{
    __shared__ float scratch[32];
    float part[RMS_MAX_COLS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < RMS_MAX_COLS_PER_THREAD; j++)
        part[j] = 0;
    long long r0 = (long long)blockIdx.x * RMS_ROWS_PER_BLOCK;
    for (long long r = r0; r < r0 + RMS_ROWS_PER_BLOCK && r < T; r++) {
        float rs = rstd[r], dot = 0;
        for (long long i = threadIdx.x; i < h; i += blockDim.x)
            dot += ld(dy, r * h + i) * ld(g, i) * ld(x, r * h + i) * rs;
        dot = block_sum(dot, scratch) / (float)h;
#pragma unroll
        for (int j = 0; j < RMS_MAX_COLS_PER_THREAD; j++) {
            long long i = threadIdx.x + (long long)j * blockDim.x;
            if (i < h) {
                float xh = ld(x, r * h + i) * rs, d = ld(dy, r * h + i);
                st(dx, r * h + i, rs * (d * ld(g, i) - xh * dot));
                part[j] += d * xh;
            }
        }
    }
#pragma unroll
    for (int j = 0; j < RMS_MAX_COLS_PER_THREAD; j++) {
        long long i = threadIdx.x + (long long)j * blockDim.x;
        if (i < h)
            atomicAdd(&dgamma[i], part[j]);
    }
}

extern "C" cudaError_t kr_cu_rmsnorm_fwd(const void *x, const void *gamma, void *y, float *rstd, long long T,
                                         long long h, float eps, cudaStream_t s)
{
    rmsnorm_fwd_k<<<grid_for(T, 1), THREADS, 0, s>>>((const bf16 *)x, (const bf16 *)gamma, (bf16 *)y, rstd, T, h,
                                                     eps);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_rmsnorm_bwd(const void *x, const void *gamma, const void *dy, const float *rstd, void *dx,
                                         float *dgamma, long long T, long long h, cudaStream_t s)
{
    if (h > (long long)RMS_MAX_COLS_PER_THREAD * THREADS)
        return cudaErrorInvalidValue;
    long long blocks = (T + RMS_ROWS_PER_BLOCK - 1) / RMS_ROWS_PER_BLOCK;
    rmsnorm_bwd_k<<<(unsigned)(blocks > 0 ? blocks : 1), THREADS, 0, s>>>(
        (const bf16 *)x, (const bf16 *)gamma, (const bf16 *)dy, rstd, (bf16 *)dx, dgamma, T, h);
    return cudaGetLastError();
}

/* ---- bias-dropout-add ------------------------------------------------------------------------ */

static __global__ void bda_fwd_k(const bf16 *x, const bf16 *res, bf16 *out, unsigned char *mask, long long n, float p,
                                 uint64_t seed)
{
    float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    GRID_LOOP(i, n)
    {
        int keep = kr__dropout_keep(seed, (uint64_t)i, p);
        mask[i] = (unsigned char)keep;
        st(out, i, ld(res, i) + (keep ? ld(x, i) * scale : 0.0f));
    }
}

static __global__ void bda_bwd_k(const bf16 *dy, const unsigned char *mask, bf16 *dx, long long n, float p)
{
    float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    GRID_LOOP(i, n) st(dx, i, mask[i] ? ld(dy, i) * scale : 0.0f);
}

extern "C" cudaError_t kr_cu_bda_fwd(const void *x, const void *res, void *out, unsigned char *mask, long long n,
                                     float p, uint64_t seed, cudaStream_t s)
{
    bda_fwd_k<<<grid_for(n, THREADS), THREADS, 0, s>>>((const bf16 *)x, (const bf16 *)res, (bf16 *)out, mask, n, p,
                                                       seed);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_bda_bwd(const void *dy, const unsigned char *mask, void *dx, long long n, float p,
                                     cudaStream_t s)
{
    bda_bwd_k<<<grid_for(n, THREADS), THREADS, 0, s>>>((const bf16 *)dy, mask, (bf16 *)dx, n, p);
    return cudaGetLastError();
}

/* ---- QKV split / merge ------------------------------------------------------------------------ */

/* Index in q/k/v (head-major) of element col of token t's fused row; which: 0 q, 1 k, 2 v. */
static __device__ __forceinline__ long long qkv_target(long long t, long long col, long long s, int nh, int nkv, int d,
                                                       int *which)
{
    int r = nh / nkv;
    long long gw = (long long)(r + 2) * d;
    int g = (int)(col / gw), part = (int)((col % gw) / d), i = (int)(col % d);
    long long bi = t / s, si = t % s;
    if (part < r) {
        *which = 0;
        return ((bi * nh + (long long)g * r + part) * s + si) * d + i;
    }
    *which = part - r + 1;
    return ((bi * nkv + g) * s + si) * d + i;
}

static __global__ void qkv_split_k(const bf16 *qkv, bf16 *q, bf16 *k, bf16 *v, long long n, long long row, long long s,
                                   int nh, int nkv, int d)
{
    GRID_LOOP(e, n)
    {
        int which;
        long long j = qkv_target(e / row, e % row, s, nh, nkv, d, &which);
        (which == 0 ? q : which == 1 ? k : v)[j] = qkv[e];
    }
}

static __global__ void qkv_merge_k(const bf16 *dq, const bf16 *dk, const bf16 *dv, bf16 *dqkv, long long n,
                                   long long row, long long s, int nh, int nkv, int d)
{
    GRID_LOOP(e, n)
    {
        int which;
        long long j = qkv_target(e / row, e % row, s, nh, nkv, d, &which);
        dqkv[e] = (which == 0 ? dq : which == 1 ? dk : dv)[j];
    }
}

extern "C" cudaError_t kr_cu_qkv_split(const void *qkv, void *q, void *k, void *v, long long b, long long s, int nh,
                                       int nkv, int d, cudaStream_t st_)
{
    long long row = (long long)(nh + 2 * nkv) * d, n = b * s * row;
    qkv_split_k<<<grid_for(n, THREADS), THREADS, 0, st_>>>((const bf16 *)qkv, (bf16 *)q, (bf16 *)k, (bf16 *)v, n, row,
                                                           s, nh, nkv, d);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_qkv_merge(const void *dq, const void *dk, const void *dv, void *dqkv, long long b,
                                       long long s, int nh, int nkv, int d, cudaStream_t st_)
{
    long long row = (long long)(nh + 2 * nkv) * d, n = b * s * row;
    qkv_merge_k<<<grid_for(n, THREADS), THREADS, 0, st_>>>((const bf16 *)dq, (const bf16 *)dk, (const bf16 *)dv,
                                                           (bf16 *)dqkv, n, row, s, nh, nkv, d);
    return cudaGetLastError();
}

/* ---- per-head q/k RMSNorm (a warp per row of d) ------------------------------------------------ */

static __device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __global__ void qknorm_fwd_k(bf16 *q, bf16 *k, const bf16 *gq, const bf16 *gk, float *rq, float *rk,
                                    long long rows_q, long long rows_k, int d, float eps)
{
    long long warps = (long long)gridDim.x * (blockDim.x / 32);
    int lane = threadIdx.x % 32;
    for (long long w = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; w < rows_q + rows_k; w += warps) {
        int isq = w < rows_q;
        long long r = isq ? w : w - rows_q;
        bf16 *x = (isq ? q : k) + r * d;
        const bf16 *g = isq ? gq : gk;
        float ss = 0;
        for (int i = lane; i < d; i += 32)
            ss += ld(x, i) * ld(x, i);
        float rs = rsqrtf(warp_sum(ss) / (float)d + eps);
        for (int i = lane; i < d; i += 32)
            st(x, i, ld(x, i) * rs * ld(g, i));
        if (lane == 0)
            (isq ? rq : rk)[r] = rs;
    }
}

static __global__ void qknorm_bwd_k(const bf16 *xq, const bf16 *xk, const bf16 *gq, const bf16 *gk, const float *rq,
                                    const float *rk, const bf16 *dyq, const bf16 *dyk, bf16 *dxq, bf16 *dxk,
                                    long long rows_q, long long rows_k, int d)
{
    long long warps = (long long)gridDim.x * (blockDim.x / 32);
    int lane = threadIdx.x % 32;
    for (long long w = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; w < rows_q + rows_k; w += warps) {
        int isq = w < rows_q;
        long long r = isq ? w : w - rows_q;
        const bf16 *x = (isq ? xq : xk) + r * d, *g = isq ? gq : gk, *dy = (isq ? dyq : dyk) + r * d;
        bf16 *dx = (isq ? dxq : dxk) + r * d;
        float rs = (isq ? rq : rk)[r], dot = 0;
        for (int i = lane; i < d; i += 32)
            dot += ld(dy, i) * ld(g, i) * ld(x, i) * rs;
        dot = warp_sum(dot) / (float)d;
        for (int i = lane; i < d; i += 32)
            st(dx, i, rs * (ld(dy, i) * ld(g, i) - ld(x, i) * rs * dot));
    }
}

extern "C" cudaError_t kr_cu_qknorm_fwd(void *q, void *k, const void *gq, const void *gk, float *rq, float *rk,
                                        long long rows_q, long long rows_k, int d, float eps, cudaStream_t s)
{
    qknorm_fwd_k<<<grid_for((rows_q + rows_k) * 32, THREADS), THREADS, 0, s>>>(
        (bf16 *)q, (bf16 *)k, (const bf16 *)gq, (const bf16 *)gk, rq, rk, rows_q, rows_k, d, eps);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_qknorm_bwd(const void *xq, const void *xk, const void *gq, const void *gk,
                                        const float *rq, const float *rk, const void *dyq, const void *dyk, void *dxq,
                                        void *dxk, long long rows_q, long long rows_k, int d, cudaStream_t s)
{
    qknorm_bwd_k<<<grid_for((rows_q + rows_k) * 32, THREADS), THREADS, 0, s>>>(
        (const bf16 *)xq, (const bf16 *)xk, (const bf16 *)gq, (const bf16 *)gk, rq, rk, (const bf16 *)dyq,
        (const bf16 *)dyk, (bf16 *)dxq, (bf16 *)dxk, rows_q, rows_k, d);
    return cudaGetLastError();
}

/* ---- rotary ---------------------------------------------------------------------------------- */

static __global__ void rope_k(bf16 *q, bf16 *k, long long rows_q, long long rows_k, long long s, int d, int cp,
                              float log_base, int inverse)
{
    int half = d / 2;
    long long n = (rows_q + rows_k) * half;
    GRID_LOOP(e, n)
    {
        long long row = e / half;
        int i = (int)(e % half);
        bf16 *x = row < rows_q ? q + row * d : k + (row - rows_q) * d;
        long long si = (row < rows_q ? row : row - rows_q) % s;
        float a = kr__rope_angle(kr__cp_pos((long)si, (long)s, cp), i, d, log_base);
        float sn, c;
        sincosf(a, &sn, &c);
        if (inverse)
            sn = -sn;
        float x1 = ld(x, i), x2 = ld(x, i + half);
        st(x, i, x1 * c - x2 * sn);
        st(x, i + half, x2 * c + x1 * sn);
    }
}

extern "C" cudaError_t kr_cu_rope(void *q, void *k, long long b, int nh, int nkv, long long s, int d, int cp,
                                  float log_base, int inverse, cudaStream_t st_)
{
    long long rq = b * nh * s, rk = b * nkv * s;
    rope_k<<<grid_for((rq + rk) * (d / 2), THREADS), THREADS, 0, st_>>>((bf16 *)q, (bf16 *)k, rq, rk, s, d, cp,
                                                                        log_base, inverse);
    return cudaGetLastError();
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

static __global__ void swiglu_fwd_k(const bf16 *in, bf16 *out, long long T, long long F)
{
    GRID_LOOP(e, T * F)
    {
        long long t = e / F, j = e % F;
        float a = ld(in, t * 2 * F + j), u = ld(in, t * 2 * F + F + j);
        st(out, e, a / (1.0f + expf(-a)) * u);
    }
}

static __global__ void swiglu_bwd_k(const bf16 *in, const bf16 *dy, bf16 *din, long long T, long long F)
{
    GRID_LOOP(e, T * F)
    {
        long long t = e / F, j = e % F;
        float a = ld(in, t * 2 * F + j), u = ld(in, t * 2 * F + F + j), g = ld(dy, e);
        float sg = 1.0f / (1.0f + expf(-a));
        st(din, t * 2 * F + j, g * u * sg * (1.0f + a * (1.0f - sg)));
        st(din, t * 2 * F + F + j, g * a * sg);
    }
}

extern "C" cudaError_t kr_cu_swiglu_fwd(const void *in, void *out, long long T, long long F, cudaStream_t s)
{
    swiglu_fwd_k<<<grid_for(T * F, THREADS), THREADS, 0, s>>>((const bf16 *)in, (bf16 *)out, T, F);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_swiglu_bwd(const void *in, const void *dy, void *din, long long T, long long F,
                                        cudaStream_t s)
{
    swiglu_bwd_k<<<grid_for(T * F, THREADS), THREADS, 0, s>>>((const bf16 *)in, (const bf16 *)dy, (bf16 *)din, T, F);
    return cudaGetLastError();
}

/* ---- embedding ------------------------------------------------------------------------------- */

static __global__ void embed_fwd_k(const long long *ids, const bf16 *table, bf16 *out, long long T, long long h,
                                   long long vstart, long long V)
{
    GRID_LOOP(e, T * h)
    {
        long long t = e / h, i = e % h, row = ids[t] - vstart;
        int local = row >= 0 && row < V;
        /* Megatron's masked lookup: foreign ids read row 0, then the output is zeroed. */
        float v = ld(table, (local ? row : 0) * h + i);
        st(out, e, local ? v : 0.0f);
    }
}

static __global__ void embed_bwd_k(const long long *ids, const bf16 *dy, float *dtable, long long T, long long h,
                                   long long vstart, long long V)
{
    GRID_LOOP(e, T * h)
    {
        long long t = e / h, i = e % h, row = ids[t] - vstart;
        float g = ld(dy, e);
        if (row >= 0 && row < V)
            atomicAdd(&dtable[row * h + i], g);
    }
}

extern "C" cudaError_t kr_cu_embed_fwd(const long long *ids, const void *table, void *out, long long T, long long h,
                                       long long vstart, long long V, cudaStream_t s)
{
    embed_fwd_k<<<grid_for(T * h, THREADS), THREADS, 0, s>>>(ids, (const bf16 *)table, (bf16 *)out, T, h, vstart, V);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_embed_bwd(const long long *ids, const void *dy, float *dtable, long long T, long long h,
                                       long long vstart, long long V, cudaStream_t s)
{
    embed_bwd_k<<<grid_for(T * h, THREADS), THREADS, 0, s>>>(ids, (const bf16 *)dy, dtable, T, h, vstart, V);
    return cudaGetLastError();
}

/* ---- cross-entropy (block per row; the two forward passes of Megatron's vocab-parallel loss) -- */

static __global__ void xent_max_k(const bf16 *x, const long long *target, float *rowmax, float *tlogit, long long T,
                                  long long V, long long vstart)
{
    __shared__ float scratch[32];
    for (long long r = blockIdx.x; r < T; r += gridDim.x) {
        float m = -INFINITY;
        for (long long j = threadIdx.x; j < V; j += blockDim.x)
            m = fmaxf(m, ld(x, r * V + j));
        m = block_max(m, scratch);
        if (threadIdx.x == 0) {
            long long tj = target[r] - vstart;
            rowmax[r] = m;
            tlogit[r] = (tj >= 0 && tj < V) ? ld(x, r * V + tj) : 0.0f;
        }
    }
}

static __global__ void xent_sum_k(const bf16 *x, const float *rowmax, const float *tlogit, float *rowsum, float *loss,
                                  long long T, long long V)
{
    __shared__ float scratch[32];
    for (long long r = blockIdx.x; r < T; r += gridDim.x) {
        float m = rowmax[r], sum = 0;
        for (long long j = threadIdx.x; j < V; j += blockDim.x)
            sum += expf(ld(x, r * V + j) - m);
        sum = block_sum(sum, scratch);
        if (threadIdx.x == 0) {
            rowsum[r] = sum;
            loss[r] = logf(sum) + m - tlogit[r];
        }
    }
}

static __global__ void xent_bwd_k(const bf16 *x, const long long *target, const float *rowmax, const float *rowsum,
                                  const float *dloss, bf16 *grad, long long T, long long V, long long vstart)
{
    GRID_LOOP(e, T * V)
    {
        long long t = e / V, j = e % V;
        float sm = expf(ld(x, e) - rowmax[t]) / rowsum[t];
        st(grad, e, (sm - (j == target[t] - vstart ? 1.0f : 0.0f)) * dloss[t]);
    }
}

extern "C" cudaError_t kr_cu_xent_max(const void *logits, const long long *target, float *rowmax, float *tlogit,
                                      long long T, long long V, long long vstart, cudaStream_t s)
{
    xent_max_k<<<grid_for(T, 1), THREADS, 0, s>>>((const bf16 *)logits, target, rowmax, tlogit, T, V, vstart);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_xent_sum(const void *logits, const float *rowmax, const float *tlogit, float *rowsum,
                                      float *loss, long long T, long long V, cudaStream_t s)
{
    xent_sum_k<<<grid_for(T, 1), THREADS, 0, s>>>((const bf16 *)logits, rowmax, tlogit, rowsum, loss, T, V);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_xent_bwd(const void *logits, const long long *target, const float *rowmax,
                                      const float *rowsum, const float *dloss, void *grad, long long T, long long V,
                                      long long vstart, cudaStream_t s)
{
    xent_bwd_k<<<grid_for(T * V, THREADS), THREADS, 0, s>>>((const bf16 *)logits, target, rowmax, rowsum, dloss,
                                                            (bf16 *)grad, T, V, vstart);
    return cudaGetLastError();
}

/* ---- fp32 → bf16 ----------------------------------------------------------------------------- */

static __global__ void f32_to_bf16_k(const float *in, bf16 *out, long long n)
{
    GRID_LOOP(i, n) out[i] = __float2bfloat16_rn(in[i]);
}

extern "C" cudaError_t kr_cu_f32_to_bf16(const float *in, void *out, long long n, cudaStream_t s)
{
    f32_to_bf16_k<<<grid_for(n, THREADS), THREADS, 0, s>>>(in, (bf16 *)out, n);
    return cudaGetLastError();
}
