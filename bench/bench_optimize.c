/*
 * bench_optimize.c — wall time of `kareus optimize` on the default job (target: under 5 s on one
 * core) and of `kareus compare --suite paper`, each run as the CLI is run (a child process),
 * plus the phases of the in-process flow. Prints figures; never fails on time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kareus/kareus.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double run(const char *cmd)
{
    double t0 = now_s();
    int rc = system(cmd);
    double t = now_s() - t0;
    if (rc != 0)
        printf("  (command failed with status %d: %s)\n", rc, cmd);
    return t;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    char cmd[2048];
    const char *tmp = "/tmp/kareus-bench-optimize";
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    if (system(cmd) != 0)
        return 1;
    printf("kareus optimize on the default job (CLI, fresh output directory each run, pictures and report):\n");
    double t[5];
    for (int i = 0; i < 5; i++) {
        snprintf(cmd, sizeof cmd, "%s optimize --out %s/run%d --quiet > /dev/null", KR_CLI, tmp, i);
        t[i] = run(cmd);
    }
    qsort(t, 5, sizeof t[0], cmp);
    printf("  median %.3f s, min %.3f s, max %.3f s over 5 runs (target < 5 s): %.1fx under target\n", t[2], t[0], t[4],
           5.0 / t[2]);

    kr_job job;
    kr_job_default(&job);
    kr_optimize_config o;
    kr_optimize_config_default(&o);
    kr_optimize_result r;
    kr_error e = {0};
    if (kr_optimize(&job, &o, &r, &e) == KR_OK) {
        printf("  in-process phases (no files): search %.3f s, compose %.3f s, solve %.3f s, simulate %.3f s, total %.3f s\n",
               r.search_s, r.compose_s, r.solve_s, r.simulate_s, r.wall_s);
        kr_optimize_result_free(&r);
    } else {
        printf("  in-process run failed: %s\n", e.msg);
    }

    printf("kareus compare --suite paper (ten configurations, five methods each):\n");
    snprintf(cmd, sizeof cmd, "%s compare --suite paper --out %s/suite --quiet > /dev/null", KR_CLI, tmp);
    double ts = run(cmd);
    printf("  %.2f s with pictures and reports (%.2f s per configuration)\n", ts, ts / 10);
    snprintf(cmd, sizeof cmd, "%s compare --suite paper --out %s/suite2 --no-pictures --quiet > /dev/null", KR_CLI, tmp);
    ts = run(cmd);
    printf("  %.2f s without pictures\n", ts);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
