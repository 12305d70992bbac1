/*
 * search.h — partition search: each partition's time–energy frontier over (SM clock × comm
 * SMs × launch slot), found exhaustively or sample-efficiently, with every measurement in an
 * append-only, resumable log, and a replay backend that answers from such logs.
 *
 * Pieces (docs/search.md has the algorithms, formats and figures):
 *   space     kr_search_space: the configurations of one partition for a job (design §5,
 *             kareus-method.md §2). Clocks outermost (highest first), then comm kernels, slots
 *             and SMs, then the baseline's own execution when it is off that grid.
 *   strategy  exhaustive (every configuration), bo (Gaussian-process surrogate, expected
 *             hypervolume improvement on (time, effective energy) and (time, total energy),
 *             a stopping rule), artifact (the published selection rule, as a baseline).
 *   log       kr_search_log: a JSONL file, one measurement per line, appended and flushed as
 *             it is taken and fsync'd at once (or per batch, kr_search_log_set_sync); the fields of the artifact's eval_results.jsonl plus ours.
 *             Searches read it as a cache, so a rerun resumes where a crash stopped it and never
 *             measures a configuration twice.
 *   replay    kr_replay_backend_create: a backend answering measure() from logs (ours or the
 *             artifact's eval_results.jsonl), so searches and later steps run on recordings.
 *   driver    kr_search_partition / kr_search_job: run a strategy and return partition
 *             frontiers (frontier.h) with statistics.
 *
 * Determinism: a search is a function of (job, partition, options, seed) and of the values
 * measured. Values read back from the log are bit-identical to the measured ones (doubles are
 * written with 17 significant digits), so an interrupted search resumed from its log takes the
 * same decisions and ends with the same frontier as an uninterrupted one.
 */
#ifndef KAREUS_SEARCH_H
#define KAREUS_SEARCH_H

#include "kareus/backend.h"
#include "kareus/frontier.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* ---- search space ------------------------------------------------------------------------ */

#define KR_SEARCH_MAX_CLOCKS 512

/* What kr_search_config.restrict_space keeps of a kareus partition's space (an ablation: each
 * flag switches one of Kareus's knobs off). 0: the whole space. */
enum {
    KR_SEARCH_ONLY_TUNED = 1u << 0, /* the tuned kernel only (overrides planning.comm_kernels) */
    KR_SEARCH_ONLY_NCCL = 1u << 1,  /* NCCL only (overrides planning.comm_kernels) */
    KR_SEARCH_FIX_SMS = 1u << 2,    /* comm CTAs fixed at the baseline's NCCL-default count */
    KR_SEARCH_FIX_SLOT = 1u << 3,   /* launch slot fixed at the baseline's (partition start) */
    KR_SEARCH_UNCOUPLED = 1u << 4   /* the clock coupling off: one comm configuration (kernel,
                                       CTAs, slot) for every clock, the fastest measured at the
                                       highest clock, as a tuner at the top clock picks it; it is
                                       measured at every clock and the frontier keeps only it */
};
#define KR_SEARCH_RESTRICT_ALL 0x1fu

/* The configurations of one partition: per clock, the grid kernels × slots × sms, then (when it
 * is not on the grid) the baseline's own execution. */
typedef struct kr_search_space {
    char key[KR_KEY_MAX];          /* Partition key. */
    kr_variant variant;            /* Its variant. */
    int nclocks;                   /* Planning clocks of the job, highest first … */
    int clocks[KR_SEARCH_MAX_CLOCKS];
    int nslots;                    /* Launch slot indices searched (kareus variant: all of the
                                      partition's slots; otherwise its one fixed slot). */
    int slots[KR_MAX_SLOTS];
    int nsms;                      /* Comm SMs searched, ascending (kareus variant: the job's
                                      sms_allreduce or sms_gather list by collective; otherwise the
                                      fixed NCCL count; 0 for work without a collective). */
    int sms[KR_MAX_SMLIST];
    int nkernels;                  /* Comm kernels searched (kareus variant with a collective: */
    int kernels[KR_KERNEL_COUNT];  /* planning.comm_kernels or a restriction; otherwise {tuned}). */
    int has_base;                  /* 1: the baseline's execution (base) is a candidate: kareus
                                      partitions with a collective and no restriction. */
    kr_config base;                /* Its kernel (nccl), CTAs (the GPU's nccl_ctas) and slot (the
                                      default-overlap variant's); freq_mhz unused. */
    int nbase;                     /* 1 when base is a candidate off the grid (its kernel or CTA
                                      count not searched): one more configuration per clock, after
                                      that clock's grid. */
} kr_search_space;

