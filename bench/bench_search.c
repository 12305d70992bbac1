/*
 * bench_search.c — how close the sample-efficient searches get to the exhaustive frontier, and
 * at what cost, on the simulator (issue 3's acceptance figures).
 *
 * For every partition of the default job and of the CP=2, TP=4 job, and seeds 1..S (S = 5, or
 * KR_BENCH_SEEDS): the exhaustive frontier is the reference; bo (default options) and artifact
 * (the published budget) each report the measurements used (count and % of the space) and the
 * quality figure Q = HV(found) / HV(exhaustive) in the (time, effective energy) and (time, total
 * energy) planes. HV uses the reference point nadir + 10 % of the range of the exhaustive
 * frontier in that plane, a tight box: only the frontier region counts, so a ratio near 1 means
 * the frontier itself was found, not merely the bulk of the space. Equal measurement counts:
 * artifact with bo's count (artifact_budget = bo's count) and bo with artifact's count (no
 * stopping rule, capped at artifact's count). Then a sweep of bo's stopping threshold, and the
 * wall time of `kareus search --strategy exhaustive --partition all` on the default job.
 * Figures only; nothing here passes or fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kareus/frontier.h"
#include "kareus/search.h"
#include "kareus/sim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const kr_error *e)
{
    fprintf(stderr, "bench_search: %s: %s\n", what, e->msg);
    exit(1);
}

/* Q in the plane of static power P: HV(found) / HV(reference frontier), tight reference box. */
static double quality(const kr_partition_frontier *ref, const kr_partition_frontier *f, double P)
{
    kr_fpoint *a = malloc(ref->n * sizeof *a), *b = malloc((f->n ? f->n : 1) * sizeof *b);
    if (!a || !b)
        exit(1);
    for (size_t i = 0; i < ref->n; i++)
        a[i] = (kr_fpoint){ref->pts[i].time_s, ref->pts[i].energy_j, (long long)i};
    for (size_t i = 0; i < f->n; i++)
        b[i] = (kr_fpoint){f->pts[i].time_s, f->pts[i].energy_j, (long long)i};
    size_t k;
    kr_frontier_pareto(a, ref->n, P, 0, a, &k, NULL);
    double t0 = a[0].time_s, t1 = a[k - 1].time_s;
    double y_fast = a[0].energy_j - P * t0, y_slow = a[k - 1].energy_j - P * t1;
    double rt = t1 + 0.1 * (t1 - t0), ry = y_fast + 0.1 * (y_fast - y_slow);
    if (k == 1) {
        rt = t1 * 1.1;
        ry = y_fast * 1.1;
    }
    double h_ref, h;
    kr_frontier_hypervolume(a, k, P, rt, ry, &h_ref, NULL);
    kr_frontier_hypervolume(b, f->n, P, rt, ry, &h, NULL);
    free(a);
    free(b);
    return h_ref > 0 ? h / h_ref : 1.0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One search: measurements and quality in both planes. */
typedef struct run {
    long n;
    double pct, qe, qt, wall;
} run;

static run search(const kr_job *job, const kr_partition *p, kr_backend *b, const kr_search_options *o,
                  const kr_partition_frontier *ref)
{
    kr_partition_frontier f;
    kr_search_stats st;
    kr_error e = {0};
    if (kr_search_partition(job, p, b, NULL, o, &f, &st, &e))
        die(p->key, &e);
    run r = {st.evaluated, 100.0 * (double)st.evaluated / (double)st.space_size, quality(ref, &f, job->static_power_w),
             quality(ref, &f, 0.0), st.wall_s};
    kr_frontier_free(&f);
    return r;
}

#define MAXRUNS 4096

/* Everything collected over all jobs, keys and seeds. */
typedef struct pool {
    int n;
    double bo_pct[MAXRUNS], bo_qe[MAXRUNS], bo_qt[MAXRUNS], bo_wall[MAXRUNS];
    double ar_pct[MAXRUNS], ar_qe[MAXRUNS], ar_qt[MAXRUNS];
    double arbo_qe[MAXRUNS], arbo_qt[MAXRUNS], boar_qe[MAXRUNS], boar_qt[MAXRUNS];
    int wins_at_bo, wins_at_art, runs_le15;
} pool;

static void bench_job(const char *name, int seeds, pool *pl)
{
    kr_job job;
    kr_error e = {0};
    if (kr_job_builtin(name, &job, &e))
        die(name, &e);
    kr_partition_set set;
    if (kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e))
        die(name, &e);
    kr_backend *b;
    if (kr_sim_backend_create(&job, NULL, &b, &e))
        die(name, &e);
    printf("\njob %s (%d partitions, %d seeds; medians over seeds; Q = HV found / HV exhaustive, eff | total)\n", name,
           set.n, seeds);
    printf("%-11s %5s | %-27s | %-27s | %-15s | %-15s\n", "key", "space", "bo: evals  %space  Q_eff Q_tot",
           "artifact: evals %space Q_eff Q_tot", "art@bo-count", "bo@art-count");
    for (int i = 0; i < set.n; i++) {
        const kr_partition *p = &set.p[i];
        kr_search_options o;
        kr_search_options_default(&o);
        o.strategy = KR_STRATEGY_EXHAUSTIVE;
        kr_partition_frontier ref;
        kr_search_stats st;
        if (kr_search_partition(&job, p, b, NULL, &o, &ref, &st, &e))
            die(p->key, &e);
        double v[10][64];
        for (int s = 0; s < seeds; s++) {
            kr_search_options_default(&o);
            o.seed = (unsigned long long)s + 1;
            run rb = search(&job, p, b, &o, &ref);
            o.strategy = KR_STRATEGY_ARTIFACT;
            run ra = search(&job, p, b, &o, &ref);
            o.artifact_budget = rb.n;
            run rab = search(&job, p, b, &o, &ref);
            kr_search_options_default(&o);
            o.seed = (unsigned long long)s + 1;
            o.bo_stop = -1;
            o.max_evals = ra.n;
            run rba = search(&job, p, b, &o, &ref);
            double row[10] = {(double)rb.n, rb.pct, rb.qe, rb.qt, (double)ra.n, ra.pct, ra.qe, ra.qt, rab.qe, rab.qt};
            for (int k = 0; k < 10; k++)
                v[k][s] = row[k];
            int j = pl->n++;
            pl->bo_pct[j] = rb.pct;
            pl->bo_qe[j] = rb.qe;
            pl->bo_qt[j] = rb.qt;
            pl->bo_wall[j] = rb.wall;
            pl->ar_pct[j] = ra.pct;
            pl->ar_qe[j] = ra.qe;
            pl->ar_qt[j] = ra.qt;
            pl->arbo_qe[j] = rab.qe;
            pl->arbo_qt[j] = rab.qt;
            pl->boar_qe[j] = rba.qe;
            pl->boar_qt[j] = rba.qt;
            pl->wins_at_bo += rb.qe >= rab.qe && rb.qt >= rab.qt;
            pl->wins_at_art += rba.qe >= ra.qe && rba.qt >= ra.qt;
            pl->runs_le15 += rb.pct <= 15.0;
        }
        double m[10];
        for (int k = 0; k < 10; k++)
            m[k] = median(v[k], seeds);
        double bae[64], bat[64];
        for (int s = 0; s < seeds; s++) {
            int j = pl->n - seeds + s;
            bae[s] = pl->boar_qe[j];
            bat[s] = pl->boar_qt[j];
        }
        printf("%-11s %5ld | %5.0f %6.1f%%  %.4f %.4f | %5.0f %6.1f%%  %.4f %.4f | %.4f %.4f | %.4f %.4f\n", p->key,
               st.space_size, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], median(bae, seeds),
               median(bat, seeds));
        kr_frontier_free(&ref);
    }
    kr_backend_destroy(b);
}

