/*
 * profiler.h — the hardware profiler: measures a partition's time and energy on a real GPU,
 * as a kr_backend, so the search and everything above it run on measured data unchanged.
 *
 * Three layers, so that everything but the kernels is plain C tested on the CPU:
 *   1. the kernel program (kr_profiler_program): a partition at a config turned into the list of
 *      kernels the GPU runs — GEMMs, flash-style attention, memory-bound kernels with their
 *      shapes, FLOPs and HBM bytes — and the collective carried, with its CTAs and the step
 *      before which it launches;
 *   2. the measurement protocol (kr_profiler_measure): lock the clock, settle, warm up,
 *      calibrate the iteration count to a window, time with CUDA events, energy from the
 *      counter aligned on its update edges, repeat, report mean and spread, cool down. It
 *      drives any kr_profiler_runner (the CUDA one, or a fake in tests) and any kr_backend for
 *      clocks and energy (NVML, or a fake);
 *   3. the CUDA runner, in libkareus_cuda.so (cuda/), loaded with dlopen so that libkareus and
 *      the CLI have no CUDA link dependency; without it (or without a driver, a GPU, NVML or
 *      permission) the calls below fail with a status that names what is missing.
 * docs/profiler.md describes the protocol, the attention kernel, the single-GPU proxy and how
 * to run all of it on a GPU machine.
 */
#ifndef KAREUS_PROFILER_H
#define KAREUS_PROFILER_H

#include <stdint.h>

#include "kareus/backend.h"
#include "kareus/catalog.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* ---- kernel program ------------------------------------------------------------------------ */

#define KR_PROFILER_MAX_STEPS 64
#define KR_PROFILER_MAX_BUFS 64
#define KR_PROFILER_MAX_RANKS 8
#define KR_PROFILER_MAX_REPEATS 16

/* Kernels the CUDA runner implements (cuda/). */
typedef enum kr_profiler_kernel {
    KR_PK_GEMM_FPROP = 0,   /* cuBLASLt bf16 Y[T,n] = X[T,k]·W[n,k]ᵀ, fp32 accumulate ("TN") */
    KR_PK_GEMM_DGRAD,       /* dX[T,k] = dY[T,n]·W[n,k] ("NN") */
    KR_PK_GEMM_WGRAD,       /* dW[n,k] += dY[T,n]ᵀ·X[T,k] into fp32 ("NT", beta = 1) */
    KR_PK_ATTN_FWD,         /* flash-style causal GQA attention forward (O, log-sum-exp) */
    KR_PK_ATTN_BWD_PRE,     /* D = rowsum(dO∘O); zeroes the fp32 dQ accumulator */
    KR_PK_ATTN_BWD,         /* flash-style backward: dK, dV; dQ accumulated in fp32 */
    KR_PK_ATTN_BWD_DQ,      /* dQ fp32 → bf16 */
    KR_PK_RMSNORM_FWD,
    KR_PK_RMSNORM_BWD,
    KR_PK_BDA_FWD,          /* bias-dropout-add (residual + dropout(x)), 1-byte mask */
    KR_PK_BDA_BWD,
    KR_PK_QKV_SPLIT,        /* fused QKV → head-major q, k, v */
    KR_PK_QKV_MERGE,        /* dq, dk, dv → fused dQKV */
    KR_PK_QKNORM_FWD,       /* per-head RMSNorm of q and k (Qwen3), in place */
    KR_PK_QKNORM_BWD,
    KR_PK_ROPE_FWD,         /* rotary embedding of q and k, in place */
    KR_PK_ROPE_BWD,
    KR_PK_SWIGLU_FWD,
    KR_PK_SWIGLU_BWD,
    KR_PK_EMBED_FWD,        /* vocabulary-parallel lookup */
    KR_PK_EMBED_BWD,        /* scatter-add into the fp32 gradient of the local shard */
    KR_PK_XENT_MAX,         /* cross-entropy pass 1: row max and target logit */
    KR_PK_XENT_SUM,         /* pass 2: Σ exp, loss */
    KR_PK_XENT_BWD,
    KR_PK_STREAM,           /* calibration: HBM copy */
    KR_PK_SPIN,             /* calibration: `ctas` CTAs busy-wait `ns` nanoseconds */
    KR_PK_COUNT
} kr_profiler_kernel;

/* Name of a kernel ("gemm_fprop", "attn_fwd", …). */
const char *kr_profiler_kernel_name(kr_profiler_kernel k);

/* How the collective is executed. */
typedef enum kr_profiler_comm {
    KR_PROFILER_COMM_AUTO = 0,      /* NCCL with two or more GPUs, else the link-capped proxy */
    KR_PROFILER_COMM_NCCL = 1,      /* real NCCL collective across ranks (one thread per GPU) */
    KR_PROFILER_COMM_PROXY = 2,     /* one GPU: SM-limited copy/reduce kernel moving the same
                                       bytes, paced so it is never faster than the GPU's
                                       published link bus bandwidth */
    KR_PROFILER_COMM_PROXY_UNPACED = 3, /* the same kernel, as fast as its SMs go */
    KR_PROFILER_COMM_NONE = 4       /* partition without a collective */
} kr_profiler_comm;

