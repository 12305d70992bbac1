/*
 * artifact.c — the published system's plan files, read as data and written back (plan.h):
 * `freqs_pipeline_N.py` (one list per pipeline stage of ("forward"|"backward", MHz) tuples,
 * what Zeus's PointSolution3D loads) and `scheds_pipeline_N.py` (one list per stage of comm
 * configuration tuples, what Kareus's PipelineCommScheduler loads), both followed by the
 * optimizer's "# Iteration N …" trailer (ml-energy/kareus at 98f0255, tests/kareus/run_optimization.py
 * and kareus/scheduler/parser.py; docs/formats.md has the layouts).
 *
 * The files are Python source that their consumers `eval`. We never evaluate them: a strict
 * reader (pylit.c) accepts exactly the literal subset the artifact writes — lists, tuples, quoted
 * strings, integers and floats, `#` comments — and every error names file:line:column, what was
 * expected and what was found. Import then checks the lists against a job: one list per stage,
 * each instruction in the job's schedule order, clocks the GPU supports, config strings whose
 * slot and SM count exist for the partition key.
 *
 * Energy trailer: "total cost" is the summed effective (dynamic) energy of one GPU per stage,
 * "total cost with P2P" adds stages × T × P_static, i.e. it is the whole cluster's energy
 * divided by the GPUs per stage (kareus-method.md §6). Import multiplies by the job's GPUs per
 * stage and recovers T = (with − total) / (stages · P_static); export divides.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kareus/backend.h"
#include "kareus/options.h"
#include "kareus/partition.h"
#include "kareus/plan.h"
#include "plan_internal.h"
#include "util/util.h"

/* ---- layouts ----------------------------------------------------------------------------- */

/* The partition keys of a scheds tuple, after the instruction name (kareus/scheduler/parser.py,
 * activation-checkpointing mode): forward = fwd keys; backward = recomputed fwd keys, then bwd
 * keys. */
static const char *const fwd_keys_cp1[] = {"fwd_attn", "fwd_mlp"};
static const char *const bwd_keys_cp1[] = {"bwd_attn", "bwd_mlp"};
static const char *const fwd_keys_cp[] = {"fwd_qkv_ar", "fwd_qkv_ag", "fwd_ao_ag", "fwd_ao_ar", "fwd_mlp"};
static const char *const bwd_keys_cp[] = {"bwd_qkv_ar", "bwd_qkv_rs", "bwd_a_rs", "bwd_a_ag", "bwd_o_ag", "bwd_o_ar",
                                          "bwd_mlp"};

typedef struct layout {
    const char *const *fwd;
    int nf;
    const char *const *bwd;
    int nb;
} layout;

static void layout_of(const kr_job *job, layout *l)
{
    if (job->cp > 1) {
        *l = (layout){fwd_keys_cp, 5, bwd_keys_cp, 7};
    } else {
        *l = (layout){fwd_keys_cp1, 2, bwd_keys_cp1, 2};
    }
}

static int method_variant(const char *method, kr_variant *v)
{
    if (strcmp(method, "kareus") == 0)
        *v = KR_VARIANT_KAREUS;
    else if (strcmp(method, "perseus") == 0 || strcmp(method, "megatron") == 0)
        *v = KR_VARIANT_SEQUENTIAL;
    else if (strcmp(method, "nanobatch+perseus") == 0 || strcmp(method, "nanobatch") == 0)
        *v = KR_VARIANT_DEFAULT_OVERLAP;
    else
        return -1;
    return 0;
}

/* Iteration number from a file name "…freqs_pipeline_00123.py" (-1 if it has none). */
static long long index_from_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *u = strrchr(b, '_');
    if (u == NULL || !isdigit((unsigned char)u[1]))
        return -1;
    char *end;
    long long v = strtoll(u + 1, &end, 10);
    return strcmp(end, ".py") == 0 ? v : -1;
}

/* 1 if cfg is the legacy all-integer form "start-end-sm-block" (negatives allowed). */
static int legacy_window(const char *cfg)
{
    const char *c = cfg;
    for (int part = 0; part < 4; part++) {
        if (part && *c++ != '-')
            return 0;
        if (*c == '-')
            c++;
        if (!isdigit((unsigned char)*c))
            return 0;
        while (isdigit((unsigned char)*c))
            c++;
    }
    return *c == '\0';
}

