/*
 * frontier.h — time–energy frontiers: 2-D Pareto filtering with provenance, hypervolume,
 * interpolation and lower convex hull (the geometry every later step uses), and the partition
 * frontier: the measured points of one partition with their configurations and Pareto flags,
 * as the search returns them and as frontier files store them (read by compose/solve/compare).
 *
 * The plane. Every geometric function works in the plane (x, y) = (time_s, energy_j −
 * static_power_w · time_s) and minimises both coordinates. Pass static_power_w = 0 for total
 * energy, or the job's static power for effective energy (design §1: static energy is charged
 * once, at the iteration level, so partitions are compared on effective energy). Points keep
 * their original energy_j; only comparisons use y.
 *
 * Provenance. A kr_fpoint carries a caller-chosen 64-bit id (an index into the caller's
 * array, a packed configuration, …) that the functions copy through untouched, so a filtered
 * or hull point always says where it came from.
 *
 * Frontier files (schema "kareus.frontier", version KR_FRONTIER_VERSION), one per partition
 * and variant, written atomically by kr_frontier_write_json / kr_frontier_write_csv and read
 * back by kr_frontier_read (docs/search.md has the full layout):
 *   JSON {"schema": "kareus.frontier", "version": 1,
 *         "job": {"name", "fingerprint"}, "key", "variant", "static_power_w",
 *         "slots": [slot names], "search": {"strategy", "backend", "seed", "space_size"},
 *         "points": [{"freq_mhz", "slot", "sms", ["kernel": "nccl"], "time_s", "energy_j", "eff_energy_j",
 *                     "time_sd_s", "energy_sd_j", "pareto_eff", "pareto_total",
 *                     "pareto_clock"}, …]}
 *   CSV  "# kareus.frontier 1" then "# name: value" header comments (job, fingerprint, key,
 *        variant, static_power_w, slots, strategy, backend, seed, space_size), then the
 *        columns freq_mhz,slot,sms,time_s,energy_j,eff_energy_j,time_sd_s,energy_sd_j,
 *        pareto_eff,pareto_total,pareto_clock (flags 0/1),kernel (tuned/nccl; files without the
 *        column read as tuned).
 */
#ifndef KAREUS_FRONTIER_H
#define KAREUS_FRONTIER_H

#include <stddef.h>

#include "kareus/backend.h"
#include "kareus/format.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* ---- geometry ----------------------------------------------------------------------- */

/* A point of a time–energy plane with the caller's provenance tag. */
typedef struct kr_fpoint {
    double time_s;   /* Time (first objective). */
    double energy_j; /* Energy (total; the plane's y is energy_j − static_power_w · time_s). */
    long long id;    /* Caller's tag, copied through unchanged. */
} kr_fpoint;

/*
 * Pareto filter: writes to out the non-dominated points of pts in the plane (time, energy −
 * static_power_w · time), sorted by time ascending (so y strictly descending), and their count
 * to *nout. A point is kept when its y is lower, by more than tol_j, than the y of every point
 * that is faster or as fast (tol_j = 0: the exact Pareto set; the published composition uses
 * 1e-4 J). Among points with equal time and y the first in input order is kept, so the result
 * is deterministic. out needs room for n points and may be pts itself (filter in place).
 * O(n log n) time, O(n) scratch.
 * Returns KR_OK; KR_EINVAL for a NULL argument with n > 0, a non-finite coordinate (the message
 * names its index) or tol_j < 0; KR_ENOMEM.
 */
int kr_frontier_pareto(const kr_fpoint *pts, size_t n, double static_power_w, double tol_j, kr_fpoint *out,
                       size_t *nout, kr_error *err);

/*
 * Hypervolume: the area of the part of the plane that some point of pts dominates and that
 * the reference point (ref_time_s, ref_y) bounds, i.e. the measure of
 * ∪_i [t_i, ref_time_s] × [y_i, ref_y] (y = energy − static_power_w · time; ref_y is on that
 * axis, in joules). Points not strictly below the reference in both coordinates add nothing.
 * pts need not be a frontier; a frontier sorted by time is detected and not re-sorted.
 * O(n log n). Returns KR_OK; KR_EINVAL (NULL, non-finite values); KR_ENOMEM.
 */