const char *kr_profiler_comm_name(kr_profiler_comm c); /* "auto", "nccl", "proxy", "proxy-unpaced", "none" */
int kr_profiler_comm_parse(const char *name, kr_profiler_comm *out);

/* A device buffer of the plan. */
typedef struct kr_profiler_buffer {
    char name[32];      /* e.g. "q", "linear_qkv.w", "coll" */
    long long elems;    /* Elements. */
    int elem_bytes;     /* 2 (bf16), 4 (fp32), 8 (int64 ids) or 1 (dropout mask). */
} kr_profiler_buffer;

/* One kernel launch (a GEMM is one cuBLASLt call). Unused buffer slots are -1. */
typedef struct kr_profiler_step {
    kr_profiler_kernel kernel;
    int op;             /* Index of the partition op it belongs to (-1: calibration). */
    long long m, n, k;  /* GEMM: the forward shape T×n×k; elementwise: rows m, columns n;
                           embedding / cross-entropy: k = the whole vocabulary (ids drawn from it). */
    long long b, s, S;  /* Attention/QKV/rotary: sequences, local query length, key length. */
    int nh, nkv, d, cp; /* Heads, KV heads, head dimension, context-parallel degree. */
    long long vstart;   /* Embedding / cross-entropy: first vocabulary id of the shard. */
    long long ns;       /* KR_PK_SPIN: busy time per launch. */
    int ctas;           /* KR_PK_SPIN: CTAs; 0 elsewhere (the kernel chooses). */
    int in[8];          /* Buffers read (meaning per kernel, see cuda/runner.c). */
    int out[3];         /* Buffers written. */
    double flops;       /* Useful floating-point operations (causal attention: unmasked). */
    double bytes;       /* HBM bytes the kernel reads and writes, from its own accesses. */
} kr_profiler_step;

/* Everything the runner needs to execute one partition at one config, and nothing else. */
typedef struct kr_profiler_program {
    char key[KR_KEY_MAX];       /* Partition key (or "calib:gemm" …). */
    int nops;                   /* Partition ops. */
    int op_step[KR_MAX_OPS + 1];/* First step of op i; op_step[nops] = nsteps. */
    int nsteps;
    kr_profiler_step steps[KR_PROFILER_MAX_STEPS];
    int nbufs;
    kr_profiler_buffer bufs[KR_PROFILER_MAX_BUFS];
    /* The collective (carried for the other nanobatch). */
    kr_coll_kind coll;          /* KR_COLL_NONE if none. */
    kr_profiler_comm comm;      /* NCCL, PROXY, PROXY_UNPACED or NONE (never AUTO). */
    int ranks;                  /* GPUs running the plan (NCCL ranks; 1 for the proxy). */
    int group_size;             /* The job's group size n (the proxy's step count uses it). */
    double coll_bytes;          /* nccl-tests size S (AR buffer, AG output, RS input). */
    int ctas;                   /* CTAs of the comm kernel (= the config's SMs). */
    int slot;                   /* Config slot (KR_SLOT_NONE: after all compute). */
    int launch_step;            /* The comm launches before this step (nsteps: after all). */
    int coll_send, coll_recv;   /* Buffers: NCCL send/recv (same for in-place AR); proxy src/dst. */
    long long proxy_chunk;      /* Proxy: elements per step. */
    int proxy_reduce_steps;     /* Proxy: steps that add (AR first half, RS). */
    int proxy_copy_steps;       /* Proxy: steps that copy (AR second half, AG). */
    double proxy_bus_bytes;     /* Proxy: bytes read from the stand-in for peers (= k·S). */
    double proxy_hbm_bytes;     /* Proxy: HBM bytes read + written. */
    double proxy_floor_s;       /* Proxy: pacing floor α + k·S / busbw (0 when unpaced). */
    double comm_bw_Bps;         /* Proxy: the bus bandwidth of the floor (0 when unpaced). */
    /* Workload parameters. */
    int freq_mhz;               /* Clock of the config (0 for "leave as is"). */
    uint64_t seed;              /* Buffer initialisation and dropout. */
    float dropout_p;            /* Hidden dropout probability. */
    float rope_log_base;        /* ln(rotary base). */
    float norm_eps;             /* RMSNorm epsilon. */
    double flops, bytes;        /* Totals over the compute steps. */
} kr_profiler_program;

/* Workload knobs of a plan (defaults from kr_profiler_program_params_default). */
typedef struct kr_profiler_program_params {
    kr_profiler_comm comm;  /* Requested execution of the collective (AUTO resolves). */
    int devices;            /* GPUs available to the runner (AUTO uses NCCL when >= 2). */
    uint64_t seed;          /* Default 1. */
    float dropout_p;        /* Default 0.0 (Llama/Qwen pre-training recipes use no hidden dropout;
                               the mask is still written, as Megatron's fused kernel does). */
    float rope_base;        /* Default 500000 (Llama 3). */
    float norm_eps;         /* Default 1e-5. */
} kr_profiler_program_params;

void kr_profiler_program_params_default(kr_profiler_program_params *pp);

