/*
 * kr_cuda.h — internal interface of libkareus_cuda.so: the kernel launchers (kernels.cu,
 * attention.cu, compiled by nvcc) as plain C functions, and the host helpers the runner and
 * the self-test share (runner.c). bf16 buffers are passed as void * (uint16 bit patterns on the
 * host); every launcher returns the CUDA error of the launch (cudaSuccess when it was queued).
 * What each kernel computes is defined once in src/profiler/refkern.h.
 */
#ifndef KR_CUDA_H
#define KR_CUDA_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kareus/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- initialisation and calibration kernels (kernels.cu) ------------------------------------ */

/* Buffer fill from the counter-based hash: bf16/fp32 uniform in [lo, hi); int64 ids uniform in
 * [0, vocab); bytes 0/1 with P(1) = keep. */
cudaError_t kr_cu_init_bf16(void *p, long long n, uint64_t seed, float lo, float hi, cudaStream_t st);
cudaError_t kr_cu_init_f32(float *p, long long n, uint64_t seed, float lo, float hi, cudaStream_t st);
cudaError_t kr_cu_init_ids(long long *p, long long n, uint64_t seed, long long vocab, cudaStream_t st);
cudaError_t kr_cu_init_mask(unsigned char *p, long long n, uint64_t seed, float keep, cudaStream_t st);

/* HBM copy of n bf16 elements. */
cudaError_t kr_cu_stream(const void *src, void *dst, long long n, cudaStream_t st);
/* ctas CTAs of one warp each busy-wait ns nanoseconds (ns = 0: an empty kernel). */
cudaError_t kr_cu_spin(int ctas, long long ns, cudaStream_t st);

/*
 * The single-GPU collective proxy: exactly `ctas` CTAs of 512 threads, each holding smem_bytes
 * of dynamic shared memory (more than half an SM's, so no two share an SM). reduce_steps then
 * copy_steps steps over chunks of `chunk` elements of src/dst (elems each), as
 * kr__pref_proxy. With ns_per_byte > 0 every CTA is paced: it never gets ahead of
 * alpha_ns + (wire bytes it has read) · ns_per_byte since it started.
 */
cudaError_t kr_cu_proxy(const void *src, void *dst, long long chunk, int reduce_steps, int copy_steps, long long elems,
                        int ctas, int smem_bytes, double ns_per_byte, double alpha_ns, cudaStream_t st);
/* Dynamic shared memory the proxy requests on this device (sets the kernel's attribute). */
cudaError_t kr_cu_proxy_setup(int device, int *smem_bytes);

/* One thread samples (globaltimer ns, clock64) every interval_ns for duration_ns into t_ns/clk
 * (cap entries, *n written), sets *started = 1 when it begins, and records in *req_index the
 * first sample taken after *request became nonzero. flags live in mapped host memory. */
cudaError_t kr_cu_clock_trace(unsigned long long *t_ns, unsigned long long *clk, int cap, int *n, int *req_index,
                              volatile int *started, volatile int *request, long long duration_ns,
                              long long interval_ns, cudaStream_t st);

/* ---- memory-bound kernels (kernels.cu) ------------------------------------------------------ */

cudaError_t kr_cu_rmsnorm_fwd(const void *x, const void *gamma, void *y, float *rstd, long long T, long long h,
                              float eps, cudaStream_t st);
/* dgamma (fp32, h) is accumulated with atomics. */
cudaError_t kr_cu_rmsnorm_bwd(const void *x, const void *gamma, const void *dy, const float *rstd, void *dx,
                              float *dgamma, long long T, long long h, cudaStream_t st);
cudaError_t kr_cu_bda_fwd(const void *x, const void *res, void *out, unsigned char *mask, long long n, float p,
                          uint64_t seed, cudaStream_t st);
cudaError_t kr_cu_bda_bwd(const void *dy, const unsigned char *mask, void *dx, long long n, float p, cudaStream_t st);
cudaError_t kr_cu_qkv_split(const void *qkv, void *q, void *k, void *v, long long b, long long s, int nh, int nkv,
                            int d, cudaStream_t st);
cudaError_t kr_cu_qkv_merge(const void *dq, const void *dk, const void *dv, void *dqkv, long long b, long long s,
                            int nh, int nkv, int d, cudaStream_t st);
/* Per-head RMSNorm (rows of d) of q (rows_q rows) and k (rows_k rows), in place; rstd saved. */
cudaError_t kr_cu_qknorm_fwd(void *q, void *k, const void *gq, const void *gk, float *rq, float *rk, long long rows_q,
                             long long rows_k, int d, float eps, cudaStream_t st);
