/* test_dag.c — pipeline DAG construction (1F1B, GPipe, interleaved), critical path method,
 * lags and cycle detection. */
#include "testutil.h"

#include "kareus/kareus.h"

static int has_edge(const kr_dag *d, int u, int v)
{
    for (int e = 0; e < d->nedges; e++)
        if (d->eu[e] == u && d->ev[e] == v)
            return 1;
    return 0;
}

static void onef1b_structure(void **state)
{
    (void)state;
    kr_dag d;
    kr_error e = {0};
    int S = 4, M = 6;
    assert_int_equal(kr_dag_pipeline(KR_SCHEDULE_1F1B, S, M, 1, NULL, &d, &e), KR_OK);
    assert_int_equal(d.n, 2 * S * M + 2);
    /* lowtime's count: E = 4SM − 2M − S + 2 (chains, inter-stage, source and sink). */
    assert_int_equal(d.nedges, 4 * S * M - 2 * M - S + 2);
    /* Node numbering: stage 0 first, in execution order F0 F1 F2 F3 B0 F4 ... */
    assert_int_equal(d.node[2].stage, 0);
    assert_int_equal(d.node[6].kind, KR_INSTR_BACKWARD);
    assert_int_equal(d.node[6].microbatch, 0);
    for (int s = 0; s + 1 < S; s++)
        for (int m = 0; m < M; m++) {
            assert_true(has_edge(&d, kr_dag_find(&d, s, KR_INSTR_FORWARD, m, 0), kr_dag_find(&d, s + 1, KR_INSTR_FORWARD, m, 0)));
            assert_true(has_edge(&d, kr_dag_find(&d, s + 1, KR_INSTR_BACKWARD, m, 0), kr_dag_find(&d, s, KR_INSTR_BACKWARD, m, 0)));
        }
    assert_true(has_edge(&d, KR_DAG_SOURCE, kr_dag_find(&d, 0, KR_INSTR_FORWARD, 0, 0)));
    assert_true(has_edge(&d, kr_dag_find(&d, 0, KR_INSTR_BACKWARD, M - 1, 0), KR_DAG_SINK));
    char buf[32];
    assert_string_equal(kr_dag_label(&d, 6, buf, sizeof buf), "B(s0,m0)");
    kr_dag_free(&d);
}

/* Uniform durations: 1F1B makespan = (M + S − 1)(f + b). */
static void cpm_uniform_pipeline(void **state)
{
    (void)state;
    kr_error e = {0};
    for (int sch = 0; sch < 2; sch++) {
        kr_dag d;
        int S = 3, M = 5;
        assert_int_equal(kr_dag_pipeline((kr_schedule)sch, S, M, 1, NULL, &d, &e), KR_OK);
        double dur[64];
        for (int v = 0; v < d.n; v++)
            dur[v] = v < 2 ? 0 : (d.node[v].kind == KR_INSTR_FORWARD ? 1.0 : 2.0);
        double span, es[64], lf[64];
        assert_int_equal(kr_dag_cpm(&d, dur, es, lf, &span, &e), KR_OK);
        KR_ASSERT_CLOSE(span, (M + S - 1) * 3.0, 1e-12);
        /* The last backward of stage 0 is critical: it ends at the makespan. */
        int last = kr_dag_find(&d, 0, KR_INSTR_BACKWARD, M - 1, 0);
        KR_ASSERT_CLOSE(es[last] + dur[last], span, 1e-12);
        KR_ASSERT_CLOSE(lf[last], span, 1e-12);
        kr_dag_free(&d);
    }
}

static void lags_add_to_the_path(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_dag d;
    double lag[2] = {0.5, 0.5};
    assert_int_equal(kr_dag_pipeline(KR_SCHEDULE_1F1B, 3, 1, 1, lag, &d, &e), KR_OK);
    double dur[16], span;
    for (int v = 0; v < d.n; v++)
        dur[v] = v < 2 ? 0 : 1.0;
    assert_int_equal(kr_dag_cpm(&d, dur, NULL, NULL, &span, &e), KR_OK);
    /* One microbatch: 3 forwards, 3 backwards, 4 stage crossings. */
    KR_ASSERT_CLOSE(span, 6.0 + 4 * 0.5, 1e-12);
    kr_dag_free(&d);
}

