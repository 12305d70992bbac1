/*
 * job.c — job specs: the built-in default and paper suite, the JSON format (a field table that
 * drives reading, writing and the format's description), and derived quantities (GPU counts,
 * planning clocks, p2p sizes, fingerprint). kr_job_validate is in job_validate.c.
 */
#include "kareus/job.h"
#include "kareus/backend.h"

#include <libgen.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"
#include "workload/workload_internal.h"

/* The schedules' names, X(value, name); "interleaved" is an alias (parsed, never written). */
#define SCHEDULE_NAMES(X)                                                                                  \
    X(KR_SCHEDULE_1F1B, "1f1b")                                                                            \
    X(KR_SCHEDULE_GPIPE, "gpipe")                                                                          \
    X(KR_SCHEDULE_INTERLEAVED_1F1B, "interleaved-1f1b")                                                    \
    X(KR_SCHEDULE_INTERLEAVED_1F1B, "interleaved")

static const kr__ename schedule_names[] = {SCHEDULE_NAMES(KR__ENAME_ROW)};

const char *kr_schedule_name(kr_schedule s)
{
    return kr__ename_of(schedule_names, KR_ARRAY_LEN(schedule_names), (int)s);
}

int kr_schedule_parse(const char *name, kr_schedule *out)
{
    int v;
    if (kr__ename_parse(schedule_names, KR_ARRAY_LEN(schedule_names), name, &v))
        return KR_EINVAL;
    *out = (kr_schedule)v;
    return KR_OK;
}

static void smlist_range(kr_smlist *l, int lo, int hi, int step)
{
    l->n = 0;
    for (int v = lo; v <= hi && l->n < KR_MAX_SMLIST; v += step)
        l->v[l->n++] = v;
}

/* Applies the GPU-dependent planning defaults. */
static void planning_defaults(kr_job *job)
{
    job->clock_min_mhz = (int)job->gpu.plan_min_mhz;
    job->clock_max_mhz = (int)job->gpu.plan_max_mhz;
    job->clock_step_mhz = (int)job->gpu.plan_step_mhz;
    /* Search lists of the reference (kareus-method.md §2): AR 3..30 step 3, AG/RS 1..20. */
    smlist_range(&job->sms_allreduce, 3, 30, 3);
    smlist_range(&job->sms_gather, 1, 20, 1);
    job->static_power_w = job->gpu.static_w;
    job->ncomm_kernels = 2;
    job->comm_kernels[0] = KR_KERNEL_TUNED;
    job->comm_kernels[1] = KR_KERNEL_NCCL;
}

/* Even split of layers over stages, the remainder going to the first stages. */
static void even_layers(kr_job *job)
{
    int per = job->model.layers / job->pp, rem = job->model.layers % job->pp;
    for (int s = 0; s < job->pp; s++)
        job->layers_per_stage[s] = per + (s < rem);
}

/* AWS p4d.24xlarge: 8 x A100 SXM4 40GB, 4 x 100 Gbps EFA per node (400 Gbps = 50 GB/s), i.e.
 * 6.25 GB/s per GPU when all eight send (M: AWS p4d product page; per-GPU share D). Latency E. */
static const kr_cluster p4d_cluster = {8, 2, 6.25e9, 15e-6};

void kr_job_default(kr_job *job)
{
    memset(job, 0, sizeof *job);
    kr__strlcpy(job->name, "default", sizeof job->name);
    kr_catalog_gpu_find("a100-sxm4-40gb", &job->gpu, NULL);
    kr_catalog_model_find("llama3.2-3b", &job->model, NULL);
    job->cluster = p4d_cluster;
    job->tp = 8;
    job->cp = 1;
    job->pp = 2;
    job->dp = 1;
    job->microbatch_size = 8;
    job->seq_len = 4096;
    job->num_microbatches = 8;
    job->layers_per_stage[0] = 15; /* As the artifact splits 28 layers (kareus-method.md §9). */
    job->layers_per_stage[1] = 13;
    job->virtual_stages = 1;
    job->recompute = 1;
    job->schedule = KR_SCHEDULE_1F1B;
    planning_defaults(job);
}

