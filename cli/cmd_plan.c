/*
 * cmd_plan.c — `kareus plan show|validate|export-zeus|export-artifact|import|format`: inspect a plan
 * file, check it against a job, write it in the layouts the published system's runtime reads
 * (Zeus's freqs_pipeline_N.py, Kareus's scheds_pipeline_N.py), or read those files back into a
 * plan for a job.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus plan show FILE [--json]\n"
    "       kareus plan validate FILE [--job FILE] [--json]\n"
    "       kareus plan export-zeus FILE --out FILE.py [--job FILE] [--json]\n"
    "       kareus plan export-artifact FILE --out DIR [--job FILE] [--index N] [--json]\n"
    "       kareus plan import FREQS.py [SCHEDS.py] --out PLAN.json [--job FILE] [--method NAME]\n"
    "       kareus plan format [--markdown]\n\n"
    "  show             print the plan's job, predicted figures and every stage's instructions\n"
    "  validate         read the plan (schema, types, ranges) and, with --job, check it fits the job:\n"
    "                   fingerprint, stage and microbatch counts, schedule order, clocks, comm keys\n"
    "  export-zeus      one list of ('forward'|'backward', MHz) per stage, in execution order, with\n"
    "                   the artifact's trailer (energies per GPU, summed over stages; --job gives\n"
    "                   the GPUs per stage, default job otherwise). Run it with Zeus's PFO server:\n"
    "                   ZEUS_PFO_SCHEDULER=PointSolution3D\n"
    "                   ZEUS_PFO_SCHEDULER_ARGS='{\"solution_path\": \"FILE.py\"}'\n"
    "  export-artifact  DIR/freqs_pipeline_N.py and, for Kareus plans, DIR/scheds_pipeline_N.py,\n"
    "                   as the artifact's runtime reads them (N = --index, else the plan's step)\n"
    "  import           the artifact's freqs_pipeline_N.py (+ scheds_pipeline_N.py for Kareus) into\n"
    "                   a plan for the job; --method kareus|perseus|nanobatch+perseus (default:\n"
    "                   kareus with a scheds file, perseus without). The files are read as\n"
    "                   literals, never evaluated.\n"
    "  format           every field of the plan format: type, accepted values, default, meaning\n"
    "                   (--markdown: the table of docs/formats.md)\n";

/* What the options set. */
typedef struct plan_args {
    const char *jobpath, *out, *method;
    int index, json, markdown;
} plan_args;

static int set_index(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < 0 || v > 99999)
        return cli_usage_error(cmd, "--index: expected an integer in [0, 99999], found '%s'", arg);
    ((plan_args *)ctx)->index = (int)v;
    return 0;
}

static const cli_opt plan_opts[] = {
    CLI_OPT("job", 1,
        NULL,
        cli_set_str, plan_args, jobpath),
    CLI_OPT("out", 1,
        NULL,
        cli_set_str, plan_args, out),
    CLI_OPT("method", 1,
        NULL,
        cli_set_str, plan_args, method),
    CLI_OPT_FN("index", 1,
        NULL,
        set_index),
    CLI_OPT("json", 0,
        "  --json           show: the plan file itself once it reads correctly; validate and the\n"
        "                   exports: the result as one JSON object\n",
        cli_set_flag, plan_args, json),
    CLI_OPT("markdown", 0,
        NULL,
        cli_set_flag, plan_args, markdown),
};
static const cli_optset plan_set = {"plan", usage_head, plan_opts, CLI_OPT_COUNT(plan_opts), NULL, "", 0};

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
                printf("%s%s%s:%s/%d%s", c ? "," : "[", in->comm[c].recompute ? "rc." : "", in->comm[c].key,
                       in->comm[c].slot, in->comm[c].sms, in->comm[c].kernel == KR_KERNEL_NCCL ? "/nccl" : "");
            if (in->ncomm)
                printf("]");
        }
        printf("\n");
    }
}

