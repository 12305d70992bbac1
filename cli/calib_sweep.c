/*
 * calib_sweep.c — `kareus calibrate --data SWEEP.jsonl`: the comm clock law fitted to a log of
 * `kareus profile --comm-sweep` (recognised by its header's schema, kareus.commsweep), and
 * `kareus sim check --data SWEEP.jsonl`: the simulator's comm kernels against such a log.
 *
 * The fit (kr_profiler_sweep_fit_law) sets comm_clock_exp, the exponent of the per-CTA rate's
 * clock law both comm kernels of the simulator share, and nothing else: the per-CTA rate and
 * saturation it fits per kernel are printed, not written, since a single GPU's proxy measures
 * HBM copies rather than a link and the simulator's NVLink constants come from the harness fit
 * (docs/calibration.md, "Pinning the comm clock law on hardware"). The entry written is the base
 * (--base, default the log's GPU from the catalog) with that one constant and its source.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/*
 * Reads the sweep log data (its warnings on stderr) and the GPU entry the command works with:
 * entry (option opt, a catalog name or a file), else the log's GPU by name. Returns 0 or the
 * exit status, with d freed.
 */
static int open_sweep(const char *cmd, const char *opt, const char *data, const char *entry,
                      kr_profiler_sweep_data *d, kr_gpu *g)
{
    kr_error err = {0};
    int rc = kr_profiler_sweep_read(data, d, &err);
    if (rc)
        return cli_report(rc, &err);
    if (d->warning[0])
        fprintf(stderr, "kareus %s: warning: %s\n", cmd, d->warning);
    const char *name = entry ? entry : d->gpu;
    rc = strchr(name, '/') || strstr(name, ".json") ? kr_gpu_read_json(name, g, &err)
                                                     : kr_catalog_gpu_find(name, g, &err);
    if (rc == KR_OK)
        return 0;
    if (entry == NULL)
        fprintf(stderr, "kareus %s: the log's GPU '%s' is not in the catalog: give the entry with %s NAME|FILE\n",
                cmd, d->gpu, opt);
    else
        fprintf(stderr, "kareus %s: %s: %s\n", cmd, opt, err.msg);
    kr_profiler_sweep_data_free(d);
    return CLI_EXIT_INPUT;
}

static void print_fit(const char *data, const kr_profiler_sweep_data *d, const kr_profiler_sweep_fit *f,
                      const kr_gpu *base)
{
    printf("comm sweep %s (backend %s, job %s, %s): %d points in %d groups\n", data, d->backend, d->job_name, d->gpu,
           f->npoints, f->ngroups);
    printf("  %-16s %-10.4f (range %.2f..%.2f the data allow; was %.6g)\n", "comm_clock_exp", f->clock_exp,
           f->clock_exp_lo, f->clock_exp_hi, base->comm_clock_exp);
    printf("  RMS log error %.4f\n", f->rms_log);
    for (int k = 0; k < f->ngroups; k++) {
        const kr_profiler_sweep_group *g = &f->groups[k];
        printf("  %-6s %-13s %8.2f MB /%d: %3d points, per CTA %.3g GB/s, saturation %.3g GB/s, alpha %.3g us%s\n",
               kr_profiler_sweep_kernel_name(g->kernel), kr_coll_kind_name(g->coll), g->bytes / 1e6, g->group,
               g->points, g->cta_Bps / 1e9, g->sat_Bps / 1e9, g->alpha_s * 1e6,
               g->kernel == KR_SWEEP_PROXY ? " (HBM, not a link: not written)" : "");
    }
}

static json_t *fit_json(const char *data, const kr_profiler_sweep_data *d, const kr_profiler_sweep_fit *f,
                        const kr_gpu *base)
{
    json_t *o = json_object(), *p = json_object(), *gs = json_array();
    json_object_set_new(o, "data", json_string(data));
    json_object_set_new(o, "kind", json_string("comm_sweep"));
    json_object_set_new(o, "backend", json_string(d->backend));
    json_object_set_new(o, "gpu", json_string(d->gpu));
    json_object_set_new(o, "points", json_integer(f->npoints));
    json_object_set_new(o, "rms_log_error", json_real(f->rms_log));
    json_object_set_new(p, "comm_clock_exp", json_real(f->clock_exp));
    json_object_set_new(o, "fitted", p);
    json_object_set_new(o, "comm_clock_exp_range", json_pack("[f, f]", f->clock_exp_lo, f->clock_exp_hi));
    json_object_set_new(o, "comm_clock_exp_base", json_real(base->comm_clock_exp));
    for (int k = 0; k < f->ngroups; k++) {
        const kr_profiler_sweep_group *g = &f->groups[k];
        json_array_append_new(gs, json_pack("{s:s, s:s, s:f, s:i, s:i, s:i, s:f, s:f, s:f}", "kernel",
                                            kr_profiler_sweep_kernel_name(g->kernel), "coll",
                                            kr_coll_kind_name(g->coll), "bytes", g->bytes, "group", g->group,
                                            "ranks", g->ranks, "points", g->points, "cta_Bps", g->cta_Bps,
                                            "sat_Bps", g->sat_Bps, "alpha_s", g->alpha_s));
    }
    json_object_set_new(o, "groups", gs);
    return o;
}

