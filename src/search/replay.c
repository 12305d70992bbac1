/*
 * replay.c — the replay backend: answers measure() from recorded measurement logs (ours, or the
 * artifact's per-key eval_results.jsonl), so searches, composition and comparisons run on
 * recordings exactly as they would on the device that made them (search.h).
 *
 * Records are deduplicated (first file, then first line, wins) and sorted once; a lookup is a
 * binary search on (key, variant, freq, slot name, sms, kernel). Records are not restricted to the
 * job's current search space (a recording may cover more clocks than the plan uses), but their
 * key, variant and slot must exist in the job.
 */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

typedef struct replay {
    kr_job job;
    kr__mrecs recs;
    char files[512]; /* the paths, for messages */
} replay;

static const kr_backend_class replay_class;
#define STATE(b) ((replay *)kr_backend_state((b), &replay_class))

static int replay_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    replay *r = STATE(b);
    kr__mrec probe;
    kr__mrec_from_config(&probe, p, c);
    const kr__mrec *m = kr__mrecs_find(&r->recs, &probe);
    if (m == NULL) {
        long same = 0;
        for (size_t i = 0; i < r->recs.n; i++)
            same += strcmp(r->recs.r[i].key, p->key) == 0 && r->recs.r[i].variant == p->variant;
        return kr_error_set(kr_backend_error(b), KR_ENOTFOUND,
                            "replay: no recorded measurement of %s (%s) at %d MHz, slot %s, %d SMs, %s kernel in %s (it has %ld "
                            "measurements of that partition; --strategy exhaustive searches only what was recorded)",
                            p->key, kr_variant_name(p->variant), probe.freq_mhz, probe.slot, probe.sms,
                            kr_comm_kernel_name(probe.kernel), r->files, same);
    }
    memset(out, 0, sizeof *out);
    out->time_s = m->time_s;
    out->energy_j = m->energy_j;
    out->eff_energy_j = m->energy_j - r->job.static_power_w * m->time_s;
    out->time_sd_s = m->time_sd_s;
    out->energy_sd_j = m->energy_sd_j;
    out->repeats = m->repeats;
    return KR_OK;
}

static int replay_device_count(kr_backend *b, int *count)
{
    (void)b;
    *count = 1;
    return KR_OK;
}

static int replay_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    replay *r = STATE(b);
    if (dev != 0)
        return kr_error_set(kr_backend_error(b), KR_ERANGE, "replay: device: expected 0, found %d", dev);
    int needed = 0;
    int k = kr_gpu_supported_clocks(&r->job.gpu, mhz, cap, &needed);
    if (k < 0)
        return kr_error_set(kr_backend_error(b), k, "replay: %d clocks do not fit in %d", needed, cap);
    *n = k;
    return KR_OK;
}

static void replay_destroy(void *state)
{
    replay *r = state;
    free(r->recs.r);
    free(r);
}

static const kr_measure_ops replay_measure_ops = {replay_measure};
/* The clock list of the recording's GPU, for callers that plan on the backend's devices. */
static const kr_control_ops replay_control_ops = {.device_count = replay_device_count, .supported_clocks = replay_clocks};
static const kr_backend_class replay_class = {
    .name = "replay",
    .caps = KR_BACKEND_MEASURE | KR_BACKEND_CLOCK_LIST | KR_BACKEND_RECORDED,
    .measure = &replay_measure_ops,
    .control = &replay_control_ops,
    .destroy = replay_destroy,
};

int kr__replay_recorded(const kr_backend *b, const kr_partition *p, const kr_config *c)
{
    const replay *r = STATE(b);
    if (r == NULL)
        return -1;
    if (p == NULL)
        return 0;
    kr__mrec probe;
    kr__mrec_from_config(&probe, p, c);
    return kr__mrecs_find(&r->recs, &probe) != NULL;
}

const char *kr__replay_files(const kr_backend *b)
{
    const replay *r = STATE(b);
    return r ? r->files : "";
}

