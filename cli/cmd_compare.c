/*
 * cmd_compare.c — `kareus compare`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_compare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus compare: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
