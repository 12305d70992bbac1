/*
 * pipesim.c — the pipeline simulator (see pipesim.h).
 *
 * Timing: each stage runs its instruction list in order. Instruction i of stage s starts at
 *   start = max(end of instruction i−1 on s, max over its dependencies d of (end(d) + lag(d)))
 * where the dependencies are F(s−1,m,c) → F(s,m,c) and B(s+1,m,c) → B(s,m,c), with the chunk
 * wrap-around of interleaved 1F1B (F(S−1,m,c−1) → F(0,m,c), B(0,m,c+1) → B(S−1,m,c)), and the
 * lag is the p2p transfer time of the link crossed. Processing stages in sweeps until every
 * instruction has run gives the unique earliest-start schedule; a sweep without progress means
 * the given orders deadlock (reported, not looped on).
 *
 * Energy: one GPU of stage s uses Σ_i E_i + P_static · (T − busy_s); the cluster uses that times
 * the stage's GPU count, summed over stages (design §1: static energy is paid for every second
 * of wall time, bubbles included).
 *
 * Clock changes (kr_pipesim_plan): the runtime requests the new clock when an instruction
 * begins and the GPU takes settle = gpu.clock_switch_s to reach it (gpu-model-data.md §4, E).
 * The first φ = min(1, settle / d_old) of the instruction's work runs at the previous clock:
 *   t = φ·d_old + (1 − φ)·d_new,   E = φ·E_old + (1 − φ)·E_new.
 */
#include "kareus/pipesim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/sim.h"
#include "util/util.h"

void kr_pipe_result_free(kr_pipe_result *r)
{
    if (r == NULL)
        return;
    free(r->events);
    memset(r, 0, sizeof *r);
}

/* Index of (kind, mb, chunk) in a stage's list: pos[((kind * M) + mb) * V + chunk]. */
typedef struct stage_index {
    int *pos;
} stage_index;

static int idx_of(const kr_pipe_input *in, kr_instr_kind k, int mb, int chunk)
{
    return ((int)k * in->microbatches + mb) * in->virtual_stages + chunk;
}

/* Finds the dependency of an instruction: sets *dstage, *dpos (−1: none) and the lag. */
static void dependency(const kr_pipe_input *in, const stage_index *ix, int s, const kr_pipe_instr *it, int *dstage,
                       int *dpos, double *lag)
{
    int S = in->stages, V = in->virtual_stages;
    *dstage = -1;
    *dpos = -1;
    *lag = 0;
    if (it->kind == KR_INSTR_FORWARD) {
        if (s > 0) {
            *dstage = s - 1;
            *dpos = ix[s - 1].pos[idx_of(in, KR_INSTR_FORWARD, it->microbatch, it->chunk)];
            *lag = in->p2p_time_s[s - 1];
        } else if (it->chunk > 0) {
            *dstage = S - 1;
            *dpos = ix[S - 1].pos[idx_of(in, KR_INSTR_FORWARD, it->microbatch, it->chunk - 1)];
            *lag = in->p2p_time_s[S - 1];
        }
    } else {
        if (s < S - 1) {
            *dstage = s + 1;
            *dpos = ix[s + 1].pos[idx_of(in, KR_INSTR_BACKWARD, it->microbatch, it->chunk)];
            *lag = in->p2p_time_s[s];
        } else if (it->chunk < V - 1) {
            *dstage = 0;
            *dpos = ix[0].pos[idx_of(in, KR_INSTR_BACKWARD, it->microbatch, it->chunk + 1)];
            *lag = in->p2p_time_s[S - 1];
        } else {
            *dstage = s;
            *dpos = ix[s].pos[idx_of(in, KR_INSTR_FORWARD, it->microbatch, it->chunk)];
        }
    }
}

/* Energy of stage s's GPU while it waits: each gap at the floor of the clock it holds (the
 * previous instruction's; before the first, the last's, as in a steady run of iterations), or
 * at the constant static power when no GPU is given. */