/*
 * Builds the kernel program of partition p of job at config c. Every op of the partition becomes
 * its kernels (forward GEMM: fprop; backward GEMM: dgrad + wgrad; attention: the flash-style
 * kernels; memory-bound ops: their kernels with chained buffers); the collective becomes an
 * NCCL call or the proxy per pp->comm and pp->devices. c is validated against the job first.
 * Returns KR_OK; KR_ERANGE/KR_ENOTFOUND for a bad config (message from kr_config_validate),
 * KR_EUNSUPPORTED for shapes the kernels do not handle (head dimension other than 64 or 128,
 * query heads not a multiple of KV heads), KR_EINVAL for NCCL requested with one device.
 */
int kr_profiler_program_build(const kr_job *job, const kr_partition *p, const kr_config *c,
                           const kr_profiler_program_params *pp, kr_profiler_program *plan, kr_error *err);

/* Calibration plans (no partition): one GEMM m×n×k (fprop); an HBM copy of `bytes`; a
 * collective alone (kind, nccl-tests size `bytes`, `group` ranks, `ctas` CTAs; comm NCCL over
 * min(devices, group) GPUs, or the unpaced proxy); a KR_PK_SPIN of `ctas` CTAs for `ns` ns
 * repeated `launches` times per iteration. KR_EINVAL for sizes out of range. */
int kr_profiler_program_gemm(long long m, long long n, long long k, kr_profiler_program *plan, kr_error *err);
int kr_profiler_program_stream(double bytes, kr_profiler_program *plan, kr_error *err);
int kr_profiler_program_collective(kr_coll_kind kind, double bytes, int group, int ctas, kr_profiler_comm comm,
                                int devices, kr_profiler_program *plan, kr_error *err);
int kr_profiler_program_spin(int ctas, long long ns, int launches, kr_profiler_program *plan, kr_error *err);

/* Bytes of device memory the plan allocates. */
double kr_profiler_program_memory(const kr_profiler_program *plan);

/* Human-readable listing of the plan (one line per step), into buf (truncated to cap). */
void kr_profiler_program_format(const kr_profiler_program *plan, char *buf, size_t cap);

/* One-line label of how the collective runs, e.g. "nccl x2 ranks (group 8), 6 CTAs",
 * "proxy (link-capped 475 GB/s), 6 CTAs", "none". */
void kr_profiler_comm_label(const kr_profiler_program *plan, char *buf, size_t cap);

/* ---- runner: executes plans on devices -------------------------------------------------- */

/* Per-rank timing of one run. */
typedef struct kr_profiler_run {
    int nranks;
    double time_s[KR_PROFILER_MAX_RANKS]; /* CUDA-event time of the whole run on each rank. */
} kr_profiler_run;

/*
 * A runner: prepares a plan (allocates and initialises buffers, picks GEMM algorithms, sets up
 * communicators) and runs it `iters` times back to back, asynchronously, so the caller can
 * watch the energy counter meanwhile. Every entry returns KR_OK or a KR_E… code with a message.
 */
typedef struct kr_profiler_runner_ops {
    const char *name;
    int (*prepare)(void *impl, const kr_profiler_program *plan, kr_error *err);
    /* Enqueues iters executions of the prepared plan on every rank and returns at once. */
    int (*start)(void *impl, long long iters, kr_error *err);
    /* *done = 1 when every rank has finished the started run. */
    int (*poll)(void *impl, int *done, kr_error *err);
    /* Waits for the started run and returns its timing. */
    int (*finish)(void *impl, kr_profiler_run *out, kr_error *err);
    void (*destroy)(void *impl);
    /* Optional (NULL in fakes): runs every kernel on small shapes and compares it with the CPU
     * reference (see kr_profiler_selftest). */
    int (*selftest)(void *impl, char *report, size_t cap, kr_error *err);
    /* Optional: samples (globaltimer ns, SM cycle counter) on device[0] from a one-CTA kernel
     * for duration_s, calling request(ud) once, request_at_s after the kernel started; returns
     * the samples and the index of the first one taken after the request. */
    int (*clock_trace)(void *impl, double duration_s, double request_at_s, int (*request)(void *ud), void *ud,
                       double *t_ns, double *clk, int cap, int *n, int *req_index, kr_error *err);
} kr_profiler_runner_ops;

typedef struct kr_profiler_runner {
    const kr_profiler_runner_ops *ops;
    void *impl;
    int ndevices;                          /* Devices the runner may use. */
    int device[KR_PROFILER_MAX_RANKS];     /* Their indices (NVML index = CUDA index). */
    char device_name[64];                  /* Name of device[0] as the driver reports it. */
    int sm_count;                          /* SMs of device[0]. */
} kr_profiler_runner;

/* ---- measurement protocol -------------------------------------------------------------- */

/* Time source, injectable so the protocol runs on a virtual clock in tests. NULL members:
 * CLOCK_MONOTONIC and nanosleep. */
typedef struct kr_profiler_clock {
    double (*now_s)(void *ud);
    void (*sleep_s)(void *ud, double s);
    void *ud;
} kr_profiler_clock;

