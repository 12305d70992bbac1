/*
 * space.c — the search space of a partition (clocks × comm kernels × launch slots × comm SMs,
 * plus the baseline's own execution), strategy names, default options and the list of
 * partitions a job-wide search covers (search.h).
 *
 * Space (design §5, kareus-method.md §2): the job's planning clocks (kr_job_clocks, highest
 * first; 18 on an A100 by default, down to the GPU's native step when clock_step_mhz says so),
 * the comm kernels of planning.comm_kernels (default tuned and NCCL), every launch slot of the
 * partition and the comm-SM list of its collective (sms_allreduce for all-reduce, sms_gather for
 * all-gather / reduce-scatter; for NCCL the count is its CTAs, i.e. channels), for the kareus
 * variant. Baseline variants and non-partition work use their fixed slot and SM count, so only
 * the clock varies (their configs carry kernel 0: the simulator runs NCCL for them whatever the
 * field says, and their log lines stay as they were).
 *
 * The baseline's execution. Kareus builds on Nanobatching: the same two nanobatches with NCCL
 * at its default CTA count (the GPU's nccl_ctas) launched at partition start. That execution is
 * always a candidate of a kareus partition with a collective (has_base, unless restrict_space
 * fixes knobs for an ablation), and every strategy evaluates it at every clock (search.c), so a
 * partition frontier of Kareus dominates Nanobatching's point at every clock by construction
 * (issue 31). Its CTA count need not be on the searched list (an A100's 24 NCCL channels are not
 * among sms_gather's 1..20; an H100's 16 not among sms_allreduce's 3, 6, …, 30), and NCCL may be
 * left out of comm_kernels; then it is one configuration more per clock, after that clock's
 * grid ("nbase"), rather than a block after the whole grid, so that one clock's configurations
 * stay contiguous (exhaustive batches, bo's clock cover and composition walk clocks that way).
 *
 * Index layout: per_clock = nkernels · nslots · nsms + nbase;
 *   idx = clock · per_clock + (kernel · nslots + slot) · nsms + sms      (the grid)
 *   idx = clock · per_clock + nkernels · nslots · nsms                   (the baseline, nbase 1)
 * so one clock's configurations are contiguous, and with one kernel and no baseline block the
 * layout is the one before kernels existed.
 */
#include <string.h>

#include "search_internal.h"

/* The default-overlap variant's slot: the one at op 0 (partition.c gives every key one). */
static int baseline_slot(const kr_partition *p)
{
    for (int s = 0; s < p->nslots; s++)
        if (p->slots[s].op_index == 0)
            return s;
    return 0;
}

static int find_int(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return i;
    return -1;
}

/* Kernels, slots and CTAs of a kareus partition with a collective (out->key etc. set). */
static int searched_knobs(const kr_job *job, const kr_partition *p, unsigned rs, kr_search_space *out, kr_error *err)
{
    const kr_smlist *l = p->coll.kind == KR_COLL_ALLREDUCE ? &job->sms_allreduce : &job->sms_gather;
    const char *field = p->coll.kind == KR_COLL_ALLREDUCE ? "sms_allreduce" : "sms_gather";
    if (l->n <= 0)
        return kr_error_set(err, KR_EINVAL, "job '%s': planning.%s: expected a non-empty comm-SM list for partition %s "
                            "(%s), found an empty list", job->name, field, p->key, kr_coll_kind_name(p->coll.kind));
    if (p->nslots <= 0)
        return kr_error_set(err, KR_EINVAL, "partition %s (%s): expected launch slots, found none", p->key,
                            kr_variant_name(p->variant));
    if (job->ncomm_kernels < 1 || job->ncomm_kernels > KR_KERNEL_COUNT)
        return kr_error_set(err, KR_EINVAL, "job '%s': planning.comm_kernels: expected 1..%d kernels, found %d",
                            job->name, KR_KERNEL_COUNT, job->ncomm_kernels);
    out->base = (kr_config){0, (int)job->gpu.nccl_ctas, baseline_slot(p), KR_KERNEL_NCCL};
    out->nkernels = job->ncomm_kernels;
    memcpy(out->kernels, job->comm_kernels, (size_t)job->ncomm_kernels * sizeof out->kernels[0]);
    if (rs & (KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL)) {
        out->nkernels = 1;
        out->kernels[0] = rs & KR_SEARCH_ONLY_TUNED ? KR_KERNEL_TUNED : KR_KERNEL_NCCL;
    }
    out->nsms = l->n;
    memcpy(out->sms, l->v, (size_t)l->n * sizeof l->v[0]);
    if (rs & KR_SEARCH_FIX_SMS) {
        out->nsms = 1;
        out->sms[0] = out->base.sms;
    }
    out->nslots = p->nslots;
    for (int i = 0; i < p->nslots; i++)
        out->slots[i] = i;
    if (rs & KR_SEARCH_FIX_SLOT) {
        out->nslots = 1;
        out->slots[0] = out->base.slot;
    }
    out->has_base = rs == 0;
    out->nbase = out->has_base && (find_int(out->kernels, out->nkernels, KR_KERNEL_NCCL) < 0 ||
                                   find_int(out->sms, out->nsms, out->base.sms) < 0);
    return KR_OK;
}

