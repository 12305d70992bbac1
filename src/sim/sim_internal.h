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
    double comm_knee_ghz; /* Below this clock, a comm CTA's bandwidth falls ∝ f. */
    double v_floor_ghz;   /* Voltage floor clock. */
} kr__sim_gpu;

void kr__sim_gpu_init(kr__sim_gpu *sg, const kr_gpu *g);

/* Core voltage at f (GHz). */
double kr__sim_volt(const kr__sim_gpu *sg, double f_ghz);

/* The collective of a mix, resolved against GPU and cluster once per partition. */
typedef struct kr__sim_comm {
    int sms;             /* CTAs = SMs held. */
    double busbw_cap;    /* Bus-bandwidth ceiling of the link (B/s). */
    double cta_Bps;      /* Bus bandwidth one CTA sustains above the comm knee. */
    double hbm_per_bus;  /* HBM bytes per bus byte (n/(n−1)). */
    double k;            /* Bus bytes per nccl-tests byte: 2(n−1)/n or (n−1)/n. */
    double alpha_s;      /* Latency phase. */
    double bus_bytes;    /* k × S: what the bytes phase moves. */
} kr__sim_comm;

/* Fills c for collective coll on sg; returns 0 when the collective takes no time (kind NONE,
 * one rank, no bytes), 1 otherwise, or KR_EINVAL (inter-node without a cluster). */
int kr__sim_comm_init(kr__sim_comm *c, const kr__sim_gpu *sg, const kr_cluster *cluster,
                      const kr_collective *coll, int sms, kr_error *err);

/* What runs during one stretch of time. */
typedef struct kr__sim_mix {
    const kr_op *op;          /* Compute op in its body on the compute stream, or NULL. */
    int op_sms;               /* SMs the op may use (all, or all minus the comm's). */
    const kr__sim_comm *comm; /* Resident comm kernel, or NULL. */
    int comm_moving;          /* 1 in the comm's bytes phase, 0 in its latency phase. */
} kr__sim_mix;

/* The mix evaluated at one clock. */
typedef struct kr__sim_rates {
    double op_time_s;     /* Time the op's body would take under this mix (launch excluded). */
    double bus_Bps;       /* Bus bandwidth of the comm kernel under this mix. */
    double power_w;       /* Board power. */
} kr__sim_rates;

void kr__sim_eval(const kr__sim_gpu *sg, const kr__sim_mix *m, double f_ghz, kr__sim_rates *out);

/* The clock the mix runs at when f_req (GHz) is requested: f_req, or the highest clock at which
 * the mix stays under TDP. *r receives the evaluation at that clock. */
double kr__sim_throttle(const kr__sim_gpu *sg, const kr__sim_mix *m, double f_req_ghz, kr__sim_rates *r);

#endif
