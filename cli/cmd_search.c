/*
 * cmd_search.c — `kareus search`: the time–energy frontier of one partition or of every
 * partition of a job, by exhaustive search, Bayesian optimisation or the published rule, on the
 * simulator or on recorded measurements; one frontier file per partition (JSON + CSV), every
 * measurement in a resumable log, a progress line on stderr and a summary on stdout.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus search [--job FILE] [--partition KEY|all] [--strategy exhaustive|bo|artifact]\n"
    "                     [--variant kareus|sequential|default-overlap] [--log FILE|none] [--seed N]\n"
    "                     [--out DIR] [--backend sim|replay|gpu] [--replay [KEY=]FILE]... [--max-evals N]\n"
    "                     [--stop X] [--budget N] [--restrict LIST] [--clock-step MHZ] [--prior none|sim|FILE]\n"
    "                     [--prior-features auto|on|off] [--json] [--quiet]\n\n";

/* What the options set. */
typedef struct search_args {
    const char *job, *part, *strat, *var, *logpath, *out, *backend, *prior_spec, *restrict_s;
    const char *replay[64];
    int nreplay, json, quiet, step, prior_sens, prior_calib;
    long seed, max_evals, budget;
    double stop;
} search_args;

static int set_replay(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    search_args *a = ctx;
    if (a->nreplay == 64)
        return cli_usage_error(cmd, "--replay: expected at most 64 recordings");
    a->replay[a->nreplay++] = arg;
    return 0;
}

static const cli_opt search_opts[] = {
    CLI_OPT("job", 1,
        "  --job FILE          job spec or built-in name (default: the built-in default job)\n",
        cli_set_str, search_args, job),
    CLI_OPT("partition", 1,
        "  --partition KEY     one partition key, or all (default): every layer partition of the\n"
        "                      variant plus the non-partition work (embedding, LM head, loss)\n",
        cli_set_str, search_args, part),
    CLI_OPT("strategy", 1,
        "  --strategy NAME     bo (default; exhaustive with --backend replay): Gaussian-process BO with\n"
        "                      a stopping rule; exhaustive: every configuration (on a replay: every\n"
        "                      recorded one, the frontier of the recorded points); artifact: the\n"
        "                      published rule\n",
        cli_set_str, search_args, strat),
    CLI_OPT("variant", 1,
        "  --variant NAME      kareus (default), sequential or default-overlap (clock only)\n",
        cli_set_str, search_args, var),
    CLI_OPT("log", 1,
        "  --log FILE          measurement log, JSONL, appended and fsync'd; a rerun resumes from it\n"
        "                      and never measures a configuration twice (default: DIR/measurements.jsonl;\n"
        "                      'none' keeps no log)\n",
        cli_set_str, search_args, logpath),
    CLI_OPT_RANGE("seed", 1,
        "  --seed N            seed of every random choice (default 1)\n",
        cli_set_long, search_args, seed, 0, 2147483647L),
    CLI_OPT("out", 1,
        "  --out DIR           where <key>.<variant>.json and .csv go (default: frontiers)\n",
        cli_set_str, search_args, out),
    CLI_OPT("backend", 1,
        "  --backend NAME      sim (default): the calibrated simulator; replay: recorded measurements;\n"
        "                      gpu: measured on this machine's GPU(s) (see `kareus profile --help`)\n",
        cli_set_str, search_args, backend),
    CLI_OPT_FN("replay", 1,
        "  --replay [KEY=]FILE a recording to replay (implies --backend replay; repeatable): our logs,\n"
        "                      or the artifact's eval_results.jsonl (KEY= names its partition when its\n"
        "                      directory does not); without it, replay reads --log\n",
        set_replay),
    CLI_OPT_RANGE("max-evals", 1,
        "  --max-evals N       cap on configurations evaluated per partition\n",
        cli_set_long, search_args, max_evals, 1, 100000000L),
    CLI_OPT_RANGE("stop", 1,
        "  --stop X            bo: stop when the expected remaining hypervolume gain is below X of\n"
        "                      the current hypervolume (default 0.02)\n",
        cli_set_double, search_args, stop, 1e-9, 1.0),
    CLI_OPT_RANGE("budget", 1,
        "  --budget N          exactly N evaluations per partition, for equal-count comparisons: artifact\n"
        "                      runs its published schedule (initial draw + batches) scaled to N; bo runs\n"
        "                      to N without its stopping rule (clock-only work still measures every clock;\n"
        "                      the baseline's own execution is added at every clock it left out, unless\n"
        "                      --restrict)\n",
        cli_set_long, search_args, budget, 1, 100000000L),
    CLI_OPT("restrict", 1,
        "  --restrict LIST     fix knobs of the kareus variant (an ablation; docs/search.md): only-tuned,\n"
        "                      only-nccl, fix-sms (NCCL's default CTAs), fix-slot (partition start),\n"
        "                      uncoupled (one comm configuration for all clocks, the fastest at the\n"
        "                      highest), comma-separated; the baseline's execution is then no extra candidate\n",
        cli_set_str, search_args, restrict_s),
    CLI_OPT_RANGE("clock-step", 1,
        "  --clock-step MHZ    planning clock step (down to the GPU's native step)\n",
        cli_set_int, search_args, step, 1, 10000),
    CLI_OPT("prior", 1,
        "  --prior SPEC        bo: the simulator's prediction as the surrogate's prior mean (docs/search.md):\n"
        "                      none, sim (the job's GPU) or FILE (a GPU entry, e.g. a calibrated one);\n"
        "                      default sim with --backend gpu, none with sim and replay\n",
        cli_set_str, search_args, prior_spec),
    CLI_OPT("prior-features", 1,
        "  --prior-features auto|on|off  with a simulator prior, also fit how each GPU constant with\n"
        "                      a stated uncertainty moves the predictions (its sensitivity features;\n"
        "                      --json reports them as prior_fit); off: the prior's line alone (default on)\n",
        cli_set_auto_on_off, search_args, prior_sens),
    CLI_OPT("prior-calibrate", 1,
        "  --prior-calibrate auto|on|off  with the features, also calibrate the prior's GPU constants to\n"
        "                      the measurements before each fit and model them against the calibrated\n"
        "                      simulator (--json: prior_calibrated); off: the features on the nominal\n"
        "                      prior (default on)\n",
        cli_set_auto_on_off, search_args, prior_calib),
    CLI_OPT("json", 0,
        "  --json              print a JSON summary on stdout instead of a table\n",
        cli_set_flag, search_args, json),
    CLI_OPT("quiet", 0,
        "  --quiet             no progress line\n",
        cli_set_flag, search_args, quiet),
};
static const cli_optset search_set = {"search", usage_head, search_opts, CLI_OPT_COUNT(search_opts), NULL, "", 0};

