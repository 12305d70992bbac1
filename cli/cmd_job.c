/*
 * cmd_job.c — `kareus job show|write|validate|format`: print, save or check a job spec, or
 * describe the format.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus job show [--job FILE] [--json]\n"
    "       kareus job write --out FILE [--job FILE]\n"
    "       kareus job validate FILE\n"
    "       kareus job format [--markdown]\n\n"
    "  show       print the job (the built-in default without --job)\n"
    "  write      write the job as a JSON spec (a starting point for your own)\n"
    "  validate   load and check a job spec; exit 2 with a precise error if it is wrong\n"
    "  format     every field of the job spec format: type, accepted values, default, meaning\n"
    "             (--markdown: the table of docs/formats.md)\n";

/* What the options set. */
typedef struct job_args {
    const char *jobpath, *out;
    int json, markdown;
} job_args;

static const cli_opt job_opts[] = {
    CLI_OPT("job", 1,
        "  --job FILE a JSON job spec or a built-in job name (see 'kareus catalog')\n",
        cli_set_str, job_args, jobpath),
    CLI_OPT("out", 1,
        NULL,
        cli_set_str, job_args, out),
    CLI_OPT("json", 0,
        NULL,
        cli_set_flag, job_args, json),
    CLI_OPT("markdown", 0,
        NULL,
        cli_set_flag, job_args, markdown),
};
static const cli_optset job_set = {"job", usage_head, job_opts, CLI_OPT_COUNT(job_opts), NULL, "", 0};

int cmd_job(int argc, char **argv)
{
    int urc = cli_opt_subcommand_usage(argc, argv, &job_set);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    job_args a = {0};
    int next;
    int prc = cli_opt_parse(&job_set, argc, argv, 2, &a, &next);
    if (prc)
        return prc;
    const char *jobpath = a.jobpath, *out = a.out;
    int json = a.json, markdown = a.markdown;
    if (strcmp(sub, "validate") == 0) {
        if (next != argc - 1)
            return cli_usage_error("job", "validate: expected one job file");
        jobpath = argv[next];
    } else if (next < argc) {
        return cli_usage_error("job", "unexpected argument '%s'", argv[next]);
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
    printf("; gather SMs %d..%d (%d values); comm kernels", job.sms_gather.v[0],
           job.sms_gather.v[job.sms_gather.n - 1], job.sms_gather.n);
    for (int i = 0; i < job.ncomm_kernels; i++)
        printf("%s%s", i ? ", " : " ", kr_comm_kernel_name(job.comm_kernels[i]));
    printf("\n");
    printf("  p2p        %.1f MB per microbatch per GPU between stages\n", kr_job_p2p_bytes(&job) / 1e6);
    return 0;
}
