/*
 * mlog.c — the measurement log: reading and checking JSONL measurement lines (ours and the
 * artifact's eval_results.jsonl), torn-line recovery, deduplication, and durable appends.
 *
 * Line format (one JSON object per line). The artifact's fields come first, so its tools read
 * our logs: freq (MHz), overlap_start (slot name), overlap_end ("none": the launch window always
 * ends with the partition, kareus-method.md §1.3), sm (comm CTAs = SMs; 0 without a collective),
 * block (1024 with a collective, else 0; never searched), time_s, energy_j (per GPU, static
 * included). Ours: kernel ("nccl" when the kareus variant ran NCCL; absent means the tuned kernel,
 * so logs from before kernels existed read as they were), eff_energy_j, time_sd_s, energy_sd_j, repeats, key, variant, job (the job
 * fingerprint), backend, strategy, seed, batch, selected (why it was chosen), pred_time_s and
 * pred_energy_eff_j (the surrogate's prediction, when there is one). The artifact also writes
 * selected_dynamic/real/time/uncertainty and pred_energy_real_j; they are accepted and ignored.
 *
 * Durability: a line is written with one fwrite and flushed before the search uses the value,
 * and fsync'd at once (KR_LOG_SYNC_EACH, the default: a measurement on a GPU costs seconds) or
 * at the end of its batch (KR_LOG_SYNC_BATCH, for backends whose measurements cost microseconds
 * and can be redone, such as the simulator, where an fsync per line would dominate the run).
 * A flushed line survives a crash of the process either way; fsync adds survival of a crash of
 * the machine. A crash can leave at most one torn line, the last, without its newline; opening
 * the log drops it (truncating the file) and says so in a warning.
 *
 * Header: the first line of every log we write is {"schema":"kareus.mlog","version":1,
 * "job":FINGERPRINT,"job_name":NAME}. kr_search_log_open refuses an existing non-empty file
 * whose first line is not such a header (or names another job) and leaves it byte-identical,
 * so a mistyped --log can never truncate a user's file; torn-line recovery only ever happens in
 * a recognised log and only drops bytes after its last newline. Readers of logs (replay) skip
 * the header; the artifact's eval_results.jsonl has none and is read as before.
 *
 * Logs written before the header existed (commit bfbba06) are the same lines without it. Such a
 * file is recognised by its first line instead: complete with its newline, a JSON object with
 * our "key" and "job" fields (the artifact's lines have neither) and, as every line is then
 * checked before anything is written, this job's fingerprint. It is read with one warning, its
 * torn last line and duplicates are handled as in any log, and new lines are appended without a
 * header: one cannot be prepended without rewriting the file, and every line carries the job's
 * fingerprint, so the log stays recognisable as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search_internal.h"

/* ---- catalogs --------------------------------------------------------------------------- */

int kr__catalogs_build(const kr_job *job, kr__catalogs *c, kr_error *err)
{
    memset(c, 0, sizeof *c);
    for (int v = 0; v < 3; v++)
        c->ok[v] = kr_partition_catalog(job, (kr_variant)v, &c->var[v], NULL) == KR_OK;
    for (int stage = 0; stage < job->pp; stage++)
        for (int bwd = 0; bwd < 2; bwd++) {
            kr_partition_set np;
            int rc = kr_partition_nonpartition(job, stage, bwd, &np, err);
            if (rc)
                return rc;
            for (int i = 0; i < np.n; i++)
                if (!kr_partition_find(&c->nonpart, np.p[i].key) && c->nonpart.n < KR_MAX_PARTITIONS)
                    c->nonpart.p[c->nonpart.n++] = np.p[i];
        }
    return KR_OK;
}

const kr_partition *kr__catalogs_find(const kr__catalogs *c, const char *key, kr_variant v)
{
    const kr_partition *p = kr_partition_find(&c->nonpart, key);
    if (p)
        return p->variant == v ? p : NULL;
    if ((unsigned)v >= 3 || !c->ok[v])
        return NULL;
    return kr_partition_find(&c->var[v], key);
}

