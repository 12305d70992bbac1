/*
 * refkern.h — what the profiler's kernels compute, defined once for the CPU references
 * (reference.c, part of libkareus) and the CUDA kernels (the .cu files under cuda/, compiled by nvcc).
 *
 * Everything whose result must agree bit for bit between a kernel and its reference lives
 * here as a host/device inline function: bf16 rounding, the counter-based random numbers
 * used for buffer initialisation and dropout, the context-parallel position map, the rotary
 * angle and the QKV layout. The reference implementations (kr__pref_*) compute in double from
 * float inputs that already hold bf16-representable values; the GPU self-test compares the
 * kernels against them on small shapes (tolerances in cuda/selftest.c).
 *
 * Layouts (row-major, bf16 unless stated):
 *   activations      [T, h] with T = b·s tokens, token t = bi·s + si;
 *   fused QKV        [T, nkv·(r + 2)·d], r = nh/nkv: per token, per KV group g, the r query
 *                    heads of the group, then k_g, then v_g (Megatron's grouped layout);
 *   q                [b, nh, s, d]; k, v [b, nkv, S, d] (head-major, what attention loads);
 *   attention out O  [b, s, nh·d] = [T, nh·d] (token-major, the out-projection's input);
 *   log-sum-exp      [b, nh, s] fp32.
 * Linear layers follow PyTorch: W is [n, k]; fprop Y = X·Wᵀ, dgrad dX = dY·W,
 * wgrad dW += dYᵀ·X into an fp32 main gradient (Megatron's gradient accumulation fusion).
 */
#ifndef KR_PROFILER_REFKERN_H
#define KR_PROFILER_REFKERN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KR_HD __host__ __device__ __forceinline__
#else
#define KR_HD static inline
#endif

/* ---- bf16 ------------------------------------------------------------------------------ */

/* Rounds a float to the nearest bf16 (ties to even) and returns its 16-bit pattern. NaN stays
 * a quiet NaN. This is the rounding __float2bfloat16 performs. */
KR_HD uint16_t kr__bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

KR_HD float kr__bf16_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The float nearest to f that bf16 can hold. */
KR_HD float kr__bf16_round(float f)
{
    return kr__bf16_float(kr__bf16_bits(f));
}

/* ---- counter-based random numbers ------------------------------------------------------- */

/* splitmix64's finaliser of seed and index: a stateless hash, so every GPU thread and the CPU
 * reference draw the same number for the same (seed, index) in any order. */
