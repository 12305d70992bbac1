/*
 * catalog.c — built-in GPUs and models, each constant with its published source.
 *
 * Evidence labels (docs/calibration.md): M = measured or stated in the
 * cited source, D = derived by arithmetic from such data (arithmetic given), E = modelling
 * estimate where no published figure exists. docs/calibration.md mirrors this table (it is
 * checked against `kareus catalog --markdown` by a test) and compares predictions with
 * published figures. Constants are never tuned to make a result look good.
 */
#include "kareus/catalog.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

static const kr_gpu_param_info param_info[KR_GPU_NPARAMS] = {
#define KR_GPU_INFO_(f, u, d) {#f, u, d},
    KR_GPU_PARAMS(KR_GPU_INFO_)
#undef KR_GPU_INFO_
};

const kr_gpu_param_info *kr_gpu_param(int i)
{
    return (i >= 0 && i < KR_GPU_NPARAMS) ? &param_info[i] : NULL;
}

double kr_gpu_param_value(const kr_gpu *gpu, int i)
{
    switch (i) {
#define KR_GPU_GET_(f, u, d) \
    case KR_GPU_P_##f:       \
        return gpu->f;
        KR_GPU_PARAMS(KR_GPU_GET_)
#undef KR_GPU_GET_
    default:
        return NAN;
    }
}

double kr_gpu_param_uncertainty(int i)
{
    switch (i) {
    case KR_GPU_P_gemm_eff:
    case KR_GPU_P_attn_eff:
    case KR_GPU_P_attn_bwd_eff:
    case KR_GPU_P_tuned_cap_frac:
        return 0.15;
    case KR_GPU_P_v_max:
        return 0.05;
    case KR_GPU_P_dyn_coeff_w:
    case KR_GPU_P_mem_eff:
    case KR_GPU_P_attn_activity:
        return 0.10;
    case KR_GPU_P_v_exp:
    case KR_GPU_P_tuned_cta_Bps:
    case KR_GPU_P_busbw_per_cta_Bps:
    case KR_GPU_P_comm_clock_exp:
    case KR_GPU_P_host_op_s:
    case KR_GPU_P_launch_s:
    case KR_GPU_P_sync_s:
    case KR_GPU_P_kappa_tensor:
        return 0.20;
    default:
        return 0;
    }
}

void kr_gpu_clamp(kr_gpu *g)
{
    g->tuned_cap_frac = fmin(g->tuned_cap_frac, 1.0);
    g->gemm_eff = fmin(g->gemm_eff, 0.98);
    g->attn_eff = fmin(g->attn_eff, 0.98);
    g->attn_bwd_eff = fmin(g->attn_bwd_eff, 0.98);
    g->mem_eff = fmin(g->mem_eff, 0.98);
    if (g->v_max < g->v_min + 0.02)
        g->v_max = g->v_min + 0.02;
}

void kr_gpu_param_set(kr_gpu *gpu, int i, double v)
{
    switch (i) {
#define KR_GPU_SET_(f, u, d) \
    case KR_GPU_P_##f:       \
        gpu->f = v;          \
        break;
        KR_GPU_PARAMS(KR_GPU_SET_)
#undef KR_GPU_SET_
    default:
        break;
    }
}

/* A built-in entry: (field index, value, source) triples. */
typedef struct gpu_entry_value {
    int param;
    double value;
    const char *source;
} gpu_entry_value;

/* A built-in GPU. An entry with a base starts from that entry's values and sources and lists
 * only what differs (the A100 80GB differs from the 40GB in six constants). */
typedef struct gpu_entry {
    const char *name;
    const char *display;
    const char *aliases[3];
    const char *base;
    gpu_entry_value v[KR_GPU_NPARAMS];
} gpu_entry;

#define P(f) KR_GPU_P_##f

/*
 * Dynamic power coefficient c (W per GHz·V² at full tensor activity), derived once per die: the
 * value for which the simulator's random-data 8192^3 BF16 GEMM at the max clock draws exactly
 * TDP while delivering the published throughput (`kareus catalog --check` re-derives it).
 */
#define C_A100 406.24
#define C_A100_80 405.03
#define C_H200 670.77
#define C_HOPPER 660.89
#define SRC_C_A100 "D: P = TDP for an 8192^3 BF16 GEMM at 1410 MHz requested, 264 TF (midpoint of 257 thonking.ai, 271.2 MAMF), loaded V(f) (kr_sim_derive_dyn_coeff)"
#define SRC_C_HOPPER "D: P = TDP for an 8192^3 BF16 GEMM on H100 at 1980 MHz requested, 794.5 TF (stas00 MAMF) -> f_eff 1.56 GHz, V 0.755 V; same die on H200"