/* One config string of a scheds tuple into a comm setting of partition p. */
static int import_config(const char *file, const kr__pv *v, const kr_job *job, const kr_partition *p, int recompute,
                         int s, int i, kr_comm_setting *out, kr_error *err)
{
    const char *role = recompute ? "recomputed " : "";
    if (v->t != KR__PV_STR)
        return kr_error_set(err, KR_EPARSE,
                            "%s:%d:%d: stage %d instruction %d, %s%s: expected a config string "
                            "'<slot>-none-<sm>-<block>', found %s",
                            file, v->line, v->col, s, i, role, p->key, kr__plan_pv_what(v));
    memset(out, 0, sizeof *out);
    kr__sb names = {0};
    for (int k = 0; k < p->nslots; k++)
        kr__sb_printf(&names, "%s%s", k ? ", " : "", p->slots[k].name);
    kr_error e = {0};
    int rc = KR_OK;
    if (legacy_window(v->s))
        rc = kr_error_set(err, KR_EPARSE,
                          "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected a launch slot name (%s), "
                          "found the all-integer window of an older artifact version, which indexes that runtime's "
                          "own op list and cannot be mapped to a slot here",
                          file, v->line, v->col, s, i, role, p->key, v->s, kr__sb_str(&names));
    else if (kr_comm_setting_parse(v->s, out, &e))
        rc = kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d instruction %d, %s%s: %s", file, v->line, v->col, s, i,
                          role, p->key, e.msg);
    if (rc) {
        kr__sb_free(&names);
        return rc;
    }
    const char *block = strrchr(v->s, '-');
    if (block == NULL || strcmp(block + 1, "1024") != 0) {
        kr__sb_free(&names);
        return kr_error_set(err, KR_ERANGE,
                            "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected block 1024 (the threads per "
                            "CTA every artifact comm kernel is compiled for), found %s",
                            file, v->line, v->col, s, i, role, p->key, v->s, block ? block + 1 : "none");
    }
    int slot;
    if (kr_partition_slot_index(p, out->slot, &slot, &e) || slot == KR_SLOT_NONE) {
        rc = kr_error_set(err, KR_EMISMATCH,
                          "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected a launch slot of %s (%s), "
                          "found '%s'",
                          file, v->line, v->col, s, i, role, p->key, v->s, p->key, kr__sb_str(&names), out->slot);
    } else if (out->sms < 1 || out->sms >= (int)job->gpu.sm_count) {
        rc = kr_error_set(err, KR_ERANGE, "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected an SM count in "
                          "[1, %d] (the %s has %d SMs), found %d",
                          file, v->line, v->col, s, i, role, p->key, v->s, (int)job->gpu.sm_count - 1, job->gpu.name,
                          (int)job->gpu.sm_count, out->sms);
    }
    kr__sb_free(&names);
    if (rc)
        return rc;
    kr__strlcpy(out->key, p->key, sizeof out->key);
    out->recompute = recompute;
    return KR_OK;
}

/* The fixed comm settings of a baseline variant's instruction (what its runtime does without a
 * schedule file), in catalog order. */
static int fixed_comm(const kr_job *job, const kr_partition_set *parts, kr_plan_instr *in, kr_error *err)
{
    in->ncomm = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < parts->n; k++) {
            const kr_partition *p = &parts->p[k];
            int rec = pass == 1;
            int want = in->kind == KR_INSTR_FORWARD ? (!rec && !p->backward)
                                                    : (rec ? !p->backward && job->recompute : p->backward);
            if (!want || p->coll.kind == KR_COLL_NONE)
                continue;
            if (in->ncomm >= KR_PLAN_MAX_COMM)
                return kr_error_set(err, KR_ERANGE, "plan import: more than %d comm settings in one instruction",
                                    KR_PLAN_MAX_COMM);
            kr_comm_setting *c = &in->comm[in->ncomm++];
            memset(c, 0, sizeof *c);
            kr__strlcpy(c->key, p->key, sizeof c->key);
            c->recompute = rec;
            kr__strlcpy(c->slot, kr_partition_slot_name(p, p->fixed_slot), sizeof c->slot);
            c->sms = p->fixed_sms;
        }
    }
    return KR_OK;
}

/* Checks one stage list (of freqs or scheds) against the job's order. */
static int is_pair(const kr__pv *t)
{
    return t->t == KR__PV_TUPLE && t->n == 2 && t->items[0].t == KR__PV_TUPLE && t->items[1].t == KR__PV_TUPLE;
}

/* Checks one stage list (of freqs or scheds) against the job's order. pairs: a scheds file in the
 * per-microbatch layout of jobs without recomputation (one (forward, backward) pair per
 * microbatch, kareus/scheduler/parser.py's non-checkpointing branch). */
