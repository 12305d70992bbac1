/* test_compose.c — composition of instruction options from partition frontiers: against the
 * brute-force cross product, provenance, non-partition work, errors. Frontiers come from the
 * simulator backend on a small configuration grid. */
#include "testutil.h"

#include <math.h>
#include <sys/wait.h>

#include "kareus/kareus.h"

static const int clocks[] = {1410, 1200, 960};
static const int smsv[] = {6, 12, 24};

/* Measures every (clock, slot <= 2 first slots, sms) of each key of the job's kareus variant. */
static int make_fronts(const kr_job *job, kr_backend *b, kr_partition_frontier *fr)
{
    kr_partition_set parts;
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(job, KR_VARIANT_KAREUS, &parts, &e), KR_OK);
    for (int i = 0; i < parts.n; i++) {
        const kr_partition *p = &parts.p[i];
        kr_frontier_init(&fr[i], job, p);
        kr_measured pts[64];
        int n = 0;
        for (int c = 0; c < 3; c++)
            for (int s = 0; s < (p->nslots < 2 ? p->nslots : 2); s++)
                for (int k = 0; k < 3; k++) {
                    kr_config cfg = {clocks[c], smsv[k], s, 0};
                    kr_measurement m;
                    assert_int_equal(kr_backend_measure(b, p, &cfg, &m), KR_OK);
                    memset(&pts[n], 0, sizeof pts[n]);
                    pts[n].config = cfg;
                    pts[n].time_s = m.time_s;
                    pts[n].energy_j = m.energy_j;
                    n++;
                }
        assert_int_equal(kr_frontier_set_points(&fr[i], pts, (size_t)n, &e), KR_OK);
    }
    return parts.n;
}

static double nonpart(const kr_job *job, kr_backend *b, int stage, int bwd, int freq, double *energy)
{
    kr_partition_set np;
    kr_error e = {0};
    assert_int_equal(kr_partition_nonpartition(job, stage, bwd, &np, &e), KR_OK);
    double t = 0;
    *energy = 0;
    for (int i = 0; i < np.n; i++) {
        kr_config c = {freq, np.p[i].fixed_sms, np.p[i].fixed_slot, 0};
        kr_measurement m;
        assert_int_equal(kr_backend_measure(b, &np.p[i], &c, &m), KR_OK);
        t += m.time_s;
        *energy += m.energy_j;
    }
    return t;
}

