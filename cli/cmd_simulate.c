/*
 * cmd_simulate.c — `kareus simulate --plan FILE`: runs one plan on the pipeline simulator,
 * prints what happened (iteration time, energy, per-stage busy and idle time, the plan's own
 * prediction beside it) and draws its timeline.
 */
#include <getopt.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kareus simulate --plan FILE [--job FILE] [--svg FILE] [--no-settle] [--no-p2p] [--json]\n\n"
    "  --plan FILE   a plan (kareus.plan JSON, e.g. from 'kareus optimize' or 'kareus solve --plans')\n"
    "  --job FILE    the job it was made for (default: the built-in default job); the plan must match it\n"
    "  --svg FILE    where to draw the timeline (default: the plan's name with .timeline.svg, in the\n"
    "                current directory; 'none' to skip)\n"
    "  --no-settle   clock changes take no time (default: the GPU's settle time)\n"
    "  --no-p2p      pipeline sends take no time\n"
    "  --json        machine-readable output\n";

int cmd_simulate(int argc, char **argv)
{
    enum { O_PLAN = 1, O_JOB, O_SVG, O_NOSETTLE, O_NOP2P, O_JSON };
    static const struct option opts[] = {
        {"plan", required_argument, 0, O_PLAN}, {"job", required_argument, 0, O_JOB},
        {"svg", required_argument, 0, O_SVG},   {"no-settle", no_argument, 0, O_NOSETTLE},
        {"no-p2p", no_argument, 0, O_NOP2P},    {"json", no_argument, 0, O_JSON},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    const char *planpath = NULL, *jobpath = NULL, *svg = NULL;
    kr_pipesim_options po = {0};
    int json = 0, c, rc;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_PLAN: planpath = optarg; break;
        case O_JOB: jobpath = optarg; break;
        case O_SVG: svg = optarg; break;
        case O_NOSETTLE: po.no_settle = 1; break;
        case O_NOP2P: po.no_p2p = 1; break;
        case O_JSON: json = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return cli_usage_error("simulate", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("simulate", "unexpected argument '%s'", argv[optind]);
    if (planpath == NULL)
        return cli_usage_error("simulate", "--plan FILE is required");
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
