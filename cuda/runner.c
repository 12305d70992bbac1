/*
 * runner.c — the CUDA runner: executes a kernel program (profiler.h) on one or more GPUs exactly
 * as the design describes a partition: one nanobatch's compute on the compute stream; the other
 * nanobatch's collective on a comm stream, launched at the slot — an event is recorded on the
 * compute stream after the step before the slot is enqueued, the comm stream waits on it, the
 * collective is enqueued with the config's CTAs — and the partition ends when both streams are
 * done (the compute stream waits on an event recorded after the collective, so the next
 * execution starts after both, as in the artifact where the next partition consumes the comm
 * result).
 *
 * With several GPUs the collective is a real NCCL call; communicators are created with
 * ncclCommInitRankConfig and minCTAs = maxCTAs = the config's SMs (and nvlsCTAs likewise),
 * from one thread for all ranks inside ncclGroupStart/End, and cached per CTA count (NCCL fixes
 * the CTA range when a communicator is created). With one GPU it is the proxy kernel
 * (kernels.cu). Every rank runs the same compute, as every GPU of a TP group does.
 *
 * A run of N executions is enqueued by a worker thread, so start() returns at once and the
 * protocol can watch the energy counter while the GPU works; CUDA events around the run give
 * the time of each rank. GEMMs are cuBLASLt bf16 matmuls with fp32 accumulation, in the
 * layouts TransformerEngine uses (TN fprop, NN dgrad, NT wgrad into an fp32 main gradient).
 */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kr_cuda.h"
#include "util/util.h"

#define WORKSPACE_BYTES (32u << 20) /* cuBLASLt workspace (TransformerEngine uses 32 MiB on Hopper) */
#define MAX_COMMSETS 4

int kr_cu_fail(kr_error *err, cudaError_t e, const char *what)
{
    return kr_error_set(err, e == cudaErrorMemoryAllocation ? KR_ENOMEM : KR_EBACKEND, "%s: %s: %s", what,
                        cudaGetErrorName(e), cudaGetErrorString(e));
}

static int lt_fail(kr_error *err, cublasStatus_t s, const char *what)
{
    return kr_error_set(err, KR_EBACKEND, "%s: cuBLASLt status %d (%s)", what, (int)s, cublasLtGetStatusName(s));
}

static int nccl_fail(kr_error *err, ncclResult_t r, const char *what)
{
    return kr_error_set(err, KR_EBACKEND, "%s: NCCL: %s", what, ncclGetErrorString(r));
}

/* ---- cuBLASLt GEMMs ---------------------------------------------------------------------------- */

struct kr_cu_gemm {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t ws_bytes;
    float beta;
};

int kr_cu_gemm_create(void *lt, kr_profiler_kernel kind, long long T, long long n, long long k,
                      size_t workspace_bytes, kr_cu_gemm **out, kr_error *err)
{
    /* Column-major views of row-major tensors: X[T,k] is Xc (k × T, ld k), W[n,k] is Wc (k × n,
     * ld k), Y[T,n] is Yc (n × T, ld n). fprop Yc = Wcᵀ·Xc; dgrad dXc = Wc·dYc; wgrad
     * dWc (k × n, fp32) += Xc·dYcᵀ. */
    cublasOperation_t ta, tb;
    uint64_t ar, ac, br, bc, cr, cc;
    int64_t lda, ldb, ldc;
    cudaDataType_t ctype = CUDA_R_16BF;
    float beta = 0.0f;
    switch (kind) {
    case KR_PK_GEMM_FPROP:
        ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        ar = (uint64_t)k, ac = (uint64_t)n, lda = k; /* A = Wc */
        br = (uint64_t)k, bc = (uint64_t)T, ldb = k; /* B = Xc */
        cr = (uint64_t)n, cc = (uint64_t)T, ldc = n;
        break;
    case KR_PK_GEMM_DGRAD:
        ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
        ar = (uint64_t)k, ac = (uint64_t)n, lda = k; /* A = Wc */
        br = (uint64_t)n, bc = (uint64_t)T, ldb = n; /* B = dYc */
        cr = (uint64_t)k, cc = (uint64_t)T, ldc = k;
        break;
    case KR_PK_GEMM_WGRAD:
        ta = CUBLAS_OP_N, tb = CUBLAS_OP_T;
        ar = (uint64_t)k, ac = (uint64_t)T, lda = k; /* A = Xc */
        br = (uint64_t)n, bc = (uint64_t)T, ldb = n; /* B = dYc */
        cr = (uint64_t)k, cc = (uint64_t)n, ldc = k;
        ctype = CUDA_R_32F;
        beta = 1.0f;
        break;
    default:
        return kr_error_set(err, KR_EINVAL, "not a GEMM kernel: %d", (int)kind);
    }
    kr_cu_gemm *g = calloc(1, sizeof *g);
    if (g == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    g->lt = (cublasLtHandle_t)lt;
    g->ws_bytes = workspace_bytes;
    g->beta = beta;
    cublasStatus_t s = cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, ar, ac, lda);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, br, bc, ldb);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&g->lc, ctype, cr, cc, ldc);
    cublasLtMatmulPreference_t pref = NULL;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                 sizeof workspace_bytes);
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(g->lt, g->desc, g->la, g->lb, g->lc, g->lc, pref, 1, &heur, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found < 1) {
        kr_cu_gemm_destroy(g);
        if (s == CUBLAS_STATUS_SUCCESS)
            return kr_error_set(err, KR_EUNSUPPORTED, "cuBLASLt has no algorithm for %s %lldx%lldx%lld",
                                kr_profiler_kernel_name(kind), T, n, k);
        return lt_fail(err, s, "cuBLASLt GEMM setup");
    }
    g->algo = heur.algo;
    *out = g;
    return KR_OK;
}

