/*
 * sweep.c — the comm sweep (`kareus profile --comm-sweep`): the comm kernel alone over clocks x
 * CTA counts x kernels for the collectives of a job, measured on the simulator or a GPU, and its
 * JSONL log.
 *
 * The log follows the conventions of the measurement log (src/search/mlog.c): a header line
 * {"schema":"kareus.commsweep","version":1,"job":FINGERPRINT,"job_name","gpu","clock_max_mhz",
 * "backend"}, then one point per line written with one fwrite, flushed and (sync) fsync'd before
 * the next point is measured, so a crash leaves at most one torn last line, which opening drops
 * (truncating after the last newline) with a warning. An existing non-empty file whose first
 * line is not our header (complete with its newline), or is one of another job or backend, is
 * refused before anything is written, truncated or created: a mistyped path never loses a
 * user's file. Reopening skips the points already measured (kr_profiler_sweep_log_has), so an
 * interrupted sweep resumes where it stopped and ends with the same log as an uninterrupted one.
 * Readers (kr_profiler_sweep_read, `kareus calibrate`) never change the file: they skip a torn
 * last line with a warning. docs/formats.md lists the fields.
 */
#include "kareus/profiler.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kareus/sim.h"
#include "util/util.h"

#define SWEEP_SCHEMA "kareus.commsweep"
#define SWEEP_VERSION 1

static const char *const kernel_names[] = {"tuned", "nccl", "proxy"};

const char *kr_profiler_sweep_kernel_name(kr_profiler_sweep_kernel k)
{
    return (unsigned)k < 3 ? kernel_names[k] : "?";
}

int kr_profiler_sweep_kernel_parse(const char *name, kr_profiler_sweep_kernel *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, kernel_names[i]) == 0) {
            *out = (kr_profiler_sweep_kernel)i;
            return KR_OK;
        }
    return KR_EINVAL;
}

double kr_profiler_sweep_bus_bytes(const kr_profiler_sweep_point *p)
{
    double n = p->group;
    return (p->coll == KR_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (n - 1) / n) * p->bytes;
}

/* ---- the plan ---------------------------------------------------------------------------- */

int kr_profiler_sweep_plan(const kr_job *job, const kr_profiler_sweep_config *cfg, kr_profiler_sweep_point **out,
                           int *n, kr_error *err)
{
    *out = NULL;
    *n = 0;
    if (cfg->nkernels < 1 || cfg->nclocks < 1 || cfg->nctas < 1)
        return kr_error_set(err, KR_EINVAL, "comm sweep: expected at least one kernel, clock and CTA count");
    for (int i = 0; i < cfg->nctas; i++)
        if (cfg->ctas[i] < 1 || cfg->ctas[i] >= job->gpu.sm_count)
            return kr_error_set(err, KR_ERANGE, "comm sweep: CTAs: expected 1..%d, found %d", (int)job->gpu.sm_count - 1,
                                cfg->ctas[i]);
    for (int i = 0; i < cfg->nclocks; i++)
        if (cfg->clocks_mhz[i] < job->gpu.clock_min_mhz || cfg->clocks_mhz[i] > job->gpu.clock_max_mhz)
            return kr_error_set(err, KR_ERANGE, "comm sweep: clock: expected %g..%g MHz (%s), found %d",
                                job->gpu.clock_min_mhz, job->gpu.clock_max_mhz, job->gpu.name, cfg->clocks_mhz[i]);
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return kr_error_set(err, KR_ENOMEM, "comm sweep: out of memory");
    int rc = kr_partition_catalog(job, KR_VARIANT_KAREUS, set, err);
    kr_collective colls[KR_MAX_PARTITIONS];
    int nc = 0;
    for (int i = 0; rc == KR_OK && i < set->n; i++) {
        const kr_collective *c = &set->p[i].coll;
        int seen = c->kind == KR_COLL_NONE || c->group_size < 2;
        for (int j = 0; j < nc && !seen; j++)
            seen = colls[j].kind == c->kind && colls[j].bytes == c->bytes && colls[j].group_size == c->group_size;
        if (!seen)
            colls[nc++] = *c;
    }
    free(set);
    if (rc)
        return rc;
    if (nc == 0)
        return kr_error_set(err, KR_EINVAL, "comm sweep: job '%s' has no collective in its partitions", job->name);
    size_t total = (size_t)nc * (size_t)cfg->nkernels * (size_t)cfg->nctas * (size_t)cfg->nclocks;
    kr_profiler_sweep_point *p = calloc(total, sizeof *p);
    if (p == NULL)
        return kr_error_set(err, KR_ENOMEM, "comm sweep: out of memory");
    size_t k = 0;
    /* Clock outside CTAs: on a GPU every clock change costs a settle. */
    for (int c = 0; c < nc; c++)
        for (int kn = 0; kn < cfg->nkernels; kn++)
            for (int f = 0; f < cfg->nclocks; f++)
                for (int s = 0; s < cfg->nctas; s++, k++) {
                    p[k].kernel = cfg->kernels[kn];
                    p[k].coll = colls[c].kind;
                    p[k].bytes = colls[c].bytes;
                    p[k].group = colls[c].group_size;
                    p[k].ctas = cfg->ctas[s];
                    p[k].freq_mhz = cfg->clocks_mhz[f];
                    /* The GPUs it will run on are part of what identifies it: NCCL over 2 GPUs
                     * and over 8 are different measurements of the same collective. */
                    p[k].ranks = p[k].kernel == KR_SWEEP_PROXY ? 1
                                 : p[k].kernel == KR_SWEEP_NCCL && cfg->ranks > 0
                                     ? (cfg->ranks < p[k].group ? cfg->ranks : p[k].group)
                                     : p[k].group;
                }
    *out = p;
    *n = (int)total;
    return KR_OK;
}

