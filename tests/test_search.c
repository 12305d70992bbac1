/* test_search.c — search spaces, the exhaustive strategy, the measurement log (resume after a
 * crash, torn lines, precise errors), the replay backend, job-wide searches. The sample-efficient
 * strategies are tested in test_search_bo.c. Every search here runs on the synthetic backend of
 * search_fake.h. */
#include "testutil.h"

#include <unistd.h>

#include "kareus/search.h"
#include "search_fake.h"
#include "util/util.h"

int main(int argc, char **argv);

static const kr_partition *find(const kr_partition_set *s, const char *key)
{
    const kr_partition *p = kr_partition_find(s, key);
    assert_non_null(p);
    return p;
}

static long space_size_of(const kr_job *job, const kr_partition *p)
{
    kr_search_space sp;
    kr_error e = {0};
    assert_int_equal(kr_search_space_init(job, p, &sp, &e), KR_OK);
    return kr_search_space_size(&sp);
}

/* The size of p's space with the tuned kernel alone and no baseline: the reference's space. */
static long tuned_size_of(const kr_job *job, const kr_partition *p)
{
    kr_search_space sp;
    kr_error e = {0};
    assert_int_equal(kr_search_space_init_restricted(job, p, KR_SEARCH_ONLY_TUNED, &sp, &e), KR_OK);
    return kr_search_space_size(&sp);
}

static void space_sizes_match_reference(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    /* kareus-method.md §2: 18 clocks × SM values × slots, with the tuned kernel; ours holds NCCL
     * too (issue 31), and the A100's 24 NCCL channels are on sms_allreduce: no baseline block. */
    assert_int_equal(tuned_size_of(&job, find(&set, "fwd_attn")), 720);
    assert_int_equal(tuned_size_of(&job, find(&set, "fwd_mlp")), 540);
    assert_int_equal(tuned_size_of(&job, find(&set, "bwd_attn")), 720);
    assert_int_equal(tuned_size_of(&job, find(&set, "bwd_mlp")), 540);
    assert_int_equal(space_size_of(&job, find(&set, "fwd_attn")), 1440);
    assert_int_equal(space_size_of(&job, find(&set, "fwd_mlp")), 1080);
    assert_int_equal(space_size_of(&job, find(&set, "bwd_attn")), 1440);
    assert_int_equal(space_size_of(&job, find(&set, "bwd_mlp")), 1080);
    kr_search_space sp;
    assert_int_equal(kr_search_space_init(&job, find(&set, "fwd_attn"), &sp, &e), KR_OK);
    assert_int_equal(sp.nclocks, 18);
    assert_int_equal(sp.clocks[0], 1410);
    assert_int_equal(sp.clocks[17], 900);
    assert_int_equal(sp.nsms, 10);
    assert_int_equal(sp.sms[0], 3);
    assert_int_equal(sp.sms[9], 30);
    assert_int_equal(sp.nslots, 4);
    assert_int_equal(sp.nkernels, 2);
    assert_int_equal(sp.has_base, 1);
    assert_int_equal(sp.nbase, 0);

    kr_job cp;
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &cp, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&cp, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    static const struct {
        const char *key;
        long size;
    } table[] = {{"fwd_qkv_ar", 360}, {"fwd_qkv_ag", 1080}, {"fwd_ao_ag", 720}, {"fwd_ao_ar", 180},
                 {"fwd_mlp", 540},    {"bwd_mlp", 540},     {"bwd_qkv_ar", 360}, {"bwd_qkv_rs", 720},
                 {"bwd_a_rs", 360},   {"bwd_a_ag", 360},    {"bwd_o_ag", 720},  {"bwd_o_ar", 180}};
    assert_int_equal(set.n, 12);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const kr_partition *q = find(&set, table[i].key);
        long got = tuned_size_of(&cp, q);
        if (got != table[i].size)
            fail_msg("%s: space %ld, reference %ld", table[i].key, got, table[i].size);
        /* Both kernels; all-gathers and reduce-scatters search 1..20 CTAs, so NCCL's 24 are a
         * baseline block: one configuration more per clock. */
        long want = 2 * table[i].size + (q->coll.kind == KR_COLL_ALLREDUCE ? 0 : 18);
        if ((got = space_size_of(&cp, q)) != want)
            fail_msg("%s: space %ld, expected %ld", table[i].key, got, want);
    }
    /* Baselines and non-partition work: the clock only. */
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_SEQUENTIAL, &set, &e), KR_OK);
    assert_int_equal(space_size_of(&job, find(&set, "fwd_attn")), 18);
    assert_int_equal(kr_search_space_init(&job, find(&set, "fwd_attn"), &sp, &e), KR_OK);
    assert_int_equal(sp.slots[0], KR_SLOT_NONE);
    assert_int_equal(sp.sms[0], (int)job.gpu.nccl_ctas);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, &set, &e), KR_OK);
    assert_int_equal(space_size_of(&job, find(&set, "bwd_mlp")), 18);
    assert_int_equal(kr_search_partitions(&job, KR_VARIANT_KAREUS, 1, &set, &e), KR_OK);
    assert_int_equal(set.n, 10);
    assert_int_equal(space_size_of(&job, find(&set, "loss_bwd")), 18);
    assert_int_equal(kr_search_space_init(&job, find(&set, "loss_fwd"), &sp, &e), KR_OK);
    assert_int_equal(sp.sms[0], 0);
    /* Down to the GPU's native clock step. */
    job.clock_step_mhz = (int)job.gpu.clock_step_mhz;
    assert_int_equal(kr_job_validate(&job, &e), KR_OK);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    long nclk = (job.clock_max_mhz - job.clock_min_mhz) / job.clock_step_mhz + 1;
    assert_true(nclk > 18);
    assert_int_equal(space_size_of(&job, find(&set, "fwd_attn")), nclk * 80);
}