/* Backward from the saved inputs xq/xk and the incoming gradients dyq/dyk into dxq/dxk. */
cudaError_t kr_cu_qknorm_bwd(const void *xq, const void *xk, const void *gq, const void *gk, const float *rq,
                             const float *rk, const void *dyq, const void *dyk, void *dxq, void *dxk, long long rows_q,
                             long long rows_k, int d, cudaStream_t st);
/* Rotary embedding of q [b,nh,s,d] and k [b,nkv,s,d] in place (inverse = 1: backward). */
cudaError_t kr_cu_rope(void *q, void *k, long long b, int nh, int nkv, long long s, int d, int cp, float log_base,
                       int inverse, cudaStream_t st);
cudaError_t kr_cu_swiglu_fwd(const void *in, void *out, long long T, long long F, cudaStream_t st);
cudaError_t kr_cu_swiglu_bwd(const void *in, const void *dy, void *din, long long T, long long F, cudaStream_t st);
cudaError_t kr_cu_embed_fwd(const long long *ids, const void *table, void *out, long long T, long long h,
                            long long vstart, long long V, cudaStream_t st);
cudaError_t kr_cu_embed_bwd(const long long *ids, const void *dy, float *dtable, long long T, long long h,
                            long long vstart, long long V, cudaStream_t st);
cudaError_t kr_cu_xent_max(const void *logits, const long long *target, float *rowmax, float *tlogit, long long T,
                           long long V, long long vstart, cudaStream_t st);
cudaError_t kr_cu_xent_sum(const void *logits, const float *rowmax, const float *tlogit, float *rowsum, float *loss,
                           long long T, long long V, cudaStream_t st);
cudaError_t kr_cu_xent_bwd(const void *logits, const long long *target, const float *rowmax, const float *rowsum,
                           const float *dloss, void *grad, long long T, long long V, long long vstart,
                           cudaStream_t st);

/* ---- attention (attention.cu) --------------------------------------------------------------- */

/* Flash-style causal GQA attention, d = 64 or 128 (cudaErrorInvalidValue otherwise). */
cudaError_t kr_cu_attn_fwd(const void *q, const void *k, const void *v, void *o, float *lse, long long b, int nh,
                           int nkv, long long s, long long S, int d, int cp, cudaStream_t st);
/* D = rowsum(dO∘O) per query row; zeroes dq_accum. */
cudaError_t kr_cu_attn_bwd_pre(const void *o, const void *dO, float *delta, float *dq_accum, long long b, int nh,
                               long long s, int d, cudaStream_t st);
cudaError_t kr_cu_attn_bwd(const void *q, const void *k, const void *v, const void *dO, const float *lse,
                           const float *delta, float *dq_accum, void *dk, void *dv, long long b, int nh, int nkv,
                           long long s, long long S, int d, int cp, cudaStream_t st);
cudaError_t kr_cu_f32_to_bf16(const float *in, void *out, long long n, cudaStream_t st);
/* Shared memory the attention kernels need (sets the kernels' attributes on the current device). */
cudaError_t kr_cu_attn_setup(void);

/* ---- host helpers (runner.c) ---------------------------------------------------------------- */

typedef struct kr_cu_gemm kr_cu_gemm; /* a prepared cuBLASLt matmul */

/* Prepares a GEMM of the given kind (KR_PK_GEMM_*) with the forward shape T×n×k on handle lt
 * (a cublasLtHandle_t), choosing the algorithm by cuBLASLt's heuristic for workspace_bytes. */
int kr_cu_gemm_create(void *lt, kr_profiler_kernel kind, long long T, long long n, long long k,
                      size_t workspace_bytes, kr_cu_gemm **out, kr_error *err);
/* Runs it: fprop (a = X, b = W, c = Y), dgrad (a = dY, b = W, c = dX), wgrad (a = dY, b = X,
 * c = fp32 main grad, accumulated). */
int kr_cu_gemm_run(kr_cu_gemm *g, const void *a, const void *b, void *c, void *workspace, cudaStream_t st,
                   kr_error *err);
void kr_cu_gemm_destroy(kr_cu_gemm *g);

/* Sets err from a CUDA error: "what: cudaErrorName: message". Returns KR_EBACKEND (KR_ENOMEM
 * for cudaErrorMemoryAllocation). */
int kr_cu_fail(kr_error *err, cudaError_t e, const char *what);

/* The runner's kernel self-test (selftest.c). */
int kr_cu_selftest(int device, void *lt, char *report, size_t cap, kr_error *err);

/* Opens the runner (runner.c). */
int kr_cu_runner_open(int first, int devices, kr_profiler_runner *r, kr_error *err);

#ifdef __cplusplus
}
#endif
#endif
