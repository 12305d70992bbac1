/*
 * runtime_internal.h — the runtime's state, shared by its three files:
 *   runtime.c  open/close and the hooks of the training thread (the hot path)
 *   worker.c   the worker thread: clock requests, restores, energy sampling and accounting
 *   safety.c   the per-GPU advisory lock, and the process-wide registry behind the SIGINT/SIGTERM
 *              and atexit handlers
 *
 * Ownership of fields (which thread may touch what):
 *   T  the training thread only (after open)
 *   W  the worker thread only (after open; close reads them after joining it)
 *   A  atomics, any thread, including signal handlers
 *   M  guarded by mu
 *   C  constant after open
 */
#ifndef KR_RUNTIME_INTERNAL_H
#define KR_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "kareus/runtime.h"
#include "util/util.h"

#define RT_PENDING 4        /* finished steps waiting for the counter to move past their end */
#define RT_SAMPLES 4096     /* counter change points kept (≈ 400 s of NVML updates) */
#define RT_RESTORE_REQ (-1) /* "desired clock": put the found clocks back (off-plan step) */
#define RT_DEFAULT_POLL_S 0.02
#define RT_SIGNAL_WAIT_S 2.0 /* how long a signal handler waits for the worker's restore */

/* One instruction of the stage, as planned. */
typedef struct rt_instr {
    kr_instr_kind kind;
    int microbatch, chunk, freq_mhz;
    int comm_first, ncomm; /* range in kr_runtime.comm */
} rt_instr;

/* One comm entry of the plan, flattened. */
typedef struct rt_comm {
    char key[KR_KEY_MAX];
    int recompute;
    kr_runtime_comm cfg;
} rt_comm;

/* A finished step handed to the worker for its energy. */
typedef struct rt_step {
    double t_start, t_end; /* step window */
    double *begin, *end;   /* per instruction (NaN: did not run) */
} rt_step;

struct kr_runtime {
    /* C: configuration */
    kr_allocator alloc;
    const kr_allocator *allocp; /* &alloc, or NULL for libc */
    int stage, device, ninstr, ncomm;
    rt_instr *instr;
    rt_comm *comm;
    char plan_name[256];
    kr_backend *backend;
    int own_backend;
    unsigned flags;
    double (*now_s)(void *ud);
    void *now_ud;
    kr_runtime_warn_fn warn;
    void *warn_ud;
    double poll_s;
    pid_t owner_pid;
    int restore_min, restore_max; /* lock to restore (0, 0: reset) */
    int found_cur;
    kr_gpu_device_info info;

    /* T: the training thread's position in the plan */
    int pos;          /* next instruction */
    int in_instr;     /* an instruction is open */
    int off_plan;     /* this step left the plan's order */
    int step_started; /* step_t0 is set */
    double step_t0;
    int last_requested; /* last clock sent to the worker (0: none) */
    int mismatch_warned;
    double *cur_begin, *cur_end;
    _Atomic long n_requests, n_coalesced, n_steps, n_mismatched; /* written by T only */

    /* A: shared with the worker and signal handlers */
    _Atomic int desired;      /* requested clock (RT_RESTORE_REQ: found clocks) */
    _Atomic int sleeping;     /* the worker is about to wait or waiting */
    _Atomic int mode;         /* kr_runtime_mode */
    _Atomic int warn_pending; /* a warning waits for delivery on the training thread */
    _Atomic long restore_req; /* restore requests from signal handlers / atexit */
    _Atomic int restore_done; /* the worker restored after such a request */
    _Atomic int restore_signal;
    _Atomic int stop;
    _Atomic long sync_req;    /* sync requests (answered in sync_done) */
    _Atomic long n_sets;      /* successful set_clock calls (written by W) */
    _Atomic int applied_mhz;  /* clock last applied, 0 after a restore (written by W) */
    int wake_fd;              /* eventfd the worker waits on */
    pthread_t worker;
    int worker_started;
    int registry_slot;        /* index in the safety registry, -1 if none */
    int lock_fd;              /* advisory lock, -1 if none (lock.fd) */
    char lock_path[512];
    kr_gpu_lock lock;         /* the lock with its record */

    /* M: guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* sync waiters */
    int mu_init;
    long sync_done;
    rt_step pending[RT_PENDING];
    int npending;             /* queued steps, oldest at pending_head */
    int pending_head;
    kr_runtime_status st;     /* status fields the worker maintains (strings, restore state) */
    kr_runtime_energy en;     /* energy summary */
    kr_runtime_instr_energy *en_instr; /* last final step */
    int warn_code[5];         /* per kr_runtime_warn_kind: status and message to deliver */
    char warn_msg[5][512];
    int warn_queued;          /* kinds waiting for delivery (1 << kind) */
    int warned_mask;          /* kinds already reported (1 << kind) */

    /* W: the worker's own state */
    int applied;              /* clock applied (0: none / found clocks) */
    int dirty;                /* the GPU's clocks may differ from the found ones */
    int energy_on;
    double e0;                /* counter at open */
    double *smp_t, *smp_e;    /* ring of counter change points */
    int smp_n, smp_head;      /* count, next write index */
    double last_e;
    double *tmp_b, *tmp_e;    /* a step copied out of the queue */
};

/* worker.c */
void *kr__rt_worker_main(void *arg);
/* Wakes the worker (async-signal-safe). */
void kr__rt_wake(kr_runtime *rt);
/* Reads the counter once and records a change point (worker or open, before the worker runs). */
void kr__rt_sample(kr_runtime *rt);
/* Queues a warning for the training thread (caller holds mu; each kind once). */
void kr__rt_warn_locked(kr_runtime *rt, int kind, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Puts the found clocks back (worker, or close after the join). Returns KR_OK or the failure. */
int kr__rt_restore(kr_runtime *rt, kr_error *err);

/* Takes / releases mu with SIGINT and SIGTERM blocked in the calling thread, so that a signal
 * handler never waits for a worker that waits for mu (worker.c). */
void kr__rt_lock_mu(kr_runtime *rt, sigset_t *saved);
void kr__rt_unlock_mu(kr_runtime *rt, const sigset_t *saved);

/* safety.c */
/* Takes the GPU's lock; a stale record (a holder that died) replaces the clocks to restore
 * unless the caller named them (explicit_restore), and the clocks to restore are recorded. */
int kr__rt_lock(kr_runtime *rt, const char *dir, int explicit_restore, kr_error *err);
void kr__rt_unlock(kr_runtime *rt);
int kr__rt_register(kr_runtime *rt, kr_error *err);
void kr__rt_unregister(kr_runtime *rt);

static inline double kr__rt_now(const kr_runtime *rt)
{
    return rt->now_s ? rt->now_s(rt->now_ud) : kr__now_s();
}

#endif
