/*
 * cmd_profile.c — `kareus profile`: measure partitions on a real GPU (CUDA kernels, cuBLASLt,
 * NCCL or the single-GPU proxy, NVML clocks and energy) with the profiler backend
 * (profiler.h), show a partition's kernel plan, self-test the kernels, calibrate the GPU's
 * own constants into a catalog entry for the simulator, and sweep the comm kernel alone. This
 * file holds the options, their checks and the dispatch, and the --config and --plan modes;
 * the others live beside it (profile.h lists which file holds what).
 *
 * Without what a measurement needs (libkareus_cuda, a CUDA driver, a GPU, NVML, permission to
 * lock clocks) it exits 2 and says which is missing; --plan works anywhere.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign.h"
#include "opt.h"
#include "profile.h"

static const char usage_head[] =
    "usage: kareus profile [--job FILE] --partition KEY --config MHZ[,SMS,SLOT] [--config ...]\n"
    "       kareus profile [--job FILE] [--partition KEY|all] --log FILE [--strategy bo|exhaustive]\n"
    "       kareus profile [--job FILE] --partition KEY --plan [--config MHZ[,SMS,SLOT]]\n"
    "       kareus profile --calibrate [--base GPU] [--name NAME] [--out gpu.json] [--raw FILE] [--quick]\n"
    "       kareus profile --check\n"
    "       kareus profile [--job FILE] --plan-work [--shard I/N|auto]\n"
    "       kareus profile [--job FILE] --log FILE --shard I/N|auto [--backend gpu|sim] (%r in --log/--out: I)\n"
    "       kareus profile [--job FILE] --emit-sbatch FILE [--shards N] [--out DIR] [--backend gpu|sim]\n"
    "       kareus profile [--job FILE] --comm-sweep FILE [--backend gpu|sim] [--clocks L] [--ctas L] [--kernels L]\n\n"
    "Measures partitions on this machine's GPU: one nanobatch's compute (cuBLASLt GEMMs,\n"
    "flash-style attention, memory-bound kernels) on the compute stream and the other\n"
    "nanobatch's collective on a comm stream launched at the slot with SMS CTAs (NCCL with two\n"
    "or more GPUs; with one, a labelled PROXY kernel moving the same bytes), at a locked clock;\n"
    "time from CUDA events, energy from the NVML counter between its update edges, >= 3 repeats.\n\n"
    "modes:\n";


static int set_seed(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    long l;
    int rc = cli_parse_long(cmd, "--seed", arg, 0, 2147483647L, &l);
    if (rc == 0)
        ((profile_args *)ctx)->seed = (unsigned long long)l;
    return rc;
}

static int set_comm(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    profile_args *a = ctx;
    if (kr_profiler_comm_parse(arg, &a->comm) || a->comm == KR_PROFILER_COMM_NONE)
        return cli_usage_error(cmd, "--comm: expected auto, nccl, proxy or proxy-unpaced, found '%s'", arg);
    return 0;
}

static int set_config(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    profile_args *a = ctx;
    if (a->nconfigs == MAX_CONFIGS)
        return cli_usage_error(cmd, "--config: at most %d configurations", MAX_CONFIGS);
    a->configs[a->nconfigs++] = arg;
    return 0;
}

static const cli_opt profile_opts[] = {
    CLI_OPT_FN("config", 1,
        "  --config MHZ,SMS,SLOT  measure these configurations (repeatable; MHZ alone for work\n"
        "                   without a collective and for the baseline variants)\n",
        set_config),
    CLI_OPT("log", 1,
        "  --log FILE       search the partition(s) with the GPU backend (--strategy, default bo),\n"
        "                   every measurement appended to the search's JSONL log as it is taken\n",
        cli_set_str, profile_args, log),
    CLI_OPT("plan-work", 0,
        "  --plan-work      list the campaign's work units (partition x GPU type, the GPUs each\n"
        "                   needs) and the shard of each (with --shard); no GPU needed\n",
        cli_set_flag, profile_args, plan_work),
    CLI_OPT("emit-sbatch", 1,
        "  --emit-sbatch FILE  write an sbatch array script running the campaign in --shards N\n"
        "                   tasks (logs and frontiers under --out DIR, default kareus-campaign),\n"
        "                   and print it and the torchrun command\n",
        cli_set_str, profile_args, sbatch),
    CLI_OPT("comm-sweep", 1,
        "  --comm-sweep FILE  the comm kernel alone over --clocks x --ctas x --kernels for the job's\n"
        "                   collectives, every point appended to FILE (JSONL; rerun resumes); fit it\n"
        "                   with `kareus calibrate --data FILE` (docs/profiler.md)\n",
        cli_set_str, profile_args, comm_sweep),
    CLI_OPT("plan", 0,
        "  --plan           print the kernel plan (no GPU needed)\n",
        cli_set_flag, profile_args, plan),
    CLI_OPT("calibrate", 0,
        "  --calibrate      measure the GPU's constants and write a catalog entry (docs/profiler.md)\n",
        cli_set_flag, profile_args, calibrate),
    CLI_OPT("check", 0,
        "  --check          what is present, and the kernels checked against CPU references\n"
        "options:\n",
        cli_set_flag, profile_args, check),
    CLI_OPT("job", 1,
        "  --job FILE       job spec (JSON or built-in name; default: the default job)\n",
        cli_set_str, profile_args, job),
    CLI_OPT("partition", 1,
        "  --partition KEY  a partition key, non-partition work (embed_fwd, ...), or all\n",
        cli_set_str, profile_args, partition),
    CLI_OPT("variant", 1,
        "  --variant V      kareus (default), sequential or default-overlap\n",
        cli_set_str, profile_args, variant),
    CLI_OPT("shard", 1,
        "  --shard I/N|auto search mode: only the units u with u mod N = I (0 <= I < N); auto: the\n"
        "                   Slurm array task, srun task or torchrun rank; %r in --log/--out is I\n",
        cli_set_str, profile_args, shard),
    CLI_OPT_RANGE("shards", 1,
        "  --shards N       --emit-sbatch: array tasks (default 4)\n",
        cli_set_int, profile_args, shards, 1, 10000),
    CLI_OPT("backend", 1,
        "  --backend B      search mode and comm sweep: gpu (default: this machine's GPUs) or sim (the\n"
        "                   simulator, for a campaign's dry run on machines without a GPU)\n",
        cli_set_str, profile_args, backend),
    CLI_OPT("clocks", 1,
        "  --clocks LIST    comm sweep: SM clocks in MHz, e.g. 1410,1200,1020 (default: 5 spread over\n"
        "                   the GPU's planning range)\n",
        cli_set_str, profile_args, clocks),
    CLI_OPT("ctas", 1,
        "  --ctas LIST      comm sweep: CTA counts (default 1,2,4,8,16,24)\n",
        cli_set_str, profile_args, ctas),
    CLI_OPT("kernels", 1,
        "  --kernels LIST   comm sweep: tuned, nccl, proxy (default: tuned,nccl on the simulator; nccl\n"
        "                   with two or more GPUs, proxy with one; the GPU has no tuned kernel)\n",
        cli_set_str, profile_args, kernels),
    CLI_OPT_RANGE("max-points", 1,
        "  --max-points N   comm sweep: stop after N new measurements (rerun to go on)\n",
        cli_set_int, profile_args, max_points, 1, 1000000),
    CLI_OPT("strategy", 1,
        "  --strategy S     bo (default), exhaustive or artifact (search mode)\n",
        cli_set_str, profile_args, strategy),
    CLI_OPT_FN("seed", 1,
        "  --seed N         search seed (default 1)\n",
        set_seed),
    CLI_OPT("prior", 1,
        "  --prior SPEC     search mode, bo: the simulator's prediction as the prior mean: sim (default:\n"
        "                   the job's GPU), FILE (a GPU entry, e.g. from --calibrate) or none\n",
        cli_set_str, profile_args, prior),
    CLI_OPT("prior-features", 1,
        "  --prior-features auto|on|off  search mode: also fit how each uncertain GPU constant moves\n"
        "                   the prior's predictions (default on; off: the prior's line alone)\n",
        cli_set_auto_on_off, profile_args, prior_sens),
    CLI_OPT("prior-calibrate", 1,
        "  --prior-calibrate auto|on|off  search mode, with the features: also calibrate the prior's\n"
        "                   GPU constants to the measurements before each fit (default on)\n",
        cli_set_auto_on_off, profile_args, prior_calib),
    CLI_OPT("out", 1,
        "  --out PATH       --config: the results as JSON; search: directory for frontier files;\n"
        "                   --calibrate: the entry (default gpu-calibrated.json)\n",
        cli_set_str, profile_args, out),
    CLI_OPT("details", 1,
        "  --details FILE   append one JSON line per measurement with everything behind it\n",
        cli_set_str, profile_args, details),
    CLI_OPT("json", 0,
        "  --json           machine-readable output (--config mode); with --out FILE also to FILE\n",
        cli_set_flag, profile_args, json),
    CLI_OPT("sim", 0,
        "  --sim            --config: the simulator's prediction (the job's GPU) and measured/simulated\n"
        "                   ratios beside each measurement\n",
        cli_set_flag, profile_args, sim),
    CLI_OPT("sim-gpu", 1,
        "  --sim-gpu FILE   also the simulator with this GPU entry (e.g. the one --calibrate wrote);\n"
        "                   comm sweep with --backend sim: the simulator with this entry\n",
        cli_set_str, profile_args, sim_gpu),
    CLI_OPT_RANGE("device", 1,
        "  --device N       first CUDA device (default 0)\n",
        cli_set_int, profile_args, device, 0, 1023),
    CLI_OPT_RANGE("devices", 1,
        "  --devices N      GPUs to use (default: all from --device on, for NCCL)\n",
        cli_set_int, profile_args, devices, 1, KR_PROFILER_MAX_RANKS),
    CLI_OPT_FN("comm", 1,
        "  --comm MODE      auto (default), nccl, proxy (link-capped) or proxy-unpaced\n",
        set_comm),
    CLI_OPT("control", 1,
        "  --control SPEC   clock/energy backend (default nvml; see `kareus gpu --help`)\n",
        cli_set_str, profile_args, control),
    CLI_OPT_RANGE("window", 1,
        "  --window S       energy window per repeat, >= 1 s (default 1)\n",
        cli_set_double, profile_args, o.window_s, 1.0, 600.0),
    CLI_OPT_RANGE("repeats", 1,
        "  --repeats N      repeats, 3..16 (default 3)\n",
        cli_set_int, profile_args, o.repeats, 3, KR_PROFILER_MAX_REPEATS),
    CLI_OPT_RANGE("cooldown-ratio", 1,
        "  --cooldown-ratio X  idle time after a measurement, x its busy time (default 0.5)\n",
        cli_set_double, profile_args, o.cooldown_ratio, 0.0, 100.0),
    CLI_OPT("quiet", 0,
        "  --quiet          no progress lines\n"
        "calibration:\n",
        cli_set_flag, profile_args, quiet),
    CLI_OPT("base", 1,
        "  --base GPU       catalog entry filling what is not measured (default: matched by name)\n",
        cli_set_str, profile_args, base),
    CLI_OPT("name", 1,
        "  --name NAME      name of the new entry (default: <base>-calibrated)\n",
        cli_set_str, profile_args, name),
    CLI_OPT("raw", 1,
        "  --raw FILE       every raw point as JSON (default: <out>.raw.json)\n",
        cli_set_str, profile_args, raw),
    CLI_OPT("quick", 0,
        "  --quick          fewer points (3 GEMM clocks, 2 copy clocks, 3 CTA counts)\n",
        cli_set_flag, profile_args, quick),
    CLI_OPT_HELP,
};
static const cli_optset profile_set = {"profile", usage_head, profile_opts, CLI_OPT_COUNT(profile_opts),
                                       NULL, "h", 0};

/* ---- partitions and configs -------------------------------------------------------------------- */