/* The evaluation count of opt from --max-evals, --stop, --budget and --restrict. Returns 0 or
 * the CLI's usage error. */
static int set_budget(const search_args *a, kr_search_config *opt)
{
    opt->max_evals = a->max_evals;
    opt->bo_stop = a->stop;
    kr_error err = {0};
    if (a->restrict_s && kr_search_restrict_parse(a->restrict_s, &opt->restrict_space, &err))
        return cli_usage_error("search", "--restrict: %s", err.msg);
    if (a->budget == 0)
        return 0;
    /* An equal-count run: N evaluations whatever the strategy's own rule would do. */
    if (opt->strategy == KR_STRATEGY_EXHAUSTIVE)
        return cli_usage_error("search", "--budget: expected --strategy bo or artifact (exhaustive evaluates "
                               "every configuration; --max-evals caps it)");
    if (a->max_evals || a->stop != 0)
        return cli_usage_error("search", "--budget N sets the evaluation count: expected no --max-evals or --stop "
                               "with it");
    opt->max_evals = a->budget;
    if (opt->strategy == KR_STRATEGY_ARTIFACT)
        opt->artifact_budget = a->budget;
    else
        opt->bo_stop = opt->bo_stop_abs = -1; /* neither the relative nor the absolute rule */
    return 0;
}

typedef struct progress_ctx {
    int quiet;
    int index, count; /* the partition being searched, of how many */
} progress_ctx;

static void on_progress(void *ud, const kr_search_progress *p)
{
    const progress_ctx *c = ud;
    cli_progress(c->quiet, "search %s (%d/%d): %ld/%ld evaluated (%.1f%%), %ld measured, batch %d%s", p->key,
                 c->index + 1, c->count, p->evaluated, p->space_size, 100.0 * (double)p->evaluated / (double)p->space_size,
                 p->measured, p->batch, p->done ? ", done" : "");
}

/* Prints s as a JSON string. */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* Fails with exit 2 unless dir exists (or can be made) and is writable. */
static int check_out_dir(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0777);
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return cli_usage_error("search", "--out %s: cannot create the directory: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_usage_error("search", "--out %s: expected a directory, found %s", dir,
                               stat(dir, &st) != 0 ? "nothing" : "a file");
    if (access(dir, W_OK | X_OK) != 0)
        return cli_usage_error("search", "--out %s: expected a writable directory: %s", dir, strerror(errno));
    return 0;
}

