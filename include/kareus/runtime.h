/*
 * runtime.h — applying a plan inside a training job: what each pipeline rank calls at
 * instruction boundaries to get its SM clock set and its partitions' comm configs, with energy
 * measured, without ever slowing or breaking the job.
 *
 *   rt = open(plan, stage, device)          validate the plan (order, clocks of this GPU), take
 *                                           the per-GPU advisory lock, note the clocks in place,
 *                                           start the worker thread
 *   per step:
 *     instruction_begin(kind, mb, chunk)    check the plan's order, request the clock
 *       comm_config(key, recompute)         slot and SMs of one partition (inside an instruction)
 *     instruction_end()
 *     …
 *     step_end()                            check the step consumed the plan, hand its timestamps
 *                                           to the energy accounting, rewind for the next step
 *   close()                                 restore the clocks found at open
 *
 * Threads. Every call above except close is made from one thread (the training thread). Clock
 * changes and energy reads run on a worker thread: a hook stores the requested clock (the
 * latest request wins; a request equal to the previous one is dropped) and wakes the worker only
 * if it sleeps, so a hook costs well under a microsecond plus, at most, one eventfd write; it
 * never waits for NVML. status/energy/sync may be called from any thread.
 *
 * Failures never hurt the job. After a successful open, a failing backend call switches clock
 * control off ("measure only"), restores the clocks and is reported once through the warning
 * callback (called on the training thread, from the next hook) and kept in kr_runtime_status.
 * A hook called out of the plan's order returns KR_EMISMATCH, restores the found clocks for the
 * rest of that step (counted in mismatched_steps) and resumes the plan at the next step.
 *
 * Safety. The clocks found at open are restored at close, at exit (atexit), on SIGINT and
 * SIGTERM, and on SIGHUP, SIGQUIT, SIGPIPE, SIGABRT and the faults while their default action is
 * in place: the handler asks the worker to restore (waiting at most 2 s), then chains to the
 * handler that was installed before, or re-raises the signal with its default action. A process
 * forked from the one that opened the runtime never touches its clocks. A second process opening
 * the same GPU (flock on LOCK_DIR/kareus-gpu-UUID.lock, which also records the clocks found) is
 * refused with KR_EBUSY, or opened read-only with KR_RUNTIME_SHARE_READONLY. SIGKILL and crashes
 * cannot be handled in-process: the lock record lets `kareus run`, `kareus gpu restore` or the
 * next runtime put the found clocks back, and through kareusd (backend "kareusd") the daemon
 * restores them as soon as the process's connection drops.
 *
 * Energy. The GPU's cumulative counter (NVML: mJ, updated about every 100 ms) is polled by the
 * worker; the times at which it changes are kept, and energy over a window is the difference of
 * the counter interpolated linearly between those change points. Steps and the totals are
 * reported once the counter has moved past the step's end. Per-instruction figures are
 * window-quantized: an instruction shorter than the counter's update period gets an interpolated
 * share, not a measurement (kr_runtime_energy.per_instruction_quantized, counter_period_s and
 * each instruction's counter_updates say so).
 */
#ifndef KAREUS_RUNTIME_H
#define KAREUS_RUNTIME_H

#include "kareus/backend.h"
#include "kareus/gpuctl.h"
#include "kareus/plan.h"
#include "kareus/sched.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

typedef struct kr_runtime kr_runtime;

/* Flags of kr_runtime_config. */
#define KR_RUNTIME_READ_ONLY 0x01u       /* measure only: never change clocks, take no lock */
#define KR_RUNTIME_SHARE_READONLY 0x02u  /* GPU held by another process: open read-only, not KR_EBUSY */
#define KR_RUNTIME_NO_SIGNALS 0x04u      /* install no SIGINT/SIGTERM handlers */
#define KR_RUNTIME_NO_ATEXIT 0x08u       /* do not restore clocks from an atexit handler */
#define KR_RUNTIME_NO_LOCK 0x10u         /* take no per-GPU advisory lock */
#define KR_RUNTIME_OWN_BACKEND 0x20u     /* close destroys options.backend_ptr */

/* What a warning is about (each kind is reported once per runtime). */
typedef enum kr_runtime_warn_kind {
    KR_RUNTIME_WARN_DEGRADED = 1, /* clock control failed: measure only from now on */
    KR_RUNTIME_WARN_ENERGY = 2,   /* the energy counter failed: no more energy figures */
    KR_RUNTIME_WARN_MISMATCH = 3, /* the job ran an instruction out of the plan's order */
    KR_RUNTIME_WARN_SIGNAL = 4    /* clocks were restored because of a signal */
} kr_runtime_warn_kind;

