/* test_launch.c — rank coordinates, stages and GPUs of launched ranks (launch.h): torchrun and
 * Slurm variables, Megatron's default order and another order, CUDA_VISIBLE_DEVICES as indices,
 * UUIDs (full, prefix, legacy MIG) and per-task binding, and every mismatch with its message. */
#include "testutil.h"

#include "kareus/gpuctl.h"
#include "kareus/launch.h"

static int resolve(const char *const *env, int tp, int cp, int plan_stages, kr_launch *l, kr_error *e)
{
    kr_launch_config o = {.tp = tp, .cp = cp, .plan_stages = plan_stages, .env = env};
    memset(e, 0, sizeof *e);
    return kr_launch_resolve(&o, l, e);
}

static void expect_error(const char *const *env, int tp, int cp, int plan_stages, int code, const char *needle)
{
    kr_launch l;
    kr_error e;
    int rc = resolve(env, tp, cp, plan_stages, &l, &e);
    if (rc != code || strstr(e.msg, needle) == NULL)
        fail_msg("expected %s with '%s', got %s: %s", kr_status_name(code), needle, kr_status_name(rc), e.msg);
}

/* PP 2 × TP 2 under torchrun: Megatron order puts TP fastest, so ranks 0,1 are stage 0. */
static void torchrun_tp_fastest(void **state)
{
    (void)state;
    const int want_tp[4] = {0, 1, 0, 1}, want_pp[4] = {0, 0, 1, 1};
    for (int r = 0; r < 4; r++) {
        char rank[32], local[32];
        snprintf(rank, sizeof rank, "RANK=%d", r);
        snprintf(local, sizeof local, "LOCAL_RANK=%d", r);
        const char *env[] = {rank, "WORLD_SIZE=4", local, "LOCAL_WORLD_SIZE=4", NULL};
        kr_launch l;
        kr_error e;
        assert_int_equal(resolve(env, 2, 1, 2, &l, &e), KR_OK);
        assert_int_equal(l.launcher, KR_LAUNCHER_TORCHRUN);
        assert_int_equal(l.tp, 2);
        assert_int_equal(l.pp, 2);
        assert_int_equal(l.dp, 1);
        assert_int_equal(l.tp_rank, want_tp[r]);
        assert_int_equal(l.stage, want_pp[r]);
        assert_int_equal(l.local_device, r);
        assert_int_equal(l.visible_count, -1);
    }
    /* 16 ranks, tp 2, cp 2, pp 2 → dp 2; rank 13 = 1 + 2·(0 + 2·(1 + 2·1)): tp 1, cp 0, dp 1, pp 1. */
    const char *env[] = {"RANK=13", "WORLD_SIZE=16", "LOCAL_RANK=5", "LOCAL_WORLD_SIZE=8", NULL};
    kr_launch l;
    kr_error e;
    assert_int_equal(resolve(env, 2, 2, 2, &l, &e), KR_OK);
    assert_int_equal(l.dp, 2);
    assert_int_equal(l.tp_rank, 1);
    assert_int_equal(l.cp_rank, 0);
    assert_int_equal(l.dp_rank, 1);
    assert_int_equal(l.pp_rank, 1);
    /* Another order: pp fastest. */
    kr_launch_config o = {.tp = 2, .cp = 2, .pp = 2, .order = "pp,tp,cp,dp", .env = env};
    assert_int_equal(kr_launch_resolve(&o, &l, &e), KR_OK);
    assert_int_equal(l.pp_rank, 1); /* 13 % 2 */
    assert_int_equal(l.tp_rank, 0); /* 6 % 2 */
    assert_int_equal(l.cp_rank, 1); /* 3 % 2 */
    assert_int_equal(l.dp_rank, 1); /* 1 % 2 */
    o.order = "tp-cp-pp";
    assert_int_equal(kr_launch_resolve(&o, &l, &e), KR_EINVAL);
    assert_non_null(strstr(e.msg, "expected each of tp, cp, dp, pp once"));
}