int kr_frontier_hypervolume(const kr_fpoint *pts, size_t n, double static_power_w, double ref_time_s,
                            double ref_y, double *hv, kr_error *err);

/* How to read a frontier between its points. */
typedef enum kr_interp {
    /* What the discrete options achieve: the energy at time T is that of the lowest-energy
     * point no slower than T; the time at energy E is that of the fastest point using at most
     * E. Piecewise constant, right-continuous in time. */
    KR_INTERP_STAIRCASE = 0,
    /* Straight segments between consecutive frontier points (what mixing two neighbouring
     * options in proportion would give); flat beyond the slowest point. */
    KR_INTERP_LINEAR = 1
} kr_interp;

/*
 * Interpolation on a frontier: front must be a Pareto frontier in the same plane (time
 * strictly ascending, y strictly descending), e.g. the output of kr_frontier_pareto with the
 * same static_power_w.
 * kr_frontier_energy_at: y at time time_s. Times slower than the slowest point give its y.
 * kr_frontier_time_at: the least time whose y is at most y_j; y_j at or above the fastest
 * point's y gives its time.
 * Returns KR_OK; KR_ERANGE when the request lies beyond the frontier (a time faster than the
 * fastest point, an energy below the most frugal point: nothing achieves it); KR_EINVAL for an
 * empty, unsorted or dominated front (the message names the first bad index), a bad mode or a
 * non-finite argument.
 */
int kr_frontier_energy_at(const kr_fpoint *front, size_t n, double static_power_w, double time_s, kr_interp mode,
                          double *y_j, kr_error *err);
int kr_frontier_time_at(const kr_fpoint *front, size_t n, double static_power_w, double y_j, kr_interp mode,
                        double *time_s, kr_error *err);

/*
 * Lower convex hull of a frontier (the piecewise-linear convex lower bound of its points in
 * the plane, fastest to slowest): writes the hull's vertices (a subset of front, in order) to
 * out (room for n, may be front) and their count to *nout. front must be sorted as for the
 * interpolation functions. O(n) (Andrew's monotone chain on sorted input).
 * Returns KR_OK or KR_EINVAL (unsorted or dominated input, NULL).
 */
int kr_frontier_lower_hull(const kr_fpoint *front, size_t n, double static_power_w, kr_fpoint *out, size_t *nout,
                           kr_error *err);

/* ---- partition frontiers ---------------------------------------------------------------- */

#define KR_FRONTIER_VERSION 1

/* Flags of a measured point (kr_measured.flags). Pareto sets use tolerance 0. */
#define KR_FP_PARETO_EFF 0x1u   /* On the (time, effective energy) frontier of all points. */
#define KR_FP_PARETO_TOTAL 0x2u /* On the (time, total energy) frontier of all points. */
#define KR_FP_PARETO_CLOCK 0x4u /* On the (time, effective energy) frontier of its clock. */

/* One measured configuration of a partition (per GPU, one execution). */
typedef struct kr_measured {
    kr_config config;    /* freq_mhz; sms (0 for work without a collective); slot index into
                            the frontier's slot list (KR_SLOT_NONE: after compute). */
    double time_s;       /* Time of one execution. */
    double energy_j;     /* Energy of one GPU for it, static included. */
    double eff_energy_j; /* energy_j − static_power_w · time_s. */
    double time_sd_s;    /* Spread over repeats (0 when measured once or simulated). */
    double energy_sd_j;  /* Spread over repeats. */
    unsigned flags;      /* KR_FP_… bits (set by kr_frontier_set_points). */
} kr_measured;

/* The measured points of one partition key and variant, with where they came from. */
typedef struct kr_partition_frontier {
    char job_name[64];                              /* Job the measurements belong to. */
    char fingerprint[17];                           /* kr_job_fingerprint of that job. */
    char key[KR_KEY_MAX];                           /* Partition key, e.g. "fwd_attn". */
    kr_variant variant;                             /* Execution variant. */
    double static_power_w;                          /* P_static used for eff_energy_j. */
    int nslots;                                     /* The partition's launch slots … */
    char slots[KR_MAX_SLOTS][KR_SLOT_NAME_MAX];     /* … by index (config.slot indexes these). */
    char strategy[16];                              /* Search strategy ("exhaustive", "bo", …). */
    char backend[16];                               /* Backend that measured ("sim", "replay", …). */
    unsigned long long seed;                        /* Search seed. */
    long space_size;                                /* Configurations in the searched space. */
    size_t n;                                       /* Measured points … */
    kr_measured *pts;                               /* … owned; sorted by clock (highest first),
                                                       then per-clock Pareto points by time, then
                                                       the other points by time. */
} kr_partition_frontier;

