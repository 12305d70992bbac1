/*
 * compose.c — instruction options from partition frontiers (see compose.h).
 *
 * Per instruction (stage, forward/backward, chunk) and clock f:
 *   P_0 = {non-partition work at f}                       (one point, fixed configuration)
 *   P_k = Pareto(P_{k−1} ⊕ m_k · F_k(f))                  (F_k(f): key k's Pareto set at f)
 * with m_k = per_layer × layers (the executions of key k in one instruction), in the plane
 * (time, effective energy = energy − P_static · time), tolerance 0. Pruning after each key is
 * exact because Pareto(A ⊕ B) = Pareto(Pareto(A) ⊕ Pareto(B)) for sums of (time, energy)
 * vectors. Then the union over clocks is pruned again. Provenance is a tree of (parent, key,
 * point) nodes created only for surviving sums, so no option carries a copied config array
 * until the end. Units: seconds and joules per GPU per execution, static power included.
 */
#include "kareus/compose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

typedef struct prov {
    int parent; /* Previous node, -1 at the root. */
    int key;    /* Index into the instruction's key list. */
    int pt;     /* Index into that key's points at the clock. */
} prov;

typedef struct keyuse {
    const kr_partition_frontier *f;
    int recompute;
    double mult;
} keyuse;

/* A composed point at one clock. */
typedef struct cpoint {
    double time_s, energy_j;
    int node;     /* Provenance leaf (-1: non-partition work only). */
    int freq_mhz;
} cpoint;

typedef struct ctx {
    prov *prov;
    size_t nprov, provcap;
    kr_fpoint *cand, *kept;
    size_t candcap;
    cpoint *cur, *next, *all;
    size_t curcap, nextcap, allcap, nall;
} ctx;

static void ctx_free(ctx *c)
{
    free(c->prov);
    free(c->cand);
    free(c->kept);
    free(c->cur);
    free(c->next);
    free(c->all);
}

static const kr_partition_frontier *find_front(const kr_partition_frontier *fronts, int n, const char *key, kr_variant v)
{
    for (int i = 0; i < n; i++)
        if (fronts[i].variant == v && strcmp(fronts[i].key, key) == 0)
            return &fronts[i];
    return NULL;
}

static int is_first_chunk_work(const char *key)
{
    return strncmp(key, "embed", 5) == 0;
}

/* Non-partition time and energy of (stage, kind, chunk) at clock f. */
static int nonpartition(const kr_job *job, int stage, int backward, int chunk, int freq, kr_backend *b, double *t,
                        double *e, kr_error *err)
{
    *t = *e = 0;
    kr_partition_set np;
    int rc = kr_partition_nonpartition(job, stage, backward, &np, err);
    if (rc)
        return rc;
    for (int i = 0; i < np.n; i++) {
        const kr_partition *p = &np.p[i];
        /* With interleaving, the embedding belongs to the first virtual stage (chunk 0 of
         * stage 0) and the LM head and loss to the last (the last chunk of the last stage). */
        int want = is_first_chunk_work(p->key) ? 0 : job->virtual_stages - 1;
        if (chunk != want)
            continue;
        kr_config c = {freq, p->fixed_sms, p->fixed_slot, 0};
        kr_measurement m;
        if (kr_backend_measure(b, p, &c, &m))
            return kr_error_set(err, KR_EBACKEND, "compose: measuring %s at %d MHz on stage %d: %s", p->key, freq, stage,
                                kr_backend_errmsg(b));
        int reps = p->per_stage > 0 ? p->per_stage : 1;
        *t += reps * m.time_s;
        *e += reps * m.energy_j;
    }
    return KR_OK;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem, kr_error *err)
{
    if (kr__grow(p, cap, need, elem))
        return kr_error_set(err, KR_ENOMEM, "compose: out of memory");
    return KR_OK;
}

/* Adds key k (its points at clock f) to the c->cur partial compositions (*ncur of them):
 * every sum, Pareto-pruned, becomes the new c->cur with its provenance. */