int kr_cu_gemm_run(kr_cu_gemm *g, const void *a, const void *b, void *c, void *workspace, cudaStream_t st,
                   kr_error *err)
{
    const float alpha = 1.0f;
    cublasStatus_t s = cublasLtMatmul(g->lt, g->desc, &alpha, a, g->la, b, g->lb, &g->beta, c, g->lc, c, g->lc,
                                      &g->algo, workspace, g->ws_bytes, st);
    return s == CUBLAS_STATUS_SUCCESS ? KR_OK : lt_fail(err, s, "cublasLtMatmul");
}

void kr_cu_gemm_destroy(kr_cu_gemm *g)
{
    if (g == NULL)
        return;
    if (g->la)
        cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb)
        cublasLtMatrixLayoutDestroy(g->lb);
    if (g->lc)
        cublasLtMatrixLayoutDestroy(g->lc);
    if (g->desc)
        cublasLtMatmulDescDestroy(g->desc);
    free(g);
}

/* ---- state ---------------------------------------------------------------------------------- */

typedef struct pooled {
    char name[32];
    size_t bytes;
    void *ptr;
} pooled;

typedef struct rank {
    int dev;
    int sm_count;
    cudaStream_t compute, comm;
    cudaEvent_t ev_start, ev_stop, ev_launch, ev_comm_done;
    cublasLtHandle_t lt;
    void *ws;
    pooled pool[KR_PROFILER_MAX_BUFS];
    int npool;
    void *buf[KR_PROFILER_MAX_BUFS];
    kr_cu_gemm *gemm[KR_PROFILER_MAX_STEPS];
    int proxy_smem;
} rank;

typedef struct commset {
    int ctas, nranks;
    unsigned long long last_use;
    ncclComm_t c[KR_PROFILER_MAX_RANKS];
} commset;

enum { CMD_NONE = 0, CMD_RUN = 1, CMD_QUIT = 2 };

typedef struct cu_runner {
    int n;                       /* devices opened */
    rank rk[KR_PROFILER_MAX_RANKS];
    kr_profiler_program plan;
    int prepared;
    commset cs[MAX_COMMSETS];
    int ncs;
    int active;                  /* commset of the prepared plan (-1 none) */
    unsigned long long clock;
    pthread_t worker;
    int worker_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cmd;
    long long iters;
    int running;                 /* a run was started and not finished */
    int enqueued;                /* the worker finished enqueuing the run */
    int enq_rc;
    kr_error enq_err;
} cu_runner;

/* ---- buffers ---------------------------------------------------------------------------------- */

static long long vocab_for(const kr_profiler_program *plan, int buf)
{
    for (int i = 0; i < plan->nsteps; i++) {
        const kr_profiler_step *s = &plan->steps[i];
        if ((s->kernel == KR_PK_EMBED_FWD || s->kernel == KR_PK_EMBED_BWD || s->kernel == KR_PK_XENT_MAX ||
             s->kernel == KR_PK_XENT_BWD) &&
            s->in[s->kernel == KR_PK_EMBED_FWD || s->kernel == KR_PK_EMBED_BWD ? 0 : 1] == buf)
            return s->k > 0 ? s->k : 1;
    }
    return 1;
}

static int init_buffer(rank *r, const kr_profiler_program *plan, int i, void *p, kr_error *err)
{
    const kr_profiler_buffer *b = &plan->bufs[i];
    uint64_t seed = plan->seed * 1000003u + (uint64_t)i;
    cudaError_t e;
    switch (b->elem_bytes) {
    case 2: e = kr_cu_init_bf16(p, b->elems, seed, -1.0f, 1.0f, r->compute); break;
    /* fp32 buffers hold statistics (rstd, lse, row sums) and gradients: keep them positive
     * and of order one so every kernel sees ordinary numbers. */
    case 4: e = kr_cu_init_f32(p, b->elems, seed, 0.5f, 1.5f, r->compute); break;
    case 8: e = kr_cu_init_ids(p, b->elems, seed, vocab_for(plan, i), r->compute); break;
    default: e = kr_cu_init_mask(p, b->elems, seed, 1.0f - plan->dropout_p, r->compute); break;
    }
    return e == cudaSuccess ? KR_OK : kr_cu_fail(err, e, "buffer initialisation");
}

/* Makes r->buf[] hold the plan's buffers, reusing same-named same-size allocations of the
 * previous plan (their contents stay valid) and freeing the others. */
