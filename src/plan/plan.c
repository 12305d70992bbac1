/*
 * plan.c — iteration plans: allocation, the JSON format (versioned, strict; one field table
 * drives reading, writing and the format's description), validation against a job, comparison.
 */
#include "kareus/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/backend.h"
#include "util/util.h"
#include "workload/workload_internal.h"

void kr_plan_free(kr_plan *plan)
{
    if (plan == NULL)
        return;
    if (plan->stages) {
        for (int s = 0; s < plan->num_stages; s++)
            free(plan->stages[s].instr);
        free(plan->stages);
    }
    memset(plan, 0, sizeof *plan);
}

static int alloc_stages(kr_plan *plan, int nstages, const int *ninstr, kr_error *err)
{
    plan->num_stages = nstages;
    plan->stages = calloc((size_t)(nstages > 0 ? nstages : 1), sizeof *plan->stages);
    if (plan->stages == NULL)
        return kr_error_set(err, KR_ENOMEM, "plan: out of memory");
    for (int s = 0; s < nstages; s++) {
        plan->stages[s].ninstr = ninstr ? ninstr[s] : 0;
        if (plan->stages[s].ninstr > 0) {
            plan->stages[s].instr = calloc((size_t)plan->stages[s].ninstr, sizeof(kr_plan_instr));
            if (plan->stages[s].instr == NULL) {
                kr_plan_free(plan);
                return kr_error_set(err, KR_ENOMEM, "plan: out of memory");
            }
        }
    }
    return KR_OK;
}

int kr_plan_init(kr_plan *plan, const kr_job *job, const int *ninstr, kr_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->version = KR_PLAN_VERSION;
    kr__strlcpy(plan->method, "kareus", sizeof plan->method);
    kr__strlcpy(plan->variant, "kareus", sizeof plan->variant);
    kr__strlcpy(plan->job_name, job->name, sizeof plan->job_name);
    kr_job_fingerprint(job, plan->job_fingerprint);
    kr__strlcpy(plan->gpu, job->gpu.name, sizeof plan->gpu);
    kr__strlcpy(plan->model, job->model.name, sizeof plan->model);
    plan->num_microbatches = job->num_microbatches;
    plan->virtual_stages = job->virtual_stages;
    kr__strlcpy(plan->schedule, kr_schedule_name(job->schedule), sizeof plan->schedule);
    kr__strlcpy(plan->cost_model, "exact", sizeof plan->cost_model);
    plan->step = -1;
    return alloc_stages(plan, job->pp, ninstr, err);
}

int kr_plan_copy(kr_plan *dst, const kr_plan *src, kr_error *err)
{
    kr_plan tmp = *src;
    tmp.stages = NULL;
    int *counts = malloc(sizeof(int) * (size_t)(src->num_stages > 0 ? src->num_stages : 1));
    if (counts == NULL)
        return kr_error_set(err, KR_ENOMEM, "plan: out of memory");
    for (int s = 0; s < src->num_stages; s++)
        counts[s] = src->stages[s].ninstr;
    int rc = alloc_stages(&tmp, src->num_stages, counts, err);
    free(counts);
    if (rc)
        return rc;
    for (int s = 0; s < src->num_stages; s++)
        if (src->stages[s].ninstr)
            memcpy(tmp.stages[s].instr, src->stages[s].instr, sizeof(kr_plan_instr) * (size_t)src->stages[s].ninstr);
    *dst = tmp;
    return KR_OK;
}

/* ---- JSON format --------------------------------------------------------------------- */

/*
 * The plan file as field tables (util.h, "JSON field tables"): plan_fields and the objects it
 * holds list every field in the order it is written and listed as allowed, with its range and
 * default. The stages, their instructions and the comm lists are arrays, read and written by
 * the hooks below with the tables of their entries (stage_fields, instr_fields, comm_fields).
 */

/* A stage while it is read or written: its position, the "stage" field, the stage itself. */
typedef struct stage_io {
    int stage;
    int index;
    kr_plan_stage *st;
} stage_io;

