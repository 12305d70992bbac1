/*
 * attention.cu — flash-style causal attention with grouped-query heads, forward and backward,
 * on bf16 tensor cores (WMMA 16×16×16, fp32 accumulation).
 *
 * Why flash-style and not cuBLAS batched GEMMs + a softmax kernel: the training jobs we profile
 * run FlashAttention (TransformerEngine's DotProductAttention, kareus-method.md §1.1), which is
 * compute-bound — the score matrix never leaves the SM — and skips the masked half of a causal
 * score matrix. Batched GEMMs would write and re-read the full b·h·s² score matrix (about 0.4 GB
 * per pass for the default job's nanobatch), compute the masked half, and make attention
 * memory-bound: its time would no longer follow the SM clock the way the real kernel's does,
 * which is exactly what the frequency search measures. The kernels below follow
 * FlashAttention-2 (Dao, 2023): the forward keeps a running max and sum per query row (online
 * softmax) over 64-key blocks up to the diagonal; the backward is parallel over 64-key blocks,
 * recomputes P from the saved log-sum-exp, keeps dK and dV in registers for all query heads of
 * its KV group (GQA) and accumulates dQ in fp32 with atomics, converted afterwards. They reach
 * well under FlashAttention-3's throughput on Hopper (no TMA/wgmma, shared-memory round trips for
 * the softmax), so attention takes longer than in a tuned training stack; docs/profiler.md says so.
 *
 * Layouts and positions as refkern.h: q [b,nh,s,d], k/v [b,nkv,S,d], o/dO [b,s,nh·d], lse and
 * D [b,nh,s]; query i of the local chunk sits at kr__cp_pos(i, s, cp), key j at position j.
 */
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>

#include "kr_cuda.h"
#include "profiler/refkern.h"

using namespace nvcuda;
typedef __nv_bfloat16 bf16;

#define BM 64      /* query rows per block */
#define BN 64      /* key rows per block */
#define WARPS 4    /* each warp owns 16 rows */
#define NT (WARPS * 32)

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a_row;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major> frag_a_col;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_b_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* Copies rows [r0, r0+64) of a [rows, D] bf16 matrix with row stride `stride` elements into
 * shared memory [64][D], zero-filling rows >= rows. 16-byte vectors (D*2 is a multiple of 16). */
template <int D>
static __device__ void load_tile(bf16 *dst, const bf16 *src, long long r0, long long rows, long long stride)
{
    const int vec_per_row = D / 8;
    for (int v = threadIdx.x; v < BM * vec_per_row; v += NT) {
        int r = v / vec_per_row, c = (v % vec_per_row) * 8;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (r0 + r < rows)
            val = *(const uint4 *)(src + (r0 + r) * stride + c);
        *(uint4 *)(dst + r * D + c) = val;
    }
}

/* Shared-memory layout of the forward kernel (bytes). */
template <int D>
struct fwd_smem {
    static const int q = 0, k = q + BM * D * 2, v = k + BN * D * 2, s = v + BN * D * 2, p = s + BM * BN * 4,
                     o = p + BM * BN * 2, m = o + BM * D * 4, l = m + BM * 4, total = l + BM * 4;
};

