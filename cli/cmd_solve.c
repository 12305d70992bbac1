/*
 * cmd_solve.c — `kareus solve`: the iteration time–energy frontier of a pipeline from
 * instruction options (Phillips–Dessouky, exact or lowtime-compatible), written as CSV, and
 * plan files for chosen steps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

/*
 * Reads the options for a pipeline of `stages` stages. A file with more stages is solved on its
 * first `stages` stages (the others are read, checked and dropped); fewer is an error naming
 * the file (exit 2).
 */
static int read_first_stages(const char *path, int stages, int virt, kr_options *out, kr_error *err)
{
    kr_options all;
    int rc = kr_options_read_csv(path, 0, virt, &all, err);
    if (rc)
        return rc;
    if (all.num_stages == stages) {
        *out = all;
        return KR_OK;
    }
    if (all.num_stages < stages) {
        int found = all.num_stages;
        kr_options_free(&all);
        return kr_error_set(err, KR_ERANGE, "%s: expected options for %d stages, found %d", path, stages, found);
    }
    rc = kr_options_init(out, stages, virt, err);
    for (int i = 0; i < all.nsets && rc == KR_OK; i++) {
        const kr_option_set *set = &all.sets[i];
        if (set->stage >= stages)
            continue;
        for (int k = 0; k < set->n && rc == KR_OK; k++) {
            const kr_option *o = &set->opt[k];
            rc = kr_options_add(out, set->stage, set->kind, set->chunk, o, o->ncomm ? &all.comm[o->comm_first] : NULL,
                                o->ncomm, err);
        }
    }
    kr_options_free(&all);
    if (rc)
        kr_options_free(out);
    return rc;
}

/* The summary: for the slowest, fastest and most frugal steps, the real iteration time of the
 * plan's clocks (its critical path) with the energy of that same plan, and the bound. */
static void print_summary(const kr_solve_result *f, const kr_solver_config *cfg, const char *frontier)
{
    printf("%s frontier: %d steps in %.3f s (setup %.3f s)%s%s\n", kr_cost_model_name(cfg->cost_model), f->nsteps - 1,
           f->solve_s, f->setup_s, frontier ? ", " : "", frontier ? frontier : "");
    int fast = 0, frugal = 0, ndom = 0;
    for (int k = 0; k < f->nsteps; k++) {
        const kr_solver_step *st = &f->steps[k];
        if (st->knob_time_s < f->steps[fast].knob_time_s ||
            (st->knob_time_s == f->steps[fast].knob_time_s && st->energy_j < f->steps[fast].energy_j))
            fast = k;
        if (st->energy_j < f->steps[frugal].energy_j)
            frugal = k;
        ndom += st->dominated;
    }
    const int pick[3] = {0, fast, frugal};
    const char *name[3] = {"slowest", "fastest", "frugal"};
    for (int i = 0; i < 3; i++) {
        const kr_solver_step *st = &f->steps[pick[i]];
        printf("  %-8s step %d: %.6f s, %.3f J", name[i], st->step, st->knob_time_s, st->energy_j);
        if (isfinite(st->bound_j))
            printf(", bound %.3f J (gap %.3f%%)", st->bound_j, 100 * st->gap);
        if (cfg->cost_model == KR_COST_LOWTIME)
            printf(" [quantized %.6f s]", st->time_s);
        printf("\n");
    }
    printf("  times are the real critical path of each plan's clocks, energies that plan's (whole cluster, %d GPU(s)\n"
           "  per stage); %d dominated step(s) (another is no slower and cheaper) flagged in the CSV\n",
           cfg->gpus_per_stage, ndom);
}

/* Deadline plans are refined by default up to this many instructions ((16,128) 1F1B: 4,096). */
#define REFINE_AUTO_MAX 4096

static const char usage_head[] =
    "usage: kareus solve --options FILE.csv (--stages S --microbatches M | --job FILE)\n"
    "                    [--frontier-out FILE.csv] [options]\n"
    "       kareus solve --frontiers DIR [--job FILE] [--variant NAME] [--frontier-out FILE.csv] [options]\n\n";