/* Sources shared by several entries (each string at most KR_SOURCE_MAX − 1 characters). */
#define SRC_STAS "M: stas00/ml-engineering:compute/accelerator/README.md"
#define SRC_SMI_A100 "M: nvidia-smi -q dumps (thamada/nvidia-smi:gls/A100SXMx4_smi.py; A100 SUPPORTED_CLOCKS dump 1410..210 step 15)"
#define SRC_SMI_H100 "M: nvidia-smi -q dump thamada/nvidia-smi:gls/H100SXMx8_smi.py (max 1980, idle 345); 15 MHz step assumed like A100 (E)"
#define SRC_SMI_H200 "M: nvidia-smi -q dump thamada/gls:gls/H200_smi.py (max 1980, idle 345); 15 MHz step assumed like A100 (E)"
#define SRC_KAREUS_RANGE "M: Kareus GPU_CONFIGS['A100']['freq_range']=(900,1410,30), ml-energy/kareus:tests/bayesian/common/model_config.py"
#define SRC_HOPPER_RANGE "E: plan over ~1000-1980 MHz (our choice, no published range); 30 MHz step as Kareus uses on A100"
#define SRC_P2P_A100 "M: Kareus p2p_power_w=85 W (power while blocked in P2P recv), ml-energy/kareus:tests/bayesian/common/model_config.py"
#define SRC_P2P_HOPPER "E: measured idle + 30 W, the margin of A100 (85 W blocked vs 55 W idle); no Hopper measurement published"
#define SRC_VMIN_A100 "M: nvidia-smi 0.706-0.719 V at the 210 MHz idle clock (A100 40GB/80GB dumps: thamada/nvidia-smi:gls/A100SXMx4_smi.py, brick-house.org)"
#define SRC_VFIT_A100 "D: floor of the V(f) fit through v_min and the M readings 0.725 V@930 MHz, 0.744 V@1155 MHz (A100-80GB dumps)"
#define SRC_VEXP "E: convex rise (V/F tables are flat at low clocks, steepest at the top); 2 fits the three A100 readings exactly"
#define SRC_VFLOOR_HOPPER "E: same relative floor as the A100 fit (485/1410 = 0.344 of f_max); no Hopper loaded-voltage data"
#define SRC_FLOPS_A100 "D: 312 TF dense BF16 (stas00 TFLOPS table) / (108 SMs x 1.41 GHz) = 2049 -> 2048 FLOP/clk/SM (1024 FMA)"
#define SRC_VEC_A100 "D: 19.5 TF non-matmul FP32 on A100 (FlashAttention-2 paper §3.1, arXiv 2307.08691) / (108 x 1.41 GHz) = 128"
#define SRC_VEC_HOPPER "D: 67 TF FP32 on H100 SXM (NVIDIA spec) / (132 x 1.98 GHz) = 256"
#define SRC_GEMMEFF "D: cuBLAS 8192^3 BF16 with all-zero inputs (no throttling) 295 TF / 312 TF peak = 0.945 (thonking.ai/p/strangely-matrix-multiplications)"
#define SRC_GEMMEFF_HOPPER "E: per-clock efficiency as measured on A100 (0.945, thonking.ai zero-input run); Hopper MAMF is reached through the power cap"
#define SRC_ATTN_EFF "D: FlashAttention-2 reaches 50-73% of theoretical max FLOP/s on A100 (Dao 2023, arXiv 2307.08691 abstract); 0.65 used"
#define SRC_ATTN_HOPPER "E: FA2 ~35% and FA3 up to 75% of H100 BF16 peak (Shah et al. 2024, arXiv 2407.08608 abstract); 0.55 between"
#define SRC_MEMEFF "E: streaming kernels reach ~85% of peak HBM bandwidth (STREAM-like); no single published figure used"
#define SRC_KNEE "E: memory-bound time flat above ~0.55 f_max (fixed HBM clock; no published knee found)"
#define SRC_ACT_MEM "E: u_sm = 0.15 for memory-bound kernels (here ~200 W for HBM streaming on A100 at 1410 MHz)"
#define SRC_LAUNCH "E: typical kernel launch + tail overhead of a few microseconds"
#define SRC_AR_A100 "M: 8xA100 SXM all-reduce peak busbw ~230 GB/s (NVIDIA/nccl-tests issue #149, sjeaugey)"
#define SRC_ALPHA_A100 "E: A100 alpha ~20-40 us for 1-64 MB fits by analogy with the 8xH20 nccl-tests curve (kvcache-ai/Mooncake PR #3484); 25 us used"
#define SRC_CTA_A100 "E: 24 NCCL channels must saturate 230 GB/s (>= 9.6 GB/s each; 8 P2P channels give 72 GB/s, nccl-tests #331); +25% headroom"
#define SRC_CTA_HOPPER "E: 16 NVLS channels reach 480 GB/s (30 GB/s each, nccl-tests #212); +20% headroom"
#define SRC_L2_A100 "D: A100 L2 read bandwidth 2.3x V100's 2048 B/clk (NVIDIA, 'NVIDIA Ampere Architecture In-Depth' / A100 whitepaper: 5120 B/clk); in the SM clock domain"
#define SRC_L2_HOPPER "E: A100's 5120 B/clk x 132/108 SMs (no published per-clock H100 figure)"
#define SRC_KAPPA_HOPPER "E: the A100 fit (L2 queueing of operand fetches is a property of the memory system design, not measured on Hopper)"
#define SRC_LAT_HOPPER "E: the A100 fit (latency-bound SM-issued copies; no Hopper measurement)"
#define SRC_NCCL_A100 "M: HGX A100 8-GPU ring uses 24 channels = 24 CTAs (NVIDIA/nccl-tests issue #100 log)"
#define SRC_COMMACT "E: comm CTAs are load/store bound: 30% of a tensor CTA's dynamic power; NCCL alone then draws 121 W on A100 (our estimate 120-180 W)"
#define SRC_NVLINK_A100 "D: 12 NVLink3 links x ~20 GB/s effective with 128 B SM payloads = 240, ~230 GB/s observed (nccl-tests #149, sjeaugey)"
#define SRC_NVLINK_HOPPER "D: 18 NVLink4 links x 25 GB/s x 0.8 (128 B payload) = 360 GB/s per direction (nccl-tests #149 rule; glennklockwood H100)"
#define SRC_SWITCH "E: 10-20 ms per clock change (no published figure; switching latency varies, arXiv 2502.20075); 15 ms used"
#define SRC_MEMPOW "E: HBM streaming at full bandwidth, P_mem = 60 W; no direct measurement published"
#define SRC_MEMPOW_HOPPER "E: HBM3 streaming ~80 W (H100 dumps show 44-70 W memory power at idle: thamada/nvidia-smi:gls/H100SXMx8_smi.py)"