/* Protocol parameters; kr_profiler_config_default gives the documented defaults. */
typedef struct kr_profiler_config {
    double window_s;        /* Energy window between counter edges, >= 1 s (default 1). */
    int repeats;            /* Windows per measurement, 3..KR_PROFILER_MAX_REPEATS (default 3). */
    double warmup_s;        /* Warm-up at the new config (default 0.3 s) ... */
    int warmup_iters;       /* ... and at least this many executions (default 10). */
    double calib_min_s;     /* Calibration run at least this long (default 0.1 s). */
    long long min_iters;    /* Iterations per window, at least (default 10) ... */
    long long max_iters;    /* ... and at most (default 100000000). */
    double settle_s;        /* After a clock change, wait until the clock reads back (at most
                               this long, default 1 s) ... */
    double settle_min_s;    /* ... and at least this long (default 0.1 s). */
    double cooldown_ratio;  /* Idle after a measurement: ratio × its busy time (default 0.5) ... */
    double cooldown_min_s;  /* ... clamped to [min, max] (default 0.5 s, 5 s). */
    double cooldown_max_s;
    double energy_period_s; /* Longest expected counter update period (default 0.1 s). */
    double poll_s;          /* Energy-counter polling interval (default 0.002 s). */
    double edge_timeout_s;  /* Give up when the counter does not change for this long (2 s). */
    int lock_clock;         /* 1: lock the config's clock through the control backend (default). */
} kr_profiler_config;

void kr_profiler_config_default(kr_profiler_config *o);
/* KR_EINVAL with the field, the allowed range and the value when an option is out of range. */
int kr_profiler_options_validate(const kr_profiler_config *o, kr_error *err);

/* Iterations that fill a window: ceil(window_s / iter_time_s) clamped to [min_iters, max_iters].
 * KR_EINVAL for a non-positive or non-finite iter_time_s or window_s. */
int kr_profiler_iters_for_window(double iter_time_s, double window_s, long long min_iters, long long max_iters,
                                 long long *iters, kr_error *err);

/* Mean and sample standard deviation (n − 1; 0 for n = 1) of x[0..n). KR_EINVAL for n < 1. */
int kr_profiler_stats(const double *x, int n, double *mean, double *sd);

/* Cooldown after a measurement that kept the GPU busy for busy_s seconds. */
double kr_profiler_cooldown_s(const kr_profiler_config *o, double busy_s);

/* Everything a measurement saw (kr_profiler_measure fills it). */
typedef struct kr_profiler_result {
    kr_measurement m;               /* Means, spreads, repeats; eff_energy_j from static_w. */
    int freq_mhz;                   /* Clock locked (0 if left alone). */
    int clock_read_mhz;             /* Clock read back after the measurement (0 if unknown). */
    long long iters;                /* Executions per window. */
    double calib_iter_s;            /* Iteration time from the calibration run. */
    double window_s;                /* Mean energy window (between counter edges). */
    double settle_s;                /* Time spent settling after a clock change. */
    double cooldown_s;              /* Cooldown slept after the measurement. */
    double busy_s;                  /* Wall time of the measurement without the cooldown. */
    int retries;                    /* Windows redone (run ended before the closing edge). */
    int nranks;                     /* GPUs measured. */
    double time_s[KR_PROFILER_MAX_REPEATS];   /* Per-repeat time of one execution. */
    double energy_j[KR_PROFILER_MAX_REPEATS]; /* Per-repeat energy of one execution, per GPU. */
    char comm[64];                  /* kr_profiler_comm_label of the plan. */
} kr_profiler_result;

/*
 * Measures a prepared plan (runner->ops->prepare already called with plan) at plan->freq_mhz:
 *   1. lock the clock through ctl on every device of the runner unless it is already locked
 *      there (*locked_mhz tracks it across calls; 0 = unknown) and settle;
 *   2. warm up; calibrate the iteration time; size the window;
 *   3. per repeat: start a run long enough to span the window plus margins; wait for an update
 *      edge of each device's energy counter, then for the first edge at least window_s later,
 *      while the run is still going (else redo with more iterations); the mean power between
 *      the two edges times the CUDA-event iteration time is the energy of one execution — no
 *      quantisation error from the counter's ~100 ms update;
 *   4. mean and sample spread over repeats; energy is per GPU (mean over ranks), time the max
 *      over ranks; eff_energy_j = energy_j − static_power_w·time_s;
 *   5. cool down.
 * Returns KR_OK, or the runner's / ctl's error (KR_EPERM when the clock may not be locked,
 * KR_EUNSUPPORTED when ctl has no energy counter, KR_ETIMEDOUT when the counter never moves).
 */
int kr_profiler_measure(kr_profiler_runner *runner, kr_backend *ctl, const kr_profiler_config *o,
                        const kr_profiler_clock *clk, const kr_profiler_program *plan, double static_power_w,
                        int *locked_mhz, kr_profiler_result *out, kr_error *err);

/* ---- the CUDA library ------------------------------------------------------------------- */