static int check_stage_list(const char *file, const kr__pv *root, int s, int n, const kr_job *job, int pairs,
                            kr_error *err)
{
    const kr__pv *st = &root->items[s];
    if (st->t != KR__PV_LIST)
        return kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d: expected a list of instruction tuples, found %s", file,
                            st->line, st->col, s, kr__plan_pv_what(st));
    if (pairs) {
        if (st->n != job->num_microbatches)
            return kr_error_set(err, KR_EMISMATCH,
                                "%s:%d:%d: stage %d: expected %d (forward, backward) pairs, one per microbatch (job "
                                "'%s' runs without recomputation), found %d",
                                file, st->line, st->col, s, job->num_microbatches, job->name, st->n);
        for (int m = 0; m < st->n; m++)
            if (!is_pair(&st->items[m]))
                return kr_error_set(err, KR_EPARSE,
                                    "%s:%d:%d: stage %d microbatch %d: expected a pair of tuples (('forward', …), "
                                    "('backward', …)) (the artifact's layout for jobs without recomputation), found "
                                    "%s",
                                    file, st->items[m].line, st->items[m].col, s, m, kr__plan_pv_what(&st->items[m]));
        return KR_OK;
    }
    const kr__pv *t0 = st->n > 0 ? &st->items[0] : NULL;
    if (t0 && is_pair(t0))
        return kr_error_set(err, KR_EPARSE,
                            "%s:%d:%d: stage %d item 0: expected one tuple per instruction ('forward'|'backward', "
                            "…) (the activation-checkpointing layout of job '%s', which recomputes), found a "
                            "(forward, backward) pair: the artifact's per-microbatch layout for jobs without "
                            "recomputation",
                            file, t0->line, t0->col, s, job->name);
    if (st->n != n)
        return kr_error_set(err, KR_EMISMATCH,
                            "%s:%d:%d: stage %d: expected %d instructions (%s, %d microbatches%s), found %d", file,
                            st->line, st->col, s, n, kr_schedule_name(job->schedule), job->num_microbatches,
                            job->virtual_stages > 1 ? ", several chunks" : "", st->n);
    return KR_OK;
}

static int check_name(const char *file, const kr__pv *t, const kr_sched_item *want, int s, int i, const char *shape,
                      kr_error *err)
{
    if (t->t != KR__PV_TUPLE || t->n < 1)
        return kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d instruction %d: expected a tuple %s, found %s%s", file,
                            t->line, t->col, s, i, shape, t->t == KR__PV_TUPLE ? "an empty " : "", kr__plan_pv_what(t));
    const kr__pv *name = &t->items[0];
    const char *wk = kr_instr_kind_name(want->kind);
    if (name->t != KR__PV_STR || strcmp(name->s, wk) != 0)
        return kr_error_set(err, KR_EMISMATCH,
                            "%s:%d:%d: stage %d instruction %d: expected '%s' (the job's order runs the %s of microbatch "
                            "%d here), found %s%s%s",
                            file, name->line, name->col, s, i, wk, wk, want->microbatch,
                            name->t == KR__PV_STR ? "'" : "", name->t == KR__PV_STR ? name->s : kr__plan_pv_what(name),
                            name->t == KR__PV_STR ? "'" : "");
    return KR_OK;
}

/* What one import works on: the job, the two files as read, the partition catalog and the
 * schedule order of one stage at a time. */
typedef struct import_ctx {
    const kr_job *job;
    const char *freqs_path, *scheds_path; /* scheds_path NULL: a baseline plan */
    int pairs;                            /* the scheds file has the per-microbatch pair layout */
    kr__pv fr, sc;
    kr__pv_trailer ftr, str;
    kr_partition_set *parts;
    kr_sched_item *order; /* len items */
    int len;
    int *counts; /* instructions per stage */
    layout lay;
} import_ctx;

/* The method's variant, checked against the files given and the job; *pairs as import_ctx. */
static int import_method(const kr_job *job, const char *scheds_path, const char *method, kr_variant *var, int *pairs,
                         kr_error *err)
{
    if (method_variant(method, var))
        return kr_error_set(err, KR_EINVAL,
                            "plan import: method: expected kareus, perseus, nanobatch+perseus, megatron or nanobatch, "
                            "found '%s'",
                            method);
    if ((*var == KR_VARIANT_KAREUS) != (scheds_path != NULL))
        return kr_error_set(err, KR_EINVAL,
                            *var == KR_VARIANT_KAREUS
                                ? "plan import: method kareus: expected a scheds_pipeline_N.py file with the freqs file, "
                                  "found none"
                                : "plan import: method %s: expected no scheds file (only Kareus plans have one), found one",
                            method);
    *pairs = *var == KR_VARIANT_KAREUS && !job->recompute;
    if (*pairs && job->virtual_stages > 1)
        return kr_error_set(err, KR_EMISMATCH,
                            "plan import: job '%s' runs interleaved chunks without recomputation; the artifact's "
                            "per-microbatch schedule layout has one pair per microbatch and no chunks",
                            job->name);
    return KR_OK;
}