/* The partitions named by key ("all": every layer partition of the variant and every piece of
 * non-partition work) into set. Returns 0 or an exit status. */
int profile_select_partitions(const kr_job *job, kr_variant var, const char *key, kr_partition_set *set)
{
    kr_error err = {0};
    kr_partition_set *all = malloc(sizeof *all);
    if (all == NULL)
        return CLI_EXIT_FAIL;
    int rc = kr_partition_catalog(job, var, all, &err);
    if (rc) {
        free(all);
        return cli_report(rc, &err);
    }
    memset(set, 0, sizeof *set);
    char known[1024] = "";
    size_t kn = 0;
    for (int i = 0; i < all->n; i++) {
        kn += (size_t)snprintf(known + kn, kn < sizeof known ? sizeof known - kn : 0, "%s%s", i ? ", " : "",
                               all->p[i].key);
        if (strcmp(key, "all") == 0 || strcmp(key, all->p[i].key) == 0)
            set->p[set->n++] = all->p[i];
    }
    for (int st = 0; st < job->pp; st++)
        for (int bwd = 0; bwd <= 1; bwd++) {
            kr_partition_set np;
            if (kr_partition_nonpartition(job, st, bwd, &np, &err) != KR_OK)
                continue;
            for (int i = 0; i < np.n; i++) {
                int dup = 0;
                for (int j = 0; j < set->n; j++)
                    dup |= strcmp(set->p[j].key, np.p[i].key) == 0;
                if (!dup && (strcmp(key, "all") == 0 || strcmp(key, np.p[i].key) == 0) && set->n < KR_MAX_PARTITIONS)
                    set->p[set->n++] = np.p[i];
                if (strstr(known, np.p[i].key) == NULL && kn < sizeof known)
                    kn += (size_t)snprintf(known + kn, sizeof known - kn, ", %s", np.p[i].key);
            }
        }
    free(all);
    if (set->n == 0) {
        fprintf(stderr, "kareus profile: --partition: expected all or a partition of job '%s' (variant %s): %s; found '%s'\n",
                job->name, kr_variant_name(var), known, key);
        return CLI_EXIT_INPUT;
    }
    return 0;
}

