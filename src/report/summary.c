/*
 * summary.c — summary.json (schema "kareus.summary", version 1), the record of an optimize run
 * that `kareus report` rebuilds the page from: its writer and its reader, from one field table
 * (util.h, "JSON field tables"), which also describes the format (`kareus report format`).
 *
 * The writer first turns a kr_optimize_result into the file's own struct (summary.h), field for
 * field, then writes that struct with the table; the reader reads a file into the same struct.
 * Every number may be null (a metric no plan qualifies for), so numbers read as NaN when null or
 * absent; the lists and the optional objects may be absent, and the page then leaves their
 * section out.
 */
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/report.h"
#include "util/util.h"

/* ---- hooks ------------------------------------------------------------------------------ */

/* A number that may be null: null or absent reads as NaN (NaN is written as null). */
static int nnum_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    double *out = (double *)((char *)base + f->off);
    const json_t *v = json_object_get(obj, f->key);
    if (v == NULL || json_is_null(v)) {
        *out = NAN;
        return KR_OK;
    }
    return kr__jnum(c, obj, f->key, 0, f->lo, f->hi, NAN, out);
}

/* The same, left out of the file when NaN (the solver's bound of a plan without one). */
static int onum_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w;
    double v = *(const double *)((const char *)base + f->off);
    *out = isfinite(v) ? json_real(v) : NULL;
    return KR_OK;
}

/* A long long counter (search sizes, the seed); the optional one is left out when 0. */
static int i64_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    return kr__jint(c, obj, f->key, f->flags & KR__JREQ, (long long)f->lo, (long long)f->hi, 0,
                    (long long *)((char *)base + f->off));
}

static int i64_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w;
    *out = json_integer((json_int_t) * (const long long *)((const char *)base + f->off));
    return KR_OK;
}

static int oi64_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    long long v = *(const long long *)((const char *)base + f->off);
    return v == 0 ? KR_OK : i64_write(w, f, base, out);
}

/* An optional object: its flag (at off) says whether the file has it. */
static int oobj_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    int *has = (int *)((char *)base + f->off);
    *has = v != NULL;
    return v == NULL ? KR_OK : kr__jtable_read_key(c, v, f->key, f->sub, base);
}

static int oobj_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    if (!*(const int *)((const char *)base + f->off))
        return KR_OK;
    return kr__jtable_write(w, f->sub, base, out);
}

/*
 * A list of objects: an array member of cap entries of size bytes at off, its count at
 * count_off (-1: the file has no such list). The table of the entries comes first, so the
 * field's sub (the entries' table, for the description) leads back to the whole descriptor.
 */
typedef struct list_desc {
    kr__jtable entry;
    size_t size, count_off;
    int cap;
} list_desc;

static int list_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const list_desc *d = (const list_desc *)f->sub;
    int *count = (int *)((char *)base + d->count_off);
    const json_t *arr = json_object_get(obj, f->key);
    *count = -1;
    if (arr == NULL)
        return KR_OK;
    if (!json_is_array(arr))
        return kr__jfail(c, KR_EPARSE, f->key, "an array of objects", arr);
    size_t mk = kr__jpush_key(c, f->key);
    if (json_array_size(arr) > (size_t)d->cap)
        return kr__jfailf(c, KR_ERANGE, NULL, "expected at most %d entries, found %zu", d->cap, json_array_size(arr));
    for (size_t i = 0; i < json_array_size(arr); i++) {
        size_t m = kr__jpush_idx(c, i);
        int rc = kr__jtable_read(c, json_array_get(arr, i), &d->entry, (char *)base + f->off + i * d->size);
        if (rc)
            return rc;
        kr__jpop(c, m);
    }
    kr__jpop(c, mk);
    *count = (int)json_array_size(arr);
    return KR_OK;
}

static int list_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    const list_desc *d = (const list_desc *)f->sub;
    int n = *(const int *)((const char *)base + d->count_off);
    *out = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o;
        int rc = kr__jtable_write(w, &d->entry, (const char *)base + f->off + (size_t)i * d->size, &o);
        if (rc)
            return rc;
        json_array_append_new(*out, o);
    }
    return KR_OK;
}