static void interleaved_structure(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_dag d;
    int S = 2, M = 4, V = 2;
    assert_int_equal(kr_dag_pipeline(KR_SCHEDULE_INTERLEAVED_1F1B, S, M, V, NULL, &d, &e), KR_OK);
    assert_int_equal(d.n, 2 * S * M * V + 2);
    for (int m = 0; m < M; m++) {
        /* Chunk 0 on the last stage feeds chunk 1 on stage 0; backward the other way. */
        assert_true(has_edge(&d, kr_dag_find(&d, S - 1, KR_INSTR_FORWARD, m, 0), kr_dag_find(&d, 0, KR_INSTR_FORWARD, m, 1)));
        assert_true(has_edge(&d, kr_dag_find(&d, 0, KR_INSTR_BACKWARD, m, 1), kr_dag_find(&d, S - 1, KR_INSTR_BACKWARD, m, 0)));
        assert_true(has_edge(&d, kr_dag_find(&d, S - 1, KR_INSTR_FORWARD, m, V - 1),
                             kr_dag_find(&d, S - 1, KR_INSTR_BACKWARD, m, V - 1)));
    }
    double dur[128], span;
    for (int v = 0; v < d.n; v++)
        dur[v] = v < 2 ? 0 : 1.0;
    assert_int_equal(kr_dag_cpm(&d, dur, NULL, NULL, &span, &e), KR_OK);
    assert_true(span >= 2.0 * M * V); /* at least one stage's work */
    KR_ASSERT_ERR(kr_dag_pipeline(KR_SCHEDULE_INTERLEAVED_1F1B, 2, 3, 2, NULL, &d, &e), KR_EINVAL, e, "multiple of stages");
    kr_dag_free(&d);
}

static void cycle_is_reported(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_dag d;
    assert_int_equal(kr_dag_init(&d, &e), KR_OK);
    int a = kr_dag_add_node(&d, 0, KR_INSTR_FORWARD, 0, 0, &e);
    int b = kr_dag_add_node(&d, 1, KR_INSTR_FORWARD, 0, 0, &e);
    int c = kr_dag_add_node(&d, 1, KR_INSTR_BACKWARD, 0, 0, &e);
    assert_int_equal(kr_dag_add_edge(&d, KR_DAG_SOURCE, a, 0, &e), KR_OK);
    assert_int_equal(kr_dag_add_edge(&d, a, b, 0, &e), KR_OK);
    assert_int_equal(kr_dag_add_edge(&d, b, c, 0, &e), KR_OK);
    assert_int_equal(kr_dag_add_edge(&d, c, b, 0, &e), KR_OK);
    assert_int_equal(kr_dag_add_edge(&d, c, KR_DAG_SINK, 0, &e), KR_OK);
    KR_ASSERT_ERR(kr_dag_finalize(&d, &e), KR_ECYCLE, e, "found the cycle F(s1,m0) -> B(s1,m0) -> F(s1,m0)");
    double dur[5] = {0};
    KR_ASSERT_ERR(kr_dag_cpm(&d, dur, NULL, NULL, NULL, &e), KR_ESTATE, e, "finalized");
    KR_ASSERT_ERR(kr_dag_add_edge(&d, a, a, 0, &e), KR_ERANGE, e, "two distinct nodes");
    KR_ASSERT_ERR(kr_dag_add_edge(&d, a, b, -1, &e), KR_ERANGE, e, "expected a lag >= 0 s");
    kr_dag_free(&d);
}

int main(int argc, char **argv);

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(onef1b_structure),
    cmocka_unit_test(cpm_uniform_pipeline),
    cmocka_unit_test(lags_add_to_the_path),
    cmocka_unit_test(interleaved_structure),
    cmocka_unit_test(cycle_is_reported),
};

KR_TEST_MAIN(tests)