/* What the options set. */
typedef struct solve_args {
    const char *optpath, *jobpath, *frontier, *plans, *select, *schedule, *model, *fdir, *var, *exch, *polish;
    int stages, mbs, virt, gps, max_steps, bound_refine, threads, quiet, json, refine, no_refine;
    double unit, power, lag;
} solve_args;

static const cli_opt solve_opts[] = {
    CLI_OPT("options", 1,
        "  --options FILE       instruction options: stage,instruction,frequency,time,energy[,chunk][,KEY...];\n"
        "                       a file with more stages than the pipeline is solved on its first S stages\n",
        cli_set_str, solve_args, optpath),
    CLI_OPT("frontiers", 1,
        "  --frontiers DIR      compose the options from partition frontiers instead (as 'kareus compose';\n"
        "                       the job is the built-in default without --job)\n",
        cli_set_str, solve_args, fdir),
    CLI_OPT("variant", 1,
        "  --variant NAME       with --frontiers: kareus (default), sequential or default-overlap\n",
        cli_set_str, solve_args, var),
    CLI_OPT("job", 1,
        "  --job FILE           job spec or built-in name: stages, microbatches, schedule, GPUs per stage and\n"
        "                       static power come from it, and plans carry its identity\n",
        cli_set_str, solve_args, jobpath),
    CLI_OPT_RANGE("stages", 1,
        "  --stages S           pipeline stages (required without --job)\n",
        cli_set_int, solve_args, stages, 1, KR_MAX_STAGES),
    CLI_OPT_RANGE("microbatches", 1,
        "  --microbatches M     microbatches per iteration (required without --job)\n",
        cli_set_int, solve_args, mbs, 1, 1 << 16),
    CLI_OPT("schedule", 1,
        "  --schedule NAME      1f1b (default), gpipe or interleaved-1f1b\n",
        cli_set_str, solve_args, schedule),
    CLI_OPT_RANGE("virtual-stages", 1,
        "  --virtual-stages V   model chunks per stage (interleaved-1f1b)\n",
        cli_set_int, solve_args, virt, 1, 1024),
    CLI_OPT_RANGE("unit-time", 1,
        "  --unit-time SEC      time step of the solver (default 0.001)\n",
        cli_set_double, solve_args, unit, 1e-9, 1e3),
    CLI_OPT("cost-model", 1,
        "  --cost-model NAME    exact (default) or lowtime (ml-energy/lowtime 0.2.0, reproduced)\n",
        cli_set_str, solve_args, model),
    CLI_OPT_RANGE("static-power", 1,
        "  --static-power W     static power per GPU (default: the job's; without --job the built-in\n"
        "                       default job's)\n",
        cli_set_double, solve_args, power, 0, 1e5),
    CLI_OPT_RANGE("gpus-per-stage", 1,
        "  --gpus-per-stage G   GPUs per stage for whole-cluster energy (default: the job's, else 1)\n",
        cli_set_int, solve_args, gps, 1, 1 << 20),
    CLI_OPT_RANGE("p2p-lag", 1,
        "  --p2p-lag SEC        fixed time of each inter-stage transfer (exact model only; default 0)\n",
        cli_set_double, solve_args, lag, 0, 1e3),
    CLI_OPT_RANGE("max-steps", 1,
        "  --max-steps N        stop after N steps\n",
        cli_set_int, solve_args, max_steps, 1, 1 << 30),
    CLI_OPT_RANGE("bound-refine", 1,
        "  --bound-refine R     the lower bound's relaxation on unit/R (default: min(8, 2048 /\n"
        "                       instructions) up to 512 instructions, 1 above: the main run)\n",
        cli_set_int, solve_args, bound_refine, 1, 64),
    CLI_OPT_RANGE("threads", 1,
        "  --threads N          exact model: 2 records each step on a second thread while the next cuts\n"
        "                       are found, 1 one thread (default: 2 from 4,096 instructions when two\n"
        "                       CPUs are online); the frontier is the same\n",
        cli_set_int, solve_args, threads, 1, 2),
    CLI_OPT("exchange", 1,
        "  --exchange MODE      exact model: knob exchanges and window search after each step:\n"
        "                       off (default, as in optimize and compare), on, or auto (on up to\n"
        "                       256 instructions); on gives better plans, slower (and the polish)\n",
        cli_set_str, solve_args, exch),
    CLI_OPT("polish", 1,
        "  --polish MODE        exact model: after the steps, each step's plan against its neighbours'\n"
        "                       plans carried to its time, the cheaper kept: auto (default: where the\n"
        "                       exchange passes run), on (also without them: cheap) or off\n",
        cli_set_str, solve_args, polish),
    CLI_OPT("frontier-out", 1,
        "  --frontier-out FILE  the frontier, one row per step, with each step's lower bound and gap\n",
        cli_set_str, solve_args, frontier),
    CLI_OPT("plans", 1,
        "  --plans DIR          write plan_<step>.json (and Zeus freqs_pipeline_<step>.py) per selected step\n",
        cli_set_str, solve_args, plans),
    CLI_OPT("select", 1,
        "  --select LIST        fastest, frugal, all, artifact10, N, deadline=S, budget=J (comma-separated;\n"
        "                       default fastest,frugal)\n",
        cli_set_str, solve_args, select),
    CLI_OPT("refine", 0,
        "  --refine             improve the plan of every deadline=S of --select (local search and branch\n"
        "                       and bound on windows of ops; a better plan joins the frontier as a new\n"
        "                       step, with its bound and gap); the default with the exact cost model up\n"
        "                       to 4,096 instructions (about 0.02-3 s a deadline up to (8,64), 16 s at\n"
        "                       (16,128)): this forces it on larger pipelines and with lowtime\n",
        cli_set_flag, solve_args, refine),
    CLI_OPT("no-refine", 0,
        "  --no-refine          a deadline's plan is the cheapest frontier step meeting it, unrefined\n",
        cli_set_flag, solve_args, no_refine),
    CLI_OPT("quiet", 0,
        "  --quiet              no summary on stdout\n",
        cli_set_flag, solve_args, quiet),
    CLI_OPT("json", 0,
        "  --json               the summary as JSON (frontier, steps, slowest, fastest, plans written)\n",
        cli_set_flag, solve_args, json),
};
static const cli_optset solve_set = {"solve", usage_head, solve_opts, CLI_OPT_COUNT(solve_opts), NULL, "", 0};

