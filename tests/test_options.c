/* test_options.c — instruction options: CSV import/export round trip, config strings, and
 * precise errors for bad CSV input. */
#include "testutil.h"

#include <math.h>

#include "kareus/kareus.h"

static void golden_csv_loads(void **state)
{
    (void)state;
    kr_options o;
    kr_error e = {0};
    assert_int_equal(kr_options_read_csv(KR_TESTDATA_DIR "/golden/lowtime/opts_S4.csv", 0, 0, &o, &e), KR_OK);
    assert_int_equal(o.num_stages, 4);
    assert_int_equal(o.virtual_stages, 1);
    const kr_option_set *s = kr_options_get(&o, 3, KR_INSTR_BACKWARD, 0);
    assert_non_null(s);
    assert_int_equal(s->n, 18);
    assert_int_equal(s->opt[0].freq_mhz, 900);
    assert_null(kr_options_get(&o, 4, KR_INSTR_FORWARD, 0));
    kr_options_free(&o);
}

static void csv_round_trip_with_configs(void **state)
{
    (void)state;
    const char *text = "stage,instruction,frequency,time,energy,chunk,fwd_attn,recompute.fwd_attn,bwd_attn\n"
                       "0,forward,1410,0.0421,12.5,0,rope_0-none-12-1024,,\n"
                       "0,forward,1200,0.05,11.1,0,norm_0-none-3-1024,,\n"
                       "0,backward,1410,0.08,25.25,0,,attn_0-none-6-1024,linear_1-none-9-1024\n"
                       "0,forward,1410,0.0423,12.6,1,rope_0-none-12-1024,,\n"
                       "0,backward,1410,0.081,25.5,1,,,\n";
    kr_options o, p;
    kr_error e = {0};
    assert_int_equal(kr_options_parse_csv(text, "t.csv", 1, 2, &o, &e), KR_OK);
    const kr_option_set *b = kr_options_get(&o, 0, KR_INSTR_BACKWARD, 0);
    assert_int_equal(b->opt[0].ncomm, 2);
    const kr_comm_setting *c = &o.comm[b->opt[0].comm_first];
    assert_string_equal(c[0].key, "fwd_attn");
    assert_int_equal(c[0].recompute, 1);
    assert_string_equal(c[0].slot, "attn_0");
    assert_int_equal(c[0].sms, 6);
    assert_string_equal(c[1].key, "bwd_attn");
    assert_int_equal(c[1].recompute, 0);
    const char *dir = kr_test_tmpdir("options_rt");
    char path[600];
    snprintf(path, sizeof path, "%s/o.csv", dir);
    assert_int_equal(kr_options_write_csv(path, &o, &e), KR_OK);
    assert_int_equal(kr_options_read_csv(path, 0, 0, &p, &e), KR_OK);
    assert_int_equal(p.nsets, o.nsets);
    assert_int_equal(p.ncomm, o.ncomm);
    for (int i = 0; i < o.nsets; i++) {
        assert_int_equal(p.sets[i].n, o.sets[i].n);
        for (int j = 0; j < o.sets[i].n; j++) {
            const kr_option *x = &o.sets[i].opt[j], *y = &p.sets[i].opt[j];
            assert_true(x->time_s == y->time_s && x->energy_j == y->energy_j && x->freq_mhz == y->freq_mhz);
            assert_int_equal(x->ncomm, y->ncomm);
            for (int k = 0; k < x->ncomm; k++) {
                const kr_comm_setting *u = &o.comm[x->comm_first + k], *v = &p.comm[y->comm_first + k];
                assert_string_equal(u->key, v->key);
                assert_string_equal(u->slot, v->slot);
                assert_int_equal(u->sms, v->sms);
                assert_int_equal(u->recompute, v->recompute);
            }
        }
    }
    kr_options_free(&o);
    kr_options_free(&p);
}

static void config_strings(void **state)
{
    (void)state;
    kr_comm_setting c;
    kr_error e = {0};
    assert_int_equal(kr_comm_setting_parse("rope_0-none-12-1024", &c, &e), KR_OK);
    assert_string_equal(c.slot, "rope_0");
    assert_int_equal(c.sms, 12);
    char buf[64];
    kr_comm_setting_format(&c, buf, sizeof buf);
    assert_string_equal(buf, "rope_0-none-12-1024");
    assert_int_equal(c.kernel, KR_KERNEL_TUNED);
    /* NCCL (issue 31): our suffix on the artifact's string. */
    assert_int_equal(kr_comm_setting_parse("norm_0-none-24-1024-nccl", &c, &e), KR_OK);
    assert_string_equal(c.slot, "norm_0");
    assert_int_equal(c.sms, 24);
    assert_int_equal(c.kernel, KR_KERNEL_NCCL);
    kr_comm_setting_format(&c, buf, sizeof buf);
    assert_string_equal(buf, "norm_0-none-24-1024-nccl");
    KR_ASSERT_ERR(kr_comm_setting_parse("rope_0-linear_1-12-1024", &c, &e), KR_EPARSE, e, "expected overlap_end 'none'");
    KR_ASSERT_ERR(kr_comm_setting_parse("rope_0-none-x-1024", &c, &e), KR_EPARSE, e, "expected an SM count, found 'x'");
    KR_ASSERT_ERR(kr_comm_setting_parse("rope_0", &c, &e), KR_EPARSE, e, "<start>-<end>-<sm>-<block>");
}

