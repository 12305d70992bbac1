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

#include "kareus/compose.h"
#include "kareus/metrics.h"
#include "kareus/pipesim.h"
#include "kareus/report.h"
#include "kareus/sim.h"
#include "optimize_internal.h"
#include "util/util.h"

/* The methods' names, X(value, name, slug): the name in tables and the slug in file names. */
#define METHOD_NAMES(X)                                                                                    \
    X(KR_METHOD_MEGATRON, "Megatron", "megatron")                                                          \
    X(KR_METHOD_PERSEUS, "Perseus", "perseus")                                                             \
    X(KR_METHOD_NANOBATCH, "Nanobatching", "nanobatch")                                                    \
    X(KR_METHOD_NANOBATCH_PERSEUS, "Nanobatching+Perseus", "nanobatch+perseus")                            \
    X(KR_METHOD_KAREUS, "Kareus", "kareus")
#define METHOD_NAME_ROW(value, name, slug) KR__ENAME_ROW(value, name)
#define METHOD_SLUG_ROW(value, name, slug) KR__ENAME_ROW(value, slug)

static const kr__ename method_names[] = {METHOD_NAMES(METHOD_NAME_ROW)};
static const kr__ename method_slugs[] = {METHOD_NAMES(METHOD_SLUG_ROW)};
/* What kr_method_parse accepts, in any case: slugs, names and two aliases. */
static const kr__ename method_parse_names[] = {
    METHOD_NAMES(METHOD_SLUG_ROW) METHOD_NAMES(METHOD_NAME_ROW)
    KR__ENAME_ROW(KR_METHOD_NANOBATCH_PERSEUS, "n+p") KR__ENAME_ROW(KR_METHOD_NANOBATCH_PERSEUS, "nanobatch-perseus")};

const char *kr_method_name(kr_method m)
{
    return kr__ename_of(method_names, KR_ARRAY_LEN(method_names), (int)m);
}

const char *kr_method_slug(kr_method m)
{
    return kr__ename_of(method_slugs, KR_ARRAY_LEN(method_slugs), (int)m);
}

int kr_method_parse(const char *s, kr_method *out)
{
    int v;
    if (kr__ename_parse_nocase(method_parse_names, KR_ARRAY_LEN(method_parse_names), s, &v))
        return KR_EINVAL;
    *out = (kr_method)v;
    return KR_OK;
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

void kr_optimize_config_default(kr_optimize_config *o)
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
        free(r->m[m].from_np);
    }
    free(r->search);
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
    const kr_optimize_config *o;
    kr_backend *b;
    kr_search_log *log;
    kr_optimize_result *out;
    variant_state v[3];
    kr_solve_result np;       /* Nanobatching+Perseus's frontier, kept for Kareus's union */
    int have_np;
    kr_solve_result kf;       /* Kareus's own frontier, while its union is in use */
    kr__union un;             /* Kareus's frontier: its steps ∪ N+P's (union.c) */
    int have_un;
    kr_error *err;
} run;

/* The adapter from kr__progress's callback (ud, line) to the caller's (ud, phase, line). */
typedef struct phase_sink {
    const kr_optimize_config *o;
    const char *phase;
} phase_sink;

static void phase_line(void *ud, const char *line)
{
    const phase_sink *s = ud;
    s->o->progress(s->o->progress_ud, s->phase, line);
}

