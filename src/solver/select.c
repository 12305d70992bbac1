/*
 * select.c — choosing steps of an iteration frontier (fastest, most frugal, spread, deadline,
 * budget, the artifact's 10-point rule) and turning a step into a plan (see solver.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/solver.h"
#include "util/util.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Appends v unless present. */
static int add(int *steps, int *n, int cap, int v, kr_error *err)
{
    for (int i = 0; i < *n; i++)
        if (steps[i] == v)
            return KR_OK;
    if (*n >= cap)
        return kr_error_set(err, KR_ERANGE, "select: more than %d steps chosen", cap);
    steps[(*n)++] = v;
    return KR_OK;
}

/* Pareto-optimal steps in (time, energy), time ascending; returns their count. */
static int pareto(const kr_solve_result *f, int *out)
{
    int n = f->nsteps;
    int *ord = out;
    for (int i = 0; i < n; i++)
        ord[i] = i;
    /* Sort by time, then energy. Steps come slowest first and nearly time-ordered, so reverse
     * them and finish with an insertion sort (near-linear here). */
    for (int i = 0; i < n / 2; i++) {
        int t = ord[i];
        ord[i] = ord[n - 1 - i];
        ord[n - 1 - i] = t;
    }
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        while (j >= 0 && (f->steps[ord[j]].time_s > f->steps[x].time_s ||
                          (f->steps[ord[j]].time_s == f->steps[x].time_s && f->steps[ord[j]].energy_j > f->steps[x].energy_j))) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    int k = 0;
    double best = INFINITY;
    for (int i = 0; i < n; i++)
        if (f->steps[ord[i]].energy_j < best) {
            best = f->steps[ord[i]].energy_j;
            ord[k++] = ord[i];
        }
    return k;
}

static int parse_num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* One selection: the frontier, its Pareto steps (time ascending) and the steps chosen. */
typedef struct sel {
    const kr_solve_result *f;
    const int *par;
    int npar;
    int *steps, n, cap;
} sel;

/* The artifact's 10-point rule. The artifact samples lowtime's frontier, which runs from the
 * energy-minimal plan to the fastest; steps slower than the energy-minimal plan (they cost
 * both time and energy) are not part of it, so sampling starts there. */
static int sel_artifact10(sel *s, kr_error *err)
{
    const kr_solve_result *f = s->f;
    int first = 1, rc = KR_OK;
    for (int i = 2; i < f->nsteps; i++)
        if (f->steps[i].energy_j < f->steps[first].energy_j)
            first = i;
    int N = f->nsteps - first; /* solver plans = steps first..nsteps-1 */
    if (N < 1)
        return KR_OK;
    int stride = (N + 14) / 15, idx[15], k = 0;
    for (int i = N - 1; i >= 0 && k < 15; i -= stride)
        idx[k++] = i;
    qsort(idx, (size_t)k, sizeof(int), cmp_int);
    for (int p = 0; p < k && rc == KR_OK; p++)
        if (!(p <= 8 && p % 2 == 0))
            rc = add(s->steps, &s->n, s->cap, idx[p] + first, err);
    return rc;
}

/* deadline=S: the cheapest Pareto step within S seconds. */
static int sel_deadline(sel *s, const char *arg, kr_error *err)
{
    double v;
    if (parse_num(arg, &v) || v <= 0)
        return kr_error_set(err, KR_EPARSE, "select: deadline: expected seconds > 0, found '%s'", arg);
    int pick = -1;
    for (int i = 0; i < s->npar; i++)
        if (s->f->steps[s->par[i]].time_s <= v)
            pick = s->par[i]; /* later Pareto points are slower and cheaper */
    if (pick < 0)
        return kr_error_set(err, KR_ERANGE, "select: no plan meets the deadline %g s (fastest: %.6g s)", v,
                            s->f->steps[s->par[0]].time_s);
    return add(s->steps, &s->n, s->cap, pick, err);
}

