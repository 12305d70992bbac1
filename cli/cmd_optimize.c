/*
 * cmd_optimize.c — `kareus optimize`: the whole flow on a job (the built-in default without
 * --job): search, compose, solve, simulate, compare the five methods, write the results, the
 * pictures and the report, and print a short table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus optimize [--job FILE] [--out DIR] [--methods LIST] [--strategy NAME] [--seed N]\n"
    "                       [--cost-model exact|lowtime] [--unit-time SEC] [--backend sim|replay|gpu]\n"
    "                       [--replay [KEY=]FILE]... [--log FILE] [--restrict LIST] [--no-pictures] [--json]\n"
    "                       [--quiet]\n\n"
    "Searches every partition, composes instruction options, solves the iteration time-energy\n"
    "frontier, simulates the chosen plans on the pipeline simulator and compares Megatron, Perseus,\n"
    "Nanobatching, Nanobatching+Perseus and Kareus on equal terms.\n\n";

/* What the options set. */
typedef struct optimize_args {
    kr_optimize_config o;
    const char *job, *out, *backend, *restrict_s;
    const char *replay[64];
    int nreplay, json, quiet;
} optimize_args;

static int set_methods(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    optimize_args *a = ctx;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    a->o.methods = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        kr_method m;
        if (kr_method_parse(tok, &m))
            return cli_usage_error(cmd,
                                   "--methods: expected megatron, perseus, nanobatch, nanobatch+perseus or kareus, "
                                   "found '%s'",
                                   tok);
        a->o.methods |= 1u << m;
    }
    return 0;
}

static int set_replay(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    optimize_args *a = ctx;
    if (a->nreplay == 64)
        return cli_usage_error(cmd, "--replay: at most 64 files");
    a->replay[a->nreplay++] = arg;
    return 0;
}

static const cli_opt optimize_opts[] = {
    CLI_OPT("job", 1,
        "  --job FILE         job spec or built-in name (default: the built-in default job)\n",
        cli_set_str, optimize_args, job),
    CLI_OPT("out", 1,
        "  --out DIR          output directory (default kareus-out): partitions/, options/, frontiers/,\n"
        "                     plans/, summary.json, pictures and report.html\n",
        cli_set_str, optimize_args, out),
    CLI_OPT_FN("methods", 1,
        "  --methods LIST     comma-separated: megatron, perseus, nanobatch, nanobatch+perseus, kareus\n"
        "                     (default all; Megatron and Perseus always run: the metrics refer to them)\n",
        set_methods),
    CLI_OPT("strategy", 1,
        "  --strategy NAME    exhaustive, bo or artifact (default: exhaustive on the simulator and on a\n"
        "                     replay, where it searches every recorded configuration; bo on a GPU)\n",
        cli_set_optimize, optimize_args, o),
    CLI_OPT("seed", 1,
        "  --seed N           search seed (default 1)\n",
        cli_set_optimize, optimize_args, o),
    CLI_OPT("cost-model", 1,
        "  --cost-model NAME  exact (default) or lowtime\n",
        cli_set_optimize, optimize_args, o),
    CLI_OPT("unit-time", 1,
        "  --unit-time SEC    solver time step (default 0.001)\n",
        cli_set_optimize, optimize_args, o),
    CLI_OPT("exchange", 1,
        "  --exchange MODE    solver's knob exchanges and window search: off (default), on, auto\n"
        "                     (on or auto up to 256 instructions: also the frontier's polish)\n",
        cli_set_optimize, optimize_args, o),
    CLI_OPT("backend", 1,
        "  --backend NAME     sim (default), replay (recorded measurements) or gpu (CUDA profiler)\n",
        cli_set_str, optimize_args, backend),
    CLI_OPT_FN("replay", 1,
        "  --replay [KEY=]FILE  a measurement log to replay (repeatable; implies --backend replay): ours,\n"
        "                     or the artifact's per-key eval_results.jsonl (KEY= or its directory names\n"
        "                     the key); every partition the methods need must be covered (the error\n"
        "                     lists what is missing)\n",
        set_replay),
    CLI_OPT("log", 1,
        "  --log FILE         measurement log (default DIR/measurements.jsonl; reruns resume from it)\n",
        cli_set_str, optimize_args, o.log_path),
    CLI_OPT("restrict", 1,
        "  --restrict LIST    fix knobs of Kareus's search (an ablation): only-tuned, only-nccl, fix-sms,\n"
        "                     fix-slot, uncoupled, comma-separated; Kareus's frontier is then its own (no N+P steps)\n",
        cli_set_str, optimize_args, restrict_s),
    CLI_OPT("no-pictures", 0,
        "  --no-pictures      no SVG pictures and no report.html\n",
        cli_set_clear, optimize_args, o.pictures),
    CLI_OPT("json", 0,
        "  --json             print the summary as JSON instead of the table\n",
        cli_set_flag, optimize_args, json),
    CLI_OPT("quiet", 0,
        "  --quiet            no progress on stderr\n",
        cli_set_flag, optimize_args, quiet),
};
static const cli_optset optimize_set = {"optimize", usage_head, optimize_opts, CLI_OPT_COUNT(optimize_opts),
                                        NULL, "h", 0};