/*
 * The search space of partition p for job: the job's planning clocks (clock_min/max/step_mhz;
 * set clock_step_mhz to the GPU's native step for the finest grid), the comm kernels of
 * planning.comm_kernels, the comm-SM list of the partition's collective kind and its launch
 * slots, and the baseline's own execution (NCCL at the GPU's nccl_ctas, launched at partition
 * start) as a candidate — an extra configuration per clock when it is off that grid; baseline
 * variants and non-partition work search the clock only. Default job: fwd_attn 18 × 2 × 4 × 10
 * = 1440 (the published space, the tuned kernel alone: 720, kareus-method.md §2).
 * Returns KR_OK; KR_EINVAL for an empty clock list (clock_min > clock_max or step < 1), an
 * empty SM list or a partition without slots, each naming the job field; KR_ERANGE if the clock
 * list exceeds KR_SEARCH_MAX_CLOCKS.
 */
int kr_search_space_init(const kr_job *job, const kr_partition *p, kr_search_space *out, kr_error *err);

/*
 * As kr_search_space_init, with the knobs restrict_space (KR_SEARCH_… flags) fixes: the kernel
 * list, the comm CTAs at the GPU's nccl_ctas, the slot at the default-overlap variant's. With
 * any flag the baseline's execution is no extra candidate (has_base = 0). Flags do nothing to
 * partitions that search the clock only. Returns as kr_search_space_init, and KR_EINVAL for
 * both ONLY_ flags or unknown bits.
 */
int kr_search_space_init_restricted(const kr_job *job, const kr_partition *p, unsigned restrict_space,
                                    kr_search_space *out, kr_error *err);

/*
 * Parses a restriction list, names separated by commas — only-tuned, only-nccl, fix-sms,
 * fix-slot (KR_SEARCH_ONLY_TUNED, …) — or "none" (0) into *out. Returns KR_OK or KR_EINVAL with
 * a message naming the bad entry and the accepted names.
 */
int kr_search_restrict_parse(const char *list, unsigned *out, kr_error *err);

/* Configurations of one clock (nkernels · nslots · nsms + nbase); a clock's are contiguous. */
long kr_search_space_per_clock(const kr_search_space *s);

/* Number of configurations (nclocks · per clock). */
long kr_search_space_size(const kr_search_space *s);

/* Configuration number idx (0 <= idx < size): clock idx / per_clock, then kernel, slot and sms
 * (the grid), then the baseline's execution when nbase. */
void kr_search_space_config(const kr_search_space *s, long idx, kr_config *c);

/*
 * Index of configuration c in s. Returns KR_OK, or KR_ERANGE naming the coordinate that is not
 * in the space and the values it allows.
 */
int kr_search_space_index(const kr_search_space *s, const kr_config *c, long *idx, kr_error *err);

/* ---- measurement log --------------------------------------------------------------------- */

typedef struct kr_search_log kr_search_log;

/*
 * Opens (creating if missing) the measurement log at path for job. Every line is read and
 * checked: JSON syntax, field types, known fields, the job fingerprint ("job" field), the
 * partition key and variant, and that the configuration lies in the partition's search space;
 * each error names path:line and the field (KR_EPARSE, KR_ERANGE, KR_ENOTFOUND, KR_EMISMATCH
 * for a log of a different job). A torn last line (no final newline: a crash while writing) is
 * dropped and the file truncated before anything is appended; kr_search_log_warning says so.
 * Duplicate configurations keep their first measurement (also reported as a warning).
 * An existing non-empty file must start with our header line ({"schema":"kareus.mlog",...},
 * written when the log is created) or be a log from before the header existed (its first line
 * one of our measurement lines, with key and job): that one is read with a warning and new
 * lines are appended to it without a header. Anything else is refused (KR_EPARSE: "expected a
 * Kareus measurement log") and left unchanged.
 * Returns KR_OK, the codes above, KR_EIO (cannot open or truncate) or KR_ENOMEM.
 */
int kr_search_log_open(const char *path, const kr_job *job, kr_search_log **out, kr_error *err);

