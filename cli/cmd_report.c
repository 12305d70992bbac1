/*
 * cmd_report.c — `kareus report`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus report: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
