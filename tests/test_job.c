/*
 * test_job.c — job specs: the default job, the paper suite, JSON loading with precise errors
 * for every kind of bad input, writing and reading back, derived quantities.
 */
#include "testutil.h"

#include "kareus/job.h"

#include <math.h>

#include "format_check.h"

static void default_job_is_the_reference_configuration(void **state)
{
    (void)state;
    kr_job j;
    kr_job_default(&j);
    kr_error e = {0};
    assert_int_equal(kr_job_validate(&j, &e), KR_OK);
    assert_string_equal(j.gpu.name, "a100-sxm4-40gb");
    assert_string_equal(j.model.name, "llama3.2-3b");
    assert_int_equal(j.tp, 8);
    assert_int_equal(j.cp, 1);
    assert_int_equal(j.pp, 2);
    assert_int_equal(j.layers_per_stage[0], 15);
    assert_int_equal(j.layers_per_stage[1], 13);
    assert_int_equal(j.microbatch_size, 8);
    assert_int_equal(j.seq_len, 4096);
    assert_int_equal(j.num_microbatches, 8);
    assert_true(j.recompute);
    assert_int_equal(j.cluster.nodes, 2);
    assert_int_equal(kr_job_gpus_total(&j), 16);
    int clocks[64];
    assert_int_equal(kr_job_clocks(&j, clocks, 64), 18);
    assert_int_equal(clocks[0], 1410);
    assert_int_equal(clocks[17], 900);
    assert_int_equal(j.sms_allreduce.n, 10);
    assert_int_equal(j.sms_gather.n, 20);
    assert_true(j.static_power_w == 85.0);
    /* Stage 0 and 1 sit on different nodes: their p2p crosses the inter-node link. */
    assert_true(kr_job_p2p_inter_node(&j, 0));
}

static void paper_suite_has_ten_valid_jobs(void **state)
{
    (void)state;
    const char *const *names;
    int n = kr_job_suite_paper(&names);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        kr_job j;
        kr_error e = {0};
        assert_int_equal(kr_job_builtin(names[i], &j, &e), KR_OK);
        assert_int_equal(kr_job_validate(&j, &e), KR_OK);
        assert_int_equal(j.pp, 2);
        assert_int_equal(kr_job_gpus_total(&j), 16);
    }
    kr_job j;
    kr_error e = {0};
    KR_ASSERT_ERR(kr_job_builtin("nope", &j, &e), KR_ENOTFOUND, e, "unknown built-in job 'nope'");
}

static void minimal_spec_gets_defaults(void **state)
{
    (void)state;
    kr_job j;
    kr_error e = {0};
    assert_int_equal(kr_job_load_text("{\"model\": \"qwen3-1.7b\", \"parallelism\": {\"tp\": 4, \"cp\": 2, \"pp\": 2}}",
                                      "min.json", &j, &e),
                     KR_OK);
    assert_int_equal(j.tp, 4);
    assert_int_equal(j.cp, 2);
    assert_int_equal(j.layers_per_stage[0] + j.layers_per_stage[1], 28);
    assert_int_equal(j.cluster.nodes, 2);
    assert_string_equal(j.gpu.name, "a100-sxm4-40gb");
}

static void write_then_load_round_trips(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("job_roundtrip");
    char path[1200];
    snprintf(path, sizeof path, "%s/job.json", dir);
    kr_job a, b;
    kr_error e = {0};
    assert_int_equal(kr_job_builtin("qwen3-1.7b-cp2tp4-mbs16-s4096", &a, &e), KR_OK);
    a.sms_gather.n = 3;
    a.sms_gather.v[0] = 2;
    a.sms_gather.v[1] = 4;
    a.sms_gather.v[2] = 8;
    a.model.hidden = 2048; /* unchanged; the model stays a catalog entry */
    assert_int_equal(kr_job_write(path, &a, &e), KR_OK);
    assert_int_equal(kr_job_load(path, &b, &e), KR_OK);
    char fa[17], fb[17];
    kr_job_fingerprint(&a, fa);
    kr_job_fingerprint(&b, fb);
    assert_string_equal(fa, fb);
    assert_int_equal(b.sms_gather.n, 3);
    assert_int_equal(b.sms_gather.v[2], 8);
    assert_int_equal(b.microbatch_size, 16);
    assert_string_equal(b.name, a.name);
    /* A custom model is written inline and read back. */
    a.model.layers = 30;
    snprintf(a.model.name, sizeof a.model.name, "custom");
    a.layers_per_stage[0] = 16;
    a.layers_per_stage[1] = 14;
    assert_int_equal(kr_job_write(path, &a, &e), KR_OK);
    assert_int_equal(kr_job_load(path, &b, &e), KR_OK);
    assert_int_equal(b.model.layers, 30);
    assert_string_equal(b.model.name, "custom");
}