static const kr__jhook nnum_hook = {nnum_read, NULL, NULL, NULL, "any, or null", "null"};
static const kr__jhook onum_hook = {nnum_read, onum_write, NULL, NULL, "any", "(written when there is a bound)"};
static const kr__jhook i64_hook = {i64_read, i64_write, NULL, "integer", "any", "0"};
static const kr__jhook oi64_hook = {i64_read, oi64_write, NULL, "integer", "any", "(written when not 0)"};
static const kr__jhook oobj_hook = {oobj_read, oobj_write, NULL, "object", NULL, "(optional)"};
static const kr__jhook list_hook = {list_read, list_write, NULL, "array", NULL, "[] (optional)"};

/* ---- the table ----------------------------------------------------------------------------- */

#define BIG 1e300
#define NUMX(T, m, key, hook, doc)                                                                \
    {(key), KR__JT_NUM, 0, offsetof(T, m), 0, -BIG, BIG, NAN, NULL, NULL, NULL, NULL, (hook), (doc)}
#define NUM(T, m, key, doc) NUMX(T, m, key, &nnum_hook, doc)
#define ONUM(T, m, key, doc) NUMX(T, m, key, &onum_hook, doc)
#define I64(T, m, key, hook, doc)                                                                 \
    {(key), KR__JT_HOOK, 0, offsetof(T, m), 0, -9.2e18, 9.2e18, 0, NULL, NULL, NULL, NULL, (hook), (doc)}
#define STR(T, m, key, doc) KR__JF_STR(T, m, key, 0, "", NULL, doc)
#define OOBJ(T, flag, key, sub, doc)                                                              \
    {(key), KR__JT_OBJ, 0, offsetof(T, flag), 0, 0, 0, 0, NULL, NULL, NULL, (sub), &oobj_hook, (doc)}
#define LIST(T, arr, key, desc, doc) KR__JF_HOOK(key, 0, offsetof(T, arr), &(desc).entry, &list_hook, doc)
#define LIST_DESC(T, arr, cnt, fields)                                                            \
    {KR__JTABLE(fields), sizeof(((T *)0)->arr[0]), offsetof(T, cnt), (int)KR_ARRAY_LEN(((T *)0)->arr)}

/* methods[].fastest and .frugal: the same fields at two places of the method. */
#define CHOSEN_FIELDS(p)                                                                          \
    NUM(kr__sum_method, p.time_s, "time_s", "simulated iteration time, s"),                       \
        NUM(kr__sum_method, p.energy_j, "energy_j", "simulated energy of the cluster per iteration, J"), \
        STR(kr__sum_method, p.file, "file", "the plan file, relative to the directory"),          \
        ONUM(kr__sum_method, p.bound_j, "bound_j", "the solver's lower bound on its predicted energy, J"), \
        ONUM(kr__sum_method, p.gap, "gap", "predicted energy / bound_j - 1"),                     \
        STR(kr__sum_method, p.source, "source", "whose solver step it is: the method's slug, or \"n+p\" for a step " \
            "Kareus takes from Nanobatching+Perseus")

static const kr__jfield fastest_fields[] = {CHOSEN_FIELDS(fastest)};
static const kr__jfield frugal_fields[] = {CHOSEN_FIELDS(frugal)};
static const kr__jtable fastest_table = KR__JTABLE(fastest_fields);
static const kr__jtable frugal_table = KR__JTABLE(frugal_fields);

static const kr__jfield point_fields[] = {
    KR__JF_INT(kr__sum_point, step, "step", 0, -1, 1 << 30, 0, "the solver's step"),
    NUM(kr__sum_point, time_s, "time_s", "simulated iteration time, s"),
    NUM(kr__sum_point, energy_j, "energy_j", "simulated energy of the cluster per iteration, J"),
    STR(kr__sum_point, file, "file", "the plan file, relative to the directory"),
    STR(kr__sum_point, source, "source", "whose solver step it is (as fastest.source)"),
};
static const list_desc point_list = LIST_DESC(kr__sum_method, ten, nten, point_fields);