static void bad_csv_errors(void **state)
{
    (void)state;
    kr_options o;
    kr_error e = {0};
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time\n0,forward,1410,0.1\n", "a.csv", 0, 0, &o, &e),
                  KR_EPARSE, e, "a.csv:1: expected a column named 'energy'");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,forward,1410,0.1,5\n"
                                       "2,backward,1410,0.1,5\n", "b.csv", 2, 0, &o, &e),
                  KR_ERANGE, e, "b.csv:3: column 'stage': expected a stage in [0, 1], found 2");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,forward,1410,0.1,nan\n", "c.csv", 0, 0,
                                       &o, &e),
                  KR_EPARSE, e, "c.csv:2: column 'energy': expected a finite number, found 'nan'");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,forward,1410,0.1,-3\n", "d.csv", 0, 0,
                                       &o, &e),
                  KR_ERANGE, e, "d.csv:2: column 'energy': expected an energy >= 0 J, found -3");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,forward,1410,0,3\n", "e.csv", 0, 0, &o,
                                       &e),
                  KR_ERANGE, e, "e.csv:2: column 'time': expected a time > 0 s, found 0");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,forward,1410,0.1,3\n", "f.csv", 0, 0, &o,
                                       &e),
                  KR_EINVAL, e, "f.csv: options: stage 0 backward (chunk 0): expected at least one option, found none");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n0,sideways,1410,0.1,3\n", "g.csv", 0, 0,
                                       &o, &e),
                  KR_EPARSE, e, "g.csv:2: column 'instruction': expected 'forward' or 'backward', found 'sideways'");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy,fwd_attn\n0,forward,1410,0.1,3,oops\n",
                                       "h.csv", 0, 0, &o, &e),
                  KR_EPARSE, e, "h.csv:2: column 'fwd_attn': expected a config string");
    KR_ASSERT_ERR(kr_options_parse_csv("stage,instruction,frequency,time,energy\n", "i.csv", 0, 0, &o, &e), KR_EINVAL, e,
                  "i.csv: expected option rows");
    KR_ASSERT_ERR(kr_options_read_csv("/nonexistent/x.csv", 0, 0, &o, &e), KR_EIO, e, "/nonexistent/x.csv");
}

static void add_rejects_bad_values(void **state)
{
    (void)state;
    kr_options o;
    kr_error e = {0};
    assert_int_equal(kr_options_init(&o, 1, 1, &e), KR_OK);
    kr_option op = {0.1, NAN, 1410, -1, 0};
    KR_ASSERT_ERR(kr_options_add(&o, 0, KR_INSTR_FORWARD, 0, &op, NULL, 0, &e), KR_ERANGE, e, "expected a finite energy");
    op.energy_j = 1;
    op.time_s = -1;
    KR_ASSERT_ERR(kr_options_add(&o, 0, KR_INSTR_FORWARD, 0, &op, NULL, 0, &e), KR_ERANGE, e, "expected a time > 0 s");
    op.time_s = 1;
    KR_ASSERT_ERR(kr_options_add(&o, 1, KR_INSTR_FORWARD, 0, &op, NULL, 0, &e), KR_ERANGE, e, "found stage 1");
    kr_options_free(&o);
    KR_ASSERT_ERR(kr_options_init(&o, 0, 1, &e), KR_ERANGE, e, "stages");
}

/* Merak's per-rank rows: one option per (stage, instruction, clock) with the slowest rank's time
 * and the ranks' mean energy; a pp_rank that disagrees with the stage is an error. */
static void merak_rank_columns(void **state)
{
    (void)state;
    const char *text = "rank,dp_rank,pp_rank,tp_rank,stage,instruction,frequency,time,energy\n"
                       "0,0,0,0,0,forward,1410,0.10,30\n"
                       "1,0,0,1,0,forward,1410,0.12,34\n"
                       "0,0,0,0,0,forward,1200,0.13,27\n"
                       "1,0,0,1,0,forward,1200,0.125,29\n"
                       "0,0,0,0,0,backward,1410,0.2,60\n"
                       "1,0,0,1,0,backward,1410,0.2,62\n";
    kr_options o;
    kr_error e = {0};
    assert_int_equal(kr_options_parse_csv(text, "merak.csv", 1, 1, &o, &e), KR_OK);
    const kr_option_set *f = kr_options_get(&o, 0, KR_INSTR_FORWARD, 0);
    assert_int_equal(f->n, 2);
    assert_int_equal(f->opt[0].freq_mhz, 1410);
    assert_true(f->opt[0].time_s == 0.12 && f->opt[0].energy_j == 32);
    assert_true(f->opt[1].time_s == 0.13 && f->opt[1].energy_j == 28);
    assert_int_equal(f->opt[0].ncomm, 0);
    assert_int_equal(kr_options_get(&o, 0, KR_INSTR_BACKWARD, 0)->n, 1);
    kr_options_free(&o);
    const char *bad = "rank,dp_rank,pp_rank,tp_rank,stage,instruction,frequency,time,energy\n"
                      "0,0,0,0,0,forward,1410,0.10,30\n"
                      "8,0,1,0,0,backward,1410,0.2,60\n";
    KR_ASSERT_ERR(kr_options_parse_csv(bad, "merak.csv", 1, 1, &o, &e), KR_EMISMATCH, e,
                  "merak.csv:3: column 'pp_rank': expected the row's stage 0, found 1");
}

