/*
 * cmd_compare.c — `kareus compare`: the five methods on one job, or on the paper's ten
 * configurations (--suite paper), printed as the paper's two tables: max-throughput reductions
 * against Megatron, and iso-time energy / iso-energy time reductions against Perseus on the
 * 10-point frontiers (kareus-method.md §10.4).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus compare [--job FILE | --suite paper] [--out DIR] [--strategy NAME] [--seed N]\n"
    "                      [--cost-model exact|lowtime] [--unit-time SEC] [--ablation] [--no-pictures] [--json]\n"
    "                      [--quiet]\n\n"
    "Runs Megatron, Perseus, Nanobatching, Nanobatching+Perseus and Kareus through the same simulator,\n"
    "search, composition and solver, and prints the paper's tables.\n";

/* What the options set. */
typedef struct compare_args {
    kr_optimize_config o;
    const char *job, *suite, *out;
    int json, quiet, ablation;
} compare_args;

static const cli_opt compare_opts[] = {
    CLI_OPT("job", 1,
        "  --job FILE      one job (default: the built-in default job)\n",
        cli_set_str, compare_args, job),
    CLI_OPT("suite", 1,
        "  --suite paper   the paper's ten configurations (Llama 3.2 3B and Qwen3 1.7B, PP 2, 16 A100s)\n",
        cli_set_str, compare_args, suite),
    CLI_OPT("out", 1,
        "  --out DIR       where each job's results go (default kareus-compare; one directory per job)\n",
        cli_set_str, compare_args, out),
    CLI_OPT("strategy", 1,
        NULL,
        cli_set_optimize, compare_args, o),
    CLI_OPT("seed", 1,
        NULL,
        cli_set_optimize, compare_args, o),
    CLI_OPT("cost-model", 1,
        NULL,
        cli_set_optimize, compare_args, o),
    CLI_OPT("unit-time", 1,
        NULL,
        cli_set_optimize, compare_args, o),
    CLI_OPT("ablation", 0,
        "  --ablation      also Kareus with each mechanism off in turn (CTAs fixed at NCCL's default, slot\n"
        "                  fixed at the partition start, clock coupling off, NCCL only, tuned kernel only;\n"
        "                  kareus optimize --restrict) and the points each costs (docs/results.md)\n",
        cli_set_flag, compare_args, ablation),
    CLI_OPT("no-pictures", 0,
        "  --no-pictures   no SVG pictures and reports (faster)\n",
        cli_set_clear, compare_args, o.pictures),
    CLI_OPT("json", 0,
        "  --json          the figures as JSON\n",
        cli_set_flag, compare_args, json),
    CLI_OPT("quiet", 0,
        NULL,
        cli_set_flag, compare_args, quiet),
};
static const char usage_tail[] = "  other options as for 'kareus optimize'\n";
static const cli_optset compare_set = {"compare", usage_head, compare_opts, CLI_OPT_COUNT(compare_opts),
                                       usage_tail, "h", 0};

static void on_progress(void *ud, const char *phase, const char *detail)
{
    const char *job = ud;
    cli_progress(0, "%s: %-8s %s", job, phase, detail);
}

static void cell(char *buf, size_t cap, double v)
{
    if (isfinite(v))
        snprintf(buf, cap, "%.1f%%", 100 * v);
    else
        snprintf(buf, cap, "--");
}

static void print_tables(const kr_optimize_result *res, int n)
{
    static const kr_method mt[3] = {KR_METHOD_PERSEUS, KR_METHOD_NANOBATCH_PERSEUS, KR_METHOD_KAREUS};
    printf("Max-throughput plans: time and energy reduction against Megatron-LM (simulated)\n\n");
    printf("%-32s | %-17s | %-17s | %-17s\n", "configuration", "M+P  time  energy", "N+P  time  energy",
           "Kareus time energy");
    for (int i = 0; i < n; i++) {
        printf("%-32s |", res[i].job.name);
        for (int k = 0; k < 3; k++) {
            char a[16], b[16];
            cell(a, sizeof a, res[i].rows[mt[k]].mt_time_red);
            cell(b, sizeof b, res[i].rows[mt[k]].mt_energy_red);
            printf(" %8s %7s |", a, b);
        }
        printf("\n");
    }
    printf("\nFrontiers: iso-time energy reduction and iso-energy time reduction against Perseus\n"
           "(10-point frontiers chosen by the artifact's rule, simulated; '--' = no plan qualifies)\n\n");
    printf("%-32s | %-21s | %-21s\n", "configuration", "N+P  iso-time iso-en.", "Kareus iso-time iso-en.");
    double best_t = -INFINITY, best_e = -INFINITY;
    for (int i = 0; i < n; i++) {
        printf("%-32s |", res[i].job.name);
        for (int k = 1; k < 3; k++) {
            char a[16], b[16];
            cell(a, sizeof a, res[i].rows[mt[k]].iso_time_10pt);
            cell(b, sizeof b, res[i].rows[mt[k]].iso_energy_10pt);
            printf(" %10s %9s |", a, b);
        }
        printf("\n");
        const kr_metric_row *kr = &res[i].rows[KR_METHOD_KAREUS];
        if (isfinite(kr->iso_time_10pt) && kr->iso_time_10pt > best_t)
            best_t = kr->iso_time_10pt;
        if (isfinite(kr->iso_energy_10pt) && kr->iso_energy_10pt > best_e)
            best_e = kr->iso_energy_10pt;
    }
    if (n > 1)
        printf("\nKareus: up to %.1f%% energy at iso-time and up to %.1f%% time at iso-energy here "
               "(the paper: up to 28.3%% and 27.5%% on real A100s).\n",
               100 * best_t, 100 * best_e);
}

