/*
 * cmd_job.c — `kareus job show|write|validate|format`: print, save or check a job spec, or
 * describe the format.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kareus job show [--job FILE] [--json]\n"
    "       kareus job write --out FILE [--job FILE]\n"
    "       kareus job validate FILE\n"
    "       kareus job format [--markdown]\n\n"
    "  show       print the job (the built-in default without --job)\n"
    "  write      write the job as a JSON spec (a starting point for your own)\n"
    "  validate   load and check a job spec; exit 2 with a precise error if it is wrong\n"
    "  format     every field of the job spec format: type, accepted values, default, meaning\n"
    "             (--markdown: the table of docs/formats.md)\n"
    "  --job FILE a JSON job spec or a built-in job name (see 'kareus catalog')\n";

int cmd_job(int argc, char **argv)
{
    int urc = cli_subcommand_usage(argc, argv, usage_text);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    static const struct option opts[] = {
        {"job", required_argument, 0, 'j'}, {"out", required_argument, 0, 'o'},
        {"json", no_argument, 0, 'J'},      {"markdown", no_argument, 0, 'M'},
        {0, 0, 0, 0},
    };
    const char *jobpath = NULL, *out = NULL;
    int json = 0, markdown = 0, c;
    optind = 2;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'j': jobpath = optarg; break;
        case 'o': out = optarg; break;
        case 'J': json = 1; break;
        case 'M': markdown = 1; break;
        default: return cli_usage_error("job", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (strcmp(sub, "validate") == 0) {
        if (optind != argc - 1)
            return cli_usage_error("job", "validate: expected one job file");
        jobpath = argv[optind];
    } else if (optind < argc) {
        return cli_usage_error("job", "unexpected argument '%s'", argv[optind]);
    }
    if (strcmp(sub, "format") == 0)
        return cli_print_format(kr_job_format_field, markdown);
    kr_job job;
    int rc = cli_load_job(jobpath, &job);
    if (rc)
        return rc;
    kr_error err = {0};
    if (strcmp(sub, "validate") == 0) {
        /* What the search and optimize refuse is refused here too: the kareus variant splits
         * each microbatch into two nanobatches (an odd microbatch_size cannot be split). */
        kr_partition_set *set = malloc(sizeof *set);
        if (set == NULL)
            return cli_report(KR_ENOMEM, NULL);
        rc = kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &err);
        free(set);
        if (rc) {
            kr_error_prefix(&err, "%s", jobpath);
            return cli_report(rc, &err);
        }
        char sum[256];
        kr_job_summary(&job, sum, sizeof sum);
        printf("%s: ok (%s)\n", jobpath, sum);
        return 0;
    }
    if (strcmp(sub, "write") == 0) {
        if (out == NULL)
            return cli_usage_error("job", "write: --out FILE is required");
        if ((rc = kr_job_write(out, &job, &err)))
            return cli_report(rc, &err);
        return 0;
    }
    if (strcmp(sub, "show") != 0)
        return cli_usage_error("job", "unknown subcommand '%s' (expected show, write, validate or format)", sub);
    if (json) {
        char tmp[] = "/tmp/kareus-job-XXXXXX";
        int fd = mkstemp(tmp);
        if (fd < 0)
            return CLI_EXIT_FAIL;
        close(fd);
        if ((rc = kr_job_write(tmp, &job, &err))) {
            unlink(tmp);
            return cli_report(rc, &err);
        }
        rc = cli_print_file(tmp);
        unlink(tmp);
        return rc;
    }
    char sum[256], fp[17];
    kr_job_summary(&job, sum, sizeof sum);
    kr_job_fingerprint(&job, fp);
    printf("job %s\n  %s\n  fingerprint %s\n", job.name, sum, fp);
    printf("  GPU        %s (%s), %.0f SMs, %.0f W TDP, static %.0f W\n", job.gpu.name, job.gpu.display,
           job.gpu.sm_count, job.gpu.tdp_w, job.static_power_w);
    printf("  model      %s: h %d, ffn %d, heads %d/%d kv, head_dim %d, %d layers, vocab %d\n", job.model.display,
           job.model.hidden, job.model.ffn, job.model.heads, job.model.kv_groups, job.model.head_dim,
           job.model.layers, job.model.vocab);
    printf("  cluster    %d nodes x %d GPUs; inter-node %.2f GB/s per GPU, %.0f us\n", job.cluster.nodes,
           job.cluster.gpus_per_node, job.cluster.inter_node_bw_Bps / 1e9, job.cluster.inter_node_latency_s * 1e6);
    printf("  layers     ");
    for (int s = 0; s < job.pp; s++)
        printf("%s%d", s ? " + " : "", job.layers_per_stage[s]);
    printf(" (%s, %d virtual stage%s)\n", kr_schedule_name(job.schedule), job.virtual_stages,
           job.virtual_stages > 1 ? "s" : "");
    printf("  planning   clocks %d..%d MHz step %d; all-reduce SMs", job.clock_min_mhz, job.clock_max_mhz,
           job.clock_step_mhz);
    for (int i = 0; i < job.sms_allreduce.n; i++)
        printf(" %d", job.sms_allreduce.v[i]);
    printf("; gather SMs %d..%d (%d values)\n", job.sms_gather.v[0], job.sms_gather.v[job.sms_gather.n - 1],
           job.sms_gather.n);
    printf("  p2p        %.1f MB per microbatch per GPU between stages\n", kr_job_p2p_bytes(&job) / 1e6);
    return 0;
}
