/*
 * cli.c — shared helpers of the kareus command: error reporting, strict option parsing,
 * job loading, progress lines.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_report(int rc, const kr_error *err)
{
    const char *msg = err && err->msg[0] ? err->msg : kr_strerror(rc);
    fprintf(stderr, "kareus: %s\n", msg);
    return kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "kareus %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'kareus %s --help')\n", cmd);
    return CLI_EXIT_INPUT;
}

int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE)
        return cli_usage_error(cmd, "%s: expected an integer, found '%s'", opt, s);
    if (v < lo || v > hi)
        return cli_usage_error(cmd, "%s: expected an integer in [%ld, %ld], found %ld", opt, lo, hi, v);
    *out = v;
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out)
{
    long v = 0; /* -O3 cannot see that cli_parse_long sets it on success */
    int rc = cli_parse_long(cmd, opt, s, lo, hi, &v);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
        return cli_usage_error(cmd, "%s: expected a number, found '%s'", opt, s);
    if (v < lo || v > hi)
        return cli_usage_error(cmd, "%s: expected a number in [%g, %g], found %g", opt, lo, hi, v);
    *out = v;
    return 0;
}

int cli_load_job(const char *path, kr_job *job)
{
    if (path == NULL) {
        kr_job_default(job);
        return 0;
    }
    kr_error err = {0};
    int rc = kr_job_load(path, job, &err);
    if (rc)
        return cli_report(rc, &err);
    return 0;
}

void cli_progress(int quiet, const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    int tty = isatty(STDERR_FILENO);
    fputs(tty ? "\r\033[K" : "", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (!tty)
        fputc('\n', stderr);
    fflush(stderr);
}

void cli_progress_done(int quiet)
{
    if (!quiet && isatty(STDERR_FILENO))
        fputc('\n', stderr);
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    }
    return 0;
}

int cli_parse_auto_on_off(const char *cmd, const char *flag, const char *s, int *out)
{
    if (strcmp(s, "auto") == 0)
        *out = 0;
    else if (strcmp(s, "on") == 0)
        *out = 1;
    else if (strcmp(s, "off") == 0)
        *out = -1;
    else
        return cli_usage_error(cmd, "%s: expected auto, on or off, found '%s'", flag, s);
    return 0;
}

int cli_optimize_option(const char *cmd, int code, const char *arg, kr_optimize_config *o)
{
    long v = 0;
    int rc;
    switch (code) {
    case CLI_OPT_STRATEGY:
        if (kr_strategy_parse(arg, &o->strategy))
            return cli_usage_error(cmd, "--strategy: expected exhaustive, bo or artifact, found '%s'", arg);
        o->strategy_set = 1;
        return 0;
    case CLI_OPT_SEED:
        if ((rc = cli_parse_long(cmd, "--seed", arg, 0, 2147483647L, &v)))
            return rc;
        o->seed = (unsigned long long)v;
        return 0;
    case CLI_OPT_COST:
        if (kr_cost_model_parse(arg, &o->cost_model))
            return cli_usage_error(cmd, "--cost-model: expected exact or lowtime, found '%s'", arg);
        return 0;
    case CLI_OPT_UNIT: return cli_parse_double(cmd, "--unit-time", arg, 1e-6, 1.0, &o->unit_time_s);
    case CLI_OPT_EXCHANGE: return cli_parse_auto_on_off(cmd, "--exchange", arg, &o->exchange);
    default: return cli_usage_error(cmd, "unknown option");
    }
}

int cli_subcommand_usage(int argc, char **argv, const char *usage)
{
    if (argc >= 2 && !cli_wants_help(argc, argv))
        return -1;
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_EXIT_INPUT : 0;
}

int cli_print_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "kareus: %s: cannot read: %s\n", path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(f);
    return 0;
}

void cli_json_string(const char *s)
{
    if (s == NULL) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

int cli_print_format(int (*field)(int i, kr_field_info *out), int markdown)
{
    kr_field_info f;
    if (markdown)
        printf("| field | type | values | default | meaning |\n|---|---|---|---|---|\n");
    for (int i = 0; field(i, &f) == KR_OK; i++) {
        if (markdown)
            printf("| `%s` | %s | %s | %s | %s |\n", f.path, f.type, f.range, f.def, f.description);
        else
            printf("%-40s %-17s %s\n%40s %s; default: %s\n", f.path, f.type, f.description, "",
                   f.range[0] ? f.range : "any", f.def[0] ? f.def : "-");
    }
    return 0;
}
