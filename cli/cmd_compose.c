/*
 * cmd_compose.c — `kareus compose`: instruction options of every stage from the partition
 * frontiers of a job (one file per partition key, as `kareus search` writes them), with the
 * non-partition work measured on the simulator, written as the Perseus/Kareus options CSV;
 * `kareus compose format`: the fields of the JSON frontier file.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus compose --frontiers DIR --out FILE.csv [--job FILE] [--variant NAME] [--json]\n"
    "                      [--allow-missing-clocks]\n"
    "       kareus compose format [--markdown]\n\n"
    "  format           every field of the JSON partition frontier file compose reads: type,\n"
    "                   accepted values, default, meaning (--markdown: the table of docs/formats.md)\n";

/* What the options set. */
typedef struct compose_args {
    const char *dir, *out, *jobpath, *var;
    int json, allow;
} compose_args;

static const cli_opt compose_opts[] = {
    CLI_OPT("frontiers", 1,
        "  --frontiers DIR  partition frontiers: <key>.<variant>.json or .csv for every key of the job\n",
        cli_set_str, compose_args, dir),
    CLI_OPT("out", 1,
        "  --out FILE.csv   instruction options (stage,instruction,frequency,time,energy,KEY...)\n",
        cli_set_str, compose_args, out),
    CLI_OPT("job", 1,
        "  --job FILE       job spec or built-in name (default: the built-in default job)\n",
        cli_set_str, compose_args, jobpath),
    CLI_OPT("variant", 1,
        "  --variant NAME   kareus (default), sequential or default-overlap\n",
        cli_set_str, compose_args, var),
    CLI_OPT("json", 0,
        "  --json           the summary as JSON (out, options, stages, clocks, sums, variant)\n",
        cli_set_flag, compose_args, json),
    CLI_OPT("allow-missing-clocks", 0,
        "  --allow-missing-clocks  a frontier without a point at some of the job's planning clocks\n"
        "                   is an error (exit 2) naming the key and the clocks; with this flag a warning,\n"
        "                   and those clocks are left out of the composition\n",
        cli_set_flag, compose_args, allow),
};
static const char usage_tail[] =
    "\nPer stage and forward/backward: at each clock, the Minkowski sum of the partitions'\n"
    "frontiers (x executions per layer x layers), plus embedding / LM head / loss measured on\n"
    "the simulator, plus the recomputed forward in backward; Pareto-pruned on (time, effective\n"
    "energy) after each key, then over clocks. No fudge factors (docs/solver.md).\n";
static const cli_optset compose_set = {"compose", usage_head, compose_opts, CLI_OPT_COUNT(compose_opts), usage_tail,
                                       "", 0};

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
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &compose_set);
    if (argc >= 2 && strcmp(argv[1], "format") == 0) {
        int markdown = argc == 3 && strcmp(argv[2], "--markdown") == 0;
        if (argc > 2 + markdown)
            return cli_usage_error("compose", "format: unexpected argument '%s'", argv[2 + markdown]);
        return cli_print_format(kr_frontier_format_field, markdown);
    }
    compose_args a = {.var = "kareus"};
    int next, rc;
    if ((rc = cli_opt_parse(&compose_set, argc, argv, 1, &a, &next)))
        return rc;
    if (next < argc)
        return cli_usage_error("compose", "unexpected argument '%s'", argv[next]);
    const char *dir = a.dir, *out = a.out, *var = a.var;
    int json = a.json;
    if (dir == NULL || out == NULL)
        return cli_usage_error("compose", "--frontiers DIR and --out FILE.csv are required");
    kr_variant variant;
    if (kr_variant_parse(var, &variant))
        return cli_usage_error("compose", "--variant: expected kareus, sequential or default-overlap, found '%s'", var);
    kr_job job;
    if ((rc = cli_load_job(a.jobpath, &job)))
        return rc;
    if ((rc = check_clocks(&job, variant, dir, a.allow)))
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
