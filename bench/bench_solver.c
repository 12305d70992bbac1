/*
 * bench_solver.c — the frontier solver's figures (issue 15). Prints; never fails on time.
 *
 *  1. Speed and memory: 1F1B (2,8) … (32,256) at 1 ms and (8,32) at 0.1 ms, both cost models,
 *     interleaved 1F1B with 2–4 virtual stages at (16,128); solve time (fastest and median of
 *     the repeats) and the peak resident memory of a child process that solves the row once
 *     (ru_maxrss), beside lowtime 0.3.0's time where issue 15 measured it (PyPI, Rust cut: (2,8)
 *     1.41 s, (4,16) 13.3 s, (8,32) 147 s, (8,64) 874 s, all at 1 ms). Options: the golden
 *     files opts_S2/S4/S8 (tests/golden/lowtime); more than 8 stages reuse opts_S8's stages
 *     cyclically (stage s runs like stage s mod 8), and chunk c of an interleaved stage takes
 *     the stage's options with time and energy divided by the number of chunks.
 *  2. The bound: the gap energy / bound − 1 over the undominated frontier points of each row.
 *  3. exact vs the lowtime model's true energy at equal time on (4,16), (8,32), (8,64).
 *  4. The MILP optimum (CBC, tests/milp_ref.h) at 10 deadlines of (2,4), (2,8), (3,6), (4,8):
 *     the gap to it of exact's plan for the deadline (refined by kr_solve_refine, as `kareus
 *     solve --select deadline=S` writes it by default), of exact's frontier step (the cheapest
 *     step meeting the deadline, what --no-refine writes) and of the lowtime model (largest,
 *     median); then again at the knob times of the frontier steps those deadlines chose, where
 *     the frontier step is the frontier point itself (no unused time between a step and its
 *     deadline); where CBC finds a plan below the refined one, how many instructions the two
 *     plans differ at. CBC is given
 *     KR_BENCH_MILP_S seconds per deadline (default 60) and KR_BENCH_JOBS parallel solves
 *     (default 1); a deadline it cannot prove within 1e-6 is reported with CBC's interval.
 *
 * Arguments select sections: speed, bound, lowtime, milp (default: all). KR_BENCH_BIG=0 skips
 * the rows above (8,64), KR_BENCH_BIG=2 runs only those; KR_BENCH_LOWTIME_BIG=1 also runs the
 * lowtime model on them (long); KR_BENCH_ROWS=SxM[xV],… runs only the rows named (the unit is
 * not part of the name: "8x32" is both of its rows), also in milp; KR_BENCH_EXCHANGE=-1 solves
 * the exact model without the exchange passes (and so without the polish), as `kareus solve`
 * did by default before issue 33 (kr_solver_config.exchange; default 0, the library's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kareus/kareus.h"
#ifdef KR_HAVE_CBC
#include "milp_ref.h"
#endif

#define REPEATS 3

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double proc_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

/* Whether KR_BENCH_ROWS (only: "SxM[xV],…", NULL or empty for every row) names the row. */
static int row_named(const char *only, int S, int M, int V)
{
    if (only == NULL || *only == '\0')
        return 1;
    char key[32];
    if (V > 1)
        snprintf(key, sizeof key, "%dx%dx%d", S, M, V);
    else
        snprintf(key, sizeof key, "%dx%d", S, M);
    size_t kl = strlen(key);
    for (const char *p = strstr(only, key); p; p = strstr(p + 1, key))
        if ((p == only || p[-1] == ',') && (p[kl] == '\0' || p[kl] == ','))
            return 1;
    return 0;
}

/* The exact model's exchange setting for the speed, bound, lowtime and milp sections:
 * KR_BENCH_EXCHANGE (kr_solver_config.exchange: 0 the library's default, −1 off, 1 on). */
static int bench_exchange(void)
{
    return env_int("KR_BENCH_EXCHANGE", 0);
}

