/*
 * pfront.c — partition frontiers: the measured points of one partition with their
 * configurations and Pareto flags, their ordering, per-clock access, and the frontier files
 * (JSON and CSV, schema "kareus.frontier") with exact round trips (frontier.h).
 *
 * Ordering invariant of kr_partition_frontier.pts (relied on by kr_frontier_at_clock): points
 * are grouped by clock, highest first; inside a clock the clock's (time, effective energy)
 * Pareto points come first, by time ascending, then the other points by time. Flags are always
 * recomputed from the numbers (also when reading a file), so they cannot disagree with them.
 */
#include "kareus/frontier.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void kr_frontier_init(kr_partition_frontier *f, const kr_job *job, const kr_partition *p)
{
    memset(f, 0, sizeof *f);
    kr__strlcpy(f->job_name, job->name, sizeof f->job_name);
    kr_job_fingerprint(job, f->fingerprint);
    kr__strlcpy(f->key, p->key, sizeof f->key);
    f->variant = p->variant;
    f->static_power_w = job->static_power_w;
    f->nslots = p->nslots;
    for (int i = 0; i < p->nslots && i < KR_MAX_SLOTS; i++)
        kr__strlcpy(f->slots[i], p->slots[i].name, sizeof f->slots[i]);
}

void kr_frontier_free(kr_partition_frontier *f)
{
    if (f == NULL)
        return;
    free(f->pts);
    f->pts = NULL;
    f->n = 0;
}

const char *kr_frontier_slot_name(const kr_partition_frontier *f, int slot)
{
    if (slot < 0 || slot >= f->nslots)
        return "none";
    return f->slots[slot];
}

/* Order used to detect duplicate configurations. */
static int cmp_config(const void *a, const void *b)
{
    const kr_measured *x = a, *y = b;
    if (x->config.freq_mhz != y->config.freq_mhz)
        return x->config.freq_mhz > y->config.freq_mhz ? -1 : 1;
    if (x->config.slot != y->config.slot)
        return x->config.slot < y->config.slot ? -1 : 1;
    return (x->config.sms > y->config.sms) - (x->config.sms < y->config.sms);
}

/* The documented final order (see the file comment). */
static int cmp_final(const void *a, const void *b)
{
    const kr_measured *x = a, *y = b;
    if (x->config.freq_mhz != y->config.freq_mhz)
        return x->config.freq_mhz > y->config.freq_mhz ? -1 : 1;
    int px = (x->flags & KR_FP_PARETO_CLOCK) != 0, py = (y->flags & KR_FP_PARETO_CLOCK) != 0;
    if (px != py)
        return px ? -1 : 1;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    if (x->eff_energy_j != y->eff_energy_j)
        return x->eff_energy_j < y->eff_energy_j ? -1 : 1;
    return cmp_config(a, b);
}

/* Sets flag on the points of pts[0..n) that are on the Pareto set of the plane (P). */
static int flag_pareto(kr_measured *pts, size_t n, double P, unsigned flag, kr_fpoint *scratch, kr_error *err)
{
    for (size_t i = 0; i < n; i++) {
        scratch[i].time_s = pts[i].time_s;
        scratch[i].energy_j = pts[i].energy_j;
        scratch[i].id = (long long)i;
    }
    size_t k;
    int rc = kr_frontier_pareto(scratch, n, P, 0.0, scratch, &k, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < k; i++)
        pts[scratch[i].id].flags |= flag;
    return KR_OK;
}