/* bo's stopping threshold against cost and quality (seeds 1..2, both jobs). */
static void sweep(void)
{
    static const double stops[] = {0.005, 0.01, 0.02, 0.04, 0.08};
    static const char *const jobs[] = {"default", "llama3.2-3b-cp2tp4-mbs8-s4096"};
    printf("\nbo stopping threshold (seeds 1-2, every partition of both jobs; medians, and the worst Q)\n");
    printf("%8s %8s %8s %8s %8s %8s\n", "bo_stop", "%space", "Q_eff", "Q_tot", "min_eff", "min_tot");
    for (size_t si = 0; si < sizeof stops / sizeof stops[0]; si++) {
        double pct[256], qe[256], qt[256];
        int n = 0;
        for (int ji = 0; ji < 2; ji++) {
            kr_job job;
            kr_error e = {0};
            kr_partition_set set;
            kr_backend *b;
            if (kr_job_builtin(jobs[ji], &job, &e) || kr_partition_catalog(&job, KR_VARIANT_KAREUS, &set, &e) ||
                kr_sim_backend_create(&job, NULL, &b, &e))
                die(jobs[ji], &e);
            for (int i = 0; i < set.n; i++) {
                kr_search_options o;
                kr_search_options_default(&o);
                o.strategy = KR_STRATEGY_EXHAUSTIVE;
                kr_partition_frontier ref;
                if (kr_search_partition(&job, &set.p[i], b, NULL, &o, &ref, NULL, &e))
                    die(set.p[i].key, &e);
                for (int s = 1; s <= 2; s++) {
                    kr_search_options_default(&o);
                    o.seed = (unsigned long long)s;
                    o.bo_stop = stops[si];
                    run r = search(&job, &set.p[i], b, &o, &ref);
                    pct[n] = r.pct;
                    qe[n] = r.qe;
                    qt[n++] = r.qt;
                }
                kr_frontier_free(&ref);
            }
            kr_backend_destroy(b);
        }
        double mp = median(pct, n), me = median(qe, n), mt = median(qt, n); /* sorts qe, qt */
        printf("%8.3f %7.1f%% %8.4f %8.4f %8.4f %8.4f\n", stops[si], mp, me, mt, qe[0], qt[0]);
    }
}

