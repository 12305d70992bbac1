/*
 * cmd_profile_sweep.c — `kareus profile --comm-sweep FILE`: the comm kernel alone, with no
 * compute, over SM clocks x CTA counts x kernels for every collective of the job's partitions,
 * on the simulator (--backend sim: the tuned kernel and NCCL) or this machine's GPU (--backend
 * gpu: NCCL with two or more GPUs, the single-GPU proxy with one; the CUDA runner has no tuned
 * all-reduce kernel). Every point is appended to FILE as it is measured (profiler.h, the sweep
 * log); a rerun skips the points already there. `kareus calibrate --data FILE` fits the comm
 * clock law to it. Progress on stderr, a summary on stdout (--json: one JSON object).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profile.h"

/* Parses a comma-separated list of integers in [lo, hi] into out (at most cap); an empty item
 * ("1410,,1020", a trailing comma) is refused. */
static int parse_list(const char *opt, const char *s, int lo, int hi, int *out, int cap, int *n)
{
    char what[64];
    snprintf(what, sizeof what, "--%s", opt);
    *n = 0;
    for (const char *t = s;; t++) {
        const char *end = strchr(t, ',');
        size_t len = end ? (size_t)(end - t) : strlen(t);
        char item[32];
        if (len == 0 || len >= sizeof item)
            return cli_usage_error("profile", "%s: expected a comma-separated list of integers, found '%s'", what, s);
        if (*n == cap)
            return cli_usage_error("profile", "%s: at most %d values", what, cap);
        memcpy(item, t, len);
        item[len] = '\0';
        int rc = cli_parse_int("profile", what, item, lo, hi, &out[(*n)++]);
        if (rc)
            return rc;
        if (end == NULL)
            return 0;
        t = end;
    }
}

/* Clock i of n spread over the GPU's planning range, on its clock grid, from the top down. */
static int spread_clock(const kr_gpu *g, int i, int n)
{
    double hi = g->clock_max_mhz, lo = g->plan_min_mhz > 0 ? g->plan_min_mhz : g->clock_min_mhz;
    double f = n > 1 ? hi - (hi - lo) * i / (n - 1) : hi;
    double step = g->clock_step_mhz > 0 ? g->clock_step_mhz : 1;
    return (int)(hi - step * (double)(long)((hi - f) / step + 0.5));
}

/* The grid from the options and the backend's defaults. ranks: GPUs of the runner (0: sim). */
static int sweep_config(const profile_args *a, const kr_job *job, int ranks, kr_profiler_sweep_config *c)
{
    memset(c, 0, sizeof *c);
    c->ranks = ranks;
    int rc;
    if (a->kernels) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", a->kernels);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (c->nkernels == 3 || kr_profiler_sweep_kernel_parse(t, &c->kernels[c->nkernels]))
                return cli_usage_error("profile", "--kernels: expected up to 3 of tuned, nccl, proxy, found '%s'",
                                       a->kernels);
            kr_profiler_sweep_kernel k = c->kernels[c->nkernels++];
            if (ranks == 0 && k == KR_SWEEP_PROXY)
                return cli_usage_error("profile", "--kernels: proxy: the simulator has no single-GPU proxy (tuned or "
                                       "nccl)");
            if (ranks > 0 && k == KR_SWEEP_TUNED)
                return cli_usage_error("profile", "--kernels: tuned: the CUDA runner has no tuned all-reduce kernel "
                                       "(nccl with two or more GPUs, proxy with one)");
            if (ranks == 1 && k == KR_SWEEP_NCCL)
                return cli_usage_error("profile", "--kernels: nccl: needs two or more GPUs, found one (proxy)");
        }
    } else if (ranks == 0) {
        c->kernels[c->nkernels++] = KR_SWEEP_TUNED;
        c->kernels[c->nkernels++] = KR_SWEEP_NCCL;
    } else
        c->kernels[c->nkernels++] = ranks >= 2 ? KR_SWEEP_NCCL : KR_SWEEP_PROXY;
    if (a->clocks && (rc = parse_list("clocks", a->clocks, 1, 100000, c->clocks_mhz, 32, &c->nclocks)))
        return rc;
    for (int i = 0; !a->clocks && i < 5; i++)
        c->clocks_mhz[c->nclocks++] = spread_clock(&job->gpu, i, 5);
    if (a->ctas && (rc = parse_list("ctas", a->ctas, 1, 1 << 16, c->ctas, 32, &c->nctas)))
        return rc;
    static const int def_ctas[] = {1, 2, 4, 8, 16, 24};
    for (int i = 0; !a->ctas && i < 6; i++)
        if (def_ctas[i] < job->gpu.sm_count)
            c->ctas[c->nctas++] = def_ctas[i];
    return 0;
}

/* What the sweep measures with: the simulator (gpu entry) or the runner and control backend. */
typedef struct sweep_dev {
    int sim;
    kr_gpu gpu;
    kr_profiler_runner *runner;
    kr_backend *ctl;
    int locked;
    char device[96];
} sweep_dev;

