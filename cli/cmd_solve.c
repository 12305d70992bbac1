/*
 * cmd_solve.c — `kareus solve`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_solve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus solve: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