static void compose_matches_cross_product(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    kr_backend *b;
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    kr_partition_frontier fr[KR_MAX_PARTITIONS];
    int nf = make_fronts(&job, b, fr);
    kr_options o;
    kr_compose_stats st;
    assert_int_equal(kr_compose(&job, KR_VARIANT_KAREUS, fr, nf, b, &o, &st, &e), KR_OK);
    assert_int_equal(st.clocks, 3);
    double P = job.static_power_w;
    kr_partition_set parts;
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &parts, &e), KR_OK);
    for (int s = 0; s < job.pp; s++)
        for (int bwd = 0; bwd < 2; bwd++) {
            /* Keys of the instruction (backward: own keys, then the recomputed forward). */
            int key[16], nk = 0;
            for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < parts.n; i++)
                    if ((pass == 0 && parts.p[i].backward == bwd) || (pass == 1 && bwd && job.recompute && !parts.p[i].backward))
                        key[nk++] = i;
            /* Brute force: every combination of every measured point at each clock. */
            static double bt[200000], be[200000];
            int nb = 0;
            for (int c = 0; c < 3; c++) {
                double e0, t0 = nonpart(&job, b, s, bwd, clocks[c], &e0);
                int idx[16] = {0};
                const kr_measured *pts[16];
                size_t cnt[16];
                for (int k = 0; k < nk; k++)
                    kr_frontier_at_clock(&fr[key[k]], clocks[c], 0, &pts[k], &cnt[k]);
                for (;;) {
                    double t = t0, en = e0;
                    for (int k = 0; k < nk; k++) {
                        double mult = parts.p[key[k]].per_layer * job.layers_per_stage[s];
                        t += mult * pts[k][idx[k]].time_s;
                        en += mult * pts[k][idx[k]].energy_j;
                    }
                    assert_true(nb < 200000);
                    bt[nb] = t;
                    be[nb] = en;
                    nb++;
                    int k = 0;
                    while (k < nk && (size_t)++idx[k] == cnt[k])
                        idx[k++] = 0;
                    if (k == nk)
                        break;
                }
            }
            /* Pareto set of the brute force in (time, effective energy). */
            int npar = 0;
            for (int i = 0; i < nb; i++) {
                int dom = 0;
                for (int j = 0; j < nb && !dom; j++)
                    dom = (bt[j] < bt[i] && be[j] - P * bt[j] <= be[i] - P * bt[i]) ||
                          (bt[j] <= bt[i] && be[j] - P * bt[j] < be[i] - P * bt[i]);
                if (dom)
                    continue;
                npar++;
                /* It must be one of the composed options. */
                const kr_option_set *set = kr_options_get(&o, s, bwd ? KR_INSTR_BACKWARD : KR_INSTR_FORWARD, 0);
                int found = 0;
                for (int k = 0; k < set->n && !found; k++)
                    found = fabs(set->opt[k].time_s - bt[i]) <= 1e-12 * bt[i] &&
                            fabs(set->opt[k].energy_j - be[i]) <= 1e-12 * be[i];
                assert_true(found);
            }
            const kr_option_set *set = kr_options_get(&o, s, bwd ? KR_INSTR_BACKWARD : KR_INSTR_FORWARD, 0);
            /* Ties of identical sums collapse to one point: the composed set is the distinct
             * Pareto set. */
            assert_true(set->n <= npar && set->n >= 1);
            /* Provenance: the configs named by each option add up to its time and energy. */
            for (int k = 0; k < set->n; k++) {
                const kr_option *op = &set->opt[k];
                assert_int_equal(op->ncomm, nk);
                double e0, t = nonpart(&job, b, s, bwd, op->freq_mhz, &e0), en = e0;
                for (int c = 0; c < op->ncomm; c++) {
                    const kr_comm_setting *cs = &o.comm[op->comm_first + c];
                    const kr_partition_frontier *f = &fr[key[c]];
                    assert_string_equal(cs->key, f->key);
                    assert_int_equal(cs->recompute, c >= nk - (bwd && job.recompute ? 2 : 0) && bwd && job.recompute);
                    const kr_measured *pts;
                    size_t m;
                    kr_frontier_at_clock(f, op->freq_mhz, 0, &pts, &m);
                    int hit = 0;
                    for (size_t j = 0; j < m && !hit; j++)
                        if (pts[j].config.sms == cs->sms && strcmp(kr_frontier_slot_name(f, pts[j].config.slot), cs->slot) == 0) {
                            double mult = parts.p[key[c]].per_layer * job.layers_per_stage[s];
                            t += mult * pts[j].time_s;
                            en += mult * pts[j].energy_j;
                            hit = 1;
                        }
                    assert_true(hit);
                }
                KR_ASSERT_CLOSE(t, op->time_s, 1e-12);
                KR_ASSERT_CLOSE(en, op->energy_j, 1e-12);
            }
            printf("stage %d %s: %d combinations, %d composed options\n", s, bwd ? "backward" : "forward", nb, set->n);
        }
    kr_options_free(&o);
    for (int i = 0; i < nf; i++)
        kr_frontier_free(&fr[i]);
    kr_backend_destroy(b);
}

