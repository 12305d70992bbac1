/*
 * backend.h — the two backend interfaces: everything above them (search, compose, solve,
 * runtime) works the same whether measurements come from the simulator, a real GPU, a replayed
 * log or the test fake, and whether clocks are set through NVML, the kareusd helper, the fake
 * GPU or the simulated device.
 *
 * A backend (kr_backend, opaque) has a name, a set of capabilities (KR_BACKEND_… flags) and up
 * to two role interfaces:
 *   measuring  kr_measure_ops: measure one partition at one config (KR_BACKEND_MEASURE)
 *   control    kr_control_ops: devices, SM clocks, energy counter, power, identity
 * Implementations:
 *   sim        measuring + control   kr_sim_backend_create       (sim.h; the default)
 *   replay     measuring (+ clocks)  kr_replay_backend_create    (search.h; a measurement log)
 *   gpu        measuring + control   kr_profiler_open_backend    (profiler.h; CUDA + a control)
 *   nvml       control               kr_gpuctl_nvml_create       (gpuctl.h; real clocks, energy)
 *   kareusd    control               kr_gpuctl_kareusd_create    (gpuctl.h; the scoped helper)
 *   fake       measuring + control   kr_gpuctl_fake_create       (gpuctl.h; records, fails call N)
 * and one factory that opens any of them from a spec string, kr_backend_open (below), used by
 * every command, the runtime's KAREUS_BACKEND and the Python binding.
 *
 * A call outside the backend's capabilities returns KR_EUNSUPPORTED with a message naming the
 * backend and the call; callers ask kr_backend_caps instead of testing which backend they hold.
 */
#ifndef KAREUS_BACKEND_H
#define KAREUS_BACKEND_H

#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* Which comm kernel runs a partition's collective (kr_config.kernel). Zero is the tuned kernel,
 * so a zero-initialised config keeps the meaning it had before the field existed. Baseline
 * variants (sequential, default-overlap) always run NCCL whatever the field says. */
typedef enum kr_comm_kernel {
    KR_KERNEL_TUNED = 0, /* Kareus's tuned all-reduce / gather kernel, one CTA per comm SM */
    KR_KERNEL_NCCL = 1   /* NCCL's ring, its CTA count (channels) set to the config's sms */
} kr_comm_kernel;
#define KR_KERNEL_COUNT 2

/* "tuned", "nccl"; "?" for a value outside the enum. */
const char *kr_comm_kernel_name(int kernel);
/* Parses "tuned" / "nccl" into *out. Returns KR_OK or KR_EINVAL (unknown name; *out untouched). */
int kr_comm_kernel_parse(const char *name, int *out);

/* One point of a partition's search space. */
typedef struct kr_config {
    int freq_mhz; /* Locked SM clock. */
    int sms;      /* SMs (CTAs) given to the comm kernel; ignored without a collective. */
    int slot;     /* Launch slot index in the partition, or KR_SLOT_NONE (after compute). */
    int kernel;   /* kr_comm_kernel of the kareus variant's collective (0: tuned). */
} kr_config;

/* What one measurement of a partition returns (per GPU, one execution). */
typedef struct kr_measurement {
    double time_s;        /* Wall time of one execution (both streams done). */
    double energy_j;      /* Energy of one GPU for that execution (static included). */
    double eff_energy_j;  /* energy_j − static_power_w × time_s. */
    double time_sd_s;     /* Standard deviation over repeats (0 for the simulator). */
    double energy_sd_j;   /* Standard deviation over repeats (0 for the simulator). */
    int repeats;          /* Measurements averaged (1 for the simulator). */
} kr_measurement;

/* Name, UUID and memory clocks of one device (kr_backend_device_info). */
#define KR_GPU_NAME_MAX 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define KR_GPU_UUID_MAX 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
typedef struct kr_gpu_device_info {
    char name[KR_GPU_NAME_MAX];  /* "NVIDIA A100-SXM4-40GB"; the backend name for backends
                                    without devices of their own. */
    char uuid[KR_GPU_UUID_MAX];  /* "GPU-…"; "" when the device has no stable identity (the
                                    simulator): such devices are never locked between processes. */
    int mem_clock_mhz;           /* Highest supported memory clock (the SM clock list is the one
                                    for this memory clock); 0 if unknown. */
    int cur_mem_clock_mhz;       /* Current memory clock, 0 if unknown. */
} kr_gpu_device_info;

