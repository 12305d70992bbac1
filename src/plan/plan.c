/*
 * plan.c — iteration plans: allocation, JSON read/write (versioned, strict), validation
 * against a job, comparison, and export to the Zeus pipeline-frequency-optimizer layout.
 */
#include "kareus/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

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

/* ---- JSON write ---------------------------------------------------------------------- */

static json_t *comm_json(const kr_plan_instr *in, int recompute)
{
    json_t *a = json_array();
    for (int i = 0; i < in->ncomm; i++) {
        const kr_comm_setting *c = &in->comm[i];
        if (c->recompute != recompute)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "key", json_string(c->key));
        json_object_set_new(o, "slot", json_string(c->slot));
        json_object_set_new(o, "sms", json_integer(c->sms));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *plan_to_json(const kr_plan *p)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kareus.plan"));
    json_object_set_new(root, "version", json_integer(p->version ? p->version : KR_PLAN_VERSION));
    json_object_set_new(root, "method", json_string(p->method));
    json_object_set_new(root, "variant", json_string(p->variant));
    json_t *job = json_object();
    json_object_set_new(job, "name", json_string(p->job_name));
    json_object_set_new(job, "fingerprint", json_string(p->job_fingerprint));
    json_object_set_new(job, "gpu", json_string(p->gpu));
    json_object_set_new(job, "model", json_string(p->model));
    json_object_set_new(job, "stages", json_integer(p->num_stages));
    json_object_set_new(job, "microbatches", json_integer(p->num_microbatches));
    json_object_set_new(job, "schedule", json_string(p->schedule));
    json_object_set_new(job, "virtual_stages", json_integer(p->virtual_stages));
    json_object_set_new(root, "job", job);
    json_t *pred = json_object();
    kr__jset_real(pred, "iteration_time_s", p->pred_time_s);
    kr__jset_real(pred, "energy_j", p->pred_energy_j);
    kr__jset_real(pred, "effective_energy_j", p->pred_eff_energy_j);
    if (p->pred_bound_j > 0 && isfinite(p->pred_bound_j)) {
        kr__jset_real(pred, "bound_j", p->pred_bound_j);
        kr__jset_real(pred, "gap", p->pred_energy_j / p->pred_bound_j - 1);
    }
    json_object_set_new(root, "predicted", pred);
    json_t *solver = json_object();
    json_object_set_new(solver, "cost_model", json_string(p->cost_model));
    kr__jset_real(solver, "unit_time_s", p->unit_time_s);
    json_object_set_new(solver, "step", json_integer(p->step));
    json_object_set_new(root, "solver", solver);
    json_t *stages = json_array();
    for (int s = 0; s < p->num_stages; s++) {
        json_t *st = json_object();
        json_object_set_new(st, "stage", json_integer(s));
        json_t *ins = json_array();
        for (int i = 0; i < p->stages[s].ninstr; i++) {
            const kr_plan_instr *in = &p->stages[s].instr[i];
            json_t *o = json_object();
            json_object_set_new(o, "kind", json_string(kr_instr_kind_name(in->kind)));
            json_object_set_new(o, "microbatch", json_integer(in->microbatch));
            json_object_set_new(o, "chunk", json_integer(in->chunk));
            json_object_set_new(o, "freq_mhz", json_integer(in->freq_mhz));
            kr__jset_real(o, "time_s", in->time_s);
            kr__jset_real(o, "energy_j", in->energy_j);
            json_object_set_new(o, "comm", comm_json(in, 0));
            int has_rec = 0;
            for (int c = 0; c < in->ncomm; c++)
                has_rec |= in->comm[c].recompute;
            if (has_rec)
                json_object_set_new(o, "recompute", comm_json(in, 1));
            json_array_append_new(ins, o);
        }
        json_object_set_new(st, "instructions", ins);
        json_array_append_new(stages, st);
    }
    json_object_set_new(root, "stages", stages);
    return root;
}

int kr_plan_write(const char *path, const kr_plan *plan, kr_error *err)
{
    json_t *root = plan_to_json(plan);
    if (root == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}

/* ---- JSON read ----------------------------------------------------------------------- */

static int read_comm(kr__jctx *c, const json_t *arr, int recompute, kr_plan_instr *in)
{
    if (!json_is_array(arr))
        return kr__jfail(c, KR_EPARSE, NULL, "an array of {\"key\", \"slot\", \"sms\"}", arr);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *e = json_array_get(arr, i);
        size_t m = kr__jpush_idx(c, i);
        static const char *const f[] = {"key", "slot", "sms", NULL};
        if (in->ncomm >= KR_PLAN_MAX_COMM)
            return kr__jfailf(c, KR_ERANGE, NULL, "expected at most %d comm settings per instruction", KR_PLAN_MAX_COMM);
        kr_comm_setting *cs = &in->comm[in->ncomm];
        int rc;
        if ((rc = kr__jobject(c, e, f)) || (rc = kr__jstr(c, e, "key", 1, NULL, cs->key, sizeof cs->key)) ||
            (rc = kr__jstr(c, e, "slot", 1, NULL, cs->slot, sizeof cs->slot)) ||
            (rc = kr__jint32(c, e, "sms", 1, 0, 100000, 0, &cs->sms)))
            return rc;
        cs->recompute = recompute;
        in->ncomm++;
        kr__jpop(c, m);
    }
    return KR_OK;
}