/* The paper's ten configurations (kareus-method.md §9): PP 2, 8 microbatches, 15 + 13 layers. */
static const struct suite_entry {
    /* An array, not a pointer: &suite[i].name[0] is then an address constant, which the static
     * list of kr_job_suite_paper may hold in ISO C17 (a pointer read from suite[i] may not). */
    char name[48];
    const char *model;
    int tp, cp, mbs, seq;
} suite[] = {
    {"llama3.2-3b-tp8-mbs8-s4096", "llama3.2-3b", 8, 1, 8, 4096},
    {"llama3.2-3b-cp2tp4-mbs8-s4096", "llama3.2-3b", 4, 2, 8, 4096},
    {"llama3.2-3b-cp2tp4-mbs8-s8192", "llama3.2-3b", 4, 2, 8, 8192},
    {"llama3.2-3b-cp2tp4-mbs16-s4096", "llama3.2-3b", 4, 2, 16, 4096},
    {"qwen3-1.7b-tp8-mbs8-s4096", "qwen3-1.7b", 8, 1, 8, 4096},
    {"qwen3-1.7b-tp8-mbs8-s8192", "qwen3-1.7b", 8, 1, 8, 8192},
    {"qwen3-1.7b-tp8-mbs16-s4096", "qwen3-1.7b", 8, 1, 16, 4096},
    {"qwen3-1.7b-cp2tp4-mbs8-s4096", "qwen3-1.7b", 4, 2, 8, 4096},
    {"qwen3-1.7b-cp2tp4-mbs8-s8192", "qwen3-1.7b", 4, 2, 8, 8192},
    {"qwen3-1.7b-cp2tp4-mbs16-s4096", "qwen3-1.7b", 4, 2, 16, 4096},
};

int kr_job_suite_paper(const char *const **names)
{
    static const char *const list[] = {
        suite[0].name, suite[1].name, suite[2].name, suite[3].name, suite[4].name,
        suite[5].name, suite[6].name, suite[7].name, suite[8].name, suite[9].name,
    };
    if (names)
        *names = list;
    return (int)KR_ARRAY_LEN(suite);
}

int kr_job_builtin(const char *name, kr_job *job, kr_error *err)
{
    if (strcmp(name, "default") == 0) {
        kr_job_default(job);
        return KR_OK;
    }
    for (size_t i = 0; i < KR_ARRAY_LEN(suite); i++) {
        if (strcmp(name, suite[i].name) != 0)
            continue;
        kr_job_default(job);
        kr__strlcpy(job->name, suite[i].name, sizeof job->name);
        kr_catalog_model_find(suite[i].model, &job->model, NULL);
        job->tp = suite[i].tp;
        job->cp = suite[i].cp;
        job->microbatch_size = suite[i].mbs;
        job->seq_len = suite[i].seq;
        return KR_OK;
    }
    return kr_error_set(err, KR_ENOTFOUND,
                        "unknown built-in job '%s' (known: default and the paper suite, see `kareus catalog`)",
                        name);
}

/* ---- JSON --------------------------------------------------------------------------- */

/*
 * The job spec as field tables (util.h, "JSON field tables"): job_fields and its objects list
 * every field in the order it is written and listed as allowed, with its range and default
 * (KEEP: the built-in default job's value). What is not a plain field is a hook below: the GPU
 * and the model (a catalog name or an object), the layers per stage (default from the model and
 * pp), recompute ("full", "none" or a boolean) and the SM lists (a list or a range).
 */