static int add_key(const keyuse *key, int k, int f, double P, ctx *c, size_t *ncur, kr_compose_stats *st,
                   kr_error *err)
{
    const kr_measured *pts;
    size_t m;
    kr_frontier_at_clock(key->f, f, 1, &pts, &m);
    size_t n = *ncur * m;
    int rc;
    if ((rc = grow((void **)&c->cand, &c->candcap, n, sizeof *c->cand, err)))
        return rc;
    size_t keptcap = c->candcap;
    void *kp = realloc(c->kept, keptcap * sizeof *c->kept);
    if (kp == NULL)
        return kr_error_set(err, KR_ENOMEM, "compose: out of memory");
    c->kept = kp;
    for (size_t i = 0; i < *ncur; i++)
        for (size_t j = 0; j < m; j++) {
            kr_fpoint *q = &c->cand[i * m + j];
            q->time_s = c->cur[i].time_s + key->mult * pts[j].time_s;
            q->energy_j = c->cur[i].energy_j + key->mult * pts[j].energy_j;
            q->id = (long long)(i * m + j);
        }
    if (st)
        st->candidates += (long long)n;
    size_t nk;
    if ((rc = kr_frontier_pareto(c->cand, n, P, 0.0, c->kept, &nk, err)))
        return rc;
    if ((rc = grow((void **)&c->next, &c->nextcap, nk, sizeof *c->next, err)) ||
        (rc = grow((void **)&c->prov, &c->provcap, c->nprov + nk, sizeof *c->prov, err)))
        return rc;
    for (size_t i = 0; i < nk; i++) {
        size_t from = (size_t)c->kept[i].id / m, j = (size_t)c->kept[i].id % m;
        c->prov[c->nprov] = (prov){c->cur[from].node, k, (int)j};
        c->next[i] = (cpoint){c->kept[i].time_s, c->kept[i].energy_j, (int)c->nprov, f};
        c->nprov++;
    }
    cpoint *tmp = c->cur;
    size_t tcap = c->curcap;
    c->cur = c->next;
    c->curcap = c->nextcap;
    c->next = tmp;
    c->nextcap = tcap;
    *ncur = nk;
    return KR_OK;
}

/* 1 if every key after the first has points at clock f. */
static int clock_common(const keyuse *keys, int nkeys, int f)
{
    for (int k = 1; k < nkeys; k++) {
        const kr_measured *pts;
        size_t m;
        kr_frontier_at_clock(keys[k].f, f, 1, &pts, &m);
        if (m == 0)
            return 0;
    }
    return 1;
}

/* Composes one instruction: fills c->all with the Pareto union over clocks. */
static int compose_one(const kr_job *job, int stage, int backward, int chunk, const keyuse *keys, int nkeys,
                       kr_backend *b, ctx *c, kr_compose_stats *st, kr_error *err)
{
    double P = job->static_power_w;
    int clocks[256];
    int nclk = kr_frontier_clocks(keys[0].f, clocks, (int)KR_ARRAY_LEN(clocks));
    if (nclk < 0)
        return kr_error_set(err, KR_ERANGE, "compose: key %s has more than %zu clocks", keys[0].f->key,
                            KR_ARRAY_LEN(clocks));
    c->nprov = 0;
    c->nall = 0;
    int used = 0, rc;
    for (int ci = 0; ci < nclk; ci++) {
        int f = clocks[ci];
        if (!clock_common(keys, nkeys, f))
            continue;
        used++;
        double t0, e0;
        if ((rc = nonpartition(job, stage, backward, chunk, f, b, &t0, &e0, err)))
            return rc;
        size_t ncur = 1;
        if ((rc = grow((void **)&c->cur, &c->curcap, 1, sizeof *c->cur, err)))
            return rc;
        c->cur[0] = (cpoint){t0, e0, -1, f};
        for (int k = 0; k < nkeys; k++)
            if ((rc = add_key(&keys[k], k, f, P, c, &ncur, st, err)))
                return rc;
        if ((rc = grow((void **)&c->all, &c->allcap, c->nall + ncur, sizeof *c->all, err)))
            return rc;
        memcpy(c->all + c->nall, c->cur, sizeof *c->cur * ncur);
        c->nall += ncur;
    }
    if (st && st->clocks < used)
        st->clocks = used;
    if (used == 0)
        return kr_error_set(err, KR_EMISMATCH,
                            "compose: stage %d %s: no clock is measured in every partition frontier it needs", stage,
                            backward ? "backward" : "forward");
    return KR_OK;
}