/* comm (recompute 0) or recompute (1): the comm settings of one instruction. */
static int comm_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base);
static int comm_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out);

/* The comm kernel: absent = "tuned" (plans from before kernels); written only for "nccl". */
static int kernel_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    kr_comm_setting *cs = base;
    char name[32];
    int rc = kr__jstr(c, obj, f->key, 0, "tuned", name, sizeof name);
    if (rc == KR_OK && kr_comm_kernel_parse(name, &cs->kernel) != KR_OK)
        rc = kr__jfailf(c, KR_EPARSE, f->key, "expected \"tuned\" or \"nccl\", found \"%s\"", name);
    return rc;
}

static int kernel_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    const kr_comm_setting *cs = base;
    *out = cs->kernel == KR_KERNEL_NCCL ? json_string("nccl") : NULL;
    return KR_OK;
}

static const kr__jhook kernel_hook = {kernel_read, kernel_write, NULL, "string", "\"tuned\" or \"nccl\"",
                                      "\"tuned\" (written only for nccl)"};

static const kr__jfield comm_fields[] = {
    KR__JF_STR(kr_comm_setting, key, "key", KR__JREQ, NULL, NULL, "partition key (kareus catalog --partitions)"),
    KR__JF_STR(kr_comm_setting, slot, "slot", KR__JREQ, NULL, NULL, "launch slot of the comm kernel (\"none\": after compute)"),
    KR__JF_INT(kr_comm_setting, sms, "sms", KR__JREQ, 0, 100000, 0, "comm SMs (CTAs): in [1, SMs) for a collective"),
    KR__JF_HOOK("kernel", 0, 0, NULL, &kernel_hook,
                "comm kernel: tuned, or nccl (NCCL with sms CTAs; kareus plans, keys with a collective)"),
};
static const kr__jtable comm_table = KR__JTABLE(comm_fields);

static const kr__jchoice kind_choice = {&kr__instr_kind_enames, "\"forward\" or \"backward\""};
static const kr__jhook comm_hook = {comm_read, comm_write, NULL, "array", NULL, "[]"};
static const kr__jhook recompute_hook = {comm_read, comm_write, NULL, "array", NULL, "[] (written when not empty)"};

static const kr__jfield instr_fields[] = {
    KR__JF_ENUM(kr_plan_instr, kind, "kind", KR__JREQ, 16, 0, &kind_choice, "the instruction"),
    KR__JF_INT(kr_plan_instr, microbatch, "microbatch", KR__JREQ, 0, 1 << 20, 0, "its microbatch, 0-based"),
    KR__JF_INT(kr_plan_instr, chunk, "chunk", 0, 0, 1024, 0, "its model chunk (interleaved 1F1B)"),
    KR__JF_INT(kr_plan_instr, freq_mhz, "freq_mhz", KR__JREQ, 1, 100000, 0, "SM clock, MHz: a clock the GPU supports"),
    KR__JF_NUM(kr_plan_instr, time_s, "time_s", 0, 0, 1e9, 0, "predicted duration, s"),
    KR__JF_NUM(kr_plan_instr, energy_j, "energy_j", 0, -1e15, 1e15, 0, "predicted energy of one GPU, J"),
    KR__JF_HOOK("comm", 0, 0, &comm_table, &comm_hook, "the comm setting of every partition key of the instruction"),
    KR__JF_HOOK("recompute", 0, 1, &comm_table, &recompute_hook,
                "backward: those of the forward partitions it recomputes"),
};
static const kr__jtable instr_table = KR__JTABLE(instr_fields);

static int comm_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    kr_plan_instr *in = base;
    const json_t *arr = json_object_get(obj, f->key);
    if (arr == NULL)
        return KR_OK;
    size_t mc = kr__jpush_key(c, f->key);
    if (!json_is_array(arr))
        return kr__jfail(c, KR_EPARSE, NULL, "an array of {\"key\", \"slot\", \"sms\"}", arr);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        size_t m = kr__jpush_idx(c, i);
        if (in->ncomm >= KR_PLAN_MAX_COMM)
            return kr__jfailf(c, KR_ERANGE, NULL, "expected at most %d comm settings per instruction", KR_PLAN_MAX_COMM);
        kr_comm_setting *cs = &in->comm[in->ncomm];
        int rc = kr__jtable_read(c, json_array_get(arr, i), &comm_table, cs);
        if (rc)
            return rc;
        cs->recompute = (int)f->off;
        in->ncomm++;
        kr__jpop(c, m);
    }
    kr__jpop(c, mc);
    return KR_OK;
}