/* budget=J: the fastest Pareto step within J joules. */
static int sel_budget(sel *s, const char *arg, kr_error *err)
{
    double v;
    if (parse_num(arg, &v) || v <= 0)
        return kr_error_set(err, KR_EPARSE, "select: budget: expected joules > 0, found '%s'", arg);
    int pick = -1;
    for (int i = s->npar - 1; i >= 0; i--)
        if (s->f->steps[s->par[i]].energy_j <= v)
            pick = s->par[i];
    if (pick < 0)
        return kr_error_set(err, KR_ERANGE, "select: no plan fits the energy budget %g J (most frugal: %.6g J)", v,
                            s->f->steps[s->par[s->npar - 1]].energy_j);
    return add(s->steps, &s->n, s->cap, pick, err);
}

/* N: the Pareto steps nearest to N evenly spaced times from the fastest to the most frugal. */
static int sel_spread(sel *s, int k, kr_error *err)
{
    const kr_solve_result *f = s->f;
    const int *par = s->par;
    int npar = s->npar, rc = KR_OK;
    double t0 = f->steps[par[0]].time_s, t1 = f->steps[par[npar - 1]].time_s;
    for (int i = 0; i < k && rc == KR_OK; i++) {
        double target = k == 1 ? t0 : t0 + (t1 - t0) * i / (k - 1);
        int best = par[0];
        for (int j = 0; j < npar; j++)
            if (fabs(f->steps[par[j]].time_s - target) < fabs(f->steps[best].time_s - target))
                best = par[j];
        rc = add(s->steps, &s->n, s->cap, best, err);
    }
    return rc;
}

/* One rule of the list. */
static int sel_rule(sel *s, const char *tok, kr_error *err)
{
    double v;
    int rc = KR_OK;
    if (strcmp(tok, "fastest") == 0)
        return add(s->steps, &s->n, s->cap, s->par[0], err);
    if (strcmp(tok, "frugal") == 0)
        return add(s->steps, &s->n, s->cap, s->par[s->npar - 1], err);
    if (strcmp(tok, "all") == 0) {
        for (int i = 0; i < s->f->nsteps && rc == KR_OK; i++)
            rc = add(s->steps, &s->n, s->cap, i, err);
        return rc;
    }
    if (strcmp(tok, "artifact10") == 0)
        return sel_artifact10(s, err);
    if (strncmp(tok, "deadline=", 9) == 0)
        return sel_deadline(s, tok + 9, err);
    if (strncmp(tok, "budget=", 7) == 0)
        return sel_budget(s, tok + 7, err);
    if (parse_num(tok, &v) == 0 && v >= 1 && v == floor(v) && v <= 100000)
        return sel_spread(s, (int)v, err);
    return kr_error_set(err, KR_EPARSE,
                        "select: expected fastest, frugal, all, artifact10, N, deadline=S or budget=J, found '%s'", tok);
}

int kr_solve_select(const kr_solve_result *f, const char *rules, int *steps, int cap, kr_error *err)
{
    if (f->nsteps < 1)
        return kr_error_set(err, KR_EINVAL, "select: the frontier has no steps");
    char buf[1024];
    if (kr__strlcpy(buf, rules, sizeof buf))
        return kr_error_set(err, KR_EPARSE, "select: rule list too long (at most %zu characters)", sizeof buf - 1);
    int rc = KR_OK;
    int *par = malloc(sizeof(int) * (size_t)f->nsteps);
    if (par == NULL)
        return kr_error_set(err, KR_ENOMEM, "select: out of memory");
    sel s = {f, par, pareto(f, par), steps, 0, cap};
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && rc == KR_OK; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        rc = sel_rule(&s, tok, err);
    }
    free(par);
    if (rc)
        return rc;
    qsort(steps, (size_t)s.n, sizeof(int), cmp_int);
    return s.n;
}