/* What kr_profiler_probe found. */
typedef struct kr_profiler_probe_info {
    char lib_path[512];         /* libkareus_cuda.so loaded ("" if none). */
    char build[160];            /* Versions it was built with (CUDA, cuBLASLt, NCCL). */
    int driver_version;         /* CUDA driver API version (e.g. 13000), 0 if none. */
    int ndevices;               /* CUDA devices. */
    char name[KR_PROFILER_MAX_RANKS][64];
    int sm_count[KR_PROFILER_MAX_RANKS];
    int cc_major[KR_PROFILER_MAX_RANKS], cc_minor[KR_PROFILER_MAX_RANKS];
    double mem_bytes[KR_PROFILER_MAX_RANKS];
} kr_profiler_probe_info;

/*
 * Loads libkareus_cuda.so and asks the CUDA driver what is there. The library is looked for
 * at $KAREUS_CUDA_LIB, beside the running executable or libkareus, in ../lib from the
 * executable, then by the dynamic loader's search path. Returns KR_OK with at least one
 * usable GPU; KR_ENOLIB "no libkareus_cuda …" (with every place tried) or "no CUDA driver …";
 * KR_ENODEV "no GPU …". info may be NULL.
 */
int kr_profiler_probe(kr_profiler_probe_info *info, kr_error *err);

/* Opens the CUDA runner on `devices` GPUs starting at CUDA device `first` (devices <= 0: all
 * from first on, at most KR_PROFILER_MAX_RANKS). Errors as kr_profiler_probe, plus KR_EINVAL
 * when CUDA_VISIBLE_DEVICES reorders devices (NVML would then index different GPUs). Free
 * with kr_profiler_runner_destroy. */
int kr_profiler_runner_open(int first, int devices, kr_profiler_runner **out, kr_error *err);
void kr_profiler_runner_destroy(kr_profiler_runner *r);

/* Runs every kernel on small shapes on device[0] and compares it with the CPU reference
 * (refkern.h). report receives one line per kernel (max error, tolerance, PASS/FAIL).
 * Returns KR_OK if all pass, KR_EMISMATCH otherwise. */
int kr_profiler_selftest(kr_profiler_runner *r, char *report, size_t cap, kr_error *err);

/* ---- the GPU backend --------------------------------------------------------------------- */

/* Called after every measurement the GPU backend takes (e.g. to log it). */
typedef void (*kr_profiler_observer)(void *ud, const kr_partition *p, const kr_config *c,
                                     const kr_profiler_result *r);

/*
 * A kr_backend whose measure runs the partition on the GPU: builds the plan (pp), prepares it
 * on the runner, measures it with the protocol (o, clk) and returns the means and spreads.
 * Clock and energy entries forward to ctl (the NVML backend of gpuctl.h). On success takes
 * ownership of runner (destroyed with the backend; on failure the caller still owns it); ctl
 * stays the caller's and must outlive the backend.
 * The backend resets the clocks it locked when destroyed. observer may be NULL.
 */
int kr_profiler_backend_create(const kr_job *job, kr_profiler_runner *runner, kr_backend *ctl,
                               const kr_profiler_config *o, const kr_profiler_program_params *pp,
                               const kr_profiler_clock *clk, kr_profiler_observer observer, void *observer_ud,
                               kr_backend **out, kr_error *err);

/*
 * Opens what a measurement needs: the CUDA runner on `devices` GPUs from `first` (devices <= 0:
 * all from first on) and the clock/energy backend named by control (a gpuctl spec, NULL:
 * "nvml"). Tries both, so that one message names everything missing:
 *   "cannot measure on this machine: no CUDA driver: …; no NVML: … (measuring needs …)".
 * Returns KR_OK, or the first failure's code (KR_ENOLIB, KR_ENODEV, KR_EPERM, KR_EINVAL, …);
 * nothing is left open on failure. Free with kr_profiler_runner_destroy / kr_backend_destroy.
 */
int kr_profiler_open_hardware(int first, int devices, const char *control, kr_profiler_runner **runner,
                              kr_backend **ctl, kr_error *err);

/* Everything kr_profiler_open_backend needs; zeroed fields take the defaults. */
typedef struct kr_profiler_open_config {
    int device;                     /* First CUDA device (default 0). */
    int devices;                    /* GPUs (0: all from device on). */
    const char *control;            /* gpuctl spec of the clock/energy backend (NULL: "nvml"). */
    kr_profiler_comm comm;          /* Collective execution (default AUTO). */
    const kr_profiler_config *protocol; /* NULL: kr_profiler_config_default. */
    const char *details;            /* Detail log appended after every measurement (NULL: none). */
    kr_profiler_observer observer;  /* Called after every measurement (may be NULL). */
    void *observer_ud;
} kr_profiler_open_config;

/*
 * The GPU backend in one call: kr_profiler_open_hardware, then kr_profiler_backend_create with
 * the detail log and observer; the backend owns the runner and the control backend (destroying
 * it resets the clocks it locked and closes both). This is what `kareus search --backend gpu`
 * and `kareus profile` use. oo may be NULL. Errors as kr_profiler_open_hardware.
 */
int kr_profiler_open_backend(const kr_job *job, const kr_profiler_open_config *oo, kr_backend **out, kr_error *err);

/* Name of the GPU the backend measures on ("" if b is not a GPU backend). */
const char *kr_profiler_backend_device(const kr_backend *b);

