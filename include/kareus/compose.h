/*
 * compose.h — instruction options from partition frontiers (design §6): for every stage and
 * forward/backward (and model chunk), the options at each clock are the Minkowski sum of the
 * instruction's partitions' per-clock frontiers, each scaled by its executions (per_layer ×
 * the layers of the stage or chunk), plus the stage's non-partition work measured at the same
 * clock with its fixed configuration, plus — for backward with full recomputation — the
 * recomputed forward partitions (their own configurations). Pruned on (time, effective energy)
 * after every key (never the full cross product; exact, as the Pareto set of a Minkowski sum
 * is that of the sum of Pareto sets), then the union over clocks pruned again. Every option
 * keeps its provenance: the clock and each key's slot and SMs (recompute keys flagged).
 *
 * Deliberate differences from the published artifact's composition (kareus-method.md §5, §11):
 * no 1.15 overhead multiplier; the embedding backward counted once (the artifact adds it twice
 * on stage 0); the loss backward counted (the artifact leaves it out); pipeline p2p is not part
 * of an instruction here — the DAG carries it as edge lags.
 */
#ifndef KAREUS_COMPOSE_H
#define KAREUS_COMPOSE_H

#include "kareus/backend.h"
#include "kareus/frontier.h"
#include "kareus/job.h"
#include "kareus/options.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* What a composition did (for reports and tests). */
typedef struct kr_compose_stats {
    int clocks;            /* Clocks composed (those present in every needed key). */
    long long candidates;  /* Sums formed (Σ over steps of |current| × |key frontier|). */
    long long kept;        /* Options written after the final union and pruning. */
} kr_compose_stats;

/*
 * Composes the options of every instruction of job for a variant from fronts[0..nfronts) (one
 * partition frontier per key of kr_partition_catalog(job, variant)), measuring non-partition
 * work through backend (which must accept the job's clocks). Only the per-clock Pareto points
 * of each frontier are used. stats may be NULL. out is initialised here (free with
 * kr_options_free).
 * Returns KR_OK; KR_ENOTFOUND (a key's frontier is missing: the message names it and the file
 * name expected), KR_EMISMATCH (a frontier measured for another job, or no clock common to all
 * keys), KR_EBACKEND (a measurement failed), KR_ERANGE (more comm settings than a plan holds),
 * KR_ENOMEM.
 */
int kr_compose(const kr_job *job, kr_variant variant, const kr_partition_frontier *fronts, int nfronts,
               kr_backend *backend, kr_options *out, kr_compose_stats *stats, kr_error *err);

/*
 * Reads the frontier of every key of the job's variant from dir (file names from
 * kr_frontier_file_name: "<key>.<variant>.json", else ".csv") into fronts (cap entries; free
 * each with kr_frontier_free). Returns the count, or KR_ENOTFOUND naming the missing file,
 * or another reader error.
 */
int kr_compose_read_frontiers(const char *dir, const kr_job *job, kr_variant variant, kr_partition_frontier *fronts,
                              int cap, kr_error *err);

KR_END_DECLS
#endif
