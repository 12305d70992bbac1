/*
 * partition.c — the partition catalog: ops with per-GPU shapes, FLOPs and HBM bytes, the
 * collective each partition carries, and its launch slots (design §1, kareus-method.md §1–§2).
 *
 * Notation (per GPU): b = sequences in the unit of work (microbatch/2 for a nanobatch, the whole
 * microbatch for sequential work), s = seq_len/cp local tokens per sequence, T = b·s rows,
 * h = hidden, F = ffn/tp, nh = heads/tp, nkv = max(1, kv_groups/tp), d = head_dim, all bf16
 * (2 bytes). S = seq_len is the key/value length after the CP all-gather.
 *
 *   GEMM forward  [T×k]·[k×n]: 2·T·n·k FLOPs; bytes 2(Tk + kn + Tn).
 *   GEMM backward dgrad + wgrad: 4·T·n·k FLOPs; bytes 2(Tn + nk + Tk) + 2(Tk + Tn) + 8kn
 *                 (wgrad accumulates into an fp32 main grad: read + write 4 bytes).
 *   Attention     flash-style, causal: forward 4·b·nh·s·S·d·½ FLOPs; backward 2.5× forward
 *                 (five matmuls instead of two, FlashAttention-2 paper §3.2); bytes = Q, K, V,
 *                 O (and dO, dQ, dK, dV backward) once, plus the fp32 log-sum-exp.
 *   Memory-bound  RMSNorm 2·T·h·2 (+ backward reads the saved input: 3·T·h·2), rotary on q and
 *                 k, QKV split, SwiGLU (reads 2F, writes F), bias-dropout-add (reads two,
 *                 writes one, plus a 1-byte mask), all counted as HBM bytes; their FLOPs are
 *                 a few per element and never bind.
 *
 * Keys, op lists and searched slots follow the reference exactly (kareus-method.md §1.2 and
 * the §2 table). Slot names: each op belongs to a group (norm: RMSNorm and bias-dropout-add;
 * rope: QKV post-process and rotary; activation: SwiGLU; linear; attn); consecutive members of
 * a memory-bound group share one slot; slots are numbered per group in order of appearance.
 */
#include "kareus/partition.h"

#include <string.h>

#include "util/util.h"
#include "workload/workload_internal.h"

const char *kr_op_kind_name(kr_op_kind k)
{
    static const char *const names[] = {"gemm", "attn", "norm", "rope", "act", "residual", "embed", "loss"};
    return (unsigned)k < KR_ARRAY_LEN(names) ? names[k] : "?";
}

/* The collectives' names, X(value, name). */
#define COLL_KIND_NAMES(X)                                                                                 \
    X(KR_COLL_NONE, "none")                                                                                \
    X(KR_COLL_ALLREDUCE, "allreduce")                                                                      \
    X(KR_COLL_ALLGATHER, "allgather")                                                                      \
    X(KR_COLL_REDUCESCATTER, "reducescatter")

/* The variants' names, X(value, name). */
#define VARIANT_NAMES(X)                                                                                   \
    X(KR_VARIANT_KAREUS, "kareus")                                                                         \
    X(KR_VARIANT_SEQUENTIAL, "sequential")                                                                 \
    X(KR_VARIANT_DEFAULT_OVERLAP, "default-overlap")

static const kr__ename coll_kind_names[] = {COLL_KIND_NAMES(KR__ENAME_ROW)};
static const kr__ename variant_names[] = {VARIANT_NAMES(KR__ENAME_ROW)};
const kr__enames kr__variant_enames = KR__ENAMES(variant_names);

const char *kr_coll_kind_name(kr_coll_kind k)
{
    return kr__ename_of(coll_kind_names, KR_ARRAY_LEN(coll_kind_names), (int)k);
}

const char *kr_variant_name(kr_variant v)
{
    return kr__ename_of(variant_names, KR_ARRAY_LEN(variant_names), (int)v);
}

int kr_variant_parse(const char *name, kr_variant *out)
{
    int v;
    if (kr__ename_parse(variant_names, KR_ARRAY_LEN(variant_names), name, &v))
        return KR_EINVAL;
    *out = (kr_variant)v;
    return KR_OK;
}

