/* test_search_space.c — the search space's kernels and restrictions (issue 31): which knobs each
 * restrict_space flag fixes, the baseline entry when the baseline's execution is off the grid.
 * Split from test_search.c (the sizes, the index round trip and the log live there). */
#include "testutil.h"

#include "kareus/search.h"
#include "kareus/sim.h"

int main(int argc, char **argv);

static const kr_partition *find(const kr_partition_set *s, const char *key)
{
    const kr_partition *p = kr_partition_find(s, key);
    assert_non_null(p);
    return p;
}

/* restrict_space (an ablation): which knobs each flag fixes, and that the baseline's execution
 * is then no extra candidate; every restricted configuration is one of the whole space (the
 * CTA count fixed at NCCL's 24 is on the all-reduce list). */
static void restricted_spaces_fix_their_knobs(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_attn");
    kr_search_space all, sp;
    assert_int_equal(kr_search_space_init(&job, p, &all, &e), KR_OK);
    static const struct {
        unsigned flags;
        int nkernels, kernel0, nslots, nsms;
    } cases[] = {{KR_SEARCH_ONLY_TUNED, 1, KR_KERNEL_TUNED, 4, 10},
                 {KR_SEARCH_ONLY_NCCL, 1, KR_KERNEL_NCCL, 4, 10},
                 {KR_SEARCH_FIX_SMS, 2, KR_KERNEL_TUNED, 4, 1},
                 {KR_SEARCH_FIX_SLOT, 2, KR_KERNEL_TUNED, 1, 10},
                 {KR_SEARCH_FIX_SMS | KR_SEARCH_FIX_SLOT | KR_SEARCH_ONLY_NCCL, 1, KR_KERNEL_NCCL, 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(kr_search_space_init_restricted(&job, p, cases[i].flags, &sp, &e), KR_OK);
        assert_int_equal(sp.nkernels, cases[i].nkernels);
        assert_int_equal(sp.kernels[0], cases[i].kernel0);
        assert_int_equal(sp.nslots, cases[i].nslots);
        assert_int_equal(sp.nsms, cases[i].nsms);
        assert_int_equal(sp.has_base, 0);
        assert_int_equal(sp.nbase, 0);
        assert_int_equal(kr_search_space_size(&sp), 18L * cases[i].nkernels * cases[i].nslots * cases[i].nsms);
        if (cases[i].flags & KR_SEARCH_FIX_SMS)
            assert_int_equal(sp.sms[0], (int)job.gpu.nccl_ctas);
        if (cases[i].flags & KR_SEARCH_FIX_SLOT)
            assert_int_equal(p->slots[sp.slots[0]].op_index, 0);
        for (long k = 0; k < kr_search_space_size(&sp); k++) {
            kr_config c;
            long idx;
            kr_search_space_config(&sp, k, &c);
            assert_int_equal(kr_search_space_index(&all, &c, &idx, &e), KR_OK);
        }
    }
    KR_ASSERT_ERR(kr_search_space_init_restricted(&job, p, KR_SEARCH_ONLY_TUNED | KR_SEARCH_ONLY_NCCL, &sp, &e),
                  KR_EINVAL, e, "at most one ONLY_ kernel");
    KR_ASSERT_ERR(kr_search_space_init_restricted(&job, p, 1u << 9, &sp, &e), KR_EINVAL, e, "restrict_space");
    /* Baselines search the clock whatever the flags. */
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, &set, &e), KR_OK);
    assert_int_equal(kr_search_space_init_restricted(&job, find(&set, "fwd_attn"), KR_SEARCH_FIX_SLOT, &sp, &e), KR_OK);
    assert_int_equal(kr_search_space_size(&sp), 18);
    /* The baseline block: NCCL left out of planning.comm_kernels, so its execution is one
     * configuration more per clock, after the clock's grid, and indexes back to itself. */
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    job.ncomm_kernels = 1;
    assert_int_equal(kr_search_space_init(&job, find(&set, "fwd_attn"), &sp, &e), KR_OK);
    assert_int_equal(sp.nbase, 1);
    assert_int_equal(kr_search_space_size(&sp), 18 * 41);
    for (int ci = 0; ci < 18; ci++) {
        kr_config c;
        long idx;
        kr_search_space_config(&sp, ci * 41L + 40, &c);
        assert_int_equal(c.kernel, KR_KERNEL_NCCL);
        assert_int_equal(c.sms, (int)job.gpu.nccl_ctas);
        assert_int_equal(c.freq_mhz, sp.clocks[ci]);
        assert_int_equal(kr_search_space_index(&sp, &c, &idx, &e), KR_OK);
        assert_int_equal(idx, ci * 41L + 40);
        c.sms = 3; /* NCCL elsewhere is not in this space */
        KR_ASSERT_ERR(kr_search_space_index(&sp, &c, &idx, &e), KR_ERANGE, e, "kernel: expected one of {0}");
    }
}