/* Every partition key of the catalog has a frontier that fits the job. */
static int check_fronts(const kr_job *job, kr_variant variant, const kr_partition_set *parts,
                        const kr_partition_frontier *fronts, int nfronts, kr_error *err)
{
    for (int i = 0; i < parts->n; i++) {
        const kr_partition_frontier *f = find_front(fronts, nfronts, parts->p[i].key, variant);
        if (f == NULL) {
            char name[64];
            kr_frontier_file_name(parts->p[i].key, variant, "json", name, sizeof name);
            return kr_error_set(err, KR_ENOTFOUND, "compose: no frontier for partition key '%s' (%s variant; file %s)",
                                parts->p[i].key, kr_variant_name(variant), name);
        }
        int rc = kr_frontier_check_job(f, job, err);
        if (rc)
            return rc;
    }
    return KR_OK;
}

/* The keys of one instruction (L layers; bwd: a backward) into keys[*nk]: its own keys, then
 * for a backward of a recomputing job the recomputed forward's. */
static int instr_keys(const kr_job *job, kr_variant variant, const kr_partition_set *parts,
                      const kr_partition_frontier *fronts, int nfronts, int bwd, int L, keyuse *keys, int *nk,
                      kr_error *err)
{
    *nk = 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the instruction's own keys; pass 1: the recomputed forward. */
        if (pass == 1 && !(bwd && job->recompute))
            continue;
        for (int i = 0; i < parts->n; i++) {
            const kr_partition *p = &parts->p[i];
            if (p->backward != (pass == 0 ? bwd : 0))
                continue;
            if (*nk >= KR_PLAN_MAX_COMM)
                return kr_error_set(err, KR_ERANGE, "compose: more than %d partition keys in one instruction",
                                    KR_PLAN_MAX_COMM);
            keys[*nk].f = find_front(fronts, nfronts, p->key, variant);
            keys[*nk].recompute = pass;
            keys[*nk].mult = (double)p->per_layer * L;
            (*nk)++;
        }
    }
    return KR_OK;
}

/* The union over clocks in c->all, pruned again, as options of (s, bwd, ch) with the comm
 * settings their provenance names. */
static int add_options(const kr_job *job, int s, int bwd, int ch, const keyuse *keys, int nk, const ctx *c,
                       kr_options *out, kr_compose_stats *stats, kr_error *err)
{
    kr_fpoint *pts = malloc(sizeof *pts * c->nall * 2);
    if (pts == NULL)
        return kr_error_set(err, KR_ENOMEM, "compose: out of memory");
    for (size_t i = 0; i < c->nall; i++)
        pts[i] = (kr_fpoint){c->all[i].time_s, c->all[i].energy_j, (long long)i};
    size_t nkept;
    int rc = kr_frontier_pareto(pts, c->nall, job->static_power_w, 0.0, pts + c->nall, &nkept, err);
    for (size_t i = 0; i < nkept && rc == KR_OK; i++) {
        const cpoint *cp = &c->all[pts[c->nall + i].id];
        kr_comm_setting comm[KR_PLAN_MAX_COMM];
        memset(comm, 0, sizeof comm);
        for (int node = cp->node; node >= 0; node = c->prov[node].parent) {
            const prov *pv = &c->prov[node];
            const keyuse *ku = &keys[pv->key];
            const kr_measured *kp;
            size_t m;
            kr_frontier_at_clock(ku->f, cp->freq_mhz, 1, &kp, &m);
            kr_comm_setting *cs = &comm[pv->key];
            kr__strlcpy(cs->key, ku->f->key, sizeof cs->key);
            cs->recompute = ku->recompute;
            kr__strlcpy(cs->slot, kr_frontier_slot_name(ku->f, kp[pv->pt].config.slot), sizeof cs->slot);
            cs->sms = kp[pv->pt].config.sms;
            cs->kernel = kp[pv->pt].config.kernel;
        }
        kr_option o = {cp->time_s, cp->energy_j, cp->freq_mhz, -1, 0};
        rc = kr_options_add(out, s, bwd ? KR_INSTR_BACKWARD : KR_INSTR_FORWARD, ch, &o, comm, nk, err);
    }
    if (stats)
        stats->kept += (long long)nkept;
    free(pts);
    return rc;
}

