/*
 * search.c — the search driver: runs a strategy on one partition or on every partition of a
 * job, evaluating configurations through the log cache or the backend, and turns what was
 * evaluated into a partition frontier with statistics (search.h). Also the exhaustive strategy
 * and the frontier-file convenience.
 *
 * Evaluation (kr__search_eval): a configuration recorded in the log for this job, key and
 * variant is answered from the log; otherwise the backend measures it and the line is appended
 * (fsync'd) before the value is used. Strategies only see values, never where they came from,
 * so a resumed run repeats the decisions of the interrupted one. Effective energy is always
 * energy − job.static_power_w · time, whatever the backend reports.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/sim.h"
#include "search_internal.h"

long kr__search_left(const kr__search *s)
{
    return s->cap - s->n;
}

int kr__search_batch_end(kr__search *s, int done, kr_error *err)
{
    int rc = s->log ? kr__search_log_flush(s->log, err) : KR_OK;
    if (rc)
        return rc;
    if (s->opt->progress) {
        kr_search_progress p = {s->p->key, s->p->variant, s->index, s->count, s->n, s->measured, s->size, s->batch, done};
        s->opt->progress(s->opt->progress_ud, &p);
    }
    return KR_OK;
}

int kr__search_eval(kr__search *s, long idx, const char *why, double pred_time_s, double pred_eff_energy_j,
                    kr_error *err)
{
    if (idx < 0 || idx >= s->size)
        return kr_error_set(err, KR_EINTERNAL, "search %s: configuration %ld outside [0, %ld)", s->p->key, idx, s->size);
    if (s->done[idx])
        return KR_OK;
    if (s->n >= s->cap)
        return kr_error_set(err, KR_EINTERNAL, "search %s: evaluation cap %ld exceeded", s->p->key, s->cap);
    kr_config c;
    kr_search_space_config(&s->sp, idx, &c);
    kr_measured *pt = &s->pts[s->n];
    memset(pt, 0, sizeof *pt);
    pt->config = c;
    const kr__mrec *rec = s->cached[idx] >= 0 ? &kr__search_log_records(s->log)->r[s->cached[idx]] : NULL;
    if (rec) {
        pt->time_s = rec->time_s;
        pt->energy_j = rec->energy_j;
        pt->time_sd_s = rec->time_sd_s;
        pt->energy_sd_j = rec->energy_sd_j;
        s->from_log++;
    } else {
        kr_measurement m;
        memset(&m, 0, sizeof m);
        int rc = kr_backend_measure(s->b, s->p, &c, &m);
        if (rc)
            return kr_error_set(err, rc, "partition %s (%s): measuring %d MHz, slot %s, %d SMs: %s", s->p->key,
                                kr_variant_name(s->p->variant), c.freq_mhz, kr_partition_slot_name(s->p, c.slot), c.sms,
                                kr_backend_errmsg(s->b)[0] ? kr_backend_errmsg(s->b) : kr_strerror(rc));
        if (!(m.time_s > 0) || !isfinite(m.time_s) || !(m.energy_j >= 0) || !isfinite(m.energy_j))
            return kr_error_set(err, KR_EBACKEND,
                                "partition %s: backend %s returned time %g s, energy %g J for %d MHz, slot %s, %d SMs: "
                                "expected finite time > 0 and energy >= 0",
                                s->p->key, kr_backend_name(s->b), m.time_s, m.energy_j, c.freq_mhz,
                                kr_partition_slot_name(s->p, c.slot), c.sms);
        pt->time_s = m.time_s;
        pt->energy_j = m.energy_j;
        pt->time_sd_s = isfinite(m.time_sd_s) && m.time_sd_s > 0 ? m.time_sd_s : 0;
        pt->energy_sd_j = isfinite(m.energy_sd_j) && m.energy_sd_j > 0 ? m.energy_sd_j : 0;
        if (s->log) {
            kr__mrec r;
            kr__mrec_from_config(&r, s->p, &c);
            r.time_s = pt->time_s;
            r.energy_j = pt->energy_j;
            r.time_sd_s = pt->time_sd_s;
            r.energy_sd_j = pt->energy_sd_j;
            r.repeats = m.repeats > 0 ? m.repeats : 1;
            kr__mextra x = {kr_backend_name(s->b), kr_strategy_name(s->opt->strategy), s->opt->seed, s->batch, why,
                            pred_time_s, pred_eff_energy_j, s->p->coll.kind != KR_COLL_NONE};
            if ((rc = kr__search_log_append(s->log, &r, &x, err)))
                return rc;
        }
        s->measured++;
    }
    pt->eff_energy_j = pt->energy_j - s->job->static_power_w * pt->time_s;
    s->t[idx] = pt->time_s;
    s->e[idx] = pt->energy_j;
    s->ee[idx] = pt->eff_energy_j;
    s->done[idx] = 1;
    s->n++;
    return KR_OK;
}

int kr__search_exhaustive(kr__search *s, kr_error *err)
{
    long per_clock = kr_search_space_per_clock(&s->sp);
    for (long i = 0; i < s->size; i++) {
        if (kr__search_left(s) <= 0) {
            snprintf(s->stop, sizeof s->stop, "budget");
            return KR_OK;
        }
        int rc = kr__search_eval(s, i, "exhaustive", NAN, NAN, err);
        if (rc)
            return rc;
        if ((i + 1) % per_clock == 0 && i + 1 < s->size && (rc = kr__search_batch_end(s, 0, err)))
            return rc;
    }
    snprintf(s->stop, sizeof s->stop, "space exhausted");
    return KR_OK;
}

/*
 * The summary's reference point, one per partition and plane, that depends on the job and the
 * partition only (not on what a run measured), so hypervolumes of different runs, strategies,
 * seeds and backends of one partition compare directly: the job's simulator (its own GPU entry)
 * predicts every configuration of the space, and the reference is 1.1 × the largest predicted
 * time and the largest predicted energy of the plane (max + 0.1·|max|). A box around the whole
 * predicted space rather than around a predicted frontier, so a device that is slower or
 * hungrier than the simulator still scores: only a measurement beyond 110 % of the predicted
 * worst is clipped. Returns the simulator's error when it cannot predict some configuration (a
 * custom backend over a space of another meaning); the caller then falls back to the measured
 * points' nadir + 10 % of their range, which is not comparable across runs.
 */