static int smlist_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    kr_smlist *out = (kr_smlist *)((char *)base + f->off);
    if (v == NULL)
        return KR_OK;
    size_t m = kr__jpush_key(c, f->key);
    int rc = KR_OK;
    if (json_is_array(v)) {
        if (json_array_size(v) > KR_MAX_SMLIST) {
            rc = kr__jfailf(c, KR_ERANGE, NULL, "expected at most %d SM counts, found %zu", KR_MAX_SMLIST,
                            json_array_size(v));
            goto out;
        }
        out->n = 0;
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *e = json_array_get(v, i);
            int sms;
            if (!json_is_integer(e) || kr__ll_to_int((long long)json_integer_value(e), 1, 100000, &sms)) {
                size_t m2 = kr__jpush_idx(c, i);
                rc = kr__jfail(c, json_is_integer(e) ? KR_ERANGE : KR_EPARSE, NULL, "an integer SM count in [1, 100000]", e);
                kr__jpop(c, m2);
                goto out;
            }
            out->v[out->n++] = sms;
        }
    } else if (json_is_object(v)) {
        static const char *const f3[] = {"min", "max", "step", NULL};
        int lo, hi, step;
        if ((rc = kr__jobject(c, v, f3)) || (rc = kr__jint32(c, v, "min", 1, 1, 100000, 1, &lo)) ||
            (rc = kr__jint32(c, v, "max", 1, 1, 100000, 1, &hi)) ||
            (rc = kr__jint32(c, v, "step", 0, 1, 100000, 1, &step)))
            goto out;
        if (hi < lo || (hi - lo) / step + 1 > KR_MAX_SMLIST) {
            rc = kr__jfailf(c, KR_ERANGE, NULL, "expected min <= max and at most %d values, found %d..%d step %d",
                            KR_MAX_SMLIST, lo, hi, step);
            goto out;
        }
        smlist_range(out, lo, hi, step);
    } else {
        rc = kr__jfail(c, KR_EPARSE, NULL, "an array of SM counts or {\"min\", \"max\", \"step\"}", v);
    }
out:
    kr__jpop(c, m);
    return rc;
}

static int smlist_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w;
    const kr_smlist *l = (const kr_smlist *)((const char *)base + f->off);
    json_t *a = json_array();
    for (int i = 0; i < l->n; i++)
        json_array_append_new(a, json_integer(l->v[i]));
    *out = a;
    return KR_OK;
}

/* planning.comm_kernels: a non-empty array of distinct kernel names ("tuned", "nccl"). */
static int kernels_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    kr_job *job = (kr_job *)base;
    if (v == NULL)
        return KR_OK;
    size_t m = kr__jpush_key(c, f->key);
    int rc = KR_OK;
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > KR_MAX_COMM_KERNELS) {
        rc = kr__jfail(c, json_is_array(v) ? KR_ERANGE : KR_EPARSE, NULL,
                       "a non-empty array of distinct comm kernels, \"tuned\" and/or \"nccl\"", v);
        goto out;
    }
    job->ncomm_kernels = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        int k = -1;
        int bad = !json_is_string(e) || kr_comm_kernel_parse(json_string_value(e), &k) != KR_OK;
        for (int j = 0; !bad && j < job->ncomm_kernels; j++)
            bad = job->comm_kernels[j] == k;
        if (bad) {
            size_t m2 = kr__jpush_idx(c, i);
            rc = kr__jfail(c, json_is_string(e) ? KR_EINVAL : KR_EPARSE, NULL,
                           "\"tuned\" or \"nccl\", each at most once", e);
            kr__jpop(c, m2);
            goto out;
        }
        job->comm_kernels[job->ncomm_kernels++] = k;
    }
out:
    kr__jpop(c, m);
    return rc;
}

static int kernels_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w;
    (void)f;
    const kr_job *job = (const kr_job *)base;
    json_t *a = json_array();
    for (int i = 0; i < job->ncomm_kernels; i++)
        json_array_append_new(a, json_string(kr_comm_kernel_name(job->comm_kernels[i])));
    *out = a;
    return KR_OK;
}

