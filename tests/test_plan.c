/*
 * test_plan.c — plan files: build, write, read back equal, validate against a job (order,
 * clocks, comm keys, slots, fingerprint), precise errors, and the Zeus export.
 */
#include "testutil.h"

#include <math.h>
#include <unistd.h>

#include "kareus/plan.h"
#include "util/util.h"

#include "format_check.h"

/* A plan for job in schedule order with a clock pattern and the kareus comm keys. */
static void make_plan(const kr_job *job, kr_plan *plan)
{
    int counts[KR_MAX_STAGES];
    int len = kr_sched_length(job->num_microbatches, job->virtual_stages);
    for (int s = 0; s < job->pp; s++)
        counts[s] = len;
    kr_error e = {0};
    assert_int_equal(kr_plan_init(plan, job, counts, &e), KR_OK);
    kr_sched_item items[512];
    for (int s = 0; s < job->pp; s++) {
        int n = kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, items, 512, &e);
        assert_int_equal(n, len);
        for (int i = 0; i < n; i++) {
            kr_plan_instr *in = &plan->stages[s].instr[i];
            in->kind = items[i].kind;
            in->microbatch = items[i].microbatch;
            in->chunk = items[i].chunk;
            in->freq_mhz = 1410 - 30 * ((s + i) % 18);
            in->time_s = 0.05 + 0.001 * i;
            in->energy_j = 10.0 + i / 3.0;
            if (in->kind == KR_INSTR_FORWARD) {
                in->ncomm = 2;
                snprintf(in->comm[0].key, KR_KEY_MAX, "fwd_attn");
                snprintf(in->comm[0].slot, KR_SLOT_NAME_MAX, "rope_0");
                in->comm[0].sms = 12;
                snprintf(in->comm[1].key, KR_KEY_MAX, "fwd_mlp");
                snprintf(in->comm[1].slot, KR_SLOT_NAME_MAX, "norm_0");
                in->comm[1].sms = 6;
            } else {
                in->ncomm = 4;
                snprintf(in->comm[0].key, KR_KEY_MAX, "bwd_attn");
                snprintf(in->comm[0].slot, KR_SLOT_NAME_MAX, "attn_0");
                in->comm[0].sms = 9;
                snprintf(in->comm[1].key, KR_KEY_MAX, "bwd_mlp");
                snprintf(in->comm[1].slot, KR_SLOT_NAME_MAX, "activation_0");
                in->comm[1].sms = 30;
                snprintf(in->comm[2].key, KR_KEY_MAX, "fwd_attn");
                snprintf(in->comm[2].slot, KR_SLOT_NAME_MAX, "linear_0");
                in->comm[2].sms = 3;
                in->comm[2].recompute = 1;
                snprintf(in->comm[3].key, KR_KEY_MAX, "fwd_mlp");
                snprintf(in->comm[3].slot, KR_SLOT_NAME_MAX, "norm_0");
                in->comm[3].sms = 3;
                in->comm[3].recompute = 1;
            }
        }
    }
    plan->pred_time_s = 1.2345678901234567;
    plan->pred_energy_j = 12345.678;
    plan->pred_eff_energy_j = 9876.5;
    plan->step = 17;
    plan->unit_time_s = 0.001;
}

static void round_trip_is_exact(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_plan a, b;
    make_plan(&job, &a);
    const char *dir = kr_test_tmpdir("plan_rt");
    char path[1200];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    kr_error e = {0};
    assert_int_equal(kr_plan_write(path, &a, &e), KR_OK);
    assert_int_equal(kr_plan_read(path, &b, &e), KR_OK);
    assert_true(kr_plan_equal(&a, &b));
    assert_int_equal(kr_plan_validate(&b, &job, &e), KR_OK);
    b.stages[1].instr[3].comm[0].sms = 13;
    assert_false(kr_plan_equal(&a, &b));
    kr_plan c;
    assert_int_equal(kr_plan_copy(&c, &a, &e), KR_OK);
    assert_true(kr_plan_equal(&a, &c));
    kr_plan_free(&a);
    kr_plan_free(&b);
    kr_plan_free(&c);
}

