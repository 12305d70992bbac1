/* test_gpuctl.c — the GPU control backends: NVML loading and error paths (against a missing
 * library, a library without NVML symbols, and a mock libnvidia-ml), the fake GPU's recording,
 * failure injection, sleeps and energy counter, and backend spec strings. */
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kareus/gpuctl.h"
#include "kareus/search.h"
#include "kareus/sim.h"
#include "util/util.h"

static void mock_env(const char *init_rc, const char *devices, const char *no_perm)
{
    setenv("MOCK_NVML_INIT_RC", init_rc, 1);
    setenv("MOCK_NVML_DEVICES", devices, 1);
    setenv("MOCK_NVML_NO_PERMISSION", no_perm, 1);
}

static void nvml_missing_library_is_enolib(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b = (kr_backend *)1;
    kr_gpuctl_nvml_config o = {.library = "libkareus-no-such-nvml.so.1"};
    KR_ASSERT_ERR(kr_gpuctl_nvml_create(&o, &b, &e), KR_ENOLIB, e, "libkareus-no-such-nvml.so.1");
    assert_null(b);
    assert_non_null(strstr(e.msg, "no NVIDIA driver"));
    /* The default names: absent here (no driver), present on a GPU machine. */
    int rc = kr_gpuctl_nvml_create(NULL, &b, &e);
    assert_true(rc == KR_OK || rc == KR_ENOLIB || rc == KR_ENODEV);
    if (rc == KR_OK)
        kr_backend_destroy(b);
    else
        assert_non_null(strstr(e.msg, "NVML"));
}

static void nvml_library_without_symbols(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_nvml_config o = {.library = "libm.so.6"};
    KR_ASSERT_ERR(kr_gpuctl_nvml_create(&o, &b, &e), KR_ENOLIB, e, "libm.so.6 has no symbol nvmlInit_v2");
    /* After a failed load the table is clean: a later good load works. */
    mock_env("0", "1", "0");
    kr_gpuctl_nvml_config m = {.library = KR_MOCK_NVML};
    assert_int_equal(kr_gpuctl_nvml_create(&m, &b, &e), KR_OK);
    kr_backend_destroy(b);
}

static void nvml_mock_clocks_energy_power(void **state)
{
    (void)state;
    mock_env("0", "2", "0");
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_nvml_config o = {.library = KR_MOCK_NVML};
    assert_int_equal(kr_gpuctl_nvml_create(&o, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "nvml");
    assert_string_equal(kr_backend_name(b), "nvml");
    int n = 0;
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    assert_int_equal(n, 2);
    int clocks[KR_GPU_MAX_CLOCKS];
    assert_int_equal(kr_backend_supported_clocks(b, 1, clocks, KR_GPU_MAX_CLOCKS, &n), KR_OK);
    assert_int_equal(n, 81);
    assert_int_equal(clocks[0], 1410);
    assert_int_equal(clocks[80], 210);
    assert_int_equal(kr_backend_supported_clocks(b, 0, clocks, 10, &n), KR_ERANGE);
    kr_gpu_device_info info;
    assert_int_equal(kr_backend_device_info(b, 1, &info, &e), KR_OK);
    assert_string_equal(info.name, "NVIDIA A100-SXM4-40GB (mock)");
    assert_string_equal(info.uuid, "GPU-00000000-mock-0000-0000-00000000001");
    assert_int_equal(info.mem_clock_mhz, 1215);
    KR_ASSERT_ERR(kr_backend_device_info(b, 2, &info, &e), KR_EINVAL, e, "device 2: expected an index in [0, 2)");
    int cur, lo, hi;
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_int_equal(cur, 1410);
    assert_int_equal(lo + hi, 0);
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_OK);
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_int_equal(cur, 1200);
    assert_int_equal(lo, 1200);
    assert_int_equal(hi, 1200);
    assert_int_equal(kr_backend_set_clock(b, 0, 1300, 1200), KR_EINVAL);
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_OK);
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_int_equal(cur, 1410);
    assert_int_equal(hi, 0);
    double ej, pw;
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    assert_true(ej >= 1000.0); /* the mock starts at 1e6 mJ: mJ are converted to J */
    assert_int_equal(kr_backend_read_power(b, 0, &pw), KR_OK);
    KR_ASSERT_CLOSE(pw, 200.0, 1e-12);
    kr_measurement m;
    kr_config c = {1410, 0, -1, 0};
    assert_int_equal(kr_backend_measure(b, NULL, &c, &m), KR_EUNSUPPORTED);
    kr_backend_destroy(b);
}