int kr_solve_plan(const kr_solve_result *f, const kr_dag *dag, const kr_options *opts, int step, const kr_job *job,
                  kr_plan *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (step < 0 || step >= f->nsteps)
        return kr_error_set(err, KR_ERANGE, "plan: expected a step in [0, %d], found %d", f->nsteps - 1, step);
    int S = opts->num_stages;
    if (S > KR_MAX_STAGES)
        return kr_error_set(err, KR_ERANGE, "plan: more than %d stages", KR_MAX_STAGES);
    int counts[KR_MAX_STAGES] = {0};
    for (int v = 2; v < dag->n; v++) {
        int s = dag->node[v].stage;
        if (s < 0 || s >= S)
            return kr_error_set(err, KR_EMISMATCH, "plan: DAG node %d is on stage %d, the options have %d stages", v, s, S);
        counts[s]++;
    }
    int rc;
    if (job) {
        if (job->pp != S || job->num_microbatches != dag->num_microbatches)
            return kr_error_set(err, KR_EMISMATCH,
                                "plan: job '%s' has %d stages and %d microbatches, the frontier %d and %d", job->name,
                                job->pp, job->num_microbatches, S, dag->num_microbatches);
        if ((rc = kr_plan_init(out, job, counts, err)))
            return rc;
    } else {
        kr_job j;
        kr_job_default(&j);
        j.pp = S;
        j.num_microbatches = dag->num_microbatches;
        j.schedule = dag->schedule;
        j.virtual_stages = dag->virtual_stages > 0 ? dag->virtual_stages : 1;
        if ((rc = kr_plan_init(out, &j, counts, err)))
            return rc;
        /* No job: no identity to claim. */
        out->job_name[0] = out->job_fingerprint[0] = out->gpu[0] = out->model[0] = '\0';
    }
    int fill[KR_MAX_STAGES] = {0}, has_comm = 0;
    int *opt = malloc(sizeof(int) * (size_t)(f->nops > 0 ? f->nops : 1));
    if (opt == NULL || kr_solve_result_config(f, step, opt) != KR_OK) {
        int code = opt ? KR_ERANGE : KR_ENOMEM;
        free(opt);
        kr_plan_free(out);
        return kr_error_set(err, code, "plan: no plan stored for step %d", step);
    }
    /* Nodes are numbered stage by stage in execution order; keep that order per stage. */
    for (int v = 2; v < dag->n; v++) {
        const kr_dag_node *nd = &dag->node[v];
        const kr_option_set *set = kr_options_get(opts, nd->stage, nd->kind, nd->chunk);
        int k = v - 2 < f->nops ? opt[v - 2] : -1;
        if (set == NULL || k < 0 || k >= set->n) {
            free(opt);
            kr_plan_free(out);
            return kr_error_set(err, KR_EMISMATCH, "plan: node %d has no option %d in its set", v, k);
        }
        const kr_option *o = &set->opt[k];
        kr_plan_instr *in = &out->stages[nd->stage].instr[fill[nd->stage]++];
        in->kind = nd->kind;
        in->microbatch = nd->microbatch;
        in->chunk = nd->chunk;
        in->freq_mhz = o->freq_mhz;
        in->time_s = o->time_s;
        in->energy_j = o->energy_j;
        in->ncomm = o->ncomm;
        for (int c = 0; c < o->ncomm; c++)
            in->comm[c] = opts->comm[o->comm_first + c];
        has_comm |= o->ncomm > 0;
    }
    free(opt);
    kr__strlcpy(out->method, has_comm ? "kareus" : "perseus", sizeof out->method);
    kr__strlcpy(out->variant, has_comm ? "kareus" : "sequential", sizeof out->variant);
    kr__strlcpy(out->cost_model, kr_cost_model_name(f->cost_model), sizeof out->cost_model);
    out->unit_time_s = f->unit_time_s;
    out->step = step;
    out->pred_time_s = f->steps[step].knob_time_s; /* the real time of the knobs it runs */
    out->pred_energy_j = f->steps[step].energy_j;
    out->pred_eff_energy_j = f->steps[step].eff_energy_j;
    out->pred_bound_j = isfinite(f->steps[step].bound_j) ? f->steps[step].bound_j : 0;
    return KR_OK;
}