static void space_index_round_trip_and_errors(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    kr_search_space sp;
    assert_int_equal(kr_search_space_init(&job, find(&set, "fwd_mlp"), &sp, &e), KR_OK);
    for (long i = 0; i < kr_search_space_size(&sp); i++) {
        kr_config c;
        long j;
        kr_search_space_config(&sp, i, &c);
        assert_int_equal(kr_search_space_index(&sp, &c, &j, &e), KR_OK);
        assert_int_equal(j, i);
    }
    kr_config c = {1415, 3, 0, 0};
    long j;
    KR_ASSERT_ERR(kr_search_space_index(&sp, &c, &j, &e), KR_ERANGE, e, "freq: expected a planning clock");
    c = (kr_config){1410, 4, 0, 0};
    KR_ASSERT_ERR(kr_search_space_index(&sp, &c, &j, &e), KR_ERANGE, e, "sm: expected one of {3, 6, 9");
    c = (kr_config){1410, 3, 3, 0};
    KR_ASSERT_ERR(kr_search_space_index(&sp, &c, &j, &e), KR_ERANGE, e, "slot");
    /* Empty clock list and empty SM list. */
    kr_job bad = job;
    bad.clock_min_mhz = 1500;
    KR_ASSERT_ERR(kr_search_space_init(&bad, find(&set, "fwd_mlp"), &sp, &e), KR_EINVAL, e, "non-empty clock list");
    bad = job;
    bad.sms_allreduce.n = 0;
    KR_ASSERT_ERR(kr_search_space_init(&bad, find(&set, "fwd_mlp"), &sp, &e), KR_EINVAL, e,
                  "planning.sms_allreduce: expected a non-empty comm-SM list");
    assert_int_equal(kr_strategy_parse("bo", &(kr_strategy){0}), KR_OK);
    assert_int_equal(kr_strategy_parse("random", &(kr_strategy){0}), KR_EINVAL);
}

static void assert_frontiers_equal(const kr_partition_frontier *a, const kr_partition_frontier *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_memory_equal(&a->pts[i].config, &b->pts[i].config, sizeof(kr_config));
        assert_true(a->pts[i].time_s == b->pts[i].time_s);
        assert_true(a->pts[i].energy_j == b->pts[i].energy_j);
        assert_int_equal(a->pts[i].flags, b->pts[i].flags);
    }
}

