/* test_runtime.c — the runtime on the fake GPU: the plan applied in order, comm configs, every
 * N-th backend call failing (and every N-th allocation on open), plans that do not fit the stage
 * or the GPU, mismatched schedules, the advisory lock, SIGTERM/SIGINT/exit restoring the clocks
 * in a child process, energy windows on a manual clock — and the same runtime through the
 * clock helper kareusd (when tests/cli/test_kareusd_cli.sh points KR_TEST_HELPER at one). */
#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kareus/job.h"
#include "kareus/runtime.h"
#include "kareus/sim.h"
#include "util/util.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

typedef int (*freq_fn)(kr_instr_kind kind, int mb);

static int freq_varied(kr_instr_kind kind, int mb)
{
    return kind == KR_INSTR_FORWARD ? 1410 - 15 * mb : 1200 - 30 * mb;
}

static int freq_same(kr_instr_kind kind, int mb)
{
    (void)kind;
    (void)mb;
    return 1305;
}

/* A plan for `stages` stages and `mb` microbatches (1F1B), clocks from f, and comm entries:
 * forwards fwd_attn@rope_0 with 8+mb SMs; backwards bwd_mlp@none with 4 SMs and a recompute
 * fwd_attn@norm_0 with 6 SMs. Built on the default job so that it also validates against it
 * when mb = 8 and stages = 2. */
static void make_plan(kr_plan *plan, int stages, int mb, freq_fn f)
{
    kr_job job;
    kr_job_default(&job);
    job.pp = stages;
    job.num_microbatches = mb;
    int counts[KR_MAX_STAGES];
    for (int s = 0; s < stages; s++)
        counts[s] = kr_sched_length(mb, 1);
    kr_error e = {0};
    assert_int_equal(kr_plan_init(plan, &job, counts, &e), KR_OK);
    kr_sched_item order[256];
    for (int s = 0; s < stages; s++) {
        int n = kr_sched_order(KR_SCHEDULE_1F1B, stages, mb, 1, s, order, 256, &e);
        assert_int_equal(n, counts[s]);
        for (int i = 0; i < n; i++) {
            kr_plan_instr *in = &plan->stages[s].instr[i];
            in->kind = order[i].kind;
            in->microbatch = order[i].microbatch;
            in->chunk = 0;
            in->freq_mhz = f(in->kind, in->microbatch);
            if (in->kind == KR_INSTR_FORWARD) {
                in->comm[0] = (kr_comm_setting){"fwd_attn", 0, "rope_0", 8 + in->microbatch % 8, 0};
                in->ncomm = 1;
            } else {
                in->comm[0] = (kr_comm_setting){"bwd_mlp", 0, "none", 4, 0};
                in->comm[1] = (kr_comm_setting){"fwd_attn", 1, "norm_0", 6, 0};
                in->ncomm = 2;
            }
        }
    }
}

typedef struct warnings {
    int count[5];
    char last[5][1024];
} warnings;

static void on_warn(void *ud, int kind, int code, const char *msg)
{
    warnings *w = ud;
    (void)code;
    assert_true(kind >= 1 && kind <= 4);
    w->count[kind]++;
    kr__strlcpy(w->last[kind], msg, sizeof w->last[kind]);
}

/* Options for in-process tests: no signal or exit handlers, no polling, a private lock dir. */
static kr_runtime_config test_options(kr_backend *b, warnings *w, const char *lockdir)
{
    kr_runtime_config o = {0};
    o.backend_ptr = b;
    o.flags = KR_RUNTIME_NO_SIGNALS | KR_RUNTIME_NO_ATEXIT;
    o.lock_dir = lockdir;
    o.energy_poll_s = -1;
    o.warn = on_warn;
    o.warn_ud = w;
    return o;
}

/* Runs one step of stage s; with sync, waits for the worker after each begin and checks that the
 * fake runs at the planned clock while control is on. Returns the number of hooks that failed. */
static int run_step(kr_runtime *rt, const kr_plan *plan, int s, kr_backend *fake, int sync)
{
    int failures = 0;
    kr_error e = {0};
    for (int i = 0; i < plan->stages[s].ninstr; i++) {
        const kr_plan_instr *in = &plan->stages[s].instr[i];
        failures += kr_runtime_instruction_begin(rt, in->kind, in->microbatch, in->chunk, &e) != KR_OK;
        if (sync) {
            assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
            kr_runtime_status st;
            kr_runtime_status_get(rt, &st);
            int lo, hi, cur;
            assert_int_equal(kr_gpuctl_fake_state(fake, 0, &lo, &hi, &cur), KR_OK);
            if (st.mode == KR_RUNTIME_CONTROL)
                assert_int_equal(cur, in->freq_mhz);
        }
        failures += kr_runtime_instruction_end(rt, &e) != KR_OK;
    }
    failures += kr_runtime_step_end(rt, &e) != KR_OK;
    return failures;
}

static void assert_fake_lock(kr_backend *fake, int lo_want, int hi_want)
{
    int lo, hi, cur;
    assert_int_equal(kr_gpuctl_fake_state(fake, 0, &lo, &hi, &cur), KR_OK);
    assert_int_equal(lo, lo_want);
    assert_int_equal(hi, hi_want);
}

static kr_backend *new_fake(const kr_gpuctl_fake_config *o)
{
    kr_backend *b;
    kr_error e = {0};
    assert_int_equal(kr_gpuctl_fake_create(o, &b, &e), KR_OK);
    return b;
}

/* What most tests start from: a plan, a fake GPU, collected warnings and in-process options. */
typedef struct fixture {
    kr_plan plan;
    kr_backend *fake;
    warnings w;
    kr_runtime_config o;
    kr_error e;
} fixture;

static void fixture_init(fixture *f, const char *name, int stages, int mb, freq_fn fn, const kr_gpuctl_fake_config *fo)
{
    memset(f, 0, sizeof *f);
    const char *dir = kr_test_tmpdir(name);
    assert_non_null(dir);
    make_plan(&f->plan, stages, mb, fn);
    f->fake = new_fake(fo);
    f->o = test_options(f->fake, &f->w, dir);
}

static void fixture_free(fixture *f)
{
    kr_backend_destroy(f->fake);
    kr_plan_free(&f->plan);
}

/* ---- the plan applied ----------------------------------------------------------------------------- */

static void applies_plan_in_order(void **state)
{
    (void)state;
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200};
    fixture f;
    fixture_init(&f, "rt_apply", 2, 4, freq_varied, &fo);
    kr_runtime *rt;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_ninstr(rt), 8);
    assert_ptr_equal(kr_runtime_backend(rt), f.fake);
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.mode, KR_RUNTIME_CONTROL);
    assert_int_equal(st.restore_min_mhz, 1005);
    assert_int_equal(st.restore_max_mhz, 1200);
    assert_string_equal(st.backend, "fake");
    assert_string_equal(st.device_uuid, "GPU-fake-0");
    assert_non_null(strstr(st.lock_path, "kareus-gpu-GPU-fake-0.lock"));
    for (int step = 0; step < 2; step++)
        assert_int_equal(run_step(rt, &f.plan, 0, f.fake, 1), 0);
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.steps, 2);
    assert_int_equal(st.mismatched_steps, 0);
    /* Stage 0 of 1F1B with S=2, M=4: F0 F1 B0 F2 B1 F3 B2 B3 — eight different clocks, twice. */
    assert_int_equal(st.clock_requests, 16);
    assert_int_equal(st.clock_sets, 16);
    assert_int_equal(st.applied_mhz, f.plan.stages[0].instr[7].freq_mhz);
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    assert_fake_lock(f.fake, 1005, 1200); /* the lock found at open is back */
    kr_gpuctl_fake_call calls[256];
    int n, k = 0;
    assert_int_equal(kr_gpuctl_fake_calls(f.fake, calls, 256, &n), KR_OK);
    for (int i = 0; i < n; i++) {
        if (calls[i].op != KR_GPUCTL_FAKE_SET_CLOCK && calls[i].op != KR_GPUCTL_FAKE_RESET_CLOCK)
            continue;
        if (k < 16) {
            assert_int_equal(calls[i].op, KR_GPUCTL_FAKE_SET_CLOCK);
            assert_int_equal(calls[i].a, f.plan.stages[0].instr[k % 8].freq_mhz);
        } else {
            assert_int_equal(calls[i].a, 1005); /* the restore */
            assert_int_equal(calls[i].b, 1200);
        }
        k++;
    }
    assert_int_equal(k, 17);
    assert_int_equal(f.w.count[KR_RUNTIME_WARN_DEGRADED] + f.w.count[KR_RUNTIME_WARN_MISMATCH], 0);
    fixture_free(&f);
}

