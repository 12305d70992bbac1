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
#include "workload/workload_internal.h"

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
    if (x->config.sms != y->config.sms)
        return x->config.sms < y->config.sms ? -1 : 1;
    return (x->config.kernel > y->config.kernel) - (x->config.kernel < y->config.kernel);
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

/*
 * The JSON file as field tables (util.h, "JSON field tables"): one list per object drives the
 * reader, the writer and the format's description (kr_frontier_format_field). A point is read
 * and written beside its frontier (its slot is a name of the frontier's list); its flags and
 * its effective energy are written for readers and recomputed from the numbers when read.
 */
typedef struct point_io {
    kr_measured m;
    const kr_partition_frontier *f;
} point_io;

static int slot_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    point_io *io = base;
    char slot[64];
    int rc = kr__jstr(c, obj, fd->key, 1, NULL, slot, sizeof slot);
    if (rc)
        return rc;
    io->m.config.slot = slot_lookup(io->f, slot);
    if (io->m.config.slot == -2) {
        char list[256];
        slot_list(io->f, list, sizeof list);
        return kr__jfailf(c, KR_EPARSE, "slot", "expected one of the file's slots {%s}, found \"%s\"", list, slot);
    }
    return KR_OK;
}

static int slot_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const point_io *io = base;
    *out = json_string(kr_frontier_slot_name(io->f, io->m.config.slot));
    return KR_OK;
}

/* The comm kernel: "tuned" (also when absent: frontiers from before kernels) or "nccl"; written
 * only for nccl, so tuned points read and write as they did. */
static int kernel_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    point_io *io = base;
    char name[32];
    int rc = kr__jstr(c, obj, fd->key, 0, "tuned", name, sizeof name);
    if (rc == KR_OK && kr_comm_kernel_parse(name, &io->m.config.kernel) != KR_OK)
        rc = kr__jfailf(c, KR_EPARSE, fd->key, "expected \"tuned\" or \"nccl\", found \"%s\"", name);
    return rc;
}

static int kernel_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const point_io *io = base;
    *out = io->m.config.kernel == KR_KERNEL_NCCL ? json_string("nccl") : NULL;
    return KR_OK;
}

/* A Pareto flag (the bit is the field's off): checked to be a boolean when read, the bit written. */
static int flag_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    int flag;
    return kr__jbool(c, obj, fd->key, 0, 0, &flag);
}

static int flag_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const point_io *io = base;
    *out = json_boolean(io->m.flags & (unsigned)fd->off);
    return KR_OK;
}

static const kr__jhook slot_hook = {slot_read, slot_write, NULL, "string", "a name of slots, or \"none\"", "required"};
static const kr__jhook kernel_hook = {kernel_read, kernel_write, NULL, "string", "\"tuned\" or \"nccl\"",
                                      "\"tuned\" (written only for nccl)"};
static const kr__jhook flag_hook = {flag_read, flag_write, NULL, "boolean", NULL, "recomputed"};

#define FLAG(key, bit, doc) {(key), KR__JT_HOOK, 0, (bit), 0, 0, 0, 0, NULL, NULL, NULL, NULL, &flag_hook, (doc)}
static const kr__jfield point_fields[] = {
    KR__JF_INT(point_io, m.config.freq_mhz, "freq_mhz", KR__JREQ, 1, 100000, 0, "SM clock, MHz"),
    KR__JF_HOOK("slot", KR__JREQ, 0, NULL, &slot_hook, "launch slot of the comm kernel (\"none\": after compute)"),
    KR__JF_INT(point_io, m.config.sms, "sms", KR__JREQ, 0, 100000, 0, "comm SMs (0: work without a collective)"),
    KR__JF_HOOK("kernel", 0, 0, NULL, &kernel_hook, "comm kernel of a kareus partition: tuned or nccl (NCCL's CTAs = sms)"),
    KR__JF_NUM(point_io, m.time_s, "time_s", KR__JREQ, 0, INFINITY, 0, "time of one execution, s"),
    KR__JF_NUM(point_io, m.energy_j, "energy_j", KR__JREQ, 0, INFINITY, 0, "energy of one GPU for it, static included, J"),
    KR__JF_NUM(point_io, m.eff_energy_j, "eff_energy_j", 0, -INFINITY, INFINITY, 0,
               "energy_j - static_power_w * time_s, J (recomputed when read)"),
    KR__JF_NUM(point_io, m.time_sd_s, "time_sd_s", 0, 0, INFINITY, 0, "spread of the time over repeats, s"),
    KR__JF_NUM(point_io, m.energy_sd_j, "energy_sd_j", 0, 0, INFINITY, 0, "spread of the energy over repeats, J"),
    FLAG("pareto_eff", KR_FP_PARETO_EFF, "on the (time, effective energy) frontier of all points"),
    FLAG("pareto_total", KR_FP_PARETO_TOTAL, "on the (time, total energy) frontier of all points"),
    FLAG("pareto_clock", KR_FP_PARETO_CLOCK, "on the (time, effective energy) frontier of its clock"),
};
#undef FLAG
static const kr__jtable point_table = KR__JTABLE(point_fields);

