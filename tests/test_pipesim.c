/*
 * test_pipesim.c — the pipeline simulator against hand-computed timelines on tiny pipelines,
 * idle-time and energy accounting, deadlock detection, and plan costing through a backend.
 */
#include "testutil.h"

#include "kareus/pipesim.h"

/* 2 stages, 2 microbatches, 1F1B; F takes 1 s and 10 J, B takes 2 s and 20 J on both stages. */
static void tiny_input(kr_pipe_input *in, kr_pipe_instr st0[4], kr_pipe_instr st1[4], double p2p)
{
    memset(in, 0, sizeof *in);
    in->schedule = KR_SCHEDULE_1F1B;
    in->stages = 2;
    in->microbatches = 2;
    in->virtual_stages = 1;
    in->gpus_per_stage = 2;
    in->static_power_w = 100;
    in->p2p_time_s[0] = p2p;
    in->p2p_time_s[1] = p2p;
    const kr_pipe_instr f0 = {KR_INSTR_FORWARD, 0, 0, 1410, 1.0, 10.0}, f1 = {KR_INSTR_FORWARD, 1, 0, 1410, 1.0, 10.0};
    const kr_pipe_instr b0 = {KR_INSTR_BACKWARD, 0, 0, 1410, 2.0, 20.0}, b1 = {KR_INSTR_BACKWARD, 1, 0, 1410, 2.0, 20.0};
    /* stage 0: F0 F1 B0 B1; stage 1: F0 B0 F1 B1 */
    st0[0] = f0, st0[1] = f1, st0[2] = b0, st0[3] = b1;
    st1[0] = f0, st1[1] = b0, st1[2] = f1, st1[3] = b1;
    in->ninstr[0] = in->ninstr[1] = 4;
    in->instr[0] = st0;
    in->instr[1] = st1;
}

static void hand_computed_timeline(void **state)
{
    (void)state;
    kr_pipe_input in;
    kr_pipe_instr a[4], b[4];
    tiny_input(&in, a, b, 0.0);
    kr_pipe_result r;
    kr_error e = {0};
    assert_int_equal(kr_pipesim_run(&in, &r, &e), KR_OK);
    /* s0: F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9]; s1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]. */
    double want[2][4][2] = {{{0, 1}, {1, 2}, {4, 6}, {7, 9}}, {{1, 2}, {2, 4}, {4, 5}, {5, 7}}};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 4; i++) {
            const kr_pipe_event *ev = &r.events[s * 4 + i];
            KR_ASSERT_CLOSE(ev->start_s, want[s][i][0], 1e-12);
            KR_ASSERT_CLOSE(ev->end_s, want[s][i][1], 1e-12);
        }
    KR_ASSERT_CLOSE(r.time_s, 9.0, 1e-12);
    KR_ASSERT_CLOSE(r.stage_busy_s[0], 6.0, 1e-12);
    KR_ASSERT_CLOSE(r.stage_idle_s[0], 3.0, 1e-12);
    KR_ASSERT_CLOSE(r.stage_idle_s[1], 3.0, 1e-12);
    /* One GPU: 60 J of work + 100 W × 3 s waiting; 2 GPUs per stage, 2 stages. */
    KR_ASSERT_CLOSE(r.gpu_energy_j[0], 360.0, 1e-12);
    KR_ASSERT_CLOSE(r.energy_j, 4 * 360.0, 1e-12);
    KR_ASSERT_CLOSE(r.compute_energy_j, 4 * 60.0, 1e-12);
    KR_ASSERT_CLOSE(r.eff_energy_j, 1440.0 - 100.0 * 4 * 9.0, 1e-12);
    kr_pipe_result_free(&r);
}

static void p2p_delays_dependent_instructions(void **state)
{
    (void)state;
    kr_pipe_input in;
    kr_pipe_instr a[4], b[4];
    tiny_input(&in, a, b, 0.5);
    kr_pipe_result r;
    kr_error e = {0};
    assert_int_equal(kr_pipesim_run(&in, &r, &e), KR_OK);
    /* s1: F0 [1.5,2.5] B0 [2.5,4.5] F1 ready 2.5 → [4.5,5.5] B1 [5.5,7.5];
     * s0: B0 ready 5.0 → [5,7]; B1 ready 8.0 → [8,10]. */
    KR_ASSERT_CLOSE(r.events[4].start_s, 1.5, 1e-12);
    KR_ASSERT_CLOSE(r.events[4].ready_s, 1.5, 1e-12);
    KR_ASSERT_CLOSE(r.events[6].start_s, 4.5, 1e-12);
    KR_ASSERT_CLOSE(r.events[6].ready_s, 2.5, 1e-12);
    KR_ASSERT_CLOSE(r.events[2].start_s, 5.0, 1e-12);
    KR_ASSERT_CLOSE(r.events[3].start_s, 8.0, 1e-12);
    KR_ASSERT_CLOSE(r.time_s, 10.0, 1e-12);
    KR_ASSERT_CLOSE(r.stage_idle_s[0], 4.0, 1e-12);
    KR_ASSERT_CLOSE(r.stage_idle_s[1], 4.0, 1e-12);
    kr_pipe_result_free(&r);
}