/* The result behind the backend's last successful measure (KR_ESTATE if none). */
int kr_profiler_backend_last(kr_backend *b, kr_profiler_result *out);

/*
 * Appends one measurement with everything the protocol saw (config, means, spreads, per-repeat
 * samples, iterations, window, settle, cooldown, clock read back, how the collective ran, the
 * device, the job's fingerprint) as one JSON line to path: opened O_APPEND, written in one
 * call, fsync'd. The search's measurement log (search.h) keeps the means; this file keeps the
 * detail behind them. Returns KR_OK or KR_EIO naming the path.
 */
int kr_profiler_details_append(const char *path, const kr_job *job, const kr_partition *p, const kr_config *c,
                               const kr_profiler_result *r, const char *device, kr_error *err);

/* ---- calibration (kareus profile --calibrate) -------------------------------------------- */

/* One point of a sweep against the clock: what was measured at freq_mhz. */
typedef struct kr_profiler_point {
    int freq_mhz;
    double x;        /* Throughput (FLOP/s or B/s) — or CTAs for the proxy sweep. */
    double power_w;  /* Mean power over the windows. */
    double y;        /* Second quantity where needed (proxy: B/s). */
} kr_profiler_point;

/*
 * Fits the dynamic-power model of the simulator, P(f) = P0 + c·f·V(f)², V(f) = v_min up to
 * v_floor_mhz then linear to v_max at clock_max_mhz (the catalog's form), to GEMM power
 * points: P0 and c by least squares for each v_max on a grid, keeping the best. base supplies
 * v_min, v_floor_mhz and clock_max_mhz. Needs >= 3 distinct clocks (KR_EINVAL otherwise).
 */
int kr_profiler_fit_power(const kr_profiler_point *pts, int n, const kr_gpu *base, double *p0_w, double *c_w,
                          double *v_max, double *rms_w, kr_error *err);

/*
 * Clock-switch latency from a sampled run: t_ns[i] (globaltimer) and clk[i] (SM cycle
 * counter) of n samples, the index of the first sample after the switch request, and the
 * target clock. Latency = time from the request to the first sample from which the measured
 * clock stays within tol (relative) of the target. KR_ENOTFOUND if it never settles.
 */
int kr_profiler_switch_latency(const double *t_ns, const double *clk, int n, int req_index, int target_mhz,
                               double tol, double *latency_s, kr_error *err);

/* Clock of an interval of samples: Δclk / Δt in MHz. */
double kr_profiler_sample_mhz(const double *t_ns, const double *clk, int i, int j);

#define KR_PROFILER_CALIB_POINTS 16

/* What the calibration measures and how long it may take. */
typedef struct kr_profiler_calib_config {
    int gemm_clocks;        /* Clocks of the GEMM sweep, spread over the base GPU's planning range
                               (default 5; at least 3 for the power fit). */
    long long gemm_size;    /* m = n = k of the GEMM (default 8192, as the published MAMF runs). */
    int stream_clocks;      /* Clocks of the HBM sweep (default 3). */
    double stream_bytes;    /* Bytes one copy reads + writes (default 2 GiB). */
    double coll_bytes;      /* nccl-tests size of the collective sweep (default 256 MB). */
    int coll_ctas[8];       /* CTA counts of the collective sweep (default 1, 2, 4, 8, 16, 32). */
    int ncoll_ctas;
    int switch_trace;       /* 1: measure the clock-switch latency (default 1; needs the runner's
                               clock_trace). */
    void (*progress)(void *ud, const char *what); /* Called before each measurement (may be NULL). */
    void *progress_ud;
} kr_profiler_calib_config;

void kr_profiler_calib_config_default(kr_profiler_calib_config *co);

/* Everything the calibration saw, and the GPU entry made from it. */
typedef struct kr_profiler_calib {
    kr_gpu gpu;                        /* base with every measured parameter replaced; sources say
                                          "measured by kareus profile --calibrate on <GPU> <date>" */
    int measured[KR_GPU_NPARAMS];      /* 1 for the parameters replaced */
    char device[64];                   /* device name */
    char date[16];                     /* YYYY-MM-DD (UTC) */
    double idle_w;                     /* idle power, clocks unlocked */
    double blocked_w;                  /* one CTA spinning (a rank blocked on a collective), clocks
                                          unlocked */
    double launch_s;                   /* per-kernel time of back-to-back empty kernels */
    int ngemm;
    kr_profiler_point gemm[KR_PROFILER_CALIB_POINTS];   /* x FLOP/s, power_w, y clock read (MHz) */
    double fit_p0_w, fit_c_w, fit_v_max, fit_rms_w;     /* kr_profiler_fit_power on the GEMM points */
    int nstream;
    kr_profiler_point stream[KR_PROFILER_CALIB_POINTS]; /* x B/s, power_w, y clock read */
    int ncoll;
    kr_profiler_point coll[KR_PROFILER_CALIB_POINTS];   /* x CTAs, power_w, y bus B/s */
    char coll_label[64];               /* how the collective ran (nccl xN / PROXY) */
    double switch_down_s, switch_up_s; /* clock-switch latency, high→low and low→high (0: not
                                          measured) */
    double set_clock_call_s;           /* duration of the lock call itself */
} kr_profiler_calib;

