/*
 * catalog.h — the GPU and model catalogs: published constants, each with its source.
 *
 * A kr_gpu is a plain value (copyable, no pointers). Its numeric parameters are listed once
 * in KR_GPU_PARAMS, which generates the struct fields, the JSON reader/writer, the
 * `kareus catalog` listing and the table in docs/calibration.md, so a constant cannot exist
 * without a unit, a description and a source. Built-in entries live in src/workload/catalog.c;
 * further entries (e.g. written by `kareus profile --calibrate`) load from JSON.
 */
#ifndef KAREUS_CATALOG_H
#define KAREUS_CATALOG_H

#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_NAME_MAX 48
#define KR_SOURCE_MAX 200

/*
 * X(field, unit, description). Every field is a double. Clock fields hold whole MHz.
 * Bandwidths are bytes/s; "busbw" is the nccl-tests bus bandwidth.
 */
#define KR_GPU_PARAMS(X)                                                                          \
    X(sm_count, "SMs", "streaming multiprocessors")                                               \
    X(clock_min_mhz, "MHz", "lowest supported SM clock")                                          \
    X(clock_max_mhz, "MHz", "highest supported SM clock")                                         \
    X(clock_step_mhz, "MHz", "spacing of supported SM clocks")                                    \
    X(plan_min_mhz, "MHz", "default planning range: lowest clock")                                \
    X(plan_max_mhz, "MHz", "default planning range: highest clock")                               \
    X(plan_step_mhz, "MHz", "default planning range: step")                                       \
    X(default_clock_mhz, "MHz", "default applications clock")                                     \
    X(tdp_w, "W", "board power limit (TDP)")                                                      \
    X(idle_w, "W", "power when idle at the idle clock")                                           \
    X(static_w, "W", "floor power at clock_max_mhz: a kernel resident but waiting (blocked on comm)")     \
    X(mem_power_w, "W", "extra power of HBM streaming at full achievable bandwidth")              \
    X(dyn_coeff_w, "W/(GHz*V^2)", "dynamic SM power coefficient c at full tensor activity")      \
    X(v_min, "V", "core voltage at and below v_floor_mhz")                                        \
    X(v_max, "V", "core voltage at clock_max_mhz")                                                \
    X(v_floor_mhz, "MHz", "clock up to which the voltage stays at v_min")                         \
    X(v_exp, "", "shape of the voltage rise: V = v_min + (v_max-v_min)*x^v_exp above the floor") \
    X(flops_per_sm_clk, "FLOP/(SM*clk)", "dense BF16 tensor FLOPs per SM per clock")              \
    X(vec_flops_per_sm_clk, "FLOP/(SM*clk)", "non-tensor (CUDA-core FP32) FLOPs per SM per clock") \
    X(gemm_eff, "", "achievable fraction of per-clock tensor peak for large GEMMs")              \
    X(attn_eff, "", "achievable fraction of per-clock tensor peak for flash attention forward")          \
    X(hbm_bw_Bps, "B/s", "peak HBM bandwidth")                                                    \
    X(mem_eff, "", "achievable fraction of HBM bandwidth for streaming kernels")                 \
    X(mem_knee_frac, "", "clock fraction below which memory-bound kernels slow with the clock")  \
    X(sm_activity_membound, "", "dynamic-power activity of SMs running a memory-bound kernel")   \
    X(launch_s, "s", "per-kernel launch and tail overhead")                                       \
    X(busbw_ar_Bps, "B/s", "intra-node all-reduce peak bus bandwidth (8 GPUs)")                   \
    X(busbw_ag_Bps, "B/s", "intra-node all-gather / reduce-scatter peak bus bandwidth")          \
    X(coll_alpha_s, "s", "collective latency term alpha")                                         \
    X(busbw_per_cta_Bps, "B/s", "NCCL: bus bandwidth of one 512-thread channel (CTA) at clock_max_mhz") \
    X(l2_bytes_per_clk, "B/clk", "L2 cache bandwidth per SM clock (the L2 runs in the SM clock domain)") \
    X(nccl_ctas, "CTAs", "CTAs (= SMs) NCCL uses by default for intra-node collectives")         \
    X(comm_activity, "", "dynamic-power activity of one comm CTA relative to a GEMM CTA")        \
    X(p2p_bw_Bps, "B/s", "intra-node point-to-point (NVLink) bandwidth per direction")           \
    X(kappa_tensor, "", "tensor-core op slowdown per unit of L2 bandwidth a moving comm kernel takes") \
    X(clock_switch_s, "s", "time for a clock change to settle")                                 \
    X(floor_const_w, "W", "clock-independent part of the floor power (static_w is the floor at clock_max_mhz)") \
    X(gemm_tile_m, "rows", "GEMM output tile rows (wave quantization)")                           \
    X(gemm_tile_n, "cols", "GEMM output tile columns (wave quantization)")                        \
    X(gemm_k_half, "", "K at which a GEMM's per-tile prologue/epilogue halves its efficiency")    \
    X(attn_bwd_eff, "", "achievable fraction of per-clock tensor peak for flash attention backward") \
    X(host_op_s, "s", "host dispatch time per op in eager training (Python + framework + launch)") \
    X(sync_s, "s", "event/stream synchronisation per nanobatched partition")                      \
    X(skew_cv, "", "rank-to-rank variation of a partition's compute time (skew at a collective)") \
    X(tuned_cta_Bps, "B/s", "tuned comm kernel: bus bandwidth of one 1024-thread CTA at clock_max_mhz") \
    X(tuned_cap_frac, "", "tuned comm kernel: saturation bus bandwidth as a fraction of the link peak") \
    X(comm_clock_exp, "", "both comm kernels: per-CTA (SM-issued copy) bandwidth scales as (f/f_max)^comm_clock_exp") \
    X(nccl_hbm_factor, "", "NCCL all-reduce HBM bytes per GPU per buffer byte (FIFO staging)")  \
    X(attn_activity, "", "SM power activity of flash attention at attn_eff, relative to a GEMM at gemm_eff") \
    X(comm_lat_slow, "", "comm kernels: per-CTA bandwidth / (1 + comm_lat_slow x HBM utilization of the overlapped op)")

