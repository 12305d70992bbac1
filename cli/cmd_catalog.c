/*
 * cmd_catalog.c — `kareus catalog`: the built-in GPUs (with every constant's source), models,
 * the paper suite, and the partitions of a job.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus catalog [--gpu NAME] [--model NAME] [--partitions [--job FILE] [--variant V]]\n"
    "                      [--markdown] [--check] [--json]\n\n"
    "Without options: lists the built-in GPUs, models and jobs.\n";

/* What the options set. */
typedef struct catalog_args {
    const char *gpu, *model, *job, *variant;
    int partitions, json, md, chk;
} catalog_args;

static const cli_opt catalog_opts[] = {
    CLI_OPT("gpu", 1,
        "  --gpu NAME      every constant of one GPU with its unit and source\n",
        cli_set_str, catalog_args, gpu),
    CLI_OPT("model", 1,
        "  --model NAME    one model's dimensions and source\n",
        cli_set_str, catalog_args, model),
    CLI_OPT("partitions", 0,
        "  --partitions    the partitions of a job: ops, FLOPs, bytes, collective, slots\n",
        cli_set_flag, catalog_args, partitions),
    CLI_OPT("job", 1,
        "  --job FILE      job spec (JSON file or built-in name; default: the default job)\n",
        cli_set_str, catalog_args, job),
    CLI_OPT("variant", 1,
        "  --variant V     kareus (default), sequential or default-overlap\n",
        cli_set_str, catalog_args, variant),
    CLI_OPT("markdown", 0,
        "  --markdown      GPU constants of every GPU as the Markdown table of docs/calibration.md\n",
        cli_set_flag, catalog_args, md),
    CLI_OPT("check", 0,
        "  --check         the simulator's predictions next to the published figures\n"
        "                  (docs/calibration.md); exit 0 even when a prediction is out of range\n",
        cli_set_flag, catalog_args, chk),
    CLI_OPT("json", 0,
        "  --json          machine-readable output\n",
        cli_set_flag, catalog_args, json),
    CLI_OPT_HELP,
};
static const cli_optset catalog_set = {"catalog", usage_head, catalog_opts, CLI_OPT_COUNT(catalog_opts),
                                       NULL, "h", 0};

static json_t *gpu_json(const kr_gpu *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(g->name));
    json_object_set_new(o, "display", json_string(g->display));
    json_t *params = json_object();
    for (int i = 0; i < KR_GPU_NPARAMS; i++) {
        const kr_gpu_param_info *pi = kr_gpu_param(i);
        json_t *p = json_object();
        json_object_set_new(p, "value", json_real(kr_gpu_param_value(g, i)));
        json_object_set_new(p, "unit", json_string(pi->unit));
        json_object_set_new(p, "description", json_string(pi->description));
        json_object_set_new(p, "source", json_string(g->source[i]));
        /* The stated uncertainty (relative half-width; 0: taken as a fact) that bo's
         * sensitivity features and bench_search's perturbed GPUs use. */
        json_object_set_new(p, "uncertainty", json_real(kr_gpu_param_uncertainty(i)));
        json_object_set_new(params, pi->field, p);
    }
    json_object_set_new(o, "params", params);
    return o;
}

static void print_value(double v, const char *unit)
{
    if (strcmp(unit, "B/s") == 0)
        printf("%10.1f GB/s", v / 1e9);
    else if (strcmp(unit, "s") == 0)
        printf("%10.1f us  ", v * 1e6);
    else
        printf("%10.4g %-4s", v, unit);
}

static int show_gpu(const char *name, int json)
{
    kr_gpu g;
    kr_error err = {0};
    int rc = kr_catalog_gpu_find(name, &g, &err);
    if (rc)
        return cli_report(rc, &err);
    if (json) {
        json_t *o = gpu_json(&g);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(o);
        return 0;
    }
    printf("%s (%s)\n", g.name, g.display);
    for (int i = 0; i < KR_GPU_NPARAMS; i++) {
        const kr_gpu_param_info *pi = kr_gpu_param(i);
        printf("  %-20s ", pi->field);
        print_value(kr_gpu_param_value(&g, i), pi->unit);
        printf("  %s\n  %20s   source: %s\n", pi->description, "", g.source[i]);
    }
    return 0;
}

static void markdown(void)
{
    for (int gi = 0; gi < kr_catalog_gpu_count(); gi++) {
        kr_gpu g;
        kr_catalog_gpu_at(gi, &g);
        printf("### %s (%s)\n\n| parameter | value | unit | source |\n|---|---|---|---|\n", g.name, g.display);
        for (int i = 0; i < KR_GPU_NPARAMS; i++) {
            const kr_gpu_param_info *pi = kr_gpu_param(i);
            printf("| `%s` | %.6g | %s | %s |\n", pi->field, kr_gpu_param_value(&g, i), pi->unit, g.source[i]);
        }
        printf("\n");
    }
}

