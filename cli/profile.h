/*
 * profile.h — what the files of `kareus profile` share (cli/cmd_profile*.c): the options it
 * parses and the helpers more than one mode uses. cmd_profile.c parses and dispatches and holds
 * the --config and --plan modes; cmd_profile_hw.c the hardware-only modes (--check,
 * --calibrate); cmd_profile_search.c search mode and the campaign (--log, --plan-work,
 * --emit-sbatch); cmd_profile_sweep.c the comm sweep (--comm-sweep).
 */
#ifndef KR_CLI_PROFILE_H
#define KR_CLI_PROFILE_H

#include "cli.h"

#define MAX_CONFIGS 64

/* What the options set. */

typedef struct profile_args {
    const char *job, *partition, *variant, *strategy, *out, *details, *control, *base, *name, *raw, *log;
    int sim;               /* --sim: the simulator's prediction next to each measurement */
    const char *sim_gpu;   /* --sim-gpu FILE: ... with this GPU entry (e.g. a calibrated one) */
    const char *prior;     /* --prior none|sim|FILE (search mode; NULL: sim) */
    int prior_sens;        /* --prior-features: 0 auto, 1 on (both: on), -1 off (kr_search_config.prior_sens) */
    int prior_calib;       /* --prior-calibrate: the same (kr_search_config.prior_calib) */
    const char *configs[MAX_CONFIGS];
    int nconfigs;
    int plan, calibrate, check, json, quick, quiet;
    const char *backend;   /* --backend gpu (default) | sim: what search mode measures with */
    const char *shard;     /* --shard I/N | auto */
    const char *sbatch;    /* --emit-sbatch FILE */
    int plan_work, shards; /* --plan-work; --shards N (--emit-sbatch) */
    int device, devices;
    unsigned long long seed;
    kr_profiler_comm comm;
    kr_profiler_config o;
    const char *comm_sweep;  /* --comm-sweep FILE: the comm kernel alone, its log */
    const char *clocks, *ctas, *kernels; /* --clocks, --ctas, --kernels LIST (comm sweep) */
    int max_points;          /* --max-points N: stop after N new measurements (0: all) */
} profile_args;

/* Opens the CUDA runner and the control backend; on failure prints every missing piece and
 * returns the exit status (2 when something is missing, 1 otherwise). */
int profile_open_hardware(const profile_args *a, kr_profiler_runner **runner, kr_backend **ctl);
/* Exit status of a failed measurement (message printed): 2 when a permission or capability is
 * missing or the input is bad, else 1. */
int profile_report_failure(int rc, const char *msg);
/* The partitions named by key ("all": every partition and piece of non-partition work). */
int profile_select_partitions(const kr_job *job, kr_variant var, const char *key, kr_partition_set *set);
/* The GPU backend (runner + NVML, owned by it), or the exit status with the reason printed. */
int profile_make_backend(const profile_args *a, const kr_job *job, kr_backend **gpu);

int profile_mode_check(const profile_args *a);
int profile_mode_calibrate(const profile_args *a);
int profile_mode_search(const profile_args *a, const kr_job *job, kr_variant var);
int profile_mode_plan_work(const profile_args *a, const kr_job *job, kr_variant var);
int profile_mode_sbatch(const profile_args *a, const kr_job *job, kr_variant var);
int profile_mode_comm_sweep(const profile_args *a, const kr_job *job);

#endif