/* The points: read into a new array, then set (flags, order, checks) once the frontier's
 * static power and slots are known (they come first). */
static int points_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    kr_partition_frontier *f = base;
    const json_t *points = json_object_get(obj, fd->key);
    if (points == NULL || !json_is_array(points))
        return kr__jfail(c, KR_EPARSE, fd->key, "an array of points", points);
    size_t npts = json_array_size(points);
    point_io *io = npts ? calloc(npts, sizeof *io) : NULL;
    kr_measured *pts = npts ? calloc(npts, sizeof *pts) : NULL;
    int rc = KR_OK;
    if (npts && (io == NULL || pts == NULL))
        rc = kr_error_set(c->err, KR_ENOMEM, "%s: out of memory for %zu points", c->file, npts);
    size_t m = kr__jpush_key(c, fd->key);
    for (size_t i = 0; i < npts && !rc; i++) {
        size_t m2 = kr__jpush_idx(c, i);
        io[i].f = f;
        rc = kr__jtable_read(c, json_array_get(points, i), &point_table, &io[i]);
        pts[i] = io[i].m;
        kr__jpop(c, m2);
    }
    kr__jpop(c, m);
    if (!rc && (rc = kr_frontier_set_points(f, pts, npts, c->err)))
        kr_error_prefix(c->err, "%s", c->file);
    free(io);
    free(pts);
    return rc;
}

static int points_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const kr_partition_frontier *f = base;
    *out = json_array();
    for (size_t i = 0; i < f->n; i++) {
        point_io io = {f->pts[i], f};
        json_t *o;
        int rc = kr__jtable_write(w, &point_table, &io, &o);
        if (rc)
            return rc;
        json_array_append_new(*out, o);
    }
    return KR_OK;
}

static int slots_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    kr_partition_frontier *f = base;
    const json_t *slots = json_object_get(obj, fd->key);
    size_t m = kr__jpush_key(c, fd->key);
    if (slots == NULL || !json_is_array(slots) || json_array_size(slots) > KR_MAX_SLOTS) {
        char exp[64];
        snprintf(exp, sizeof exp, "an array of at most %d slot names", KR_MAX_SLOTS);
        return kr__jfail(c, KR_EPARSE, NULL, exp, slots);
    }
    for (size_t i = 0; i < json_array_size(slots); i++) {
        const json_t *s = json_array_get(slots, i);
        if (!json_is_string(s) || kr__strlcpy(f->slots[i], json_string_value(s), sizeof f->slots[i])) {
            kr__jpush_idx(c, i);
            return kr__jfail(c, KR_EPARSE, NULL, "a slot name of at most 15 characters", s);
        }
        f->nslots = (int)i + 1;
    }
    kr__jpop(c, m);
    return KR_OK;
}

static int slots_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const kr_partition_frontier *f = base;
    *out = json_array();
    for (int i = 0; i < f->nslots; i++)
        json_array_append_new(*out, json_string(f->slots[i]));
    return KR_OK;
}

/* The seed (unsigned long long) and the space size (long): integers in [0, INT64_MAX]. */
static int count_read(kr__jctx *c, const json_t *obj, const kr__jfield *fd, void *base)
{
    kr_partition_frontier *f = base;
    long long v;
    int rc = kr__jint(c, obj, fd->key, 1, 0, INT64_MAX, 0, &v);
    if (rc == KR_OK && fd->off == offsetof(kr_partition_frontier, seed))
        f->seed = (unsigned long long)v;
    else if (rc == KR_OK)
        f->space_size = (long)v;
    return rc;
}

static int count_write(const kr__jwctx *w, const kr__jfield *fd, const void *base, json_t **out)
{
    const kr_partition_frontier *f = base;
    *out = json_integer(fd->off == offsetof(kr_partition_frontier, seed) ? (json_int_t)f->seed
                                                                          : (json_int_t)f->space_size);
    return KR_OK;
}

static const kr__jchoice variant_choice = {&kr__variant_enames, "kareus, sequential or default-overlap"};
static const kr__jhook points_hook = {points_read, points_write, NULL, "array", NULL, "required"};
static const kr__jhook slots_hook = {slots_read, slots_write, NULL, "array",
                                     "at most 16 names of at most 15 characters", "required"};
static const kr__jhook count_hook = {count_read, count_write, NULL, "integer", "[0, 2^63 - 1]", "required"};