/* ---- measuring ---------------------------------------------------------------------------- */

int kr_profiler_sweep_measure_sim(const kr_gpu *gpu, const kr_cluster *cluster, kr_profiler_sweep_point *p,
                                  kr_error *err)
{
    if (p->kernel == KR_SWEEP_PROXY)
        return kr_error_set(err, KR_EINVAL, "comm sweep: the simulator has no single-GPU proxy kernel");
    kr_collective c;
    memset(&c, 0, sizeof c);
    c.kind = p->coll;
    c.group_size = p->group;
    c.bytes = p->bytes;
    kr__strlcpy(c.group, p->coll == KR_COLL_ALLREDUCE ? "tp" : "cp", sizeof c.group);
    kr_sim_coll_result r;
    int rc = kr_sim_collective_kernel(gpu, cluster, &c, p->kernel == KR_SWEEP_TUNED ? KR_SIM_TUNED : KR_SIM_NCCL,
                                      p->ctas, p->freq_mhz, &r, err);
    if (rc)
        return rc;
    p->ranks = p->group;
    p->clock_mhz = (int)lround(r.f_eff_mhz);
    p->time_s = r.time_s;
    p->time_sd_s = 0;
    p->busbw_Bps = kr_profiler_sweep_bus_bytes(p) / r.time_s;
    p->power_w = r.power_w;
    p->repeats = 1;
    return KR_OK;
}