static void on_progress(void *ud, const char *phase, const char *detail)
{
    cli_progress(*(int *)ud, "%-8s %s", phase, detail);
}

static void pct(char *buf, size_t cap, double v)
{
    if (isfinite(v))
        snprintf(buf, cap, "%+.1f%%", 100 * v);
    else
        snprintf(buf, cap, "--");
}

static void print_table(const kr_optimize_result *r, const char *out)
{
    char sum[256];
    kr_job_summary(&r->job, sum, sizeof sum);
    printf("kareus optimize: %s\n  %s\n  %s search, all figures simulated (whole cluster, per iteration)\n\n", r->job.name,
           sum, kr_strategy_name(r->strategy));
    printf("%-21s %6s %9s %9s %9s %9s %9s %9s %10s %10s\n", "method", "steps", "fastest", "energy", "frugal", "energy",
           "time vs", "energy vs", "iso-time", "iso-energy");
    printf("%-21s %6s %9s %9s %9s %9s %9s %9s %10s %10s\n", "", "", "(s)", "(kJ)", "(s)", "(kJ)", "Megatron",
           "Megatron", "energy", "time");
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &r->m[m];
        if (!mr->enabled)
            continue;
        const kr_metric_row *w = &r->rows[m];
        char a[16], b[16], c[16], d[16];
        pct(a, sizeof a, w->mt_time_red);
        pct(b, sizeof b, w->mt_energy_red);
        pct(c, sizeof c, w->iso_time_10pt);
        pct(d, sizeof d, w->iso_energy_10pt);
        const kr_opt_plan *f = &mr->plans[mr->fastest], *g = &mr->plans[mr->frugal];
        printf("%-21s %6d %9.4f %9.2f %9.4f %9.2f %9s %9s %10s %10s\n", kr_method_name((kr_method)m), mr->nsteps,
               f->sim_time_s, f->sim_energy_j / 1e3, g->sim_time_s, g->sim_energy_j / 1e3, a, b, c, d);
    }
    printf("\nReductions are savings (positive = better); iso-time/iso-energy against Perseus on the 10-point\n"
           "frontiers as the paper computes them; \"--\" = no plan qualifies. Solver vs simulation: at most\n"
           "%.2f%% apart in time, %.2f%% in energy. %.2f s in all.\n",
           100 * r->max_time_err, 100 * r->max_energy_err, r->wall_s);
    const kr_method_result *k = &r->m[KR_METHOD_KAREUS];
    if (k->enabled && k->from_np)
        printf("Kareus's frontier: %d steps, %d its own, %d Nanobatching+Perseus's (run as Kareus plans on NCCL).\n",
               k->nsteps, k->steps_own, k->nsteps - k->steps_own);
    if (out)
        printf("Results in %s/ (report.html, summary.json, plans/, frontiers/).\n", out);
}

int cmd_optimize(int argc, char **argv)
{
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &optimize_set);
    optimize_args a = {.out = "kareus-out"};
    kr_optimize_config_default(&a.o);
    int next, rc;
    if ((rc = cli_opt_parse(&optimize_set, argc, argv, 1, &a, &next)))
        return rc;
    if (next < argc)
        return cli_usage_error("optimize", "unexpected argument '%s'", argv[next]);
    kr_optimize_config o = a.o;
    const char *jobpath = a.job, *out = a.out, *backend = a.backend, **replay = a.replay;
    int nreplay = a.nreplay, json = a.json, quiet = a.quiet;
    if (backend == NULL)
        backend = nreplay ? "replay" : "sim";
    if (strcmp(backend, "sim") && strcmp(backend, "replay") && strcmp(backend, "gpu"))
        return cli_usage_error("optimize", "--backend: expected sim, replay or gpu, found '%s'", backend);
    if (strcmp(backend, "replay") == 0 && nreplay == 0)
        return cli_usage_error("optimize", "--backend replay: expected at least one --replay FILE, found none");
    if (strcmp(backend, "replay") != 0 && nreplay > 0)
        return cli_usage_error("optimize", "--replay needs --backend replay, found --backend %s", backend);
    kr_error err = {0};
    if (a.restrict_s && kr_search_restrict_parse(a.restrict_s, &o.restrict_space, &err))
        return cli_usage_error("optimize", "--restrict: %s", err.msg);
    kr_job job;
    if ((rc = cli_load_job(jobpath, &job)))
        return rc;
    kr_backend *b = NULL;
    rc = kr_backend_open(backend, &(kr_backend_open_config){.job = &job, .replay = replay, .nreplay = nreplay}, &b,
                         &err);
    if (rc)
        return cli_report(rc, &err);
    o.backend = b;
    o.out_dir = out;
    o.progress = on_progress;
    o.progress_ud = &quiet;
    kr_optimize_result r;
    rc = kr_optimize(&job, &o, &r, &err);
    cli_progress_done(quiet);
    kr_backend_destroy(b);
    if (rc)
        return cli_report(rc, &err);
    if (json) {
        char path[4200];
        snprintf(path, sizeof path, "%s/summary.json", out);
        rc = cli_print_file(path);
    } else {
        print_table(&r, out);
    }
    kr_optimize_result_free(&r);
    return rc;
}