static void interleaved_plans_validate(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    job.schedule = KR_SCHEDULE_INTERLEAVED_1F1B;
    job.virtual_stages = 2;
    job.layers_per_stage[0] = 14;
    job.layers_per_stage[1] = 14;
    kr_plan p;
    make_plan(&job, &p);
    kr_error e = {0};
    assert_int_equal(kr_plan_validate(&p, &job, &e), KR_OK);
    p.stages[0].instr[2].chunk = 0;
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e, "stages[0].instructions[2]: expected forward of microbatch 0 (chunk 1)");
    kr_plan_free(&p);
}

static void validation_names_the_wrong_instruction(void **state)
{
    (void)state;
    kr_job job, other;
    kr_job_default(&job);
    kr_plan p;
    kr_error e = {0};
    make_plan(&job, &p);

    p.stages[0].instr[3].microbatch = 5; /* stage 0 runs F0 F1 B0 F2 B1 ... */
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e,
                  "stages[0].instructions[3]: expected forward of microbatch 2 (chunk 0) in 1f1b order, found forward of microbatch 5");
    p.stages[0].instr[3].microbatch = 2;

    p.stages[1].instr[0].freq_mhz = 1417;
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_ERANGE, e, "stages[1].instructions[0].freq_mhz: expected a clock the a100-sxm4-40gb supports");
    p.stages[1].instr[0].freq_mhz = 1410;

    snprintf(p.stages[1].instr[1].comm[1].key, KR_KEY_MAX, "fwd_qkv_ag");
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e, "stages[1].instructions[1].comm: expected a partition key of the job's kareus variant, found 'fwd_qkv_ag'");
    snprintf(p.stages[1].instr[1].comm[1].key, KR_KEY_MAX, "bwd_mlp");

    snprintf(p.stages[0].instr[0].comm[0].slot, KR_SLOT_NAME_MAX, "activation_0");
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e, "expected a slot among {norm_0, linear_0, rope_0, attn_0}, found 'activation_0'");
    snprintf(p.stages[0].instr[0].comm[0].slot, KR_SLOT_NAME_MAX, "rope_0");

    p.stages[0].instr[0].comm[0].sms = 108;
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_ERANGE, e, "expected sms in [1, 107], found 108");
    p.stages[0].instr[0].comm[0].sms = 12;

    p.stages[0].instr[2].comm[2].recompute = 0; /* fwd_attn listed as a backward partition */
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e, "key 'fwd_attn' is a forward partition, expected a backward one here");
    p.stages[0].instr[2].comm[2].recompute = 1;

    p.stages[1].ninstr--; /* last instruction missing */
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EMISMATCH, e, "stages[1]: expected 16 instructions (1f1b, 8 microbatches), found 15 (instructions missing)");
    p.stages[1].ninstr++;
    assert_int_equal(kr_plan_validate(&p, &job, &e), KR_OK);

    assert_int_equal(kr_job_builtin("qwen3-1.7b-tp8-mbs8-s4096", &other, &e), KR_OK);
    KR_ASSERT_ERR(kr_plan_validate(&p, &other, &e), KR_EMISMATCH, e, "plan: job.fingerprint: expected");
    other = job;
    other.num_microbatches = 4;
    KR_ASSERT_ERR(kr_plan_validate(&p, &other, &e), KR_EMISMATCH, e, "plan: job.microbatches: expected 4, found 8");
    kr_plan_free(&p);
}

/* The plan format's description is the writer's table: a plan with every optional field (a
 * bound, recomputed comm settings) is written with exactly the described fields. */
static void format_description_matches_written_plans(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_plan a, b;
    make_plan(&job, &a);
    a.pred_bound_j = 12000.5;
    a.stages[0].instr[0].comm[1].kernel = KR_KERNEL_NCCL; /* the "kernel" field is written for nccl */
    for (int i = 0; i < a.stages[0].ninstr; i++)
        if (a.stages[0].instr[i].kind == KR_INSTR_BACKWARD) {
            a.stages[0].instr[i].comm[2].kernel = KR_KERNEL_NCCL; /* … in recompute[] too */
            break;
        }
    const char *dir = kr_test_tmpdir("plan_format");
    char path[1200];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    kr_error e = {0};
    assert_int_equal(kr_plan_write(path, &a, &e), KR_OK);
    fc_check(path, kr_plan_format_field);
    assert_int_equal(kr_plan_read(path, &b, &e), KR_OK);
    assert_true(kr_plan_equal(&a, &b));
    kr_plan_free(&a);
    kr_plan_free(&b);
    kr_field_info f;
    assert_int_equal(kr_plan_format_field(1000, &f), KR_ERANGE);
}

