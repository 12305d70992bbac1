/*
 * cmd_partition.c — `kareus partition eval`: one partition configuration on the simulator
 * (time, energy and effective energy of one execution on one GPU), optionally with its
 * timeline as JSON for pictures. Every out-of-range value is an input error (exit 2) that says
 * what was expected.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus partition eval --partition KEY --freq MHZ [--sms N] [--slot NAME]\n"
    "                             [--job FILE] [--variant kareus|sequential|default-overlap]\n"
    "                             [--timeline FILE.json] [--json]\n\n"
    "Simulates one execution of a partition on one GPU and prints time_s, energy_j and\n"
    "effective_energy_j (energy minus the job's static power times the time).\n";

/* What the options set. */
typedef struct eval_args {
    const char *key, *freq_s, *sms_s, *slot_s, *jobpath, *variant_s, *timeline, *kernel_s;
    int json;
} eval_args;

static const cli_opt eval_opts[] = {
    CLI_OPT("partition", 1,
        "  --partition KEY  partition key (see `kareus catalog --partitions`), or non-partition\n"
        "                   work: embed_fwd, embed_bwd, lmhead_fwd, lmhead_bwd, loss_fwd, loss_bwd\n",
        cli_set_str, eval_args, key),
    CLI_OPT("freq", 1,
        "  --freq MHZ       SM clock; must be one the job's GPU supports\n",
        cli_set_str, eval_args, freq_s),
    CLI_OPT("sms", 1,
        "  --sms N          SMs (CTAs) of the comm kernel, 1 .. SM count - 1 (kareus: required;\n"
        "                   baselines: NCCL's default)\n",
        cli_set_str, eval_args, sms_s),
    CLI_OPT("slot", 1,
        "  --slot NAME      launch slot (norm_0, linear_0, ...) or none (kareus: required;\n"
        "                   baselines: their fixed slot)\n",
        cli_set_str, eval_args, slot_s),
    CLI_OPT("kernel", 1,
        "  --kernel K       comm kernel of a kareus partition: tuned (default) or nccl (NCCL with\n"
        "                   --sms CTAs); baselines always run NCCL\n",
        cli_set_str, eval_args, kernel_s),
    CLI_OPT("job", 1,
        "  --job FILE       job spec (JSON file or built-in name; default: the default job)\n",
        cli_set_str, eval_args, jobpath),
    CLI_OPT("variant", 1,
        "  --variant V      kareus (default), sequential or default-overlap\n",
        cli_set_str, eval_args, variant_s),
    CLI_OPT("timeline", 1,
        "  --timeline FILE  also write the per-stream timeline and power trace as JSON\n",
        cli_set_str, eval_args, timeline),
    CLI_OPT("json", 0,
        "  --json           machine-readable output\n",
        cli_set_flag, eval_args, json),
    CLI_OPT_HELP,
};
static const cli_optset eval_set = {"partition eval", usage_head, eval_opts, CLI_OPT_COUNT(eval_opts), NULL, "h", 0};

/* Finds key among the variant's partitions, then among the non-partition work of every stage
 * (copied into *out). Returns 0, or prints the error and returns 2. */
