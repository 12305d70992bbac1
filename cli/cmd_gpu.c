/*
 * cmd_gpu.c — `kareus gpu`: placeholder until its issue lands (prints that it is not built yet).
 */
#include "cli.h"

int cmd_gpu(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kareus gpu: not implemented yet\n");
    return CLI_EXIT_FAIL;
}
