/*
 * solver.c — Phillips–Dessouky frontier tracing on the activity-on-arc pipeline graph, with
 * the lowtime-compatible and the exact cost models (see solver.h and docs/solver.md): the
 * configuration, the tracer's setup and the step loop. The pieces it drives are in their own
 * files (solver_internal.h lists them).
 *
 * Formulation. The AON DAG's node v becomes arc v_L → v_R (its operation, duration d_v in
 * whole units); its edge u → v becomes arc u_R → v_L (duration = the edge's lag in units, 0 in
 * lowtime mode). Each step shortens the project by one unit along a minimum cut (S, T):
 * every arc S → T in the cut graph is shortened and every arc T → S lengthened, at cost
 *   cap(S, T) = Σ_{S→T} ub − Σ_{T→S} lb,
 * ub = cost of shortening by one unit, lb = saving of lengthening by one unit. The lowtime
 * mode's cut graph, capacities and stopping rules are lowtime's (ltcut.c); the exact mode's
 * is the min-cost tension step on the convex hull of the real options (costs.c, excut.c),
 * whose durations the rounding passes turn into real options at each step (rounding.c, bb.c).
 */
#include "kareus/solver.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solver/solver_internal.h"
#include "util/util.h"

/* The cost models' names, X(value, name). */
#define COST_MODEL_NAMES(X)      \
    X(KR_COST_EXACT, "exact")    \
    X(KR_COST_LOWTIME, "lowtime")
static const kr__ename cost_model_names[] = {COST_MODEL_NAMES(KR__ENAME_ROW)};

const char *kr_cost_model_name(kr_cost_model m)
{
    return kr__ename_of(cost_model_names, KR_ARRAY_LEN(cost_model_names), (int)m);
}

int kr_cost_model_parse(const char *s, kr_cost_model *out)
{
    int v;
    int rc = kr__ename_parse(cost_model_names, KR_ARRAY_LEN(cost_model_names), s, &v);
    if (rc == KR_OK)
        *out = (kr_cost_model)v;
    return rc;
}

void kr_solver_config_default(kr_solver_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cost_model = KR_COST_EXACT;
    cfg->unit_time_s = 0.001;
    cfg->static_power_w = 85.0;
    cfg->gpus_per_stage = 1;
    cfg->final_pass = 1;
}

static void groups_free(kr__solver *sv)
{
    if (sv->groups == NULL)
        return;
    for (int g = 0; g < sv->ngroups; g++) {
        free(sv->groups[g].cost);
        free(sv->groups[g].icost);
        free(sv->groups[g].knob);
        free(sv->groups[g].par);
        kr__lt_spec_free(&sv->groups[g].lt);
    }
    free(sv->groups);
    sv->groups = NULL;
}

void kr__sv_free(kr__solver *sv)
{
    groups_free(sv);
    free(sv->gidx);
    free(sv->lagq);
    free(sv->osucc);
    free(sv->olagq);
    free(sv->olags);
    free(sv->ipred);
    free(sv->ilagq);
    free(sv->ilags);
    free(sv->relax_lo);
    free(sv->fw_rt);
    free(sv->fw_knob);
    free(sv->d);
    free(sv->es);
    free(sv->ef);
    free(sv->ls);
    free(sv->lf);
    free(sv->rt);
    free(sv->res);
    free(sv->rlf);
    free(sv->knob);
    free(sv->vopt);
    free(sv->mark);
    free(sv->lb);
    free(sv->ub);
    free(sv->bal);
    free(sv->incut);
    free(sv->opa);
    free(sv->depa);
    free(sv->sa);
    free(sv->ta);
    free(sv->ex);
    free(sv->cvis);
    free(sv->cpath);
    free(sv->dirty);
    free(sv->isdirty);
    free(sv->exl);
    free(sv->inexl);
    kr__flow_free(&sv->flow);
    free(sv->crit);
    free(sv->kbak);
    free(sv->bfree);
    free(sv->bbuf);
    free(sv->tpos);
    free(sv->bq);
    free(sv->win_in);
}

/* Integer CPM on the AON form: es/ef per node, and (unless forward_only) ls/lf against the
 * makespan; returns the makespan. */
