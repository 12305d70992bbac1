/*
 * sim_internal.h — the simulator's physics shared by its files (not public API): the GPU
 * constants in convenient units, one "kernel mix" (what runs on the GPU during a stretch of
 * time) and its evaluation at a clock, and the throttled clock of a mix.
 */
#ifndef KR_SIM_INTERNAL_H
#define KR_SIM_INTERNAL_H

#include "kareus/sim.h"

/* GPU constants in the units the model uses (GHz, bytes/s, W). Filled by kr__sim_gpu_init. */
typedef struct kr__sim_gpu {
    const kr_gpu *g;
    double n_sm;          /* SMs. */
    double f_min_ghz;     /* Lowest supported clock (bisection floor). */
    double f_max_ghz;     /* Highest supported clock. */
    double tensor_rate;   /* Tensor FLOP/s of one SM per GHz (flops_per_sm_clk × 1e9). */
    double vec_rate;      /* Non-tensor FLOP/s of one SM per GHz. */
    double hbm_Bps;       /* Achievable HBM bandwidth (hbm_bw × mem_eff). */
    double mem_knee_ghz;  /* Below this clock, memory-bound work slows ∝ f. */
    double l2_Bps_per_ghz; /* L2 bandwidth per GHz of SM clock (l2_bytes_per_clk × 1e9). */
    double v_floor_ghz;   /* Voltage floor clock. */
    double fv2_max;       /* f_max · V(f_max)²: the floor's clock-dependent part is ∝ f·V². */
    double gemm_ref;      /* Shape factor of the reference 8192³ GEMM on all SMs (gemm_eff's). */
} kr__sim_gpu;

void kr__sim_gpu_init(kr__sim_gpu *sg, const kr_gpu *g);

/* Core voltage at f (GHz). */
double kr__sim_volt(const kr__sim_gpu *sg, double f_ghz);

/* Floor power at f (GHz): what the GPU draws with a kernel resident but no work. */
double kr__sim_floor(const kr__sim_gpu *sg, double f_ghz);

/* One forward bf16 GEMM op of shape m×n×k (2mnk FLOPs, 2(mk + kn + mn) HBM bytes). */
void kr__sim_gemm_op(kr_op *op, double m, double n, double k);

/* Expected maximum of n independent standard normal variables (skew at a collective). */
double kr__sim_emax(int n);

/* The collective of a mix, resolved against GPU and cluster once per partition. */
typedef struct kr__sim_comm {
    int sms;             /* CTAs = SMs held. */
    int tuned;           /* 1: the tuned read-based kernel (Kareus); 0: NCCL's ring. */
    double units;        /* Thread-equivalents in 1024-thread CTAs (sms × block / 1024). */
    double busbw_cap;    /* Bus-bandwidth ceiling (B/s): the link, or the tuned kernel's saturation. */
    double cta_Bps;      /* Bus bandwidth one (1024-thread) CTA sustains at f_max (NCCL: one channel). */
    double clk_exp;      /* Per-CTA bandwidth ∝ (f/f_max)^clk_exp (SM-issued copies, both kernels). */
    double hbm_per_bus;  /* HBM bytes per bus byte. */
    double k;            /* Bus bytes per nccl-tests byte: 2(n−1)/n or (n−1)/n. */
    double alpha_s;      /* Latency phase. */
    double bus_bytes;    /* k × S: what the bytes phase moves. */
} kr__sim_comm;

/* Fills c for collective coll on sg, run by the tuned kernel (tuned = 1) or NCCL (0) with sms
 * CTAs of `block` threads (0: the kernel's default, 1024 tuned / 512 NCCL); returns 0 when the
 * collective takes no time (kind NONE, one rank, no bytes), 1 otherwise, or KR_EINVAL
 * (inter-node without a cluster). */
int kr__sim_comm_init(kr__sim_comm *c, const kr__sim_gpu *sg, const kr_cluster *cluster,
                      const kr_collective *coll, int tuned, int sms, int block, kr_error *err);

/* Bus bandwidth (B/s) of comm kernel c alone at f (GHz), before HBM sharing. */
double kr__sim_comm_bw(const kr__sim_gpu *sg, const kr__sim_comm *c, double f_ghz);

/* What runs during one stretch of time. */
typedef struct kr__sim_mix {
    const kr_op *op;          /* Compute op in its body on the compute stream, or NULL. */
    int op_sms;               /* SMs the op may use (all, or all minus the comm's). */
    const kr__sim_comm *comm; /* Resident comm kernel, or NULL. */
    int comm_moving;          /* 1 in the comm's bytes phase, 0 in its latency phase. */
    double op_eff;            /* The op's efficiency on op_sms SMs, or 0: computed when needed. */
} kr__sim_mix;

/* The mix evaluated at one clock. */
typedef struct kr__sim_rates {
    double op_time_s;     /* Time the op's body would take under this mix (launch excluded). */
    double bus_Bps;       /* Bus bandwidth of the comm kernel under this mix. */
    double power_w;       /* Board power. */
    double floor_w;       /* Its floor part (kr__sim_floor at this clock). */
} kr__sim_rates;

void kr__sim_eval(const kr__sim_gpu *sg, const kr__sim_mix *m, double f_ghz, kr__sim_rates *out);

/* The clock the mix runs at when f_req (GHz) is requested: f_req, or the highest clock at which
 * the mix stays under TDP. *r receives the evaluation at that clock. */
double kr__sim_throttle(const kr__sim_gpu *sg, const kr__sim_mix *m, double f_req_ghz, kr__sim_rates *r);

/* How a partition is run beyond its config: what a measurement harness may vary. */
typedef struct kr__sim_run {
    int block;        /* Threads per comm CTA (0: the kernel's default). */
    int join_after;   /* Compute after op join_after waits for the comm (-1: only the partition end). */
    int kernel;       /* KR_SIM_TUNED / KR_SIM_NCCL, or -1: by the partition's variant. */
    int launch_op;    /* Comm launches before this op (-1: after all compute), or -2: the config's slot. */
} kr__sim_run;

/* kr_sim_partition with a run description (NULL: defaults) and an optional timeline. */
int kr__sim_partition_run(const kr_job *job, const kr_partition *p, const kr_config *c, const kr__sim_run *run,
                          kr_sim_result *out, kr_sim_timeline *tl, kr_error *err);

#endif