/* ---- shapes of one unit of work ------------------------------------------------------ */

typedef struct shape {
    double b;   /* sequences */
    double s;   /* local tokens per sequence */
    double S;   /* key/value length after CP all-gather */
    double T;   /* rows = b·s */
    double h, F, nh, nkv, d, vocab_local;
    int qk_norm;
} shape;

static shape make_shape(const kr_job *job, double b)
{
    const kr_model *m = &job->model;
    shape sh;
    sh.b = b;
    sh.s = (double)job->seq_len / job->cp;
    sh.S = job->seq_len;
    sh.T = sh.b * sh.s;
    sh.h = m->hidden;
    sh.F = (double)m->ffn / job->tp;
    sh.nh = (double)m->heads / job->tp;
    sh.nkv = m->kv_groups >= job->tp ? (double)m->kv_groups / job->tp : 1.0;
    sh.d = m->head_dim;
    sh.vocab_local = (double)m->vocab / job->tp;
    sh.qk_norm = m->qk_norm;
    return sh;
}

static kr_op *new_op(kr_partition *p, const char *name, kr_op_kind kind, int bwd)
{
    kr_op *op = &p->ops[p->nops++];
    memset(op, 0, sizeof *op);
    kr__strlcpy(op->name, name, sizeof op->name);
    op->kind = kind;
    op->backward = bwd;
    op->slot = -1;
    return op;
}

static void gemm(kr_partition *p, const char *name, int bwd, double T, double n, double k)
{
    kr_op *op = new_op(p, name, KR_OP_GEMM, bwd);
    op->m = (long)T;
    op->n = (long)n;
    op->k = (long)k;
    op->gemms = bwd ? 2 : 1;
    if (!bwd) {
        op->flops = 2.0 * T * n * k;
        op->bytes = 2.0 * (T * k + k * n + T * n);
    } else {
        op->flops = 4.0 * T * n * k;
        op->bytes = 2.0 * (T * n + n * k + T * k) + 2.0 * (T * k + T * n) + 8.0 * k * n;
    }
}

static void attention(kr_partition *p, int bwd, const shape *sh)
{
    kr_op *op = new_op(p, "core_attn", KR_OP_ATTN, bwd);
    op->m = (long)sh->b;
    op->heads = (int)sh->nh;
    op->kv_heads = (int)sh->nkv;
    op->head_dim = (int)sh->d;
    op->seq_q = (long)sh->s;
    op->seq_kv = (long)sh->S;
    op->causal = 1;
    double fwd = 4.0 * sh->b * sh->nh * sh->s * sh->S * sh->d * 0.5;
    double q = sh->b * sh->nh * sh->s * sh->d * 2.0, kv = sh->b * sh->nkv * sh->S * sh->d * 2.0;
    double lse = sh->b * sh->nh * sh->s * 4.0;
    op->flops = bwd ? 2.5 * fwd : fwd;
    op->bytes = bwd ? (3.0 * q + 2.0 * kv + q + 2.0 * kv + lse) /* Q,O,dO; K,V; dQ; dK,dV */
                    : (2.0 * q + 2.0 * kv + lse);
}

static void membound(kr_partition *p, const char *name, kr_op_kind kind, int bwd, double bytes, double flops)
{
    kr_op *op = new_op(p, name, kind, bwd);
    op->bytes = bytes;
    op->flops = flops;
}

static void rmsnorm(kr_partition *p, const char *name, int bwd, const shape *sh)
{
    double e = sh->T * sh->h;
    membound(p, name, KR_OP_NORM, bwd, bwd ? 3.0 * e * 2.0 : 2.0 * e * 2.0, bwd ? 8.0 * e : 4.0 * e);
    kr_op *op = &p->ops[p->nops - 1];
    op->m = (long)sh->T;
    op->n = (long)sh->h;
}

static void bda(kr_partition *p, const char *name, int bwd, const shape *sh)
{
    double e = sh->T * sh->h;
    /* Forward reads x and the residual, writes the sum and a 1-byte dropout mask; backward
     * reads the incoming gradient and the mask, writes the gradient (the residual branch
     * passes the gradient through). */
    membound(p, name, KR_OP_RESIDUAL, bwd, bwd ? (2.0 * e * 2.0 + e) : (3.0 * e * 2.0 + e), 3.0 * e);
    kr_op *op = &p->ops[p->nops - 1];
    op->m = (long)sh->T;
    op->n = (long)sh->h;
}

