/*
 * campaign.h — a profiling campaign split into work units and shards, for `kareus profile
 * --plan-work`, `--shard` and `--emit-sbatch` (cli/campaign.c; docs/profiler.md, "Cluster
 * campaigns"). Public API of libkareus only.
 */
#ifndef KR_CLI_CAMPAIGN_H
#define KR_CLI_CAMPAIGN_H

#include "cli.h"

/* Which shard of how many this process runs (count 1: the whole campaign). */
typedef struct cli_shard {
    int index, count;
    const char *from; /* "--shard", "SLURM_ARRAY_TASK_ID", "SLURM_PROCID", "RANK" */
} cli_shard;

/*
 * Parses --shard SPEC: "I/N" with 0 <= I < N (decimal integers, nothing else) or "auto": the
 * Slurm array task (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT), else
 * the rank of an srun or torchrun launch (kr_launch_resolve: SLURM_PROCID of SLURM_NTASKS,
 * RANK of WORLD_SIZE). Returns 0, or 2 after printing what was expected and found.
 */
int cli_shard_parse(const char *spec, cli_shard *out);

/* The shard that runs unit u (0-based, in the campaign's order): u mod count. */
int cli_shard_of(int unit, int count);

/* Copies path into buf with every "%r" replaced by the shard index. Returns 0, or 2 if it
 * does not fit. */
int cli_shard_path(const char *path, const cli_shard *s, char *buf, size_t cap);

/* Prints the units of set (the campaign of job): unit, shard (of count), key, variant, GPU
 * type, the TP group it needs, the search space. */
void cli_campaign_print(const kr_job *job, const kr_partition_set *set, int count, int only);

/* What an sbatch script of a campaign needs. */
typedef struct cli_sbatch {
    const char *job;      /* --job as given (NULL: the default job) */
    const char *dir;      /* campaign directory (logs, frontiers, Slurm output) */
    const char *extra;    /* further `kareus profile` options, space-separated ("" none) */
    const char *kareus;   /* the kareus binary to run */
    int shards;
    int gpus_per_unit;    /* GPUs each task asks for (the largest TP group) */
} cli_sbatch;

/* Writes the sbatch array script to path (temp + rename, never over a non-script) and prints
 * it and the equivalent torchrun command on stdout. Returns 0 or an exit status. */
int cli_campaign_sbatch(const char *path, const cli_sbatch *o);

#endif
