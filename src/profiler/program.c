/*
 * program.c — turns a partition at a config into the kernel program the CUDA runner executes
 * (profiler.h, kr_profiler_program: the profiler's measurement schedule, not to be confused
 * with the iteration plan of plan.h), and builds the calibration programs.
 *
 * Design. Each op of the partition (partition.h, per-GPU per-nanobatch shapes) becomes the
 * kernels that compute it:
 *   GEMM       forward: fprop; backward: dgrad + wgrad (fp32 main-grad accumulation);
 *   attention  forward: flash-style kernel; backward: pre-pass (D = rowsum(dO∘O), zero dQ
 *              accumulator), flash-style backward, dQ conversion;
 *   norm       RMSNorm forward / backward;        residual  bias-dropout-add;
 *   qkv_post   split of the fused QKV (+ per-head q/k RMSNorm for Qwen3); backward: merge;
 *   rotary     rotary embedding of q and k;       activation SwiGLU;
 *   embedding  vocabulary-parallel lookup / gradient scatter-add;
 *   loss       vocabulary-parallel cross-entropy (max pass, sum pass; backward).
 * Buffers chain the way the layer's data flows: an op reads the previous op's main output
 * when the sizes agree (the residual stream, the gradient stream); attention's tensors
 * (q, k, v, o, lse, dq, dk, dv) are shared by name; everything else (weights, saved inputs,
 * masks) gets a buffer of its own. Each step's FLOPs and bytes are counted from what the
 * kernel reads and writes — independently of the catalog's formulas, which the tests compare
 * them with. The collective becomes one NCCL call, or the proxy (see the header): for a group
 * of n ranks and S bytes, n−1 reduce steps and n−1 copy steps of S/n (all-reduce), n−1 copy
 * steps (all-gather) or n−1 reduce steps (reduce-scatter), so it reads k·S "wire" bytes with
 * k = 2(n−1)/n or (n−1)/n, like a ring.
 */
#include "kareus/profiler.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "refkern.h"
#include "util/util.h"

void kr_profiler_program_params_default(kr_profiler_program_params *pp)
{
    memset(pp, 0, sizeof *pp);
    pp->comm = KR_PROFILER_COMM_AUTO;
    pp->devices = 1;
    pp->seed = 1;
    pp->dropout_p = 0.0f;
    pp->rope_base = 500000.0f;
    pp->norm_eps = 1e-5f;
}

/* ---- building blocks ---------------------------------------------------------------------- */

typedef struct builder {
    kr_profiler_program *plan;
    kr_error *err;
    int rc;        /* first error; later calls do nothing */
    int last_out;  /* main output of the previous op (-1 none) */
} builder;

static void program_init(kr_profiler_program *plan, const char *key)
{
    memset(plan, 0, sizeof *plan);
    kr__strlcpy(plan->key, key, sizeof plan->key);
    plan->coll = KR_COLL_NONE;
    plan->comm = KR_PROFILER_COMM_NONE;
    plan->ranks = 1;
    plan->group_size = 1;
    plan->slot = KR_SLOT_NONE;
    plan->coll_send = plan->coll_recv = -1;
    plan->seed = 1;
    plan->rope_log_base = logf(500000.0f);
    plan->norm_eps = 1e-5f;
}

/* A buffer by name: an existing one of that name is reused (its size must agree). */
static int buf(builder *bd, const char *name, double elems, int elem_bytes)
{
    kr_profiler_program *pl = bd->plan;
    if (bd->rc)
        return -1;
    for (int i = 0; i < pl->nbufs; i++)
        if (strcmp(pl->bufs[i].name, name) == 0) {
            if (pl->bufs[i].elems != (long long)elems || pl->bufs[i].elem_bytes != elem_bytes)
                bd->rc = kr_error_set(bd->err, KR_EINTERNAL, "plan %s: buffer %s used with two sizes (%lld and %.0f)",
                                      pl->key, name, pl->bufs[i].elems, elems);
            return bd->rc ? -1 : i;
        }
    if (pl->nbufs >= KR_PROFILER_MAX_BUFS) {
        bd->rc = kr_error_set(bd->err, KR_EINTERNAL, "plan %s: more than %d buffers", pl->key, KR_PROFILER_MAX_BUFS);
        return -1;
    }
    kr_profiler_buffer *b = &pl->bufs[pl->nbufs];
    kr__strlcpy(b->name, name, sizeof b->name);
    b->elems = (long long)elems;
    b->elem_bytes = elem_bytes;
    return pl->nbufs++;
}

/* A buffer named "<op>.<role>". */
static int opbuf(builder *bd, const kr_op *op, const char *role, double elems, int elem_bytes)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", op->name, role);
    return buf(bd, name, elems, elem_bytes);
}

/* The previous op's main output when it has `elems` bf16 elements, else a fresh input. */
static int chained(builder *bd, const kr_op *op, const char *role, double elems)
{
    if (bd->last_out >= 0 && bd->plan->bufs[bd->last_out].elems == (long long)elems &&
        bd->plan->bufs[bd->last_out].elem_bytes == 2)
        return bd->last_out;
    return opbuf(bd, op, role, elems, 2);
}

