/*
 * test_partition.c — the partition catalog: keys, op lists and launch slots as the reference
 * cuts them, FLOP counts against closed-form formulas, variants and non-partition work.
 */
#include "testutil.h"

#include <math.h>

#include "kareus/partition.h"

static kr_partition_set set;

static void slots_of(const kr_partition *p, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nslots; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "," : "", p->slots[i].name);
}

static void tp_keys_and_slots_match_the_reference(void **state)
{
    (void)state;
    kr_job j;
    kr_job_default(&j);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    assert_int_equal(set.n, 4);
    /* kareus-method.md §2 table: searched windows per key. */
    static const char *const want[][2] = {
        {"fwd_attn", "norm_0,linear_0,rope_0,attn_0"},
        {"fwd_mlp", "norm_0,linear_0,activation_0"},
        {"bwd_mlp", "norm_0,linear_0,activation_0"},
        {"bwd_attn", "norm_0,linear_0,attn_0,rope_0"},
    };
    for (int i = 0; i < 4; i++) {
        const kr_partition *p = kr_partition_find(&set, want[i][0]);
        assert_non_null(p);
        char buf[256];
        slots_of(p, buf, sizeof buf);
        assert_string_equal(buf, want[i][1]);
        assert_int_equal(p->per_layer, 2);
        assert_int_equal(p->coll.kind, KR_COLL_ALLREDUCE);
        assert_int_equal(p->coll.group_size, 8);
        /* [s, b/2, h] bf16 */
        assert_true(p->coll.bytes == 4096.0 * 4 * 3072 * 2);
        assert_int_equal(p->slots[0].op_index, 0);
    }
    const kr_partition *fa = kr_partition_find(&set, "fwd_attn");
    /* rope_0 sits right after the QKV GEMM; attn_0 right before the attention kernel. */
    assert_string_equal(fa->ops[fa->slots[2].op_index].name, "qkv_post");
    assert_string_equal(fa->ops[fa->slots[3].op_index].name, "core_attn");
    assert_string_equal(fa->ops[fa->slots[1].op_index].name, "linear_qkv");
}

static void cp_keys_and_slots_match_the_reference(void **state)
{
    (void)state;
    kr_job j;
    kr_error e = {0};
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &j, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    assert_int_equal(set.n, 12);
    static const char *const want[][3] = {
        {"fwd_qkv_ar", "norm_0,linear_0", "allreduce"},     {"fwd_qkv_ag", "norm_0,linear_0,rope_0", "allgather"},
        {"fwd_ao_ag", "attn_0,linear_0", "allgather"},      {"fwd_ao_ar", "attn_0", "allreduce"},
        {"fwd_mlp", "norm_0,linear_0,activation_0", "allreduce"}, {"bwd_mlp", "norm_0,linear_0,activation_0", "allreduce"},
        {"bwd_o_ar", "norm_0", "allreduce"},                {"bwd_o_ag", "norm_0,linear_0", "allgather"},
        {"bwd_a_ag", "attn_0", "allgather"},                {"bwd_a_rs", "attn_0", "reducescatter"},
        {"bwd_qkv_rs", "rope_0,linear_0", "reducescatter"}, {"bwd_qkv_ar", "rope_0,linear_0", "allreduce"},
    };
    for (int i = 0; i < 12; i++) {
        const kr_partition *p = &set.p[i];
        assert_string_equal(p->key, want[i][0]);
        char buf[256];
        slots_of(p, buf, sizeof buf);
        assert_string_equal(buf, want[i][1]);
        assert_string_equal(kr_coll_kind_name(p->coll.kind), want[i][2]);
        if (p->coll.kind == KR_COLL_ALLREDUCE) {
            assert_int_equal(p->coll.group_size, 4);
            assert_true(p->coll.bytes == 2048.0 * 4 * 3072 * 2); /* [s/cp, b/2, h] */
        } else {
            assert_int_equal(p->coll.group_size, 2);
            assert_true(p->coll.bytes == 2.0 * 4096 * 4 * 2 * 128 * 2); /* K and V [S, b/2, kv/tp, d] */
        }
    }
    /* Per-layer counts as the artifact composes them: MLP keys twice, the rest once. */
    assert_int_equal(kr_partition_find(&set, "fwd_mlp")->per_layer, 2);
    assert_int_equal(kr_partition_find(&set, "fwd_ao_ar")->per_layer, 1);
}

/* Forward FLOPs of one layer for the whole microbatch (per GPU): the closed form
 * 2·T·(h·(nh+2nkv)d + nh·d·h + 2F·h + F·h) + 4·b·nh·s·S·d/2. */
static double layer_fwd_flops(const kr_job *j)
{
    double b = j->microbatch_size, s = (double)j->seq_len / j->cp, S = j->seq_len, T = b * s;
    double h = j->model.hidden, F = (double)j->model.ffn / j->tp, nh = (double)j->model.heads / j->tp;
    double nkv = (double)j->model.kv_groups / j->tp, d = j->model.head_dim;
    if (nkv < 1)
        nkv = 1;
    return 2.0 * T * (h * (nh + 2 * nkv) * d + nh * d * h + 2 * F * h + F * h) + 4.0 * b * nh * s * S * d / 2.0;
}

