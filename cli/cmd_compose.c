/*
 * cmd_compose.c — `kareus compose`: instruction options of every stage from the partition
 * frontiers of a job (one file per partition key, as `kareus search` writes them), with the
 * non-partition work measured on the simulator, written as the Perseus/Kareus options CSV;
 * `kareus compose format`: the fields of the JSON frontier file.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: kareus compose --frontiers DIR --out FILE.csv [--job FILE] [--variant NAME] [--json]\n"
    "                      [--allow-missing-clocks]\n"
    "       kareus compose format [--markdown]\n\n"
    "  format           every field of the JSON partition frontier file compose reads: type,\n"
    "                   accepted values, default, meaning (--markdown: the table of docs/formats.md)\n"
    "  --frontiers DIR  partition frontiers: <key>.<variant>.json or .csv for every key of the job\n"
    "  --out FILE.csv   instruction options (stage,instruction,frequency,time,energy,KEY...)\n"
    "  --job FILE       job spec or built-in name (default: the built-in default job)\n"
    "  --variant NAME   kareus (default), sequential or default-overlap\n"
    "  --json           the summary as JSON (out, options, stages, clocks, sums, variant)\n"
    "  --allow-missing-clocks  a frontier without a point at some of the job's planning clocks\n"
    "                   is an error (exit 2) naming the key and the clocks; with this flag a warning,\n"
    "                   and those clocks are left out of the composition\n\n"
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

/*
 * Composition combines configurations of the same clock only, so a clock missing from one key's
 * frontier drops that clock for the whole stage. Reports every frontier of dir lacking some of
 * the job's planning clocks: an error (exit 2), or with allow a warning on stderr. Returns 0 or
 * the exit status.
 */
static int check_clocks(const kr_job *job, kr_variant variant, const char *dir, int allow)
{
    kr_error err = {0};
    kr_partition_frontier *fr = malloc(KR_MAX_PARTITIONS * sizeof *fr);
    if (fr == NULL)
        return cli_report(KR_ENOMEM, NULL);
    int n = kr_compose_read_frontiers(dir, job, variant, fr, KR_MAX_PARTITIONS, &err);
    if (n < 0) {
        free(fr);
        return cli_report(n, &err);
    }
    int want[KR_SEARCH_MAX_CLOCKS], nwant = 0, bad = 0;
    for (int f = job->clock_max_mhz; f >= job->clock_min_mhz && nwant < KR_SEARCH_MAX_CLOCKS && job->clock_step_mhz > 0;
         f -= job->clock_step_mhz)
        want[nwant++] = f;
    for (int i = 0; i < n; i++) {
        int have[KR_SEARCH_MAX_CLOCKS];
        int nh = kr_frontier_clocks(&fr[i], have, KR_SEARCH_MAX_CLOCKS);
        char miss[512] = "";
        size_t k = 0;
        int nmiss = 0;
        for (int w = 0; w < nwant; w++) {
            int found = 0;
            for (int h = 0; h < nh && !found; h++)
                found = have[h] == want[w];
            if (!found) {
                nmiss++;
                if (k < sizeof miss - 16)
                    k += (size_t)snprintf(miss + k, sizeof miss - k, "%s%d", nmiss > 1 ? ", " : "", want[w]);
            }
        }
        if (nmiss) {
            bad++;
            fprintf(stderr, "kareus compose: %s: frontier of %s (%s) has no point at %d of the job's %d planning "
                    "clocks (%s MHz): %s\n", allow ? "warning" : "error", fr[i].key, kr_variant_name(fr[i].variant),
                    nmiss, nwant, miss, allow ? "those clocks are left out of the composition"
                                              : "search it again (every strategy covers each clock) or pass "
                                                "--allow-missing-clocks");
        }
    }
    for (int i = 0; i < n; i++)
        kr_frontier_free(&fr[i]);
    free(fr);
    return bad && !allow ? CLI_EXIT_INPUT : 0;
}

int cmd_compose(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "format") == 0) {
        int markdown = argc == 3 && strcmp(argv[2], "--markdown") == 0;
        if (argc > 2 + markdown)
            return cli_usage_error("compose", "format: unexpected argument '%s'", argv[2 + markdown]);
        return cli_print_format(kr_frontier_format_field, markdown);
    }
    static const struct option lopts[] = {{"frontiers", required_argument, 0, 'f'}, {"out", required_argument, 0, 'o'},
                                          {"job", required_argument, 0, 'j'},       {"variant", required_argument, 0, 'v'},
                                          {"json", no_argument, 0, 'J'},
                                          {"allow-missing-clocks", no_argument, 0, 'A'}, {0, 0, 0, 0}};
    const char *dir = NULL, *out = NULL, *jobpath = NULL, *var = "kareus";
    int c, json = 0, allow = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (c) {
        case 'f': dir = optarg; break;
        case 'o': out = optarg; break;
        case 'j': jobpath = optarg; break;
        case 'v': var = optarg; break;
        case 'J': json = 1; break;
        case 'A': allow = 1; break;
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
    if ((rc = check_clocks(&job, variant, dir, allow)))
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