static void slurm_variables(void **state)
{
    (void)state;
    const char *env[] = {"SLURM_PROCID=6", "SLURM_NTASKS=8", "SLURM_LOCALID=2", "SLURM_TASKS_PER_NODE=4(x2)",
                         "SLURM_NODEID=1", NULL};
    kr_launch l;
    kr_error e;
    assert_int_equal(resolve(env, 2, 1, 2, &l, &e), KR_OK);
    assert_int_equal(l.launcher, KR_LAUNCHER_SLURM);
    assert_int_equal(l.local_world_size, 4);
    assert_int_equal(l.dp, 2);
    assert_int_equal(l.tp_rank, 0);
    assert_int_equal(l.dp_rank, 1);
    assert_int_equal(l.stage, 1);
    const char *env2[] = {"SLURM_PROCID=7", "SLURM_NTASKS=7", "SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=4", NULL};
    expect_error(env2, 1, 1, 0, KR_ERANGE, "SLURM_PROCID: expected 0..6 (SLURM_NTASKS=7), found 7");
    /* The step's layout wins over the allocation's: 3 tasks on node 1 of this step. */
    const char *envs[] = {"SLURM_PROCID=5", "SLURM_NTASKS=6", "SLURM_LOCALID=2", "SLURM_TASKS_PER_NODE=4(x2)",
                          "SLURM_STEP_TASKS_PER_NODE=3(x2)", "SLURM_NODEID=1", NULL};
    assert_int_equal(resolve(envs, 1, 1, 0, &l, &e), KR_OK);
    assert_int_equal(l.local_world_size, 3);
    const char *env3[] = {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_TASKS_PER_NODE=4(2)", NULL};
    expect_error(env3, 1, 1, 0, KR_EPARSE, "SLURM_TASKS_PER_NODE: expected counts such as '4(x2),3', found '4(2)'");
    const char *env4[] = {"SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", NULL};
    expect_error(env4, 1, 1, 0, KR_EPARSE, "cannot tell how many ranks share this node");
    /* torchrun inside a Slurm allocation: torchrun's variables win. */
    const char *env5[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=1",
                          "RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4", NULL};
    assert_int_equal(resolve(env5, 2, 1, 2, &l, &e), KR_OK);
    assert_int_equal(l.launcher, KR_LAUNCHER_TORCHRUN);
    assert_int_equal(l.rank, 3);
    /* No launcher: one process. */
    const char *env6[] = {NULL};
    assert_int_equal(resolve(env6, 0, 0, 1, &l, &e), KR_OK);
    assert_int_equal(l.launcher, KR_LAUNCHER_NONE);
    assert_int_equal(l.world_size, 1);
    assert_int_equal(l.stage, 0);
}

static void bad_geometry(void **state)
{
    (void)state;
    const char *env[] = {"RANK=1", "WORLD_SIZE=6", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=6", NULL};
    expect_error(env, 4, 1, 0, KR_EMISMATCH,
                 "world size 6 is not a multiple of tp×cp×dp = 4×1×1 = 4, so pp cannot be derived");
    const char *env2[] = {"RANK=x", "WORLD_SIZE=4", NULL};
    expect_error(env2, 1, 1, 0, KR_EPARSE, "RANK: expected a non-negative integer, found 'x'");
    const char *env3[] = {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=4", "LOCAL_WORLD_SIZE=4", NULL};
    expect_error(env3, 1, 1, 0, KR_ERANGE, "LOCAL_RANK: expected 0..3 (4 ranks on this node), found 4");
    /* A stage outside the plan: 8 ranks with pp 4 given, but the plan has 2 stages. */
    const char *env4[] = {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=5", "LOCAL_WORLD_SIZE=8", NULL};
    kr_launch_config o = {.tp = 2, .pp = 4, .plan_stages = 2, .env = env4};
    kr_launch l;
    kr_error e = {0};
    assert_int_equal(kr_launch_resolve(&o, &l, &e), KR_ERANGE);
    assert_non_null(
        strstr(e.msg, "rank 5 is pipeline stage 2 (pp 4, order tp-cp-dp-pp), but the plan has 2 stages (0..1)"));
    /* pp from the plan: 8 ranks, tp 2, plan of 2 stages → dp 2. */
    o.pp = 0;
    assert_int_equal(kr_launch_resolve(&o, &l, &e), KR_OK);
    assert_int_equal(l.dp, 2);
    assert_int_equal(l.stage, 1);
}

static kr_backend *fake4(void)
{
    kr_gpuctl_fake_config fo = {.devices = 4, .uuid = "GPU-5a1e"};
    kr_backend *b = NULL;
    kr_error e = {0};
    assert_int_equal(kr_gpuctl_fake_create(&fo, &b, &e), KR_OK);
    return b; /* device d has UUID GPU-5a1e-d */
}

static int device_of(const char *const *env, kr_backend *b, int *dev, kr_error *e)
{
    kr_launch l;
    memset(e, 0, sizeof *e);
    int rc = resolve(env, 2, 1, 2, &l, e);
    return rc ? rc : kr_launch_device(&l, b, dev, NULL, e);
}

static void visible_indices_and_uuids(void **state)
{
    (void)state;
    kr_backend *b = fake4();
    kr_error e;
    int dev = -1;
    /* Unset: local rank = device. */
    const char *e0[] = {"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4", NULL};
    assert_int_equal(device_of(e0, b, &dev, &e), KR_OK);
    assert_int_equal(dev, 2);
    /* Indices: local rank 1 uses the second entry, 3. */
    const char *e1[] = {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=2,3,0,1",
                        NULL};
    assert_int_equal(device_of(e1, b, &dev, &e), KR_OK);
    assert_int_equal(dev, 3);
    /* UUIDs, full and as a unique prefix, in a shuffled order. */
    const char *e2[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=GPU-5a1e-1,GPU-5a1e-0,GPU-5a1e-3,GPU-5a1e-2", NULL};
    assert_int_equal(device_of(e2, b, &dev, &e), KR_OK);
    assert_int_equal(dev, 1);
    const char *e3[] = {"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=1,0,3,GPU-5a1e-2", NULL};
    assert_int_equal(device_of(e3, b, &dev, &e), KR_OK);
    assert_int_equal(dev, 2);
    /* Legacy MIG form names its parent GPU. */
    const char *e4[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=MIG-GPU-5a1e-3/1/0,0,1,2", NULL};
    assert_int_equal(device_of(e4, b, &dev, &e), KR_OK);
    assert_int_equal(dev, 3);
    /* Per-task binding: one visible GPU per rank (srun --gpu-bind), local device 0. */
    const char *e5[] = {"SLURM_PROCID=2", "SLURM_NTASKS=4", "SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=4",
                        "CUDA_VISIBLE_DEVICES=GPU-5a1e-2", NULL};
    kr_launch l;
    assert_int_equal(resolve(e5, 2, 1, 2, &l, &e), KR_OK);
    assert_int_equal(l.per_task_binding, 1);
    assert_int_equal(l.local_device, 0);
    kr_gpu_device_info info;
    assert_int_equal(kr_launch_device(&l, b, &dev, &info, &e), KR_OK);
    assert_int_equal(dev, 2);
    assert_string_equal(info.uuid, "GPU-5a1e-2");
    kr_backend_destroy(b);
}

static void visible_mismatches(void **state)
{
    (void)state;
    kr_backend *b = fake4();
    kr_error e;
    int dev;
    /* More local ranks than visible GPUs. */
    const char *e1[] = {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=0,1",
                        NULL};
    assert_int_equal(device_of(e1, b, &dev, &e), KR_ERANGE);
    assert_non_null(strstr(e.msg, "more local ranks than GPUs: 4 ranks on this node (LOCAL_WORLD_SIZE=4) but "
                                  "CUDA_VISIBLE_DEVICES='0,1' shows 2 GPUs"));
    /* More local ranks than the backend's GPUs (variable unset). */
    const char *e2[] = {"RANK=1", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=8", NULL};
    kr_launch l;
    assert_int_equal(resolve(e2, 2, 1, 2, &l, &e), KR_OK);
    assert_int_equal(kr_launch_device(&l, b, &dev, NULL, &e), KR_ERANGE);
    assert_non_null(strstr(e.msg, "8 ranks on this node but the fake backend sees 4 GPUs"));
    /* Two ranks on one GPU: the same device listed twice (as an index and as a UUID). */
    const char *e3[] = {"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=0,1,GPU-5a1e-1,3", NULL};
    assert_int_equal(device_of(e3, b, &dev, &e), KR_EMISMATCH);
    assert_non_null(strstr(e.msg, "two ranks on one GPU: local ranks 1 and 2 both map to device 1"));
    /* Index past the backend's devices. */
    const char *e4[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=7,1,2,3",
                        NULL};
    assert_int_equal(device_of(e4, b, &dev, &e), KR_ERANGE);
    assert_non_null(strstr(e.msg, "entry '7': expected a device index 0..3 (fake sees 4 GPUs), found 7"));
    /* Unknown UUID, ambiguous prefix, bare MIG UUID, malformed entry, hidden GPUs. */
    const char *e5[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=GPU-beef,1,2,3", NULL};
    assert_int_equal(device_of(e5, b, &dev, &e), KR_ENOTFOUND);
    assert_non_null(strstr(e.msg, "no GPU of the fake backend has UUID GPU-beef (devices: 0=GPU-5a1e-0"));
    const char *e6[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=GPU-5a1e,1,2,3", NULL};
    assert_int_equal(device_of(e6, b, &dev, &e), KR_EMISMATCH);
    assert_non_null(strstr(e.msg, "expected a UUID prefix of one GPU, found 4 GPUs"));
    const char *e7[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4",
                        "CUDA_VISIBLE_DEVICES=MIG-8932f937-d72c-4106-c12f-20bd9faed9f6,1,2,3", NULL};
    assert_int_equal(device_of(e7, b, &dev, &e), KR_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "is a MIG instance"));
    const char *e8[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=0,,2,3",
                        NULL};
    assert_int_equal(device_of(e8, b, &dev, &e), KR_EPARSE);
    assert_non_null(strstr(e.msg, "CUDA_VISIBLE_DEVICES: entry 1: expected an index or a UUID"));
    const char *e9[] = {"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=", NULL};
    assert_int_equal(device_of(e9, b, &dev, &e), KR_ENODEV);
    assert_non_null(strstr(e.msg, "hides every GPU"));
    kr_launch cpu; /* a CPU-only rank resolves; only asking for its GPU fails */
    assert_int_equal(resolve(e9, 2, 1, 2, &cpu, &e), KR_OK);
    assert_int_equal(cpu.visible_count, 0);
    assert_int_equal(cpu.local_device, -1);
    kr_backend_destroy(b);
}


static const struct CMUnitTest tests[] = {
    cmocka_unit_test(torchrun_tp_fastest),
    cmocka_unit_test(slurm_variables),
    cmocka_unit_test(bad_geometry),
    cmocka_unit_test(visible_indices_and_uuids),
    cmocka_unit_test(visible_mismatches),
};

KR_TEST_MAIN(tests)