static void exhaustive_measures_every_config_once(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    fake_impl *fi = NULL;
    kr_backend *b = fake_backend(&job, 0, &fi);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    kr_partition_frontier f;
    kr_search_stats st;
    assert_int_equal(kr_search_partition(&job, find(&set, "fwd_attn"), b, NULL, &o, &f, &st, &e), KR_OK);
    assert_int_equal(f.n, 1440);
    assert_int_equal(fi->calls, 1440);
    assert_int_equal(st.evaluated, 1440);
    assert_int_equal(st.measured, 1440);
    assert_int_equal(st.from_log, 0);
    assert_string_equal(st.stop, "space exhausted");
    assert_true(st.hv_eff > 0 && st.hv_total > 0);
    assert_true(st.front_eff >= 2);
    assert_string_equal(f.strategy, "exhaustive");
    assert_string_equal(f.backend, "synthetic");
    assert_int_equal(f.space_size, 1440);
    /* Every clock has a per-clock Pareto set. */
    int clocks[32];
    assert_int_equal(kr_frontier_clocks(&f, clocks, 32), 18);
    for (int i = 0; i < 18; i++) {
        const kr_measured *m;
        size_t k;
        kr_frontier_at_clock(&f, clocks[i], 1, &m, &k);
        assert_true(k >= 1);
    }
    kr_frontier_free(&f);
    /* A cap stops it early. */
    o.max_evals = 100;
    assert_int_equal(kr_search_partition(&job, find(&set, "fwd_attn"), b, NULL, &o, &f, &st, &e), KR_OK);
    /* … and the baseline's execution is evaluated at every clock beyond the cap: the first 100
     * hold it at 1410 MHz, the other 17 clocks add theirs. */
    assert_int_equal(f.n, 117);
    assert_string_equal(st.stop, "budget");
    for (int i = 0; i < 18; i++) {
        kr_config c = {clocks[i], (int)job.gpu.nccl_ctas, 0, KR_KERNEL_NCCL};
        int found = 0;
        for (size_t k = 0; k < f.n; k++)
            found |= memcmp(&f.pts[k].config, &c, sizeof c) == 0;
        assert_true(found);
    }
    kr_frontier_free(&f);
    kr_backend_destroy(b);
}

/* Measurement lines of a log: its lines less the header line. */
static long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n - 1;
}

/* Runs a search of key with a fresh log handle on path; returns its status. */
static int search_with_log(const kr_job *job, const kr_partition *p, kr_backend *b, const char *path,
                           const kr_search_config *o, kr_partition_frontier *f, kr_search_stats *st, kr_error *e)
{
    kr_search_log *log;
    int rc = kr_search_log_open(path, job, &log, e);
    if (rc)
        return rc;
    rc = kr_search_partition(job, p, b, log, o, f, st, e);
    kr_search_log_close(log);
    return rc;
}

static void resume_after_crash_loses_and_duplicates_nothing(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_mlp");
    const char *dir = kr_test_tmpdir("search_resume");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    kr_search_config o;
    kr_search_config_default(&o);
    /* The reference's space (tuned kernel, no baseline): these counts are the log's mechanics. */
    o.restrict_space = KR_SEARCH_ONLY_TUNED;
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    /* Reference: an uninterrupted run without a log. */
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_partition_frontier ref, f;
    assert_int_equal(kr_search_partition(&job, p, b, NULL, &o, &ref, NULL, &e), KR_OK);
    kr_backend_destroy(b);
    /* Crash on call 200, in the middle of clock 11's configurations. */
    fake_impl *fi = NULL;
    b = fake_backend(&job, 200, &fi);
    kr_backend *crashed = b;
    KR_ASSERT_ERR(search_with_log(&job, p, b, path, &o, &f, NULL, &e), KR_EBACKEND, e, "injected failure on call 200");
    assert_int_equal(count_lines(path), 199);
    assert_int_equal(fi->ncfg, 199);
    /* Rerun: the 199 come from the log, the rest are measured, nothing twice. */
    fake_impl *fi2 = NULL;
    b = fake_backend(&job, 0, &fi2);
    kr_search_stats st;
    assert_int_equal(search_with_log(&job, p, b, path, &o, &f, &st, &e), KR_OK);
    assert_int_equal(st.from_log, 199);
    assert_int_equal(st.measured, 540 - 199);
    assert_int_equal(fi2->calls, 540 - 199);
    assert_int_equal(count_lines(path), 540);
    for (long i = 0; i < fi2->ncfg; i++) /* none of the logged ones measured again */
        for (long j = 0; j < fi->ncfg; j++)
            assert_false(memcmp(&fi2->cfg[i], &fi->cfg[j], sizeof(kr_config)) == 0);
    assert_frontiers_equal(&ref, &f);
    kr_frontier_free(&f);
    kr_backend_destroy(crashed);
    /* The log holds each configuration once. */
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_string_equal(kr_search_log_warning(log), "");
    assert_int_equal(kr_search_log_count(log), 540);
    kr_search_log_close(log);
    /* A third run measures nothing. */
    fake_impl *fi3 = NULL;
    kr_backend *b3 = fake_backend(&job, 0, &fi3);
    assert_int_equal(search_with_log(&job, p, b3, path, &o, &f, &st, &e), KR_OK);
    assert_int_equal(fi3->calls, 0);
    assert_int_equal(st.from_log, 540);
    assert_frontiers_equal(&ref, &f);
    kr_frontier_free(&f);
    kr_frontier_free(&ref);
    kr_backend_destroy(b);
    kr_backend_destroy(b3);
}

