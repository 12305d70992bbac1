/*
 * cmd_sweep.c — `kareus partition sweep`: the coupling between the clock and the overlap made
 * visible. For every layer partition of a job and every planning clock, the simulator runs the
 * whole (comm kernel × comm SMs × launch slot) grid of Kareus's space and prints the best configuration on
 * each plane — the fastest, the one of least effective energy (energy − static power × time)
 * and the one of least total energy — next to the Nanobatching baseline (NCCL, its default
 * CTAs, launched at the partition start); and, at the chosen clocks, what overlap costs each
 * stream for the baseline and for the fastest configuration (kr_sim_overlap_effects).
 * docs/results.md explains, mechanism by mechanism, why the best configuration moves (or not).
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char sweep_head[] =
    "usage: kareus partition sweep [--job FILE] [--partition KEY|all] [--effects-at MHZ[,MHZ...]]\n"
    "                              [--json]\n\n"
    "For each layer partition and each planning clock: the fastest configuration of Kareus's space,\n"
    "the one of least effective energy and the one of least total energy (kernel, CTAs and launch\n"
    "slot), and the\n"
    "Nanobatching baseline (NCCL at its default CTAs, launched at the partition start); at the\n"
    "--effects-at clocks, how much overlap slows each stream for the baseline and for the fastest\n"
    "configuration. All on the simulator, one GPU, one execution.\n";

typedef struct sweep_args {
    const char *jobpath, *key, *effects;
    int json;
} sweep_args;

static const cli_opt sweep_opts[] = {
    CLI_OPT("job", 1, "  --job FILE       job spec (JSON file or built-in name; default: the default job)\n", cli_set_str,
            sweep_args, jobpath),
    CLI_OPT("partition", 1, "  --partition KEY  one layer partition, or all (default)\n", cli_set_str, sweep_args, key),
    CLI_OPT("effects-at", 1,
            "  --effects-at L   clocks (MHz, comma-separated) at which to print the overlap's cost to each\n"
            "                   stream (default: the highest planning clock and 1020 MHz if planned)\n",
            cli_set_str, sweep_args, effects),
    CLI_OPT("json", 0, "  --json           machine-readable output\n", cli_set_flag, sweep_args, json),
    CLI_OPT_HELP,
};
static const cli_optset sweep_set = {"partition sweep", sweep_head, sweep_opts, CLI_OPT_COUNT(sweep_opts), NULL, "h",
                                     0};

/* One evaluated configuration. */
typedef struct point {
    int kernel, sms, slot;
    double t, e; /* time, total energy */
} point;

/* The best configurations of one clock and the baseline's point there. */
typedef struct clock_row {
    int mhz;
    point fast, min_eff, min_tot, base;
} clock_row;

/* Sweeps p's grid (kareus variant) at clock mhz; base is the baseline partition. */
static int sweep_clock(const kr_job *job, const kr_partition *p, const kr_partition *base, const kr_search_space *sp,
                       int mhz, clock_row *row, kr_error *err)
{
    double P = job->static_power_w;
    row->mhz = mhz;
    row->fast.t = row->min_eff.t = row->min_tot.t = INFINITY;
    for (int ki = 0; ki < sp->nkernels; ki++)
        for (int si = 0; si < sp->nslots; si++)
            for (int mi = 0; mi < sp->nsms; mi++) {
            kr_config c = {mhz, sp->sms[mi], sp->slots[si], sp->kernels[ki]};
            kr_sim_result r;
            int rc = kr_sim_partition(job, p, &c, &r, err);
            if (rc)
                return rc;
            point q = {c.kernel, c.sms, c.slot, r.time_s, r.energy_j};
            if (q.t < row->fast.t || (q.t == row->fast.t && q.e < row->fast.e))
                row->fast = q;
            if (!isfinite(row->min_eff.t) || q.e - P * q.t < row->min_eff.e - P * row->min_eff.t)
                row->min_eff = q;
            if (!isfinite(row->min_tot.t) || q.e < row->min_tot.e)
                row->min_tot = q;
        }
    kr_config c = {mhz, base->fixed_sms, base->fixed_slot, KR_KERNEL_NCCL};
    kr_sim_result r;
    int rc = kr_sim_partition(job, base, &c, &r, err);
    row->base = (point){KR_KERNEL_NCCL, c.sms, c.slot, r.time_s, r.energy_j};
    return rc;
}

static json_t *point_json(const kr_partition *p, const point *q, double P)
{
    json_t *o = json_object();
    json_object_set_new(o, "kernel", json_string(kr_comm_kernel_name(q->kernel)));
    json_object_set_new(o, "sms", json_integer(q->sms));
    json_object_set_new(o, "slot", json_string(kr_partition_slot_name(p, q->slot)));
    json_object_set_new(o, "time_s", json_real(q->t));
    json_object_set_new(o, "energy_j", json_real(q->e));
    json_object_set_new(o, "effective_energy_j", json_real(q->e - P * q->t));
    return o;
}