static void flops_add_up_in_every_variant(void **state)
{
    (void)state;
    const char *jobs[] = {"default", "qwen3-1.7b-cp2tp4-mbs16-s4096", "llama3.2-3b-cp2tp4-mbs8-s8192"};
    for (size_t k = 0; k < 3; k++) {
        kr_job j;
        kr_error e = {0};
        assert_int_equal(kr_job_builtin(jobs[k], &j, &e), KR_OK);
        double want = layer_fwd_flops(&j);
        for (int v = 0; v < 3; v++) {
            assert_int_equal(kr_partition_catalog(&j, (kr_variant)v, &set, &e), KR_OK);
            double fwd_gemm_attn = 0, bwd = 0;
            for (int i = 0; i < set.n; i++) {
                const kr_partition *p = &set.p[i];
                for (int o = 0; o < p->nops; o++) {
                    const kr_op *op = &p->ops[o];
                    if (op->kind != KR_OP_GEMM && op->kind != KR_OP_ATTN)
                        continue;
                    if (p->backward)
                        bwd += p->per_layer * op->flops;
                    else
                        fwd_gemm_attn += p->per_layer * op->flops;
                }
            }
            /* CP nanobatched keys come in pairs sharing ops (qkv_ar/qkv_ag run the two halves). */
            KR_ASSERT_CLOSE(fwd_gemm_attn, want, 1e-9);
            /* Backward: GEMMs twice the forward, attention 2.5x. */
            assert_true(bwd > 2.0 * want && bwd < 2.5 * want);
        }
    }
}

static void baselines_have_fixed_knobs(void **state)
{
    (void)state;
    kr_job j;
    kr_job_default(&j);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_SEQUENTIAL, &set, &e), KR_OK);
    for (int i = 0; i < set.n; i++) {
        assert_int_equal(set.p[i].fixed_slot, KR_SLOT_NONE);
        assert_int_equal(set.p[i].fixed_sms, 24);
        assert_int_equal(set.p[i].per_layer, 1);
        assert_true(set.p[i].coll.bytes == 4096.0 * 8 * 3072 * 2);
    }
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_DEFAULT_OVERLAP, &set, &e), KR_OK);
    for (int i = 0; i < set.n; i++) {
        assert_int_equal(set.p[i].slots[set.p[i].fixed_slot].op_index, 0);
        assert_int_equal(set.p[i].fixed_sms, 24);
    }
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &j, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_SEQUENTIAL, &set, &e), KR_OK);
    assert_int_equal(set.n, 7);
    j.microbatch_size = 3;
    KR_ASSERT_ERR(kr_partition_catalog(&j, KR_VARIANT_KAREUS, &set, &e), KR_EINVAL, e,
                  "microbatch_size: expected an even number to split into two nanobatches");
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_SEQUENTIAL, &set, &e), KR_OK);
}

static void nonpartition_work_by_stage(void **state)
{
    (void)state;
    kr_job j;
    kr_job_default(&j);
    j.pp = 3;
    kr_error e = {0};
    assert_int_equal(kr_partition_nonpartition(&j, 0, 0, &set, &e), KR_OK);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.p[0].key, "embed_fwd");
    assert_int_equal(set.p[0].coll.kind, KR_COLL_ALLREDUCE);
    assert_int_equal(kr_partition_nonpartition(&j, 1, 1, &set, &e), KR_OK);
    assert_int_equal(set.n, 0);
    assert_int_equal(kr_partition_nonpartition(&j, 2, 0, &set, &e), KR_OK);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.p[0].key, "lmhead_fwd");
    assert_string_equal(set.p[1].key, "loss_fwd");
    /* LM head GEMM: 2·T·(V/tp)·h. */
    KR_ASSERT_CLOSE(set.p[0].ops[1].flops, 2.0 * 32768 * (128256.0 / 8) * 3072, 1e-12);
    assert_int_equal(kr_partition_nonpartition(&j, 2, 1, &set, &e), KR_OK);
    assert_string_equal(set.p[0].key, "lmhead_bwd");
    assert_int_equal(set.p[0].coll.kind, KR_COLL_ALLREDUCE);
    KR_ASSERT_ERR(kr_partition_nonpartition(&j, 3, 0, &set, &e), KR_ERANGE, e, "expected a stage in [0, 2], found 3");
}

static void slot_lookup_errors_list_the_valid_slots(void **state)
{
    (void)state;
    kr_job j;
    kr_job_default(&j);
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(&j, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = kr_partition_find(&set, "fwd_mlp");
    int idx;
    assert_int_equal(kr_partition_slot_index(p, "activation_0", &idx, &e), KR_OK);
    assert_int_equal(idx, 2);
    assert_int_equal(kr_partition_slot_index(p, "none", &idx, &e), KR_OK);
    assert_int_equal(idx, KR_SLOT_NONE);
    KR_ASSERT_ERR(kr_partition_slot_index(p, "rope_0", &idx, &e), KR_ENOTFOUND, e,
                  "expected a slot among {norm_0, linear_0, activation_0}, found 'rope_0'");
    assert_string_equal(kr_partition_slot_name(p, 1), "linear_0");
    assert_string_equal(kr_partition_slot_name(p, KR_SLOT_NONE), "none");
    assert_null(kr_partition_find(&set, "fwd_trail"));
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(tp_keys_and_slots_match_the_reference),
    cmocka_unit_test(cp_keys_and_slots_match_the_reference),
    cmocka_unit_test(flops_add_up_in_every_variant),
    cmocka_unit_test(baselines_have_fixed_knobs),
    cmocka_unit_test(nonpartition_work_by_stage),
    cmocka_unit_test(slot_lookup_errors_list_the_valid_slots),
};
KR_TEST_MAIN(tests)
