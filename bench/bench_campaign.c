/*
 * bench_campaign.c — projected wall time of a profiling campaign against the number of nodes
 * (docs/profiler.md, "Cluster campaigns"). Prints figures; never fails on time.
 *
 * The work: for each job, each unit of its campaign (the partitions `kareus profile --plan-work`
 * lists) is searched the way `kareus profile --log` searches it (bo, the simulator prior, seed
 * 1), here on the simulator backend, and the search's own count of measurements is the unit's
 * size. A measurement on a GPU costs KR_BENCH_MEAS_S seconds (default 6: the protocol's
 * arithmetic in docs/profiler.md §6, 5-7 s, not yet timed on a GPU) plus KR_BENCH_UNIT_S per unit
 * (default 30 s: opening the GPUs, NCCL set-up, the first clock settle; an estimate). A node
 * runs one unit at a time (a unit with its collective takes the node's TP group of GPUs).
 *
 * For N nodes it prints the makespan of the shards as `--shard I/N` deals them (unit u on shard
 * u mod N), of longest-processing-time-first dealing (what a smarter split could reach), and
 * the lower bound max(total / N, largest unit). Two campaigns: the default job (10 units) and
 * the paper's ten jobs together (one campaign per job, dealt in turn, as an sbatch array per job
 * would be when all are submitted at once: here pooled into one list in job order).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/kareus.h"

#define MAX_UNITS 512

/* Measurements of every unit of job appended to cost[] (seconds); returns the new count. */
static int campaign_units(const kr_job *job, double meas_s, double unit_s, double *cost, int n, long *meas)
{
    kr_error err = {0};
    kr_partition_set *set = malloc(sizeof *set);
    kr_backend *b = NULL;
    if (set == NULL || kr_search_partitions(job, KR_VARIANT_KAREUS, 1, set, &err) != KR_OK ||
        kr_backend_open("sim", &(kr_backend_open_config){.job = job}, &b, &err) != KR_OK) {
        fprintf(stderr, "bench_campaign: %s: %s\n", job->name, err.msg);
        free(set);
        return n;
    }
    kr_search_config opt;
    kr_search_config_default(&opt);
    opt.prior = job; /* kareus profile's default: --prior sim */
    for (int i = 0; i < set->n && n < MAX_UNITS; i++) {
        kr_partition_frontier f;
        kr_search_stats st;
        if (kr_search_partition(job, &set->p[i], b, NULL, &opt, &f, &st, &err) != KR_OK) {
            fprintf(stderr, "bench_campaign: %s %s: %s\n", job->name, set->p[i].key, err.msg);
            continue;
        }
        kr_frontier_free(&f);
        *meas += st.evaluated;
        cost[n++] = unit_s + meas_s * (double)st.evaluated;
    }
    kr_backend_destroy(b);
    free(set);
    return n;
}

static int cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

/* Makespan of round-robin (u mod nodes) and of LPT dealing. */
static void makespans(const double *cost, int n, int nodes, double *rr, double *lpt)
{
    double *load = calloc((size_t)nodes, sizeof *load), *sorted = malloc((size_t)n * sizeof *sorted);
    if (load == NULL || sorted == NULL) {
        free(load), free(sorted);
        *rr = *lpt = NAN;
        return;
    }
    for (int u = 0; u < n; u++)
        load[u % nodes] += cost[u];
    *rr = 0;
    for (int k = 0; k < nodes; k++)
        *rr = fmax(*rr, load[k]), load[k] = 0;
    memcpy(sorted, cost, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_desc);
    for (int u = 0; u < n; u++) {
        int best = 0;
        for (int k = 1; k < nodes; k++)
            if (load[k] < load[best])
                best = k;
        load[best] += sorted[u];
    }
    *lpt = 0;
    for (int k = 0; k < nodes; k++)
        *lpt = fmax(*lpt, load[k]);
    free(load);
    free(sorted);
}

static void report(const char *name, const double *cost, int n, long meas)
{
    double total = 0, largest = 0;
    for (int u = 0; u < n; u++)
        total += cost[u], largest = fmax(largest, cost[u]);
    printf("\n%s: %d units, %ld measurements, %.2f node-hours\n", name, n, meas, total / 3600);
    printf("%6s %12s %12s %12s %10s\n", "nodes", "shard_u%N_h", "lpt_h", "bound_h", "speedup");
    static const int nodes[] = {1, 2, 4, 8, 10, 16, 32, 64};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        double rr, lpt, bound = fmax(total / nodes[i], largest);
        makespans(cost, n, nodes[i], &rr, &lpt);
        printf("%6d %12.3f %12.3f %12.3f %9.2fx\n", nodes[i], rr / 3600, lpt / 3600, bound / 3600, total / rr);
    }
}

static double env_or(const char *name, double dflt)
{
    const char *s = getenv(name);
    return s && *s ? atof(s) : dflt;
}

int main(void)
{
    double meas_s = env_or("KR_BENCH_MEAS_S", 6.0), unit_s = env_or("KR_BENCH_UNIT_S", 30.0);
    printf("bench_campaign: %.1f s a measurement, %.1f s a unit (KR_BENCH_MEAS_S, KR_BENCH_UNIT_S)\n", meas_s,
           unit_s);
    static double cost[MAX_UNITS];
    kr_job job;
    kr_job_default(&job);
    long meas = 0;
    int n = campaign_units(&job, meas_s, unit_s, cost, 0, &meas);
    report("default job", cost, n, meas);
    const char *const *names;
    int nj = kr_job_suite_paper(&names);
    n = 0, meas = 0;
    for (int j = 0; j < nj; j++) {
        kr_error err = {0};
        if (kr_job_builtin(names[j], &job, &err) == KR_OK)
            n = campaign_units(&job, meas_s, unit_s, cost, n, &meas);
    }
    report("paper suite (10 jobs)", cost, n, meas);
    return 0;
}