static const kr__jfield method_fields[] = {
    STR(kr__sum_method, name, "name", "the method: Megatron, Perseus, Nanobatching, Nanobatching+Perseus or Kareus"),
    STR(kr__sum_method, slug, "slug", "its name in file names"),
    STR(kr__sum_method, variant, "variant", "its execution variant"),
    STR(kr__sum_method, execution, "execution", "how it executes a partition, in words"),
    STR(kr__sum_method, clocks, "clocks", "how it chooses clocks, in words"),
    KR__JF_INT(kr__sum_method, steps, "steps", 0, 0, 1 << 30, 0, "points of its frontier (1: a single plan)"),
    KR__JF_INT(kr__sum_method, steps_own, "steps_own", 0, 0, 1 << 30, 0,
               "of which from its own solve (Kareus: the others are Nanobatching+Perseus's steps, which its "
               "frontier takes where they are better)"),
    STR(kr__sum_method, frontier_csv, "frontier_csv", "its frontier file, relative to the directory"),
    KR__JF_OBJ("fastest", 0, &fastest_table, NULL, "its fastest plan"),
    KR__JF_OBJ("frugal", 0, &frugal_table, NULL, "its most frugal plan"),
    LIST(kr__sum_method, ten, "ten_point", point_list, "the plans of its 10-point frontier"),
    I64(kr__sum_method, search_evaluated, "search_evaluated", &i64_hook, "configurations its search used"),
    I64(kr__sum_method, search_space, "search_space", &i64_hook, "configurations in its search spaces"),
    NUM(kr__sum_method, solve_s, "solve_s", "solver wall time, s"),
};
static const list_desc method_list = LIST_DESC(kr__summary, methods, nmethods, method_fields);

static const kr__jfield row_fields[] = {
    STR(kr__sum_row, method, "method", "the method"),
    NUM(kr__sum_row, m.mt_time_red, "max_throughput_time_reduction", "fastest plan's time saved vs Megatron's"),
    NUM(kr__sum_row, m.mt_energy_red, "max_throughput_energy_reduction", "… and its energy saved"),
    NUM(kr__sum_row, m.iso_time_10pt, "iso_time_energy_reduction_10pt", "energy saved at iso-time vs Perseus, 10-point frontiers"),
    NUM(kr__sum_row, m.iso_energy_10pt, "iso_energy_time_reduction_10pt", "time saved at iso-energy vs Perseus, 10-point frontiers"),
    NUM(kr__sum_row, m.iso_time_full, "iso_time_energy_reduction_full", "energy saved at iso-time vs Perseus, full frontiers"),
    NUM(kr__sum_row, m.iso_energy_full, "iso_energy_time_reduction_full", "time saved at iso-energy vs Perseus, full frontiers"),
    NUM(kr__sum_row, m.robust_mean, "robust_mean", "mean energy saved over the common time range vs Perseus"),
    NUM(kr__sum_row, m.robust_max, "robust_max", "largest energy saved over that range"),
};
static const list_desc row_list = LIST_DESC(kr__summary, rows, nrows, row_fields);

static const kr__jfield vplan_fields[] = {
    STR(kr__sum_vplan, method, "method", "the method"),
    STR(kr__sum_vplan, label, "label", "the plan: max-clock, fastest, frugal or step-NNNNN"),
    STR(kr__sum_vplan, file, "file", "the plan file, relative to the directory"),
    NUM(kr__sum_vplan, pred_time_s, "predicted_time_s", "the solver's iteration time, s"),
    NUM(kr__sum_vplan, sim_time_s, "simulated_time_s", "the pipeline simulator's, s"),
    NUM(kr__sum_vplan, pred_energy_j, "predicted_energy_j", "the solver's cluster energy per iteration, J"),
    NUM(kr__sum_vplan, sim_energy_j, "simulated_energy_j", "the pipeline simulator's, J"),
};
static const list_desc vplan_list = LIST_DESC(kr__summary, vplans, nvplans, vplan_fields);

