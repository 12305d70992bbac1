/*
 * bench_solver.c — solve time and steps of the frontier solver on the golden options files
 * (shared/golden/lowtime/opts_S{2,4,8}.csv), both cost models, and the speed-up against the
 * times lowtime 0.2.0 took on this kind of machine (golden README: 5.7 s for (2,8), 80 s for
 * (4,16), 1,827 s for (8,32) at 1 ms; (2,8) at 0.1 ms 67.7 s). Prints figures; never fails on
 * time. The machine is shared (2 cores): expect ±20 % noise, so every solve runs REPEATS times
 * and the table gives the fastest and the median wall time, and the median CPU time of the
 * solving thread (insensitive to other processes taking the core).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kareus/kareus.h"

typedef struct bench_case {
    int stages, microbatches;
    double unit_s;
    double lowtime_ref_s; /* lowtime 0.2.0 solve time here, 0 if not measured */
} bench_case;

#define REPEATS 3

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static const bench_case cases[] = {
        {2, 8, 0.001, 5.7},  {4, 16, 0.001, 80.0}, {8, 32, 0.001, 1827.0},
        {8, 64, 0.001, 0.0}, {2, 8, 0.0001, 67.7}, {4, 16, 0.0001, 0.0},
    };
    printf("%-8s %-6s %-8s %8s %10s %10s %10s %10s %12s\n", "(S,M)", "unit", "model", "steps", "setup_s",
           "solve_min", "solve_med", "cpu_med", "vs lowtime");
    double target_s = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *c = &cases[i];
        char path[512];
        snprintf(path, sizeof path, "%s/golden/lowtime/opts_S%d.csv", KR_TESTDATA_DIR, c->stages);
        kr_error e = {0};
        kr_options o;
        if (kr_options_read_csv(path, c->stages, 1, &o, &e)) {
            printf("cannot read %s: %s\n", path, e.msg);
            return 1;
        }
        kr_dag d;
        if (kr_dag_pipeline(KR_SCHEDULE_1F1B, c->stages, c->microbatches, 1, NULL, &d, &e)) {
            printf("%s\n", e.msg);
            return 1;
        }
        for (int m = 0; m < 3; m++) {
            kr_solver_config cfg;
            kr_solver_config_default(&cfg);
            cfg.cost_model = m == 2 ? KR_COST_LOWTIME : KR_COST_EXACT;
            cfg.exchange = m == 1 ? -1 : 0; /* row "exact-nx": without the exchange pass */
            cfg.unit_time_s = c->unit_s;
            kr_solve_result f;
            double wall[REPEATS], cpu[REPEATS], setup = 0;
            int nsteps = 0;
            for (int r = 0; r < REPEATS; r++) {
                double c0 = thread_cpu_s();
                if (kr_solve(&d, &o, &cfg, &f, &e)) {
                    printf("solve failed: %s\n", e.msg);
                    return 1;
                }
                cpu[r] = thread_cpu_s() - c0 - f.setup_s;
                wall[r] = f.solve_s;
                setup = f.setup_s;
                nsteps = f.nsteps;
                if (r + 1 < REPEATS)
                    kr_solve_result_free(&f);
            }
            qsort(wall, REPEATS, sizeof wall[0], cmp_double);
            qsort(cpu, REPEATS, sizeof cpu[0], cmp_double);
            double med = wall[REPEATS / 2];
            if (c->stages == 8 && c->microbatches == 64 && c->unit_s == 0.001 && m == 0)
                target_s = med;
            char sm[16], ratio[32] = "-";
            snprintf(sm, sizeof sm, "(%d,%d)", c->stages, c->microbatches);
            if (c->lowtime_ref_s > 0)
                snprintf(ratio, sizeof ratio, "%.0fx", c->lowtime_ref_s / (med + setup));
            printf("%-8s %-6g %-8s %8d %10.3f %10.3f %10.3f %10.3f %12s\n", sm, c->unit_s * 1000,
                   m == 1 ? "exact-nx" : kr_cost_model_name(cfg.cost_model), nsteps - 1, setup, wall[0], med,
                   cpu[REPEATS / 2], ratio);
            kr_solve_result_free(&f);
        }
        kr_dag_free(&d);
        kr_options_free(&o);
    }
    printf("unit in ms; steps exclude step 0; %d runs each (wall: fastest, median; cpu: median thread CPU time)\n",
           REPEATS);
    printf("'vs lowtime' = lowtime 0.2.0 solve time / ours (setup + median solve)\n");
    printf("target: (8,64) at 1 ms, exact, under 1 s: median %.3f s (%.2fx the target)\n", target_s, target_s / 1.0);
    printf("exact: default (exchange pass up to 256 instructions); exact-nx: --exchange off\n");
    printf("(lowtime 0.2.0 on (8,64) at 1 ms had not finished after 4,006 s: 3.5-4 h projected)\n");
    return 0;
}
