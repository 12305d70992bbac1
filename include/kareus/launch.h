/*
 * launch.h — where a rank of a launched training job sits: its (tp, cp, dp, pp) coordinates,
 * its pipeline stage and the GPU it must control.
 *
 * A job started by torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) or by Slurm's srun
 * (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, and SLURM_NTASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE or
 * SLURM_TASKS_PER_NODE with SLURM_NODEID) runs one process per GPU. Each process must apply the
 * plan of its own pipeline stage on its own GPU. kr_launch_resolve reads the launcher's variables and splits the global
 * rank into parallel coordinates in Megatron-LM's default order, tensor-parallel fastest, then
 * context-, data- and pipeline-parallel ("tp-cp-dp-pp", Megatron core's
 * parallel_state.RankGenerator order string without "ep"; configurable). kr_launch_device maps
 * the process's CUDA device (LOCAL_RANK through CUDA_VISIBLE_DEVICES) to a device of a GPU
 * control backend by UUID, so the clocks are locked on the GPU the process computes on.
 *
 * Facts behind the mapping (CUDA C Programming Guide, "CUDA Environment Variables"):
 *   - CUDA_VISIBLE_DEVICES lists device indices or UUIDs ("GPU-8932f937-…", a unique prefix is
 *     enough; MIG instances "MIG-<uuid>" or the older "MIG-GPU-<uuid>/<gi>/<ci>"). A process
 *     sees only those devices, renumbered from 0.
 *   - NVML ignores CUDA_VISIBLE_DEVICES and numbers devices by PCI bus id. A numeric entry is
 *     taken as an NVML index, which is CUDA's index when CUDA_DEVICE_ORDER=PCI_BUS_ID or when all
 *     GPUs are of one model (CUDA's default "fastest first" order breaks ties by PCI bus id).
 *     UUID entries are exact in every case.
 *   - MIG: clocks belong to the physical GPU. The older form names its parent GPU and is mapped
 *     to it; a bare "MIG-<uuid>" cannot be mapped without NVML's MIG calls (not loaded) and is
 *     refused with KR_EUNSUPPORTED and what to write instead.
 *
 * Binding. Either every local rank sees every GPU (the list has at least LOCAL_WORLD_SIZE
 * entries, or is unset) and local rank i uses visible device i, or each rank was bound to its
 * own GPU by the launcher (exactly one visible entry: srun --gpu-bind, per-task binding) and uses
 * visible device 0. Anything else (2 GPUs for 4 local ranks) is an error: two ranks on one GPU
 * would fight over its clock.
 */
#ifndef KAREUS_LAUNCH_H
#define KAREUS_LAUNCH_H

#include <stddef.h>

#include "kareus/backend.h"
#include "kareus/gpuctl.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

typedef enum kr_launcher {
    KR_LAUNCHER_NONE = 0,     /* no launcher variables: a single process */
    KR_LAUNCHER_TORCHRUN = 1, /* RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE (torchrun, torch.distributed) */
    KR_LAUNCHER_SLURM = 2     /* SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID/… (srun) */
} kr_launcher;

/* "none", "torchrun", "slurm". */
const char *kr_launcher_name(kr_launcher l);

#define KR_LAUNCH_ENTRY_MAX 96

typedef struct kr_launch_config {
    int tp;                  /* Tensor-parallel degree (0: 1). */
    int cp;                  /* Context-parallel degree (0: 1). */
    int pp;                  /* Pipeline stages (0: plan_stages if set, else WORLD_SIZE/(tp·cp·dp)). */
    int dp;                  /* Data-parallel degree (0: WORLD_SIZE/(tp·cp·pp)). */
    const char *order;       /* Coordinates fastest first, separated by '-' or ',' (NULL: "tp-cp-dp-pp"). */
    int plan_stages;         /* Stages of the plan (0: not checked): the pp rank must be below it. */
    const char *const *env;  /* "NAME=VALUE" strings, NULL-terminated (NULL: the process's environment). */
} kr_launch_config;

typedef struct kr_launch {
    int launcher;            /* kr_launcher */
    int rank, world_size;    /* Global rank and the number of ranks. */
    int local_rank, local_world_size; /* Rank on this node and ranks on this node. */
    int tp, cp, dp, pp;      /* Degrees (tp·cp·dp·pp = world_size). */
    int tp_rank, cp_rank, dp_rank, pp_rank;
    int stage;               /* Pipeline stage = pp_rank. */
    int visible_count;       /* Entries of CUDA_VISIBLE_DEVICES; -1 when unset (all GPUs visible); 0 when
                                it hides every GPU ("" or "-1": a CPU-only rank, local_device -1). */
    int per_task_binding;    /* 1: this rank sees only its own GPU (local_device = 0). */
    int local_device;        /* CUDA device index inside this process (torch.cuda.set_device). */
    char visible_entry[KR_LAUNCH_ENTRY_MAX]; /* The CUDA_VISIBLE_DEVICES entry of local_device ("" if unset). */
    char visible[512];       /* CUDA_VISIBLE_DEVICES as found (for messages; "" if unset). */
} kr_launch;

/*
 * Reads the launcher's variables (torchrun's win when both are set: torchrun inside a Slurm
 * allocation) and CUDA_VISIBLE_DEVICES, and fills *out. opt may be NULL (defaults above).
 * Returns KR_OK, or with a message naming the variable, what was expected and what was found:
 * KR_EPARSE (a variable is not an integer, a CUDA_VISIBLE_DEVICES entry is malformed),
 * KR_ERANGE (RANK ≥ WORLD_SIZE, LOCAL_RANK ≥ LOCAL_WORLD_SIZE, a stage outside the plan, more
 * local ranks than visible GPUs), KR_EMISMATCH (WORLD_SIZE not a multiple of the degrees),
 * KR_EINVAL (bad order string or degree). A CUDA_VISIBLE_DEVICES that hides every GPU is not an
 * error here (CPU-only ranks): kr_launch_device reports it.
 */
int kr_launch_resolve(const kr_launch_config *opt, kr_launch *out, kr_error *err);

/*
 * The device of backend b that this rank computes on: its CUDA_VISIBLE_DEVICES entry matched by
 * UUID against kr_backend_device_info (exact, then unique prefix), or as an index; LOCAL_RANK
 * itself when the variable is unset. Also checks that no other local rank maps to the same
 * device (under shared binding). Fills *device and, if info is not NULL, its identity.
 * Returns KR_OK, KR_ERANGE (more local ranks than the backend's devices, index out of range),
 * KR_ENOTFOUND (no device has that UUID; the message lists the UUIDs), KR_EMISMATCH (two local
 * ranks on one GPU, an ambiguous UUID prefix), KR_EUNSUPPORTED (a bare MIG UUID), KR_ENODEV
 * (CUDA_VISIBLE_DEVICES hides every GPU), or the backend's failure.
 */
int kr_launch_device(const kr_launch *l, kr_backend *b, int *device, kr_gpu_device_info *info, kr_error *err);

/* sizeof the named struct of this header, or of "kr_job", "kr_partition_set" (the ctypes
 * binding checks its layouts with it); 0 if unknown. */
size_t kr_launch_abi_size(const char *type_name);

KR_END_DECLS
#endif