/* A double as JSON: %.6g, or null when not finite. */
static const char *num_or_null(double v, char *buf, size_t cap)
{
    if (isfinite(v))
        snprintf(buf, cap, "%.6g", v);
    else
        snprintf(buf, cap, "null");
    return buf;
}

int cli_search_prior(const char *cmd, const char *spec, const kr_job *job, kr_job *prior, int *use)
{
    *use = 0;
    if (strcmp(spec, "none") == 0)
        return 0;
    *prior = *job;
    *use = 1;
    if (strcmp(spec, "sim") == 0)
        return 0;
    kr_error err = {0};
    int rc = kr_gpu_read_json(spec, &prior->gpu, &err);
    if (rc) {
        fprintf(stderr, "kareus %s: --prior %s: expected none, sim or a GPU entry file: %s\n", cmd, spec, err.msg);
        return CLI_EXIT_INPUT;
    }
    return 0;
}

int cmd_search(int argc, char **argv)
{
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &search_set);
    search_args a = {.part = "all", .var = "kareus", .out = "frontiers", .seed = 1};
    int next, rc;
    if ((rc = cli_opt_parse(&search_set, argc, argv, 1, &a, &next)))
        return rc;
    if (next < argc)
        return cli_usage_error("search", "unexpected argument '%s'", argv[next]);
    const char *jobpath = a.job, *part = a.part, *strat = a.strat, *var = a.var, *logpath = a.logpath, *out = a.out,
               *backend = a.backend, *prior_spec = a.prior_spec;
    const char **replay = a.replay;
    int nreplay = a.nreplay, json = a.json, quiet = a.quiet, step = a.step;
    long seed = a.seed;
    kr_search_config opt;
    kr_search_config_default(&opt);
    kr_variant variant;
    if (kr_variant_parse(var, &variant))
        return cli_usage_error("search", "--variant: expected kareus, sequential or default-overlap, found '%s'", var);
    if (backend == NULL)
        backend = nreplay ? "replay" : "sim";
    if (strcmp(backend, "sim") != 0 && strcmp(backend, "replay") != 0 && strcmp(backend, "gpu") != 0)
        return cli_usage_error("search", "--backend: expected sim, replay or gpu, found '%s'", backend);
    if (strcmp(backend, "sim") == 0 && nreplay)
        return cli_usage_error("search", "--replay needs --backend replay, found --backend sim");
    /* A replay holds what was measured: by default search all of it (the frontier of the
     * recorded points) rather than ask for configurations it may not hold. */
    if (strat == NULL)
        strat = strcmp(backend, "replay") == 0 ? "exhaustive" : "bo";
    if (kr_strategy_parse(strat, &opt.strategy))
        return cli_usage_error("search", "--strategy: expected exhaustive, bo or artifact, found '%s'", strat);
    opt.seed = (unsigned long long)seed;
    if ((rc = set_budget(&a, &opt)))
        return rc;
    kr_job job;
    if ((rc = cli_load_job(jobpath, &job)))
        return rc;
    kr_error err = {0};
    if (step) {
        job.clock_step_mhz = step;
        if ((rc = kr_job_validate(&job, &err)))
            return cli_report(rc, &err);
    }
    kr_job prior_job;
    int use_prior = 0;
    if ((rc = cli_search_prior("search", prior_spec ? prior_spec : strcmp(backend, "gpu") == 0 ? "sim" : "none", &job,
                               &prior_job, &use_prior)))
        return rc;
    opt.prior = use_prior ? &prior_job : NULL;
    opt.prior_sens = a.prior_sens;
    opt.prior_calib = a.prior_calib;
    /* Which partitions. */
    kr_partition_set *all = malloc(sizeof *all), *sel = malloc(sizeof *sel);
    kr_search_log *log = NULL;
    kr_backend *b = NULL;
    kr_search_result *res = NULL;
    int nres = 0;
    if (all == NULL || sel == NULL) {
        rc = cli_report(KR_ENOMEM, NULL);
        goto done;
    }
    if ((rc = kr_search_partitions(&job, variant, 1, all, &err))) {
        rc = cli_report(rc, &err);
        goto done;
    }
    if (strcmp(part, "all") == 0) {
        *sel = *all;
    } else {
        const kr_partition *p = kr_partition_find(all, part);
        if (p == NULL) {
            char list[512] = "";
            size_t k = 0;
            for (int i = 0; i < all->n && k < sizeof list - 32; i++)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", all->p[i].key);
            rc = cli_usage_error("search", "--partition: expected all or a partition of job '%s' (%s variant): %s; "
                                 "found '%s'", job.name, var, list, part);
            goto done;
        }
        sel->n = 1;
        sel->p[0] = *p;
    }
    /* A wrong --log must leave every file as it was: check it before creating --out. */
    if (logpath && strcmp(logpath, "none") != 0 && (rc = kr_search_log_check(logpath, &job, &err))) {
        rc = cli_report(rc, &err);
        goto done;
    }
    if ((rc = check_out_dir(out)))
        goto done;
    char defaultlog[4200];
    if (logpath == NULL) {
        snprintf(defaultlog, sizeof defaultlog, "%s/measurements.jsonl", out);
        logpath = defaultlog;
    }
    int use_log = strcmp(logpath, "none") != 0;
    if (strcmp(backend, "replay") == 0 && nreplay == 0) {
        if (!use_log) {
            rc = cli_usage_error("search", "--backend replay: expected --replay FILE or a --log to replay, found neither");
            goto done;
        }
        replay[nreplay++] = logpath;
    }
    /* sim, replay (of the --replay files) or gpu (measured: see docs/profiler.md). */
    rc = kr_backend_open(backend, &(kr_backend_open_config){.job = &job, .replay = replay, .nreplay = nreplay}, &b,
                         &err);
    if (rc == KR_OK && use_log)
        rc = kr_search_log_open(logpath, &job, &log, &err);
    if (rc) {
        rc = cli_report(rc, &err);
        goto done;
    }
    /* Simulated and replayed measurements cost microseconds and can be redone: fsync the log
     * once per batch rather than once per line (a GPU's measurements cost seconds: every line). */
    if (kr_backend_caps(b) & (KR_BACKEND_SIMULATED | KR_BACKEND_RECORDED))
        kr_search_log_set_sync(log, KR_LOG_SYNC_BATCH);
    const char *warning = log ? kr_search_log_warning(log) : "";
    if (warning[0])
        fprintf(stderr, "kareus search: warning: %s\n", warning);
    progress_ctx pc = {quiet, 0, sel->n};
    opt.progress = on_progress;
    opt.progress_ud = &pc;
    double t0 = 0;
    res = calloc((size_t)sel->n, sizeof *res);
    if (res == NULL) {
        rc = cli_report(KR_ENOMEM, NULL);
        goto done;
    }
    for (int i = 0; i < sel->n; i++) {
        /* One partition at a time, each frontier written as soon as it is found. */
        pc.index = i;
        rc = kr_search_partition(&job, &sel->p[i], b, log, &opt, &res[i].front, &res[i].stats, &err);
        if (rc == KR_OK)
            rc = kr_search_write_frontier(out, &res[i].front, &err);
        if (rc) {
            kr_frontier_free(&res[i].front);
            cli_progress_done(quiet);
            rc = cli_report(rc, &err);
            goto done;
        }
        nres++;
        t0 += res[i].stats.wall_s;
        cli_progress(quiet, "search %s (%d/%d): %ld/%ld evaluated (%.1f%%), %s", sel->p[i].key, i + 1, sel->n,
                     res[i].stats.evaluated, res[i].stats.space_size,
                     100.0 * (double)res[i].stats.evaluated / (double)res[i].stats.space_size, res[i].stats.stop);
    }
    cli_progress_done(quiet);
    long tot_eval = 0, tot_meas = 0, tot_space = 0;
    for (int i = 0; i < nres; i++) {
        tot_eval += res[i].stats.evaluated;
        tot_meas += res[i].stats.measured;
        tot_space += res[i].stats.space_size;
    }
    char fp[17];
    kr_job_fingerprint(&job, fp);
    if (json) {
        printf("{\n  \"job\": ");
        json_str(job.name);
        printf(",\n  \"fingerprint\": \"%s\",\n  \"strategy\": \"%s\",\n  \"variant\": \"%s\",\n  \"seed\": %ld,\n"
               "  \"backend\": \"%s\",\n  \"log\": ",
               fp, kr_strategy_name(opt.strategy), kr_variant_name(variant), seed, kr_backend_name(b));
        if (use_log)
            json_str(logpath);
        else
            printf("null");
        printf(",\n  \"out\": ");
        json_str(out);
        printf(",\n  \"warnings\": [");
        if (warning[0])
            json_str(warning);
        printf("],\n  \"partitions\": [\n");
        for (int i = 0; i < nres; i++) {
            const kr_search_stats *s = &res[i].stats;
            const kr_partition_frontier *f = &res[i].front;
            char jn[128], cn[128], g1[40], g2[40];
            kr_frontier_file_name(f->key, f->variant, "json", jn, sizeof jn);
            kr_frontier_file_name(f->key, f->variant, "csv", cn, sizeof cn);
            printf("    {\"key\": \"%s\", \"variant\": \"%s\", \"space_size\": %ld, \"recorded\": %ld, \"measurements\": %ld, "
                   "\"measured_now\": %ld, \"from_log\": %ld, \"percent_of_space\": %.2f, \"batches\": %d, "
                   "\"stop\": \"%s\", \"prior\": %s, \"remaining_gain_eff\": %s, \"remaining_gain_total\": %s, "
                   "\"hypervolume_eff\": %.9g, \"hypervolume_total\": %.9g, \"reference\": {\"time_s\": %.9g, "
                   "\"eff_energy_j\": %.9g, \"energy_j\": %.9g, \"source\": \"%s\"}, "
                   "\"frontier_size_eff\": %ld, \"frontier_size_total\": %ld, \"wall_s\": %.6f, "
                   "\"json\": \"%s\", \"csv\": \"%s\"",
                   f->key, kr_variant_name(f->variant), s->space_size, s->recorded, s->evaluated, s->measured, s->from_log,
                   100.0 * (double)s->evaluated / (double)s->space_size, s->batches, s->stop,
                   s->prior ? "true" : "false", num_or_null(s->gain_eff, g1, sizeof g1),
                   num_or_null(s->gain_total, g2, sizeof g2), s->hv_eff, s->hv_total, s->ref_time_s,
                   s->ref_eff_energy_j, s->ref_energy_j, s->ref_from_sim ? "simulator" : "measured",
                   s->front_eff, s->front_total, s->wall_s, jn, cn);
            /* What the prior's sensitivity features say of each constant (relative changes). */
            if (s->prior_nsens > 0) {
                printf(", \"prior_fit\": {");
                for (int j = 0; j < s->prior_nsens; j++)
                    printf("%s\"%s\": {\"time\": %s, \"energy\": %s}", j ? ", " : "",
                           kr_gpu_param(s->prior_sens_param[j])->field, num_or_null(s->prior_sens_time[j], g1, sizeof g1),
                           num_or_null(s->prior_sens_energy[j], g2, sizeof g2));
                printf("}");
            }
            /* The calibrated relative change of each constant (one value from time and energy). */
            if (s->prior_calibrated) {
                printf(", \"prior_calibrated\": {");
                for (int j = 0; j < s->prior_nsens; j++)
                    printf("%s\"%s\": %s", j ? ", " : "", kr_gpu_param(s->prior_sens_param[j])->field,
                           num_or_null(s->prior_calib[j], g1, sizeof g1));
                printf("}");
            }
            printf("}%s\n", i + 1 < nres ? "," : "");
        }
        printf("  ],\n  \"total\": {\"measurements\": %ld, \"measured_now\": %ld, \"space_size\": %ld, "
               "\"percent_of_space\": %.2f, \"wall_s\": %.6f}\n}\n",
               tot_eval, tot_meas, tot_space, tot_space ? 100.0 * (double)tot_eval / (double)tot_space : 0.0, t0);
    } else {
        printf("%s search of %s (%s, %s backend, seed %ld) -> %s\n", kr_strategy_name(opt.strategy), job.name,
               kr_variant_name(variant), kr_backend_name(b), seed, out);
        printf("%-12s %7s %7s %7s %6s %9s %12s %12s %5s %5s  %s\n", "key", "space", "evals", "new", "%", "batches",
               "HV_eff", "HV_total", "F_eff", "F_tot", "stop");
        for (int i = 0; i < nres; i++) {
            const kr_search_stats *s = &res[i].stats;
            printf("%-12s %7ld %7ld %7ld %5.1f%% %9d %12.5g %12.5g %5ld %5ld  %s\n", res[i].front.key, s->space_size,
                   s->evaluated, s->measured, 100.0 * (double)s->evaluated / (double)s->space_size, s->batches, s->hv_eff,
                   s->hv_total, s->front_eff, s->front_total, s->stop);
        }
        printf("total: %ld of %ld configurations (%.1f%%), %ld measured now, %.3f s%s%s\n", tot_eval, tot_space,
               tot_space ? 100.0 * (double)tot_eval / (double)tot_space : 0.0, tot_meas, t0, use_log ? "; log " : "",
               use_log ? logpath : "");
    }
    rc = 0;
done:
    kr_search_results_free(res, nres);
    kr_search_log_close(log);
    kr_backend_destroy(b);
    free(all);
    free(sel);
    return rc;
}
