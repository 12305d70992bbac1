/*
 * cmd_run.c — `kareus run`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus run: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