static int do_import(int argc, char **argv, int first, const char *jobpath, const char *out, const char *method)
{
    int nfiles = argc - first;
    if (nfiles < 1 || nfiles > 2)
        return cli_usage_error("plan", "import: expected FREQS.py and optionally SCHEDS.py, found %d file(s)", nfiles);
    if (out == NULL)
        return cli_usage_error("plan", "import: --out PLAN.json is required");
    kr_job job;
    int rc = cli_load_job(jobpath, &job);
    if (rc)
        return rc;
    kr_error err = {0};
    kr_plan p;
    if ((rc = kr_plan_import_artifact(&job, argv[first], nfiles == 2 ? argv[first + 1] : NULL, method, &p, &err)))
        return cli_report(rc, &err);
    if ((rc = kr_plan_write(out, &p, &err)) == KR_OK)
        printf("%s: %s plan for job '%s' (%d stages, %d microbatches, step %d) from %s%s%s\n", out, p.method, job.name,
               p.num_stages, p.num_microbatches, p.step, argv[first], nfiles == 2 ? " and " : "",
               nfiles == 2 ? argv[first + 1] : "");
    kr_plan_free(&p);
    return rc ? cli_report(rc, &err) : 0;
}

int cmd_plan(int argc, char **argv)
{
    int urc = cli_opt_subcommand_usage(argc, argv, &plan_set);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    plan_args a = {.index = -1};
    int next;
    int prc = cli_opt_parse(&plan_set, argc, argv, 2, &a, &next);
    if (prc)
        return prc;
    const char *jobpath = a.jobpath, *out = a.out, *method = a.method;
    int index = a.index, json = a.json, markdown = a.markdown;
    if (strcmp(sub, "import") == 0)
        return do_import(argc, argv, next, jobpath, out, method);
    if (strcmp(sub, "format") == 0)
        return next < argc ? cli_usage_error("plan", "format: unexpected argument '%s'", argv[next])
                             : cli_print_format(kr_plan_format_field, markdown);
    if (strcmp(sub, "show") != 0 && strcmp(sub, "validate") != 0 && strcmp(sub, "export-zeus") != 0 &&
        strcmp(sub, "export-artifact") != 0)
        return cli_usage_error("plan", "unknown subcommand '%s' (expected show, validate, export-zeus, export-artifact, "
                                       "import or format)",
                               sub);
    if (next != argc - 1)
        return cli_usage_error("plan", "%s: expected one plan file", sub);
    const char *path = argv[next];
    kr_error err = {0};
    kr_plan p;
    int rc = kr_plan_read(path, &p, &err);
    if (rc)
        return cli_report(rc, &err);
    int status = 0;
    if (strcmp(sub, "show") == 0) {
        if (json)
            status = cli_print_file(path);
        else
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
        if (status == 0 && json) {
            printf("{\"plan\": ");
            cli_json_string(path);
            printf(", \"ok\": true, \"stages\": %d, \"microbatches\": %d, \"fits_job\": %s}\n", p.num_stages,
                   p.num_microbatches, jobpath ? "true" : "null");
        } else if (status == 0)
            printf("%s: ok (%d stages, %d microbatches%s)\n", path, p.num_stages, p.num_microbatches,
                   jobpath ? ", fits the job" : "; pass --job to check it against a job");
    } else {
        kr_job job;
        if (out == NULL) {
            status = cli_usage_error("plan", "%s: --out %s is required", sub,
                                     strcmp(sub, "export-zeus") == 0 ? "FILE.py" : "DIR");
        } else if ((status = cli_load_job(jobpath, &job)) != 0) {
        } else if (p.job_fingerprint[0] && (rc = kr_plan_validate(&p, &job, &err))) {
            kr_error_prefix(&err, "%s (pass --job with the plan's job)", path);
            status = cli_report(rc, &err);
        } else if (strcmp(sub, "export-zeus") == 0) {
            if ((rc = kr_plan_export_zeus(&p, kr_job_gpus_per_stage(&job), out, &err)))
                status = cli_report(rc, &err);
            else if (json) {
                printf("{\"plan\": ");
                cli_json_string(path);
                printf(", \"out\": ");
                cli_json_string(out);
                printf("}\n");
            }
        } else {
            char fpath[4200], spath[4200];
            if ((rc = kr_plan_export_artifact(&p, &job, out, index, fpath, sizeof fpath, spath, sizeof spath, &err))) {
                kr_error_prefix(&err, "%s", path);
                status = cli_report(rc, &err);
            } else if (json) {
                printf("{\"plan\": ");
                cli_json_string(path);
                printf(", \"freqs\": ");
                cli_json_string(fpath);
                printf(", \"scheds\": ");
                if (spath[0])
                    cli_json_string(spath);
                else
                    printf("null");
                printf("}\n");
            } else {
                printf("%s%s%s\n", fpath, spath[0] ? "\n" : "", spath);
            }
        }
    }
    kr_plan_free(&p);
    return status;
}
