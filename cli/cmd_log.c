/*
 * cmd_log.c — `kareus log merge`: one measurement log from the shard logs of a sharded
 * profiling campaign (kr_search_log_merge; docs/profiler.md, "Cluster campaigns").
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus log merge [--job FILE] [--strict] OUT SHARD.jsonl...\n\n"
    "  merge      merge the measurement logs of a campaign's shards into OUT: every log must be\n"
    "             a Kareus log of the job's fingerprint; a configuration measured more than once\n"
    "             is kept once, the first copy in argument order then line order; copies with a\n"
    "             different measurement are conflicts, reported (with --strict also exit 1).\n"
    "             OUT is written to a temporary file and renamed; an existing OUT must\n"
    "             be a log of the same job. A search resumed from OUT (--log OUT) measures nothing\n"
    "             its shards measured.\n";

typedef struct log_args {
    const char *job;
    int strict;
} log_args;

static const cli_opt log_opts[] = {
    CLI_OPT("job", 1,
        "  --job FILE  the campaign's job spec or built-in name (default: the default job)\n",
        cli_set_str, log_args, job),
    CLI_OPT("strict", 0,
        "  --strict    a conflicting duplicate fails the merge (exit 1)\n",
        cli_set_flag, log_args, strict),
};
static const cli_optset log_set = {"log", usage_head, log_opts, CLI_OPT_COUNT(log_opts), NULL, "", 0};

/* merge: OUT then the shard logs; prints what was kept, dropped and in conflict. */
static int log_merge(const log_args *a, int nfiles, char **files)
{
    if (nfiles < 2)
        return cli_usage_error("log", "merge: expected OUT and at least one shard log, found %d argument%s", nfiles,
                               nfiles == 1 ? "" : "s");
    kr_job job;
    int rc = cli_load_job(a->job, &job);
    if (rc)
        return rc;
    const char *out = files[0];
    const char *const *shards = (const char *const *)(files + 1);
    for (int i = 0; i < nfiles - 1; i++)
        if (strcmp(shards[i], out) == 0)
            return cli_usage_error("log", "merge: OUT %s is also a shard; write the merged log to a new file", out);
    kr_search_merge_stats st;
    kr_error err = {0};
    if ((rc = kr_search_log_merge(out, shards, nfiles - 1, &job, &st, &err)))
        return cli_report(rc, &err);
    printf("merged %d shard log%s of job '%s' into %s: %ld measurements, %ld duplicates dropped, %ld conflicts%s\n",
           nfiles - 1, nfiles == 2 ? "" : "s", job.name, out, st.records, st.duplicates, st.conflicts,
           st.torn ? ", torn last lines left out" : "");
    if (st.torn)
        fprintf(stderr, "kareus log merge: warning: %d shard log%s ended in a torn line (a killed writer); it was "
                        "left out: rerun that shard to measure it\n", st.torn, st.torn == 1 ? "" : "s");
    if (st.conflicts) {
        fprintf(stderr, "kareus log merge: warning: %ld conflicting duplicate%s (the first copy kept), first: %s\n",
                st.conflicts, st.conflicts == 1 ? "" : "s", st.conflict);
        if (a->strict)
            return CLI_EXIT_FAIL;
    }
    return 0;
}

int cmd_log(int argc, char **argv)
{
    int urc = cli_opt_subcommand_usage(argc, argv, &log_set);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    if (strcmp(sub, "merge") != 0)
        return cli_usage_error("log", "expected the subcommand merge, found '%s'", sub);
    log_args a = {0};
    int next;
    int rc = cli_opt_parse(&log_set, argc, argv, 2, &a, &next);
    if (rc)
        return rc;
    return log_merge(&a, argc - next, argv + next);
}