static void bad_files_get_json_paths(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_plan p;
    make_plan(&job, &p);
    const char *dir = kr_test_tmpdir("plan_bad");
    char path[1200];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    kr_error e = {0};
    assert_int_equal(kr_plan_write(path, &p, &e), KR_OK);
    kr_plan_free(&p);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    struct {
        const char *from, *to, *needle;
        int rc;
    } cases[] = {
        {"\"freq_mhz\": 1410", "\"freq_mhz\": \"fast\"", "$.stages[0].instructions[0].freq_mhz: expected an integer, found string \"fast\"", KR_EPARSE},
        {"\"kind\": \"forward\"", "\"kind\": \"fwd\"", "$.stages[0].instructions[0].kind: expected \"forward\" or \"backward\"", KR_EPARSE},
        {"\"schema\": \"kareus.plan\"", "\"schema\": \"kareus.job\"", "$.schema: expected \"kareus.plan\"", KR_EPARSE},
        {"\"version\": 1", "\"version\": 9", "$.version: expected an integer in [1, 1], found integer 9", KR_ERANGE},
        {"\"sms\": 12", "\"sms\": 12, \"ctas\": 3", "$.stages[0].instructions[0].comm[0].ctas: unknown field", KR_EPARSE},
        {"\"stages\": 2", "\"stages\": 3", "$.stages: expected 3 stages (job.stages), found 2", KR_EMISMATCH},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *hit = strstr(text, cases[i].from);
        assert_non_null(hit);
        size_t pre = (size_t)(hit - text), fl = strlen(cases[i].from), tl = strlen(cases[i].to);
        char *mod = malloc(strlen(text) + tl + 1);
        memcpy(mod, text, pre);
        memcpy(mod + pre, cases[i].to, tl);
        strcpy(mod + pre + tl, hit + fl);
        int rc = kr_plan_read_text(mod, "p.json", &p, &e);
        if (rc != cases[i].rc || strstr(e.msg, cases[i].needle) == NULL) {
            print_error("case %zu: rc %d, message '%s', expected '%s'\n", i, rc, e.msg, cases[i].needle);
            fail();
        }
        free(mod);
    }
    free(text);
    KR_ASSERT_ERR(kr_plan_read("/nonexistent/plan.json", &p, &e), KR_EIO, e, "cannot open");
}

/* The comm kernel (issue 31): "kernel": "nccl" round-trips, a plan without the field (before
 * kernels) reads as tuned, a bad name is refused with its JSON path, only a kareus plan's keys
 * with a collective may run NCCL, and the artifact's files, which cannot say NCCL, are not
 * written for such a plan. */