static int show_partitions(const char *jobpath, const char *variant_name, int json)
{
    kr_job job;
    int rc = cli_load_job(jobpath, &job);
    if (rc)
        return rc;
    kr_variant var = KR_VARIANT_KAREUS;
    if (variant_name && kr_variant_parse(variant_name, &var))
        return cli_usage_error("catalog", "--variant: expected kareus, sequential or default-overlap, found '%s'",
                               variant_name);
    kr_partition_set *set = malloc(sizeof *set);
    kr_error err = {0};
    if (set == NULL)
        return CLI_EXIT_FAIL;
    if ((rc = kr_partition_catalog(&job, var, set, &err))) {
        free(set);
        return cli_report(rc, &err);
    }
    char sum[256];
    kr_job_summary(&job, sum, sizeof sum);
    json_t *arr = json_array();
    if (!json)
        printf("partitions of %s, variant %s (per GPU, one execution)\n", sum, kr_variant_name(var));
    for (int i = 0; i < set->n; i++) {
        const kr_partition *p = &set->p[i];
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "key", json_string(p->key));
            json_object_set_new(o, "backward", json_boolean(p->backward));
            json_object_set_new(o, "per_layer", json_integer(p->per_layer));
            json_t *ops = json_array();
            for (int k = 0; k < p->nops; k++) {
                const kr_op *op = &p->ops[k];
                json_t *jo = json_object();
                json_object_set_new(jo, "name", json_string(op->name));
                json_object_set_new(jo, "kind", json_string(kr_op_kind_name(op->kind)));
                json_object_set_new(jo, "backward", json_boolean(op->backward));
                json_object_set_new(jo, "m", json_integer(op->m));
                json_object_set_new(jo, "n", json_integer(op->n));
                json_object_set_new(jo, "k", json_integer(op->k));
                json_object_set_new(jo, "flops", json_real(op->flops));
                json_object_set_new(jo, "bytes", json_real(op->bytes));
                json_array_append_new(ops, jo);
            }
            json_object_set_new(o, "ops", ops);
            json_t *c = json_object();
            json_object_set_new(c, "kind", json_string(kr_coll_kind_name(p->coll.kind)));
            json_object_set_new(c, "group", json_string(p->coll.group));
            json_object_set_new(c, "group_size", json_integer(p->coll.group_size));
            json_object_set_new(c, "bytes", json_real(p->coll.bytes));
            json_object_set_new(o, "collective", c);
            json_t *slots = json_array();
            for (int s = 0; s < p->nslots; s++)
                json_array_append_new(slots, json_string(p->slots[s].name));
            json_object_set_new(o, "slots", slots);
            json_array_append_new(arr, o);
            continue;
        }
        printf("\n%s%s  x%d per layer  %.2f GFLOP  %.1f MB  %s %s/%d %.2f MB\n", p->key,
               p->backward ? " (backward)" : "", p->per_layer, kr_partition_flops(p) / 1e9,
               kr_partition_bytes(p) / 1e6, kr_coll_kind_name(p->coll.kind), p->coll.group, p->coll.group_size,
               p->coll.bytes / 1e6);
        for (int k = 0; k < p->nops; k++) {
            const kr_op *op = &p->ops[k];
            printf("    %-14s %-17s %-8s m=%-6ld n=%-6ld k=%-6ld %9.2f GFLOP %8.2f MB\n",
                   op->slot >= 0 ? p->slots[op->slot].name : "", op->name, kr_op_kind_name(op->kind), op->m, op->n,
                   op->k, op->flops / 1e9, op->bytes / 1e6);
        }
    }
    if (json) {
        json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
    }
    json_decref(arr);
    free(set);
    return 0;
}

