/*
 * optimize.c — the whole flow on one job and the five methods on equal terms (see optimize.h).
 *
 * Energy accounting is the solver's everywhere a prediction is made (options are per GPU,
 * static power included; a plan of iteration time T costs G·(Σ E_op + P_static·(S·T − Σ t_op))
 * for G GPUs per stage and S stages), so single-plan methods are priced exactly as solver steps
 * are. Simulated figures come from the pipeline simulator, which adds what the solver leaves
 * out: the settle window of every clock change (and the p2p transfers at their real, not
 * unit-rounded, times).
 */
#include "kareus/optimize.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kareus/compose.h"
#include "kareus/metrics.h"
#include "kareus/pipesim.h"
#include "kareus/report.h"
#include "kareus/sim.h"
#include "util/util.h"

static const char *const method_names[KR_NUM_METHODS] = {"Megatron", "Perseus", "Nanobatching",
                                                         "Nanobatching+Perseus", "Kareus"};
static const char *const method_slugs[KR_NUM_METHODS] = {"megatron", "perseus", "nanobatch", "nanobatch+perseus",
                                                         "kareus"};

const char *kr_method_name(kr_method m)
{
    return (unsigned)m < KR_NUM_METHODS ? method_names[m] : "?";
}

const char *kr_method_slug(kr_method m)
{
    return (unsigned)m < KR_NUM_METHODS ? method_slugs[m] : "?";
}

int kr_method_parse(const char *s, kr_method *out)
{
    for (int m = 0; m < KR_NUM_METHODS; m++)
        if (strcasecmp(s, method_slugs[m]) == 0 || strcasecmp(s, method_names[m]) == 0) {
            *out = (kr_method)m;
            return KR_OK;
        }
    if (strcasecmp(s, "n+p") == 0 || strcasecmp(s, "nanobatching") == 0 || strcasecmp(s, "nanobatch-perseus") == 0) {
        *out = strcasecmp(s, "nanobatching") == 0 ? KR_METHOD_NANOBATCH : KR_METHOD_NANOBATCH_PERSEUS;
        return KR_OK;
    }
    return KR_EINVAL;
}

kr_variant kr_method_variant(kr_method m)
{
    switch (m) {
    case KR_METHOD_MEGATRON:
    case KR_METHOD_PERSEUS: return KR_VARIANT_SEQUENTIAL;
    case KR_METHOD_NANOBATCH:
    case KR_METHOD_NANOBATCH_PERSEUS: return KR_VARIANT_DEFAULT_OVERLAP;
    default: return KR_VARIANT_KAREUS;
    }
}

int kr_method_is_point(kr_method m)
{
    return m == KR_METHOD_MEGATRON || m == KR_METHOD_NANOBATCH;
}

void kr_optimize_options_default(kr_optimize_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->cost_model = KR_COST_EXACT;
    o->unit_time_s = 0.001;
    o->exchange = -1;
    o->pictures = 1;
}

void kr_optimize_result_free(kr_optimize_result *r)
{
    if (r == NULL)
        return;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        free(r->m[m].time_s);
        free(r->m[m].energy_j);
    }
    memset(r, 0, sizeof *r);
}

/* ---- per-variant state ---------------------------------------------------------------- */

typedef struct variant_state {
    int used;
    kr_search_result *res;    /* search results (owned) */
    int nres;
    kr_options opts;          /* composed options (owned) */
    int have_opts;
    kr_dag dag;               /* pipeline DAG with p2p lags (owned) */
    kr_dag dag0;              /* the same without lags, lowtime cost model only (owned) */
    int have_dag, have_dag0;
} variant_state;

typedef struct run {
    const kr_job *job;
    const kr_optimize_options *o;
    kr_backend *b;
    kr_search_log *log;
    kr_optimize_result *out;
    variant_state v[3];
    kr_error *err;
    int settle_unpriced; /* replay: clock changes simulated without their settle window */
} run;