static long cpm_pass(kr__solver *sv, int forward_only)
{
    const kr_dag *dag = sv->dag;
    const int *off = dag->out_off, *succ = sv->osucc;
    const long *lag = sv->olagq, *d = sv->d;
    long *es = sv->es, *ef = sv->ef;
    for (int i = 0; i < sv->n; i++)
        es[i] = 0;
    for (int i = 0; i < sv->n; i++) {
        int u = dag->topo[i];
        long fu = es[u] + d[u];
        ef[u] = fu;
        for (int k = off[u]; k < off[u + 1]; k++)
            if (fu + lag[k] > es[succ[k]])
                es[succ[k]] = fu + lag[k];
    }
    long T = 0;
    for (int v = 0; v < sv->n; v++)
        T = KR_MAX(T, sv->ef[v]);
    if (forward_only)
        return T;
    for (int v = 0; v < sv->n; v++)
        sv->lf[v] = T;
    for (int i = sv->n - 1; i >= 0; i--) {
        int u = dag->topo[i];
        for (int k = dag->out_off[u]; k < dag->out_off[u + 1]; k++) {
            int e = dag->out_e[k];
            long t = sv->ls[dag->ev[e]] - sv->lagq[e];
            if (t < sv->lf[u])
                sv->lf[u] = t;
        }
        sv->ls[u] = sv->lf[u] - sv->d[u];
    }
    return T;
}

static long cpm(kr__solver *sv)
{
    return cpm_pass(sv, 0);
}

/*
 * The forward CPM of the exact step: the cut changed the durations of a few ops, and no
 * earliest start before the first of them in topological order (sv->cpm_p0) can change, so
 * the pass starts there, each start pulled from its predecessors' finishes (the same integer
 * maxima as cpm_pass's pushes, initial 0 included). On (32,256) it skips about half of the
 * graph per step. Needs es and ef consistent with the durations before the cut (cpm_pass, then
 * kr__ex_relax, which moves no start).
 */
static void cpm_from(kr__solver *sv)
{
    const int *topo = sv->dag->topo, *ioff = sv->dag->in_off, *ipred = sv->ipred;
    const long *ilag = sv->ilagq, *d = sv->d;
    long *es = sv->es, *ef = sv->ef;
    for (int i = sv->cpm_p0; i < sv->n; i++) {
        int w = topo[i];
        long st = 0;
        for (int k = ioff[w]; k < ioff[w + 1]; k++) {
            long f = ef[ipred[k]] + ilag[k];
            if (f > st)
                st = f;
        }
        es[w] = st;
        ef[w] = st + d[w];
    }
    sv->relax_p0 = sv->cpm_p0;
    sv->cpm_p0 = sv->n;
}

/* sv->osucc, olagq, olags from the DAG's out-edges and sv->lagq, and sv->vopt from sv->gidx;
 * KR_ENOMEM. */
