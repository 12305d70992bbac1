/*
 * plan.h — an iteration plan: for every pipeline stage, its instructions in execution order,
 * each with an SM clock and the comm configuration of each of its partitions.
 *
 * File format: JSON, schema "kareus.plan", version KR_PLAN_VERSION (docs/formats.md):
 *   {"schema": "kareus.plan", "version": 1, "method": "kareus", "variant": "kareus",
 *    "job": {"name", "fingerprint", "gpu", "model", "stages", "microbatches", "schedule",
 *            "virtual_stages"},
 *    "predicted": {"iteration_time_s", "energy_j", "effective_energy_j"[, "bound_j", "gap"]},
 *    "solver": {"cost_model", "unit_time_s", "step"},
 *    "stages": [{"stage": 0, "instructions": [
 *        {"kind": "forward", "microbatch": 0, "chunk": 0, "freq_mhz": 1410,
 *         "time_s": …, "energy_j": …,
 *         "comm": [{"key": "fwd_attn", "slot": "rope_0", "sms": 12}, …],   (+ "kernel": "nccl"
 *                                                      on a setting that runs NCCL; absent: tuned)
 *         "recompute": [{"key": "fwd_attn", …}, …]}   (backward with recomputation only)
 *    ]}]}
 * Energies are whole-cluster joules for the iteration; per-instruction figures are per GPU.
 * Every field with its type, range and default: kr_plan_format_field (`kareus plan format`).
 */
#ifndef KAREUS_PLAN_H
#define KAREUS_PLAN_H

#include <stddef.h>

#include "kareus/backend.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/sched.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_PLAN_VERSION 1
#define KR_PLAN_MAX_COMM 16

/* Comm configuration of one partition key within an instruction. */
typedef struct kr_comm_setting {
    char key[KR_KEY_MAX];         /* Partition key, e.g. "fwd_attn". */
    int recompute;                /* 1: applies to the recomputed forward inside a backward. */
    char slot[KR_SLOT_NAME_MAX];  /* Launch slot name ("none" = after compute). */
    int sms;                      /* Comm SMs (CTAs). */
    int kernel;                   /* kr_comm_kernel (backend.h): tuned (0) or NCCL with sms CTAs;
                                     JSON "kernel", written only for "nccl", absent = tuned. */
} kr_comm_setting;

typedef struct kr_plan_instr {
    kr_instr_kind kind;           /* Forward or backward. */
    int microbatch;               /* Microbatch index, 0-based. */
    int chunk;                    /* Model chunk (virtual stage) for interleaved 1F1B; else 0. */
    int freq_mhz;                 /* SM clock for the whole instruction. */
    double time_s;                /* Predicted duration of this instruction (its option). */
    double energy_j;              /* Predicted energy of one GPU for it. */
    int ncomm;                    /* Entries used in comm. */
    kr_comm_setting comm[KR_PLAN_MAX_COMM];
} kr_plan_instr;

typedef struct kr_plan_stage {
    int ninstr;                   /* Instructions of this stage. */
    kr_plan_instr *instr;         /* In execution order (owned by the plan). */
} kr_plan_stage;

typedef struct kr_plan {
    int version;                  /* KR_PLAN_VERSION. */
    char method[32];              /* "kareus", "perseus", "megatron", "nanobatch", "nanobatch+perseus". */
    char variant[24];             /* Execution variant name (kr_variant_name). */
    char job_name[64];            /* Job it was made for. */
    char job_fingerprint[17];     /* kr_job_fingerprint of that job. */
    char gpu[KR_NAME_MAX];        /* GPU catalog key. */
    char model[KR_NAME_MAX];      /* Model catalog key. */
    int num_stages;               /* Pipeline stages. */
    int num_microbatches;         /* Microbatches per iteration. */
    int virtual_stages;           /* Chunks per stage (1 unless interleaved). */
    char schedule[24];            /* kr_schedule_name. */
    char cost_model[16];          /* Solver cost model that made it ("exact", "lowtime", "fixed"). */
    double unit_time_s;           /* Solver unit time (0 if none). */
    int step;                     /* Solver step (0 = slowest), -1 if not from a solver. */
    double pred_time_s;           /* Predicted iteration time. */
    double pred_energy_j;         /* Predicted energy of the whole cluster per iteration. */
    double pred_eff_energy_j;     /* Predicted effective energy (energy − static × GPU-time). */
    kr_plan_stage *stages;        /* num_stages entries (owned). */
    double pred_bound_j;          /* Solver's proven lower bound on the energy of any plan no
                                     slower than pred_time_s (0: none); JSON "predicted":
                                     "bound_j" and "gap" (energy_j / bound_j − 1). */
} kr_plan;

/* Allocates stages (each with ninstr[s] zeroed instructions) and fills identity fields from
 * job (name, fingerprint, gpu, model, stages, microbatches, schedule). */
int kr_plan_init(kr_plan *plan, const kr_job *job, const int *ninstr, kr_error *err);
void kr_plan_free(kr_plan *plan);
/* Deep copy. */
int kr_plan_copy(kr_plan *dst, const kr_plan *src, kr_error *err);