static void progress(const run *r, const char *phase, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void progress(const run *r, const char *phase, const char *fmt, ...)
{
    if (r->o->progress == NULL)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->o->progress(r->o->progress_ud, phase, buf);
}

static void search_progress(void *ud, const kr_search_progress *p)
{
    const run *r = ud;
    if (!p->done)
        return;
    progress(r, "search", "%s %s (%d/%d): %ld of %ld configurations", kr_variant_name(p->variant), p->key,
             p->index + 1, p->count, p->evaluated, p->space_size);
}

static int path_join(char *buf, size_t cap, const char *dir, const char *rel)
{
    return snprintf(buf, cap, "%s/%s", dir, rel) >= (int)cap ? KR_EINVAL : KR_OK;
}

/*
 * A replay can only answer for what was recorded: before searching anything, every partition
 * the chosen methods need (their variants' layer partitions and the non-partition work) must be
 * covered by the recordings or the log. The error lists all that is missing, per variant, with
 * the methods that need it, so one message says which inputs to add.
 */
static int replay_coverage(run *r, unsigned methods)
{
    kr__sb msg = {0};
    int total = 0, nonpart_variant = -1;
    for (int v = 0; v < 3; v++) {
        char who[160] = "";
        size_t wl = 0;
        for (int m = 0; m < KR_NUM_METHODS; m++)
            if ((methods & (1u << m)) && kr_method_variant((kr_method)m) == (kr_variant)v && wl < sizeof who)
                wl += (size_t)snprintf(who + wl, sizeof who - wl, "%s%s", wl ? ", " : "", kr_method_name((kr_method)m));
        if (wl == 0)
            continue;
        char list[1024];
        /* The non-partition work is shared by every variant: checked once, below. */
        int n = kr_replay_missing(r->b, r->log, r->job, (kr_variant)v, 0, list, sizeof list, r->err);
        if (n < 0) {
            kr__sb_free(&msg);
            return n;
        }
        if (n > 0)
            kr__sb_printf(&msg, "%s %s variant (for %s): %s", total ? ";" : "", kr_variant_name((kr_variant)v), who, list);
        total += n;
        if (nonpart_variant < 0)
            nonpart_variant = v;
    }
    if (nonpart_variant >= 0) {
        char list[1024];
        int n = kr_replay_missing(r->b, r->log, r->job, (kr_variant)nonpart_variant, 2, list, sizeof list, r->err);
        if (n < 0) {
            kr__sb_free(&msg);
            return n;
        }
        if (n > 0)
            kr__sb_printf(&msg, "%s non-partition work (every method): %s", total ? ";" : "", list);
        total += n;
    }
    if (total == 0)
        return KR_OK;
    int rc = kr_error_set(r->err, KR_ENOTFOUND,
                          "optimize --replay: the recordings hold no measurement of %d partition(s) the chosen methods "
                          "need:%s. Add logs that cover them (kareus search --variant V --backend gpu writes one; the "
                          "artifact's per-key eval_results.jsonl cover only the kareus variant's layer partitions, not "
                          "the non-partition work embed/lmhead/loss nor the baselines' variants), or choose fewer "
                          "--methods (Megatron and Perseus always run)",
                          total, kr__sb_str(&msg));
    kr__sb_free(&msg);
    return rc;
}

/* Search, compose and build the DAGs of one variant. */
static int prepare_variant(run *r, kr_variant var)
{
    variant_state *vs = &r->v[var];
    const kr_job *job = r->job;
    double t0 = kr__now_s();
    kr_search_options so;
    kr_search_options_default(&so);
    so.strategy = r->out->strategy;
    so.seed = r->o->seed;
    so.progress = search_progress;
    so.progress_ud = r;
    int rc = kr_search_job(job, var, 1, r->b, r->log, &so, &vs->res, &vs->nres, r->err);
    if (rc)
        return kr_error_prefix(r->err, "search (%s)", kr_variant_name(var));
    r->out->search_s += kr__now_s() - t0;
    t0 = kr__now_s();
    kr_partition_frontier *fronts = calloc((size_t)(vs->nres > 0 ? vs->nres : 1), sizeof *fronts);
    if (fronts == NULL)
        return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
    for (int i = 0; i < vs->nres; i++)
        fronts[i] = vs->res[i].front; /* shallow: compose only reads */
    progress(r, "compose", "%s options", kr_variant_name(var));
    rc = kr_compose(job, var, fronts, vs->nres, r->b, &vs->opts, NULL, r->err);
    free(fronts);
    if (rc)
        return kr_error_prefix(r->err, "compose (%s)", kr_variant_name(var));
    vs->have_opts = 1;
    double lags[KR_MAX_STAGES];
    for (int s = 0; s < job->pp; s++)
        lags[s] = kr_pipesim_p2p_time(job, s);
    if (kr_dag_pipeline(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, lags, &vs->dag, r->err))
        return kr_error_prefix(r->err, "pipeline DAG");
    vs->have_dag = 1;
    /* lowtime has no edge lags: it solves on the DAG without them. */
    if (r->o->cost_model == KR_COST_LOWTIME) {
        if (kr_dag_pipeline(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, NULL, &vs->dag0,
                            r->err))
            return kr_error_prefix(r->err, "pipeline DAG");
        vs->have_dag0 = 1;
    }
    r->out->compose_s += kr__now_s() - t0;
    if (r->o->out_dir) {
        char dir[4200], path[4400], name[64];
        path_join(dir, sizeof dir, r->o->out_dir, "partitions");
        if ((rc = kr__mkdirs(dir, r->err)))
            return rc;
        for (int i = 0; i < vs->nres; i++)
            if ((rc = kr_search_write_frontier(dir, &vs->res[i].front, r->err)))
                return rc;
        snprintf(name, sizeof name, "options/%s.csv", kr_variant_name(var));
        path_join(path, sizeof path, r->o->out_dir, name);
        path_join(dir, sizeof dir, r->o->out_dir, "options");
        if ((rc = kr__mkdirs(dir, r->err)) || (rc = kr_options_write_csv(path, &vs->opts, r->err)))
            return rc;
    }
    return KR_OK;
}

/* The DAG the solver works on (and its plans are built from) under the run's cost model. */
static const kr_dag *solve_dag(const variant_state *vs)
{
    return vs->have_dag0 ? &vs->dag0 : &vs->dag;
}

static void free_variant(variant_state *vs)
{
    if (vs->res)
        kr_search_results_free(vs->res, vs->nres);
    if (vs->have_opts)
        kr_options_free(&vs->opts);
    if (vs->have_dag)
        kr_dag_free(&vs->dag);
    if (vs->have_dag0)
        kr_dag_free(&vs->dag0);
    memset(vs, 0, sizeof *vs);
}

/*
 * The one plan of a single-plan method: every instruction at the highest planning clock with the
 * variant's fixed comm configuration (no lock: the GPU boosts to its maximum and throttles under
 * its power cap as it would). Instruction costs come straight from the backend (composition may
 * have pruned the max-clock option as dominated, but these methods run it anyway), priced like a
 * solver step on the DAG with p2p lags.
 */
static int max_clock_plan(run *r, kr_method m, variant_state *vs, kr_plan *plan, double *time_s, double *energy_j)
{
    const kr_job *job = r->job;
    const kr_dag *d = &vs->dag;
    int counts[KR_MAX_STAGES];
    for (int s = 0; s < job->pp; s++)
        counts[s] = 0;
    for (int v = 2; v < d->n; v++)
        counts[d->node[v].stage]++;
    int rc = kr_plan_init(plan, job, counts, r->err);
    if (rc)
        return rc;
    kr__strlcpy(plan->method, kr_method_slug(m), sizeof plan->method);
    kr__strlcpy(plan->variant, kr_variant_name(kr_method_variant(m)), sizeof plan->variant);
    kr__strlcpy(plan->cost_model, "fixed", sizeof plan->cost_model);
    double *dur = calloc((size_t)d->n, sizeof(double));
    if (dur == NULL) {
        kr_plan_free(plan);
        return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
    }
    int fill[KR_MAX_STAGES] = {0};
    double sum_e = 0, sum_t = 0;
    for (int v = 2; v < d->n; v++) {
        const kr_dag_node *nd = &d->node[v];
        kr_plan_instr *in = &plan->stages[nd->stage].instr[fill[nd->stage]++];
        in->kind = nd->kind;
        in->microbatch = nd->microbatch;
        in->chunk = nd->chunk;
        in->freq_mhz = job->clock_max_mhz;
        if ((rc = kr_pipesim_instruction_cost(job, kr_method_variant(m), nd->stage, nd->kind, nd->chunk, in->freq_mhz,
                                              NULL, 0, r->b, &in->time_s, &in->energy_j, r->err)))
            break;
        dur[v] = in->time_s;
        sum_e += in->energy_j;
        sum_t += in->time_s;
    }
    double T = 0;
    if (rc == KR_OK)
        rc = kr_dag_cpm(d, dur, NULL, NULL, &T, r->err);
    free(dur);
    if (rc) {
        kr_plan_free(plan);
        return rc;
    }
    double G = kr_job_gpus_per_stage(job), P = job->static_power_w, S = job->pp;
    *time_s = plan->pred_time_s = T;
    *energy_j = plan->pred_energy_j = G * (sum_e + P * (S * T - sum_t));
    plan->pred_eff_energy_j = plan->pred_energy_j - G * S * T * P;
    return KR_OK;
}

/* The plans whose timeline is drawn: each method's fastest (max-clock for single-plan methods)
 * and Kareus's most frugal. */
static const char *const timeline_labels[] = {"max-clock", "fastest", "frugal"};

static int draws_timeline(kr_method m, const char *label)
{
    if (strcmp(label, "frugal") == 0)
        return m == KR_METHOD_KAREUS;
    return strcmp(label, kr_method_is_point(m) ? "max-clock" : "fastest") == 0;
}

/* Writes, simulates and records one plan of method m. */
static int add_plan(run *r, kr_method m, const kr_solve_result *f, variant_state *vs, int step, const char *label,
                    kr_plan *given)
{
    kr_method_result *mr = &r->out->m[m];
    for (int i = 0; given == NULL && i < mr->nplans; i++)
        if (mr->plans[i].step == step) { /* the same step under another label: reuse it */
            if (strcmp(label, "fastest") == 0)
                mr->fastest = i;
            else if (strcmp(label, "frugal") == 0)
                mr->frugal = i;
            return i;
        }
    if (mr->nplans >= KR_OPT_MAX_PLANS) {
        if (given)
            kr_plan_free(given);
        return kr_error_set(r->err, KR_EINTERNAL, "optimize: too many plans for %s", kr_method_name(m));
    }
    kr_plan plan;
    int rc;
    if (given) {
        plan = *given; /* ownership moves here */
    } else {
        if ((rc = kr_solve_plan(f, solve_dag(vs), &vs->opts, step, r->job, &plan, r->err)))
            return rc;
        kr__strlcpy(plan.method, kr_method_slug(m), sizeof plan.method);
        kr__strlcpy(plan.variant, kr_variant_name(kr_method_variant(m)), sizeof plan.variant);
    }
    kr_opt_plan *p = &mr->plans[mr->nplans];
    memset(p, 0, sizeof *p);
    kr__strlcpy(p->label, label, sizeof p->label);
    p->step = step;
    p->pred_time_s = plan.pred_time_s;
    p->pred_energy_j = plan.pred_energy_j;
    p->pred_bound_j = plan.pred_bound_j;
    double t0 = kr__now_s();
    kr_pipe_result sim;
    rc = kr_pipesim_plan(r->job, &plan, r->b, NULL, &sim, r->err);
    r->out->simulate_s += kr__now_s() - t0;
    if (rc) {
        kr_plan_free(&plan);
        return kr_error_prefix(r->err, "simulating %s plan %s", kr_method_name(m), label);
    }
    p->sim_time_s = sim.time_s;
    p->sim_energy_j = sim.energy_j;
    r->settle_unpriced += sim.settle_unpriced;
    if (r->o->out_dir) {
        char rel[128], path[4400];
        snprintf(rel, sizeof rel, "plans/%s/%s.json", kr_method_slug(m), label);
        path_join(path, sizeof path, r->o->out_dir, rel);
        char dir[4400];
        snprintf(dir, sizeof dir, "%s/plans/%s", r->o->out_dir, kr_method_slug(m));
        if ((rc = kr__mkdirs(dir, r->err)) || (rc = kr_plan_write(path, &plan, r->err))) {
            kr_pipe_result_free(&sim);
            kr_plan_free(&plan);
            return rc;
        }
        /* The same plan as the published runtime reads it (Zeus PFO + Kareus scheduler):
         * plans/<method>/freqs_pipeline_<step>.py (+ scheds_pipeline_<step>.py for Kareus). Point
         * methods run without a frequency server; the artifact's schedules need recomputation. */
        if (!kr_method_is_point(m) && (r->job->recompute || kr_method_variant(m) != KR_VARIANT_KAREUS) &&
            (rc = kr_plan_export_artifact(&plan, r->job, dir, -1, NULL, 0, NULL, 0, r->err))) {
            kr_pipe_result_free(&sim);
            kr_plan_free(&plan);
            return rc;
        }
        kr__strlcpy(p->file, rel, sizeof p->file);
        if (r->o->pictures && draws_timeline(m, label)) {
            char title[160];
            snprintf(title, sizeof title, "%s — %s plan (simulated)", kr_method_name(m), label);
            snprintf(rel, sizeof rel, "timeline-%s-%s.svg", kr_method_slug(m), label);
            path_join(path, sizeof path, r->o->out_dir, rel);
            rc = kr_svg_timeline(path, title, &sim, r->job, r->err);
        }
    }
    kr_pipe_result_free(&sim);
    kr_plan_free(&plan);
    if (rc)
        return rc;
    if (strcmp(label, "fastest") == 0)
        mr->fastest = mr->nplans;
    if (strcmp(label, "frugal") == 0)
        mr->frugal = mr->nplans;
    return mr->nplans++;
}

static int select_one(run *r, const kr_solve_result *f, const char *rule)
{
    int step;
    int n = kr_solve_select(f, rule, &step, 1, r->err);
    return n == 1 ? step : (n < 0 ? n : kr_error_set(r->err, KR_EINTERNAL, "optimize: rule %s chose nothing", rule));
}

static int run_method(run *r, kr_method m)
{
    kr_method_result *mr = &r->out->m[m];
    variant_state *vs = &r->v[kr_method_variant(m)];
    mr->method = m;
    mr->enabled = 1;
    for (int i = 0; i < vs->nres; i++) {
        mr->evaluated += vs->res[i].stats.evaluated;
        mr->space += vs->res[i].stats.space_size;
    }
    kr_solve_result f;
    int rc;
    double t0 = kr__now_s();
    if (kr_method_is_point(m)) {
        progress(r, "solve", "%s: every instruction at %d MHz", kr_method_name(m), r->job->clock_max_mhz);
        kr_plan plan;
        double t = 0, e = 0;
        if ((rc = max_clock_plan(r, m, vs, &plan, &t, &e)))
            return rc;
        mr->solve_s = kr__now_s() - t0;
        mr->nsteps = 1;
        mr->time_s = malloc(sizeof(double));
        mr->energy_j = malloc(sizeof(double));
        if (mr->time_s == NULL || mr->energy_j == NULL) {
            kr_plan_free(&plan);
            return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
        }
        mr->time_s[0] = t;
        mr->energy_j[0] = e;
        if ((rc = add_plan(r, m, NULL, vs, 0, "max-clock", &plan)) < 0)
            return rc;
        mr->fastest = mr->frugal = mr->ten[0] = rc;
        mr->nten = 1;
        return KR_OK;
    }
    kr_solver_config cfg;
    kr_solver_config_default(&cfg);
    cfg.cost_model = r->o->cost_model;
    cfg.unit_time_s = r->o->unit_time_s;
    cfg.static_power_w = r->job->static_power_w;
    cfg.gpus_per_stage = kr_job_gpus_per_stage(r->job);
    cfg.exchange = r->o->exchange;
    progress(r, "solve", "%s frontier (%s cost model, unit %g ms)", kr_method_name(m),
             kr_cost_model_name(cfg.cost_model), 1e3 * cfg.unit_time_s);
    if ((rc = kr_solve(solve_dag(vs), &vs->opts, &cfg, &f, r->err)))
        return kr_error_prefix(r->err, "solve (%s)", kr_method_name(m));
    mr->solve_s = kr__now_s() - t0;
    r->out->solve_s += mr->solve_s;
    mr->nsteps = f.nsteps;
    mr->time_s = malloc(sizeof(double) * (size_t)f.nsteps);
    mr->energy_j = malloc(sizeof(double) * (size_t)f.nsteps);
    if (mr->time_s == NULL || mr->energy_j == NULL) {
        kr_solve_result_free(&f);
        return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
    }
    for (int k = 0; k < f.nsteps; k++) {
        mr->time_s[k] = f.steps[k].knob_time_s;
        mr->energy_j[k] = f.steps[k].energy_j;
    }
    if (r->o->out_dir) {
        char rel[96], path[4400], dir[4400];
        snprintf(dir, sizeof dir, "%s/frontiers", r->o->out_dir);
        snprintf(rel, sizeof rel, "frontiers/%s.csv", kr_method_slug(m));
        path_join(path, sizeof path, r->o->out_dir, rel);
        if ((rc = kr__mkdirs(dir, r->err)) || (rc = kr_solve_result_write_csv(&f, path, r->err))) {
            kr_solve_result_free(&f);
            return rc;
        }
    }
    int fast = select_one(r, &f, "fastest"), frug = fast >= 0 ? select_one(r, &f, "frugal") : fast;
    if (frug < 0) {
        kr_solve_result_free(&f);
        return frug;
    }
    if ((rc = add_plan(r, m, &f, vs, fast, "fastest", NULL)) < 0 || (rc = add_plan(r, m, &f, vs, frug, "frugal", NULL)) < 0) {
        kr_solve_result_free(&f);
        return rc;
    }
    int ten[15];
    int n = kr_solve_select(&f, "artifact10", ten, 15, r->err);
    if (n < 0) {
        kr_solve_result_free(&f);
        return n;
    }
    progress(r, "simulate", "%s: %d plans of the 10-point frontier", kr_method_name(m), n);
    mr->nten = 0;
    for (int i = 0; i < n && mr->nten < 10; i++) {
        char label[24];
        snprintf(label, sizeof label, "step-%05d", ten[i]);
        rc = add_plan(r, m, &f, vs, ten[i], label, NULL);
        if (rc < 0) {
            kr_solve_result_free(&f);
            return rc;
        }
        mr->ten[mr->nten++] = rc;
    }
    kr_solve_result_free(&f);
    return KR_OK;
}

/* ---- metrics ---------------------------------------------------------------------------- */

static void tradeoff_of_ten(const kr_method_result *mr, double *t, double *e, kr_tradeoff *out)
{
    for (int i = 0; i < mr->nten; i++) {
        t[i] = mr->plans[mr->ten[i]].sim_time_s;
        e[i] = mr->plans[mr->ten[i]].sim_energy_j;
    }
    out->n = mr->nten;
    out->time_s = t;
    out->energy_j = e;
}

/* A metric that may not exist ("no plan qualifies"): NaN then. */
typedef int (*metric_fn)(const kr_tradeoff *, const kr_tradeoff *, double *, kr_error *);

static double metric_or_nan(metric_fn fn, const kr_tradeoff *ref, const kr_tradeoff *x)
{
    double v;
    kr_error e = {0};
    return fn(ref, x, &v, &e) == KR_OK ? v : NAN;
}

static void compute_metrics(kr_optimize_result *o)
{
    const kr_method_result *meg = &o->m[KR_METHOD_MEGATRON], *per = &o->m[KR_METHOD_PERSEUS];
    double rt[10], re[10];
    kr_tradeoff ref10 = {0}, reffull = {0};
    if (per->enabled) {
        tradeoff_of_ten(per, rt, re, &ref10);
        reffull = (kr_tradeoff){per->nsteps, per->time_s, per->energy_j};
    }
    double max_terr = 0, max_eerr = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &o->m[m];
        kr_metric_row *row = &o->rows[m];
        row->mt_time_red = row->mt_energy_red = row->iso_time_10pt = row->iso_energy_10pt = NAN;
        row->iso_time_full = row->iso_energy_full = row->robust_mean = row->robust_max = NAN;
        if (!mr->enabled)
            continue;
        for (int i = 0; i < mr->nplans; i++) {
            const kr_opt_plan *p = &mr->plans[i];
            max_terr = KR_MAX(max_terr, fabs(p->sim_time_s - p->pred_time_s) / p->pred_time_s);
            max_eerr = KR_MAX(max_eerr, fabs(p->sim_energy_j - p->pred_energy_j) / p->pred_energy_j);
        }
        double xt[10], xe[10];
        kr_tradeoff x10, xfull = {mr->nsteps, mr->time_s, mr->energy_j};
        tradeoff_of_ten(mr, xt, xe, &x10);
        /* Max throughput: the method's fastest simulated plan against Megatron's. */
        if (meg->enabled) {
            const kr_opt_plan *mp = &meg->plans[meg->fastest], *fp = &mr->plans[mr->fastest];
            row->mt_time_red = (mp->sim_time_s - fp->sim_time_s) / mp->sim_time_s;
            row->mt_energy_red = (mp->sim_energy_j - fp->sim_energy_j) / mp->sim_energy_j;
        }
        if (!per->enabled)
            continue;
        double mean, mx, lo, hi;
        kr_error e = {0};
        row->iso_time_10pt = metric_or_nan(kr_metric_iso_time, &ref10, &x10);
        row->iso_energy_10pt = metric_or_nan(kr_metric_iso_energy, &ref10, &x10);
        row->iso_time_full = metric_or_nan(kr_metric_iso_time, &reffull, &xfull);
        row->iso_energy_full = metric_or_nan(kr_metric_iso_energy, &reffull, &xfull);
        if (kr_metric_robust(&reffull, &xfull, 1000, &mean, &mx, &lo, &hi, &e) == KR_OK) {
            row->robust_mean = mean;
            row->robust_max = mx;
        }
    }
    o->max_time_err = max_terr;
    o->max_energy_err = max_eerr;
}