static void qkv_post(kr_partition *p, int bwd, const shape *sh)
{
    double qkv = sh->T * (sh->nh + 2.0 * sh->nkv) * sh->d;
    /* Split of the fused QKV output into q, k, v (a read and a write), plus q/k RMSNorm for
     * Qwen3 (another read + write of q and k). */
    double bytes = 2.0 * qkv * 2.0;
    if (sh->qk_norm)
        bytes += 2.0 * sh->T * (sh->nh + sh->nkv) * sh->d * 2.0 * (bwd ? 1.5 : 1.0);
    membound(p, "qkv_post", KR_OP_ROPE, bwd, bytes, 2.0 * qkv);
    kr_op *op = &p->ops[p->nops - 1];
    op->m = (long)sh->T;
    op->n = (long)((sh->nh + 2.0 * sh->nkv) * sh->d);
}

static void rope(kr_partition *p, int bwd, const shape *sh)
{
    double e = sh->T * (sh->nh + sh->nkv) * sh->d;
    membound(p, "rotary", KR_OP_ROPE, bwd, 2.0 * e * 2.0, 6.0 * e);
    kr_op *op = &p->ops[p->nops - 1];
    op->m = (long)sh->T;
    op->n = (long)((sh->nh + sh->nkv) * sh->d);
}

static void swiglu(kr_partition *p, int bwd, const shape *sh)
{
    double e = sh->T * sh->F;
    membound(p, "swiglu", KR_OP_ACT, bwd, bwd ? 5.0 * e * 2.0 : 3.0 * e * 2.0, bwd ? 12.0 * e : 8.0 * e);
    kr_op *op = &p->ops[p->nops - 1];
    op->m = (long)sh->T;
    op->n = (long)sh->F;
}

/* ---- op lists of the layer segments ------------------------------------------------- */

static void ops_fwd_qkv(kr_partition *p, const shape *sh)
{
    bda(p, "bda_mlp_prev", 0, sh);
    rmsnorm(p, "rmsnorm_input", 0, sh);
    gemm(p, "linear_qkv", 0, sh->T, (sh->nh + 2.0 * sh->nkv) * sh->d, sh->h);
    qkv_post(p, 0, sh);
    rope(p, 0, sh);
}

static void ops_fwd_ao(kr_partition *p, const shape *sh)
{
    attention(p, 0, sh);
    gemm(p, "linear_proj", 0, sh->T, sh->h, sh->nh * sh->d);
}

static void ops_fwd_mlp(kr_partition *p, const shape *sh)
{
    bda(p, "bda_attn", 0, sh);
    rmsnorm(p, "rmsnorm_pre_mlp", 0, sh);
    gemm(p, "linear_fc1", 0, sh->T, 2.0 * sh->F, sh->h);
    swiglu(p, 0, sh);
    gemm(p, "linear_fc2", 0, sh->T, sh->h, sh->F);
}

static void ops_bwd_mlp(kr_partition *p, const shape *sh)
{
    rmsnorm(p, "rmsnorm_input", 1, sh); /* the next layer's input norm, as the reference cuts it */
    bda(p, "bda_mlp", 1, sh);
    gemm(p, "linear_fc2", 1, sh->T, sh->h, sh->F);
    swiglu(p, 1, sh);
    gemm(p, "linear_fc1", 1, sh->T, 2.0 * sh->F, sh->h);
}

static void ops_bwd_o(kr_partition *p, const shape *sh)
{
    rmsnorm(p, "rmsnorm_pre_mlp", 1, sh);
    bda(p, "bda_attn", 1, sh);
    gemm(p, "linear_proj", 1, sh->T, sh->h, sh->nh * sh->d);
}

static void ops_bwd_a(kr_partition *p, const shape *sh)
{
    attention(p, 1, sh);
}

static void ops_bwd_qkv(kr_partition *p, const shape *sh)
{
    rope(p, 1, sh);
    qkv_post(p, 1, sh);
    gemm(p, "linear_qkv", 1, sh->T, (sh->nh + 2.0 * sh->nkv) * sh->d, sh->h);
}