static const kr__jfield search_fields[] = {
    STR(kr__sum_search, variant, "variant", "the execution variant"),
    STR(kr__sum_search, key, "key", "the partition"),
    I64(kr__sum_search, measured, "measured", &i64_hook, "configurations the search used"),
    I64(kr__sum_search, space, "space", &i64_hook, "configurations in its space"),
    KR__JF_INT(kr__sum_search, frontier_points, "frontier_points", 0, 0, 1 << 30, 0, "points of its frontier"),
    I64(kr__sum_search, restricted, "restricted_to_recorded", &oi64_hook,
        "a partial replayed recording: the recorded configurations the frontier is restricted to"),
};
static const list_desc search_list = LIST_DESC(kr__summary, search, nsearch, search_fields);

static const kr__jfield picture_fields[] = {
    STR(kr__sum_picture, title, "title", "its caption"),
    STR(kr__sum_picture, file, "file", "the SVG file, relative to the directory and inside it"),
};
static const list_desc timeline_list = LIST_DESC(kr__summary, timelines, ntimelines, picture_fields);
static const list_desc partition_list = LIST_DESC(kr__summary, partitions, npartitions, picture_fields);

static const kr__jfield job_fields[] = {
    STR(kr__summary, job_name, "name", "the job's name"),
    STR(kr__summary, job_summary, "summary", "the job in one line"),
    STR(kr__summary, job_fingerprint, "fingerprint", "its fingerprint (plans carry it)"),
    KR__JF_INT(kr__summary, job_gpus, "gpus", 0, 0, 1 << 30, 0, "its GPUs"),
};
static const kr__jtable job_table = KR__JTABLE(job_fields);

static const kr__jfield settings_fields[] = {
    STR(kr__summary, strategy, "strategy", "the search strategy"),
    STR(kr__summary, cost_model, "cost_model", "the solver's cost model"),
    NUM(kr__summary, unit_time_s, "unit_time_s", "the solver's unit time, s"),
    STR(kr__summary, backend, "backend", "the measuring backend"),
    I64(kr__summary, seed, "seed", &i64_hook, "the search seed"),
};
static const kr__jtable settings_table = KR__JTABLE(settings_fields);

static const kr__jfield metrics_fields[] = {
    STR(kr__summary, reference, "reference", "the method of the iso comparisons"),
    STR(kr__summary, baseline, "baseline", "the method of the max-throughput comparisons"),
    LIST(kr__summary, rows, "rows", row_list, "the figures of every method (null: no plan qualifies)"),
};
static const kr__jtable metrics_table = KR__JTABLE(metrics_fields);

static const kr__jfield validation_fields[] = {
    LIST(kr__summary, vplans, "plans", vplan_list, "every chosen plan, predicted and simulated"),
    NUM(kr__summary, max_time_err, "max_time_rel_error", "largest difference of simulated and predicted time, relative to the predicted"),
    NUM(kr__summary, max_energy_err, "max_energy_rel_error", "… and energy"),
    STR(kr__summary, note, "note", "what the simulation adds to the prediction, in words"),
};
static const kr__jtable validation_table = KR__JTABLE(validation_fields);

static const kr__jfield pictures_fields[] = {
    STR(kr__summary, pic_frontiers, "frontiers", "the solver frontiers of every method (SVG)"),
    STR(kr__summary, pic_frontiers_10pt, "frontiers_10pt", "the simulated 10-point frontiers (SVG)"),
    LIST(kr__summary, timelines, "timelines", timeline_list, "pipeline timelines"),
    LIST(kr__summary, partitions, "partitions", partition_list, "partition executions"),
};
static const kr__jtable pictures_table = KR__JTABLE(pictures_fields);