static double idle_energy(const kr_pipe_input *in, const kr_pipe_result *out, int s, int per)
{
    if (in->gpu == NULL || per == 0)
        return in->static_power_w * out->stage_idle_s[s];
    const kr_pipe_event *ev = &out->events[s * per];
    double e = 0, prev_end = 0;
    int prev_f = ev[per - 1].freq_mhz;
    for (int i = 0; i < per; i++) {
        e += kr_sim_floor_power_w(in->gpu, prev_f) * (ev[i].start_s - prev_end);
        prev_end = ev[i].end_s;
        prev_f = ev[i].freq_mhz;
    }
    return e + kr_sim_floor_power_w(in->gpu, prev_f) * (out->time_s - prev_end);
}

/* Checks stage s's instructions and builds its index (ix->pos, allocated here). */
static int index_stage(const kr_pipe_input *in, int s, stage_index *ix, kr_error *err)
{
    int M = in->microbatches, V = in->virtual_stages, per = 2 * M * V;
    if (in->ninstr[s] != per)
        return kr_error_set(err, KR_EINVAL,
                            "pipesim: stage %d: expected %d instructions (2 x %d microbatches x %d chunks), found %d", s,
                            per, M, V, in->ninstr[s]);
    ix->pos = malloc(sizeof(int) * (size_t)per);
    if (ix->pos == NULL)
        return kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
    for (int i = 0; i < per; i++)
        ix->pos[i] = -1;
    for (int i = 0; i < per; i++) {
        const kr_pipe_instr *it = &in->instr[s][i];
        if (it->microbatch < 0 || it->microbatch >= M || it->chunk < 0 || it->chunk >= V || !(it->time_s >= 0) ||
            !isfinite(it->energy_j) || it->energy_j < 0)
            return kr_error_set(err, KR_EINVAL,
                                "pipesim: stage %d instruction %d: expected microbatch in [0,%d), chunk in [0,%d), "
                                "time >= 0 and finite energy >= 0, found mb %d chunk %d time %g energy %g",
                                s, i, M, V, it->microbatch, it->chunk, it->time_s, it->energy_j);
        int k = idx_of(in, it->kind, it->microbatch, it->chunk);
        if (ix->pos[k] >= 0)
            return kr_error_set(err, KR_EINVAL, "pipesim: stage %d: %s of microbatch %d chunk %d appears twice", s,
                                kr_instr_kind_name(it->kind), it->microbatch, it->chunk);
        ix->pos[k] = i;
    }
    return KR_OK;
}

/* The deadlock error: where each unfinished stage waits. */
static int deadlock(const kr_pipe_input *in, const int *cursor, int per, kr_error *err)
{
    char what[600] = "";
    size_t n = 0;
    for (int s = 0; s < in->stages && n < sizeof what - 80; s++) {
        if (cursor[s] >= per)
            continue;
        const kr_pipe_instr *it = &in->instr[s][cursor[s]];
        n += (size_t)snprintf(what + n, sizeof what - n, "%sstage %d waits at %s of microbatch %d (chunk %d)",
                              n ? "; " : "", s, kr_instr_kind_name(it->kind), it->microbatch, it->chunk);
    }
    return kr_error_set(err, KR_EINVAL, "pipesim: the instruction orders deadlock (a dependency can never run): %s",
                        what);
}

/* Runs every stage's instructions in order, each as soon as its dependency has ended and its
 * stage is free: out->events, the stages' busy times and compute energies; free_at[s] = when
 * stage s ends. end: scratch of S·per ends. */
