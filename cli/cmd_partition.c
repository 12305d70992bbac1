/*
 * cmd_partition.c — `kareus partition`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_partition(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus partition: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