static double bufbytes(const kr_profiler_program *pl, int id)
{
    return id < 0 ? 0.0 : (double)pl->bufs[id].elems * pl->bufs[id].elem_bytes;
}

static kr_profiler_step *step(builder *bd, kr_profiler_kernel kind, int op)
{
    kr_profiler_program *pl = bd->plan;
    if (bd->rc)
        return NULL;
    if (pl->nsteps >= KR_PROFILER_MAX_STEPS) {
        bd->rc = kr_error_set(bd->err, KR_EINTERNAL, "plan %s: more than %d steps", pl->key, KR_PROFILER_MAX_STEPS);
        return NULL;
    }
    kr_profiler_step *s = &pl->steps[pl->nsteps++];
    memset(s, 0, sizeof *s);
    s->kernel = kind;
    s->op = op;
    for (int i = 0; i < 8; i++)
        s->in[i] = -1;
    for (int i = 0; i < 3; i++)
        s->out[i] = -1;
    return s;
}

/* Bytes of a step that streams its buffers once: every input read, every output written. */
static void stream_bytes(const kr_profiler_program *pl, kr_profiler_step *s)
{
    s->bytes = 0;
    for (int i = 0; i < 8; i++)
        s->bytes += bufbytes(pl, s->in[i]);
    for (int i = 0; i < 3; i++)
        s->bytes += bufbytes(pl, s->out[i]);
}

/* ---- ops ----------------------------------------------------------------------------------- */

static void op_gemm(builder *bd, const kr_op *op, int oi)
{
    double T = (double)op->m, n = (double)op->n, k = (double)op->k;
    kr_profiler_program *pl = bd->plan;
    int w = opbuf(bd, op, "w", n * k, 2);
    if (!op->backward) {
        kr_profiler_step *s = step(bd, KR_PK_GEMM_FPROP, oi);
        int x = chained(bd, op, "x", T * k), y = opbuf(bd, op, "y", T * n, 2);
        if (!s)
            return;
        s->m = op->m, s->n = op->n, s->k = op->k;
        s->in[0] = x, s->in[1] = w, s->out[0] = y;
        s->flops = 2.0 * T * n * k;
        stream_bytes(pl, s);
        bd->last_out = y;
        return;
    }
    int dy = chained(bd, op, "dy", T * n), x = opbuf(bd, op, "x", T * k, 2);
    int dx = opbuf(bd, op, "dx", T * k, 2), dw = opbuf(bd, op, "main_grad", n * k, 4);
    kr_profiler_step *s = step(bd, KR_PK_GEMM_DGRAD, oi);
    if (!s)
        return;
    s->m = op->m, s->n = op->n, s->k = op->k;
    s->in[0] = dy, s->in[1] = w, s->out[0] = dx;
    s->flops = 2.0 * T * n * k;
    stream_bytes(pl, s);
    s = step(bd, KR_PK_GEMM_WGRAD, oi);
    if (!s)
        return;
    s->m = op->m, s->n = op->n, s->k = op->k;
    s->in[0] = dy, s->in[1] = x, s->in[2] = dw, s->out[0] = dw; /* beta = 1: read + write */
    s->flops = 2.0 * T * n * k;
    stream_bytes(pl, s);
    bd->last_out = dx;
}

/* Useful (unmasked) score entries of causal attention: Σ over local queries of the keys at
 * positions <= the query's position. */
static double causal_pairs(long long s, long long S, int cp)
{
    double pairs = 0;
    for (long long i = 0; i < s; i++) {
        long long pos = kr__cp_pos((long)i, (long)s, cp);
        pairs += (double)(pos + 1 < S ? pos + 1 : S);
    }
    return pairs;
}

