/*
 * cmd_profile.c — `kareus profile`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_profile(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus profile: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