static json_t *effects_json(const kr_sim_overlap *o)
{
    json_t *j = json_object();
    json_object_set_new(j, "compute_alone_s", json_real(o->compute_alone_s));
    json_object_set_new(j, "compute_s", json_real(o->compute_s));
    json_object_set_new(j, "comm_alone_s", json_real(o->comm_alone_s));
    json_object_set_new(j, "comm_s", json_real(o->comm_s));
    json_object_set_new(j, "overlap_s", json_real(o->overlap_s));
    json_object_set_new(j, "compute_slowdown", json_real(o->compute_slowdown));
    json_object_set_new(j, "comm_slowdown", json_real(o->comm_slowdown));
    json_object_set_new(j, "hidden", json_real(o->hidden));
    return j;
}

/* The clocks of --effects-at (or the defaults) that are planning clocks. */
static int effect_clocks(const char *s, const int *clk, int nclk, int *out, int cap)
{
    int n = 0;
    if (s == NULL) {
        out[n++] = clk[0];
        for (int i = 0; i < nclk; i++)
            if (clk[i] == 1020 && clk[0] != 1020)
                out[n++] = 1020;
        return n;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < cap; tok = strtok(NULL, ",")) {
        int v;
        if (cli_parse_int("partition sweep", "--effects-at", tok, 1, 100000, &v))
            return -1;
        int ok = 0;
        for (int i = 0; i < nclk; i++)
            ok |= clk[i] == v;
        if (!ok) {
            cli_usage_error("partition sweep", "--effects-at: expected planning clocks (%d..%d MHz), found %d",
                            clk[nclk - 1], clk[0], v);
            return -1;
        }
        out[n++] = v;
    }
    return n;
}

static void print_point(const kr_partition *p, const point *q, double P)
{
    printf(" %-5s %3d %-12s %7.4f %7.4f |", kr_comm_kernel_name(q->kernel), q->sms, kr_partition_slot_name(p, q->slot),
           1e3 * q->t, q->e - P * q->t);
}

/* One partition: the clock table and the effects; appended to arr (JSON) or printed. */
static int sweep_partition(const kr_job *job, const kr_partition *p, const kr_partition *base, const int *eff, int neff,
                           json_t *arr, kr_error *err)
{
    kr_search_space sp;
    int rc = kr_search_space_init(job, p, &sp, err);
    if (rc)
        return rc;
    double P = job->static_power_w;
    json_t *jp = arr ? json_object() : NULL, *jrows = arr ? json_array() : NULL;
    if (!arr) {
        printf("%s: %s of %.2f MB over %s/%d; grid %d kernel(s) x %d CTA counts x %d slots\n", p->key,
               kr_coll_kind_name(p->coll.kind), p->coll.bytes / 1e6, p->coll.group, p->coll.group_size, sp.nkernels,
               sp.nsms, sp.nslots);
        printf("  clock | fastest: kernel CTAs slot t(ms) Eeff(J)   | least Eeff: kernel CTAs slot t Eeff      | "
               "least E: kernel CTAs slot t Eeff         | NCCL %d at %s: t(ms) Eeff(J)\n",
               base->fixed_sms, kr_partition_slot_name(base, base->fixed_slot));
    }
    for (int k = 0; k < sp.nclocks && rc == KR_OK; k++) {
        clock_row row;
        if ((rc = sweep_clock(job, p, base, &sp, sp.clocks[k], &row, err)))
            break;
        if (arr) {
            json_t *r = json_object();
            json_object_set_new(r, "freq_mhz", json_integer(row.mhz));
            json_object_set_new(r, "fastest", point_json(p, &row.fast, P));
            json_object_set_new(r, "least_effective_energy", point_json(p, &row.min_eff, P));
            json_object_set_new(r, "least_energy", point_json(p, &row.min_tot, P));
            json_object_set_new(r, "nccl_default", point_json(base, &row.base, P));
            json_array_append_new(jrows, r);
        } else {
            printf("  %5d |", row.mhz);
            print_point(p, &row.fast, P);
            print_point(p, &row.min_eff, P);
            print_point(p, &row.min_tot, P);
            printf(" %7.4f %7.4f\n", 1e3 * row.base.t, row.base.e - P * row.base.t);
        }
        for (int j = 0; j < neff && rc == KR_OK; j++) {
            if (eff[j] != row.mhz)
                continue;
            kr_sim_overlap on, ot;
            kr_config cb = {row.mhz, base->fixed_sms, base->fixed_slot, KR_KERNEL_NCCL},
                      ct = {row.mhz, row.fast.sms, row.fast.slot, row.fast.kernel};
            if ((rc = kr_sim_overlap_effects(job, base, &cb, KR_SIM_NCCL, &on, err)) ||
                (rc = kr_sim_overlap_effects(job, p, &ct, ct.kernel == KR_KERNEL_NCCL ? KR_SIM_NCCL : KR_SIM_TUNED,
                                             &ot, err)))
                break;
            if (arr) {
                json_t *r = json_array_get(jrows, json_array_size(jrows) - 1);
                json_object_set_new(r, "effects_nccl_default", effects_json(&on));
                json_object_set_new(r, "effects_fastest", effects_json(&ot));
            } else {
                printf("        overlap at %d MHz: NCCL %d CTAs: compute +%.1f%% while resident, comm %+.1f%%, %.0f%% "
                       "hidden | fastest, %s %d CTAs %s: compute +%.1f%%, comm %+.1f%%, %.0f%% hidden\n",
                       row.mhz, base->fixed_sms, 100 * on.compute_slowdown, 100 * on.comm_slowdown, 100 * on.hidden,
                       kr_comm_kernel_name(row.fast.kernel), row.fast.sms, kr_partition_slot_name(p, row.fast.slot),
                       100 * ot.compute_slowdown,
                       100 * ot.comm_slowdown, 100 * ot.hidden);
            }
        }
    }
    if (arr) {
        json_object_set_new(jp, "partition", json_string(p->key));
        json_object_set_new(jp, "collective", json_string(kr_coll_kind_name(p->coll.kind)));
        json_object_set_new(jp, "bytes", json_real(p->coll.bytes));
        json_object_set_new(jp, "group_size", json_integer(p->coll.group_size));
        json_object_set_new(jp, "clocks", jrows);
        json_array_append_new(arr, jp);
    } else {
        printf("\n");
    }
    return rc;
}

