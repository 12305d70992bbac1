/*
 * opt.c — parsing a subcommand's options from its table (opt.h): one getopt_long loop for every
 * command, the stock setters, and the help text printed from the same rows.
 */
#include "opt.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The field of row o in ctx. */
static void *field(const cli_opt *o, void *ctx)
{
    return (char *)ctx + o->off;
}

int cli_set_str(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)cmd;
    *(const char **)field(o, ctx) = arg;
    return 0;
}

int cli_set_flag(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)cmd;
    (void)arg;
    *(int *)field(o, ctx) = 1;
    return 0;
}

int cli_set_clear(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)cmd;
    (void)arg;
    *(int *)field(o, ctx) = 0;
    return 0;
}

/* "--NAME" of row o, for messages. */
static const char *dashed(const cli_opt *o, char *buf, size_t cap)
{
    snprintf(buf, cap, "--%s", o->name);
    return buf;
}

int cli_set_int(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    char d[64];
    return cli_parse_int(cmd, dashed(o, d, sizeof d), arg, (int)o->lo, (int)o->hi, field(o, ctx));
}

int cli_set_auto_on_off(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    char d[64];
    return cli_parse_auto_on_off(cmd, dashed(o, d, sizeof d), arg, field(o, ctx));
}

int cli_set_long(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    char d[64];
    return cli_parse_long(cmd, dashed(o, d, sizeof d), arg, (long)o->lo, (long)o->hi, field(o, ctx));
}

int cli_set_double(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    char d[64];
    return cli_parse_double(cmd, dashed(o, d, sizeof d), arg, o->lo, o->hi, field(o, ctx));
}

int cli_set_optimize(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {{"strategy", CLI_OPT_STRATEGY},
                 {"seed", CLI_OPT_SEED},
                 {"cost-model", CLI_OPT_COST},
                 {"unit-time", CLI_OPT_UNIT},
                 {"exchange", CLI_OPT_EXCHANGE}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(o->name, codes[i].name) == 0)
            return cli_optimize_option(cmd, codes[i].code, arg, field(o, ctx));
    return cli_usage_error(cmd, "unknown option");
}

/* The row of getopt's return c (1000 + index, or 'h' for the row named "help"); NULL if none. */
static const cli_opt *row_of(int c, const cli_optset *set)
{
    if (c >= 1000 && c < 1000 + set->n)
        return &set->opts[c - 1000];
    for (int i = 0; c == 'h' && i < set->n; i++)
        if (strcmp(set->opts[i].name, "help") == 0)
            return &set->opts[i];
    return NULL;
}

int cli_opt_parse(const cli_optset *set, int argc, char **argv, int first, void *ctx, int *next)
{
    struct option *lo = calloc((size_t)set->n + 1, sizeof *lo);
    if (lo == NULL)
        return cli_report(KR_ENOMEM, NULL);
    for (int i = 0; i < set->n; i++)
        lo[i] = (struct option){set->opts[i].name, set->opts[i].has_arg ? required_argument : no_argument, NULL,
                                1000 + i};
    int c, rc = 0;
    optind = first;
    if (!(set->flags & CLI_OPT_GETOPT_MSG))
        opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, set->shortopts, lo, NULL)) != -1) {
        const cli_opt *o = row_of(c, set);
        if (o && o->set)
            rc = o->set(set->cmd, o, optarg, ctx);
        else if (o)
            rc = cli_opt_usage(stdout, set) == 0 ? CLI_OPT_STOP : 0;
        else if (set->flags & CLI_OPT_GETOPT_MSG)
            rc = cli_usage_error(set->cmd, "unknown option");
        else
            rc = cli_usage_error(set->cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
    free(lo);
    *next = optind;
    return rc;
}

int cli_opt_usage(FILE *f, const cli_optset *set)
{
    fputs(set->head, f);
    for (int i = 0; i < set->n; i++)
        if (set->opts[i].help)
            fputs(set->opts[i].help, f);
    if (set->tail)
        fputs(set->tail, f);
    return 0;
}

int cli_opt_subcommand_usage(int argc, char **argv, const cli_optset *set)
{
    if (argc >= 2 && !cli_wants_help(argc, argv))
        return -1;
    cli_opt_usage(argc < 2 ? stderr : stdout, set);
    return argc < 2 ? CLI_EXIT_INPUT : 0;
}