static int summary_ref(const kr_job *job, const kr_partition *p, const kr_search_space *sp, long size, double ref[3])
{
    double tmax = -INFINITY, emax = -INFINITY, eemax = -INFINITY;
    for (long i = 0; i < size; i++) {
        kr_config c;
        kr_search_space_config(sp, i, &c);
        kr_measurement m;
        memset(&m, 0, sizeof m);
        kr_error e = {0};
        int rc = kr_sim_measure(job, p, &c, &m, &e);
        if (rc)
            return rc;
        tmax = fmax(tmax, m.time_s);
        emax = fmax(emax, m.energy_j);
        eemax = fmax(eemax, m.energy_j - job->static_power_w * m.time_s);
    }
    ref[0] = tmax + 0.1 * fabs(tmax);
    ref[1] = eemax + 0.1 * fabs(eemax);
    ref[2] = emax + 0.1 * fabs(emax);
    return KR_OK;
}

/* The fallback reference: the nadir of the measured points + 10 % of their range per coordinate
 * (time, effective energy, energy), the summary's reference until issue 16 round 2. */
static void measured_ref(const kr_measured *pts, long n, double P, double ref[3])
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (long i = 0; i < n; i++) {
        double v[3] = {pts[i].time_s, pts[i].energy_j - P * pts[i].time_s, pts[i].energy_j};
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], v[k]);
            hi[k] = fmax(hi[k], v[k]);
        }
    }
    for (int k = 0; k < 3; k++)
        ref[k] = n == 0 ? NAN : hi[k] > lo[k] ? hi[k] + 0.1 * (hi[k] - lo[k]) : hi[k] + 0.1 * fabs(hi[k]) + 1e-12;
}

