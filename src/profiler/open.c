/*
 * open.c — opening the hardware a measurement needs (the CUDA runner and the NVML control
 * backend) with one message naming everything missing, and the GPU backend in one call
 * (profiler.h: kr_profiler_open_hardware, kr_profiler_open_backend).
 */
#include "kareus/gpuctl.h"
#include "kareus/profiler.h"

#include <stdlib.h>
#include <string.h>

#include "profiler_internal.h"
#include "util/util.h"

static int is_missing(int rc)
{
    return rc == KR_ENOLIB || rc == KR_ENODEV || rc == KR_EPERM || rc == KR_EUNSUPPORTED;
}

int kr_profiler_open_hardware(int first, int devices, const char *control, kr_profiler_runner **runner,
                              kr_backend **ctl, kr_error *err)
{
    *runner = NULL;
    *ctl = NULL;
    kr_error e1 = {0}, e2 = {0};
    int rc1 = kr_profiler_runner_open(first, devices, runner, &e1);
    int rc2 = kr_backend_open(control ? control : "nvml", NULL, ctl, &e2);
    if (rc1 == KR_OK && rc2 == KR_OK)
        return KR_OK;
    kr_profiler_runner_destroy(*runner);
    kr_backend_destroy(*ctl);
    *runner = NULL;
    *ctl = NULL;
    kr__sb sb = {0};
    kr__sb_puts(&sb, "cannot measure on this machine:");
    if (rc1)
        kr__sb_printf(&sb, "\n  - %s", e1.msg[0] ? e1.msg : kr_strerror(rc1));
    if (rc2) {
        const char *m = e2.msg[0] ? e2.msg : kr_strerror(rc2);
        if (strncmp(m, "NVML: ", 6) == 0)
            m += 6;
        kr__sb_printf(&sb, "\n  - %s%s", rc2 == KR_ENOLIB || rc2 == KR_ENODEV ? "no NVML: " : "", m);
    }
    if (is_missing(rc1) || is_missing(rc2))
        kr__sb_puts(&sb, "\n  (measuring needs libkareus_cuda.so, the NVIDIA driver with a GPU of compute capability "
                         "8.0+, NVML, and root to lock clocks; `kareus profile --plan` works without them)");
    int rc = kr_error_set(err, rc1 ? rc1 : rc2, "%s", sb.oom ? "out of memory" : kr__sb_str(&sb));
    kr__sb_free(&sb);
    return rc;
}

/* The observer installed by kr_profiler_open_backend: detail log, then the caller's observer. */
typedef struct owned {
    kr_backend *ctl;
    char *details;
    const kr_job *job;  /* points into the backend's copy below */
    kr_job job_copy;
    char device[64];
    int details_failed;
    kr_profiler_observer observer;
    void *observer_ud;
} owned;

static void owned_observe(void *ud, const kr_partition *p, const kr_config *c, const kr_profiler_result *r)
{
    owned *o = ud;
    if (o->details && !o->details_failed) {
        kr_error e = {0};
        o->details_failed = kr_profiler_details_append(o->details, o->job, p, c, r, o->device, &e) != KR_OK;
    }
    if (o->observer)
        o->observer(o->observer_ud, p, c, r);
}

static void owned_free(void *ud)
{
    owned *o = ud;
    kr_backend_destroy(o->ctl);
    free(o->details);
    free(o);
}

int kr_profiler_open_backend(const kr_job *job, const kr_profiler_open_config *oo_in, kr_backend **out, kr_error *err)
{
    *out = NULL;
    kr_profiler_open_config oo;
    if (oo_in)
        oo = *oo_in;
    else
        memset(&oo, 0, sizeof oo);
    kr_profiler_config popt;
    if (oo.protocol)
        popt = *oo.protocol;
    else
        kr_profiler_config_default(&popt);
    int rc = kr_profiler_options_validate(&popt, err);
    if (rc)
        return rc;
    owned *o = calloc(1, sizeof *o);
    if (o == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    if (oo.details && (o->details = strdup(oo.details)) == NULL) {
        free(o);
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    }
    kr_profiler_runner *runner;
    if ((rc = kr_profiler_open_hardware(oo.device, oo.devices, oo.control, &runner, &o->ctl, err))) {
        free(o->details);
        free(o);
        return rc;
    }
    o->job_copy = *job;
    o->job = &o->job_copy;
    kr__strlcpy(o->device, runner->device_name, sizeof o->device);
    o->observer = oo.observer;
    o->observer_ud = oo.observer_ud;
    kr_profiler_program_params pp;
    kr_profiler_program_params_default(&pp);
    pp.comm = oo.comm;
    rc = kr_profiler_backend_create(job, runner, o->ctl, &popt, &pp, NULL, owned_observe, o, out, err);
    if (rc) {
        kr_profiler_runner_destroy(runner);
        kr_backend_destroy(o->ctl);
        free(o->details);
        free(o);
        return rc;
    }
    kr__profiler_backend_own(*out, o, owned_free);
    return KR_OK;
}
