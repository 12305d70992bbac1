/*
 * partition.h — the partition catalog of a job: what one GPU computes and communicates in
 * each partition, with per-GPU, per-nanobatch shapes, FLOPs and bytes.
 *
 * A partition (design §1, reference kareus-method.md §1) is one nanobatch's compute segment
 * plus the collective of the other nanobatch that overlaps it. Its launch slots are named
 * points in its op list ("norm_0", "linear_0", "rope_0", "attn_0", "activation_0", …): the
 * comm kernel launches when the ops before the slot have finished and overlaps the rest.
 *
 * Three execution variants describe the five methods' executions:
 *   KR_VARIANT_KAREUS           nanobatched; slot and comm SMs are knobs (searched);
 *   KR_VARIANT_SEQUENTIAL       whole microbatch; compute, then the collective with NCCL's
 *                               default SMs (Megatron / Perseus);
 *   KR_VARIANT_DEFAULT_OVERLAP  nanobatched; collective launched at partition start with
 *                               NCCL's default SMs (Nanobatching / N+Perseus).
 * Non-partition work (embedding, final norm + LM head, loss and their backward) is described
 * with the same struct, with no collective and no slots.
 */
#ifndef KAREUS_PARTITION_H
#define KAREUS_PARTITION_H

#include "kareus/job.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_KEY_MAX 24
#define KR_SLOT_NAME_MAX 16
#define KR_MAX_OPS 24
#define KR_MAX_SLOTS 12
#define KR_MAX_PARTITIONS 24
#define KR_SLOT_NONE (-1) /* Slot index meaning "after all compute" (no overlap). */

typedef enum kr_op_kind {
    KR_OP_GEMM = 0,     /* Linear layer (forward: 1 GEMM; backward: dgrad + wgrad). */
    KR_OP_ATTN = 1,     /* Flash-style causal attention. */
    KR_OP_NORM = 2,     /* RMSNorm (also the fused q/k norm of Qwen3). */
    KR_OP_ROPE = 3,     /* QKV split/post-process and rotary embedding. */
    KR_OP_ACT = 4,      /* SwiGLU activation. */
    KR_OP_RESIDUAL = 5, /* Residual fork, bias-dropout-add. */
    KR_OP_EMBED = 6,    /* Vocabulary-parallel embedding lookup (or its gradient). */
    KR_OP_LOSS = 7      /* Vocabulary-parallel cross-entropy. */
} kr_op_kind;

const char *kr_op_kind_name(kr_op_kind k);

/* One compute op of a partition, on one GPU. */
typedef struct kr_op {
    char name[32];      /* e.g. "linear_qkv", "core_attn", "rmsnorm_pre_mlp". */
    kr_op_kind kind;    /* What kind of kernel(s). */
    int backward;       /* 1 if this is the backward of the named op. */
    /* GEMM: the forward GEMM is [m × k] · [k × n]; backward runs dgrad and wgrad of it. */
    long m;             /* GEMM rows (tokens); attention: batch; elementwise: rows. */
    long n;             /* GEMM output features; elementwise: columns. */
    long k;             /* GEMM input features. */
    int gemms;          /* GEMMs of shape m×n×k run by the op (1 forward, 2 backward). */
    /* Attention. */
    int heads;          /* Query heads on this GPU. */
    int kv_heads;       /* Key/value heads on this GPU. */
    int head_dim;       /* Head dimension. */
    long seq_q;         /* Query length on this GPU. */
    long seq_kv;        /* Key/value length (after a CP all-gather: the full sequence). */
    int causal;         /* 1 for causal masking (half the score matrix is computed). */
    /* Cost. */
    double flops;       /* Floating-point operations on this GPU. */
    double bytes;       /* HBM bytes read + written. */
    int slot;           /* Index of the launch slot that starts at this op, or -1. */
} kr_op;

typedef enum kr_coll_kind {
    KR_COLL_NONE = 0,
    KR_COLL_ALLREDUCE = 1,
    KR_COLL_ALLGATHER = 2,
    KR_COLL_REDUCESCATTER = 3
} kr_coll_kind;

