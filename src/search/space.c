/*
 * space.c — the search space of a partition (clocks × launch slots × comm SMs), strategy names,
 * default options and the list of partitions a job-wide search covers (search.h).
 *
 * Space (design §5, kareus-method.md §2): the job's planning clocks (kr_job_clocks, highest
 * first; 18 on an A100 by default, down to the GPU's native step when clock_step_mhz says so),
 * the comm-SM list of the partition's collective (sms_allreduce for all-reduce, sms_gather for
 * all-gather / reduce-scatter) and every launch slot of the partition, for the kareus variant.
 * Baseline variants and non-partition work use their fixed slot and SM count, so only the clock
 * varies. Index layout: idx = (clock · nslots + slot) · nsms + sms, so one clock's
 * configurations are contiguous.
 */
#include <string.h>

#include "search_internal.h"

int kr_search_space_init(const kr_job *job, const kr_partition *p, kr_search_space *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    kr__strlcpy(out->key, p->key, sizeof out->key);
    out->variant = p->variant;
    int n = kr_job_clocks(job, out->clocks, KR_SEARCH_MAX_CLOCKS);
    if (n == KR_ERANGE)
        return kr_error_set(err, KR_ERANGE, "job '%s': planning clocks %d..%d step %d: expected at most %d clocks",
                            job->name, job->clock_min_mhz, job->clock_max_mhz, job->clock_step_mhz,
                            KR_SEARCH_MAX_CLOCKS);
    if (n <= 0)
        return kr_error_set(err, KR_EINVAL,
                            "job '%s': planning: expected a non-empty clock list (clock_min_mhz <= clock_max_mhz, "
                            "clock_step_mhz >= 1), found clock_min_mhz %d, clock_max_mhz %d, clock_step_mhz %d",
                            job->name, job->clock_min_mhz, job->clock_max_mhz, job->clock_step_mhz);
    out->nclocks = n;
    int has_coll = p->coll.kind != KR_COLL_NONE;
    int searched = p->variant == KR_VARIANT_KAREUS && p->per_stage == 0 && has_coll;
    if (!searched) {
        out->nslots = 1;
        out->slots[0] = p->variant == KR_VARIANT_KAREUS && p->per_stage == 0 ? KR_SLOT_NONE : p->fixed_slot;
        out->nsms = 1;
        out->sms[0] = has_coll ? p->fixed_sms : 0;
        return KR_OK;
    }
    const kr_smlist *l = p->coll.kind == KR_COLL_ALLREDUCE ? &job->sms_allreduce : &job->sms_gather;
    const char *field = p->coll.kind == KR_COLL_ALLREDUCE ? "sms_allreduce" : "sms_gather";
    if (l->n <= 0)
        return kr_error_set(err, KR_EINVAL, "job '%s': planning.%s: expected a non-empty comm-SM list for partition %s "
                            "(%s), found an empty list", job->name, field, p->key, kr_coll_kind_name(p->coll.kind));
    if (p->nslots <= 0)
        return kr_error_set(err, KR_EINVAL, "partition %s (%s): expected launch slots, found none", p->key,
                            kr_variant_name(p->variant));
    out->nsms = l->n;
    memcpy(out->sms, l->v, (size_t)l->n * sizeof l->v[0]);
    out->nslots = p->nslots;
    for (int i = 0; i < p->nslots; i++)
        out->slots[i] = i;
    return KR_OK;
}

long kr_search_space_size(const kr_search_space *s)
{
    return (long)s->nclocks * s->nslots * s->nsms;
}

void kr_search_space_config(const kr_search_space *s, long idx, kr_config *c)
{
    long per_clock = (long)s->nslots * s->nsms;
    c->freq_mhz = s->clocks[idx / per_clock];
    c->slot = s->slots[(idx % per_clock) / s->nsms];
    c->sms = s->sms[idx % s->nsms];
}

static void int_list(const int *v, int n, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k + 16 < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%d", i ? ", " : "", v[i]);
}

int kr_search_space_index(const kr_search_space *s, const kr_config *c, long *idx, kr_error *err)
{
    int ci = -1, si = -1, mi = -1;
    for (int i = 0; i < s->nclocks; i++)
        if (s->clocks[i] == c->freq_mhz)
            ci = i;
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i] == c->slot)
            si = i;
    for (int i = 0; i < s->nsms; i++)
        if (s->sms[i] == c->sms)
            mi = i;
    char list[512];
    if (ci < 0)
        return kr_error_set(err, KR_ERANGE, "partition %s (%s): freq: expected a planning clock (%d..%d MHz, %d clocks), "
                            "found %d", s->key, kr_variant_name(s->variant), s->clocks[s->nclocks - 1], s->clocks[0],
                            s->nclocks, c->freq_mhz);
    if (si < 0) {
        int_list(s->slots, s->nslots, list, sizeof list);
        return kr_error_set(err, KR_ERANGE, "partition %s (%s): slot: expected a slot index among {%s}, found %d",
                            s->key, kr_variant_name(s->variant), list, c->slot);
    }
    if (mi < 0) {
        int_list(s->sms, s->nsms, list, sizeof list);
        return kr_error_set(err, KR_ERANGE, "partition %s (%s): sm: expected one of {%s}, found %d", s->key,
                            kr_variant_name(s->variant), list, c->sms);
    }
    *idx = ((long)ci * s->nslots + si) * s->nsms + mi;
    return KR_OK;
}

/* The strategies' names, X(value, name). */
#define STRATEGY_NAMES(X)                   \
    X(KR_STRATEGY_EXHAUSTIVE, "exhaustive") \
    X(KR_STRATEGY_BO, "bo")                 \
    X(KR_STRATEGY_ARTIFACT, "artifact")
static const kr__ename strategy_names[] = {STRATEGY_NAMES(KR__ENAME_ROW)};

const char *kr_strategy_name(kr_strategy s)
{
    return kr__ename_of(strategy_names, KR_ARRAY_LEN(strategy_names), (int)s);
}

int kr_strategy_parse(const char *name, kr_strategy *out)
{
    int v;
    int rc = kr__ename_parse(strategy_names, KR_ARRAY_LEN(strategy_names), name, &v);
    if (rc == KR_OK)
        *out = (kr_strategy)v;
    return rc;
}

void kr_search_config_default(kr_search_config *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = KR_STRATEGY_BO;
    o->seed = 1;
}

int kr_search_partitions(const kr_job *job, kr_variant variant, int include_nonpartition, kr_partition_set *out,
                         kr_error *err)
{
    int rc = kr_partition_catalog(job, variant, out, err);
    if (rc || !include_nonpartition)
        return rc;
    for (int stage = 0; stage < job->pp; stage++)
        for (int bwd = 0; bwd < 2; bwd++) {
            kr_partition_set np;
            if ((rc = kr_partition_nonpartition(job, stage, bwd, &np, err)))
                return rc;
            for (int i = 0; i < np.n; i++) {
                if (kr_partition_find(out, np.p[i].key))
                    continue;
                if (out->n >= KR_MAX_PARTITIONS)
                    return kr_error_set(err, KR_ERANGE, "job '%s': more than %d partitions to search", job->name,
                                        KR_MAX_PARTITIONS);
                out->p[out->n++] = np.p[i];
            }
        }
    return KR_OK;
}
