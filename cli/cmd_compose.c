/*
 * cmd_compose.c — `kareus compose`: instruction options of every stage from the partition
 * frontiers of a job (one file per partition key, as `kareus search` writes them), with the
 * non-partition work measured on the simulator, written as the Perseus/Kareus options CSV.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kareus compose --frontiers DIR --out FILE.csv [--job FILE] [--variant NAME] [--json]\n\n"
    "  --frontiers DIR  partition frontiers: <key>.<variant>.json or .csv for every key of the job\n"
    "  --out FILE.csv   instruction options (stage,instruction,frequency,time,energy,KEY...)\n"
    "  --job FILE       job spec or built-in name (default: the built-in default job)\n"
    "  --variant NAME   kareus (default), sequential or default-overlap\n"
    "  --json           the summary as JSON (out, options, stages, clocks, sums, variant)\n\n"
    "Per stage and forward/backward: at each clock, the Minkowski sum of the partitions'\n"
    "frontiers (x executions per layer x layers), plus embedding / LM head / loss measured on\n"
    "the simulator, plus the recomputed forward in backward; Pareto-pruned on (time, effective\n"
    "energy) after each key, then over clocks. No fudge factors (docs/solver.md).\n";

int cli_compose_options(const kr_job *job, kr_variant variant, const char *dir, kr_options *out, kr_compose_stats *st)
{
    kr_error err = {0};
    kr_partition_frontier fr[KR_MAX_PARTITIONS];
    int n = kr_compose_read_frontiers(dir, job, variant, fr, KR_MAX_PARTITIONS, &err);
    if (n < 0)
        return cli_report(n, &err);
    kr_backend *b = NULL;
    int rc = kr_sim_backend_create(job, NULL, &b, &err);
    if (rc == KR_OK)
        rc = kr_compose(job, variant, fr, n, b, out, st, &err);
    kr_backend_destroy(b);
    for (int i = 0; i < n; i++)
        kr_frontier_free(&fr[i]);
    return rc ? cli_report(rc, &err) : 0;
}

int cmd_compose(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    static const struct option lopts[] = {{"frontiers", required_argument, 0, 'f'}, {"out", required_argument, 0, 'o'},
                                          {"job", required_argument, 0, 'j'},       {"variant", required_argument, 0, 'v'},
                                          {"json", no_argument, 0, 'J'},            {0, 0, 0, 0}};
    const char *dir = NULL, *out = NULL, *jobpath = NULL, *var = "kareus";
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (c) {
        case 'f': dir = optarg; break;
        case 'o': out = optarg; break;
        case 'j': jobpath = optarg; break;
        case 'v': var = optarg; break;
        case 'J': json = 1; break;
        default: return cli_usage_error("compose", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("compose", "unexpected argument '%s'", argv[optind]);
    if (dir == NULL || out == NULL)
        return cli_usage_error("compose", "--frontiers DIR and --out FILE.csv are required");
    kr_variant variant;
    if (kr_variant_parse(var, &variant))
        return cli_usage_error("compose", "--variant: expected kareus, sequential or default-overlap, found '%s'", var);
    kr_job job;
    int rc = cli_load_job(jobpath, &job);
    if (rc)
        return rc;
    kr_options opts;
    kr_compose_stats st;
    if ((rc = cli_compose_options(&job, variant, dir, &opts, &st)))
        return rc;
    kr_error err = {0};
    rc = kr_options_write_csv(out, &opts, &err);
    if (rc == KR_OK) {
        int total = 0;
        for (int i = 0; i < opts.nsets; i++)
            total += opts.sets[i].n;
        if (json) {
            printf("{\"out\": ");
            cli_json_string(out);
            printf(", \"options\": %d, \"stages\": %d, \"clocks\": %d, \"sums\": %lld, \"variant\": ", total,
                   opts.num_stages, st.clocks, st.candidates);
            cli_json_string(var);
            printf("}\n");
        } else {
            printf("composed %d options for %d stages over %d clocks (%lld sums formed), %s\n", total,
                   opts.num_stages, st.clocks, st.candidates, out);
        }
    }
    kr_options_free(&opts);
    return rc ? cli_report(rc, &err) : 0;
}