static int bind_buffers(rank *r, const kr_profiler_program *plan, kr_error *err)
{
    int keep[KR_PROFILER_MAX_BUFS] = {0};
    for (int i = 0; i < plan->nbufs; i++) {
        r->buf[i] = NULL;
        size_t bytes = (size_t)plan->bufs[i].elems * (size_t)plan->bufs[i].elem_bytes;
        for (int j = 0; j < r->npool; j++)
            if (!keep[j] && r->pool[j].bytes == bytes && strcmp(r->pool[j].name, plan->bufs[i].name) == 0) {
                keep[j] = 1;
                r->buf[i] = r->pool[j].ptr;
            }
    }
    int n = 0;
    for (int j = 0; j < r->npool; j++) {
        if (keep[j])
            r->pool[n++] = r->pool[j];
        else
            cudaFree(r->pool[j].ptr);
    }
    r->npool = n;
    for (int i = 0; i < plan->nbufs; i++) {
        if (r->buf[i])
            continue;
        size_t bytes = (size_t)plan->bufs[i].elems * (size_t)plan->bufs[i].elem_bytes;
        void *p;
        cudaError_t e = cudaMalloc(&p, bytes > 0 ? bytes : 16);
        if (e != cudaSuccess) {
            char what[96];
            snprintf(what, sizeof what, "cudaMalloc of %s (%.1f MB) on GPU %d", plan->bufs[i].name, bytes / 1e6,
                     r->dev);
            return kr_cu_fail(err, e, what);
        }
        r->pool[r->npool].ptr = p;
        r->pool[r->npool].bytes = bytes;
        snprintf(r->pool[r->npool].name, sizeof r->pool[r->npool].name, "%s", plan->bufs[i].name);
        r->npool++;
        r->buf[i] = p;
        int rc = init_buffer(r, plan, i, p, err);
        if (rc)
            return rc;
    }
    return KR_OK;
}

/* ---- NCCL communicators ------------------------------------------------------------------------- */

static void commset_destroy(cu_runner *R, commset *c)
{
    for (int i = 0; i < c->nranks; i++) {
        cudaSetDevice(R->rk[i].dev);
        ncclCommDestroy(c->c[i]);
    }
    c->nranks = 0;
}

static int get_commset(cu_runner *R, int ctas, int nranks, int *idx, kr_error *err)
{
    for (int i = 0; i < R->ncs; i++)
        if (R->cs[i].ctas == ctas && R->cs[i].nranks == nranks) {
            R->cs[i].last_use = ++R->clock;
            *idx = i;
            return KR_OK;
        }
    int slot = R->ncs; /* a new entry, counted once the communicators exist */
    if (R->ncs == MAX_COMMSETS) { /* evict the least recently used (NCCL buffers are large) */
        slot = 0;
        for (int i = 1; i < R->ncs; i++)
            if (R->cs[i].last_use < R->cs[slot].last_use)
                slot = i;
        commset_destroy(R, &R->cs[slot]);
        R->cs[slot] = R->cs[R->ncs - 1]; /* keep the table dense */
        R->ncs--;
        slot = R->ncs;
    }
    commset *c = &R->cs[slot];
    memset(c, 0, sizeof *c);
    ncclUniqueId id;
    ncclResult_t nr = ncclGetUniqueId(&id);
    if (nr != ncclSuccess)
        return nccl_fail(err, nr, "ncclGetUniqueId");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 1;
    cfg.minCTAs = ctas;
    cfg.maxCTAs = ctas;
    cfg.nvlsCTAs = ctas; /* NVLink SHARP all-reduce has its own CTA count */
    nr = ncclGroupStart();
    for (int i = 0; i < nranks && nr == ncclSuccess; i++) {
        cudaSetDevice(R->rk[i].dev);
        nr = ncclCommInitRankConfig(&c->c[i], nranks, id, i, &cfg);
    }
    ncclResult_t ne = ncclGroupEnd();
    if (nr == ncclSuccess)
        nr = ne;
    if (nr != ncclSuccess) {
        c->nranks = 0;
        char what[96];
        snprintf(what, sizeof what, "ncclCommInitRankConfig (%d ranks, %d CTAs)", nranks, ctas);
        return nccl_fail(err, nr, what);
    }
    c->ctas = ctas;
    c->nranks = nranks;
    c->last_use = ++R->clock;
    R->ncs++;
    *idx = slot;
    return KR_OK;
}

/* ---- executing steps ------------------------------------------------------------------------- */

#define B(i) (r->buf[(i)])
#define F(i) ((float *)r->buf[(i)])
#define IDS(i) ((const long long *)r->buf[(i)])