/* The settings whose recompute flag is the field's (off: 0 comm, 1 recompute); an empty
 * recompute list is omitted. */
static int comm_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    const kr_plan_instr *in = base;
    int any = 0;
    for (int i = 0; i < in->ncomm; i++)
        any |= in->comm[i].recompute == (int)f->off;
    if (!any && f->off == 1)
        return KR_OK;
    *out = json_array();
    for (int i = 0; i < in->ncomm; i++) {
        json_t *o;
        if (in->comm[i].recompute != (int)f->off)
            continue;
        int rc = kr__jtable_write(w, &comm_table, &in->comm[i], &o);
        if (rc)
            return rc;
        json_array_append_new(*out, o);
    }
    return KR_OK;
}

/* The instructions of a stage, after its "stage" field is checked against its position. */
static int instrs_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    stage_io *sio = base;
    if (sio->stage != sio->index)
        return kr__jfailf(c, KR_EMISMATCH, "stage", "expected stage %d at this position, found %d", sio->index,
                          sio->stage);
    const json_t *ins = json_object_get(obj, f->key);
    if (!json_is_array(ins))
        return kr__jfail(c, KR_EPARSE, "instructions", "an array of instructions", ins);
    size_t mi = kr__jpush_key(c, "instructions");
    for (int i = 0; i < sio->st->ninstr; i++) {
        size_t mo = kr__jpush_idx(c, (size_t)i);
        int rc = kr__jtable_read(c, json_array_get(ins, (size_t)i), &instr_table, &sio->st->instr[i]);
        if (rc)
            return rc;
        kr__jpop(c, mo);
    }
    kr__jpop(c, mi);
    return KR_OK;
}

static int instrs_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)f;
    const stage_io *sio = base;
    *out = json_array();
    for (int i = 0; i < sio->st->ninstr; i++) {
        json_t *o;
        int rc = kr__jtable_write(w, &instr_table, &sio->st->instr[i], &o);
        if (rc)
            return rc;
        json_array_append_new(*out, o);
    }
    return KR_OK;
}

static const kr__jhook stage_hook = {NULL, NULL, NULL, NULL, NULL, "its position"};
static const kr__jhook instrs_hook = {instrs_read, instrs_write, NULL, "array", NULL, NULL};
static const kr__jfield stage_fields[] = {
    KR__JF_INTH(stage_io, stage, "stage", KR__JKEEP, 0, KR_MAX_STAGES, 0, &stage_hook, "the stage (its position)"),
    KR__JF_HOOK("instructions", KR__JREQ, 0, &instr_table, &instrs_hook, "the stage's instructions in execution order"),
};
static const kr__jtable stage_table = KR__JTABLE(stage_fields);

/* One entry per stage (job.stages); the stages are allocated here, with their instructions. */
static int stages_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    kr_plan *p = base;
    int nst = p->num_stages, rc;
    const json_t *stages = json_object_get(obj, f->key);
    if (!json_is_array(stages))
        return kr__jfail(c, KR_EPARSE, "stages", "an array with one entry per stage", stages);
    if ((int)json_array_size(stages) != nst)
        return kr__jfailf(c, KR_EMISMATCH, "stages", "expected %d stages (job.stages), found %zu", nst,
                          json_array_size(stages));
    int counts[KR_MAX_STAGES] = {0};
    for (int s = 0; s < nst; s++) {
        const json_t *ins = json_object_get(json_array_get(stages, (size_t)s), "instructions");
        counts[s] = json_is_array(ins) ? (int)json_array_size(ins) : 0;
    }
    if ((rc = alloc_stages(p, nst, counts, c->err)))
        return rc;
    size_t m = kr__jpush_key(c, "stages");
    for (int s = 0; s < nst; s++) {
        stage_io sio = {s, s, &p->stages[s]};
        size_t ms = kr__jpush_idx(c, (size_t)s);
        if ((rc = kr__jtable_read(c, json_array_get(stages, (size_t)s), &stage_table, &sio)))
            return rc;
        kr__jpop(c, ms);
    }
    kr__jpop(c, m);
    return KR_OK;
}