/* ---- slots ------------------------------------------------------------------------- */

static const char *op_group(kr_op_kind k)
{
    switch (k) {
    case KR_OP_NORM:
    case KR_OP_RESIDUAL: return "norm";
    case KR_OP_ROPE: return "rope";
    case KR_OP_ACT: return "activation";
    case KR_OP_GEMM: return "linear";
    case KR_OP_ATTN: return "attn";
    default: return "other";
    }
}

static int group_merges(const char *g)
{
    return strcmp(g, "norm") == 0 || strcmp(g, "rope") == 0 || strcmp(g, "activation") == 0;
}

/* Sets p->slots to the named slots (in the order given) resolved against p's ops. */
static int assign_slots(kr_partition *p, const char *const *names, kr_error *err)
{
    char all_names[KR_MAX_OPS][KR_SLOT_NAME_MAX];
    int all_ops[KR_MAX_OPS], nall = 0;
    int counts[5] = {0};
    static const char *const groups[5] = {"norm", "rope", "activation", "linear", "attn"};
    const char *prev = NULL;
    for (int i = 0; i < p->nops; i++) {
        const char *g = op_group(p->ops[i].kind);
        if (prev && strcmp(prev, g) == 0 && group_merges(g)) {
            prev = g;
            continue;
        }
        prev = g;
        for (int j = 0; j < 5; j++)
            if (strcmp(groups[j], g) == 0) {
                snprintf(all_names[nall], KR_SLOT_NAME_MAX, "%s_%d", g, counts[j]++);
                all_ops[nall++] = i;
            }
    }
    p->nslots = 0;
    for (const char *const *n = names; *n; n++) {
        int found = -1;
        for (int i = 0; i < nall; i++)
            if (strcmp(all_names[i], *n) == 0)
                found = i;
        if (found < 0)
            return kr_error_set(err, KR_EINTERNAL, "partition %s: slot %s does not resolve", p->key, *n);
        kr_slot *s = &p->slots[p->nslots++];
        kr__strlcpy(s->name, *n, sizeof s->name);
        s->op_index = all_ops[found];
        p->ops[all_ops[found]].slot = p->nslots - 1;
    }
    return KR_OK;
}

/* ---- the catalog ------------------------------------------------------------------- */

typedef void (*ops_fn)(kr_partition *, const shape *);

typedef struct key_def {
    const char *key;
    int backward;
    int per_layer;
    ops_fn ops;
    kr_coll_kind coll;   /* collective carried */
    const char *tensor;  /* what it moves */
    const char *slots[5];
} key_def;

/* TP only (CP = 1), nanobatched: kareus-method.md §1.2 and the §2 table. */
static const key_def keys_tp[] = {
    {"fwd_attn", 0, 2, NULL, KR_COLL_ALLREDUCE, "out-proj / fc2 output", {"norm_0", "linear_0", "rope_0", "attn_0", NULL}},
    {"fwd_mlp", 0, 2, ops_fwd_mlp, KR_COLL_ALLREDUCE, "out-proj / fc2 output", {"norm_0", "linear_0", "activation_0", NULL}},
    {"bwd_mlp", 1, 2, ops_bwd_mlp, KR_COLL_ALLREDUCE, "fc1 / QKV input gradient", {"norm_0", "linear_0", "activation_0", NULL}},
    {"bwd_attn", 1, 2, NULL, KR_COLL_ALLREDUCE, "fc1 / QKV input gradient", {"norm_0", "linear_0", "attn_0", "rope_0", NULL}},
};

