/*
 * sim.h — the calibrated GPU simulator: the default, embedded backend.
 *
 * Given a job and one partition configuration (SM clock, SMs of the comm kernel, launch slot),
 * the simulator returns what one GPU would show: the partition's wall time, its energy and its
 * effective energy (energy − static power × time). It is physical (roofline time per op over
 * the SMs left to compute, a voltage–frequency power model with the clock throttled to stay
 * under TDP, a collective whose bandwidth depends on its SMs and the clock, SM sharing and HBM
 * contention while the two streams overlap), calibrated from published figures only (every
 * constant lives in the GPU catalog with its source; see docs/calibration.md and docs/sim.md),
 * deterministic, allocation-free and fast (a few microseconds per configuration).
 *
 * Three layers:
 *   raw helpers      kr_sim_gemm, kr_sim_collective, kr_sim_p2p_time, kr_sim_*_power_w: the
 *                    building blocks, for the docs, the calibration check and the pipeline
 *                    simulator;
 *   partitions       kr_sim_measure (fast path for exhaustive searches), kr_sim_partition (with
 *                    stream details), kr_sim_partition_timeline (events and power trace);
 *   backend          kr_sim_backend_create: both interfaces of backend.h, measuring plus a simulated
 *                    device (clocks, energy counter, clock log) the runtime can drive.
 */
#ifndef KAREUS_SIM_H
#define KAREUS_SIM_H

#include <jansson.h>

#include "kareus/backend.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* ---- raw helpers ------------------------------------------------------------------------ */

/* One kernel (a GEMM, an HBM-streaming kernel) running alone on the GPU. */
typedef struct kr_sim_kernel_result {
    double time_s;      /* Kernel time (launch overhead included). */
    double tflops;      /* Achieved throughput, FLOPs / time_s / 1e12 (GEMM: 2mnk). */
    double power_w;     /* Board power while it runs. */
    double f_eff_mhz;   /* SM clock it runs at (the requested clock, or lower when at TDP). */
    int throttled;      /* 1 if the power limit lowered the clock. */
} kr_sim_kernel_result;

/*
 * Simulates one bf16 GEMM of 2·m·n·k FLOPs (HBM bytes 2(mk + kn + mn)) on `sms` SMs (0 = all)
 * at the requested SM clock freq_mhz (any value in (0, clock_max_mhz]; not restricted to the
 * supported list, for sweeps). Returns KR_OK or KR_EINVAL (non-positive sizes, clock out of
 * (0, clock_max_mhz], sms out of [0, sm_count]); err may be NULL.
 */
int kr_sim_gemm(const kr_gpu *gpu, double m, double n, double k, double freq_mhz, int sms,
                kr_sim_kernel_result *out, kr_error *err);

/*
 * Simulates an HBM-streaming (memory-bound, elementwise) kernel that reads and writes `bytes`
 * in total, on all SMs, at the requested SM clock (0, clock_max_mhz]. Returns KR_OK or
 * KR_EINVAL (bytes <= 0, clock out of range).
 */
int kr_sim_stream(const kr_gpu *gpu, double bytes, double freq_mhz, kr_sim_kernel_result *out, kr_error *err);

/* The two comm kernels: NCCL as the baselines run it, the tuned kernel Kareus launches. */
typedef enum kr_sim_comm_kernel {
    KR_SIM_NCCL = 0,  /* ring, FIFO staging through HBM, nccl_ctas channels of 512 threads */
    KR_SIM_TUNED = 1  /* read-based (MSCCL++-style), one 1024-thread CTA per SM, CTA count searched */
} kr_sim_comm_kernel;