static int model_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    kr_model *m = &((kr_job *)base)->model;
    if (v == NULL)
        return KR_OK;
    if (json_is_string(v)) {
        kr_error e = {0};
        if (kr_catalog_model_find(json_string_value(v), m, &e))
            return kr__jfailf(c, KR_ENOTFOUND, "model", "%s", e.msg);
        return KR_OK;
    }
    size_t mk = kr__jpush_key(c, "model");
    static const char *const fm[] = {"name", "display", "base", "hidden", "ffn", "heads", "kv_groups", "head_dim",
                                     "layers", "vocab", "tied_embeddings", "qk_norm", "source", NULL};
    int rc = kr__jobject(c, v, fm);
    if (rc) {
        if (!json_is_object(v))
            kr__jfail(c, KR_EPARSE, NULL, "a model name or a model object", v);
        return rc;
    }
    char mbase[KR_NAME_MAX];
    memset(m, 0, sizeof *m);
    if ((rc = kr__jstr(c, v, "base", 0, "", mbase, sizeof mbase)))
        return rc;
    int req = 1;
    if (mbase[0]) {
        kr_error e = {0};
        if (kr_catalog_model_find(mbase, m, &e))
            return kr__jfailf(c, KR_ENOTFOUND, "base", "%s", e.msg);
        req = 0;
    }
    const int big = 1 << 24;
    if ((rc = kr__jstr(c, v, "name", 1, NULL, m->name, sizeof m->name)) ||
        (rc = kr__jstr(c, v, "display", 0, m->name, m->display, sizeof m->display)) ||
        (rc = kr__jint32(c, v, "hidden", req, 1, big, m->hidden, &m->hidden)) ||
        (rc = kr__jint32(c, v, "ffn", req, 1, big, m->ffn, &m->ffn)) ||
        (rc = kr__jint32(c, v, "heads", req, 1, 65536, m->heads, &m->heads)) ||
        (rc = kr__jint32(c, v, "kv_groups", req, 1, 65536, m->kv_groups, &m->kv_groups)) ||
        (rc = kr__jint32(c, v, "head_dim", req, 1, 65536, m->head_dim, &m->head_dim)) ||
        (rc = kr__jint32(c, v, "layers", req, 1, 100000, m->layers, &m->layers)) ||
        (rc = kr__jint32(c, v, "vocab", req, 1, big, m->vocab, &m->vocab)) ||
        (rc = kr__jbool(c, v, "tied_embeddings", 0, m->tied_embeddings, &m->tied_embeddings)) ||
        (rc = kr__jbool(c, v, "qk_norm", 0, m->qk_norm, &m->qk_norm)) ||
        (rc = kr__jstr(c, v, "source", 0, mbase[0] ? m->source : "user-supplied model", m->source, sizeof m->source)))
        return rc;
    kr__jpop(c, mk);
    return KR_OK;
}

/* A catalog model is written by name, any other as an object. */
static int model_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w, (void)f;
    const kr_model *m = &((const kr_job *)base)->model;
    kr_model bm;
    if (kr_catalog_model_find(m->name, &bm, NULL) == KR_OK && memcmp(&bm, m, sizeof bm) == 0)
        *out = json_string(m->name);
    else
        *out = kr_model_json(m);
    return KR_OK;
}

static int gpu_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    kr_gpu *g = &((kr_job *)base)->gpu;
    if (v == NULL)
        return KR_OK;
    if (json_is_string(v)) {
        kr_error e = {0};
        if (kr_catalog_gpu_find(json_string_value(v), g, &e))
            return kr__jfailf(c, KR_ENOTFOUND, "gpu", "%s", e.msg);
        return KR_OK;
    }
    size_t m = kr__jpush_key(c, "gpu");
    static const char *const fg[] = {"file", NULL};
    int rc = kr__jobject(c, v, fg);
    if (rc) {
        if (!json_is_object(v))
            kr__jfail(c, KR_EPARSE, NULL, "a GPU name or {\"file\": PATH}", v);
        return rc;
    }
    char file[1024], full[2048];
    if ((rc = kr__jstr(c, v, "file", 1, NULL, file, sizeof file)))
        return rc;
    if (file[0] != '/') {
        char dir[1024];
        kr__strlcpy(dir, c->file, sizeof dir);
        snprintf(full, sizeof full, "%s/%s", dirname(dir), file);
    } else {
        kr__strlcpy(full, file, sizeof full);
    }
    kr_error e = {0};
    if ((rc = kr_gpu_read_json(full, g, &e)))
        return kr__jfailf(c, rc, "file", "%s", e.msg);
    kr__jpop(c, m);
    return KR_OK;
}

/* A built-in GPU is written by name; any other goes to NAME.gpu.json beside the job. */
static int gpu_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)f;
    const kr_gpu *g = &((const kr_job *)base)->gpu;
    kr_gpu builtin;
    if (kr_catalog_gpu_find(g->name, &builtin, NULL) == KR_OK && memcmp(&builtin, g, sizeof builtin) == 0) {
        *out = json_string(g->name);
        return KR_OK;
    }
    /* Its name comes from input, so it must be one plain file name (never "../x" or "/etc/x"). */
    if (!kr__safe_filename(g->name) || strlen(g->name) > 200)
        return kr_error_set(w->err, KR_EINVAL,
                            "%s: gpu.name: expected a name usable as a file name (1..200 of A-Z a-z 0-9 . _ + -, "
                            "not starting with '.' or '-') to write NAME.gpu.json beside the job, found '%s'",
                            w->path, g->name);
    char gpath[4200], gname[300], dir[4096];
    snprintf(gname, sizeof gname, "%s.gpu.json", g->name);
    kr__strlcpy(dir, w->path, sizeof dir);
    snprintf(gpath, sizeof gpath, "%s/%s", dirname(dir), gname);
    int rc = kr_gpu_write_json(gpath, g, w->err);
    if (rc)
        return rc;
    *out = json_object();
    json_object_set_new(*out, "file", json_string(gname));
    return KR_OK;
}

