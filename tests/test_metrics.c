/* test_metrics.c — the paper's metrics on hand-made frontiers, incl. "no plan qualifies". */
#include "testutil.h"

#include <math.h>

#include "kareus/metrics.h"

/* Reference (Perseus-like): fastest (10 s, 1000 J), most frugal (14 s, 800 J). */
static const double rt[] = {10, 11, 12, 14}, re[] = {1000, 900, 850, 800};
/* Method: faster and cheaper. */
static const double xt[] = {9, 10, 12, 13}, xe[] = {950, 880, 790, 760};

static void iso_time_and_iso_energy(void **state)
{
    (void)state;
    kr_tradeoff ref = {4, rt, re}, x = {4, xt, xe};
    kr_error e = {0};
    double r;
    /* Best energy with T <= 10: 880 → (1000 − 880)/1000. */
    assert_int_equal(kr_metric_iso_time(&ref, &x, &r, &e), KR_OK);
    KR_ASSERT_CLOSE(r, 0.12, 1e-12);
    /* Best time with E <= 800: 12 → (14 − 12)/14. */
    assert_int_equal(kr_metric_iso_energy(&ref, &x, &r, &e), KR_OK);
    KR_ASSERT_CLOSE(r, 2.0 / 14.0, 1e-12);
    /* Against itself: zero. */
    assert_int_equal(kr_metric_iso_time(&ref, &ref, &r, &e), KR_OK);
    assert_true(r == 0.0);
}

static void no_plan_qualifies(void **state)
{
    (void)state;
    const double st[] = {11, 15}, se[] = {990, 820};
    kr_tradeoff ref = {4, rt, re}, slow = {2, st, se};
    kr_error e = {0};
    double r = -7;
    KR_ASSERT_ERR(kr_metric_iso_time(&ref, &slow, &r, &e), KR_ENOTFOUND, e, "no plan is as fast as the reference's fastest");
    KR_ASSERT_ERR(kr_metric_iso_energy(&ref, &slow, &r, &e), KR_ENOTFOUND, e, "no plan uses as little energy");
    assert_true(r == -7);
    kr_tradeoff empty = {0, rt, re};
    KR_ASSERT_ERR(kr_metric_iso_time(&ref, &empty, &r, &e), KR_EINVAL, e, "expected at least one plan");
    const double bad_e[] = {NAN};
    kr_tradeoff nan = {1, rt, bad_e};
    KR_ASSERT_ERR(kr_metric_iso_time(&nan, &ref, &r, &e), KR_EINVAL, e, "plan 0: expected a positive finite time");
}

static void max_throughput_against_megatron(void **state)
{
    (void)state;
    kr_tradeoff x = {4, xt, xe};
    kr_error e = {0};
    double tr, er;
    assert_int_equal(kr_metric_max_throughput(10.0, 1000.0, &x, &tr, &er, &e), KR_OK);
    KR_ASSERT_CLOSE(tr, 0.1, 1e-12);
    KR_ASSERT_CLOSE(er, 0.05, 1e-12);
    /* A slower method gets a negative reduction, reported as such. */
    const double st[] = {12}, se[] = {900};
    kr_tradeoff slow = {1, st, se};
    assert_int_equal(kr_metric_max_throughput(10.0, 1000.0, &slow, &tr, &er, &e), KR_OK);
    KR_ASSERT_CLOSE(tr, -0.2, 1e-12);
}

static void robust_over_common_times(void **state)
{
    (void)state;
    kr_tradeoff ref = {4, rt, re}, x = {4, xt, xe};
    kr_error e = {0};
    double mean, max, lo, hi;
    assert_int_equal(kr_metric_robust(&ref, &x, 5, &mean, &max, &lo, &hi, &e), KR_OK);
    /* t in {10, 11, 12, 13, 14}: ref 1000 900 850 850 800, x 880 880 790 760 760. */
    double want[] = {0.12, 20.0 / 900, 60.0 / 850, 90.0 / 850, 40.0 / 800};
    double s = 0, m = 0;
    for (int i = 0; i < 5; i++) {
        s += want[i];
        if (want[i] > m)
            m = want[i];
    }
    KR_ASSERT_CLOSE(lo, 10.0, 1e-12);
    KR_ASSERT_CLOSE(hi, 14.0, 1e-12);
    KR_ASSERT_CLOSE(mean, s / 5, 1e-12);
    KR_ASSERT_CLOSE(max, m, 1e-12);
    assert_true(isinf(kr_metric_energy_at(&ref, 9.5)));
}

static void artifact_ten_point_rule(void **state)
{
    (void)state;
    int out[15];
    /* 512 plans: stride 35, samples 21..511; drop positions 0,2,4,6,8. */
    int n = kr_select_artifact10(512, out, 15);
    assert_int_equal(n, 10);
    int want[] = {56, 126, 196, 266, 336, 371, 406, 441, 476, 511};
    for (int i = 0; i < 10; i++)
        assert_int_equal(out[i], want[i]);
    /* Few plans: every sample is kept except the dropped positions; never the slowest. */
    n = kr_select_artifact10(5, out, 15);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 3);
    n = kr_select_artifact10(1, out, 15);
    assert_int_equal(n, 0);
    assert_int_equal(kr_select_artifact10(0, out, 15), KR_EINVAL);
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(iso_time_and_iso_energy),
    cmocka_unit_test(no_plan_qualifies),
    cmocka_unit_test(max_throughput_against_megatron),
    cmocka_unit_test(robust_over_common_times),
    cmocka_unit_test(artifact_ten_point_rule),
};
KR_TEST_MAIN(tests)