template <int D>
static __global__ void __launch_bounds__(NT) attn_fwd_k(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *o,
                                                       float *lse, int nh, int nkv, long long s, long long S, int cp,
                                                       float scale)
{
    extern __shared__ __align__(128) unsigned char smem[];
    typedef fwd_smem<D> L;
    bf16 *Qs = (bf16 *)(smem + L::q), *Ks = (bf16 *)(smem + L::k), *Vs = (bf16 *)(smem + L::v);
    float *Sf = (float *)(smem + L::s), *Of = (float *)(smem + L::o), *Ms = (float *)(smem + L::m),
          *Ls = (float *)(smem + L::l);
    bf16 *Ps = (bf16 *)(smem + L::p);
    const int h = blockIdx.y, g = h / (nh / nkv), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long bi = blockIdx.z, q0 = (long long)blockIdx.x * BM;
    const bf16 *qb = q + ((bi * nh + h) * s) * D, *kb = k + ((bi * nkv + g) * S) * D, *vb = v + ((bi * nkv + g) * S) * D;

    load_tile<D>(Qs, qb, q0, s, D);
    for (int i = threadIdx.x; i < BM * D; i += NT)
        Of[i] = 0.0f;
    for (int i = threadIdx.x; i < BM; i += NT) {
        Ms[i] = -INFINITY;
        Ls[i] = 0.0f;
    }
    long long last_row = q0 + BM - 1 < s - 1 ? q0 + BM - 1 : s - 1;
    long long max_pos = kr__cp_pos((long)last_row, (long)s, cp); /* positions increase with the row */
    long long kv_end = max_pos + 1 < S ? max_pos + 1 : S;
    __syncthreads();

    /* Lane pair (2r, 2r+1) owns row r of the warp's 16; each lane 32 of the 64 columns. */
    const int row = lane / 2, half = lane % 2, wrow = warp * 16 + row;
    const long long qi = q0 + wrow;
    const long long qpos = qi < s ? kr__cp_pos((long)qi, (long)s, cp) : -1;
    for (long long j0 = 0; j0 < kv_end; j0 += BN) {
        load_tile<D>(Ks, kb, j0, S, D);
        load_tile<D>(Vs, vb, j0, S, D);
        __syncthreads();
        /* S_w = Q_w · Kᵀ (16 × 64). */
        for (int nt = 0; nt < BN / 16; nt++) {
            frag_c acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int kt = 0; kt < D / 16; kt++) {
                frag_a_row a;
                frag_b_col b;
                wmma::load_matrix_sync(a, Qs + warp * 16 * D + kt * 16, D);
                wmma::load_matrix_sync(b, Ks + nt * 16 * D + kt * 16, D);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(Sf + warp * 16 * BN + nt * 16, acc, BN, wmma::mem_row_major);
        }
        __syncwarp();
        /* Online softmax of the warp's rows. */
        float *srow = Sf + (warp * 16 + row) * BN;
        float mx = -INFINITY;
        for (int c = half * 32; c < half * 32 + 32; c++) {
            long long kp = j0 + c;
            float val = (qpos >= 0 && kp <= qpos && kp < S) ? srow[c] * scale : -INFINITY;
            srow[c] = val;
            mx = fmaxf(mx, val);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        float m_old = Ms[wrow], m_new = fmaxf(m_old, mx);
        float alpha = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
        float sum = 0;
        bf16 *prow = Ps + (warp * 16 + row) * BN;
        for (int c = half * 32; c < half * 32 + 32; c++) {
            float p = srow[c] == -INFINITY ? 0.0f : expf(srow[c] - m_new);
            sum += p;
            prow[c] = __float2bfloat16_rn(p);
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        float *orow = Of + wrow * D;
        for (int c = half * (D / 2); c < (half + 1) * (D / 2); c++)
            orow[c] *= alpha;
        __syncwarp();
        if (half == 0) {
            Ms[wrow] = m_new;
            Ls[wrow] = Ls[wrow] * alpha + sum;
        }
        __syncwarp();
        /* O_w += P_w · V (16 × D). */
        for (int dt = 0; dt < D / 16; dt++) {
            frag_c acc;
            wmma::load_matrix_sync(acc, Of + warp * 16 * D + dt * 16, D, wmma::mem_row_major);
            for (int kt = 0; kt < BN / 16; kt++) {
                frag_a_row a;
                frag_b_row b;
                wmma::load_matrix_sync(a, Ps + warp * 16 * BN + kt * 16, BN);
                wmma::load_matrix_sync(b, Vs + kt * 16 * D + dt * 16, D);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(Of + warp * 16 * D + dt * 16, acc, D, wmma::mem_row_major);
        }
        __syncthreads();
    }
    /* O = O / l, token-major; lse = m + log l. */
    for (int i = threadIdx.x; i < BM * D; i += NT) {
        int r = i / D, c = i % D;
        long long qr = q0 + r;
        if (qr < s) {
            float l = Ls[r];
            o[((bi * s + qr) * nh + h) * D + c] = __float2bfloat16_rn(l > 0 ? Of[i] / l : 0.0f);
        }
    }
    for (int r = threadIdx.x; r < BM; r += NT)
        if (q0 + r < s)
            lse[(bi * nh + h) * s + q0 + r] = Ms[r] + logf(Ls[r]);
}

/* Shared-memory layout of the backward kernel (bytes). The dQ staging and the final dK/dV
 * staging reuse regions that are free at that point. */
template <int D>
struct bwd_smem {
    static const int k = 0, v = k + BN * D * 2, q = v + BN * D * 2, dO = q + BM * D * 2, s = dO + BM * D * 2,
                     dp = s + BM * BN * 4, p = dp + BM * BN * 4, ds = p + BM * BN * 2, lse = ds + BM * BN * 2,
                     delta = lse + BM * 4, pos = delta + BM * 4, total = pos + BM * 8;
};

template <int D>
static __global__ void __launch_bounds__(NT) attn_bwd_k(const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *dO,
                                                       const float *lse, const float *delta, float *dq_accum, bf16 *dk,
                                                       bf16 *dv, int nh, int nkv, long long s, long long S, int cp,
                                                       float scale)
{
    extern __shared__ __align__(128) unsigned char smem[];
    typedef bwd_smem<D> L;
    bf16 *Ks = (bf16 *)(smem + L::k), *Vs = (bf16 *)(smem + L::v), *Qs = (bf16 *)(smem + L::q),
         *dOs = (bf16 *)(smem + L::dO), *Ps = (bf16 *)(smem + L::p), *dSs = (bf16 *)(smem + L::ds);
    float *Sf = (float *)(smem + L::s), *dPf = (float *)(smem + L::dp), *LSEs = (float *)(smem + L::lse),
          *Ds = (float *)(smem + L::delta);
    long long *Pos = (long long *)(smem + L::pos);
    const int g = blockIdx.y, r = nh / nkv, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long bi = blockIdx.z, kv0 = (long long)blockIdx.x * BN;
    const bf16 *kb = k + ((bi * nkv + g) * S) * D, *vb = v + ((bi * nkv + g) * S) * D;

    load_tile<D>(Ks, kb, kv0, S, D);
    load_tile<D>(Vs, vb, kv0, S, D);
    frag_c acc_dk[D / 16], acc_dv[D / 16]; /* this warp's 16 key rows × D, all query heads */
#pragma unroll
    for (int dt = 0; dt < D / 16; dt++) {
        wmma::fill_fragment(acc_dk[dt], 0.0f);
        wmma::fill_fragment(acc_dv[dt], 0.0f);
    }
    const long long nqb = (s + BM - 1) / BM;
    for (int hh = 0; hh < r; hh++) {
        const int h = g * r + hh;
        const bf16 *qb = q + ((bi * nh + h) * s) * D;
        for (long long qb_i = 0; qb_i < nqb; qb_i++) {
            long long q0 = qb_i * BM, last = q0 + BM - 1 < s - 1 ? q0 + BM - 1 : s - 1;
            if (kr__cp_pos((long)last, (long)s, cp) < kv0)
                continue; /* every query of the block is before every key: fully masked */
            __syncthreads(); /* the previous iteration is done with the tiles */
            load_tile<D>(Qs, qb, q0, s, D);
            load_tile<D>(dOs, dO + (bi * s) * (long long)nh * D + (long long)h * D, q0, s, (long long)nh * D);
            for (int i = threadIdx.x; i < BM; i += NT) {
                long long qi = q0 + i;
                LSEs[i] = qi < s ? lse[(bi * nh + h) * s + qi] : 0.0f;
                Ds[i] = qi < s ? delta[(bi * nh + h) * s + qi] : 0.0f;
                Pos[i] = qi < s ? kr__cp_pos((long)qi, (long)s, cp) : -1;
            }
            __syncthreads();
            /* Warp w: rows w·16.. of S = Q·Kᵀ and dP = dO·Vᵀ. */
            for (int nt = 0; nt < BN / 16; nt++) {
                frag_c cs, cp_;
                wmma::fill_fragment(cs, 0.0f);
                wmma::fill_fragment(cp_, 0.0f);
                for (int kt = 0; kt < D / 16; kt++) {
                    frag_a_row a;
                    frag_b_col b;
                    wmma::load_matrix_sync(a, Qs + warp * 16 * D + kt * 16, D);
                    wmma::load_matrix_sync(b, Ks + nt * 16 * D + kt * 16, D);
                    wmma::mma_sync(cs, a, b, cs);
                    wmma::load_matrix_sync(a, dOs + warp * 16 * D + kt * 16, D);
                    wmma::load_matrix_sync(b, Vs + nt * 16 * D + kt * 16, D);
                    wmma::mma_sync(cp_, a, b, cp_);
                }
                wmma::store_matrix_sync(Sf + warp * 16 * BN + nt * 16, cs, BN, wmma::mem_row_major);
                wmma::store_matrix_sync(dPf + warp * 16 * BN + nt * 16, cp_, BN, wmma::mem_row_major);
            }
            __syncwarp();
            /* P = exp(scale·S − lse) under the causal mask; dS = P ∘ (dP − D). */
            for (int e = lane; e < 16 * BN; e += 32) {
                int rr = warp * 16 + e / BN, c = e % BN;
                long long qp = Pos[rr], kp = kv0 + c;
                float p = (qp >= 0 && kp <= qp && kp < S) ? expf(Sf[rr * BN + c] * scale - LSEs[rr]) : 0.0f;
                Ps[rr * BN + c] = __float2bfloat16_rn(p);
                dSs[rr * BN + c] = __float2bfloat16_rn(p * (dPf[rr * BN + c] - Ds[rr]));
            }
            __syncthreads();
            /* Warp w owns key rows w·16..: dV += Pᵀ·dO, dK += dSᵀ·Q (scale applied at the end).
             * Unrolled so the accumulator arrays stay in registers. */
#pragma unroll
            for (int dt = 0; dt < D / 16; dt++)
                for (int kt = 0; kt < BM / 16; kt++) {
                    frag_a_col a;
                    frag_b_row b;
                    wmma::load_matrix_sync(a, Ps + kt * 16 * BN + warp * 16, BN);
                    wmma::load_matrix_sync(b, dOs + kt * 16 * D + dt * 16, D);
                    wmma::mma_sync(acc_dv[dt], a, b, acc_dv[dt]);
                    wmma::load_matrix_sync(a, dSs + kt * 16 * BN + warp * 16, BN);
                    wmma::load_matrix_sync(b, Qs + kt * 16 * D + dt * 16, D);
                    wmma::mma_sync(acc_dk[dt], a, b, acc_dk[dt]);
                }
            /* Warp w: dQ rows w·16.. += scale · dS·K, staged 16×16 at a time in its slice of Sf
             * (every warp finished reading Sf before the __syncthreads above). */
            float *stage = Sf + warp * 256;
            for (int dt = 0; dt < D / 16; dt++) {
                frag_c acc;
                wmma::fill_fragment(acc, 0.0f);
                for (int kt = 0; kt < BN / 16; kt++) {
                    frag_a_row a;
                    frag_b_row b;
                    wmma::load_matrix_sync(a, dSs + warp * 16 * BN + kt * 16, BN);
                    wmma::load_matrix_sync(b, Ks + kt * 16 * D + dt * 16, D);
                    wmma::mma_sync(acc, a, b, acc);
                }
                wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32) {
                    long long qi = q0 + warp * 16 + e / 16;
                    if (qi < s)
                        atomicAdd(&dq_accum[((bi * nh + h) * s + qi) * D + dt * 16 + e % 16], scale * stage[e]);
                }
                __syncwarp();
            }
        }
    }
    __syncthreads();
    /* dK (scaled) and dV to global through the Q/dO region (now free), a warp's 16 rows each. */
    float *stage = (float *)(smem + L::q) + warp * 16 * 16;
#pragma unroll
    for (int which = 0; which < 2; which++)
#pragma unroll
        for (int dt = 0; dt < D / 16; dt++) {
            wmma::store_matrix_sync(stage, which ? acc_dv[dt] : acc_dk[dt], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                long long kr = kv0 + warp * 16 + e / 16;
                if (kr < S) {
                    float val = which ? stage[e] : stage[e] * scale;
                    (which ? dv : dk)[((bi * nkv + g) * S + kr) * D + dt * 16 + e % 16] = __float2bfloat16_rn(val);
                }
            }
            __syncwarp();
        }
}

/* D = rowsum(dO∘O) (a warp per query row), and zero the row's dQ accumulator. */
static __global__ void attn_bwd_pre_k(const bf16 *o, const bf16 *dO, float *delta, float *dq_accum, long long b, int nh,
                                      long long s, int d)
{
    long long rows = b * nh * s, warps = (long long)gridDim.x * (blockDim.x / 32);
    int lane = threadIdx.x % 32;
    for (long long w = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; w < rows; w += warps) {
        long long bi = w / (nh * s), h = (w / s) % nh, si = w % s;
        const bf16 *orow = o + ((bi * s + si) * nh + h) * d, *drow = dO + ((bi * s + si) * nh + h) * d;
        float acc = 0;
        for (int i = lane; i < d; i += 32) {
            acc += __bfloat162float(orow[i]) * __bfloat162float(drow[i]);
            dq_accum[w * d + i] = 0.0f;
        }
        for (int off = 16; off > 0; off >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0)
            delta[w] = acc;
    }
}

extern "C" cudaError_t kr_cu_attn_setup(void)
{
    cudaError_t e = cudaFuncSetAttribute(attn_fwd_k<64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         fwd_smem<64>::total);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_fwd_k<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, fwd_smem<128>::total);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_bwd_k<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, bwd_smem<64>::total);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_bwd_k<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, bwd_smem<128>::total);
    return e;
}