/*
 * Constants fitted by `kareus calibrate` (src/sim/harness.c) to the measured A100 attention
 * partition (tests/data/calibration/a100-attn-tp2: Kareus artifact, ml-energy/kareus@9b64d9e9),
 * fit fold = rows with an odd CTA count at both clocks; docs/calibration.md gives the run.
 */
#define A100_FLOOR_CONST 52.232
#define HOST_OP_S 30e-6
#define FIT_A100_TUNED_CTA 7.6055e9
#define FIT_A100_TUNED_CAP 0.20282
#define FIT_A100_COMM_EXP 0.80292
#define FIT_A100_KAPPA 1.0
#define FIT_A100_LAT 3.0
#define FIT_A100_VMAX 0.94280
#define H100_FLOOR_CONST 86.297
#define H200_FLOOR_CONST 70.721
#define FIT_A100_ATTN 0.17004
#define FIT_A100_ATTN_ACT 0.54592
#define FIT_A100_VEXP 5.9650
#define SRC_VEXP_A100 "D: V(f) through v_min, the 0.744 V @1155 MHz reading (A100-80GB dump) and the fitted loaded v_max"
#define SRC_FIT_A100 "F: kareus calibrate on the measured A100 fwd_attn partition (ml-energy/kareus@9b64d9e9 energy_results.csv), odd-CTA fold"
#define SRC_TILE "E: 256x128 threadblock tile of large BF16 GEMMs on Ampere (NVIDIA CUTLASS default GEMM configuration for SM80)"
#define SRC_TILE_HOPPER "E: as A100 (Hopper cuBLAS picks 128x256/256x128 warp-specialized tiles, CUTLASS SM90 docs)"
#define SRC_KHALF "E: per-tile prologue/epilogue (C tile load/store, pipeline fill) ~ 128 k-elements of main loop; no published figure"
#define SRC_ATTN_BWD "D: FlashAttention-2 backward/forward efficiency 63%/73% of A100 peak (Dao 2023, arXiv 2307.08691 sec. 4.1) x attn_eff"
#define SRC_ATTN_BWD_HOPPER "E: the A100 backward/forward ratio (FA2 paper) applied to the Hopper forward efficiency"
#define SRC_SYNC "E: host cost of one partition call: Python, cudaEventRecord + cudaStreamWaitEvent, comm launch (~10-30 us)"
#define SRC_HOST "E: eager PyTorch dispatch of one op (Python + framework + launch, ~10-50 us); hidden while the GPU is the bottleneck"
#define SRC_SKEW "E: 2% rank-to-rank jitter of partition compute (clock/thermal variation); a collective waits E[max] of the group"
#define SRC_NCCL_HBM "D: NCCL ring (Simple protocol) stages every chunk through an HBM FIFO: ~5.25 S HBM bytes per GPU per all-reduce vs 2 S for a read-based kernel"
#define SRC_FLOOR "D: floor = idle_w at clock_min (M) and static_w at clock_max (M), f*V(f)^2 between (kr_sim_derive_floor)"
#define SRC_FLOOR_HOPPER "D: as A100 from idle_w (M) and static_w (E) (kr_sim_derive_floor)"
#define SRC_ATTN_ACT_HOPPER "E: the A100 fit (attention power relative to a GEMM is a property of the kernel, not measured on Hopper)"
#define SRC_HOST_HOPPER "E: as A100 (host dispatch is a CPU/framework cost, not a GPU one)"
#define SRC_TUNED_HOPPER "E: A100 fit scaled by the clock ratio 1980/1410 (per-CTA issue rate ~ SM clock); no Hopper measurement"

