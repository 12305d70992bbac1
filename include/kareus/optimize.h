/*
 * optimize.h — the whole flow on one job, and the five methods compared on equal terms.
 *
 * For each method (design §7) the same backend, search, composition and solver are used; only
 * the execution variant and the knobs differ:
 *   Megatron               sequential execution (compute, then the collective with NCCL's
 *                          default SMs), the highest planning clock everywhere: one plan;
 *   Perseus                sequential execution, one clock per instruction: a frontier;
 *   Nanobatching           two nanobatches, the collective launched at partition start with
 *                          NCCL's default SMs, the highest clock: one plan;
 *   Nanobatching+Perseus   as Nanobatching, one clock per instruction: a frontier;
 *   Kareus                 launch slot and comm SMs per partition chosen with the clock: a
 *                          frontier.
 * Kareus's frontier is the Pareto front of its own solver steps and Nanobatching+Perseus's (a
 * step of N+P is a plan Kareus runs: the kareus variant with every collective on NCCL at its
 * default CTAs and slot), so at every iteration time Kareus uses no more energy than N+P; running
 * Kareus runs N+P too. Under a search restriction (restrict_space) the frontier is Kareus's own.
 * Flow per variant: search every partition (kr_search_job), compose instruction options
 * (kr_compose), build the pipeline DAG with the p2p transfer times as edge lags, solve
 * (kr_solve); single-plan methods take the highest-clock option of every instruction. Chosen
 * plans (fastest, most frugal, the artifact's 10-point frontier) are simulated with the pipeline
 * simulator; the paper's metrics are computed on the simulated 10-point frontiers and on the
 * solver's full frontiers (kr_metric_…).
 */
#ifndef KAREUS_OPTIMIZE_H
#define KAREUS_OPTIMIZE_H

#include "kareus/backend.h"
#include "kareus/job.h"
#include "kareus/search.h"
#include "kareus/solver.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

typedef enum kr_method {
    KR_METHOD_MEGATRON = 0,
    KR_METHOD_PERSEUS = 1,
    KR_METHOD_NANOBATCH = 2,
    KR_METHOD_NANOBATCH_PERSEUS = 3,
    KR_METHOD_KAREUS = 4,
    KR_NUM_METHODS = 5
} kr_method;

const char *kr_method_name(kr_method m);  /* "Megatron", …, "Nanobatching+Perseus", "Kareus" */
const char *kr_method_slug(kr_method m);  /* "megatron", "perseus", "nanobatch", "nanobatch+perseus", "kareus" */
/* Accepts the slug or the name, case-insensitively. KR_EINVAL otherwise. */
int kr_method_parse(const char *s, kr_method *out);
kr_variant kr_method_variant(kr_method m);
/* 1 for the methods that are one plan at the highest clock (Megatron, Nanobatching). */
int kr_method_is_point(kr_method m);

/* Progress: phase ("search", "compose", "solve", "simulate", "write") and a detail line. */
typedef void (*kr_optimize_progress_fn)(void *ud, const char *phase, const char *detail);

typedef struct kr_optimize_config {
    unsigned methods;            /* Bit (1u << kr_method) per method to run; 0 = all five. The
                                    metrics need Megatron and Perseus (added when missing). */
    int strategy_set;            /* 0: exhaustive on the simulator and on a replay (every recorded
                                    configuration), bo on a GPU. */
    kr_strategy strategy;        /* Search strategy when strategy_set. */
    unsigned long long seed;     /* Search seed (default 1). */
    kr_cost_model cost_model;    /* Solver cost model (default exact). */
    double unit_time_s;          /* Solver unit (default 0.001). */
    int exchange;                /* Solver's pairwise knob exchanges (kr_solver_config.exchange):
                                    default −1 (off): on the default job they change the frontier
                                    by ~1e-5 relative and cost up to 100× the solve time on CP jobs. */
    kr_backend *backend;         /* NULL: the simulator of the job. Not owned. */
    const char *out_dir;         /* NULL: nothing written. Otherwise created; see docs/formats.md. */
    const char *log_path;        /* Measurement log (default out_dir/measurements.jsonl; NULL with
                                    no out_dir: none). */
    int pictures;                /* With out_dir: SVG pictures and report.html. */
    kr_optimize_progress_fn progress; /* May be NULL. */
    void *progress_ud;
    unsigned restrict_space;     /* kr_search_config.restrict_space of every search (KR_SEARCH_…
                                    flags: Kareus's knobs fixed, an ablation). 0: the whole space;
                                    then Kareus's frontier also takes Nanobatching+Perseus's steps
                                    where they are better (kr_method_result.steps_own), which it
                                    does not under a restriction. */
} kr_optimize_config;

/* Defaults as documented above. */
void kr_optimize_config_default(kr_optimize_config *o);

#define KR_OPT_MAX_PLANS 16

/* One chosen plan: its solver prediction and its pipeline simulation. */
typedef struct kr_opt_plan {
    char label[24];        /* "fastest", "frugal", "10pt-1" … "10pt-10", "max-clock". */
    int step;              /* Solver step (0 for single-plan methods). */
    double pred_time_s;    /* Solver (or option-sum) iteration time. */
    double pred_energy_j;  /* … and whole-cluster energy. */
    double sim_time_s;     /* Pipeline simulation, settle and p2p included. */
    double sim_energy_j;
    char file[128];        /* Plan file relative to out_dir ("" when not written). */
    double pred_bound_j;   /* Solver's lower bound for pred_time_s (0: none; solver.h). */
    char source[12];       /* Kareus: "kareus" for its own step, "n+p" for a step taken from
                              Nanobatching+Perseus (executed as the kareus variant on NCCL);
                              other methods: their slug. */
} kr_opt_plan;