int cmd_partition_sweep(int argc, char **argv)
{
    sweep_args a = {0};
    int next, rc = cli_opt_parse(&sweep_set, argc, argv, 1, &a, &next);
    if (rc)
        return rc == CLI_OPT_STOP ? 0 : rc;
    if (next < argc)
        return cli_usage_error("partition sweep", "unexpected argument '%s'", argv[next]);
    kr_job job;
    if ((rc = cli_load_job(a.jobpath, &job)))
        return rc;
    kr_error err = {0};
    kr_partition_set *set = malloc(sizeof *set), *bset = malloc(sizeof *bset);
    if (set == NULL || bset == NULL) {
        free(set);
        free(bset);
        return CLI_EXIT_FAIL;
    }
    int clk[KR_SEARCH_MAX_CLOCKS], eff[16];
    int nclk = kr_job_clocks(&job, clk, KR_SEARCH_MAX_CLOCKS), neff = 0, found = 0;
    json_t *arr = a.json ? json_array() : NULL;
    if ((rc = kr_partition_catalog(&job, KR_VARIANT_KAREUS, set, &err)) ||
        (rc = kr_partition_catalog(&job, KR_VARIANT_DEFAULT_OVERLAP, bset, &err))) {
        rc = cli_report(rc, &err);
        goto done;
    }
    if (nclk <= 0 || (neff = effect_clocks(a.effects, clk, nclk, eff, 16)) < 0) {
        rc = nclk <= 0 ? cli_usage_error("partition sweep", "job '%s': expected planning clocks, found none", job.name)
                       : CLI_EXIT_INPUT;
        goto done;
    }
    for (int i = 0; i < set->n && rc == 0; i++) {
        const kr_partition *p = &set->p[i], *b = kr_partition_find(bset, p->key);
        if (p->coll.kind == KR_COLL_NONE || b == NULL || (a.key && strcmp(a.key, "all") != 0 && strcmp(a.key, p->key)))
            continue;
        found++;
        if ((rc = sweep_partition(&job, p, b, eff, neff, arr, &err)))
            rc = cli_report(rc, &err);
    }
    if (rc == 0 && found == 0)
        rc = cli_usage_error("partition sweep", "--partition: expected a layer partition of job '%s' with a collective, "
                             "found '%s'", job.name, a.key ? a.key : "(none)");
    if (rc == 0 && arr) {
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(job.name));
        json_object_set_new(o, "gpu", json_string(job.gpu.name));
        json_object_set_new(o, "static_power_w", json_real(job.static_power_w));
        json_object_set_new(o, "partitions", arr);
        arr = NULL;
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(o);
    }
done:
    json_decref(arr);
    free(set);
    free(bset);
    return rc;
}