int kr_search_space_init_restricted(const kr_job *job, const kr_partition *p, unsigned restrict_space,
                                    kr_search_space *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    kr__strlcpy(out->key, p->key, sizeof out->key);
    out->variant = p->variant;
    if ((restrict_space & ~KR_SEARCH_RESTRICT_ALL) ||
        (restrict_space & (KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL)) == (KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL))
        return kr_error_set(err, KR_EINVAL,
                            "search %s: restrict_space: expected KR_SEARCH_… flags with at most one ONLY_ kernel, "
                            "found 0x%x", p->key, restrict_space);
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
    out->nkernels = 1;
    out->kernels[0] = KR_KERNEL_TUNED;
    int has_coll = p->coll.kind != KR_COLL_NONE;
    int searched = p->variant == KR_VARIANT_KAREUS && p->per_stage == 0 && has_coll;
    if (!searched) {
        out->nslots = 1;
        out->slots[0] = p->variant == KR_VARIANT_KAREUS && p->per_stage == 0 ? KR_SLOT_NONE : p->fixed_slot;
        out->nsms = 1;
        out->sms[0] = has_coll ? p->fixed_sms : 0;
        return KR_OK;
    }
    return searched_knobs(job, p, restrict_space, out, err);
}

int kr_search_space_init(const kr_job *job, const kr_partition *p, kr_search_space *out, kr_error *err)
{
    return kr_search_space_init_restricted(job, p, 0, out, err);
}

/* The restriction flags' names, X(value, name). */
#define RESTRICT_NAMES(X)                    \
    X(KR_SEARCH_ONLY_TUNED, "only-tuned")    \
    X(KR_SEARCH_ONLY_NCCL, "only-nccl")      \
    X(KR_SEARCH_FIX_SMS, "fix-sms")          \
    X(KR_SEARCH_FIX_SLOT, "fix-slot")        \
    X(KR_SEARCH_UNCOUPLED, "uncoupled")
static const kr__ename restrict_names[] = {RESTRICT_NAMES(KR__ENAME_ROW)};

int kr_search_restrict_parse(const char *list, unsigned *out, kr_error *err)
{
    char buf[128];
    if (kr__strlcpy(buf, list, sizeof buf))
        return kr_error_set(err, KR_EINVAL, "restriction: expected a short list of names, found '%.40s…'", list);
    unsigned flags = 0;
    if (strcmp(buf, "none") != 0) {
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int v;
            if (kr__ename_parse(restrict_names, KR_ARRAY_LEN(restrict_names), t, &v))
                return kr_error_set(err, KR_EINVAL,
                                    "restriction: expected only-tuned, only-nccl, fix-sms, fix-slot (comma-separated) "
                                    "or none, found '%s'", t);
            flags |= (unsigned)v;
        }
        if (flags == 0)
            return kr_error_set(err, KR_EINVAL, "restriction: expected at least one name or none, found '%s'", list);
    }
    if ((flags & (KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL)) == (KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL))
        return kr_error_set(err, KR_EINVAL, "restriction: expected at most one of only-tuned and only-nccl, found both");
    *out = flags;
    return KR_OK;
}