static void op_attn(builder *bd, const kr_op *op, int oi, int cp)
{
    kr_profiler_program *pl = bd->plan;
    double b = (double)op->m, s = (double)op->seq_q, S = (double)op->seq_kv, d = op->head_dim;
    double nh = op->heads, nkv = op->kv_heads;
    int gathered = op->seq_kv != op->seq_q;
    int q = buf(bd, "q", b * nh * s * d, 2);
    int k = buf(bd, gathered ? "k_gathered" : "k", b * nkv * S * d, 2);
    int v = buf(bd, gathered ? "v_gathered" : "v", b * nkv * S * d, 2);
    int o = buf(bd, "o", b * s * nh * d, 2), lse = buf(bd, "lse", b * nh * s, 4);
    double mm = 2.0 * b * nh * d * causal_pairs(op->seq_q, op->seq_kv, cp); /* one score matmul */
    if (!op->backward) {
        kr_profiler_step *st = step(bd, KR_PK_ATTN_FWD, oi);
        if (!st)
            return;
        st->b = op->m, st->s = op->seq_q, st->S = op->seq_kv;
        st->nh = op->heads, st->nkv = op->kv_heads, st->d = op->head_dim, st->cp = cp;
        st->in[0] = q, st->in[1] = k, st->in[2] = v, st->out[0] = o, st->out[1] = lse;
        st->flops = 2.0 * mm; /* S = QKᵀ and O = PV */
        stream_bytes(pl, st);
        bd->last_out = o;
        return;
    }
    int dO = chained(bd, op, "do", b * s * nh * d);
    int D = buf(bd, "attn.delta", b * nh * s, 4), dqacc = buf(bd, "dq_accum", b * nh * s * d, 4);
    int dq = buf(bd, "dq", b * nh * s * d, 2);
    int dk = buf(bd, gathered ? "dk_gathered" : "dk", b * nkv * S * d, 2);
    int dv = buf(bd, gathered ? "dv_gathered" : "dv", b * nkv * S * d, 2);
    kr_profiler_step *st = step(bd, KR_PK_ATTN_BWD_PRE, oi);
    if (!st)
        return;
    st->b = op->m, st->s = op->seq_q, st->nh = op->heads, st->nkv = op->kv_heads, st->d = op->head_dim;
    st->in[0] = o, st->in[1] = dO, st->out[0] = D, st->out[1] = dqacc; /* zero-fills dq_accum */
    st->flops = 2.0 * b * nh * s * d;
    stream_bytes(pl, st);
    st = step(bd, KR_PK_ATTN_BWD, oi);
    if (!st)
        return;
    st->b = op->m, st->s = op->seq_q, st->S = op->seq_kv;
    st->nh = op->heads, st->nkv = op->kv_heads, st->d = op->head_dim, st->cp = cp;
    st->in[0] = q, st->in[1] = k, st->in[2] = v, st->in[3] = dO, st->in[4] = lse, st->in[5] = D;
    st->out[0] = dqacc, st->out[1] = dk, st->out[2] = dv;
    st->flops = 5.0 * mm; /* QKᵀ recomputed, dO·Vᵀ, Pᵀ·dO, dSᵀ·Q, dS·K */
    stream_bytes(pl, st);
    st->bytes += bufbytes(pl, dqacc); /* dQ is accumulated: read and written */
    st = step(bd, KR_PK_ATTN_BWD_DQ, oi);
    if (!st)
        return;
    st->b = op->m, st->s = op->seq_q, st->nh = op->heads, st->nkv = op->kv_heads, st->d = op->head_dim;
    st->m = (long long)(b * nh * s), st->n = op->head_dim;
    st->in[0] = dqacc, st->out[0] = dq;
    stream_bytes(pl, st);
    bd->last_out = dq;
}

static void op_norm(builder *bd, const kr_op *op, int oi)
{
    kr_profiler_program *pl = bd->plan;
    double T = (double)op->m, h = (double)op->n;
    int gamma = opbuf(bd, op, "gamma", h, 2), rstd = opbuf(bd, op, "rstd", T, 4);
    kr_profiler_step *s;
    if (!op->backward) {
        int x = chained(bd, op, "x", T * h), y = opbuf(bd, op, "y", T * h, 2);
        if (!(s = step(bd, KR_PK_RMSNORM_FWD, oi)))
            return;
        s->in[0] = x, s->in[1] = gamma, s->out[0] = y, s->out[1] = rstd;
        bd->last_out = y;
    } else {
        int dy = chained(bd, op, "dy", T * h), x = opbuf(bd, op, "x", T * h, 2);
        int dx = opbuf(bd, op, "dx", T * h, 2), dgamma = opbuf(bd, op, "dgamma", h, 4);
        if (!(s = step(bd, KR_PK_RMSNORM_BWD, oi)))
            return;
        s->in[0] = x, s->in[1] = gamma, s->in[2] = dy, s->in[3] = rstd, s->out[0] = dx, s->out[1] = dgamma;
        bd->last_out = dx;
    }
    s->m = op->m, s->n = op->n;
    s->flops = (op->backward ? 8.0 : 4.0) * T * h;
    stream_bytes(pl, s);
}

static void op_bda(builder *bd, const kr_op *op, int oi)
{
    kr_profiler_program *pl = bd->plan;
    double e = (double)op->m * (double)op->n;
    int mask = opbuf(bd, op, "mask", e, 1);
    kr_profiler_step *s;
    if (!op->backward) {
        int x = chained(bd, op, "x", e), res = opbuf(bd, op, "residual", e, 2), out = opbuf(bd, op, "out", e, 2);
        if (!(s = step(bd, KR_PK_BDA_FWD, oi)))
            return;
        s->in[0] = x, s->in[1] = res, s->out[0] = out, s->out[1] = mask;
        bd->last_out = out;
    } else {
        int dy = chained(bd, op, "dy", e), dx = opbuf(bd, op, "dx", e, 2);
        if (!(s = step(bd, KR_PK_BDA_BWD, oi)))
            return;
        s->in[0] = dy, s->in[1] = mask, s->out[0] = dx;
        bd->last_out = dx;
    }
    s->m = op->m, s->n = op->n;
    s->flops = 3.0 * e;
    stream_bytes(pl, s);
}

/* The attention geometry of a partition (from its attention op, or derived from the job when
 * the partition has none, e.g. the QKV segment under CP). */
typedef struct geom {
    long long b, s, S, T;
    int nh, nkv, d, cp, qk_norm;
} geom;