/* Wall time of the CLI's exhaustive search of every partition of the default job. */
static void time_cli(void)
{
    const char *cli = getenv("KAREUS") ? getenv("KAREUS") : KR_CLI;
    char dir[] = "/tmp/kareus-bench-search-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    double t[5];
    int n = 0;
    for (int i = 0; i < 5; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/out' && '%s' search --strategy exhaustive --partition all --out '%s/out' "
                 "--quiet > /dev/null", dir, cli, dir);
        double t0 = now_s();
        if (system(cmd) != 0) {
            printf("\n`kareus search --strategy exhaustive --partition all` failed\n");
            return;
        }
        t[n++] = now_s() - t0;
    }
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_search: could not remove %s\n", dir);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("\n`kareus search --strategy exhaustive --partition all` (default job: 4 partitions x 540-720 "
           "configurations + 6 non-partition x 18 clocks = 2628 simulations, log and 20 frontier files written): "
           "median %.3f s, min %.3f s over %d runs (wall time on a shared 2-core machine)\n",
           t[n / 2], t[0], n);
}

int main(void)
{
    int seeds = getenv("KR_BENCH_SEEDS") ? atoi(getenv("KR_BENCH_SEEDS")) : 5;
    if (seeds < 1 || seeds > 64)
        seeds = 5;
    static pool pl;
    double t0 = now_s();
    bench_job("default", seeds, &pl);
    bench_job("llama3.2-3b-cp2tp4-mbs8-s4096", seeds, &pl);
    int n = pl.n;
    printf("\nall partitions of both jobs, %d runs (key x seed); medians:\n", n);
    double bp = median(pl.bo_pct, n), be = median(pl.bo_qe, n), bt = median(pl.bo_qt, n); /* sorts the arrays */
    printf("  bo       : %5.1f%% of the space, Q_eff %.4f, Q_tot %.4f (worst %.4f, %.4f); %d of %d runs within 15%% "
           "of the space; compute %.2f s per search\n",
           bp, be, bt, pl.bo_qe[0], pl.bo_qt[0], pl.runs_le15, n, median(pl.bo_wall, n));
    printf("  artifact : %5.1f%% of the space, Q_eff %.4f, Q_tot %.4f\n", median(pl.ar_pct, n), median(pl.ar_qe, n),
           median(pl.ar_qt, n));
    printf("  equal counts, bo's: artifact Q_eff %.4f, Q_tot %.4f; bo at least as good in both planes in %d of %d runs\n",
           median(pl.arbo_qe, n), median(pl.arbo_qt, n), pl.wins_at_bo, n);
    printf("  equal counts, artifact's: bo Q_eff %.4f, Q_tot %.4f; bo at least as good in both planes in %d of %d runs\n",
           median(pl.boar_qe, n), median(pl.boar_qt, n), pl.wins_at_art, n);
    printf("  (%.0f s for the comparison)\n", now_s() - t0);
    sweep();
    time_cli();
    return 0;
}
