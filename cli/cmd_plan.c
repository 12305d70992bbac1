/*
 * cmd_plan.c — `kareus plan show|validate|export-zeus`: inspect a plan file, check it against a
 * job, or write its clock schedule in the Zeus pipeline-frequency-optimizer layout.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kareus plan show FILE\n"
    "       kareus plan validate FILE [--job FILE]\n"
    "       kareus plan export-zeus FILE --out FILE.py\n\n"
    "  show         print the plan's job, predicted figures and every stage's instructions\n"
    "  validate     read the plan (schema, types, ranges) and, with --job, check it fits the job:\n"
    "               fingerprint, stage and microbatch counts, schedule order, clocks, comm keys\n"
    "  export-zeus  one list of (\"forward\"|\"backward\", MHz) per stage, in execution order\n";

static void show(const kr_plan *p)
{
    printf("plan: method %s, variant %s, job '%s' (%s, %s)%s%s\n", p->method, p->variant, p->job_name, p->model, p->gpu,
           p->job_fingerprint[0] ? ", fingerprint " : "", p->job_fingerprint);
    printf("pipeline: %d stages, %d microbatches, %s, %d chunk(s) per stage\n", p->num_stages, p->num_microbatches,
           p->schedule, p->virtual_stages);
    printf("solver: %s, unit %g s, step %d\n", p->cost_model[0] ? p->cost_model : "-", p->unit_time_s, p->step);
    printf("predicted: iteration %.6f s, energy %.3f J (whole cluster), effective %.3f J\n", p->pred_time_s,
           p->pred_energy_j, p->pred_eff_energy_j);
    for (int s = 0; s < p->num_stages; s++) {
        printf("stage %d:", s);
        for (int i = 0; i < p->stages[s].ninstr; i++) {
            const kr_plan_instr *in = &p->stages[s].instr[i];
            printf(" %c%d%s@%d", in->kind == KR_INSTR_FORWARD ? 'F' : 'B', in->microbatch,
                   p->virtual_stages > 1 ? (in->chunk ? "b" : "a") : "", in->freq_mhz);
            for (int c = 0; c < in->ncomm; c++)
                printf("%s%s%s:%s/%d", c ? "," : "[", in->comm[c].recompute ? "rc." : "", in->comm[c].key,
                       in->comm[c].slot, in->comm[c].sms);
            if (in->ncomm)
                printf("]");
        }
        printf("\n");
    }
}

int cmd_plan(int argc, char **argv)
{
    int urc = cli_subcommand_usage(argc, argv, usage_text);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    static const struct option opts[] = {
        {"job", required_argument, 0, 'j'}, {"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
    const char *jobpath = NULL, *out = NULL;
    int c;
    optind = 2;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'j': jobpath = optarg; break;
        case 'o': out = optarg; break;
        default: return cli_usage_error("plan", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (strcmp(sub, "show") != 0 && strcmp(sub, "validate") != 0 && strcmp(sub, "export-zeus") != 0)
        return cli_usage_error("plan", "unknown subcommand '%s' (expected show, validate or export-zeus)", sub);
    if (optind != argc - 1)
        return cli_usage_error("plan", "%s: expected one plan file", sub);
    const char *path = argv[optind];
    kr_error err = {0};
    kr_plan p;
    int rc = kr_plan_read(path, &p, &err);
    if (rc)
        return cli_report(rc, &err);
    int status = 0;
    if (strcmp(sub, "show") == 0) {
        show(&p);
    } else if (strcmp(sub, "validate") == 0) {
        /* The same schedule checks every runtime open makes (counts before allocation, order). */
        if ((rc = kr_runtime_plan_check(path, -1, NULL, &err)))
            status = cli_report(rc, &err);
        if (status == 0 && jobpath) {
            kr_job job;
            if ((rc = cli_load_job(jobpath, &job))) {
                kr_plan_free(&p);
                return rc;
            }
            if ((rc = kr_plan_validate(&p, &job, &err))) {
                kr_error_prefix(&err, "%s", path);
                status = cli_report(rc, &err);
            }
        }
        if (status == 0)
            printf("%s: ok (%d stages, %d microbatches%s)\n", path, p.num_stages, p.num_microbatches,
                   jobpath ? ", fits the job" : "; pass --job to check it against a job");
    } else {
        if (out == NULL)
            status = cli_usage_error("plan", "export-zeus: --out FILE.py is required");
        else if ((rc = kr_plan_export_zeus(&p, out, &err)))
            status = cli_report(rc, &err);
    }
    kr_plan_free(&p);
    return status;
}