int kr_profiler_sweep_measure_gpu(kr_profiler_runner *runner, kr_backend *ctl, const kr_profiler_config *o,
                                  const kr_profiler_clock *clk, kr_profiler_sweep_point *p, int *locked_mhz,
                                  kr_error *err)
{
    if (p->kernel == KR_SWEEP_TUNED)
        return kr_error_set(err, KR_EUNSUPPORTED, "comm sweep: the CUDA runner has no tuned all-reduce kernel");
    if (p->kernel == KR_SWEEP_NCCL && runner->ndevices < 2)
        return kr_error_set(err, KR_EINVAL, "comm sweep: NCCL needs two or more GPUs (found %d); use the proxy",
                            runner->ndevices);
    kr_profiler_program *prog = malloc(sizeof *prog);
    kr_profiler_result *res = malloc(sizeof *res);
    int rc = prog && res ? KR_OK : kr_error_set(err, KR_ENOMEM, "comm sweep: out of memory");
    if (rc == KR_OK)
        rc = kr_profiler_program_collective(p->coll, p->bytes, p->group, p->ctas,
                                            p->kernel == KR_SWEEP_NCCL ? KR_PROFILER_COMM_NCCL
                                                                       : KR_PROFILER_COMM_PROXY_UNPACED,
                                            runner->ndevices, prog, err);
    if (rc == KR_OK) {
        prog->freq_mhz = p->freq_mhz;
        rc = runner->ops->prepare(runner->impl, prog, err);
    }
    if (rc == KR_OK)
        rc = kr_profiler_measure(runner, ctl, o, clk, prog, 0.0, locked_mhz, res, err);
    if (rc == KR_OK) {
        p->ranks = prog->ranks;
        p->clock_mhz = res->clock_read_mhz > 0 ? res->clock_read_mhz : p->freq_mhz;
        p->time_s = res->m.time_s;
        p->time_sd_s = res->m.time_sd_s;
        p->busbw_Bps = kr_profiler_sweep_bus_bytes(p) / res->m.time_s;
        p->power_w = res->m.energy_j / res->m.time_s;
        p->repeats = res->m.repeats;
    }
    free(prog);
    free(res);
    return rc;
}

/* ---- lines ---------------------------------------------------------------------------------- */

static int same_point(const kr_profiler_sweep_point *a, const kr_profiler_sweep_point *b)
{
    return a->kernel == b->kernel && a->coll == b->coll && a->bytes == b->bytes && a->group == b->group &&
           a->ranks == b->ranks && a->ctas == b->ctas && a->freq_mhz == b->freq_mhz;
}

/* The header of a log (what kr_profiler_sweep_log_open writes and checks). */
typedef struct sweep_head {
    char job[32], job_name[128], gpu[KR_NAME_MAX], backend[16];
    double clock_max_mhz;
} sweep_head;

static int parse_header(const json_t *obj, const char *where, sweep_head *h, kr_error *err)
{
    kr__jctx c;
    kr__jctx_init(&c, where, err);
    static const char *const f[] = {"schema", "version", "job", "job_name", "gpu", "clock_max_mhz", "backend", NULL};
    char schema[32];
    long long version;
    int rc;
    if ((rc = kr__jobject(&c, obj, f)) || (rc = kr__jstr(&c, obj, "schema", 1, NULL, schema, sizeof schema)))
        return rc;
    if (strcmp(schema, SWEEP_SCHEMA) != 0)
        return kr__jfail(&c, KR_EPARSE, "schema", "\"" SWEEP_SCHEMA "\" (a Kareus comm-sweep log)",
                         json_object_get(obj, "schema"));
    if ((rc = kr__jint(&c, obj, "version", 1, SWEEP_VERSION, SWEEP_VERSION, 0, &version)) ||
        (rc = kr__jstr(&c, obj, "job", 1, NULL, h->job, sizeof h->job)) ||
        (rc = kr__jstr(&c, obj, "job_name", 0, "", h->job_name, sizeof h->job_name)) ||
        (rc = kr__jstr(&c, obj, "gpu", 1, NULL, h->gpu, sizeof h->gpu)) ||
        (rc = kr__jnum(&c, obj, "clock_max_mhz", 1, 1, 1e5, 0, &h->clock_max_mhz)) ||
        (rc = kr__jstr(&c, obj, "backend", 1, NULL, h->backend, sizeof h->backend)))
        return rc;
    if (strcmp(h->backend, "sim") != 0 && strcmp(h->backend, "gpu") != 0)
        return kr__jfail(&c, KR_EPARSE, "backend", "\"sim\" or \"gpu\"", json_object_get(obj, "backend"));
    return KR_OK;
}