/* The ablation (--ablation): Kareus with one mechanism off in turn (kr_search_config's
 * restrict_space), Kareus's own frontier each time. */
#define NABL 5
static const struct {
    unsigned flags;
    const char *name, *head;
} abl[NABL] = {
    {KR_SEARCH_FIX_SMS, "fix-sms", "CTAs fix"},     {KR_SEARCH_FIX_SLOT, "fix-slot", "slot fix"},
    {KR_SEARCH_UNCOUPLED, "uncoupled", "uncoupl."}, {KR_SEARCH_ONLY_NCCL, "only-nccl", "NCCL only"},
    {KR_SEARCH_ONLY_TUNED, "only-tuned", "tuned only"},
};

/* Iso-time energy and iso-energy time reductions against Perseus of Kareus on one job with one
 * mechanism off: row k of v (v[k][0], v[k][1]; NaN where no plan qualifies). */
static int run_ablation(const kr_job *job, const kr_optimize_config *base, int quiet, double v[NABL][2])
{
    for (int k = 0; k < NABL; k++) {
        kr_optimize_config o = *base;
        o.methods = (1u << KR_METHOD_MEGATRON) | (1u << KR_METHOD_PERSEUS) | (1u << KR_METHOD_KAREUS);
        o.restrict_space = abl[k].flags;
        o.out_dir = NULL;
        o.log_path = NULL;
        o.pictures = 0;
        o.progress = quiet ? NULL : on_progress;
        char label[160];
        snprintf(label, sizeof label, "%s %s", job->name, abl[k].name);
        o.progress_ud = label;
        kr_optimize_result r;
        kr_error err = {0};
        int rc = kr_optimize(job, &o, &r, &err);
        if (rc) {
            cli_progress_done(quiet);
            return cli_report(rc, &err);
        }
        v[k][0] = r.rows[KR_METHOD_KAREUS].iso_time_full;
        v[k][1] = r.rows[KR_METHOD_KAREUS].iso_energy_full;
        kr_optimize_result_free(&r);
    }
    return 0;
}

/* One table of the ablation: column c (0: iso-time energy, 1: iso-energy time), the points each
 * mechanism's removal costs Kareus, and their mean over the jobs. */
static void print_ablation_table(const kr_optimize_result *res, double (*v)[NABL][2], int n, int c)
{
    printf("\nAblation, %s reduction against Perseus: N+P, Kareus, then Kareus with one mechanism off\n"
           "(whole frontiers, not the 10 points: the sampling alone moves a 10-point figure by up to a point;\n"
           "Kareus's own steps; in parentheses the points the mechanism is worth)\n\n",
           c ? "iso-energy time" : "iso-time energy");
    printf("%-32s | %6s %6s |", "configuration", "N+P", "Kareus");
    for (int k = 0; k < NABL; k++)
        printf(" %-14s|", abl[k].head);
    printf("\n");
    double sum[NABL] = {0};
    int cnt[NABL] = {0};
    for (int i = 0; i < n; i++) {
        const kr_metric_row *np = &res[i].rows[KR_METHOD_NANOBATCH_PERSEUS], *kr = &res[i].rows[KR_METHOD_KAREUS];
        double full = c ? kr->iso_energy_full : kr->iso_time_full;
        char a[16], b[16];
        cell(a, sizeof a, c ? np->iso_energy_full : np->iso_time_full);
        cell(b, sizeof b, full);
        printf("%-32s | %6s %6s |", res[i].job.name, a, b);
        for (int k = 0; k < NABL; k++) {
            double x = v[i][k][c];
            cell(a, sizeof a, x);
            if (isfinite(x) && isfinite(full)) {
                printf(" %6s (%+5.1f)|", a, 100 * (full - x));
                sum[k] += full - x;
                cnt[k]++;
            } else {
                printf(" %6s        |", a);
            }
        }
        printf("\n");
    }
    printf("%-32s | %13s |", "mean, points worth", "");
    for (int k = 0; k < NABL; k++)
        if (cnt[k])
            printf("        %+5.1f |", 100 * sum[k] / cnt[k]);
        else
            printf("           -- |");
    printf("\n");
}