static int stages_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)f;
    const kr_plan *p = base;
    *out = json_array();
    for (int s = 0; s < p->num_stages; s++) {
        stage_io sio = {s, s, &p->stages[s]};
        json_t *o;
        int rc = kr__jtable_write(w, &stage_table, &sio, &o);
        if (rc)
            return rc;
        json_array_append_new(*out, o);
    }
    return KR_OK;
}

/* bound_j and gap (energy_j / bound_j - 1, derived: read, not stored) are written only for a
 * plan with a bound. */
static int bound_write(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    (void)w;
    const kr_plan *p = base;
    if (p->pred_bound_j > 0 && isfinite(p->pred_bound_j)) {
        double v = f->off == KR__JNOSTORE ? p->pred_energy_j / p->pred_bound_j - 1 : p->pred_bound_j;
        *out = isfinite(v) ? json_real(v) : json_null();
    }
    return KR_OK;
}

static const kr__jchoice variant_choice = {&kr__variant_enames, "\"kareus\", \"sequential\" or \"default-overlap\""};
static const kr__jhook bound_hook = {NULL, bound_write, NULL, NULL, NULL, "0 (none; written when > 0)"};
static const kr__jhook gap_hook = {NULL, bound_write, NULL, NULL, NULL, "derived: not stored"};
static const kr__jhook stages_hook = {stages_read, stages_write, NULL, "array", "job.stages entries", NULL};

static const kr__jfield plan_job_fields[] = {
    KR__JF_STR(kr_plan, job_name, "name", 0, "", NULL, "name of the job the plan was made for"),
    KR__JF_STR(kr_plan, job_fingerprint, "fingerprint", 0, "", NULL,
               "kr_job_fingerprint of that job (\"\": not checked)"),
    KR__JF_STR(kr_plan, gpu, "gpu", 0, "", NULL, "its GPU"),
    KR__JF_STR(kr_plan, model, "model", 0, "", NULL, "its model"),
    KR__JF_INT(kr_plan, num_stages, "stages", KR__JREQ, 1, KR_MAX_STAGES, 0, "pipeline stages"),
    KR__JF_INT(kr_plan, num_microbatches, "microbatches", KR__JREQ, 1, 1 << 20, 0, "microbatches per iteration"),
    KR__JF_STR(kr_plan, schedule, "schedule", KR__JLATE, "1f1b", &kr__schedule_choice, "pipeline schedule"),
    KR__JF_INT(kr_plan, virtual_stages, "virtual_stages", 0, 1, 1024, 1, "model chunks per stage"),
};
static const kr__jtable plan_job_table = KR__JTABLE(plan_job_fields);

static const kr__jfield predicted_fields[] = {
    KR__JF_NUM(kr_plan, pred_time_s, "iteration_time_s", 0, 0, 1e12, 0, "predicted iteration time, s"),
    KR__JF_NUM(kr_plan, pred_energy_j, "energy_j", 0, 0, 1e18, 0, "predicted energy of the cluster per iteration, J"),
    KR__JF_NUM(kr_plan, pred_eff_energy_j, "effective_energy_j", 0, -1e18, 1e18, 0,
               "energy less static power x GPU-time, J"),
    KR__JF_NUMH("bound_j", 0, offsetof(kr_plan, pred_bound_j), 0, 1e18, &bound_hook,
                "the solver's lower bound on the energy of any plan no slower, J"),
    KR__JF_NUMH("gap", 0, KR__JNOSTORE, -1e18, 1e18, &gap_hook, "energy_j / bound_j - 1"),
};
static const kr__jtable predicted_table = KR__JTABLE(predicted_fields);