/* Options for S stages and V chunks built from the golden files (see the header). */
static int load_options(int S, int V, kr_options *o)
{
    char path[512];
    int base = S <= 2 ? 2 : S <= 4 ? 4 : 8;
    snprintf(path, sizeof path, "%s/golden/lowtime/opts_S%d.csv", KR_TESTDATA_DIR, base);
    kr_error e = {0};
    kr_options src;
    if (kr_options_read_csv(path, 0, 1, &src, &e)) {
        printf("cannot read %s: %s\n", path, e.msg);
        return -1;
    }
    int rc = kr_options_init(o, S, V, &e);
    for (int s = 0; s < S && rc == 0; s++)
        for (int c = 0; c < V && rc == 0; c++)
            for (int k = 0; k < 2 && rc == 0; k++) {
                const kr_option_set *set = kr_options_get(&src, s % src.num_stages, (kr_instr_kind)k, 0);
                for (int i = 0; i < set->n && rc == 0; i++) {
                    kr_option op = set->opt[i];
                    op.time_s /= V;
                    op.energy_j /= V;
                    rc = kr_options_add(o, s, (kr_instr_kind)k, c, &op, NULL, 0, &e);
                }
            }
    kr_options_free(&src);
    if (rc)
        printf("options: %s\n", e.msg);
    return rc;
}

static int make_dag(int S, int M, int V, kr_dag *d)
{
    kr_error e = {0};
    int rc = kr_dag_pipeline(V > 1 ? KR_SCHEDULE_INTERLEAVED_1F1B : KR_SCHEDULE_1F1B, S, M, V, NULL, d, &e);
    if (rc)
        printf("dag: %s\n", e.msg);
    return rc;
}

/* Gap over the undominated points (sorted by time, strictly falling energy): max and median. */
static void frontier_gaps(const kr_solve_result *f, double *gmax, double *gmed, int *nund)
{
    int n = f->nsteps, k = 0;
    int *ord = malloc(sizeof(int) * (size_t)n);
    double *g = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        ord[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort by time (the frontier is nearly sorted) */
        for (int j = i; j > 0 && f->steps[ord[j - 1]].knob_time_s > f->steps[ord[j]].knob_time_s; j--) {
            int x = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = x;
        }
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        const kr_solver_step *st = &f->steps[ord[i]];
        if (best == INFINITY || st->energy_j < best - 1e-12 * best) {
            best = st->energy_j;
            if (isfinite(st->gap))
                g[k++] = st->gap;
        }
    }
    qsort(g, (size_t)k, sizeof g[0], cmp_double);
    *gmax = k ? g[k - 1] : NAN;
    *gmed = k ? g[k / 2] : NAN;
    *nund = k;
    free(ord);
    free(g);
}

typedef struct row {
    int S, M, V;
    double unit_s;
    double lowtime030_s; /* issue 15's lowtime 0.3.0 time, 0 if not measured */
    int big;             /* above (8,64) */
} row;

/* Solves one row once in a child process; returns its peak RSS in KiB (ru_maxrss). */
static long child_rss_kib(const kr_dag *d, const kr_options *o, const kr_solver_config *cfg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        kr_solve_result f;
        kr_error e = {0};
        int rc = kr_solve(d, o, cfg, &f, &e);
        if (rc == 0)
            kr_solve_result_free(&f);
        _exit(rc ? 1 : 0);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
        return -1;
    return ru.ru_maxrss;
}