/* ---- outputs ------------------------------------------------------------------------------ */

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int write_pictures(run *r)
{
    const kr_optimize_result *o = r->out;
    kr_chart_series full[KR_NUM_METHODS], ten[KR_NUM_METHODS];
    double tt[KR_NUM_METHODS][10], te[KR_NUM_METHODS][10];
    int ns = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &o->m[m];
        if (!mr->enabled)
            continue;
        full[ns] = (kr_chart_series){kr_method_name((kr_method)m), mr->nsteps, mr->time_s, mr->energy_j,
                                     !kr_method_is_point((kr_method)m), -1};
        for (int i = 0; i < mr->nten; i++) {
            tt[ns][i] = mr->plans[mr->ten[i]].sim_time_s;
            te[ns][i] = mr->plans[mr->ten[i]].sim_energy_j;
        }
        ten[ns] = (kr_chart_series){kr_method_name((kr_method)m), mr->nten, tt[ns], te[ns],
                                    !kr_method_is_point((kr_method)m), -1};
        ns++;
    }
    kr_chart_marks marks = {NAN, NAN, "Perseus"};
    const kr_method_result *per = &o->m[KR_METHOD_PERSEUS];
    char path[4400], title[200];
    int rc;
    if (per->enabled) {
        marks.iso_time_s = per->time_s[0];
        marks.iso_energy_j = per->energy_j[0];
        for (int k = 0; k < per->nsteps; k++) {
            if (per->time_s[k] < marks.iso_time_s)
                marks.iso_time_s = per->time_s[k];
            if (per->energy_j[k] < marks.iso_energy_j)
                marks.iso_energy_j = per->energy_j[k];
        }
    }
    snprintf(title, sizeof title, "%s: iteration frontiers (solver, every step)", r->job->name);
    path_join(path, sizeof path, r->o->out_dir, "frontiers.svg");
    if ((rc = kr_svg_frontiers(path, title, full, ns, &marks, r->err)))
        return rc;
    if (per->enabled) {
        marks.iso_time_s = marks.iso_energy_j = INFINITY;
        for (int i = 0; i < per->nten; i++) {
            marks.iso_time_s = KR_MIN(marks.iso_time_s, per->plans[per->ten[i]].sim_time_s);
            marks.iso_energy_j = KR_MIN(marks.iso_energy_j, per->plans[per->ten[i]].sim_energy_j);
        }
    }
    snprintf(title, sizeof title, "%s: 10-point frontiers (pipeline simulation)", r->job->name);
    path_join(path, sizeof path, r->o->out_dir, "frontiers-10pt.svg");
    if ((rc = kr_svg_frontiers(path, title, ten, ns, &marks, r->err)))
        return rc;
    /* Inside a partition: the first forward partition at the highest clock, with NCCL's default
     * launch and SMs, and with the configuration of Kareus's fastest plan. */
    const kr_method_result *ka = &o->m[KR_METHOD_KAREUS];
    if (ka->enabled && o->m[KR_METHOD_NANOBATCH].enabled && ka->plans[ka->fastest].file[0]) {
        kr_plan plan;
        char ppath[4400];
        path_join(ppath, sizeof ppath, r->o->out_dir, ka->plans[ka->fastest].file);
        if ((rc = kr_plan_read(ppath, &plan, r->err)))
            return rc;
        const kr_plan_instr *in = &plan.stages[0].instr[0];
        kr_partition_set *set = malloc(sizeof *set), *dflt = malloc(sizeof *dflt);
        kr_sim_timeline *tl = malloc(2 * sizeof *tl);
        rc = set && dflt && tl ? KR_OK : kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
        if (rc == KR_OK)
            rc = kr_partition_catalog(r->job, KR_VARIANT_KAREUS, set, r->err);
        if (rc == KR_OK)
            rc = kr_partition_catalog(r->job, KR_VARIANT_DEFAULT_OVERLAP, dflt, r->err);
        if (rc == KR_OK && in->ncomm > 0) {
            const kr_partition *p = kr_partition_find(set, in->comm[0].key);
            const kr_partition *q = kr_partition_find(dflt, in->comm[0].key);
            kr_config ck = {in->freq_mhz, in->comm[0].sms, 0}, cd = {in->freq_mhz, q ? q->fixed_sms : 0, q ? q->fixed_slot : 0};
            if (p && q && kr_partition_slot_index(p, in->comm[0].slot, &ck.slot, r->err) == KR_OK &&
                (rc = kr_sim_partition_timeline(r->job, q, &cd, &tl[0], r->err)) == KR_OK &&
                (rc = kr_sim_partition_timeline(r->job, p, &ck, &tl[1], r->err)) == KR_OK) {
                char t0[160], t1[160];
                snprintf(t0, sizeof t0, "default overlap: launch at %s, %d SMs", kr_partition_slot_name(q, cd.slot), cd.sms);
                snprintf(t1, sizeof t1, "Kareus: launch at %s, %d SMs", in->comm[0].slot, ck.sms);
                const char *titles[2] = {t0, t1};
                snprintf(title, sizeof title, "%s on stage 0 at %d MHz: compute and comm streams", p->key, in->freq_mhz);
                path_join(path, sizeof path, r->o->out_dir, "partition.svg");
                rc = kr_svg_partition(path, title, tl, titles, 2, r->err);
            }
        }
        free(set);
        free(dflt);
        free(tl);
        kr_plan_free(&plan);
        if (rc)
            return rc;
    }
    return KR_OK;
}