static void torn_last_line_is_dropped(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_mlp");
    const char *dir = kr_test_tmpdir("search_torn");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    kr_search_config o;
    kr_search_config_default(&o);
    /* The reference's space (tuned kernel, no baseline): these counts are the log's mechanics. */
    o.restrict_space = KR_SEARCH_ONLY_TUNED;
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    o.max_evals = 10;
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_partition_frontier f;
    assert_int_equal(search_with_log(&job, p, b, path, &o, &f, NULL, &e), KR_OK);
    kr_frontier_free(&f);
    /* Simulate a crash in the middle of writing line 11. */
    FILE *fp = fopen(path, "a");
    fputs("{\"freq\":1410,\"overlap_start\":\"linear_0\",\"overlap_e", fp);
    fclose(fp);
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_non_null(strstr(kr_search_log_warning(log), "log.jsonl:12: dropped a torn last line"));
    assert_int_equal(kr_search_log_count(log), 10);
    o.max_evals = 20;
    kr_search_stats st;
    assert_int_equal(kr_search_partition(&job, p, b, log, &o, &f, &st, &e), KR_OK);
    assert_int_equal(st.from_log, 10);
    assert_int_equal(st.measured, 10);
    kr_search_log_close(log);
    kr_frontier_free(&f);
    assert_int_equal(count_lines(path), 20);
    /* Everything in the file parses again, and no warning remains. */
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_string_equal(kr_search_log_warning(log), "");
    assert_int_equal(kr_search_log_count(log), 20);
    kr_search_log_close(log);
    /* A complete last line without its newline is kept, and the newline added. */
    FILE *rf = fopen(path, "r");
    fseek(rf, 0, SEEK_END);
    long size = ftell(rf);
    fclose(rf);
    assert_int_equal(truncate(path, (off_t)(size - 1)), 0);
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_string_equal(kr_search_log_warning(log), "");
    assert_int_equal(kr_search_log_count(log), 20);
    kr_search_log_close(log);
    assert_int_equal(count_lines(path), 20);
    kr_backend_destroy(b);
}

/* The whole file at path, NUL-terminated (the caller frees it). */
static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    assert_non_null(t);
    assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
    t[n] = '\0';
    fclose(f);
    return t;
}

/* A log written before the header line existed (the same lines without it): read with one
 * warning, its torn last line dropped, appended to without a header, and read again. */
static void headerless_old_log_is_read_and_appended(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_mlp");
    const char *dir = kr_test_tmpdir("search_headerless");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    kr_search_config o;
    kr_search_config_default(&o);
    /* The reference's space (tuned kernel, no baseline): these counts are the log's mechanics. */
    o.restrict_space = KR_SEARCH_ONLY_TUNED;
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    o.max_evals = 10;
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_partition_frontier f;
    assert_int_equal(search_with_log(&job, p, b, path, &o, &f, NULL, &e), KR_OK);
    kr_frontier_free(&f);
    /* Drop the header line, as logs were before it, and tear a last line. */
    char *text = read_all(path);
    char *body = strchr(text, '\n') + 1;
    assert_int_equal(strncmp(text, "{\"schema\":\"kareus.mlog\",", 24), 0);
    char *old = malloc(strlen(body) + 64);
    sprintf(old, "%s{\"freq\":1410,\"overlap_s", body);
    kr_test_write(path, old);
    assert_int_equal(kr_search_log_check(path, &job, &e), KR_OK);
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    const char *w = kr_search_log_warning(log);
    assert_non_null(strstr(w, "log.jsonl: a measurement log without the header line"));
    assert_non_null(strstr(w, "log.jsonl:11: dropped a torn last line"));
    assert_int_equal(kr_search_log_count(log), 10);
    o.max_evals = 20;
    kr_search_stats st;
    assert_int_equal(kr_search_partition(&job, p, b, log, &o, &f, &st, &e), KR_OK);
    assert_int_equal(st.from_log, 10);
    assert_int_equal(st.measured, 10);
    kr_search_log_close(log);
    kr_frontier_free(&f);
    /* The old lines are as they were, no header was added, 10 lines were appended. */
    char *now = read_all(path);
    assert_int_equal(strncmp(now, body, strlen(body)), 0);
    assert_null(strstr(now, "\"schema\""));
    free(now);
    assert_int_equal(count_lines(path), 19);
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_non_null(strstr(kr_search_log_warning(log), "without the header line"));
    assert_null(strstr(kr_search_log_warning(log), "torn"));
    assert_int_equal(kr_search_log_count(log), 20);
    kr_search_log_close(log);
    /* The artifact's lines (no key, no job) are not taken for an old log, and left unchanged. */
    kr_test_write(path, "{\"freq\":1410,\"overlap_start\":\"none\",\"sm\":0,\"time_s\":1,\"energy_j\":1}\n");
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_EPARSE);
    assert_non_null(strstr(e.msg, "log.jsonl:1: expected a Kareus measurement log"));
    now = read_all(path);
    assert_string_equal(now, "{\"freq\":1410,\"overlap_start\":\"none\",\"sm\":0,\"time_s\":1,\"energy_j\":1}\n");
    free(now);
    free(text);
    free(old);
    kr_backend_destroy(b);
}