/*
 * Checks, without writing or creating anything, that path can be opened as job's measurement
 * log: missing, empty, or a log with our header line (or from before the header) whose lines
 * all parse (a torn last line is allowed). The CLI calls it before creating output directories, so a wrong --log leaves every
 * file as it was. Returns KR_OK or the errors of kr_search_log_open.
 */
int kr_search_log_check(const char *path, const kr_job *job, kr_error *err);

/* When appended lines are fsync'd (each is always written and flushed at once). */
typedef enum kr_log_sync {
    KR_LOG_SYNC_EACH = 0, /* every line (the default: for measurements that cost seconds) */
    KR_LOG_SYNC_BATCH = 1 /* at the end of every batch (for cheap, repeatable measurements such as
                             the simulator's, where an fsync per line would dominate the run) */
} kr_log_sync;

void kr_search_log_set_sync(kr_search_log *log, kr_log_sync sync);

/* Closes the log (fsyncs anything pending). NULL is a no-op. */
void kr_search_log_close(kr_search_log *log);

/* Warnings found when opening ("" if none): a log without the header line, a dropped torn
 * line, duplicates. */
const char *kr_search_log_warning(const kr_search_log *log);

/* Number of distinct measurements in the log (read at open plus appended since). */
long kr_search_log_count(const kr_search_log *log);

/* Path of the log. */
const char *kr_search_log_path(const kr_search_log *log);

/* ---- replay backend ----------------------------------------------------------------------- */

/*
 * A backend whose measure() answers from recorded logs instead of measuring. Each entry of
 * paths is "FILE" or "KEY=FILE". Lines in our format carry their key, variant and job
 * fingerprint (checked against job: KR_EMISMATCH). Lines in the artifact's eval_results.jsonl
 * format (freq, overlap_start, overlap_end, sm, block, time_s, energy_j, …, no key) belong to
 * the kareus variant of the key given as "KEY=" or, failing that, of the key named by the file's
 * directory (the artifact writes logs/…/<key>/eval_results.jsonl); they are matched by (freq,
 * overlap_start, sm). Duplicate configurations keep their first line. measure() of a
 * configuration that is not recorded fails with KR_ENOTFOUND naming the configuration and the
 * number of recordings of that partition. A search (kr_search_partition) on a replay backend
 * is restricted to the recorded configurations of the partition's space, so a partial
 * recording (e.g. a BO run that measured 224 of 720) gives the frontier of what was measured
 * (kr_search_stats.recorded); a partition with no recording at all fails with KR_ENOTFOUND
 * naming it and the files. Effective energy is recomputed with the job's
 * static power. supported_clocks lists the job GPU's clocks; the other control entries are
 * unsupported (capabilities KR_BACKEND_MEASURE | CLOCK_LIST | RECORDED). Returns KR_OK, parse errors as for kr_search_log_open (path:line, field),
 * KR_EINVAL (no paths, or an artifact-format file whose key cannot be told), KR_EIO, KR_ENOMEM.
 */
int kr_replay_backend_create(const kr_job *job, const char *const *paths, int npaths, kr_backend **out,
                             kr_error *err);

/*
 * For a replay backend b: the partitions of kr_search_partitions(job, variant,
 * include_nonpartition) (2: the non-partition work only) of which neither the recordings nor log
 * (may be NULL) hold any
 * configuration of the search space, written to buf as "key, key, …" (truncated to cap).
 * Returns how many (0: every partition is covered), KR_EINVAL if b is not a replay backend,
 * the catalog's or the space's error, or KR_ENOMEM.
 */
int kr_replay_missing(const kr_backend *b, const kr_search_log *log, const kr_job *job, kr_variant variant,
                      int include_nonpartition, char *buf, size_t cap, kr_error *err);

/* ---- strategies and options ---------------------------------------------------------------- */

typedef enum kr_strategy {
    KR_STRATEGY_EXHAUSTIVE = 0, /* Every configuration, in space order. */
    KR_STRATEGY_BO = 1,         /* Gaussian-process BO with expected hypervolume improvement. */
    KR_STRATEGY_ARTIFACT = 2    /* The published selection rule (kareus-method.md §3). */
} kr_strategy;

const char *kr_strategy_name(kr_strategy s); /* "exhaustive", "bo", "artifact" */
int kr_strategy_parse(const char *name, kr_strategy *out);