/*
 * Measures the GPU's own constants on runner's device 0 (and its peers for NCCL) with the
 * measurement protocol (o, clk): idle and blocked power; launch overhead; bf16 GEMM throughput
 * and power against the clock (→ gemm_eff, dyn_coeff_w, v_max, v_floor unchanged); HBM copy
 * bandwidth against the clock (→ mem_eff, mem_knee_frac); the collective's bus bandwidth against
 * its CTAs (NCCL with 8 GPUs → busbw_ar_Bps, busbw_per_cta_Bps; otherwise reported only, the
 * single-GPU proxy's bandwidth is not a link's); the clock-switch latency (→ clock_switch_s).
 * base supplies every parameter not measured. Clocks are reset at the end. Returns KR_OK or the
 * first failure (clocks reset as well).
 */
int kr_profiler_calibrate(kr_profiler_runner *runner, kr_backend *ctl, const kr_gpu *base,
                          const kr_profiler_calib_config *co, const kr_profiler_config *o,
                          const kr_profiler_clock *clk, kr_profiler_calib *out, kr_error *err);

/* Builds out->gpu from base and the measurements in out (called by kr_profiler_calibrate; public
 * so the fits can be checked on synthetic data). */
int kr_profiler_calib_entry(const kr_gpu *base, kr_profiler_calib *c, kr_error *err);

/* Writes every raw point of c as JSON (atomically). */
int kr_profiler_calib_write_raw(const char *path, const kr_profiler_calib *c, kr_error *err);


/* ---- comm sweep (kareus profile --comm-sweep) -------------------------------------------- */

/*
 * The comm kernel alone, over SM clocks x CTA counts x kernels, for the collectives of a job's
 * partitions: a JSONL log (docs/formats.md) that `kareus calibrate` fits the comm clock law to.
 * Kernels: "tuned" and "nccl" on the simulator (kr_sim_collective_kernel); "nccl" on two or
 * more GPUs; "proxy" on one GPU (the unpaced single-GPU proxy: the same CTA structure moving the
 * same bytes through HBM, the only SM-issued copy one GPU can time; docs/profiler.md says what it
 * pins). The CUDA runner has no tuned all-reduce kernel, so a GPU sweep never has "tuned".
 */
typedef enum kr_profiler_sweep_kernel {
    KR_SWEEP_TUNED = 0,
    KR_SWEEP_NCCL = 1,
    KR_SWEEP_PROXY = 2
} kr_profiler_sweep_kernel;

const char *kr_profiler_sweep_kernel_name(kr_profiler_sweep_kernel k); /* "tuned", "nccl", "proxy" */
int kr_profiler_sweep_kernel_parse(const char *name, kr_profiler_sweep_kernel *out);

/* One point of the sweep: what identifies it, then what was measured (time_s > 0 once it is). */
typedef struct kr_profiler_sweep_point {
    kr_profiler_sweep_kernel kernel;
    kr_coll_kind coll;      /* All-reduce, all-gather or reduce-scatter. */
    double bytes;           /* nccl-tests size S. */
    int group;              /* Ranks of the job's collective (its bus bytes: k(group)·S). */
    int ctas;               /* CTAs of the comm kernel. */
    int freq_mhz;           /* Clock requested. */
    int ranks;              /* GPUs it runs on (simulator: group; proxy: 1; NCCL: min(GPUs, group)),
                               set by the plan: part of the point's identity. */
    int clock_mhz;          /* Clock it ran at (read back, or the simulator's after throttling). */
    double time_s, time_sd_s; /* One execution (alpha included), mean and spread over repeats. */
    double busbw_Bps;       /* k·S / time_s. */
    double power_w;         /* Mean board power per GPU while it ran. */
    int repeats;            /* Repeats behind the mean (1 on the simulator). */
} kr_profiler_sweep_point;

/* Bus bytes of the point's collective: k·S, k = 2(n−1)/n for an all-reduce, (n−1)/n otherwise. */
double kr_profiler_sweep_bus_bytes(const kr_profiler_sweep_point *p);

/* What to sweep; kr_profiler_sweep_config_default: no kernels, clocks or CTAs (filled by the
 * caller, e.g. the CLI's defaults). */
typedef struct kr_profiler_sweep_config {
    int nkernels;
    kr_profiler_sweep_kernel kernels[3];
    int nclocks;
    int clocks_mhz[32];
    int nctas;
    int ctas[32];
    int ranks;              /* GPUs the NCCL kernel runs on (GPU backend; 1 on the simulator). */
} kr_profiler_sweep_config;

/*
 * The points of the sweep, in measurement order (collective, kernel, clock, CTAs; a GPU settles
 * once per clock): every distinct collective (kind, size, group) of the job's Kareus partitions. *out is
 * malloc'd (free()). KR_EINVAL for an empty grid or a job without collectives, KR_ERANGE for
 * CTAs outside 1..sm_count-1 or clocks outside the GPU's range.
 */
int kr_profiler_sweep_plan(const kr_job *job, const kr_profiler_sweep_config *cfg, kr_profiler_sweep_point **out,
                           int *n, kr_error *err);

