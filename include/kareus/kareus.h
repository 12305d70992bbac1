/*
 * kareus.h — umbrella header of libkareus: include this to get the whole public API.
 *
 * Every public header below is self-contained (it includes what it needs) and can be included
 * alone; this one includes them all. Modules, bottom layer first (docs/design.md), each with one
 * header:
 *   export, version, status  exported-API macros, the version, kr_error and status codes
 *   workload   GPUs, models, jobs, schedules, partitions  (catalog.h, job.h, sched.h, partition.h)
 *   backend    the backend handle: measuring and control interfaces, the factory (backend.h)
 *   sim        the calibrated GPU simulator backend                            (sim.h)
 *   plan       iteration plans: files, validation, the artifact's and Zeus's formats (plan.h)
 *   pipesim    a plan executed on the simulated cluster, with its timeline     (pipesim.h)
 *   metrics    the paper's comparison metrics on iteration frontiers           (metrics.h)
 *   report     SVG pictures and the HTML report                                (report.h)
 *   optimize   the whole flow: search, compose, solve, simulate, write         (optimize.h)
 *   frontier   Pareto sets, hypervolume, partition frontiers                   (frontier.h)
 *   gpuctl     NVML (dlopen), the fake GPU, the kareusd client, spec strings   (gpuctl.h)
 *   runtime    applying a plan inside a training job                           (runtime.h)
 *   options    instruction options, CSV I/O                                    (options.h)
 *   dag        pipeline DAG, critical path                                     (dag.h)
 *   solver     time–energy frontier (Phillips–Dessouky), bounds, plans         (solver.h)
 *   compose    instruction options from partition frontiers                    (compose.h)
 *   profiler   partitions measured on a real GPU                               (profiler.h)
 *   search     search spaces, strategies, measurement log, replay              (search.h)
 *   launch     torchrun/Slurm environments to ranks, stages and GPUs           (launch.h)
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

#endif
