/*
 * cmd_profile_hw.c — the modes of `kareus profile` that only talk to the hardware: --check
 * (what is present, the kernels against their CPU references) and --calibrate (the GPU's own
 * constants into a catalog entry), and the helpers every measuring mode uses to open the GPU
 * and to turn a failure into an exit status.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profile.h"

/* ---- what is missing ------------------------------------------------------------------------ */

static int is_missing(int rc)
{
    return rc == KR_ENOLIB || rc == KR_ENODEV || rc == KR_EPERM || rc == KR_EUNSUPPORTED;
}

/* Opens the CUDA runner and the control backend; on failure prints every missing piece and
 * returns the exit status (2 when something is missing, 1 otherwise). */
int profile_open_hardware(const profile_args *a, kr_profiler_runner **runner, kr_backend **ctl)
{
    /* CUDA and NVML must number the GPUs alike (the control backend takes NVML indices). */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    kr_error err = {0};
    int rc = kr_profiler_open_hardware(a->device, a->devices, a->control, runner, ctl, &err);
    if (rc == KR_OK)
        return 0;
    fprintf(stderr, "kareus profile: %s\n", err.msg);
    return is_missing(rc) || kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
}

/* Exit status of a failed measurement: 2 when a permission or capability is missing. */
int profile_report_failure(int rc, const char *msg)
{
    fprintf(stderr, "kareus profile: %s\n", msg[0] ? msg : kr_strerror(rc));
    return is_missing(rc) || kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
}

int profile_mode_check(const profile_args *a)
{
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    kr_profiler_probe_info info;
    kr_error err = {0};
    int rc = kr_profiler_probe(&info, &err);
    if (info.lib_path[0])
        printf("library   %s (%s)\n", info.lib_path, info.build);
    if (info.driver_version)
        printf("driver    CUDA %d.%d\n", info.driver_version / 1000, (info.driver_version % 1000) / 10);
    for (int i = 0; i < info.ndevices && i < KR_PROFILER_MAX_RANKS; i++)
        printf("GPU %d     %s, %d SMs, compute capability %d.%d, %.1f GB\n", i, info.name[i], info.sm_count[i],
               info.cc_major[i], info.cc_minor[i], info.mem_bytes[i] / 1e9);
    fflush(stdout);
    kr_profiler_runner *runner;
    kr_backend *ctl;
    int status = profile_open_hardware(a, &runner, &ctl);
    if (status)
        return status;
    (void)rc;
    printf("control   %s\n", kr_backend_name(ctl));
    static char report[32768];
    rc = kr_profiler_selftest(runner, report, sizeof report, &err);
    fputs(report, stdout);
    kr_profiler_runner_destroy(runner);
    kr_backend_destroy(ctl);
    if (rc == KR_EMISMATCH) { /* a kernel disagrees with its reference: a failure, not bad input */
        fprintf(stderr, "kareus profile: %s\n", err.msg);
        return CLI_EXIT_FAIL;
    }
    if (rc)
        return profile_report_failure(rc, err.msg);
    return 0;
}

static void calib_progress(void *ud, const char *what)
{
    cli_progress(*(const int *)ud, "kareus profile --calibrate: %s", what);
}

int profile_mode_calibrate(const profile_args *a)
{
    kr_profiler_runner *runner;
    kr_backend *ctl;
    int status = profile_open_hardware(a, &runner, &ctl);
    if (status)
        return status;
    kr_gpu base;
    kr_error err = {0};
    int rc = KR_ENOTFOUND;
    if (a->base)
        rc = kr_catalog_gpu_find(a->base, &base, &err);
    else
        for (int i = 0; i < kr_catalog_gpu_count() && rc; i++) {
            kr_catalog_gpu_at(i, &base);
            if (strcasecmp(base.display, runner->device_name) == 0)
                rc = KR_OK;
        }
    if (rc) {
        if (!a->base)
            fprintf(stderr, "kareus profile: --base: the GPU '%s' is not in the catalog by name; give the closest "
                            "entry (see `kareus catalog`)\n", runner->device_name);
        else
            fprintf(stderr, "kareus profile: --base: %s\n", err.msg);
        kr_profiler_runner_destroy(runner);
        kr_backend_destroy(ctl);
        return CLI_EXIT_INPUT;
    }
    kr_profiler_calib_config co;
    kr_profiler_calib_config_default(&co);
    if (a->quick) {
        co.gemm_clocks = 3;
        co.stream_clocks = 2;
        co.ncoll_ctas = 3;
        co.coll_ctas[0] = 1, co.coll_ctas[1] = 4, co.coll_ctas[2] = 16;
    }
    int quiet = a->quiet;
    co.progress = calib_progress;
    co.progress_ud = &quiet;
    kr_profiler_calib *c = malloc(sizeof *c);
    if (c == NULL)
        return CLI_EXIT_FAIL;
    rc = kr_profiler_calibrate(runner, ctl, &base, &co, &a->o, NULL, c, &err);
    cli_progress_done(a->quiet);
    kr_profiler_runner_destroy(runner);
    kr_backend_destroy(ctl);
    if (rc) {
        free(c);
        return profile_report_failure(rc, err.msg);
    }
    snprintf(c->gpu.name, sizeof c->gpu.name, "%s", a->name ? a->name : base.name);
    if (a->name == NULL)
        snprintf(c->gpu.name + strlen(c->gpu.name), sizeof c->gpu.name - strlen(c->gpu.name), "-calibrated");
    const char *out = a->out ? a->out : "gpu-calibrated.json";
    char raw[4096];
    if (a->raw)
        snprintf(raw, sizeof raw, "%s", a->raw);
    else {
        snprintf(raw, sizeof raw, "%s", out);
        char *dot = strrchr(raw, '.');
        if (dot && strcmp(dot, ".json") == 0)
            *dot = '\0';
        strncat(raw, ".raw.json", sizeof raw - strlen(raw) - 1);
    }
    if ((rc = kr_gpu_write_json(out, &c->gpu, &err)) || (rc = kr_profiler_calib_write_raw(raw, c, &err))) {
        free(c);
        return cli_report(rc, &err);
    }
    printf("calibrated %s (base %s) on %s, %s\n", c->gpu.name, base.name, c->device, c->date);
    for (int i = 0; i < KR_GPU_NPARAMS; i++)
        if (c->measured[i])
            printf("  %-18s %-12.6g (base %.6g) %s\n", kr_gpu_param(i)->field, kr_gpu_param_value(&c->gpu, i),
                   kr_gpu_param_value(&base, i), kr_gpu_param(i)->unit);
    printf("wrote %s and %s\n", out, raw);
    free(c);
    return 0;
}