static void section_speed(int want_bound)
{
    static const row rows[] = {
        {2, 8, 1, 0.001, 1.41, 0},  {4, 16, 1, 0.001, 13.3, 0}, {8, 32, 1, 0.001, 147.0, 0},
        {8, 64, 1, 0.001, 874.0, 0}, {16, 128, 1, 0.001, 0, 1},  {32, 256, 1, 0.001, 0, 1},
        {8, 32, 1, 0.0001, 0, 0},    {16, 128, 2, 0.001, 0, 1}, {16, 128, 3, 0.001, 0, 1},
        {16, 128, 4, 0.001, 0, 1},
    };
    int big = env_int("KR_BENCH_BIG", 1), lt_big = env_int("KR_BENCH_LOWTIME_BIG", 0);
    const char *only = getenv("KR_BENCH_ROWS"); /* e.g. "32x256,16x128x2": only these rows */
    printf("%-12s %-5s %-8s %7s %9s %9s %9s %9s %9s %10s %9s %9s\n", "(S,M)xV", "unit", "model", "steps", "setup_s",
           "solve_min", "solve_med", "cpu_med", "maxrss_MB", "lt0.3.0_s", "speed-up", "gap_max%");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *r = &rows[i];
        if ((r->big && !big) || (!r->big && big == 2))
            continue;
        if (!row_named(only, r->S, r->M, r->V))
            continue;
        kr_options o;
        kr_dag d;
        if (load_options(r->S, r->V, &o) || make_dag(r->S, r->M, r->V, &d))
            return;
        /* m: 0 exact (threads automatic), 1 exact on one thread (where automatic is two), 2
         * lowtime, 3 exact without the polish (where the default polishes: up to 256
         * instructions). */
        for (int m = 0; m < 4; m++) {
            kr_solver_config cfg;
            kr_solver_config_default(&cfg);
            cfg.cost_model = m == 2 ? KR_COST_LOWTIME : KR_COST_EXACT;
            cfg.unit_time_s = r->unit_s;
            cfg.exchange = bench_exchange();
            if (m == 1) {
                if (d.n - 2 < KR_SOLVE_THREAD_OPS)
                    continue;
                cfg.threads = 1;
            }
            if (m == 3) {
                if (d.n - 2 > KR_SOLVE_EXCHANGE_OPS)
                    continue;
                cfg.polish = -1;
            }
            const char *mname = m == 1 ? "exact-1t" : m == 3 ? "exact-np" : kr_cost_model_name(cfg.cost_model);
            char sm[32];
            snprintf(sm, sizeof sm, "(%d,%d)x%d", r->S, r->M, r->V);
            if (m == 2 && (r->V > 1 || (r->big && !lt_big))) {
                printf("%-12s %-5g %-8s %7s  (not run: KR_BENCH_LOWTIME_BIG=1%s)\n", sm, r->unit_s * 1000, "lowtime", "-",
                       r->V > 1 ? "; interleaved" : "");
                continue;
            }
            int reps = r->big ? 1 : REPEATS;
            double wall[REPEATS], cpu[REPEATS], setup = 0, gmax = NAN, gmed = NAN;
            int nsteps = 0, nund = 0;
            for (int k = 0; k < reps; k++) {
                kr_solve_result f;
                kr_error e = {0};
                double c0 = proc_cpu_s();
                if (kr_solve(&d, &o, &cfg, &f, &e)) {
                    printf("solve failed: %s\n", e.msg);
                    return;
                }
                cpu[k] = proc_cpu_s() - c0 - f.setup_s;
                wall[k] = f.solve_s;
                setup = f.setup_s;
                nsteps = f.nsteps;
                if (k == 0 && want_bound)
                    frontier_gaps(&f, &gmax, &gmed, &nund);
                kr_solve_result_free(&f);
            }
            qsort(wall, (size_t)reps, sizeof wall[0], cmp_double);
            qsort(cpu, (size_t)reps, sizeof cpu[0], cmp_double);
            double med = wall[reps / 2], cmed = cpu[reps / 2];
            long rss = child_rss_kib(&d, &o, &cfg);
            char ref[24] = "-", ratio[24] = "-";
            if (r->lowtime030_s > 0) {
                snprintf(ref, sizeof ref, "%.2f", r->lowtime030_s);
                snprintf(ratio, sizeof ratio, "%.0fx", r->lowtime030_s / (cmed + setup));
            }
            printf("%-12s %-5g %-8s %7d %9.3f %9.3f %9.3f %9.3f %9.1f %10s %9s %9.3f\n", sm, r->unit_s * 1000,
                   mname, nsteps - 1, setup, wall[0], med, cmed, rss / 1024.0, ref, ratio,
                   100 * gmax);
            if (want_bound)
                printf("%-12s       bound gap over %d undominated points: largest %.3f%%, median %.3f%%\n", "", nund,
                       100 * gmax, 100 * gmed);
        }
        kr_dag_free(&d);
        kr_options_free(&o);
    }
    printf("unit in ms; steps exclude step 0; solve = wall time of kr_solve without setup, bound included\n"
           "(fastest and median of %d runs; one run above (8,64)); maxrss = peak RSS of a child process\n"
           "that solves the row once (includes the options and DAG); cpu_med = median CPU time of the\n"
           "process, every thread (robust on a loaded machine); exact: from %d instructions with two CPUs\n"
           "online a second thread records the steps (kr_solver_config.threads), exact-1t: one thread;\n"
           "exact-np: without the frontier's polish (kr_solver_config.polish; by default up to 256\n"
           "instructions);\n"
           "speed-up = lowtime 0.3.0 / (setup + cpu_med); targets: (8,64) exact < 0.3 s, (32,256) < 30 s\n"
           "and < 2 GiB\n",
           REPEATS, KR_SOLVE_THREAD_OPS);
}

