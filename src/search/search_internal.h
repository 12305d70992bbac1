/*
 * search_internal.h — what the files of the search module share (not public API): measurement
 * records and the log reader used by both the resumable log and the replay backend, the job
 * catalogs used to validate records, and the per-partition search context the strategies drive.
 */
#ifndef KR_SEARCH_INTERNAL_H
#define KR_SEARCH_INTERNAL_H

#include "kareus/search.h"
#include "util/util.h"

/* ---- measurement records ------------------------------------------------------------------ */

/* One measurement as a log line holds it (slot by name, so the artifact's lines fit too). */
typedef struct kr__mrec {
    char key[KR_KEY_MAX];
    kr_variant variant;
    int freq_mhz;
    char slot[KR_SLOT_NAME_MAX]; /* "none" for after-compute / no collective. */
    int sms;                     /* 0 for work without a collective. */
    int kernel;                  /* kr_comm_kernel ("kernel" field; absent: tuned). */
    double time_s, energy_j, time_sd_s, energy_sd_j;
    int repeats;
    int file;                    /* Index of the file it came from (replay; 0 for the log). */
    int line;                    /* 1-based line in that file. */
} kr__mrec;

typedef struct kr__mrecs {
    kr__mrec *r;
    size_t n, cap;
} kr__mrecs;

/* The header line's schema and version (mlog.c; mlog_merge.c writes the same header). */
#define MLOG_SCHEMA "kareus.mlog"
#define MLOG_VERSION 1

/* The partitions of a job that records may name: the three variants' layer partitions and the
 * non-partition work. */
typedef struct kr__catalogs {
    kr_partition_set var[3]; /* by kr_variant */
    int ok[3];               /* 0 if that variant's catalog could not be built (odd microbatch) */
    kr_partition_set nonpart;
} kr__catalogs;

int kr__catalogs_build(const kr_job *job, kr__catalogs *c, kr_error *err);
/* The partition for (key, variant), or NULL. */
const kr_partition *kr__catalogs_find(const kr__catalogs *c, const char *key, kr_variant v);

/* Options of kr__mlog_parse. */
typedef struct kr__mparse {
    const char *path;          /* File name for messages. */
    int file;                  /* Stored in each record. */
    const kr_job *job;         /* For the fingerprint, catalogs and spaces. */
    const kr__catalogs *cat;
    const char *default_key;   /* Key of artifact-format lines (NULL: such lines are errors). */
    int check_space;           /* 1: the configuration must lie in the partition's search space. */
} kr__mparse;

/*
 * Parses the JSONL text (len bytes) and appends its records to out. A last line without a
 * newline that does not parse is a torn line: *valid_len is set to where it starts and *torn to
 * 1 (otherwise *valid_len = len, *torn = 0); *complete_last is 1 if the last line parsed but
 * had no newline. Returns KR_OK or the first error with path:line and the field.
 */
int kr__mlog_parse(const kr__mparse *o, const char *text, size_t len, kr__mrecs *out, size_t *valid_len, int *torn,
                   int *complete_last, kr_error *err);

/* Sorts by (key, variant, freq, slot, sms, kernel, file, line) and drops later duplicates; returns how
 * many were dropped and the line of the first dropped one in *first_dup_line (file 0). */
size_t kr__mrecs_dedupe(kr__mrecs *m, int *first_dup_line);
int kr__mrecs_push(kr__mrecs *m, const kr__mrec *r);
/* Record for (key, variant, freq, slot, sms, kernel) in a deduped, sorted set, or NULL. */
const kr__mrec *kr__mrecs_find(const kr__mrecs *m, const kr__mrec *probe);
/* Sets the lookup fields of a record from a partition and a config (slot by name; slot "none"
 * and sms 0 for work without a collective). */
void kr__mrec_from_config(kr__mrec *r, const kr_partition *p, const kr_config *c);

/* Extra fields of a line we write. */
typedef struct kr__mextra {
    const char *backend;
    const char *strategy;
    unsigned long long seed;
    int batch;
    const char *selected; /* why the strategy chose it: "init", "hvi_eff", "exhaustive", … */
    double pred_time_s;   /* NaN when there is no prediction */
    double pred_eff_energy_j;
    int has_coll;         /* 1 if the partition has a collective (block 1024, else 0) */
} kr__mextra;