/* Writes a log with one line replaced by `line` (the rest valid) and checks the open error. */
static void expect_log_error(const kr_job *job, const char *path, const char *line, int rc, const char *needle)
{
    char fp[17];
    kr_job_fingerprint(job, fp);
    char good[512];
    snprintf(good, sizeof good,
             "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"overlap_end\":\"none\",\"sm\":3,\"block\":1024,"
             "\"time_s\":0.01,\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"%s\"}\n", fp);
    /* "@FP@" in line stands for the job's fingerprint. */
    char text[2048], line2[700];
    const char *at = strstr(line, "@FP@");
    if (at)
        snprintf(line2, sizeof line2, "%.*s%s%s", (int)(at - line), line, fp, at + 4);
    else
        snprintf(line2, sizeof line2, "%s", line);
    char header[200];
    snprintf(header, sizeof header, "{\"schema\":\"kareus.mlog\",\"version\":1,\"job\":\"%s\"}\n", fp);
    snprintf(text, sizeof text, "%s%s\n%s", header, line2, good);
    kr_test_write(path, text);
    kr_search_log *log = NULL;
    kr_error e = {0};
    KR_ASSERT_ERR(kr_search_log_open(path, job, &log, &e), rc, e, needle);
    assert_null(log);
}

static void log_errors_are_precise(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    const char *dir = kr_test_tmpdir("search_log_errors");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
#define BASE(freq, sm, key)                                                                                  \
    "{\"freq\":" freq ",\"overlap_start\":\"norm_0\",\"overlap_end\":\"none\",\"sm\":" sm ",\"block\":1024,"             \
    "\"time_s\":0.01,\"energy_j\":3.0,\"key\":\"" key "\",\"variant\":\"kareus\",\"job\":\"@FP@\"}"
    char line[700];
    snprintf(line, sizeof line, "%s", BASE("\"1410\"", "3", "fwd_mlp"));
    expect_log_error(&job, path, line, KR_EPARSE, "log.jsonl:2: $.freq: expected an integer, found string \"1410\"");
    snprintf(line, sizeof line, "%s", BASE("1410", "4", "fwd_mlp"));
    expect_log_error(&job, path, line, KR_ERANGE,
                     "log.jsonl:2: configuration outside the search space: partition fwd_mlp (kareus): sm: expected one "
                     "of {3, 6");
    snprintf(line, sizeof line, "%s", BASE("1400", "3", "fwd_mlp"));
    expect_log_error(&job, path, line, KR_ERANGE, "log.jsonl:2: configuration outside the search space");
    snprintf(line, sizeof line, "%s", BASE("1410", "3", "fwd_xyz"));
    expect_log_error(&job, path, line, KR_ENOTFOUND, "log.jsonl:2: $.key: expected a partition of job 'default'");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"overlap_end\":\"none\",\"sm\":3,\"time_s\":0.01,"
                     "\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"00000000deadbeef\"}",
                     KR_EMISMATCH, "log.jsonl:2: $.job: expected the fingerprint of job 'default'");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"rope_0\",\"overlap_end\":\"none\",\"sm\":3,\"time_s\":0.01,"
                     "\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"@FP@\"}",
                     KR_ENOTFOUND, "log.jsonl:2: $.overlap_start: partition fwd_mlp (kareus): expected a slot among");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"overlap_end\":\"attn_0\",\"sm\":3,\"time_s\":0.01,"
                     "\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"@FP@\"}",
                     KR_EPARSE, "log.jsonl:2: $.overlap_end: expected \"none\"");
    expect_log_error(&job, path, "{\"freq\":1410, oops", KR_EPARSE, "log.jsonl:2:");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"sm\":3,\"time_s\":0.01,\"energy_j\":3.0}",
                     KR_EPARSE, "log.jsonl:2: $.key: missing required field");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"sm\":3,\"time_s\":0.01,\"energy_j\":3.0,"
                     "\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"@FP@\",\"colour\":1}",
                     KR_EPARSE, "log.jsonl:2: $.colour: unknown field");
    /* The comm kernel: a known name, and only on the kareus variant's collectives. */
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"sm\":3,\"kernel\":\"cuda\",\"time_s\":0.01,"
                     "\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"@FP@\"}",
                     KR_EPARSE, "log.jsonl:2: $.kernel: expected \"tuned\" or \"nccl\", found \"cuda\"");
    expect_log_error(&job, path,
                     "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"sm\":24,\"kernel\":\"nccl\",\"time_s\":0.01,"
                     "\"energy_j\":3.0,\"key\":\"fwd_mlp\",\"variant\":\"default-overlap\",\"job\":\"@FP@\"}",
                     KR_ERANGE, "log.jsonl:2: $.kernel: expected no kernel (tuned) for fwd_mlp (default-overlap)");
}

