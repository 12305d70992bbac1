/*
 * pipesim.h — the pipeline simulator: executes an iteration plan on the simulated cluster,
 * instruction by instruction, and integrates power over time on every GPU.
 *
 * Two layers:
 *   kr_pipesim_run   the event simulation proper, on given instruction costs: every stage runs
 *                    its instructions in schedule order; an instruction starts when the stage is
 *                    free and its dependencies (F(s−1,m)→F(s,m), B(s+1,m)→B(s,m), chunk
 *                    wrap-around for interleaved 1F1B) have arrived, each cross-stage
 *                    dependency delayed by the p2p transfer time; a GPU that is not computing
 *                    draws the static power.
 *   kr_pipesim_plan  builds those costs from a plan and a backend: each instruction's time and
 *                    energy is the sum over its partitions (× per_layer × the stage's layers) and
 *                    non-partition work, measured at the instruction's clock with the plan's comm
 *                    configs; a clock change is modelled as a settle window in which the
 *                    instruction still runs at the previous clock; p2p times come from the job.
 * Energies in results are per GPU for instructions and whole-cluster for the iteration.
 */
#ifndef KAREUS_PIPESIM_H
#define KAREUS_PIPESIM_H

#include "kareus/backend.h"
#include "kareus/job.h"
#include "kareus/plan.h"
#include "kareus/sched.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* Cost of one instruction, as the simulation consumes it. */
typedef struct kr_pipe_instr {
    kr_instr_kind kind;  /* Forward or backward. */
    int microbatch;      /* Microbatch index. */
    int chunk;           /* Model chunk (interleaved), else 0. */
    int freq_mhz;        /* Clock it runs at (for pictures). */
    double time_s;       /* Duration once started. */
    double energy_j;     /* Energy of one GPU of the stage over that duration. */
} kr_pipe_instr;

/* Input of kr_pipesim_run. */
typedef struct kr_pipe_input {
    kr_schedule schedule;       /* Gives the dependency rules (chunks for interleaved). */
    int stages;                 /* Pipeline stages S. */
    int microbatches;           /* Microbatches M. */
    int virtual_stages;         /* Chunks per stage V (1 unless interleaved). */
    int gpus_per_stage;         /* GPUs each stage runs on (tp·cp·dp). */
    double static_power_w;      /* Power of a GPU that waits (when gpu is NULL). */
    const kr_gpu *gpu;          /* If set, a waiting GPU draws the floor power at the clock it
                                   holds (its previous instruction's; kr_sim_floor_power_w). */
    double p2p_time_s[KR_MAX_STAGES]; /* Transfer time between stage s and s+1 (either direction). */
    int ninstr[KR_MAX_STAGES];  /* Instructions of each stage (2·M·V). */
    kr_pipe_instr *instr[KR_MAX_STAGES]; /* Each stage's instructions in execution order. */
} kr_pipe_input;

/* One executed instruction. */
typedef struct kr_pipe_event {
    int stage;          /* Stage it ran on. */
    int index;          /* Position in the stage's order. */
    kr_instr_kind kind;
    int microbatch;
    int chunk;
    int freq_mhz;
    double ready_s;     /* When its dependencies had arrived. */
    double start_s;     /* When it started (≥ ready and ≥ the stage's previous end). */
    double end_s;       /* When it finished. */
    double energy_j;    /* Energy of one GPU of the stage. */
} kr_pipe_event;

typedef struct kr_pipe_result {
    double time_s;                        /* Iteration time: the last instruction's end. */
    double energy_j;                      /* Whole cluster: every GPU of every stage, static included. */
    double eff_energy_j;                  /* energy_j − static_power · GPUs · time_s. */
    double compute_energy_j;              /* Whole cluster, instructions only (no waiting). */
    int stages;                           /* Stages in the arrays below. */
    double stage_busy_s[KR_MAX_STAGES];   /* Time each stage computed. */
    double stage_idle_s[KR_MAX_STAGES];   /* time_s − busy: bubbles and waiting. */
    double gpu_energy_j[KR_MAX_STAGES];   /* Energy of one GPU of each stage. */
    int nevents;                          /* Events (all stages). */
    kr_pipe_event *events;                /* Stage-major, in execution order (owned). */
    int settle_unpriced;                  /* kr_pipesim_plan on a replay: clock changes whose
                                             settle window could not be priced (the recordings
                                             lack the instruction's configs at the previous
                                             clock); those instructions run wholly at the new
                                             clock. 0 otherwise. */
} kr_pipe_result;

/* Runs the event simulation. Fills *out (free with kr_pipe_result_free). Errors: KR_EINVAL for
 * inconsistent input (an instruction order that can never run, wrong counts, negative costs). */
int kr_pipesim_run(const kr_pipe_input *in, kr_pipe_result *out, kr_error *err);
void kr_pipe_result_free(kr_pipe_result *r);

/* Options of kr_pipesim_plan. Zero-initialised means: the GPU's clock_switch_s settle time, p2p
 * from the job, previous clock at the start of an iteration = the stage's last instruction's
 * clock (steady state). */
typedef struct kr_pipesim_config {
    int no_settle;        /* 1: clock changes are instantaneous. */
    int no_p2p;           /* 1: p2p transfers take no time (lowtime's assumption). */
} kr_pipesim_config;

/*
 * Simulates plan on job with the backend's measurements. The plan must validate against the job
 * (kr_plan_validate is called). Per-instruction costs are also returned through out->events.
 */
int kr_pipesim_plan(const kr_job *job, const kr_plan *plan, kr_backend *backend, const kr_pipesim_config *opts,
                    kr_pipe_result *out, kr_error *err);

/* Time and energy (one GPU) of one instruction at a clock with the given comm settings (the
 * plan's comm entries; baseline variants ignore them). Used by kr_pipesim_plan; exposed so tools
 * can cost single instructions. */
int kr_pipesim_instruction_cost(const kr_job *job, kr_variant variant, int stage, kr_instr_kind kind, int chunk,
                                int freq_mhz, const kr_comm_setting *comm, int ncomm, kr_backend *backend,
                                double *time_s, double *energy_j, kr_error *err);

/* p2p transfer time of one microbatch's activations between stage and stage+1 on job's cluster
 * (the simulator's link model, kr_sim_p2p_time: NVLink inside a node, the node's network share
 * across nodes); stage pp−1 means the interleaved wrap-around to stage 0. 0 with one stage. */
double kr_pipesim_p2p_time(const kr_job *job, int stage);

KR_END_DECLS
#endif
