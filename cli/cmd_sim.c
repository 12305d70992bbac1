/*
 * cmd_sim.c — the simulator against measured partitions: `kareus sim check` predicts every row
 * of a calibration set and prints the errors per clock, the clock ratios and the rank agreement;
 * `kareus calibrate` fits the harness-identifiable constants to one fold of the set and writes
 * the calibrated GPU entry (then `sim check --gpu` validates it on the other fold).
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static int parse_fold(const char *cmd, const char *s, int *out)
{
    if (strcmp(s, "all") == 0)
        *out = KR_CALIB_ALL;
    else if (strcmp(s, "odd") == 0)
        *out = KR_CALIB_ODD;
    else if (strcmp(s, "even") == 0)
        *out = KR_CALIB_EVEN;
    else
        return cli_usage_error(cmd, "--fold: expected all, odd or even, found '%s'", s);
    return 0;
}

static const char check_head[] =
    "usage: kareus sim check --data CALIB.json [--gpu FILE] [--fold all|odd|even] [--rows OUT.csv] [--json]\n\n"
    "Predicts every measured row of a calibration set (a kareus.calib manifest: job, partition,\n"
    "CSV files in the Kareus artifact's energy_results.csv layout, the clock of each) and prints,\n"
    "per clock: median and 90th-percentile relative error of time, energy and average power,\n"
    "Spearman rank correlation of time over all rows, of the overlap windows and of the CTA\n"
    "counts; and the measured vs predicted ratios of time and energy to the first clock.\n"
    "With a comm-sweep log (kareus profile --comm-sweep) as --data: the simulator's comm kernels\n"
    "against every point of it (median and largest relative time error).\n";

/* What the options set. */
typedef struct check_args {
    const char *data, *gpu_file, *rows;
    int fold, json;
} check_args;

/* --fold of both commands. */
static int set_fold(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    return parse_fold(cmd, arg, (int *)(void *)((char *)ctx + o->off));
}

static const cli_opt check_opts[] = {
    CLI_OPT("data", 1,
        "  --data FILE   the manifest (e.g. tests/data/calibration/a100-attn-tp2/calib.json)\n",
        cli_set_str, check_args, data),
    CLI_OPT("gpu", 1,
        "  --gpu FILE    predict with this GPU entry (e.g. from kareus calibrate) instead of the job's\n",
        cli_set_str, check_args, gpu_file),
    CLI_OPT("fold", 1,
        "  --fold F      rows to use: all (default), odd or even CTA counts\n",
        set_fold, check_args, fold),
    CLI_OPT("rows", 1,
        "  --rows FILE   also write every row, measured and predicted, with where the time goes (CSV)\n",
        cli_set_str, check_args, rows),
    CLI_OPT("json", 0,
        "  --json        machine-readable output\n",
        cli_set_flag, check_args, json),
    CLI_OPT_HELP,
};
static const cli_optset check_set = {"sim check", check_head, check_opts, CLI_OPT_COUNT(check_opts),
                                     NULL, "", CLI_OPT_GETOPT_MSG};

static const char calib_head[] =
    "usage: kareus calibrate --data CALIB.json [--fold odd|even|all] [--fix NAME=VALUE]... [--out GPU.json]\n"
    "                        [--profile NAME=LO:HI:STEP] [--json]\n"
    "       kareus calibrate --data SWEEP.jsonl [--base GPU] [--out GPU.json] [--json]\n\n"
    "Fits the constants a measured partition pins down (loaded v_max, the floor power's\n"
    "clock-independent part, host dispatch per op, attention efficiency, the tuned comm kernel's\n"
    "per-CTA bandwidth, saturation and clock exponent, comm CTA power) to the rows of one fold\n"
    "by least squares on log time and log energy, starting from the job's GPU entry, and prints\n"
    "the fitted values with the check of both folds. Default fold: odd (validate on even).\n"
    "With a comm-sweep log (kareus profile --comm-sweep) it fits the comm kernels' clock law\n"
    "instead: comm_clock_exp by least squares on log time, with its RMS and the range the data\n"
    "allow, written into --base (docs/calibration.md).\n";