/* CP > 1, nanobatched: the twelve keys of the reference. */
static const key_def keys_cp[] = {
    {"fwd_qkv_ar", 0, 1, ops_fwd_qkv, KR_COLL_ALLREDUCE, "previous layer's fc2 output", {"norm_0", "linear_0", NULL}},
    {"fwd_qkv_ag", 0, 1, ops_fwd_qkv, KR_COLL_ALLGATHER, "K and V", {"norm_0", "linear_0", "rope_0", NULL}},
    {"fwd_ao_ag", 0, 1, ops_fwd_ao, KR_COLL_ALLGATHER, "K and V", {"attn_0", "linear_0", NULL}},
    {"fwd_ao_ar", 0, 1, ops_fwd_ao, KR_COLL_ALLREDUCE, "out-proj output", {"attn_0", NULL}},
    {"fwd_mlp", 0, 2, ops_fwd_mlp, KR_COLL_ALLREDUCE, "out-proj / fc2 output", {"norm_0", "linear_0", "activation_0", NULL}},
    {"bwd_mlp", 1, 2, ops_bwd_mlp, KR_COLL_ALLREDUCE, "fc1 / QKV input gradient", {"norm_0", "linear_0", "activation_0", NULL}},
    {"bwd_o_ar", 1, 1, ops_bwd_o, KR_COLL_ALLREDUCE, "fc1 input gradient", {"norm_0", NULL}},
    {"bwd_o_ag", 1, 1, ops_bwd_o, KR_COLL_ALLGATHER, "K and V (re-gather)", {"norm_0", "linear_0", NULL}},
    {"bwd_a_ag", 1, 1, ops_bwd_a, KR_COLL_ALLGATHER, "K and V (re-gather)", {"attn_0", NULL}},
    {"bwd_a_rs", 1, 1, ops_bwd_a, KR_COLL_REDUCESCATTER, "dK and dV", {"attn_0", NULL}},
    {"bwd_qkv_rs", 1, 1, ops_bwd_qkv, KR_COLL_REDUCESCATTER, "dK and dV", {"rope_0", "linear_0", NULL}},
    {"bwd_qkv_ar", 1, 1, ops_bwd_qkv, KR_COLL_ALLREDUCE, "QKV input gradient", {"rope_0", "linear_0", NULL}},
};

/* Whole-microbatch segments of sequential execution (Megatron order: compute, then comm). */
static const key_def keys_seq_tp[] = {
    {"fwd_attn", 0, 1, NULL, KR_COLL_ALLREDUCE, "out-proj output", {NULL}},
    {"fwd_mlp", 0, 1, ops_fwd_mlp, KR_COLL_ALLREDUCE, "fc2 output", {NULL}},
    {"bwd_mlp", 1, 1, ops_bwd_mlp, KR_COLL_ALLREDUCE, "fc1 input gradient", {NULL}},
    {"bwd_attn", 1, 1, NULL, KR_COLL_ALLREDUCE, "QKV input gradient", {NULL}},
};

static const key_def keys_seq_cp[] = {
    {"fwd_qkv", 0, 1, ops_fwd_qkv, KR_COLL_ALLGATHER, "K and V", {NULL}},
    {"fwd_ao", 0, 1, ops_fwd_ao, KR_COLL_ALLREDUCE, "out-proj output", {NULL}},
    {"fwd_mlp", 0, 1, ops_fwd_mlp, KR_COLL_ALLREDUCE, "fc2 output", {NULL}},
    {"bwd_mlp", 1, 1, ops_bwd_mlp, KR_COLL_ALLREDUCE, "fc1 input gradient", {NULL}},
    {"bwd_o", 1, 1, ops_bwd_o, KR_COLL_ALLGATHER, "K and V (re-gather)", {NULL}},
    {"bwd_a", 1, 1, ops_bwd_a, KR_COLL_REDUCESCATTER, "dK and dV", {NULL}},
    {"bwd_qkv", 1, 1, ops_bwd_qkv, KR_COLL_ALLREDUCE, "QKV input gradient", {NULL}},
};

/* The attention partitions of TP-only jobs span the fused op lists. */
static void ops_fwd_attn(kr_partition *p, const shape *sh)
{
    ops_fwd_qkv(p, sh);
    ops_fwd_ao(p, sh);
}

static void ops_bwd_attn(kr_partition *p, const shape *sh)
{
    ops_bwd_o(p, sh);
    ops_bwd_a(p, sh);
    ops_bwd_qkv(p, sh);
}

static ops_fn resolve_ops(const key_def *k)
{
    if (k->ops)
        return k->ops;
    return strcmp(k->key, "fwd_attn") == 0 ? ops_fwd_attn : ops_bwd_attn;
}