static const gpu_entry gpu_entries[] = {
    {"a100-sxm4-40gb",
     "NVIDIA A100-SXM4-40GB",
     {"a100", "a100-40gb", "a100-sxm4"}, NULL,
     {
         {P(sm_count), 108, "M: glennklockwood.com/garden/processors/A100; " SRC_STAS},
         {P(clock_min_mhz), 210, SRC_SMI_A100},
         {P(clock_max_mhz), 1410, SRC_SMI_A100},
         {P(clock_step_mhz), 15, SRC_SMI_A100},
         {P(plan_min_mhz), 900, SRC_KAREUS_RANGE},
         {P(plan_max_mhz), 1410, SRC_KAREUS_RANGE},
         {P(plan_step_mhz), 30, SRC_KAREUS_RANGE},
         {P(default_clock_mhz), 1095, "M: applications clock 1095 MHz (nvidia-smi dump; techpowerup a100-sxm4-40-gb base 1095)"},
         {P(tdp_w), 400, "M: A100 SXM 400 W (" SRC_STAS " power table)"},
         {P(idle_w), 55, "M: 52-53 W at 22 C, 59.7 W at 46 C idle (A100-40 nvidia-smi dump, brick-house.org)"},
         {P(static_w), 85, SRC_P2P_A100},
         {P(mem_power_w), 60, SRC_MEMPOW},
         {P(dyn_coeff_w), C_A100, SRC_C_A100},
         {P(v_min), 0.71, SRC_VMIN_A100},
         {P(v_max), FIT_A100_VMAX, SRC_FIT_A100 " (loaded voltage)"},
         {P(v_floor_mhz), 485, SRC_VFIT_A100},
         {P(v_exp), FIT_A100_VEXP, SRC_VEXP_A100},
         {P(flops_per_sm_clk), 2048, SRC_FLOPS_A100},
         {P(vec_flops_per_sm_clk), 128, SRC_VEC_A100},
         {P(gemm_eff), 0.945, SRC_GEMMEFF},
         {P(attn_eff), FIT_A100_ATTN, SRC_FIT_A100 " (harness: dropout 0.1, fp16, d 64)"},
         {P(hbm_bw_Bps), 1555e9, "M: 1555 GB/s (thundercompute.com A100 guide; " SRC_STAS " memory table)"},
         {P(mem_eff), 0.85, SRC_MEMEFF},
         {P(mem_knee_frac), 0.55, SRC_KNEE},
         {P(sm_activity_membound), 0.15, SRC_ACT_MEM},
         {P(launch_s), 5e-6, SRC_LAUNCH},
         {P(busbw_ar_Bps), 230e9, SRC_AR_A100},
         {P(busbw_ag_Bps), 230e9, "D: NVLink3 line rate 300 GB/s x ~0.8 for 128 B SM payloads = 240 GB/s max (nccl-tests #149); 230 as all-reduce"},
         {P(coll_alpha_s), 25e-6, SRC_ALPHA_A100},
         {P(busbw_per_cta_Bps), 12e9, SRC_CTA_A100},
         {P(l2_bytes_per_clk), 5120, SRC_L2_A100},
         {P(nccl_ctas), 24, SRC_NCCL_A100},
         {P(comm_activity), 0.30, SRC_COMMACT},
         {P(p2p_bw_Bps), 230e9, SRC_NVLINK_A100},
         {P(kappa_tensor), FIT_A100_KAPPA, SRC_FIT_A100},
         {P(clock_switch_s), 0.015, SRC_SWITCH},
         {P(floor_const_w), A100_FLOOR_CONST, SRC_FLOOR},
         {P(gemm_tile_m), 256, SRC_TILE},
         {P(gemm_tile_n), 128, SRC_TILE},
         {P(gemm_k_half), 128, SRC_KHALF},
         {P(attn_bwd_eff), FIT_A100_ATTN * 63.0 / 73.0, SRC_ATTN_BWD},
         {P(host_op_s), HOST_OP_S, SRC_HOST},
         {P(sync_s), 20e-6, SRC_SYNC},
         {P(skew_cv), 0.02, SRC_SKEW},
         {P(tuned_cta_Bps), FIT_A100_TUNED_CTA, SRC_FIT_A100},
         {P(tuned_cap_frac), FIT_A100_TUNED_CAP, SRC_FIT_A100},
         {P(comm_clock_exp), FIT_A100_COMM_EXP, SRC_FIT_A100},
         {P(nccl_hbm_factor), 5.25, SRC_NCCL_HBM},
         {P(attn_activity), FIT_A100_ATTN_ACT, SRC_FIT_A100},
         {P(comm_lat_slow), FIT_A100_LAT, SRC_FIT_A100 " (comm slowed by the overlapped op's HBM traffic)"},
     }},
    {"a100-sxm4-80gb",
     "NVIDIA A100-SXM4-80GB",
     {"a100-80gb", NULL, NULL}, "a100-sxm4-40gb",
     {
         {P(default_clock_mhz), 1155, "M: 1155 MHz (A100-80GB nvidia-smi dump; 1140 on the 500 W CTS board, thamada/nvidia-smi:gls/A100SXMx4_smi.py)"},
         {P(tdp_w), 400, "M: A100 SXM 400 W (" SRC_STAS " power table; CTS variant up to 500 W)"},
         {P(idle_w), 60, "M: 58.8-62.2 W idle (thamada/nvidia-smi:gls/A100SXMx4_smi.py)"},
         {P(floor_const_w), 57.694, SRC_FLOOR},
         {P(dyn_coeff_w), C_A100_80, SRC_C_A100},
         {P(hbm_bw_Bps), 2039e9, "M: 2039 GB/s (" SRC_STAS " memory table)"},
         {P(busbw_ar_Bps), 220e9, "M: 8xA100 80GB ~200-220 GB/s busbw (NVIDIA/nccl-tests issues #149, #228)"},
         {P(busbw_ag_Bps), 220e9, "M: as all-reduce (NVIDIA/nccl-tests issue #228: 220 GB/s)"},
     }},
    {"h100-sxm",
     "NVIDIA H100 80GB HBM3",
     {"h100", "h100-sxm5", "h100-sxm5-80gb"}, NULL,
     {
         {P(sm_count), 132, "M: glennklockwood.com/garden/processors/H100; " SRC_STAS},
         {P(clock_min_mhz), 345, SRC_SMI_H100},
         {P(clock_max_mhz), 1980, SRC_SMI_H100},
         {P(clock_step_mhz), 15, SRC_SMI_H100},
         {P(plan_min_mhz), 1020, SRC_HOPPER_RANGE},
         {P(plan_max_mhz), 1980, SRC_HOPPER_RANGE},
         {P(plan_step_mhz), 30, SRC_HOPPER_RANGE},
         {P(default_clock_mhz), 1980, "M: applications clock 1980 MHz (thamada/nvidia-smi:gls/H100SXMx8_smi.py)"},
         {P(tdp_w), 700, "M: H100 SXM 700 W (" SRC_STAS " power table)"},
         {P(idle_w), 90, "M: 75-101 W idle per GPU across one node (thamada/nvidia-smi:gls/H100SXMx8_smi.py)"},
         {P(static_w), 120, SRC_P2P_HOPPER},
         {P(mem_power_w), 80, SRC_MEMPOW_HOPPER},
         {P(dyn_coeff_w), C_HOPPER, SRC_C_HOPPER},
         {P(v_min), 0.675, "M: 0.670-0.685 V at the 345 MHz idle clock (thamada/nvidia-smi:gls/H100SXMx8_smi.py)"},
         {P(v_max), 0.85, "E: no loaded-voltage reading published"},
         {P(v_floor_mhz), 680, SRC_VFLOOR_HOPPER},
         {P(v_exp), 2, SRC_VEXP},
         {P(flops_per_sm_clk), 4096, "D: 989 TF dense BF16 = 132 SMs x 4096 FLOP/clk x 1.83 GHz (" SRC_STAS " clock note 12)"},
         {P(vec_flops_per_sm_clk), 256, SRC_VEC_HOPPER},
         {P(gemm_eff), 0.945, SRC_GEMMEFF_HOPPER},
         {P(attn_eff), 0.55, SRC_ATTN_HOPPER},
         {P(hbm_bw_Bps), 3350e9, "M: 3350 GB/s (" SRC_STAS " memory table)"},
         {P(mem_eff), 0.85, SRC_MEMEFF},
         {P(mem_knee_frac), 0.55, SRC_KNEE},
         {P(sm_activity_membound), 0.15, SRC_ACT_MEM},
         {P(launch_s), 4e-6, SRC_LAUNCH},
         {P(busbw_ar_Bps), 480e9, "M: 8xH100 NVLS all-reduce peak busbw ~480 GB/s (NVIDIA/nccl-tests issue #212)"},
         {P(busbw_ag_Bps), 370e9, "M: 8xH100 ring / non-all-reduce effective NVLink ~370 GB/s (NVIDIA/nccl-tests issue #212, sjeaugey)"},
         {P(coll_alpha_s), 30e-6, "D: alpha ~23-40 us for 1-16 MB from the 8xH20 busbw curve (kvcache-ai/Mooncake PR #3484, nccl-tests 2.19.7 output)"},
         {P(busbw_per_cta_Bps), 36e9, SRC_CTA_HOPPER},
         {P(l2_bytes_per_clk), 6258, SRC_L2_HOPPER},
         {P(nccl_ctas), 16, "M: 8xH100 with NVLS: 16 coll channels (public NCCL debug log of an Inspur NF5688M7)"},
         {P(comm_activity), 0.30, SRC_COMMACT},
         {P(p2p_bw_Bps), 360e9, SRC_NVLINK_HOPPER},
         {P(kappa_tensor), FIT_A100_KAPPA, SRC_KAPPA_HOPPER},
         {P(clock_switch_s), 0.015, SRC_SWITCH},
         {P(floor_const_w), H100_FLOOR_CONST, SRC_FLOOR_HOPPER},
         {P(gemm_tile_m), 256, SRC_TILE_HOPPER},
         {P(gemm_tile_n), 128, SRC_TILE_HOPPER},
         {P(gemm_k_half), 128, SRC_KHALF},
         {P(attn_bwd_eff), 0.55 * 63.0 / 73.0, SRC_ATTN_BWD_HOPPER},
         {P(host_op_s), HOST_OP_S, SRC_HOST_HOPPER},
         {P(sync_s), 20e-6, SRC_SYNC},
         {P(skew_cv), 0.02, SRC_SKEW},
         {P(tuned_cta_Bps), FIT_A100_TUNED_CTA * 1980.0 / 1410.0, SRC_TUNED_HOPPER},
         {P(tuned_cap_frac), FIT_A100_TUNED_CAP, SRC_TUNED_HOPPER},
         {P(comm_clock_exp), FIT_A100_COMM_EXP, SRC_TUNED_HOPPER},
         {P(nccl_hbm_factor), 5.25, SRC_NCCL_HBM},
         {P(attn_activity), FIT_A100_ATTN_ACT, SRC_ATTN_ACT_HOPPER},
         {P(comm_lat_slow), FIT_A100_LAT, SRC_LAT_HOPPER},
     }},
    {"h200",
     "NVIDIA H200",
     {"h200-sxm", "h200-sxm-141gb", NULL}, "h100-sxm",
     {
         {P(sm_count), 132, SRC_STAS " (H200 = H100 compute die)"},
         {P(clock_min_mhz), 345, SRC_SMI_H200},
         {P(clock_max_mhz), 1980, SRC_SMI_H200},
         {P(clock_step_mhz), 15, SRC_SMI_H200},
         {P(default_clock_mhz), 1980, "M: applications clock 1980 MHz (thamada/gls:gls/H200_smi.py)"},
         {P(tdp_w), 700, "M: H200 SXM 700 W (" SRC_STAS " power table)"},
         {P(idle_w), 74.6, "M: 74.6 W idle (thamada/gls:gls/H200_smi.py)"},
         {P(static_w), 105, SRC_P2P_HOPPER},
         {P(floor_const_w), H200_FLOOR_CONST, SRC_FLOOR_HOPPER},
         {P(dyn_coeff_w), C_H200, SRC_C_HOPPER},
         {P(v_min), 0.685, "M: 0.685 V at the 345 MHz idle clock (thamada/gls:gls/H200_smi.py)"},
         {P(v_max), 0.85, "E: as H100 (no loaded-voltage reading published)"},
         {P(flops_per_sm_clk), 4096, "D: 989 TF dense BF16 = 132 x 4096 x 1.83 GHz (" SRC_STAS ")"},
         {P(hbm_bw_Bps), 4800e9, "M: 4800 GB/s (" SRC_STAS " memory table)"},
         {P(busbw_ar_Bps), 475e9, "M: 8xH200 all-reduce peak 475 GB/s busbw, NCCL 2.20.3 (NVIDIA/nccl-tests issue #272)"},
         {P(busbw_ag_Bps), 370e9, "M: as H100 ring/AG/RS ~370 GB/s (NVIDIA/nccl-tests issue #212)"},
         {P(coll_alpha_s), 30e-6, "D: as H100 (8xH20 curve, kvcache-ai/Mooncake PR #3484)"},
         {P(nccl_ctas), 16, "M: as H100 with NVLS (16 coll channels)"},
         {P(p2p_bw_Bps), 360e9, "D: as H100; NV18 on 8xH200 (sgl-project/sglang issue #12601)"},
     }},
};