/* Hypervolume of the points in the plane (P) against (rt, ry); *front: its frontier's size. */
static double plane_hv(const kr_measured *pts, long n, double P, double rt, double ry, long *front)
{
    *front = 0;
    if (n == 0)
        return 0;
    kr_fpoint *f = malloc((size_t)n * sizeof *f);
    if (f == NULL)
        return NAN;
    for (long i = 0; i < n; i++)
        f[i] = (kr_fpoint){pts[i].time_s, pts[i].energy_j, i};
    double hv = NAN;
    size_t k;
    if (kr_frontier_pareto(f, (size_t)n, P, 0, f, &k, NULL) == KR_OK) {
        *front = (long)k;
        kr_frontier_hypervolume(f, k, P, rt, ry, &hv, NULL);
    }
    free(f);
    return hv;
}

static void search_free(kr__search *s)
{
    free(s->cached);
    free(s->done);
    free(s->t);
    free(s->e);
    free(s->ee);
    free(s->pts);
}

/* The context's per-configuration arrays for p's space (s->job, s->p and s->opt set). */
static int search_alloc(kr__search *s, kr_error *err)
{
    int rc = kr_search_space_init_restricted(s->job, s->p, s->opt->restrict_space, &s->sp, err);
    if (rc)
        return rc;
    s->size = kr_search_space_size(&s->sp);
    s->cap = s->opt->max_evals > 0 && s->opt->max_evals < s->size ? s->opt->max_evals : s->size;
    size_t n = (size_t)s->size;
    s->cached = malloc(n * sizeof *s->cached);
    s->done = calloc(n, 1);
    s->t = malloc(n * sizeof *s->t);
    s->e = malloc(n * sizeof *s->e);
    s->ee = malloc(n * sizeof *s->ee);
    s->pts = malloc(n * sizeof *s->pts);
    if (!s->cached || !s->done || !s->t || !s->e || !s->ee || !s->pts)
        return kr_error_set(err, KR_ENOMEM, "search %s: out of memory for %ld configurations", s->p->key, s->size);
    for (size_t i = 0; i < n; i++)
        s->cached[i] = -1;
    return KR_OK;
}

/* Indexes this partition's recorded measurements by configuration. The log checked at open
 * that every one lies in its partition's space; a restricted space (restrict_space) leaves out
 * the records it does not hold. */
static int index_log(kr__search *s, kr_error *err)
{
    const kr_partition *p = s->p;
    const kr__mrecs *m = kr__search_log_records(s->log);
    int rc = KR_OK;
    for (size_t i = 0; i < m->n; i++) {
        const kr__mrec *r = &m->r[i];
        if (r->variant != p->variant || strcmp(r->key, p->key) != 0)
            continue;
        /* Work without a collective is logged with slot "none" and 0 SMs; its space holds
         * the fixed values. */
        kr_config c = {r->freq_mhz, s->sp.sms[0], s->sp.slots[0], r->kernel};
        long idx;
        if (p->coll.kind != KR_COLL_NONE) {
            c.sms = r->sms;
            rc = kr_partition_slot_index(p, r->slot, &c.slot, err);
        }
        if (rc == KR_OK && s->opt->restrict_space && kr_search_space_index(&s->sp, &c, &idx, NULL) != KR_OK)
            continue;
        if (rc || (rc = kr_search_space_index(&s->sp, &c, &idx, err)))
            return kr_error_prefix(err, "%s:%d", kr_search_log_path(s->log), r->line);
        s->cached[idx] = (long)i;
    }
    return KR_OK;
}

/*
 * A replay answers only what was recorded. An exhaustive search on it (and every clock-only
 * one) is restricted to those configurations (and what the log already holds) by marking the
 * others unavailable, so its frontier is that of the recorded points: a partial recording, such
 * as a BO run's, replays instead of stopping at the first configuration it lacks. bo and
 * artifact keep asking for what they would ask a device, so replaying a recorded run of theirs
 * repeats it exactly. *recorded: the recorded configurations (0 when not restricted).
 */