/* Appends one record to the log (a line; fflush, and fsync unless the log syncs per batch) and
 * to its in-memory set. */
int kr__search_log_append(kr_search_log *log, const kr__mrec *r, const kr__mextra *x, kr_error *err);
/* The in-memory records of the log (in file order, deduped at open). */
const kr__mrecs *kr__search_log_records(const kr_search_log *log);
const kr__catalogs *kr__search_log_catalogs(const kr_search_log *log);
/* fsync of everything appended so far (a no-op when nothing is pending). */
int kr__search_log_flush(kr_search_log *log, kr_error *err);

/* Replay backends: 1 if b holds a recording of configuration c of partition p, 0 if not, -1 if
 * b is not a replay backend. kr__replay_files: the recordings' paths ("" otherwise). */
int kr__replay_recorded(const kr_backend *b, const kr_partition *p, const kr_config *c);
const char *kr__replay_files(const kr_backend *b);

/* ---- space coordinates (space.c) ----------------------------------------------------------- */

/* Configuration idx as the surrogates see it: clock index, category (kernel · nslots + slot, the
 * launch as one categorical; the baseline's own when it is off the grid) and SM index (-1 for
 * the baseline off the grid: its count is not on the list). */
void kr__space_coords(const kr_search_space *s, long idx, int *ci, int *cat, int *mi);
/* Number of categories kr__space_coords gives. */
int kr__space_ncat(const kr_search_space *s);
/* The grid configuration at (clock ci, category cat < nkernels · nslots, SM index mi). */
long kr__space_grid_index(const kr_search_space *s, int ci, int cat, int mi);

/* ---- the search context ------------------------------------------------------------------- */

#define KR__SENS_MAX KR_SEARCH_SENS_MAX /* sensitivity features (bo_design.c) */

typedef struct kr__search {
    const kr_job *job;
    const kr_partition *p;
    kr_backend *b;
    kr_search_log *log;
    const kr_search_config *opt;
    kr_search_space sp;
    long size;
    long cap;              /* evaluation cap */
    long *cached;          /* per configuration: index of its log record, or -1 */
    unsigned char *done;   /* per configuration: 1 once evaluated, or (a search restricted to
                              recorded points) never available; strategies only pick !done */
    double *t, *e, *ee;    /* per configuration: time, energy, effective energy (when done) */
    kr_measured *pts;      /* evaluated points in evaluation order */
    long n;                /* evaluated */
    long measured, from_log;
    int batch;             /* current batch (0 = initial design) */
    int index, count;      /* position in a job-wide search (progress) */
    char stop[48];
    double gain_eff, gain_total; /* bo: last remaining-gain estimates / (t_min·|E_min|), or NaN */
    int prior;                   /* bo: 1 with a prior */
    double prior_b[3];           /* bo: fitted slopes (time, eff energy, total energy) */
    int nsens;                   /* bo: sensitivity features, their GPU parameters and fitted */
    int sens_param[KR__SENS_MAX]; /* coefficients (time, eff energy, total energy; a coefficient */
    double sens_c[3][KR__SENS_MAX]; /* of 1 is the constant + its uncertainty) */
    int calib;                   /* bo: the prior's constants are calibrated (bo_calib.c) */
    double theta[KR__SENS_MAX];  /* bo: their calibrated relative changes */
} kr__search;

/* Evaluates configuration idx (from the log if recorded, else measured and logged). A
 * configuration already evaluated is a no-op. why/pred_* go to the log line. */
int kr__search_eval(kr__search *s, long idx, const char *why, double pred_time_s, double pred_eff_energy_j,
                    kr_error *err);
/* Configurations the cap still allows. */
long kr__search_left(const kr__search *s);
/* Ends a batch: makes the log durable (when it syncs per batch) and reports progress through
 * the options' callback. Returns KR_OK or KR_EIO. */
int kr__search_batch_end(kr__search *s, int done, kr_error *err);