#undef P

int kr_catalog_gpu_count(void)
{
    return (int)KR_ARRAY_LEN(gpu_entries);
}

/* Applies entry e (after its base, if any) to out. */
static void apply_entry(const gpu_entry *e, kr_gpu *out)
{
    if (e->base) {
        for (size_t b = 0; b < KR_ARRAY_LEN(gpu_entries); b++)
            if (strcmp(gpu_entries[b].name, e->base) == 0 && &gpu_entries[b] != e)
                apply_entry(&gpu_entries[b], out);
    }
    for (int j = 0; j < KR_GPU_NPARAMS; j++) {
        const gpu_entry_value *v = &e->v[j];
        if (v->source == NULL)
            continue;
        kr_gpu_param_set(out, v->param, v->value);
        kr__strlcpy(out->source[v->param], v->source, KR_SOURCE_MAX);
    }
}

void kr_catalog_gpu_at(int i, kr_gpu *out)
{
    const gpu_entry *e = &gpu_entries[i];
    memset(out, 0, sizeof *out);
    apply_entry(e, out);
    kr__strlcpy(out->name, e->name, sizeof out->name);
    kr__strlcpy(out->display, e->display, sizeof out->display);
}

static int name_matches(const char *a, const char *b)
{
    return b != NULL && strcasecmp(a, b) == 0;
}