int kr_replay_missing(const kr_backend *b, const kr_search_log *log, const kr_job *job, kr_variant variant,
                      int include_nonpartition, char *buf, size_t cap, kr_error *err)
{
    if (cap)
        buf[0] = '\0';
    if (kr__replay_recorded(b, NULL, NULL) < 0)
        return kr_error_set(err, KR_EINVAL, "replay: expected a replay backend, found %s", b ? kr_backend_name(b) : "none");
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return kr_error_set(err, KR_ENOMEM, "replay: out of memory");
    /* Layer partitions come first in the set, the non-partition work after them. */
    int rc = kr_search_partitions(job, variant, 0, set, err);
    int nlayer = set->n;
    if (rc == KR_OK && include_nonpartition)
        rc = kr_search_partitions(job, variant, 1, set, err);
    int missing = 0;
    size_t len = 0;
    for (int i = include_nonpartition == 2 ? nlayer : 0; rc == KR_OK && i < set->n; i++) {
        const kr_partition *p = &set->p[i];
        int found = 0;
        const kr__mrecs *m = log ? kr__search_log_records(log) : NULL;
        for (size_t k = 0; m && k < m->n && !found; k++)
            found = m->r[k].variant == p->variant && strcmp(m->r[k].key, p->key) == 0;
        kr_search_space sp;
        if (!found && (rc = kr_search_space_init(job, p, &sp, err)) == KR_OK) {
            long size = kr_search_space_size(&sp);
            for (long c = 0; c < size && !found; c++) {
                kr_config cfg;
                kr_search_space_config(&sp, c, &cfg);
                found = kr__replay_recorded(b, p, &cfg) == 1;
            }
        }
        if (rc == KR_OK && !found) {
            missing++;
            if (cap > len)
                len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", p->key);
        }
    }
    free(set);
    return rc ? rc : missing;
}

/* Splits "KEY=FILE" (KEY a plain identifier) from "FILE". */
static void split_spec(const char *spec, char *key, size_t kcap, const char **file)
{
    const char *eq = strchr(spec, '=');
    key[0] = '\0';
    *file = spec;
    if (eq == NULL || eq == spec || (size_t)(eq - spec) >= kcap)
        return;
    for (const char *s = spec; s < eq; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return;
    snprintf(key, kcap, "%.*s", (int)(eq - spec), spec);
    *file = eq + 1;
}

int kr_replay_backend_create(const kr_job *job, const char *const *paths, int npaths, kr_backend **out, kr_error *err)
{
    *out = NULL;
    if (npaths <= 0 || paths == NULL)
        return kr_error_set(err, KR_EINVAL, "replay: expected at least one log file, found none");
    replay *r = calloc(1, sizeof *r);
    kr__catalogs *cat = malloc(sizeof *cat);
    int rc = KR_OK;
    char *text = NULL;
    if (r == NULL || cat == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "replay: out of memory");
        goto fail;
    }
    r->job = *job;
    if ((rc = kr__catalogs_build(job, cat, err)))
        goto fail;
    size_t fl = 0;
    for (int i = 0; i < npaths; i++) {
        char key[KR_KEY_MAX];
        const char *file;
        split_spec(paths[i], key, sizeof key, &file);
        fl += (size_t)snprintf(r->files + KR_MIN(fl, sizeof r->files - 1), sizeof r->files - KR_MIN(fl, sizeof r->files - 1),
                               "%s%s", i ? ", " : "", file);
        size_t len;
        if ((rc = kr__read_file(file, &text, &len, err)))
            goto fail;
        if (key[0] == '\0') {
            /* The artifact's layout: logs/<model>/<config>/<key>/eval_results.jsonl. */
            char dirbuf[4096], base[KR_KEY_MAX + 8];
            kr__strlcpy(dirbuf, file, sizeof dirbuf);
            kr__strlcpy(base, basename(dirname(dirbuf)), sizeof base);
            if (kr__catalogs_find(cat, base, KR_VARIANT_KAREUS))
                kr__strlcpy(key, base, sizeof key);
        }
        kr__mparse o = {file, i, job, cat, key[0] ? key : NULL, 0};
        size_t valid;
        int torn, complete;
        if ((rc = kr__mlog_parse(&o, text, len, &r->recs, &valid, &torn, &complete, err))) {
            if (rc == KR_EPARSE && strstr(err ? err->msg : "", "KEY=FILE"))
                rc = kr_error_set(err, KR_EINVAL,
                                  "replay: %s: lines in the artifact's format carry no partition key and the directory "
                                  "'%s' names none: pass KEY=%s",
                                  file, key[0] ? key : "?", file);
            goto fail;
        }
        /* A torn last line of a recording is simply not part of it. */
        free(text);
        text = NULL;
    }
    int first_dup;
    kr__mrecs_dedupe(&r->recs, &first_dup);
    free(cat);
    cat = NULL;
    if ((rc = kr_backend_create(&replay_class, r, out))) {
        rc = kr_error_set(err, KR_ENOMEM, "replay: out of memory");
        goto fail;
    }
    return KR_OK;
fail:
    free(text);
    free(cat);
    if (r)
        free(r->recs.r);
    free(r);
    return rc;
}