static const kr__jfield solver_fields[] = {
    KR__JF_STR(kr_plan, cost_model, "cost_model", 0, "", NULL, "the solver's cost model (exact, lowtime, artifact)"),
    KR__JF_NUM(kr_plan, unit_time_s, "unit_time_s", 0, 0, 1e6, 0, "the solver's unit time, s"),
    KR__JF_INT(kr_plan, step, "step", 0, -1, (double)(1LL << 40), -1, "the solver's step (0: slowest; -1: none)"),
};
static const kr__jtable solver_table = KR__JTABLE(solver_fields);

static const kr__jfield plan_fields[] = {
    KR__JF_SCHEMA("kareus.plan", KR__JREQ, "the format"),
    KR__JF_INT(kr_plan, version, "version", KR__JREQ | KR__JZDEF, KR_PLAN_VERSION, KR_PLAN_VERSION, KR_PLAN_VERSION,
               "the format's version"),
    KR__JF_STR(kr_plan, method, "method", KR__JREQ, NULL, NULL, "kareus, perseus, megatron, nanobatch, nanobatch+perseus"),
    KR__JF_STR(kr_plan, variant, "variant", 0, "kareus", &variant_choice, "execution variant"),
    KR__JF_OBJ("job", KR__JREQ, &plan_job_table, NULL, "the job the plan was made for"),
    KR__JF_OBJ("predicted", 0, &predicted_table, NULL, "whole-cluster figures"),
    KR__JF_OBJ("solver", 0, &solver_table, NULL, "what made the plan"),
    KR__JF_HOOK("stages", KR__JREQ, 0, &stage_table, &stages_hook, "one entry per stage, in order"),
};
static const kr__jtable plan_table = KR__JTABLE(plan_fields);

_Static_assert(sizeof(kr_instr_kind) == sizeof(int), "kr_instr_kind is read and written as an int");