/* Checks the stage lists of both files against the job's order and fills c->counts. */
static int import_shapes(import_ctx *c, kr_error *err)
{
    const kr_job *job = c->job;
    for (int f = 0; f < (c->scheds_path ? 2 : 1); f++) {
        const kr__pv *root = f ? &c->sc : &c->fr;
        const char *file = f ? c->scheds_path : c->freqs_path;
        if (root->n != job->pp)
            return kr_error_set(err, KR_EMISMATCH,
                                "%s:%d:%d: expected one list per pipeline stage (job '%s' has %d stages; Zeus's "
                                "PointSolution3D copies each to the stage's ranks), found %d",
                                file, root->line, root->col, job->name, job->pp, root->n);
    }
    for (int s = 0; s < job->pp; s++) {
        int n = kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, c->order, c->len,
                               err);
        if (n < 0)
            return n;
        c->counts[s] = n;
        int rc;
        if ((rc = check_stage_list(c->freqs_path, &c->fr, s, n, job, 0, err)) ||
            (c->scheds_path && (rc = check_stage_list(c->scheds_path, &c->sc, s, n, job, c->pairs, err))))
            return rc;
    }
    return KR_OK;
}

/* Instruction i of stage s from the freqs file (its name and clock checked) into *in. */
static int import_freq(const import_ctx *c, int s, int i, kr_plan_instr *in, kr_error *err)
{
    const kr_job *job = c->job;
    const kr_sched_item *o = &c->order[i];
    const kr__pv *t = &c->fr.items[s].items[i];
    int rc = check_name(c->freqs_path, t, o, s, i, "('forward'|'backward', MHz)", err);
    if (rc)
        return rc;
    if (t->n != 2 || t->items[1].t != KR__PV_INT) {
        const kr__pv *bad = t->n >= 2 ? &t->items[1] : t;
        return kr_error_set(err, KR_EPARSE,
                            "%s:%d:%d: stage %d instruction %d: expected ('%s', MHz) with an integer clock, found %s",
                            c->freqs_path, bad->line, bad->col, s, i, kr_instr_kind_name(o->kind),
                            t->n != 2 ? "a tuple of another length" : kr__plan_pv_what(bad));
    }
    long long mhz = t->items[1].i;
    if (mhz < 1 || mhz > INT_MAX || !kr_gpu_clock_supported(&job->gpu, (int)mhz))
        return kr_error_set(err, KR_ERANGE,
                            "%s:%d:%d: stage %d instruction %d: expected a clock the %s supports (%d..%d MHz, "
                            "step %d), found %lld",
                            c->freqs_path, t->items[1].line, t->items[1].col, s, i, job->gpu.name,
                            (int)job->gpu.clock_min_mhz, (int)job->gpu.clock_max_mhz, (int)job->gpu.clock_step_mhz,
                            mhz);
    in->kind = o->kind;
    in->microbatch = o->microbatch;
    in->chunk = o->chunk;
    in->freq_mhz = (int)mhz;
    return KR_OK;
}

/* Instruction i of stage s from the scheds file: its comm settings into *in. */
static int import_sched(const import_ctx *c, int s, int i, kr_plan_instr *in, kr_error *err)
{
    const kr_job *job = c->job;
    const kr_sched_item *o = &c->order[i];
    const layout *lay = &c->lay;
    const char *file = c->scheds_path;
    int pairs = c->pairs;
    int bwd = o->kind == KR_INSTR_BACKWARD;
    const kr__pv *u = pairs ? &c->sc.items[s].items[o->microbatch].items[bwd] : &c->sc.items[s].items[i];
    int want = 1 + (bwd ? (pairs ? 0 : lay->nf) + lay->nb : lay->nf);
    char shape[96];
    snprintf(shape, sizeof shape, "('%s', %d config strings)", kr_instr_kind_name(o->kind), want - 1);
    int rc = check_name(file, u, o, s, i, shape, err);
    if (rc)
        return rc;
    if (u->n != want)
        return kr_error_set(err, KR_EMISMATCH,
                            "%s:%d:%d: stage %d instruction %d: expected %s (%s, CP %d, %s), found %d config strings",
                            file, u->line, u->col, s, i, shape,
                            bwd ? (pairs ? "backward keys" : "recomputed forward keys, then backward keys")
                                : "forward keys",
                            job->cp, job->cp > 1 ? "the CP key set" : "attention and MLP", u->n - 1);
    in->ncomm = 0;
    for (int k = 1; k < u->n; k++) {
        int skip = bwd && !pairs ? lay->nf : 0; /* recomputed forward configs come first */
        int rec = bwd && k <= skip;
        const char *key = !bwd ? lay->fwd[k - 1] : k <= skip ? lay->fwd[k - 1] : lay->bwd[k - 1 - skip];
        const kr_partition *p = kr_partition_find(c->parts, key);
        if (p == NULL)
            return kr_error_set(err, KR_EMISMATCH, "%s: job '%s' has no partition '%s' for the kareus variant", file,
                                job->name, key);
        if ((rc = import_config(file, &u->items[k], job, p, rec, s, i, &in->comm[in->ncomm], err)))
            return rc;
        in->ncomm++;
    }
    return KR_OK;
}

