/*
 * cmd_report.c — `kareus report DIR`: (re)builds DIR/report.html from DIR/summary.json;
 * `kareus report format`: the fields of summary.json.
 */
#include <string.h>

#include "cli.h"

int cmd_report(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        printf("usage: kareus report DIR [--json]\n"
               "       kareus report format [--markdown]\n\n"
               "Builds DIR/report.html (one self-contained page with the pictures inlined) from the\n"
               "summary.json that 'kareus optimize --out DIR' wrote. --json prints {\"report\": PATH}.\n"
               "format: every field of summary.json: type, accepted values, default, meaning\n"
               "(--markdown: the table of docs/formats.md; a directory named format: ./format).\n");
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "format") == 0) {
        int markdown = argc == 3 && strcmp(argv[2], "--markdown") == 0;
        if (argc > 2 + markdown)
            return cli_usage_error("report", "format: unexpected argument '%s'", argv[2 + markdown]);
        return cli_print_format(kr_report_summary_format_field, markdown);
    }
    int json = argc == 3 && strcmp(argv[2], "--json") == 0;
    if (json)
        argc--;
    if (argc != 2)
        return cli_usage_error("report", "expected one output directory of 'kareus optimize', found %d arguments", argc - 1);
    kr_error err = {0};
    int rc = kr_report_html(argv[1], &err);
    if (rc)
        return cli_report(rc, &err);
    if (json) {
        char path[4096];
        snprintf(path, sizeof path, "%s/report.html", argv[1]);
        fputs("{\"report\": ", stdout);
        cli_json_string(path);
        fputs("}\n", stdout);
    } else {
        printf("%s/report.html\n", argv[1]);
    }
    return 0;
}
