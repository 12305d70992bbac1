/*
 * bench_sim.c — how fast the simulator evaluates partition configurations (target: at least
 * 100,000 per second on one core), sweeping the full search space (planning clocks × comm SMs ×
 * slots) of every partition of the default job and of the CP=2 TP=4 job, and the calibration
 * comparison of docs/calibration.md. Prints figures; never fails on time.
 */
#include <math.h>
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

/* One sweep of the whole search space of every partition; returns the configs evaluated. */
static long sweep(const kr_job *job, const kr_partition_set *set, double *checksum)
{
    int clocks[128];
    int nc = kr_job_clocks(job, clocks, 128);
    long n = 0;
    for (int pi = 0; pi < set->n; pi++) {
        const kr_partition *p = &set->p[pi];
        const kr_smlist *sl = p->coll.kind == KR_COLL_ALLREDUCE ? &job->sms_allreduce : &job->sms_gather;
        for (int ci = 0; ci < nc; ci++)
            for (int s = 0; s < sl->n; s++)
                for (int slot = 0; slot < p->nslots; slot++) {
                    kr_config c = {clocks[ci], sl->v[s], slot, 0};
                    kr_measurement m;
                    kr_error e = {0};
                    if (kr_sim_measure(job, p, &c, &m, &e) != KR_OK) {
                        fprintf(stderr, "bench_sim: %s\n", e.msg);
                        exit(1);
                    }
                    *checksum += m.time_s + m.energy_j;
                    n++;
                }
    }
    return n;
}

static void bench_job(const char *name)
{
    kr_job job;
    kr_error e = {0};
    if (kr_job_builtin(name, &job, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL || kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    double checksum = 0;
    long per_sweep = sweep(&job, set, &checksum); /* warm-up */
    long total = 0;
    double t0 = now_s(), t;
    do {
        total += sweep(&job, set, &checksum);
        t = now_s() - t0;
    } while (t < 1.0);
    printf("%-32s %2d partitions, %6ld configs per sweep: %9.0f configs/s (%.2f us each; checksum %.6g)\n", name,
           set->n, per_sweep, total / t, 1e6 * t / total, checksum);
    free(set);
}

/* A large GEMM and an HBM-streaming kernel across the planning clocks: the shape of the model
 * (time, power, energy with static power, relative to the max clock). */
static void clock_sweep(const char *gpu_name)
{
    kr_gpu g;
    kr_error e = {0};
    if (kr_catalog_gpu_find(gpu_name, &g, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    printf("%s: 8192^3 BF16 GEMM and an HBM-streaming kernel (1 GiB moved) vs requested clock\n", g.name);
    printf("  %6s | %7s %7s %7s %7s %7s | %7s %7s %7s\n", "MHz", "f_eff", "TF/s", "W", "t/t_max", "E/E_max", "W",
           "t/t_max", "E/E_max");
    double t0 = 0, e0 = 0, mt0 = 0, me0 = 0;
    for (int f = (int)g.clock_max_mhz; f >= (int)g.plan_min_mhz - 2 * (int)g.plan_step_mhz; f -= 2 * (int)g.plan_step_mhz) {
        kr_sim_kernel_result r, m;
        if (kr_sim_gemm(&g, 8192, 8192, 8192, f, 0, &r, &e) || kr_sim_stream(&g, 1073741824.0, f, &m, &e)) {
            fprintf(stderr, "bench_sim: %s\n", e.msg);
            exit(1);
        }
        double en = r.power_w * r.time_s, men = m.power_w * m.time_s;
        if (t0 == 0) {
            t0 = r.time_s;
            e0 = en;
            mt0 = m.time_s;
            me0 = men;
        }
        printf("  %6d | %7.0f %7.1f %7.1f %7.3f %7.3f | %7.1f %7.3f %7.3f\n", f, r.f_eff_mhz, r.tflops, r.power_w,
               r.time_s / t0, en / e0, m.power_w, m.time_s / mt0, men / me0);
    }
    printf("\n");
}

int main(void)
{
    printf("Simulator throughput, one core (kr_sim_measure over the full search space; the build machine is\n"
           "shared by several engineers, so timings are noisy):\n");
    bench_job("default");
    bench_job("llama3.2-3b-cp2tp4-mbs8-s4096");
    printf("target: >= 100000 configs/s\n\n");
    clock_sweep("a100-sxm4-40gb");
    clock_sweep("h100-sxm");

    kr_sim_check rows[64];
    int n = 0;
    kr_error e = {0};
    if (kr_sim_calibration_checks(rows, 64, &n, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        return 1;
    }
    printf("Calibration (simulator vs published; `kareus catalog --check` prints the same with sources):\n");
    for (int i = 0; i < n && i < 64; i++) {
        const kr_sim_check *c = &rows[i];
        double mid = 0.5 * (c->published_lo + c->published_hi);
        printf("  %-62s %-15s %9.4g %-8s published %.4g-%.4g  ratio %.3f %s%s\n", c->what, c->gpu, c->predicted, c->unit,
               c->published_lo, c->published_hi, c->predicted / mid, c->within ? "within" : "OUTSIDE",
               c->input ? " (input)" : "");
    }
    return 0;
}