static void deadlocks_and_bad_input_are_reported(void **state)
{
    (void)state;
    kr_pipe_input in;
    kr_pipe_instr a[4], b[4];
    tiny_input(&in, a, b, 0.0);
    /* Stage 1 tries B0 before F0: B0 needs its own stage's F0, which never comes first. */
    kr_pipe_instr t = b[0];
    b[0] = b[1];
    b[1] = t;
    kr_pipe_result r;
    kr_error e = {0};
    KR_ASSERT_ERR(kr_pipesim_run(&in, &r, &e), KR_EINVAL, e, "stage 1 waits at backward of microbatch 0");
    tiny_input(&in, a, b, 0.0);
    b[2] = b[0];
    KR_ASSERT_ERR(kr_pipesim_run(&in, &r, &e), KR_EINVAL, e, "stage 1: forward of microbatch 0 chunk 0 appears twice");
    tiny_input(&in, a, b, 0.0);
    a[1].time_s = -1;
    KR_ASSERT_ERR(kr_pipesim_run(&in, &r, &e), KR_EINVAL, e, "stage 0 instruction 1");
    tiny_input(&in, a, b, 0.0);
    in.ninstr[1] = 3;
    KR_ASSERT_ERR(kr_pipesim_run(&in, &r, &e), KR_EINVAL, e, "stage 1: expected 4 instructions");
}

static void interleaved_chunks_wrap_between_stages(void **state)
{
    (void)state;
    /* S=2, V=2, M=2 with unit costs: every instruction's dependencies are respected. */
    kr_pipe_input in;
    memset(&in, 0, sizeof in);
    in.schedule = KR_SCHEDULE_INTERLEAVED_1F1B;
    in.stages = 2;
    in.microbatches = 2;
    in.virtual_stages = 2;
    in.gpus_per_stage = 1;
    in.static_power_w = 50;
    kr_pipe_instr st[2][8];
    kr_sched_item items[8];
    kr_error e = {0};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(kr_sched_order(KR_SCHEDULE_INTERLEAVED_1F1B, 2, 2, 2, s, items, 8, &e), 8);
        for (int i = 0; i < 8; i++) {
            st[s][i] = (kr_pipe_instr){items[i].kind, items[i].microbatch, items[i].chunk, 1000,
                                       items[i].kind == KR_INSTR_FORWARD ? 1.0 : 2.0, 1.0};
        }
        in.ninstr[s] = 8;
        in.instr[s] = st[s];
    }
    kr_pipe_result r;
    assert_int_equal(kr_pipesim_run(&in, &r, &e), KR_OK);
    /* F(stage 0, mb 0, chunk 1) must start after F(stage 1, mb 0, chunk 0) ends. */
    double f10_end = -1, f01_start = -1;
    for (int i = 0; i < r.nevents; i++) {
        const kr_pipe_event *ev = &r.events[i];
        if (ev->stage == 1 && ev->kind == KR_INSTR_FORWARD && ev->microbatch == 0 && ev->chunk == 0)
            f10_end = ev->end_s;
        if (ev->stage == 0 && ev->kind == KR_INSTR_FORWARD && ev->microbatch == 0 && ev->chunk == 1)
            f01_start = ev->start_s;
    }
    assert_true(f10_end > 0 && f01_start >= f10_end);
    kr_pipe_result_free(&r);
}

/* ---- plan costing through a backend ---------------------------------------------------- */

/* A synthetic backend: time = (GFLOP / 200 + comm MB / 100 ms) × 1410 / f, power 250 W. It
 * records how many measurements it served. */
typedef struct synth {
    int calls;
} synth;

static const kr_backend_class synth_class;

static int synth_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    synth *s = kr_backend_state(b, &synth_class);
    s->calls++;
    double t = (kr_partition_flops(p) / 200e12 + p->coll.bytes / 100e9) * 1410.0 / c->freq_mhz;
    if (p->coll.kind != KR_COLL_NONE && c->slot >= 0)
        t *= 0.9; /* overlap helps a little */
    memset(out, 0, sizeof *out);
    out->time_s = t;
    out->energy_j = 250.0 * t;
    out->eff_energy_j = out->energy_j - 85.0 * t;
    out->repeats = 1;
    return KR_OK;
}

static const kr_measure_ops synth_measure_ops = {synth_measure};
static const kr_backend_class synth_class = {.name = "synth", .caps = KR_BACKEND_MEASURE, .measure = &synth_measure_ops};