static int parse_point(const json_t *obj, const char *where, const char *fp, kr_profiler_sweep_point *p,
                       kr_error *err)
{
    kr__jctx c;
    kr__jctx_init(&c, where, err);
    static const char *const f[] = {"kernel", "coll", "bytes", "group", "ctas", "freq", "ranks", "clock_mhz", "time_s",
                                    "time_sd_s", "busbw_Bps", "power_w", "repeats", "job", NULL};
    char kernel[16], coll[16], job[32];
    int rc;
    memset(p, 0, sizeof *p);
    if ((rc = kr__jobject(&c, obj, f)) || (rc = kr__jstr(&c, obj, "kernel", 1, NULL, kernel, sizeof kernel)))
        return rc;
    if (kr_profiler_sweep_kernel_parse(kernel, &p->kernel))
        return kr__jfail(&c, KR_EPARSE, "kernel", "tuned, nccl or proxy", json_object_get(obj, "kernel"));
    if ((rc = kr__jstr(&c, obj, "coll", 1, NULL, coll, sizeof coll)))
        return rc;
    p->coll = KR_COLL_NONE;
    for (int k = KR_COLL_ALLREDUCE; k <= KR_COLL_REDUCESCATTER; k++)
        if (strcmp(coll, kr_coll_kind_name((kr_coll_kind)k)) == 0)
            p->coll = (kr_coll_kind)k;
    if (p->coll == KR_COLL_NONE)
        return kr__jfail(&c, KR_EPARSE, "coll", "allreduce, allgather or reducescatter", json_object_get(obj, "coll"));
    if ((rc = kr__jnum(&c, obj, "bytes", 1, 1, 1e15, 0, &p->bytes)) ||
        (rc = kr__jint32(&c, obj, "group", 1, 2, 1 << 20, 0, &p->group)) ||
        (rc = kr__jint32(&c, obj, "ctas", 1, 1, 1 << 16, 0, &p->ctas)) ||
        (rc = kr__jint32(&c, obj, "freq", 1, 1, 100000, 0, &p->freq_mhz)) ||
        (rc = kr__jint32(&c, obj, "ranks", 1, 1, 1 << 20, 0, &p->ranks)) ||
        (rc = kr__jint32(&c, obj, "clock_mhz", 1, 1, 100000, 0, &p->clock_mhz)) ||
        (rc = kr__jnum(&c, obj, "time_s", 1, 1e-12, 1e6, 0, &p->time_s)) ||
        (rc = kr__jnum(&c, obj, "time_sd_s", 0, 0, 1e6, 0, &p->time_sd_s)) ||
        (rc = kr__jnum(&c, obj, "busbw_Bps", 1, 0, 1e18, 0, &p->busbw_Bps)) ||
        (rc = kr__jnum(&c, obj, "power_w", 1, 0, 1e5, 0, &p->power_w)) ||
        (rc = kr__jint32(&c, obj, "repeats", 1, 1, 1 << 20, 0, &p->repeats)) ||
        (rc = kr__jstr(&c, obj, "job", 1, NULL, job, sizeof job)))
        return rc;
    if (strcmp(job, fp) != 0)
        return kr__jfailf(&c, KR_EMISMATCH, "job", "expected the header's job fingerprint %s, found \"%s\"", fp, job);
    return KR_OK;
}

/*
 * Parses a whole log: the header (checked against want when not NULL: same job fingerprint and
 * backend), then the points. A last line without its newline that does not parse is torn:
 * *valid_len is where it starts and *torn its line number. Anything else malformed is KR_EPARSE
 * with FILE:LINE. A first line that is not our complete header is refused (the file is not ours).
 */