static void progress(const run *r, const char *phase, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A progress line of the flow's phase, through kr__progress (nothing without a callback). */
static void progress(const run *r, const char *phase, const char *fmt, ...)
{
    phase_sink s = {r->o, phase};
    va_list ap;
    va_start(ap, fmt);
    kr__vprogress(r->o->progress ? phase_line : NULL, &s, fmt, ap);
    va_end(ap);
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
    kr_search_config so;
    kr_search_config_default(&so);
    so.strategy = r->out->strategy;
    so.seed = r->o->seed;
    so.progress = search_progress;
    so.progress_ud = r;
    so.restrict_space = r->o->restrict_space;
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

/* 1 if a comm setting of plan runs NCCL (issue 31). */
static int plan_uses_nccl(const kr_plan *plan)
{
    for (int s = 0; s < plan->num_stages; s++)
        for (int i = 0; i < plan->stages[s].ninstr; i++)
            for (int c = 0; c < plan->stages[s].instr[i].ncomm; c++)
                if (plan->stages[s].instr[i].comm[c].kernel == KR_KERNEL_NCCL)
                    return 1;
    return 0;
}

/*
 * The write stage of one plan p of method m: plans/<method>/<label>.json, the same plan as the
 * published runtime reads it (Zeus PFO + Kareus scheduler: plans/<method>/freqs_pipeline_<step>.py,
 * + scheds_pipeline_<step>.py for Kareus), and its timeline when the report shows it. Point
 * methods run without a frequency server; the artifact's schedules need recomputation.
 */
static int write_plan(run *r, kr_method m, const char *label, const kr_plan *plan, const kr_pipe_result *sim,
                      kr_opt_plan *p)
{
    char rel[128], path[4400], dir[4400];
    snprintf(rel, sizeof rel, "plans/%s/%s.json", kr_method_slug(m), label);
    path_join(path, sizeof path, r->o->out_dir, rel);
    snprintf(dir, sizeof dir, "%s/plans/%s", r->o->out_dir, kr_method_slug(m));
    int rc;
    if ((rc = kr__mkdirs(dir, r->err)) || (rc = kr_plan_write(path, plan, r->err)))
        return rc;
    /* A Kareus plan with partitions on NCCL has no artifact form (kr_plan_export_artifact refuses
     * it): its JSON plan alone is written, as for point methods. */
    if (!kr_method_is_point(m) && (r->job->recompute || kr_method_variant(m) != KR_VARIANT_KAREUS) &&
        !plan_uses_nccl(plan) && (rc = kr_plan_export_artifact(plan, r->job, dir, -1, NULL, 0, NULL, 0, r->err)))
        return rc;
    kr__strlcpy(p->file, rel, sizeof p->file);
    return r->o->pictures ? kr_report_timeline(r->o->out_dir, m, label, sim, r->job, r->err) : KR_OK;
}

/* The plan of step `step` of frontier f of method m; Kareus's union frontier: its own step's plan,
 * or N+P's step's as the kareus variant on NCCL (*from_np = 1). */
static int step_plan(run *r, kr_method m, const kr_solve_result *f, variant_state *vs, int step, kr_plan *plan,
                     int *from_np)
{
    int rc;
    *from_np = 0;
    if (m == KR_METHOD_KAREUS && r->have_un && f == &r->un.u) {
        int src = r->un.src[step], k = r->un.src_step[step];
        *from_np = src == KR__SRC_NP;
        if (*from_np) {
            const variant_state *nv = &r->v[KR_VARIANT_DEFAULT_OVERLAP];
            if ((rc = kr_solve_plan(&r->np, solve_dag(nv), &nv->opts, k, r->job, plan, r->err)) == KR_OK &&
                (rc = kr__union_np_plan(plan, r->job, r->err)) != KR_OK)
                kr_plan_free(plan);
        } else {
            rc = kr_solve_plan(&r->kf, solve_dag(vs), &vs->opts, k, r->job, plan, r->err);
        }
        if (rc)
            return rc;
        plan->step = step;
    } else if ((rc = kr_solve_plan(f, solve_dag(vs), &vs->opts, step, r->job, plan, r->err))) {
        return rc;
    }
    kr__strlcpy(plan->method, kr_method_slug(m), sizeof plan->method);
    kr__strlcpy(plan->variant, kr_variant_name(kr_method_variant(m)), sizeof plan->variant);
    return KR_OK;
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
    int from_np = 0;
    if (given) {
        plan = *given; /* ownership moves here */
    } else {
        if ((rc = step_plan(r, m, f, vs, step, &plan, &from_np)))
            return rc;
    }
    kr_opt_plan *p = &mr->plans[mr->nplans];
    memset(p, 0, sizeof *p);
    kr__strlcpy(p->source, from_np ? "n+p" : kr_method_slug(m), sizeof p->source);
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
    r->out->settle_unpriced += sim.settle_unpriced;
    if (r->o->out_dir)
        rc = write_plan(r, m, label, &plan, &sim, p);
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

/* A single-plan method: its one plan at the highest clock is its whole frontier. */
static int run_point_method(run *r, kr_method m, variant_state *vs)
{
    kr_method_result *mr = &r->out->m[m];
    double t0 = kr__now_s();
    progress(r, "solve", "%s: every instruction at %d MHz", kr_method_name(m), r->job->clock_max_mhz);
    kr_plan plan;
    double t = 0, e = 0;
    int rc = max_clock_plan(r, m, vs, &plan, &t, &e);
    if (rc)
        return rc;
    mr->solve_s = kr__now_s() - t0;
    mr->nsteps = mr->steps_own = 1;
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

/* The frontier f of method m into the result, and (with an output directory) frontiers/<m>.csv
 * (Kareus's union: with the source of every step). */
static int record_frontier(run *r, kr_method m, const kr_solve_result *f)
{
    kr_method_result *mr = &r->out->m[m];
    int un = m == KR_METHOD_KAREUS && r->have_un;
    mr->nsteps = f->nsteps;
    mr->steps_own = un ? r->un.own : f->nsteps;
    mr->time_s = malloc(sizeof(double) * (size_t)f->nsteps);
    mr->energy_j = malloc(sizeof(double) * (size_t)f->nsteps);
    mr->from_np = un ? malloc(sizeof(int) * (size_t)f->nsteps) : NULL;
    const char **src = un ? malloc(sizeof(char *) * (size_t)f->nsteps) : NULL;
    if (mr->time_s == NULL || mr->energy_j == NULL || (un && (mr->from_np == NULL || src == NULL))) {
        free(src);
        return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
    }
    for (int k = 0; k < f->nsteps; k++) {
        mr->time_s[k] = f->steps[k].knob_time_s;
        mr->energy_j[k] = f->steps[k].energy_j;
        if (un) {
            mr->from_np[k] = r->un.src[k] == KR__SRC_NP;
            src[k] = mr->from_np[k] ? "n+p" : "kareus";
        }
    }
    if (r->o->out_dir == NULL) {
        free(src);
        return KR_OK;
    }
    char rel[96], path[4400], dir[4400];
    snprintf(dir, sizeof dir, "%s/frontiers", r->o->out_dir);
    snprintf(rel, sizeof rel, "frontiers/%s.csv", kr_method_slug(m));
    path_join(path, sizeof path, r->o->out_dir, rel);
    int rc = kr__mkdirs(dir, r->err);
    if (rc == KR_OK)
        rc = kr_solve_result_write_csv_sourced(f, src, un ? r->un.src_step : NULL, path, r->err);
    free(src);
    return rc;
}

/* The plans of frontier f that are simulated and written: fastest, most frugal, 10-point. */
static int choose_plans(run *r, kr_method m, const kr_solve_result *f, variant_state *vs)
{
    kr_method_result *mr = &r->out->m[m];
    int fast = select_one(r, f, "fastest"), frug = fast >= 0 ? select_one(r, f, "frugal") : fast, rc;
    if (frug < 0)
        return frug;
    if ((rc = add_plan(r, m, f, vs, fast, "fastest", NULL)) < 0 || (rc = add_plan(r, m, f, vs, frug, "frugal", NULL)) < 0)
        return rc;
    int ten[15];
    int n = kr_solve_select(f, "artifact10", ten, 15, r->err);
    if (n < 0)
        return n;
    progress(r, "simulate", "%s: %d plans of the 10-point frontier", kr_method_name(m), n);
    mr->nten = 0;
    for (int i = 0; i < n && mr->nten < 10; i++) {
        char label[24];
        snprintf(label, sizeof label, "step-%05d", ten[i]);
        if ((rc = add_plan(r, m, f, vs, ten[i], label, NULL)) < 0)
            return rc;
        mr->ten[mr->nten++] = rc;
    }
    return KR_OK;
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
    if (kr_method_is_point(m))
        return run_point_method(r, m, vs);
    kr_solver_config cfg;
    kr_optimize_solver_config(r->job, r->o, &cfg);
    progress(r, "solve", "%s frontier (%s cost model, unit %g ms)", kr_method_name(m),
             kr_cost_model_name(cfg.cost_model), 1e3 * cfg.unit_time_s);
    kr_solve_result f;
    double t0 = kr__now_s();
    int rc = kr_solve(solve_dag(vs), &vs->opts, &cfg, &f, r->err);
    if (rc)
        return kr_error_prefix(r->err, "solve (%s)", kr_method_name(m));
    mr->solve_s = kr__now_s() - t0;
    r->out->solve_s += mr->solve_s;
    const kr_solve_result *front = &f;
    if (m == KR_METHOD_KAREUS && r->o->restrict_space == 0) {
        /* Kareus's frontier: its steps ∪ N+P's (union.c); r->kf keeps its own for the plans. */
        if ((rc = kr__union_build(&f, r->have_np ? &r->np : NULL, &r->un, r->err))) {
            kr_solve_result_free(&f);
            return rc;
        }
        r->kf = f;
        r->have_un = 1;
        front = &r->un.u;
    }
    if ((rc = record_frontier(r, m, front)) == KR_OK)
        rc = choose_plans(r, m, front, vs);
    if (m == KR_METHOD_NANOBATCH_PERSEUS && rc == KR_OK && !r->have_np) {
        r->np = f; /* kept for Kareus's union */
        r->have_np = 1;
    } else if (!r->have_un || front != &r->un.u) {
        kr_solve_result_free(&f);
    }
    return rc;
}

/* The search of every partition, variant by variant, into the result (for the summary). */
static int record_search(run *r)
{
    int n = 0;
    for (int v = 0; v < 3; v++)
        n += r->v[v].used ? r->v[v].nres : 0;
    kr_optimize_result *o = r->out;
    o->search = calloc((size_t)(n > 0 ? n : 1), sizeof *o->search);
    if (o->search == NULL)
        return kr_error_set(r->err, KR_ENOMEM, "optimize: out of memory");
    o->nsearch = 0;
    for (int v = 0; v < 3; v++) {
        const variant_state *vs = &r->v[v];
        for (int i = 0; vs->used && i < vs->nres; i++) {
            const kr_search_result *q = &vs->res[i];
            kr_opt_search *x = &o->search[o->nsearch++];
            x->variant = (kr_variant)v;
            kr__strlcpy(x->key, q->front.key, sizeof x->key);
            x->evaluated = q->stats.evaluated;
            x->space = q->stats.space_size;
            x->frontier_points = q->stats.front_eff;
            x->recorded = q->stats.recorded;
        }
    }
    return KR_OK;
}

/* The run's settings into the result; the search strategy by default: every configuration on
 * the simulator and on a replay (on a replay, every recorded one), bo on a GPU. */
static void record_settings(run *r)
{
    kr_optimize_result *out = r->out;
    const kr_optimize_config *o = r->o;
    out->cost_model = o->cost_model;
    out->unit_time_s = o->unit_time_s;
    out->seed = o->seed;
    out->pictures = o->pictures;
    kr__strlcpy(out->backend, kr_backend_name(r->b), sizeof out->backend);
    out->strategy = o->strategy_set                                                          ? o->strategy
                    : kr_backend_caps(r->b) & (KR_BACKEND_SIMULATED | KR_BACKEND_RECORDED) ? KR_STRATEGY_EXHAUSTIVE
                                                                                            : KR_STRATEGY_BO;
}

/* The measurement log: o->log_path, else out_dir/measurements.jsonl (with an output directory,
 * created first), else none. */
static int open_log(run *r, const kr_job *job)
{
    const kr_optimize_config *o = r->o;
    int rc;
    if (o->out_dir == NULL)
        return o->log_path ? kr_search_log_open(o->log_path, job, &r->log, r->err) : KR_OK;
    if ((rc = kr__mkdirs(o->out_dir, r->err)))
        return rc;
    char logp[4400];
    const char *lp = o->log_path;
    if (lp == NULL) {
        path_join(logp, sizeof logp, o->out_dir, "measurements.jsonl");
        lp = logp;
    }
    if ((rc = kr_search_log_open(lp, job, &r->log, r->err)))
        return rc;
    if (kr_backend_caps(r->b) & KR_BACKEND_SIMULATED)
        kr_search_log_set_sync(r->log, KR_LOG_SYNC_BATCH);
    return KR_OK;
}

/* The write stage: pictures, summary.json and report.html into the output directory. */
static int write_outputs(run *r)
{
    const char *dir = r->o->out_dir;
    double t0 = kr__now_s();
    int rc;
    progress(r, "write", "summary, pictures and report in %s", dir);
    if ((r->o->pictures && (rc = kr_report_pictures(dir, r->out, r->err))) ||
        (rc = kr_report_summary(dir, r->out, r->err)) || (r->o->pictures && (rc = kr_report_html(dir, r->err))))
        return rc;
    r->out->write_s = kr__now_s() - t0;
    return KR_OK;
}

/* Search → compose → solve → simulate for every chosen method (each variant prepared once),
 * the metrics, then the write stage. */
static int run_flow(run *r, unsigned methods)
{
    int rc;
    if ((kr_backend_caps(r->b) & KR_BACKEND_RECORDED) && (rc = replay_coverage(r, methods)))
        return rc;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        if (!(methods & (1u << m)))
            continue;
        kr_variant var = kr_method_variant((kr_method)m);
        if (!r->v[var].used) {
            r->v[var].used = 1;
            if ((rc = prepare_variant(r, var)))
                return rc;
        }
        if ((rc = run_method(r, (kr_method)m)) < 0)
            return rc;
    }
    kr__optimize_metrics(r->out);
    if ((rc = record_search(r)))
        return rc;
    return r->o->out_dir ? write_outputs(r) : KR_OK;
}

int kr_optimize(const kr_job *job, const kr_optimize_config *opts, kr_optimize_result *out, kr_error *err)
{
    double t_start = kr__now_s();
    memset(out, 0, sizeof *out);
    kr_optimize_config o;
    if (opts)
        o = *opts;
    else
        kr_optimize_config_default(&o);
    if (!(o.unit_time_s > 0))
        return kr_error_set(err, KR_ERANGE, "optimize: unit time: expected a positive number of seconds, found %g",
                            o.unit_time_s);
    unsigned methods = o.methods ? o.methods : (1u << KR_NUM_METHODS) - 1;
    methods |= 1u << KR_METHOD_MEGATRON | 1u << KR_METHOD_PERSEUS; /* the metrics' references */
    if ((methods & (1u << KR_METHOD_KAREUS)) && o.restrict_space == 0)
        methods |= 1u << KR_METHOD_NANOBATCH_PERSEUS; /* Kareus's frontier takes N+P's steps */
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
    record_settings(&r);
    if ((rc = open_log(&r, job)) == KR_OK)
        rc = run_flow(&r, methods);
    for (int v = 0; v < 3; v++)
        free_variant(&r.v[v]);
    if (r.have_np)
        kr_solve_result_free(&r.np);
    if (r.have_un) {
        kr_solve_result_free(&r.kf);
        kr__union_free(&r.un);
    }
    kr_search_log_close(r.log);
    kr_backend_destroy(own);
    out->wall_s = kr__now_s() - t_start;
    if (rc)
        kr_optimize_result_free(out);
    return rc;
}