/* The job format's description is the writer's table: a written job holds exactly the described
 * fields. A job that differs from the default in every table field reads back equal. */
static void format_description_matches_written_jobs(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("job_format");
    char path[1200];
    snprintf(path, sizeof path, "%s/job.json", dir);
    kr_job a, b;
    kr_error e = {0};
    kr_job_default(&a);
    snprintf(a.name, sizeof a.name, "every-field");
    a.cluster = (kr_cluster){4, 9, 12.5e9, 7e-6};
    a.dp = 2;
    a.microbatch_size = 4;
    a.seq_len = 2048;
    a.num_microbatches = 16;
    a.recompute = 0;
    a.schedule = KR_SCHEDULE_GPIPE;
    a.clock_min_mhz = 1200;
    a.clock_max_mhz = 1380;
    a.clock_step_mhz = 60;
    a.sms_allreduce.n = 2;
    a.sms_allreduce.v[0] = 4;
    a.sms_allreduce.v[1] = 8;
    a.static_power_w = 90.5;
    assert_int_equal(kr_job_validate(&a, &e), KR_OK);
    assert_int_equal(kr_job_write(path, &a, &e), KR_OK);
    fc_check(path, kr_job_format_field);
    assert_int_equal(kr_job_load(path, &b, &e), KR_OK);
    assert_string_equal(b.name, "every-field");
    assert_int_equal(b.cluster.gpus_per_node, 4);
    assert_int_equal(b.cluster.nodes, 9);
    assert_true(b.cluster.inter_node_bw_Bps == 12.5e9);
    assert_true(fabs(b.cluster.inter_node_latency_s - 7e-6) < 1e-18);
    assert_int_equal(b.dp, 2);
    assert_int_equal(b.microbatch_size, 4);
    assert_int_equal(b.seq_len, 2048);
    assert_int_equal(b.num_microbatches, 16);
    assert_int_equal(b.recompute, 0);
    assert_int_equal(b.schedule, KR_SCHEDULE_GPIPE);
    assert_int_equal(b.clock_min_mhz, 1200);
    assert_int_equal(b.clock_max_mhz, 1380);
    assert_int_equal(b.clock_step_mhz, 60);
    assert_int_equal(b.sms_allreduce.n, 2);
    assert_int_equal(b.sms_allreduce.v[1], 8);
    assert_true(b.static_power_w == 90.5);
    kr_field_info f;
    assert_int_equal(kr_job_format_field(-1, &f), KR_ERANGE);
    assert_int_equal(kr_job_format_field(0, &f), KR_OK);
    assert_string_equal(f.path, "schema");
}

static void fingerprint_changes_with_shapes_only(void **state)
{
    (void)state;
    kr_job a, b;
    kr_job_default(&a);
    kr_job_default(&b);
    char fa[17], fb[17];
    b.num_microbatches = 16; /* does not change what a partition measures */
    kr_job_fingerprint(&a, fa);
    kr_job_fingerprint(&b, fb);
    assert_string_equal(fa, fb);
    b.seq_len = 8192;
    kr_job_fingerprint(&b, fb);
    assert_string_not_equal(fa, fb);
}