/* Loads the golden options of S stages, builds the (S, M) 1F1B DAG and solves it with the exact
 * (f[0]) and the lowtime (f[1]) cost models at the default 1 ms. Returns 0, or 1 after saying why. */
static int solve_both(int S, int M, kr_options *o, kr_dag *d, kr_solve_result f[2])
{
    if (load_options(S, 1, o) || make_dag(S, M, 1, d))
        return 1;
    kr_error e = {0};
    for (int m = 0; m < 2; m++) {
        kr_solver_config cfg;
        kr_solver_config_default(&cfg);
        cfg.cost_model = m ? KR_COST_LOWTIME : KR_COST_EXACT;
        cfg.exchange = bench_exchange();
        if (kr_solve(d, o, &cfg, &f[m], &e)) {
            printf("solve failed: %s\n", e.msg);
            return 1;
        }
    }
    return 0;
}

static void section_lowtime(void)
{
    static const int cases[][2] = {{4, 16}, {8, 32}, {8, 64}};
    for (size_t c = 0; c < 3; c++) {
        int S = cases[c][0], M = cases[c][1];
        kr_options o;
        kr_dag d;
        kr_solve_result f[2];
        if (solve_both(S, M, &o, &d, f))
            return;
        double worst = -INFINITY, mean = 0;
        int worse = 0;
        for (int k = 0; k < f[1].nsteps; k++) {
            double best = INFINITY;
            for (int j = 0; j < f[0].nsteps; j++)
                if (f[0].steps[j].knob_time_s <= f[1].steps[k].knob_time_s + 1e-12)
                    best = fmin(best, f[0].steps[j].energy_j);
            double rel = best / f[1].steps[k].energy_j - 1;
            worst = fmax(worst, rel);
            mean += rel / f[1].nsteps;
            worse += rel > 1e-9;
        }
        printf("(%d,%d) 1 ms: exact's best plan no slower than each of lowtime's %d points: worse at %d, worst "
               "%+.4f%%, mean %+.4f%%\n",
               S, M, f[1].nsteps, worse, 100 * worst, 100 * mean);
        kr_solve_result_free(&f[0]);
        kr_solve_result_free(&f[1]);
        kr_dag_free(&d);
        kr_options_free(&o);
    }
}