/* Progress of a running search (passed to the progress callback after every batch). */
typedef struct kr_search_progress {
    const char *key;     /* Partition being searched. */
    kr_variant variant;
    int index;           /* Its position in a job-wide search, 0-based … */
    int count;           /* … of this many partitions (1 for kr_search_partition). */
    long evaluated;      /* Configurations evaluated so far (from the log or measured). */
    long measured;       /* Of which measured by the backend in this run. */
    long space_size;     /* Configurations in the space. */
    int batch;           /* Batches done (the initial design is batch 0). */
    int done;            /* 1 on the last call for this partition. */
} kr_search_progress;

typedef void (*kr_search_progress_fn)(void *ud, const kr_search_progress *p);

/* Options of a search. kr_search_config_default fills the defaults; 0 fields mean "default". */
typedef struct kr_search_config {
    kr_strategy strategy;        /* Default: bo. */
    unsigned long long seed;     /* Seed of every random choice (default 1). */
    long max_evals;              /* Cap on configurations evaluated (0: the strategy's own rule;
                                    bo's default cap is half the space). */
    /* bo */
    double bo_stop;              /* Stop when the batch's expected hypervolume improvement is
                                    below this fraction of the current hypervolume in both planes
                                    (0: default, 0.02, or 0.01 with a prior; < 0: never stop
                                    on it, run to max_evals — with a prior also set bo_stop_abs
                                    < 0). */
    int bo_batch;                /* Batch size (0: default, 8 for spaces >= 400, else 4; 4 with a
                                    prior; see docs/search.md). */
    int bo_init;                 /* Initial design size (0: default). */
    /* artifact */
    long artifact_budget;        /* Total evaluations (0: the per-key n_init + batches × acq of
                                    kareus-method.md §2; otherwise n_init and acq are scaled to it). */
    kr_search_progress_fn progress; /* Called after every batch (may be NULL). */
    void *progress_ud;
    /* bo with a physics prior (docs/search.md, "Prior"). NULL: none, and bo behaves exactly as
       without these fields. Otherwise the simulator on this job (the searched job with the
       prior's GPU: nominal or calibrated constants) predicts every configuration of the
       partition, and each surrogate models the measurement as a + b·prediction (log scale,
       fitted per partition by ridge-regularised least squares toward b = 1) plus a GP on the
       residual (with the prior's sensitivity features: prior_sens below, and its calibration:
       prior_calib); the initial design is 16 points, the prior's best frontier points (with
       calibration the first 8, then two batches of 4 picked the same way from the calibrated
       models; with the features alone the first 12, then 4 from the refitted models). The prior
       job must describe the same model and parallelism as the searched one. */
    const kr_job *prior;
    /* A prior other than the simulator (e.g. a model of a different space mapped onto this one):
       when set, bo uses it instead of `prior` — predicted time (> 0) and energy of
       configuration c of p; returns KR_OK or an error code (the search fails with it). */
    int (*prior_fn)(void *ud, const kr_partition *p, const kr_config *c, double *time_s, double *energy_j);
    void *prior_ud;
    /* 0 (default; > 0 the same): with a simulator prior, its sensitivity features join the line — the
       simulator with each GPU constant that has a stated uncertainty (kr_gpu_param_uncertainty)
       at ± that uncertainty — as a Bayesian linear model whose coefficients have the prior of a
       constant uniform within its uncertainty (docs/search.md, "Sensitivity features"); with a
       prior_fn, only when prior_sens_fn is set. < 0: the line a + b·q alone (as before). */
    int prior_sens;
    /* prior_fn's sensitivities: its prediction of c with GPU parameter `param` (KR_GPU_P_…)
       scaled by `factor`; an error drops that point of the feature. NULL: none. */
    int (*prior_sens_fn)(void *ud, const kr_partition *p, const kr_config *c, int param, double factor,
                         double *time_s, double *energy_j);
    /* bo's absolute stopping floor: a plane has converged when the expected remaining gain and
       the last batch's gain, measured in a box of at least 10 % of the fastest time and of the
       lowest energy, are below max(bo_stop · HV, bo_stop_abs · t_min · E_min) (E_min: the lowest total energy
       measured, the energy scale of both planes). 0: default
       (1e-5 with a prior; without a prior the rule is off); < 0: off. */
    double bo_stop_abs;
    /* 0 (default; > 0 the same): wherever the sensitivity features are on (prior_sens), bo also
       calibrates the prior before each fit — the relative changes θ of the same GPU constants
       that best explain the measured times and total energies together (maximum a posteriori,
       each θ_j ~ N(0, u_j²/3), Gauss–Newton on the log scale) — and models the measurements
       against the simulator at θ (docs/search.md, "Calibrated prior"); the design is then the
       prior's 8 best frontier points and two batches of 4 from the calibrated models. With a
       prior_fn, only when prior_at_fn is set. < 0: off (the features on the nominal prior, the
       design 12 + 4, as before). */
    int prior_calib;
    /* prior_fn at other constants: its prediction of c with GPU parameter param[j] scaled by
       factor[j] for j < n (the others as prior_fn's). NULL: no calibration with a prior_fn. */
    int (*prior_at_fn)(void *ud, const kr_partition *p, const kr_config *c, int n, const int *param,
                       const double *factor, double *time_s, double *energy_j);
    unsigned restrict_space;     /* KR_SEARCH_… flags: knobs fixed for an ablation (0: the whole
                                    space, and the baseline's execution is always evaluated at
                                    every clock; docs/search.md, "Kernels and the baseline"). */
} kr_search_config;