/* --json: the summary as one object, with the plans written for the selected steps sel[0..nsel). */
static void print_json(const kr_solve_result *f, const kr_solver_config *cfg, const char *frontier, const char *plans,
                       const int *sel, int nsel)
{
    const kr_solver_step *a = &f->steps[0], *b = &f->steps[f->nsteps - 1];
    printf("{\"cost_model\": \"%s\", \"steps\": %d, \"solve_s\": %.6g, \"setup_s\": %.6g, \"frontier\": ",
           kr_cost_model_name(cfg->cost_model), f->nsteps - 1, f->solve_s, f->setup_s);
    cli_json_string(frontier);
    printf(",\n \"slowest\": {\"time_s\": %.17g, \"energy_j\": %.17g}, \"fastest\": {\"time_s\": %.17g, "
           "\"energy_j\": %.17g},\n \"gpus_per_stage\": %d, \"plans\": [",
           a->time_s, a->energy_j, b->time_s, b->energy_j, cfg->gpus_per_stage);
    for (int i = 0; i < nsel; i++) {
        char path[4200];
        kr_optimize_step_plan_path(path, sizeof path, plans, sel[i]);
        printf("%s{\"step\": %d, \"plan\": ", i ? ", " : "", sel[i]);
        cli_json_string(path);
        printf("}");
    }
    printf("]}\n");
}

/* --refine: kr_solve_refine for every deadline=S of the --select list, before the selection
 * (which then picks the refined step as the cheapest one meeting S). A malformed entry, or a
 * deadline no plan meets, is left for kr_solve_select to report. */
