/*
 * gpuctl.h — GPU control backends (backend.h's control interface): real GPUs through NVML
 * (loaded with dlopen, nothing needed at build time), the kareusd helper, and a fake GPU for
 * tests. The simulator (sim.h) implements the same interface, so the runtime, the profiler and
 * the CLI run unchanged on any of them. Every name of the module starts kr_gpuctl_ (types
 * kr_gpuctl_…, macros KR_GPUCTL_…; the kareusd protocol's constants stay KR_KAREUSD_…).
 *
 *   NVML     kr_gpuctl_nvml_create: SM clocks (supported list, current, lock/unlock), the
 *            cumulative energy counter (mJ since driver load, updated about every 100 ms) and
 *            power. A missing libnvidia-ml is KR_ENOLIB, no driver or no GPU is KR_ENODEV, and
 *            NVML_ERROR_NO_PERMISSION is KR_EPERM — each with a message that says what to do.
 *   kareusd  kr_gpuctl_kareusd_create: the same calls as requests to the scoped clock helper.
 *   fake     kr_gpuctl_fake_create: a scripted device for tests. Records every call (in memory
 *            and, optionally, appended to a file so a forked or exec'd process can be checked),
 *            fails the N-th call or every call of some operations (KR_EPERM imitates an
 *            unprivileged user), sleeps inside calls (a slow driver), and has an energy counter
 *            driven by power × time from an injectable time source.
 *
 * Each is also opened by a spec string ("nvml", "kareusd", "fake:sleep_s=0.02,log=/tmp/c.log")
 * through the one backend factory, kr_backend_open (backend.h), so that the CLI, environment
 * variables and the Python binding share one syntax.
 *
 * Limitation of NVML worth knowing: it has no call that reports an existing locked-clock range.
 * get_clock therefore reports the lock this backend instance applied, or (0, 0) — meaning
 * "not locked by us, or unknown". Callers that must restore a lock set by someone else take it
 * as an option (runtime.h: restore_lock_*_mhz).
 */
#ifndef KAREUS_GPUCTL_H
#define KAREUS_GPUCTL_H

#include "kareus/backend.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

#define KR_GPU_MAX_CLOCKS 512

/* ---- NVML ------------------------------------------------------------------------------- */

typedef struct kr_gpuctl_nvml_config {
    /* Library to dlopen. NULL: "libnvidia-ml.so.1", then "libnvidia-ml.so". Tests point it at
     * a missing name (KR_ENOLIB) or at a mock. */
    const char *library;
} kr_gpuctl_nvml_config;

/*
 * Loads NVML (once per process; later backends share the symbol table, reference-counted),
 * initialises it and checks that at least one device is visible.
 * opt may be NULL. On success *out is a backend named "nvml" (free with kr_backend_destroy).
 * Returns KR_ENOLIB (library or a required symbol missing), KR_ENODEV (driver not loaded or no
 * GPU), KR_EBUSY (NVML already loaded from another library file in this process), KR_EBACKEND
 * (other NVML failure) or KR_ENOMEM. Never crashes when the library is absent.
 */
int kr_gpuctl_nvml_create(const kr_gpuctl_nvml_config *opt, kr_backend **out, kr_error *err);

/* Maps an NVML return code to a KR_ status (exposed for tests and the CUDA profiler):
 * 0 → KR_OK, NO_PERMISSION → KR_EPERM, NOT_SUPPORTED → KR_EUNSUPPORTED, driver/GPU missing
 * or lost → KR_ENODEV, TIMEOUT → KR_ETIMEDOUT, IN_USE → KR_EBUSY, others → KR_EBACKEND. */
int kr_gpuctl_nvml_status(int nvml_return);

/* ---- the fake GPU ---------------------------------------------------------------------------- */

/* Operations of the fake, as recorded and as used in masks (1u << op). */
typedef enum kr_gpuctl_fake_op {
    KR_GPUCTL_FAKE_MEASURE = 0,
    KR_GPUCTL_FAKE_DEVICE_COUNT,
    KR_GPUCTL_FAKE_SUPPORTED_CLOCKS,
    KR_GPUCTL_FAKE_GET_CLOCK,
    KR_GPUCTL_FAKE_SET_CLOCK,
    KR_GPUCTL_FAKE_RESET_CLOCK,
    KR_GPUCTL_FAKE_READ_ENERGY,
    KR_GPUCTL_FAKE_READ_POWER,
    KR_GPUCTL_FAKE_DEVICE_INFO,
    KR_GPUCTL_FAKE_NOPS
} kr_gpuctl_fake_op;

#define KR_GPUCTL_FAKE_MASK(op) (1u << (op))
#define KR_GPUCTL_FAKE_CLOCK_WRITES (KR_GPUCTL_FAKE_MASK(KR_GPUCTL_FAKE_SET_CLOCK) | KR_GPUCTL_FAKE_MASK(KR_GPUCTL_FAKE_RESET_CLOCK))

/* "set_clock", "reset_clock", … ("?" for an unknown op). */
const char *kr_gpuctl_fake_op_name(kr_gpuctl_fake_op op);
/* Inverse of kr_gpuctl_fake_op_name; KR_ENOTFOUND for an unknown name. */
int kr_gpuctl_fake_op_parse(const char *name, kr_gpuctl_fake_op *out);