/* Parses "MHZ[,SMS,SLOT]" for partition p. Returns 0 or an exit status. */
static int parse_config(const kr_job *job, const kr_partition *p, const char *text, kr_config *c)
{
    char buf[128];
    if (strlen(text) >= sizeof buf)
        return cli_usage_error("profile", "--config: too long: '%s'", text);
    strcpy(buf, text);
    char *sms = strchr(buf, ','), *slot = NULL;
    if (sms) {
        *sms++ = '\0';
        slot = strchr(sms, ',');
        if (slot == NULL)
            return cli_usage_error("profile", "--config: expected MHZ or MHZ,SMS,SLOT, found '%s'", text);
        *slot++ = '\0';
    }
    int fixed = p->variant != KR_VARIANT_KAREUS || p->per_stage > 0;
    c->freq_mhz = 0;
    c->sms = fixed ? p->fixed_sms : 0;
    c->slot = fixed ? p->fixed_slot : KR_SLOT_NONE;
    int rc = cli_parse_int("profile", "--config (clock)", buf, 1, 100000, &c->freq_mhz);
    if (rc)
        return rc;
    if (p->coll.kind == KR_COLL_NONE && sms)
        return cli_usage_error("profile", "--config '%s': partition %s carries no collective; give the clock only",
                               text, p->key);
    if (!fixed && p->coll.kind != KR_COLL_NONE && sms == NULL)
        return cli_usage_error("profile", "--config '%s': partition %s searches comm SMs and slot: give MHZ,SMS,SLOT",
                               text, p->key);
    if (sms) {
        if ((rc = cli_parse_int("profile", "--config (SMs)", sms, 1, 100000, &c->sms)))
            return rc;
        kr_error err = {0};
        if ((rc = kr_partition_slot_index(p, slot, &c->slot, &err)))
            return cli_report(rc, &err);
    }
    kr_error err = {0};
    if ((rc = kr_config_validate(job, p, c, &err)))
        return cli_report(rc, &err);
    return 0;
}