/* Strategies: each evaluates configurations through kr__search_eval and sets s->stop. */
int kr__search_exhaustive(kr__search *s, kr_error *err);
int kr__search_bo(kr__search *s, kr_error *err);
int kr__search_artifact(kr__search *s, kr_error *err);

/* ---- bo's designs and prior (bo_design.c) -------------------------------------------------- */

/* The margin of bo's reference points: a frontier's nadir plus this fraction of its range. */
#define KR__REF_MARGIN 0.1

/* n0 configurations Latin-hypercube style over (clock, comm SMs), slots balanced (no prior). */
int kr__search_lhs_design(kr__search *s, long n0, kr_error *err);
/* The prior, as given (theta NULL) or with its calibrated constants s->sens_param[j] scaled by
 * (1 + theta[j]): the simulator on a copy of the prior job (clamped to the physical limits), or
 * prior_at_fn. kr__prior_at_measure predicts configuration idx (its config into *c). */
typedef struct kr__prior_at {
    const kr__search *s;
    int theta;                    /* 1: scaled */
    kr_job job;                   /* the scaled prior job (a simulator prior) */
    double factor[KR__SENS_MAX];
} kr__prior_at;
void kr__prior_at_init(kr__prior_at *a, const kr__search *s, const double *theta);
int kr__prior_at_measure(const kr__prior_at *a, long idx, kr_config *c, kr_measurement *m, kr_error *e);
/* The prior's prediction (theta as above) of every configuration: pr[0] time, pr[1] effective
 * energy, pr[2] total energy (s->size each, caller's memory); ppos[k] = 1 if every pr[k] value
 * is > 0. An error names the partition and the configuration. */
int kr__search_prior_compute(kr__search *s, const double *theta, double *const pr[3], int ppos[3], kr_error *err);
/* The prior's sensitivity features (bo_design.c: the simulator with each uncertain constant of
 * the prior's GPU at ±its stated uncertainty; *sens_out is malloc'd). */
int kr__search_prior_sens(kr__search *s, double **sens_out, int *np, int *par, kr_error *err);
/* Up to k of the best frontier points of the predictions pr (greedy by predicted hypervolume,
 * both planes), in order of choice, into picks (k entries); *picked_n says how many. With
 * from_done the measured configurations start the picked set. Measures nothing. */
int kr__search_front_picks(kr__search *s, const double *const pr[3], int k, int from_done, long *picks, int *picked_n,
                           kr_error *err);
/* Measures picks[0..n) in order while the budget lasts (the prior's design). */
int kr__search_prior_eval_picks(kr__search *s, const double *const pr[3], const long *picks, int n, kr_error *err);
/* Calibrates the simulator prior's uncertain constants (s->sens_param) to the measured points:
 * theta (s->nsens relative changes, in: the start, out: the estimate; bo_calib.c). */
int kr__search_prior_calibrate(kr__search *s, double *theta, kr_error *err);
/* The grid that completes a prior design of fewer than k frontier points. */
int kr__search_prior_grid(kr__search *s, kr_error *err);

/* ---- 2-D frontiers for acquisition functions (front2.c) ------------------------------------ */

/* A frontier in one plane, kept sorted (t ascending, y descending), with a reference point. */
typedef struct kr__front2 {
    int m, cap;
    double *t, *y;
    double rt, ry; /* reference point */
    double hv;     /* hypervolume against it (set by the caller with kr__front2_hv) */
} kr__front2;

/* Inserts (t, y) unless dominated, dropping the points it dominates. KR_OK or KR_ENOMEM. */
int kr__front2_add(kr__front2 *f, double t, double y);
/* Hypervolume improvement of the point (t, y) inside the reference box. O(log m + k). */
double kr__front2_hvi(const kr__front2 *f, double t, double y);
/* Hypervolume of f inside the reference box. */
double kr__front2_hv(const kr__front2 *f);
/* Sets f's reference point (f->m > 0): its nadir plus margin × its range in each coordinate
 * (a degenerate range: margin × the magnitude). */
void kr__front2_set_ref(kr__front2 *f, double margin);
void kr__front2_free(kr__front2 *f);

#endif
