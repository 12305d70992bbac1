/*
 * campaign.c — a profiling campaign as work units and shards (campaign.h): the shard spec and
 * where it comes from (the option, a Slurm array, an srun or torchrun launch through
 * kr_launch_resolve), the unit table of --plan-work, and the sbatch array script of
 * --emit-sbatch.
 *
 * A unit is one partition of the job searched on the job's GPU type: the search of a
 * partition reads and writes only that partition's measurements, so units are independent and
 * any node can run any of them. Units are dealt round-robin in the campaign's order (the
 * order of kr_search_partitions), shard u mod N: deterministic, the same on every node, and it
 * spreads the large layer partitions (first in the order) over the shards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign.h"

/* A whole non-negative decimal integer below 2^31, or -1. */
static long whole(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 9)
        return -1;
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* The Slurm array task, if this is one: 1 and *out set, 0 if not, 2 on a bad variable. */
static int from_slurm_array(cli_shard *out)
{
    const char *id = getenv("SLURM_ARRAY_TASK_ID"), *count = getenv("SLURM_ARRAY_TASK_COUNT");
    const char *min = getenv("SLURM_ARRAY_TASK_MIN");
    if (id == NULL)
        return 0;
    long i = whole(id), n = whole(count), m = min ? whole(min) : 0;
    if (i < 0 || n < 1 || m < 0 || i - m >= n || i < m) {
        fprintf(stderr, "kareus profile: --shard auto: expected SLURM_ARRAY_TASK_ID in [SLURM_ARRAY_TASK_MIN, "
                        "MIN + SLURM_ARRAY_TASK_COUNT), found SLURM_ARRAY_TASK_ID='%s', SLURM_ARRAY_TASK_MIN='%s', "
                        "SLURM_ARRAY_TASK_COUNT='%s' (submit a contiguous array: --array=0-N-1)\n",
                id, min ? min : "", count ? count : "");
        return CLI_EXIT_INPUT;
    }
    out->index = (int)(i - m), out->count = (int)n, out->from = "SLURM_ARRAY_TASK_ID";
    return 1;
}

int cli_shard_parse(const char *spec, cli_shard *out)
{
    out->index = 0, out->count = 1, out->from = "--shard";
    if (strcmp(spec, "auto") == 0) {
        int rc = from_slurm_array(out);
        if (rc)
            return rc == 1 ? 0 : rc;
        kr_launch l;
        kr_error err = {0};
        if ((rc = kr_launch_resolve(&(kr_launch_config){.tp = 1, .cp = 1, .pp = 1}, &l, &err)))
            return cli_report(rc, &err);
        if (l.launcher == KR_LAUNCHER_NONE) {
            fprintf(stderr, "kareus profile: --shard auto: expected a Slurm array task (SLURM_ARRAY_TASK_ID), an srun "
                            "task (SLURM_PROCID) or a torchrun rank (RANK), found none of them in the environment; "
                            "give --shard I/N\n");
            return CLI_EXIT_INPUT;
        }
        out->index = l.rank, out->count = l.world_size;
        out->from = l.launcher == KR_LAUNCHER_SLURM ? "SLURM_PROCID" : "RANK";
        return 0;
    }
    const char *slash = strchr(spec, '/');
    char a[16] = "";
    long i = -1, n = -1;
    if (slash && (size_t)(slash - spec) < sizeof a) {
        memcpy(a, spec, (size_t)(slash - spec));
        a[slash - spec] = '\0';
        i = whole(a), n = whole(slash + 1);
    }
    if (i < 0 || n < 1 || i >= n)
        return cli_usage_error("profile", "--shard: expected I/N with N >= 1 and 0 <= I < N (e.g. 0/4), or auto, "
                               "found '%s'%s", spec, i >= 0 && n >= 1 ? " (shards count from 0)" : "");
    out->index = (int)i, out->count = (int)n;
    return 0;
}

int cli_shard_of(int unit, int count)
{
    return count > 0 ? unit % count : 0;
}

int cli_shard_path(const char *path, const cli_shard *s, char *buf, size_t cap)
{
    size_t k = 0;
    for (const char *p = path; *p; p++) {
        int w;
        if (p[0] == '%' && p[1] == 'r') {
            w = snprintf(buf + k, k < cap ? cap - k : 0, "%d", s->index);
            p++;
        } else {
            w = k + 1 < cap ? (buf[k] = *p, 1) : 0;
            if (w == 0)
                w = (int)cap; /* force the overflow below */
        }
        k += (size_t)w;
        if (k >= cap)
            return cli_usage_error("profile", "path too long: '%s'", path);
    }
    buf[k] = '\0';
    return 0;
}

/* GPUs a unit needs: its TP group when it carries its collective, else one. */
static int unit_gpus(const kr_job *job, const kr_partition *p)
{
    return p->coll.kind != KR_COLL_NONE && job->tp > 1 ? job->tp : 1;
}