static void op_qkv_post(builder *bd, const kr_op *op, int oi, const geom *g)
{
    kr_profiler_program *pl = bd->plan;
    double T = (double)g->T, qe = T * g->nh * g->d, kve = T * g->nkv * g->d;
    double row = (double)(g->nh + 2 * g->nkv) * g->d;
    kr_profiler_step *s;
    if (!op->backward) {
        int qkv = chained(bd, op, "qkv", T * row);
        int q = buf(bd, "q", qe, 2), k = buf(bd, "k", kve, 2), v = buf(bd, "v", kve, 2);
        if (!(s = step(bd, KR_PK_QKV_SPLIT, oi)))
            return;
        s->b = g->b, s->s = g->s, s->nh = g->nh, s->nkv = g->nkv, s->d = g->d;
        s->in[0] = qkv, s->out[0] = q, s->out[1] = k, s->out[2] = v;
        s->flops = 0;
        stream_bytes(pl, s);
        bd->last_out = q;
        if (g->qk_norm) {
            int gq = opbuf(bd, op, "q_gamma", g->d, 2), gk = opbuf(bd, op, "k_gamma", g->d, 2);
            int rq = opbuf(bd, op, "q_rstd", T * g->nh, 4), rk = opbuf(bd, op, "k_rstd", T * g->nkv, 4);
            if (!(s = step(bd, KR_PK_QKNORM_FWD, oi)))
                return;
            s->b = g->b, s->s = g->s, s->nh = g->nh, s->nkv = g->nkv, s->d = g->d;
            s->in[0] = q, s->in[1] = k, s->in[2] = gq, s->in[3] = gk, s->out[0] = rq, s->out[1] = rk;
            s->flops = 4.0 * (qe + kve);
            s->bytes = 2.0 * (qe + kve) * 2.0 + bufbytes(pl, rq) + bufbytes(pl, rk) + 4.0 * g->d; /* in place */
        }
        return;
    }
    int dq = buf(bd, "dq", qe, 2), dk = buf(bd, "dk", kve, 2), dv = buf(bd, "dv", kve, 2);
    if (g->qk_norm) {
        /* Out of place (dq → dq_pre_norm): the profiling loop runs it thousands of times, and
         * iterating the backward map in place would blow the values up. */
        int dxq = opbuf(bd, op, "dq_pre_norm", qe, 2), dxk = opbuf(bd, op, "dk_pre_norm", kve, 2);
        int xq = opbuf(bd, op, "q_in", qe, 2), xk = opbuf(bd, op, "k_in", kve, 2);
        int gq = opbuf(bd, op, "q_gamma", g->d, 2), gk = opbuf(bd, op, "k_gamma", g->d, 2);
        int rq = opbuf(bd, op, "q_rstd", T * g->nh, 4), rk = opbuf(bd, op, "k_rstd", T * g->nkv, 4);
        if (!(s = step(bd, KR_PK_QKNORM_BWD, oi)))
            return;
        s->b = g->b, s->s = g->s, s->nh = g->nh, s->nkv = g->nkv, s->d = g->d;
        s->in[0] = xq, s->in[1] = xk, s->in[2] = gq, s->in[3] = gk, s->in[4] = rq, s->in[5] = rk;
        s->in[6] = dq, s->in[7] = dk, s->out[0] = dxq, s->out[1] = dxk;
        s->flops = 8.0 * (qe + kve);
        s->bytes = 3.0 * (qe + kve) * 2.0 + bufbytes(pl, rq) + bufbytes(pl, rk) + 4.0 * g->d;
        dq = dxq, dk = dxk;
    }
    int dqkv = opbuf(bd, op, "dqkv", T * row, 2);
    if (!(s = step(bd, KR_PK_QKV_MERGE, oi)))
        return;
    s->b = g->b, s->s = g->s, s->nh = g->nh, s->nkv = g->nkv, s->d = g->d;
    s->in[0] = dq, s->in[1] = dk, s->in[2] = dv, s->out[0] = dqkv;
    stream_bytes(pl, s);
    bd->last_out = dqkv;
}

static void op_rope(builder *bd, const kr_op *op, int oi, const geom *g)
{
    double qe = (double)g->T * g->nh * g->d, kve = (double)g->T * g->nkv * g->d;
    int q = buf(bd, op->backward ? "dq" : "q", qe, 2), k = buf(bd, op->backward ? "dk" : "k", kve, 2);
    kr_profiler_step *s = step(bd, op->backward ? KR_PK_ROPE_BWD : KR_PK_ROPE_FWD, oi);
    if (!s)
        return;
    s->b = g->b, s->s = g->s, s->nh = g->nh, s->nkv = g->nkv, s->d = g->d, s->cp = g->cp;
    s->in[0] = q, s->in[1] = k; /* in place: read and write both */
    s->flops = 6.0 * (qe + kve);
    s->bytes = 2.0 * (qe + kve) * 2.0;
    bd->last_out = q;
}

static void op_swiglu(builder *bd, const kr_op *op, int oi)
{
    kr_profiler_program *pl = bd->plan;
    double T = (double)op->m, F = (double)op->n;
    kr_profiler_step *s;
    if (!op->backward) {
        int in = chained(bd, op, "in", T * 2 * F), out = opbuf(bd, op, "out", T * F, 2);
        if (!(s = step(bd, KR_PK_SWIGLU_FWD, oi)))
            return;
        s->in[0] = in, s->out[0] = out;
        s->flops = 8.0 * T * F;
        bd->last_out = out;
    } else {
        int dy = chained(bd, op, "dy", T * F), in = opbuf(bd, op, "in", T * 2 * F, 2);
        int din = opbuf(bd, op, "din", T * 2 * F, 2);
        if (!(s = step(bd, KR_PK_SWIGLU_BWD, oi)))
            return;
        s->in[0] = in, s->in[1] = dy, s->out[0] = din;
        s->flops = 12.0 * T * F;
        bd->last_out = din;
    }
    s->m = op->m, s->n = op->n;
    stream_bytes(pl, s);
}