static void comm_configs(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, "rt_comm", 2, 8, freq_varied, NULL);
    f.o.job = "default"; /* validates the f.plan against the job and gives slot indices */
    /* bwd_mlp on NCCL (issue 31): the lookup says which kernel. */
    for (int s = 0; s < f.plan.num_stages; s++)
        for (int i = 0; i < f.plan.stages[s].ninstr; i++)
            for (int k = 0; k < f.plan.stages[s].instr[i].ncomm; k++)
                if (strcmp(f.plan.stages[s].instr[i].comm[k].key, "bwd_mlp") == 0)
                    f.plan.stages[s].instr[i].comm[k].kernel = KR_KERNEL_NCCL;
    kr_runtime *rt;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 1, 0, &f.o, &rt, &f.e), KR_OK);
    kr_runtime_comm c;
    KR_ASSERT_ERR(kr_runtime_comm_config(rt, "fwd_attn", 0, &c, &f.e), KR_ESTATE, f.e, "no planned instruction is open");
    /* Stage 1 (last) of 1F1B runs F0 first, then B0. */
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &f.e), KR_OK);
    assert_int_equal(kr_runtime_comm_config(rt, "fwd_attn", 0, &c, &f.e), KR_OK);
    assert_string_equal(c.slot, "rope_0");
    assert_int_equal(c.slot_index, 2);
    assert_int_equal(c.sms, 8);
    assert_int_equal(c.kernel, KR_KERNEL_TUNED);
    KR_ASSERT_ERR(kr_runtime_comm_config(rt, "fwd_mlp", 0, &c, &f.e), KR_ENOTFOUND, f.e,
                  "forward of microbatch 0 has no comm setting for 'fwd_mlp'");
    assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_BACKWARD, 0, 0, &f.e), KR_OK);
    assert_int_equal(kr_runtime_comm_config(rt, "bwd_mlp", 0, &c, &f.e), KR_OK);
    assert_int_equal(c.slot_index, KR_SLOT_NONE);
    assert_int_equal(c.sms, 4);
    assert_int_equal(c.kernel, KR_KERNEL_NCCL);
    assert_int_equal(kr_runtime_comm_config(rt, "fwd_attn", 1, &c, &f.e), KR_OK);
    assert_string_equal(c.slot, "norm_0");
    assert_int_equal(c.slot_index, 0);
    assert_int_equal(c.sms, 6);
    KR_ASSERT_ERR(kr_runtime_comm_config(rt, "fwd_attn", 0, &c, &f.e), KR_ENOTFOUND, f.e, "no comm setting for 'fwd_attn'");
    assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    /* Without a job the slot index is unknown. */
    f.o.job = NULL;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 1, 0, &f.o, &rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &f.e), KR_OK);
    assert_int_equal(kr_runtime_comm_config(rt, "fwd_attn", 0, &c, &f.e), KR_OK);
    assert_int_equal(c.slot_index, KR_RUNTIME_SLOT_UNKNOWN);
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    fixture_free(&f);
}

static void runs_on_the_simulator(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_sim");
    kr_plan plan;
    make_plan(&plan, 2, 8, freq_varied); /* fits the default job, which the plan names */
    kr_runtime_config o = {.backend = "sim:activity=0.8", .flags = KR_RUNTIME_NO_SIGNALS | KR_RUNTIME_NO_ATEXIT,
                            .lock_dir = dir, .energy_poll_s = 0.005};
    kr_runtime *rt;
    kr_error e = {0};
    assert_int_equal(kr_runtime_open_plan(&plan, 1, 0, &o, &rt, &e), KR_OK);
    kr_backend *sim = kr_runtime_backend(rt);
    assert_true(kr_sim_backend_is(sim));
    assert_int_equal(run_step(rt, &plan, 1, NULL, 0), 0);
    assert_int_equal(kr_runtime_sync(rt, 2.0, &e), KR_OK);
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_string_equal(st.backend, "sim");
    assert_string_equal(st.lock_path, ""); /* simulated devices take no lock */
    kr_runtime_energy en;
    kr_runtime_energy_get(rt, &en, NULL, 0);
    assert_int_equal(en.available, 1);
    assert_int_equal(en.steps, 1);
    assert_true(en.step_energy_j > 0);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_plan_free(&plan);
    /* With a sync after each begin, the simulator's clock log is exactly the plan's clocks, then
     * the reset at close. */
    make_plan(&plan, 2, 8, freq_varied);
    kr_backend *b;
    assert_int_equal(kr_backend_open("sim", NULL, &b, &e), KR_OK);
    kr_runtime_config ob = {.backend_ptr = b, .flags = KR_RUNTIME_NO_SIGNALS | KR_RUNTIME_NO_ATEXIT, .energy_poll_s = -1};
    assert_int_equal(kr_runtime_open_plan(&plan, 1, 0, &ob, &rt, &e), KR_OK);
    for (int i = 0; i < plan.stages[1].ninstr; i++) {
        const kr_plan_instr *in = &plan.stages[1].instr[i];
        assert_int_equal(kr_runtime_instruction_begin(rt, in->kind, in->microbatch, 0, &e), KR_OK);
        assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
        assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    }
    assert_int_equal(kr_runtime_step_end(rt, &e), KR_OK);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_sim_clock_event log[64];
    int n;
    assert_int_equal(kr_sim_backend_clock_log(b, log, 64, &n), KR_OK);
    assert_int_equal(n, plan.stages[1].ninstr + 1);
    for (int i = 0; i < plan.stages[1].ninstr; i++) {
        assert_int_equal(log[i].min_mhz, plan.stages[1].instr[i].freq_mhz);
        assert_int_equal(log[i].max_mhz, plan.stages[1].instr[i].freq_mhz);
    }
    assert_int_equal(log[n - 1].max_mhz, 0);
    kr_backend_destroy(b);
    kr_plan_free(&plan);
}

static void coalesces_and_latest_request_wins(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_coalesce");
    kr_error e = {0};
    kr_runtime *rt;
    warnings w = {0};
    /* The same clock everywhere: one request, one set, the rest coalesced. */
    kr_plan same;
    make_plan(&same, 2, 4, freq_same);
    kr_backend *fake = new_fake(NULL);
    kr_runtime_config o = test_options(fake, &w, dir);
    assert_int_equal(kr_runtime_open_plan(&same, 0, 0, &o, &rt, &e), KR_OK);
    assert_int_equal(run_step(rt, &same, 0, fake, 0), 0);
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.clock_requests, 1);
    assert_int_equal(st.clock_coalesced, 7);
    assert_int_equal(st.clock_sets, 1);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_backend_destroy(fake);
    /* A slow driver (50 ms per set): the hooks run ahead, the worker applies only the latest
     * request, and ends on the last instruction's clock. */
    kr_plan varied;
    make_plan(&varied, 2, 4, freq_varied);
    kr_gpuctl_fake_config slow = {.sleep_s = 0.05};
    fake = new_fake(&slow);
    o = test_options(fake, &w, dir);
    assert_int_equal(kr_runtime_open_plan(&varied, 0, 0, &o, &rt, &e), KR_OK);
    assert_int_equal(run_step(rt, &varied, 0, fake, 0), 0);
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.clock_requests, 8);
    assert_true(st.clock_sets <= 8);
    int lo, hi, cur;
    assert_int_equal(kr_gpuctl_fake_state(fake, 0, &lo, &hi, &cur), KR_OK);
    assert_int_equal(cur, varied.stages[0].instr[7].freq_mhz);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    assert_fake_lock(fake, 0, 0);
    kr_backend_destroy(fake);
    kr_plan_free(&same);
    kr_plan_free(&varied);
}