/* ---- modes ------------------------------------------------------------------------------------- */

static int mode_plan(const profile_args *a, const kr_job *job, const kr_partition_set *set)
{
    kr_profiler_program *plan = malloc(sizeof *plan);
    char *text = malloc(65536);
    if (plan == NULL || text == NULL) {
        free(plan), free(text);
        return CLI_EXIT_FAIL;
    }
    kr_profiler_program_params pp;
    kr_profiler_program_params_default(&pp);
    pp.comm = a->comm;
    pp.devices = a->devices > 0 ? a->devices : 1;
    int status = 0;
    for (int i = 0; i < set->n && status == 0; i++) {
        const kr_partition *p = &set->p[i];
        kr_config c = {(int)job->gpu.plan_max_mhz, p->fixed_sms, p->fixed_slot, 0};
        if (p->variant == KR_VARIANT_KAREUS && p->per_stage == 0 && p->coll.kind != KR_COLL_NONE) {
            c.sms = p->coll.kind == KR_COLL_ALLREDUCE ? job->sms_allreduce.v[0] : job->sms_gather.v[0];
            c.slot = 0;
        }
        if (p->coll.kind == KR_COLL_NONE)
            c.sms = 0, c.slot = KR_SLOT_NONE;
        if (a->nconfigs > 0 && (status = parse_config(job, p, a->configs[0], &c)))
            break;
        kr_error err = {0};
        int rc = kr_profiler_program_build(job, p, &c, &pp, plan, &err);
        if (rc) {
            status = profile_report_failure(rc, err.msg);
            break;
        }
        kr_profiler_program_format(plan, text, 65536);
        printf("%s%s", i ? "\n" : "", text);
    }
    free(plan), free(text);
    return status;
}