/* KR_SEARCH_UNCOUPLED (the clock coupling off): the frontier holds one comm configuration at
 * every clock, the fastest of those measured at the highest clock — with exhaustive search the
 * fastest of the whole top-clock grid, with a capped bo one bo measured there (the same seed and
 * cap unrestricted measure it too), then measured at every clock beyond the cap; the parser knows
 * the name. */
static void uncoupled_holds_the_top_clock_choice(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    kr_backend *b = NULL;
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    static const char *const keys[] = {"fwd_attn", "bwd_mlp"};
    for (int strat = 0; strat < 2; strat++) {
        for (int k = 0; k < 2; k++) {
            const kr_partition *p = find(&set, keys[k]);
            kr_search_config o;
            kr_search_config_default(&o);
            o.strategy = strat ? KR_STRATEGY_BO : KR_STRATEGY_EXHAUSTIVE;
            o.max_evals = strat ? 60 : 0;
            o.restrict_space = KR_SEARCH_UNCOUPLED;
            kr_partition_frontier f;
            kr_search_stats st;
            assert_int_equal(kr_search_partition(&job, p, b, NULL, &o, &f, &st, &e), KR_OK);
            assert_int_equal(f.n, 18);
            for (size_t i = 1; i < f.n; i++) {
                assert_int_equal(f.pts[i].config.kernel, f.pts[0].config.kernel);
                assert_int_equal(f.pts[i].config.sms, f.pts[0].config.sms);
                assert_int_equal(f.pts[i].config.slot, f.pts[0].config.slot);
                assert_true(f.pts[i].config.freq_mhz < f.pts[i - 1].config.freq_mhz);
            }
            /* The held configuration is the fastest at the top clock of the same search unrestricted
             * (exhaustive: every point; bo: the same seed and cap measure the same points). */
            o.restrict_space = 0;
            kr_partition_frontier g;
            assert_int_equal(kr_search_partition(&job, p, b, NULL, &o, &g, NULL, &e), KR_OK);
            const kr_measured *best = NULL, *same = NULL;
            for (size_t i = 0; i < g.n; i++) {
                const kr_measured *q = &g.pts[i];
                if (q->config.freq_mhz != f.pts[0].config.freq_mhz)
                    continue;
                if (!best || q->time_s < best->time_s)
                    best = q;
                if (q->config.kernel == f.pts[0].config.kernel && q->config.sms == f.pts[0].config.sms &&
                    q->config.slot == f.pts[0].config.slot)
                    same = q;
            }
            assert_non_null(same);
            assert_true(same->time_s == f.pts[0].time_s);
            if (!strat) /* exhaustive: the fastest of the whole top-clock grid */
                assert_true(f.pts[0].time_s == best->time_s);
            else /* bo: 60 measured, then the held configuration at the clocks it left out */
                assert_true(st.evaluated >= 60 && st.evaluated <= 60 + 17);
            kr_frontier_free(&f);
            kr_frontier_free(&g);
        }
    }
    kr_backend_destroy(b);
    unsigned flags = 0;
    assert_int_equal(kr_search_restrict_parse("fix-slot,uncoupled", &flags, &e), KR_OK);
    assert_int_equal(flags, KR_SEARCH_FIX_SLOT | KR_SEARCH_UNCOUPLED);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(restricted_spaces_fix_their_knobs),
    cmocka_unit_test(uncoupled_holds_the_top_clock_choice),
};

KR_TEST_MAIN(tests)