static int parse_log(const char *path, const char *text, size_t len, const sweep_head *want, sweep_head *h,
                     kr_profiler_sweep_point **pts, int *npts, size_t *valid_len, int *torn, kr_error *err)
{
    *valid_len = len;
    *torn = 0;
    int lineno = 0, cap = 0, rc = KR_OK;
    for (size_t start = 0; start < len && rc == KR_OK;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t n = (nl ? (size_t)(nl - text) : len) - start;
        size_t next = nl ? start + n + 1 : len;
        char where[4200];
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        int blank = lineno > 1;
        for (size_t i = 0; i < n && blank; i++)
            blank = text[start + i] == ' ' || text[start + i] == '\t';
        if (blank) { /* as the measurement log: blank lines are skipped */
            start = next;
            continue;
        }
        json_error_t je;
        json_t *obj = memchr(text + start, '\0', n) ? NULL : json_loadb(text + start, n, JSON_REJECT_DUPLICATES, &je);
        if (lineno == 1) {
            if (obj == NULL || nl == NULL || !json_is_object(obj) || json_object_get(obj, "schema") == NULL) {
                char shown[48];
                size_t k = 0;
                for (size_t i = 0; i < n && k + 1 < sizeof shown; i++)
                    shown[k++] = (text[start + i] >= 0x20 && text[start + i] < 0x7f) ? text[start + i] : '?';
                shown[k] = '\0';
                json_decref(obj);
                return kr_error_set(err, KR_EPARSE,
                                    "%s: expected a Kareus comm-sweep log (first line {\"schema\":\"" SWEEP_SCHEMA
                                    "\",...}), found '%s': not used and left unchanged (give a new file name)",
                                    where, shown);
            }
            rc = parse_header(obj, where, h, err);
            json_decref(obj);
            if (rc == KR_OK && want && strcmp(want->job, h->job) != 0)
                rc = kr_error_set(err, KR_EMISMATCH,
                                  "%s: job: expected the fingerprint of job '%s' (%s), found \"%s\" (job '%s'): this "
                                  "sweep was measured for a different job or GPU entry; left unchanged",
                                  where, want->job_name, want->job, h->job, h->job_name);
            else if (rc == KR_OK && want && strcmp(want->backend, h->backend) != 0)
                rc = kr_error_set(err, KR_EMISMATCH,
                                  "%s: backend: expected \"%s\", found \"%s\": a sweep log holds one backend's "
                                  "measurements; left unchanged",
                                  where, want->backend, h->backend);
            start = next;
            continue;
        }
        if (obj == NULL && nl == NULL) {
            *valid_len = start; /* a write interrupted by a crash */
            *torn = lineno;
            break;
        }
        if (obj == NULL)
            return kr_error_set(err, KR_EPARSE, "%s:%d: invalid JSON: %s", where, je.column, je.text);
        kr_profiler_sweep_point p;
        rc = parse_point(obj, where, h->job, &p, err);
        json_decref(obj);
        if (rc == KR_OK && *npts == cap) {
            cap = cap ? 2 * cap : 64;
            kr_profiler_sweep_point *q = realloc(*pts, (size_t)cap * sizeof *q);
            if (q == NULL)
                return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
            *pts = q;
        }
        if (rc == KR_OK)
            (*pts)[(*npts)++] = p;
        start = next;
    }
    return rc;
}

/* Drops later duplicates (same identity), keeping the first; returns how many were dropped. */
static int dedupe(kr_profiler_sweep_point *p, int *n)
{
    int k = 0;
    for (int i = 0; i < *n; i++) {
        int dup = 0;
        for (int j = 0; j < k && !dup; j++)
            dup = same_point(&p[j], &p[i]);
        if (!dup)
            p[k++] = p[i];
    }
    int dropped = *n - k;
    *n = k;
    return dropped;
}

/* ---- the log ------------------------------------------------------------------------------- */

struct kr_profiler_sweep_log {
    char path[4096];
    FILE *f;
    sweep_head head;
    int sync;
    int need_nl; /* the last line parsed but had no newline: one is written before appending */
    int n, cap;
    kr_profiler_sweep_point *p;
    char warning[1024];
};

/* Appends o as one line and releases it. */
static int write_line(kr_profiler_sweep_log *log, json_t *o, kr_error *err)
{
    int rc = kr__jsonl_append(log->f, o, log->sync, log->path, "append", err);
    json_decref(o);
    return rc;
}