static const kr__jtable job_table;

/*
 * virtual_stages is read before layers_per_stage, the order in which errors have always been
 * reported: the hook reads it through its own table entry (which then reads it again, to the
 * same value). Absent, the layers default to the artifact's 15 + 13 for Llama 3.2 3B on two
 * stages, else to an even split.
 */
static int layers_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    kr_job *job = base;
    int rc = kr__jfield_read(c, obj, kr__jtable_find(&job_table, "virtual_stages"), base);
    if (rc)
        return rc;
    for (int s = 0; s < KR_MAX_STAGES; s++)
        job->layers_per_stage[s] = 0;
    const json_t *v = json_object_get(obj, f->key);
    if (v) {
        size_t m = kr__jpush_key(c, f->key);
        if (!json_is_array(v))
            return kr__jfail(c, KR_EPARSE, NULL, "an array of layer counts, one per stage", v);
        if ((int)json_array_size(v) != job->pp)
            return kr__jfailf(c, KR_EINVAL, NULL, "expected %d entries (one per pipeline stage, pp = %d), found %zu",
                              job->pp, job->pp, json_array_size(v));
        for (size_t i = 0; i < json_array_size(v) && i < KR_MAX_STAGES; i++) {
            const json_t *e = json_array_get(v, i);
            if (!json_is_integer(e)) {
                kr__jpush_idx(c, i);
                return kr__jfail(c, KR_EPARSE, NULL, "an integer layer count", e);
            }
            long long x = json_integer_value(e);
            job->layers_per_stage[i] = (x < -1000000 || x > 1000000) ? -1 : (int)x;
        }
        kr__jpop(c, m);
    } else if (job->pp >= 1 && job->pp <= KR_MAX_STAGES) {
        if (strcmp(job->model.name, "llama3.2-3b") == 0 && job->pp == 2) {
            job->layers_per_stage[0] = 15;
            job->layers_per_stage[1] = 13;
        } else {
            even_layers(job);
        }
    }
    return KR_OK;
}

static int layers_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w, (void)f;
    const kr_job *job = base;
    *out = json_array();
    for (int s = 0; s < job->pp; s++)
        json_array_append_new(*out, json_integer(job->layers_per_stage[s]));
    return KR_OK;
}

static int recompute_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    int *out = &((kr_job *)base)->recompute;
    if (v == NULL)
        return KR_OK;
    if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0)
        *out = 1;
    else if (json_is_string(v) && strcmp(json_string_value(v), "none") == 0)
        *out = 0;
    else if (json_is_boolean(v))
        *out = json_is_true(v);
    else
        return kr__jfail(c, KR_EPARSE, "recompute", "\"full\" or \"none\"", v);
    return KR_OK;
}

static int recompute_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w, (void)f;
    *out = json_string(((const kr_job *)base)->recompute ? "full" : "none");
    return KR_OK;
}

static void planning_init(void *base)
{
    planning_defaults(base);
}

static double bps_to_gbps(double x) { return x / 1e9; }
static double gbps_to_bps(double x) { return x * 1e9; }
static double s_to_us(double x) { return x * 1e6; }
static double us_to_s(double x) { return x * 1e-6; }

static const kr__jconv conv_gbps = {bps_to_gbps, gbps_to_bps};
static const kr__jconv conv_us = {s_to_us, us_to_s};
static const kr__enames schedule_enames = KR__ENAMES(schedule_names);
const kr__jchoice kr__schedule_choice = {&schedule_enames, "\"1f1b\", \"gpipe\" or \"interleaved-1f1b\""};
static const kr__jhook gpu_hook = {gpu_read, gpu_write, NULL, "string or object", "a catalog GPU or {\"file\": PATH}",
                                   "a100-sxm4-40gb"};