/* One collective running alone (nccl-tests style). */
typedef struct kr_sim_coll_result {
    double time_s;      /* α + k·bytes / busbw. */
    double busbw_Bps;   /* nccl-tests bus bandwidth: k·bytes / time_s. */
    double algbw_Bps;   /* bytes / time_s. */
    double power_w;     /* Board power while it runs (after its latency phase). */
    double f_eff_mhz;   /* SM clock it runs at. */
    double hbm_Bps;     /* HBM traffic of the kernel while it moves data. */
    int sms;            /* SMs it holds. */
} kr_sim_coll_result;

/*
 * Simulates collective c (kind, group_size, inter_node, bytes = the nccl-tests size S) on a GPU
 * of type gpu with `sms` CTAs (one per SM) at SM clock freq_mhz. cluster gives the inter-node
 * link for groups with c->inter_node set (NULL: such groups are an error). A group of one rank
 * or kind NONE takes no time. Returns KR_OK or KR_EINVAL with a message.
 */
int kr_sim_collective(const kr_gpu *gpu, const kr_cluster *cluster, const kr_collective *c, int sms,
                      double freq_mhz, kr_sim_coll_result *out, kr_error *err);

/* kr_sim_collective with the kernel chosen: KR_SIM_NCCL (what kr_sim_collective runs) or
 * KR_SIM_TUNED. Same checks and codes. */
int kr_sim_collective_kernel(const kr_gpu *gpu, const kr_cluster *cluster, const kr_collective *c,
                             kr_sim_comm_kernel kernel, int sms, double freq_mhz, kr_sim_coll_result *out,
                             kr_error *err);

/*
 * Time of a pipeline point-to-point transfer of `bytes` from stage `stage` to stage + 1 (or the
 * gradient back): NVLink within a node, the job's inter-node link (cluster bandwidth and
 * latency) when the two stages sit on different nodes. Returns KR_OK, KR_ERANGE (stage not in
 * [0, pp − 2]) or KR_EINVAL (negative bytes).
 */
int kr_sim_p2p_time(const kr_job *job, int stage, double bytes, double *time_s, kr_error *err);

/* Floor power of a GPU holding a kernel but doing no work (blocked on communication, waiting in
 * a pipeline bubble) with its SM clock at freq_mhz: floor_const_w plus a part ∝ f·V(f)² that
 * equals static_w at clock_max_mhz. */
double kr_sim_floor_power_w(const kr_gpu *gpu, double freq_mhz);
/* The dynamic power coefficient c for which the reference 8192³ BF16 GEMM, requested at the
 * top clock, draws exactly TDP while delivering `tflops` (the published anchor): how the
 * catalog's dyn_coeff_w is derived. NaN if no positive c exists. */
double kr_sim_derive_dyn_coeff(const kr_gpu *gpu, double tflops);
/* Sets gpu->floor_const_w so that the floor is idle_w at clock_min_mhz and static_w at
 * clock_max_mhz (both measured), with V(f) as the entry gives it: how the catalog derives it. */
void kr_sim_derive_floor(kr_gpu *gpu);
/* The floor at the top clock (= static_w, the measured power blocked in a receive). */
double kr_sim_wait_power_w(const kr_gpu *gpu);
/* Power of an idle GPU (no kernel, idle clock): the catalog's idle_w. */
double kr_sim_idle_power_w(const kr_gpu *gpu);
/* Core voltage at SM clock freq_mhz (the catalog's V(f) curve). */
double kr_sim_voltage(const kr_gpu *gpu, double freq_mhz);

/* ---- calibration check ------------------------------------------------------------------ */

/* One prediction of the simulator next to the published figure it should reproduce. */
typedef struct kr_sim_check {
    char what[80];          /* e.g. "bf16 8192^3 GEMM at the max clock". */
    char gpu[KR_NAME_MAX];  /* Catalog name of the GPU. */
    char unit[16];          /* "TFLOP/s", "GB/s", "W", "MHz". */
    double predicted;       /* What the simulator gives. */
    double published_lo;    /* Published range (lo = hi for a single figure). */
    double published_hi;
    int input;              /* 1 if the figure is itself a catalog input (an identity check). */
    int within;             /* 1 if predicted lies in [published_lo, published_hi]. */
    char source[KR_SOURCE_MAX]; /* Where the published figure comes from. */
} kr_sim_check;