static void nvml_mock_no_permission(void **state)
{
    (void)state;
    mock_env("0", "1", "1");
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_nvml_config o = {.library = KR_MOCK_NVML};
    assert_int_equal(kr_gpuctl_nvml_create(&o, &b, &e), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_EPERM);
    assert_non_null(strstr(kr_backend_errmsg(b), "Insufficient Permissions"));
    assert_non_null(strstr(kr_backend_errmsg(b), "CAP_SYS_ADMIN"));
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_EPERM);
    kr_backend_destroy(b);
}

static void nvml_mock_no_driver_or_device(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_nvml_config o = {.library = KR_MOCK_NVML};
    mock_env("9", "1", "0");
    KR_ASSERT_ERR(kr_gpuctl_nvml_create(&o, &b, &e), KR_ENODEV, e, "Driver Not Loaded");
    mock_env("0", "0", "0");
    KR_ASSERT_ERR(kr_gpuctl_nvml_create(&o, &b, &e), KR_ENODEV, e, "no GPU is visible");
}

static void nvml_symbol_table_is_shared(void **state)
{
    (void)state;
    mock_env("0", "1", "0");
    kr_error e = {0};
    kr_backend *a, *b, *c;
    kr_gpuctl_nvml_config o = {.library = KR_MOCK_NVML};
    assert_int_equal(kr_gpuctl_nvml_create(&o, &a, &e), KR_OK);
    assert_int_equal(kr_gpuctl_nvml_create(&o, &b, &e), KR_OK);
    kr_gpuctl_nvml_config other = {.library = "libm.so.6"};
    KR_ASSERT_ERR(kr_gpuctl_nvml_create(&other, &c, &e), KR_EBUSY, e, "already loaded");
    kr_backend_destroy(a);
    int n;
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    double ej;
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    kr_backend_destroy(b);
}

static void nvml_status_mapping(void **state)
{
    (void)state;
    assert_int_equal(kr_gpuctl_nvml_status(0), KR_OK);
    assert_int_equal(kr_gpuctl_nvml_status(4), KR_EPERM);
    assert_int_equal(kr_gpuctl_nvml_status(3), KR_EUNSUPPORTED);
    assert_int_equal(kr_gpuctl_nvml_status(9), KR_ENODEV);
    assert_int_equal(kr_gpuctl_nvml_status(15), KR_ENODEV);
    assert_int_equal(kr_gpuctl_nvml_status(999), KR_EBACKEND);
}

static void fake_records_calls(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_fake_config o = {.devices = 2, .locked_min_mhz = 1005, .locked_max_mhz = 1200};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "fake");
    int cur, lo, hi, n;
    assert_int_equal(kr_backend_get_clock(b, 1, &cur, &lo, &hi), KR_OK);
    assert_int_equal(lo, 1005);
    assert_int_equal(hi, 1200);
    assert_int_equal(kr_backend_set_clock(b, 1, 900, 900), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 1, 901, 901), KR_EINVAL); /* not a supported clock */
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 5, 900, 900), KR_EINVAL);
    kr_gpuctl_fake_call calls[8];
    assert_int_equal(kr_gpuctl_fake_calls(b, calls, 8, &n), KR_OK);
    assert_int_equal(n, 5);
    assert_int_equal(calls[0].op, KR_GPUCTL_FAKE_GET_CLOCK);
    assert_int_equal(calls[1].op, KR_GPUCTL_FAKE_SET_CLOCK);
    assert_int_equal(calls[1].dev, 1);
    assert_int_equal(calls[1].a, 900);
    assert_int_equal(calls[1].rc, KR_OK);
    assert_int_equal(calls[2].rc, KR_EINVAL);
    assert_int_equal(calls[3].op, KR_GPUCTL_FAKE_RESET_CLOCK);
    assert_int_equal(calls[4].seq, 5);
    assert_int_equal(kr_gpuctl_fake_state(b, 1, &lo, &hi, &cur), KR_OK);
    assert_int_equal(cur, 900);
    assert_int_equal(kr_gpuctl_fake_state(b, 0, &lo, &hi, &cur), KR_OK);
    assert_int_equal(lo + hi, 0);
    assert_int_equal(cur, 1410);
    assert_string_equal(kr_gpuctl_fake_op_name(KR_GPUCTL_FAKE_READ_POWER), "read_power");
    kr_gpuctl_fake_op op;
    assert_int_equal(kr_gpuctl_fake_op_parse("reset_clock", &op), KR_OK);
    assert_int_equal(op, KR_GPUCTL_FAKE_RESET_CLOCK);
    assert_int_equal(kr_gpuctl_fake_op_parse("nope", &op), KR_ENOTFOUND);
    kr_backend_destroy(b);
}