/* The kernel field of the log (issue 31): written as "kernel":"nccl" for NCCL and not at all for
 * the tuned kernel (so lines from before kernels are tuned ones), read back into the cache, part
 * of the deduplication key (the same clock, slot and CTAs on the two kernels are two
 * measurements), and replayed. */
static void log_kernel_round_trip(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_mlp");
    const char *dir = kr_test_tmpdir("search_log_kernel");
    char path[1200];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_partition_frontier f, g;
    kr_search_stats st;
    assert_int_equal(search_with_log(&job, p, b, path, &o, &f, &st, &e), KR_OK);
    assert_int_equal(count_lines(path), 1080);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    long nccl = 0, tuned = 0;
    for (const char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        const char *end = strchr(l + 1, '\n');
        const char *k = strstr(l + 1, "\"kernel\":");
        int has = k && k < end;
        nccl += has && strncmp(k, "\"kernel\":\"nccl\"", 15) == 0;
        tuned += !has;
    }
    free(text);
    assert_int_equal(nccl, 540);
    assert_int_equal(tuned, 540);
    /* Same clock, slot and CTAs on both kernels: both kept, no duplicate warning. */
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    assert_int_equal(kr_search_log_count(log), 1080);
    assert_string_equal(kr_search_log_warning(log), "");
    kr_search_log_close(log);
    /* Merging the log with itself: every line a duplicate of its own, none a conflict between
     * kernels (the kernel is part of the merge's key too). */
    char merged[1300];
    snprintf(merged, sizeof merged, "%s/merged.jsonl", dir);
    const char *shards[] = {path, path};
    kr_search_merge_stats ms;
    assert_int_equal(kr_search_log_merge(merged, shards, 2, &job, &ms, &e), KR_OK);
    assert_int_equal(ms.records, 1080);
    assert_int_equal(ms.duplicates, 1080);
    assert_int_equal(ms.conflicts, 0);
    /* A rerun answers everything from the log: the kernel is part of the cache's key. */
    assert_int_equal(search_with_log(&job, p, b, path, &o, &g, &st, &e), KR_OK);
    assert_int_equal(st.from_log, 1080);
    assert_int_equal(st.measured, 0);
    assert_frontiers_equal(&f, &g);
    kr_frontier_free(&g);
    /* A replay of the log gives the kernel's own measurement. */
    kr_backend *r;
    const char *paths[] = {path};
    assert_int_equal(kr_replay_backend_create(&job, paths, 1, &r, &e), KR_OK);
    for (size_t i = 0; i < f.n; i++) {
        kr_measurement m;
        assert_int_equal(kr_backend_measure(r, p, &f.pts[i].config, &m), KR_OK);
        assert_true(m.time_s == f.pts[i].time_s && m.energy_j == f.pts[i].energy_j);
    }
    kr_backend_destroy(r);
    kr_frontier_free(&f);
    kr_backend_destroy(b);
}