/* Every bad spec must fail with the right code and a message naming the place. */
static const struct bad_case {
    const char *json;
    int rc;
    const char *needle;
} bad_cases[] = {
    {"{\"parallelism\": {\"tp\": 5}}", KR_EINVAL, "parallelism.tp: expected a divisor of the model's 24 attention heads, found 5"},
    {"{\"parallelism\": {\"tp\": 0}}", KR_ERANGE, "parallelism.tp: expected a positive integer, found 0"},
    {"{\"parallelism\": {\"pp\": -2}}", KR_ERANGE, "parallelism.pp: expected a positive integer, found -2"},
    {"{\"layers_per_stage\": [15, 12]}", KR_EINVAL, "layers_per_stage: expected layers summing to the model's 28, found a sum of 27"},
    {"{\"layers_per_stage\": [28]}", KR_EINVAL, "$.layers_per_stage: expected 2 entries"},
    {"{\"layers_per_stage\": [15, \"13\"]}", KR_EPARSE, "$.layers_per_stage[1]: expected an integer layer count, found string \"13\""},
    {"{\"layers_per_stage\": [29, -1]}", KR_ERANGE, "layers_per_stage[1]: expected a positive integer, found -1"},
    {"{\"gpu\": \"b200\"}", KR_ENOTFOUND, "$.gpu: unknown GPU 'b200'"},
    {"{\"model\": \"gpt-5\"}", KR_ENOTFOUND, "$.model: unknown model 'gpt-5'"},
    {"{\"microbatch_size\": 0}", KR_ERANGE, "microbatch_size: expected a positive integer, found 0"},
    {"{\"seq_len\": -4096}", KR_ERANGE, "seq_len: expected a positive integer, found -4096"},
    {"{\"num_microbatches\": \"8\"}", KR_EPARSE, "$.num_microbatches: expected an integer, found string \"8\""},
    {"{\"seq_len\": 4096.5}", KR_EPARSE, "$.seq_len: expected an integer, found number 4096.5"},
    {"{\"mystery\": 1}", KR_EPARSE, "$.mystery: unknown field"},
    {"{\"parallelism\": {\"tp\": 8, \"ep\": 2}}", KR_EPARSE, "$.parallelism.ep: unknown field"},
    {"{\"cluster\": {\"gpus_per_node\": 4, \"nodes\": 2}}", KR_EINVAL, "expected at least tp*cp*pp*dp = 16 GPUs, found 2 nodes x 4 GPUs = 8"},
    {"{\"cluster\": {\"inter_node_bw_GBps\": 0}}", KR_ERANGE, "$.cluster.inter_node_bw_GBps: expected a number in"},
    {"{\"planning\": {\"clock_max_mhz\": 1500}}", KR_ERANGE, "planning.clock_max_mhz: expected a clock the a100-sxm4-40gb supports (210..1410 step 15), found 1500"},
    {"{\"planning\": {\"clock_min_mhz\": 907}}", KR_ERANGE, "planning.clock_min_mhz: expected a clock the a100-sxm4-40gb supports"},
    {"{\"planning\": {\"clock_step_mhz\": 20}}", KR_ERANGE, "planning.clock_step_mhz: expected a multiple of the GPU's 15 MHz step"},
    {"{\"planning\": {\"sms_allreduce\": [3, 200]}}", KR_ERANGE, "planning.sms_allreduce[1]: expected an SM count in [1, 107], found 200"},
    {"{\"planning\": {\"sms_gather\": [4, 2]}}", KR_ERANGE, "planning.sms_gather[1]: expected strictly ascending SM counts, found 2 after 4"},
    {"{\"planning\": {\"sms_gather\": []}}", KR_ERANGE, "planning.sms_gather: expected at least one SM count, found an empty list"},
    {"{\"planning\": {\"static_power_w\": 900}}", KR_ERANGE, "planning.static_power_w: expected a value in [0, 400)"},
    {"{\"schedule\": \"zb-v\"}", KR_EPARSE, "$.schedule: expected \"1f1b\", \"gpipe\" or \"interleaved-1f1b\", found string \"zb-v\""},
    {"{\"schedule\": \"interleaved-1f1b\", \"virtual_stages\": 2, \"layers_per_stage\": [14, 14], \"num_microbatches\": 7}", KR_EINVAL, "num_microbatches: expected a multiple of pp (2) for interleaved-1f1b, found 7"},
    {"{\"virtual_stages\": 2}", KR_EINVAL, "virtual_stages: expected 1 for schedule 1f1b"},
    {"{\"recompute\": \"selective\"}", KR_EPARSE, "$.recompute: expected \"full\" or \"none\", found string \"selective\""},
    {"{\"model\": {\"name\": \"m\", \"hidden\": 1024, \"ffn\": 4096, \"heads\": 16, \"kv_groups\": 5, \"head_dim\": 64, \"layers\": 4, \"vocab\": 1000}, \"layers_per_stage\": [2, 2]}",
     KR_EINVAL, "model.kv_groups: expected a divisor of heads (16), found 5"},
    {"{\"model\": {\"name\": \"m\", \"hidden\": 1024}}", KR_EPARSE, "$.model.ffn: missing required field"},
    {"{\"seq_len\": 4097, \"parallelism\": {\"tp\": 4, \"cp\": 2}}", KR_EINVAL, "seq_len: expected a multiple of 2*cp = 4"},
    {"{\"schema\": \"kareus.plan\"}", KR_EPARSE, "$.schema: expected \"kareus.job\", found string \"kareus.plan\""},
    {"{\"version\": 2}", KR_ERANGE, "$.version: expected an integer in [1, 1], found integer 2"},
    {"[1, 2]", KR_EPARSE, "bad.json: $: expected an object, found an array of 2"},
    {"{\"gpu\": {\"file\": \"does-not-exist.json\"}}", KR_EIO, "$.gpu.file: "},
    {"{\"parallelism\": {\"tp\": 8}, \"model\": \"llama3.1-8b\", \"layers_per_stage\": [16, 16], \"cluster\": {\"gpus_per_node\": 8}, \"microbatch_size\": 3}",
     KR_OK, NULL},
    {"{ \"seq_len\": 4096, }", KR_EPARSE, "bad.json:1:"},
};