int kr_catalog_gpu_find(const char *name, kr_gpu *out, kr_error *err)
{
    for (int i = 0; i < kr_catalog_gpu_count(); i++) {
        const gpu_entry *e = &gpu_entries[i];
        int hit = name_matches(name, e->name) || name_matches(name, e->display);
        for (int a = 0; a < 3 && !hit; a++)
            hit = name_matches(name, e->aliases[a]);
        if (hit) {
            kr_catalog_gpu_at(i, out);
            return KR_OK;
        }
    }
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; i < kr_catalog_gpu_count(); i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", gpu_entries[i].name);
    return kr_error_set(err, KR_ENOTFOUND, "unknown GPU '%s' (known: %s)", name, list);
}

/* ---- models ------------------------------------------------------------------------- */

static const kr_model model_entries[] = {
    {"llama3.2-3b", "Llama 3.2 3B", 3072, 8192, 24, 8, 128, 28, 128256, 0, 0,
     "M: meta-llama/Llama-3.2-3B config.json; Kareus MODEL_REGISTRY and NeMo yaml "
     "(ml-energy/kareus:tests/bayesian/common/model_config.py). Untied as the artifact trains it."},
    {"qwen3-1.7b", "Qwen3 1.7B", 2048, 6144, 16, 8, 128, 28, 151936, 1, 1,
     "M: Qwen/Qwen3-1.7B config.json (tie_word_embeddings, q/k RMSNorm); Kareus MODEL_REGISTRY"},
    {"llama3.1-8b", "Llama 3.1 8B", 4096, 14336, 32, 8, 128, 32, 128256, 0, 0,
     "M: meta-llama/Llama-3.1-8B config.json"},
    {"llama3.1-70b", "Llama 3.1 70B", 8192, 28672, 64, 8, 128, 80, 128256, 0, 0,
     "M: meta-llama/Llama-3.1-70B config.json"},
};

