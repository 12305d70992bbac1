/*
 * profiler_internal.h — what the profiler's files share (not public API): the energy-counter
 * edge tracker of the protocol, idle-power measurement and the protocol's clock, used again by
 * the calibration (calibrate.c).
 */
#ifndef KR_PROFILER_INTERNAL_H
#define KR_PROFILER_INTERNAL_H

#include "kareus/profiler.h"

/* Edges of one energy counter (profiler.c, kr__profiler_edge_feed). */
typedef struct kr__profiler_edges {
    double last_e, last_t; /* previous reading and its time */
    double a_e, a_t;       /* opening edge (a_t < 0: not yet) */
    double b_e, b_t;       /* closing edge (b_t < 0: not yet) */
    double changed_t;      /* time of the last change (for the timeout) */
} kr__profiler_edges;

void kr__profiler_edge_init(kr__profiler_edges *E, double e, double now);
/* Feeds a reading; returns 1 when the closing edge (>= window_s after the opening one) was found. */
int kr__profiler_edge_feed(kr__profiler_edges *E, double e, double now, double window_s);

/* Mean power of device dev between two counter edges at least o->window_s apart, with no work
 * launched (idle or whatever else runs). */
int kr__profiler_idle_power(kr_backend *ctl, int dev, const kr_profiler_config *o, const kr_profiler_clock *clk,
                            double *power_w, kr_error *err);

/* The protocol's time source (clk may be NULL: the real clock). */
void kr__profiler_sleep(const kr_profiler_clock *clk, double s);
double kr__profiler_now(const kr_profiler_clock *clk);

/* Gives the GPU backend b something to free after it is destroyed (its clocks reset and its
 * runner closed first): free_fn(ud). */
void kr__profiler_backend_own(kr_backend *b, void *ud, void (*free_fn)(void *ud));

#endif