static const kr__jfield timing_fields[] = {
    NUM(kr__summary, time_search_s, "search", "search wall time, s"),
    NUM(kr__summary, time_compose_s, "compose", "composition, s"),
    NUM(kr__summary, time_solve_s, "solve", "solver, s"),
    NUM(kr__summary, time_simulate_s, "simulate", "pipeline simulation, s"),
};
static const kr__jtable timing_table = KR__JTABLE(timing_fields);

static const kr__jfield summary_fields[] = {
    KR__JF_SCHEMA("kareus.summary", KR__JREQ, "the format"),
    KR__JF_VERSION(1, KR__JREQ, "the format's version"),
    KR__JF_OBJ("job", 0, &job_table, NULL, "the job"),
    KR__JF_OBJ("settings", 0, &settings_table, NULL, "how the run searched and solved"),
    LIST(kr__summary, methods, "methods", method_list, "one entry per method run"),
    KR__JF_OBJ("metrics", 0, &metrics_table, NULL, "the paper's figures"),
    OOBJ(kr__summary, has_validation, "validation", &validation_table, "the solver's prediction against the simulation"),
    LIST(kr__summary, search, "search", search_list, "one entry per partition searched, variant by variant"),
    OOBJ(kr__summary, has_pictures, "pictures", &pictures_table, "the pictures the page inlines (with pictures only)"),
    KR__JF_OBJ("timing_s", 0, &timing_table, NULL, "wall time of each stage, s"),
};
static const kr__jtable summary_table = KR__JTABLE(summary_fields);

int kr_report_summary_format_field(int i, kr_field_info *out)
{
    return kr__jtable_describe(&summary_table, NULL, i, out);
}

/* ---- reading ------------------------------------------------------------------------------- */

int kr__report_summary_read(const char *path, kr__summary **out, kr_error *err)
{
    *out = NULL;
    json_t *root;
    kr__jctx c;
    int rc = kr__json_open(path, &root, &c, err);
    if (rc)
        return rc;
    kr__summary *s = calloc(1, sizeof *s);
    if (s == NULL) {
        json_decref(root);
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    }
    s->nmethods = s->nrows = s->nvplans = s->nsearch = s->ntimelines = s->npartitions = -1;
    rc = kr__jtable_read(&c, root, &summary_table, s);
    json_decref(root);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return KR_OK;
}

/* ---- writing ------------------------------------------------------------------------------- */

/* How each method executes and clocks, in words (design §7). */
static const char *const method_execution[KR_NUM_METHODS] = {
    "sequential", "sequential", "nanobatched, NCCL at partition start", "nanobatched, NCCL at partition start",
    "nanobatched, tuned slot and SMs"};
static const char *const method_clocks[KR_NUM_METHODS] = {"max", "per instruction", "max", "per instruction",
                                                          "per instruction, joint"};

/* A chosen plan's simulated figures, and the solver's bound on its predicted energy. */
static void chosen_of(const kr_opt_plan *p, kr__sum_plan *out)
{
    out->time_s = p->sim_time_s;
    out->energy_j = p->sim_energy_j;
    kr__strlcpy(out->file, p->file, sizeof out->file);
    kr__strlcpy(out->source, p->source, sizeof out->source);
    out->bound_j = out->gap = NAN;
    if (p->pred_bound_j > 0) {
        out->bound_j = p->pred_bound_j;
        out->gap = p->pred_energy_j / p->pred_bound_j - 1;
    }
}