typedef struct kr_method_result {
    kr_method method;
    int enabled;              /* 0 when not run. */
    int nsteps;               /* Frontier points (1 for single-plan methods). */
    double *time_s;           /* Predicted frontier: iteration time of every step (owned). */
    double *energy_j;         /* … whole-cluster energy (owned). */
    int nplans;
    kr_opt_plan plans[KR_OPT_MAX_PLANS];
    int fastest, frugal;      /* Indices into plans. */
    int nten;                 /* The 10-point frontier: indices into plans. */
    int ten[10];
    long evaluated, space;    /* Search totals over the variant's partitions. */
    double solve_s;           /* Solver wall time. */
    int steps_own;            /* Steps from the method's own solve (Kareus: the others are
                                 Nanobatching+Perseus's steps its frontier takes; = nsteps for
                                 every other method). */
    int *from_np;             /* Kareus: per step, 1 if taken from Nanobatching+Perseus (owned;
                                 NULL for the other methods). */
} kr_method_result;

/* The paper's figures of one method (NaN where a figure does not exist). */
typedef struct kr_metric_row {
    double mt_time_red, mt_energy_red;   /* max throughput vs Megatron (simulated) */
    double iso_time_10pt, iso_energy_10pt; /* vs Perseus, simulated 10-point frontiers */
    double iso_time_full, iso_energy_full; /* vs Perseus, predicted full frontiers */
    double robust_mean, robust_max;      /* vs Perseus, predicted full frontiers */
} kr_metric_row;

/* The search of one partition, as the summary lists it. */
typedef struct kr_opt_search {
    kr_variant variant;
    char key[KR_KEY_MAX];
    long evaluated, space;    /* Configurations used, and in the space. */
    long frontier_points;     /* On its (time, effective energy) frontier. */
    long recorded;            /* A replay: the recorded configurations (0: not a replay). */
} kr_opt_search;

typedef struct kr_optimize_result {
    kr_job job;
    kr_strategy strategy;
    kr_cost_model cost_model;  /* The run's settings, as the summary records them. */
    double unit_time_s;
    unsigned long long seed;
    char backend[32];          /* kr_backend_name of the measuring backend. */
    int pictures;              /* 1: pictures drawn (and listed in the summary). */
    int settle_unpriced;       /* Replay: clock changes simulated without their settle window. */
    int nsearch;
    kr_opt_search *search;     /* Every partition searched, variant by variant (owned). */
    kr_method_result m[KR_NUM_METHODS];
    kr_metric_row rows[KR_NUM_METHODS];
    double max_time_err;       /* Largest |simulated − predicted| / predicted over the plans. */
    double max_energy_err;
    double wall_s;             /* Whole run. */
    double search_s, compose_s, solve_s, simulate_s, write_s;
} kr_optimize_result;

/*
 * The stages of the flow as kr_optimize runs them, shared with the single-step commands
 * (`kareus search`, `compose`, `solve`, `simulate`): search is kr_search_job, compose kr_compose,
 * simulate kr_pipesim_plan, write report.h; the calls below are what the solve stage and the
 * written plans add, so a command and the whole flow configure and name them alike.
 *
 * kr_optimize_solver_config: the solver configuration of the flow for job: the static power per
 * GPU and the GPUs per stage are the job's (job NULL: the static power of the built-in default
 * job, kr_job_default, and one GPU per stage); cost model, unit time and exchanges are o's (o
 * NULL: those of kr_optimize_config_default).
 */
void kr_optimize_solver_config(const kr_job *job, const kr_optimize_config *o, kr_solver_config *cfg);

/* The path of the plan of solver step `step` in dir, as kr_optimize_write_step_plans names it:
 * dir/plan_NNNNN.json. KR_EINVAL when it does not fit cap. */
int kr_optimize_step_plan_path(char *buf, size_t cap, const char *dir, int step);

/*
 * Writes the plans of steps[0..n) of frontier f (solved on dag from opts) into dir, created if
 * needed: plan_NNNNN.json (kr_plan_write, carrying job's identity; job may be NULL) and the same
 * plan as Zeus reads it, freqs_pipeline_NNNNN.py (kr_plan_export_zeus with gpus_per_stage).
 * Stops at the first failure: KR_EIO naming the path, or kr_solve_plan's error.
 */
int kr_optimize_write_step_plans(const char *dir, const kr_solve_result *f, const kr_dag *dag, const kr_options *opts,
                                 const int *steps, int n, const kr_job *job, int gpus_per_stage, kr_error *err);

/*
 * Runs the flow. Returns KR_OK or the failing step's code with its message (the step named).
 * Free with kr_optimize_result_free.
 */
int kr_optimize(const kr_job *job, const kr_optimize_config *o, kr_optimize_result *out, kr_error *err);
void kr_optimize_result_free(kr_optimize_result *r);

KR_END_DECLS
#endif