/* Every instruction of every stage into out (initialised for c->counts). */
static int import_instrs(import_ctx *c, kr_plan *out, kr_error *err)
{
    const kr_job *job = c->job;
    for (int s = 0; s < job->pp; s++) {
        kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, c->order, c->len, err);
        for (int i = 0; i < c->counts[s]; i++) {
            kr_plan_instr *in = &out->stages[s].instr[i];
            int rc = import_freq(c, s, i, in, err);
            if (rc == KR_OK)
                rc = c->scheds_path ? import_sched(c, s, i, in, err) : fixed_comm(job, c->parts, in, err);
            if (rc)
                return rc;
        }
    }
    return KR_OK;
}

/* The trailer (the same in both files): the plan's step, predicted energies and time. */
static int import_trailer(const import_ctx *c, kr_plan *out, kr_error *err)
{
    const kr_job *job = c->job;
    const kr__pv_trailer *ftr = &c->ftr, *str = &c->str;
    if (c->scheds_path && (ftr->have_total != str->have_total || ftr->have_with != str->have_with ||
                           (ftr->have_total && ftr->total != str->total) ||
                           (ftr->have_with && ftr->with != str->with) || ftr->iter != str->iter))
        return kr_error_set(err, KR_EMISMATCH,
                            "%s: expected the same '# Iteration N …' trailer as %s (the optimizer writes one to both), "
                            "found a different one",
                            c->scheds_path, c->freqs_path);
    out->step = ftr->iter >= 0 && ftr->iter <= INT_MAX ? (int)ftr->iter
                                                       : (int)KR_MIN(index_from_name(c->freqs_path), INT_MAX);
    if (out->step < 0)
        out->step = -1;
    out->unit_time_s = 0;
    if (ftr->have_total && ftr->have_with) {
        int gps = kr_job_gpus_per_stage(job);
        out->pred_energy_j = ftr->with * gps;
        out->pred_eff_energy_j = ftr->total * gps;
        out->pred_time_s = job->static_power_w > 0 ? (ftr->with - ftr->total) / (job->pp * job->static_power_w) : 0;
        if (!(out->pred_time_s >= 0) || !(out->pred_energy_j >= 0))
            return kr_error_set(err, KR_ERANGE,
                                "%s: trailer: expected 'total cost with P2P' (%g) >= 'total cost' (%g) >= 0 J, found "
                                "otherwise",
                                c->freqs_path, ftr->with, ftr->total);
    }
    return KR_OK;
}

