/*
 * runtime.c — the runtime's public API: open (validation, backend, lock, found clocks, worker),
 * the hooks of the training thread, status and energy queries, sync and close.
 *
 * The hooks are the hot path: instruction_begin compares the call with the plan's next entry,
 * takes a timestamp (clock_gettime through the vDSO, no system call), and stores the wanted clock
 * for the worker — waking it with one eventfd write only when the clock changes and the worker
 * sleeps. instruction_end only takes a timestamp. Neither allocates, locks or formats text
 * unless something is wrong.
 */
#include "kareus/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kareus/frontier.h"
#include "kareus/job.h"
#include "kareus/partition.h"
#include "kareus/sim.h"
#include "runtime/runtime_internal.h"

/* ---- plan checks ------------------------------------------------------------------------------ */

/* Checks that the stage exists and that its instructions follow the plan's schedule. */
static int check_stage_order(const kr_plan *plan, int stage, const char *name, const kr_allocator *a, kr_error *err)
{
    if (stage < 0 || stage >= plan->num_stages)
        return kr_error_set(err, KR_ERANGE, "%s: stage: expected 0..%d (the plan has %d stage%s), found %d", name,
                            plan->num_stages - 1, plan->num_stages, plan->num_stages == 1 ? "" : "s", stage);
    kr_schedule sch;
    if (kr_schedule_parse(plan->schedule, &sch))
        return kr_error_set(err, KR_EPARSE, "%s: job.schedule: expected 1f1b, gpipe or interleaved-1f1b, found '%s'", name,
                            plan->schedule);
    /* Check the counts before allocating: a 200-byte plan may claim 2^31 instructions. */
    kr_error ce = {0};
    int rc0 = kr_sched_check(sch, plan->num_stages, plan->num_microbatches, plan->virtual_stages, &ce);
    if (rc0)
        return kr_error_set(err, rc0, "%s: job: %s", name, ce.msg);
    int len = kr_sched_length(plan->num_microbatches, plan->virtual_stages);
    if (plan->stages[stage].ninstr != len)
        return kr_error_set(err, KR_EMISMATCH, "%s: stages[%d]: expected %d instructions (%s, %d microbatches), found %d",
                            name, stage, len, plan->schedule, plan->num_microbatches, plan->stages[stage].ninstr);
    kr_sched_item *order = kr__calloc(a, (size_t)len, sizeof *order);
    if (order == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", name);
    kr_error e = {0};
    int rc = KR_OK;
    int n = kr_sched_order(sch, plan->num_stages, plan->num_microbatches, plan->virtual_stages, stage, order, len, &e);
    const kr_plan_stage *st = &plan->stages[stage];
    if (n < 0) {
        rc = kr_error_set(err, n, "%s: %s", name, e.msg);
        goto done;
    }
    for (int i = 0; i < n && i < st->ninstr; i++) {
        const kr_plan_instr *in = &st->instr[i];
        if (in->kind != order[i].kind || in->microbatch != order[i].microbatch || in->chunk != order[i].chunk) {
            rc = kr_error_set(err, KR_EMISMATCH,
                              "%s: stages[%d].instructions[%d]: expected %s of microbatch %d (chunk %d) in %s order, "
                              "found %s of microbatch %d (chunk %d)",
                              name, stage, i, kr_instr_kind_name(order[i].kind), order[i].microbatch, order[i].chunk,
                              plan->schedule, kr_instr_kind_name(in->kind), in->microbatch, in->chunk);
            goto done;
        }
    }
    if (st->ninstr != n)
        rc = kr_error_set(err, KR_EMISMATCH, "%s: stages[%d]: expected %d instructions (%s, %d microbatches), found %d",
                          name, stage, n, plan->schedule, plan->num_microbatches, st->ninstr);
done:
    kr__free(a, order);
    return rc;
}

/* Loads the job named in options and validates the plan against it. */
static int check_against_job(const kr_plan *plan, const char *job_name, const char *name, kr_job *job, kr_error *err)
{
    int rc = kr_job_load(job_name, job, err);
    if (rc)
        return rc;
    if ((rc = kr_plan_validate(plan, job, err)))
        kr_error_prefix(err, "%s (job %s)", name, job_name);
    return rc;
}

int kr_runtime_plan_check(const char *plan_path, int stage, const char *job, kr_error *err)
{
    kr_plan plan;
    int rc = kr_plan_read(plan_path, &plan, err);
    if (rc)
        return rc;
    for (int s = stage < 0 ? 0 : stage; rc == KR_OK && s < (stage < 0 ? plan.num_stages : stage + 1); s++)
        rc = check_stage_order(&plan, s, plan_path, NULL, err);
    if (rc == KR_OK && job) {
        kr_job *j = malloc(sizeof *j);
        rc = j ? check_against_job(&plan, job, plan_path, j, err) : kr_error_set(err, KR_ENOMEM, "out of memory");
        free(j);
    }
    kr_plan_free(&plan);
    return rc;
}

/* The nearest supported clock to mhz, for messages. */
static int nearest_clock(const int *clocks, int n, int mhz)
{
    int best = n > 0 ? clocks[0] : 0;
    for (int i = 1; i < n; i++)
        if (abs(clocks[i] - mhz) < abs(best - mhz))
            best = clocks[i];
    return best;
}

/* Every clock of the stage must be a supported SM clock of the device. */
static int check_clocks(kr_runtime *rt, const kr_plan *plan, kr_error *err)
{
    int clocks[KR_GPU_MAX_CLOCKS], n = 0;
    int rc = kr_backend_supported_clocks(rt->backend, rt->device, clocks, KR_GPU_MAX_CLOCKS, &n);
    if (rc)
        return kr_error_set(err, rc, "device %d: listing supported clocks: %s", rt->device, kr_backend_errmsg(rt->backend));
    const kr_plan_stage *st = &plan->stages[rt->stage];
    for (int i = 0; i < st->ninstr; i++) {
        int f = st->instr[i].freq_mhz, ok = 0;
        for (int k = 0; k < n && !ok; k++)
            ok = clocks[k] == f;
        if (!ok)
            return kr_error_set(err, KR_ERANGE,
                                "%s: stages[%d].instructions[%d].freq_mhz: %d MHz is not a supported SM clock of device %d "
                                "(%s: %d clocks from %d to %d MHz; nearest %d MHz) — plan made for %s",
                                rt->plan_name, rt->stage, i, f, rt->device, rt->info.name, n, n ? clocks[n - 1] : 0,
                                n ? clocks[0] : 0, nearest_clock(clocks, n, f), plan->gpu[0] ? plan->gpu : "an unknown GPU");
    }
    return KR_OK;
}

/* ---- open / close ----------------------------------------------------------------------------- */

/* Frees whatever part of rt exists (used by close and by failed opens). */
static void rt_free(kr_runtime *rt)
{
    const kr_allocator *a = rt->allocp;
    if (rt->wake_fd >= 0)
        close(rt->wake_fd);
    kr__rt_unlock(rt);
    if (rt->mu_init) {
        pthread_mutex_destroy(&rt->mu);
        pthread_cond_destroy(&rt->cv);
    }
    if (rt->backend && rt->own_backend)
        kr_backend_destroy(rt->backend);
    for (int i = 0; i < RT_PENDING; i++) {
        kr__free(a, rt->pending[i].begin);
        kr__free(a, rt->pending[i].end);
    }
    kr__free(a, rt->instr);
    kr__free(a, rt->comm);
    kr__free(a, rt->cur_begin);
    kr__free(a, rt->cur_end);
    kr__free(a, rt->smp_t);
    kr__free(a, rt->smp_e);
    kr__free(a, rt->tmp_b);
    kr__free(a, rt->tmp_e);
    kr__free(a, rt->en_instr);
    kr__free(a, rt);
}

static void fill_nan(double *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = NAN;
}

/* Copies the stage's instructions and comm settings (slot indices from the job's partitions). */
static int copy_stage(kr_runtime *rt, const kr_plan *plan, const kr_job *job, kr_error *err)
{
    const kr_plan_stage *st = &plan->stages[rt->stage];
    const kr_allocator *a = rt->allocp;
    rt->ninstr = st->ninstr;
    int ncomm = 0;
    for (int i = 0; i < st->ninstr; i++)
        ncomm += st->instr[i].ncomm;
    rt->instr = kr__calloc(a, (size_t)st->ninstr, sizeof *rt->instr);
    rt->comm = kr__calloc(a, (size_t)(ncomm > 0 ? ncomm : 1), sizeof *rt->comm);
    if (rt->instr == NULL || rt->comm == NULL)
        return kr_error_set(err, KR_ENOMEM, "runtime: out of memory");
    kr_partition_set *parts = NULL;
    kr_variant var;
    if (job && kr_variant_parse(plan->variant, &var) == KR_OK) {
        parts = kr__alloc(a, sizeof *parts);
        if (parts == NULL)
            return kr_error_set(err, KR_ENOMEM, "runtime: out of memory");
        if (kr_partition_catalog(job, var, parts, err) != KR_OK) {
            kr__free(a, parts);
            parts = NULL;
        }
    }
    for (int i = 0; i < st->ninstr; i++) {
        const kr_plan_instr *in = &st->instr[i];
        rt_instr *ri = &rt->instr[i];
        *ri = (rt_instr){in->kind, in->microbatch, in->chunk, in->freq_mhz, rt->ncomm, in->ncomm};
        for (int c = 0; c < in->ncomm; c++) {
            rt_comm *rc = &rt->comm[rt->ncomm++];
            kr__strlcpy(rc->key, in->comm[c].key, sizeof rc->key);
            rc->recompute = in->comm[c].recompute;
            kr__strlcpy(rc->cfg.slot, in->comm[c].slot, sizeof rc->cfg.slot);
            rc->cfg.sms = in->comm[c].sms;
            rc->cfg.kernel = in->comm[c].kernel;
            rc->cfg.slot_index = KR_RUNTIME_SLOT_UNKNOWN;
            const kr_partition *p = parts ? kr_partition_find(parts, rc->key) : NULL;
            int idx;
            if (p && kr_partition_slot_index(p, rc->cfg.slot, &idx, NULL) == KR_OK)
                rc->cfg.slot_index = idx;
        }
    }
    kr__free(a, parts);
    return KR_OK;
}

static int alloc_buffers(kr_runtime *rt, kr_error *err)
{
    const kr_allocator *a = rt->allocp;
    size_t n = (size_t)rt->ninstr;
    rt->cur_begin = kr__calloc(a, n, sizeof(double));
    rt->cur_end = kr__calloc(a, n, sizeof(double));
    rt->tmp_b = kr__calloc(a, n, sizeof(double));
    rt->tmp_e = kr__calloc(a, n, sizeof(double));
    rt->en_instr = kr__calloc(a, n, sizeof *rt->en_instr);
    rt->smp_t = kr__calloc(a, RT_SAMPLES, sizeof(double));
    rt->smp_e = kr__calloc(a, RT_SAMPLES, sizeof(double));
    int ok = rt->cur_begin && rt->cur_end && rt->tmp_b && rt->tmp_e && rt->en_instr && rt->smp_t && rt->smp_e;
    for (int i = 0; ok && i < RT_PENDING; i++) {
        rt->pending[i].begin = kr__calloc(a, n, sizeof(double));
        rt->pending[i].end = kr__calloc(a, n, sizeof(double));
        ok = rt->pending[i].begin && rt->pending[i].end;
    }
    if (!ok)
        return kr_error_set(err, KR_ENOMEM, "runtime: out of memory");
    fill_nan(rt->cur_begin, rt->ninstr);
    fill_nan(rt->cur_end, rt->ninstr);
    return KR_OK;
}

/* Backend, device, identity, supported clocks, found clocks, energy baseline. */
static int attach_backend(kr_runtime *rt, const kr_plan *plan, const kr_runtime_config *o, kr_error *err)
{
    int rc;
    if (o->backend_ptr) {
        rt->backend = o->backend_ptr;
        rt->own_backend = (o->flags & KR_RUNTIME_OWN_BACKEND) != 0;
    } else {
        if ((rc = kr_backend_open(o->backend, &(kr_backend_open_config){.default_job = o->job ? o->job : plan->job_name},
                                   &rt->backend, err)))
            return rc;
        rt->own_backend = 1;
    }
    int ndev = 0;
    if ((rc = kr_backend_device_count(rt->backend, &ndev)))
        return kr_error_set(err, rc, "counting devices: %s", kr_backend_errmsg(rt->backend));
    if (rt->device < 0 || rt->device >= ndev)
        return kr_error_set(err, KR_EINVAL, "device: expected 0..%d (%s backend has %d device%s), found %d", ndev - 1,
                            kr_backend_name(rt->backend), ndev, ndev == 1 ? "" : "s", rt->device);
    if ((rc = kr_backend_device_info(rt->backend, rt->device, &rt->info, err)))
        return rc;
    if ((rc = check_clocks(rt, plan, err)))
        return rc;
    int cur = 0, lmin = 0, lmax = 0;
    if ((rc = kr_backend_get_clock(rt->backend, rt->device, &cur, &lmin, &lmax)))
        return kr_error_set(err, rc, "device %d: reading its clocks: %s", rt->device, kr_backend_errmsg(rt->backend));
    rt->found_cur = cur;
    rt->restore_min = o->restore_lock_max_mhz > 0 ? o->restore_lock_min_mhz : lmin;
    rt->restore_max = o->restore_lock_max_mhz > 0 ? o->restore_lock_max_mhz : lmax;
    double e;
    rt->energy_on = kr_backend_read_energy(rt->backend, rt->device, &e) == KR_OK;
    if (rt->energy_on) { /* the baseline change point */
        rt->e0 = rt->last_e = rt->smp_e[0] = e;
        rt->smp_t[0] = kr__rt_now(rt);
        rt->smp_n = rt->smp_head = 1;
    }
    rt->en.available = rt->energy_on;
    return KR_OK;
}

static int start_worker(kr_runtime *rt, kr_error *err)
{
    rt->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (rt->wake_fd < 0)
        return kr_error_set(err, KR_EIO, "runtime: eventfd: %s", strerror(errno));
    /* The worker must never run a signal handler: it is the thread the handlers wait for. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&rt->worker, NULL, kr__rt_worker_main, rt);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0)
        return kr_error_set(err, e == EAGAIN ? KR_ENOMEM : KR_EINTERNAL, "runtime: starting the worker thread: %s",
                            strerror(e));
    rt->worker_started = 1;
    return KR_OK;
}

/* Locks the GPU for control unless the runtime is read-only (*read_only) or told not to; a
 * busy lock with KR_RUNTIME_SHARE_READONLY makes it read-only instead. Then records the mode
 * and what the status reports. */
static int take_lock(kr_runtime *rt, const kr_runtime_config *o, int *read_only, kr_error *err)
{
    char why_ro[600] = "";
    int rc = KR_OK;
    if (*read_only)
        snprintf(why_ro, sizeof why_ro, "opened read-only (measure only)");
    if (!*read_only && !(o->flags & KR_RUNTIME_NO_LOCK) && rt->info.uuid[0]) {
        kr_error le = {0};
        rc = kr__rt_lock(rt, o->lock_dir, o->restore_lock_max_mhz > 0, &le);
        if (rc == KR_EBUSY && (o->flags & KR_RUNTIME_SHARE_READONLY)) {
            *read_only = 1;
            snprintf(why_ro, sizeof why_ro, "read-only: %s", le.msg);
            rc = KR_OK;
        } else if (rc)
            kr_error_set(err, rc, "%s", le.msg);
    }
    if (rc)
        return rc;
    atomic_store(&rt->mode, *read_only ? KR_RUNTIME_MEASURE_ONLY : KR_RUNTIME_CONTROL);
    rt->st.read_only = *read_only;
    kr__strlcpy(rt->st.reason, why_ro, sizeof rt->st.reason);
    kr__strlcpy(rt->st.backend, kr_backend_name(rt->backend), sizeof rt->st.backend);
    kr__strlcpy(rt->st.device_name, rt->info.name, sizeof rt->st.device_name);
    kr__strlcpy(rt->st.device_uuid, rt->info.uuid, sizeof rt->st.device_uuid);
    kr__strlcpy(rt->st.lock_path, rt->lock_fd >= 0 ? rt->lock_path : "", sizeof rt->st.lock_path);
    rt->st.found_cur_mhz = rt->found_cur;
    rt->st.restore_min_mhz = rt->restore_min;
    rt->st.restore_max_mhz = rt->restore_max;
    rt->en.per_instruction_quantized = 1;
    rt->en.poll_s = rt->poll_s;
    return KR_OK;
}

/* Opens for a plan called `name` in messages (its file, or "plan"). */
static int open_named(const kr_plan *plan, const char *name, int stage, int device, const kr_runtime_config *opt,
                      kr_runtime **out, kr_error *err)
{
    static const kr_runtime_config defaults = {0};
    const kr_runtime_config *o = opt ? opt : &defaults;
    *out = NULL;
    int rc = check_stage_order(plan, stage, name, o->allocator, err);
    if (rc)
        return rc;
    kr_job *job = NULL;
    if (o->job) {
        job = malloc(sizeof *job);
        if (job == NULL)
            return kr_error_set(err, KR_ENOMEM, "runtime: out of memory");
        if ((rc = check_against_job(plan, o->job, name, job, err))) {
            free(job);
            return rc;
        }
    }
    kr_runtime *rt = kr__calloc(o->allocator, 1, sizeof *rt);
    if (rt == NULL) {
        free(job);
        return kr_error_set(err, KR_ENOMEM, "runtime: out of memory");
    }
    if (o->allocator) {
        rt->alloc = *o->allocator;
        rt->allocp = &rt->alloc;
    }
    rt->wake_fd = rt->lock_fd = -1;
    rt->registry_slot = -1;
    rt->stage = stage;
    rt->device = device;
    rt->flags = o->flags;
    rt->now_s = o->now_s;
    rt->now_ud = o->now_ud;
    rt->warn = o->warn;
    rt->warn_ud = o->warn_ud;
    rt->poll_s = o->energy_poll_s == 0 ? RT_DEFAULT_POLL_S : o->energy_poll_s;
    rt->owner_pid = getpid();
    kr__strlcpy(rt->plan_name, name, sizeof rt->plan_name);
    rc = copy_stage(rt, plan, job, err);
    free(job);
    if (rc == KR_OK)
        rc = alloc_buffers(rt, err);
    if (rc == KR_OK) {
        rc = pthread_mutex_init(&rt->mu, NULL) || pthread_cond_init(&rt->cv, NULL)
                 ? kr_error_set(err, KR_ENOMEM, "runtime: cannot create its mutex")
                 : KR_OK;
        rt->mu_init = rc == KR_OK;
    }
    if (rc == KR_OK)
        rc = attach_backend(rt, plan, o, err);
    int read_only = (o->flags & KR_RUNTIME_READ_ONLY) != 0;
    if (rc == KR_OK)
        rc = take_lock(rt, o, &read_only, err);
    if (rc == KR_OK && !read_only)
        rc = kr__rt_register(rt, err);
    if (rc == KR_OK)
        rc = start_worker(rt, err);
    if (rc != KR_OK) {
        kr__rt_unregister(rt);
        rt_free(rt);
        return rc;
    }
    *out = rt;
    return KR_OK;
}

int kr_runtime_open_plan(const kr_plan *plan, int stage, int device, const kr_runtime_config *opt, kr_runtime **out,
                         kr_error *err)
{
    return open_named(plan, "plan", stage, device, opt, out, err);
}

int kr_runtime_open(const char *plan_path, int stage, int device, const kr_runtime_config *opt, kr_runtime **out,
                    kr_error *err)
{
    *out = NULL;
    kr_plan plan;
    int rc = kr_plan_read(plan_path, &plan, err);
    if (rc)
        return rc;
    rc = open_named(&plan, plan_path, stage, device, opt, out, err);
    kr_plan_free(&plan);
    return rc;
}

int kr_runtime_close(kr_runtime *rt, kr_error *err)
{
    if (rt == NULL)
        return KR_OK;
    kr__rt_unregister(rt);
    int rc = KR_OK;
    if (rt->worker_started) {
        atomic_store(&rt->stop, 1);
        kr__rt_wake(rt);
        pthread_join(rt->worker, NULL);
    }
    /* The worker has stopped: its state is ours now. Restore whatever it left changed. */
    if (rt->dirty) {
        kr_error e = {0};
        rc = kr__rt_restore(rt, &e);
        if (rc) {
            kr_error_set(err, rc, "runtime: restoring the clocks of device %d at close: %s", rt->device, e.msg);
            rt->lock.writable = 0; /* the record stays "held": `kareus gpu restore` can still restore */
        }
    }
    rt_free(rt);
    return rc;
}

/* ---- the hooks ---------------------------------------------------------------------------------- */

/* Delivers queued warnings to the callback, on the calling (training) thread. */
static void deliver_warnings(kr_runtime *rt)
{
    if (!atomic_exchange(&rt->warn_pending, 0))
        return;
    int codes[5], queued;
    char msgs[5][512];
    sigset_t saved;
    kr__rt_lock_mu(rt, &saved);
    queued = rt->warn_queued;
    rt->warn_queued = 0;
    for (int k = 1; k < 5; k++)
        if (queued & (1 << k)) {
            codes[k] = rt->warn_code[k];
            memcpy(msgs[k], rt->warn_msg[k], sizeof msgs[k]);
        }
    kr__rt_unlock_mu(rt, &saved);
    for (int k = 1; k < 5; k++)
        if ((queued & (1 << k)) && rt->warn)
            rt->warn(rt->warn_ud, k, codes[k], msgs[k]);
}

static void bump(_Atomic long *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Sends a clock request to the worker (training thread). */
static void request_clock(kr_runtime *rt, int mhz)
{
    if (mhz == rt->last_requested) {
        bump(&rt->n_coalesced);
        return;
    }
    rt->last_requested = mhz;
    bump(&rt->n_requests);
    atomic_store(&rt->desired, mhz);
    if (atomic_load(&rt->sleeping))
        kr__rt_wake(rt);
}

/* The job left the plan's order: report it, run the rest of the step at the found clocks. */
static int go_off_plan(kr_runtime *rt, int code, kr_error *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int go_off_plan(kr_runtime *rt, int code, kr_error *err, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rt->off_plan = 1;
    bump(&rt->n_mismatched);
    if (atomic_load_explicit(&rt->mode, memory_order_relaxed) == KR_RUNTIME_CONTROL)
        request_clock(rt, RT_RESTORE_REQ);
    if (!rt->mismatch_warned) {
        rt->mismatch_warned = 1;
        char w[900];
        snprintf(w, sizeof w,
                 "stage %d: the job left the plan's order (%s); this step runs at the clocks found at open, the plan "
                 "resumes at the next step (further mismatches are counted in the status, not reported)",
                 rt->stage, msg);
        if (rt->warn)
            rt->warn(rt->warn_ud, KR_RUNTIME_WARN_MISMATCH, code, w);
    }
    return kr_error_set(err, code, "runtime: stage %d, step %ld: %s", rt->stage, atomic_load(&rt->n_steps) + 1, msg);
}

int kr_runtime_instruction_begin(kr_runtime *rt, kr_instr_kind kind, int microbatch, int chunk, kr_error *err)
{
    if (rt->in_instr)
        return kr_error_set(err, KR_ESTATE, "runtime: instruction_begin: an instruction is already open (call "
                                             "instruction_end first)");
    deliver_warnings(rt);
    double t = kr__rt_now(rt);
    if (!rt->step_started) {
        rt->step_started = 1;
        rt->step_t0 = t;
    }
    rt->in_instr = 1;
    if (rt->off_plan)
        return KR_OK;
    int pos = rt->pos;
    if (pos >= rt->ninstr)
        return go_off_plan(rt, KR_EMISMATCH, err,
                           "%s of microbatch %d (chunk %d) after all %d planned instructions (missing step_end?)",
                           kr_instr_kind_name(kind), microbatch, chunk, rt->ninstr);
    const rt_instr *in = &rt->instr[pos];
    if (in->kind != kind || in->microbatch != microbatch || in->chunk != chunk)
        return go_off_plan(rt, KR_EMISMATCH, err,
                           "instruction %d: expected %s of microbatch %d (chunk %d), found %s of microbatch %d (chunk %d)",
                           pos, kr_instr_kind_name(in->kind), in->microbatch, in->chunk, kr_instr_kind_name(kind),
                           microbatch, chunk);
    rt->cur_begin[pos] = t;
    if (atomic_load_explicit(&rt->mode, memory_order_relaxed) == KR_RUNTIME_CONTROL)
        request_clock(rt, in->freq_mhz);
    return KR_OK;
}

int kr_runtime_comm_config(kr_runtime *rt, const char *key, int recompute, kr_runtime_comm *out, kr_error *err)
{
    if (!rt->in_instr || rt->off_plan)
        return kr_error_set(err, KR_ESTATE, "runtime: comm_config(%s): no planned instruction is open", key);
    const rt_instr *in = &rt->instr[rt->pos];
    for (int c = in->comm_first; c < in->comm_first + in->ncomm; c++)
        if (rt->comm[c].recompute == (recompute != 0) && strcmp(rt->comm[c].key, key) == 0) {
            *out = rt->comm[c].cfg;
            return KR_OK;
        }
    return kr_error_set(err, KR_ENOTFOUND, "runtime: %s of microbatch %d has no %scomm setting for '%s'",
                        kr_instr_kind_name(in->kind), in->microbatch, recompute ? "recompute " : "", key);
}

int kr_runtime_instruction_end(kr_runtime *rt, kr_error *err)
{
    if (!rt->in_instr)
        return kr_error_set(err, KR_ESTATE, "runtime: instruction_end without instruction_begin");
    rt->in_instr = 0;
    if (!rt->off_plan) {
        rt->cur_end[rt->pos] = kr__rt_now(rt);
        rt->pos++;
    }
    return KR_OK;
}

int kr_runtime_step_end(kr_runtime *rt, kr_error *err)
{
    int rc = KR_OK;
    if (rt->in_instr) {
        kr_runtime_instruction_end(rt, NULL);
        rc = kr_error_set(err, KR_ESTATE, "runtime: step_end with an instruction still open (closed it)");
    }
    deliver_warnings(rt);
    double t = kr__rt_now(rt);
    if (!rt->step_started)
        rt->step_t0 = t;
    if (rc == KR_OK && !rt->off_plan && rt->pos != rt->ninstr) {
        const rt_instr *in = &rt->instr[rt->pos];
        rc = go_off_plan(rt, KR_EMISMATCH, err, "step ended after %d of %d instructions; next expected: %s of microbatch %d (chunk %d)",
                         rt->pos, rt->ninstr, kr_instr_kind_name(in->kind), in->microbatch, in->chunk);
    }
    /* Hand the step to the worker (dropped if it is RT_PENDING steps behind). */
    sigset_t saved;
    kr__rt_lock_mu(rt, &saved);
    if (rt->npending < RT_PENDING) {
        rt_step *s = &rt->pending[(rt->pending_head + rt->npending) % RT_PENDING];
        s->t_start = rt->step_t0;
        s->t_end = t;
        memcpy(s->begin, rt->cur_begin, sizeof(double) * (size_t)rt->ninstr);
        memcpy(s->end, rt->cur_end, sizeof(double) * (size_t)rt->ninstr);
        rt->npending++;
    } else
        rt->en.steps_dropped++;
    kr__rt_unlock_mu(rt, &saved);
    if (atomic_load(&rt->sleeping))
        kr__rt_wake(rt);
    bump(&rt->n_steps);
    fill_nan(rt->cur_begin, rt->ninstr);
    fill_nan(rt->cur_end, rt->ninstr);
    rt->pos = 0;
    rt->off_plan = 0;
    rt->step_t0 = t;
    rt->step_started = 1;
    return rc;
}

/* ---- queries ---------------------------------------------------------------------------------- */

int kr_runtime_sync(kr_runtime *rt, double timeout_s, kr_error *err)
{
    double deadline = kr__now_s() + (timeout_s > 5 ? timeout_s : 5);
    double final_deadline = kr__now_s() + (timeout_s > 0 ? timeout_s : 0);
    int rc = KR_OK;
    sigset_t saved;
    for (;;) {
        long req = atomic_fetch_add(&rt->sync_req, 1) + 1;
        kr__rt_wake(rt);
        kr__rt_lock_mu(rt, &saved);
        while (rt->sync_done < req && rc == KR_OK) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&rt->cv, &rt->mu, &ts);
            if (rt->sync_done < req && kr__now_s() > deadline)
                rc = kr_error_set(err, KR_ETIMEDOUT, "runtime: the worker did not answer within %.0f s",
                                  timeout_s > 5 ? timeout_s : 5);
        }
        int pending = rt->npending;
        kr__rt_unlock_mu(rt, &saved);
        if (rc || pending == 0 || kr__now_s() >= final_deadline)
            break;
        struct timespec nap = {0, (long)(1e9 * (rt->poll_s > 0 ? KR_MIN(rt->poll_s, 0.05) : 0.01))};
        nanosleep(&nap, NULL);
    }
    deliver_warnings(rt);
    return rc;
}

void kr_runtime_status_get(kr_runtime *rt, kr_runtime_status *out)
{
    sigset_t saved;
    kr__rt_lock_mu(rt, &saved);
    *out = rt->st;
    kr__rt_unlock_mu(rt, &saved);
    out->mode = atomic_load(&rt->mode);
    out->steps = atomic_load(&rt->n_steps);
    out->mismatched_steps = atomic_load(&rt->n_mismatched);
    out->clock_requests = atomic_load(&rt->n_requests);
    out->clock_coalesced = atomic_load(&rt->n_coalesced);
    out->clock_sets = atomic_load(&rt->n_sets);
    out->applied_mhz = atomic_load(&rt->applied_mhz);
}

void kr_runtime_energy_get(kr_runtime *rt, kr_runtime_energy *out, kr_runtime_instr_energy *instr, int cap)
{
    sigset_t saved;
    kr__rt_lock_mu(rt, &saved);
    *out = rt->en;
    for (int i = 0; instr && i < cap && i < rt->en.ninstr; i++)
        instr[i] = rt->en_instr[i];
    kr__rt_unlock_mu(rt, &saved);
}

kr_backend *kr_runtime_backend(kr_runtime *rt)
{
    return rt->backend;
}

int kr_runtime_ninstr(const kr_runtime *rt)
{
    return rt->ninstr;
}

size_t kr_runtime_abi_size(const char *type_name)
{
#define KR_ABI_(t) {#t, sizeof(t)}
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        KR_ABI_(kr_error),          KR_ABI_(kr_runtime_config),      KR_ABI_(kr_runtime_status),
        KR_ABI_(kr_runtime_energy), KR_ABI_(kr_runtime_instr_energy), KR_ABI_(kr_runtime_comm),
        KR_ABI_(kr_gpuctl_fake_call),      KR_ABI_(kr_sim_clock_event),      KR_ABI_(kr_gpu_device_info),
        KR_ABI_(kr_gpu_lock),       KR_ABI_(kr_plan),                 KR_ABI_(kr_partition_frontier),
    };
#undef KR_ABI_
    for (size_t i = 0; i < KR_ARRAY_LEN(sizes); i++)
        if (strcmp(sizes[i].name, type_name) == 0)
            return sizes[i].size;
    return 0;
}