/*
 * Runs the calibration comparisons of docs/calibration.md on the built-in catalog: GEMM
 * throughput, 8-GPU all-reduce bus bandwidth (1 GiB and a message-size curve), idle, blocked
 * and kernel-mix power, and the energy-optimal clock. Writes up to cap rows to out and sets *n
 * to the number of rows available. Returns KR_OK or KR_EINTERNAL with a message.
 */
int kr_sim_calibration_checks(kr_sim_check *out, int cap, int *n, kr_error *err);

/* ---- partitions ------------------------------------------------------------------------- */

/* Details of one simulated partition execution (one GPU). */
typedef struct kr_sim_result {
    double time_s;          /* Both streams done. */
    double energy_j;        /* ∫ power dt over [0, time_s] (static power included). */
    double eff_energy_j;    /* energy_j − job.static_power_w × time_s. */
    double compute_end_s;   /* When the last compute op finished. */
    double comm_start_s;    /* When the comm kernel launched (0 and comm_end_s = 0 if none). */
    double comm_end_s;      /* When it finished. */
    double min_f_eff_mhz;   /* Lowest clock the partition ran at (< requested: throttled). */
    double max_power_w;     /* Highest board power of any moment. */
    /* Where time and energy go (sim v2). */
    double floor_w;         /* Floor power at the requested clock (kr_sim_floor_power_w). */
    double floor_energy_j;  /* ∫ floor power dt: the part of energy_j no work caused. */
    double dispatch_s;      /* Compute stream idle between ops: launch gaps and host dispatch waits. */
    double sync_s;          /* Event/stream synchronisation between the nanobatches. */
    double skew_s;          /* Waiting for the slowest rank of the collective's group. */
    int comm_kernel;        /* KR_SIM_TUNED, KR_SIM_NCCL, or -1 without a collective. */
    int comm_sms;           /* SMs the comm kernel holds (0 without one). */
    double comm_hbm_bytes;  /* HBM bytes the comm kernel moves on this GPU. */
} kr_sim_result;

/*
 * Simulates partition p of job at config c. The config is checked with kr_config_validate
 * (unsupported clock, comm SMs outside 1..sm_count−1, unknown slot → KR_ERANGE / KR_ENOTFOUND
 * with the message in err). The config is used as given: for the baseline variants pass their
 * fixed slot and SMs (kr_sim_fixed_config). Non-partition work (no collective) ignores sms and
 * slot. Deterministic; no allocation; err may be NULL.
 */
int kr_sim_partition(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_result *out,
                     kr_error *err);

/* The fast path for searches: kr_sim_partition reduced to a kr_measurement (repeats 1, standard
 * deviations 0). Same checks and codes. */
int kr_sim_measure(const kr_job *job, const kr_partition *p, const kr_config *c, kr_measurement *out,
                   kr_error *err);

/*
 * The fixed config of a baseline-variant partition or of non-partition work at clock freq_mhz:
 * slot = p->fixed_slot, sms = p->fixed_sms. Returns KR_EINVAL for a kareus-variant partition
 * (its slot and SMs are searched, there is nothing fixed).
 */
int kr_sim_fixed_config(const kr_partition *p, int freq_mhz, kr_config *out, kr_error *err);

/* ---- what overlap costs each stream ----------------------------------------------------- */

/* One configuration overlapped, against the same configuration with the collective run after
 * the compute (the two kernels alone, one after the other, at the same clock and CTAs). */