static const kr__jhook model_hook = {model_read, model_write, NULL, "string or object",
                                     "a catalog model or a model object", "llama3.2-3b"};
static const kr__jhook layers_hook = {layers_read, layers_write, NULL, "array", "pp integers summing to the layers",
                                      "15 + 13 (Llama 3.2 3B, pp 2), else even"};
static const kr__jhook recompute_hook = {recompute_read, recompute_write, NULL, "string or boolean",
                                         "\"full\", \"none\", true, false", "\"full\""};
static const kr__jhook sms_ar_hook = {smlist_read, smlist_write, NULL, "array or object",
                                      "SM counts in [1, 100000], or {\"min\", \"max\", \"step\"}", "3..30 step 3"};
static const kr__jhook sms_ag_hook = {smlist_read, smlist_write, NULL, "array or object",
                                      "SM counts in [1, 100000], or {\"min\", \"max\", \"step\"}", "1..20"};
static const kr__jhook kernels_hook = {kernels_read, kernels_write, NULL, "array",
                                       "\"tuned\" and/or \"nccl\", each at most once", "[\"tuned\", \"nccl\"]"};
static const kr__jhook clock_hook = {NULL, NULL, NULL, NULL, "a clock the GPU supports", NULL};
static const kr__jhook step_hook = {NULL, NULL, NULL, NULL, "a multiple of the GPU's clock step", NULL};
static const kr__jhook static_hook = {NULL, NULL, NULL, NULL, "[0, the GPU's tdp_w)", NULL};
static const kr__jhook nodes_hook = {NULL, NULL, NULL, NULL, NULL, "enough for tp*cp*pp*dp"};
static const kr__jhook planning_hook = {NULL, NULL, planning_init, NULL, NULL, NULL};

#define JK KR__JKEEP
#define JP (KR__JKEEP | KR__JPOS)
static const kr__jfield cluster_fields[] = {
    KR__JF_INT(kr_job, cluster.gpus_per_node, "gpus_per_node", JP, 1, 1024, 0, "GPUs in one node (NVLink domain)"),
    KR__JF_INTH(kr_job, cluster.nodes, "nodes", 0, 1, 1 << 20, 0, &nodes_hook, "nodes the job uses"),
    KR__JF_NUMCONV(kr_job, cluster.inter_node_bw_Bps, "inter_node_bw_GBps", JK, 1e-6, 1e6, &conv_gbps,
                   "inter-node bandwidth per GPU and direction, GB/s"),
    KR__JF_NUMCONV(kr_job, cluster.inter_node_latency_s, "inter_node_latency_us", JK, 0, 1e7, &conv_us,
                   "inter-node message latency, us"),
};
static const kr__jtable cluster_table = KR__JTABLE(cluster_fields);

static const kr__jfield parallelism_fields[] = {
    KR__JF_INT(kr_job, tp, "tp", JP, -1000000, 1000000, 0, "tensor-parallel degree (divides heads, hidden, ffn)"),
    KR__JF_INT(kr_job, cp, "cp", JP, -1000000, 1000000, 0, "context-parallel degree (seq_len a multiple of 2*cp)"),
    KR__JF_INT(kr_job, pp, "pp", JP, -1000000, 1000000, 0, "pipeline stages (at most 64 and the layers)"),
    KR__JF_INT(kr_job, dp, "dp", JP, -1000000, 1000000, 0, "data-parallel replicas"),
};
static const kr__jtable parallelism_table = KR__JTABLE(parallelism_fields);

static const kr__jfield planning_fields[] = {
    KR__JF_INTH(kr_job, clock_min_mhz, "clock_min_mhz", JK, -100000, 100000, 0, &clock_hook,
                "lowest planning clock, MHz (default: the GPU's plan_min_mhz)"),
    KR__JF_INTH(kr_job, clock_max_mhz, "clock_max_mhz", JK, -100000, 100000, 0, &clock_hook,
                "highest planning clock, MHz (default: the GPU's plan_max_mhz)"),
    KR__JF_INTH(kr_job, clock_step_mhz, "clock_step_mhz", JK, -100000, 100000, 0, &step_hook,
                "planning clock step, MHz, dividing max - min (default: the GPU's plan_step_mhz)"),
    KR__JF_HOOK("sms_allreduce", 0, offsetof(kr_job, sms_allreduce), NULL, &sms_ar_hook,
                "comm SMs searched for all-reduce partitions: ascending, below the GPU's SM count"),
    KR__JF_HOOK("sms_gather", 0, offsetof(kr_job, sms_gather), NULL, &sms_ag_hook,
                "comm SMs searched for all-gather / reduce-scatter partitions: ascending, below the SM count"),
    KR__JF_HOOK("comm_kernels", 0, 0, NULL, &kernels_hook,
                "comm kernels Kareus searches for partitions with a collective (the NCCL-default execution is "
                "always a candidate)"),
    KR__JF_NUMH("static_power_w", JK, offsetof(kr_job, static_power_w), -1e6, 1e6, &static_hook,
                "static power for effective energy, W (default: the GPU's static_w)"),
};
static const kr__jtable planning_table = KR__JTABLE(planning_fields);