/* ---- failures ------------------------------------------------------------------------------------ */

/* Opens, runs two synced steps and closes on a fake that fails call N with `code`. Returns the
 * number of calls the fake saw. */
static int run_with_failure(const kr_plan *plan, const char *dir, long nth, int code)
{
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200, .fail_call = nth, .fail_code = code};
    kr_backend *fake = new_fake(&fo);
    warnings w = {0};
    kr_runtime_config o = test_options(fake, &w, dir);
    kr_runtime *rt;
    kr_error e = {0};
    int rc = kr_runtime_open_plan(plan, 0, 0, &o, &rt, &e);
    if (rc == KR_OK) {
        for (int step = 0; step < 2; step++)
            assert_int_equal(run_step(rt, plan, 0, fake, 1), 0); /* the job never sees a failure */
        assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
        kr_runtime_status st;
        kr_runtime_status_get(rt, &st);
        if (st.degraded) {
            assert_int_equal(w.count[KR_RUNTIME_WARN_DEGRADED], 1);
            assert_int_equal(st.mode, KR_RUNTIME_MEASURE_ONLY);
            assert_non_null(strstr(w.last[KR_RUNTIME_WARN_DEGRADED], "measuring only"));
        }
        assert_true(w.count[KR_RUNTIME_WARN_DEGRADED] <= 1);
        assert_true(w.count[KR_RUNTIME_WARN_ENERGY] <= 1);
        assert_int_equal(kr_runtime_close(rt, &e), KR_OK); /* the restore retries a failed call */
    } else {
        assert_true(rc == code);
        assert_true(e.msg[0] != '\0');
    }
    assert_fake_lock(fake, 1005, 1200);
    int n;
    kr_gpuctl_fake_call one;
    assert_int_equal(kr_gpuctl_fake_calls(fake, &one, 1, &n), KR_OK);
    kr_backend_destroy(fake);
    return n;
}

static void every_nth_call_failure_is_survived(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_nth");
    kr_plan plan;
    make_plan(&plan, 2, 2, freq_varied);
    int total = run_with_failure(&plan, dir, 0, KR_EBACKEND);
    assert_true(total > 10);
    const int codes[2] = {KR_EBACKEND, KR_EPERM};
    for (int c = 0; c < 2; c++)
        for (long nth = 1; nth <= total + 1; nth++)
            run_with_failure(&plan, dir, nth, codes[c]);
    kr_plan_free(&plan);
}

static void unprivileged_user_measures_only(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_perm");
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_varied);
    kr_backend *fake;
    kr_error e = {0};
    assert_int_equal(kr_backend_open("fake:perm_ops=writes", NULL, &fake, &e), KR_OK);
    warnings w = {0};
    kr_runtime_config o = test_options(fake, &w, dir);
    kr_runtime *rt;
    assert_int_equal(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_OK);
    for (int step = 0; step < 3; step++)
        assert_int_equal(run_step(rt, &plan, 0, fake, 1), 0);
    assert_int_equal(w.count[KR_RUNTIME_WARN_DEGRADED], 1);
    assert_non_null(strstr(w.last[KR_RUNTIME_WARN_DEGRADED], "no permission"));
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.mode, KR_RUNTIME_MEASURE_ONLY);
    assert_int_equal(st.degrade_code, KR_EPERM);
    assert_int_equal(st.clock_requests, 1); /* nothing requested after the failure */
    assert_int_equal(st.steps, 3);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    assert_fake_lock(fake, 0, 0);
    kr_backend_destroy(fake);
    kr_plan_free(&plan);
}

/* An allocator that fails its N-th allocation and counts live blocks. */
typedef struct fail_alloc {
    long n, fail_at;
    long live;
} fail_alloc;

static void *fa_alloc(void *ud, size_t size)
{
    fail_alloc *f = ud;
    if (++f->n == f->fail_at)
        return NULL;
    void *p = malloc(size);
    f->live += p != NULL;
    return p;
}

static void *fa_realloc(void *ud, void *ptr, size_t size)
{
    fail_alloc *f = ud;
    if (++f->n == f->fail_at)
        return NULL;
    void *p = realloc(ptr, size);
    f->live += ptr == NULL && p != NULL;
    return p;
}

static void fa_free(void *ud, void *ptr)
{
    fail_alloc *f = ud;
    if (ptr) {
        f->live--;
        free(ptr);
    }
}

static void allocation_failures_on_open(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_alloc");
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_varied);
    int opened = 0;
    for (long nth = 1; !opened && nth < 1000; nth++) {
        fail_alloc fa = {0, nth, 0};
        kr_allocator a = {fa_alloc, fa_realloc, fa_free, &fa};
        kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200};
        kr_backend *fake = new_fake(&fo);
        warnings w = {0};
        kr_runtime_config o = test_options(fake, &w, dir);
        o.allocator = &a;
        kr_runtime *rt;
        kr_error e = {0};
        int rc = kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e);
        if (rc == KR_OK) {
            opened = 1;
            assert_int_equal(run_step(rt, &plan, 0, fake, 1), 0);
            assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
        } else {
            KR_ASSERT_ERR(rc, KR_ENOMEM, e, "out of memory");
        }
        assert_int_equal(fa.live, 0);
        assert_fake_lock(fake, 1005, 1200);
        kr_backend_destroy(fake);
    }
    assert_true(opened);
    kr_plan_free(&plan);
}

/* ---- plans that do not fit ------------------------------------------------------------------------ */