static int run_events(const kr_pipe_input *in, const stage_index *ix, double *end, double *free_at,
                      kr_pipe_result *out, kr_error *err)
{
    int S = in->stages, per = 2 * in->microbatches * in->virtual_stages, total = S * per;
    for (int i = 0; i < total; i++)
        end[i] = -1;
    int cursor[KR_MAX_STAGES] = {0};
    int done_count = 0;
    while (done_count < total) {
        int progress = 0;
        for (int s = 0; s < S; s++) {
            while (cursor[s] < per) {
                int i = cursor[s];
                const kr_pipe_instr *it = &in->instr[s][i];
                int ds, dp;
                double lag, ready = 0;
                dependency(in, ix, s, it, &ds, &dp, &lag);
                if (ds >= 0) {
                    double de = end[ds * per + dp];
                    if (de < 0)
                        break; /* dependency not run yet */
                    ready = de + lag;
                }
                kr_pipe_event *ev = &out->events[s * per + i];
                ev->stage = s;
                ev->index = i;
                ev->kind = it->kind;
                ev->microbatch = it->microbatch;
                ev->chunk = it->chunk;
                ev->freq_mhz = it->freq_mhz;
                ev->ready_s = ready;
                ev->start_s = KR_MAX(ready, free_at[s]);
                ev->end_s = ev->start_s + it->time_s;
                ev->energy_j = it->energy_j;
                end[s * per + i] = ev->end_s;
                free_at[s] = ev->end_s;
                out->stage_busy_s[s] += it->time_s;
                out->gpu_energy_j[s] += it->energy_j;
                cursor[s]++;
                done_count++;
                progress = 1;
            }
        }
        if (!progress)
            return deadlock(in, cursor, per, err);
    }
    return KR_OK;
}