static void op_embed(builder *bd, const kr_op *op, int oi, const kr_job *job)
{
    double T = (double)op->m, h = (double)op->n, V = (double)job->model.vocab / job->tp;
    int ids = opbuf(bd, op, "ids", T, 8);
    kr_profiler_step *s;
    if (!op->backward) {
        int table = opbuf(bd, op, "table", V * h, 2), out = opbuf(bd, op, "out", T * h, 2);
        if (!(s = step(bd, KR_PK_EMBED_FWD, oi)))
            return;
        s->in[0] = ids, s->in[1] = table, s->out[0] = out;
        /* Megatron reads a row for every token (row 0 of the shard for foreign ids, then
         * masked), so a row read and a row write per token. */
        s->bytes = 8.0 * T + 2.0 * T * h * 2.0;
        s->flops = T * h;
        bd->last_out = out;
    } else {
        int dy = chained(bd, op, "dy", T * h), dtable = opbuf(bd, op, "main_grad", V * h, 4);
        if (!(s = step(bd, KR_PK_EMBED_BWD, oi)))
            return;
        s->in[0] = ids, s->in[1] = dy, s->out[0] = dtable;
        /* Every token's gradient row is read; the 1/tp of tokens in this shard add into fp32. */
        s->bytes = 8.0 * T + T * h * 2.0 + 2.0 * T * h * 4.0 / job->tp;
        s->flops = T * h / job->tp;
        bd->last_out = -1;
    }
    s->m = op->m, s->n = op->n, s->k = job->model.vocab; /* ids are drawn from the whole vocabulary */
    s->vstart = 0;
}

static void op_loss(builder *bd, const kr_op *op, int oi, const kr_job *job)
{
    kr_profiler_program *pl = bd->plan;
    double T = (double)op->m, V = (double)op->n;
    int logits = chained(bd, op, "logits", T * V), target = opbuf(bd, op, "target", T, 8);
    int mx = opbuf(bd, op, "rowmax", T, 4), sum = opbuf(bd, op, "rowsum", T, 4);
    int tl = opbuf(bd, op, "target_logit", T, 4), loss = opbuf(bd, op, "loss", T, 4);
    kr_profiler_step *s;
    if (!op->backward) {
        if (!(s = step(bd, KR_PK_XENT_MAX, oi)))
            return;
        s->m = op->m, s->n = op->n, s->k = job->model.vocab;
        s->in[0] = logits, s->in[1] = target, s->out[0] = mx, s->out[1] = tl;
        s->flops = T * V;
        stream_bytes(pl, s);
        if (!(s = step(bd, KR_PK_XENT_SUM, oi)))
            return;
        s->m = op->m, s->n = op->n;
        s->in[0] = logits, s->in[1] = mx, s->in[2] = tl, s->out[0] = sum, s->out[1] = loss;
        s->flops = 4.0 * T * V;
        stream_bytes(pl, s);
        bd->last_out = -1;
        return;
    }
    int dloss = opbuf(bd, op, "dloss", T, 4), grad = opbuf(bd, op, "grad", T * V, 2);
    if (!(s = step(bd, KR_PK_XENT_BWD, oi)))
        return;
    s->m = op->m, s->n = op->n, s->k = job->model.vocab;
    s->in[0] = logits, s->in[1] = target, s->in[2] = mx, s->in[3] = sum, s->in[4] = dloss, s->out[0] = grad;
    s->flops = 5.0 * T * V;
    stream_bytes(pl, s);
    bd->last_out = grad;
}

/* ---- the collective ------------------------------------------------------------------------ */