enum {
#define KR_GPU_ENUM_(f, u, d) KR_GPU_P_##f,
    KR_GPU_PARAMS(KR_GPU_ENUM_)
#undef KR_GPU_ENUM_
    KR_GPU_NPARAMS
};

/* One GPU type: identity, numeric parameters and the source of each parameter. */
typedef struct kr_gpu {
    char name[KR_NAME_MAX]; /* Catalog key, e.g. "a100-sxm4-40gb". */
    char display[64];       /* Product name as NVML reports it, e.g. "NVIDIA A100-SXM4-40GB". */
#define KR_GPU_FIELD_(f, u, d) double f;
    KR_GPU_PARAMS(KR_GPU_FIELD_)
#undef KR_GPU_FIELD_
    char source[KR_GPU_NPARAMS][KR_SOURCE_MAX]; /* Source of each parameter, by KR_GPU_P_… */
} kr_gpu;

/* Static description of parameter i (0 <= i < KR_GPU_NPARAMS): field name, unit, meaning. */
typedef struct kr_gpu_param_info {
    const char *field;
    const char *unit;
    const char *description;
} kr_gpu_param_info;

const kr_gpu_param_info *kr_gpu_param(int i);
/* Value of parameter i of gpu (reads the struct field of that index). */
double kr_gpu_param_value(const kr_gpu *gpu, int i);
/* Sets parameter i. */
void kr_gpu_param_set(kr_gpu *gpu, int i, double v);
/* The stated uncertainty of parameter i of a catalog (uncalibrated) entry: the relative
 * half-width within which the true value is believed to lie (docs/search.md, "Sensitivity
 * features"): kernel efficiencies ±15 %, voltage at f_max ±5 % and the curve's shape ±20 %,
 * dynamic-power coefficient ±10 %, comm kernels' per-CTA bandwidth ±20 % and saturation ±15 %,
 * the comm bandwidth's clock exponent ±20 %, overheads ±20 %, the overlap slowdown ±20 %, HBM
 * efficiency and attention's power activity ±10 %. 0 for a parameter taken as a fact (SM
 * count, clocks, board limits, tile shapes, …) or out of range. */
double kr_gpu_param_uncertainty(int i);
/* Brings a changed entry back within its physical limits: efficiencies at most 0.98,
 * tuned_cap_frac at most 1, v_max at least v_min + 0.02 V. */
void kr_gpu_clamp(kr_gpu *gpu);

/* A transformer model (dense, GQA, SwiGLU, RMSNorm, RoPE). */
typedef struct kr_model {
    char name[KR_NAME_MAX];       /* Catalog key, e.g. "llama3.2-3b". */
    char display[64];             /* "Llama 3.2 3B". */
    int hidden;                   /* Hidden size h. */
    int ffn;                      /* MLP intermediate size. */
    int heads;                    /* Attention (query) heads. */
    int kv_groups;                /* Key/value heads (GQA groups). */
    int head_dim;                 /* Dimension per head. */
    int layers;                   /* Transformer layers. */
    int vocab;                    /* Vocabulary size. */
    int tied_embeddings;          /* 1 if input embedding and LM head share weights. */
    int qk_norm;                  /* 1 if queries and keys are RMS-normalised (Qwen3). */
    char source[KR_SOURCE_MAX];   /* Where these numbers come from. */
} kr_model;

/* Built-in GPUs: count, and the i-th entry (copied into *out). */
int kr_catalog_gpu_count(void);
void kr_catalog_gpu_at(int i, kr_gpu *out);
/* Finds a built-in GPU by name (case-insensitive; "a100", "h100" are accepted aliases). */
int kr_catalog_gpu_find(const char *name, kr_gpu *out, kr_error *err);

int kr_catalog_model_count(void);
void kr_catalog_model_at(int i, kr_model *out);
int kr_catalog_model_find(const char *name, kr_model *out, kr_error *err);

/* A model as a jansson JSON object (a new reference; NULL when out of memory), with the fields
 * job specs accept for an inline model: name, display, hidden, ffn, heads, kv_groups, head_dim,
 * layers, vocab, tied_embeddings, qk_norm, source. For callers that build JSON with jansson. */
struct json_t;
struct json_t *kr_model_json(const kr_model *m);

/*
 * GPU entries as JSON: {"name", "display", "params": {field: {"value", "source"}}}.
 * Reading validates every field (unknown fields are errors; missing ones are errors unless
 * `base` names a built-in GPU whose values fill the gaps). Writing is atomic.
 */
int kr_gpu_read_json(const char *path, kr_gpu *out, kr_error *err);
int kr_gpu_write_json(const char *path, const kr_gpu *gpu, kr_error *err);

/* Supported clocks of the GPU, highest first (as NVML lists them). Returns the count, or
 * KR_ERANGE if cap is too small (the count needed is then in *needed when not NULL). */
int kr_gpu_supported_clocks(const kr_gpu *gpu, int *mhz, int cap, int *needed);
/* 1 if mhz is a supported clock of the GPU. */
int kr_gpu_clock_supported(const kr_gpu *gpu, int mhz);

KR_END_DECLS
#endif