typedef struct kr_gpuctl_fake_config {
    int devices;            /* Devices (0: 1). */
    int max_mhz;            /* Supported SM clocks: max_mhz down to min_mhz in steps of step_mhz */
    int min_mhz;            /*   (0: 1410, 210, 15 — an A100's list). */
    int step_mhz;           /*   (each 0 takes its default) */
    int cur_mhz;            /* Clock while not locked (0: max_mhz). */
    int locked_min_mhz;     /* Lock already in place when the fake is created (0, 0: none), */
    int locked_max_mhz;     /*   to check that callers restore the clocks they found. */
    const char *name;       /* Device name (NULL: "Kareus fake GPU"). */
    const char *uuid;       /* UUID prefix (NULL: "GPU-fake"); device d is "<uuid>-<d>". */
    long fail_call;         /* 1-based number of the call (counting calls of the ops in fail_ops)
                               that fails; 0: none. */
    int fail_repeat;        /* 1: every counted call from fail_call on fails, not just that one. */
    int fail_code;          /* Status of an injected failure (0: KR_EBACKEND; KR_EPERM imitates
                               NVML_ERROR_NO_PERMISSION). */
    unsigned fail_ops;      /* Ops counted for fail_call (mask of KR_GPUCTL_FAKE_MASK; 0: all). */
    unsigned perm_ops;      /* Ops that always return KR_EPERM (an unprivileged user:
                               KR_GPUCTL_FAKE_CLOCK_WRITES). */
    double sleep_s;         /* Seconds to sleep inside each call of the ops in sleep_ops. */
    unsigned sleep_ops;     /* 0: KR_GPUCTL_FAKE_CLOCK_WRITES. */
    double power_w;         /* Power of each device (0: 250 W); energy grows at this rate. */
    double energy_period_s; /* The counter changes only every this many seconds (NVML: ~0.1);
                               0: continuous. */
    int no_energy;          /* 1: read_energy returns KR_EUNSUPPORTED (pre-Volta GPU). */
    double (*now_s)(void *ud); /* Time source of the energy counter (NULL: monotonic clock). */
    void *now_ud;
    const char *log_path;   /* If set, every call is appended to this file as one line
                               "SEQ OP DEV A B RC" (O_APPEND, one write per line). */
    const char *state_path; /* If set, the devices' clocks live in this file, as a real GPU's
                               outlive the process: read (under flock) by every clock call,
                               rewritten by set/reset, created from the options when missing.
                               One line per device: "DEV LOCKED_MIN LOCKED_MAX CUR". Lets tests
                               check clocks across processes (kareusd, `kareus run`). */
} kr_gpuctl_fake_config;

/* One recorded call. */
typedef struct kr_gpuctl_fake_call {
    long seq;      /* 1-based call number (all ops). */
    kr_gpuctl_fake_op op;
    int dev;       /* Device (-1 for ops without one). */
    int a, b;      /* set_clock: min, max MHz; get_clock: current MHz returned; else 0. */
    int rc;        /* Status returned. */
} kr_gpuctl_fake_call;

/* Creates a fake backend named "fake". opt may be NULL (defaults above). Returns KR_EINVAL for
 * inconsistent options (message names the field), KR_EIO if log_path cannot be opened. */
int kr_gpuctl_fake_create(const kr_gpuctl_fake_config *opt, kr_backend **out, kr_error *err);

/* Copies up to cap recorded calls (oldest first) into out; *n = total recorded (may exceed
 * cap). Thread-safe. KR_EINVAL if b is not a fake. */
int kr_gpuctl_fake_calls(kr_backend *b, kr_gpuctl_fake_call *out, int cap, int *n);

/* Present state of device dev: clock lock (0, 0 if none) and the current clock. */
int kr_gpuctl_fake_state(kr_backend *b, int dev, int *locked_min_mhz, int *locked_max_mhz, int *cur_mhz);

/* Adds joules to the energy counter of device dev (on top of power × time). */
int kr_gpuctl_fake_add_energy(kr_backend *b, int dev, double energy_j);

/* Changes the failure injection after creation (same meaning as the options; the call
 * counter restarts at 0). */
int kr_gpuctl_fake_set_failure(kr_backend *b, long fail_call, int fail_repeat, int fail_code, unsigned fail_ops);

/* ---- kareusd, the scoped clock helper ------------------------------------------------------ */

#define KR_KAREUSD_SOCKET "/run/kareus/kareusd.sock" /* the daemon's default socket */
#define KR_KAREUSD_LINE_MAX 8192                      /* longest request or reply line */

/*
 * Connects to kareusd (daemon/kareusd.c) at socket_path (NULL or "": kr_gpuctl_kareusd_default_socket)
 * and returns a backend named "kareusd" whose clock, energy and power calls are requests to the
 * daemon (measure is not offered). The daemon authorises the caller by its peer credentials and
 * restores the clocks of every device this backend changed as soon as the connection closes —
 * kr_backend_destroy, exit, SIGKILL or a crash alike. Returns KR_ENODEV (no daemon at that
 * socket), KR_EPERM (the daemon refused this user; the message gives its reason), KR_EIO,
 * KR_EBACKEND (protocol error) or KR_ENOMEM.
 */
int kr_gpuctl_kareusd_create(const char *socket_path, kr_backend **out, kr_error *err);

/* $KAREUSD_SOCKET if set, else KR_KAREUSD_SOCKET. */
const char *kr_gpuctl_kareusd_default_socket(void);

KR_END_DECLS
#endif