static const kr__jfield job_fields[] = {
    KR__JF_SCHEMA("kareus.job", 0, "the format"),
    KR__JF_VERSION(KR_JOB_VERSION, 0, "the format's version"),
    KR__JF_STR(kr_job, name, "name", 0, "job", NULL, "job name"),
    KR__JF_HOOK("gpu", 0, 0, NULL, &gpu_hook, "the GPU type: a catalog name, or a GPU entry file (relative to the job)"),
    KR__JF_HOOK("model", 0, 0, NULL, &model_hook, "the model: a catalog name, or an object of model fields (docs/formats.md)"),
    KR__JF_OBJ("cluster", 0, &cluster_table, NULL, "the machines"),
    KR__JF_OBJ("parallelism", 0, &parallelism_table, NULL, "the parallel degrees"),
    KR__JF_INT(kr_job, microbatch_size, "microbatch_size", JP, -1000000, 1000000, 0, "sequences per microbatch"),
    KR__JF_INT(kr_job, seq_len, "seq_len", JP, -100000000, 100000000, 0, "tokens per sequence"),
    KR__JF_INT(kr_job, num_microbatches, "num_microbatches", JP, -1000000, 1000000, 0, "microbatches per iteration"),
    KR__JF_HOOK("layers_per_stage", 0, 0, NULL, &layers_hook, "transformer layers of each stage, one entry per stage"),
    KR__JF_INT(kr_job, virtual_stages, "virtual_stages", KR__JPOS, -1000, 1000, 1,
               "model chunks per stage: > 1 only with interleaved-1f1b"),
    KR__JF_HOOK("recompute", 0, 0, NULL, &recompute_hook, "full activation recomputation, or none"),
    KR__JF_ENUM(kr_job, schedule, "schedule", 0, 64, KR_SCHEDULE_1F1B, &kr__schedule_choice, "pipeline schedule"),
    KR__JF_OBJ("planning", 0, &planning_table, &planning_hook, "the planning knobs"),
};
static const kr__jtable job_table = KR__JTABLE(job_fields);
#undef JK
#undef JP

_Static_assert(sizeof(kr_schedule) == sizeof(int), "kr_schedule is read and written as an int");

static int job_from_json(kr__jctx *c, const json_t *root, kr_job *job)
{
    kr_job_default(job);
    int rc = kr__jtable_read(c, root, &job_table, job);
    if (rc)
        return rc;
    if (job->cluster.nodes == 0) {
        /* Nodes for tp*cp*pp*dp GPUs; a product that overflows or is out of range is left to
         * kr_job_validate, which names the parallelism fields (not cluster.nodes). */
        long long total;
        long long gpn = job->cluster.gpus_per_node > 0 ? job->cluster.gpus_per_node : 1;
        int ok = !kr__mul_ll(job->tp, job->cp, &total) && !kr__mul_ll(total, job->pp, &total) &&
                 !kr__mul_ll(total, job->dp, &total) && total > 0 && total <= (1LL << 30);
        job->cluster.nodes = ok ? (int)((total + gpn - 1) / gpn) : 1;
    }
    kr_error e = {0};
    if ((rc = kr_job_validate(job, &e)))
        return kr_error_set(c->err, rc, "%s: %s", c->file, e.msg);
    return KR_OK;
}

int kr_job_load_text(const char *text, const char *name, kr_job *job, kr_error *err)
{
    json_t *root;
    int rc = kr__json_load_text(text, name, &root, err);
    if (rc)
        return rc;
    kr__jctx c;
    kr__jctx_init(&c, name, err);
    rc = job_from_json(&c, root, job);
    json_decref(root);
    return rc;
}