static int run_step(rank *r, const kr_profiler_program *plan, int si, kr_error *err)
{
    const kr_profiler_step *s = &plan->steps[si];
    cudaStream_t st = r->compute;
    cudaError_t e = cudaSuccess;
    long long n_out0 = s->out[0] >= 0 ? plan->bufs[s->out[0]].elems : 0;
    switch (s->kernel) {
    case KR_PK_GEMM_FPROP:
    case KR_PK_GEMM_DGRAD:
    case KR_PK_GEMM_WGRAD:
        return kr_cu_gemm_run(r->gemm[si], B(s->in[0]), B(s->in[1]), B(s->out[0]), r->ws, st, err);
    case KR_PK_ATTN_FWD:
        e = kr_cu_attn_fwd(B(s->in[0]), B(s->in[1]), B(s->in[2]), B(s->out[0]), F(s->out[1]), s->b, s->nh, s->nkv,
                           s->s, s->S, s->d, s->cp, st);
        break;
    case KR_PK_ATTN_BWD_PRE:
        e = kr_cu_attn_bwd_pre(B(s->in[0]), B(s->in[1]), F(s->out[0]), F(s->out[1]), s->b, s->nh, s->s, s->d, st);
        break;
    case KR_PK_ATTN_BWD:
        e = kr_cu_attn_bwd(B(s->in[0]), B(s->in[1]), B(s->in[2]), B(s->in[3]), F(s->in[4]), F(s->in[5]),
                           F(s->out[0]), B(s->out[1]), B(s->out[2]), s->b, s->nh, s->nkv, s->s, s->S, s->d, s->cp, st);
        break;
    case KR_PK_ATTN_BWD_DQ: e = kr_cu_f32_to_bf16(F(s->in[0]), B(s->out[0]), n_out0, st); break;
    case KR_PK_RMSNORM_FWD:
        e = kr_cu_rmsnorm_fwd(B(s->in[0]), B(s->in[1]), B(s->out[0]), F(s->out[1]), s->m, s->n, plan->norm_eps, st);
        break;
    case KR_PK_RMSNORM_BWD:
        e = kr_cu_rmsnorm_bwd(B(s->in[0]), B(s->in[1]), B(s->in[2]), F(s->in[3]), B(s->out[0]), F(s->out[1]), s->m,
                              s->n, st);
        break;
    case KR_PK_BDA_FWD:
        e = kr_cu_bda_fwd(B(s->in[0]), B(s->in[1]), B(s->out[0]), (unsigned char *)B(s->out[1]), s->m * s->n,
                          plan->dropout_p, plan->seed, st);
        break;
    case KR_PK_BDA_BWD:
        e = kr_cu_bda_bwd(B(s->in[0]), (const unsigned char *)B(s->in[1]), B(s->out[0]), s->m * s->n,
                          plan->dropout_p, st);
        break;
    case KR_PK_QKV_SPLIT:
        e = kr_cu_qkv_split(B(s->in[0]), B(s->out[0]), B(s->out[1]), B(s->out[2]), s->b, s->s, s->nh, s->nkv, s->d,
                            st);
        break;
    case KR_PK_QKV_MERGE:
        e = kr_cu_qkv_merge(B(s->in[0]), B(s->in[1]), B(s->in[2]), B(s->out[0]), s->b, s->s, s->nh, s->nkv, s->d,
                            st);
        break;
    case KR_PK_QKNORM_FWD:
        e = kr_cu_qknorm_fwd(B(s->in[0]), B(s->in[1]), B(s->in[2]), B(s->in[3]), F(s->out[0]), F(s->out[1]),
                             s->b * s->nh * s->s, s->b * s->nkv * s->s, s->d, plan->norm_eps, st);
        break;
    case KR_PK_QKNORM_BWD:
        e = kr_cu_qknorm_bwd(B(s->in[0]), B(s->in[1]), B(s->in[2]), B(s->in[3]), F(s->in[4]), F(s->in[5]),
                             B(s->in[6]), B(s->in[7]), B(s->out[0]), B(s->out[1]), s->b * s->nh * s->s,
                             s->b * s->nkv * s->s, s->d, st);
        break;
    case KR_PK_ROPE_FWD:
    case KR_PK_ROPE_BWD:
        e = kr_cu_rope(B(s->in[0]), B(s->in[1]), s->b, s->nh, s->nkv, s->s, s->d, s->cp, plan->rope_log_base,
                       s->kernel == KR_PK_ROPE_BWD, st);
        break;
    case KR_PK_SWIGLU_FWD: e = kr_cu_swiglu_fwd(B(s->in[0]), B(s->out[0]), s->m, s->n, st); break;
    case KR_PK_SWIGLU_BWD: e = kr_cu_swiglu_bwd(B(s->in[0]), B(s->in[1]), B(s->out[0]), s->m, s->n, st); break;
    case KR_PK_EMBED_FWD:
        e = kr_cu_embed_fwd(IDS(s->in[0]), B(s->in[1]), B(s->out[0]), s->m, s->n, s->vstart,
                            plan->bufs[s->in[1]].elems / s->n, st);
        break;
    case KR_PK_EMBED_BWD:
        e = kr_cu_embed_bwd(IDS(s->in[0]), B(s->in[1]), F(s->out[0]), s->m, s->n, s->vstart,
                            plan->bufs[s->out[0]].elems / s->n, st);
        break;
    case KR_PK_XENT_MAX:
        e = kr_cu_xent_max(B(s->in[0]), IDS(s->in[1]), F(s->out[0]), F(s->out[1]), s->m, s->n, s->vstart, st);
        break;
    case KR_PK_XENT_SUM:
        e = kr_cu_xent_sum(B(s->in[0]), F(s->in[1]), F(s->in[2]), F(s->out[0]), F(s->out[1]), s->m, s->n, st);
        break;
    case KR_PK_XENT_BWD:
        e = kr_cu_xent_bwd(B(s->in[0]), IDS(s->in[1]), F(s->in[2]), F(s->in[3]), F(s->in[4]), B(s->out[0]), s->m,
                           s->n, s->vstart, st);
        break;
    case KR_PK_STREAM: e = kr_cu_stream(B(s->in[0]), B(s->out[0]), s->m, st); break;
    case KR_PK_SPIN: e = kr_cu_spin(s->ctas, s->ns, st); break;
    default: return kr_error_set(err, KR_EINTERNAL, "step %d: unknown kernel %d", si, (int)s->kernel);
    }
    if (e != cudaSuccess) {
        char what[64];
        snprintf(what, sizeof what, "step %d (%s) on GPU %d", si, kr_profiler_kernel_name(s->kernel), r->dev);
        return kr_cu_fail(err, e, what);
    }
    return KR_OK;
}