int kr_plan_import_artifact(const kr_job *job, const char *freqs_path, const char *scheds_path, const char *method,
                            kr_plan *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (method == NULL)
        method = scheds_path ? "kareus" : "perseus";
    import_ctx c = {.job = job, .freqs_path = freqs_path, .scheds_path = scheds_path};
    kr_variant var = KR_VARIANT_KAREUS; /* set by import_method */
    int rc = import_method(job, scheds_path, method, &var, &c.pairs, err);
    if (rc)
        return rc;
    if ((rc = kr__plan_read_literal(freqs_path, &c.fr, &c.ftr, err)))
        return rc;
    if (scheds_path && (rc = kr__plan_read_literal(scheds_path, &c.sc, &c.str, err))) {
        kr__plan_pv_free(&c.fr);
        return rc;
    }
    c.parts = malloc(sizeof *c.parts);
    c.len = kr_sched_length(job->num_microbatches, job->virtual_stages);
    c.order = malloc(sizeof *c.order * (size_t)c.len);
    c.counts = malloc(sizeof(int) * (size_t)job->pp);
    layout_of(job, &c.lay);
    if (c.parts == NULL || c.order == NULL || c.counts == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "plan import: out of memory");
    } else if ((rc = kr_partition_catalog(job, var, c.parts, err)) == KR_OK && (rc = import_shapes(&c, err)) == KR_OK &&
               (rc = kr_plan_init(out, job, c.counts, err)) == KR_OK) {
        kr__strlcpy(out->method, method, sizeof out->method);
        kr__strlcpy(out->variant, kr_variant_name(var), sizeof out->variant);
        kr__strlcpy(out->cost_model, "artifact", sizeof out->cost_model);
        if ((rc = import_instrs(&c, out, err)) == KR_OK && (rc = import_trailer(&c, out, err)) == KR_OK &&
            (rc = kr_plan_validate(out, job, err)))
            kr_error_prefix(err, "%s", freqs_path);
    }
    free(c.parts);
    free(c.order);
    free(c.counts);
    kr__plan_pv_free(&c.fr);
    kr__plan_pv_free(&c.sc);
    if (rc)
        kr_plan_free(out);
    return rc;
}

/* ---- export ------------------------------------------------------------------------------ */

/* A double as Python's repr writes it: the shortest text that reads back, with ".0" when %g
 * leaves no decimal point. */
static void py_float(char *buf, size_t cap, double v)
{
    kr__fmt_double(buf, cap, v);
    if (strpbrk(buf, ".eni") == NULL && strlen(buf) + 2 < cap)
        strcat(buf, ".0");
}

/* Text safe inside a Python comment: printable ASCII only, everything else as \xNN, so no
 * newline (or carriage return) can end the comment and start code. */
static void py_comment_text(kr__sb *sb, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\')
            kr__sb_printf(sb, "%c", c);
        else
            kr__sb_printf(sb, "\\x%02x", c);
    }
}

static void trailer_out(kr__sb *sb, const kr_plan *plan, int gps, int iter)
{
    char a[40], b[40];
    py_float(a, sizeof a, plan->pred_eff_energy_j / gps);
    py_float(b, sizeof b, plan->pred_energy_j / gps);
    kr__sb_printf(sb, "# Iteration %d total cost: %s\n", iter, a);
    kr__sb_printf(sb, "# Iteration %d total cost with P2P: %s\n", iter, b);
    kr__sb_puts(sb, "# kareus: method ");
    py_comment_text(sb, plan->method);
    kr__sb_puts(sb, ", job ");
    py_comment_text(sb, plan->job_name);
    char t[40];
    py_float(t, sizeof t, plan->pred_time_s);
    kr__sb_printf(sb, ", iteration time %s s; energies are one GPU per stage summed over the %d stages "
                      "(x %d GPUs per stage = whole cluster)\n",
                  t, plan->num_stages, gps);
}

static void freqs_out(kr__sb *sb, const kr_plan *plan)
{
    kr__sb_puts(sb, "[\n");
    for (int s = 0; s < plan->num_stages; s++) {
        kr__sb_puts(sb, "[");
        for (int i = 0; i < plan->stages[s].ninstr; i++) {
            const kr_plan_instr *in = &plan->stages[s].instr[i];
            kr__sb_printf(sb, "%s('%s', %d)", i ? ", " : "", kr_instr_kind_name(in->kind), in->freq_mhz);
        }
        kr__sb_puts(sb, "],\n");
    }
    kr__sb_puts(sb, "]\n");
}

int kr_plan_export_zeus(const kr_plan *plan, int gpus_per_stage, const char *path, kr_error *err)
{
    if (gpus_per_stage < 1)
        return kr_error_set(err, KR_EINVAL, "export: expected >= 1 GPU per stage, found %d", gpus_per_stage);
    kr__sb sb = {0};
    freqs_out(&sb, plan);
    trailer_out(&sb, plan, gpus_per_stage, plan->step >= 0 ? plan->step : 0);
    return kr__sb_write_atomic(&sb, path, err);
}

static const kr_comm_setting *find_comm(const kr_plan_instr *in, const char *key, int recompute)
{
    for (int c = 0; c < in->ncomm; c++)
        if (in->comm[c].recompute == recompute && strcmp(in->comm[c].key, key) == 0)
            return &in->comm[c];
    return NULL;
}

/* The instruction of microbatch m (chunk 0) of stage s, forward or backward; NULL if absent. */
static const kr_plan_instr *find_instr(const kr_plan *plan, int s, int m, int bwd)
{
    for (int i = 0; i < plan->stages[s].ninstr; i++) {
        const kr_plan_instr *in = &plan->stages[s].instr[i];
        if (in->microbatch == m && in->chunk == 0 && (in->kind == KR_INSTR_BACKWARD) == bwd)
            return in;
    }
    return NULL;
}