static int find_partition(const kr_job *job, kr_variant var, const char *key, kr_partition *out)
{
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return CLI_EXIT_FAIL;
    kr_error err = {0};
    int rc = kr_partition_catalog(job, var, set, &err);
    if (rc) {
        free(set);
        return cli_report(rc, &err);
    }
    const kr_partition *p = kr_partition_find(set, key);
    char known[512] = "";
    size_t n = 0;
    for (int i = 0; i < set->n; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", set->p[i].key);
    for (int stage = 0; stage < job->pp && p == NULL; stage++)
        for (int bwd = 0; bwd <= 1 && p == NULL; bwd++) {
            kr_partition_set np;
            if (kr_partition_nonpartition(job, stage, bwd, &np, &err) == KR_OK && kr_partition_find(&np, key)) {
                *out = *kr_partition_find(&np, key);
                free(set);
                return 0;
            }
        }
    if (p == NULL) {
        fprintf(stderr,
                "kareus partition: --partition: expected a partition of job '%s' (variant %s): %s; or non-partition "
                "work: embed_fwd, embed_bwd, lmhead_fwd, lmhead_bwd, loss_fwd, loss_bwd; found '%s'\n",
                job->name, kr_variant_name(var), known, key);
        free(set);
        return CLI_EXIT_INPUT;
    }
    *out = *p;
    free(set);
    return 0;
}

static void print_result(const kr_job *job, const kr_partition *p, const kr_config *c, const kr_sim_result *r,
                         int json)
{
    const char *slot = kr_partition_slot_name(p, c->slot);
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "partition", json_string(p->key));
        json_object_set_new(o, "variant", json_string(kr_variant_name(p->variant)));
        json_object_set_new(o, "job", json_string(job->name));
        json_object_set_new(o, "gpu", json_string(job->gpu.name));
        json_t *cfg = json_object();
        json_object_set_new(cfg, "freq_mhz", json_integer(c->freq_mhz));
        json_object_set_new(cfg, "sms", p->coll.kind != KR_COLL_NONE ? json_integer(c->sms) : json_null());
        json_object_set_new(cfg, "slot", json_string(slot));
        if (p->coll.kind != KR_COLL_NONE)
            json_object_set_new(cfg, "kernel", json_string(r->comm_kernel == KR_SIM_TUNED ? "tuned" : "nccl"));
        json_object_set_new(o, "config", cfg);
        json_t *res = kr_sim_result_json(r, job->static_power_w);
        json_object_update(o, res);
        json_decref(res);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        printf("\n");
        json_decref(o);
        return;
    }
    char sum[256];
    kr_job_summary(job, sum, sizeof sum);
    printf("partition %s (%s) of %s\n", p->key, kr_variant_name(p->variant), sum);
    if (p->coll.kind != KR_COLL_NONE)
        printf("config: %d MHz, %d comm SMs, slot %s%s; %s of %.2f MB over %s/%d\n", c->freq_mhz, c->sms, slot,
               p->variant == KR_VARIANT_KAREUS && c->kernel == KR_KERNEL_NCCL ? ", NCCL" : "",
               kr_coll_kind_name(p->coll.kind), p->coll.bytes / 1e6, p->coll.group, p->coll.group_size);
    else
        printf("config: %d MHz (no collective)\n", c->freq_mhz);
    printf("time_s              %.9g\n", r->time_s);
    printf("energy_j            %.9g\n", r->energy_j);
    printf("effective_energy_j  %.9g   (static %.4g W)\n", r->eff_energy_j, job->static_power_w);
    if (p->coll.kind != KR_COLL_NONE)
        printf("streams             compute done %.6g s; comm %.6g .. %.6g s\n", r->compute_end_s, r->comm_start_s,
               r->comm_end_s);
    printf("clock / power       lowest clock %.0f MHz%s, peak %.1f W\n", r->min_f_eff_mhz,
           r->min_f_eff_mhz < c->freq_mhz - 0.5 ? " (power-limited)" : "", r->max_power_w);
    printf("floor               %.1f W at %d MHz: %.6g J of the energy; work %.6g J\n", r->floor_w, c->freq_mhz,
           r->floor_energy_j, r->energy_j - r->floor_energy_j);
    printf("overheads           dispatch %.6g s, host sync %.6g s, rank skew %.6g s\n", r->dispatch_s, r->sync_s,
           r->skew_s);
    if (r->comm_kernel >= 0)
        printf("comm kernel         %s, %d SMs, %.4g MB through HBM\n", r->comm_kernel == KR_SIM_TUNED ? "tuned" : "nccl",
               r->comm_sms, r->comm_hbm_bytes / 1e6);
}

