/*
 * cmd_profile_search.c — search mode of `kareus profile` (--log: the search module's strategies
 * measuring on the GPU, or the simulator for a dry run, every measurement in the search's log)
 * and the campaign around it: --plan-work (the work units and their shards) and --emit-sbatch
 * (a Slurm array script running the campaign).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign.h"
#include "profile.h"

static void search_progress(void *ud, const kr_search_progress *p)
{
    const profile_args *a = ud;
    cli_progress(a->quiet, "kareus profile: %s (%d/%d): %ld of %ld configurations, %ld measured now, batch %d%s",
                 p->key, p->index + 1, p->count, p->evaluated, p->space_size, p->measured, p->batch,
                 p->done ? ", done" : "");
    if (p->done)
        cli_progress_done(a->quiet);
}

/* The backend of search mode: the GPU (make_backend) or, with --backend sim, the simulator. */
static int open_search_backend(const profile_args *a, const kr_job *job, kr_backend **b)
{
    const char *name = a->backend ? a->backend : "gpu";
    if (strcmp(name, "gpu") == 0)
        return profile_make_backend(a, job, b);
    if (strcmp(name, "sim") != 0)
        return cli_usage_error("profile", "--backend: expected gpu or sim, found '%s'", name);
    kr_error err = {0};
    int rc = kr_backend_open("sim", &(kr_backend_open_config){.job = job}, b, &err);
    return rc ? cli_report(rc, &err) : 0;
}

/* The device a search measures on, for its first line. */
static const char *search_device(kr_backend *b)
{
    return (kr_backend_caps(b) & KR_BACKEND_SIMULATED) ? "the simulator" : kr_profiler_backend_device(b);
}

/* --plan-work: the campaign's units and their shards (no GPU needed). */
int profile_mode_plan_work(const profile_args *a, const kr_job *job, kr_variant var)
{
    cli_shard sh = {0, 1, "--shard"};
    int only = -1, status = a->shard ? cli_shard_parse(a->shard, &sh) : 0;
    if (status)
        return status;
    if (a->shard)
        only = sh.index;
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return CLI_EXIT_FAIL;
    kr_error err = {0};
    int rc = kr_search_partitions(job, var, 1, set, &err);
    if (rc)
        status = cli_report(rc, &err);
    else
        cli_campaign_print(job, set, sh.count, only);
    free(set);
    return status;
}

/* --emit-sbatch FILE: the campaign as a Slurm array script (and the torchrun command). */
int profile_mode_sbatch(const profile_args *a, const kr_job *job, kr_variant var)
{
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return CLI_EXIT_FAIL;
    kr_error err = {0};
    int rc = kr_search_partitions(job, var, 1, set, &err), gpus = 1;
    if (rc) {
        free(set);
        return cli_report(rc, &err);
    }
    for (int i = 0; i < set->n; i++)
        if (set->p[i].coll.kind != KR_COLL_NONE && job->tp > gpus)
            gpus = job->tp;
    free(set);
    const char *be = a->backend ? a->backend : "gpu";
    if (strcmp(be, "gpu") != 0 && strcmp(be, "sim") != 0)
        return cli_usage_error("profile", "--backend: expected gpu or sim, found '%s'", be);
    char extra[512], dir[4200];
    /* On GPUs the clocks go through --control: kareusd lets unprivileged array tasks lock them. */
    snprintf(extra, sizeof extra, " --backend %s%s%s --strategy %s --seed %llu%s%s", be,
             strcmp(be, "gpu") == 0 ? " --control " : "", strcmp(be, "gpu") == 0 ? a->control : "",
             a->strategy ? a->strategy : "bo", a->seed, a->variant ? " --variant " : "", a->variant ? a->variant : "");
    const char *d = a->out ? a->out : "kareus-campaign";
    char mk[4200];
    snprintf(mk, sizeof mk, "%s", d);
    for (char *q = mk + 1; *q; q++) /* mkdir -p: Slurm writes the tasks' output there */
        if (*q == '/') {
            *q = '\0';
            mkdir(mk, 0777);
            *q = '/';
        }
    if (mkdir(d, 0777) != 0 && errno != EEXIST)
        return cli_usage_error("profile", "--out %s: cannot create the campaign directory: %s", d, strerror(errno));
    char *real = realpath(d, NULL);
    snprintf(dir, sizeof dir, "%s", real ? real : d);
    free(real);
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    self[k > 0 ? k : 0] = '\0';
    cli_sbatch o = {a->job, dir, extra, k > 0 ? self : "kareus", a->shards ? a->shards : 4,
                    strcmp(be, "gpu") == 0 ? gpus : 0};
    return cli_campaign_sbatch(a->sbatch, &o);
}