/* The collective of every rank, on the comm streams (NCCL: one group call for all ranks). */
static int run_collective(cu_runner *R, kr_error *err)
{
    const kr_profiler_program *p = &R->plan;
    if (p->comm == KR_PROFILER_COMM_NCCL) {
        commset *c = &R->cs[R->active];
        ncclResult_t nr = ncclGroupStart();
        for (int i = 0; i < p->ranks && nr == ncclSuccess; i++) {
            rank *r = &R->rk[i];
            void *send = r->buf[p->coll_send], *recv = r->buf[p->coll_recv];
            size_t recv_n = (size_t)p->bufs[p->coll_recv].elems, send_n = (size_t)p->bufs[p->coll_send].elems;
            if (p->coll == KR_COLL_ALLREDUCE)
                nr = ncclAllReduce(send, recv, recv_n, ncclBfloat16, ncclSum, c->c[i], r->comm);
            else if (p->coll == KR_COLL_ALLGATHER)
                nr = ncclAllGather(send, recv, send_n, ncclBfloat16, c->c[i], r->comm);
            else
                nr = ncclReduceScatter(send, recv, recv_n, ncclBfloat16, ncclSum, c->c[i], r->comm);
        }
        ncclResult_t ne = ncclGroupEnd();
        return nr != ncclSuccess ? nccl_fail(err, nr, "collective") : ne != ncclSuccess ? nccl_fail(err, ne, "collective") : KR_OK;
    }
    rank *r = &R->rk[0];
    double nspb = 0, alpha = 0;
    if (p->comm == KR_PROFILER_COMM_PROXY && p->comm_bw_Bps > 0) {
        nspb = (double)p->ctas / p->comm_bw_Bps * 1e9; /* each CTA carries 1/ctas of the bytes */
        alpha = (p->proxy_floor_s - p->proxy_bus_bytes / p->comm_bw_Bps) * 1e9;
    }
    cudaError_t e = kr_cu_proxy(r->buf[p->coll_send], r->buf[p->coll_recv], p->proxy_chunk, p->proxy_reduce_steps,
                                p->proxy_copy_steps, p->bufs[p->coll_recv].elems, p->ctas, r->proxy_smem, nspb,
                                alpha > 0 ? alpha : 0, r->comm);
    return e == cudaSuccess ? KR_OK : kr_cu_fail(err, e, "collective proxy");
}

/* Enqueues `iters` executions of the prepared plan on every rank. */
static int enqueue_run(cu_runner *R, long long iters, kr_error *err)
{
    const kr_profiler_program *p = &R->plan;
    int has_coll = p->comm != KR_PROFILER_COMM_NONE;
    int rc;
    cudaError_t e;
    for (int i = 0; i < p->ranks; i++) {
        cudaSetDevice(R->rk[i].dev);
        if ((e = cudaEventRecord(R->rk[i].ev_start, R->rk[i].compute)) != cudaSuccess)
            return kr_cu_fail(err, e, "cudaEventRecord");
    }
    for (long long it = 0; it < iters; it++) {
        for (int i = 0; i < p->ranks; i++) {
            rank *r = &R->rk[i];
            cudaSetDevice(r->dev);
            for (int si = 0; si < p->launch_step; si++)
                if ((rc = run_step(r, p, si, err)))
                    return rc;
            if (has_coll) {
                if ((e = cudaEventRecord(r->ev_launch, r->compute)) != cudaSuccess ||
                    (e = cudaStreamWaitEvent(r->comm, r->ev_launch, 0)) != cudaSuccess)
                    return kr_cu_fail(err, e, "launch event");
            }
        }
        if (has_coll) {
            cudaSetDevice(R->rk[0].dev);
            if ((rc = run_collective(R, err)))
                return rc;
        }
        for (int i = 0; i < p->ranks; i++) {
            rank *r = &R->rk[i];
            cudaSetDevice(r->dev);
            for (int si = p->launch_step; si < p->nsteps; si++)
                if ((rc = run_step(r, p, si, err)))
                    return rc;
            if (has_coll) {
                if ((e = cudaEventRecord(r->ev_comm_done, r->comm)) != cudaSuccess ||
                    (e = cudaStreamWaitEvent(r->compute, r->ev_comm_done, 0)) != cudaSuccess)
                    return kr_cu_fail(err, e, "completion event");
            }
        }
    }
    for (int i = 0; i < p->ranks; i++) {
        cudaSetDevice(R->rk[i].dev);
        if ((e = cudaEventRecord(R->rk[i].ev_stop, R->rk[i].compute)) != cudaSuccess)
            return kr_cu_fail(err, e, "cudaEventRecord");
    }
    return KR_OK;
}