static int put_config(kr__sb *sb, const kr_plan_instr *in, const char *key, int rec, int s, kr_error *err)
{
    const kr_comm_setting *c = in ? find_comm(in, key, rec) : NULL;
    if (c == NULL)
        return kr_error_set(err, KR_EMISMATCH,
                            "export: plan stage %d: expected a %s setting for key '%s' (the artifact's schedule tuple "
                            "needs one), found none",
                            s, rec ? "recompute" : "comm", key);
    char buf[64];
    kr_comm_setting_format(c, buf, sizeof buf);
    kr__sb_printf(sb, ", '%s'", buf);
    return KR_OK;
}

/* Without recomputation the artifact's scheduler advances on forwards only and gives each
 * backward the pair of the latest forward (kareus/scheduler/pipeline_comm_scheduler.py), which
 * in 1F1B belongs to a later microbatch. A plan runs as planned there only if every backward of
 * a stage has the same configs. */
static int check_pairs_exportable(const kr_plan *plan, const kr_job *job, kr_error *err)
{
    for (int s = 0; s < plan->num_stages; s++) {
        const kr_plan_instr *first = find_instr(plan, s, 0, 1);
        for (int m = 1; first && m < job->num_microbatches; m++) {
            const kr_plan_instr *in = find_instr(plan, s, m, 1);
            if (in == NULL)
                break;
            for (int c = 0; c < first->ncomm; c++) {
                const kr_comm_setting *a = &first->comm[c], *b = find_comm(in, a->key, a->recompute);
                if (b == NULL || strcmp(a->slot, b->slot) != 0 || a->sms != b->sms)
                    return kr_error_set(err, KR_EMISMATCH,
                                        "export: stage %d: the backward of microbatch %d runs %s at slot %s with %d "
                                        "SMs, that of microbatch 0 at slot %s with %d: without recomputation the "
                                        "artifact's scheduler gives each backward the configs of the latest forward's "
                                        "pair (a later microbatch in 1F1B), so it runs a plan as planned only if every "
                                        "backward of a stage has the same configs",
                                        s, m, a->key, b ? b->slot : "(none)", b ? b->sms : 0, a->slot, a->sms);
            }
        }
    }
    return KR_OK;
}

/* The artifact's config strings name the tuned kernel only ("<slot>-none-<sm>-1024"): a plan
 * with partitions on NCCL (issue 31) cannot be written for its scheduler, so nothing is — refused
 * as a plan the artifact cannot run as planned is (check_pairs_exportable): KR_EMISMATCH. */
static int check_kernels_exportable(const kr_plan *plan, kr_error *err)
{
    for (int s = 0; s < plan->num_stages; s++)
        for (int i = 0; i < plan->stages[s].ninstr; i++) {
            const kr_plan_instr *in = &plan->stages[s].instr[i];
            for (int c = 0; c < in->ncomm; c++)
                if (in->comm[c].kernel != KR_KERNEL_TUNED)
                    return kr_error_set(err, KR_EMISMATCH,
                                        "export: plan stages[%d].instructions[%d]: key '%s' runs NCCL with %d CTAs: "
                                        "the artifact's schedule files express the tuned kernel only, so no artifact "
                                        "files are written for this plan (its JSON plan runs on Kareus's runtime)",
                                        s, i, in->comm[c].key, in->comm[c].sms);
        }
    return KR_OK;
}

/* Stage s of a scheds list in the per-microbatch layout of jobs without recomputation: one
 * (forward, backward) pair of tuples per microbatch. */
static int stage_pairs_out(kr__sb *ss, const kr_plan *plan, const kr_job *job, const layout *lay, int s,
                           kr_error *err)
{
    int rc = KR_OK;
    for (int m = 0; m < job->num_microbatches && rc == KR_OK; m++) {
        kr__sb_puts(ss, m ? ", (" : "(");
        for (int bwd = 0; bwd < 2 && rc == KR_OK; bwd++) {
            const kr_plan_instr *in = find_instr(plan, s, m, bwd);
            kr__sb_printf(ss, "%s('%s'", bwd ? ", " : "", bwd ? "backward" : "forward");
            for (int k = 0; k < (bwd ? lay->nb : lay->nf) && rc == KR_OK; k++)
                rc = put_config(ss, in, bwd ? lay->bwd[k] : lay->fwd[k], 0, s, err);
            kr__sb_puts(ss, ")");
        }
        kr__sb_puts(ss, ")");
    }
    return rc;
}

