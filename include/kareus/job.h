/*
 * job.h — a training job: GPU, cluster, model, parallelism, batch shape, schedule, and the
 * planning knobs (clock range, comm-SM lists). A kr_job is a plain value; it holds copies of
 * its GPU and model so it is self-contained.
 *
 * Job specs load from JSON (schema "kareus.job", version 1) with full validation; the
 * built-in default job and the paper's ten configurations are available by name. Every field
 * with its type, range and default: kr_job_format_field (`kareus job format`).
 */
#ifndef KAREUS_JOB_H
#define KAREUS_JOB_H

#include "kareus/catalog.h"
#include "kareus/format.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_MAX_STAGES 64   /* Pipeline stages a job may have. */
#define KR_MAX_SMLIST 64   /* Entries in a comm-SM list. */
#define KR_MAX_COMM_KERNELS 2 /* Entries in planning.comm_kernels (KR_KERNEL_COUNT, backend.h). */
#define KR_JOB_VERSION 1

typedef enum kr_schedule {
    KR_SCHEDULE_1F1B = 0,             /* Synchronous 1F1B (PipeDream-flush / DeepSpeed order). */
    KR_SCHEDULE_GPIPE = 1,            /* All forwards, then all backwards. */
    KR_SCHEDULE_INTERLEAVED_1F1B = 2  /* Megatron interleaved 1F1B with virtual stages. */
} kr_schedule;

const char *kr_schedule_name(kr_schedule s);        /* "1f1b", "gpipe", "interleaved-1f1b" */
int kr_schedule_parse(const char *name, kr_schedule *out);

/* The machines: GPUs per node and the network between nodes. */
typedef struct kr_cluster {
    int gpus_per_node;             /* GPUs in one node (NVLink domain). */
    int nodes;                     /* Nodes used by the job. */
    double inter_node_bw_Bps;      /* Per-GPU inter-node bandwidth, bytes/s per direction. */
    double inter_node_latency_s;   /* Inter-node message latency. */
} kr_cluster;

/* A list of comm-kernel SM counts to search. */
typedef struct kr_smlist {
    int n;                  /* Entries used. */
    int v[KR_MAX_SMLIST];   /* SM counts, ascending. */
} kr_smlist;

typedef struct kr_job {
    char name[64];            /* Job name ("default", "llama3.2-3b-tp8-mbs8-s4096", file stem). */
    kr_gpu gpu;               /* The GPU type (every GPU of the job is of this type). */
    kr_model model;           /* The model trained. */
    kr_cluster cluster;       /* Nodes and network. */
    int tp;                   /* Tensor-parallel degree. */
    int cp;                   /* Context-parallel degree. */
    int pp;                   /* Pipeline stages. */
    int dp;                   /* Data-parallel replicas. */
    int microbatch_size;      /* Sequences per microbatch. */
    int seq_len;              /* Tokens per sequence. */
    int num_microbatches;     /* Microbatches per iteration (per pipeline). */
    int layers_per_stage[KR_MAX_STAGES]; /* Transformer layers of each stage (sum = model layers). */
    int virtual_stages;       /* Model chunks per stage (interleaved 1F1B); 1 otherwise. */
    int recompute;            /* 1: full activation recomputation (backward re-runs forward). */
    kr_schedule schedule;     /* Pipeline schedule. */
    int clock_min_mhz;        /* Planning clock range (defaults: the GPU's plan_* values). */
    int clock_max_mhz;
    int clock_step_mhz;
    kr_smlist sms_allreduce;  /* Comm SMs searched for all-reduce partitions (default 3..30/3). */
    kr_smlist sms_gather;     /* … for all-gather / reduce-scatter partitions (default 1..20). */
    double static_power_w;    /* Static power used for effective energy (default gpu.static_w). */
    int ncomm_kernels;        /* Comm kernels the kareus variant searches (planning.comm_kernels, */
    int comm_kernels[KR_MAX_COMM_KERNELS]; /* kr_comm_kernel values; default tuned, nccl). */
} kr_job;

/* Fills *job with the built-in default job (Llama 3.2 3B, TP8 PP2 15+13, MBS 8, seq 4096,
 * 8 microbatches, full recompute, 1F1B, 2 nodes × 8 A100 SXM4 40GB). */
void kr_job_default(kr_job *job);

/* Built-in named jobs: "default" and the paper suite (see kr_job_suite_paper). */
int kr_job_builtin(const char *name, kr_job *job, kr_error *err);

/* The paper's ten configurations, in the paper's order. Returns the count (10); names[i]
 * are static strings usable with kr_job_builtin. */
int kr_job_suite_paper(const char *const **names);

/* Loads and validates a job spec from JSON. A path that does not exist but names a built-in
 * job ("default", a suite name) loads that job. */
int kr_job_load(const char *path, kr_job *job, kr_error *err);
int kr_job_load_text(const char *text, const char *name, kr_job *job, kr_error *err);

/* Checks that the job is self-consistent (TP divides heads and KV groups, layers add up,
 * GPU counts fit the cluster, sizes positive, clock range supported, …). */
int kr_job_validate(const kr_job *job, kr_error *err);

/* Writes the job as a JSON spec (atomic); the written file loads back to the same job. */
int kr_job_write(const char *path, const kr_job *job, kr_error *err);

/* Row i (0-based) of the job spec's description: every field of the format, nested fields after
 * their object, from the table the reader and writer use; defaults are the built-in default
 * job's. Returns KR_OK, or KR_ERANGE when i is past the last row. */
int kr_job_format_field(int i, kr_field_info *out);

/* GPUs per pipeline stage (tp × cp × dp) and in the whole job (× pp). */
int kr_job_gpus_per_stage(const kr_job *job);
int kr_job_gpus_total(const kr_job *job);

/* Planning clocks, highest first. Returns the count or KR_ERANGE if cap is too small. */
int kr_job_clocks(const kr_job *job, int *mhz, int cap);

/* Bytes of activations sent from stage s to s+1 per microbatch (and gradients back). */
double kr_job_p2p_bytes(const kr_job *job);
/* 1 if stages s and s+1 sit on different nodes (their p2p goes over the inter-node link). */
int kr_job_p2p_inter_node(const kr_job *job, int stage);

/* A 16-hex-digit fingerprint of everything that changes measurements (GPU, model, shapes,
 * parallelism); equal jobs have equal fingerprints. buf must hold 17 bytes. */
void kr_job_fingerprint(const kr_job *job, char *buf);

/* One-line summary, e.g. "llama3.2-3b TP8 CP1 PP2 MBS8 S4096 M8 on 16x a100-sxm4-40gb". */
void kr_job_summary(const kr_job *job, char *buf, size_t cap);

KR_END_DECLS
#endif
