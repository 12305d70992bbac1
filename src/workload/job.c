/*
 * job.c — job specs: the built-in default and paper suite, JSON loading with validation,
 * writing, and derived quantities (GPU counts, planning clocks, p2p sizes, fingerprint).
 */
#include "kareus/job.h"
#include "kareus/sched.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

const char *kr_schedule_name(kr_schedule s)
{
    switch (s) {
    case KR_SCHEDULE_1F1B: return "1f1b";
    case KR_SCHEDULE_GPIPE: return "gpipe";
    case KR_SCHEDULE_INTERLEAVED_1F1B: return "interleaved-1f1b";
    }
    return "?";
}

int kr_schedule_parse(const char *name, kr_schedule *out)
{
    if (strcmp(name, "1f1b") == 0)
        *out = KR_SCHEDULE_1F1B;
    else if (strcmp(name, "gpipe") == 0)
        *out = KR_SCHEDULE_GPIPE;
    else if (strcmp(name, "interleaved-1f1b") == 0 || strcmp(name, "interleaved") == 0)
        *out = KR_SCHEDULE_INTERLEAVED_1F1B;
    else
        return KR_EINVAL;
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

/* ---- validation --------------------------------------------------------------------- */

static int check_smlist(const kr_job *job, const kr_smlist *l, const char *what, kr_error *err)
{
    if (l->n < 1)
        return kr_error_set(err, KR_ERANGE, "job '%s': %s: expected at least one SM count, found an empty list",
                            job->name, what);
    for (int i = 0; i < l->n; i++) {
        if (l->v[i] < 1 || l->v[i] >= (int)job->gpu.sm_count)
            return kr_error_set(err, KR_ERANGE, "job '%s': %s[%d]: expected an SM count in [1, %d], found %d",
                                job->name, what, i, (int)job->gpu.sm_count - 1, l->v[i]);
        if (i && l->v[i] <= l->v[i - 1])
            return kr_error_set(err, KR_ERANGE,
                                "job '%s': %s[%d]: expected strictly ascending SM counts, found %d after %d",
                                job->name, what, i, l->v[i], l->v[i - 1]);
    }
    return KR_OK;
}

int kr_job_validate(const kr_job *job, kr_error *err)
{
    const kr_model *m = &job->model;
    const char *n = job->name;
#define POS(field, value)                                                                         \
    if ((value) < 1)                                                                              \
        return kr_error_set(err, KR_ERANGE, "job '%s': %s: expected a positive integer, found %d", n, \
                            field, (int)(value));
    POS("model.hidden", m->hidden);
    POS("model.ffn", m->ffn);
    POS("model.heads", m->heads);
    POS("model.kv_groups", m->kv_groups);
    POS("model.head_dim", m->head_dim);
    POS("model.layers", m->layers);
    POS("model.vocab", m->vocab);
    POS("parallelism.tp", job->tp);
    POS("parallelism.cp", job->cp);
    POS("parallelism.pp", job->pp);
    POS("parallelism.dp", job->dp);
    POS("microbatch_size", job->microbatch_size);
    POS("seq_len", job->seq_len);
    POS("num_microbatches", job->num_microbatches);
    POS("virtual_stages", job->virtual_stages);
    POS("cluster.gpus_per_node", job->cluster.gpus_per_node);
    POS("cluster.nodes", job->cluster.nodes);
#undef POS
    if (kr_sched_length(job->num_microbatches, job->virtual_stages) < 0)
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': num_microbatches: expected 2 x num_microbatches x virtual_stages <= %d "
                            "instructions per stage, found 2 x %d x %d",
                            n, KR_SCHED_MAX_LENGTH, job->num_microbatches, job->virtual_stages);
    if (job->schedule != KR_SCHEDULE_INTERLEAVED_1F1B && job->virtual_stages != 1)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': virtual_stages: expected 1 for schedule %s (only interleaved-1f1b uses chunks), found %d",
                            n, kr_schedule_name(job->schedule), job->virtual_stages);
    if (job->schedule == KR_SCHEDULE_INTERLEAVED_1F1B) {
        if (job->virtual_stages < 2)
            return kr_error_set(err, KR_EINVAL, "job '%s': virtual_stages: expected >= 2 for interleaved-1f1b, found %d",
                                n, job->virtual_stages);
        if (job->num_microbatches % job->pp != 0)
            return kr_error_set(err, KR_EINVAL,
                                "job '%s': num_microbatches: expected a multiple of pp (%d) for interleaved-1f1b, found %d",
                                n, job->pp, job->num_microbatches);
    }
    if (m->heads % m->kv_groups != 0)
        return kr_error_set(err, KR_EINVAL, "job '%s': model.kv_groups: expected a divisor of heads (%d), found %d",
                            n, m->heads, m->kv_groups);
    if (m->heads % job->tp != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor of the model's %d attention heads, found %d",
                            n, m->heads, job->tp);
    if (m->kv_groups % job->tp != 0 && job->tp % m->kv_groups != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor or multiple of the model's %d KV groups, found %d",
                            n, m->kv_groups, job->tp);
    if (m->ffn % job->tp != 0 || m->hidden % job->tp != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': parallelism.tp: expected a divisor of hidden (%d) and ffn (%d), found %d", n,
                            m->hidden, m->ffn, job->tp);
    if (job->seq_len % (2 * job->cp) != 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': seq_len: expected a multiple of 2*cp = %d (CP splits the sequence in 2*cp chunks), found %d",
                            n, 2 * job->cp, job->seq_len);
    if (job->pp > KR_MAX_STAGES)
        return kr_error_set(err, KR_ERANGE, "job '%s': parallelism.pp: expected at most %d stages, found %d", n,
                            KR_MAX_STAGES, job->pp);
    if (job->pp > m->layers)
        return kr_error_set(err, KR_EINVAL, "job '%s': parallelism.pp: expected at most %d stages (one layer each), found %d",
                            n, m->layers, job->pp);
    int sum = 0;
    for (int s = 0; s < job->pp; s++) {
        if (job->layers_per_stage[s] < 1)
            return kr_error_set(err, KR_ERANGE, "job '%s': layers_per_stage[%d]: expected a positive integer, found %d",
                                n, s, job->layers_per_stage[s]);
        if (job->layers_per_stage[s] % job->virtual_stages != 0)
            return kr_error_set(err, KR_EINVAL,
                                "job '%s': layers_per_stage[%d]: expected a multiple of virtual_stages (%d), found %d",
                                n, s, job->virtual_stages, job->layers_per_stage[s]);
        sum += job->layers_per_stage[s];
    }
    if (sum != m->layers)
        return kr_error_set(err, KR_EINVAL, "job '%s': layers_per_stage: expected layers summing to the model's %d, found a sum of %d",
                            n, m->layers, sum);
    long long total, avail;
    if (kr__mul_ll(job->tp, job->cp, &total) || kr__mul_ll(total, job->pp, &total) ||
        kr__mul_ll(total, job->dp, &total) || total > (1LL << 30))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': parallelism: expected tp*cp*pp*dp <= %lld GPUs, found %d*%d*%d*%d", n,
                            1LL << 30, job->tp, job->cp, job->pp, job->dp);
    if (kr__mul_ll(job->cluster.gpus_per_node, job->cluster.nodes, &avail))
        avail = LLONG_MAX;
    if (total > avail)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': cluster: expected at least tp*cp*pp*dp = %lld GPUs, found %d nodes x %d GPUs = %lld",
                            n, total, job->cluster.nodes, job->cluster.gpus_per_node, avail);
    if (!(job->cluster.inter_node_bw_Bps > 0) || !(job->cluster.inter_node_latency_s >= 0))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': cluster: expected inter_node_bw_GBps > 0 and inter_node_latency_us >= 0", n);
    const kr_gpu *g = &job->gpu;
    if (!kr_gpu_clock_supported(g, job->clock_max_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_max_mhz: expected a clock the %s supports (%d..%d step %d), found %d",
                            n, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            job->clock_max_mhz);
    if (!kr_gpu_clock_supported(g, job->clock_min_mhz))
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_min_mhz: expected a clock the %s supports (%d..%d step %d), found %d",
                            n, g->name, (int)g->clock_min_mhz, (int)g->clock_max_mhz, (int)g->clock_step_mhz,
                            job->clock_min_mhz);
    if (job->clock_min_mhz > job->clock_max_mhz)
        return kr_error_set(err, KR_ERANGE, "job '%s': planning: expected clock_min_mhz <= clock_max_mhz, found %d > %d",
                            n, job->clock_min_mhz, job->clock_max_mhz);
    if (job->clock_step_mhz < 1 || job->clock_step_mhz % (int)g->clock_step_mhz != 0 ||
        (job->clock_max_mhz - job->clock_min_mhz) % job->clock_step_mhz != 0)
        return kr_error_set(err, KR_ERANGE,
                            "job '%s': planning.clock_step_mhz: expected a multiple of the GPU's %d MHz step that divides "
                            "clock_max_mhz - clock_min_mhz = %d, found %d",
                            n, (int)g->clock_step_mhz, job->clock_max_mhz - job->clock_min_mhz, job->clock_step_mhz);
    int rc;
    if ((rc = check_smlist(job, &job->sms_allreduce, "planning.sms_allreduce", err)) ||
        (rc = check_smlist(job, &job->sms_gather, "planning.sms_gather", err)))
        return rc;
    if (!(job->static_power_w >= 0) || job->static_power_w >= g->tdp_w)
        return kr_error_set(err, KR_ERANGE, "job '%s': planning.static_power_w: expected a value in [0, %g), found %g", n,
                            g->tdp_w, job->static_power_w);
    return KR_OK;
}