static int edge_rows(kr__solver *sv)
{
    const kr_dag *dag = sv->dag;
    size_t m = (size_t)(dag->nedges > 0 ? dag->nedges : 1);
    sv->osucc = malloc(sizeof(int) * m);
    sv->olagq = malloc(sizeof(long) * m);
    sv->olags = malloc(sizeof(double) * m);
    sv->ipred = malloc(sizeof(int) * m);
    sv->ilagq = malloc(sizeof(long) * m);
    sv->ilags = malloc(sizeof(double) * m);
    sv->vopt = calloc((size_t)sv->n, sizeof *sv->vopt);
    sv->fw_rt = calloc(3 * (size_t)sv->n, sizeof(double));
    sv->fw_knob = calloc(2 * (size_t)sv->n, sizeof(int));
    if (!sv->osucc || !sv->olagq || !sv->olags || !sv->ipred || !sv->ilagq || !sv->ilags || !sv->vopt || !sv->fw_rt ||
        !sv->fw_knob)
        return KR_ENOMEM;
    sv->rec_knob = sv->fw_knob + sv->n;
    sv->fw_es = sv->fw_rt + sv->n;
    sv->fw_pmax = sv->fw_es + sv->n;
    for (int k = 0; k < dag->nedges; k++) {
        int e = dag->in_e[k];
        sv->ipred[k] = dag->eu[e];
        sv->ilagq[k] = sv->lagq[e];
        sv->ilags[k] = dag->lag_s[e];
    }
    sv->cpm_p0 = sv->final_p0 = sv->n;
    sv->relax_p0 = 0;
    sv->relax_lo = malloc(sizeof(int) * ((size_t)sv->n + 1));
    if (!sv->relax_lo)
        return KR_ENOMEM;
    sv->relax_lo[sv->n] = sv->n;
    for (int i = sv->n - 1; i >= 0; i--) {
        int w = dag->topo[i], lo = KR_MIN(i, sv->relax_lo[i + 1]);
        for (int k = dag->in_off[w]; k < dag->in_off[w + 1]; k++)
            lo = KR_MIN(lo, sv->tpos[sv->ipred[k]]);
        sv->relax_lo[i] = lo;
    }
    for (int v = 2; v < sv->n; v++)
        sv->vopt[v] = sv->opts->sets[sv->gidx[v]].opt;
    for (int k = 0; k < dag->nedges; k++) {
        int e = dag->out_e[k];
        sv->osucc[k] = dag->ev[e];
        sv->olagq[k] = sv->lagq[e];
        sv->olags[k] = dag->lag_s[e];
    }
    return KR_OK;
}

int kr__sv_setup(kr__solver *sv, kr_error *err)
{
    const kr_dag *dag = sv->dag;
    const kr_options *opts = sv->opts;
    const kr_solver_config *cfg = &sv->cfg;
    int n = dag->n, N = 2 * n, A = n + dag->nedges;
    sv->n = n;
    sv->gidx = malloc(sizeof(int) * (size_t)n);
    sv->lagq = calloc((size_t)(dag->nedges > 0 ? dag->nedges : 1), sizeof(long));
    sv->d = calloc((size_t)n, sizeof(long));
    sv->es = malloc(sizeof(long) * (size_t)n);
    sv->ef = malloc(sizeof(long) * (size_t)n);
    sv->ls = malloc(sizeof(long) * (size_t)n);
    sv->lf = malloc(sizeof(long) * (size_t)n);
    sv->rt = malloc(sizeof(double) * (size_t)n);
    sv->res = malloc(sizeof(double) * (size_t)n);
    sv->rlf = malloc(sizeof(double) * (size_t)n);
    sv->knob = calloc((size_t)n, sizeof(int));
    sv->kbak = calloc((size_t)n, sizeof(int));
    sv->crit = malloc((size_t)n);
    sv->bfree = calloc((size_t)n, 1);
    sv->bbuf = malloc(sizeof(double) * 3 * (size_t)n);
    sv->tpos = malloc(sizeof(int) * (size_t)n);
    sv->bq = malloc(sizeof(int) * (size_t)n);
    sv->win_in = malloc(sizeof(int) * 2 * (size_t)n);
    if (sv->win_in)
        sv->win_out = sv->win_in + n;
    sv->mark = malloc((size_t)N + 2);
    sv->lb = malloc(sizeof(int64_t) * (size_t)A);
    sv->ub = malloc(sizeof(int64_t) * (size_t)A);
    sv->bal = malloc(sizeof(int64_t) * (size_t)N * 2);
    sv->incut = malloc((size_t)A);
    sv->ngroups = opts->nsets;
    sv->groups = calloc((size_t)opts->nsets, sizeof *sv->groups);
    if (!sv->gidx || !sv->lagq || !sv->d || !sv->es || !sv->ef || !sv->ls || !sv->lf || !sv->rt || !sv->res ||
        !sv->rlf || !sv->knob || !sv->kbak || !sv->crit || !sv->bfree || !sv->bbuf || !sv->tpos || !sv->bq || !sv->win_in || !sv->mark || !sv->lb || !sv->ub || !sv->bal || !sv->incut || !sv->groups)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    sv->gidx[KR_DAG_SOURCE] = sv->gidx[KR_DAG_SINK] = -1;
    for (int i = 0; i < n; i++)
        sv->tpos[dag->topo[i]] = i;
    for (int v = 2; v < n; v++) {
        const kr_dag_node *nd = &dag->node[v];
        int gi = kr_options_index(opts, nd->stage, nd->kind, nd->chunk);
        char lbl[48];
        if (gi < 0 || opts->sets[gi].n == 0)
            return kr_error_set(err, KR_EINVAL, "solver: instruction %s: expected options for stage %d %s (chunk %d), found %s",
                                kr_dag_label(dag, v, lbl, sizeof lbl), nd->stage, kr_instr_kind_name(nd->kind), nd->chunk,
                                gi < 0 ? "no such stage/chunk in the options" : "none");
        sv->gidx[v] = gi;
    }
    for (int e = 0; e < dag->nedges; e++) {
        if (dag->lag_s[e] > 0 && cfg->cost_model == KR_COST_LOWTIME)
            return kr_error_set(err, KR_EINVAL,
                                "solver: the lowtime cost model has no edge lags (lowtime models p2p as free), found a "
                                "lag of %g s; use the exact cost model",
                                dag->lag_s[e]);
        sv->lagq[e] = (long)ceil(dag->lag_s[e] / cfg->unit_time_s - 1e-9);
        if (sv->lagq[e] < 0)
            sv->lagq[e] = 0;
    }
    if (edge_rows(sv))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    /* Fit or hull each option set that some node uses. */
    char *used = calloc((size_t)opts->nsets, 1);
    if (used == NULL)
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    for (int v = 2; v < n; v++)
        used[sv->gidx[v]] = 1;
    int rc = KR_OK;
    for (int g = 0; g < opts->nsets && rc == KR_OK; g++) {
        sv->groups[g].set = &opts->sets[g];
        if (!used[g])
            continue;
        rc = cfg->cost_model == KR_COST_LOWTIME ? kr__cost_lowtime(&sv->groups[g], cfg, err)
                                                : kr__cost_exact(&sv->groups[g], cfg, err);
        if (rc == KR_OK)
            rc = kr__cost_pareto(&sv->groups[g], cfg->static_power_w, err);
    }
    free(used);
    return rc;
}