int kr_frontier_set_points(kr_partition_frontier *f, const kr_measured *pts, size_t n, kr_error *err)
{
    if (n > 0 && pts == NULL)
        return kr_error_set(err, KR_EINVAL, "frontier %s: expected points, found NULL", f->key);
    kr_measured *c = n ? malloc(n * sizeof *c) : NULL;
    kr_fpoint *scratch = n ? malloc(n * sizeof *scratch) : NULL;
    if (n && (c == NULL || scratch == NULL)) {
        free(c);
        free(scratch);
        return kr_error_set(err, KR_ENOMEM, "frontier %s: out of memory for %zu points", f->key, n);
    }
    int rc = KR_OK;
    for (size_t i = 0; i < n; i++) {
        c[i] = pts[i];
        const kr_measured *p = &pts[i];
        if (!isfinite(p->time_s) || !isfinite(p->energy_j) || p->time_s <= 0 || p->energy_j < 0 ||
            !isfinite(p->time_sd_s) || !isfinite(p->energy_sd_j)) {
            rc = kr_error_set(err, KR_EINVAL,
                              "frontier %s: point %zu (%d MHz, %s, %d SMs): expected time > 0 and energy >= 0, "
                              "finite, found %g s, %g J",
                              f->key, i, p->config.freq_mhz, kr_frontier_slot_name(f, p->config.slot), p->config.sms,
                              p->time_s, p->energy_j);
            goto out;
        }
        if (p->config.slot != KR_SLOT_NONE && (p->config.slot < 0 || p->config.slot >= f->nslots)) {
            rc = kr_error_set(err, KR_EINVAL, "frontier %s: point %zu: slot: expected an index in [0, %d) or none, found %d",
                              f->key, i, f->nslots, p->config.slot);
            goto out;
        }
        c[i].eff_energy_j = p->energy_j - f->static_power_w * p->time_s;
        c[i].flags = 0;
    }
    if (n)
        qsort(c, n, sizeof *c, cmp_config);
    for (size_t i = 1; i < n; i++)
        if (cmp_config(&c[i - 1], &c[i]) == 0) {
            rc = kr_error_set(err, KR_EINVAL, "frontier %s: configuration (%d MHz, slot %s, %d SMs) appears twice",
                              f->key, c[i].config.freq_mhz, kr_frontier_slot_name(f, c[i].config.slot),
                              c[i].config.sms);
            goto out;
        }
    if ((rc = flag_pareto(c, n, f->static_power_w, KR_FP_PARETO_EFF, scratch, err)) ||
        (rc = flag_pareto(c, n, 0.0, KR_FP_PARETO_TOTAL, scratch, err)))
        goto out;
    /* c is grouped by clock (cmp_config sorts by clock first). */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && c[j].config.freq_mhz == c[i].config.freq_mhz)
            j++;
        if ((rc = flag_pareto(c + i, j - i, f->static_power_w, KR_FP_PARETO_CLOCK, scratch, err)))
            goto out;
        i = j;
    }
    if (n)
        qsort(c, n, sizeof *c, cmp_final);
    free(f->pts);
    f->pts = c;
    f->n = n;
    c = NULL;
out:
    free(c);
    free(scratch);
    return rc;
}

int kr_frontier_copy(kr_partition_frontier *dst, const kr_partition_frontier *src, kr_error *err)
{
    kr_measured *p = NULL;
    if (src->n) {
        p = malloc(src->n * sizeof *p);
        if (p == NULL)
            return kr_error_set(err, KR_ENOMEM, "frontier %s: out of memory copying %zu points", src->key, src->n);
        memcpy(p, src->pts, src->n * sizeof *p);
    }
    *dst = *src;
    dst->pts = p;
    return KR_OK;
}

int kr_frontier_clocks(const kr_partition_frontier *f, int *mhz, int cap)
{
    int k = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (i > 0 && f->pts[i].config.freq_mhz == f->pts[i - 1].config.freq_mhz)
            continue;
        if (k >= cap)
            return KR_ERANGE;
        mhz[k++] = f->pts[i].config.freq_mhz;
    }
    return k;
}

void kr_frontier_at_clock(const kr_partition_frontier *f, int freq_mhz, int pareto_only, const kr_measured **first,
                          size_t *n)
{
    *first = NULL;
    *n = 0;
    /* Binary search for the first point at or below freq_mhz (clocks descend). */
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->pts[mid].config.freq_mhz > freq_mhz)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t j = lo;
    while (j < f->n && f->pts[j].config.freq_mhz == freq_mhz &&
           (!pareto_only || (f->pts[j].flags & KR_FP_PARETO_CLOCK)))
        j++;
    if (j > lo) {
        *first = &f->pts[lo];
        *n = j - lo;
    }
}

int kr_frontier_check_job(const kr_partition_frontier *f, const kr_job *job, kr_error *err)
{
    char fp[17];
    kr_job_fingerprint(job, fp);
    if (strcmp(fp, f->fingerprint) != 0)
        return kr_error_set(err, KR_EMISMATCH,
                            "frontier %s (%s): measured for job '%s' (fingerprint %s), expected job '%s' (fingerprint "
                            "%s): GPU, model, shapes or parallelism differ",
                            f->key, kr_variant_name(f->variant), f->job_name, f->fingerprint, job->name, fp);
    return KR_OK;
}

