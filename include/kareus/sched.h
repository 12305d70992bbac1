/*
 * sched.h — pipeline schedules: the order in which one stage runs its instructions.
 *
 *   1F1B         synchronous 1F1B as DeepSpeed's TrainSchedule / lowtime's Synchronous1F1B:
 *                stage s runs min(S−s, M) warm-up forwards, then alternates B and F, then
 *                the remaining backwards (S=4, M=6, stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5).
 *   GPipe        all forwards F0..F(M−1), then all backwards B0..B(M−1).
 *   interleaved  Megatron's interleaved 1F1B with V model chunks per stage (M a multiple of S):
 *                virtual microbatch k runs chunk (k mod SV) div S of microbatch
 *                (k div SV)·S + k mod S (backward chunks reversed); (S−s−1)·2 + (V−1)·S
 *                warm-up forwards, then F/B pairs, then the remaining backwards.
 */
#ifndef KAREUS_SCHED_H
#define KAREUS_SCHED_H

#include "kareus/job.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

typedef enum kr_instr_kind { KR_INSTR_FORWARD = 0, KR_INSTR_BACKWARD = 1 } kr_instr_kind;

const char *kr_instr_kind_name(kr_instr_kind k); /* "forward" / "backward" */
int kr_instr_kind_parse(const char *s, kr_instr_kind *out);

/* One instruction of a stage's schedule. */
typedef struct kr_sched_item {
    kr_instr_kind kind; /* Forward or backward. */
    int microbatch;     /* Microbatch, 0-based. */
    int chunk;          /* Model chunk (virtual stage) on this stage, 0-based. */
} kr_sched_item;

/* Most instructions one stage's schedule may have (2 × microbatches × virtual_stages). */
#define KR_SCHED_MAX_LENGTH (1 << 22)

/* Checks stages ≥ 1, microbatches ≥ 1, virtual ≥ 1 (= 1 unless interleaved), for
 * interleaved: virtual ≥ 2 and microbatches a multiple of stages, and that a stage's
 * length 2 × microbatches × virtual_stages is at most KR_SCHED_MAX_LENGTH (KR_ERANGE). */
int kr_sched_check(kr_schedule sch, int stages, int microbatches, int virtual_stages, kr_error *err);

/* Instructions per stage: 2 × microbatches × virtual_stages, or -1 when an argument is < 1 or
 * the length would exceed KR_SCHED_MAX_LENGTH (never an overflowed int). */
int kr_sched_length(int microbatches, int virtual_stages);

/* Writes stage's execution order into out (cap ≥ kr_sched_length). Returns the count or a
 * negative status. */
int kr_sched_order(kr_schedule sch, int stages, int microbatches, int virtual_stages, int stage,
                   kr_sched_item *out, int cap, kr_error *err);

KR_END_DECLS
#endif