int kr_solve(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out, kr_error *err)
{
    return kr__sv_solve(dag, opts, cfg, out, 0, err);
}

static int check_config(const kr_dag *dag, const kr_solver_config *cfg, kr_error *err)
{
    if (!(cfg->unit_time_s > 0) || !isfinite(cfg->unit_time_s))
        return kr_error_set(err, KR_EINVAL, "solver: expected a unit time > 0 s, found %g", cfg->unit_time_s);
    if (!(cfg->static_power_w >= 0) || !isfinite(cfg->static_power_w))
        return kr_error_set(err, KR_EINVAL, "solver: expected a static power >= 0 W, found %g", cfg->static_power_w);
    if (cfg->gpus_per_stage < 1)
        return kr_error_set(err, KR_EINVAL, "solver: expected >= 1 GPU per stage, found %d", cfg->gpus_per_stage);
    if (cfg->cost_model != KR_COST_EXACT && cfg->cost_model != KR_COST_LOWTIME)
        return kr_error_set(err, KR_EINVAL, "solver: unknown cost model %d", (int)cfg->cost_model);
    if (!dag->finalized)
        return kr_error_set(err, KR_EINVAL, "solver: the DAG is not finalized (kr_dag_finalize)");
    return KR_OK;
}

/* One Phillips–Dessouky step on the current durations: the cut, the duration change and the
 * new quantized makespan in *T. Returns 1 with the cost change in *change, 0 when the run
 * ends (out->stop_reason set where it is not the normal end). */
static int step_once(kr__solver *sv, kr_solve_result *out, double *change, long *T)
{
    if (sv->cfg.cost_model == KR_COST_LOWTIME) {
        if (!kr__lt_cut(sv)) {
            out->stop_reason = 2;
            return 0;
        }
        *change = kr__lt_apply(sv);
        if (*change == INFINITY || fabs(*change) < KR__LT_EPS)
            return 0;
        *T = cpm(sv);
        return 1;
    }
    int64_t cut = kr__ex_cut(sv);
    if (cut >= KR__EX_INF / 2)
        return 0;
    kr__ex_apply(sv);
    cpm_from(sv);
    *T = kr__ex_relax(sv); /* keeps every start time; updates ef of the ops it lengthens */
    *change = (double)cut / KR__EX_SCALE;
    return 1;
}