static void refuses_plans_that_do_not_fit(void **state)
{
    (void)state;
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200};
    fixture f;
    fixture_init(&f, "rt_refuse", 2, 4, freq_varied, &fo);
    kr_runtime *rt;
    KR_ASSERT_ERR(kr_runtime_open_plan(&f.plan, 2, 0, &f.o, &rt, &f.e), KR_ERANGE, f.e,
                  "plan: stage: expected 0..1 (the plan has 2 stages), found 2");
    KR_ASSERT_ERR(kr_runtime_open_plan(&f.plan, 0, 1, &f.o, &rt, &f.e), KR_EINVAL, f.e,
                  "device: expected 0..0 (fake backend has 1 device), found 1");
    /* A f.plan whose stage-0 order is not 1F1B. */
    kr_plan bad;
    kr_plan_copy(&bad, &f.plan, &f.e);
    kr_plan_instr tmp = bad.stages[0].instr[1];
    bad.stages[0].instr[1] = bad.stages[0].instr[2];
    bad.stages[0].instr[2] = tmp;
    KR_ASSERT_ERR(kr_runtime_open_plan(&bad, 0, 0, &f.o, &rt, &f.e), KR_EMISMATCH, f.e,
                  "plan: stages[0].instructions[1]: expected forward of microbatch 1 (chunk 0) in 1f1b order, found "
                  "backward of microbatch 0 (chunk 0)");
    assert_int_equal(kr_runtime_open_plan(&bad, 1, 0, &f.o, &rt, &f.e), KR_OK); /* stage 1 is fine */
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    kr_plan_free(&bad);
    /* A clock this GPU does not have: its clocks step by 30 MHz, F1 runs at 1395 MHz. */
    kr_plan_copy(&bad, &f.plan, &f.e);
    kr_backend *coarse;
    assert_int_equal(kr_backend_open("fake:step_mhz=30,uuid=GPU-coarse", NULL, &coarse, &f.e), KR_OK);
    kr_runtime_config oc = test_options(coarse, &f.w, f.o.lock_dir);
    KR_ASSERT_ERR(kr_runtime_open_plan(&bad, 0, 0, &oc, &rt, &f.e), KR_ERANGE, f.e,
                  "plan: stages[0].instructions[1].freq_mhz: 1395 MHz is not a supported SM clock of device 0 "
                  "(Kareus fake GPU: 41 clocks from 210 to 1410 MHz; nearest 1410 MHz)");
    kr_backend_destroy(coarse);
    /* The same through a file: messages name it. */
    char path[1200];
    snprintf(path, sizeof path, "%s/bad-plan.json", f.o.lock_dir);
    assert_int_equal(kr_plan_write(path, &bad, &f.e), KR_OK);
    kr_plan_free(&bad);
    KR_ASSERT_ERR(kr_runtime_open(path, 5, 0, &f.o, &rt, &f.e), KR_ERANGE, f.e, "bad-plan.json: stage: expected 0..1");
    KR_ASSERT_ERR(kr_runtime_plan_check(path, 7, NULL, &f.e), KR_ERANGE, f.e, "bad-plan.json: stage: expected 0..1");
    assert_int_equal(kr_runtime_plan_check(path, -1, NULL, &f.e), KR_OK);
    /* Checked against a job it was not made for (the default job has 8 microbatches). */
    KR_ASSERT_ERR(kr_runtime_plan_check(path, 0, "default", &f.e), KR_EMISMATCH, f.e, "bad-plan.json (job default): plan:");
    f.o.job = "default";
    KR_ASSERT_ERR(kr_runtime_open(path, 0, 0, &f.o, &rt, &f.e), KR_EMISMATCH, f.e, "bad-plan.json (job default)");
    f.o.job = NULL;
    KR_ASSERT_ERR(kr_runtime_open("/no/such/plan.json", 0, 0, &f.o, &rt, &f.e), KR_EIO, f.e, "/no/such/plan.json");
    /* A backend that cannot load. */
    kr_runtime_config on = {.backend = "nvml:lib=libkareus-missing-nvml.so.1", .flags = KR_RUNTIME_NO_SIGNALS};
    KR_ASSERT_ERR(kr_runtime_open_plan(&f.plan, 0, 0, &on, &rt, &f.e), KR_ENOLIB, f.e, "libkareus-missing-nvml.so.1");
    /* None of this touched the clocks. */
    assert_fake_lock(f.fake, 1005, 1200);
    kr_gpuctl_fake_call calls[64];
    int n;
    assert_int_equal(kr_gpuctl_fake_calls(f.fake, calls, 64, &n), KR_OK);
    for (int i = 0; i < n && i < 64; i++)
        assert_true(calls[i].op != KR_GPUCTL_FAKE_SET_CLOCK && calls[i].op != KR_GPUCTL_FAKE_RESET_CLOCK);
    fixture_free(&f);
}

static void schedule_mismatches_at_run_time(void **state)
{
    (void)state;
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200};
    fixture f;
    fixture_init(&f, "rt_mismatch", 2, 4, freq_varied, &fo);
    kr_runtime *rt;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &rt, &f.e), KR_OK);
    KR_ASSERT_ERR(kr_runtime_instruction_end(rt, &f.e), KR_ESTATE, f.e, "without instruction_begin");
    /* Step 1: F0, then B0 where F1 is planned. */
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &f.e), KR_OK);
    KR_ASSERT_ERR(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 1, 0, &f.e), KR_ESTATE, f.e, "already open");
    assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_sync(rt, 0, &f.e), KR_OK);
    KR_ASSERT_ERR(kr_runtime_instruction_begin(rt, KR_INSTR_BACKWARD, 0, 0, &f.e), KR_EMISMATCH, f.e,
                  "stage 0, step 1: instruction 1: expected forward of microbatch 1 (chunk 0), found backward of "
                  "microbatch 0 (chunk 0)");
    assert_int_equal(f.w.count[KR_RUNTIME_WARN_MISMATCH], 1);
    assert_int_equal(kr_runtime_sync(rt, 0, &f.e), KR_OK);
    assert_fake_lock(f.fake, 1005, 1200); /* the rest of the step runs at the found clocks */
    assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 7, 0, &f.e), KR_OK);
    assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    assert_int_equal(kr_runtime_step_end(rt, &f.e), KR_OK);
    /* Step 2 follows the f.plan again. */
    assert_int_equal(run_step(rt, &f.plan, 0, f.fake, 1), 0);
    /* Step 3 ends early. */
    for (int i = 0; i < 3; i++) {
        const kr_plan_instr *in = &f.plan.stages[0].instr[i];
        assert_int_equal(kr_runtime_instruction_begin(rt, in->kind, in->microbatch, 0, &f.e), KR_OK);
        assert_int_equal(kr_runtime_instruction_end(rt, &f.e), KR_OK);
    }
    KR_ASSERT_ERR(kr_runtime_step_end(rt, &f.e), KR_EMISMATCH, f.e,
                  "step ended after 3 of 8 instructions; next expected: forward of microbatch 2 (chunk 0)");
    /* An open instruction at step_end is closed and reported. */
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &f.e), KR_OK);
    KR_ASSERT_ERR(kr_runtime_step_end(rt, &f.e), KR_ESTATE, f.e, "instruction still open");
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.steps, 4);
    assert_int_equal(st.mismatched_steps, 2);
    assert_int_equal(st.mode, KR_RUNTIME_CONTROL);
    assert_int_equal(f.w.count[KR_RUNTIME_WARN_MISMATCH], 1); /* reported once, counted after */
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    assert_fake_lock(f.fake, 1005, 1200);
    fixture_free(&f);
}

/* ---- one controlling process per GPU ------------------------------------------------------------- */

static void second_open_is_refused_or_read_only(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, "rt_lock", 2, 4, freq_varied, NULL);
    kr_runtime *a, *b, *c;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &a, &f.e), KR_OK);
    char want[160];
    snprintf(want, sizeof want, "is controlled by another Kareus process (pid %ld)", (long)getpid());
    KR_ASSERT_ERR(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &b, &f.e), KR_EBUSY, f.e, want);
    f.o.flags |= KR_RUNTIME_SHARE_READONLY;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &b, &f.e), KR_OK);
    kr_runtime_status st;
    kr_runtime_status_get(b, &st);
    assert_int_equal(st.read_only, 1);
    assert_int_equal(st.mode, KR_RUNTIME_MEASURE_ONLY);
    assert_non_null(strstr(st.reason, "read-only: GPU GPU-fake-0"));
    assert_string_equal(st.lock_path, "");
    assert_int_equal(run_step(b, &f.plan, 0, f.fake, 1), 0);
    kr_runtime_status_get(b, &st);
    assert_int_equal(st.clock_requests, 0);
    assert_int_equal(kr_runtime_close(b, &f.e), KR_OK);
    assert_int_equal(kr_runtime_close(a, &f.e), KR_OK);
    f.o.flags &= ~KR_RUNTIME_SHARE_READONLY;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &c, &f.e), KR_OK); /* free again */
    assert_int_equal(kr_runtime_close(c, &f.e), KR_OK);
    /* READ_ONLY never sets a clock and takes no lock. */
    f.o.flags |= KR_RUNTIME_READ_ONLY;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &a, &f.e), KR_OK);
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &b, &f.e), KR_OK);
    assert_int_equal(run_step(a, &f.plan, 0, f.fake, 1), 0);
    kr_runtime_status_get(a, &st);
    assert_int_equal(st.clock_sets, 0);
    assert_int_equal(kr_runtime_close(a, &f.e), KR_OK);
    assert_int_equal(kr_runtime_close(b, &f.e), KR_OK);
    fixture_free(&f);
}

