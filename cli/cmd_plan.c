/*
 * cmd_plan.c — `kareus plan`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_plan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus plan: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