void kr_search_config_default(kr_search_config *o);

#define KR_SEARCH_SENS_MAX 32 /* at most this many sensitivity features */

/* What a search did. */
typedef struct kr_search_stats {
    long space_size;       /* Configurations in the space. */
    long evaluated;        /* Configurations the search used (its cost on an uninterrupted run). */
    long measured;         /* Of which measured by the backend in this run … */
    long from_log;         /* … and read from the log (a resumed run). */
    int batches;           /* Batches after the initial design. */
    char stop[48];         /* Why it stopped: "space exhausted", "converged", "budget", "fixed budget";
                              with the absolute rule "converged (eff R, total A)": which bound
                              each plane met, R relative (bo_stop · HV), A absolute. */
    double hv_eff;         /* Hypervolume of the (time, effective energy) frontier, s·J, against
                              (ref_time_s, ref_eff_energy_j): a reference that depends on the job
                              and the partition only, so runs of one partition compare directly. */
    double hv_total;       /* Same for (time, total energy), against (ref_time_s, ref_energy_j). */
    double ref_time_s;     /* The reference: 1.1 × the largest time, effective energy and energy */
    double ref_eff_energy_j; /* the job's simulator predicts over the partition's whole space */
    double ref_energy_j;   /* (max + 0.1·|max|; docs/search.md, "Summary hypervolumes"). */
    int ref_from_sim;      /* 1 as above; 0 when the job's simulator cannot predict the space (a
                              custom backend over a space of another meaning): the reference is
                              then the measured points' nadir + 10 % of their range, which is not
                              comparable across runs. */
    long front_eff;        /* Points on the (time, effective energy) frontier. */
    long front_total;      /* Points on the (time, total energy) frontier. */
    double wall_s;         /* Wall time of the search. */
    long recorded;         /* Replay backends: configurations of the space recorded in the
                              logs or the cache (0 for other backends). When fewer than
                              space_size, the search was restricted to them: its frontier is the
                              frontier of the recorded points, and stop says "recorded points
                              only". */
    double gain_eff;       /* bo: the last estimate of the hypervolume still to gain in the
                              (time, effective energy) plane, as a fraction of t_min · E_min
                              (NaN when not estimated: other strategies, a cap reached first). */
    double gain_total;     /* Same for (time, total energy). */
    int prior;             /* 1 if bo used a prior. */
    double prior_b_time;   /* Its fitted slopes b (1: the prior's shape is right) at the end. */
    double prior_b_energy;
    /* The prior's sensitivity features (kr_search_config.prior_sens) at the end: what the
       measurements say of each GPU constant the prior varied, as its relative change from the
       prior's value to first order (0.08: the measurements behave as if the constant were 8 %
       higher), once from the time model and once from the total-energy model. The two need not
       agree: each is only the direction that best explains its own quantity. */
    int prior_nsens;
    int prior_sens_param[KR_SEARCH_SENS_MAX];  /* KR_GPU_P_… */
    double prior_sens_time[KR_SEARCH_SENS_MAX];
    double prior_sens_energy[KR_SEARCH_SENS_MAX];
    /* With calibration (kr_search_config.prior_calib): 1, and each constant's calibrated relative
       change θ_j (one value from time and energy together; prior_sens_time and
       prior_sens_energy then hold θ_j plus what each model's features add to it). */
    int prior_calibrated;
    double prior_calib[KR_SEARCH_SENS_MAX];
} kr_search_stats;