/* The artifact's Kareus profile CSVs (tests/kareus/generate_profile_csv.py): CP 1 names its
 * config columns by role; CP > 1 by key, with the forward keys' columns on backward rows holding
 * the recomputed forward. */
static void artifact_profile_columns(void **state)
{
    (void)state;
    const char *cp1 = "stage,instruction,frequency,recompute_attention_configs,recompute_mlp_configs,attention_configs,"
                      "mlp_configs,time,energy\n"
                      "0,forward,1410,,,rope_0-none-12-1024,norm_0-none-6-1024,0.0956,31.2\n"
                      "0,backward,1410,attn_0-none-18-1024,activation_0-none-24-1024,attn_0-none-9-1024,"
                      "linear_0-none-12-1024,0.25,87.0\n";
    kr_options o;
    kr_error e = {0};
    assert_int_equal(kr_options_parse_csv(cp1, "profile.csv", 1, 1, &o, &e), KR_OK);
    const kr_option *fo = &kr_options_get(&o, 0, KR_INSTR_FORWARD, 0)->opt[0];
    assert_int_equal(fo->ncomm, 2);
    assert_string_equal(o.comm[fo->comm_first].key, "fwd_attn");
    assert_string_equal(o.comm[fo->comm_first].slot, "rope_0");
    assert_string_equal(o.comm[fo->comm_first + 1].key, "fwd_mlp");
    const kr_option *bo = &kr_options_get(&o, 0, KR_INSTR_BACKWARD, 0)->opt[0];
    assert_int_equal(bo->ncomm, 4);
    const kr_comm_setting *c = &o.comm[bo->comm_first];
    assert_string_equal(c[0].key, "fwd_attn");
    assert_int_equal(c[0].recompute, 1);
    assert_int_equal(c[0].sms, 18);
    assert_string_equal(c[1].key, "fwd_mlp");
    assert_int_equal(c[1].recompute, 1);
    assert_string_equal(c[2].key, "bwd_attn");
    assert_int_equal(c[2].recompute, 0);
    assert_string_equal(c[3].key, "bwd_mlp");
    assert_string_equal(c[3].slot, "linear_0");
    kr_options_free(&o);
    const char *cp2 = "stage,instruction,frequency,fwd_qkv_ar,fwd_mlp,bwd_qkv_ar,bwd_mlp,time,energy\n"
                      "0,forward,1410,norm_0-none-6-1024,linear_0-none-9-1024,,,0.1,30\n"
                      "0,backward,1410,norm_0-none-3-1024,linear_0-none-6-1024,rope_0-none-9-1024,"
                      "norm_0-none-12-1024,0.2,60\n";
    assert_int_equal(kr_options_parse_csv(cp2, "cp.csv", 1, 1, &o, &e), KR_OK);
    bo = &kr_options_get(&o, 0, KR_INSTR_BACKWARD, 0)->opt[0];
    assert_int_equal(bo->ncomm, 4);
    c = &o.comm[bo->comm_first];
    assert_true(strcmp(c[0].key, "fwd_qkv_ar") == 0 && c[0].recompute == 1);
    assert_true(strcmp(c[1].key, "fwd_mlp") == 0 && c[1].recompute == 1);
    assert_true(strcmp(c[2].key, "bwd_qkv_ar") == 0 && c[2].recompute == 0);
    fo = &kr_options_get(&o, 0, KR_INSTR_FORWARD, 0)->opt[0];
    assert_true(strcmp(o.comm[fo->comm_first].key, "fwd_qkv_ar") == 0 && o.comm[fo->comm_first].recompute == 0);
    kr_options_free(&o);
    const char *bad = "stage,instruction,frequency,recompute_attention_configs,attention_configs,time,energy\n"
                      "0,forward,1410,rope_0-none-12-1024,rope_0-none-12-1024,0.1,30\n";
    KR_ASSERT_ERR(kr_options_parse_csv(bad, "p.csv", 1, 1, &o, &e), KR_EPARSE, e,
                  "p.csv:2: column 'recompute_attention_configs': expected an empty cell on a forward row");
}

int main(int argc, char **argv);

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(golden_csv_loads),
    cmocka_unit_test(csv_round_trip_with_configs),
    cmocka_unit_test(config_strings),
    cmocka_unit_test(bad_csv_errors),
    cmocka_unit_test(add_rejects_bad_values),
    cmocka_unit_test(merak_rank_columns),
    cmocka_unit_test(artifact_profile_columns),
};

KR_TEST_MAIN(tests)