/* Measures p on the simulator with gpu (the job's or a calibrated entry) and cluster: fills the
 * measured fields. Kernels tuned and nccl; KR_EINVAL for proxy. */
int kr_profiler_sweep_measure_sim(const kr_gpu *gpu, const kr_cluster *cluster, kr_profiler_sweep_point *p,
                                  kr_error *err);

/* Measures p on the runner's GPUs with the protocol (o, clk; ctl locks clocks, *locked_mhz as
 * kr_profiler_measure): NCCL over min(runner GPUs, group) ranks, or the unpaced proxy on one. */
int kr_profiler_sweep_measure_gpu(kr_profiler_runner *runner, kr_backend *ctl, const kr_profiler_config *o,
                                  const kr_profiler_clock *clk, kr_profiler_sweep_point *p, int *locked_mhz,
                                  kr_error *err);

/*
 * The sweep log: header {"schema":"kareus.commsweep","version":1,"job":FINGERPRINT,
 * "job_name","gpu","clock_max_mhz","backend"} then one point per line, appended with one write,
 * flushed (and fsync'd: sync = 1) per line. Opening an existing file refuses one whose first line
 * is not such a header, of this job and backend, and leaves it byte-identical; a torn last line
 * (no newline) is dropped from the file with a warning. As the measurement log (search.h).
 */
typedef struct kr_profiler_sweep_log kr_profiler_sweep_log;

int kr_profiler_sweep_log_open(const char *path, const kr_job *job, const char *backend, int sync,
                               kr_profiler_sweep_log **out, kr_error *err);
/* 1 if a point with p's identity (kernel, collective, size, group, ranks, CTAs, clock) is in the
 * log. */
int kr_profiler_sweep_log_has(const kr_profiler_sweep_log *log, const kr_profiler_sweep_point *p);
int kr_profiler_sweep_log_append(kr_profiler_sweep_log *log, const kr_profiler_sweep_point *p, kr_error *err);
long kr_profiler_sweep_log_count(const kr_profiler_sweep_log *log);
const char *kr_profiler_sweep_log_warning(const kr_profiler_sweep_log *log); /* "" if none */
void kr_profiler_sweep_log_close(kr_profiler_sweep_log *log);

/* A sweep log read back (kr_profiler_sweep_read; free with kr_profiler_sweep_data_free). */
typedef struct kr_profiler_sweep_data {
    char job[17], job_name[128], gpu[KR_NAME_MAX], backend[16];
    double clock_max_mhz;
    int n;
    kr_profiler_sweep_point *p;   /* Duplicates dropped (first kept). */
    char warning[512];            /* Torn last line, duplicates ("" if none). */
} kr_profiler_sweep_data;

/* 1 if path's first line is a comm-sweep header (what `kareus calibrate` detects), else 0. */
int kr_profiler_sweep_is_log(const char *path);
/* Reads a sweep log without changing it (a torn last line is skipped with a warning). KR_EPARSE
 * with FILE:LINE for anything else malformed. */
int kr_profiler_sweep_read(const char *path, kr_profiler_sweep_data *out, kr_error *err);
void kr_profiler_sweep_data_free(kr_profiler_sweep_data *d);

/* One group of the fit: the points of one kernel on one collective over the same ranks. */
typedef struct kr_profiler_sweep_group {
    kr_profiler_sweep_kernel kernel;
    kr_coll_kind coll;
    double bytes;
    int group, ranks, points;
    double cta_Bps;         /* Per-CTA bus bandwidth at the top clock. */
    double sat_Bps;         /* Saturation (the cap the CTAs approach). */
    double alpha_s;         /* Latency phase. */
} kr_profiler_sweep_group;

/* The fit of the clock law to a sweep. */
typedef struct kr_profiler_sweep_fit {
    double clock_exp;               /* Fitted exponent of (f/f_max). */
    double clock_exp_lo, clock_exp_hi; /* Range where the residual sum of squares stays within
                                       an F-test's 95 % bound of its minimum (profile over the
                                       exponent, grid step 0.01 in [0.05, 2.5]). */
    double rms_log;                 /* RMS of log(time) residuals at the fit. */
    int npoints, ngroups;
    kr_profiler_sweep_group groups[24];
} kr_profiler_sweep_fit;

/*
 * Fits the comm clock law to the points: per group (kernel, collective) time = alpha + k·S /
 * B(s, f) with B the simulator's law for that kernel (tuned and proxy: B_sat·(1 − exp(−s·c·x^e /
 * B_sat)); nccl: min(B_sat, s·c·x^e)), x = clock/clock_max_mhz, one exponent e shared by all
 * groups; least squares on log time (MINPACK lmdif per group for c, B_sat, alpha; the exponent by
 * a profile and golden-section search). Groups of fewer than 4 points are left out (3 parameters
 * fit any exponent). KR_EINVAL when the points cannot pin it (fewer than two clocks, fewer than
 * 4 points, or no group of 4).
 */
int kr_profiler_sweep_fit_law(const kr_profiler_sweep_point *p, int n, double clock_max_mhz,
                              kr_profiler_sweep_fit *out, kr_error *err);

KR_END_DECLS
#endif