/*
 * Searches partition p of job with backend b: evaluates configurations chosen by the strategy,
 * answering from log (may be NULL) where the configuration is recorded and measuring (and
 * appending to log) otherwise. out receives every evaluated configuration with its Pareto flags
 * (initialised here; free with kr_frontier_free); stats (may be NULL) what it took. Baseline
 * variants and non-partition work have only the clock as a knob: every strategy measures every
 * clock there (composition needs each clock). On a backend failure the measurements taken so far
 * are in the log, so a rerun continues.
 * Returns KR_OK; KR_EINVAL (bad options, empty space); KR_ERANGE (a log entry outside the
 * space); the backend's code (with its message) when a measurement fails; KR_EIO (log write);
 * KR_ENOMEM.
 */
int kr_search_partition(const kr_job *job, const kr_partition *p, kr_backend *b, kr_search_log *log,
                        const kr_search_config *opt, kr_partition_frontier *out, kr_search_stats *stats,
                        kr_error *err);

/*
 * The partitions a job-wide search covers: the layer partitions of variant (kr_partition_catalog)
 * and, with include_nonpartition, the non-partition work of every stage (embedding, LM head,
 * loss; forward and backward), each key once. Returns KR_OK or the catalog's error.
 */
int kr_search_partitions(const kr_job *job, kr_variant variant, int include_nonpartition, kr_partition_set *out,
                         kr_error *err);

/* One partition's outcome in a job-wide search. */
typedef struct kr_search_result {
    kr_partition_frontier front; /* Owned. */
    kr_search_stats stats;
} kr_search_result;

/*
 * Searches every partition of kr_search_partitions(job, variant, include_nonpartition) in order,
 * reporting progress through opt->progress (index/count set). *out receives an array of *n
 * results (free with kr_search_results_free). Stops at the first failure (earlier partitions'
 * measurements are in the log). Returns as kr_search_partition, with the key in the message.
 */
int kr_search_job(const kr_job *job, kr_variant variant, int include_nonpartition, kr_backend *b, kr_search_log *log,
                  const kr_search_config *opt, kr_search_result **out, int *n, kr_error *err);

void kr_search_results_free(kr_search_result *r, int n);

/*
 * Writes a partition frontier into directory dir (created if needed) as
 * kr_frontier_file_name(key, variant, "json") and "csv", atomically. Returns KR_OK or KR_EIO
 * naming the path.
 */
int kr_search_write_frontier(const char *dir, const kr_partition_frontier *f, kr_error *err);

/* ---- merging shard logs -------------------------------------------------------------------- */

/* What kr_search_log_merge found. */
typedef struct kr_search_merge_stats {
    long records;     /* Measurement lines kept in the merged log. */
    long duplicates;  /* Lines dropped because an earlier line holds the same measurement. */
    long conflicts;   /* Lines dropped because an earlier line holds the same configuration with
                         a different measurement (the earlier one is kept: see below). */
    int torn;         /* Shard logs whose torn last line (a killed writer) was left out. */
    char conflict[1024]; /* The first conflict: "FILE:LINE kept over FILE:LINE (time_s A vs B, ...)" */
} kr_search_merge_stats;

/*
 * Merges the measurement logs paths[0..n) of job into one log at out. Every input must be a
 * Kareus measurement log (header first) of this job's fingerprint; the first bad one fails the
 * merge with its path:line, what was expected and what was found (KR_EPARSE: not a log or a bad
 * line; KR_EMISMATCH: another job's fingerprint; KR_EINVAL: an empty file, a symlink). One
 * configuration (key, variant, clock, slot, SMs) is kept once: the first in argument order,
 * then line order; later copies are counted as duplicates when their measurement is the same
 * and as conflicts (with the first in st->conflict) when it differs. A torn last line is left
 * out and counted. The merged log is the header kr_search_log_open writes followed by the kept
 * lines as they were, shard by shard, so it resumes and replays like any log. It is written to
 * a new temporary file beside out, fsync'd and renamed over out: never through a symlink, and an
 * existing out must itself be a log of this job (or empty), or nothing is written (KR_EINVAL /
 * KR_EPARSE). Returns KR_OK, the errors above, KR_EIO or KR_ENOMEM.
 */
int kr_search_log_merge(const char *out, const char *const *paths, int n, const kr_job *job,
                        kr_search_merge_stats *st, kr_error *err);

KR_END_DECLS
#endif
