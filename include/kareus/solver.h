/*
 * solver.h — the iteration time–energy frontier: Phillips–Dessouky min-cut steps on the
 * activity-on-arc form of a pipeline DAG, one unit_time per step, from the all-slowest plan
 * down to the fastest (design §6; docs/solver.md).
 *
 * Two cost models:
 *   KR_COST_EXACT    (default) each instruction's cost is the lower convex hull of its real
 *                    options (effective energy vs time, times rounded down to whole units as
 *                    lowtime does); the min cut runs over
 *                    every arc that is tight in the earliest-start schedule; after each step the
 *                    plan's knobs are the cheapest real options that fit their durations, then a
 *                    final pass moves each knob to the cheapest option that fits its slack, and
 *                    the reported energy is the true energy of those knobs.
 *   KR_COST_LOWTIME  ml-energy/lowtime 0.2.0 exactly (shared/reference/lowtime-solver.md):
 *                    float floor quantization, cost net of static power at the quantized time,
 *                    candidate filtering, the fitted exponential model, its capacities
 *                    (INF = 10000, ε = 1e-6), the two-phase max flow with lower bounds on the
 *                    critical arcs, the source-minimal cut, reduce_durations without rollback
 *                    and its stopping rules.
 *
 * Energy accounting (design §1): options are per GPU with static power included. For a plan
 * with iteration time T, every GPU of every stage draws P_static while idle, so
 *   energy  = G · (Σ_ops E_op + P_static · (S·T − Σ_ops t_op))     (whole cluster)
 *   eff     = energy − G·S·T·P_static = G · Σ_ops (E_op − P_static·t_op)
 * with G GPUs per stage (tp·cp·dp) and S stages.
 */
#ifndef KAREUS_SOLVER_H
#define KAREUS_SOLVER_H

#include "kareus/dag.h"
#include "kareus/options.h"
#include "kareus/plan.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

typedef enum kr_cost_model { KR_COST_EXACT = 0, KR_COST_LOWTIME = 1 } kr_cost_model;

const char *kr_cost_model_name(kr_cost_model m); /* "exact" / "lowtime" */
int kr_cost_model_parse(const char *s, kr_cost_model *out);

typedef struct kr_solver_config {
    kr_cost_model cost_model; /* KR_COST_EXACT by default. */
    double unit_time_s;       /* Time step, > 0 (e.g. 0.001). */
    double static_power_w;    /* P_static per GPU, >= 0 (A100: 85 W). */
    int gpus_per_stage;       /* G: GPUs per stage for whole-cluster energy (>= 1). */
    int final_pass;           /* Exact mode: 1 = move knobs to cheaper options within slack. */
    int exchange;             /* Exact mode, with final_pass: pairwise knob exchanges and the
                                 window search after it; 0 = only up to 256 instructions
                                 (default), 1 = always, −1 = never. */
    int max_steps;            /* Stop after this many steps (0: run to the end). */
    int bound_refine;         /* Lower bound: the relaxation runs on unit / bound_refine
                                 (0: the default, min(8, 2048 / instructions), at least 1, up
                                 to 512 instructions, 1 above);
                                 −1: no bound (bound_j = INFINITY). */
    int threads;              /* Exact mode: 2 = a second thread records each step (its
                                 rounding passes and plan) while the next cuts are found, 1 =
                                 one thread, 0 = automatic (2 from KR_SOLVE_THREAD_OPS
                                 instructions up when two or more CPUs are online). The
                                 result is the same in every case. */
    int polish;               /* Exact mode, with final_pass: after the trace, each step's plan
                                 is compared with its neighbours' plans carried to its makespan,
                                 and the cheaper kept (docs/solver.md); 0 = where the exchange
                                 passes run (default), 1 = always, −1 = never. */
} kr_solver_config;

/* exchange = 0 (and polish = 0): the largest graph, in instructions, where the exchange passes
 * (and the frontier's polish) run. */
#define KR_SOLVE_EXCHANGE_OPS 256

/* threads = 0: the graph size from which the recording thread runs (below it, handing each
 * step over costs about what recording it does). */
#define KR_SOLVE_THREAD_OPS 4096

/* Defaults: exact, 1 ms, 85 W, 1 GPU per stage, final pass on, no step limit. */
void kr_solver_config_default(kr_solver_config *cfg);