/* Makes five calls of different ops; returns a bitmask of the calls (1-based bits) that failed. */
static unsigned five_calls(kr_backend *b)
{
    int n, cur, lo, hi, clocks[128];
    double x;
    unsigned failed = 0;
    failed |= (unsigned)(kr_backend_device_count(b, &n) != KR_OK) << 1;
    failed |= (unsigned)(kr_backend_supported_clocks(b, 0, clocks, 128, &n) != KR_OK) << 2;
    failed |= (unsigned)(kr_backend_get_clock(b, 0, &cur, &lo, &hi) != KR_OK) << 3;
    failed |= (unsigned)(kr_backend_set_clock(b, 0, 1200, 1200) != KR_OK) << 4;
    failed |= (unsigned)(kr_backend_read_energy(b, 0, &x) != KR_OK) << 5;
    return failed;
}

static void fake_fails_nth_call(void **state)
{
    (void)state;
    kr_error e = {0};
    for (long nth = 1; nth <= 6; nth++) {
        kr_backend *b;
        kr_gpuctl_fake_config o = {.fail_call = nth};
        assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
        unsigned failed = five_calls(b);
        assert_int_equal(failed, nth <= 5 ? 1u << nth : 0u);
        if (nth == 5) /* later successful calls clear the message: check it on the last one */
            assert_non_null(strstr(kr_backend_errmsg(b), "read_energy (call 5): injected failure"));
        kr_backend_destroy(b);
    }
    /* Repeat from call 3 on; then restrict counting to set_clock and make it NO_PERMISSION. */
    kr_backend *b;
    kr_gpuctl_fake_config o = {.fail_call = 3, .fail_repeat = 1};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    assert_int_equal(five_calls(b), (1u << 3) | (1u << 4) | (1u << 5));
    assert_int_equal(kr_gpuctl_fake_set_failure(b, 1, 0, KR_EPERM, KR_GPUCTL_FAKE_MASK(KR_GPUCTL_FAKE_SET_CLOCK)), KR_OK);
    int cur, lo, hi;
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &lo, &hi), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_EPERM);
    assert_non_null(strstr(kr_backend_errmsg(b), "no permission"));
    assert_int_equal(five_calls(b), 0u);
    kr_backend_destroy(b);
}

static void fake_permission_ops(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_fake_config o = {.perm_ops = KR_GPUCTL_FAKE_CLOCK_WRITES};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_EPERM);
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_EPERM);
    double x;
    assert_int_equal(kr_backend_read_energy(b, 0, &x), KR_OK);
    kr_backend_destroy(b);
}

typedef struct manual_clock {
    double t;
} manual_clock;

static double manual_now(void *ud)
{
    return ((manual_clock *)ud)->t;
}

static void fake_energy_counter(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    manual_clock mc = {100.0};
    kr_gpuctl_fake_config o = {.power_w = 300, .energy_period_s = 0.1, .now_s = manual_now, .now_ud = &mc};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    double ej;
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    KR_ASSERT_CLOSE(ej, 0.0, 1e-12);
    mc.t = 100.25; /* the counter has moved twice (0.1 s periods): 0.2 s × 300 W */
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    KR_ASSERT_CLOSE(ej, 60.0, 1e-9);
    assert_int_equal(kr_gpuctl_fake_add_energy(b, 0, 5.0), KR_OK);
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    KR_ASSERT_CLOSE(ej, 65.0, 1e-9);
    double pw;
    assert_int_equal(kr_backend_read_power(b, 0, &pw), KR_OK);
    KR_ASSERT_CLOSE(pw, 300.0, 1e-12);
    kr_backend_destroy(b);
    kr_gpuctl_fake_config none = {.no_energy = 1};
    assert_int_equal(kr_gpuctl_fake_create(&none, &b, &e), KR_OK);
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_EUNSUPPORTED);
    kr_backend_destroy(b);
}