/* A backend: opaque; made by an implementation's create function or by kr_backend_open. */
typedef struct kr_backend kr_backend;

/* What a backend offers (kr_backend_caps), and what it is. */
enum {
    KR_BACKEND_MEASURE = 1u << 0,     /* kr_backend_measure (the measuring interface) */
    KR_BACKEND_CLOCK_LIST = 1u << 1,  /* kr_backend_supported_clocks */
    KR_BACKEND_CLOCK_LOCK = 1u << 2,  /* kr_backend_get_clock, _set_clock, _reset_clock */
    KR_BACKEND_ENERGY = 1u << 3,      /* kr_backend_read_energy */
    KR_BACKEND_POWER = 1u << 4,       /* kr_backend_read_power */
    KR_BACKEND_DEVICE_INFO = 1u << 5, /* device name and UUID of its own (kr_backend_device_info;
                                         without it: the backend's name, no UUID) */
    KR_BACKEND_SIMULATED = 1u << 8,   /* measurements come from a model: cheap and repeatable */
    KR_BACKEND_RECORDED = 1u << 9,    /* measurements come from a recording: only the
                                         configurations it holds */
    KR_BACKEND_SCOPED = 1u << 10      /* restores every clock it changed when it is destroyed or
                                         the process dies (kareusd) */
};

/* The measuring interface. Entries return KR_OK or a KR_E… code with detail in
 * kr_backend_error(b). */
typedef struct kr_measure_ops {
    /* Measures partition p at config c. */
    int (*measure)(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out);
} kr_measure_ops;

/* The control interface. device_count is always there; each other entry is there when its
 * capability is (the comments name it). */
typedef struct kr_control_ops {
    /* Number of devices this backend controls. */
    int (*device_count)(kr_backend *b, int *count);
    /* CLOCK_LIST: supported SM clocks of device dev, highest first; *n set to the count written. */
    int (*supported_clocks)(kr_backend *b, int dev, int *mhz, int cap, int *n);
    /* CLOCK_LOCK: current SM clock and the locked range (0, 0 when not locked). */
    int (*get_clock)(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz);
    /* CLOCK_LOCK: locks the SM clock to [min_mhz, max_mhz] (min = max pins it). */
    int (*set_clock)(kr_backend *b, int dev, int min_mhz, int max_mhz);
    /* CLOCK_LOCK: removes the lock (driver default behaviour). */
    int (*reset_clock)(kr_backend *b, int dev);
    /* ENERGY: cumulative energy counter of the device, joules (NVML: mJ since driver load). */
    int (*read_energy)(kr_backend *b, int dev, double *energy_j);
    /* POWER: present power draw, watts. */
    int (*read_power)(kr_backend *b, int dev, double *power_w);
    /* DEVICE_INFO: identity of device dev; detail of a failure in err. */
    int (*device_info)(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);
} kr_control_ops;

/* An implementation: a static table per kind of backend. */
typedef struct kr_backend_class {
    const char *name;               /* "sim", "replay", "gpu", "nvml", "kareusd", "fake", … */
    unsigned caps;                  /* KR_BACKEND_… */
    const kr_measure_ops *measure;  /* Non-NULL with KR_BACKEND_MEASURE. */
    const kr_control_ops *control;  /* Non-NULL with any control capability (may be present
                                       alone, for device_count). */
    void (*destroy)(void *state);   /* Frees the implementation's state (may be NULL). */
} kr_backend_class;

/*
 * Wraps an implementation's state (the backend takes ownership of state; cls->destroy frees
 * it when the backend is destroyed). Returns KR_EINVAL when cls lacks an entry one of its
 * capabilities needs, KR_ENOMEM.
 */
int kr_backend_create(const kr_backend_class *cls, void *state, kr_backend **out);
/* Destroys b (NULL is fine): the class's destroy, then the handle. */
void kr_backend_destroy(kr_backend *b);
const char *kr_backend_name(const kr_backend *b);
/* KR_BACKEND_… flags of b (0 for NULL). */
unsigned kr_backend_caps(const kr_backend *b);
/* Message of the backend's last failure ("" if none). */
const char *kr_backend_errmsg(const kr_backend *b);
/* For implementations: the error object of b (entries fill it), and b's state when b is of
 * class cls (NULL otherwise), and whether it is. */