int cli_calib_sweep(const char *data, const char *out, const char *base_name, int json)
{
    kr_profiler_sweep_data d;
    kr_gpu base;
    int rc, status = open_sweep("calibrate", "--base", data, base_name, &d, &base);
    if (status)
        return status;
    kr_error err = {0};
    kr_profiler_sweep_fit f;
    if (status == 0 && (rc = kr_profiler_sweep_fit_law(d.p, d.n, d.clock_max_mhz, &f, &err)))
        status = cli_report(rc, &err);
    if (status == 0) {
        if (json) {
            json_t *o = fit_json(data, &d, &f, &base);
            char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
            puts(s);
            free(s);
            json_decref(o);
        } else
            print_fit(data, &d, &f, &base);
    }
    /* A profile that stays within its bound to an end of the grid does not pin the exponent (too
     * few points for the parameters, or no clock dependence at all): nothing is written. */
    int unpinned = status == 0 && (f.clock_exp_lo <= 0.0501 || f.clock_exp_hi >= 2.4999);
    if (unpinned) {
        fprintf(stderr, "kareus calibrate: %s: the points do not pin comm_clock_exp (the data allow %.2f..%.2f): "
                        "sweep more clocks or CTA counts below saturation%s\n",
                data, f.clock_exp_lo, f.clock_exp_hi, out ? "; --out not written" : "");
        status = CLI_EXIT_FAIL;
    }
    if (status == 0 && out) {
        kr_gpu g = base;
        g.comm_clock_exp = f.clock_exp;
        snprintf(g.source[KR_GPU_P_comm_clock_exp], KR_SOURCE_MAX,
                 "F: kareus calibrate on comm sweep %s (%s, %d points, %d kernel x collective groups), RMS log error "
                 "%.4f, range %.2f..%.2f",
                 data, d.backend, f.npoints, f.ngroups, f.rms_log, f.clock_exp_lo, f.clock_exp_hi);
        if ((rc = kr_gpu_write_json(out, &g, &err)))
            status = cli_report(rc, &err);
        else if (!json)
            printf("wrote %s (%s with comm_clock_exp %.4f)\n", out, g.name, g.comm_clock_exp);
    }
    kr_profiler_sweep_data_free(&d);
    return status;
}

int cli_sim_check_sweep(const char *data, const char *gpu_file, int json)
{
    kr_profiler_sweep_data d;
    kr_gpu g;
    int rc, status = open_sweep("sim check", "--gpu", data, gpu_file, &d, &g);
    if (status)
        return status;
    kr_error err = {0};
    kr_job job;
    kr_job_default(&job);
    int n = 0, med = 0;
    double *e = calloc((size_t)d.n + 1, sizeof *e);
    for (int i = 0; status == 0 && e && i < d.n; i++) {
        kr_profiler_sweep_point q = d.p[i];
        if (q.kernel == KR_SWEEP_PROXY) /* the simulator has no model of the proxy */
            continue;
        if ((rc = kr_profiler_sweep_measure_sim(&g, &job.cluster, &q, &err)))
            status = cli_report(rc, &err);
        else
            e[n++] = fabs(q.time_s / d.p[i].time_s - 1);
    }
    for (int i = 1; i < n; i++) /* insertion sort: a few hundred points at most */
        for (int j = i; j > 0 && e[j] < e[j - 1]; j--) {
            double t = e[j];
            e[j] = e[j - 1], e[j - 1] = t;
        }
    med = n / 2;
    if (status == 0 && json) {
        json_t *o = json_pack("{s:s, s:s, s:i, s:f, s:f}", "data", data, "gpu", g.name, "points", n, "time_err_median",
                              n ? e[med] : 0.0, "time_err_max", n ? e[n - 1] : 0.0);
        char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) : NULL;
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else if (status == 0)
        printf("%s: comm sweep (%s) on %s, %d simulated points: time error median %.2f%%, max %.2f%%%s\n", data,
               d.backend, g.name, n, n ? 100 * e[med] : 0.0, n ? 100 * e[n - 1] : 0.0,
               n < d.n ? " (proxy points skipped: the simulator has no model of the single-GPU proxy)" : "");
    free(e);
    kr_profiler_sweep_data_free(&d);
    return status;
}