/* `--check`: the calibration comparison of docs/calibration.md. */
static int check(int json)
{
    kr_sim_check rows[64];
    int n = 0;
    kr_error err = {0};
    int rc = kr_sim_calibration_checks(rows, 64, &n, &err);
    if (rc)
        return cli_report(rc, &err);
    if (n > 64)
        n = 64;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "what", json_string(rows[i].what));
            json_object_set_new(o, "gpu", json_string(rows[i].gpu));
            json_object_set_new(o, "unit", json_string(rows[i].unit));
            json_object_set_new(o, "predicted", json_real(rows[i].predicted));
            json_object_set_new(o, "published_lo", json_real(rows[i].published_lo));
            json_object_set_new(o, "published_hi", json_real(rows[i].published_hi));
            json_object_set_new(o, "input", json_boolean(rows[i].input));
            json_object_set_new(o, "within", json_boolean(rows[i].within));
            json_object_set_new(o, "source", json_string(rows[i].source));
            json_array_append_new(arr, o);
        }
        json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(arr);
        return 0;
    }
    printf("| check | GPU | simulator | published | |\n|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const kr_sim_check *c = &rows[i];
        char pub[64];
        if (c->published_lo == c->published_hi)
            snprintf(pub, sizeof pub, "%.4g %s", c->published_lo, c->unit);
        else
            snprintf(pub, sizeof pub, "%.4g-%.4g %s", c->published_lo, c->published_hi, c->unit);
        printf("| %s | %s | %.4g %s | %s | %s%s |\n", c->what, c->gpu, c->predicted, c->unit, pub,
               c->within ? "within" : "OUTSIDE", c->input ? " (input)" : "");
    }
    printf("\nSources:\n");
    for (int i = 0; i < n; i++)
        printf("%2d. %s (%s): %s\n", i + 1, rows[i].what, rows[i].gpu, rows[i].source);
    return 0;
}

int cmd_catalog(int argc, char **argv)
{
    catalog_args a = {0};
    int next;
    int prc = cli_opt_parse(&catalog_set, argc, argv, 1, &a, &next);
    if (prc)
        return prc == CLI_OPT_STOP ? 0 : prc;
    if (next < argc)
        return cli_usage_error("catalog", "unexpected argument '%s'", argv[next]);
    const char *gpu = a.gpu, *model = a.model, *job = a.job, *variant = a.variant;
    int partitions = a.partitions, json = a.json, md = a.md, chk = a.chk;
    if (md) {
        markdown();
        return 0;
    }
    if (chk)
        return check(json);
    if (gpu)
        return show_gpu(gpu, json);
    if (partitions || job || variant)
        return show_partitions(job, variant, json);
    if (model) {
        kr_model m;
        kr_error err = {0};
        int rc = kr_catalog_model_find(model, &m, &err);
        if (rc)
            return cli_report(rc, &err);
        json_t *o = kr_model_json(&m);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(o);
        return 0;
    }
    const char *const *suite;
    int nsuite = kr_job_suite_paper(&suite);
    if (json) {
        json_t *root = json_object(), *gpus = json_array(), *models = json_array(), *jobs = json_array();
        for (int i = 0; i < kr_catalog_gpu_count(); i++) {
            kr_gpu g;
            kr_catalog_gpu_at(i, &g);
            json_array_append_new(gpus, gpu_json(&g));
        }
        for (int i = 0; i < kr_catalog_model_count(); i++) {
            kr_model m;
            kr_catalog_model_at(i, &m);
            json_array_append_new(models, kr_model_json(&m));
        }
        json_array_append_new(jobs, json_string("default"));
        for (int i = 0; i < nsuite; i++)
            json_array_append_new(jobs, json_string(suite[i]));
        json_object_set_new(root, "gpus", gpus);
        json_object_set_new(root, "models", models);
        json_object_set_new(root, "jobs", jobs);
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(root);
        return 0;
    }
    printf("GPUs:\n");
    for (int i = 0; i < kr_catalog_gpu_count(); i++) {
        kr_gpu g;
        kr_catalog_gpu_at(i, &g);
        printf("  %-16s %-24s %3.0f SMs  %4.0f-%4.0f MHz  %3.0f W TDP  %4.0f GB/s HBM\n", g.name, g.display,
               g.sm_count, g.clock_min_mhz, g.clock_max_mhz, g.tdp_w, g.hbm_bw_Bps / 1e9);
    }
    printf("\nModels:\n");
    for (int i = 0; i < kr_catalog_model_count(); i++) {
        kr_model m;
        kr_catalog_model_at(i, &m);
        printf("  %-14s h=%-5d ffn=%-6d heads=%-3d kv=%-2d layers=%-3d vocab=%d%s%s\n", m.name, m.hidden, m.ffn,
               m.heads, m.kv_groups, m.layers, m.vocab, m.tied_embeddings ? " tied" : "", m.qk_norm ? " qk-norm" : "");
    }
    printf("\nBuilt-in jobs (use as --job NAME):\n");
    kr_job j;
    char sum[256];
    kr_job_default(&j);
    kr_job_summary(&j, sum, sizeof sum);
    printf("  %-32s %s\n", "default", sum);
    for (int i = 0; i < nsuite; i++) {
        kr_job_builtin(suite[i], &j, NULL);
        kr_job_summary(&j, sum, sizeof sum);
        printf("  %-32s %s\n", suite[i], sum);
    }
    return 0;
}
