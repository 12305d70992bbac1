/*
 * stages.c — the flow's stages that kr_optimize shares with the single-step commands (see
 * optimize.h, docs/optimize.md): the solver's configuration for a job (the one place the static
 * power per GPU and the GPUs per stage come from) and the plan files of chosen solver steps
 * (their names and directory), as `kareus solve --plans` writes them.
 */
#include "kareus/optimize.h"

#include <stdio.h>

#include "util/util.h"

void kr_optimize_solver_config(const kr_job *job, const kr_optimize_config *o, kr_solver_config *cfg)
{
    kr_optimize_config d;
    if (o == NULL) {
        kr_optimize_config_default(&d);
        o = &d;
    }
    kr_solver_config_default(cfg);
    cfg->cost_model = o->cost_model;
    cfg->unit_time_s = o->unit_time_s;
    cfg->exchange = o->exchange;
    if (job) {
        cfg->static_power_w = job->static_power_w;
        cfg->gpus_per_stage = kr_job_gpus_per_stage(job);
    } else {
        kr_job def;
        kr_job_default(&def);
        cfg->static_power_w = def.static_power_w;
        cfg->gpus_per_stage = 1;
    }
}

int kr_optimize_step_plan_path(char *buf, size_t cap, const char *dir, int step)
{
    return snprintf(buf, cap, "%s/plan_%05d.json", dir, step) >= (int)cap ? KR_EINVAL : KR_OK;
}

int kr_optimize_write_step_plans(const char *dir, const kr_solve_result *f, const kr_dag *dag, const kr_options *opts,
                                 const int *steps, int n, const kr_job *job, int gpus_per_stage, kr_error *err)
{
    int rc = kr__mkdirs(dir, err);
    for (int i = 0; i < n && rc == KR_OK; i++) {
        kr_plan p;
        char path[4200];
        if ((rc = kr_optimize_step_plan_path(path, sizeof path, dir, steps[i])))
            return kr_error_set(err, rc, "%s: directory name too long", dir);
        if ((rc = kr_solve_plan(f, dag, opts, steps[i], job, &p, err)))
            return rc;
        if ((rc = kr_plan_write(path, &p, err)) == KR_OK) {
            snprintf(path, sizeof path, "%s/freqs_pipeline_%05d.py", dir, steps[i]);
            rc = kr_plan_export_zeus(&p, gpus_per_stage, path, err);
        }
        kr_plan_free(&p);
    }
    return rc;
}