static int program_collective(builder *bd, const kr_job *job, const kr_partition *p, const kr_config *c,
                           const kr_profiler_program_params *pp)
{
    kr_profiler_program *pl = bd->plan;
    const kr_collective *co = &p->coll;
    pl->coll = co->kind;
    if (co->kind == KR_COLL_NONE) {
        pl->comm = KR_PROFILER_COMM_NONE;
        pl->launch_step = pl->nsteps;
        return KR_OK;
    }
    kr_profiler_comm mode = pp->comm;
    if (mode == KR_PROFILER_COMM_NONE)
        return kr_error_set(bd->err, KR_EINVAL, "partition %s carries a %s: comm mode 'none' is not allowed", p->key,
                            kr_coll_kind_name(co->kind));
    if (mode == KR_PROFILER_COMM_AUTO)
        mode = pp->devices >= 2 && co->group_size >= 2 ? KR_PROFILER_COMM_NCCL : KR_PROFILER_COMM_PROXY;
    if (mode == KR_PROFILER_COMM_NCCL && (pp->devices < 2 || co->group_size < 2))
        return kr_error_set(bd->err, KR_EINVAL,
                            "partition %s: comm 'nccl' needs two or more GPUs and a group of two or more ranks "
                            "(GPUs available: %d, %s group: %d); use 'proxy' on one GPU",
                            p->key, pp->devices, co->group, co->group_size);
    pl->comm = mode;
    pl->group_size = co->group_size;
    pl->coll_bytes = co->bytes;
    pl->ctas = c->sms;
    int n = co->group_size < 1 ? 1 : co->group_size;
    double elems = floor(co->bytes / 2.0);
    if (mode == KR_PROFILER_COMM_NCCL) {
        int ranks = KR_MIN(pp->devices, KR_MIN(n, KR_PROFILER_MAX_RANKS));
        pl->ranks = ranks;
        /* Per-rank shard of the nccl-tests size S, rounded down to whole elements per rank. */
        double shard = floor(elems / ranks);
        if (co->kind == KR_COLL_ALLREDUCE) {
            pl->coll_send = pl->coll_recv = buf(bd, "coll", shard * ranks, 2);
        } else if (co->kind == KR_COLL_ALLGATHER) {
            pl->coll_send = buf(bd, "coll.send", shard, 2);
            pl->coll_recv = buf(bd, "coll.recv", shard * ranks, 2);
        } else {
            pl->coll_send = buf(bd, "coll.send", shard * ranks, 2);
            pl->coll_recv = buf(bd, "coll.recv", shard, 2);
        }
        return bd->rc;
    }
    /* The proxy: n−1 steps per phase of S/n elements (see the file comment). */
    pl->ranks = 1;
    long long chunk = (long long)floor(elems / n);
    if (chunk < 1)
        chunk = 1;
    pl->proxy_chunk = chunk;
    pl->proxy_reduce_steps = co->kind == KR_COLL_ALLGATHER ? 0 : n - 1;
    pl->proxy_copy_steps = co->kind == KR_COLL_REDUCESCATTER ? 0 : n - 1;
    pl->coll_send = buf(bd, "coll.src", (double)chunk * n, 2);
    pl->coll_recv = buf(bd, "coll.dst", (double)chunk * n, 2);
    double cb = (double)chunk * 2.0;
    pl->proxy_bus_bytes = (pl->proxy_reduce_steps + pl->proxy_copy_steps) * cb;
    pl->proxy_hbm_bytes = pl->proxy_reduce_steps * 3.0 * cb + pl->proxy_copy_steps * 2.0 * cb;
    if (mode == KR_PROFILER_COMM_PROXY && job != NULL) {
        double bw = co->kind == KR_COLL_ALLREDUCE ? job->gpu.busbw_ar_Bps : job->gpu.busbw_ag_Bps;
        pl->comm_bw_Bps = bw;
        pl->proxy_floor_s = job->gpu.coll_alpha_s + (bw > 0 ? pl->proxy_bus_bytes / bw : 0.0);
    }
    return bd->rc;
}

void kr_profiler_comm_label(const kr_profiler_program *plan, char *buf_, size_t cap)
{
    switch (plan->comm) {
    case KR_PROFILER_COMM_NCCL:
        snprintf(buf_, cap, "nccl %s x%d ranks (group %d), %d CTAs", kr_coll_kind_name(plan->coll), plan->ranks,
                 plan->group_size, plan->ctas);
        break;
    case KR_PROFILER_COMM_PROXY:
        snprintf(buf_, cap, "PROXY %s (1 GPU, link-capped %.0f GB/s, group %d), %d CTAs",
                 kr_coll_kind_name(plan->coll), plan->comm_bw_Bps / 1e9, plan->group_size, plan->ctas);
        break;
    case KR_PROFILER_COMM_PROXY_UNPACED:
        snprintf(buf_, cap, "PROXY %s (1 GPU, unpaced, group %d), %d CTAs", kr_coll_kind_name(plan->coll),
                 plan->group_size, plan->ctas);
        break;
    default:
        snprintf(buf_, cap, "none");
    }
}

/* ---- the plan of a partition ----------------------------------------------------------------- */

static void derive_geom(const kr_job *job, const kr_partition *p, geom *g)
{
    memset(g, 0, sizeof *g);
    const kr_model *m = &job->model;
    g->nh = m->heads / job->tp;
    g->nkv = m->kv_groups >= job->tp ? m->kv_groups / job->tp : 1;
    g->d = m->head_dim;
    g->cp = job->cp;
    g->qk_norm = m->qk_norm;
    g->s = job->seq_len / job->cp;
    g->S = job->seq_len;
    g->T = 0;
    for (int i = 0; i < p->nops; i++) {
        const kr_op *op = &p->ops[i];
        if (op->kind == KR_OP_ATTN) {
            g->b = op->m, g->s = op->seq_q, g->S = op->seq_kv;
            g->nh = op->heads, g->nkv = op->kv_heads, g->d = op->head_dim;
        }
        if (g->T == 0 && op->m > 0 && op->kind != KR_OP_ATTN)
            g->T = op->m;
    }
    if (g->b == 0)
        g->b = g->s > 0 ? g->T / g->s : 0;
    if (g->T == 0)
        g->T = g->b * g->s;
}