/* ---- JSON --------------------------------------------------------------------------- */

static int read_smlist(kr__jctx *c, const json_t *obj, const char *key, kr_smlist *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return KR_OK;
    size_t m = kr__jpush_key(c, key);
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
        static const char *const f[] = {"min", "max", "step", NULL};
        int lo, hi, step;
        if ((rc = kr__jobject(c, v, f)) || (rc = kr__jint32(c, v, "min", 1, 1, 100000, 1, &lo)) ||
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

static int read_model(kr__jctx *c, const json_t *v, kr_model *m)
{
    if (json_is_string(v)) {
        kr_error e = {0};
        if (kr_catalog_model_find(json_string_value(v), m, &e))
            return kr__jfailf(c, KR_ENOTFOUND, "model", "%s", e.msg);
        return KR_OK;
    }
    size_t mk = kr__jpush_key(c, "model");
    static const char *const f[] = {"name", "display", "base", "hidden", "ffn", "heads", "kv_groups", "head_dim",
                                    "layers", "vocab", "tied_embeddings", "qk_norm", "source", NULL};
    int rc = kr__jobject(c, v, f);
    if (rc) {
        if (!json_is_object(v))
            kr__jfail(c, KR_EPARSE, NULL, "a model name or a model object", v);
        return rc;
    }
    char base[KR_NAME_MAX];
    memset(m, 0, sizeof *m);
    if ((rc = kr__jstr(c, v, "base", 0, "", base, sizeof base)))
        return rc;
    int req = 1;
    if (base[0]) {
        kr_error e = {0};
        if (kr_catalog_model_find(base, m, &e))
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
        (rc = kr__jstr(c, v, "source", 0, base[0] ? m->source : "user-supplied model", m->source, sizeof m->source)))
        return rc;
    kr__jpop(c, mk);
    return KR_OK;
}

static int read_gpu(kr__jctx *c, const json_t *v, kr_gpu *g)
{
    if (json_is_string(v)) {
        kr_error e = {0};
        if (kr_catalog_gpu_find(json_string_value(v), g, &e))
            return kr__jfailf(c, KR_ENOTFOUND, "gpu", "%s", e.msg);
        return KR_OK;
    }
    size_t m = kr__jpush_key(c, "gpu");
    static const char *const f[] = {"file", NULL};
    int rc = kr__jobject(c, v, f);
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

static int job_from_json(kr__jctx *c, const json_t *root, kr_job *job)
{
    static const char *const top[] = {"schema", "version", "name", "gpu", "model", "cluster", "parallelism",
                                      "microbatch_size", "seq_len", "num_microbatches", "layers_per_stage",
                                      "virtual_stages", "recompute", "schedule", "planning", NULL};
    int rc = kr__jobject(c, root, top);
    if (rc)
        return rc;
    char schema[32], buf[64];
    long long version;
    if ((rc = kr__jstr(c, root, "schema", 0, "kareus.job", schema, sizeof schema)))
        return rc;
    if (strcmp(schema, "kareus.job") != 0)
        return kr__jfail(c, KR_EPARSE, "schema", "\"kareus.job\"", json_object_get(root, "schema"));
    if ((rc = kr__jint(c, root, "version", 0, KR_JOB_VERSION, KR_JOB_VERSION, KR_JOB_VERSION, &version)))
        return rc;

    kr_job_default(job);
    if ((rc = kr__jstr(c, root, "name", 0, "job", job->name, sizeof job->name)))
        return rc;
    const json_t *v;
    if ((v = json_object_get(root, "gpu")) && (rc = read_gpu(c, v, &job->gpu)))
        return rc;
    if ((v = json_object_get(root, "model")) && (rc = read_model(c, v, &job->model)))
        return rc;
    planning_defaults(job);

    if ((v = json_object_get(root, "cluster"))) {
        size_t m = kr__jpush_key(c, "cluster");
        static const char *const f[] = {"gpus_per_node", "nodes", "inter_node_bw_GBps", "inter_node_latency_us", NULL};
        double bw, lat;
        if ((rc = kr__jobject(c, v, f)) ||
            (rc = kr__jint32(c, v, "gpus_per_node", 0, 1, 1024, job->cluster.gpus_per_node, &job->cluster.gpus_per_node)) ||
            (rc = kr__jint32(c, v, "nodes", 0, 1, 1 << 20, 0, &job->cluster.nodes)) ||
            (rc = kr__jnum(c, v, "inter_node_bw_GBps", 0, 1e-6, 1e6, job->cluster.inter_node_bw_Bps / 1e9, &bw)) ||
            (rc = kr__jnum(c, v, "inter_node_latency_us", 0, 0, 1e7, job->cluster.inter_node_latency_s * 1e6, &lat)))
            return rc;
        job->cluster.inter_node_bw_Bps = bw * 1e9;
        job->cluster.inter_node_latency_s = lat * 1e-6;
        kr__jpop(c, m);
    } else {
        job->cluster.nodes = 0;
    }
    if ((v = json_object_get(root, "parallelism"))) {
        size_t m = kr__jpush_key(c, "parallelism");
        static const char *const f[] = {"tp", "cp", "pp", "dp", NULL};
        if ((rc = kr__jobject(c, v, f)) || (rc = kr__jint32(c, v, "tp", 0, -1000000, 1000000, job->tp, &job->tp)) ||
            (rc = kr__jint32(c, v, "cp", 0, -1000000, 1000000, job->cp, &job->cp)) ||
            (rc = kr__jint32(c, v, "pp", 0, -1000000, 1000000, job->pp, &job->pp)) ||
            (rc = kr__jint32(c, v, "dp", 0, -1000000, 1000000, job->dp, &job->dp)))
            return rc;
        kr__jpop(c, m);
    }
    if ((rc = kr__jint32(c, root, "microbatch_size", 0, -1000000, 1000000, job->microbatch_size, &job->microbatch_size)) ||
        (rc = kr__jint32(c, root, "seq_len", 0, -100000000, 100000000, job->seq_len, &job->seq_len)) ||
        (rc = kr__jint32(c, root, "num_microbatches", 0, -1000000, 1000000, job->num_microbatches,
                         &job->num_microbatches)) ||
        (rc = kr__jint32(c, root, "virtual_stages", 0, -1000, 1000, 1, &job->virtual_stages)))
        return rc;
    for (int s = 0; s < KR_MAX_STAGES; s++)
        job->layers_per_stage[s] = 0;
    if ((v = json_object_get(root, "layers_per_stage"))) {
        size_t m = kr__jpush_key(c, "layers_per_stage");
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
    v = json_object_get(root, "recompute");
    if (v) {
        if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0)
            job->recompute = 1;
        else if (json_is_string(v) && strcmp(json_string_value(v), "none") == 0)
            job->recompute = 0;
        else if (json_is_boolean(v))
            job->recompute = json_is_true(v);
        else
            return kr__jfail(c, KR_EPARSE, "recompute", "\"full\" or \"none\"", v);
    }
    if ((rc = kr__jstr(c, root, "schedule", 0, "1f1b", buf, sizeof buf)))
        return rc;
    if (kr_schedule_parse(buf, &job->schedule))
        return kr__jfail(c, KR_EPARSE, "schedule", "\"1f1b\", \"gpipe\" or \"interleaved-1f1b\"",
                         json_object_get(root, "schedule"));
    if ((v = json_object_get(root, "planning"))) {
        size_t m = kr__jpush_key(c, "planning");
        static const char *const f[] = {"clock_min_mhz", "clock_max_mhz", "clock_step_mhz", "sms_allreduce",
                                        "sms_gather", "static_power_w", NULL};
        if ((rc = kr__jobject(c, v, f)) ||
            (rc = kr__jint32(c, v, "clock_min_mhz", 0, -100000, 100000, job->clock_min_mhz, &job->clock_min_mhz)) ||
            (rc = kr__jint32(c, v, "clock_max_mhz", 0, -100000, 100000, job->clock_max_mhz, &job->clock_max_mhz)) ||
            (rc = kr__jint32(c, v, "clock_step_mhz", 0, -100000, 100000, job->clock_step_mhz, &job->clock_step_mhz)) ||
            (rc = read_smlist(c, v, "sms_allreduce", &job->sms_allreduce)) ||
            (rc = read_smlist(c, v, "sms_gather", &job->sms_gather)) ||
            (rc = kr__jnum(c, v, "static_power_w", 0, -1e6, 1e6, job->static_power_w, &job->static_power_w)))
            return rc;
        kr__jpop(c, m);
    }
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

static json_t *smlist_json(const kr_smlist *l)
{
    json_t *a = json_array();
    for (int i = 0; i < l->n; i++)
        json_array_append_new(a, json_integer(l->v[i]));
    return a;
}

int kr_job_write(const char *path, const kr_job *job, kr_error *err)
{
    kr_gpu builtin;
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kareus.job"));
    json_object_set_new(root, "version", json_integer(KR_JOB_VERSION));
    json_object_set_new(root, "name", json_string(job->name));
    int gpu_is_builtin = kr_catalog_gpu_find(job->gpu.name, &builtin, NULL) == KR_OK &&
                         memcmp(&builtin, &job->gpu, sizeof builtin) == 0;
    if (gpu_is_builtin) {
        json_object_set_new(root, "gpu", json_string(job->gpu.name));
    } else {
        /* A GPU that is not a built-in entry goes to a file beside the job; its name comes from
         * input, so it must be one plain file name (never "../x" or "/etc/x"). */
        if (!kr__safe_filename(job->gpu.name) || strlen(job->gpu.name) > 200) {
            json_decref(root);
            return kr_error_set(err, KR_EINVAL,
                                "%s: gpu.name: expected a name usable as a file name (1..200 of A-Z a-z 0-9 . _ + -, "
                                "not starting with '.' or '-') to write NAME.gpu.json beside the job, found '%s'",
                                path, job->gpu.name);
        }
        char gpath[4200], gname[300];
        snprintf(gname, sizeof gname, "%s.gpu.json", job->gpu.name);
        char dir[4096];
        kr__strlcpy(dir, path, sizeof dir);
        snprintf(gpath, sizeof gpath, "%s/%s", dirname(dir), gname);
        int rc = kr_gpu_write_json(gpath, &job->gpu, err);
        if (rc) {
            json_decref(root);
            return rc;
        }
        json_t *g = json_object();
        json_object_set_new(g, "file", json_string(gname));
        json_object_set_new(root, "gpu", g);
    }
    kr_model bm;
    if (kr_catalog_model_find(job->model.name, &bm, NULL) == KR_OK && memcmp(&bm, &job->model, sizeof bm) == 0) {
        json_object_set_new(root, "model", json_string(job->model.name));
    } else {
        json_object_set_new(root, "model", kr_model_json(&job->model));
    }
    json_t *cl = json_object();
    json_object_set_new(cl, "gpus_per_node", json_integer(job->cluster.gpus_per_node));
    json_object_set_new(cl, "nodes", json_integer(job->cluster.nodes));
    kr__jset_real(cl, "inter_node_bw_GBps", job->cluster.inter_node_bw_Bps / 1e9);
    kr__jset_real(cl, "inter_node_latency_us", job->cluster.inter_node_latency_s * 1e6);
    json_object_set_new(root, "cluster", cl);
    json_t *par = json_object();
    json_object_set_new(par, "tp", json_integer(job->tp));
    json_object_set_new(par, "cp", json_integer(job->cp));
    json_object_set_new(par, "pp", json_integer(job->pp));
    json_object_set_new(par, "dp", json_integer(job->dp));
    json_object_set_new(root, "parallelism", par);
    json_object_set_new(root, "microbatch_size", json_integer(job->microbatch_size));
    json_object_set_new(root, "seq_len", json_integer(job->seq_len));
    json_object_set_new(root, "num_microbatches", json_integer(job->num_microbatches));
    json_t *lps = json_array();
    for (int s = 0; s < job->pp; s++)
        json_array_append_new(lps, json_integer(job->layers_per_stage[s]));
    json_object_set_new(root, "layers_per_stage", lps);
    json_object_set_new(root, "virtual_stages", json_integer(job->virtual_stages));
    json_object_set_new(root, "recompute", json_string(job->recompute ? "full" : "none"));
    json_object_set_new(root, "schedule", json_string(kr_schedule_name(job->schedule)));
    json_t *pl = json_object();
    json_object_set_new(pl, "clock_min_mhz", json_integer(job->clock_min_mhz));
    json_object_set_new(pl, "clock_max_mhz", json_integer(job->clock_max_mhz));
    json_object_set_new(pl, "clock_step_mhz", json_integer(job->clock_step_mhz));
    json_object_set_new(pl, "sms_allreduce", smlist_json(&job->sms_allreduce));
    json_object_set_new(pl, "sms_gather", smlist_json(&job->sms_gather));
    kr__jset_real(pl, "static_power_w", job->static_power_w);
    json_object_set_new(root, "planning", pl);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
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