/* Composed options feed the solver and the plans validate against the job. */
static void compose_then_solve(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    kr_backend *b;
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    kr_partition_frontier fr[KR_MAX_PARTITIONS];
    int nf = make_fronts(&job, b, fr);
    const char *dir = kr_test_tmpdir("compose_files");
    char path[700];
    for (int i = 0; i < nf; i++) {
        char name[96];
        kr_frontier_file_name(fr[i].key, KR_VARIANT_KAREUS, i % 2 ? "csv" : "json", name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_int_equal(i % 2 ? kr_frontier_write_csv(path, &fr[i], &e) : kr_frontier_write_json(path, &fr[i], &e), KR_OK);
    }
    kr_partition_frontier rd[KR_MAX_PARTITIONS];
    assert_int_equal(kr_compose_read_frontiers(dir, &job, KR_VARIANT_KAREUS, rd, KR_MAX_PARTITIONS, &e), nf);
    kr_options o;
    assert_int_equal(kr_compose(&job, KR_VARIANT_KAREUS, rd, nf, b, &o, NULL, &e), KR_OK);
    snprintf(path, sizeof path, "%s/options.csv", dir);
    assert_int_equal(kr_options_write_csv(path, &o, &e), KR_OK);
    kr_options o2;
    assert_int_equal(kr_options_read_csv(path, job.pp, 1, &o2, &e), KR_OK);
    kr_dag d;
    assert_int_equal(kr_dag_pipeline(job.schedule, job.pp, job.num_microbatches, 1, NULL, &d, &e), KR_OK);
    kr_solver_config cfg;
    kr_solver_config_default(&cfg);
    cfg.static_power_w = job.static_power_w;
    cfg.gpus_per_stage = kr_job_gpus_per_stage(&job);
    /* The round trip is what is tested here: a coarse unit and no exchange passes keep the solve
     * short (seconds under the sanitizers, not minutes). */
    cfg.unit_time_s = 0.005;
    cfg.exchange = -1;
    kr_solve_result f;
    assert_int_equal(kr_solve(&d, &o2, &cfg, &f, &e), KR_OK);
    assert_true(f.nsteps > 1);
    kr_plan p;
    assert_int_equal(kr_solve_plan(&f, &d, &o2, f.nsteps - 1, &job, &p, &e), KR_OK);
    assert_string_equal(p.method, "kareus");
    if (kr_plan_validate(&p, &job, &e) != KR_OK) {
        print_error("%s\n", e.msg);
        fail();
    }
    /* Backward instructions carry the recompute configs. */
    int rec = 0;
    for (int i = 0; i < p.stages[0].ninstr; i++)
        for (int c = 0; c < p.stages[0].instr[i].ncomm; c++)
            rec += p.stages[0].instr[i].comm[c].recompute;
    assert_true(rec > 0);
    kr_plan_free(&p);
    kr_solve_result_free(&f);
    kr_dag_free(&d);
    kr_options_free(&o);
    kr_options_free(&o2);
    for (int i = 0; i < nf; i++) {
        kr_frontier_free(&fr[i]);
        kr_frontier_free(&rd[i]);
    }
    kr_backend_destroy(b);
}

static void compose_errors(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    kr_backend *b;
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    kr_partition_frontier fr[KR_MAX_PARTITIONS];
    int nf = make_fronts(&job, b, fr);
    kr_options o;
    KR_ASSERT_ERR(kr_compose(&job, KR_VARIANT_KAREUS, fr, nf - 1, b, &o, NULL, &e), KR_ENOTFOUND, e,
                  "no frontier for partition key");
    kr_job other = job;
    other.seq_len = 8192;
    KR_ASSERT_ERR(kr_compose(&other, KR_VARIANT_KAREUS, fr, nf, b, &o, NULL, &e), KR_EMISMATCH, e, "fingerprint");
    const char *dir = kr_test_tmpdir("compose_missing");
    kr_partition_frontier rd[KR_MAX_PARTITIONS];
    KR_ASSERT_ERR(kr_compose_read_frontiers(dir, &job, KR_VARIANT_KAREUS, rd, KR_MAX_PARTITIONS, &e), KR_ENOTFOUND, e,
                  "expected a frontier file fwd_attn.kareus.json");
    for (int i = 0; i < nf; i++)
        kr_frontier_free(&fr[i]);
    kr_backend_destroy(b);
}


static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `kareus compose` and `kareus solve --frontiers` on frontier files written by the library. */
static void compose_cli(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_error e = {0};
    kr_backend *b;
    assert_int_equal(kr_sim_backend_create(&job, NULL, &b, &e), KR_OK);
    kr_partition_frontier fr[KR_MAX_PARTITIONS];
    int nf = make_fronts(&job, b, fr);
    const char *dir = kr_test_tmpdir("compose_cli");
    char path[700], cmd[3000];
    for (int i = 0; i < nf; i++) {
        char name[96];
        kr_frontier_file_name(fr[i].key, KR_VARIANT_KAREUS, "json", name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_int_equal(kr_frontier_write_json(path, &fr[i], &e), KR_OK);
        kr_frontier_free(&fr[i]);
    }
    kr_backend_destroy(b);
    /* The frontiers hold 3 of the job's clocks: allowed, with a warning (an error without the flag). */
    snprintf(cmd, sizeof cmd, "%s compose --frontiers %s --out %s/opts.csv > %s/compose.out 2>&1", KR_CLI, dir, dir, dir);
    assert_int_equal(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s compose --frontiers %s --out %s/opts.csv --allow-missing-clocks > %s/compose.out 2>&1",
             KR_CLI, dir, dir, dir);
    assert_int_equal(run(cmd), 0);
    snprintf(path, sizeof path, "%s/opts.csv", dir);
    kr_options o;
    assert_int_equal(kr_options_read_csv(path, 2, 1, &o, &e), KR_OK);
    assert_true(o.ncomm > 0);
    kr_options_free(&o);
    snprintf(cmd, sizeof cmd,
             "%s solve --frontiers %s --frontier-out %s/f.csv --plans %s/plans --select fastest > %s/solve.out 2>&1 && "
             "%s plan validate %s/plans/plan_*.json --job default >> %s/solve.out 2>&1",
             KR_CLI, dir, dir, dir, dir, KR_CLI, dir, dir);
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s solve --options %s/opts.csv --job default --frontier-out %s/g.csv --quiet", KR_CLI, dir, dir);
    assert_int_equal(run(cmd), 0);
    /* A directory without the frontiers: exit 2 with the file expected. */
    snprintf(cmd, sizeof cmd, "%s compose --frontiers %s/nothing --out %s/x.csv 2> %s/err.txt", KR_CLI, dir, dir, dir);
    assert_int_equal(run(cmd), 2);
    snprintf(path, sizeof path, "%s/err.txt", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[1024] = "";
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    assert_non_null(strstr(line, "expected a frontier file fwd_attn.kareus.json"));
}

int main(int argc, char **argv);

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(compose_matches_cross_product),
    cmocka_unit_test(compose_then_solve),
    cmocka_unit_test(compose_errors),
    cmocka_unit_test(compose_cli),
};

KR_TEST_MAIN(tests)
