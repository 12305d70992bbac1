/*
 * cmd_search.c — `kareus search`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_search(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus search: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