static void *worker_main(void *arg)
{
    cu_runner *R = arg;
    pthread_mutex_lock(&R->mu);
    for (;;) {
        while (R->cmd == CMD_NONE)
            pthread_cond_wait(&R->cv, &R->mu);
        if (R->cmd == CMD_QUIT)
            break;
        long long iters = R->iters;
        R->cmd = CMD_NONE;
        pthread_mutex_unlock(&R->mu);
        kr_error e = {0};
        int rc = enqueue_run(R, iters, &e);
        pthread_mutex_lock(&R->mu);
        R->enq_rc = rc;
        R->enq_err = e;
        R->enqueued = 1;
        pthread_cond_broadcast(&R->cv);
    }
    pthread_mutex_unlock(&R->mu);
    return NULL;
}

/* ---- runner ops ------------------------------------------------------------------------------ */

static int cu_prepare(void *impl, const kr_profiler_program *plan, kr_error *err)
{
    cu_runner *R = impl;
    if (R->running)
        return kr_error_set(err, KR_ESTATE, "prepare while a run is in progress");
    if (plan->ranks < 1 || plan->ranks > R->n)
        return kr_error_set(err, KR_EINVAL, "plan %s needs %d GPUs, %d are open", plan->key, plan->ranks, R->n);
    R->prepared = 0;
    int rc;
    for (int i = 0; i < plan->ranks; i++) {
        rank *r = &R->rk[i];
        cudaSetDevice(r->dev);
        if ((rc = bind_buffers(r, plan, err)))
            return rc;
        for (int s = 0; s < KR_PROFILER_MAX_STEPS; s++) {
            kr_cu_gemm_destroy(r->gemm[s]);
            r->gemm[s] = NULL;
        }
        for (int s = 0; s < plan->nsteps; s++) {
            const kr_profiler_step *st = &plan->steps[s];
            if (st->kernel <= KR_PK_GEMM_WGRAD &&
                (rc = kr_cu_gemm_create(r->lt, st->kernel, st->m, st->n, st->k, WORKSPACE_BYTES, &r->gemm[s], err)))
                return rc;
        }
        cudaError_t e = cudaStreamSynchronize(r->compute); /* initialisation done */
        if (e != cudaSuccess)
            return kr_cu_fail(err, e, "buffer initialisation");
    }
    R->active = -1;
    if (plan->comm == KR_PROFILER_COMM_NCCL && (rc = get_commset(R, plan->ctas, plan->ranks, &R->active, err)))
        return rc;
    R->plan = *plan;
    R->prepared = 1;
    return KR_OK;
}

static int cu_start(void *impl, long long iters, kr_error *err)
{
    cu_runner *R = impl;
    if (!R->prepared)
        return kr_error_set(err, KR_ESTATE, "start before prepare");
    if (R->running)
        return kr_error_set(err, KR_ESTATE, "start while a run is in progress");
    if (iters < 1)
        return kr_error_set(err, KR_EINVAL, "start: expected at least one iteration, found %lld", iters);
    pthread_mutex_lock(&R->mu);
    R->iters = iters;
    R->enqueued = 0;
    R->enq_rc = KR_OK;
    R->cmd = CMD_RUN;
    R->running = 1;
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    return KR_OK;
}

static int cu_poll(void *impl, int *done, kr_error *err)
{
    cu_runner *R = impl;
    *done = 0;
    pthread_mutex_lock(&R->mu);
    int enq = R->enqueued, rc = R->enq_rc;
    pthread_mutex_unlock(&R->mu);
    if (!enq)
        return KR_OK;
    if (rc)
        return kr_error_set(err, rc, "%s", R->enq_err.msg);
    for (int i = 0; i < R->plan.ranks; i++) {
        cudaSetDevice(R->rk[i].dev);
        cudaError_t e = cudaEventQuery(R->rk[i].ev_stop);
        if (e == cudaErrorNotReady)
            return KR_OK;
        if (e != cudaSuccess)
            return kr_cu_fail(err, e, "run");
    }
    *done = 1;
    return KR_OK;
}