static void key_list(const kr__catalogs *c, kr_variant v, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if ((unsigned)v < 3 && c->ok[v])
        for (int i = 0; i < c->var[v].n && n + 32 < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", c->var[v].p[i].key);
    for (int i = 0; i < c->nonpart.n && n + 32 < cap; i++)
        if (c->nonpart.p[i].variant == v)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", c->nonpart.p[i].key);
}

/* ---- records ---------------------------------------------------------------------------- */

int kr__mrecs_push(kr__mrecs *m, const kr__mrec *r)
{
    if (kr__grow((void **)&m->r, &m->cap, m->n + 1, sizeof *m->r))
        return KR_ENOMEM;
    m->r[m->n++] = *r;
    return KR_OK;
}

static int cmp_lookup(const kr__mrec *a, const kr__mrec *b)
{
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    if (a->variant != b->variant)
        return a->variant < b->variant ? -1 : 1;
    if (a->freq_mhz != b->freq_mhz)
        return a->freq_mhz < b->freq_mhz ? -1 : 1;
    if ((c = strcmp(a->slot, b->slot)))
        return c;
    if (a->sms != b->sms)
        return a->sms < b->sms ? -1 : 1;
    return (a->kernel > b->kernel) - (a->kernel < b->kernel);
}

static int cmp_full(const void *x, const void *y)
{
    const kr__mrec *a = x, *b = y;
    int c = cmp_lookup(a, b);
    if (c)
        return c;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

size_t kr__mrecs_dedupe(kr__mrecs *m, int *first_dup_line)
{
    *first_dup_line = 0;
    if (m->n == 0)
        return 0;
    qsort(m->r, m->n, sizeof *m->r, cmp_full);
    size_t k = 1, dropped = 0;
    for (size_t i = 1; i < m->n; i++) {
        if (cmp_lookup(&m->r[k - 1], &m->r[i]) == 0) {
            if (dropped++ == 0 || m->r[i].line < *first_dup_line)
                *first_dup_line = m->r[i].line;
            continue;
        }
        m->r[k++] = m->r[i];
    }
    m->n = k;
    return dropped;
}

const kr__mrec *kr__mrecs_find(const kr__mrecs *m, const kr__mrec *probe)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_lookup(&m->r[mid], probe);
        if (c == 0)
            return &m->r[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void kr__mrec_from_config(kr__mrec *r, const kr_partition *p, const kr_config *c)
{
    memset(r, 0, sizeof *r);
    kr__strlcpy(r->key, p->key, sizeof r->key);
    r->variant = p->variant;
    r->freq_mhz = c->freq_mhz;
    int coll = p->coll.kind != KR_COLL_NONE;
    kr__strlcpy(r->slot, coll ? kr_partition_slot_name(p, c->slot) : "none", sizeof r->slot);
    r->sms = coll ? c->sms : 0;
    r->kernel = coll ? c->kernel : KR_KERNEL_TUNED;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static const char *const line_fields[] = {
    /* the artifact's eval_results.jsonl */
    "freq", "overlap_start", "overlap_end", "sm", "block", "time_s", "energy_j", "selected_dynamic",
    "selected_real", "selected_time", "selected_uncertainty", "pred_time_s", "pred_energy_eff_j",
    "pred_energy_real_j",
    /* ours */
    "kernel", "eff_energy_j", "time_sd_s", "energy_sd_j", "repeats", "key", "variant", "job", "backend", "strategy",
    "seed", "batch", "selected", NULL};

/* Checks that an optional field has the given JSON kind (or null for predictions). */
static int optional_kind(kr__jctx *c, const json_t *o, const char *key, int want_bool)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL || (!want_bool && json_is_null(v)))
        return KR_OK;
    if (want_bool && !json_is_boolean(v))
        return kr__jfail(c, KR_EPARSE, key, "true or false", v);
    if (!want_bool && !json_is_number(v))
        return kr__jfail(c, KR_EPARSE, key, "a number or null", v);
    return KR_OK;
}

/* The fields every line has (and the optional ones' kinds), with their ranges. */
static int read_fields(kr__jctx *c, const json_t *obj, kr__mrec *r)
{
    int rc, block, batch;
    long long seed;
    char end[32], buf[64], kernel[16];
    double eff;
    if ((rc = kr__jobject(c, obj, line_fields)) || (rc = kr__jint32(c, obj, "freq", 1, 1, 100000, 0, &r->freq_mhz)) ||
        (rc = kr__jstr(c, obj, "overlap_start", 1, NULL, r->slot, sizeof r->slot)) ||
        (rc = kr__jstr(c, obj, "overlap_end", 0, "none", end, sizeof end)) ||
        (rc = kr__jint32(c, obj, "sm", 1, 0, 100000, 0, &r->sms)) ||
        (rc = kr__jint32(c, obj, "block", 0, 0, 1 << 20, 0, &block)) ||
        (rc = kr__jstr(c, obj, "kernel", 0, "tuned", kernel, sizeof kernel)) ||
        (rc = kr__jnum(c, obj, "time_s", 1, 0, INFINITY, 0, &r->time_s)) ||
        (rc = kr__jnum(c, obj, "energy_j", 1, 0, INFINITY, 0, &r->energy_j)) ||
        (rc = kr__jnum(c, obj, "eff_energy_j", 0, -INFINITY, INFINITY, 0, &eff)) ||
        (rc = kr__jnum(c, obj, "time_sd_s", 0, 0, INFINITY, 0, &r->time_sd_s)) ||
        (rc = kr__jnum(c, obj, "energy_sd_j", 0, 0, INFINITY, 0, &r->energy_sd_j)) ||
        (rc = kr__jint32(c, obj, "repeats", 0, 1, 1 << 30, 1, &r->repeats)) ||
        (rc = kr__jstr(c, obj, "backend", 0, "", buf, sizeof buf)) ||
        (rc = kr__jstr(c, obj, "strategy", 0, "", buf, sizeof buf)) ||
        (rc = kr__jstr(c, obj, "selected", 0, "", buf, sizeof buf)) ||
        (rc = kr__jint(c, obj, "seed", 0, 0, INT64_MAX, 0, &seed)) ||
        (rc = kr__jint32(c, obj, "batch", 0, 0, 1 << 30, 0, &batch)))
        return rc;
    static const char *const bools[] = {"selected_dynamic", "selected_real", "selected_time", "selected_uncertainty"};
    static const char *const nums[] = {"pred_time_s", "pred_energy_eff_j", "pred_energy_real_j"};
    for (size_t i = 0; i < 4; i++)
        if ((rc = optional_kind(c, obj, bools[i], 1)))
            return rc;
    for (size_t i = 0; i < 3; i++)
        if ((rc = optional_kind(c, obj, nums[i], 0)))
            return rc;
    if (kr_comm_kernel_parse(kernel, &r->kernel) != KR_OK)
        return kr__jfailf(c, KR_EPARSE, "kernel", "expected \"tuned\" or \"nccl\", found \"%s\"", kernel);
    if (strcmp(end, "none") != 0)
        return kr__jfailf(c, KR_EPARSE, "overlap_end",
                          "expected \"none\" (the comm window always ends with the partition), found \"%s\"", end);
    if (!(r->time_s > 0))
        return kr__jfailf(c, KR_ERANGE, "time_s", "expected a time > 0, found %g", r->time_s);
    /* Work on a powered GPU always costs energy: 0 J is a failed reading (an energy counter
     * that did not advance), never a measurement to plan with. */
    if (!(r->energy_j > 0))
        return kr__jfailf(c, KR_ERANGE, "energy_j", "expected an energy > 0 J, found %g", r->energy_j);
    return KR_OK;
}

/* The record's key and variant: from the line (whose job fingerprint must match), or the
 * caller's default key for a line of the artifact's format. */
static int read_key(kr__jctx *c, const kr__mparse *o, const json_t *obj, kr__mrec *r)
{
    int rc;
    char variant[32], fp[32];
    if (json_object_get(obj, "key") == NULL) {
        /* The artifact's format: no key, variant or job; the caller says which key. */
        if (o->default_key == NULL)
            return kr__jfailf(c, KR_EPARSE, "key",
                              "missing required field (a line of the artifact's eval_results.jsonl? replay it with "
                              "KEY=FILE)");
        kr__strlcpy(r->key, o->default_key, sizeof r->key);
        r->variant = KR_VARIANT_KAREUS;
        return KR_OK;
    }
    if ((rc = kr__jstr(c, obj, "key", 1, NULL, r->key, sizeof r->key)) ||
        (rc = kr__jstr(c, obj, "variant", 1, NULL, variant, sizeof variant)) ||
        (rc = kr__jstr(c, obj, "job", 1, NULL, fp, sizeof fp)))
        return rc;
    if (kr_variant_parse(variant, &r->variant) != KR_OK)
        return kr__jfailf(c, KR_EPARSE, "variant", "expected kareus, sequential or default-overlap, found \"%s\"",
                          variant);
    char want[17];
    kr_job_fingerprint(o->job, want);
    if (strcmp(fp, want) != 0)
        return kr__jfailf(c, KR_EMISMATCH, "job",
                          "expected the fingerprint of job '%s' (%s), found \"%s\": this log was measured for a "
                          "different job (GPU, model, shapes or parallelism)",
                          o->job->name, want, fp);
    return KR_OK;
}

static int parse_record(const kr__mparse *o, const char *where, const json_t *obj, kr__mrec *r, kr_error *err)
{
    kr__jctx c;
    kr__jctx_init(&c, where, err);
    memset(r, 0, sizeof *r);
    int rc;
    if ((rc = read_fields(&c, obj, r)) || (rc = read_key(&c, o, obj, r)))
        return rc;
    const kr_partition *p = kr__catalogs_find(o->cat, r->key, r->variant);
    if (p == NULL) {
        char list[400];
        key_list(o->cat, r->variant, list, sizeof list);
        return kr__jfailf(&c, KR_ENOTFOUND, "key", "expected a partition of job '%s' for variant %s (%s), found \"%s\"",
                          o->job->name, kr_variant_name(r->variant), list, r->key);
    }
    kr_config cfg = {r->freq_mhz, r->sms, KR_SLOT_NONE, r->kernel};
    if (r->kernel != KR_KERNEL_TUNED && (p->variant != KR_VARIANT_KAREUS || p->coll.kind == KR_COLL_NONE))
        return kr__jfailf(&c, KR_ERANGE, "kernel",
                          "expected no kernel (tuned) for %s (%s): only the kareus variant's collectives choose "
                          "their kernel, found \"%s\"", r->key, kr_variant_name(r->variant), kr_comm_kernel_name(r->kernel));
    if (p->coll.kind != KR_COLL_NONE && (rc = kr_partition_slot_index(p, r->slot, &cfg.slot, err))) {
        char msg[KR_ERROR_MSG_MAX];
        kr__strlcpy(msg, err ? err->msg : "", sizeof msg);
        return kr__jfailf(&c, KR_ENOTFOUND, "overlap_start", "%s", msg);
    }
    if (p->coll.kind == KR_COLL_NONE && (strcmp(r->slot, "none") != 0 || r->sms != 0))
        return kr__jfailf(&c, KR_ERANGE, "overlap_start",
                          "expected overlap_start \"none\" and sm 0 for %s (no collective), found \"%s\" and %d",
                          r->key, r->slot, r->sms);
    if (o->check_space) {
        kr_search_space sp;
        long idx;
        /* The whole space, or the ablation's fixed CTA count (KR_SEARCH_FIX_SMS), which need
         * not be on the searched list. */
        kr_search_space fix;
        if (kr_search_space_init_restricted(o->job, p, KR_SEARCH_FIX_SMS, &fix, NULL) == KR_OK &&
            kr_search_space_index(&fix, &cfg, &idx, NULL) == KR_OK)
            return KR_OK;
        if ((rc = kr_search_space_init(o->job, p, &sp, err)) || (rc = kr_search_space_index(&sp, &cfg, &idx, err))) {
            char msg[KR_ERROR_MSG_MAX];
            kr__strlcpy(msg, err ? err->msg : "", sizeof msg);
            return kr_error_set(err, rc, "%s: configuration outside the search space: %s", where, msg);
        }
    }
    return KR_OK;
}

#define MLOG_SCHEMA "kareus.mlog"
#define MLOG_VERSION 1

/* Checks a parsed header line (an object with "schema"): format, version and, with a job, its
 * fingerprint. where is "FILE:1". */
static int check_header(const json_t *obj, const char *where, const kr_job *job, kr_error *err)
{
    kr__jctx c;
    kr__jctx_init(&c, where, err);
    static const char *const f[] = {"schema", "version", "job", "job_name", NULL};
    char schema[32], fp[32], name[KR_NAME_MAX + 64];
    long long version;
    int rc;
    if ((rc = kr__jobject(&c, obj, f)) || (rc = kr__jstr(&c, obj, "schema", 1, NULL, schema, sizeof schema)))
        return rc;
    if (strcmp(schema, MLOG_SCHEMA) != 0)
        return kr__jfail(&c, KR_EPARSE, "schema", "\"" MLOG_SCHEMA "\" (a Kareus measurement log)",
                         json_object_get(obj, "schema"));
    if ((rc = kr__jint(&c, obj, "version", 1, MLOG_VERSION, MLOG_VERSION, 0, &version)) ||
        (rc = kr__jstr(&c, obj, "job", 1, NULL, fp, sizeof fp)) ||
        (rc = kr__jstr(&c, obj, "job_name", 0, "", name, sizeof name)))
        return rc;
    if (job) {
        char want[17];
        kr_job_fingerprint(job, want);
        if (strcmp(fp, want) != 0)
            return kr__jfailf(&c, KR_EMISMATCH, "job",
                              "expected the fingerprint of job '%s' (%s), found \"%s\" (job '%s'): this log was "
                              "measured for a different job (GPU, model, shapes or parallelism)",
                              job->name, want, fp, name);
    }
    return KR_OK;
}

int kr__mlog_parse(const kr__mparse *o, const char *text, size_t len, kr__mrecs *out, size_t *valid_len, int *torn,
                   int *complete_last, kr_error *err)
{
    *valid_len = len;
    *torn = 0;
    *complete_last = 0;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = KR_OK;
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        lineno++;
        size_t n = end - start;
        if (kr__grow((void **)&line, &cap, n + 1, 1)) {
            rc = kr_error_set(err, KR_ENOMEM, "%s: out of memory", o->path);
            break;
        }
        memcpy(line, text + start, n);
        line[n] = '\0';
        size_t next = nl ? end + 1 : len;
        int blank = 1;
        for (size_t i = 0; i < n && blank; i++)
            blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
        if (blank) {
            start = next;
            continue;
        }
        char where[4200];
        snprintf(where, sizeof where, "%s:%d", o->path, lineno);
        json_error_t je;
        /* json_loads would stop at a NUL byte and ignore the rest: a NUL is torn or an error. */
        int has_nul = memchr(line, '\0', n) != NULL;
        json_t *obj = has_nul ? NULL : json_loads(line, JSON_REJECT_DUPLICATES, &je);
        if (has_nul && nl != NULL) {
            rc = kr_error_set(err, KR_EPARSE, "%s: expected a JSON line, found a NUL byte", where);
            break;
        }
        if (obj != NULL && lineno == 1 && json_object_get(obj, "schema") != NULL) {
            /* Our header line: check it and go on with the measurements. */
            rc = check_header(obj, where, o->job, err);
            json_decref(obj);
            if (rc)
                break;
            start = next;
            continue;
        }
        if (obj == NULL) {
            if (nl == NULL) {
                /* No newline after it: a write that a crash interrupted. */
                *valid_len = start;
                *torn = lineno;
                break;
            }
            rc = kr_error_set(err, KR_EPARSE, "%s:%d: invalid JSON: %s", where, je.column, je.text);
            break;
        }
        kr__mrec r;
        rc = parse_record(o, where, obj, &r, err);
        json_decref(obj);
        if (rc)
            break;
        r.file = o->file;
        r.line = lineno;
        if (kr__mrecs_push(out, &r)) {
            rc = kr_error_set(err, KR_ENOMEM, "%s: out of memory", o->path);
            break;
        }
        if (nl == NULL)
            *complete_last = 1;
        start = next;
    }
    free(line);
    return rc;
}

/* ---- the log ------------------------------------------------------------------------------ */

struct kr_search_log {
    char path[4096];
    FILE *f;
    kr_job job;
    char fp[17];
    kr__catalogs cat;
    kr__mrecs recs;
    char warning[1024];
    int sync_each;   /* 1: fsync every line; 0: fsync at the end of each batch */
    int pending;     /* lines written since the last fsync */
};

/*
 * An existing non-empty --log file must start with our header line, complete with its newline,
 * or (*headerless set to 1) with a measurement line of ours, as logs did before the header;
 * anything else (notes, a CSV, the artifact's eval_results.jsonl, a log of another job) is
 * refused before anything is written, truncated or created. The lines after the first are the
 * parser's to check (kr__mlog_parse), also before anything is written.
 */
static int check_log_start(const char *path, const char *text, size_t len, const kr_job *job, int *headerless,
                           kr_error *err)
{
    const char *nl = memchr(text, '\n', len);
    size_t n = nl ? (size_t)(nl - text) : len;
    json_error_t je;
    json_t *obj = nl && memchr(text, '\0', n) == NULL ? json_loadb(text, n, JSON_REJECT_DUPLICATES, &je) : NULL;
    *headerless = 0;
    if (obj != NULL && json_is_object(obj) && json_object_get(obj, "schema") == NULL &&
        json_is_string(json_object_get(obj, "key")) && json_is_string(json_object_get(obj, "job"))) {
        json_decref(obj);
        *headerless = 1;
        return KR_OK;
    }
    if (obj == NULL || !json_is_object(obj) || json_object_get(obj, "schema") == NULL) {
        json_decref(obj);
        char shown[48];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof shown; i++)
            shown[k++] = (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
        shown[k] = '\0';
        return kr_error_set(err, KR_EPARSE,
                            "%s:1: expected a Kareus measurement log (first line {\"schema\":\"" MLOG_SCHEMA
                            "\",...}), found '%s': not used as a log and left unchanged (give a new file name)",
                            path, shown);
    }
    char where[4200];
    snprintf(where, sizeof where, "%s:1", path);
    int rc = check_header(obj, where, job, err);
    json_decref(obj);
    return rc;
}

int kr_search_log_check(const char *path, const kr_job *job, kr_error *err)
{
    if (path[0] == '\0')
        return kr_error_set(err, KR_EINVAL, "empty log file name");
    struct stat st;
    if (lstat(path, &st) != 0)
        return KR_OK;
    if (S_ISLNK(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: is a symbolic link; give the log's real path", path);
    char *text = NULL;
    size_t len = 0;
    int rc = kr__read_file(path, &text, &len, err);
    if (rc)
        return rc;
    kr__catalogs *cat = malloc(sizeof *cat);
    kr__mrecs recs = {0};
    int headerless;
    if (cat == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    else if (len > 0 && (rc = check_log_start(path, text, len, job, &headerless, err)) == KR_OK &&
             (rc = kr__catalogs_build(job, cat, err)) == KR_OK) {
        kr__mparse o = {path, 0, job, cat, NULL, 1};
        size_t valid;
        int torn, complete_last;
        rc = kr__mlog_parse(&o, text, len, &recs, &valid, &torn, &complete_last, err);
    }
    free(recs.r);
    free(cat);
    free(text);
    return rc;
}

/*
 * Reads an existing log at path (none: *text NULL, *len 0): checks its start, parses its
 * records into log->recs, drops a torn last line from the file and dedupes, with warnings in
 * log->warning. *complete_last: the last line parsed but had no newline.
 */
static int read_existing(kr_search_log *log, const char *path, const kr_job *job, char **text, size_t *len,
                         int *complete_last, int *torn, kr_error *err)
{
    int rc;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return kr_error_set(err, KR_EINVAL, "%s: is a symbolic link; give the log's real path", path);
        if ((rc = kr__read_file(path, text, len, err)))
            return rc;
    }
    int headerless = 0;
    if (*len > 0 && (rc = check_log_start(path, *text, *len, job, &headerless, err)))
        return rc;
    size_t valid = *len;
    if (*text) {
        kr__mparse o = {path, 0, job, &log->cat, NULL, 1};
        if ((rc = kr__mlog_parse(&o, *text, *len, &log->recs, &valid, torn, complete_last, err)))
            return rc;
    }
    if (headerless)
        snprintf(log->warning, sizeof log->warning,
                 "%s: a measurement log without the header line (written before Kareus logs had one): read, "
                 "and new measurements are appended to it without a header",
                 path);
    if (*torn && (rc = kr__jsonl_drop_torn(path, *text, *len, valid, *torn, log->warning, sizeof log->warning, err)))
        return rc;
    int first_dup;
    size_t dups = kr__mrecs_dedupe(&log->recs, &first_dup);
    if (dups) {
        size_t w = strlen(log->warning);
        snprintf(log->warning + w, sizeof log->warning - w, "%s%s: %zu duplicate measurements (first kept), e.g. line %d",
                 w ? "; " : "", path, dups, first_dup);
    }
    return KR_OK;
}

/* Opens path for appending, never through a symlink (after a newline when the last line was
 * complete but unterminated); a new (or empty: fresh) log starts with its header line. */
static int open_append(kr_search_log *log, const char *path, const kr_job *job, int fresh, int newline_first,
                       kr_error *err)
{
    int rc = kr__jsonl_open_append(path, newline_first, &log->f, err);
    if (rc || !fresh)
        return rc;
    json_t *h = json_pack("{s:s, s:i, s:s, s:s}", "schema", MLOG_SCHEMA, "version", MLOG_VERSION, "job", log->fp,
                          "job_name", job->name);
    rc = kr__jsonl_append(log->f, h, 1, path, "write the log header", err);
    json_decref(h);
    return rc;
}

int kr_search_log_open(const char *path, const kr_job *job, kr_search_log **out, kr_error *err)
{
    *out = NULL;
    kr_search_log *log = calloc(1, sizeof *log);
    if (log == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    int rc = KR_OK;
    char *text = NULL;
    size_t len = 0;
    if (kr__strlcpy(log->path, path, sizeof log->path)) {
        rc = kr_error_set(err, KR_EINVAL, "%s: path too long", path);
        goto fail;
    }
    log->job = *job;
    log->sync_each = 1;
    kr_job_fingerprint(job, log->fp);
    if ((rc = kr__catalogs_build(job, &log->cat, err)))
        goto fail;
    if (path[0] == '\0') {
        rc = kr_error_set(err, KR_EINVAL, "empty log file name");
        goto fail;
    }
    int torn = 0, complete_last = 0;
    if ((rc = read_existing(log, path, job, &text, &len, &complete_last, &torn, err)) ||
        (rc = open_append(log, path, job, len == 0, complete_last && !torn, err)))
        goto fail;
    free(text);
    *out = log;
    return KR_OK;
fail:
    free(text);
    kr_search_log_close(log);
    return rc;
}

void kr_search_log_close(kr_search_log *log)
{
    if (log == NULL)
        return;
    if (log->f) {
        kr__search_log_flush(log, NULL);
        fclose(log->f);
    }
    free(log->recs.r);
    free(log);
}

const char *kr_search_log_warning(const kr_search_log *log)
{
    return log ? log->warning : "";
}

long kr_search_log_count(const kr_search_log *log)
{
    return log ? (long)log->recs.n : 0;
}

const char *kr_search_log_path(const kr_search_log *log)
{
    return log ? log->path : "";
}

void kr_search_log_set_sync(kr_search_log *log, kr_log_sync sync)
{
    if (log)
        log->sync_each = sync != KR_LOG_SYNC_BATCH;
}

int kr__search_log_flush(kr_search_log *log, kr_error *err)
{
    if (!log->pending)
        return KR_OK;
    log->pending = 0;
    if (fsync(fileno(log->f)) != 0)
        return kr_error_set(err, KR_EIO, "%s: cannot sync the log: %s", log->path, strerror(errno));
    return KR_OK;
}

const kr__mrecs *kr__search_log_records(const kr_search_log *log)
{
    return &log->recs;
}

const kr__catalogs *kr__search_log_catalogs(const kr_search_log *log)
{
    return &log->cat;
}

static int set_str(json_t *o, const char *k, const char *v)
{
    return json_object_set_new(o, k, json_string(v ? v : ""));
}

int kr__search_log_append(kr_search_log *log, const kr__mrec *r, const kr__mextra *x, kr_error *err)
{
    json_t *o = json_object();
    if (o == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", log->path);
    int bad = 0;
    bad |= json_object_set_new(o, "freq", json_integer(r->freq_mhz));
    bad |= set_str(o, "overlap_start", r->slot);
    bad |= set_str(o, "overlap_end", "none");
    bad |= json_object_set_new(o, "sm", json_integer(r->sms));
    bad |= json_object_set_new(o, "block", json_integer(x->has_coll ? 1024 : 0));
    if (r->kernel != KR_KERNEL_TUNED)
        bad |= set_str(o, "kernel", kr_comm_kernel_name(r->kernel));
    bad |= kr__jset_real(o, "time_s", r->time_s);
    bad |= kr__jset_real(o, "energy_j", r->energy_j);
    bad |= kr__jset_real(o, "eff_energy_j", r->energy_j - log->job.static_power_w * r->time_s);
    bad |= kr__jset_real(o, "time_sd_s", r->time_sd_s);
    bad |= kr__jset_real(o, "energy_sd_j", r->energy_sd_j);
    bad |= json_object_set_new(o, "repeats", json_integer(r->repeats));
    bad |= set_str(o, "key", r->key);
    bad |= set_str(o, "variant", kr_variant_name(r->variant));
    bad |= set_str(o, "job", log->fp);
    bad |= set_str(o, "backend", x->backend);
    bad |= set_str(o, "strategy", x->strategy);
    bad |= json_object_set_new(o, "seed", json_integer((json_int_t)(x->seed & INT64_MAX)));
    bad |= json_object_set_new(o, "batch", json_integer(x->batch));
    bad |= set_str(o, "selected", x->selected);
    if (isfinite(x->pred_time_s))
        bad |= kr__jset_real(o, "pred_time_s", x->pred_time_s);
    if (isfinite(x->pred_eff_energy_j))
        bad |= kr__jset_real(o, "pred_energy_eff_j", x->pred_eff_energy_j);
    int rc = bad ? kr_error_set(err, KR_ENOMEM, "%s: out of memory", log->path)
                 : kr__jsonl_append(log->f, o, log->sync_each, log->path, "append a measurement", err);
    json_decref(o);
    log->pending = !log->sync_each;
    if (rc)
        return rc;
    kr__mrec c = *r;
    c.file = 0;
    c.line = 0;
    if (kr__mrecs_push(&log->recs, &c))
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", log->path);
    return KR_OK;
}
