/*
 * cmd_simulate.c — `kareus simulate --plan FILE`: runs one plan on the pipeline simulator,
 * prints what happened (iteration time, energy, per-stage busy and idle time, the plan's own
 * prediction beside it) and draws its timeline.
 */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus simulate --plan FILE [--job FILE] [--svg FILE] [--no-settle] [--no-p2p] [--json]\n\n";

/* What the options set. */
typedef struct simulate_args {
    const char *planpath, *jobpath, *svg;
    int no_settle, no_p2p, json;
} simulate_args;

static const cli_opt simulate_opts[] = {
    CLI_OPT("plan", 1,
        "  --plan FILE   a plan (kareus.plan JSON, e.g. from 'kareus optimize' or 'kareus solve --plans')\n",
        cli_set_str, simulate_args, planpath),
    CLI_OPT("job", 1,
        "  --job FILE    the job it was made for (default: the built-in default job); the plan must match it\n",
        cli_set_str, simulate_args, jobpath),
    CLI_OPT("svg", 1,
        "  --svg FILE    where to draw the timeline (default: the plan's name with .timeline.svg, in the\n"
        "                current directory; 'none' to skip)\n",
        cli_set_str, simulate_args, svg),
    CLI_OPT("no-settle", 0,
        "  --no-settle   clock changes take no time (default: the GPU's settle time)\n",
        cli_set_flag, simulate_args, no_settle),
    CLI_OPT("no-p2p", 0,
        "  --no-p2p      pipeline sends take no time\n",
        cli_set_flag, simulate_args, no_p2p),
    CLI_OPT("json", 0,
        "  --json        machine-readable output\n",
        cli_set_flag, simulate_args, json),
    CLI_OPT_HELP,
};
static const cli_optset simulate_set = {"simulate", usage_head, simulate_opts, CLI_OPT_COUNT(simulate_opts), NULL,
                                        "h", 0};

int cmd_simulate(int argc, char **argv)
{
    simulate_args a = {0};
    int next, rc = cli_opt_parse(&simulate_set, argc, argv, 1, &a, &next);
    if (rc)
        return rc == CLI_OPT_STOP ? 0 : rc;
    if (next < argc)
        return cli_usage_error("simulate", "unexpected argument '%s'", argv[next]);
    if (a.planpath == NULL)
        return cli_usage_error("simulate", "--plan FILE is required");
    const char *planpath = a.planpath, *jobpath = a.jobpath, *svg = a.svg;
    kr_pipesim_config po = {0};
    po.no_settle = a.no_settle;
    po.no_p2p = a.no_p2p;
    int json = a.json;
    kr_job job;
    if ((rc = cli_load_job(jobpath, &job)))
        return rc;
    kr_error err = {0};
    kr_plan plan;
    if ((rc = kr_plan_read(planpath, &plan, &err)))
        return cli_report(rc, &err);
    kr_backend *b = NULL;
    kr_pipe_result r;
    memset(&r, 0, sizeof r);
    if ((rc = kr_plan_validate(&plan, &job, &err)) == KR_OK && (rc = kr_sim_backend_create(&job, NULL, &b, &err)) == KR_OK)
        rc = kr_pipesim_plan(&job, &plan, b, &po, &r, &err);
    kr_backend_destroy(b);
    if (rc) {
        kr_plan_free(&plan);
        kr_error_prefix(&err, "%s", planpath);
        return cli_report(rc, &err);
    }
    char svgbuf[4200];
    if (svg == NULL) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s", planpath);
        char *base = basename(tmp);
        char *dot = strrchr(base, '.');
        if (dot && strcmp(dot, ".json") == 0)
            *dot = '\0';
        snprintf(svgbuf, sizeof svgbuf, "%s.timeline.svg", base);
        svg = svgbuf;
    }
    if (strcmp(svg, "none") != 0) {
        char title[256];
        snprintf(title, sizeof title, "%s plan of %s (step %d), simulated", plan.method, plan.job_name, plan.step);
        if ((rc = kr_svg_timeline(svg, title, &r, &job, &err))) {
            kr_pipe_result_free(&r);
            kr_plan_free(&plan);
            return cli_report(rc, &err);
        }
    }
    if (json) {
        printf("{\n  \"plan\": \"%s\",\n  \"method\": \"%s\",\n  \"iteration_time_s\": %.17g,\n  \"energy_j\": %.17g,\n"
               "  \"effective_energy_j\": %.17g,\n  \"predicted_time_s\": %.17g,\n  \"predicted_energy_j\": %.17g,\n"
               "  \"stages\": [",
               planpath, plan.method, r.time_s, r.energy_j, r.eff_energy_j, plan.pred_time_s, plan.pred_energy_j);
        for (int s = 0; s < r.stages; s++)
            printf("%s\n    {\"stage\": %d, \"busy_s\": %.17g, \"idle_s\": %.17g, \"gpu_energy_j\": %.17g}", s ? "," : "", s,
                   r.stage_busy_s[s], r.stage_idle_s[s], r.gpu_energy_j[s]);
        printf("\n  ],\n  \"timeline_svg\": \"%s\"\n}\n", strcmp(svg, "none") ? svg : "");
    } else {
        printf("%s: %s plan of job %s, %d stages x %d microbatches (%s)\n", planpath, plan.method, plan.job_name,
               plan.num_stages, plan.num_microbatches, plan.schedule);
        printf("  iteration time   %.4f s   (plan predicted %.4f s, %+.2f%%)\n", r.time_s, plan.pred_time_s,
               plan.pred_time_s > 0 ? 100 * (r.time_s - plan.pred_time_s) / plan.pred_time_s : 0.0);
        printf("  energy           %.1f J for %d GPUs   (plan predicted %.1f J, %+.2f%%)\n", r.energy_j,
               kr_job_gpus_total(&job), plan.pred_energy_j,
               plan.pred_energy_j > 0 ? 100 * (r.energy_j - plan.pred_energy_j) / plan.pred_energy_j : 0.0);
        printf("  compute energy   %.1f J; static energy while waiting %.1f J\n", r.compute_energy_j,
               r.energy_j - r.compute_energy_j);
        for (int s = 0; s < r.stages; s++)
            printf("  stage %d: busy %.4f s, idle %.4f s (%.1f%%), %.1f J per GPU\n", s, r.stage_busy_s[s],
                   r.stage_idle_s[s], 100 * r.stage_idle_s[s] / r.time_s, r.gpu_energy_j[s]);
        if (strcmp(svg, "none") != 0)
            printf("  timeline: %s\n", svg);
    }
    kr_pipe_result_free(&r);
    kr_plan_free(&plan);
    return 0;
}