static void fake_log_file(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("gpuctl_fake_log");
    assert_non_null(dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/calls.log", dir);
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_fake_config o = {.log_path = path, .fail_call = 2};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    kr_backend_set_clock(b, 0, 1200, 1005);
    kr_backend_set_clock(b, 0, 990, 1200);
    kr_backend_reset_clock(b, 0);
    kr_backend_destroy(b);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    assert_string_equal(text, "1 set_clock 0 1200 1005 -1\n2 set_clock 0 0 0 -14\n3 reset_clock 0 0 0 0\n");
    free(text);
}

static void fake_sleeps_inside_calls(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_fake_config o = {.sleep_s = 0.02};
    assert_int_equal(kr_gpuctl_fake_create(&o, &b, &e), KR_OK);
    double t0 = kr__now_s();
    assert_int_equal(kr_backend_set_clock(b, 0, 1200, 1200), KR_OK);
    double dt = kr__now_s() - t0;
    assert_true(dt >= 0.0199); /* nanosleep sleeps at least as long as asked */
    kr_backend_destroy(b);
}

static void fake_rejects_bad_options(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_gpuctl_fake_config o = {.max_mhz = 1400, .min_mhz = 210, .step_mhz = 15};
    KR_ASSERT_ERR(kr_gpuctl_fake_create(&o, &b, &e), KR_EINVAL, e, "multiple of step_mhz");
    kr_gpuctl_fake_config f = {.fail_code = 3};
    KR_ASSERT_ERR(kr_gpuctl_fake_create(&f, &b, &e), KR_EINVAL, e, "fail_code");
    kr_gpuctl_fake_config l = {.log_path = "/nonexistent-dir/x.log"};
    KR_ASSERT_ERR(kr_gpuctl_fake_create(&l, &b, &e), KR_EIO, e, "/nonexistent-dir/x.log");
}

static void spec_strings(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    assert_int_equal(kr_backend_open("fake:devices=3,max_mhz=1980,min_mhz=345,step_mhz=15,locked=900-1200,"
                                    "uuid=GPU-x,perm_ops=writes,power_w=700",
                                    NULL, &b, &e),
                     KR_OK);
    int n, cur, lo, hi;
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(kr_gpuctl_fake_state(b, 2, &lo, &hi, &cur), KR_OK);
    assert_int_equal(lo, 900);
    assert_int_equal(hi, 1200);
    kr_gpu_device_info info;
    assert_int_equal(kr_backend_device_info(b, 2, &info, &e), KR_OK);
    assert_string_equal(info.uuid, "GPU-x-2");
    assert_int_equal(kr_backend_set_clock(b, 0, 1980, 1980), KR_EPERM);
    kr_backend_destroy(b);
    assert_int_equal(kr_backend_open("fake:fail_call=2,fail_code=perm,fail_ops=set_clock+reset_clock", NULL, &b, &e),
                     KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 1410, 1410), KR_OK);
    assert_int_equal(kr_backend_reset_clock(b, 0), KR_EPERM);
    kr_backend_destroy(b);
    KR_ASSERT_ERR(kr_backend_open("fake:bogus=1", NULL, &b, &e), KR_EINVAL, e, "unknown key 'bogus' for fake");
    KR_ASSERT_ERR(kr_backend_open("fake:sleep_s=abc", NULL, &b, &e), KR_EINVAL, e,
                  "sleep_s: expected a number in [0, 60], found 'abc'");
    KR_ASSERT_ERR(kr_backend_open("fake:locked=1200-900", NULL, &b, &e), KR_EINVAL, e, "MIN-MAX");
    KR_ASSERT_ERR(kr_backend_open("fake:fail_ops=set_clock+nap", NULL, &b, &e), KR_EINVAL, e, "operations joined by '+'");
    KR_ASSERT_ERR(kr_backend_open("fake:devices", NULL, &b, &e), KR_EINVAL, e, "expected KEY=VALUE, found 'devices'");
    KR_ASSERT_ERR(kr_backend_open("gpu0", NULL, &b, &e), KR_EINVAL, e, "kind: expected nvml, sim or fake (or kareusd, auto, replay:FILE, gpu[:N]), found 'gpu0'");
    /* The simulator: the job from the spec, else the caller's default, else "default". */
    assert_int_equal(kr_backend_open("sim:devices=2,activity=0.5", NULL, &b, &e), KR_OK);
    assert_true(kr_sim_backend_is(b));
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(kr_backend_device_info(b, 1, &info, &e), KR_OK);
    assert_string_equal(info.uuid, ""); /* simulated devices are never locked across processes */
    kr_backend_destroy(b);
    KR_ASSERT_ERR(kr_backend_open("sim", &(kr_backend_open_config){.default_job = "no-such-job"}, &b, &e), KR_ENOTFOUND, e, "the plan's job; name another with sim:job=PATH");
    KR_ASSERT_ERR(kr_backend_open("sim:activity=2", NULL, &b, &e), KR_EINVAL, e, "activity: expected a number in [0, 1]");
    KR_ASSERT_ERR(kr_backend_open("nvml:lib=/no/such/libnvidia-ml.so", NULL, &b, &e), KR_ENOLIB, e,
                  "/no/such/libnvidia-ml.so");
}