/* The simulator's predictions printed beside a measurement: the job's catalog GPU and, with
 * --sim-gpu, a second entry (e.g. the calibrated one). */
typedef struct sims {
    int n;
    const char *name[2];
    const char *label[2]; /* JSON keys: "sim", "sim_gpu_file" */
    kr_job job[2];
    kr_measurement m[2];
} sims;

/* Appends the measurement to arr (JSON output, --out) and, unless json, prints its table row. */
static void print_measurement(const kr_partition *p, const kr_config *c, const kr_profiler_result *r, const sims *sm,
                              int json, json_t *arr)
{
    {
        json_t *o = json_object();
        json_object_set_new(o, "partition", json_string(p->key));
        json_object_set_new(o, "variant", json_string(kr_variant_name(p->variant)));
        json_object_set_new(o, "freq_mhz", json_integer(c->freq_mhz));
        json_object_set_new(o, "sms", json_integer(p->coll.kind != KR_COLL_NONE ? c->sms : 0));
        json_object_set_new(o, "slot", json_string(kr_partition_slot_name(p, c->slot)));
        json_object_set_new(o, "time_s", json_real(r->m.time_s));
        json_object_set_new(o, "time_sd_s", json_real(r->m.time_sd_s));
        json_object_set_new(o, "energy_j", json_real(r->m.energy_j));
        json_object_set_new(o, "energy_sd_j", json_real(r->m.energy_sd_j));
        json_object_set_new(o, "eff_energy_j", json_real(r->m.eff_energy_j));
        json_object_set_new(o, "repeats", json_integer(r->m.repeats));
        json_object_set_new(o, "iters", json_integer(r->iters));
        json_object_set_new(o, "window_s", json_real(r->window_s));
        json_object_set_new(o, "clock_read_mhz", json_integer(r->clock_read_mhz));
        json_object_set_new(o, "comm", json_string(r->comm));
        for (int i = 0; i < sm->n; i++) {
            json_t *so = json_object();
            json_object_set_new(so, "gpu", json_string(sm->name[i]));
            json_object_set_new(so, "time_s", json_real(sm->m[i].time_s));
            json_object_set_new(so, "energy_j", json_real(sm->m[i].energy_j));
            json_object_set_new(so, "eff_energy_j", json_real(sm->m[i].eff_energy_j));
            json_object_set_new(o, sm->label[i], so);
        }
        json_array_append_new(arr, o);
    }
    if (json)
        return;
    printf("%-12s %5d %4d %-13s %10.4f %6.2f%% %10.5f %6.2f%% %10.5f %6d", p->key, c->freq_mhz,
           p->coll.kind != KR_COLL_NONE ? c->sms : 0, kr_partition_slot_name(p, c->slot), r->m.time_s * 1e3,
           r->m.time_s > 0 ? 100 * r->m.time_sd_s / r->m.time_s : 0, r->m.energy_j,
           r->m.energy_j > 0 ? 100 * r->m.energy_sd_j / r->m.energy_j : 0, r->m.eff_energy_j, r->clock_read_mhz);
    for (int i = 0; i < sm->n; i++)
        printf(" %10.4f %10.5f %6.3f %6.3f", sm->m[i].time_s * 1e3, sm->m[i].energy_j, r->m.time_s / sm->m[i].time_s,
               r->m.energy_j / sm->m[i].energy_j);
    printf("  %s\n", r->comm);
    fflush(stdout);
}