/* One point of the frontier. */
typedef struct kr_solver_step {
    int step;              /* 0 = all slowest; then one per solver iteration. */
    long quant_time;       /* Iteration time in units (the solver's own figure). */
    double time_s;         /* lowtime: quant_time × unit; exact: knob_time_s. */
    double cost_change_j;  /* The step's model cost change (0 for step 0). */
    double model_cost_j;   /* Σ model cost of all instructions (one GPU per stage). */
    double model_energy_j; /* G·(model_cost + S·quant_time·unit·P_static). */
    double knob_time_s;    /* Critical path of the assigned knobs at their real times. */
    double energy_j;       /* True whole-cluster energy of the knobs at knob_time_s. */
    double eff_energy_j;   /* True whole-cluster effective energy of the knobs. */
    /* Proven lower bound on the whole-cluster energy of every plan of these options (one per
     * instruction, static power charged for its own makespan) whose real makespan is at most
     * knob_time_s: the convex-hull relaxation (docs/solver.md, "Lower bound"). INFINITY
     * when no bound is known (a step limit stopped the lowtime mode's relaxation run). */
    double bound_j;
    double gap;            /* energy_j / bound_j − 1 (>= 0 up to rounding; NAN without a bound). */
    int dominated;         /* 1 when another step is no slower (knob_time_s) and uses less energy
                              (energy_j), or equal in both and earlier: the step is kept (its
                              index is its identity) but flagged; selection rules pick from the
                              Pareto front only. */
} kr_solver_step;

/* The frontier and the plan of every step. */
typedef struct kr_solve_result {
    kr_cost_model cost_model;
    double unit_time_s, static_power_w;
    int gpus_per_stage, num_stages;
    int nops;               /* Instructions (DAG nodes 2..n-1, in node order). */
    int nsteps;             /* Steps (step 0 included). */
    kr_solver_step *steps;  /* nsteps entries (owned). */
    /* The plan of every step: read it with kr_solve_result_option(s). Stored compactly: every
     * KR_SOLVE_PLAN_SNAP-th step in full, every other step as the instructions whose option
     * differs from the step before (1–2 % of them per step on the golden pipelines; the full
     * steps × instructions table this replaces was 1 GB at (32,256)). */
    int *plan_snap;         /* ceil(nsteps / KR_SOLVE_PLAN_SNAP) × nops option indices (owned). */
    long *plan_off;         /* nsteps + 1: step k's changes are pairs plan_off[k] .. plan_off[k+1) (owned). */
    int *plan_chg;          /* (instruction index node − 2, option index) pairs (owned). */
    int *plan_last;         /* nops: the last step's options (owned; for appending). */
    size_t plan_cap[3];     /* Allocated entries of plan_snap, plan_off, plan_chg (internal). */
    double solve_s;         /* Wall time of the solve (setup excluded: fits and DAG). */
    double setup_s;         /* Wall time of the setup (lowtime fits, hulls). */
    int stop_reason;        /* 0 exhausted, 1 step limit, 2 infeasible flow (lowtime). */
    /* Lower-bound table (kr_solve_result_bound): for quantized deadlines D in
     * [bound_dlo, bound_dlo + nbound), bound_min[D − bound_dlo] = the least whole-cluster
     * energy the relaxation allows with a quantized makespan <= D; the real makespan T maps
     * to D = floor(T / unit + bound_slack); no plan is faster than bound_tfast_s. */
    long bound_dlo;
    int nbound;
    double *bound_min;      /* nbound entries (owned); NULL: no bound. */
    double bound_unit_s;    /* The relaxation's time unit. */
    double bound_slack, bound_tfast_s;
    int bound_complete;     /* 1: the table reaches the least quantized makespan. */
} kr_solve_result;

/*
 * Traces the frontier of dag (finalized; nodes 2.. are instructions whose (stage, kind,
 * chunk) select their set in opts). Lags on the DAG's edges are fixed durations (rounded up
 * to whole units; the lowtime mode requires zero lags as lowtime has none).
 * Returns KR_OK, KR_EINVAL (bad config, a node without options, lags in lowtime mode),
 * KR_EINFEASIBLE (a lowtime fit failed), KR_ECYCLE or KR_ENOMEM. Free with kr_solve_result_free.
 */
int kr_solve(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out,
             kr_error *err);
void kr_solve_result_free(kr_solve_result *f);

/*
 * The lower bound (as kr_solver_step.bound_j) for a real makespan of at most time_s, from a
 * solved frontier: INFINITY when no plan can be that fast, 0 when f carries no bound table
 * (an empty result).
 */
double kr_solve_result_bound(const kr_solve_result *f, double time_s);

