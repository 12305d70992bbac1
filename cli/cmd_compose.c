/*
 * cmd_compose.c — `kareus compose`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_compose(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus compose: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