#ifdef KR_HAVE_CBC
/* One deadline's MILP in a child (parallel solves); writes lo, hi, status to a pipe. */
static void section_milp(void)
{
    static const int cases[][2] = {{2, 4}, {2, 8}, {3, 6}, {4, 8}};
    double max_s = env_int("KR_BENCH_MILP_S", 60);
    int jobs = env_int("KR_BENCH_JOBS", 1), K = 10;
    for (size_t c = 0; c < 4; c++) {
        int S = cases[c][0], M = cases[c][1];
        if (!row_named(getenv("KR_BENCH_ROWS"), S, M, 1))
            continue;
        kr_options o;
        kr_dag d;
        kr_solve_result f[2];
        if (solve_both(S, M, &o, &d, f))
            return;
        double tlo = INFINITY, tfr = 0, efr = INFINITY;
        for (int k = 0; k < f[0].nsteps; k++) {
            tlo = fmin(tlo, f[0].steps[k].knob_time_s);
            if (f[0].steps[k].energy_j < efr) {
                efr = f[0].steps[k].energy_j;
                tfr = f[0].steps[k].knob_time_s;
            }
        }
        /* Deadlines 0..K-1: a grid from the fastest plan to 3 % past the energy minimum, where
         * "exact" is the cheapest frontier step no slower (it leaves the time between its step
         * and the deadline unused). Deadlines K..N-1: the knob times of the steps the grid
         * chose (each once), where "exact" is the frontier point itself. */
        double thi = tfr + 0.03 * (tfr - tlo), t[32], best[3][32], lo[32], hi[32], rcpu = 0;
        int st[32], N = K, rstep[32], ndiff[32], nops = d.n - 2;
        int fds[32][2];
        int *cbck = malloc(sizeof(int) * (size_t)nops), *refk = malloc(sizeof(int) * (size_t)nops);
        if (!cbck || !refk)
            return;
        pid_t pids[32];
        for (int i = 0; i < K; i++)
            t[i] = tlo + (thi - tlo) * i / (K - 1);
        for (int i = 0; i < K; i++) {
            int kb = -1;
            for (int k = 0; k < f[0].nsteps; k++)
                if (f[0].steps[k].knob_time_s <= t[i] + 1e-12 && (kb < 0 || f[0].steps[k].energy_j < f[0].steps[kb].energy_j))
                    kb = k;
            int dup = kb < 0;
            for (int j = K; j < N && !dup; j++)
                dup = t[j] == f[0].steps[kb].knob_time_s;
            if (!dup)
                t[N++] = f[0].steps[kb].knob_time_s;
        }
        for (int i = 0; i < N; i++)
            for (int m = 0; m < 2; m++) {
                best[m][i] = INFINITY;
                for (int k = 0; k < f[m].nsteps; k++)
                    if (f[m].steps[k].knob_time_s <= t[i] + 1e-12)
                        best[m][i] = fmin(best[m][i], f[m].steps[k].energy_j);
            }
        /* exact refined for each deadline (kr_solve_refine, on a copy's worth of steps: the
         * refined plans are appended to f[0] after the frontier figures above were taken). */
        for (int i = 0; i < N; i++) {
            kr_solver_config cfg;
            kr_solver_config_default(&cfg);
            kr_error e = {0};
            int step = -1;
            double c0 = proc_cpu_s();
            if (kr_solve_refine(&d, &o, &cfg, &f[0], t[i], &step, &e)) {
                printf("refine failed: %s\n", e.msg);
                return;
            }
            if (i < K)
                rcpu += proc_cpu_s() - c0;
            best[2][i] = f[0].steps[step].energy_j;
            rstep[i] = step;
        }
        fflush(stdout);
        for (int i0 = 0; i0 < N; i0 += jobs) {
            for (int i = i0; i < N && i < i0 + jobs; i++) {
                if (pipe(fds[i]))
                    return;
                pids[i] = fork();
                if (pids[i] == 0) {
                    double res[3];
                    res[2] = kr_test_milp(&d, &o, 85.0, 1, t[i], best[2][i], max_s, 1e-6, &res[0], &res[1], cbck);
                    ssize_t wn = write(fds[i][1], res, sizeof res);
                    ssize_t wk = write(fds[i][1], cbck, sizeof(int) * (size_t)nops);
                    _exit(wn == (ssize_t)sizeof res && wk == (ssize_t)(sizeof(int) * (size_t)nops) ? 0 : 1);
                }
                close(fds[i][1]);
            }
            for (int i = i0; i < N && i < i0 + jobs; i++) {
                double res[3] = {NAN, NAN, -2};
                if (read(fds[i][0], res, sizeof res) != (ssize_t)sizeof res)
                    res[2] = -2;
                /* Where CBC found a plan below the refined one (the cutoff lets it return that
                 * plan itself), how many instructions it changes: how far the better plan lies
                 * from the local search. */
                ndiff[i] = -1;
                if (read(fds[i][0], cbck, sizeof(int) * (size_t)nops) == (ssize_t)(sizeof(int) * (size_t)nops) &&
                    res[1] < best[2][i] * (1 - 1e-9) && cbck[0] >= 0 &&
                    kr_solve_result_config(&f[0], rstep[i], refk) == KR_OK) {
                    ndiff[i] = 0;
                    for (int v = 0; v < nops; v++)
                        ndiff[i] += cbck[v] != refk[v];
                }
                close(fds[i][0]);
                waitpid(pids[i], NULL, 0);
                lo[i] = res[0];
                hi[i] = res[1];
                st[i] = (int)res[2];
                if (st[i] == 0) {
                    /* Nothing below the cutoff (the refined plan's energy, + 1e-9 relative):
                     * that plan is the optimum. */
                    lo[i] = hi[i] = best[2][i];
                    st[i] = 1;
                }
            }
        }
        double g[3][32], bmax = 0;
        for (int i = 0; i < N; i++) {
            /* The optimum lies in [lo, min(hi, refined)] (the cutoff is the refined plan, so CBC
             * reports no incumbent when nothing beats it). Gaps are against lo: the optimum
             * when proven, else CBC's lower bound (then the gap overstates ours). */
            double ref = lo[i];
            for (int m = 0; m < 3; m++)
                g[m][i] = isfinite(best[m][i]) ? best[m][i] / ref - 1 : NAN;
            double b = kr_solve_result_bound(&f[0], t[i]);
            bmax = fmax(bmax, ref / b - 1);
            printf("  (%d,%d) %s %.4f s: bound %.3f  MILP %s [%.3f, %.3f]  frontier step %.3f (%+.4f%%)  refined %.3f "
                   "(%+.4f%%)  lowtime %.3f (%+.4f%%)",
                   S, M, i < K ? "deadline" : "step at", t[i], b, st[i] == 1 ? "optimum" : "unproven", lo[i],
                   fmin(hi[i], best[2][i]), best[0][i], 100 * g[0][i], best[2][i], 100 * g[2][i], best[1][i],
                   100 * g[1][i]);
            if (ndiff[i] >= 0)
                printf("  CBC's plan: %d of %d instructions differ from the refined one", ndiff[i], nops);
            printf("\n");
        }
        int nbet = 0, dmin = nops, dmax = 0;
        for (int i = 0; i < N; i++)
            if (ndiff[i] >= 0) {
                nbet++;
                dmin = ndiff[i] < dmin ? ndiff[i] : dmin;
                dmax = ndiff[i] > dmax ? ndiff[i] : dmax;
            }
        if (nbet)
            printf("(%d,%d) CBC found plans below the refined one at %d of %d times; they differ from it at %d-%d of %d "
                   "instructions\n",
                   S, M, nbet, N, dmin, dmax, nops);
        else
            printf("(%d,%d) CBC found no plan below the refined one at any of %d times\n", S, M, N);
        free(cbck);
        free(refk);
        printf("(%d,%d) refine: %.4f s CPU for %d deadlines\n", S, M, rcpu, K);
        for (int set = 0; set < 2; set++) {
            int i0 = set ? K : 0, i1 = set ? N : K, proven = 0;
            for (int i = i0; i < i1; i++)
                proven += st[i] == 1;
            for (int m = 0; m < 3; m++) {
                double v[32];
                int n = 0;
                for (int i = i0; i < i1; i++)
                    if (isfinite(g[m][i]))
                        v[n++] = g[m][i];
                qsort(v, (size_t)n, sizeof v[0], cmp_double);
                printf("(%d,%d) %-30s gap to the MILP optimum at %d %s (%d proven): largest %.4f%%, median %.4f%%\n",
                       S, M, m == 2 ? "exact, the deadline's plan" : m ? "lowtime model" : "exact's frontier step", n,
                       set ? "frontier steps' own times" : "grid deadlines", proven, n ? 100 * v[n - 1] : NAN,
                       n ? 100 * v[n / 2] : NAN);
            }
        }
        printf("(%d,%d) bound below the MILP optimum by at most %.4f%%\n", S, M, 100 * bmax);
        kr_solve_result_free(&f[0]);
        kr_solve_result_free(&f[1]);
        kr_dag_free(&d);
        kr_options_free(&o);
    }
}
#endif

int main(int argc, char **argv)
{
    int all = argc < 2;
    for (int i = 0; i < argc || all; i++) {
        const char *s = all ? NULL : argv[i];
        if (i == 0 && !all)
            continue;
        if (all || strcmp(s, "speed") == 0 || strcmp(s, "bound") == 0) {
            printf("== speed, memory and the bound's gap\n");
            section_speed(1);
        }
        if (all || strcmp(s, "lowtime") == 0) {
            printf("== exact vs the lowtime model\n");
            section_lowtime();
        }
        if (all || strcmp(s, "milp") == 0) {
            printf("== against the MILP optimum (CBC)\n");
#ifdef KR_HAVE_CBC
            section_milp();
#else
            printf("(CBC not found at build time: skipped)\n");
#endif
        }
        if (all)
            break;
    }
    return 0;
}