int kr_profiler_program_build(const kr_job *job, const kr_partition *p, const kr_config *c,
                           const kr_profiler_program_params *pp_in, kr_profiler_program *plan, kr_error *err)
{
    kr_profiler_program_params pp;
    if (pp_in)
        pp = *pp_in;
    else
        kr_profiler_program_params_default(&pp);
    int rc = kr_config_validate(job, p, c, err);
    if (rc)
        return rc;
    program_init(plan, p->key);
    plan->freq_mhz = c->freq_mhz;
    plan->slot = p->coll.kind == KR_COLL_NONE ? KR_SLOT_NONE : c->slot;
    plan->seed = pp.seed;
    plan->dropout_p = pp.dropout_p;
    plan->rope_log_base = logf(pp.rope_base);
    plan->norm_eps = pp.norm_eps;
    if (!(pp.dropout_p >= 0.0f && pp.dropout_p < 1.0f))
        return kr_error_set(err, KR_EINVAL, "dropout probability: expected [0, 1), found %g", (double)pp.dropout_p);
    geom g;
    derive_geom(job, p, &g);
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i].kind == KR_OP_ATTN || p->ops[i].kind == KR_OP_ROPE) {
            if (g.d != 64 && g.d != 128)
                return kr_error_set(err, KR_EUNSUPPORTED,
                                    "partition %s: head dimension: the attention kernel handles 64 or 128, found %d",
                                    p->key, g.d);
            if (g.nkv < 1 || g.nh % g.nkv != 0)
                return kr_error_set(err, KR_EUNSUPPORTED,
                                    "partition %s: heads per GPU (%d) must be a multiple of KV heads per GPU (%d)",
                                    p->key, g.nh, g.nkv);
        }
    builder bd = {plan, err, KR_OK, -1};
    plan->nops = p->nops;
    for (int i = 0; i < p->nops && !bd.rc; i++) {
        const kr_op *op = &p->ops[i];
        plan->op_step[i] = plan->nsteps;
        switch (op->kind) {
        case KR_OP_GEMM: op_gemm(&bd, op, i); break;
        case KR_OP_ATTN: op_attn(&bd, op, i, job->cp); break;
        case KR_OP_NORM: op_norm(&bd, op, i); break;
        case KR_OP_RESIDUAL: op_bda(&bd, op, i); break;
        case KR_OP_ROPE:
            if (strcmp(op->name, "qkv_post") == 0)
                op_qkv_post(&bd, op, i, &g);
            else
                op_rope(&bd, op, i, &g);
            break;
        case KR_OP_ACT: op_swiglu(&bd, op, i); break;
        case KR_OP_EMBED: op_embed(&bd, op, i, job); break;
        case KR_OP_LOSS: op_loss(&bd, op, i, job); break;
        default:
            return kr_error_set(err, KR_EUNSUPPORTED, "partition %s: op %s: kind %d has no kernel", p->key,
                                op->name, (int)op->kind);
        }
    }
    if (bd.rc)
        return bd.rc;
    plan->op_step[p->nops] = plan->nsteps;
    for (int i = 0; i < plan->nsteps; i++) {
        plan->flops += plan->steps[i].flops;
        plan->bytes += plan->steps[i].bytes;
    }
    rc = program_collective(&bd, job, p, c, &pp);
    if (rc)
        return rc;
    if (plan->coll != KR_COLL_NONE)
        plan->launch_step =
            plan->slot == KR_SLOT_NONE ? plan->nsteps : plan->op_step[p->slots[plan->slot].op_index];
    return KR_OK;
}

/* ---- calibration plans ----------------------------------------------------------------------- */

static int calib_finish(builder *bd)
{
    kr_profiler_program *pl = bd->plan;
    if (bd->rc)
        return bd->rc;
    pl->launch_step = pl->nsteps;
    for (int i = 0; i < pl->nsteps; i++) {
        pl->flops += pl->steps[i].flops;
        pl->bytes += pl->steps[i].bytes;
    }
    return KR_OK;
}

int kr_profiler_program_gemm(long long m, long long n, long long k, kr_profiler_program *plan, kr_error *err)
{
    if (m < 1 || n < 1 || k < 1)
        return kr_error_set(err, KR_EINVAL, "calibration GEMM: expected positive sizes, found %lldx%lldx%lld", m, n, k);
    program_init(plan, "calib:gemm");
    builder bd = {plan, err, KR_OK, -1};
    kr_op op;
    memset(&op, 0, sizeof op);
    kr__strlcpy(op.name, "gemm", sizeof op.name);
    op.kind = KR_OP_GEMM;
    op.m = (long)m, op.n = (long)n, op.k = (long)k;
    op_gemm(&bd, &op, -1);
    return calib_finish(&bd);
}

int kr_profiler_program_stream(double bytes, kr_profiler_program *plan, kr_error *err)
{
    if (!(bytes >= 1024))
        return kr_error_set(err, KR_EINVAL, "calibration stream: expected at least 1 KiB, found %g bytes", bytes);
    program_init(plan, "calib:stream");
    builder bd = {plan, err, KR_OK, -1};
    double elems = floor(bytes / 4.0); /* half read, half written, bf16 */
    int src = buf(&bd, "stream.src", elems, 2), dst = buf(&bd, "stream.dst", elems, 2);
    kr_profiler_step *s = step(&bd, KR_PK_STREAM, -1);
    if (!s)
        return bd.rc;
    s->m = (long long)elems, s->n = 1;
    s->in[0] = src, s->out[0] = dst;
    stream_bytes(plan, s);
    return calib_finish(&bd);
}