/* Warning callback: kind, the KR_ status behind it and a message. Called on the thread that
 * calls the hooks (never on the worker, never from a signal handler). */
typedef void (*kr_runtime_warn_fn)(void *ud, int kind, int code, const char *msg);

typedef struct kr_runtime_config {
    const char *backend;        /* Backend spec (gpuctl.h: "nvml", "fake:…"); NULL: "nvml".
                                   Ignored when backend_ptr is set. */
    kr_backend *backend_ptr;    /* A backend the caller made (not owned unless
                                   KR_RUNTIME_OWN_BACKEND). */
    const char *job;            /* Job spec path or built-in name: if set, the plan is also checked
                                   with kr_plan_validate against it (fingerprint, comm keys) and
                                   comm configs carry slot indices. NULL: no job check. */
    const kr_allocator *allocator; /* For the runtime's own memory (NULL: malloc). */
    unsigned flags;             /* KR_RUNTIME_… */
    const char *lock_dir;       /* Directory of the advisory lock files (NULL: kr_runtime_lock_dir). */
    int restore_lock_min_mhz;   /* The lock to restore at close when the backend cannot report */
    int restore_lock_max_mhz;   /*   the one in place (NVML cannot); 0, 0: what get_clock reports
                                     at open, and without a lock there, reset the lock. */
    double energy_poll_s;       /* Counter poll period (0: 0.02 s; < 0: only at kr_runtime_sync). */
    kr_runtime_warn_fn warn;    /* Warning callback (NULL: none; the status still has them). */
    void *warn_ud;
    double (*now_s)(void *ud);  /* Time source for timestamps and samples (NULL: monotonic). */
    void *now_ud;
} kr_runtime_config;

/*
 * Opens the runtime for pipeline stage `stage` of the plan in file plan_path (or of *plan),
 * controlling device `device` of the backend. opt may be NULL (NVML, all defaults).
 * Checks: the stage exists; its instructions follow the plan's schedule (kr_sched_order); every
 * clock of the stage is a supported SM clock of the device; with opt->job, kr_plan_validate.
 * Returns KR_OK and *out, or: KR_ERANGE/KR_EMISMATCH (plan does not fit the stage or the GPU,
 * message names the instruction and the value), KR_EINVAL (device index), KR_EBUSY (another
 * process controls the GPU), KR_ENOLIB/KR_ENODEV/KR_EPERM/KR_EBACKEND (backend), KR_ENOMEM, or a
 * plan-file error. On failure nothing was changed on the GPU. Free with kr_runtime_close.
 */
int kr_runtime_open(const char *plan_path, int stage, int device, const kr_runtime_config *opt, kr_runtime **out,
                    kr_error *err);
int kr_runtime_open_plan(const kr_plan *plan, int stage, int device, const kr_runtime_config *opt,
                         kr_runtime **out, kr_error *err);

/*
 * Marks the start of instruction (kind, microbatch, chunk) — chunk is the model chunk of
 * interleaved schedules, 0 otherwise — and requests its clock. Returns KR_OK; KR_EMISMATCH if it
 * is not the plan's next instruction (message: what was expected, what was found; the rest of
 * the step runs at the found clocks and later hooks of that step return KR_OK); KR_ESTATE if an
 * instruction is already open. err may be NULL. Never blocks.
 */
int kr_runtime_instruction_begin(kr_runtime *rt, kr_instr_kind kind, int microbatch, int chunk, kr_error *err);

/* Comm configuration of one partition inside the current instruction. */
typedef struct kr_runtime_comm {
    char slot[KR_SLOT_NAME_MAX]; /* Launch slot name ("none" = after compute). */
    int slot_index;              /* Its index in the partition (KR_SLOT_NONE for "none"), or
                                    KR_RUNTIME_SLOT_UNKNOWN without options.job. */
    int sms;                     /* SMs (CTAs) for the comm kernel. */
    int kernel;                  /* Which comm kernel (kr_comm_kernel, backend.h): KR_KERNEL_TUNED
                                    (0), or KR_KERNEL_NCCL: NCCL's collective with sms CTAs
                                    (the plan's "kernel"; absent = tuned). */
} kr_runtime_comm;

#define KR_RUNTIME_SLOT_UNKNOWN (-2)

/*
 * Looks up partition `key` of the current instruction (recompute = 1: the recomputed forward's
 * entry inside a backward). Returns KR_OK, KR_ENOTFOUND (the plan has no entry: use the
 * framework's default), or KR_ESTATE (no planned instruction is open).
 */