extern "C" cudaError_t kr_cu_attn_fwd(const void *q, const void *k, const void *v, void *o, float *lse, long long b,
                                      int nh, int nkv, long long s, long long S, int d, int cp, cudaStream_t st)
{
    if (nkv < 1 || nh % nkv != 0 || b < 1 || s < 1 || S < 1 || b > 65535 || nh > 65535)
        return cudaErrorInvalidValue;
    dim3 grid((unsigned)((s + BM - 1) / BM), (unsigned)nh, (unsigned)b);
    float scale = 1.0f / sqrtf((float)d);
    if (d == 64)
        attn_fwd_k<64><<<grid, NT, fwd_smem<64>::total, st>>>((const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
                                                              (bf16 *)o, lse, nh, nkv, s, S, cp, scale);
    else if (d == 128)
        attn_fwd_k<128><<<grid, NT, fwd_smem<128>::total, st>>>((const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
                                                                (bf16 *)o, lse, nh, nkv, s, S, cp, scale);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_attn_bwd_pre(const void *o, const void *dO, float *delta, float *dq_accum, long long b,
                                          int nh, long long s, int d, cudaStream_t st)
{
    long long rows = b * nh * s, blocks = (rows + 7) / 8;
    attn_bwd_pre_k<<<(unsigned)(blocks > 65535 * 16 ? 65535 * 16 : blocks), 256, 0, st>>>(
        (const bf16 *)o, (const bf16 *)dO, delta, dq_accum, b, nh, s, d);
    return cudaGetLastError();
}

extern "C" cudaError_t kr_cu_attn_bwd(const void *q, const void *k, const void *v, const void *dO, const float *lse,
                                      const float *delta, float *dq_accum, void *dk, void *dv, long long b, int nh,
                                      int nkv, long long s, long long S, int d, int cp, cudaStream_t st)
{
    if (nkv < 1 || nh % nkv != 0 || b < 1 || s < 1 || S < 1 || b > 65535)
        return cudaErrorInvalidValue;
    dim3 grid((unsigned)((S + BN - 1) / BN), (unsigned)nkv, (unsigned)b);
    float scale = 1.0f / sqrtf((float)d);
    if (d == 64)
        attn_bwd_k<64><<<grid, NT, bwd_smem<64>::total, st>>>((const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
                                                              (const bf16 *)dO, lse, delta, dq_accum, (bf16 *)dk,
                                                              (bf16 *)dv, nh, nkv, s, S, cp, scale);
    else if (d == 128)
        attn_bwd_k<128><<<grid, NT, bwd_smem<128>::total, st>>>((const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
                                                                (const bf16 *)dO, lse, delta, dq_accum, (bf16 *)dk,
                                                                (bf16 *)dv, nh, nkv, s, S, cp, scale);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
