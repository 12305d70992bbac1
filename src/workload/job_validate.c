/*
 * job_validate.c — kr_job_validate: the checks that a job is self-consistent (sizes positive,
 * the schedule's chunks, TP/CP against the model's shape, layers adding up, the GPUs fitting
 * the cluster, the planning clocks, SM lists and static power against the GPU), in the order
 * they have always been reported: the first failing check names its field.
 */
#include "kareus/job.h"
#include "kareus/sched.h"

#include <limits.h>

#include "util/util.h"

static int check_smlist(const kr_job *job, const kr_smlist *l, const char *what, kr_error *err)
{
    if (l->n < 1)
        return kr_error_set(err, KR_ERANGE, "job '%s': %s: expected at least one SM count, found an empty list",
                            job->name, what);
    for (int i = 0; i < l->n; i++) {
        if (l->v[i] < 1 || l->v[i] >= (int)job->gpu.sm_count)
            return kr_error_set(err, KR_ERANGE, "job '%s': %s[%d]: expected an SM count in [1, %d], found %d",
                                job->name, what, i, (int)job->gpu.sm_count - 1, l->v[i]);
        if (i && l->v[i] <= l->v[i - 1])
            return kr_error_set(err, KR_ERANGE,
                                "job '%s': %s[%d]: expected strictly ascending SM counts, found %d after %d",
                                job->name, what, i, l->v[i], l->v[i - 1]);
    }
    return KR_OK;
}

/* Sizes and counts: positive, and the schedule's instruction count and chunks. */
static int check_sizes(const kr_job *job, kr_error *err)
{
    const kr_model *m = &job->model;
    const char *n = job->name;
#define POS(field, value)                                                                         \
    if ((value) < 1)                                                                              \
        return kr_error_set(err, KR_ERANGE, "job '%s': %s: expected a positive integer, found %d", n, \
                            field, (int)(value));
    POS("model.hidden", m->hidden);
    POS("model.ffn", m->ffn);
    POS("model.heads", m->heads);
    POS("model.kv_groups", m->kv_groups);
    POS("model.head_dim", m->head_dim);
    POS("model.layers", m->layers);
    POS("model.vocab", m->vocab);
    POS("parallelism.tp", job->tp);
    POS("parallelism.cp", job->cp);
    POS("parallelism.pp", job->pp);
    POS("parallelism.dp", job->dp);
    POS("microbatch_size", job->microbatch_size);
    POS("seq_len", job->seq_len);
    POS("num_microbatches", job->num_microbatches);
    POS("virtual_stages", job->virtual_stages);
    POS("cluster.gpus_per_node", job->cluster.gpus_per_node);
    POS("cluster.nodes", job->cluster.nodes);
#undef POS
    if (kr_sched_length(job->num_microbatches, job->virtual_stages) < 0)
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': num_microbatches: expected 2 x num_microbatches x virtual_stages <= %d "
                            "instructions per stage, found 2 x %d x %d",
                            n, KR_SCHED_MAX_LENGTH, job->num_microbatches, job->virtual_stages);
    if (job->schedule != KR_SCHEDULE_INTERLEAVED_1F1B && job->virtual_stages != 1)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': virtual_stages: expected 1 for schedule %s (only interleaved-1f1b uses chunks), found %d",
                            n, kr_schedule_name(job->schedule), job->virtual_stages);
    if (job->schedule == KR_SCHEDULE_INTERLEAVED_1F1B) {
        if (job->virtual_stages < 2)
            return kr_error_set(err, KR_EINVAL, "job '%s': virtual_stages: expected >= 2 for interleaved-1f1b, found %d",
                                n, job->virtual_stages);
        if (job->num_microbatches % job->pp != 0)
            return kr_error_set(err, KR_EINVAL,
                                "job '%s': num_microbatches: expected a multiple of pp (%d) for interleaved-1f1b, found %d",
                                n, job->pp, job->num_microbatches);
    }
    return KR_OK;
}