static void method_of(const kr_method_result *mr, kr_method m, kr__sum_method *x)
{
    kr__strlcpy(x->name, kr_method_name(m), sizeof x->name);
    kr__strlcpy(x->slug, kr_method_slug(m), sizeof x->slug);
    kr__strlcpy(x->variant, kr_variant_name(kr_method_variant(m)), sizeof x->variant);
    kr__strlcpy(x->execution, method_execution[m], sizeof x->execution);
    kr__strlcpy(x->clocks, method_clocks[m], sizeof x->clocks);
    x->steps = mr->nsteps;
    x->steps_own = mr->steps_own;
    snprintf(x->frontier_csv, sizeof x->frontier_csv, "frontiers/%s.csv", kr_method_slug(m));
    chosen_of(&mr->plans[mr->fastest], &x->fastest);
    chosen_of(&mr->plans[mr->frugal], &x->frugal);
    x->nten = mr->nten;
    for (int i = 0; i < mr->nten; i++) {
        const kr_opt_plan *p = &mr->plans[mr->ten[i]];
        x->ten[i] = (kr__sum_point){p->step, p->sim_time_s, p->sim_energy_j, "", ""};
        kr__strlcpy(x->ten[i].file, p->file, sizeof x->ten[i].file);
        kr__strlcpy(x->ten[i].source, p->source, sizeof x->ten[i].source);
    }
    x->search_evaluated = mr->evaluated;
    x->search_space = mr->space;
    x->solve_s = mr->solve_s;
}

/* Every chosen plan of method m, predicted and simulated. */
static void vplans_of(const kr_method_result *mr, kr_method m, kr__summary *s)
{
    for (int i = 0; i < mr->nplans && s->nvplans < KR__SUM_MAX_PLANS; i++) {
        const kr_opt_plan *p = &mr->plans[i];
        kr__sum_vplan *v = &s->vplans[s->nvplans++];
        kr__strlcpy(v->method, kr_method_name(m), sizeof v->method);
        kr__strlcpy(v->label, p->label, sizeof v->label);
        kr__strlcpy(v->file, p->file, sizeof v->file);
        v->pred_time_s = p->pred_time_s;
        v->sim_time_s = p->sim_time_s;
        v->pred_energy_j = p->pred_energy_j;
        v->sim_energy_j = p->sim_energy_j;
    }
}

static void note_of(const kr_optimize_result *o, kr__summary *s)
{
    snprintf(s->note, sizeof s->note,
             "Predicted: the solver's figures (options summed on the pipeline DAG with p2p lags). Simulated: the "
             "pipeline simulator, which also charges the %.0f ms settle window of every clock change. Largest "
             "differences over these plans: %.2f%% in time, %.2f%% in energy.",
             1e3 * o->job.gpu.clock_switch_s, 100 * o->max_time_err, 100 * o->max_energy_err);
    if (o->settle_unpriced > 0) {
        size_t nl = strlen(s->note);
        snprintf(s->note + nl, sizeof s->note - nl,
                 " Replayed partial recordings: %d clock changes could not be charged their settle window (the "
                 "recordings lack those configurations at the previous clock) and run at the new clock throughout.",
                 o->settle_unpriced);
    }
}

static void search_of(const kr_optimize_result *o, kr__summary *s)
{
    s->nsearch = 0;
    for (int i = 0; i < o->nsearch && s->nsearch < KR__SUM_MAX_SEARCH; i++) {
        const kr_opt_search *q = &o->search[i];
        kr__sum_search *x = &s->search[s->nsearch++];
        kr__strlcpy(x->variant, kr_variant_name(q->variant), sizeof x->variant);
        kr__strlcpy(x->key, q->key, sizeof x->key);
        x->measured = q->evaluated;
        x->space = q->space;
        x->frontier_points = (int)q->frontier_points;
        /* A replayed partial recording: the frontier is that of the recorded points only. */
        x->restricted = q->recorded > 0 && q->recorded < q->space ? q->recorded : 0;
    }
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

static void pictures_of(const kr_optimize_result *o, kr__summary *s)
{
    s->has_pictures = o->pictures;
    kr__strlcpy(s->pic_frontiers, "frontiers.svg", sizeof s->pic_frontiers);
    kr__strlcpy(s->pic_frontiers_10pt, "frontiers-10pt.svg", sizeof s->pic_frontiers_10pt);
    s->ntimelines = s->npartitions = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        for (size_t k = 0; o->m[m].enabled && k < KR_ARRAY_LEN(timeline_labels); k++) {
            const char *label = timeline_labels[k];
            if (!draws_timeline((kr_method)m, label) || s->ntimelines >= KR__SUM_MAX_PICTURES)
                continue;
            kr__sum_picture *t = &s->timelines[s->ntimelines++];
            snprintf(t->file, sizeof t->file, "timeline-%s-%s.svg", kr_method_slug((kr_method)m), label);
            snprintf(t->title, sizeof t->title, "%s, %s plan", kr_method_name((kr_method)m), label);
        }
    }
    if (o->m[KR_METHOD_KAREUS].enabled && o->m[KR_METHOD_NANOBATCH].enabled) {
        kr__sum_picture *t = &s->partitions[s->npartitions++];
        kr__strlcpy(t->title, "The first partition of Kareus's fastest plan against the default overlap",
                    sizeof t->title);
        kr__strlcpy(t->file, "partition.svg", sizeof t->file);
    }
}