static int restrict_replay(kr__search *s, int clock_only, long *recorded, int *restricted, kr_error *err)
{
    const kr_partition *p = s->p;
    *recorded = 0;
    *restricted = 0;
    if (!((s->opt->strategy == KR_STRATEGY_EXHAUSTIVE || clock_only) &&
          kr__replay_recorded(s->b, p, &(kr_config){0, 0, 0, 0}) >= 0))
        return KR_OK;
    for (long i = 0; i < s->size; i++) {
        kr_config c;
        kr_search_space_config(&s->sp, i, &c);
        if (s->cached[i] >= 0 || kr__replay_recorded(s->b, p, &c) == 1)
            (*recorded)++;
        else
            s->done[i] = 1;
    }
    if (*recorded == 0)
        return kr_error_set(err, KR_ENOTFOUND,
                            "replay: no recorded measurement of partition %s (%s variant) at any of its %ld "
                            "configurations in %s: add a log that covers it (KEY=FILE for the artifact's "
                            "eval_results.jsonl)",
                            p->key, kr_variant_name(p->variant), s->size, kr__replay_files(s->b));
    *restricted = *recorded < s->size;
    if (s->cap > *recorded)
        s->cap = *recorded;
    return KR_OK;
}

/* The statistics of a finished search. */
static void fill_stats(const kr__search *s, long recorded, double t0, kr_search_stats *stats)
{
    const kr_job *job = s->job;
    double ref[3] = {NAN, NAN, NAN};
    int ref_sim = summary_ref(job, s->p, &s->sp, s->size, ref) == KR_OK;
    if (!ref_sim)
        measured_ref(s->pts, s->n, job->static_power_w, ref);
    memset(stats, 0, sizeof *stats);
    stats->space_size = s->size;
    stats->evaluated = s->n;
    stats->measured = s->measured;
    stats->from_log = s->from_log;
    stats->batches = s->batch;
    snprintf(stats->stop, sizeof stats->stop, "%s", s->stop);
    stats->ref_from_sim = ref_sim;
    stats->ref_time_s = ref[0];
    stats->ref_eff_energy_j = ref[1];
    stats->ref_energy_j = ref[2];
    stats->hv_eff = plane_hv(s->pts, s->n, job->static_power_w, ref[0], ref[1], &stats->front_eff);
    stats->hv_total = plane_hv(s->pts, s->n, 0.0, ref[0], ref[2], &stats->front_total);
    stats->wall_s = kr__now_s() - t0;
    stats->recorded = recorded;
    stats->gain_eff = s->gain_eff;
    stats->gain_total = s->gain_total;
    stats->prior = s->prior;
    stats->prior_b_time = s->prior ? s->prior_b[0] : NAN;
    stats->prior_b_energy = s->prior ? s->prior_b[2] : NAN;
    stats->prior_nsens = s->nsens;
    for (int j = 0; j < s->nsens; j++) {
        stats->prior_sens_param[j] = s->sens_param[j];
        /* Feature j is half the change across ± u_j: a coefficient of 1 is a change of +u_j. */
        double u = kr_gpu_param_uncertainty(s->sens_param[j]);
        double th = s->calib ? s->theta[j] : 0;
        stats->prior_sens_time[j] = th + s->sens_c[0][j] * u;
        stats->prior_sens_energy[j] = th + s->sens_c[2][j] * u;
        stats->prior_calib[j] = th;
    }
    stats->prior_calibrated = s->calib;
}

/* Evaluates comm configuration c (its clock ignored) at every clock the strategy left out,
 * outside the evaluation cap; a replay only where it recorded it (it cannot answer the others).
 * why: the log's "selected" reason. */
static int eval_every_clock(kr__search *s, const kr_config *c0, const char *why, kr_error *err)
{
    int replay = kr__replay_recorded(s->b, s->p, &(kr_config){0, 0, 0, 0}) >= 0;
    for (int ci = 0; ci < s->sp.nclocks; ci++) {
        kr_config c = *c0;
        c.freq_mhz = s->sp.clocks[ci];
        long idx;
        int rc = kr_search_space_index(&s->sp, &c, &idx, err);
        if (rc)
            return rc;
        if (s->done[idx] || (replay && s->cached[idx] < 0 && kr__replay_recorded(s->b, s->p, &c) != 1))
            continue;
        if (s->n >= s->cap)
            s->cap = s->n + 1;
        if ((rc = kr__search_eval(s, idx, why, NAN, NAN, err)))
            return rc;
    }
    return KR_OK;
}