static int other_count(kr_backend *b, int *count)
{
    (void)b;
    *count = 2;
    return KR_OK;
}

static void device_info_of_other_backends(void **state)
{
    (void)state;
    static const kr_control_ops ctl = {.device_count = other_count};
    static const kr_backend_class cls = {.name = "other", .control = &ctl};
    kr_backend *b;
    assert_int_equal(kr_backend_create(&cls, NULL, &b), KR_OK);
    kr_error e = {0};
    kr_gpu_device_info info;
    assert_int_equal(kr_backend_device_info(b, 1, &info, &e), KR_OK);
    assert_string_equal(info.name, "other");
    assert_string_equal(info.uuid, "");
    KR_ASSERT_ERR(kr_backend_device_info(b, 2, &info, &e), KR_EINVAL, e, "device 2");
    kr_backend_destroy(b);
}

/* The factory's measuring kinds (replay, gpu) and what each backend says it is. */
static void factory_measuring_kinds_and_caps(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_backend *b;
    kr_job job;
    kr_job_default(&job);
    kr_backend_open_config oo = {.job = &job};
    KR_ASSERT_ERR(kr_backend_open("replay", &oo, &b, &e), KR_EINVAL, e, "expected replay:FILE or recordings");
    /* An empty recording: the factory routes to the replay backend, which holds nothing. */
    char path[1200], spec[1300];
    snprintf(path, sizeof path, "%s/empty.jsonl", kr_test_tmpdir("gpuctl_factory"));
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    kr_search_log_close(log);
    snprintf(spec, sizeof spec, "replay:%s", path);
    assert_int_equal(kr_backend_open(spec, &oo, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "replay");
    assert_int_equal(kr_backend_caps(b), KR_BACKEND_MEASURE | KR_BACKEND_CLOCK_LIST | KR_BACKEND_RECORDED);
    double x;
    KR_ASSERT_ERR(kr_backend_read_energy(b, 0, &x), KR_EUNSUPPORTED, *kr_backend_error(b),
                  "backend replay: read_energy is not supported");
    kr_backend_destroy(b);
    const char *files[] = {path};
    oo.replay = files;
    oo.nreplay = 1;
    assert_int_equal(kr_backend_open("replay", &oo, &b, &e), KR_OK); /* the CLI's --replay FILE */
    kr_backend_destroy(b);
    /* gpu[:N]: the first device is checked before any hardware is opened. */
    KR_ASSERT_ERR(kr_backend_open("gpu:x", &oo, &b, &e), KR_EINVAL, e, "device: expected an integer in [0, 1023]");
    /* The simulator of the caller's job, and the fake: measuring and control, told apart by caps. */
    assert_int_equal(kr_backend_open("sim", &oo, &b, &e), KR_OK);
    assert_true(kr_backend_caps(b) & KR_BACKEND_SIMULATED);
    assert_true(kr_backend_caps(b) & KR_BACKEND_MEASURE);
    assert_false(kr_backend_caps(b) & (KR_BACKEND_RECORDED | KR_BACKEND_SCOPED | KR_BACKEND_DEVICE_INFO));
    kr_backend_destroy(b);
    assert_int_equal(kr_backend_open("fake", NULL, &b, &e), KR_OK);
    assert_true(kr_backend_caps(b) & KR_BACKEND_MEASURE);
    assert_true(kr_backend_caps(b) & KR_BACKEND_DEVICE_INFO);
    assert_false(kr_backend_caps(b) & (KR_BACKEND_SIMULATED | KR_BACKEND_RECORDED));
    assert_int_equal(kr_gpuctl_fake_calls(b, NULL, 0, &(int){0}), KR_OK);
    kr_backend_destroy(b);
    assert_int_equal(kr_backend_open("sim", NULL, &b, &e), KR_OK);
    assert_int_equal(kr_gpuctl_fake_calls(b, NULL, 0, &(int){0}), KR_EINVAL); /* not a fake */
    kr_backend_destroy(b);
}

/* A class must have the entries its capabilities name; a call outside them is unsupported. */
static void backend_class_matches_its_caps(void **state)
{
    (void)state;
    kr_backend *b = NULL;
    static const kr_control_ops counts_only = {.device_count = other_count};
    static const kr_backend_class claims_clocks = {
        .name = "liar", .caps = KR_BACKEND_CLOCK_LOCK, .control = &counts_only};
    assert_int_equal(kr_backend_create(&claims_clocks, NULL, &b), KR_EINVAL);
    assert_null(b);
    static const kr_backend_class claims_measure = {.name = "liar", .caps = KR_BACKEND_MEASURE};
    assert_int_equal(kr_backend_create(&claims_measure, NULL, &b), KR_EINVAL);
    static const kr_backend_class honest = {.name = "counter", .control = &counts_only};
    assert_int_equal(kr_backend_create(&honest, NULL, &b), KR_OK);
    assert_int_equal(kr_backend_caps(b), 0u);
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 1410, 1410), KR_EUNSUPPORTED, *kr_backend_error(b),
                  "backend counter: set_clock is not supported");
    kr_config c = {1410, 0, KR_SLOT_NONE, 0};
    kr_measurement m;
    KR_ASSERT_ERR(kr_backend_measure(b, NULL, &c, &m), KR_EUNSUPPORTED, *kr_backend_error(b),
                  "backend counter: measure is not supported");
    int n = 0;
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    assert_int_equal(n, 2);
    kr_backend_destroy(b);
}

