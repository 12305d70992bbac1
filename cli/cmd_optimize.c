/*
 * cmd_optimize.c — `kareus optimize`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_optimize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus optimize: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