/* TP and CP against the model's shape; pipeline stages and their layers. */
static int check_shape(const kr_job *job, kr_error *err)
{
    const kr_model *m = &job->model;
    const char *n = job->name;
    if (m->heads % m->kv_groups != 0)
        return kr_error_set(err, KR_EINVAL, "job '%s': model.kv_groups: expected a divisor of heads (%d), found %d",
                            n, m->heads, m->kv_groups);
    if (m->heads % job->tp != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor of the model's %d attention heads, found %d",
                            n, m->heads, job->tp);
    if (m->kv_groups % job->tp != 0 && job->tp % m->kv_groups != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor or multiple of the model's %d KV groups, found %d",
                            n, m->kv_groups, job->tp);
    if (m->ffn % job->tp != 0 || m->hidden % job->tp != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor of hidden (%d) and ffn (%d), found %d", n,
                            m->hidden, m->ffn, job->tp);
    if (job->seq_len % (2 * job->cp) != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': seq_len: expected a multiple of 2*cp = %d (CP splits the sequence in 2*cp chunks), found %d",
                            n, 2 * job->cp, job->seq_len);
    if (job->pp > KR_MAX_STAGES)
        return kr_error_set(err, KR_ERANGE, "job '%s': parallelism.pp: expected at most %d stages, found %d", n,
                            KR_MAX_STAGES, job->pp);
    if (job->pp > m->layers)
        return kr_error_set(err, KR_EINVAL, "job '%s': parallelism.pp: expected at most %d stages (one layer each), found %d",
                            n, m->layers, job->pp);
    int sum = 0;
    for (int s = 0; s < job->pp; s++) {
        if (job->layers_per_stage[s] < 1)
            return kr_error_set(err, KR_ERANGE, "job '%s': layers_per_stage[%d]: expected a positive integer, found %d",
                                n, s, job->layers_per_stage[s]);
        if (job->layers_per_stage[s] % job->virtual_stages != 0)
            return kr_error_set(err, KR_EINVAL,
                                "job '%s': layers_per_stage[%d]: expected a multiple of virtual_stages (%d), found %d",
                                n, s, job->virtual_stages, job->layers_per_stage[s]);
        sum += job->layers_per_stage[s];
    }
    if (sum != m->layers)
        return kr_error_set(err, KR_EINVAL, "job '%s': layers_per_stage: expected layers summing to the model's %d, found a sum of %d",
                            n, m->layers, sum);
    return KR_OK;
}

/* The job's GPUs (tp*cp*pp*dp, checked arithmetic) against the cluster; its network. */
static int check_cluster(const kr_job *job, kr_error *err)
{
    const char *n = job->name;
    long long total, avail;
    if (kr__mul_ll(job->tp, job->cp, &total) || kr__mul_ll(total, job->pp, &total) ||
        kr__mul_ll(total, job->dp, &total) || total > (1LL << 30))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': parallelism: expected tp*cp*pp*dp <= %lld GPUs, found %d*%d*%d*%d", n,
                            1LL << 30, job->tp, job->cp, job->pp, job->dp);
    if (kr__mul_ll(job->cluster.gpus_per_node, job->cluster.nodes, &avail))
        avail = LLONG_MAX;
    if (total > avail)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': cluster: expected at least tp*cp*pp*dp = %lld GPUs, found %d nodes x %d GPUs = %lld",
                            n, total, job->cluster.nodes, job->cluster.gpus_per_node, avail);
    if (!(job->cluster.inter_node_bw_Bps > 0) || !(job->cluster.inter_node_latency_s >= 0))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': cluster: expected inter_node_bw_GBps > 0 and inter_node_latency_us >= 0", n);
    return KR_OK;
}

/* Planning clocks, SM lists and static power against the GPU. */
static int check_planning(const kr_job *job, kr_error *err)
{
    const char *n = job->name;
    const kr_gpu *g = &job->gpu;
    if (!kr_gpu_clock_supported(g, job->clock_max_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_max_mhz: expected a clock the %s supports (%d..%d step %d), found %d",
                            n, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            job->clock_max_mhz);
    if (!kr_gpu_clock_supported(g, job->clock_min_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_min_mhz: expected a clock the %s supports (%d..%d step %d), found %d",
                            n, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            job->clock_min_mhz);
    if (job->clock_min_mhz > job->clock_max_mhz)
        return kr_error_set(err, KR_ERANGE, "job '%s': planning: expected clock_min_mhz <= clock_max_mhz, found %d > %d",
                            n, job->clock_min_mhz, job->clock_max_mhz);
    if (job->clock_step_mhz < 1 || job->clock_step_mhz % (int)g->clock_step_mhz != 0 ||
        (job->clock_max_mhz - job->clock_min_mhz) % job->clock_step_mhz != 0)
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_step_mhz: expected a multiple of the GPU's %d MHz step that divides "
                            "clock_max_mhz - clock_min_mhz = %d, found %d",
                            n, (int)g->clock_step_mhz, job->clock_max_mhz - job->clock_min_mhz, job->clock_step_mhz);
    int rc;
    if ((rc = check_smlist(job, &job->sms_allreduce, "planning.sms_allreduce", err)) ||
        (rc = check_smlist(job, &job->sms_gather, "planning.sms_gather", err)))
        return rc;
    if (!(job->static_power_w >= 0) || job->static_power_w >= g->tdp_w)
        return kr_error_set(err, KR_ERANGE, "job '%s': planning.static_power_w: expected a value in [0, %g), found %g", n,
                            g->tdp_w, job->static_power_w);
    return KR_OK;
}

int kr_job_validate(const kr_job *job, kr_error *err)
{
    int rc;
    if ((rc = check_sizes(job, err)) || (rc = check_shape(job, err)) || (rc = check_cluster(job, err)) ||
        (rc = check_planning(job, err)))
        return rc;
    return KR_OK;
}