static int plan_from_json(kr__jctx *c, const json_t *root, kr_plan *p)
{
    static const char *const top[] = {"schema", "version", "method", "variant", "job", "predicted", "solver", "stages", NULL};
    char schema[32];
    long long version;
    int rc;
    if ((rc = kr__jobject(c, root, top)) || (rc = kr__jstr(c, root, "schema", 1, NULL, schema, sizeof schema)))
        return rc;
    if (strcmp(schema, "kareus.plan") != 0)
        return kr__jfail(c, KR_EPARSE, "schema", "\"kareus.plan\"", json_object_get(root, "schema"));
    if ((rc = kr__jint(c, root, "version", 1, KR_PLAN_VERSION, KR_PLAN_VERSION, 0, &version)))
        return rc;
    p->version = (int)version;
    if ((rc = kr__jstr(c, root, "method", 1, NULL, p->method, sizeof p->method)) ||
        (rc = kr__jstr(c, root, "variant", 0, "kareus", p->variant, sizeof p->variant)))
        return rc;
    kr_variant var;
    if (kr_variant_parse(p->variant, &var))
        return kr__jfail(c, KR_EPARSE, "variant", "\"kareus\", \"sequential\" or \"default-overlap\"",
                         json_object_get(root, "variant"));
    const json_t *job = json_object_get(root, "job");
    size_t m = kr__jpush_key(c, "job");
    static const char *const jf[] = {"name", "fingerprint", "gpu", "model", "stages", "microbatches", "schedule",
                                     "virtual_stages", NULL};
    int nst;
    if (job == NULL) {
        kr__jpop(c, m);
        return kr__jfailf(c, KR_EPARSE, "job", "missing required field");
    }
    if ((rc = kr__jobject(c, job, jf)) || (rc = kr__jstr(c, job, "name", 0, "", p->job_name, sizeof p->job_name)) ||
        (rc = kr__jstr(c, job, "fingerprint", 0, "", p->job_fingerprint, sizeof p->job_fingerprint)) ||
        (rc = kr__jstr(c, job, "gpu", 0, "", p->gpu, sizeof p->gpu)) ||
        (rc = kr__jstr(c, job, "model", 0, "", p->model, sizeof p->model)) ||
        (rc = kr__jint32(c, job, "stages", 1, 1, KR_MAX_STAGES, 0, &nst)) ||
        (rc = kr__jint32(c, job, "microbatches", 1, 1, 1 << 20, 0, &p->num_microbatches)) ||
        (rc = kr__jstr(c, job, "schedule", 0, "1f1b", p->schedule, sizeof p->schedule)) ||
        (rc = kr__jint32(c, job, "virtual_stages", 0, 1, 1024, 1, &p->virtual_stages)))
        return rc;
    kr_schedule sch;
    if (kr_schedule_parse(p->schedule, &sch))
        return kr__jfail(c, KR_EPARSE, "schedule", "\"1f1b\", \"gpipe\" or \"interleaved-1f1b\"",
                         json_object_get(job, "schedule"));
    kr__jpop(c, m);
    const json_t *pred = json_object_get(root, "predicted");
    if (pred) {
        m = kr__jpush_key(c, "predicted");
        static const char *const pf[] = {"iteration_time_s", "energy_j", "effective_energy_j", "bound_j", "gap", NULL};
        double gap_unused = 0;
        if ((rc = kr__jobject(c, pred, pf)) ||
            (rc = kr__jnum(c, pred, "iteration_time_s", 0, 0, 1e12, 0, &p->pred_time_s)) ||
            (rc = kr__jnum(c, pred, "energy_j", 0, 0, 1e18, 0, &p->pred_energy_j)) ||
            (rc = kr__jnum(c, pred, "effective_energy_j", 0, -1e18, 1e18, 0, &p->pred_eff_energy_j)) ||
            (rc = kr__jnum(c, pred, "bound_j", 0, 0, 1e18, 0, &p->pred_bound_j)) ||
            (rc = kr__jnum(c, pred, "gap", 0, -1e18, 1e18, 0, &gap_unused))) /* derived: not stored */
            return rc;
        kr__jpop(c, m);
    }
    const json_t *solver = json_object_get(root, "solver");
    kr__strlcpy(p->cost_model, "", sizeof p->cost_model);
    p->step = -1;
    if (solver) {
        m = kr__jpush_key(c, "solver");
        static const char *const sf[] = {"cost_model", "unit_time_s", "step", NULL};
        long long step;
        if ((rc = kr__jobject(c, solver, sf)) ||
            (rc = kr__jstr(c, solver, "cost_model", 0, "", p->cost_model, sizeof p->cost_model)) ||
            (rc = kr__jnum(c, solver, "unit_time_s", 0, 0, 1e6, 0, &p->unit_time_s)) ||
            (rc = kr__jint(c, solver, "step", 0, -1, 1LL << 40, -1, &step)))
            return rc;
        p->step = (int)step;
        kr__jpop(c, m);
    }
    const json_t *stages = json_object_get(root, "stages");
    if (!json_is_array(stages))
        return kr__jfail(c, KR_EPARSE, "stages", "an array with one entry per stage", stages);
    if ((int)json_array_size(stages) != nst)
        return kr__jfailf(c, KR_EMISMATCH, "stages", "expected %d stages (job.stages), found %zu", nst,
                          json_array_size(stages));
    int counts[KR_MAX_STAGES];
    for (int s = 0; s < nst; s++) {
        const json_t *ins = json_object_get(json_array_get(stages, (size_t)s), "instructions");
        counts[s] = json_is_array(ins) ? (int)json_array_size(ins) : 0;
    }
    if ((rc = alloc_stages(p, nst, counts, c->err)))
        return rc;
    m = kr__jpush_key(c, "stages");
    for (int s = 0; s < nst; s++) {
        const json_t *st = json_array_get(stages, (size_t)s);
        size_t ms = kr__jpush_idx(c, (size_t)s);
        static const char *const stf[] = {"stage", "instructions", NULL};
        int sidx;
        if ((rc = kr__jobject(c, st, stf)) || (rc = kr__jint32(c, st, "stage", 0, 0, KR_MAX_STAGES, s, &sidx)))
            return rc;
        if (sidx != s)
            return kr__jfailf(c, KR_EMISMATCH, "stage", "expected stage %d at this position, found %d", s, sidx);
        const json_t *ins = json_object_get(st, "instructions");
        if (!json_is_array(ins))
            return kr__jfail(c, KR_EPARSE, "instructions", "an array of instructions", ins);
        size_t mi = kr__jpush_key(c, "instructions");
        for (int i = 0; i < counts[s]; i++) {
            const json_t *o = json_array_get(ins, (size_t)i);
            size_t mo = kr__jpush_idx(c, (size_t)i);
            kr_plan_instr *in = &p->stages[s].instr[i];
            static const char *const inf[] = {"kind", "microbatch", "chunk", "freq_mhz", "time_s", "energy_j",
                                              "comm", "recompute", NULL};
            char kind[16];
            if ((rc = kr__jobject(c, o, inf)) || (rc = kr__jstr(c, o, "kind", 1, NULL, kind, sizeof kind)))
                return rc;
            if (kr_instr_kind_parse(kind, &in->kind))
                return kr__jfail(c, KR_EPARSE, "kind", "\"forward\" or \"backward\"", json_object_get(o, "kind"));
            if ((rc = kr__jint32(c, o, "microbatch", 1, 0, 1 << 20, 0, &in->microbatch)) ||
                (rc = kr__jint32(c, o, "chunk", 0, 0, 1024, 0, &in->chunk)) ||
                (rc = kr__jint32(c, o, "freq_mhz", 1, 1, 100000, 0, &in->freq_mhz)) ||
                (rc = kr__jnum(c, o, "time_s", 0, 0, 1e9, 0, &in->time_s)) ||
                (rc = kr__jnum(c, o, "energy_j", 0, -1e15, 1e15, 0, &in->energy_j)))
                return rc;
            const json_t *cm = json_object_get(o, "comm");
            if (cm) {
                size_t mc = kr__jpush_key(c, "comm");
                if ((rc = read_comm(c, cm, 0, in)))
                    return rc;
                kr__jpop(c, mc);
            }
            const json_t *rcm = json_object_get(o, "recompute");
            if (rcm) {
                size_t mc = kr__jpush_key(c, "recompute");
                if ((rc = read_comm(c, rcm, 1, in)))
                    return rc;
                kr__jpop(c, mc);
            }
            kr__jpop(c, mo);
        }
        kr__jpop(c, mi);
        kr__jpop(c, ms);
    }
    kr__jpop(c, m);
    return KR_OK;
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
    rc = plan_from_json(&c, root, out);
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
                    u->sms != v->sms)
                    return 0;
            }
        }
    }
    return 1;
}