/* The summary of run o, field for field. */
static void summary_of(const kr_optimize_result *o, kr__summary *s)
{
    kr__strlcpy(s->job_name, o->job.name, sizeof s->job_name);
    kr_job_summary(&o->job, s->job_summary, sizeof s->job_summary);
    kr_job_fingerprint(&o->job, s->job_fingerprint);
    s->job_gpus = kr_job_gpus_total(&o->job);
    kr__strlcpy(s->strategy, kr_strategy_name(o->strategy), sizeof s->strategy);
    kr__strlcpy(s->cost_model, kr_cost_model_name(o->cost_model), sizeof s->cost_model);
    s->unit_time_s = o->unit_time_s;
    kr__strlcpy(s->backend, o->backend, sizeof s->backend);
    s->seed = (long long)o->seed;
    s->nmethods = s->nrows = s->nvplans = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        if (!o->m[m].enabled)
            continue;
        method_of(&o->m[m], (kr_method)m, &s->methods[s->nmethods++]);
        kr__sum_row *row = &s->rows[s->nrows++];
        kr__strlcpy(row->method, kr_method_name((kr_method)m), sizeof row->method);
        row->m = o->rows[m];
        vplans_of(&o->m[m], (kr_method)m, s);
    }
    kr__strlcpy(s->reference, "Perseus", sizeof s->reference);
    kr__strlcpy(s->baseline, "Megatron", sizeof s->baseline);
    s->has_validation = 1;
    s->max_time_err = o->max_time_err;
    s->max_energy_err = o->max_energy_err;
    note_of(o, s);
    search_of(o, s);
    pictures_of(o, s);
    s->time_search_s = o->search_s;
    s->time_compose_s = o->compose_s;
    s->time_solve_s = o->solve_s;
    s->time_simulate_s = o->simulate_s;
}

int kr_report_summary(const char *dir, const kr_optimize_result *o, kr_error *err)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/summary.json", dir) >= (int)sizeof path)
        return kr_error_set(err, KR_EINVAL, "%s: directory name too long", dir);
    kr__summary *s = calloc(1, sizeof *s);
    if (s == NULL)
        return kr_error_set(err, KR_ENOMEM, "summary: out of memory");
    summary_of(o, s);
    kr__jwctx w = {path, err};
    json_t *root;
    int rc = kr__jtable_write(&w, &summary_table, s, &root);
    free(s);
    if (rc == KR_OK) {
        rc = kr__json_write_atomic(path, root, err);
        json_decref(root);
    }
    return rc;
}

int kr_report_timeline(const char *dir, kr_method m, const char *label, const kr_pipe_result *sim, const kr_job *job,
                       kr_error *err)
{
    if (!draws_timeline(m, label))
        return KR_OK;
    char title[160], path[4400];
    snprintf(title, sizeof title, "%s — %s plan (simulated)", kr_method_name(m), label);
    snprintf(path, sizeof path, "%s/timeline-%s-%s.svg", dir, kr_method_slug(m), label);
    return kr_svg_timeline(path, title, sim, job, err);
}