int kr_runtime_comm_config(kr_runtime *rt, const char *key, int recompute, kr_runtime_comm *out, kr_error *err);

/* Marks the end of the current instruction. KR_ESTATE if none is open. */
int kr_runtime_instruction_end(kr_runtime *rt, kr_error *err);

/*
 * Ends a training step: checks that every instruction of the stage ran (KR_EMISMATCH naming
 * the next expected one otherwise, or if the step went off-plan), hands the step's timestamps to
 * the energy accounting and rewinds to the first instruction. KR_ESTATE if an instruction is
 * still open (it is closed first).
 */
int kr_runtime_step_end(kr_runtime *rt, kr_error *err);

/*
 * Waits until the worker has acted on every request made so far and read the energy counter
 * once more; then, for up to timeout_s more seconds, until every finished step has its energy
 * (0: do not wait for that). For tests, examples and the end of a run — never needed on the
 * training path. KR_ETIMEDOUT if the worker did not answer within max(timeout_s, 5 s).
 */
int kr_runtime_sync(kr_runtime *rt, double timeout_s, kr_error *err);

typedef enum kr_runtime_mode {
    KR_RUNTIME_CONTROL = 0,      /* applying the plan's clocks */
    KR_RUNTIME_MEASURE_ONLY = 1, /* read-only, or clock control failed */
    KR_RUNTIME_STOPPED = 2       /* clocks restored after a signal or at exit */
} kr_runtime_mode;

typedef struct kr_runtime_status {
    int mode;                    /* kr_runtime_mode */
    int read_only;               /* Opened read-only (flag, or another process holds the GPU). */
    int degraded;                /* Clock control was switched off after a failure. */
    int degrade_code;            /* Its KR_ status (0 if none). */
    char reason[512];            /* Why the runtime is not controlling clocks ("" if it is). */
    int signal;                  /* Signal that made it restore the clocks (0 if none). */
    long steps;                  /* step_end calls. */
    long mismatched_steps;       /* Steps that went off the plan's order. */
    long clock_requests;         /* Clock requests sent to the worker. */
    long clock_coalesced;        /* Requests dropped because they equalled the previous one. */
    long clock_sets;             /* set_clock calls that succeeded. */
    int applied_mhz;             /* Clock the worker last applied (0: none, or restored). */
    int found_cur_mhz;           /* SM clock at open. */
    int restore_min_mhz;         /* Lock restored at close (0, 0: the lock is reset). */
    int restore_max_mhz;
    int restored;                /* 1 once the found clocks were put back after a failure, a signal
                                    or exit (close restores too, and reports through its status). */
    int restore_failed;          /* 1 if putting them back failed (message in reason). */
    char backend[16];            /* Backend name. */
    char device_name[KR_GPU_NAME_MAX];
    char device_uuid[KR_GPU_UUID_MAX];
    char lock_path[512];         /* Advisory lock held ("" if none). */
} kr_runtime_status;

/* Copies the runtime's status. Any thread. */
void kr_runtime_status_get(kr_runtime *rt, kr_runtime_status *out);

typedef struct kr_runtime_energy {
    int available;               /* 0: no energy counter (unsupported or failed). */
    int per_instruction_quantized; /* 1: per-instruction values are interpolated between counter
                                      updates (never finer than counter_period_s). */
    double counter_period_s;     /* Observed median interval between counter changes (0 until
                                    known; NVML: about 0.1 s). */
    double poll_s;               /* The worker's poll period (≤ 0: polls only at sync). */
    long steps;                  /* Steps whose energy is final. */
    long steps_dropped;          /* Finished steps whose energy could not be computed. */
    double step_time_s;          /* The last final step: wall time (from the previous step_end, */
    double step_energy_j;        /*   or its first instruction), and energy of this GPU. */
    double total_time_s;         /* Sums over all final steps. */
    double total_energy_j;
    double counter_j;            /* Counter now minus counter at open (whole time, idle included). */
    int ninstr;                  /* Instructions of the last final step (entries in instr). */
} kr_runtime_energy;

typedef struct kr_runtime_instr_energy {
    int kind;                    /* kr_instr_kind */
    int microbatch;
    int chunk;
    int freq_mhz;                /* Planned clock. */
    double begin_s;              /* Start, seconds after the step's start (NaN if it did not run). */
    double time_s;               /* instruction_end − instruction_begin, host time. */
    double energy_j;             /* Interpolated counter difference over the window. */
    int counter_updates;         /* Counter changes seen inside the window (0: all interpolated). */
} kr_runtime_instr_energy;

/* Copies the energy summary and up to cap per-instruction entries of the last final step (instr
 * may be NULL). Any thread. */