static const kr__jfield job_fields[] = {
    KR__JF_STR(kr_partition_frontier, job_name, "name", KR__JREQ, NULL, NULL, "the job the measurements belong to"),
    KR__JF_STR(kr_partition_frontier, fingerprint, "fingerprint", KR__JREQ, NULL, NULL, "its fingerprint"),
};
static const kr__jtable job_table = KR__JTABLE(job_fields);

static const kr__jfield search_fields[] = {
    KR__JF_STR(kr_partition_frontier, strategy, "strategy", KR__JREQ, NULL, NULL, "search strategy (exhaustive, bo, artifact)"),
    KR__JF_STR(kr_partition_frontier, backend, "backend", KR__JREQ, NULL, NULL, "backend that measured (sim, replay, gpu)"),
    KR__JF_HOOK("seed", KR__JREQ, offsetof(kr_partition_frontier, seed), NULL, &count_hook, "search seed"),
    KR__JF_HOOK("space_size", KR__JREQ, offsetof(kr_partition_frontier, space_size), NULL, &count_hook,
                "configurations in the searched space"),
};
static const kr__jtable search_table = KR__JTABLE(search_fields);

static const kr__jfield frontier_fields[] = {
    KR__JF_SCHEMA("kareus.frontier", KR__JREQ, "the format"),
    KR__JF_VERSION(KR_FRONTIER_VERSION, KR__JREQ, "the format's version"),
    KR__JF_OBJ("job", KR__JREQ, &job_table, NULL, "the job"),
    KR__JF_STR(kr_partition_frontier, key, "key", KR__JREQ, NULL, NULL, "partition key (kareus catalog --partitions)"),
    KR__JF_ENUM(kr_partition_frontier, variant, "variant", KR__JREQ, 32, 0, &variant_choice, "execution variant"),
    KR__JF_NUM(kr_partition_frontier, static_power_w, "static_power_w", KR__JREQ, 0, 1e6, 0,
               "static power per GPU of the effective energies, W"),
    KR__JF_HOOK("slots", KR__JREQ, 0, NULL, &slots_hook, "the partition's launch slots, by index"),
    KR__JF_OBJ("search", KR__JREQ, &search_table, NULL, "where the points came from"),
    KR__JF_HOOK("points", KR__JREQ, 0, &point_table, &points_hook, "the measured configurations"),
};
static const kr__jtable frontier_table = KR__JTABLE(frontier_fields);

int kr_frontier_format_field(int i, kr_field_info *out)
{
    return kr__jtable_describe(&frontier_table, NULL, i, out);
}

int kr_frontier_write_json(const char *path, const kr_partition_frontier *f, kr_error *err)
{
    kr__jwctx w = {path, err};
    json_t *root;
    int rc = kr__jtable_write(&w, &frontier_table, f, &root);
    if (rc)
        return rc;
    rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}

static int read_json(const char *path, const char *text, kr_partition_frontier *f, kr_error *err)
{
    json_t *root;
    int rc = kr__json_load_text(text, path, &root, err);
    if (rc)
        return rc;
    kr__jctx c;
    kr__jctx_init(&c, path, err);
    rc = kr__jtable_read(&c, root, &frontier_table, f);
    json_decref(root);
    return rc;
}

/* ---- CSV ------------------------------------------------------------------------------- */

static const char *const csv_cols[] = {"freq_mhz", "slot", "sms", "time_s", "energy_j", "eff_energy_j",
                                       "time_sd_s", "energy_sd_j", "pareto_eff", "pareto_total", "pareto_clock", "kernel"};
#define CSV_REQUIRED 11 /* columns a file must have; "kernel" (after them) came later: absent = tuned */

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
        fprintf(o, "%d,%s,%d,%s,%s,%s,%s,%s,%d,%d,%d,%s\n", p->config.freq_mhz,
                kr_frontier_slot_name(f, p->config.slot), p->config.sms, v[0], v[1], v[2], v[3], v[4],
                (p->flags & KR_FP_PARETO_EFF) != 0, (p->flags & KR_FP_PARETO_TOTAL) != 0,
                (p->flags & KR_FP_PARETO_CLOCK) != 0, kr_comm_kernel_name(p->config.kernel));
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
    col[CSV_REQUIRED] = kr__csv_col(&t, csv_cols[CSV_REQUIRED]);
    for (size_t i = 0; i < CSV_REQUIRED; i++)
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
        const char *kernel = col[CSV_REQUIRED] >= 0 ? kr__csv_cell(&t, r, col[CSV_REQUIRED]) : "tuned";
        if (kr_comm_kernel_parse(kernel, &p->config.kernel) != KR_OK) {
            rc = kr_error_set(err, KR_EPARSE, "%s:%d: column 'kernel': expected tuned or nccl, found '%s'", path,
                              t.line[r], kernel);
            break;
        }
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