long kr_search_space_per_clock(const kr_search_space *s)
{
    return (long)s->nkernels * s->nslots * s->nsms + s->nbase;
}

long kr_search_space_size(const kr_search_space *s)
{
    return (long)s->nclocks * kr_search_space_per_clock(s);
}

void kr_search_space_config(const kr_search_space *s, long idx, kr_config *c)
{
    long per_clock = kr_search_space_per_clock(s), r = idx % per_clock;
    long grid = per_clock - s->nbase;
    if (r >= grid) {
        *c = s->base;
    } else {
        c->kernel = s->kernels[r / ((long)s->nslots * s->nsms)];
        c->slot = s->slots[(r / s->nsms) % s->nslots];
        c->sms = s->sms[r % s->nsms];
    }
    c->freq_mhz = s->clocks[idx / per_clock];
}

void kr__space_coords(const kr_search_space *s, long idx, int *ci, int *cat, int *mi)
{
    long per_clock = kr_search_space_per_clock(s), r = idx % per_clock;
    long grid = per_clock - s->nbase;
    *ci = (int)(idx / per_clock);
    if (r < grid) {
        *cat = (int)(r / s->nsms);
        *mi = (int)(r % s->nsms);
        return;
    }
    int k = find_int(s->kernels, s->nkernels, s->base.kernel), si = find_int(s->slots, s->nslots, s->base.slot);
    *cat = k >= 0 && si >= 0 ? k * s->nslots + si : kr__space_ncat(s) - 1;
    *mi = -1;
}

int kr__space_ncat(const kr_search_space *s)
{
    int n = s->nkernels * s->nslots;
    /* The baseline off the grid with a kernel the grid lacks gets a category of its own. */
    if (s->nbase && find_int(s->kernels, s->nkernels, s->base.kernel) < 0)
        n++;
    return n;
}

long kr__space_grid_index(const kr_search_space *s, int ci, int cat, int mi)
{
    return (long)ci * kr_search_space_per_clock(s) + (long)cat * s->nsms + mi;
}

static void int_list(const int *v, int n, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k + 16 < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%d", i ? ", " : "", v[i]);
}

static int same_exec(const kr_config *a, const kr_config *b)
{
    return a->kernel == b->kernel && a->sms == b->sms && a->slot == b->slot;
}

int kr_search_space_index(const kr_search_space *s, const kr_config *c, long *idx, kr_error *err)
{
    int ci = find_int(s->clocks, s->nclocks, c->freq_mhz), ki = find_int(s->kernels, s->nkernels, c->kernel);
    int si = find_int(s->slots, s->nslots, c->slot), mi = find_int(s->sms, s->nsms, c->sms);
    char list[512];
    if (ci < 0)
        return kr_error_set(err, KR_ERANGE, "partition %s (%s): freq: expected a planning clock (%d..%d MHz, %d clocks), "
                            "found %d", s->key, kr_variant_name(s->variant), s->clocks[s->nclocks - 1], s->clocks[0],
                            s->nclocks, c->freq_mhz);
    if (s->nbase && same_exec(c, &s->base)) {
        *idx = (long)ci * kr_search_space_per_clock(s) + (kr_search_space_per_clock(s) - 1);
        return KR_OK;
    }
    if (ki < 0) {
        int_list(s->kernels, s->nkernels, list, sizeof list);
        return kr_error_set(err, KR_ERANGE, "partition %s (%s): kernel: expected one of {%s} (0 tuned, 1 nccl), found %d",
                            s->key, kr_variant_name(s->variant), list, c->kernel);
    }
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
    *idx = kr__space_grid_index(s, ci, ki * s->nslots + si, mi);
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
