/* test_sched.c — per-stage instruction orders of 1F1B, GPipe and interleaved 1F1B. */
#include "testutil.h"

#include "kareus/sched.h"

static void order_string(kr_schedule sch, int S, int M, int V, int stage, char *buf, size_t cap)
{
    kr_sched_item items[512];
    kr_error e = {0};
    int n = kr_sched_order(sch, S, M, V, stage, items, 512, &e);
    assert_true(n > 0);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (V > 1)
            len += (size_t)snprintf(buf + len, cap - len, "%s%c%d.%d", i ? " " : "",
                                    items[i].kind == KR_INSTR_FORWARD ? 'F' : 'B', items[i].microbatch, items[i].chunk);
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s%c%d", i ? " " : "",
                                    items[i].kind == KR_INSTR_FORWARD ? 'F' : 'B', items[i].microbatch);
    }
}

static void one_f_one_b_matches_lowtime(void **state)
{
    (void)state;
    char buf[4096];
    /* lowtime-solver.md §4: S=4, M=6. */
    order_string(KR_SCHEDULE_1F1B, 4, 6, 1, 0, buf, sizeof buf);
    assert_string_equal(buf, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
    order_string(KR_SCHEDULE_1F1B, 4, 6, 1, 3, buf, sizeof buf);
    assert_string_equal(buf, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
    /* kareus-method.md §6: 2 stages, 8 microbatches. */
    order_string(KR_SCHEDULE_1F1B, 2, 8, 1, 0, buf, sizeof buf);
    assert_string_equal(buf, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
    /* Fewer microbatches than stages. */
    order_string(KR_SCHEDULE_1F1B, 4, 2, 1, 0, buf, sizeof buf);
    assert_string_equal(buf, "F0 F1 B0 B1");
}

static void gpipe_runs_all_forwards_first(void **state)
{
    (void)state;
    char buf[4096];
    order_string(KR_SCHEDULE_GPIPE, 3, 3, 1, 1, buf, sizeof buf);
    assert_string_equal(buf, "F0 F1 F2 B0 B1 B2");
}

static void interleaved_matches_megatron(void **state)
{
    (void)state;
    char buf[4096];
    /* S=2, V=2, M=4: warm-up (S-s-1)*2 + (V-1)*S = 4 on stage 0, 2 on stage 1. */
    order_string(KR_SCHEDULE_INTERLEAVED_1F1B, 2, 4, 2, 0, buf, sizeof buf);
    assert_string_equal(buf, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
    order_string(KR_SCHEDULE_INTERLEAVED_1F1B, 2, 4, 2, 1, buf, sizeof buf);
    assert_string_equal(buf, "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
}

static void every_instruction_appears_once(void **state)
{
    (void)state;
    kr_schedule schs[] = {KR_SCHEDULE_1F1B, KR_SCHEDULE_GPIPE, KR_SCHEDULE_INTERLEAVED_1F1B};
    for (int k = 0; k < 3; k++)
        for (int S = 1; S <= 5; S++)
            for (int M = S; M <= 3 * S; M += S) {
                int V = schs[k] == KR_SCHEDULE_INTERLEAVED_1F1B ? 3 : 1;
                for (int s = 0; s < S; s++) {
                    kr_sched_item items[512];
                    kr_error e = {0};
                    int n = kr_sched_order(schs[k], S, M, V, s, items, 512, &e);
                    assert_int_equal(n, 2 * M * V);
                    int seen[2][64][3] = {{{0}}};
                    for (int i = 0; i < n; i++) {
                        seen[items[i].kind][items[i].microbatch][items[i].chunk]++;
                        /* A forward always precedes its backward on the same stage. */
                        if (items[i].kind == KR_INSTR_BACKWARD)
                            assert_int_equal(seen[0][items[i].microbatch][items[i].chunk], 1);
                    }
                    for (int m = 0; m < M; m++)
                        for (int c = 0; c < V; c++) {
                            assert_int_equal(seen[0][m][c], 1);
                            assert_int_equal(seen[1][m][c], 1);
                        }
                }
            }
}

static void bad_arguments(void **state)
{
    (void)state;
    kr_sched_item items[8];
    kr_error e = {0};
    KR_ASSERT_ERR(kr_sched_order(KR_SCHEDULE_1F1B, 2, 8, 1, 0, items, 8, &e), KR_ERANGE, e, "holds 8 instructions, 16 needed");
    KR_ASSERT_ERR(kr_sched_order(KR_SCHEDULE_1F1B, 2, 2, 1, 2, items, 8, &e), KR_ERANGE, e, "expected a stage in [0, 1], found 2");
    KR_ASSERT_ERR(kr_sched_check(KR_SCHEDULE_INTERLEAVED_1F1B, 2, 3, 2, &e), KR_EINVAL, e, "multiple of stages");
    KR_ASSERT_ERR(kr_sched_check(KR_SCHEDULE_1F1B, 0, 3, 1, &e), KR_ERANGE, e, "expected stages");
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_f_one_b_matches_lowtime),
    cmocka_unit_test(gpipe_runs_all_forwards_first),
    cmocka_unit_test(interleaved_matches_megatron),
    cmocka_unit_test(every_instruction_appears_once),
    cmocka_unit_test(bad_arguments),
};
KR_TEST_MAIN(tests)