int kr_compose(const kr_job *job, kr_variant variant, const kr_partition_frontier *fronts, int nfronts,
               kr_backend *backend, kr_options *out, kr_compose_stats *stats, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    kr_partition_set *parts = malloc(sizeof *parts);
    if (parts == NULL)
        return kr_error_set(err, KR_ENOMEM, "compose: out of memory");
    ctx c;
    memset(&c, 0, sizeof c);
    int V = job->virtual_stages > 0 ? job->virtual_stages : 1;
    int rc = kr_partition_catalog(job, variant, parts, err);
    if (rc == KR_OK && (rc = check_fronts(job, variant, parts, fronts, nfronts, err)) == KR_OK)
        rc = kr_options_init(out, job->pp, V, err);
    for (int s = 0; s < job->pp && rc == KR_OK; s++) {
        for (int ch = 0; ch < V && rc == KR_OK; ch++) {
            /* The chunk's layers: the stage's layers split evenly, earlier chunks take the rest. */
            int L = job->layers_per_stage[s] / V + (ch < job->layers_per_stage[s] % V);
            for (int bwd = 0; bwd < 2 && rc == KR_OK; bwd++) {
                keyuse keys[KR_PLAN_MAX_COMM];
                int nk;
                if ((rc = instr_keys(job, variant, parts, fronts, nfronts, bwd, L, keys, &nk, err)))
                    break;
                if (nk == 0) {
                    rc = kr_error_set(err, KR_EINVAL, "compose: stage %d %s has no partition keys", s,
                                      bwd ? "backward" : "forward");
                    break;
                }
                if ((rc = compose_one(job, s, bwd, ch, keys, nk, backend, &c, stats, err)))
                    break;
                rc = add_options(job, s, bwd, ch, keys, nk, &c, out, stats, err);
            }
        }
    }
    free(parts);
    ctx_free(&c);
    if (rc)
        kr_options_free(out);
    return rc;
}

int kr_compose_read_frontiers(const char *dir, const kr_job *job, kr_variant variant, kr_partition_frontier *fronts,
                              int cap, kr_error *err)
{
    kr_partition_set *parts = malloc(sizeof *parts);
    if (parts == NULL)
        return kr_error_set(err, KR_ENOMEM, "compose: out of memory");
    int rc = kr_partition_catalog(job, variant, parts, err), n = 0;
    for (int i = 0; rc == KR_OK && i < parts->n; i++) {
        if (n >= cap) {
            rc = kr_error_set(err, KR_ERANGE, "compose: more than %d frontiers", cap);
            break;
        }
        char name[96], path[4200];
        kr_frontier_file_name(parts->p[i].key, variant, "json", name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *fp = fopen(path, "r");
        if (fp == NULL) {
            kr_frontier_file_name(parts->p[i].key, variant, "csv", name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            fp = fopen(path, "r");
        }
        if (fp == NULL) {
            char jname[96];
            kr_frontier_file_name(parts->p[i].key, variant, "json", jname, sizeof jname);
            rc = kr_error_set(err, KR_ENOTFOUND, "%s: expected a frontier file %s (or %s) for partition key '%s', found none",
                              dir, jname, name, parts->p[i].key);
            break;
        }
        fclose(fp);
        if ((rc = kr_frontier_read(path, &fronts[n], err)) == KR_OK)
            n++;
    }
    free(parts);
    if (rc) {
        for (int i = 0; i < n; i++)
            kr_frontier_free(&fronts[i]);
        return rc;
    }
    return n;
}