static void replay_reproduces_the_live_search(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_search_partitions(&job, KR_VARIANT_KAREUS, 1, &set, &e), KR_OK);
    const char *dir = kr_test_tmpdir("search_replay");
    char path[1200];
    snprintf(path, sizeof path, "%s/live.jsonl", dir);
    kr_search_config o;
    kr_search_config_default(&o);
    /* The reference's space (tuned kernel, no baseline): these counts are the log's mechanics. */
    o.restrict_space = KR_SEARCH_ONLY_TUNED;
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_search_log *log;
    assert_int_equal(kr_search_log_open(path, &job, &log, &e), KR_OK);
    kr_search_result *live;
    int n;
    assert_int_equal(kr_search_job(&job, KR_VARIANT_KAREUS, 1, b, log, &o, &live, &n, &e), KR_OK);
    kr_search_log_close(log);
    kr_backend_destroy(b);
    assert_int_equal(n, 10);
    const char *paths[] = {path};
    kr_backend *r;
    assert_int_equal(kr_replay_backend_create(&job, paths, 1, &r, &e), KR_OK);
    assert_string_equal(kr_backend_name(r), "replay");
    kr_search_result *rep;
    assert_int_equal(kr_search_job(&job, KR_VARIANT_KAREUS, 1, r, NULL, &o, &rep, &n, &e), KR_OK);
    for (int i = 0; i < n; i++) {
        assert_string_equal(live[i].front.key, rep[i].front.key);
        assert_frontiers_equal(&live[i].front, &rep[i].front);
    }
    /* A configuration that was never recorded is a clear error. */
    kr_config c = {1395, 3, 0, 0};
    kr_measurement m;
    assert_int_equal(kr_backend_measure(r, find(&set, "fwd_mlp"), &c, &m), KR_ENOTFOUND);
    assert_non_null(strstr(kr_backend_errmsg(r), "no recorded measurement of fwd_mlp (kareus) at 1395 MHz, slot norm_0, "
                                                 "3 SMs"));
    assert_non_null(strstr(kr_backend_errmsg(r), "it has 540 measurements of that partition"));
    kr_search_results_free(live, n);
    kr_search_results_free(rep, n);
    kr_backend_destroy(r);
}

static void replay_reads_the_artifact_format(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_partition_set set;
    kr_job_default(&job);
    assert_int_equal(kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e), KR_OK);
    const char *dir = kr_test_tmpdir("search_replay_artifact");
    char sub[1200], path[1300];
    snprintf(sub, sizeof sub, "%s/fwd_attn", dir);
    assert_int_equal(kr__mkdirs(sub, &e), KR_OK);
    snprintf(path, sizeof path, "%s/eval_results.jsonl", sub);
    /* Lines as the artifact writes them (fields of kareus-method.md §3 step 9). */
    kr_test_write(path,
                  "{\"freq\": 1410, \"overlap_start\": \"rope_0\", \"overlap_end\": \"none\", \"sm\": 12, \"block\": "
                  "1024, \"time_s\": 0.0042, \"energy_j\": 1.25, \"selected_dynamic\": false, \"selected_real\": true, "
                  "\"selected_time\": false, \"selected_uncertainty\": false, \"pred_time_s\": 0.0041, "
                  "\"pred_energy_eff_j\": 0.9, \"pred_energy_real_j\": 1.2}\n"
                  "{\"freq\": 900, \"overlap_start\": \"norm_0\", \"overlap_end\": \"none\", \"sm\": 3, \"block\": "
                  "1024, \"time_s\": 0.0061, \"energy_j\": 1.05, \"pred_time_s\": null}\n");
    const char *paths[] = {path};
    kr_backend *r;
    assert_int_equal(kr_replay_backend_create(&job, paths, 1, &r, &e), KR_OK);
    const kr_partition *p = find(&set, "fwd_attn");
    int slot;
    assert_int_equal(kr_partition_slot_index(p, "rope_0", &slot, &e), KR_OK);
    kr_config c = {1410, 12, slot, 0};
    kr_measurement m;
    assert_int_equal(kr_backend_measure(r, p, &c, &m), KR_OK);
    assert_true(m.time_s == 0.0042 && m.energy_j == 1.25);
    KR_ASSERT_CLOSE(m.eff_energy_j, 1.25 - 85.0 * 0.0042, 1e-12);
    c.sms = 15;
    assert_int_equal(kr_backend_measure(r, p, &c, &m), KR_ENOTFOUND);
    kr_backend_destroy(r);
    /* KEY=FILE names the key explicitly; a file elsewhere without it is an error. */
    char other[1300], spec[2700];
    snprintf(other, sizeof other, "%s/eval.jsonl", dir);
    rename(path, other);
    const char *p1[] = {other};
    KR_ASSERT_ERR(kr_replay_backend_create(&job, p1, 1, &r, &e), KR_EINVAL, e, "pass KEY=");
    snprintf(spec, sizeof spec, "fwd_attn=%s", other);
    const char *p2[] = {spec};
    assert_int_equal(kr_replay_backend_create(&job, p2, 1, &r, &e), KR_OK);
    assert_int_equal(kr_backend_measure(r, p, &(kr_config){900, 3, 0, 0}, &m), KR_OK);
    kr_backend_destroy(r);
    /* Our lines of another job are refused. */
    kr_job cp;
    assert_int_equal(kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &cp, &e), KR_OK);
    char fp[17];
    kr_job_fingerprint(&cp, fp);
    char text[600];
    snprintf(text, sizeof text, "{\"freq\":1410,\"overlap_start\":\"norm_0\",\"sm\":3,\"time_s\":0.01,\"energy_j\":3,"
             "\"key\":\"fwd_mlp\",\"variant\":\"kareus\",\"job\":\"%s\"}\n", fp);
    kr_test_write(other, text);
    KR_ASSERT_ERR(kr_replay_backend_create(&job, p1, 1, &r, &e), KR_EMISMATCH, e, "different job");
}