kr_error *kr_backend_error(kr_backend *b);
void *kr_backend_state(const kr_backend *b, const kr_backend_class *cls);
int kr_backend_is(const kr_backend *b, const kr_backend_class *cls);

int kr_backend_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out);
int kr_backend_device_count(kr_backend *b, int *count);
int kr_backend_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n);
int kr_backend_get_clock(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz);
int kr_backend_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz);
int kr_backend_reset_clock(kr_backend *b, int dev);
int kr_backend_read_energy(kr_backend *b, int dev, double *energy_j);
int kr_backend_read_power(kr_backend *b, int dev, double *power_w);

/*
 * Name, UUID and memory clocks of device dev of b: the backend's own (KR_BACKEND_DEVICE_INFO:
 * NVML, kareusd, fake), else name = the backend's name, uuid = "" and KR_OK. Returns KR_EINVAL
 * (dev out of range, NULL argument) or the backend's failure code, with detail in err.
 */
int kr_backend_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);

/* ---- the factory ------------------------------------------------------------------------- */

/* What kr_backend_open may need besides the spec; zeroed fields take the defaults. */
typedef struct kr_backend_open_config {
    const kr_job *job;            /* The job a measuring backend works on (sim without job=,
                                     replay, gpu); copied. NULL: default_job. */
    const char *default_job;      /* Job spec or built-in name when job is NULL and the spec names
                                     none (the runtime passes its plan's job); NULL: "default". */
    const char *const *replay;    /* Recordings for replay besides the spec's own ([KEY=]FILE;
                                     the CLI's repeated --replay). */
    int nreplay;
} kr_backend_open_config;

/*
 * Opens a backend from a spec "KIND[:…]", the one syntax of every command's --backend,
 * KAREUS_BACKEND, kareusd's configuration and the Python binding:
 *   sim[:job=PATH|NAME,devices=N,activity=A]   the simulator (sim.h; measuring + control) of
 *                 job= if given, else opt->job, else opt->default_job, else "default"
 *   replay[:[KEY=]FILE]   recorded measurements (search.h: kr_replay_backend_create) of opt->job:
 *                 FILE, then opt->replay; at least one recording
 *   gpu[:N]       the CUDA profiler on devices N.. (default 0) with clocks through NVML
 *                 (profiler.h: kr_profiler_open_backend) for opt->job
 *   auto          (also NULL or ""): kareusd when this process is not root and the kareusd
 *                 socket (kr_gpuctl_kareusd_default_socket) exists, else nvml
 *   kareusd[:SOCKET]  clocks through the scoped helper (gpuctl.h: kr_gpuctl_kareusd_create)
 *   nvml[:lib=PATH]   real clocks (gpuctl.h: kr_gpuctl_nvml_create); lib= is refused (KR_EPERM)
 *                 in a privileged process (effective uid 0, or real and effective ids differ)
 *                 unless PATH is absolute and the file and every directory above it are owned
 *                 by root and writable by no one else — so that `sudo kareus --backend
 *                 nvml:lib=…` (or KAREUS_BACKEND) cannot load a library an unprivileged user
 *                 could have written
 *   fake[:devices=N,max_mhz=,min_mhz=,step_mhz=,cur_mhz=,locked=MIN-MAX,name=,uuid=,
 *         fail_call=N,fail_repeat=0|1,fail_code=perm|backend|nodev,fail_ops=OP+OP,
 *         perm_ops=OP+OP|writes,sleep_s=S,sleep_ops=OP+OP,power_w=W,period_s=S,
 *         no_energy=1,log=PATH,state=PATH]   the fake GPU (gpuctl.h: kr_gpuctl_fake_create)
 * opt may be NULL. Unknown kinds or keys and malformed values are KR_EINVAL with a message naming
 * the key, what was expected and what was found; otherwise the implementation's errors.
 */
int kr_backend_open(const char *spec, const kr_backend_open_config *opt, kr_backend **out, kr_error *err);

/*
 * Checks a config against a partition and a job before measuring: the clock is supported
 * by the GPU, 1 <= sms < sm_count (when there is a collective), the slot exists and the
 * kernel is a kr_comm_kernel.
 * Messages say which value is wrong and what is allowed.
 */
int kr_config_validate(const kr_job *job, const kr_partition *p, const kr_config *c, kr_error *err);

KR_END_DECLS
#endif