static void comm_kernel_round_trips_and_is_checked(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_plan p, q;
    make_plan(&job, &p);
    p.stages[1].instr[3].comm[0].kernel = KR_KERNEL_NCCL;
    p.stages[1].instr[3].comm[0].sms = (int)job.gpu.nccl_ctas;
    kr_error e = {0};
    assert_int_equal(kr_plan_validate(&p, &job, &e), KR_OK);
    const char *dir = kr_test_tmpdir("plan_kernel");
    char path[1200];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    assert_int_equal(kr_plan_write(path, &p, &e), KR_OK);
    assert_int_equal(kr_plan_read(path, &q, &e), KR_OK);
    assert_true(kr_plan_equal(&p, &q));
    assert_int_equal(q.stages[1].instr[3].comm[0].kernel, KR_KERNEL_NCCL);
    assert_int_equal(q.stages[0].instr[0].comm[0].kernel, KR_KERNEL_TUNED);
    kr_plan_free(&q);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    /* A plan from before kernels: no field anywhere, every setting tuned. */
    const char *pat = "\"kernel\": \"nccl\"";
    char *hit = strstr(text, pat);
    assert_non_null(hit);
    assert_null(strstr(hit + 1, pat));
    char *old = strdup(text);
    char *from = old + (hit - text), *to = from + strlen(pat);
    while (from > old && from[-1] != ',')
        from--;
    memmove(from - 1, to, strlen(to) + 1); /* drops ',' through the field */
    assert_int_equal(kr_plan_read_text(old, "old.json", &q, &e), KR_OK);
    assert_int_equal(q.stages[1].instr[3].comm[0].kernel, KR_KERNEL_TUNED);
    kr_plan_free(&q);
    free(old);
    char *bad = strdup(text);
    memcpy(bad + (hit - text) + strlen(pat) - 5, "cuda", 4);
    KR_ASSERT_ERR(kr_plan_read_text(bad, "bad.json", &q, &e), KR_EPARSE, e,
                  "$.stages[1].instructions[3].comm[0].kernel: expected \"tuned\" or \"nccl\", found \"cuda\"");
    free(bad);
    free(text);
    /* NCCL on a baseline's plan or a key without a collective. */
    kr__strlcpy(p.variant, "default-overlap", sizeof p.variant);
    KR_ASSERT_ERR(kr_plan_validate(&p, &job, &e), KR_EINVAL, e, "kernel: expected \"tuned\"");
    kr__strlcpy(p.variant, "kareus", sizeof p.variant);
    /* The artifact's files cannot say NCCL: nothing is written. */
    job.recompute = 1;
    const char *adir = kr_test_tmpdir("plan_kernel_artifact");
    char fp[4200], sp[4200];
    KR_ASSERT_ERR(kr_plan_export_artifact(&p, &job, adir, 7, fp, sizeof fp, sp, sizeof sp, &e), KR_EMISMATCH, e,
                  "runs NCCL with 24 CTAs");
    char f7[1300];
    snprintf(f7, sizeof f7, "%s/freqs_pipeline_00007.py", adir);
    assert_int_equal(access(f7, F_OK), -1);
    kr_plan_free(&p);
}

static void zeus_export_layout(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_plan p;
    make_plan(&job, &p);
    const char *dir = kr_test_tmpdir("plan_zeus");
    char path[1200];
    snprintf(path, sizeof path, "%s/freqs_pipeline_00017.py", dir);
    kr_error e = {0};
    assert_int_equal(kr_plan_export_zeus(&p, 8, path, &e), KR_OK);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    /* The artifact's layout: one list per stage of (instruction, MHz) in execution order, each
     * line ending with a comma, then the trailer with energies per GPU (whole cluster / 8). */
    assert_non_null(strstr(text, "[\n[('forward', 1410), ('forward', 1380), ('backward', 1350)"));
    assert_non_null(strstr(text, "],\n[('forward', 1380), ('backward', 1350)"));
    char want[128];
    snprintf(want, sizeof want, "# Iteration %d total cost with P2P: ", p.step >= 0 ? p.step : 0);
    const char *t = strstr(text, want);
    assert_non_null(t);
    assert_true(strtod(t + strlen(want), NULL) == p.pred_energy_j / 8);
    assert_int_equal(kr_plan_export_zeus(&p, 0, path, &e), KR_EINVAL);
    free(text);
    kr_plan_free(&p);
}

/* The real artifact files import, export back to the same lists and trailer energies, and the
 * imported plan validates against its job. */