/*
 * The recorder: where trace() sends each step. Recording a step (record() in steps.c: the
 * knobs of its durations, the rounding passes, a real-time critical path, the plan) reads only
 * the durations and state no cut touches (knobs, real-time scratch, the window search's), so
 * with two threads it runs beside the cuts: trace() copies the durations into a ring of
 * snapshots and goes on to the next cut; the recording thread takes them in order. The steps,
 * plans and knobs left behind are those of one thread (the same function on the same
 * durations, in the same order). On (32,256) a step's cut is about 3/4 of its time and its
 * record 1/4 (docs/solver.md, issue 15 round 7).
 */
#define REC_RING 8

typedef struct rec {
    kr__solver *sv;
    kr_solve_result *out;
    size_t *scap;
    long pushed;          /* Steps handed over (the step count once recorded). */
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, room;
    long *d;              /* REC_RING snapshots of n durations. */
    long T[REC_RING];
    double change[REC_RING];
    long head, tail;      /* Snapshots written, recorded (under mu). */
    int closed;           /* No more snapshots (under mu). */
    int rc;               /* The recording thread's first error (under mu), its text in err. */
    kr_error err;
} rec;

static void *rec_main(void *arg)
{
    rec *r = arg;
    int n = r->sv->n;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (r->tail == r->head && !r->closed)
            pthread_cond_wait(&r->more, &r->mu);
        if (r->tail == r->head) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        long k = r->tail % REC_RING;
        int failed = r->rc;
        pthread_mutex_unlock(&r->mu);
        int rc = failed ? failed
                        : kr__step_push(r->out, r->sv, r->scap, r->change[k], r->T[k], r->d + k * (long)n, &r->err);
        pthread_mutex_lock(&r->mu);
        r->rc = rc;
        r->tail++;
        pthread_cond_signal(&r->room);
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

/* Starts the recording thread where the configuration asks for it (a failed start: one
 * thread). */
static void rec_open(rec *r, kr__solver *sv, kr_solve_result *out, size_t *scap)
{
    memset(r, 0, sizeof *r);
    r->sv = sv;
    r->out = out;
    r->scap = scap;
    const kr_solver_config *cfg = &sv->cfg;
    int want = cfg->threads;
    if (want == 0)
        want = sv->n - 2 >= KR_SOLVE_THREAD_OPS && sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
    if (want < 2 || cfg->cost_model != KR_COST_EXACT || sv->relax_only)
        return;
    r->d = malloc(sizeof(long) * REC_RING * (size_t)sv->n);
    if (r->d == NULL)
        return;
    if (pthread_mutex_init(&r->mu, NULL))
        goto no_mu;
    if (pthread_cond_init(&r->more, NULL))
        goto no_more;
    if (pthread_cond_init(&r->room, NULL))
        goto no_room;
    if (pthread_create(&r->thread, NULL, rec_main, r) == 0) {
        r->threaded = 1;
        return;
    }
    pthread_cond_destroy(&r->room);
no_room:
    pthread_cond_destroy(&r->more);
no_more:
    pthread_mutex_destroy(&r->mu);
no_mu:
    free(r->d);
    r->d = NULL;
}

/* Records the step of the current durations (or hands it to the recording thread). */
static int rec_push(rec *r, double change, long T, kr_error *err)
{
    kr__solver *sv = r->sv;
    r->pushed++;
    if (!r->threaded)
        return kr__step_push(r->out, sv, r->scap, change, T, sv->d, err);
    pthread_mutex_lock(&r->mu);
    while (r->head - r->tail == REC_RING && !r->rc)
        pthread_cond_wait(&r->room, &r->mu);
    int rc = r->rc;
    pthread_mutex_unlock(&r->mu);
    if (rc)
        return rc; /* the error text is copied by rec_close */
    long k = r->head % REC_RING;
    memcpy(r->d + k * (long)sv->n, sv->d, sizeof(long) * (size_t)sv->n);
    r->T[k] = T;
    r->change[k] = change;
    pthread_mutex_lock(&r->mu);
    r->head++;
    pthread_cond_signal(&r->more);
    pthread_mutex_unlock(&r->mu);
    return KR_OK;
}

/* Waits for every step to be recorded and stops the thread; returns the first error (rc: the
 * trace's own). */
static int rec_close(rec *r, int rc, kr_error *err)
{
    if (!r->threaded)
        return rc;
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_cond_signal(&r->more);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->room);
    pthread_cond_destroy(&r->more);
    pthread_mutex_destroy(&r->mu);
    free(r->d);
    r->d = NULL;
    r->threaded = 0;
    if (r->rc && err)
        *err = r->err;
    return r->rc ? r->rc : rc;
}