static int log_read_existing(kr_profiler_sweep_log *log, kr_error *err)
{
    struct stat st;
    if (lstat(log->path, &st) != 0)
        return KR_OK;
    if (S_ISLNK(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: is a symbolic link; give the log's real path", log->path);
    char *text = NULL;
    size_t len = 0, valid;
    int torn = 0, rc = kr__read_file(log->path, &text, &len, err);
    sweep_head h;
    if (rc == KR_OK && len > 0)
        rc = parse_log(log->path, text, len, &log->head, &h, &log->p, &log->n, &valid, &torn, err);
    if (rc == KR_OK && torn)
        rc = kr__jsonl_drop_torn(log->path, text, len, valid, torn, log->warning, sizeof log->warning, err);
    log->need_nl = rc == KR_OK && !torn && len > 0 && text[len - 1] != '\n';
    int dups = rc == KR_OK ? dedupe(log->p, &log->n) : 0;
    if (dups) {
        size_t w = strlen(log->warning);
        snprintf(log->warning + w, sizeof log->warning - w, "%s%s: %d duplicate points (first kept)", w ? "; " : "",
                 log->path, dups);
    }
    log->cap = log->n;
    free(text);
    return rc == KR_OK && len == 0 ? 1 : rc; /* 1: empty, the header is still to be written */
}

int kr_profiler_sweep_log_open(const char *path, const kr_job *job, const char *backend, int sync,
                               kr_profiler_sweep_log **out, kr_error *err)
{
    *out = NULL;
    if (path[0] == '\0')
        return kr_error_set(err, KR_EINVAL, "empty log file name");
    kr_profiler_sweep_log *log = calloc(1, sizeof *log);
    if (log == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    int rc = KR_OK;
    if (kr__strlcpy(log->path, path, sizeof log->path))
        rc = kr_error_set(err, KR_EINVAL, "%s: path too long", path);
    log->sync = sync;
    kr_job_fingerprint(job, log->head.job);
    kr__strlcpy(log->head.job_name, job->name, sizeof log->head.job_name);
    kr__strlcpy(log->head.gpu, job->gpu.name, sizeof log->head.gpu);
    kr__strlcpy(log->head.backend, backend, sizeof log->head.backend);
    log->head.clock_max_mhz = job->gpu.clock_max_mhz;
    int fresh = rc == KR_OK ? log_read_existing(log, err) : rc;
    if (fresh < 0) {
        kr_profiler_sweep_log_close(log);
        return fresh;
    }
    if ((rc = kr__jsonl_open_append(path, log->need_nl, &log->f, err))) {
        kr_profiler_sweep_log_close(log);
        return rc;
    }
    if (fresh == 1 || lseek(fileno(log->f), 0, SEEK_END) == 0) {
        json_t *h = json_pack("{s:s, s:i, s:s, s:s, s:s, s:f, s:s}", "schema", SWEEP_SCHEMA, "version", SWEEP_VERSION,
                              "job", log->head.job, "job_name", log->head.job_name, "gpu", log->head.gpu,
                              "clock_max_mhz", log->head.clock_max_mhz, "backend", backend);
        int save = log->sync;
        log->sync = 1;
        rc = write_line(log, h, err);
        log->sync = save;
        if (rc) {
            kr_profiler_sweep_log_close(log);
            return rc;
        }
    }
    *out = log;
    return KR_OK;
}

int kr_profiler_sweep_log_has(const kr_profiler_sweep_log *log, const kr_profiler_sweep_point *p)
{
    for (int i = 0; i < log->n; i++)
        if (same_point(&log->p[i], p))
            return 1;
    return 0;
}

int kr_profiler_sweep_log_append(kr_profiler_sweep_log *log, const kr_profiler_sweep_point *p, kr_error *err)
{
    json_t *o = json_object();
    int bad = o == NULL;
    if (!bad) {
        bad |= json_object_set_new(o, "kernel", json_string(kr_profiler_sweep_kernel_name(p->kernel)));
        bad |= json_object_set_new(o, "coll", json_string(kr_coll_kind_name(p->coll)));
        bad |= kr__jset_real(o, "bytes", p->bytes);
        bad |= json_object_set_new(o, "group", json_integer(p->group));
        bad |= json_object_set_new(o, "ctas", json_integer(p->ctas));
        bad |= json_object_set_new(o, "freq", json_integer(p->freq_mhz));
        bad |= json_object_set_new(o, "ranks", json_integer(p->ranks));
        bad |= json_object_set_new(o, "clock_mhz", json_integer(p->clock_mhz));
        bad |= kr__jset_real(o, "time_s", p->time_s);
        bad |= kr__jset_real(o, "time_sd_s", p->time_sd_s);
        bad |= kr__jset_real(o, "busbw_Bps", p->busbw_Bps);
        bad |= kr__jset_real(o, "power_w", p->power_w);
        bad |= json_object_set_new(o, "repeats", json_integer(p->repeats));
        bad |= json_object_set_new(o, "job", json_string(log->head.job));
    }
    if (bad) {
        json_decref(o);
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", log->path);
    }
    int rc = write_line(log, o, err);
    if (rc)
        return rc;
    if (log->n == log->cap) {
        int cap = log->cap ? 2 * log->cap : 64;
        kr_profiler_sweep_point *q = realloc(log->p, (size_t)cap * sizeof *q);
        if (q == NULL)
            return kr_error_set(err, KR_ENOMEM, "%s: out of memory", log->path);
        log->p = q;
        log->cap = cap;
    }
    log->p[log->n++] = *p;
    return KR_OK;
}

long kr_profiler_sweep_log_count(const kr_profiler_sweep_log *log)
{
    return log ? log->n : 0;
}

const char *kr_profiler_sweep_log_warning(const kr_profiler_sweep_log *log)
{
    return log ? log->warning : "";
}

void kr_profiler_sweep_log_close(kr_profiler_sweep_log *log)
{
    if (log == NULL)
        return;
    if (log->f) {
        fflush(log->f);
        fsync(fileno(log->f));
        fclose(log->f);
    }
    free(log->p);
    free(log);
}

/* ---- reading ----------------------------------------------------------------------------- */

int kr_profiler_sweep_is_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[1024];
    int ok = fgets(line, sizeof line, f) != NULL && strchr(line, '\n') != NULL;
    fclose(f);
    json_error_t je;
    json_t *o = ok ? json_loads(line, 0, &je) : NULL;
    const char *s = json_string_value(json_object_get(o, "schema"));
    ok = s && strcmp(s, SWEEP_SCHEMA) == 0;
    json_decref(o);
    return ok;
}

int kr_profiler_sweep_read(const char *path, kr_profiler_sweep_data *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0, valid;
    int torn = 0, rc = kr__read_file(path, &text, &len, err);
    sweep_head h;
    memset(&h, 0, sizeof h);
    if (rc == KR_OK && len == 0)
        rc = kr_error_set(err, KR_EPARSE, "%s: empty file, expected a Kareus comm-sweep log", path);
    if (rc == KR_OK)
        rc = parse_log(path, text, len, NULL, &h, &out->p, &out->n, &valid, &torn, err);
    if (rc == KR_OK) {
        kr__strlcpy(out->job, h.job, sizeof out->job);
        kr__strlcpy(out->job_name, h.job_name, sizeof out->job_name);
        kr__strlcpy(out->gpu, h.gpu, sizeof out->gpu);
        kr__strlcpy(out->backend, h.backend, sizeof out->backend);
        out->clock_max_mhz = h.clock_max_mhz;
        if (torn)
            snprintf(out->warning, sizeof out->warning, "%s:%d: skipped a torn last line (%zu bytes)", path, torn,
                     len - valid);
        int dups = dedupe(out->p, &out->n);
        if (dups) {
            size_t w = strlen(out->warning);
            snprintf(out->warning + w, sizeof out->warning - w, "%s%s: %d duplicate points (first kept)",
                     w ? "; " : "", path, dups);
        }
    }
    free(text);
    if (rc)
        kr_profiler_sweep_data_free(out);
    return rc;
}

void kr_profiler_sweep_data_free(kr_profiler_sweep_data *d)
{
    free(d->p);
    d->p = NULL;
    d->n = 0;
}