static void progress_cb(void *ud, const kr_search_progress *p)
{
    int *calls = ud;
    calls[0]++;
    if (p->done)
        calls[1]++;
    assert_true(p->evaluated <= p->space_size);
    assert_true(p->index < p->count);
}

static void job_search_writes_readable_frontiers(void **state)
{
    (void)state;
    kr_job job;
    kr_error e = {0};
    kr_job_default(&job);
    kr_backend *b = fake_backend(&job, 0, NULL);
    kr_search_config o;
    kr_search_config_default(&o);
    o.strategy = KR_STRATEGY_EXHAUSTIVE;
    int calls[2] = {0, 0};
    o.progress = progress_cb;
    o.progress_ud = calls;
    kr_search_result *r;
    int n;
    assert_int_equal(kr_search_job(&job, KR_VARIANT_SEQUENTIAL, 1, b, NULL, &o, &r, &n, &e), KR_OK);
    assert_int_equal(n, 10);
    assert_int_equal(calls[1], 10);
    assert_true(calls[0] > 20);
    const char *dir = kr_test_tmpdir("search_job");
    char sub[1200], path[1400];
    snprintf(sub, sizeof sub, "%s/out/nested", dir);
    for (int i = 0; i < n; i++) {
        assert_int_equal(r[i].front.n, 18);
        assert_int_equal(kr_search_write_frontier(sub, &r[i].front, &e), KR_OK);
        char name[128];
        kr_frontier_file_name(r[i].front.key, r[i].front.variant, "json", name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", sub, name);
        kr_partition_frontier g;
        assert_int_equal(kr_frontier_read(path, &g, &e), KR_OK);
        assert_frontiers_equal(&r[i].front, &g);
        kr_frontier_free(&g);
    }
    kr_search_results_free(r, n);
    kr_backend_destroy(b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(space_sizes_match_reference),
    cmocka_unit_test(space_index_round_trip_and_errors),
    cmocka_unit_test(exhaustive_measures_every_config_once),
    cmocka_unit_test(resume_after_crash_loses_and_duplicates_nothing),
    cmocka_unit_test(torn_last_line_is_dropped),
    cmocka_unit_test(headerless_old_log_is_read_and_appended),
    cmocka_unit_test(log_errors_are_precise),
    cmocka_unit_test(log_kernel_round_trip),
    cmocka_unit_test(replay_reproduces_the_live_search),
    cmocka_unit_test(replay_reads_the_artifact_format),
    cmocka_unit_test(job_search_writes_readable_frontiers),
};

KR_TEST_MAIN(tests)