static int cu_finish(void *impl, kr_profiler_run *out, kr_error *err)
{
    cu_runner *R = impl;
    if (!R->running)
        return kr_error_set(err, KR_ESTATE, "finish without a started run");
    pthread_mutex_lock(&R->mu);
    while (!R->enqueued)
        pthread_cond_wait(&R->cv, &R->mu);
    int rc = R->enq_rc;
    kr_error e2 = R->enq_err;
    pthread_mutex_unlock(&R->mu);
    memset(out, 0, sizeof *out);
    out->nranks = R->plan.ranks;
    int frc = KR_OK;
    for (int i = 0; i < R->plan.ranks; i++) {
        rank *r = &R->rk[i];
        cudaSetDevice(r->dev);
        /* Drain both streams even after an enqueue error, so the next run starts clean. */
        cudaError_t e = cudaStreamSynchronize(r->compute);
        cudaError_t e_comm = cudaStreamSynchronize(r->comm);
        if (e == cudaSuccess)
            e = e_comm;
        float ms = 0;
        if (e == cudaSuccess && rc == KR_OK)
            e = cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop);
        if (e != cudaSuccess && frc == KR_OK)
            frc = kr_cu_fail(err, e, "run");
        out->time_s[i] = ms * 1e-3;
    }
    R->running = 0;
    if (rc)
        return kr_error_set(err, rc, "%s", e2.msg);
    return frc;
}

static void cu_destroy(void *impl)
{
    cu_runner *R = impl;
    if (R == NULL)
        return;
    if (R->worker_started) {
        pthread_mutex_lock(&R->mu);
        R->cmd = CMD_QUIT;
        pthread_cond_broadcast(&R->cv);
        pthread_mutex_unlock(&R->mu);
        pthread_join(R->worker, NULL);
    }
    for (int i = 0; i < R->ncs; i++)
        commset_destroy(R, &R->cs[i]);
    for (int i = 0; i < R->n; i++) {
        rank *r = &R->rk[i];
        cudaSetDevice(r->dev);
        cudaDeviceSynchronize();
        for (int s = 0; s < KR_PROFILER_MAX_STEPS; s++)
            kr_cu_gemm_destroy(r->gemm[s]);
        for (int j = 0; j < r->npool; j++)
            cudaFree(r->pool[j].ptr);
        if (r->ws)
            cudaFree(r->ws);
        if (r->lt)
            cublasLtDestroy(r->lt);
        if (r->ev_start)
            cudaEventDestroy(r->ev_start);
        if (r->ev_stop)
            cudaEventDestroy(r->ev_stop);
        if (r->ev_launch)
            cudaEventDestroy(r->ev_launch);
        if (r->ev_comm_done)
            cudaEventDestroy(r->ev_comm_done);
        if (r->compute)
            cudaStreamDestroy(r->compute);
        if (r->comm)
            cudaStreamDestroy(r->comm);
    }
    pthread_mutex_destroy(&R->mu);
    pthread_cond_destroy(&R->cv);
    free(R);
}

static int cu_selftest(void *impl, char *report, size_t cap, kr_error *err)
{
    cu_runner *R = impl;
    if (R->running)
        return kr_error_set(err, KR_ESTATE, "self-test while a run is in progress");
    cudaSetDevice(R->rk[0].dev);
    return kr_cu_selftest(R->rk[0].dev, R->rk[0].lt, report, cap, err);
}