int kr_plan_write(const char *path, const kr_plan *plan, kr_error *err)
{
    kr__jwctx w = {path, err};
    json_t *root = NULL;
    int rc = kr__jtable_write(&w, &plan_table, plan, &root);
    if (rc == KR_OK && root == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    if (rc)
        return rc;
    rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}

int kr_plan_format_field(int i, kr_field_info *out)
{
    return kr__jtable_describe(&plan_table, NULL, i, out);
}

int kr_plan_read_text(const char *text, const char *name, kr_plan *out, kr_error *err)
{
    json_t *root;
    memset(out, 0, sizeof *out);
    int rc = kr__json_load_text(text, name, &root, err);
    if (rc)
        return rc;
    kr__jctx c;
    kr__jctx_init(&c, name, err);
    rc = kr__jtable_read(&c, root, &plan_table, out);
    json_decref(root);
    if (rc)
        kr_plan_free(out);
    return rc;
}

int kr_plan_read(const char *path, kr_plan *out, kr_error *err)
{
    char *text;
    memset(out, 0, sizeof *out);
    int rc = kr__read_text(path, &text, NULL, 0, err);
    if (rc)
        return rc;
    rc = kr_plan_read_text(text, path, out, err);
    free(text);
    return rc;
}

/* ---- validation ---------------------------------------------------------------------- */

static int check_comm(const kr_plan *plan, const kr_job *job, const kr_partition_set *parts, int s, int i,
                      const kr_plan_instr *in, kr_error *err)
{
    for (int c = 0; c < in->ncomm; c++) {
        const kr_comm_setting *cs = &in->comm[c];
        const kr_partition *p = kr_partition_find(parts, cs->key);
        const char *where = cs->recompute ? "recompute" : "comm";
        if (p == NULL)
            return kr_error_set(err, KR_EMISMATCH,
                                "plan: stages[%d].instructions[%d].%s: expected a partition key of the job's %s "
                                "variant, found '%s'",
                                s, i, where, plan->variant, cs->key);
        int want_bwd = in->kind == KR_INSTR_BACKWARD && !cs->recompute;
        if (p->backward != want_bwd)
            return kr_error_set(err, KR_EMISMATCH, "plan: stages[%d].instructions[%d].%s: key '%s' is a %s partition, "
                                "expected a %s one here",
                                s, i, where, cs->key, p->backward ? "backward" : "forward",
                                want_bwd ? "backward" : "forward");
        int slot;
        kr_error e = {0};
        if (kr_partition_slot_index(p, cs->slot, &slot, &e))
            return kr_error_set(err, KR_EMISMATCH, "plan: stages[%d].instructions[%d].%s: %s", s, i, where, e.msg);
        if (p->coll.kind != KR_COLL_NONE && (cs->sms < 1 || cs->sms >= (int)job->gpu.sm_count))
            return kr_error_set(err, KR_ERANGE,
                                "plan: stages[%d].instructions[%d].%s: key '%s': expected sms in [1, %d], found %d", s, i,
                                where, cs->key, (int)job->gpu.sm_count - 1, cs->sms);
        /* NCCL is a kernel Kareus may choose (issue 31); the baselines' plans name none (their
         * variant implies NCCL), and work without a collective has no kernel to choose. */
        if (cs->kernel != KR_KERNEL_TUNED &&
            (p->coll.kind == KR_COLL_NONE || strcmp(plan->variant, kr_variant_name(KR_VARIANT_KAREUS)) != 0))
            return kr_error_set(err, KR_EINVAL,
                                "plan: stages[%d].instructions[%d].%s: key '%s': kernel: expected \"tuned\" (only a "
                                "kareus plan's keys with a collective choose their kernel), found \"%s\"",
                                s, i, where, cs->key, kr_comm_kernel_name(cs->kernel));
    }
    return KR_OK;
}

int kr_plan_validate(const kr_plan *plan, const kr_job *job, kr_error *err)
{
    char fp[17];
    kr_job_fingerprint(job, fp);
    if (plan->job_fingerprint[0] && strcmp(plan->job_fingerprint, fp) != 0)
        return kr_error_set(err, KR_EMISMATCH,
                            "plan: job.fingerprint: expected %s (job '%s': %s, %s), found %s (plan made for job '%s': %s, %s)",
                            fp, job->name, job->model.name, job->gpu.name, plan->job_fingerprint, plan->job_name,
                            plan->model, plan->gpu);
    if (plan->num_stages != job->pp)
        return kr_error_set(err, KR_EMISMATCH, "plan: job.stages: expected %d (the job's pp), found %d", job->pp,
                            plan->num_stages);
    if (plan->num_microbatches != job->num_microbatches)
        return kr_error_set(err, KR_EMISMATCH, "plan: job.microbatches: expected %d, found %d", job->num_microbatches,
                            plan->num_microbatches);
    kr_schedule sch;
    if (kr_schedule_parse(plan->schedule, &sch) || sch != job->schedule)
        return kr_error_set(err, KR_EMISMATCH, "plan: job.schedule: expected %s, found %s", kr_schedule_name(job->schedule),
                            plan->schedule);
    if (plan->virtual_stages != job->virtual_stages)
        return kr_error_set(err, KR_EMISMATCH, "plan: job.virtual_stages: expected %d, found %d", job->virtual_stages,
                            plan->virtual_stages);
    kr_variant var;
    if (kr_variant_parse(plan->variant, &var))
        return kr_error_set(err, KR_EPARSE, "plan: variant: expected kareus, sequential or default-overlap, found '%s'",
                            plan->variant);
    int len = kr_sched_length(job->num_microbatches, job->virtual_stages);
    if (len < 0)
        return kr_error_set(err, KR_ERANGE, "plan: job: expected 2 x microbatches x virtual stages <= %d, found 2 x %d x %d",
                            KR_SCHED_MAX_LENGTH, job->num_microbatches, job->virtual_stages);
    kr_partition_set *parts = malloc(sizeof *parts);
    kr_sched_item *order = malloc(sizeof *order * (size_t)len);
    int rc = KR_OK;
    if (parts == NULL || order == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "plan: out of memory");
        goto done;
    }
    if ((rc = kr_partition_catalog(job, var, parts, err)))
        goto done;
    for (int s = 0; s < plan->num_stages; s++) {
        int n = kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, order, len, err);
        if (n < 0) {
            rc = n;
            goto done;
        }
        const kr_plan_stage *st = &plan->stages[s];
        for (int i = 0; i < KR_MIN(n, st->ninstr); i++) {
            const kr_plan_instr *in = &st->instr[i];
            if (in->kind != order[i].kind || in->microbatch != order[i].microbatch || in->chunk != order[i].chunk) {
                rc = kr_error_set(err, KR_EMISMATCH,
                                  "plan: stages[%d].instructions[%d]: expected %s of microbatch %d (chunk %d) in %s order, "
                                  "found %s of microbatch %d (chunk %d)",
                                  s, i, kr_instr_kind_name(order[i].kind), order[i].microbatch, order[i].chunk,
                                  kr_schedule_name(job->schedule), kr_instr_kind_name(in->kind), in->microbatch, in->chunk);
                goto done;
            }
            if (!kr_gpu_clock_supported(&job->gpu, in->freq_mhz)) {
                rc = kr_error_set(err, KR_ERANGE,
                                  "plan: stages[%d].instructions[%d].freq_mhz: expected a clock the %s supports "
                                  "(%d..%d step %d), found %d",
                                  s, i, job->gpu.name, (int)job->gpu.clock_min_mhz, (int)job->gpu.clock_max_mhz,
                                  (int)job->gpu.clock_step_mhz, in->freq_mhz);
                goto done;
            }
            if ((rc = check_comm(plan, job, parts, s, i, in, err)))
                goto done;
        }
        if (st->ninstr != n) {
            rc = kr_error_set(err, KR_EMISMATCH, "plan: stages[%d]: expected %d instructions (%s, %d microbatches), found %d%s",
                              s, n, kr_schedule_name(job->schedule), job->num_microbatches, st->ninstr,
                              st->ninstr < n ? " (instructions missing)" : "");
            goto done;
        }
    }