void kr_runtime_energy_get(kr_runtime *rt, kr_runtime_energy *out, kr_runtime_instr_energy *instr, int cap);

/* The backend the runtime uses (owned by the runtime unless it was passed in without
 * KR_RUNTIME_OWN_BACKEND). */
kr_backend *kr_runtime_backend(kr_runtime *rt);

/* Instructions per step of this stage. */
int kr_runtime_ninstr(const kr_runtime *rt);

/*
 * Stops the worker, restores the clocks found at open (if anything was changed), releases the
 * lock and frees everything. Returns KR_OK, or the status of a failed restore (message in err).
 * NULL is allowed. Call it from the training thread, not concurrently with the hooks.
 */
int kr_runtime_close(kr_runtime *rt, kr_error *err);

/*
 * The per-GPU advisory lock the runtime takes, for tools that change clocks outside a runtime
 * (`kareus gpu reset|restore`, `kareus run`, kareusd): flock on LOCK_DIR/kareus-gpu-UUID.lock.
 * lock_dir NULL or "": kr_runtime_lock_dir. The file is opened with O_NOFOLLOW (a symbolic link
 * is refused, KR_EPERM, and its target untouched), must be a regular file with one link, is
 * created 0644 (never world-writable), and is only rewritten when it is empty or recognised as a
 * Kareus lock file (anything else: KR_EPERM, file left byte-identical). While held it records
 * the holder's pid, "state held" and the clocks found before the holder changed anything
 * (kr_runtime_gpu_lock_note); unlock records "state free". A record still "held" when the next
 * process takes the lock means its holder died without restoring: stale = 1 and rec_* are the
 * clocks to put back (kr_runtime_gpu_restore does it).
 * Returns KR_OK (held until kr_runtime_gpu_unlock), KR_EBUSY (another process holds it; the
 * message names its pid), KR_EPERM or KR_EIO. device and name only go into messages.
 */
typedef struct kr_gpu_lock {
    int fd;                     /* -1 when not held */
    char path[512];
    char uuid[KR_GPU_UUID_MAX];
    int writable;               /* 1: our file, the record is kept up to date */
    long prev_pid;              /* pid recorded in the file by the previous holder (0: none) */
    int stale;                  /* 1: the previous holder died holding it (record "held") */
    int rec_min_mhz, rec_max_mhz; /* its recorded found lock (0, 0: none, reset restores) */
    int rec_cur_mhz;            /* its recorded found clock (information only) */
} kr_gpu_lock;

int kr_runtime_gpu_lock(const char *lock_dir, const char *uuid, int device, const char *name, kr_gpu_lock *out,
                        kr_error *err);
/* Records the clocks found before the holder changes anything (what recovery restores). */
void kr_runtime_gpu_lock_note(kr_gpu_lock *lock, int lmin_mhz, int lmax_mhz, int cur_mhz);
void kr_runtime_gpu_unlock(kr_gpu_lock *lock);

/*
 * The default lock directory, created if missing: /run/kareus (0755) when running as root,
 * else $XDG_RUNTIME_DIR/kareus (0700), else /tmp/kareus-UID (0700). An existing directory must
 * be a real directory owned by the effective user and writable by no one else (KR_EPERM
 * otherwise, naming owner and mode). Writes the path into buf.
 */
int kr_runtime_lock_dir(char *buf, size_t cap, kr_error *err);

/*
 * Crash recovery for device dev of b: takes its lock (KR_EBUSY while a live process holds it)
 * and, if the previous holder died without restoring (stale record), puts back the clocks it
 * recorded — set_clock to the recorded lock, or reset_clock when none was recorded — and marks
 * the record free. *restored = 1 if it restored something; err->msg then says what (status
 * KR_OK). Devices without a UUID have no lock file: KR_OK, nothing done.
 */
int kr_runtime_gpu_restore(kr_backend *b, int dev, const char *lock_dir, int *restored, kr_error *err);

/* sizeof the named public struct ("kr_runtime_status", "kr_runtime_energy", …, "kr_plan",
 * "kr_partition_frontier"), 0 if unknown: lets the ctypes binding check its struct layouts. */
size_t kr_runtime_abi_size(const char *type_name);

/*
 * Checks a plan file for one stage without opening a device: parse, stage range, the stage's
 * schedule order; with job (path or built-in name, may be NULL) also kr_plan_validate. stage < 0
 * checks every stage. Shared by `kareus run` and the Python binding.
 */
int kr_runtime_plan_check(const char *plan_path, int stage, const char *job, kr_error *err);

KR_END_DECLS
#endif