int kr_plan_read(const char *path, kr_plan *out, kr_error *err);
int kr_plan_read_text(const char *text, const char *name, kr_plan *out, kr_error *err);
/* Writes atomically (temp file + rename). */
int kr_plan_write(const char *path, const kr_plan *plan, kr_error *err);

/* Row i (0-based) of the plan format's description: every field, nested fields after their
 * object or array ("stages[].instructions[].freq_mhz"), from the table the reader and writer
 * use. Returns KR_OK, or KR_ERANGE when i is past the last row. */
int kr_plan_format_field(int i, kr_field_info *out);

/*
 * Checks that a plan fits a job: same fingerprint (unless the plan has none), stage and
 * microbatch counts, every instruction of the job's schedule present and in order, clocks
 * supported by the GPU, comm keys known for the variant with valid slots and SM counts.
 */
int kr_plan_validate(const kr_plan *plan, const kr_job *job, kr_error *err);

/* 1 if two plans are equal in every field (predicted figures compared exactly). */
int kr_plan_equal(const kr_plan *a, const kr_plan *b);

/*
 * Exports the clock schedule in the Zeus pipeline-frequency-optimizer layout, exactly as the
 * published optimizer writes `freqs_pipeline_N.py`: a Python list literal with one list of
 * ('forward'|'backward', MHz) tuples per stage in execution order, then the trailer
 * "# Iteration N total cost: X" / "… total cost with P2P: Y" with the plan's effective and total
 * energy per GPU summed over the stages (whole-cluster figures / gpus_per_stage), N = the plan's
 * step, and a "# kareus: …" comment (job name escaped: printable ASCII only). Zeus's PFO server
 * runs it with ZEUS_PFO_SCHEDULER=PointSolution3D (one list per stage, copied to every rank of
 * the stage). Atomic. Returns KR_OK, KR_EINVAL (gpus_per_stage < 1), KR_EIO, KR_ENOMEM.
 */
int kr_plan_export_zeus(const kr_plan *plan, int gpus_per_stage, const char *path, kr_error *err);

/*
 * Imports the published artifact's plan files for job (docs/formats.md): freqs_path
 * (`freqs_pipeline_N.py`) and, for method "kareus", scheds_path (`scheds_pipeline_N.py`, the
 * activation-checkpointing layout: ('forward', fwd configs…) and ('backward', recomputed fwd
 * configs…, bwd configs…), 2/4 configs with CP 1 and 5/12 with CP > 1; for a job without
 * recomputation the per-microbatch layout: one (('forward', fwd configs…), ('backward', bwd
 * configs…)) pair per microbatch, 2/2 or 5/7 configs). method is "kareus",
 * "perseus", "nanobatch+perseus", "megatron" or "nanobatch" (NULL: kareus with a scheds file,
 * else perseus); baseline methods get their variant's fixed comm settings. The files are read
 * as literals, never evaluated. Instructions must follow the job's schedule order; clocks must
 * be supported by the GPU; slots and SM counts must exist for the key. The trailer gives step
 * (else the number in the file name), the energies (× GPUs per stage) and the iteration time
 * (with − total) / (stages · static power); per-instruction time and energy are 0 (the files do
 * not carry them); cost_model is "artifact". The result passes kr_plan_validate for job.
 * Returns KR_OK; KR_EPARSE (syntax or types: file:line:column, expected, found), KR_EMISMATCH
 * (counts or order differ from the job), KR_ERANGE (clock, SMs, block), KR_EINVAL (method or
 * file combination), KR_EIO, KR_ENOMEM. *out is freed on failure.
 */
int kr_plan_import_artifact(const kr_job *job, const char *freqs_path, const char *scheds_path, const char *method,
                            kr_plan *out, kr_error *err);

/*
 * Writes plan as the artifact's runtime reads it into directory dir (created if needed):
 * `freqs_pipeline_N.py` (as kr_plan_export_zeus) and, for a plan of the kareus variant,
 * `scheds_pipeline_N.py`, N = index if >= 0, else the plan's step (0 if it has none): the
 * activation-checkpointing layout above for jobs with recomputation; without it the artifact's
 * per-microbatch layout, one (('forward', fwd configs…), ('backward', bwd configs…)) pair per
 * microbatch, which its scheduler applies correctly only when every backward of a stage has the
 * same configs (it gives each backward the latest forward's pair), so other plans are refused.
 * Config strings are "<slot>-none-<sm>-1024". The plan is validated against job first. Both
 * files are written atomically; if the second cannot be written the first is removed. The paths
 * written go to freqs_path / scheds_path (may be NULL; scheds_path "" when there is none).
 * Returns KR_OK, kr_plan_validate's codes, KR_EMISMATCH (a key missing from an instruction, or
 * backward configs that differ across microbatches without recomputation, or a partition on NCCL,
 * which the artifact's config strings cannot express: nothing is written, the message names the
 * first such setting), KR_EIO, KR_ENOMEM.
 */
int kr_plan_export_artifact(const kr_plan *plan, const kr_job *job, const char *dir, int index, char *freqs_path,
                            size_t freqs_cap, char *scheds_path, size_t scheds_cap, kr_error *err);

KR_END_DECLS
#endif
