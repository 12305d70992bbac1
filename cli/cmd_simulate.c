/*
 * cmd_simulate.c — `kareus simulate`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_simulate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus simulate: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
