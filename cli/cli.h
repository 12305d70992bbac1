/*
 * cli.h — shared helpers of the kareus command (public API of libkareus only).
 *
 * Exit statuses: 0 success, 1 failure of a run (backend, I/O beyond the user's input),
 * 2 bad input (arguments, files, values) — every such error names what was expected and
 * what was found.
 */
#ifndef KR_CLI_H
#define KR_CLI_H

#include <stdio.h>

#include "kareus/kareus.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_INPUT 2

/* Every subcommand: argc/argv start at the subcommand name (argv[0] = "search"). */
typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Prints "kareus: <message>" for a failed library call and returns the exit status for rc
 * (2 for input errors, 1 otherwise). */
int cli_report(int rc, const kr_error *err);

/* Prints "kareus CMD: <message>\n(see 'kareus CMD --help')" and returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for options: the whole string must be a number within [lo, hi];
 * otherwise prints "kareus CMD: --OPT: expected …, found '…'" and returns 2. */
int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);

/* An option FLAG of the form auto|on|off (--exchange, --polish of the exact solver): auto (0),
 * on (1) or off (-1); anything else prints the usage error and returns 2. */
int cli_parse_auto_on_off(const char *cmd, const char *flag, const char *s, int *out);

/* getopt codes of the options optimize and compare share, and their handler: sets the field
 * of o that option `code` names from arg; returns 0, or 2 after printing the usage error. */
enum { CLI_OPT_STRATEGY = 1000, CLI_OPT_SEED, CLI_OPT_COST, CLI_OPT_UNIT, CLI_OPT_EXCHANGE };
int cli_optimize_option(const char *cmd, int code, const char *arg, kr_optimize_config *o);

/* Loads --job FILE (a path or a built-in name) or the default job when path is NULL. */
int cli_load_job(const char *path, kr_job *job);

/* Progress on stderr: a line rewritten in place when stderr is a terminal, a plain line every
 * call otherwise. cli_progress_done ends the line. quiet suppresses both. */
void cli_progress(int quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_progress_done(int quiet);

/* Copies a file to stdout; returns 0, or 1 with a message if it cannot be read. */
int cli_print_file(const char *path);

/* Writes S to stdout as a JSON string (quoted, with ", \\ and control characters escaped); NULL
 * is written as null. For the --json output of the commands. */
void cli_json_string(const char *s);

/* Prints a file format's description (kr_job_format_field, kr_plan_format_field), one field a
 * row: aligned text, or with markdown the Markdown table that docs/formats.md holds. Returns 0. */
int cli_print_format(int (*field)(int i, kr_field_info *out), int markdown);

/* 1 if --help/-h is among the arguments. */
int cli_wants_help(int argc, char **argv);

/* For commands with subcommands: with no subcommand prints usage to stderr and returns
 * CLI_EXIT_INPUT; with --help prints it to stdout and returns 0; otherwise returns -1 (go on). */
int cli_subcommand_usage(int argc, char **argv, const char *usage);

/* Composes instruction options for job from the partition frontiers in dir, non-partition work
 * measured on the simulator (cli/cmd_compose.c; used by compose and solve --frontiers). Prints
 * the error and returns the exit status on failure, 0 on success (*out then owned by caller). */
int cli_compose_options(const kr_job *job, kr_variant variant, const char *dir, kr_options *out,
                        kr_compose_stats *st);

/* Subcommands (cli/cmd_<name>.c). */
int cmd_catalog(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_compose(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_gpu(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
/* kareus calibrate --profile (calib_profile.c): prints (or JSON) the fit's profile over one
 * constant; returns the exit status. */
/* calib_sweep.c: `kareus calibrate` and `kareus sim check` on a comm-sweep log (the comm clock
 * law fitted, the entry written to out when not NULL; base: --base NAME|FILE or NULL). */
int cli_calib_sweep(const char *data, const char *out, const char *base, int json);
int cli_sim_check_sweep(const char *data, const char *gpu_file, int json);
int cli_calib_profile(const kr_sim_calib *cs, const kr_gpu *start, int fold, const int *fixed, int nfixed,
                      const char *spec, int json);
/* kareus partition sweep (cmd_sweep.c), dispatched by cmd_partition. */
int cmd_partition_sweep(int argc, char **argv);

/* --prior SPEC of search and profile: "none" (*use = 0), "sim" (the simulator on job's GPU) or
 * FILE (a GPU entry, kr_gpu_read_json: job with that GPU). Fills *prior; returns 0 or the exit
 * status of an error (printed, naming cmd and the file). */
struct kr_job;
int cli_search_prior(const char *cmd, const char *spec, const struct kr_job *job, struct kr_job *prior, int *use);

#endif