static void set_collective(kr_partition *p, const kr_job *job, const shape *sh, kr_coll_kind kind, const char *tensor)
{
    kr_collective *c = &p->coll;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    kr__strlcpy(c->tensor, tensor, sizeof c->tensor);
    if (kind == KR_COLL_ALLREDUCE) {
        kr__strlcpy(c->group, "tp", sizeof c->group);
        c->group_size = job->tp;
        c->bytes = sh->T * sh->h * 2.0;
        c->inter_node = job->tp > job->cluster.gpus_per_node;
    } else {
        /* K and V buffers [S, b, nkv, d] each (the gathered size; AG output = RS input). */
        kr__strlcpy(c->group, "cp", sizeof c->group);
        c->group_size = job->cp;
        c->bytes = 2.0 * sh->S * sh->b * sh->nkv * sh->d * 2.0;
        c->inter_node = job->tp * job->cp > job->cluster.gpus_per_node;
    }
}

int kr_partition_catalog(const kr_job *job, kr_variant variant, kr_partition_set *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    const key_def *defs;
    size_t ndefs;
    int nanobatched = variant != KR_VARIANT_SEQUENTIAL;
    if (nanobatched && job->microbatch_size % 2 != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': microbatch_size: expected an even number to split into two nanobatches "
                            "(variant %s), found %d",
                            job->name, kr_variant_name(variant), job->microbatch_size);
    if (job->cp == 1) {
        defs = nanobatched ? keys_tp : keys_seq_tp;
        ndefs = nanobatched ? KR_ARRAY_LEN(keys_tp) : KR_ARRAY_LEN(keys_seq_tp);
    } else {
        defs = nanobatched ? keys_cp : keys_seq_cp;
        ndefs = nanobatched ? KR_ARRAY_LEN(keys_cp) : KR_ARRAY_LEN(keys_seq_cp);
    }
    shape sh = make_shape(job, nanobatched ? job->microbatch_size / 2.0 : (double)job->microbatch_size);
    for (size_t i = 0; i < ndefs; i++) {
        const key_def *k = &defs[i];
        kr_partition *p = &out->p[out->n++];
        kr__strlcpy(p->key, k->key, sizeof p->key);
        p->variant = variant;
        p->backward = k->backward;
        p->per_layer = k->per_layer;
        p->per_stage = 0;
        resolve_ops(k)(p, &sh);
        set_collective(p, job, &sh, k->coll, k->tensor);
        if (variant == KR_VARIANT_SEQUENTIAL) {
            p->nslots = 0;
            p->fixed_slot = KR_SLOT_NONE;
            p->fixed_sms = (int)job->gpu.nccl_ctas;
            continue;
        }
        int rc = assign_slots(p, k->slots, err);
        if (rc)
            return rc;
        if (variant == KR_VARIANT_DEFAULT_OVERLAP) {
            /* Launched at partition start: the slot at op 0 (every key has one). */
            p->fixed_slot = 0;
            for (int s = 0; s < p->nslots; s++)
                if (p->slots[s].op_index == 0)
                    p->fixed_slot = s;
            p->fixed_sms = (int)job->gpu.nccl_ctas;
        } else {
            p->fixed_slot = -2;
            p->fixed_sms = 0;
        }
    }
    return KR_OK;
}

/* Appends to out a unit of non-partition work named key: once per stage, no searched slot,
 * run as the sequential variant. */
static kr_partition *add_nonpartition(kr_partition_set *out, int backward, const char *key)
{
    kr_partition *p = &out->p[out->n++];
    memset(p, 0, sizeof *p);
    p->backward = backward;
    p->per_stage = 1;
    p->fixed_slot = KR_SLOT_NONE;
    p->variant = KR_VARIANT_SEQUENTIAL;
    kr__strlcpy(p->key, key, sizeof p->key);
    return p;
}