static int write_summary(run *r)
{
    const kr_optimize_result *o = r->out;
    const kr_job *job = r->job;
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kareus.summary"));
    json_object_set_new(root, "version", json_integer(1));
    char sum[256], fp[17];
    kr_job_summary(job, sum, sizeof sum);
    kr_job_fingerprint(job, fp);
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(job->name));
    json_object_set_new(j, "summary", json_string(sum));
    json_object_set_new(j, "fingerprint", json_string(fp));
    json_object_set_new(j, "gpus", json_integer(kr_job_gpus_total(job)));
    json_object_set_new(root, "job", j);
    json_t *s = json_object();
    json_object_set_new(s, "strategy", json_string(kr_strategy_name(o->strategy)));
    json_object_set_new(s, "cost_model", json_string(kr_cost_model_name(r->o->cost_model)));
    kr__jset_real(s, "unit_time_s", r->o->unit_time_s);
    json_object_set_new(s, "backend", json_string(kr_backend_name(r->b)));
    json_object_set_new(s, "seed", json_integer((json_int_t)r->o->seed));
    json_object_set_new(root, "settings", s);
    static const char *const exec[KR_NUM_METHODS] = {"sequential", "sequential", "nanobatched, NCCL at partition start",
                                                     "nanobatched, NCCL at partition start",
                                                     "nanobatched, tuned slot and SMs"};
    static const char *const clocks[KR_NUM_METHODS] = {"max", "per instruction", "max", "per instruction",
                                                       "per instruction, joint"};
    json_t *methods = json_array(), *rows = json_array(), *vplans = json_array(), *search = json_array();
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &o->m[m];
        if (!mr->enabled)
            continue;
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(kr_method_name((kr_method)m)));
        json_object_set_new(x, "slug", json_string(kr_method_slug((kr_method)m)));
        json_object_set_new(x, "variant", json_string(kr_variant_name(kr_method_variant((kr_method)m))));
        json_object_set_new(x, "execution", json_string(exec[m]));
        json_object_set_new(x, "clocks", json_string(clocks[m]));
        json_object_set_new(x, "steps", json_integer(mr->nsteps));
        char rel[96];
        snprintf(rel, sizeof rel, "frontiers/%s.csv", kr_method_slug((kr_method)m));
        json_object_set_new(x, "frontier_csv", json_string(rel));
        const kr_opt_plan *pf = &mr->plans[mr->fastest], *pg = &mr->plans[mr->frugal];
        json_t *f = json_object(), *g = json_object();
        kr__jset_real(f, "time_s", pf->sim_time_s);
        kr__jset_real(f, "energy_j", pf->sim_energy_j);
        json_object_set_new(f, "file", json_string(pf->file));
        kr__jset_real(g, "time_s", pg->sim_time_s);
        kr__jset_real(g, "energy_j", pg->sim_energy_j);
        json_object_set_new(g, "file", json_string(pg->file));
        /* The solver's bound on the predicted energy and the predicted plan's gap to it. */
        for (int k = 0; k < 2; k++) {
            const kr_opt_plan *pk = k ? pg : pf;
            if (pk->pred_bound_j > 0) {
                kr__jset_real(k ? g : f, "bound_j", pk->pred_bound_j);
                kr__jset_real(k ? g : f, "gap", pk->pred_energy_j / pk->pred_bound_j - 1);
            }
        }
        json_object_set_new(x, "fastest", f);
        json_object_set_new(x, "frugal", g);
        json_t *tenp = json_array();
        for (int i = 0; i < mr->nten; i++) {
            const kr_opt_plan *p = &mr->plans[mr->ten[i]];
            json_t *pt = json_object();
            json_object_set_new(pt, "step", json_integer(p->step));
            kr__jset_real(pt, "time_s", p->sim_time_s);
            kr__jset_real(pt, "energy_j", p->sim_energy_j);
            json_object_set_new(pt, "file", json_string(p->file));
            json_array_append_new(tenp, pt);
        }
        json_object_set_new(x, "ten_point", tenp);
        json_object_set_new(x, "search_evaluated", json_integer(mr->evaluated));
        json_object_set_new(x, "search_space", json_integer(mr->space));
        kr__jset_real(x, "solve_s", mr->solve_s);
        json_array_append_new(methods, x);

        const kr_metric_row *w = &o->rows[m];
        json_t *row = json_object();
        json_object_set_new(row, "method", json_string(kr_method_name((kr_method)m)));
        json_object_set_new(row, "max_throughput_time_reduction", jnum(w->mt_time_red));
        json_object_set_new(row, "max_throughput_energy_reduction", jnum(w->mt_energy_red));
        json_object_set_new(row, "iso_time_energy_reduction_10pt", jnum(w->iso_time_10pt));
        json_object_set_new(row, "iso_energy_time_reduction_10pt", jnum(w->iso_energy_10pt));
        json_object_set_new(row, "iso_time_energy_reduction_full", jnum(w->iso_time_full));
        json_object_set_new(row, "iso_energy_time_reduction_full", jnum(w->iso_energy_full));
        json_object_set_new(row, "robust_mean", jnum(w->robust_mean));
        json_object_set_new(row, "robust_max", jnum(w->robust_max));
        json_array_append_new(rows, row);

        for (int i = 0; i < mr->nplans; i++) {
            const kr_opt_plan *p = &mr->plans[i];
            json_t *v = json_object();
            json_object_set_new(v, "method", json_string(kr_method_name((kr_method)m)));
            json_object_set_new(v, "label", json_string(p->label));
            json_object_set_new(v, "file", json_string(p->file));
            kr__jset_real(v, "predicted_time_s", p->pred_time_s);
            kr__jset_real(v, "simulated_time_s", p->sim_time_s);
            kr__jset_real(v, "predicted_energy_j", p->pred_energy_j);
            kr__jset_real(v, "simulated_energy_j", p->sim_energy_j);
            json_array_append_new(vplans, v);
        }
    }
    for (int v = 0; v < 3; v++) {
        const variant_state *vs = &r->v[v];
        for (int i = 0; vs->used && i < vs->nres; i++) {
            json_t *x = json_object();
            json_object_set_new(x, "variant", json_string(kr_variant_name((kr_variant)v)));
            json_object_set_new(x, "key", json_string(vs->res[i].front.key));
            json_object_set_new(x, "measured", json_integer(vs->res[i].stats.evaluated));
            json_object_set_new(x, "space", json_integer(vs->res[i].stats.space_size));
            json_object_set_new(x, "frontier_points", json_integer(vs->res[i].stats.front_eff));
            /* A replayed partial recording: the frontier is that of the recorded points only. */
            if (vs->res[i].stats.recorded > 0 && vs->res[i].stats.recorded < vs->res[i].stats.space_size)
                json_object_set_new(x, "restricted_to_recorded", json_integer(vs->res[i].stats.recorded));
            json_array_append_new(search, x);
        }
    }
    json_object_set_new(root, "methods", methods);
    json_t *metrics = json_object();
    json_object_set_new(metrics, "reference", json_string("Perseus"));
    json_object_set_new(metrics, "baseline", json_string("Megatron"));
    json_object_set_new(metrics, "rows", rows);
    json_object_set_new(root, "metrics", metrics);
    json_t *val = json_object();
    json_object_set_new(val, "plans", vplans);
    kr__jset_real(val, "max_time_rel_error", o->max_time_err);
    kr__jset_real(val, "max_energy_rel_error", o->max_energy_err);
    char note[768];
    snprintf(note, sizeof note,
             "Predicted: the solver's figures (options summed on the pipeline DAG with p2p lags). Simulated: the "
             "pipeline simulator, which also charges the %.0f ms settle window of every clock change. Largest "
             "differences over these plans: %.2f%% in time, %.2f%% in energy.",
             1e3 * job->gpu.clock_switch_s, 100 * o->max_time_err, 100 * o->max_energy_err);
    if (r->settle_unpriced > 0) {
        size_t nl = strlen(note);
        snprintf(note + nl, sizeof note - nl,
                 " Replayed partial recordings: %d clock changes could not be charged their settle window (the "
                 "recordings lack those configurations at the previous clock) and run at the new clock throughout.",
                 r->settle_unpriced);
    }
    json_object_set_new(val, "note", json_string(note));
    json_object_set_new(root, "validation", val);
    json_object_set_new(root, "search", search);
    if (r->o->pictures) {
        json_t *pics = json_object(), *tls = json_array(), *parts = json_array();
        json_object_set_new(pics, "frontiers", json_string("frontiers.svg"));
        json_object_set_new(pics, "frontiers_10pt", json_string("frontiers-10pt.svg"));
        for (int m = 0; m < KR_NUM_METHODS; m++) {
            const kr_method_result *mr = &o->m[m];
            if (!mr->enabled)
                continue;
            for (size_t k = 0; k < KR_ARRAY_LEN(timeline_labels); k++) {
                const char *label = timeline_labels[k];
                if (!draws_timeline((kr_method)m, label))
                    continue;
                char file[128], title[160];
                snprintf(file, sizeof file, "timeline-%s-%s.svg", kr_method_slug((kr_method)m), label);
                snprintf(title, sizeof title, "%s, %s plan", kr_method_name((kr_method)m), label);
                json_t *t = json_object();
                json_object_set_new(t, "title", json_string(title));
                json_object_set_new(t, "file", json_string(file));
                json_array_append_new(tls, t);
            }
        }
        json_object_set_new(pics, "timelines", tls);
        if (o->m[KR_METHOD_KAREUS].enabled && o->m[KR_METHOD_NANOBATCH].enabled) {
            json_t *t = json_object();
            json_object_set_new(t, "title", json_string("The first partition of Kareus's fastest plan against the default overlap"));
            json_object_set_new(t, "file", json_string("partition.svg"));
            json_array_append_new(parts, t);
        }
        json_object_set_new(pics, "partitions", parts);
        json_object_set_new(root, "pictures", pics);
    }
    json_t *tm = json_object();
    kr__jset_real(tm, "search", o->search_s);
    kr__jset_real(tm, "compose", o->compose_s);
    kr__jset_real(tm, "solve", o->solve_s);
    kr__jset_real(tm, "simulate", o->simulate_s);
    json_object_set_new(root, "timing_s", tm);
    char path[4400];
    path_join(path, sizeof path, r->o->out_dir, "summary.json");
    int rc = kr__json_write_atomic(path, root, r->err);
    json_decref(root);
    return rc;
}

