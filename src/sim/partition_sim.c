/*
 * partition_sim.c — one partition execution on one GPU, event by event: the compute stream
 * runs the ops in order, the comm kernel launches when the ops before its slot have finished
 * and overlaps the rest, and the partition ends when both streams are done.
 *
 * Design: the execution is cut into segments at every event (an op finishing, the comm kernel
 * launching, its latency phase ending, it finishing). Within a segment the kernel mix is fixed,
 * so the clock (requested, or throttled to stay under TDP: kr__sim_throttle), the op's rate,
 * the comm kernel's bus bandwidth and the board power are constant; ops can be partly
 * overlapped (an op in flight when the comm kernel launches or finishes continues at the new
 * rate with the fraction of its work left). Energy is Σ power × duration over the segments, so
 * it is exact for the model. Each op starts with its launch phase (launch_s, the stream idle),
 * then its body. At most 2·nops + 2 segments; nothing is allocated.
 *
 * Variants need no special code: sequential is slot KR_SLOT_NONE (the comm launches after the
 * last op) with NCCL's CTAs, default overlap is the slot at op 0 with NCCL's CTAs, kareus is
 * whatever the config says; non-partition work has no collective (or a sequential one).
 */
#include "sim_internal.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

enum { COMM_IDLE, COMM_LATENCY, COMM_MOVING, COMM_DONE };

/* Where the events of a timeline are being collected (NULL: not wanted). */
typedef struct trace {
    kr_sim_timeline *tl;
    double op_energy[KR_MAX_OPS];
    double op_start[KR_MAX_OPS];
    double comm_energy;
} trace;

static void add_segment(trace *tr, double t0, double t1, double p, double f, int op, int comm)
{
    kr_sim_timeline *tl = tr->tl;
    if (tl->nsegments >= KR_SIM_MAX_SEGMENTS)
        return; /* cannot happen: at most 2·nops + 2 segments */
    kr_sim_segment *s = &tl->segments[tl->nsegments++];
    s->start_s = t0;
    s->end_s = t1;
    s->power_w = p;
    s->f_eff_mhz = f * 1000.0;
    s->op = op;
    s->comm = comm;
}

static void add_event(kr_sim_timeline *tl, int stream, const char *name, double t0, double t1, double energy)
{
    if (tl->nevents >= KR_SIM_MAX_EVENTS)
        return;
    kr_sim_event *e = &tl->events[tl->nevents++];
    e->stream = stream;
    kr__strlcpy(e->name, name, sizeof e->name);
    e->start_s = t0;
    e->end_s = t1;
    e->power_w = t1 > t0 ? energy / (t1 - t0) : 0.0;
}

