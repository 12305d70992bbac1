/*
 * kareus.h — umbrella header of libkareus: include this to get the whole public API.
 *
 * Layers (design §3), each one module with one prefix and one header:
 *   status     kr_error, status codes                      (status.h)
 *   workload   GPUs, models, jobs, schedules, partitions   (catalog.h, job.h, sched.h, partition.h)
 *   backend    the measurement/control vtable              (backend.h)
 *   sim        the calibrated GPU simulator backend        (sim.h)
 *   plan       plan files                                  (plan.h)
 *   frontier   Pareto sets, hypervolume, partition frontiers (frontier.h)
 *   gpuctl     NVML (dlopen) and fake GPU backends         (gpuctl.h)
 *   runtime    applying a plan inside a training job       (runtime.h)
 *   options    instruction options, CSV I/O                (options.h)
 *   dag        pipeline DAG, critical path                 (dag.h)
 *   solver     time-energy frontier (Phillips-Dessouky)    (solver.h)
 *   compose    instruction options from partition frontiers (compose.h)
 *   profiler   partitions measured on a real GPU           (profiler.h)
 *   search     partition search spaces, strategies, measurement log, replay (search.h)
 * Further modules (frontier, search, compose, dag, solver, pipesim, compare, report, runtime,
 * gpuctl, profiler) add their headers here as they land.
 */
#ifndef KAREUS_KAREUS_H
#define KAREUS_KAREUS_H

#include "kareus/export.h"
#include "kareus/version.h"
#include "kareus/status.h"
#include "kareus/format.h"
#include "kareus/catalog.h"
#include "kareus/job.h"
#include "kareus/sched.h"
#include "kareus/partition.h"
#include "kareus/backend.h"
#include "kareus/sim.h"
#include "kareus/plan.h"
#include "kareus/pipesim.h"
#include "kareus/metrics.h"
#include "kareus/report.h"
#include "kareus/optimize.h"
#include "kareus/frontier.h"
#include "kareus/gpuctl.h"
#include "kareus/runtime.h"
#include "kareus/options.h"
#include "kareus/dag.h"
#include "kareus/solver.h"
#include "kareus/compose.h"
#include "kareus/profiler.h"
#include "kareus/search.h"
#include "kareus/launch.h"

KR_BEGIN_DECLS
/* Version string of the library, "MAJOR.MINOR.PATCH" of kareus/version.h, e.g. "0.1.0". */
const char *kr_version(void);
KR_END_DECLS

#endif