/* Writes the JSON array to path through a temporary file and a rename (never half-written). */
static int write_json_file(const char *path, json_t *arr)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (json_dump_file(arr, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) != 0 ||
        rename(tmp, path) != 0) {
        remove(tmp);
        fprintf(stderr, "kareus profile: --out: cannot write %s\n", path);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

static void observe(void *ud, const kr_partition *p, const kr_config *c, const kr_profiler_result *r)
{
    const profile_args *a = ud;
    if (!a->quiet)
        fprintf(stderr, "kareus profile: %s %d MHz %d SMs %s: %.4f ms, %.5f J (%lld iterations, %s)\n", p->key,
                c->freq_mhz, c->sms, kr_partition_slot_name(p, c->slot), r->m.time_s * 1e3, r->m.energy_j, r->iters,
                r->comm);
}

/* Warns when the job's GPU is not the one measured (the shapes are the job's; the clocks must
 * be ones this GPU supports). */
static void warn_gpu(const kr_job *job, const char *device)
{
    if (strcasecmp(device, job->gpu.display) != 0)
        fprintf(stderr, "kareus profile: warning: job '%s' is for a %s; measuring its partitions on %s\n", job->name,
                job->gpu.display, device);
}

/* The GPU backend (runner + NVML, owned by it), or the exit status with the reason printed. */
int profile_make_backend(const profile_args *a, const kr_job *job, kr_backend **gpu)
{
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    kr_profiler_open_config oo;
    memset(&oo, 0, sizeof oo);
    oo.device = a->device;
    oo.devices = a->devices;
    oo.control = a->control;
    oo.comm = a->comm;
    oo.protocol = &a->o;
    oo.details = a->details;
    oo.observer = observe;
    memcpy(&oo.observer_ud, &a, sizeof a); /* read only by observe */
    kr_error err = {0};
    int rc = kr_profiler_open_backend(job, &oo, gpu, &err);
    if (rc)
        return profile_report_failure(rc, err.msg);
    warn_gpu(job, kr_profiler_backend_device(*gpu));
    return 0;
}

static int mode_configs(const profile_args *a, const kr_job *job, const kr_partition_set *set)
{
    if (set->n != 1)
        return cli_usage_error("profile", "--config: name one partition with --partition (found %d)", set->n);
    const kr_partition *p = &set->p[0];
    kr_config cfg[MAX_CONFIGS];
    for (int i = 0; i < a->nconfigs; i++) {
        int st = parse_config(job, p, a->configs[i], &cfg[i]);
        if (st)
            return st;
    }
    /* The simulator's jobs: the job itself, and with --sim-gpu the same job on that GPU entry. */
    sims sm;
    memset(&sm, 0, sizeof sm);
    if (a->sim) {
        sm.job[0] = *job;
        sm.name[0] = job->gpu.name;
        sm.label[0] = "sim";
        sm.n = 1;
    }
    if (a->sim_gpu) {
        kr_error err = {0};
        kr_gpu g;
        int rc = kr_gpu_read_json(a->sim_gpu, &g, &err);
        if (rc)
            return cli_report(rc, &err);
        kr_job *sj = &sm.job[sm.n];
        *sj = *job;
        if (job->static_power_w == job->gpu.static_w)
            sj->static_power_w = g.static_w;
        sj->gpu = g;
        for (int i = 0; i < a->nconfigs; i++)
            if ((rc = kr_config_validate(sj, p, &cfg[i], &err)))
                return cli_report(rc, &err);
        sm.name[sm.n] = sj->gpu.name;
        sm.label[sm.n] = "sim_gpu_file";
        sm.n++;
    }
    kr_backend *gpu = NULL;
    int status = profile_make_backend(a, job, &gpu);
    if (status)
        return status;
    json_t *arr = json_array();
    if (!a->json) {
        for (int i = 0; i < sm.n; i++)
            printf("# sim%s: the simulator with GPU %s; ratios are measured / simulated\n", i ? "2" : "", sm.name[i]);
        printf("%-12s %5s %4s %-13s %10s %7s %10s %7s %10s %6s", "partition", "MHz", "SMs", "slot", "time_ms", "sd",
               "energy_J", "sd", "eff_J", "clock");
        for (int i = 0; i < sm.n; i++)
            printf(" %10s %10s %6s %6s", i ? "sim2_ms" : "sim_ms", i ? "sim2_J" : "sim_J", i ? "t/sim2" : "t/sim",
                   i ? "E/sim2" : "E/sim");
        printf("  %s\n", "collective");
    }
    for (int i = 0; i < a->nconfigs && status == 0; i++) {
        kr_measurement m;
        int rc = kr_backend_measure(gpu, p, &cfg[i], &m);
        if (rc) {
            status = profile_report_failure(rc, kr_backend_errmsg(gpu));
            break;
        }
        kr_profiler_result r;
        kr_profiler_backend_last(gpu, &r);
        for (int k = 0; k < sm.n && status == 0; k++) {
            kr_error err = {0};
            if ((rc = kr_sim_measure(&sm.job[k], p, &cfg[i], &sm.m[k], &err)))
                status = cli_report(rc, &err);
        }
        if (status == 0)
            print_measurement(p, &cfg[i], &r, &sm, a->json, arr);
    }
    if (a->json && status == 0) {
        json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        printf("\n");
    }
    if (a->out && json_array_size(arr) > 0 && status == 0)
        status = write_json_file(a->out, arr);
    json_decref(arr);
    kr_backend_destroy(gpu); /* resets the clocks it locked, closes the runner and NVML */
    return status;
}

/* ---- arguments ----------------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, profile_args *a)
{
    memset(a, 0, sizeof *a);
    a->control = "nvml";
    a->seed = 1;
    a->comm = KR_PROFILER_COMM_AUTO;
    kr_profiler_config_default(&a->o);
    int next;
    int rc = cli_opt_parse(&profile_set, argc, argv, 1, a, &next);
    if (rc)
        return rc;
    if (next < argc)
        return cli_usage_error("profile", "unexpected argument '%s'", argv[next]);
    int modes = a->plan + a->calibrate + a->check + (a->nconfigs > 0 && !a->plan) + (a->log != NULL) +
                a->plan_work + (a->sbatch != NULL) + (a->comm_sweep != NULL);
    if (modes == 0)
        return cli_usage_error("profile", "expected a mode: --config, --log (search), --plan, --plan-work, "
                               "--emit-sbatch, --comm-sweep, --calibrate or --check");
    if (modes > 1)
        return cli_usage_error("profile", "give one mode: --config, --log, --plan, --plan-work, --emit-sbatch, "
                               "--comm-sweep, --calibrate or --check");
    if (a->backend && strcmp(a->backend, "gpu") != 0 && strcmp(a->backend, "sim") != 0)
        return cli_usage_error("profile", "--backend: expected gpu or sim, found '%s'", a->backend);
    if (a->backend && a->log == NULL && a->sbatch == NULL && a->comm_sweep == NULL)
        return cli_usage_error("profile", "--backend: expected search mode (--log), --emit-sbatch or --comm-sweep");
    if (a->comm_sweep && (a->partition || a->variant || a->strategy || a->out || a->details))
        return cli_usage_error("profile", "--%s: not with --comm-sweep (it sweeps the collectives of every partition "
                               "of the job, alone, into its own log)",
                               a->partition ? "partition" : a->variant ? "variant" : a->strategy ? "strategy"
                               : a->out ? "out" : "details");
    if ((a->clocks || a->ctas || a->kernels || a->max_points) && a->comm_sweep == NULL)
        return cli_usage_error("profile", "--%s: expected --comm-sweep",
                               a->clocks ? "clocks" : a->ctas ? "ctas" : a->kernels ? "kernels" : "max-points");
    if (a->shard && a->log == NULL && !a->plan_work)
        return cli_usage_error("profile", "--shard: expected search mode (--log) or --plan-work");
    if ((a->plan || a->nconfigs > 0) && a->partition == NULL)
        return cli_usage_error("profile", "--partition: missing (which partition to %s)", a->plan ? "show" : "measure");
    if (a->plan && a->nconfigs > 1)
        return cli_usage_error("profile", "--plan shows one configuration; found %d --config", a->nconfigs);
    return 0;
}

int cmd_profile(int argc, char **argv)
{
    profile_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.check)
        return profile_mode_check(&a);
    if (a.calibrate)
        return profile_mode_calibrate(&a);
    kr_variant var = KR_VARIANT_KAREUS;
    if (a.variant && kr_variant_parse(a.variant, &var))
        return cli_usage_error("profile", "--variant: expected kareus, sequential or default-overlap, found '%s'",
                               a.variant);
    kr_job job;
    if ((rc = cli_load_job(a.job, &job)))
        return rc;
    if (a.log)
        return profile_mode_search(&a, &job, var);
    if (a.comm_sweep)
        return profile_mode_comm_sweep(&a, &job);
    if (a.plan_work)
        return profile_mode_plan_work(&a, &job, var);
    if (a.sbatch)
        return profile_mode_sbatch(&a, &job, var);
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return CLI_EXIT_FAIL;
    rc = profile_select_partitions(&job, var, a.partition ? a.partition : "all", set);
    if (rc == 0)
        rc = a.plan ? mode_plan(&a, &job, set) : mode_configs(&a, &job, set);
    free(set);
    return rc;
}