/*
 * The baseline's own execution (NCCL at its default CTAs, launched at partition start) at every
 * clock, whatever the strategy and its budget (issue 31): so the partition frontier dominates
 * Nanobatching's point at every clock by construction. After the strategy, so that its
 * decisions are the ones it takes without this rule; outside the evaluation cap. A replay
 * evaluates the ones it recorded (it cannot answer the others).
 */
static int eval_baseline(kr__search *s, kr_error *err)
{
    return s->sp.has_base ? eval_every_clock(s, &s->sp.base, "baseline", err) : KR_OK;
}

/* The comm configuration of a kareus partition (what KR_SEARCH_UNCOUPLED holds across clocks). */
static int same_comm(const kr_config *a, const kr_config *b)
{
    return a->kernel == b->kernel && a->sms == b->sms && a->slot == b->slot;
}

/*
 * KR_SEARCH_UNCOUPLED, the ablation of the clock coupling: the comm configuration is chosen
 * once, at the highest clock (the fastest point measured there; the first of equal times), as a
 * tuner that ignores DVFS would, and reused at every clock. It is measured at the clocks the
 * strategy left out (outside the cap, as the baseline is; on a replay only where recorded), and
 * *keep (allocated, s->n entries) gets the points the frontier is built from, *nkeep of them.
 * Without the flag, or in a space with one comm configuration, *keep is NULL.
 */
static int uncouple(kr__search *s, kr_measured **keep, long *nkeep, kr_error *err)
{
    *keep = NULL;
    *nkeep = 0;
    const kr_search_space *sp = &s->sp;
    if (!(s->opt->restrict_space & KR_SEARCH_UNCOUPLED) || (long)sp->nkernels * sp->nslots * sp->nsms <= 1)
        return KR_OK;
    long best = -1;
    for (long i = 0; i < s->n; i++)
        if (s->pts[i].config.freq_mhz == sp->clocks[0] && (best < 0 || s->pts[i].time_s < s->pts[best].time_s))
            best = i;
    if (best < 0)
        return KR_OK; /* nothing measured at the top clock (a replay): nothing to hold */
    kr_config pick = s->pts[best].config;
    int rc = eval_every_clock(s, &pick, "uncoupled", err);
    if (rc)
        return rc;
    if ((*keep = malloc((size_t)s->n * sizeof **keep)) == NULL)
        return kr_error_set(err, KR_ENOMEM, "search %s: out of memory", s->p->key);
    for (long i = 0; i < s->n; i++)
        if (same_comm(&s->pts[i].config, &pick))
            (*keep)[(*nkeep)++] = s->pts[i];
    return KR_OK;
}

/* Runs the strategy on s (set up); the frontier into out. */
static int run_strategy(kr__search *s, int clock_only, int restricted, kr_partition_frontier *out, kr_error *err)
{
    const kr_search_config *opt = s->opt;
    int rc;
    if (opt->strategy == KR_STRATEGY_EXHAUSTIVE || clock_only)
        rc = kr__search_exhaustive(s, err);
    else if (opt->strategy == KR_STRATEGY_BO)
        rc = kr__search_bo(s, err);
    else
        rc = kr__search_artifact(s, err);
    if (rc == KR_OK)
        rc = eval_baseline(s, err);
    kr_measured *keep = NULL;
    long nkeep = 0;
    if (rc == KR_OK)
        rc = uncouple(s, &keep, &nkeep, err);
    if (rc == KR_OK && restricted && strcmp(s->stop, "converged") != 0)
        snprintf(s->stop, sizeof s->stop, "recorded points only");
    if (rc == KR_OK) {
        snprintf(out->strategy, sizeof out->strategy, "%s", kr_strategy_name(opt->strategy));
        snprintf(out->backend, sizeof out->backend, "%s", kr_backend_name(s->b));
        out->seed = opt->seed;
        out->space_size = s->size;
        rc = keep ? kr_frontier_set_points(out, keep, (size_t)nkeep, err)
                  : kr_frontier_set_points(out, s->pts, (size_t)s->n, err);
    }
    free(keep);
    return rc == KR_OK ? kr__search_batch_end(s, 1, err) : rc;
}