int kr_catalog_model_count(void)
{
    return (int)KR_ARRAY_LEN(model_entries);
}

void kr_catalog_model_at(int i, kr_model *out)
{
    *out = model_entries[i];
}

/* Compares names ignoring case and the separators '-', '_', '.', ' '. */
static int loose_equal(const char *a, const char *b)
{
    for (;;) {
        while (*a == '-' || *a == '_' || *a == '.' || *a == ' ')
            a++;
        while (*b == '-' || *b == '_' || *b == '.' || *b == ' ')
            b++;
        if (*a == '\0' || *b == '\0')
            return *a == *b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++;
        b++;
    }
}

int kr_catalog_model_find(const char *name, kr_model *out, kr_error *err)
{
    for (int i = 0; i < kr_catalog_model_count(); i++) {
        if (loose_equal(name, model_entries[i].name) || loose_equal(name, model_entries[i].display)) {
            *out = model_entries[i];
            return KR_OK;
        }
    }
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; i < kr_catalog_model_count(); i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", model_entries[i].name);
    return kr_error_set(err, KR_ENOTFOUND, "unknown model '%s' (known: %s)", name, list);
}

/* ---- clocks ------------------------------------------------------------------------- */

int kr_gpu_supported_clocks(const kr_gpu *gpu, int *mhz, int cap, int *needed)
{
    int hi = (int)gpu->clock_max_mhz, lo = (int)gpu->clock_min_mhz, step = (int)gpu->clock_step_mhz;
    if (step <= 0 || hi < lo)
        return KR_EINVAL;
    int n = (hi - lo) / step + 1;
    if (needed)
        *needed = n;
    if (n > cap)
        return KR_ERANGE;
    for (int i = 0; i < n; i++)
        mhz[i] = hi - i * step;
    return n;
}

int kr_gpu_clock_supported(const kr_gpu *gpu, int mhz)
{
    int hi = (int)gpu->clock_max_mhz, lo = (int)gpu->clock_min_mhz, step = (int)gpu->clock_step_mhz;
    return step > 0 && mhz >= lo && mhz <= hi && (hi - mhz) % step == 0;
}

/* ---- JSON --------------------------------------------------------------------------- */

/* The range [*lo, *hi] of a GPU parameter used as an int (counts and clocks); *hi = 0 for the
 * others. */
static void int_range(int idx, int *lo, int *hi)
{
    *lo = *hi = 0;
    switch (idx) {
    case KR_GPU_P_sm_count: *lo = 1; *hi = 65536; break;
    case KR_GPU_P_nccl_ctas: *lo = 0; *hi = 65536; break;
    case KR_GPU_P_clock_min_mhz: case KR_GPU_P_clock_max_mhz: case KR_GPU_P_clock_step_mhz:
    case KR_GPU_P_plan_min_mhz: case KR_GPU_P_plan_max_mhz: case KR_GPU_P_plan_step_mhz:
    case KR_GPU_P_default_clock_mhz: case KR_GPU_P_v_floor_mhz: *lo = 0; *hi = 100000; break;
    default: break;
    }
}

/* One entry "key": {"value", "source"} of a GPU file's params into out; have[idx] = 1. */
static int read_param(kr__jctx *c, const char *key, const json_t *val, kr_gpu *out, int *have)
{
    int idx = -1;
    for (int i = 0; i < KR_GPU_NPARAMS; i++)
        if (strcmp(param_info[i].field, key) == 0)
            idx = i;
    if (idx < 0)
        return kr__jfailf(c, KR_EPARSE, key, "unknown GPU parameter (see `kareus catalog --gpu a100`)");
    size_t m2 = kr__jpush_key(c, key);
    static const char *const pf[] = {"value", "source", NULL};
    double v;
    char src[KR_SOURCE_MAX];
    int rc;
    if ((rc = kr__jobject(c, val, pf)) || (rc = kr__jnum(c, val, "value", 1, 0, 1e18, 0, &v)) ||
        (rc = kr__jstr(c, val, "source", 1, NULL, src, sizeof src)))
        return rc;
    /* Counts and clocks are used as ints: refuse fractions and values an int cannot hold. */
    int as_int, ilo, ihi;
    int_range(idx, &ilo, &ihi);
    if (ihi > 0 && kr__double_to_int(v, ilo, ihi, &as_int)) {
        char exp[96];
        snprintf(exp, sizeof exp, "a whole number in [%d, %d]", ilo, ihi);
        return kr__jfail(c, KR_ERANGE, "value", exp, json_object_get(val, "value"));
    }
    kr__jpop(c, m2);
    kr_gpu_param_set(out, idx, v);
    kr__strlcpy(out->source[idx], src, KR_SOURCE_MAX);
    have[idx] = 1;
    return KR_OK;
}