static int simulate(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_result *res, trace *tr,
                    kr_error *err)
{
    memset(res, 0, sizeof *res);
    if (job == NULL || p == NULL || c == NULL)
        return kr_error_set(err, KR_EINVAL, "simulator: job, partition and config are required");
    int rc = kr_config_validate(job, p, c, err);
    if (rc)
        return rc;
    if (p->nops < 0 || p->nops > KR_MAX_OPS)
        return kr_error_set(err, KR_EINVAL, "partition %s: expected 0..%d ops, found %d", p->key, KR_MAX_OPS, p->nops);
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, &job->gpu);
    kr__sim_comm cm;
    int has_comm = kr__sim_comm_init(&cm, &sg, &job->cluster, &p->coll, c->sms, err);
    if (has_comm < 0)
        return has_comm;
    int launch_at = p->nops; /* KR_SLOT_NONE: after the last op */
    if (has_comm && c->slot != KR_SLOT_NONE)
        launch_at = p->slots[c->slot].op_index;
    const double f_req = c->freq_mhz / 1000.0;
    const int n_sm = (int)job->gpu.sm_count;

    const double launch_s = job->gpu.launch_s;
    int i = 0;            /* current op */
    double launch_left = launch_s; /* seconds of op i's launch phase still to go */
    double left = 1.0;    /* fraction of op i's body still to do */
    int cs = COMM_IDLE;   /* comm state */
    double comm_left = 0; /* seconds of latency, or bus bytes, still to go */
    double t = 0, energy = 0, f_min = f_req, p_max = 0;
    if (has_comm && launch_at == 0) {
        cs = COMM_LATENCY;
        comm_left = cm.alpha_s;
    }
    if (tr && p->nops > 0)
        tr->op_start[0] = 0;
    while (i < p->nops || cs == COMM_LATENCY || cs == COMM_MOVING) {
        int comm_on = cs == COMM_LATENCY || cs == COMM_MOVING;
        int op_on = i < p->nops, in_launch = op_on && launch_left > 0;
        kr__sim_mix mix;
        mix.op = op_on && !in_launch ? &p->ops[i] : NULL;
        mix.op_sms = comm_on ? n_sm - cm.sms : n_sm;
        mix.comm = comm_on ? &cm : NULL;
        mix.comm_moving = cs == COMM_MOVING;
        kr__sim_rates r;
        double f = kr__sim_throttle(&sg, &mix, f_req, &r);
        double dt_op = in_launch ? launch_left : op_on ? left * r.op_time_s : INFINITY;
        double dt_comm = cs == COMM_LATENCY ? comm_left : cs == COMM_MOVING ? comm_left / r.bus_Bps : INFINITY;
        double dt = KR_MIN(dt_op, dt_comm);
        if (tr)
            add_segment(tr, t, t + dt, r.power_w, f, op_on ? i : -1, comm_on);
        t += dt;
        energy += r.power_w * dt;
        f_min = KR_MIN(f_min, f);
        p_max = KR_MAX(p_max, r.power_w);
        if (tr) {
            if (op_on)
                tr->op_energy[i] += r.power_w * dt;
            if (comm_on)
                tr->comm_energy += r.power_w * dt;
        }
        /* Advance the comm stream. */
        if (comm_on) {
            if (dt_comm <= dt_op) {
                if (cs == COMM_LATENCY) {
                    cs = COMM_MOVING;
                    comm_left = cm.bus_bytes;
                } else {
                    cs = COMM_DONE;
                    res->comm_end_s = t;
                }
            } else {
                comm_left -= cs == COMM_LATENCY ? dt : dt * r.bus_Bps;
            }
        }
        /* Advance the compute stream. */
        if (in_launch) {
            launch_left = dt_op <= dt_comm ? 0.0 : launch_left - dt;
        } else if (op_on) {
            if (dt_op <= dt_comm) {
                if (tr)
                    add_event(tr->tl, KR_SIM_STREAM_COMPUTE, p->ops[i].name, tr->op_start[i], t, tr->op_energy[i]);
                i++;
                left = 1.0;
                launch_left = launch_s;
                if (i == p->nops)
                    res->compute_end_s = t;
                else if (tr)
                    tr->op_start[i] = t;
            } else {
                left -= dt / r.op_time_s;
            }
        }
        if (has_comm && cs == COMM_IDLE && i == launch_at) {
            cs = COMM_LATENCY;
            comm_left = cm.alpha_s;
            res->comm_start_s = t;
        }
    }
    if (tr && has_comm)
        add_event(tr->tl, KR_SIM_STREAM_COMM, kr_coll_kind_name(p->coll.kind), res->comm_start_s, res->comm_end_s,
                  tr->comm_energy);
    res->time_s = t;
    res->energy_j = energy;
    res->eff_energy_j = energy - job->static_power_w * t;
    res->min_f_eff_mhz = f_min * 1000.0;
    res->max_power_w = p_max;
    return KR_OK;
}

int kr_sim_partition(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_result *out, kr_error *err)
{
    return simulate(job, p, c, out, NULL, err);
}

int kr_sim_measure(const kr_job *job, const kr_partition *p, const kr_config *c, kr_measurement *out, kr_error *err)
{
    kr_sim_result r;
    int rc = simulate(job, p, c, &r, NULL, err);
    memset(out, 0, sizeof *out);
    if (rc)
        return rc;
    out->time_s = r.time_s;
    out->energy_j = r.energy_j;
    out->eff_energy_j = r.eff_energy_j;
    out->repeats = 1;
    return KR_OK;
}

int kr_sim_partition_timeline(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_timeline *out,
                              kr_error *err)
{
    memset(out, 0, sizeof *out);
    trace tr;
    memset(&tr, 0, sizeof tr);
    tr.tl = out;
    return simulate(job, p, c, &out->result, &tr, err);
}

int kr_sim_fixed_config(const kr_partition *p, int freq_mhz, kr_config *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    out->freq_mhz = freq_mhz;
    if (p->variant == KR_VARIANT_KAREUS && p->per_stage == 0)
        return kr_error_set(err, KR_EINVAL,
                            "partition %s (kareus): no fixed config: its slot and comm SMs are searched", p->key);
    out->slot = p->fixed_slot;
    out->sms = p->fixed_sms;
    return KR_OK;
}