/* Samples the SM clock of device 0 while request(ud) changes it (clock-switch latency). */
static int cu_clock_trace(void *impl, double duration_s, double request_at_s, int (*request)(void *ud), void *ud,
                          double *t_ns, double *clk, int cap, int *n, int *req_index, kr_error *err)
{
    cu_runner *R = impl;
    rank *r = &R->rk[0];
    if (R->running)
        return kr_error_set(err, KR_ESTATE, "clock trace while a run is in progress");
    cudaSetDevice(r->dev);
    unsigned long long *dt = NULL, *dc = NULL;
    int *flags = NULL, *dflags = NULL, *dn = NULL;
    int rc = KR_OK, hn = 0, hreq = -1;
    cudaError_t e = cudaMalloc((void **)&dt, sizeof *dt * (size_t)cap);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dc, sizeof *dc * (size_t)cap);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dn, 2 * sizeof(int));
    if (e == cudaSuccess)
        e = cudaHostAlloc((void **)&flags, 2 * sizeof(int), cudaHostAllocMapped);
    if (e == cudaSuccess)
        e = cudaHostGetDevicePointer((void **)&dflags, flags, 0);
    if (e != cudaSuccess) {
        rc = kr_cu_fail(err, e, "clock trace setup");
        goto done;
    }
    volatile int *vf = flags;
    vf[0] = vf[1] = 0;
    e = kr_cu_clock_trace(dt, dc, cap, dn, dn + 1, dflags, dflags + 1, (long long)(duration_s * 1e9), 20000,
                          r->compute);
    if (e != cudaSuccess) {
        rc = kr_cu_fail(err, e, "clock trace kernel");
        goto done;
    }
    double t_wait = kr__now_s();
    while (vf[0] == 0)
        if (kr__now_s() - t_wait > 10.0) {
            cudaStreamSynchronize(r->compute);
            rc = kr_error_set(err, KR_ETIMEDOUT, "the clock trace kernel did not start within 10 s");
            goto done;
        }
    struct timespec ts = {(time_t)request_at_s, (long)((request_at_s - (double)(time_t)request_at_s) * 1e9)};
    nanosleep(&ts, NULL);
    vf[1] = 1;
    int req_rc = request(ud);
    e = cudaStreamSynchronize(r->compute);
    if (e == cudaSuccess)
        e = cudaMemcpy(&hn, dn, sizeof hn, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(&hreq, dn + 1, sizeof hreq, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        rc = kr_cu_fail(err, e, "clock trace");
        goto done;
    }
    if (req_rc) {
        rc = kr_error_set(err, req_rc, "the clock change requested during the trace failed");
        goto done;
    }
    unsigned long long *ht = malloc(sizeof *ht * (size_t)hn), *hc = malloc(sizeof *hc * (size_t)hn);
    if (ht == NULL || hc == NULL) {
        free(ht), free(hc);
        rc = kr_error_set(err, KR_ENOMEM, "out of memory");
        goto done;
    }
    e = cudaMemcpy(ht, dt, sizeof *ht * (size_t)hn, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(hc, dc, sizeof *hc * (size_t)hn, cudaMemcpyDeviceToHost);
    for (int i = 0; i < hn && e == cudaSuccess; i++) {
        t_ns[i] = (double)(ht[i] - ht[0]);
        clk[i] = (double)(hc[i] - hc[0]);
    }
    free(ht), free(hc);
    if (e != cudaSuccess) {
        rc = kr_cu_fail(err, e, "clock trace copy");
        goto done;
    }
    *n = hn;
    *req_index = hreq;
done:
    cudaFree(dt);
    cudaFree(dc);
    cudaFree(dn);
    if (flags)
        cudaFreeHost(flags);
    return rc;
}

static const kr_profiler_runner_ops cu_ops = {"cuda", cu_prepare, cu_start, cu_poll, cu_finish,
                                              cu_destroy, cu_selftest, cu_clock_trace};

int kr_cu_runner_open(int first, int devices, kr_profiler_runner *out, kr_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return kr_cu_fail(err, e, "cudaGetDeviceCount");
    if (devices <= 0)
        devices = count - first;
    if (devices > KR_PROFILER_MAX_RANKS)
        devices = KR_PROFILER_MAX_RANKS;
    if (first < 0 || devices < 1 || first + devices > count)
        return kr_error_set(err, KR_ERANGE, "GPUs %d..%d requested, %d present", first, first + devices - 1, count);
    cu_runner *R = calloc(1, sizeof *R);
    if (R == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->cv, NULL);
    R->active = -1;
    int rc = KR_OK;
    for (int i = 0; i < devices && rc == KR_OK; i++) {
        rank *r = &R->rk[i];
        r->dev = first + i;
        R->n = i + 1;
        struct cudaDeviceProp prop;
        if ((e = cudaSetDevice(r->dev)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, r->dev)) != cudaSuccess) {
            rc = kr_cu_fail(err, e, "cudaSetDevice");
            break;
        }
        if (prop.major < 8) {
            rc = kr_error_set(err, KR_EUNSUPPORTED,
                              "GPU %d (%s) has compute capability %d.%d; the kernels need bf16 tensor cores (8.0+)",
                              r->dev, prop.name, prop.major, prop.minor);
            break;
        }
        r->sm_count = prop.multiProcessorCount;
        if (i == 0) {
            snprintf(out->device_name, sizeof out->device_name, "%s", prop.name);
            out->sm_count = prop.multiProcessorCount;
        }
        out->device[i] = r->dev;
        if ((e = cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking)) != cudaSuccess ||
            (e = cudaStreamCreateWithFlags(&r->comm, cudaStreamNonBlocking)) != cudaSuccess ||
            (e = cudaEventCreate(&r->ev_start)) != cudaSuccess || (e = cudaEventCreate(&r->ev_stop)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&r->ev_launch, cudaEventDisableTiming)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&r->ev_comm_done, cudaEventDisableTiming)) != cudaSuccess ||
            (e = cudaMalloc(&r->ws, WORKSPACE_BYTES)) != cudaSuccess || (e = kr_cu_attn_setup()) != cudaSuccess ||
            (e = kr_cu_proxy_setup(r->dev, &r->proxy_smem)) != cudaSuccess) {
            rc = kr_cu_fail(err, e, "device setup");
            break;
        }
        cublasStatus_t s = cublasLtCreate(&r->lt);
        if (s != CUBLAS_STATUS_SUCCESS)
            rc = lt_fail(err, s, "cublasLtCreate");
    }
    if (rc == KR_OK) {
        if (pthread_create(&R->worker, NULL, worker_main, R) != 0)
            rc = kr_error_set(err, KR_EINTERNAL, "cannot start the enqueue thread");
        else
            R->worker_started = 1;
    }
    if (rc) {
        cu_destroy(R);
        return rc;
    }
    out->ops = &cu_ops;
    out->impl = R;
    out->ndevices = devices;
    return KR_OK;
}
