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
 * whatever the config says — its kernel too (kr_config.kernel: tuned, or NCCL with the config's
 * CTA count), so the kareus variant at (NCCL, NCCL's CTAs, slot at op 0) is the default-overlap
 * execution exactly; non-partition work has no collective (or a sequential one).
 */
#include "sim_internal.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

enum { COMM_IDLE, COMM_PENDING, COMM_LATENCY, COMM_MOVING, COMM_DONE };

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

/* What one pass over the two streams needs and gives. */
typedef struct pass {
    const kr_job *job;
    const kr_partition *p;
    const kr__sim_gpu *sg;
    const kr__sim_comm *cm;
    int has_comm, launch_at, join_after;
    double f_req;
    double host_s, host0_s; /* dispatch: op i at host0 + i·host_s (0, 0: the host is ahead) */
    /* results */
    double t, energy, floor_e, f_min, p_max, busy, dispatch, comm_hbm;
    double compute_end, comm_start, comm_end;
} pass;

/* Where the two streams stand during a pass. */
typedef struct streams {
    int i;              /* current op */
    double launch_left; /* op i's launch phase still to go */
    double left;        /* fraction of op i's body still to do */
    int cs;             /* comm state */
    double comm_left;   /* seconds of waiting or latency, or bus bytes, still to go */
    double t;
} streams;

/* Books one step of dt (clock f, rates r) into the pass's sums and the trace. */
static void account(pass *ps, trace *tr, const streams *st, double dt, double f, const kr__sim_rates *r, int op_on,
                    int comm_on, int in_launch)
{
    if (tr)
        add_segment(tr, st->t, st->t + dt, r->power_w, f, op_on ? st->i : -1, comm_on);
    ps->energy += r->power_w * dt;
    ps->floor_e += r->floor_w * dt;
    if (in_launch)
        ps->dispatch += dt;
    else if (op_on)
        ps->busy += dt;
    if (st->cs == COMM_MOVING)
        ps->comm_hbm += r->bus_Bps * ps->cm->hbm_per_bus * dt;
    ps->f_min = KR_MIN(ps->f_min, f);
    ps->p_max = KR_MAX(ps->p_max, r->power_w);
    if (tr) {
        if (op_on)
            tr->op_energy[st->i] += r->power_w * dt;
        if (comm_on)
            tr->comm_energy += r->power_w * dt;
    }
}

/* Advances the comm stream by a step of dt (the comm's next event after dt_comm). */
static void advance_comm(pass *ps, streams *st, double dt, double dt_op, double dt_comm, const kr__sim_rates *r)
{
    if (dt_comm <= dt_op) {
        if (st->cs == COMM_PENDING) {
            st->cs = COMM_LATENCY;
            st->comm_left = ps->cm->alpha_s;
        } else if (st->cs == COMM_LATENCY) {
            st->cs = COMM_MOVING;
            st->comm_left = ps->cm->bus_bytes;
        } else {
            st->cs = COMM_DONE;
            ps->comm_end = st->t;
        }
    } else {
        st->comm_left -= st->cs == COMM_MOVING ? dt * r->bus_Bps : dt;
    }
}

/* Advances the compute stream (op i running its body) by a step of dt. */
static void advance_op(pass *ps, trace *tr, streams *st, double dt, double dt_op, double dt_comm,
                       const kr__sim_rates *r)
{
    const kr_partition *p = ps->p;
    if (dt_op > dt_comm) {
        st->left -= dt / r->op_time_s;
        return;
    }
    int i = st->i;
    if (tr)
        add_event(tr->tl, KR_SIM_STREAM_COMPUTE, p->ops[i].name, tr->op_start[i], st->t, tr->op_energy[i]);
    i = ++st->i;
    st->left = 1.0;
    st->launch_left = KR_MAX(ps->job->gpu.launch_s, ps->host0_s + i * ps->host_s - st->t);
    if (i == p->nops)
        ps->compute_end = st->t;
    else if (tr)
        tr->op_start[i] = st->t;
}

/* Runs the compute and comm streams of one partition execution, event by event. */
static void run_streams(pass *ps, trace *tr)
{
    const kr_partition *p = ps->p;
    const kr__sim_comm *cm = ps->cm;
    const int n_sm = (int)ps->job->gpu.sm_count;
    streams st = {0, KR_MAX(ps->job->gpu.launch_s, ps->host0_s), 1.0, COMM_IDLE, 0, 0};
    ps->f_min = ps->f_req;
    if (tr) {
        memset(tr->op_energy, 0, sizeof tr->op_energy);
        tr->comm_energy = 0;
        tr->tl->nsegments = tr->tl->nevents = 0;
        tr->op_start[0] = 0;
    }
    for (;;) {
        if (ps->has_comm && st.cs == COMM_IDLE && st.i == ps->launch_at) {
            /* The host dispatches the comm kernel before op launch_at. */
            double wait = ps->host0_s + ps->launch_at * ps->host_s - st.t;
            st.cs = wait > 0 ? COMM_PENDING : COMM_LATENCY;
            st.comm_left = wait > 0 ? wait : cm->alpha_s;
            ps->comm_start = st.t + KR_MAX(0.0, wait);
        }
        int cs = st.cs;
        if (!(st.i < p->nops || cs == COMM_PENDING || cs == COMM_LATENCY || cs == COMM_MOVING))
            break;
        int comm_on = cs == COMM_LATENCY || cs == COMM_MOVING;
        int comm_busy = comm_on || cs == COMM_PENDING;
        int joined = comm_busy && ps->join_after >= 0 && st.i > ps->join_after; /* compute waits for the comm */
        int op_on = st.i < p->nops && !joined, in_launch = op_on && st.launch_left > 0;
        kr__sim_mix mix;
        mix.op = op_on && !in_launch ? &p->ops[st.i] : NULL;
        mix.op_sms = comm_on ? n_sm - cm->sms : n_sm;
        mix.comm = comm_on ? cm : NULL;
        mix.comm_moving = cs == COMM_MOVING;
        mix.op_eff = 0;
        kr__sim_rates r;
        double f = kr__sim_throttle(ps->sg, &mix, ps->f_req, &r);
        double dt_op = in_launch ? st.launch_left : op_on ? st.left * r.op_time_s : INFINITY;
        double dt_comm = cs == COMM_PENDING || cs == COMM_LATENCY ? st.comm_left
                         : cs == COMM_MOVING                       ? st.comm_left / r.bus_Bps
                                                                   : INFINITY;
        double dt = KR_MIN(dt_op, dt_comm);
        account(ps, tr, &st, dt, f, &r, op_on, comm_on, in_launch);
        st.t += dt;
        if (comm_busy)
            advance_comm(ps, &st, dt, dt_op, dt_comm, &r);
        if (in_launch)
            st.launch_left = dt_op <= dt_comm ? 0.0 : st.launch_left - dt;
        else if (op_on)
            advance_op(ps, tr, &st, dt, dt_op, dt_comm, &r);
    }
    ps->t = st.t;
}

/* The result of a partition run from its final pass, with the idle tail at the floor: the wait
 * for a host-bound dispatch (host_wait), then the collective's skew. */
static void finish(const pass *ps, int host_bound, double host_wait, int kernel, kr_sim_result *res, trace *tr)
{
    const kr_job *job = ps->job;
    const kr_partition *p = ps->p;
    int has_comm = ps->has_comm;
    /* Phases where the GPU holds its clock and draws the floor: the host still dispatching,
     * then the wait for the slowest rank of the collective's group. */
    kr__sim_rates idle;
    kr__sim_mix none = {NULL, (int)job->gpu.sm_count, NULL, 0, 0};
    kr__sim_throttle(ps->sg, &none, ps->f_req, &idle);
    res->dispatch_s = ps->dispatch + host_wait;
    res->sync_s = host_bound ? job->gpu.sync_s : 0.0;
    if (has_comm)
        res->skew_s = job->gpu.skew_cv * kr__sim_emax(p->coll.group_size) * ps->busy;
    double tail = host_wait + res->skew_s;
    if (tr && tail > 0)
        add_segment(tr, ps->t, ps->t + tail, idle.power_w, ps->f_req, -1, 0);
    double t = ps->t + tail;
    double energy = ps->energy + idle.power_w * tail;
    if (tr && has_comm)
        add_event(tr->tl, KR_SIM_STREAM_COMM, kr_coll_kind_name(p->coll.kind), ps->comm_start, ps->comm_end,
                  tr->comm_energy);
    res->time_s = t;
    res->energy_j = energy;
    res->eff_energy_j = energy - job->static_power_w * t;
    res->compute_end_s = ps->compute_end;
    res->comm_start_s = ps->comm_start;
    res->comm_end_s = ps->comm_end;
    res->min_f_eff_mhz = ps->f_min * 1000.0;
    res->max_power_w = ps->p_max;
    res->floor_w = kr__sim_floor(ps->sg, ps->f_req);
    res->floor_energy_j = ps->floor_e + idle.floor_w * tail;
    if (has_comm) {
        res->comm_kernel = kernel;
        res->comm_sms = ps->cm->sms;
        res->comm_hbm_bytes = ps->comm_hbm;
    }
}

static int simulate(const kr_job *job, const kr_partition *p, const kr_config *c, const kr__sim_run *run,
                    kr_sim_result *res, trace *tr, kr_error *err)
{
    memset(res, 0, sizeof *res);
    res->comm_kernel = -1;
    if (job == NULL || p == NULL || c == NULL)
        return kr_error_set(err, KR_EINVAL, "simulator: job, partition and config are required");
    int rc = kr_config_validate(job, p, c, err);
    if (rc)
        return rc;
    if (p->nops < 0 || p->nops > KR_MAX_OPS)
        return kr_error_set(err, KR_EINVAL, "partition %s: expected 0..%d ops, found %d", p->key, KR_MAX_OPS, p->nops);
    kr__sim_run dflt = {0, -1, -1, -2};
    if (run == NULL)
        run = &dflt;
    kr__sim_gpu sg;
    kr__sim_gpu_init(&sg, &job->gpu);
    /* The kareus variant runs the kernel its config names (tuned by default); the baselines run
     * NCCL whatever the config says, so a config read from an old log or plan keeps its meaning. */
    int kareus = p->variant == KR_VARIANT_KAREUS && p->per_stage == 0;
    int kernel = run->kernel >= 0 ? run->kernel
                                  : (kareus && c->kernel != KR_KERNEL_NCCL ? KR_SIM_TUNED : KR_SIM_NCCL);
    kr__sim_comm cm;
    int has_comm = kr__sim_comm_init(&cm, &sg, &job->cluster, &p->coll, kernel == KR_SIM_TUNED, c->sms, run->block, err);
    if (has_comm < 0)
        return has_comm;
    int launch_at = p->nops; /* KR_SLOT_NONE: after the last op */
    if (has_comm && run->launch_op >= -1)
        launch_at = run->launch_op >= 0 && run->launch_op < p->nops ? run->launch_op : p->nops;
    else if (has_comm && c->slot != KR_SLOT_NONE)
        launch_at = p->slots[c->slot].op_index;

    /*
     * Host dispatch (eager training: each op is a Python-level call). In steady state the host
     * either runs ahead of the GPU — then dispatch costs nothing — or the GPU waits for it. So:
     * one pass with the host ahead gives the GPU time G; if the host needs longer,
     * H = host_call + nops·host_op (host_call: the partition call itself, event record/wait,
     * the comm launch), the partition is host-bound and runs again with op i dispatched at
     * host_call + i·host_op (the comm before op launch_at), and lasts at least H.
     */
    pass ps;
    memset(&ps, 0, sizeof ps);
    ps.job = job;
    ps.p = p;
    ps.sg = &sg;
    ps.cm = &cm;
    ps.has_comm = has_comm;
    ps.launch_at = launch_at;
    ps.join_after = run->join_after;
    ps.f_req = c->freq_mhz / 1000.0;
    run_streams(&ps, tr);
    double host_total = job->gpu.sync_s + p->nops * job->gpu.host_op_s;
    int host_bound = ps.t < host_total;
    if (host_bound) {
        pass hb = ps;
        hb.t = hb.energy = hb.floor_e = hb.busy = hb.dispatch = hb.comm_hbm = hb.p_max = 0;
        hb.compute_end = hb.comm_start = hb.comm_end = 0;
        hb.host_s = job->gpu.host_op_s;
        hb.host0_s = job->gpu.sync_s;
        run_streams(&hb, tr);
        ps = hb;
    }
    finish(&ps, host_bound, host_bound ? KR_MAX(0.0, host_total - ps.t) : 0.0, kernel, res, tr);
    return KR_OK;
}

int kr__sim_partition_run(const kr_job *job, const kr_partition *p, const kr_config *c, const kr__sim_run *run,
                          kr_sim_result *out, kr_sim_timeline *tl, kr_error *err)
{
    if (tl == NULL)
        return simulate(job, p, c, run, out, NULL, err);
    memset(tl, 0, sizeof *tl);
    trace tr;
    memset(&tr, 0, sizeof tr);
    tr.tl = tl;
    int rc = simulate(job, p, c, run, &tl->result, &tr, err);
    *out = tl->result;
    return rc;
}

int kr_sim_partition(const kr_job *job, const kr_partition *p, const kr_config *c, kr_sim_result *out, kr_error *err)
{
    return simulate(job, p, c, NULL, out, NULL, err);
}

int kr_sim_measure(const kr_job *job, const kr_partition *p, const kr_config *c, kr_measurement *out, kr_error *err)
{
    kr_sim_result r;
    int rc = simulate(job, p, c, NULL, &r, NULL, err);
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
    return simulate(job, p, c, NULL, &out->result, &tr, err);
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