/* Stage s of a scheds list in the activation-checkpointing layout: one tuple per instruction,
 * a backward's recomputed forward configs first. */
static int stage_instrs_out(kr__sb *ss, const kr_plan *plan, const layout *lay, int s, kr_error *err)
{
    for (int i = 0; i < plan->stages[s].ninstr; i++) {
        const kr_plan_instr *in = &plan->stages[s].instr[i];
        int bwd = in->kind == KR_INSTR_BACKWARD;
        kr__sb_printf(ss, "%s('%s'", i ? ", " : "", kr_instr_kind_name(in->kind));
        for (int k = 0; k < lay->nf + (bwd ? lay->nb : 0); k++) {
            int rec = bwd && k < lay->nf;
            const char *key = k < lay->nf ? lay->fwd[k] : lay->bwd[k - lay->nf];
            const kr_comm_setting *c = find_comm(in, key, rec);
            if (c == NULL)
                return kr_error_set(err, KR_EMISMATCH,
                                    "export: plan stages[%d].instructions[%d]: expected a %s setting for key '%s' "
                                    "(the artifact's schedule tuple needs one), found none",
                                    s, i, rec ? "recompute" : "comm", key);
            char buf[64];
            kr_comm_setting_format(c, buf, sizeof buf);
            kr__sb_printf(ss, ", '%s'", buf);
        }
        kr__sb_puts(ss, ")");
    }
    return KR_OK;
}

/* The scheds list of a Kareus plan: one list per stage, in the pair layout (pairs) or the
 * activation-checkpointing one. */
static int scheds_out(kr__sb *ss, const kr_plan *plan, const kr_job *job, int pairs, kr_error *err)
{
    layout lay;
    layout_of(job, &lay);
    int rc = KR_OK;
    kr__sb_puts(ss, "[\n");
    for (int s = 0; s < plan->num_stages && rc == KR_OK; s++) {
        kr__sb_puts(ss, "[");
        rc = pairs ? stage_pairs_out(ss, plan, job, &lay, s, err) : stage_instrs_out(ss, plan, &lay, s, err);
        kr__sb_puts(ss, "],\n");
    }
    kr__sb_puts(ss, "]\n");
    return rc;
}

int kr_plan_export_artifact(const kr_plan *plan, const kr_job *job, const char *dir, int index, char *freqs_path,
                            size_t freqs_cap, char *scheds_path, size_t scheds_cap, kr_error *err)
{
    if (freqs_path && freqs_cap)
        freqs_path[0] = '\0';
    if (scheds_path && scheds_cap)
        scheds_path[0] = '\0';
    int rc = kr_plan_validate(plan, job, err);
    if (rc)
        return rc;
    int iter = index >= 0 ? index : plan->step >= 0 ? plan->step : 0;
    kr_variant var;
    kr_variant_parse(plan->variant, &var);
    int kareus = var == KR_VARIANT_KAREUS;
    int pairs = kareus && !job->recompute;
    if (kareus && (rc = check_kernels_exportable(plan, err)))
        return rc;
    if (pairs && (rc = check_pairs_exportable(plan, job, err)))
        return rc;
    int gps = kr_job_gpus_per_stage(job);
    kr__sb fs = {0}, ss = {0};
    freqs_out(&fs, plan);
    trailer_out(&fs, plan, gps, iter);
    if (kareus) {
        rc = scheds_out(&ss, plan, job, pairs, err);
        trailer_out(&ss, plan, gps, iter);
    }
    char fpath[4200], spath[4200];
    if (rc == KR_OK && (rc = kr__mkdirs(dir, err)) == KR_OK) {
        snprintf(fpath, sizeof fpath, "%s/freqs_pipeline_%05d.py", dir, iter);
        snprintf(spath, sizeof spath, "%s/scheds_pipeline_%05d.py", dir, iter);
        if (kareus && (rc = kr__sb_write_atomic(&ss, spath, err)) == KR_OK && (rc = kr__sb_write_atomic(&fs, fpath, err)))
            unlink(spath); /* never one file of the pair without the other */
        else if (!kareus)
            rc = kr__sb_write_atomic(&fs, fpath, err);
    }
    kr__sb_free(&fs);
    kr__sb_free(&ss);
    if (rc)
        return rc;
    if (freqs_path)
        kr__strlcpy(freqs_path, fpath, freqs_cap);
    if (scheds_path && kareus)
        kr__strlcpy(scheds_path, spath, scheds_cap);
    return KR_OK;
}