int kr_profiler_program_collective(kr_coll_kind kind, double bytes, int group, int ctas, kr_profiler_comm comm,
                                int devices, kr_profiler_program *plan, kr_error *err)
{
    if (kind == KR_COLL_NONE || group < 2 || ctas < 1 || !(bytes >= 1024) || comm == KR_PROFILER_COMM_AUTO ||
        comm == KR_PROFILER_COMM_PROXY || comm == KR_PROFILER_COMM_NONE)
        return kr_error_set(err, KR_EINVAL,
                            "calibration collective: expected a collective, group >= 2, ctas >= 1, bytes >= 1024 and "
                            "comm nccl or proxy-unpaced; found %s, %d, %d, %g, %s",
                            kr_coll_kind_name(kind), group, ctas, bytes, kr_profiler_comm_name(comm));
    program_init(plan, "calib:collective");
    builder bd = {plan, err, KR_OK, -1};
    kr_partition p;
    memset(&p, 0, sizeof p);
    kr__strlcpy(p.key, "calib:collective", sizeof p.key);
    p.coll.kind = kind;
    p.coll.group_size = group;
    p.coll.bytes = bytes;
    kr__strlcpy(p.coll.group, kind == KR_COLL_ALLREDUCE ? "tp" : "cp", sizeof p.coll.group);
    kr_config c = {0, ctas, KR_SLOT_NONE, 0};
    kr_profiler_program_params pp;
    kr_profiler_program_params_default(&pp);
    pp.comm = comm;
    pp.devices = devices;
    int rc = program_collective(&bd, NULL, &p, &c, &pp);
    if (rc)
        return rc;
    return calib_finish(&bd);
}

int kr_profiler_program_spin(int ctas, long long ns, int launches, kr_profiler_program *plan, kr_error *err)
{
    if (ctas < 1 || ns < 0 || launches < 1 || launches > KR_PROFILER_MAX_STEPS)
        return kr_error_set(err, KR_EINVAL,
                            "calibration spin: expected ctas >= 1, ns >= 0, 1 <= launches <= %d; found %d, %lld, %d",
                            KR_PROFILER_MAX_STEPS, ctas, ns, launches);
    program_init(plan, "calib:spin");
    builder bd = {plan, err, KR_OK, -1};
    for (int i = 0; i < launches; i++) {
        kr_profiler_step *s = step(&bd, KR_PK_SPIN, -1);
        if (!s)
            return bd.rc;
        s->ctas = ctas;
        s->ns = ns;
    }
    return calib_finish(&bd);
}

double kr_profiler_program_memory(const kr_profiler_program *plan)
{
    double total = 0;
    for (int i = 0; i < plan->nbufs; i++)
        total += bufbytes(plan, i);
    return total;
}

void kr_profiler_program_format(const kr_profiler_program *plan, char *out, size_t cap)
{
    kr__sb sb = {0};
    char label[128];
    kr_profiler_comm_label(plan, label, sizeof label);
    kr__sb_printf(&sb, "plan %s: %d steps, %.3f GFLOP, %.1f MB HBM, %.1f MB device memory, clock %d MHz\n",
                  plan->key, plan->nsteps, plan->flops / 1e9, plan->bytes / 1e6, kr_profiler_program_memory(plan) / 1e6,
                  plan->freq_mhz);
    for (int i = 0; i <= plan->nsteps; i++) {
        if (plan->coll != KR_COLL_NONE && i == plan->launch_step)
            kr__sb_printf(&sb, "  -- launch %s (%.1f MB, slot %d) on the comm stream: %s\n",
                          kr_coll_kind_name(plan->coll), plan->coll_bytes / 1e6, plan->slot, label);
        if (i == plan->nsteps)
            break;
        const kr_profiler_step *s = &plan->steps[i];
        kr__sb_printf(&sb, "  %2d op %-2d %-12s", i, s->op, kr_profiler_kernel_name(s->kernel));
        if (s->kernel <= KR_PK_GEMM_WGRAD)
            kr__sb_printf(&sb, " T=%lld n=%lld k=%lld", s->m, s->n, s->k);
        else if (s->kernel == KR_PK_ATTN_FWD || s->kernel == KR_PK_ATTN_BWD)
            kr__sb_printf(&sb, " b=%lld s=%lld S=%lld heads=%d/%d d=%d cp=%d", s->b, s->s, s->S, s->nh, s->nkv, s->d,
                          s->cp);
        else if (s->kernel == KR_PK_SPIN)
            kr__sb_printf(&sb, " ctas=%d ns=%lld", s->ctas, s->ns);
        else if (s->b > 0)
            kr__sb_printf(&sb, " b=%lld s=%lld heads=%d/%d d=%d", s->b, s->s, s->nh, s->nkv, s->d);
        else if (s->m > 0)
            kr__sb_printf(&sb, " %lldx%lld", s->m, s->n);
        kr__sb_printf(&sb, "  %.3f GFLOP %.2f MB\n", s->flops / 1e9, s->bytes / 1e6);
    }
    kr__strlcpy(out, sb.oom ? "out of memory" : kr__sb_str(&sb), cap);
    kr__sb_free(&sb);
}