static void make_plan(const kr_job *job, const char *variant, int freq_fwd, int freq_bwd, kr_plan *plan)
{
    int counts[KR_MAX_STAGES];
    int len = kr_sched_length(job->num_microbatches, 1);
    for (int s = 0; s < job->pp; s++)
        counts[s] = len;
    kr_error e = {0};
    assert_int_equal(kr_plan_init(plan, job, counts, &e), KR_OK);
    snprintf(plan->variant, sizeof plan->variant, "%s", variant);
    kr_sched_item items[256];
    for (int s = 0; s < job->pp; s++) {
        kr_sched_order(job->schedule, job->pp, job->num_microbatches, 1, s, items, 256, &e);
        for (int i = 0; i < len; i++) {
            kr_plan_instr *in = &plan->stages[s].instr[i];
            in->kind = items[i].kind;
            in->microbatch = items[i].microbatch;
            in->freq_mhz = in->kind == KR_INSTR_FORWARD ? freq_fwd : freq_bwd;
            if (strcmp(variant, "kareus") != 0)
                continue;
            const char *keys[] = {"fwd_attn", "fwd_mlp", "bwd_attn", "bwd_mlp", "fwd_attn", "fwd_mlp"};
            int n = in->kind == KR_INSTR_FORWARD ? 2 : 4;
            for (int k = 0; k < n; k++) {
                kr_comm_setting *cs = &in->comm[in->ncomm++];
                int idx = in->kind == KR_INSTR_FORWARD ? k : k + 2;
                snprintf(cs->key, sizeof cs->key, "%s", keys[idx]);
                snprintf(cs->slot, sizeof cs->slot, "norm_0");
                cs->sms = 12;
                cs->recompute = idx >= 4;
            }
        }
    }
}

static void plan_costs_sum_partitions_and_layers(void **state)
{
    (void)state;
    synth s = {0};
    kr_backend *b;
    assert_int_equal(kr_backend_create(&synth_class, &s, &b), KR_OK);
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    double t0, e0, t1, e1;
    /* Sequential forward on stage 1 at 1410: 13 layers × (fwd_attn + fwd_mlp) + LM head + loss. */
    assert_int_equal(kr_pipesim_instruction_cost(&job, KR_VARIANT_SEQUENTIAL, 1, KR_INSTR_FORWARD, 0, 1410, NULL, 0, b,
                                                 &t0, &e0, &e),
                     KR_OK);
    kr_partition_set set, np;
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_SEQUENTIAL, &set, &e), KR_OK);
    assert_int_equal(kr_partition_nonpartition(&job, 1, 0, &np, &e), KR_OK);
    double want = 0;
    for (int i = 0; i < set.n; i++)
        if (!set.p[i].backward)
            want += 13 * (kr_partition_flops(&set.p[i]) / 200e12 + set.p[i].coll.bytes / 100e9);
    for (int i = 0; i < np.n; i++)
        want += kr_partition_flops(&np.p[i]) / 200e12 + np.p[i].coll.bytes / 100e9;
    KR_ASSERT_CLOSE(t0, want, 1e-12);
    KR_ASSERT_CLOSE(e0, 250.0 * want, 1e-12);
    /* Half the clock: twice the time in this synthetic model. */
    assert_int_equal(kr_pipesim_instruction_cost(&job, KR_VARIANT_SEQUENTIAL, 1, KR_INSTR_FORWARD, 0, 705, NULL, 0, b,
                                                 &t1, &e1, &e),
                     KR_OK);
    KR_ASSERT_CLOSE(t1, 2 * t0, 1e-12);

    /* A whole plan: the kareus variant needs every key's comm config. */
    kr_plan plan;
    make_plan(&job, "kareus", 1410, 1200, &plan);
    kr_pipe_result r;
    kr_pipesim_config nosettle = {.no_settle = 1};
    assert_int_equal(kr_pipesim_plan(&job, &plan, b, &nosettle, &r, &e), KR_OK);
    assert_int_equal(r.nevents, 32);
    assert_true(r.time_s > 0 && r.energy_j > r.compute_energy_j);
    /* With the settle window, every clock change costs some time at the old clock. */
    kr_pipe_result r2;
    assert_int_equal(kr_pipesim_plan(&job, &plan, b, NULL, &r2, &e), KR_OK);
    assert_true(r2.time_s != r.time_s);
    kr_pipe_result_free(&r);
    kr_pipe_result_free(&r2);
    plan.stages[0].instr[0].ncomm = 1; /* fwd_mlp config missing */
    KR_ASSERT_ERR(kr_pipesim_plan(&job, &plan, b, NULL, &r, &e), KR_EMISMATCH, e,
                  "stage 0 forward: the plan gives no comm config for partition fwd_mlp");
    kr_plan_free(&plan);
    /* Sequential baseline plan at max clock: no comm entries needed. */
    make_plan(&job, "sequential", 1410, 1410, &plan);
    assert_int_equal(kr_pipesim_plan(&job, &plan, b, NULL, &r, &e), KR_OK);
    kr_pipe_result_free(&r);
    kr_plan_free(&plan);
    kr_backend_destroy(b);
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(hand_computed_timeline),
    cmocka_unit_test(p2p_delays_dependent_instructions),
    cmocka_unit_test(deadlocks_and_bad_input_are_reported),
    cmocka_unit_test(interleaved_chunks_wrap_between_stages),
    cmocka_unit_test(plan_costs_sum_partitions_and_layers),
};
KR_TEST_MAIN(tests)
