/*
 * overlap.c — what overlap costs each stream: one partition configuration run as given and
 * run with the collective after the compute (nothing overlapped), so the interference of the
 * two kernels can be read off in both directions (kr_sim_overlap_effects, sim.h): how much
 * longer the compute ops take while the comm kernel is resident (SMs it holds, HBM bandwidth
 * it shares, the L2 bandwidth its traffic takes) and how much longer the collective takes
 * while compute runs (HBM shared, its latency-bound copies slowed by the op's traffic).
 * docs/sim.md and docs/results.md print these for the default job.
 */
#include <string.h>

#include "sim_internal.h"

int kr_sim_overlap_effects(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_comm_kernel kernel,
                           kr_sim_overlap *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (kernel != KR_SIM_NCCL && kernel != KR_SIM_TUNED)
        return kr_error_set(err, KR_EINVAL, "overlap effects: kernel: expected tuned or nccl, found %d", (int)kernel);
    kr__sim_run ov = {0, -1, (int)kernel, -2}, alone = {0, -1, (int)kernel, -1};
    kr_sim_result a, b;
    int rc = kr__sim_partition_run(job, p, c, &ov, &a, NULL, err);
    if (rc == KR_OK)
        rc = kr__sim_partition_run(job, p, c, &alone, &b, NULL, err);
    if (rc)
        return rc;
    out->time_s = a.time_s;
    out->energy_j = a.energy_j;
    out->compute_alone_s = b.compute_end_s;
    out->compute_s = a.compute_end_s;
    out->comm_alone_s = b.comm_end_s - b.comm_start_s;
    out->comm_s = a.comm_end_s - a.comm_start_s;
    double lo = a.comm_start_s, hi = a.comm_end_s < a.compute_end_s ? a.comm_end_s : a.compute_end_s;
    out->overlap_s = hi > lo ? hi - lo : 0.0;
    out->compute_slowdown = out->overlap_s > 0 ? (out->compute_s - out->compute_alone_s) / out->overlap_s : 0.0;
    out->comm_slowdown = out->comm_alone_s > 0 ? out->comm_s / out->comm_alone_s - 1.0 : 0.0;
    out->hidden = out->comm_alone_s > 0 ? out->overlap_s / out->comm_s : 0.0;
    return KR_OK;
}