done:
    free(parts);
    free(order);
    return rc;
}

int kr_plan_equal(const kr_plan *a, const kr_plan *b)
{
    if (a->version != b->version || strcmp(a->method, b->method) || strcmp(a->variant, b->variant) ||
        strcmp(a->job_name, b->job_name) || strcmp(a->job_fingerprint, b->job_fingerprint) || strcmp(a->gpu, b->gpu) ||
        strcmp(a->model, b->model) || a->num_stages != b->num_stages || a->num_microbatches != b->num_microbatches ||
        a->virtual_stages != b->virtual_stages || strcmp(a->schedule, b->schedule) ||
        strcmp(a->cost_model, b->cost_model) || a->unit_time_s != b->unit_time_s || a->step != b->step ||
        a->pred_time_s != b->pred_time_s || a->pred_energy_j != b->pred_energy_j ||
        a->pred_eff_energy_j != b->pred_eff_energy_j || a->pred_bound_j != b->pred_bound_j)
        return 0;
    for (int s = 0; s < a->num_stages; s++) {
        if (a->stages[s].ninstr != b->stages[s].ninstr)
            return 0;
        for (int i = 0; i < a->stages[s].ninstr; i++) {
            const kr_plan_instr *x = &a->stages[s].instr[i], *y = &b->stages[s].instr[i];
            if (x->kind != y->kind || x->microbatch != y->microbatch || x->chunk != y->chunk ||
                x->freq_mhz != y->freq_mhz || x->time_s != y->time_s || x->energy_j != y->energy_j ||
                x->ncomm != y->ncomm)
                return 0;
            for (int c = 0; c < x->ncomm; c++) {
                const kr_comm_setting *u = &x->comm[c], *v = &y->comm[c];
                if (strcmp(u->key, v->key) || u->recompute != v->recompute || strcmp(u->slot, v->slot) ||
                    u->sms != v->sms || u->kernel != v->kernel)
                    return 0;
            }
        }
    }
    return 1;
}