static int eval(int argc, char **argv)
{
    eval_args a = {0};
    int next;
    int prc = cli_opt_parse(&eval_set, argc, argv, 1, &a, &next);
    if (prc)
        return prc == CLI_OPT_STOP ? 0 : prc;
    if (next < argc)
        return cli_usage_error("partition eval", "unexpected argument '%s'", argv[next]);
    const char *key = a.key, *freq_s = a.freq_s, *sms_s = a.sms_s, *slot_s = a.slot_s, *jobpath = a.jobpath,
               *variant_s = a.variant_s, *timeline = a.timeline;
    int json = a.json;
    if (key == NULL)
        return cli_usage_error("partition eval", "--partition: missing (which partition to evaluate)");
    if (freq_s == NULL)
        return cli_usage_error("partition eval", "--freq: missing (the SM clock in MHz)");
    kr_variant var = KR_VARIANT_KAREUS;
    if (variant_s && kr_variant_parse(variant_s, &var))
        return cli_usage_error("partition eval", "--variant: expected kareus, sequential or default-overlap, found '%s'",
                               variant_s);
    kr_job job;
    int rc = cli_load_job(jobpath, &job);
    if (rc)
        return rc;
    kr_partition p;
    if ((rc = find_partition(&job, var, key, &p)))
        return rc;
    kr_config cfg = {0, 0, KR_SLOT_NONE, 0};
    int fixed = p.variant != KR_VARIANT_KAREUS || p.per_stage > 0;
    if (fixed) {
        cfg.sms = p.fixed_sms;
        cfg.slot = p.fixed_slot;
    }
    if ((rc = cli_parse_int("partition eval", "--freq", freq_s, 1, 100000, &cfg.freq_mhz)))
        return rc;
    if (p.coll.kind == KR_COLL_NONE && (sms_s || slot_s))
        return cli_usage_error("partition eval", "%s: partition %s carries no collective, so it has no comm SMs or slot",
                               sms_s ? "--sms" : "--slot", p.key);
    if (!fixed && p.coll.kind != KR_COLL_NONE && (sms_s == NULL || slot_s == NULL))
        return cli_usage_error("partition eval", "%s: missing (the kareus variant searches it; give one value)",
                               sms_s == NULL ? "--sms" : "--slot");
    if (sms_s && (rc = cli_parse_int("partition eval", "--sms", sms_s, -1000000, 1000000, &cfg.sms)))
        return rc;
    if (a.kernel_s && (fixed || p.coll.kind == KR_COLL_NONE))
        return cli_usage_error("partition eval", "--kernel: only a kareus partition with a collective chooses its "
                               "kernel (%s runs %s)", p.key, p.coll.kind == KR_COLL_NONE ? "no collective" : "NCCL");
    if (a.kernel_s && kr_comm_kernel_parse(a.kernel_s, &cfg.kernel))
        return cli_usage_error("partition eval", "--kernel: expected tuned or nccl, found '%s'", a.kernel_s);
    kr_error err = {0};
    if (slot_s && (rc = kr_partition_slot_index(&p, slot_s, &cfg.slot, &err)))
        return cli_report(rc, &err);
    if ((rc = kr_config_validate(&job, &p, &cfg, &err)))
        return cli_report(rc, &err);
    kr_sim_timeline *tl = malloc(sizeof *tl);
    if (tl == NULL)
        return CLI_EXIT_FAIL;
    rc = kr_sim_partition_timeline(&job, &p, &cfg, tl, &err);
    if (rc == KR_OK && timeline)
        rc = kr_sim_timeline_write_json(timeline, &job, &p, &cfg, tl, &err);
    if (rc) {
        free(tl);
        return cli_report(rc, &err);
    }
    print_result(&job, &p, &cfg, &tl->result, json);
    free(tl);
    return 0;
}

int cmd_partition(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_opt_usage(argc < 2 ? stderr : stdout, &eval_set);
        return argc < 2 ? CLI_EXIT_INPUT : 0;
    }
    if (strcmp(argv[1], "eval") == 0)
        return eval(argc - 1, argv + 1);
    if (strcmp(argv[1], "sweep") == 0)
        return cmd_partition_sweep(argc - 1, argv + 1);
    return cli_usage_error("partition", "unknown subcommand '%s' (expected: eval, sweep)", argv[1]);
}