/* The quantized steps from every op at its longest duration down to the end of the run. */
static int trace(kr__solver *sv, kr_solve_result *out, size_t *scap, kr_error *err)
{
    const kr_solver_config *cfg = &sv->cfg;
    for (int v = 2; v < sv->n; v++)
        sv->d[v] = sv->groups[sv->gidx[v]].dmax;
    if (cfg->cost_model == KR_COST_EXACT && kr__ex_build(sv))
        return kr_error_set(err, KR_ENOMEM, "solver: out of memory");
    long T = cpm(sv);
    if (cfg->cost_model == KR_COST_EXACT) {
        kr__ex_relax(sv);
        T = cpm(sv);
    }
    rec r;
    rec_open(&r, sv, out, scap);
    int rc = rec_push(&r, 0.0, T, err);
    while (rc == KR_OK) {
        if (cfg->max_steps > 0 && r.pushed > cfg->max_steps) {
            out->stop_reason = 1;
            break;
        }
        double change;
        if (!step_once(sv, out, &change, &T))
            break;
        rc = rec_push(&r, change, T, err);
    }
    return rec_close(&r, rc, err);
}

int kr__sv_solve(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg, kr_solve_result *out,
                 int relax_only, kr_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_config(dag, cfg, err);
    if (rc)
        return rc;
    kr__solver sv;
    memset(&sv, 0, sizeof sv);
    sv.dag = dag;
    sv.opts = opts;
    sv.cfg = *cfg;
    sv.relax_only = relax_only;
    double t0 = kr__now_s();
    if ((rc = kr__sv_setup(&sv, err)))
        goto done;
    out->cost_model = cfg->cost_model;
    out->unit_time_s = cfg->unit_time_s;
    out->static_power_w = cfg->static_power_w;
    out->gpus_per_stage = cfg->gpus_per_stage;
    out->num_stages = opts->num_stages;
    out->nops = dag->n - 2;
    double t1 = kr__now_s();
    out->setup_s = t1 - t0;
    size_t scap = 0;
    if ((rc = trace(&sv, out, &scap, err)))
        goto done;
    if (cfg->cost_model == KR_COST_EXACT && out->stop_reason == 0 && !relax_only &&
        ((rc = kr__step_tail(out, &sv, &scap, err)) || (rc = kr__step_fastest(out, &sv, &scap, err))))
        goto done;
    /* The polish where the exchange passes run (polish 0) or where asked (1). */
    if (cfg->cost_model == KR_COST_EXACT && !relax_only && cfg->final_pass &&
        (cfg->polish > 0 || (cfg->polish == 0 && kr__exchange_runs(cfg, sv.n - 2))) &&
        (rc = kr__step_polish(out, &sv, err)))
        goto done;
    for (int k = 0; k < out->nsteps; k++) {
        out->steps[k].bound_j = INFINITY;
        out->steps[k].gap = NAN;
    }
    if (!relax_only && cfg->bound_refine >= 0 && (rc = kr__bound_attach(out, dag, opts, cfg, err)))
        goto done;
    if (!relax_only && (rc = kr__step_mark_dominated(out, err)))
        goto done;
    out->solve_s = kr__now_s() - t1;
done:
    kr__sv_free(&sv);
    if (rc)
        kr_solve_result_free(out);
    return rc;
}