/* What the options set. */
typedef struct calib_args {
    const char *data, *out;
    int fold, json;
    const char *profile;         /* --profile NAME=LO:HI:STEP */
    const char *base;            /* --base NAME|FILE (comm-sweep logs) */
    int nfixed;
    int fixed[KR_GPU_NPARAMS];   /* --fix: KR_GPU_P_… held at fixed_v */
    double fixed_v[KR_GPU_NPARAMS];
} calib_args;

/* --fix NAME=VALUE: one of the fitted constants held at VALUE (repeatable). */
static int set_fix(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    calib_args *a = ctx;
    const char *eq = strchr(arg, '=');
    int nf;
    const int *fp = kr_sim_calib_fitted(&nf);
    char names[512] = "";
    size_t k = 0;
    for (int j = 0; j < nf && k < sizeof names; j++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", j ? ", " : "", kr_gpu_param(fp[j])->field);
    char *end = NULL;
    double v = eq ? strtod(eq + 1, &end) : NAN;
    if (eq == NULL || end == eq + 1 || *end != '\0' || !isfinite(v))
        return cli_usage_error(cmd, "--fix: expected NAME=VALUE with NAME one of %s, found '%s'", names, arg);
    for (int j = 0; j < nf; j++) {
        const char *f = kr_gpu_param(fp[j])->field;
        if (strlen(f) == (size_t)(eq - arg) && strncmp(f, arg, (size_t)(eq - arg)) == 0) {
            if (a->nfixed >= KR_GPU_NPARAMS)
                return cli_usage_error(cmd, "--fix: too many");
            a->fixed[a->nfixed] = fp[j];
            a->fixed_v[a->nfixed++] = v;
            return 0;
        }
    }
    return cli_usage_error(cmd, "--fix: expected NAME one of %s, found '%.*s'", names, (int)(eq - arg), arg);
}

static const cli_opt calib_opts[] = {
    CLI_OPT("data", 1,
        NULL,
        cli_set_str, calib_args, data),
    CLI_OPT("out", 1,
        "  --out FILE    write the calibrated GPU entry (kareus.gpu JSON, sources say how it was fit)\n",
        cli_set_str, calib_args, out),
    CLI_OPT("fold", 1,
        NULL,
        set_fold, calib_args, fold),
    CLI_OPT("json", 0,
        NULL,
        cli_set_flag, calib_args, json),
    CLI_OPT_FN("fix", 1,
        "  --fix NAME=VALUE  hold one fitted constant at VALUE (repeatable): a profile of the fit over\n"
        "                it (docs/calibration.md), or a constant pinned by another measurement\n",
        set_fix),
    CLI_OPT("profile", 1,
        "  --profile NAME=LO:HI:STEP  refit with NAME held at each value and print the RMS on the rows\n"
        "                of its stage and on all rows, with the range of NAME the data allow\n",
        cli_set_str, calib_args, profile),
    CLI_OPT("base", 1,
        "  --base GPU    with a comm-sweep log (kareus profile --comm-sweep): the entry (catalog name or\n"
        "                file) the fitted comm_clock_exp goes into (default: the log's GPU by name)\n",
        cli_set_str, calib_args, base),
    CLI_OPT_HELP,
};
static const cli_optset calib_set = {"calibrate", calib_head, calib_opts, CLI_OPT_COUNT(calib_opts),
                                     NULL, "", CLI_OPT_GETOPT_MSG};

static const char *fold_name(int f)
{
    return f == KR_CALIB_ODD ? "odd" : f == KR_CALIB_EVEN ? "even" : "all";
}

static json_t *report_json(const kr_sim_calib_report *r)
{
    json_t *a = json_array();
    for (int k = 0; k < r->nclocks; k++) {
        const kr_sim_calib_clock *g = &r->clocks[k];
        json_t *o = json_object();
        json_object_set_new(o, "clock_mhz", json_real(g->clock_mhz));
        json_object_set_new(o, "rows", json_integer(g->rows));
        json_object_set_new(o, "time_err_median", json_real(g->time_med));
        json_object_set_new(o, "time_err_p90", json_real(g->time_p90));
        json_object_set_new(o, "energy_err_median", json_real(g->energy_med));
        json_object_set_new(o, "energy_err_p90", json_real(g->energy_p90));
        json_object_set_new(o, "power_err_median", json_real(g->power_med));
        json_object_set_new(o, "power_err_p90", json_real(g->power_p90));
        json_object_set_new(o, "spearman_time", json_real(isfinite(g->spearman_time) ? g->spearman_time : 0));
        json_object_set_new(o, "spearman_windows", json_real(isfinite(g->spearman_windows) ? g->spearman_windows : 0));
        json_object_set_new(o, "spearman_ctas", json_real(isfinite(g->spearman_ctas) ? g->spearman_ctas : 0));
        json_object_set_new(o, "measured_power_w", json_real(g->meas_power_w));
        if (k > 0) {
            json_object_set_new(o, "pairs", json_integer(g->pairs));
            json_object_set_new(o, "time_ratio_measured", json_real(g->meas_time_ratio));
            json_object_set_new(o, "time_ratio_predicted", json_real(g->pred_time_ratio));
            json_object_set_new(o, "energy_ratio_measured", json_real(g->meas_energy_ratio));
            json_object_set_new(o, "energy_ratio_predicted", json_real(g->pred_energy_ratio));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static void report_print(const char *title, const kr_sim_calib_report *r)
{
    printf("%s\n", title);
    printf("  %-9s %5s  %-17s %-17s %-17s %-8s %-8s %-8s %s\n", "clock", "rows", "time err med/p90",
           "energy err med/p90", "power err med/p90", "rho(t)", "rho(win)", "rho(cta)", "power");
    for (int k = 0; k < r->nclocks; k++) {
        const kr_sim_calib_clock *g = &r->clocks[k];
        printf("  %4.0f MHz %6d  %6.1f%% %7.1f%%   %6.1f%% %7.1f%%   %6.1f%% %7.1f%%   %6.3f   %6.3f   %6.3f   %.0f W\n",
               g->clock_mhz, g->rows, 100 * g->time_med, 100 * g->time_p90, 100 * g->energy_med,
               100 * g->energy_p90, 100 * g->power_med, 100 * g->power_p90, g->spearman_time, g->spearman_windows,
               g->spearman_ctas, g->meas_power_w);
    }
    for (int k = 1; k < r->nclocks; k++) {
        const kr_sim_calib_clock *g = &r->clocks[k];
        printf("  %.0f / %.0f MHz over %d matched rows: time ratio measured %.3f predicted %.3f (%+.1f points), "
               "energy ratio measured %.3f predicted %.3f (%+.1f points)\n",
               g->clock_mhz, r->clocks[0].clock_mhz, g->pairs, g->meas_time_ratio, g->pred_time_ratio,
               100 * (g->pred_time_ratio - g->meas_time_ratio), g->meas_energy_ratio, g->pred_energy_ratio,
               100 * (g->pred_energy_ratio - g->meas_energy_ratio));
    }
}

static int sim_check(int argc, char **argv)
{
    check_args a = {.fold = KR_CALIB_ALL};
    int next, rc = cli_opt_parse(&check_set, argc, argv, 1, &a, &next);
    if (rc)
        return rc == CLI_OPT_STOP ? 0 : rc;
    const char *data = a.data, *gpu_file = a.gpu_file, *rows = a.rows;
    int fold = a.fold, json = a.json;
    if (data == NULL)
        return cli_usage_error("sim check", "--data: required (a kareus.calib manifest or a comm-sweep log)");
    if (kr_profiler_sweep_is_log(data)) {
        if (rows)
            return cli_usage_error("sim check", "--rows: not with a comm-sweep log");
        return cli_sim_check_sweep(data, gpu_file, json);
    }
    kr_error err = {0};
    kr_sim_calib *cs = calloc(1, sizeof *cs);
    kr_gpu *gpu = calloc(1, sizeof *gpu);
    if (cs == NULL || gpu == NULL) {
        free(cs);
        free(gpu);
        return CLI_EXIT_FAIL;
    }
    if ((rc = kr_sim_calib_read(data, cs, &err)) || (gpu_file && (rc = kr_gpu_read_json(gpu_file, gpu, &err)))) {
        free(gpu);
        free(cs);
        return cli_report(rc, &err);
    }
    kr_sim_calib_report rep;
    rc = kr_sim_calib_check(cs, gpu_file ? gpu : NULL, fold, &rep, &err);
    if (rc == KR_OK && rows)
        rc = kr_sim_calib_write_rows(cs, gpu_file ? gpu : NULL, rows, &err);
    if (rc == KR_OK) {
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "data", json_string(data));
            json_object_set_new(o, "gpu", json_string(gpu_file ? gpu->name : cs->job.gpu.name));
            json_object_set_new(o, "partition", json_string(cs->partition));
            json_object_set_new(o, "fold", json_string(fold_name(fold)));
            json_object_set_new(o, "clocks", report_json(&rep));
            char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
            puts(s);
            free(s);
            json_decref(o);
        } else {
            char title[600];
            snprintf(title, sizeof title, "%s: %s on %s, %d rows, fold %s", data, cs->partition,
                     gpu_file ? gpu->name : cs->job.gpu.name, cs->n, fold_name(fold));
            report_print(title, &rep);
        }
    }
    kr_sim_calib_free(cs);
    free(cs);
    free(gpu);
    return rc ? cli_report(rc, &err) : 0;
}

int cmd_sim(int argc, char **argv)
{
    static const char usage[] = "usage: kareus sim check --data CALIB.json [--gpu FILE] [--fold F] [--json]\n";
    if (argc < 2 || cli_wants_help(argc, argv)) {
        if (argc >= 3 && strcmp(argv[1], "check") == 0)
            cli_opt_usage(stdout, &check_set);
        else
            fputs(usage, stdout);
        return argc < 2 ? CLI_EXIT_INPUT : 0;
    }
    if (strcmp(argv[1], "check") == 0)
        return sim_check(argc - 1, argv + 1);
    return cli_usage_error("sim", "expected the subcommand check, found '%s'", argv[1]);
}

/* What a harness fit printed: the data, folds, RMS, the set, the fitted entry and the checks. */
typedef struct calib_fit_view {
    const char *data;
    int fold, other;
    double rms;
    const kr_sim_calib *cs;
    const kr_gpu *fit;
    const kr_sim_calib_report *before, *on_fit, *held;
} calib_fit_view;

static void fit_print_json(const calib_fit_view *v)
{
    int nf;
    const int *fp = kr_sim_calib_fitted(&nf);
    json_t *o = json_object(), *p = json_object();
    json_object_set_new(o, "data", json_string(v->data));
    json_object_set_new(o, "fold", json_string(fold_name(v->fold)));
    json_object_set_new(o, "rms_log_error", json_real(v->rms));
    for (int k = 0; k < nf; k++)
        json_object_set_new(p, kr_gpu_param(fp[k])->field, json_real(kr_gpu_param_value(v->fit, fp[k])));
    json_object_set_new(p, "v_exp", json_real(v->fit->v_exp));
    json_object_set_new(p, "attn_bwd_eff", json_real(v->fit->attn_bwd_eff));
    json_object_set_new(o, "fitted", p);
    json_object_set_new(o, "check_fit_fold", report_json(v->on_fit));
    json_object_set_new(o, "check_held_out", report_json(v->held));
    json_object_set_new(o, "check_held_out_before", report_json(v->before));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    puts(s);
    free(s);
    json_decref(o);
}

static void fit_print_text(const calib_fit_view *v, const calib_args *a)
{
    int nf;
    const int *fp = kr_sim_calib_fitted(&nf);
    const kr_sim_calib *cs = v->cs;
    printf("fit on fold %s of %s (%s, %d rows): RMS log error %.4f\n", fold_name(v->fold), v->data, cs->partition,
           cs->n, v->rms);
    for (int k = 0; k < nf; k++) {
        int fixed = 0;
        for (int j = 0; j < a->nfixed; j++)
            fixed |= a->fixed[j] == fp[k];
        printf("  %-16s %-12.6g (%s %.6g)\n", kr_gpu_param(fp[k])->field, kr_gpu_param_value(v->fit, fp[k]),
               fixed ? "held; the entry has" : "was", kr_gpu_param_value(&cs->job.gpu, fp[k]));
    }
    printf("  %-16s %-12.6g (follows from v_max)\n", "v_exp", v->fit->v_exp);
    printf("  %-16s %-12.6g (follows from attn_eff)\n", "attn_bwd_eff", v->fit->attn_bwd_eff);
    char title[300];
    snprintf(title, sizeof title, "held-out fold (%s) with the job's GPU entry:", fold_name(v->other));
    report_print(title, v->before);
    report_print("fit fold with the fitted constants:", v->on_fit);
    snprintf(title, sizeof title, "held-out fold (%s) with the fitted constants:", fold_name(v->other));
    report_print(title, v->held);
}

int cmd_calibrate(int argc, char **argv)
{
    calib_args a = {.fold = KR_CALIB_ODD};
    int next, rc = cli_opt_parse(&calib_set, argc, argv, 1, &a, &next);
    if (rc)
        return rc == CLI_OPT_STOP ? 0 : rc;
    const char *data = a.data, *out = a.out;
    int fold = a.fold, json = a.json;
    if (data == NULL)
        return cli_usage_error("calibrate", "--data: required (a kareus.calib manifest or a comm-sweep log)");
    if (out && out[0] == '\0')
        return cli_usage_error("calibrate", "--out: expected a file name, found an empty string");
    if (kr_profiler_sweep_is_log(data)) {
        if (a.nfixed || a.profile)
            return cli_usage_error("calibrate", "--%s: not with a comm-sweep log (it fits comm_clock_exp alone)",
                                   a.nfixed ? "fix" : "profile");
        return cli_calib_sweep(data, out, a.base, json);
    }
    if (a.base)
        return cli_usage_error("calibrate", "--base: expected a comm-sweep log as --data");
    kr_error err = {0};
    kr_sim_calib *cs = calloc(1, sizeof *cs);
    kr_gpu *fit = calloc(1, sizeof *fit);
    if (cs == NULL || fit == NULL) {
        free(cs);
        free(fit);
        return CLI_EXIT_FAIL;
    }
    if ((rc = kr_sim_calib_read(data, cs, &err))) {
        free(cs);
        free(fit);
        return cli_report(rc, &err);
    }
    double rms = 0;
    kr_sim_calib_report before, on_fit, held;
    int other = fold == KR_CALIB_ODD ? KR_CALIB_EVEN : fold == KR_CALIB_EVEN ? KR_CALIB_ODD : KR_CALIB_ALL;
    kr_gpu start = cs->job.gpu;
    for (int j = 0; j < a.nfixed; j++)
        kr_gpu_param_set(&start, a.fixed[j], a.fixed_v[j]);
    if (a.profile) {
        rc = cli_calib_profile(cs, &start, fold, a.fixed, a.nfixed, a.profile, json);
        kr_sim_calib_free(cs);
        free(cs);
        free(fit);
        return rc;
    }
    if ((rc = kr_sim_calib_check(cs, NULL, other, &before, &err)) ||
        (rc = kr_sim_calib_fit_fixed(cs, &start, fold, a.fixed, a.nfixed, fit, &rms, &err)) ||
        (rc = kr_sim_calib_check(cs, fit, fold, &on_fit, &err)) || (rc = kr_sim_calib_check(cs, fit, other, &held, &err)))
        goto done;
    int nf;
    const int *fp = kr_sim_calib_fitted(&nf);
    char src[KR_SOURCE_MAX];
    snprintf(src, sizeof src, "F: kareus calibrate on %s (%s partition, fold %s, %d rows), RMS log error %.4f", data,
             cs->partition, fold_name(fold), cs->n, rms);
    for (int k = 0; k < nf; k++)
        snprintf(fit->source[fp[k]], KR_SOURCE_MAX, "%s", src);
    snprintf(fit->source[KR_GPU_P_v_exp], KR_SOURCE_MAX, "D: V(f) through v_min, 0.744 V @1155 MHz and the fitted v_max");
    calib_fit_view v = {data, fold, other, rms, cs, fit, &before, &on_fit, &held};
    if (json)
        fit_print_json(&v);
    else
        fit_print_text(&v, &a);
    if (out)
        rc = kr_gpu_write_json(out, fit, &err);
done:
    kr_sim_calib_free(cs);
    free(cs);
    free(fit);
    return rc ? cli_report(rc, &err) : 0;
}