static int refine_deadlines(const kr_dag *dag, const kr_options *opts, const kr_solver_config *cfg,
                            kr_solve_result *f, const char *select, int quiet, kr_error *err)
{
    for (const char *p = strstr(select, "deadline="); p; p = strstr(p + 1, "deadline=")) {
        char *end;
        double t = strtod(p + 9, &end);
        if (end == p + 9 || !(t > 0) || (*end && *end != ','))
            continue;
        double before = INFINITY;
        for (int i = 0; i < f->nsteps; i++)
            if (f->steps[i].time_s <= t && f->steps[i].energy_j < before)
                before = f->steps[i].energy_j;
        if (!isfinite(before))
            continue; /* no plan meets it: kr_solve_select says so, with the fastest time */
        int step;
        int rc = kr_solve_refine(dag, opts, cfg, f, t, &step, err);
        if (rc)
            return rc;
        if (!quiet)
            printf("refined deadline %.6g s: step %d, %.6g J (best step before: %.6g J), bound gap %.3f %%\n", t, step,
                   f->steps[step].energy_j, before, 100.0 * f->steps[step].gap);
    }
    return KR_OK;
}

int cmd_solve(int argc, char **argv)
{
    if (cli_wants_help(argc, argv))
        return cli_opt_usage(stdout, &solve_set);
    solve_args a = {.model = "exact", .var = "kareus", .exch = "off", .polish = "auto", .unit = 0.001, .power = -1};
    int next, rc;
    if ((rc = cli_opt_parse(&solve_set, argc, argv, 1, &a, &next)))
        return rc;
    if (next < argc)
        return cli_usage_error("solve", "unexpected argument '%s'", argv[next]);
    const char *optpath = a.optpath, *jobpath = a.jobpath, *frontier = a.frontier, *plans = a.plans;
    const char *select = a.select, *schedule = a.schedule, *model = a.model, *fdir = a.fdir, *var = a.var;
    int stages = a.stages, mbs = a.mbs, virt = a.virt, quiet = a.quiet, json = a.json, refine = a.refine,
        no_refine = a.no_refine;
    int *sel = NULL, nsel = 0; /* the selected steps whose plans were written, for --json */
    if ((optpath == NULL) == (fdir == NULL))
        return cli_usage_error("solve", "expected exactly one of --options FILE.csv and --frontiers DIR");
    kr_variant variant;
    if (kr_variant_parse(var, &variant))
        return cli_usage_error("solve", "--variant: expected kareus, sequential or default-overlap, found '%s'", var);
    if (select && !plans)
        return cli_usage_error("solve", "--select needs --plans DIR");
    if (refine && no_refine)
        return cli_usage_error("solve", "--refine and --no-refine exclude each other");
    if (refine && (!select || !strstr(select, "deadline=")))
        return cli_usage_error("solve", "--refine needs --select with a deadline=S");
    kr_solver_config cfg;
    kr_solver_config_default(&cfg);
    if (kr_cost_model_parse(model, &cfg.cost_model))
        return cli_usage_error("solve", "--cost-model: expected exact or lowtime, found '%s'", model);
    if ((rc = cli_parse_auto_on_off("solve", "--exchange", a.exch, &cfg.exchange)) ||
        (rc = cli_parse_auto_on_off("solve", "--polish", a.polish, &cfg.polish)))
        return rc;
    kr_schedule sch = KR_SCHEDULE_1F1B;
    if (schedule && kr_schedule_parse(schedule, &sch))
        return cli_usage_error("solve", "--schedule: expected 1f1b, gpipe or interleaved-1f1b, found '%s'", schedule);
    kr_job job, *jp = NULL;
    if (jobpath || fdir) {
        if ((rc = cli_load_job(jobpath, &job)))
            return rc;
        jp = &job;
        if (stages && stages != job.pp)
            return cli_usage_error("solve", "--stages %d does not match the job's %d stages", stages, job.pp);
        if (mbs && mbs != job.num_microbatches)
            return cli_usage_error("solve", "--microbatches %d does not match the job's %d", mbs, job.num_microbatches);
        stages = job.pp;
        mbs = job.num_microbatches;
        if (!schedule)
            sch = job.schedule;
        if (!virt)
            virt = job.virtual_stages;
    }
    if (!stages || !mbs)
        return cli_usage_error("solve", "--stages and --microbatches are required without --job");
    /* Static power and GPUs per stage: the job's (without one, the built-in default job's GPU,
     * one GPU per stage), unless given. */
    kr_solver_config flow;
    kr_optimize_solver_config(jp, NULL, &flow);
    cfg.unit_time_s = a.unit;
    cfg.static_power_w = a.power < 0 ? flow.static_power_w : a.power;
    cfg.gpus_per_stage = a.gps ? a.gps : flow.gpus_per_stage;
    cfg.max_steps = a.max_steps;
    if (a.bound_refine > 0)
        cfg.bound_refine = a.bound_refine;
    cfg.threads = a.threads;
    if (!virt)
        virt = sch == KR_SCHEDULE_INTERLEAVED_1F1B ? 2 : 1;
    kr_error err = {0};
    kr_options opts;
    if (fdir) {
        if ((rc = cli_compose_options(&job, variant, fdir, &opts, NULL)))
            return rc;
    } else if ((rc = read_first_stages(optpath, stages, virt, &opts, &err))) {
        return cli_report(rc, &err);
    }
    double *lags = NULL;
    if (a.lag > 0) {
        lags = malloc(sizeof(double) * (size_t)stages);
        if (lags == NULL) {
            kr_options_free(&opts);
            return CLI_EXIT_FAIL;
        }
        for (int s = 0; s < stages; s++)
            lags[s] = a.lag;
    }
    kr_dag dag;
    memset(&dag, 0, sizeof dag);
    kr_solve_result f;
    memset(&f, 0, sizeof f);
    int status = 0;
    if ((rc = kr_dag_pipeline(sch, stages, mbs, virt, lags, &dag, &err))) {
        status = cli_report(rc, &err);
        goto done;
    }
    /* A deadline's plan is refined by default with the exact cost model up to REFINE_AUTO_MAX
     * instructions (the lowtime model's plans stay lowtime's); --refine forces it, --no-refine
     * keeps the frontier's step. */
    if (!refine && !no_refine && select && strstr(select, "deadline=") && cfg.cost_model == KR_COST_EXACT) {
        if (dag.n - 2 <= REFINE_AUTO_MAX)
            refine = 1;
        else if (!quiet)
            fprintf(stderr, "kareus solve: note: deadline plans not refined (%d instructions, above %d): --refine "
                            "refines them (minutes each: about 5 min a deadline at (32,256))\n",
                    dag.n - 2, REFINE_AUTO_MAX);
    }
    if ((rc = kr_solve(&dag, &opts, &cfg, &f, &err)) ||
        (refine && (rc = refine_deadlines(&dag, &opts, &cfg, &f, select, quiet || json, &err))) ||
        (frontier && (rc = kr_solve_result_write_csv(&f, frontier, &err)))) {
        status = cli_report(rc, &err);
        goto done;
    }
    if (plans) {
        int *steps = malloc(sizeof(int) * (size_t)f.nsteps);
        int n = steps ? kr_solve_select(&f, select ? select : "fastest,frugal", steps, f.nsteps, &err) : KR_ENOMEM;
        if (n < 0) {
            free(steps);
            status = cli_report(n, &err);
            goto done;
        }
        if ((rc = kr_optimize_write_step_plans(plans, &f, &dag, &opts, steps, n, jp, cfg.gpus_per_stage, &err)))
            status = cli_report(rc, &err);
        if (!quiet && !json && status == 0)
            printf("plans: %d written to %s\n", n, plans);
        sel = steps;
        nsel = n;
    }
    if (json && status == 0) {
        print_json(&f, &cfg, frontier, plans, sel, nsel);
    } else if (!quiet && status == 0) {
        print_summary(&f, &cfg, frontier);
    }
done:
    free(sel);
    kr_solve_result_free(&f);
    kr_dag_free(&dag);
    kr_options_free(&opts);
    free(lags);
    return status;
}
