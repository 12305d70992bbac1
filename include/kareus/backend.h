/*
 * backend.h — the backend interface: everything above it (search, compose, solve, runtime)
 * works the same whether measurements come from the simulator, a real GPU, a replayed log
 * or the test fake.
 *
 * A backend is a vtable plus an implementation pointer. Implementations:
 *   simulator   kr_sim_backend_create        (sim.h; the default)
 *   replay      kr_replay_backend_create     (search.h; answers from a measurement log)
 *   NVML / GPU  kr_nvml_backend_create       (gpuctl.h; real clocks, energy; CUDA profiler)
 *   fake        kr_fake_backend_create       (gpuctl.h; records calls, fails on call N)
 * A backend may leave a vtable entry NULL; the wrapper then returns KR_EUNSUPPORTED.
 */
#ifndef KAREUS_BACKEND_H
#define KAREUS_BACKEND_H

#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* One point of a partition's search space. */
typedef struct kr_config {
    int freq_mhz; /* Locked SM clock. */
    int sms;      /* SMs (CTAs) given to the comm kernel; ignored without a collective. */
    int slot;     /* Launch slot index in the partition, or KR_SLOT_NONE (after compute). */
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

typedef struct kr_backend kr_backend;

/* The vtable. Every entry returns KR_OK or a KR_E… code and may fill b->err. */
typedef struct kr_backend_ops {
    const char *name; /* "sim", "replay", "nvml", "fake", … */
    /* Measures partition p of job at config c. */
    int (*measure)(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out);
    /* Number of devices this backend controls. */
    int (*device_count)(kr_backend *b, int *count);
    /* Supported SM clocks of device dev, highest first; *n set to the count written. */
    int (*supported_clocks)(kr_backend *b, int dev, int *mhz, int cap, int *n);
    /* Current SM clock and the locked range (0, 0 when not locked). */
    int (*get_clock)(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz);
    /* Locks the SM clock to [min_mhz, max_mhz] (min = max pins it). */
    int (*set_clock)(kr_backend *b, int dev, int min_mhz, int max_mhz);
    /* Removes the lock (driver default behaviour). */
    int (*reset_clock)(kr_backend *b, int dev);
    /* Cumulative energy counter of the device, joules (NVML: mJ since driver load). */
    int (*read_energy)(kr_backend *b, int dev, double *energy_j);
    /* Present power draw, watts. */
    int (*read_power)(kr_backend *b, int dev, double *power_w);
    /* Frees the implementation (not b itself). */
    void (*destroy)(kr_backend *b);
} kr_backend_ops;

struct kr_backend {
    const kr_backend_ops *ops; /* The implementation's vtable. */
    void *impl;                /* The implementation's state. */
    kr_error err;              /* Detail of the last failure. */
};

/* Wraps an implementation (the backend takes ownership of impl; ops->destroy frees it). */
int kr_backend_create(const kr_backend_ops *ops, void *impl, kr_backend **out);
void kr_backend_destroy(kr_backend *b);
const char *kr_backend_name(const kr_backend *b);
/* Message of the backend's last failure ("" if none). */
const char *kr_backend_errmsg(const kr_backend *b);

int kr_backend_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out);
int kr_backend_device_count(kr_backend *b, int *count);
int kr_backend_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n);
int kr_backend_get_clock(kr_backend *b, int dev, int *cur_mhz, int *locked_min_mhz, int *locked_max_mhz);
int kr_backend_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz);
int kr_backend_reset_clock(kr_backend *b, int dev);
int kr_backend_read_energy(kr_backend *b, int dev, double *energy_j);
int kr_backend_read_power(kr_backend *b, int dev, double *power_w);

/*
 * Checks a config against a partition and a job before measuring: the clock is supported
 * by the GPU, 1 <= sms < sm_count (when there is a collective), and the slot exists.
 * Messages say which value is wrong and what is allowed.
 */
int kr_config_validate(const kr_job *job, const kr_partition *p, const kr_config *c, kr_error *err);

KR_END_DECLS
#endif