int kr_gpu_read_json(const char *path, kr_gpu *out, kr_error *err)
{
    json_t *root;
    kr__jctx c;
    int rc = kr__json_open(path, &root, &c, err);
    if (rc)
        return rc;
    static const char *const top[] = {"schema", "version", "name", "display", "base", "params", NULL};
    char schema[32], base[KR_NAME_MAX];
    long long version;
    memset(out, 0, sizeof *out);
    if ((rc = kr__jobject(&c, root, top)) || (rc = kr__jstr(&c, root, "schema", 0, "kareus.gpu", schema, sizeof schema)))
        goto done;
    if (strcmp(schema, "kareus.gpu") != 0) {
        rc = kr__jfail(&c, KR_EPARSE, "schema", "\"kareus.gpu\"", json_object_get(root, "schema"));
        goto done;
    }
    if ((rc = kr__jint(&c, root, "version", 0, 1, 1, 1, &version)) ||
        (rc = kr__jstr(&c, root, "base", 0, "", base, sizeof base)))
        goto done;
    int have[KR_GPU_NPARAMS] = {0};
    if (base[0]) {
        kr_error e2 = {0};
        if (kr_catalog_gpu_find(base, out, &e2) != KR_OK) {
            rc = kr__jfailf(&c, KR_ENOTFOUND, "base", "%s", e2.msg);
            goto done;
        }
        for (int i = 0; i < KR_GPU_NPARAMS; i++)
            have[i] = 1;
    }
    if ((rc = kr__jstr(&c, root, "name", 1, NULL, out->name, sizeof out->name)) ||
        (rc = kr__jstr(&c, root, "display", 0, out->display, out->display, sizeof out->display)))
        goto done;
    const json_t *params = json_object_get(root, "params");
    size_t m = kr__jpush_key(&c, "params");
    if (params == NULL) {
        kr__jpop(&c, m);
        rc = kr__jfailf(&c, KR_EPARSE, "params", "missing required field");
        goto done;
    }
    if (!json_is_object(params)) {
        rc = kr__jfail(&c, KR_EPARSE, NULL, "an object", params);
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(kr__jmut(params), key, val) {
        if ((rc = read_param(&c, key, val, out, have)))
            goto done;
    }
    for (int i = 0; i < KR_GPU_NPARAMS; i++)
        if (!have[i]) {
            rc = kr__jfailf(&c, KR_EPARSE, param_info[i].field, "missing GPU parameter (or give \"base\")");
            goto done;
        }
    kr__jpop(&c, m);
    if (out->sm_count < 1 || out->clock_step_mhz < 1 || out->clock_max_mhz < out->clock_min_mhz ||
        out->tdp_w <= out->static_w) {
        rc = kr_error_set(err, KR_ERANGE,
                          "%s: $.params: inconsistent GPU (need sm_count >= 1, clock_step_mhz >= 1, "
                          "clock_max_mhz >= clock_min_mhz, tdp_w > static_w)",
                          path);
        goto done;
    }
    rc = KR_OK;
done:
    json_decref(root);
    return rc;
}

json_t *kr_model_json(const kr_model *m)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", json_string(m->name));
    json_object_set_new(o, "display", json_string(m->display));
    json_object_set_new(o, "hidden", json_integer(m->hidden));
    json_object_set_new(o, "ffn", json_integer(m->ffn));
    json_object_set_new(o, "heads", json_integer(m->heads));
    json_object_set_new(o, "kv_groups", json_integer(m->kv_groups));
    json_object_set_new(o, "head_dim", json_integer(m->head_dim));
    json_object_set_new(o, "layers", json_integer(m->layers));
    json_object_set_new(o, "vocab", json_integer(m->vocab));
    json_object_set_new(o, "tied_embeddings", json_boolean(m->tied_embeddings));
    json_object_set_new(o, "qk_norm", json_boolean(m->qk_norm));
    json_object_set_new(o, "source", json_string(m->source));
    return o;
}

int kr_gpu_write_json(const char *path, const kr_gpu *gpu, kr_error *err)
{
    json_t *root = json_object();
    json_t *params = json_object();
    json_object_set_new(root, "schema", json_string("kareus.gpu"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "name", json_string(gpu->name));
    json_object_set_new(root, "display", json_string(gpu->display));
    for (int i = 0; i < KR_GPU_NPARAMS; i++) {
        json_t *p = json_object();
        kr__jset_real(p, "value", kr_gpu_param_value(gpu, i));
        json_object_set_new(p, "source", json_string(gpu->source[i]));
        json_object_set_new(params, param_info[i].field, p);
    }
    json_object_set_new(root, "params", params);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}