/* ---- signals and exit, in child processes ----------------------------------------------------------- */

/* Runs in a child: opens a runtime with signal/exit handlers on a fake that logs to `log`,
 * applies the first instruction's clock, tells the parent through `ready`. */
static kr_runtime *child_open(const char *log, const char *lockdir, unsigned flags, int ready)
{
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_varied);
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200, .log_path = log};
    kr_backend *fake;
    kr_error e = {0};
    if (kr_gpuctl_fake_create(&fo, &fake, &e))
        _exit(90);
    kr_runtime_config o = {.backend_ptr = fake, .flags = flags | KR_RUNTIME_OWN_BACKEND, .energy_poll_s = 0.01,
                            .lock_dir = lockdir};
    kr_runtime *rt;
    if (kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e))
        _exit(91);
    if (kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &e) || kr_runtime_sync(rt, 0, &e))
        _exit(92);
    kr_plan_free(&plan);
    if (ready >= 0 && write(ready, "r", 1) != 1)
        _exit(93);
    return rt;
}

/* The log of a child: checks the plan clock was set and then the found lock put back. */
static void assert_log_restored(const char *log, const char *after)
{
    char *text;
    kr_error e = {0};
    assert_int_equal(kr__read_file(log, &text, NULL, &e), KR_OK);
    const char *set = strstr(text, " set_clock 0 1410 1410 0\n");
    assert_non_null(set);
    const char *restore = strstr(set, " set_clock 0 1005 1200 0\n");
    if (restore == NULL)
        print_error("log:\n%s", text);
    assert_non_null(restore);
    if (after) {
        const char *a = strstr(text, after);
        assert_non_null(a);
        assert_true(a > restore);
    }
    free(text);
}

static pid_t fork_child(const char *log, const char *dir, unsigned flags, int *ready_rd)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        child_open(log, dir, flags, p[1]);
        for (;;)
            pause();
    }
    close(p[1]);
    *ready_rd = p[0];
    return pid;
}

static void wait_ready(int fd)
{
    char c;
    assert_int_equal(read(fd, &c, 1), 1);
    close(fd);
}

static void sigterm_restores_clocks(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_sigterm");
    char log[1200];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    int ready;
    pid_t pid = fork_child(log, dir, 0, &ready);
    wait_ready(ready);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status)); /* the default action still ends the process… */
    assert_int_equal(WTERMSIG(status), SIGTERM);
    assert_log_restored(log, NULL); /* …after the clocks were put back */
}

static int chained_fd = -1;

static void user_sigint_handler(int sig)
{
    (void)sig;
    if (write(chained_fd, "user-handler\n", 13) != 13)
        _exit(5);
    _exit(7);
}

static void sigint_chains_to_previous_handler(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_sigint");
    char log[1200];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        chained_fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        struct sigaction sa = {0};
        sa.sa_handler = user_sigint_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        child_open(log, dir, 0, p[1]);
        for (;;)
            pause();
    }
    close(p[1]);
    wait_ready(p[0]);
    assert_int_equal(kill(pid, SIGINT), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7); /* the job's own handler ran… */
    assert_log_restored(log, "user-handler\n"); /* …after the restore */
}

static void exit_restores_clocks(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_exit");
    char log[1200];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_open(log, dir, KR_RUNTIME_NO_SIGNALS, -1);
        exit(3); /* without kr_runtime_close */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    assert_log_restored(log, NULL);
}

static void forked_child_leaves_parent_clocks_alone(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_fork");
    char log[1200];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The "training process": a runtime with handlers, then a forked helper (a data loader
         * worker) that exits and is terminated — neither may restore the parent's clocks. */
        kr_runtime *rt = child_open(log, dir, 0, -1);
        int fd = open(log, O_WRONLY | O_APPEND);
        if (write(fd, "fork\n", 5) != 5)
            _exit(80);
        pid_t helper = fork();
        if (helper == 0)
            exit(0);
        int st;
        waitpid(helper, &st, 0);
        helper = fork();
        if (helper == 0) {
            for (;;)
                pause();
        }
        kill(helper, SIGTERM);
        waitpid(helper, &st, 0);
        if (write(fd, "helpers-done\n", 13) != 13)
            _exit(81);
        kr_error e = {0};
        _exit(kr_runtime_close(rt, &e) == KR_OK ? 0 : 82);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char *text;
    kr_error e = {0};
    assert_int_equal(kr__read_file(log, &text, NULL, &e), KR_OK);
    const char *fork_mark = strstr(text, "fork\n"), *done = strstr(text, "helpers-done\n");
    assert_non_null(fork_mark);
    assert_non_null(done);
    /* Between the fork and the helpers' end, no clock call at all. */
    for (const char *p = fork_mark; p < done; p++)
        assert_true(strncmp(p, "set_clock", 9) != 0 && strncmp(p, "reset_clock", 11) != 0);
    assert_non_null(strstr(done, " set_clock 0 1005 1200 0\n")); /* close restored */
    free(text);
}

/* ---- energy ------------------------------------------------------------------------------------ */

typedef struct manual_clock {
    double t;
} manual_clock;

static double manual_now(void *ud)
{
    return ((manual_clock *)ud)->t;
}

static void energy_windows_on_a_manual_clock(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("rt_energy");
    kr_plan plan;
    make_plan(&plan, 1, 2, freq_varied); /* one stage: F0 B0 F1 B1 */
    manual_clock mc = {0};
    kr_gpuctl_fake_config fo = {.power_w = 100, .energy_period_s = 0.25, .now_s = manual_now, .now_ud = &mc};
    kr_backend *fake = new_fake(&fo);
    warnings w = {0};
    kr_runtime_config o = test_options(fake, &w, dir);
    o.now_s = manual_now;
    o.now_ud = &mc;
    kr_runtime *rt;
    kr_error e = {0};
    assert_int_equal(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_OK);
    /* F0 [0, 0.2], B0 [0.2, 0.5], F1 [0.5, 0.6], B1 [0.6, 1.0]; the counter moves every 0.25 s
     * and is read at 0.25, 0.5, 0.75 and 1.0. */
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &e), KR_OK);
    mc.t = 0.2;
    assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_BACKWARD, 0, 0, &e), KR_OK);
    mc.t = 0.25;
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    mc.t = 0.5;
    assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 1, 0, &e), KR_OK);
    mc.t = 0.6;
    assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    assert_int_equal(kr_runtime_instruction_begin(rt, KR_INSTR_BACKWARD, 1, 0, &e), KR_OK);
    mc.t = 0.75;
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    mc.t = 1.0;
    assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    assert_int_equal(kr_runtime_step_end(rt, &e), KR_OK);
    kr_runtime_energy en;
    kr_runtime_energy_get(rt, &en, NULL, 0);
    assert_int_equal(en.steps, 0); /* the counter has not been seen past the step's end yet */
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    kr_runtime_instr_energy ie[4];
    kr_runtime_energy_get(rt, &en, ie, 4);
    assert_int_equal(en.available, 1);
    assert_int_equal(en.per_instruction_quantized, 1);
    assert_int_equal(en.steps, 1);
    KR_ASSERT_CLOSE(en.step_time_s, 1.0, 1e-12);
    KR_ASSERT_CLOSE(en.step_energy_j, 100.0, 1e-9);
    KR_ASSERT_CLOSE(en.total_energy_j, 100.0, 1e-9);
    KR_ASSERT_CLOSE(en.counter_period_s, 0.25, 1e-12);
    KR_ASSERT_CLOSE(en.counter_j, 100.0, 1e-9);
    assert_int_equal(en.ninstr, 4);
    const double want_j[4] = {20, 30, 10, 40}, want_t[4] = {0.2, 0.3, 0.1, 0.4};
    const int want_updates[4] = {0, 2, 0, 2};
    for (int i = 0; i < 4; i++) {
        KR_ASSERT_CLOSE(ie[i].energy_j, want_j[i], 1e-9);
        KR_ASSERT_CLOSE(ie[i].time_s, want_t[i], 1e-9);
        assert_int_equal(ie[i].counter_updates, want_updates[i]);
        assert_int_equal(ie[i].freq_mhz, plan.stages[0].instr[i].freq_mhz);
    }
    KR_ASSERT_CLOSE(ie[2].begin_s, 0.5, 1e-12);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_backend_destroy(fake);
    /* Without an energy counter, steps still count with their times. */
    mc.t = 0;
    kr_gpuctl_fake_config none = {.no_energy = 1, .now_s = manual_now, .now_ud = &mc};
    fake = new_fake(&none);
    o.backend_ptr = fake;
    assert_int_equal(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_OK);
    assert_int_equal(run_step(rt, &plan, 0, fake, 0), 0);
    assert_int_equal(kr_runtime_sync(rt, 1, &e), KR_OK);
    kr_runtime_energy_get(rt, &en, NULL, 0);
    assert_int_equal(en.available, 0);
    assert_int_equal(en.steps, 1);
    assert_int_equal(w.count[KR_RUNTIME_WARN_ENERGY], 0); /* no counter is not a failure */
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_backend_destroy(fake);
    kr_plan_free(&plan);
}