const char *kr_coll_kind_name(kr_coll_kind k); /* "none", "allreduce", "allgather", "reducescatter" */

/* The collective a partition carries (for the other nanobatch). */
typedef struct kr_collective {
    kr_coll_kind kind;   /* Which collective. */
    char group[4];       /* "tp" or "cp". */
    int group_size;      /* Ranks taking part. */
    int inter_node;      /* 1 if the group spans nodes. */
    double bytes;        /* nccl-tests size S: AR buffer, AG output, RS input (bytes). */
    char tensor[48];     /* What it moves, e.g. "fc2 output", "K and V". */
} kr_collective;

/* A named launch point. */
typedef struct kr_slot {
    char name[KR_SLOT_NAME_MAX]; /* "norm_0", "linear_1", … */
    int op_index;                /* The comm launches before this op (after ops 0..op_index-1). */
} kr_slot;

typedef enum kr_variant {
    KR_VARIANT_KAREUS = 0,
    KR_VARIANT_SEQUENTIAL = 1,
    KR_VARIANT_DEFAULT_OVERLAP = 2
} kr_variant;

const char *kr_variant_name(kr_variant v); /* "kareus", "sequential", "default-overlap" */
int kr_variant_parse(const char *name, kr_variant *out);

typedef struct kr_partition {
    char key[KR_KEY_MAX];   /* "fwd_attn", …; non-partition work: "embed_fwd", "lmhead_bwd", … */
    kr_variant variant;     /* Execution variant this description is for. */
    int backward;           /* 1 for backward-pass work. */
    int per_layer;          /* Executions per layer per microbatch (2: both nanobatches use the key). */
    int per_stage;          /* For non-partition work: executions per microbatch on its stage. */
    int nops;               /* Ops used. */
    kr_op ops[KR_MAX_OPS];  /* Compute ops in execution order. */
    kr_collective coll;     /* The collective carried (kind NONE if none). */
    int nslots;             /* Launch slots used (0 without a collective). */
    kr_slot slots[KR_MAX_SLOTS];
    int fixed_slot;         /* Baseline variants: the slot they use (KR_SLOT_NONE = after
                               compute); -2 for KR_VARIANT_KAREUS (slot is searched). */
    int fixed_sms;          /* Baseline variants: comm SMs (NCCL default); 0 if searched. */
} kr_partition;

/* A set of partitions, e.g. every partition key of a job for one variant. */
typedef struct kr_partition_set {
    int n;
    kr_partition p[KR_MAX_PARTITIONS];
} kr_partition_set;

/*
 * The transformer-layer partitions of a job for one variant, in execution order: forward keys
 * then backward keys. CP = 1: fwd_attn, fwd_mlp, bwd_mlp, bwd_attn (4). CP > 1: the twelve
 * keys of the reference (kareus and default-overlap), or seven whole-microbatch segments
 * (sequential: fwd_qkv, fwd_ao, fwd_mlp, bwd_mlp, bwd_o, bwd_a, bwd_qkv).
 */
int kr_partition_catalog(const kr_job *job, kr_variant variant, kr_partition_set *out, kr_error *err);

/*
 * Non-partition work of one pipeline stage: embedding on the first stage; final norm +
 * LM head and the loss on the last; forward (backward = 0) or backward (backward = 1)
 * pieces. per_stage says how often each runs per microbatch.
 */
int kr_partition_nonpartition(const kr_job *job, int stage, int backward, kr_partition_set *out,
                              kr_error *err);

/* Finds a partition by key in a set; NULL if absent. */
const kr_partition *kr_partition_find(const kr_partition_set *set, const char *key);

/* Index of the named slot in p, or KR_SLOT_NONE for "none"; KR_ENOTFOUND (with a message
 * listing the valid slots) otherwise. */
int kr_partition_slot_index(const kr_partition *p, const char *name, int *index, kr_error *err);

/* Name of slot index i ("none" for KR_SLOT_NONE). */
const char *kr_partition_slot_name(const kr_partition *p, int index);

/* Sum of the ops' FLOPs and bytes. */
double kr_partition_flops(const kr_partition *p);
double kr_partition_bytes(const kr_partition *p);

KR_END_DECLS
#endif