/* Search mode: the search module's strategies with the GPU backend, every measurement in the
 * search's log as it is taken; frontier files per partition in --out (default "frontiers"). */
int profile_mode_search(const profile_args *a, const kr_job *job, kr_variant var)
{
    kr_search_config opt;
    kr_search_config_default(&opt);
    if (a->strategy && kr_strategy_parse(a->strategy, &opt.strategy))
        return cli_usage_error("profile", "--strategy: expected bo, exhaustive or artifact, found '%s'", a->strategy);
    opt.seed = a->seed;
    kr_job prior_job;
    int use_prior = 0, prc = cli_search_prior("profile", a->prior ? a->prior : "sim", job, &prior_job, &use_prior);
    if (prc)
        return prc;
    opt.prior = use_prior ? &prior_job : NULL;
    opt.prior_sens = a->prior_sens;
    opt.prior_calib = a->prior_calib;
    kr_error err = {0};
    kr_partition_set *set = malloc(sizeof *set);
    if (set == NULL)
        return CLI_EXIT_FAIL;
    int status = 0, rc;
    if (a->partition == NULL || strcmp(a->partition, "all") == 0)
        rc = kr_search_partitions(job, var, 1, set, &err);
    else
        rc = KR_OK, status = profile_select_partitions(job, var, a->partition, set);
    if (rc)
        status = cli_report(rc, &err);
    cli_shard sh = {0, 1, "--shard"};
    char logpath[4200], out[4200];
    if (status == 0 && a->shard)
        status = cli_shard_parse(a->shard, &sh);
    if (status == 0)
        status = cli_shard_path(a->log, &sh, logpath, sizeof logpath);
    if (status == 0)
        status = cli_shard_path(a->out ? a->out : "frontiers", &sh, out, sizeof out);
    kr_backend *gpu = NULL;
    kr_search_log *log = NULL;
    if (status == 0 && (rc = kr_search_log_check(logpath, job, &err)))
        status = cli_report(rc, &err); /* a wrong --log is refused before anything is opened */
    if (status == 0)
        status = open_search_backend(a, job, &gpu);
    if (status == 0 && (rc = kr_search_log_open(logpath, job, &log, &err)))
        status = cli_report(rc, &err);
    if (status == 0 && (kr_backend_caps(gpu) & KR_BACKEND_SIMULATED))
        kr_search_log_set_sync(log, KR_LOG_SYNC_BATCH); /* microseconds a measurement: fsync per batch */
    if (status == 0 && kr_search_log_warning(log)[0])
        fprintf(stderr, "kareus profile: warning: %s\n", kr_search_log_warning(log));
    memcpy(&opt.progress_ud, &a, sizeof a); /* read only by search_progress */
    opt.progress = search_progress;
    if (status == 0)
        printf("%s search of %s (%s) on %s, log %s -> %s%s\n", kr_strategy_name(opt.strategy), job->name,
               kr_variant_name(var), search_device(gpu), logpath, out, "");
    if (status == 0 && sh.count > 1)
        printf("shard %d of %d (from %s): units u with u mod %d = %d\n", sh.index, sh.count, sh.from, sh.count,
               sh.index);
    for (int i = 0; i < set->n && status == 0; i++) {
        if (cli_shard_of(i, sh.count) != sh.index)
            continue;
        kr_partition_frontier front;
        kr_search_stats st;
        rc = kr_search_partition(job, &set->p[i], gpu, log, &opt, &front, &st, &err);
        if (rc == KR_OK) {
            rc = kr_search_write_frontier(out, &front, &err);
            printf("  %-12s %5ld of %6ld configurations (%5.1f%%), %ld measured now, %ld from the log; %s; "
                   "frontier %ld points\n",
                   set->p[i].key, st.evaluated, st.space_size,
                   st.space_size ? 100.0 * (double)st.evaluated / (double)st.space_size : 0.0, st.measured, st.from_log,
                   st.stop, st.front_eff);
            kr_frontier_free(&front);
        }
        if (rc)
            status = profile_report_failure(rc, err.msg);
    }
    kr_search_log_close(log);
    kr_backend_destroy(gpu);
    free(set);
    return status;
}