/*
 * Fills the identity of f from a job and a partition (name, fingerprint, key, variant, the
 * job's static power, slot names) and empties it (no points, no allocation).
 */
void kr_frontier_init(kr_partition_frontier *f, const kr_job *job, const kr_partition *p);

/*
 * Replaces f's points with a copy of pts[0..n): recomputes eff_energy_j from f->static_power_w,
 * sets the KR_FP_… flags and sorts as documented above. Rejects duplicate configurations,
 * non-finite or negative times/energies and slot indices outside f's slot list.
 * Returns KR_OK, KR_EINVAL (message names the point), KR_ENOMEM (f unchanged).
 */
int kr_frontier_set_points(kr_partition_frontier *f, const kr_measured *pts, size_t n, kr_error *err);

/* Frees f's points (f stays valid and empty). NULL is a no-op. */
void kr_frontier_free(kr_partition_frontier *f);

/* Deep copy: dst gets its own points (free with kr_frontier_free). KR_ENOMEM. */
int kr_frontier_copy(kr_partition_frontier *dst, const kr_partition_frontier *src, kr_error *err);

/* Name of slot index i of f ("none" for KR_SLOT_NONE or an index outside the list). */
const char *kr_frontier_slot_name(const kr_partition_frontier *f, int slot);

/* Distinct clocks of f's points, highest first. Returns the count (>= 0) or KR_ERANGE if cap
 * is too small. */
int kr_frontier_clocks(const kr_partition_frontier *f, int *mhz, int cap);

/*
 * The points measured at clock freq_mhz: *first points at the first of them inside f->pts and
 * *n is their count (0 and NULL when none). With pareto_only only that clock's (time,
 * effective energy) Pareto set is returned, sorted by time (composition combines configs
 * measured at the same clock only, kareus-method.md §5). The pointer is valid until f changes.
 */
void kr_frontier_at_clock(const kr_partition_frontier *f, int freq_mhz, int pareto_only, const kr_measured **first,
                          size_t *n);

/*
 * Checks that f was measured for job (same fingerprint): KR_OK, or KR_EMISMATCH with both
 * fingerprints and job names in the message.
 */
int kr_frontier_check_job(const kr_partition_frontier *f, const kr_job *job, kr_error *err);

/* The conventional file name of a partition frontier: "<key>.<variant>.<ext>" (ext "json" or
 * "csv"), e.g. "fwd_attn.kareus.json". */
void kr_frontier_file_name(const char *key, kr_variant variant, const char *ext, char *buf, size_t cap);

/* Writes f as JSON / CSV (atomic: temp file + fsync + rename). KR_EIO, KR_ENOMEM. */
int kr_frontier_write_json(const char *path, const kr_partition_frontier *f, kr_error *err);
int kr_frontier_write_csv(const char *path, const kr_partition_frontier *f, kr_error *err);

/*
 * Reads a frontier file written by either writer (the format is recognised from the content:
 * '{' starts JSON, "# kareus.frontier" starts CSV) into *f (initialised here; free with
 * kr_frontier_free). Every error names the file and the JSON path or line and column, what was
 * expected and what was found: KR_EIO, KR_EPARSE (syntax, wrong type, unknown field, unknown
 * slot), KR_ERANGE (value out of range), KR_EINVAL (duplicate configurations), KR_ENOMEM.
 */
int kr_frontier_read(const char *path, kr_partition_frontier *f, kr_error *err);

/* Row i of the JSON frontier format's description (`kareus compose format`, docs/formats.md);
 * KR_ERANGE past the last row. The CSV file holds the same fields (docs/search.md). */
int kr_frontier_format_field(int i, kr_field_info *out);

KR_END_DECLS
#endif