static int open_dev(const profile_args *a, kr_job *job, sweep_dev *d)
{
    memset(d, 0, sizeof *d);
    d->sim = a->backend && strcmp(a->backend, "sim") == 0;
    kr_error err = {0};
    if (d->sim) {
        if (a->sim_gpu) {
            int rc = kr_gpu_read_json(a->sim_gpu, &job->gpu, &err);
            if (rc)
                return cli_report(rc, &err);
        }
        d->gpu = job->gpu;
        snprintf(d->device, sizeof d->device, "the simulator (%s)", job->gpu.name);
        return 0;
    }
    if (a->sim_gpu)
        return cli_usage_error("profile", "--sim-gpu: a comm sweep uses it with --backend sim only");
    int status = profile_open_hardware(a, &d->runner, &d->ctl);
    if (status)
        return status;
    snprintf(d->device, sizeof d->device, "%s x%d", d->runner->device_name, d->runner->ndevices);
    if (strcasecmp(d->runner->device_name, job->gpu.display) != 0)
        fprintf(stderr, "kareus profile: warning: job '%s' is for a %s; sweeping on %s\n", job->name,
                job->gpu.display, d->runner->device_name);
    return 0;
}

static void close_dev(sweep_dev *d)
{
    if (d->runner) {
        for (int i = 0; i < d->runner->ndevices && d->locked; i++)
            kr_backend_reset_clock(d->ctl, d->runner->device[i]);
        kr_profiler_runner_destroy(d->runner);
    }
    kr_backend_destroy(d->ctl);
}

static void summary_json(const profile_args *a, const kr_job *job, const sweep_dev *d, int total, int measured,
                         int from_log, int stopped)
{
    json_t *o = json_object();
    json_object_set_new(o, "log", json_string(a->comm_sweep));
    json_object_set_new(o, "job", json_string(job->name));
    json_object_set_new(o, "gpu", json_string(job->gpu.name));
    json_object_set_new(o, "backend", json_string(d->sim ? "sim" : "gpu"));
    json_object_set_new(o, "device", json_string(d->device));
    json_object_set_new(o, "points", json_integer(total));
    json_object_set_new(o, "measured", json_integer(measured));
    json_object_set_new(o, "from_log", json_integer(from_log));
    json_object_set_new(o, "complete", json_boolean(!stopped));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    puts(s);
    free(s);
    json_decref(o);
}

/* Measures the points of the plan the log does not hold yet, appending each. */
static int run_points(const profile_args *a, const kr_job *job, sweep_dev *d, kr_profiler_sweep_log *log,
                      kr_profiler_sweep_point *pts, int n, int *measured, int *from_log, int *stopped)
{
    kr_error err = {0};
    for (int i = 0; i < n; i++) {
        kr_profiler_sweep_point *p = &pts[i];
        if (kr_profiler_sweep_log_has(log, p)) {
            (*from_log)++;
            continue;
        }
        if (a->max_points && *measured == a->max_points) {
            *stopped = 1;
            break;
        }
        int rc = d->sim ? kr_profiler_sweep_measure_sim(&d->gpu, &job->cluster, p, &err)
                        : kr_profiler_sweep_measure_gpu(d->runner, d->ctl, &a->o, NULL, p, &d->locked, &err);
        if (rc == KR_OK)
            rc = kr_profiler_sweep_log_append(log, p, &err);
        if (rc)
            return profile_report_failure(rc, err.msg);
        (*measured)++;
        cli_progress(a->quiet, "kareus profile --comm-sweep: %d/%d %s %s %.2f MB, %d CTAs, %d MHz: %.4f ms, %.1f GB/s",
                     i + 1, n, kr_profiler_sweep_kernel_name(p->kernel), kr_coll_kind_name(p->coll), p->bytes / 1e6,
                     p->ctas, p->freq_mhz, p->time_s * 1e3, p->busbw_Bps / 1e9);
    }
    cli_progress_done(a->quiet);
    return 0;
}

int profile_mode_comm_sweep(const profile_args *a, const kr_job *job_in)
{
    kr_job job = *job_in;
    sweep_dev d;
    int status = open_dev(a, &job, &d);
    kr_profiler_sweep_config cfg;
    if (status == 0)
        status = sweep_config(a, &job, d.sim ? 0 : d.runner->ndevices, &cfg);
    kr_profiler_sweep_point *pts = NULL;
    int n = 0, rc;
    kr_error err = {0};
    kr_profiler_sweep_log *log = NULL;
    if (status == 0 && (rc = kr_profiler_sweep_plan(&job, &cfg, &pts, &n, &err)))
        status = cli_report(rc, &err);
    if (status == 0 &&
        (rc = kr_profiler_sweep_log_open(a->comm_sweep, &job, d.sim ? "sim" : "gpu", !d.sim, &log, &err)))
        status = cli_report(rc, &err);
    if (status == 0 && kr_profiler_sweep_log_warning(log)[0])
        fprintf(stderr, "kareus profile: warning: %s\n", kr_profiler_sweep_log_warning(log));
    int measured = 0, from_log = 0, stopped = 0;
    if (status == 0) {
        if (!a->json)
            printf("comm sweep of %s on %s: %d collective(s) x %d kernel(s) x %d CTA counts x %d clocks, "
                   "log %s\n", job.name, d.device, n / (cfg.nkernels * cfg.nctas * cfg.nclocks), cfg.nkernels,
                   cfg.nctas, cfg.nclocks, a->comm_sweep);
        status = run_points(a, &job, &d, log, pts, n, &measured, &from_log, &stopped);
    }
    if (status == 0 && a->json)
        summary_json(a, &job, &d, n, measured, from_log, stopped);
    else if (status == 0)
        printf("  %d points: %d measured now, %d from the log%s\n", n, measured, from_log,
               stopped ? "; stopped at --max-points (rerun to go on)" : "");
    kr_profiler_sweep_log_close(log);
    free(pts);
    close_dev(&d);
    return status;
}