int kr_partition_nonpartition(const kr_job *job, int stage, int backward, kr_partition_set *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (stage < 0 || stage >= job->pp)
        return kr_error_set(err, KR_ERANGE, "job '%s': stage: expected a stage in [0, %d], found %d", job->name,
                            job->pp - 1, stage);
    shape sh = make_shape(job, job->microbatch_size); /* non-partition work runs on the whole microbatch */
    double e = sh.T * sh.h;
    if (stage == 0) {
        kr_partition *p = add_nonpartition(out, backward, backward ? "embed_bwd" : "embed_fwd");
        if (!backward) {
            /* Vocab-parallel lookup (rows of the local vocab shard; others write zeros), then a TP
             * all-reduce of the [T, h] output (Megatron VocabParallelEmbedding). */
            kr_op *op = new_op(p, "embedding", KR_OP_EMBED, 0);
            op->m = (long)sh.T;
            op->n = (long)sh.h;
            op->bytes = 2.0 * e * 2.0 + sh.T * 8.0;
            op->flops = e;
            set_collective(p, job, &sh, KR_COLL_ALLREDUCE, "embedding output");
            p->fixed_sms = (int)job->gpu.nccl_ctas;
        } else {
            /* Gradient scatter-add into the fp32 main grad of the local shard. */
            kr_op *op = new_op(p, "embedding", KR_OP_EMBED, 1);
            op->m = (long)sh.T;
            op->n = (long)sh.h;
            op->bytes = e * 2.0 + 2.0 * e * 4.0 / job->tp + sh.T * 8.0;
            op->flops = e / job->tp;
        }
    }
    if (stage == job->pp - 1) {
        /* Final RMSNorm + LM head (column-parallel over vocab/tp): forward has no comm; the
         * backward all-reduces the input gradient. */
        kr_partition *p = add_nonpartition(out, backward, backward ? "lmhead_bwd" : "lmhead_fwd");
        if (!backward) {
            rmsnorm(p, "rmsnorm_final", 0, &sh);
            gemm(p, "output_layer", 0, sh.T, sh.vocab_local, sh.h);
        } else {
            gemm(p, "output_layer", 1, sh.T, sh.vocab_local, sh.h);
            rmsnorm(p, "rmsnorm_final", 1, &sh);
            set_collective(p, job, &sh, KR_COLL_ALLREDUCE, "LM-head input gradient");
            p->fixed_sms = (int)job->gpu.nccl_ctas;
        }
        /* Vocab-parallel cross-entropy: reads the bf16 logits twice (max, then sum of exp)
         * forward; backward writes the logit gradient. Its all-reduces move T floats and are
         * folded into the op's time. */
        kr_partition *l = add_nonpartition(out, backward, backward ? "loss_bwd" : "loss_fwd");
        double logits = sh.T * sh.vocab_local;
        kr_op *op = new_op(l, "cross_entropy", KR_OP_LOSS, backward);
        op->m = (long)sh.T;
        op->n = (long)sh.vocab_local;
        op->bytes = backward ? 2.0 * logits * 2.0 : 2.0 * logits * 2.0 + sh.T * 8.0;
        op->flops = 5.0 * logits;
    }
    return KR_OK;
}

const kr_partition *kr_partition_find(const kr_partition_set *set, const char *key)
{
    for (int i = 0; i < set->n; i++)
        if (strcmp(set->p[i].key, key) == 0)
            return &set->p[i];
    return NULL;
}

int kr_partition_slot_index(const kr_partition *p, const char *name, int *index, kr_error *err)
{
    if (strcmp(name, "none") == 0) {
        *index = KR_SLOT_NONE;
        return KR_OK;
    }
    for (int i = 0; i < p->nslots; i++)
        if (strcmp(p->slots[i].name, name) == 0) {
            *index = i;
            return KR_OK;
        }
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; i < p->nslots; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", p->slots[i].name);
    return kr_error_set(err, KR_ENOTFOUND, "partition %s (%s): expected a slot among {%s}, found '%s'", p->key,
                        kr_variant_name(p->variant), p->nslots ? list : "none", name);
}

const char *kr_partition_slot_name(const kr_partition *p, int index)
{
    if (index == KR_SLOT_NONE || index < 0 || index >= p->nslots)
        return "none";
    return p->slots[index].name;
}

double kr_partition_flops(const kr_partition *p)
{
    double f = 0;
    for (int i = 0; i < p->nops; i++)
        f += p->ops[i].flops;
    return f;
}

double kr_partition_bytes(const kr_partition *p)
{
    double b = 0;
    for (int i = 0; i < p->nops; i++)
        b += p->ops[i].bytes;
    return b;
}