int kr_optimize(const kr_job *job, const kr_optimize_options *opts, kr_optimize_result *out, kr_error *err)
{
    double t_start = kr__now_s();
    memset(out, 0, sizeof *out);
    kr_optimize_options o;
    if (opts)
        o = *opts;
    else
        kr_optimize_options_default(&o);
    if (!(o.unit_time_s > 0))
        return kr_error_set(err, KR_ERANGE, "optimize: unit time: expected a positive number of seconds, found %g",
                            o.unit_time_s);
    unsigned methods = o.methods ? o.methods : (1u << KR_NUM_METHODS) - 1;
    methods |= 1u << KR_METHOD_MEGATRON | 1u << KR_METHOD_PERSEUS; /* the metrics' references */
    int rc = kr_job_validate(job, err);
    if (rc)
        return rc;
    out->job = *job;
    run r;
    memset(&r, 0, sizeof r);
    r.job = &out->job;
    r.o = &o;
    r.out = out;
    r.err = err;
    r.b = o.backend;
    kr_backend *own = NULL;
    if (r.b == NULL) {
        if ((rc = kr_sim_backend_create(job, NULL, &own, err)))
            return rc;
        r.b = own;
    }
    /* Simulator and replay: every configuration (on a replay, every recorded one); a GPU: bo. */
    out->strategy = o.strategy_set                                                        ? o.strategy
                    : kr_backend_caps(r.b) & (KR_BACKEND_SIMULATED | KR_BACKEND_RECORDED) ? KR_STRATEGY_EXHAUSTIVE
                                                                                          : KR_STRATEGY_BO;
    if (o.out_dir) {
        if ((rc = kr__mkdirs(o.out_dir, err)))
            goto done;
        char logp[4400];
        const char *lp = o.log_path;
        if (lp == NULL) {
            path_join(logp, sizeof logp, o.out_dir, "measurements.jsonl");
            lp = logp;
        }
        if ((rc = kr_search_log_open(lp, job, &r.log, err)))
            goto done;
        if (kr_backend_caps(r.b) & KR_BACKEND_SIMULATED)
            kr_search_log_set_sync(r.log, KR_LOG_SYNC_BATCH);
    } else if (o.log_path) {
        if ((rc = kr_search_log_open(o.log_path, job, &r.log, err)))
            goto done;
    }
    if ((kr_backend_caps(r.b) & KR_BACKEND_RECORDED) && (rc = replay_coverage(&r, methods)))
        goto done;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        if (!(methods & (1u << m)))
            continue;
        kr_variant var = kr_method_variant((kr_method)m);
        if (!r.v[var].used) {
            r.v[var].used = 1;
            if ((rc = prepare_variant(&r, var)))
                goto done;
        }
        if ((rc = run_method(&r, (kr_method)m)) < 0)
            goto done;
        rc = KR_OK;
    }
    compute_metrics(out);
    if (o.out_dir) {
        double t0 = kr__now_s();
        progress(&r, "write", "summary, pictures and report in %s", o.out_dir);
        if (o.pictures && (rc = write_pictures(&r)))
            goto done;
        if ((rc = write_summary(&r)))
            goto done;
        if (o.pictures && (rc = kr_report_html(o.out_dir, err)))
            goto done;
        out->write_s = kr__now_s() - t0;
    }
done:
    for (int v = 0; v < 3; v++)
        free_variant(&r.v[v]);
    kr_search_log_close(r.log);
    kr_backend_destroy(own);
    out->wall_s = kr__now_s() - t_start;
    if (rc)
        kr_optimize_result_free(out);
    return rc;
}
