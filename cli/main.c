/*
 * main.c — the kareus command: dispatches to one subcommand per file (cli/cmd_<name>.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct command {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} commands[] = {
    {"optimize", cmd_optimize, "the whole flow: search, compose, solve, simulate, compare, report"},
    {"search", cmd_search, "partition time-energy frontiers (exhaustive, bo, artifact)"},
    {"compose", cmd_compose, "instruction options from partition frontiers"},
    {"solve", cmd_solve, "iteration time-energy frontier and plans (Phillips-Dessouky)"},
    {"simulate", cmd_simulate, "simulate one plan on the pipeline simulator"},
    {"compare", cmd_compare, "the five methods compared (one job or --suite paper)"},
    {"report", cmd_report, "HTML report with pictures of an optimize output directory"},
    {"plan", cmd_plan, "inspect, validate and export plan files"},
    {"partition", cmd_partition, "evaluate one partition configuration on the simulator"},
    {"sim", cmd_sim, "the simulator against measured partitions (sim check --data CALIB.json)"},
    {"calibrate", cmd_calibrate, "fit simulator constants to measured partitions"},
    {"catalog", cmd_catalog, "GPUs, models, and the partitions of a job"},
    {"job", cmd_job, "show or write a job spec"},
    {"gpu", cmd_gpu, "GPU info and clock reset through NVML"},
    {"run", cmd_run, "run a training command with a plan applied, clocks restored after"},
    {"profile", cmd_profile, "measure partitions on a real GPU (CUDA, cuBLAS, NCCL, NVML)"},
    {"log", cmd_log, "merge the measurement logs of a sharded profiling campaign"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kareus <command> [options]\n\n"
               "Kareus chooses, jointly, the GPU clock of every pipeline instruction and how\n"
               "communication overlaps computation, to cut the energy and time of training.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'kareus <command> --help' (or 'kareus help <command>') describes a command.\n"
               "'kareus optimize' with no\n"
               "arguments runs the whole flow on the built-in default job.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_INPUT;
    }
    if (strcmp(argv[1], "help") == 0 && argc >= 3) {
        /* 'kareus help CMD [SUB]' is 'kareus CMD [SUB] --help'. */
        static char help_opt[] = "--help";
        char *args[4] = {argv[2], argc >= 4 ? argv[3] : NULL, NULL, NULL};
        int n = argc >= 4 ? 2 : 1;
        args[n++] = help_opt;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(n, args);
        fprintf(stderr, "kareus help: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return CLI_EXIT_INPUT;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kareus %s\n", kr_version());
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* An empty argument (--out '', --methods '', a file named '') is never meaningful:
             * refuse it before a subcommand creates directories or files. Arguments after "--"
             * belong to the command `kareus run` starts and are left alone. */
            for (int a = 2; a < argc && strcmp(argv[a], "--") != 0; a++)
                if (argv[a][0] == '\0' || (strncmp(argv[a], "--", 2) == 0 && argv[a][strlen(argv[a]) - 1] == '='))
                    return cli_usage_error(argv[1], "%s: expected a value, found an empty string",
                                           argv[a][0] ? argv[a] : a > 2 && argv[a - 1][0] == '-' ? argv[a - 1]
                                                                                              : "argument");
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "kareus: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_INPUT;
}