static void artifact_files_round_trip(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job); /* Llama 3.2 3B, TP 8, PP 2, 8 microbatches: the files' configuration */
    kr_error e = {0};
    kr_plan p;
    const char *freqs = KR_TESTDATA_DIR "/data/artifact/kareus/freqs_pipeline_02495.py";
    const char *scheds = KR_TESTDATA_DIR "/data/artifact/kareus/scheds_pipeline_02495.py";
    assert_int_equal(kr_plan_import_artifact(&job, freqs, scheds, NULL, &p, &e), KR_OK);
    assert_string_equal(p.method, "kareus");
    assert_int_equal(p.step, 2495);
    assert_int_equal(p.stages[0].instr[14].freq_mhz, 1020); /* B6 of stage 0 */
    assert_int_equal(p.stages[0].instr[14].ncomm, 4);
    assert_true(p.pred_energy_j == 2760.8529700808635 * 8);
    assert_true(fabs(p.pred_time_s - (2760.8529700808635 - 2020.8429700808636) / (2 * job.static_power_w)) < 1e-12);
    assert_int_equal(kr_plan_validate(&p, &job, &e), KR_OK);
    const char *dir = kr_test_tmpdir("plan_artifact");
    char fp[4200], sp[4200];
    assert_int_equal(kr_plan_export_artifact(&p, &job, dir, -1, fp, sizeof fp, sp, sizeof sp, &e), KR_OK);
    const char *pairs[2][2] = {{freqs, fp}, {scheds, sp}};
    for (int k = 0; k < 2; k++) {
        char *a, *b;
        assert_int_equal(kr__read_file(pairs[k][0], &a, NULL, &e), KR_OK);
        assert_int_equal(kr__read_file(pairs[k][1], &b, NULL, &e), KR_OK);
        /* Lists identical up to the trailer; the two energy lines identical too. */
        size_t la = (size_t)(strstr(a, "\n#") - a), lb = (size_t)(strstr(b, "\n#") - b);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        for (int t = 0; t < 2; t++) {
            const char *line = t ? "# Iteration 2495 total cost with P2P: " : "# Iteration 2495 total cost: ";
            const char *x = strstr(a, line), *y = strstr(b, line);
            assert_non_null(x);
            assert_non_null(y);
            assert_true(strtod(x + strlen(line), NULL) == strtod(y + strlen(line), NULL));
        }
        free(a);
        free(b);
    }
    kr_plan q;
    assert_int_equal(kr_plan_import_artifact(&job, fp, sp, "kareus", &q, &e), KR_OK);
    assert_true(kr_plan_equal(&p, &q));
    kr_plan_free(&q);
    kr_plan_free(&p);
}

/* Truncations and seeded byte substitutions of a real file never crash the reader: each is
 * either a valid plan or an error naming the file. */
static void artifact_reader_survives_mutations(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    char *text;
    size_t len;
    assert_int_equal(kr__read_file(KR_TESTDATA_DIR "/data/artifact/kareus/scheds_pipeline_02495.py", &text, &len, &e),
                     KR_OK);
    const char *dir = kr_test_tmpdir("plan_artifact_fuzz");
    char path[4200];
    snprintf(path, sizeof path, "%s/scheds_pipeline_02495.py", dir);
    const char *freqs = KR_TESTDATA_DIR "/data/artifact/kareus/freqs_pipeline_02495.py";
    kr__rng r;
    kr__rng_seed(&r, 7);
    static const char alphabet[] = "[](),'\"#\n -_09azx\\";
    int ok = 0, errors = 0;
    for (int it = 0; it < 600; it++) {
        char *m = malloc(len + 1);
        assert_non_null(m);
        memcpy(m, text, len + 1);
        size_t n = len;
        if (it < 200) {
            n = (size_t)kr__rng_below(&r, len + 1); /* a truncation */
        } else {
            for (int k = 0; k < 1 + it % 4; k++)
                m[kr__rng_below(&r, len)] = alphabet[kr__rng_below(&r, sizeof alphabet - 1)];
        }
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(m, 1, n, f);
        fclose(f);
        kr_plan p;
        int rc = kr_plan_import_artifact(&job, freqs, path, NULL, &p, &e);
        if (rc == KR_OK) {
            ok++;
            kr_plan_free(&p);
        } else {
            errors++;
            assert_non_null(strstr(e.msg, "scheds_pipeline_02495.py"));
        }
        free(m);
    }
    assert_true(errors > 0);
    print_message("mutations: %d imported, %d refused with a message naming the file\n", ok, errors);
    free(text);
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(round_trip_is_exact),
    cmocka_unit_test(interleaved_plans_validate),
    cmocka_unit_test(validation_names_the_wrong_instruction),
    cmocka_unit_test(format_description_matches_written_plans),
    cmocka_unit_test(bad_files_get_json_paths),
    cmocka_unit_test(comm_kernel_round_trips_and_is_checked),
    cmocka_unit_test(zeus_export_layout),
    cmocka_unit_test(artifact_files_round_trip),
    cmocka_unit_test(artifact_reader_survives_mutations),
};
KR_TEST_MAIN(tests)