static void print_json(const kr_optimize_result *res, double (*av)[NABL][2], int n)
{
    printf("[\n");
    for (int i = 0; i < n; i++) {
        printf("  {\"job\": \"%s\", \"methods\": {", res[i].job.name);
        int first = 1;
        for (int m = 0; m < KR_NUM_METHODS; m++) {
            const kr_metric_row *w = &res[i].rows[m];
            if (!res[i].m[m].enabled)
                continue;
            double v[8] = {w->mt_time_red,   w->mt_energy_red,   w->iso_time_10pt, w->iso_energy_10pt,
                           w->iso_time_full, w->iso_energy_full, w->robust_mean,   w->robust_max};
            static const char *const names[8] = {"max_throughput_time_reduction", "max_throughput_energy_reduction",
                                                 "iso_time_energy_reduction_10pt", "iso_energy_time_reduction_10pt",
                                                 "iso_time_energy_reduction_full", "iso_energy_time_reduction_full",
                                                 "robust_mean", "robust_max"};
            printf("%s\n    \"%s\": {", first ? "" : ",", kr_method_name((kr_method)m));
            for (int k = 0; k < 8; k++) {
                if (isfinite(v[k]))
                    printf("%s\"%s\": %.6f", k ? ", " : "", names[k], v[k]);
                else
                    printf("%s\"%s\": null", k ? ", " : "", names[k]);
            }
            printf("}");
            first = 0;
        }
        printf("\n  }");
        if (av) {
            printf(", \"ablation\": {");
            for (int k = 0; k < NABL; k++) {
                printf("%s\"%s\": {", k ? ", " : "", abl[k].name);
                for (int c = 0; c < 2; c++) {
                    const char *nm = c ? "iso_energy_time_reduction_full" : "iso_time_energy_reduction_full";
                    if (isfinite(av[i][k][c]))
                        printf("%s\"%s\": %.6f", c ? ", " : "", nm, av[i][k][c]);
                    else
                        printf("%s\"%s\": null", c ? ", " : "", nm);
                }
                printf("}");
            }
            printf("}");
        }
        printf(", \"wall_s\": %.3f}%s\n", res[i].wall_s, i + 1 < n ? "," : "");
    }
    printf("]\n");
}

int cmd_compare(int argc, char **argv)
{
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &compare_set);
    compare_args a = {.out = "kareus-compare"};
    kr_optimize_config_default(&a.o);
    int next, rc;
    if ((rc = cli_opt_parse(&compare_set, argc, argv, 1, &a, &next)))
        return rc;
    if (next < argc)
        return cli_usage_error("compare", "unexpected argument '%s'", argv[next]);
    kr_optimize_config o = a.o;
    const char *jobpath = a.job, *suite = a.suite, *out = a.out;
    int json = a.json, quiet = a.quiet;
    double(*ablv)[NABL][2] = NULL;
    if (suite && strcmp(suite, "paper") != 0)
        return cli_usage_error("compare", "--suite: expected paper, found '%s'", suite);
    if (suite && jobpath)
        return cli_usage_error("compare", "--suite and --job exclude each other");
    const char *const *names = NULL;
    int n = suite ? kr_job_suite_paper(&names) : 1;
    kr_optimize_result *res = calloc((size_t)n, sizeof *res);
    if (a.ablation)
        ablv = calloc((size_t)n, sizeof *ablv);
    if (res == NULL || (a.ablation && ablv == NULL)) {
        free(res);
        return cli_report(KR_ENOMEM, NULL);
    }
    int done = 0;
    rc = 0;
    for (int i = 0; i < n; i++) {
        kr_job job;
        kr_error err = {0};
        if (suite)
            rc = kr_job_builtin(names[i], &job, &err) ? cli_report(KR_ENOTFOUND, &err) : 0;
        else
            rc = cli_load_job(jobpath, &job);
        if (rc)
            break;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", out, job.name);
        o.out_dir = dir;
        o.progress = quiet ? NULL : on_progress;
        o.progress_ud = job.name;
        int krc = kr_optimize(&job, &o, &res[i], &err);
        if (krc) {
            cli_progress_done(quiet);
            rc = cli_report(krc, &err);
            break;
        }
        done++;
        if (ablv && (rc = run_ablation(&job, &o, quiet, ablv[i])))
            break;
    }
    cli_progress_done(quiet);
    if (done == n && rc == 0) {
        if (json) {
            print_json(res, ablv, done);
        } else {
            print_tables(res, done);
            for (int c = 0; ablv && c < 2; c++)
                print_ablation_table(res, ablv, done, c);
        }
        if (!json)
            printf("\nPer-job results, plans and reports in %s/<job>/.\n", out);
    }
    for (int i = 0; i < done; i++)
        kr_optimize_result_free(&res[i]);
    free(res);
    free(ablv);
    return rc;
}