void cli_campaign_print(const kr_job *job, const kr_partition_set *set, int count, int only)
{
    char fp[17];
    kr_job_fingerprint(job, fp);
    printf("# campaign of job '%s' (fingerprint %s) on %s: %d units in %d shard%s (unit u -> shard u mod %d)\n",
           job->name, fp, job->gpu.name, set->n, count, count == 1 ? "" : "s", count);
    printf("%-5s %-6s %-12s %-16s %-14s %5s %7s\n", "unit", "shard", "key", "variant", "gpu", "gpus", "space");
    for (int u = 0; u < set->n; u++) {
        const kr_partition *p = &set->p[u];
        int sh = cli_shard_of(u, count);
        if (only >= 0 && sh != only)
            continue;
        kr_search_space sp;
        long size = kr_search_space_init(job, p, &sp, NULL) == KR_OK ? kr_search_space_size(&sp) : -1;
        printf("%-5d %-6d %-12s %-16s %-14s %5d %7ld\n", u, sh, p->key, kr_variant_name(p->variant), job->gpu.name,
               unit_gpus(job, p), size);
    }
}

/* Writes text to path through a new temporary file and a rename; an existing path must be a
 * script this command wrote (its second line), so a mistyped name never replaces a user's file. */
static int write_script(const char *path, const char *text)
{
    static const char mark[] = "# written by kareus profile --emit-sbatch";
    struct stat st;
    if (lstat(path, &st) == 0) {
        char head[256] = "";
        int ofd = S_ISREG(st.st_mode) ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        ssize_t got = ofd >= 0 ? read(ofd, head, sizeof head - 1) : -1;
        if (ofd >= 0)
            close(ofd);
        head[got > 0 ? got : 0] = '\0';
        int ours = strstr(head, mark) != NULL;
        if (!ours)
            return cli_usage_error("profile", "--emit-sbatch %s: expected a new file or a script this command wrote, "
                                   "found %s; not replaced", path, S_ISLNK(st.st_mode) ? "a symbolic link" : "another file");
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int ok = f && fchmod(fd, 0755) == 0 && fputs(text, f) != EOF && fflush(f) == 0 && fsync(fd) == 0;
    if (f ? fclose(f) != 0 : (fd >= 0 && close(fd) != 0))
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "kareus profile: --emit-sbatch %s: cannot write: %s\n", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

int cli_campaign_sbatch(const char *path, const cli_sbatch *o)
{
    char job[4200] = "", text[16384];
    if (o->job) {
        char *real = realpath(o->job, NULL); /* a file: its absolute path, for the nodes */
        snprintf(job, sizeof job, " --job %s", real ? real : o->job);
        free(real);
    }
    char gres[64] = "";
    if (o->gpus_per_unit > 0)
        snprintf(gres, sizeof gres, "#SBATCH --gpus-per-task=%d\n", o->gpus_per_unit);
    int n = snprintf(text, sizeof text,
        "#!/bin/bash\n"
        "# written by kareus profile --emit-sbatch: one array task per shard of the campaign\n"
        "# (docs/profiler.md, \"Cluster campaigns\"). Each task writes DIR/shard-<i>.jsonl and\n"
        "# DIR/frontiers-<i>/; a task rerun (sbatch --array=I FILE: shard I of the same count)\n"
        "# resumes from its log. When all are done:\n"
        "#   %s log merge%s %s/merged.jsonl %s/shard-*.jsonl\n"
        "#SBATCH --job-name=kareus-profile\n"
        "#SBATCH --array=0-%d\n"
        "#SBATCH --ntasks=1\n"
        "%s"
        "#SBATCH --output=%s/slurm-%%A_%%a.out\n"
        "set -euo pipefail\n"
        "exec %s profile%s%s --shard \"$SLURM_ARRAY_TASK_ID/%d\" --log %s/shard-%%r.jsonl --out %s/frontiers-%%r "
        "--quiet\n",
        o->kareus, job, o->dir, o->dir, o->shards - 1, gres, o->dir, o->kareus, job, o->extra, o->shards, o->dir,
        o->dir);
    if (n < 0 || (size_t)n >= sizeof text)
        return cli_usage_error("profile", "--emit-sbatch: the script is too long (paths of %zu characters)",
                               strlen(o->dir) + strlen(job));
    int rc = write_script(path, text);
    if (rc)
        return rc;
    printf("%s", text);
    printf("# wrote %s; submit with: sbatch %s\n", path, path);
    printf("# or, with torchrun on one node (%d ranks; --nnodes and --rdzv_endpoint HOST:PORT for several):\n",
           o->shards);
    printf("python3 -m torch.distributed.run --nnodes 1 --nproc_per_node %d --rdzv_backend c10d --rdzv_endpoint "
           "127.0.0.1:29500 --rdzv_id kareus-profile -r 1 -t 1 --log_dir %s/torchrun --no_python %s profile%s%s "
           "--shard auto --log %s/shard-%%r.jsonl --out %s/frontiers-%%r --quiet\n",
           o->shards, o->dir, o->kareus, job, o->extra, o->dir, o->dir);
    return 0;
}
