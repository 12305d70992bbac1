/*
 * bench_dominance.c — issue 31: Kareus never behind the baseline it builds on, on the paper's ten
 * configurations (kr_job_suite_paper, what `kareus compare --suite paper` runs). For each, the
 * whole flow on the simulator (exhaustive search, exact solver), then:
 *   iso-time    the energy saved against Perseus at iso-time (10-point frontiers, simulated, as
 *               the paper computes it) by Kareus and by Nanobatching+Perseus, and Kareus − N+P in
 *               points; the same on the full predicted frontiers;
 *   dominance   whether at every time of N+P's frontier Kareus's frontier (a step function: the
 *               least energy of its steps no slower) uses no more energy: "ok" or "BEHIND" (with
 *               the number of N+P times where it is behind and the worst gap), once for Kareus's
 *               own solver steps alone and once for its frontier (own ∪ N+P's undominated steps,
 *               kareus optimize's), whose steps taken from N+P are counted.
 * Prints figures; never fails on them.
 */
#include <math.h>
#include <stdio.h>

#include "kareus/kareus.h"

/* N+P's times where Kareus's steps (own only: those not taken from N+P) use more energy than
 * N+P; *worst: the largest relative excess. */
static int behind(const kr_method_result *k, const kr_method_result *np, int own_only, double *worst)
{
    int n = 0;
    *worst = 0;
    for (int j = 0; j < np->nsteps; j++) {
        double T = np->time_s[j], best = INFINITY;
        for (int i = 0; i < k->nsteps; i++)
            if ((!own_only || k->from_np == NULL || !k->from_np[i]) && k->time_s[i] <= T * (1 + 1e-12))
                best = fmin(best, k->energy_j[i]);
        if (!(best <= np->energy_j[j] * (1 + 1e-12))) {
            n++;
            *worst = fmax(*worst, isfinite(best) ? best / np->energy_j[j] - 1 : INFINITY);
        }
    }
    return n;
}

static void verdict(char *buf, size_t cap, int n, double worst, int of)
{
    if (n == 0)
        snprintf(buf, cap, "ok");
    else
        snprintf(buf, cap, "BEHIND at %d/%d (worst %+.2f%%)", n, of, 100 * worst);
}

int main(void)
{
    const char *const *names;
    int n = kr_job_suite_paper(&names);
    printf("Kareus vs Nanobatching+Perseus on the paper's %d configurations (simulator, exhaustive search):\n", n);
    printf("%-34s %8s %8s %7s %8s %9s  %-26s %-26s\n", "job", "K iso-t", "N+P", "K-N+P", "full K-N", "from N+P",
           "own steps", "Kareus frontier");
    int all_ok = 0;
    for (int i = 0; i < n; i++) {
        kr_job job;
        kr_error e = {0};
        kr_optimize_result r;
        kr_optimize_config o;
        kr_optimize_config_default(&o);
        if (kr_job_builtin(names[i], &job, &e) != KR_OK || kr_optimize(&job, &o, &r, &e) != KR_OK) {
            printf("%-34s failed: %s\n", names[i], e.msg);
            continue;
        }
        const kr_method_result *k = &r.m[KR_METHOD_KAREUS], *np = &r.m[KR_METHOD_NANOBATCH_PERSEUS];
        const kr_metric_row *rk = &r.rows[KR_METHOD_KAREUS], *rn = &r.rows[KR_METHOD_NANOBATCH_PERSEUS];
        double w_own, w_all;
        int b_own = behind(k, np, 1, &w_own), b_all = behind(k, np, 0, &w_all);
        char v_own[64], v_all[64];
        verdict(v_own, sizeof v_own, b_own, w_own, np->nsteps);
        verdict(v_all, sizeof v_all, b_all, w_all, np->nsteps);
        all_ok += b_all == 0;
        printf("%-34s %+7.1f%% %+7.1f%% %+7.2f %+8.2f %9d  %-26s %-26s\n", names[i], 100 * rk->iso_time_10pt,
               100 * rn->iso_time_10pt, 100 * (rk->iso_time_10pt - rn->iso_time_10pt),
               100 * (rk->iso_time_full - rn->iso_time_full), k->nsteps - k->steps_own, v_own, v_all);
        kr_optimize_result_free(&r);
    }
    printf("\nK iso-t, N+P: energy saved against Perseus at iso-time (10-point frontiers, simulated); K-N+P: their\n"
           "difference in points; full K-N: the same on the full predicted frontiers. own steps: Kareus's solver\n"
           "steps alone against N+P's frontier; Kareus frontier: with the N+P steps it takes (\"from N+P\").\n"
           "Kareus >= N+P at every frontier time on %d of %d configurations.\n",
           all_ok, n);
    return 0;
}