static void energy_counter_failure_warns_once(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, "rt_energy_fail", 2, 4, freq_varied, NULL);
    kr_runtime *rt;
    assert_int_equal(kr_runtime_open_plan(&f.plan, 0, 0, &f.o, &rt, &f.e), KR_OK);
    assert_int_equal(kr_gpuctl_fake_set_failure(f.fake, 1, 1, KR_EBACKEND, KR_GPUCTL_FAKE_MASK(KR_GPUCTL_FAKE_READ_ENERGY)), KR_OK);
    for (int step = 0; step < 2; step++)
        assert_int_equal(run_step(rt, &f.plan, 0, f.fake, 1), 0);
    assert_int_equal(f.w.count[KR_RUNTIME_WARN_ENERGY], 1);
    assert_int_equal(f.w.count[KR_RUNTIME_WARN_DEGRADED], 0); /* clocks are still controlled */
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.mode, KR_RUNTIME_CONTROL);
    kr_runtime_energy en;
    kr_runtime_energy_get(rt, &en, NULL, 0);
    assert_int_equal(en.available, 0);
    assert_int_equal(kr_runtime_close(rt, &f.e), KR_OK);
    fixture_free(&f);
}

int main(int argc, char **argv);

/* ---- more signals, crash records and hostile lock files -------------------------------------------- */

static void more_signals_restore_clocks(void **state)
{
    (void)state;
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* SIGQUIT, SIGABRT and SIGSEGV would dump core */
    const int sigs[] = {SIGHUP, SIGQUIT, SIGPIPE, SIGABRT, SIGSEGV};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL); /* cmocka catches the faults in this process; the children must not */
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        char name[64], log[1200];
        snprintf(name, sizeof name, "rt_signal_%d", sigs[i]);
        const char *dir = kr_test_tmpdir(name);
        snprintf(log, sizeof log, "%s/calls.log", dir);
        int ready;
        pid_t pid = fork_child(log, dir, 0, &ready);
        wait_ready(ready);
        assert_int_equal(kill(pid, sigs[i]), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]); /* the process still dies of it… */
        assert_log_restored(log, NULL);             /* …after the clocks were put back */
    }
    /* A job that ignores SIGHUP keeps ignoring it: no restore, the process lives on. */
    const char *dir = kr_test_tmpdir("rt_signal_ignored");
    char log[1200];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    signal(SIGHUP, SIG_IGN);
    int ready;
    pid_t pid = fork_child(log, dir, 0, &ready);
    signal(SIGHUP, SIG_DFL);
    wait_ready(ready);
    assert_int_equal(kill(pid, SIGHUP), 0);
    struct timespec ms50 = {0, 50000000};
    nanosleep(&ms50, NULL);
    int status;
    assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
    char *text;
    kr_error e = {0};
    assert_int_equal(kr__read_file(log, &text, NULL, &e), KR_OK);
    assert_null(strstr(text, " set_clock 0 1005 1200 0\n"));
    free(text);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_log_restored(log, NULL);
}

/* A child that opens the runtime with options o — on a fake whose state lives in statef when
 * statef is given — runs the plan's first clock and says so; then waits for a signal, or
 * _exits at once with exit_when_ready. Returns once the child holds the clock. */
static pid_t fork_clock_child(const char *statef, const kr_runtime_config *o, int exit_when_ready)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        kr_plan plan;
        make_plan(&plan, 2, 4, freq_varied);
        kr_runtime_config oc = *o;
        kr_error e = {0};
        if (statef) {
            kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200, .state_path = statef};
            if (kr_gpuctl_fake_create(&fo, &oc.backend_ptr, &e))
                _exit(90);
            oc.flags |= KR_RUNTIME_OWN_BACKEND;
        }
        kr_runtime *rt;
        if (kr_runtime_open_plan(&plan, 0, 0, &oc, &rt, &e) ||
            kr_runtime_instruction_begin(rt, KR_INSTR_FORWARD, 0, 0, &e) || kr_runtime_sync(rt, 0, &e))
            _exit(91);
        if (write(p[1], "r", 1) != 1)
            _exit(93);
        if (exit_when_ready)
            _exit(0);
        for (;;)
            pause();
    }
    close(p[1]);
    wait_ready(p[0]);
    return pid;
}

static pid_t fork_state_child(const char *statef, const char *dir)
{
    kr_runtime_config o = {.energy_poll_s = -1, .lock_dir = dir};
    return fork_clock_child(statef, &o, 0);
}