/*
 * Improves the plan for one deadline (issue 15): from each of the 4 undominated steps of f
 * nearest below deadline_s, a local search for that budget — each op slowed into the room the
 * deadline leaves, pairwise exchanges, and branch and bound over windows of 6 and of 8 nearby
 * ops centred on every op, repeated while the energy falls (at most 8 rounds) — and, on graphs
 * of up to 256 instructions, 32 seeded kicks (random ops sped up, then the search again). When
 * the best result uses less energy than the cheapest step meeting the deadline, it is appended
 * to f as a new step (its figures, plan, bound and gap, with time_s its real makespan in both
 * cost models; dominated flags recomputed) and *step_out is its index; otherwise *step_out is
 * that cheapest step. dag, opts and cfg (static power, GPUs per stage) must be those f was
 * solved with. Cost: 0.02–0.6 s CPU per deadline on the golden (2,4) … (4,8), 2–3 s at (8,64),
 * about 16 s at (16,128) and 5 min at (32,256) (docs/solver.md).
 * Returns KR_OK, KR_ERANGE (no step meets the deadline), KR_EINVAL (another DAG) or KR_ENOMEM.
 */
int kr_solve_refine(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *f,
                    double deadline_s, int *step_out, kr_error *err);

#define KR_SOLVE_PLAN_SNAP 64

/* The option index assigned to instruction node v (>= 2) at step k (−1 if out of range).
 * Cost: the changes of up to KR_SOLVE_PLAN_SNAP steps; for a whole plan use
 * kr_solve_result_config. */
int kr_solve_result_option(const kr_solve_result *f, int step, int node);

/* Fills out[0 .. nops) with the option of every instruction (node v at out[v − 2]) at step k.
 * Returns KR_OK or KR_ERANGE (bad step). */
int kr_solve_result_config(const kr_solve_result *f, int step, int *out);

/* Writes the frontier as CSV (atomic): step,quant_time,time_s,cost_change_j,model_cost_j,
 * model_energy_j,knob_time_s,energy_j,eff_energy_j,bound_j,gap,dominated (bound_j and gap
 * empty when unknown; dominated 0/1). */
int kr_solve_result_write_csv(const kr_solve_result *f, const char *path, kr_error *err);
/* The same with two columns appended, source (source[i], e.g. "kareus" or "n+p") and
 * source_step (source_step[i]): where step i of a frontier merged from several came from
 * (kareus optimize's Kareus frontier). source NULL: as kr_solve_result_write_csv. */
int kr_solve_result_write_csv_sourced(const kr_solve_result *f, const char *const *source, const int *source_step,
                                      const char *path, kr_error *err);

/* ---- plans and selection ------------------------------------------------------------- */

/*
 * Picks steps of a frontier by a comma-separated list of rules (duplicates removed, the result
 * sorted by step):
 *   fastest       the step with the shortest time (the lower energy on ties)
 *   frugal        the step with the lowest energy (whole cluster)
 *   N             N steps spread evenly in time along the Pareto front of (time, energy)
 *   all           every step
 *   deadline=S    the lowest-energy step with time <= S seconds (a frontier step: call
 *                 kr_solve_refine(…, S, …) first for a plan made for S, as `kareus solve` does
 *                 by default up to 4,096 instructions)
 *   budget=J      the fastest step with energy <= J joules
 *   artifact10    the Kareus artifact's 10-point rule (kareus-method.md §6) on the part of the
 *                 frontier the artifact's lowtime run covers — from the energy-minimal step m to
 *                 the fastest (steps slower than m cost both time and energy; step 0 is never
 *                 taken): with N = nsteps − m plans, stride = ceil(N/15), samples N−1,
 *                 N−1−stride, … (at most 15), sorted ascending, sample positions 0,2,4,6,8 dropped
 * Writes up to cap step indices into steps; returns the count or a negative status: KR_EPARSE
 * (unknown rule, bad number), KR_ERANGE (no step meets a deadline or budget, with the
 * closest one in the message), KR_ERANGE (cap too small).
 */
int kr_solve_select(const kr_solve_result *f, const char *rules, int *steps, int cap, kr_error *err);

/*
 * Builds the plan of one step: every stage's instructions in execution order (DAG node order)
 * with the clock, time, energy and comm settings (recompute ones included) of the option
 * assigned, and the step's predicted figures. job may be NULL: the plan then carries no job
 * identity (name, fingerprint, GPU, model) and takes stages, microbatches and schedule from the
 * DAG. The method is "kareus" when options carry comm settings, "perseus" otherwise.
 * Returns KR_OK, KR_ERANGE (bad step), KR_EMISMATCH (job and DAG differ) or KR_ENOMEM.
 */
int kr_solve_plan(const kr_solve_result *f, const kr_dag *dag, const kr_options *opts, int step,
                  const kr_job *job, kr_plan *out, kr_error *err);

KR_END_DECLS
#endif