typedef struct kr_sim_overlap {
    double time_s, energy_j;   /* The overlapped execution (as kr_sim_partition). */
    double compute_alone_s;    /* Compute stream end with nothing beside it. */
    double compute_s;          /* Compute stream end, overlapped. */
    double comm_alone_s;       /* The collective alone (launch to end). */
    double comm_s;             /* The collective overlapped (launch to end). */
    double overlap_s;          /* Time both streams ran together. */
    double compute_slowdown;   /* Extra compute time per second of overlap: (compute_s −
                                  compute_alone_s) / overlap_s (0.2 = compute 20 % slower while
                                  the comm kernel is resident). */
    double comm_slowdown;      /* comm_s / comm_alone_s − 1. */
    double hidden;             /* Share of the collective's time under compute. */
} kr_sim_overlap;

/*
 * Runs config c of partition p with comm kernel `kernel` (KR_SIM_TUNED or KR_SIM_NCCL, whatever
 * the variant's own is) overlapped as configured and with the collective after the compute, and
 * fills out. Returns the codes of kr_sim_partition, or KR_EINVAL for an unknown kernel.
 */
int kr_sim_overlap_effects(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_comm_kernel kernel,
                           kr_sim_overlap *out, kr_error *err);

/* ---- timelines (pictures) ---------------------------------------------------------------- */

#define KR_SIM_STREAM_COMPUTE 0
#define KR_SIM_STREAM_COMM 1
#define KR_SIM_MAX_EVENTS (KR_MAX_OPS + 1)
#define KR_SIM_MAX_SEGMENTS (2 * KR_MAX_OPS + 8)

/* One kernel on one stream. */
typedef struct kr_sim_event {
    int stream;         /* KR_SIM_STREAM_COMPUTE or KR_SIM_STREAM_COMM. */
    char name[32];      /* Op name, or the collective kind for the comm stream. */
    double start_s;     /* Start, seconds from the partition start. */
    double end_s;       /* End. */
    double power_w;     /* Mean board power over [start_s, end_s] (the whole GPU). */
} kr_sim_event;

/* A stretch of time with one kernel mix: constant clock and power. */
typedef struct kr_sim_segment {
    double start_s;
    double end_s;
    double power_w;     /* Board power. */
    double f_eff_mhz;   /* SM clock. */
    int op;             /* Compute op running (index into p->ops), or −1. */
    int comm;           /* 1 if the comm kernel is resident. */
} kr_sim_segment;

/* A partition execution for pictures: per-stream events and the power trace. Energy equals the
 * sum of power × duration over the segments. */
typedef struct kr_sim_timeline {
    kr_sim_result result;
    int nevents;
    kr_sim_event events[KR_SIM_MAX_EVENTS];
    int nsegments;
    kr_sim_segment segments[KR_SIM_MAX_SEGMENTS];
} kr_sim_timeline;

/* Like kr_sim_partition, filling a timeline as well. Same checks and codes. */
int kr_sim_partition_timeline(const kr_job *job, const kr_partition *p, const kr_config *c,
                              kr_sim_timeline *out, kr_error *err);

/*
 * Writes a timeline as JSON (schema "kareus.timeline", version 1: job, partition, variant,
 * config, result, events, segments), atomically. Returns KR_OK or KR_EIO with the path.
 */
int kr_sim_timeline_write_json(const char *path, const kr_job *job, const kr_partition *p,
                               const kr_config *c, const kr_sim_timeline *t, kr_error *err);

/* ---- the backend and its simulated device ------------------------------------------------ */

/* Options of the simulator backend; a NULL pointer or zeroed struct gives the defaults. */
typedef struct kr_sim_config {
    int device_count;            /* Simulated devices (0 → 1). */
    /* Time source of the energy counter, seconds (NULL → CLOCK_MONOTONIC). Tests inject one. */
    double (*now_s)(void *ud);
    void *now_ud;                /* Passed to now_s. */
    /* Activity of each device while its clock is locked, 0..1: the fraction of a large GEMM's
     * dynamic power it draws on top of the static power (0 → a device that only waits; use
     * kr_sim_backend_set_activity to change it per device). */
    double activity;
} kr_sim_config;