static void sigkill_leaves_a_record_that_restores(void **state)
{
    (void)state;
    const char *d = kr_test_tmpdir("rt_sigkill_record");
    char dir[1100], statef[1200], lockf[1200];
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(statef, sizeof statef, "%s/gpu.state", dir);
    snprintf(lockf, sizeof lockf, "%s/kareus-gpu-GPU-fake-0.lock", dir);
    kr_gpuctl_fake_config fo = {.locked_min_mhz = 1005, .locked_max_mhz = 1200, .state_path = statef};
    for (int how = 0; how < 2; how++) {
        pid_t pid = fork_state_child(statef, dir);
        char *text;
        kr_error e = {0};
        assert_int_equal(kr__read_file(lockf, &text, NULL, &e), KR_OK);
        assert_non_null(strstr(text, "kareus-gpu-lock 1\n"));
        assert_non_null(strstr(text, "state held\n"));
        assert_non_null(strstr(text, "found_lock 1005 1200\n")); /* the clocks found, not the plan's */
        free(text);
        struct stat st;
        assert_int_equal(stat(lockf, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644); /* never world-writable */
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status;
        waitpid(pid, &status, 0);
        kr_backend *fake = new_fake(&fo);
        int lmin, lmax, cur;
        assert_int_equal(kr_gpuctl_fake_state(fake, 0, &lmin, &lmax, &cur), KR_OK);
        assert_int_equal(lmax, 1410); /* the dead job's plan clock is still locked */
        if (how == 0) {
            /* Crash recovery without a helper (`kareus gpu restore`). */
            int restored = 0;
            assert_int_equal(kr_runtime_gpu_restore(fake, 0, dir, &restored, &e), KR_OK);
            assert_int_equal(restored, 1);
            assert_non_null(strstr(e.msg, "restored the lock [1005, 1200] MHz"));
            assert_int_equal(kr_runtime_gpu_restore(fake, 0, dir, &restored, &e), KR_OK);
            assert_int_equal(restored, 0); /* the record now says free */
        } else {
            /* The next runtime on that GPU inherits the record: it restores the found clocks. */
            warnings w = {0};
            kr_runtime_config o = test_options(fake, &w, dir);
            kr_plan plan;
            make_plan(&plan, 2, 4, freq_varied);
            kr_runtime *rt;
            assert_int_equal(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_OK);
            kr_runtime_status rs;
            kr_runtime_status_get(rt, &rs);
            assert_int_equal(rs.restore_min_mhz, 1005);
            assert_int_equal(rs.restore_max_mhz, 1200);
            assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
            kr_plan_free(&plan);
        }
        assert_int_equal(kr_gpuctl_fake_state(fake, 0, &lmin, &lmax, &cur), KR_OK);
        assert_int_equal(lmin, 1005);
        assert_int_equal(lmax, 1200);
        kr_backend_destroy(fake);
    }
}

/* Reads a whole small file into buf. */
static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void hostile_lock_files_are_left_alone(void **state)
{
    (void)state;
    const char *d = kr_test_tmpdir("rt_hostile_locks");
    char dir[1100], target[1200], lockf[1200], buf[256];
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(target, sizeof target, "%s/root-only", dir);
    snprintf(lockf, sizeof lockf, "%s/kareus-gpu-GPU-x.lock", dir);
    kr_test_write(target, "secret\n");
    assert_int_equal(chmod(target, 0600), 0);
    kr_gpu_lock l;
    kr_error e = {0};
    /* A planted symbolic link: refused, its target untouched (content and mode). */
    assert_int_equal(symlink(target, lockf), 0);
    KR_ASSERT_ERR(kr_runtime_gpu_lock(dir, "GPU-x", 0, "gpu", &l, &e), KR_EPERM, e, "is a symbolic link");
    assert_int_equal(l.fd, -1);
    slurp(target, buf, sizeof buf);
    assert_string_equal(buf, "secret\n");
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* …also through the runtime and `kareus gpu reset` / `restore`. */
    kr_gpuctl_fake_config fo = {.uuid = "GPU-x"};
    kr_backend *fake = new_fake(&fo);
    kr_gpu_device_info info;
    assert_int_equal(kr_backend_device_info(fake, 0, &info, &e), KR_OK);
    snprintf(lockf, sizeof lockf, "%s/kareus-gpu-%s.lock", dir, info.uuid);
    assert_int_equal(symlink(target, lockf), 0);
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_varied);
    warnings w = {0};
    kr_runtime_config o = test_options(fake, &w, dir);
    kr_runtime *rt;
    KR_ASSERT_ERR(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_EPERM, e, "symbolic link");
    char cmd[4000];
    snprintf(cmd, sizeof cmd, "'%s' gpu reset --backend fake:uuid=GPU-x --lock-dir '%s' >/dev/null 2>&1", KR_CLI, dir);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) != 0);
    snprintf(cmd, sizeof cmd, "'%s' gpu restore --backend fake:uuid=GPU-x --lock-dir '%s' >/dev/null 2>&1", KR_CLI,
             dir);
    rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) != 0);
    slurp(target, buf, sizeof buf);
    assert_string_equal(buf, "secret\n");
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* A file that is not a Kareus lock: refused, byte-identical. */
    unlink(lockf);
    kr_test_write(lockf, "my notes, not a lock\n");
    assert_int_equal(chmod(lockf, 0640), 0);
    KR_ASSERT_ERR(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_EPERM, e, "not a Kareus lock file");
    slurp(lockf, buf, sizeof buf);
    assert_string_equal(buf, "my notes, not a lock\n");
    assert_int_equal(stat(lockf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    /* A hard link to another file: refused. */
    unlink(lockf);
    assert_int_equal(link(target, lockf), 0);
    KR_ASSERT_ERR(kr_runtime_gpu_lock(dir, info.uuid, 0, "gpu", &l, &e), KR_EPERM, e, "one link");
    slurp(target, buf, sizeof buf);
    assert_string_equal(buf, "secret\n");
    /* An earlier version's lock (a pid, mode 0666) is recognised and tightened to 0644. */
    unlink(lockf);
    kr_test_write(lockf, "12345\n");
    assert_int_equal(chmod(lockf, 0666), 0);
    assert_int_equal(kr_runtime_gpu_lock(dir, info.uuid, 0, "gpu", &l, &e), KR_OK);
    assert_int_equal(l.prev_pid, 12345);
    assert_int_equal(stat(lockf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    kr_runtime_gpu_unlock(&l);
    kr_plan_free(&plan);
    kr_backend_destroy(fake);
}

static void default_lock_dir_is_private(void **state)
{
    (void)state;
    char dir[512];
    kr_error e = {0};
    assert_int_equal(kr_runtime_lock_dir(dir, sizeof dir, &e), KR_OK);
    struct stat st;
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 0022, 0); /* nobody else can plant a file there */
    if (geteuid() == 0)
        assert_string_equal(dir, "/run/kareus");
}

/* ---- through the clock helper ------------------------------------------------------------------ */

/* These run the runtime through a backend named by KR_TEST_HELPER — tests/cli/test_kareusd_cli.sh
 * sets it to "kareusd:SOCKET" of a kareusd (root) serving a fake GPU whose clocks live in the
 * state file KR_TEST_HELPER_STATE, and runs them as the user nobody. The state file is the
 * witness: the test reads the GPU's clocks there, never from the helper it is testing. Without
 * those variables the tests skip, saying so. */
typedef struct helper_env {
    const char *spec;
    const char *state;
} helper_env;

static helper_env helper_or_skip(void)
{
    helper_env h = {getenv("KR_TEST_HELPER"), getenv("KR_TEST_HELPER_STATE")};
    if (h.spec == NULL || h.state == NULL)
        KR_SKIP("KR_TEST_HELPER / KR_TEST_HELPER_STATE unset (tests/cli/test_kareusd_cli.sh runs these through kareusd)");
    return h;
}

/* Device dev's lock and clock in the fake's state file ("DEV MIN MAX CUR" lines). */
static void helper_state(const helper_env *h, int dev, int *lmin, int *lmax, int *cur)
{
    *lmin = *lmax = *cur = -1;
    FILE *f = fopen(h->state, "r");
    assert_non_null(f);
    int d, a, b, c, found = 0;
    while (fscanf(f, "%d %d %d %d", &d, &a, &b, &c) == 4)
        if (d == dev) {
            *lmin = a, *lmax = b, *cur = c;
            found = 1;
        }
    fclose(f);
    assert_true(found);
}

/* Waits up to 20 s (a loaded machine, a sanitizer build) until device 0 is locked at
 * [lmin, lmax]; returns the milliseconds it took, or -1. */
static double helper_wait_lock(const helper_env *h, int lmin, int lmax)
{
    double t0 = kr__now_s();
    for (int i = 0; i < 20000; i++) {
        int a, b, c;
        helper_state(h, 0, &a, &b, &c);
        if (a == lmin && b == lmax)
            return (kr__now_s() - t0) * 1e3;
        usleep(1000);
    }
    return -1;
}

static kr_runtime_config helper_options(const helper_env *h, warnings *w, const char *lockdir, unsigned flags)
{
    kr_runtime_config o = {0};
    o.backend = h->spec;
    o.flags = flags;
    o.lock_dir = lockdir;
    o.energy_poll_s = -1;
    o.warn = on_warn;
    o.warn_ud = w;
    return o;
}

/* The plan applied instruction by instruction through the helper (the GPU at each planned clock
 * once the worker has acted), energy read through it, and the found lock back at close. */
static void helper_applies_plan_and_restores(void **state)
{
    (void)state;
    helper_env h = helper_or_skip();
    int lmin, lmax, cur;
    helper_state(&h, 0, &lmin, &lmax, &cur);
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_varied);
    warnings w = {0};
    kr_runtime_config o = helper_options(&h, &w, kr_test_tmpdir("rt_helper_apply"), KR_RUNTIME_NO_SIGNALS | KR_RUNTIME_NO_ATEXIT);
    kr_runtime *rt;
    kr_error e = {0};
    assert_int_equal(kr_runtime_open_plan(&plan, 1, 0, &o, &rt, &e), KR_OK);
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    assert_string_equal(st.backend, "kareusd");
    assert_int_equal(st.mode, KR_RUNTIME_CONTROL);
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < plan.stages[1].ninstr; i++) {
            const kr_plan_instr *in = &plan.stages[1].instr[i];
            assert_int_equal(kr_runtime_instruction_begin(rt, in->kind, in->microbatch, in->chunk, &e), KR_OK);
            assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
            int a, b, c;
            helper_state(&h, 0, &a, &b, &c);
            assert_int_equal(a, in->freq_mhz);
            assert_int_equal(b, in->freq_mhz);
            assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
        }
        assert_int_equal(kr_runtime_step_end(rt, &e), KR_OK);
    }
    assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
    kr_runtime_energy en;
    kr_runtime_energy_get(rt, &en, NULL, 0);
    assert_int_equal(en.available, 1);
    kr_runtime_status_get(rt, &st);
    assert_int_equal(st.mode, KR_RUNTIME_CONTROL); /* nothing degraded on the way */
    assert_int_equal(w.count[1] + w.count[2] + w.count[3] + w.count[4], 0);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    int a, b, c;
    helper_state(&h, 0, &a, &b, &c);
    assert_int_equal(a, lmin);
    assert_int_equal(b, lmax);
    kr_plan_free(&plan);
}