static void bad_specs_get_precise_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        kr_job j;
        kr_error e = {0};
        int rc = kr_job_load_text(bad_cases[i].json, "bad.json", &j, &e);
        if (rc != bad_cases[i].rc || (bad_cases[i].needle && strstr(e.msg, bad_cases[i].needle) == NULL)) {
            print_error("case %zu: %s\n  rc %d (expected %d)\n  message: %s\n  expected to contain: %s\n", i,
                        bad_cases[i].json, rc, bad_cases[i].rc, e.msg, bad_cases[i].needle ? bad_cases[i].needle : "");
            fail();
        }
        if (rc != KR_OK)
            assert_non_null(strstr(e.msg, "bad.json"));
    }
}

static void gpu_file_loads_beside_the_job(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("job_gpu_file");
    char gpath[1200], jpath[1200];
    snprintf(gpath, sizeof gpath, "%s/my.gpu.json", dir);
    snprintf(jpath, sizeof jpath, "%s/job.json", dir);
    kr_test_write(gpath, "{\"schema\": \"kareus.gpu\", \"name\": \"h200-measured\", \"base\": \"h200\", "
                         "\"params\": {\"static_w\": {\"value\": 123, \"source\": \"measured\"}}}");
    kr_test_write(jpath, "{\"gpu\": {\"file\": \"my.gpu.json\"}}");
    kr_job j;
    kr_error e = {0};
    assert_int_equal(kr_job_load(jpath, &j, &e), KR_OK);
    assert_string_equal(j.gpu.name, "h200-measured");
    assert_true(j.gpu.static_w == 123.0);
    assert_true(j.static_power_w == 123.0);
    assert_string_equal(j.gpu.source[KR_GPU_P_static_w], "measured");
    assert_int_equal(j.clock_max_mhz, 1980);
    kr_test_write(gpath, "{\"name\": \"x\", \"base\": \"h200\", \"params\": {\"warp_size\": {\"value\": 32, \"source\": \"s\"}}}");
    KR_ASSERT_ERR(kr_job_load(jpath, &j, &e), KR_EPARSE, e, "$.params.warp_size: unknown GPU parameter");
    kr_test_write(gpath, "{\"name\": \"x\", \"params\": {\"sm_count\": {\"value\": 32, \"source\": \"s\"}}}");
    KR_ASSERT_ERR(kr_job_load(jpath, &j, &e), KR_EPARSE, e, "missing GPU parameter");
}

static void builtin_names_load_as_paths(void **state)
{
    (void)state;
    kr_job j;
    kr_error e = {0};
    assert_int_equal(kr_job_load("qwen3-1.7b-tp8-mbs8-s8192", &j, &e), KR_OK);
    assert_int_equal(j.seq_len, 8192);
    KR_ASSERT_ERR(kr_job_load("no-such-job", &j, &e), KR_ENOTFOUND, e, "not a built-in job name");
    KR_ASSERT_ERR(kr_job_load("/no/such/file.json", &j, &e), KR_EIO, e, "/no/such/file.json: cannot open");
}

static void catalog_lookup_and_clocks(void **state)
{
    (void)state;
    kr_gpu g;
    kr_error e = {0};
    assert_int_equal(kr_catalog_gpu_find("H100", &g, &e), KR_OK);
    assert_string_equal(g.name, "h100-sxm");
    for (int i = 0; i < kr_catalog_gpu_count(); i++) {
        kr_catalog_gpu_at(i, &g);
        for (int p = 0; p < KR_GPU_NPARAMS; p++) {
            if (g.source[p][0] == '\0') {
                print_error("%s: parameter %s has no source\n", g.name, kr_gpu_param(p)->field);
                fail();
            }
        }
        int mhz[256], needed;
        int n = kr_gpu_supported_clocks(&g, mhz, 256, &needed);
        assert_true(n > 50);
        assert_int_equal(mhz[0], (int)g.clock_max_mhz);
        assert_true(kr_gpu_clock_supported(&g, (int)g.plan_min_mhz));
        assert_false(kr_gpu_clock_supported(&g, (int)g.clock_max_mhz + 15));
    }
    kr_model m;
    assert_int_equal(kr_catalog_model_find("Llama-3.1-70B", &m, &e), KR_OK);
    assert_int_equal(m.layers, 80);
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(default_job_is_the_reference_configuration),
    cmocka_unit_test(paper_suite_has_ten_valid_jobs),
    cmocka_unit_test(minimal_spec_gets_defaults),
    cmocka_unit_test(write_then_load_round_trips),
    cmocka_unit_test(format_description_matches_written_jobs),
    cmocka_unit_test(fingerprint_changes_with_shapes_only),
    cmocka_unit_test(bad_specs_get_precise_errors),
    cmocka_unit_test(gpu_file_loads_beside_the_job),
    cmocka_unit_test(builtin_names_load_as_paths),
    cmocka_unit_test(catalog_lookup_and_clocks),
};
KR_TEST_MAIN(tests)