/*
 * Creates the simulator backend for job (copied). measure simulates (kr_sim_measure);
 * device_count, supported_clocks, get/set/reset_clock, read_energy and read_power act on the
 * simulated devices: a device with a locked clock draws static power plus its activity's
 * dynamic power at that clock (capped at TDP), an unlocked device draws idle power at the idle
 * clock; read_energy integrates that power over the injected (or monotonic) time. Every
 * set/reset is appended to a clock log. Thread-safe (one mutex). Returns KR_OK, KR_EINVAL (bad
 * options) or KR_ENOMEM.
 */
int kr_sim_backend_create(const kr_job *job, const kr_sim_config *opts, kr_backend **out, kr_error *err);

/* 1 if b was made by kr_sim_backend_create. */
int kr_sim_backend_is(const kr_backend *b);

/* One applied clock change. */
typedef struct kr_sim_clock_event {
    double time_s;   /* Time-source reading when it was applied. */
    int dev;         /* Device. */
    int min_mhz;     /* Locked range; 0, 0 for a reset (unlocked). */
    int max_mhz;
} kr_sim_clock_event;

/*
 * Copies up to cap entries of the clock log (oldest first) into out and sets *n to the total
 * number logged (which may exceed cap). Returns KR_OK or KR_EINVAL (b is not a sim backend).
 */
int kr_sim_backend_clock_log(kr_backend *b, kr_sim_clock_event *out, int cap, int *n);

/* Sets the activity (0..1, see kr_sim_config) of device dev from now on. Returns KR_OK,
 * KR_ERANGE (dev or activity out of range) or KR_EINVAL (not a sim backend). */
int kr_sim_backend_set_activity(kr_backend *b, int dev, double activity);


/* ---- measured partitions (calibration sets) ---------------------------------------------- */

/* One measured execution of a partition (medians over its repetitions, per GPU). */
typedef struct kr_sim_calib_row {
    int start, end;     /* Overlap window: comm launched before op start, compute after op end
                           waits for it; -1, -1 = no overlap (compute, then the collective). */
    int ctas, block;    /* Comm kernel CTAs and threads per CTA. */
    double clock_mhz;   /* Requested SM clock (clock_max_mhz for the driver default). */
    double time_s;      /* Wall time of one execution. */
    double energy_j;    /* Energy of one GPU for one execution. */
    int line;           /* Line in its CSV file. */
} kr_sim_calib_row;

/* A calibration set: the partition, its job and the measured rows (kr_sim_calib_read). */
typedef struct kr_sim_calib {
    kr_job job;                 /* Shape of the harness (its GPU is the one predicted with). */
    char partition[32];         /* Partition key. */
    kr_partition part;          /* The partition (kareus variant). */
    int kernel;                 /* KR_SIM_TUNED or KR_SIM_NCCL. */
    kr_sim_calib_row *rows;
    int n;
    size_t cap;
} kr_sim_calib;

/* Which rows a check or fit uses: all, or the folds by CTA count parity. */
enum { KR_CALIB_ALL = 0, KR_CALIB_ODD = 1, KR_CALIB_EVEN = 2 };

#define KR_CALIB_MAX_CLOCKS 8

/* Errors at one clock (relative absolute errors; Spearman of measured vs predicted time). */
typedef struct kr_sim_calib_clock {
    double clock_mhz;
    int rows;
    double time_med, time_p90, energy_med, energy_p90, power_med, power_p90;
    double spearman_time;    /* Over all rows at this clock. */
    double spearman_windows; /* Median over (CTAs, block) groups of the ranking of windows. */
    double spearman_ctas;    /* Median over (window, block) groups of the ranking of CTA counts. */
    double meas_power_w;     /* Measured average power (Σ energy / Σ time). */
    int pairs;               /* Rows matched with the first clock's (ratios below). */
    double meas_time_ratio, pred_time_ratio, meas_energy_ratio, pred_energy_ratio; /* vs the first clock */
} kr_sim_calib_clock;

