/*
 * cmd_report.c — `kareus report DIR`: (re)builds DIR/report.html from DIR/summary.json;
 * `kareus report format`: the fields of summary.json.
 */
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus report DIR [--json]\n"
    "       kareus report format [--markdown]\n\n"
    "Builds DIR/report.html (one self-contained page with the pictures inlined) from the\n"
    "summary.json that 'kareus optimize --out DIR' wrote. --json prints {\"report\": PATH}.\n"
    "format: every field of summary.json: type, accepted values, default, meaning\n"
    "(--markdown: the table of docs/formats.md; a directory named format: ./format).\n";

/* What the options set. */
typedef struct report_args {
    int json;
} report_args;

static const cli_opt report_opts[] = {
    CLI_OPT("json", 0,
        NULL,
        cli_set_flag, report_args, json),
};
static const cli_optset report_set = {"report", usage_head, report_opts, CLI_OPT_COUNT(report_opts), NULL, "", 0};

int cmd_report(int argc, char **argv)
{
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &report_set);
    if (argc >= 2 && strcmp(argv[1], "format") == 0) {
        int markdown = argc == 3 && strcmp(argv[2], "--markdown") == 0;
        if (argc > 2 + markdown)
            return cli_usage_error("report", "format: unexpected argument '%s'", argv[2 + markdown]);
        return cli_print_format(kr_report_summary_format_field, markdown);
    }
    report_args a = {0};
    int next, rc;
    if ((rc = cli_opt_parse(&report_set, argc, argv, 1, &a, &next)))
        return rc;
    if (argc - next != 1)
        return cli_usage_error("report", "expected one output directory of 'kareus optimize', found %d arguments",
                               argc - next);
    const char *dir = argv[next];
    kr_error err = {0};
    if ((rc = kr_report_html(dir, &err)))
        return cli_report(rc, &err);
    if (a.json) {
        char path[4096];
        snprintf(path, sizeof path, "%s/report.html", dir);
        fputs("{\"report\": ", stdout);
        cli_json_string(path);
        fputs("}\n", stdout);
    } else {
        printf("%s/report.html\n", dir);
    }
    return 0;
}