int kr_pipesim_run(const kr_pipe_input *in, kr_pipe_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int S = in->stages, M = in->microbatches, V = in->virtual_stages;
    if (S < 1 || S > KR_MAX_STAGES || M < 1 || V < 1 || in->gpus_per_stage < 1 || !(in->static_power_w >= 0))
        return kr_error_set(err, KR_EINVAL,
                            "pipesim: expected 1..%d stages, microbatches, virtual stages and GPUs per stage >= 1 and "
                            "static power >= 0, found %d, %d, %d, %d, %g",
                            KR_MAX_STAGES, S, M, V, in->gpus_per_stage, in->static_power_w);
    int per = 2 * M * V, total = S * per, rc = KR_OK;
    stage_index ix[KR_MAX_STAGES];
    memset(ix, 0, sizeof ix);
    double *end = malloc(sizeof(double) * (size_t)total);
    out->events = calloc((size_t)total, sizeof *out->events);
    double free_at[KR_MAX_STAGES] = {0};
    if (end == NULL || out->events == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
    for (int s = 0; s < S && rc == KR_OK; s++)
        rc = index_stage(in, s, &ix[s], err);
    if (rc == KR_OK)
        rc = run_events(in, ix, end, free_at, out, err);
    if (rc == KR_OK) {
        out->stages = S;
        out->nevents = total;
        for (int s = 0; s < S; s++)
            out->time_s = KR_MAX(out->time_s, free_at[s]);
        for (int s = 0; s < S; s++) {
            out->stage_idle_s[s] = out->time_s - out->stage_busy_s[s];
            out->compute_energy_j += in->gpus_per_stage * out->gpu_energy_j[s];
            out->gpu_energy_j[s] += idle_energy(in, out, s, per);
            out->energy_j += in->gpus_per_stage * out->gpu_energy_j[s];
        }
        out->eff_energy_j = out->energy_j - in->static_power_w * in->gpus_per_stage * S * out->time_s;
    }
    for (int s = 0; s < S && s < KR_MAX_STAGES; s++)
        free(ix[s].pos);
    free(end);
    if (rc)
        kr_pipe_result_free(out);
    return rc;
}

/* ---- costs from a plan ---------------------------------------------------------------- */

double kr_pipesim_p2p_time(const kr_job *job, int stage)
{
    /* The link model is the simulator's (kr_sim_p2p_time). Interleaved 1F1B also sends from the
     * last stage back to the first; that wrap-around link is priced like the 0 → 1 link. */
    if (job->pp < 2)
        return 0.0;
    double t = 0.0;
    if (kr_sim_p2p_time(job, stage < job->pp - 1 ? stage : 0, kr_job_p2p_bytes(job), &t, NULL) != KR_OK)
        return 0.0;
    return t;
}

static const kr_comm_setting *find_comm(const kr_comm_setting *comm, int ncomm, const char *key, int recompute)
{
    for (int i = 0; i < ncomm; i++)
        if (comm[i].recompute == recompute && strcmp(comm[i].key, key) == 0)
            return &comm[i];
    return NULL;
}

/* Adds count × the measurement of p at cfg to *t, *e. */
static int add_measure(kr_backend *b, const kr_partition *p, const kr_config *cfg, double count, double *t, double *e,
                       kr_error *err)
{
    kr_measurement m;
    int rc = kr_backend_measure(b, p, cfg, &m);
    if (rc)
        return kr_error_set(err, rc, "pipesim: measuring %s at %d MHz (slot %s, %d SMs) on backend %s: %s", p->key,
                            cfg->freq_mhz, kr_partition_slot_name(p, cfg->slot), cfg->sms, kr_backend_name(b),
                            kr_backend_errmsg(b));
    *t += count * m.time_s;
    *e += count * m.energy_j;
    return KR_OK;
}

/* Cost of one instruction with prebuilt partition sets. */
static int instruction_cost(const kr_job *job, const kr_partition_set *parts, int stage, kr_instr_kind kind, int chunk,
                            int freq, const kr_comm_setting *comm, int ncomm, kr_backend *b, double *time_s,
                            double *energy_j, kr_error *err)
{
    double t = 0, e = 0, layers = (double)job->layers_per_stage[stage] / job->virtual_stages;
    int rc;
    /* Transformer-layer partitions: the backward's own keys, and for backward with recomputation
     * the forward keys again with their recompute configs. */
    for (int pass = 0; pass < 2; pass++) {
        int want_bwd = kind == KR_INSTR_BACKWARD && pass == 0;
        int recompute = kind == KR_INSTR_BACKWARD && pass == 1;
        if (kind == KR_INSTR_FORWARD && pass == 1)
            break;
        if (recompute && !job->recompute)
            break;
        for (int i = 0; i < parts->n; i++) {
            const kr_partition *p = &parts->p[i];
            if (p->backward != want_bwd)
                continue;
            kr_config cfg = {freq, p->fixed_sms, p->fixed_slot, 0};
            if (p->variant == KR_VARIANT_KAREUS) {
                const kr_comm_setting *cs = find_comm(comm, ncomm, p->key, recompute);
                if (cs == NULL)
                    return kr_error_set(err, KR_EMISMATCH,
                                        "pipesim: stage %d %s: the plan gives no comm config for partition %s%s", stage,
                                        kr_instr_kind_name(kind), p->key, recompute ? " (recompute)" : "");
                cfg.sms = cs->sms;
                cfg.kernel = cs->kernel;
                if ((rc = kr_partition_slot_index(p, cs->slot, &cfg.slot, err)))
                    return rc;
            }
            if ((rc = add_measure(b, p, &cfg, p->per_layer * layers, &t, &e, err)))
                return rc;
        }
    }
    /* Non-partition work: embedding on the first chunk of stage 0, LM head and loss on the last
     * chunk of the last stage. */
    int first = stage == 0 && chunk == 0;
    int last = stage == job->pp - 1 && chunk == job->virtual_stages - 1;
    if (first || last) {
        kr_partition_set *np = malloc(sizeof *np);
        if (np == NULL)
            return kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
        rc = kr_partition_nonpartition(job, stage, kind == KR_INSTR_BACKWARD, np, err);
        for (int i = 0; rc == KR_OK && i < np->n; i++) {
            const kr_partition *p = &np->p[i];
            int is_embed = strncmp(p->key, "embed", 5) == 0;
            if ((is_embed && !first) || (!is_embed && !last))
                continue;
            kr_config cfg = {freq, p->fixed_sms, KR_SLOT_NONE, 0};
            rc = add_measure(b, p, &cfg, p->per_stage, &t, &e, err);
        }
        free(np);
        if (rc)
            return rc;
    }
    *time_s = t;
    *energy_j = e;
    return KR_OK;
}

int kr_pipesim_instruction_cost(const kr_job *job, kr_variant variant, int stage, kr_instr_kind kind, int chunk,
                                int freq_mhz, const kr_comm_setting *comm, int ncomm, kr_backend *backend,
                                double *time_s, double *energy_j, kr_error *err)
{
    if (stage < 0 || stage >= job->pp)
        return kr_error_set(err, KR_ERANGE, "pipesim: expected a stage in [0, %d], found %d", job->pp - 1, stage);
    kr_partition_set *parts = malloc(sizeof *parts);
    if (parts == NULL)
        return kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
    int rc = kr_partition_catalog(job, variant, parts, err);
    if (rc == KR_OK)
        rc = instruction_cost(job, parts, stage, kind, chunk, freq_mhz, comm, ncomm, backend, time_s, energy_j, err);
    free(parts);
    return rc;
}

int kr_pipesim_plan(const kr_job *job, const kr_plan *plan, kr_backend *backend, const kr_pipesim_config *opts,
                    kr_pipe_result *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    kr_pipesim_config o = {0};
    if (opts)
        o = *opts;
    int rc = kr_plan_validate(plan, job, err);
    if (rc)
        return rc;
    kr_variant var;
    kr_variant_parse(plan->variant, &var);
    kr_partition_set *parts = malloc(sizeof *parts);
    kr_pipe_input in;
    memset(&in, 0, sizeof in);
    if (parts == NULL)
        return kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
    if ((rc = kr_partition_catalog(job, var, parts, err)))
        goto done;
    in.schedule = job->schedule;
    in.stages = job->pp;
    in.microbatches = job->num_microbatches;
    in.virtual_stages = job->virtual_stages;
    in.gpus_per_stage = kr_job_gpus_per_stage(job);
    in.static_power_w = job->static_power_w;
    in.gpu = &job->gpu;
    for (int s = 0; s < job->pp; s++)
        in.p2p_time_s[s] = o.no_p2p ? 0.0 : kr_pipesim_p2p_time(job, s);
    double settle = o.no_settle ? 0.0 : job->gpu.clock_switch_s;
    int unpriced = 0;
    for (int s = 0; s < job->pp; s++) {
        const kr_plan_stage *st = &plan->stages[s];
        in.ninstr[s] = st->ninstr;
        in.instr[s] = calloc((size_t)st->ninstr, sizeof(kr_pipe_instr));
        if (in.instr[s] == NULL) {
            rc = kr_error_set(err, KR_ENOMEM, "pipesim: out of memory");
            goto done;
        }
        for (int i = 0; i < st->ninstr; i++) {
            const kr_plan_instr *pi = &st->instr[i];
            const kr_plan_instr *prev = &st->instr[i > 0 ? i - 1 : st->ninstr - 1];
            kr_pipe_instr *it = &in.instr[s][i];
            it->kind = pi->kind;
            it->microbatch = pi->microbatch;
            it->chunk = pi->chunk;
            it->freq_mhz = pi->freq_mhz;
            if ((rc = instruction_cost(job, parts, s, pi->kind, pi->chunk, pi->freq_mhz, pi->comm, pi->ncomm, backend,
                                       &it->time_s, &it->energy_j, err)))
                goto done;
            if (settle > 0 && prev->freq_mhz != pi->freq_mhz) {
                /* The first part of the work still runs at the previous clock (same configs). */
                double t_old, e_old;
                rc = instruction_cost(job, parts, s, pi->kind, pi->chunk, prev->freq_mhz, pi->comm, pi->ncomm, backend,
                                      &t_old, &e_old, err);
                if (rc == KR_ENOTFOUND && strcmp(kr_backend_name(backend), "replay") == 0) {
                    /* A partial recording (e.g. a BO run's) need not hold these configs at the
                     * previous clock: count it, and charge the new clock throughout. */
                    unpriced++;
                    rc = KR_OK;
                    continue;
                }
                if (rc)
                    goto done;
                double phi = t_old > 0 ? KR_MIN(1.0, settle / t_old) : 1.0;
                it->time_s = phi * t_old + (1 - phi) * it->time_s;
                it->energy_j = phi * e_old + (1 - phi) * it->energy_j;
            }
        }
    }
    rc = kr_pipesim_run(&in, out, err);
    if (rc == KR_OK)
        out->settle_unpriced = unpriced;
done:
    for (int s = 0; s < KR_MAX_STAGES; s++)
        free(in.instr[s]);
    free(parts);
    return rc;
}