typedef struct kr_sim_calib_report {
    int nclocks;
    kr_sim_calib_clock clocks[KR_CALIB_MAX_CLOCKS];
} kr_sim_calib_report;

/*
 * Reads a calibration set manifest (JSON, schema "kareus.calib": job, partition, kernel, ranks,
 * files [{file, clock: "max" | MHz}]; paths relative to the manifest) and its CSV files (the
 * Kareus artifact's energy_results.csv layout). Returns KR_OK, or KR_EPARSE / KR_ERANGE /
 * KR_EIO / KR_ENOTFOUND with file, line or JSON path in err. Free with kr_sim_calib_free.
 */
int kr_sim_calib_read(const char *path, kr_sim_calib *out, kr_error *err);
void kr_sim_calib_free(kr_sim_calib *cs);

/* Predicts row i of cs on gpu (NULL: the set's job GPU). */
int kr_sim_calib_predict(const kr_sim_calib *cs, const kr_gpu *gpu, int i, kr_sim_result *out, kr_error *err);

/* The result as a JSON object (time, energy, effective energy at static_power_w, streams, the
 * floor and work energy, dispatch/sync/skew time, the comm kernel, its SMs and HBM bytes).
 * NULL when out of memory; the caller owns the reference. */
json_t *kr_sim_result_json(const kr_sim_result *r, double static_power_w);

/* Writes every row of cs with its prediction on gpu (NULL: the job's) and where the time goes,
 * as CSV (atomic). KR_EIO, KR_ENOMEM, or a prediction's error. */
int kr_sim_calib_write_rows(const kr_sim_calib *cs, const kr_gpu *gpu, const char *path, kr_error *err);

/* Prediction errors per clock, ratios between clocks and rank agreement, on the rows of fold. */
int kr_sim_calib_check(const kr_sim_calib *cs, const kr_gpu *gpu, int fold, kr_sim_calib_report *rep,
                       kr_error *err);

/* Fits the harness-identifiable constants (kr_sim_calib_fitted lists them) to the rows of fold,
 * starting from `start`; out receives start with the fitted values; *rms_log the RMS of the
 * log errors of time and energy. */
int kr_sim_calib_fit(const kr_sim_calib *cs, const kr_gpu *start, int fold, kr_gpu *out, double *rms_log,
                     kr_error *err);
/* kr_sim_calib_fit with the constants fixed[0..nfixed) (KR_GPU_P_… indices, each one of
 * kr_sim_calib_fitted's) held at start's values: a profile of the fit over one constant, or a
 * constant pinned by another measurement. KR_EINVAL for a fixed index that is not fitted. */
int kr_sim_calib_fit_fixed(const kr_sim_calib *cs, const kr_gpu *start, int fold, const int *fixed, int nfixed,
                           kr_gpu *out, double *rms_log, kr_error *err);
/* Which rows of a fold an RMS covers: all, the sequential ones (window −1: the stage that fits
 * the compute, power and comm-kernel constants), or the overlapped ones. */
enum { KR_CALIB_ROWS_ALL = 0, KR_CALIB_ROWS_SEQUENTIAL = 1, KR_CALIB_ROWS_OVERLAPPED = 2 };

/* RMS of the log errors of time and energy of those rows of fold on gpu (NULL: the set's job
 * GPU); NaN when there are none. KR_ENOMEM. */
int kr_sim_calib_rms(const kr_sim_calib *cs, const kr_gpu *gpu, int fold, int part, double *rms_log, kr_error *err);
/* The KR_GPU_P_… indices kr_sim_calib_fit sets (v_exp and attn_bwd_eff follow from them). */
const int *kr_sim_calib_fitted(int *n);

/* Spearman rank correlation of a and b (ties get average ranks); NaN for n < 2. */
double kr_sim_spearman(const double *a, const double *b, int n);

KR_END_DECLS
#endif