static int run_partition(const kr_job *job, const kr_partition *p, kr_backend *b, kr_search_log *log,
                         const kr_search_config *opt, int index, int count, kr_partition_frontier *out,
                         kr_search_stats *stats, kr_error *err)
{
    double t0 = kr__now_s();
    kr_search_config defaults;
    if (opt == NULL) {
        kr_search_config_default(&defaults);
        opt = &defaults;
    }
    kr_frontier_init(out, job, p);
    if ((unsigned)opt->strategy > KR_STRATEGY_ARTIFACT || opt->max_evals < 0 || opt->bo_batch < 0 ||
        opt->bo_init < 0 || opt->artifact_budget < 0 || isnan(opt->bo_stop) ||
        isnan(opt->bo_stop_abs))
        return kr_error_set(err, KR_EINVAL, "search %s: expected a known strategy and non-negative budgets", p->key);
    if (b == NULL)
        return kr_error_set(err, KR_EINVAL, "search %s: expected a backend, found NULL", p->key);
    kr__search s;
    memset(&s, 0, sizeof s);
    s.job = job;
    s.p = p;
    s.b = b;
    s.log = log;
    s.opt = opt;
    s.index = index;
    s.count = count;
    s.gain_eff = s.gain_total = NAN;
    /* Baseline variants and non-partition work: the clock is the only knob and composition
     * needs every clock, so every strategy measures them all. */
    long recorded = 0;
    int restricted = 0, clock_only = 0;
    int rc = search_alloc(&s, err);
    if (rc == KR_OK && log)
        rc = index_log(&s, err);
    if (rc == KR_OK) {
        clock_only = s.sp.nslots == 1 && s.sp.nsms == 1;
        rc = restrict_replay(&s, clock_only, &recorded, &restricted, err);
    }
    if (rc == KR_OK)
        rc = kr__search_batch_end(&s, 0, err);
    if (rc == KR_OK)
        rc = run_strategy(&s, clock_only, restricted, out, err);
    if (rc == KR_OK && stats)
        fill_stats(&s, recorded, t0, stats);
    search_free(&s);
    return rc;
}

int kr_search_partition(const kr_job *job, const kr_partition *p, kr_backend *b, kr_search_log *log,
                        const kr_search_config *opt, kr_partition_frontier *out, kr_search_stats *stats,
                        kr_error *err)
{
    return run_partition(job, p, b, log, opt, 0, 1, out, stats, err);
}

void kr_search_results_free(kr_search_result *r, int n)
{
    if (r == NULL)
        return;
    for (int i = 0; i < n; i++)
        kr_frontier_free(&r[i].front);
    free(r);
}

int kr_search_job(const kr_job *job, kr_variant variant, int include_nonpartition, kr_backend *b, kr_search_log *log,
                  const kr_search_config *opt, kr_search_result **out, int *n, kr_error *err)
{
    *out = NULL;
    *n = 0;
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return kr_error_set(err, KR_ENOMEM, "search: out of memory");
    int rc = kr_search_partitions(job, variant, include_nonpartition, set, err);
    kr_search_result *r = rc ? NULL : calloc((size_t)set->n, sizeof *r);
    if (rc == KR_OK && r == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "search: out of memory");
    int done = 0;
    for (int i = 0; rc == KR_OK && i < set->n; i++) {
        rc = run_partition(job, &set->p[i], b, log, opt, i, set->n, &r[i].front, &r[i].stats, err);
        if (rc) {
            kr_frontier_free(&r[i].front);
            break;
        }
        done++;
    }
    free(set);
    if (rc) {
        kr_search_results_free(r, done);
        return rc;
    }
    *out = r;
    *n = done;
    return KR_OK;
}

int kr_search_write_frontier(const char *dir, const kr_partition_frontier *f, kr_error *err)
{
    int rc = kr__mkdirs(dir, err);
    if (rc)
        return rc;
    char name[128], path[4300];
    kr_frontier_file_name(f->key, f->variant, "json", name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((rc = kr_frontier_write_json(path, f, err)))
        return rc;
    kr_frontier_file_name(f->key, f->variant, "csv", name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return kr_frontier_write_csv(path, f, err);
}