int kr_job_load(const char *path, kr_job *job, kr_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0 && strchr(path, '/') == NULL && strstr(path, ".json") == NULL) {
        kr_error e = {0};
        if (kr_job_builtin(path, job, &e) == KR_OK)
            return KR_OK;
        return kr_error_set(err, KR_ENOTFOUND, "%s: no such file, and not a built-in job name (default or a paper-suite name)",
                            path);
    }
    char *text;
    int rc = kr__read_text(path, &text, NULL, 0, err);
    if (rc)
        return rc;
    rc = kr_job_load_text(text, path, job, err);
    free(text);
    return rc;
}

int kr_job_write(const char *path, const kr_job *job, kr_error *err)
{
    kr__jwctx w = {path, err};
    json_t *root;
    int rc = kr__jtable_write(&w, &job_table, job, &root);
    if (rc)
        return rc;
    rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}

int kr_job_format_field(int i, kr_field_info *out)
{
    kr_job def;
    kr_job_default(&def);
    return kr__jtable_describe(&job_table, &def, i, out);
}

/* ---- derived quantities ------------------------------------------------------------- */

int kr_job_gpus_per_stage(const kr_job *job)
{
    return job->tp * job->cp * job->dp;
}

int kr_job_gpus_total(const kr_job *job)
{
    return kr_job_gpus_per_stage(job) * job->pp;
}

int kr_job_clocks(const kr_job *job, int *mhz, int cap)
{
    if (job->clock_step_mhz < 1 || job->clock_max_mhz < job->clock_min_mhz)
        return KR_EINVAL;
    int n = (job->clock_max_mhz - job->clock_min_mhz) / job->clock_step_mhz + 1;
    if (n > cap)
        return KR_ERANGE;
    for (int i = 0; i < n; i++)
        mhz[i] = job->clock_max_mhz - i * job->clock_step_mhz;
    return n;
}

double kr_job_p2p_bytes(const kr_job *job)
{
    /* Megatron-Core sends the full [seq/cp, mbs, hidden] bf16 activation from every TP rank
     * (no scatter/gather without sequence parallelism, which the Kareus block refuses). */
    return (double)job->seq_len / job->cp * job->microbatch_size * job->model.hidden * 2.0;
}

int kr_job_p2p_inter_node(const kr_job *job, int stage)
{
    long gps = kr_job_gpus_per_stage(job);
    long last = (stage + 1) * gps - 1, first_next = (stage + 1) * gps;
    return last / job->cluster.gpus_per_node != first_next / job->cluster.gpus_per_node;
}

static void fnv(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        *h ^= p[i];
        *h *= 1099511628211ULL;
    }
}

void kr_job_fingerprint(const kr_job *job, char *buf)
{
    uint64_t h = 14695981039346656037ULL;
    fnv(&h, job->gpu.name, strlen(job->gpu.name));
    for (int i = 0; i < KR_GPU_NPARAMS; i++) {
        double v = kr_gpu_param_value(&job->gpu, i);
        fnv(&h, &v, sizeof v);
    }
    const kr_model *m = &job->model;
    int mi[] = {m->hidden, m->ffn, m->heads, m->kv_groups, m->head_dim, m->vocab, m->qk_norm,
                job->tp, job->cp, job->microbatch_size, job->seq_len, job->cluster.gpus_per_node};
    fnv(&h, mi, sizeof mi);
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
}

void kr_job_summary(const kr_job *job, char *buf, size_t cap)
{
    char layers[128] = "";
    size_t n = 0;
    for (int s = 0; s < job->pp && n < sizeof layers - 8; s++)
        n += (size_t)snprintf(layers + n, sizeof layers - n, "%s%d", s ? "+" : "", job->layers_per_stage[s]);
    snprintf(buf, cap, "%s TP%d CP%d PP%d DP%d (layers %s) MBS%d S%d M%d %s%s on %dx %s", job->model.name, job->tp,
             job->cp, job->pp, job->dp, layers, job->microbatch_size, job->seq_len, job->num_microbatches,
             kr_schedule_name(job->schedule), job->recompute ? " recompute" : "", kr_job_gpus_total(job),
             job->gpu.name);
}