int main(int argc, char **argv);

/* nvml:lib= in a privileged process: only bare names or root-owned, non-writable paths. */
static void privileged_nvml_lib_is_restricted(void **state)
{
    (void)state;
    if (geteuid() != 0)
        KR_SKIP("needs root (CI runs as root): the restriction applies to privileged processes");
    const char *dir = kr_test_tmpdir("gpuctl_lib");
    char wdir[1100], lib[1200], spec[1300];
    snprintf(wdir, sizeof wdir, "%s/writable", dir);
    assert_int_equal(mkdir(wdir, 0777), 0);
    assert_int_equal(chmod(wdir, 0777), 0); /* anyone could have put a library here */
    snprintf(lib, sizeof lib, "%s/libnvidia-ml.so.1", wdir);
    kr_test_write(lib, "not a library\n");
    snprintf(spec, sizeof spec, "nvml:lib=%s", lib);
    kr_backend *b = NULL;
    kr_error e = {0};
    KR_ASSERT_ERR(kr_backend_open(spec, NULL, &b, &e), KR_EPERM, e, "writable by group or others");
    assert_null(b);
    /* A bare name goes through the loader's own search of the system directories: allowed. */
    KR_ASSERT_ERR(kr_backend_open("nvml:lib=libkareus-missing-nvml.so.1", NULL, &b, &e), KR_ENOLIB, e,
                  "libkareus-missing-nvml.so.1");
    /* An unprivileged process may load what it likes (it only harms itself). */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(90);
        kr_error ce = {0};
        kr_backend *cb = NULL;
        int rc = kr_backend_open(spec, NULL, &cb, &ce);
        _exit(rc == KR_EPERM ? 1 : 0); /* ENOLIB (not a library) is expected, never EPERM */
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(nvml_missing_library_is_enolib),
    cmocka_unit_test(nvml_library_without_symbols),
    cmocka_unit_test(nvml_mock_clocks_energy_power),
    cmocka_unit_test(nvml_mock_no_permission),
    cmocka_unit_test(nvml_mock_no_driver_or_device),
    cmocka_unit_test(nvml_symbol_table_is_shared),
    cmocka_unit_test(nvml_status_mapping),
    cmocka_unit_test(fake_records_calls),
    cmocka_unit_test(fake_fails_nth_call),
    cmocka_unit_test(fake_permission_ops),
    cmocka_unit_test(fake_energy_counter),
    cmocka_unit_test(fake_log_file),
    cmocka_unit_test(fake_sleeps_inside_calls),
    cmocka_unit_test(fake_rejects_bad_options),
    cmocka_unit_test(spec_strings),
    cmocka_unit_test(device_info_of_other_backends),
    cmocka_unit_test(factory_measuring_kinds_and_caps),
    cmocka_unit_test(backend_class_matches_its_caps),
    cmocka_unit_test(privileged_nvml_lib_is_restricted),
};

KR_TEST_MAIN(tests)