void kr_frontier_file_name(const char *key, kr_variant variant, const char *ext, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.%s.%s", key, kr_variant_name(variant), ext);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *to_json(const kr_partition_frontier *f)
{
    json_t *root = json_object(), *job = json_object(), *slots = json_array(), *search = json_object(),
           *points = json_array();
    if (!root || !job || !slots || !search || !points) {
        json_decref(root);
        json_decref(job);
        json_decref(slots);
        json_decref(search);
        json_decref(points);
        return NULL;
    }
    int bad = 0;
    bad |= json_object_set_new(root, "schema", json_string("kareus.frontier"));
    bad |= json_object_set_new(root, "version", json_integer(KR_FRONTIER_VERSION));
    bad |= json_object_set_new(job, "name", json_string(f->job_name));
    bad |= json_object_set_new(job, "fingerprint", json_string(f->fingerprint));
    bad |= json_object_set_new(root, "job", job);
    bad |= json_object_set_new(root, "key", json_string(f->key));
    bad |= json_object_set_new(root, "variant", json_string(kr_variant_name(f->variant)));
    bad |= kr__jset_real(root, "static_power_w", f->static_power_w);
    for (int i = 0; i < f->nslots; i++)
        bad |= json_array_append_new(slots, json_string(f->slots[i]));
    bad |= json_object_set_new(root, "slots", slots);
    bad |= json_object_set_new(search, "strategy", json_string(f->strategy));
    bad |= json_object_set_new(search, "backend", json_string(f->backend));
    bad |= json_object_set_new(search, "seed", json_integer((json_int_t)f->seed));
    bad |= json_object_set_new(search, "space_size", json_integer(f->space_size));
    bad |= json_object_set_new(root, "search", search);
    for (size_t i = 0; i < f->n && !bad; i++) {
        const kr_measured *p = &f->pts[i];
        json_t *o = json_object();
        if (o == NULL) {
            bad = 1;
            break;
        }
        bad |= json_object_set_new(o, "freq_mhz", json_integer(p->config.freq_mhz));
        bad |= json_object_set_new(o, "slot", json_string(kr_frontier_slot_name(f, p->config.slot)));
        bad |= json_object_set_new(o, "sms", json_integer(p->config.sms));
        bad |= kr__jset_real(o, "time_s", p->time_s);
        bad |= kr__jset_real(o, "energy_j", p->energy_j);
        bad |= kr__jset_real(o, "eff_energy_j", p->eff_energy_j);
        bad |= kr__jset_real(o, "time_sd_s", p->time_sd_s);
        bad |= kr__jset_real(o, "energy_sd_j", p->energy_sd_j);
        bad |= json_object_set_new(o, "pareto_eff", json_boolean(p->flags & KR_FP_PARETO_EFF));
        bad |= json_object_set_new(o, "pareto_total", json_boolean(p->flags & KR_FP_PARETO_TOTAL));
        bad |= json_object_set_new(o, "pareto_clock", json_boolean(p->flags & KR_FP_PARETO_CLOCK));
        bad |= json_array_append_new(points, o);
    }
    bad |= json_object_set_new(root, "points", points);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int kr_frontier_write_json(const char *path, const kr_partition_frontier *f, kr_error *err)
{
    json_t *root = to_json(f);
    if (root == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory building the frontier", path);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}

/* Slot name → index in f's list ("none" → KR_SLOT_NONE); -2 if unknown. */
static int slot_lookup(const kr_partition_frontier *f, const char *name)
{
    if (strcmp(name, "none") == 0)
        return KR_SLOT_NONE;
    for (int i = 0; i < f->nslots; i++)
        if (strcmp(f->slots[i], name) == 0)
            return i;
    return -2;
}

static void slot_list(const kr_partition_frontier *f, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < f->nslots && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s, ", f->slots[i]);
    snprintf(buf + (n < cap ? n : cap - 1), cap - (n < cap ? n : cap - 1), "none");
}

static int read_point_json(kr__jctx *c, const kr_partition_frontier *f, const json_t *o, kr_measured *p)
{
    static const char *const allowed[] = {"freq_mhz", "slot", "sms", "time_s", "energy_j", "eff_energy_j",
                                          "time_sd_s", "energy_sd_j", "pareto_eff", "pareto_total",
                                          "pareto_clock", NULL};
    int rc, flag;
    double eff;
    char slot[64];
    memset(p, 0, sizeof *p);
    if ((rc = kr__jobject(c, o, allowed)) ||
        (rc = kr__jint32(c, o, "freq_mhz", 1, 1, 100000, 0, &p->config.freq_mhz)) ||
        (rc = kr__jstr(c, o, "slot", 1, NULL, slot, sizeof slot)) ||
        (rc = kr__jint32(c, o, "sms", 1, 0, 100000, 0, &p->config.sms)) ||
        (rc = kr__jnum(c, o, "time_s", 1, 0, INFINITY, 0, &p->time_s)) ||
        (rc = kr__jnum(c, o, "energy_j", 1, 0, INFINITY, 0, &p->energy_j)) ||
        (rc = kr__jnum(c, o, "eff_energy_j", 0, -INFINITY, INFINITY, 0, &eff)) ||
        (rc = kr__jnum(c, o, "time_sd_s", 0, 0, INFINITY, 0, &p->time_sd_s)) ||
        (rc = kr__jnum(c, o, "energy_sd_j", 0, 0, INFINITY, 0, &p->energy_sd_j)) ||
        (rc = kr__jbool(c, o, "pareto_eff", 0, 0, &flag)) || (rc = kr__jbool(c, o, "pareto_total", 0, 0, &flag)) ||
        (rc = kr__jbool(c, o, "pareto_clock", 0, 0, &flag)))
        return rc;
    p->config.slot = slot_lookup(f, slot);
    if (p->config.slot == -2) {
        char list[256];
        slot_list(f, list, sizeof list);
        return kr__jfailf(c, KR_EPARSE, "slot", "expected one of the file's slots {%s}, found \"%s\"", list, slot);
    }
    return KR_OK;
}

static int read_json(const char *path, const char *text, kr_partition_frontier *f, kr_error *err)
{
    json_t *root;
    int rc = kr__json_load_text(text, path, &root, err);
    if (rc)
        return rc;
    kr__jctx c;
    kr__jctx_init(&c, path, err);
    static const char *const top[] = {"schema", "version", "job", "key", "variant", "static_power_w",
                                      "slots", "search", "points", NULL};
    static const char *const jobf[] = {"name", "fingerprint", NULL};
    static const char *const searchf[] = {"strategy", "backend", "seed", "space_size", NULL};
    char schema[32], variant[32];
    int version;
    long long seed, space;
    kr_measured *pts = NULL;
    size_t npts = 0;
    if ((rc = kr__jobject(&c, root, top)) || (rc = kr__jstr(&c, root, "schema", 1, NULL, schema, sizeof schema)))
        goto out;
    if (strcmp(schema, "kareus.frontier") != 0) {
        rc = kr__jfailf(&c, KR_EPARSE, "schema", "expected \"kareus.frontier\", found \"%s\"", schema);
        goto out;
    }
    if ((rc = kr__jint32(&c, root, "version", 1, KR_FRONTIER_VERSION, KR_FRONTIER_VERSION, 0, &version)))
        goto out;
    const json_t *job = json_object_get(root, "job");
    size_t m = kr__jpush_key(&c, "job");
    if (job == NULL)
        rc = kr__jfailf(&c, KR_EPARSE, NULL, "missing required field");
    else if (!(rc = kr__jobject(&c, job, jobf)) &&
             !(rc = kr__jstr(&c, job, "name", 1, NULL, f->job_name, sizeof f->job_name)))
        rc = kr__jstr(&c, job, "fingerprint", 1, NULL, f->fingerprint, sizeof f->fingerprint);
    kr__jpop(&c, m);
    if (rc || (rc = kr__jstr(&c, root, "key", 1, NULL, f->key, sizeof f->key)) ||
        (rc = kr__jstr(&c, root, "variant", 1, NULL, variant, sizeof variant)))
        goto out;
    if (kr_variant_parse(variant, &f->variant) != KR_OK) {
        rc = kr__jfailf(&c, KR_EPARSE, "variant", "expected kareus, sequential or default-overlap, found \"%s\"",
                        variant);
        goto out;
    }
    if ((rc = kr__jnum(&c, root, "static_power_w", 1, 0, 1e6, 0, &f->static_power_w)))
        goto out;
    const json_t *slots = json_object_get(root, "slots");
    m = kr__jpush_key(&c, "slots");
    if (slots == NULL || !json_is_array(slots) || json_array_size(slots) > KR_MAX_SLOTS) {
        char exp[64];
        snprintf(exp, sizeof exp, "an array of at most %d slot names", KR_MAX_SLOTS);
        rc = kr__jfail(&c, KR_EPARSE, NULL, exp, slots);
    }
    for (size_t i = 0; !rc && i < json_array_size(slots); i++) {
        const json_t *s = json_array_get(slots, i);
        if (!json_is_string(s) || kr__strlcpy(f->slots[i], json_string_value(s), sizeof f->slots[i])) {
            size_t m2 = kr__jpush_idx(&c, i);
            rc = kr__jfail(&c, KR_EPARSE, NULL, "a slot name of at most 15 characters", s);
            kr__jpop(&c, m2);
        }
        f->nslots = (int)i + 1;
    }
    kr__jpop(&c, m);
    if (rc)
        goto out;
    const json_t *search = json_object_get(root, "search");
    m = kr__jpush_key(&c, "search");
    if (search == NULL)
        rc = kr__jfailf(&c, KR_EPARSE, NULL, "missing required field");
    else if (!(rc = kr__jobject(&c, search, searchf)) &&
             !(rc = kr__jstr(&c, search, "strategy", 1, NULL, f->strategy, sizeof f->strategy)) &&
             !(rc = kr__jstr(&c, search, "backend", 1, NULL, f->backend, sizeof f->backend)) &&
             !(rc = kr__jint(&c, search, "seed", 1, 0, INT64_MAX, 0, &seed)))
        rc = kr__jint(&c, search, "space_size", 1, 0, INT64_MAX, 0, &space);
    kr__jpop(&c, m);
    if (rc)
        goto out;
    f->seed = (unsigned long long)seed;
    f->space_size = (long)space;
    const json_t *points = json_object_get(root, "points");
    if (points == NULL || !json_is_array(points)) {
        rc = kr__jfail(&c, KR_EPARSE, "points", "an array of points", points);
        goto out;
    }
    npts = json_array_size(points);
    pts = npts ? calloc(npts, sizeof *pts) : NULL;
    if (npts && pts == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "%s: out of memory for %zu points", path, npts);
        goto out;
    }
    m = kr__jpush_key(&c, "points");
    for (size_t i = 0; i < npts && !rc; i++) {
        size_t m2 = kr__jpush_idx(&c, i);
        rc = read_point_json(&c, f, json_array_get(points, i), &pts[i]);
        kr__jpop(&c, m2);
    }
    kr__jpop(&c, m);
    if (!rc && (rc = kr_frontier_set_points(f, pts, npts, err)))
        kr_error_prefix(err, "%s", path);
out:
    free(pts);
    json_decref(root);
    return rc;
}

/* ---- CSV ------------------------------------------------------------------------------- */

static const char *const csv_cols[] = {"freq_mhz", "slot", "sms", "time_s", "energy_j", "eff_energy_j",
                                       "time_sd_s", "energy_sd_j", "pareto_eff", "pareto_total", "pareto_clock"};

int kr_frontier_write_csv(const char *path, const kr_partition_frontier *f, kr_error *err)
{
    kr__afile af;
    int rc = kr__afile_open(&af, path, err);
    if (rc)
        return rc;
    FILE *o = af.f;
    char sp[40];
    kr__fmt_double(sp, sizeof sp, f->static_power_w);
    fprintf(o, "# kareus.frontier %d\n# job: %s\n# fingerprint: %s\n# key: %s\n# variant: %s\n# static_power_w: %s\n",
            KR_FRONTIER_VERSION, f->job_name, f->fingerprint, f->key, kr_variant_name(f->variant), sp);
    fprintf(o, "# slots:");
    for (int i = 0; i < f->nslots; i++)
        fprintf(o, "%s%s", i ? "," : " ", f->slots[i]);
    fprintf(o, "\n# strategy: %s\n# backend: %s\n# seed: %llu\n# space_size: %ld\n", f->strategy, f->backend,
            f->seed, f->space_size);
    for (size_t i = 0; i < KR_ARRAY_LEN(csv_cols); i++)
        fprintf(o, "%s%s", i ? "," : "", csv_cols[i]);
    fputc('\n', o);
    for (size_t i = 0; i < f->n; i++) {
        const kr_measured *p = &f->pts[i];
        char v[5][40];
        kr__fmt_double(v[0], sizeof v[0], p->time_s);
        kr__fmt_double(v[1], sizeof v[1], p->energy_j);
        kr__fmt_double(v[2], sizeof v[2], p->eff_energy_j);
        kr__fmt_double(v[3], sizeof v[3], p->time_sd_s);
        kr__fmt_double(v[4], sizeof v[4], p->energy_sd_j);
        fprintf(o, "%d,%s,%d,%s,%s,%s,%s,%s,%d,%d,%d\n", p->config.freq_mhz, kr_frontier_slot_name(f, p->config.slot),
                p->config.sms, v[0], v[1], v[2], v[3], v[4], (p->flags & KR_FP_PARETO_EFF) != 0,
                (p->flags & KR_FP_PARETO_TOTAL) != 0, (p->flags & KR_FP_PARETO_CLOCK) != 0);
    }
    return kr__afile_commit(&af, err);
}

/* Parses the "# name: value" header lines of a CSV frontier. */
static int read_csv_header(const char *path, const char *text, kr_partition_frontier *f, kr_error *err)
{
    static const char *const need[] = {"job", "fingerprint", "key", "variant", "static_power_w", "slots",
                                       "strategy", "backend", "seed", "space_size"};
    int seen[KR_ARRAY_LEN(need)] = {0};
    const char *p = text;
    int line = 1;
    int version;
    if (sscanf(p, "# kareus.frontier %d", &version) != 1 || version != KR_FRONTIER_VERSION)
        return kr_error_set(err, KR_EPARSE, "%s:1: expected '# kareus.frontier %d', found '%.40s'", path,
                            KR_FRONTIER_VERSION, p);
    for (p = strchr(p, '\n'); p && p[1] == '#'; p = strchr(p + 1, '\n')) {
        line++;
        const char *s = p + 2;
        while (*s == ' ')
            s++;
        const char *colon = strchr(s, ':'), *eol = strchr(s, '\n');
        if (eol == NULL)
            eol = s + strlen(s);
        if (colon == NULL || colon > eol)
            return kr_error_set(err, KR_EPARSE, "%s:%d: expected '# name: value', found '%.*s'", path, line,
                                (int)(eol - s), s);
        char name[32], val[256];
        snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        snprintf(val, sizeof val, "%.*s", (int)(eol - v), v);
        size_t k;
        for (k = 0; k < KR_ARRAY_LEN(need); k++)
            if (strcmp(name, need[k]) == 0)
                break;
        if (k == KR_ARRAY_LEN(need))
            return kr_error_set(err, KR_EPARSE, "%s:%d: unknown header '%s' (expected one of job, fingerprint, key, "
                                "variant, static_power_w, slots, strategy, backend, seed, space_size)",
                                path, line, name);
        seen[k] = 1;
        char *end;
        int bad = 0;
        switch (k) {
        case 0: bad = kr__strlcpy(f->job_name, val, sizeof f->job_name); break;
        case 1: bad = kr__strlcpy(f->fingerprint, val, sizeof f->fingerprint); break;
        case 2: bad = kr__strlcpy(f->key, val, sizeof f->key); break;
        case 3: bad = kr_variant_parse(val, &f->variant) != KR_OK; break;
        case 4: f->static_power_w = strtod(val, &end); bad = *end || !(f->static_power_w >= 0); break;
        case 5: {
            f->nslots = 0;
            for (char *tok = strtok(val, ","); tok && !bad; tok = strtok(NULL, ",")) {
                while (*tok == ' ')
                    tok++;
                bad = f->nslots >= KR_MAX_SLOTS || kr__strlcpy(f->slots[f->nslots++], tok, KR_SLOT_NAME_MAX);
            }
            break;
        }
        case 6: bad = kr__strlcpy(f->strategy, val, sizeof f->strategy); break;
        case 7: bad = kr__strlcpy(f->backend, val, sizeof f->backend); break;
        case 8: /* strtoull would wrap "-1" to 2^64-1: a seed is digits only */
            errno = 0;
            f->seed = strtoull(val, &end, 10);
            bad = *end || !(*val >= '0' && *val <= '9') || errno == ERANGE || f->seed > INT64_MAX;
            break;
        default: f->space_size = strtol(val, &end, 10); bad = *end || !*val || f->space_size < 0; break;
        }
        if (bad)
            return kr_error_set(err, KR_EPARSE, "%s:%d: %s: unexpected value '%s'", path, line, name, val);
    }
    for (size_t k = 0; k < KR_ARRAY_LEN(need); k++)
        if (!seen[k])
            return kr_error_set(err, KR_EPARSE, "%s: expected a '# %s: …' header line, found none", path, need[k]);
    return KR_OK;
}

static int read_csv(const char *path, const char *text, kr_partition_frontier *f, kr_error *err)
{
    int rc = read_csv_header(path, text, f, err);
    if (rc)
        return rc;
    kr__csv t;
    if ((rc = kr__csv_parse(text, path, &t, err)))
        return rc;
    int col[KR_ARRAY_LEN(csv_cols)];
    for (size_t i = 0; i < KR_ARRAY_LEN(csv_cols); i++)
        if ((rc = kr__csv_need_col(&t, csv_cols[i], &col[i], err))) {
            kr__csv_free(&t);
            return rc;
        }
    kr_measured *pts = t.nrows ? calloc((size_t)t.nrows, sizeof *pts) : NULL;
    if (t.nrows && pts == NULL) {
        kr__csv_free(&t);
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    }
    for (int r = 0; r < t.nrows && !rc; r++) {
        kr_measured *p = &pts[r];
        long long freq, sms, flag;
        double eff;
        if ((rc = kr__csv_int(&t, r, col[0], &freq, err)) || (rc = kr__csv_int(&t, r, col[2], &sms, err)) ||
            (rc = kr__csv_double(&t, r, col[3], &p->time_s, err)) ||
            (rc = kr__csv_double(&t, r, col[4], &p->energy_j, err)) ||
            (rc = kr__csv_double(&t, r, col[5], &eff, err)) ||
            (rc = kr__csv_double(&t, r, col[6], &p->time_sd_s, err)) ||
            (rc = kr__csv_double(&t, r, col[7], &p->energy_sd_j, err)))
            break;
        for (int k = 8; k <= 10 && !rc; k++)
            if ((rc = kr__csv_int(&t, r, col[k], &flag, err)) == KR_OK && flag != 0 && flag != 1)
                rc = kr_error_set(err, KR_ERANGE, "%s:%d: column '%s': expected 0 or 1, found '%s'", path, t.line[r],
                                  csv_cols[k], kr__csv_cell(&t, r, col[k]));
        if (rc)
            break;
        if (freq < 1 || freq > 100000 || sms < 0 || sms > 100000) {
            rc = kr_error_set(err, KR_ERANGE, "%s:%d: expected freq_mhz in [1, 100000] and sms in [0, 100000], found "
                              "%lld, %lld", path, t.line[r], freq, sms);
            break;
        }
        p->config.freq_mhz = (int)freq;
        p->config.sms = (int)sms;
        p->config.slot = slot_lookup(f, kr__csv_cell(&t, r, col[1]));
        if (p->config.slot == -2) {
            char list[256];
            slot_list(f, list, sizeof list);
            rc = kr_error_set(err, KR_EPARSE, "%s:%d: column 'slot': expected one of {%s}, found '%s'", path,
                              t.line[r], list, kr__csv_cell(&t, r, col[1]));
        }
    }
    if (!rc && (rc = kr_frontier_set_points(f, pts, (size_t)t.nrows, err)))
        kr_error_prefix(err, "%s", path);
    free(pts);
    kr__csv_free(&t);
    return rc;
}

int kr_frontier_read(const char *path, kr_partition_frontier *f, kr_error *err)
{
    memset(f, 0, sizeof *f);
    char *text;
    int rc = kr__read_text(path, &text, NULL, KR__TEXT_NO_CR, err);
    if (rc)
        return rc;
    const char *s = text;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    if (*s == '{')
        rc = read_json(path, text, f, err);
    else if (strncmp(s, "# kareus.frontier", 17) == 0 && s == text)
        rc = read_csv(path, text, f, err);
    else
        rc = kr_error_set(err, KR_EPARSE, "%s:1: expected a kareus.frontier file (JSON object or CSV starting with "
                          "'# kareus.frontier'), found '%.20s'", path, s);
    free(text);
    if (rc)
        kr_frontier_free(f);
    return rc;
}