KR_HD uint64_t kr__hash64(uint64_t seed, uint64_t idx)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (idx + 1u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits (exact in float). */
KR_HD float kr__hash_uniform(uint64_t seed, uint64_t idx)
{
    return (float)(kr__hash64(seed, idx) >> 40) * (1.0f / 16777216.0f);
}

/* Initial value of element idx of a buffer: uniform in [-scale, scale), rounded to bf16. */
KR_HD float kr__init_value(uint64_t seed, uint64_t idx, float scale)
{
    return kr__bf16_round((2.0f * kr__hash_uniform(seed, idx) - 1.0f) * scale);
}

/* Dropout keeps element idx when its uniform draw is at least p. */
KR_HD int kr__dropout_keep(uint64_t seed, uint64_t idx, float p)
{
    return kr__hash_uniform(seed, idx) >= p;
}

/* ---- positions and rotary ---------------------------------------------------------------- */

/*
 * Global position of local token si (0 <= si < s) of context-parallel rank 0 of cp ranks.
 * Megatron's load-balanced CP layout gives rank r the sequence chunks r and 2·cp−1−r (each
 * s/2 long), so every rank does the same causal attention work; the profiler measures rank 0.
 * With cp = 1 (or odd s) positions are the identity.
 */
KR_HD long kr__cp_pos(long si, long s, int cp)
{
    if (cp <= 1 || (s & 1))
        return si;
    long half = s / 2;
    return si < half ? si : (long)(2 * cp - 1) * half + (si - half);
}

/* Rotary angle of pair i (0 <= i < d/2) at position pos: pos · base^(−2i/d) (RoFormer;
 * Llama 3 uses base 500000, the profiler's default). Rotate-half pairing: (x[i], x[i+d/2]). */
KR_HD float kr__rope_angle(long pos, int i, int d, float log_base)
{
    return (float)pos * expf(-(2.0f * (float)i / (float)d) * log_base);
}

/* Column of query head hq, or of the k (which = 1) or v (which = 2) of KV group g, inside one
 * token's row of the fused QKV output (Megatron's grouped layout, see the file comment). */
KR_HD long kr__qkv_col_q(int hq, int nh, int nkv, int d)
{
    int r = nh / nkv;
    return ((long)(hq / r) * (r + 2) + hq % r) * d;
}

KR_HD long kr__qkv_col_kv(int g, int which, int nh, int nkv, int d)
{
    int r = nh / nkv;
    return ((long)g * (r + 2) + r + (which - 1)) * d;
}

/* ---- CPU references (reference.c) ---------------------------------------------------------
 * Inputs are float arrays holding bf16-representable values (integers for ids); outputs are
 * written as float (exact results, not rounded to bf16, so the self-test measures the kernel's
 * own rounding). All sizes are in elements. Gradient-accumulating outputs (wgrad, dgamma,
 * embedding gradient) are added to, as the kernels do. */
#ifndef __CUDACC__

/* Y[T,n] = X[T,k]·W[n,k]ᵀ. */
void kr__pref_gemm_fprop(const float *x, const float *w, float *y, long T, long n, long k);
/* dX[T,k] = dY[T,n]·W[n,k]. */
void kr__pref_gemm_dgrad(const float *dy, const float *w, float *dx, long T, long n, long k);
/* dW[n,k] += dY[T,n]ᵀ·X[T,k]. */
void kr__pref_gemm_wgrad(const float *dy, const float *x, float *dw, long T, long n, long k);

/* RMSNorm over rows of h: y = x·rstd·gamma, rstd = 1/sqrt(mean(x²) + eps); rstd[T] saved. */
void kr__pref_rmsnorm_fwd(const float *x, const float *gamma, float *y, float *rstd, long T, long h, float eps);
/* dx from x, gamma, dy and the saved rstd; dgamma[h] += Σ_rows dy·x·rstd. */
void kr__pref_rmsnorm_bwd(const float *x, const float *gamma, const float *dy, const float *rstd, float *dx,
                          float *dgamma, long T, long h);

/* Bias-dropout-add (no bias in Llama/Qwen): out = residual + x·keep/(1−p); mask[i] = keep. */
void kr__pref_bda_fwd(const float *x, const float *residual, float *out, unsigned char *mask, long n, float p,
                      uint64_t seed);
/* dx = dy·mask/(1−p) (the residual branch passes dy through unchanged). */
void kr__pref_bda_bwd(const float *dy, const unsigned char *mask, float *dx, long n, float p);

/* Split of the fused QKV [T, nkv(r+2)d] into q [b,nh,s,d], k, v [b,nkv,s,d]; and its inverse. */
void kr__pref_qkv_split(const float *qkv, float *q, float *k, float *v, long b, long s, int nh, int nkv, int d);
void kr__pref_qkv_merge(const float *dq, const float *dk, const float *dv, float *dqkv, long b, long s, int nh,
                        int nkv, int d);

/* Rotary embedding in place on x [b, heads, s, d] at positions kr__cp_pos(si, s, cp); inverse = 1
 * rotates by −angle (the backward). */
void kr__pref_rope(float *x, long b, int heads, long s, int d, int cp, float log_base, int inverse);

/* SwiGLU: in [T, 2F] = (gate, up); out [T, F] = silu(gate)·up; backward din [T, 2F]. */
void kr__pref_swiglu_fwd(const float *in, float *out, long T, long F);
void kr__pref_swiglu_bwd(const float *in, const float *dy, float *din, long T, long F);

/* Vocabulary-parallel embedding: ids [T] (global), local rows [vstart, vstart+V) of table [V, h];
 * rows of other shards are zero. Backward adds dy rows into the fp32 table gradient. */
void kr__pref_embed_fwd(const long *ids, const float *table, float *out, long T, long h, long vstart, long V);
void kr__pref_embed_bwd(const long *ids, const float *dy, float *dtable, long T, long h, long vstart, long V);

/* Vocabulary-parallel cross-entropy on this shard's logits [T, V] (columns vstart..vstart+V−1),
 * targets [T] global ids. With one shard this is the full loss: loss[t] = log Σ exp − x_target.
 * rowmax/rowsum are saved for the backward: grad = (softmax − onehot)·dloss[t]. */
void kr__pref_xent_fwd(const float *logits, const long *target, float *loss, float *rowmax, float *rowsum, long T,
                       long V, long vstart);
void kr__pref_xent_bwd(const float *logits, const long *target, const float *rowmax, const float *rowsum,
                       const float *dloss, float *grad, long T, long V, long vstart);

/* Causal GQA attention (d <= 256), scale 1/sqrt(d): q [b,nh,s,d] at positions kr__cp_pos(·, s, cp), k,v
 * [b,nkv,S,d] at positions 0..S−1; o [b,s,nh·d]; lse [b,nh,s]. */
void kr__pref_attn_fwd(const float *q, const float *k, const float *v, float *o, float *lse, long b, int nh,
                       int nkv, long s, long S, int d, int cp);
/* Backward: dq [b,nh,s,d], dk, dv [b,nkv,S,d] (overwritten) from do_ [b,s,nh·d]. */
void kr__pref_attn_bwd(const float *q, const float *k, const float *v, const float *o, const float *do_,
                       const float *lse, float *dq, float *dk, float *dv, long b, int nh, int nkv, long s, long S,
                       int d, int cp);

/* The single-GPU collective proxy (see cuda/collective.cu): step st moves chunk st (of `chunk`
 * elements, wrapping around buffers of dst_elems elements) of src into the same chunk of dst,
 * adding (reduce = 1) or copying (reduce = 0). src stands for the data arriving from peers. */
void kr__pref_proxy(const float *src, float *dst, long chunk, int nsteps, long dst_elems, int reduce);

#endif /* __CUDACC__ */
#endif