/* A job that dies holding a plan clock — by a signal the runtime handles (SIGTERM, SIGHUP), by
 * one it cannot (SIGKILL), or by _exit (no atexit) — leaves the GPU at the clocks found: the
 * runtime's handler restores, or the helper does when the connection drops. */
static void helper_restores_after_any_death(void **state)
{
    (void)state;
    helper_env h = helper_or_skip();
    int lmin, lmax, cur;
    helper_state(&h, 0, &lmin, &lmax, &cur);
    const char *dir = kr_test_tmpdir("rt_helper_death");
    static const int deaths[] = {SIGTERM, SIGHUP, SIGKILL, 0 /* _exit */};
    /* The children inherit the dispositions: a harness that ignores SIGHUP (nohup) would leave
     * the SIGHUP child alive (the runtime keeps an ignored signal ignored) and this test waiting
     * for it forever. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    for (size_t k = 0; k < sizeof deaths / sizeof deaths[0]; k++) {
        warnings w = {0};
        kr_runtime_config o = helper_options(&h, &w, dir, 0);
        pid_t pid = fork_clock_child(NULL, &o, deaths[k] == 0);
        if (deaths[k] != 0) {
            int a, b, cu;
            helper_state(&h, 0, &a, &b, &cu);
            assert_int_equal(b, freq_varied(KR_INSTR_FORWARD, 0)); /* the job holds its plan clock */
            assert_int_equal(kill(pid, deaths[k]), 0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        double ms = helper_wait_lock(&h, lmin, lmax);
        printf("helper: %s: found lock [%d, %d] MHz back after %.1f ms\n",
               deaths[k] ? strsignal(deaths[k]) : "_exit", lmin, lmax, ms);
        assert_true(ms >= 0);
    }
}

/* A plan clock the GPU supports but the helper does not allow (below its configured range, 600
 * MHz in tests/cli/test_kareusd_cli.sh): the helper refuses the lock, the runtime falls back to
 * measuring with one warning that gives the helper's reason, and the GPU stays as found. */
static void helper_refuses_clocks_outside_its_range(void **state)
{
    (void)state;
    helper_env h = helper_or_skip();
    int lmin, lmax, cur;
    helper_state(&h, 0, &lmin, &lmax, &cur);
    kr_plan plan;
    make_plan(&plan, 2, 4, freq_same);
    plan.stages[0].instr[0].freq_mhz = 510;
    warnings w = {0};
    kr_runtime_config o = helper_options(&h, &w, kr_test_tmpdir("rt_helper_range"), KR_RUNTIME_NO_SIGNALS | KR_RUNTIME_NO_ATEXIT);
    kr_runtime *rt;
    kr_error e = {0};
    assert_int_equal(kr_runtime_open_plan(&plan, 0, 0, &o, &rt, &e), KR_OK);
    for (int i = 0; i < plan.stages[0].ninstr; i++) {
        const kr_plan_instr *in = &plan.stages[0].instr[i];
        assert_int_equal(kr_runtime_instruction_begin(rt, in->kind, in->microbatch, in->chunk, &e), KR_OK);
        assert_int_equal(kr_runtime_sync(rt, 0, &e), KR_OK);
        assert_int_equal(kr_runtime_instruction_end(rt, &e), KR_OK);
    }
    assert_int_equal(kr_runtime_step_end(rt, &e), KR_OK);
    kr_runtime_status st;
    kr_runtime_status_get(rt, &st);
    printf("helper: a 510 MHz instruction: %s\n", st.reason);
    assert_int_equal(st.degraded, 1);
    assert_int_equal(st.mode, KR_RUNTIME_MEASURE_ONLY);
    assert_non_null(strstr(st.reason, "510"));
    assert_int_equal(w.count[KR_RUNTIME_WARN_DEGRADED], 1);
    int a, b, c;
    helper_state(&h, 0, &a, &b, &c);
    assert_int_equal(a, lmin);
    assert_int_equal(b, lmax);
    assert_int_equal(kr_runtime_close(rt, &e), KR_OK);
    kr_plan_free(&plan);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(applies_plan_in_order),
    cmocka_unit_test(comm_configs),
    cmocka_unit_test(runs_on_the_simulator),
    cmocka_unit_test(coalesces_and_latest_request_wins),
    cmocka_unit_test(every_nth_call_failure_is_survived),
    cmocka_unit_test(unprivileged_user_measures_only),
    cmocka_unit_test(allocation_failures_on_open),
    cmocka_unit_test(refuses_plans_that_do_not_fit),
    cmocka_unit_test(schedule_mismatches_at_run_time),
    cmocka_unit_test(second_open_is_refused_or_read_only),
    cmocka_unit_test(sigterm_restores_clocks),
    cmocka_unit_test(sigint_chains_to_previous_handler),
    cmocka_unit_test(exit_restores_clocks),
    cmocka_unit_test(forked_child_leaves_parent_clocks_alone),
    cmocka_unit_test(energy_windows_on_a_manual_clock),
    cmocka_unit_test(energy_counter_failure_warns_once),
    cmocka_unit_test(more_signals_restore_clocks),
    cmocka_unit_test(sigkill_leaves_a_record_that_restores),
    cmocka_unit_test(hostile_lock_files_are_left_alone),
    cmocka_unit_test(default_lock_dir_is_private),
    cmocka_unit_test(helper_applies_plan_and_restores),
    cmocka_unit_test(helper_restores_after_any_death),
    cmocka_unit_test(helper_refuses_clocks_outside_its_range),
};

KR_TEST_MAIN(tests)
