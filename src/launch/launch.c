/*
 * launch.c — rank coordinates, pipeline stage and GPU of one rank of a launched job (launch.h).
 *
 * Everything is read from an environment (the process's, or a list the caller passes: tests and
 * `kareus run` checking several ranks), parsed strictly, and checked against the degrees and the
 * plan. Errors name the variable, what was expected and what was found, because they are what a
 * user sees when a job is launched with the wrong geometry.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/job.h"
#include "kareus/launch.h"
#include "kareus/partition.h"
#include "util/util.h"

const char *kr_launcher_name(kr_launcher l)
{
    switch (l) {
    case KR_LAUNCHER_TORCHRUN: return "torchrun";
    case KR_LAUNCHER_SLURM: return "slurm";
    default: return "none";
    }
}

static const char *env_get(const char *const *env, const char *name)
{
    if (env == NULL)
        return getenv(name);
    size_t n = strlen(name);
    for (; *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

/* A non-negative decimal integer; KR_EPARSE naming the variable otherwise. */
static int parse_nonneg(const char *name, const char *s, int *out, kr_error *err)
{
    char *end = NULL;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    if (s == NULL || *s == '\0' || errno || *end || v < 0 || v > 1 << 24 || !isdigit((unsigned char)*s))
        return kr_error_set(err, KR_EPARSE, "%s: expected a non-negative integer, found '%s'", name, s ? s : "");
    *out = (int)v;
    return KR_OK;
}

/* SLURM_TASKS_PER_NODE: "4(x2),3" — the count of node `node` (0-based). */
static int slurm_tasks_on_node(const char *name, const char *s, int node, int *out, kr_error *err)
{
    const char *p = s;
    int seen = 0;
    while (*p) {
        char *end;
        long n = strtol(p, &end, 10), rep = 1;
        if (end == p || n <= 0)
            goto bad;
        p = end;
        if (*p == '(') {
            if (p[1] != 'x')
                goto bad;
            rep = strtol(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || rep <= 0)
                goto bad;
            p = end + 1;
        }
        if (node < seen + rep) {
            *out = (int)n;
            return KR_OK;
        }
        seen += (int)rep;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return kr_error_set(err, KR_ERANGE, "%s: '%s' describes %d nodes, but SLURM_NODEID is %d", name, s, seen, node);
bad:
    return kr_error_set(err, KR_EPARSE, "%s: expected counts such as '4(x2),3', found '%s'", name, s);
}

static int read_launcher(const char *const *env, kr_launch *l, kr_error *err)
{
    int rc;
    const char *rank = env_get(env, "RANK"), *world = env_get(env, "WORLD_SIZE");
    if (rank || world) {
        l->launcher = KR_LAUNCHER_TORCHRUN;
        const char *lr = env_get(env, "LOCAL_RANK"), *lw = env_get(env, "LOCAL_WORLD_SIZE");
        if ((rc = parse_nonneg("RANK", rank, &l->rank, err)) ||
            (rc = parse_nonneg("WORLD_SIZE", world, &l->world_size, err)))
            return rc;
        if (lr == NULL && lw == NULL) { /* torch.distributed without torchrun: one node */
            l->local_rank = l->rank;
            l->local_world_size = l->world_size;
        } else if ((rc = parse_nonneg("LOCAL_RANK", lr, &l->local_rank, err)) ||
                   (rc = parse_nonneg("LOCAL_WORLD_SIZE", lw, &l->local_world_size, err)))
            return rc;
    } else if (env_get(env, "SLURM_PROCID")) {
        l->launcher = KR_LAUNCHER_SLURM;
        if ((rc = parse_nonneg("SLURM_PROCID", env_get(env, "SLURM_PROCID"), &l->rank, err)) ||
            (rc = parse_nonneg("SLURM_NTASKS", env_get(env, "SLURM_NTASKS"), &l->world_size, err)) ||
            (rc = parse_nonneg("SLURM_LOCALID", env_get(env, "SLURM_LOCALID"), &l->local_rank, err)))
            return rc;
        /* The step's layout (srun sets it) is more precise than the allocation's. */
        const char *per = env_get(env, "SLURM_NTASKS_PER_NODE"), *tpn = env_get(env, "SLURM_STEP_TASKS_PER_NODE");
        const char *tpn_name = "SLURM_STEP_TASKS_PER_NODE";
        if (tpn == NULL) {
            tpn = env_get(env, "SLURM_TASKS_PER_NODE");
            tpn_name = "SLURM_TASKS_PER_NODE";
        }
        if (per)
            rc = parse_nonneg("SLURM_NTASKS_PER_NODE", per, &l->local_world_size, err);
        else if (tpn) {
            int node = 0;
            const char *nid = env_get(env, "SLURM_NODEID");
            if (nid && (rc = parse_nonneg("SLURM_NODEID", nid, &node, err)))
                return rc;
            rc = slurm_tasks_on_node(tpn_name, tpn, node, &l->local_world_size, err);
        } else
            return kr_error_set(err, KR_EPARSE,
                                "SLURM_PROCID is set but neither SLURM_NTASKS_PER_NODE nor "
                                "SLURM_(STEP_)TASKS_PER_NODE is: cannot tell how many ranks share this node");
        if (rc)
            return rc;
    } else {
        l->launcher = KR_LAUNCHER_NONE;
        l->world_size = l->local_world_size = 1;
    }
    const char *src = l->launcher == KR_LAUNCHER_SLURM ? "SLURM_" : "";
    if (l->world_size < 1)
        return kr_error_set(err, KR_ERANGE, "%s: expected at least 1, found 0",
                            l->launcher == KR_LAUNCHER_SLURM ? "SLURM_NTASKS" : "WORLD_SIZE");
    if (l->rank >= l->world_size)
        return kr_error_set(err, KR_ERANGE, "%s: expected 0..%d (%s=%d), found %d",
                            l->launcher == KR_LAUNCHER_SLURM ? "SLURM_PROCID" : "RANK", l->world_size - 1,
                            l->launcher == KR_LAUNCHER_SLURM ? "SLURM_NTASKS" : "WORLD_SIZE", l->world_size, l->rank);
    if (l->local_world_size < 1 || l->local_world_size > l->world_size)
        return kr_error_set(err, KR_ERANGE, "%s: expected 1..%d (the world size), found %d",
                            *src ? "SLURM_NTASKS_PER_NODE" : "LOCAL_WORLD_SIZE", l->world_size, l->local_world_size);
    if (l->local_rank >= l->local_world_size)
        return kr_error_set(err, KR_ERANGE, "%s: expected 0..%d (%d ranks on this node), found %d",
                            *src ? "SLURM_LOCALID" : "LOCAL_RANK", l->local_world_size - 1, l->local_world_size,
                            l->local_rank);
    return KR_OK;
}

enum { AX_TP, AX_CP, AX_DP, AX_PP, NAXES };
static const char *const axis_names[NAXES] = {"tp", "cp", "dp", "pp"};

static int parse_order(const char *order, int *axes, kr_error *err)
{
    char buf[64];
    if (kr__strlcpy(buf, order, sizeof buf))
        return kr_error_set(err, KR_EINVAL, "order: expected e.g. 'tp-cp-dp-pp', found a %zu-character string",
                            strlen(order));
    int n = 0, seen = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, "-,", &save); t; t = strtok_r(NULL, "-,", &save)) {
        int a = -1;
        for (int i = 0; i < NAXES; i++)
            if (strcmp(t, axis_names[i]) == 0)
                a = i;
        if (a < 0 || (seen & (1 << a)) || n >= NAXES)
            return kr_error_set(err, KR_EINVAL, "order: expected each of tp, cp, dp, pp once (fastest first, e.g. "
                                                "'tp-cp-dp-pp'), found '%s'", order);
        seen |= 1 << a;
        axes[n++] = a;
    }
    if (n != NAXES)
        return kr_error_set(err, KR_EINVAL, "order: expected each of tp, cp, dp, pp once (fastest first, e.g. "
                                            "'tp-cp-dp-pp'), found '%s'", order);
    return KR_OK;
}

static int degrees(const kr_launch_config *o, kr_launch *l, kr_error *err)
{
    int d[NAXES] = {o->tp ? o->tp : 1, o->cp ? o->cp : 1, o->dp, o->pp ? o->pp : o->plan_stages};
    for (int i = 0; i < NAXES; i++)
        if (d[i] < 0)
            return kr_error_set(err, KR_EINVAL, "%s: expected a positive degree, found %d", axis_names[i], d[i]);
    int w = l->world_size;
    if (d[AX_PP] == 0 && d[AX_DP] == 0)
        d[AX_DP] = 1;
    int known = d[AX_TP] * d[AX_CP] * (d[AX_DP] ? d[AX_DP] : 1) * (d[AX_PP] ? d[AX_PP] : 1);
    if (d[AX_DP] && d[AX_PP] && known != w)
        return kr_error_set(err, KR_EMISMATCH, "world size %d differs from tp×cp×dp×pp = %d×%d×%d×%d = %d", w,
                            d[AX_TP], d[AX_CP], d[AX_DP], d[AX_PP], known);
    if (w % known)
        return kr_error_set(err, KR_EMISMATCH, "world size %d is not a multiple of tp×cp×%s = %d×%d×%d = %d, so %s "
                                               "cannot be derived", w, d[AX_DP] ? "dp" : "pp", d[AX_TP], d[AX_CP],
                            d[AX_DP] ? d[AX_DP] : d[AX_PP], known, d[AX_DP] ? "pp" : "dp");
    if (d[AX_DP] == 0)
        d[AX_DP] = w / known;
    else if (d[AX_PP] == 0)
        d[AX_PP] = w / known;
    l->tp = d[AX_TP];
    l->cp = d[AX_CP];
    l->dp = d[AX_DP];
    l->pp = d[AX_PP];
    return KR_OK;
}

/* Splits CUDA_VISIBLE_DEVICES; checks each entry's form. Returns the count or a status. */
static int split_visible(const char *vis, char entries[][KR_LAUNCH_ENTRY_MAX], int cap, kr_error *err)
{
    int n = 0;
    const char *p = vis;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len == 0 || len >= KR_LAUNCH_ENTRY_MAX)
            return kr_error_set(err, KR_EPARSE, "CUDA_VISIBLE_DEVICES: entry %d: expected an index or a UUID "
                                                "('GPU-…', 'MIG-…'), found '%.*s' in '%s'", n, (int)len, p, vis);
        char t[KR_LAUNCH_ENTRY_MAX];
        memcpy(t, p, len);
        t[len] = '\0';
        int digits = 1;
        for (size_t i = 0; i < len; i++)
            digits &= isdigit((unsigned char)t[i]) != 0;
        if (!digits && strncmp(t, "GPU-", 4) != 0 && strncmp(t, "MIG-", 4) != 0)
            return kr_error_set(err, KR_EPARSE, "CUDA_VISIBLE_DEVICES: entry %d: expected an index or a UUID "
                                                "('GPU-…', 'MIG-…'), found '%s' in '%s'", n, t, vis);
        if (n < cap)
            memcpy(entries[n], t, len + 1);
        n++;
        if (!e)
            break;
        p = e + 1;
        if (*p == '\0')
            return kr_error_set(err, KR_EPARSE, "CUDA_VISIBLE_DEVICES: expected an entry after the last ',', found "
                                                "the end of '%s'", vis);
    }
    return n;
}

#define MAX_VISIBLE 64

int kr_launch_resolve(const kr_launch_config *opt, kr_launch *out, kr_error *err)
{
    kr_launch_config dflt = {0};
    const kr_launch_config *o = opt ? opt : &dflt;
    kr_launch l;
    memset(&l, 0, sizeof l);
    int rc;
    if ((rc = read_launcher(o->env, &l, err)) || (rc = degrees(o, &l, err)))
        return rc;
    int axes[NAXES];
    if ((rc = parse_order(o->order ? o->order : "tp-cp-dp-pp", axes, err)))
        return rc;
    int size[NAXES] = {l.tp, l.cp, l.dp, l.pp}, coord[NAXES], r = l.rank;
    for (int i = 0; i < NAXES; i++) {
        coord[axes[i]] = r % size[axes[i]];
        r /= size[axes[i]];
    }
    l.tp_rank = coord[AX_TP];
    l.cp_rank = coord[AX_CP];
    l.dp_rank = coord[AX_DP];
    l.pp_rank = l.stage = coord[AX_PP];
    if (o->plan_stages > 0 && l.stage >= o->plan_stages)
        return kr_error_set(err, KR_ERANGE, "rank %d is pipeline stage %d (pp %d, order %s), but the plan has %d "
                                            "stage%s (0..%d)",
                            l.rank, l.stage, l.pp, o->order ? o->order : "tp-cp-dp-pp",
                            o->plan_stages, o->plan_stages == 1 ? "" : "s", o->plan_stages - 1);

    const char *vis = env_get(o->env, "CUDA_VISIBLE_DEVICES");
    l.visible_count = -1;
    l.local_device = l.local_rank;
    if (vis) {
        kr__strlcpy(l.visible, vis, sizeof l.visible);
        char entries[MAX_VISIBLE][KR_LAUNCH_ENTRY_MAX];
        int n = strncmp(vis, "-1", 2) == 0 ? 0 : split_visible(vis, entries, MAX_VISIBLE, err);
        if (n < 0)
            return n;
        if (n == 0) { /* a CPU-only rank: fine until a GPU is asked for (kr_launch_device) */
            l.visible_count = 0;
            l.local_device = -1;
            *out = l;
            return KR_OK;
        }
        if (n > MAX_VISIBLE)
            return kr_error_set(err, KR_ERANGE, "CUDA_VISIBLE_DEVICES: expected at most %d entries, found %d",
                                MAX_VISIBLE, n);
        l.visible_count = n;
        if (n >= l.local_world_size)
            l.local_device = l.local_rank;
        else if (n == 1) {
            l.per_task_binding = 1;
            l.local_device = 0;
        } else
            return kr_error_set(err, KR_ERANGE, "more local ranks than GPUs: %d ranks on this node (%s=%d) but "
                                                "CUDA_VISIBLE_DEVICES='%s' shows %d GPUs, so local rank %d has no "
                                                "GPU of its own", l.local_world_size,
                                l.launcher == KR_LAUNCHER_SLURM ? "SLURM_NTASKS_PER_NODE" : "LOCAL_WORLD_SIZE",
                                l.local_world_size, vis, n, l.local_world_size - 1);
        kr__strlcpy(l.visible_entry, entries[l.local_device], sizeof l.visible_entry);
    }
    *out = l;
    return KR_OK;
}

/* The backend device an entry names: index, UUID (exact, then unique prefix), legacy MIG form. */
static int map_entry(const char *entry, kr_backend *b, int ndev, int *device, kr_error *err)
{
    if (isdigit((unsigned char)entry[0])) {
        int k = atoi(entry);
        if (k >= ndev)
            return kr_error_set(err, KR_ERANGE, "CUDA_VISIBLE_DEVICES entry '%s': expected a device index 0..%d "
                                                "(%s sees %d GPU%s), found %d", entry, ndev - 1,
                                kr_backend_name(b), ndev, ndev == 1 ? "" : "s", k);
        *device = k;
        return KR_OK;
    }
    char want[KR_LAUNCH_ENTRY_MAX];
    if (strncmp(entry, "MIG-GPU-", 8) == 0) { /* MIG-GPU-<parent uuid>/<gi>/<ci> */
        kr__strlcpy(want, entry + 4, sizeof want);
        char *slash = strchr(want, '/');
        if (slash)
            *slash = '\0';
    } else if (strncmp(entry, "MIG-", 4) == 0) {
        return kr_error_set(err, KR_EUNSUPPORTED,
                            "CUDA_VISIBLE_DEVICES entry '%s' is a MIG instance; its parent GPU (whose clock is set) "
                            "is found with NVML's MIG calls, which Kareus does not load: list the parent GPU's UUID "
                            "or index, or the MIG-GPU-<uuid>/<gi>/<ci> form", entry);
    } else
        kr__strlcpy(want, entry, sizeof want);
    int exact = -1, prefix = -1, nprefix = 0;
    char uuids[512] = "";
    for (int d = 0; d < ndev; d++) {
        kr_gpu_device_info info;
        int rc = kr_backend_device_info(b, d, &info, err);
        if (rc)
            return rc;
        if (strlen(uuids) + strlen(info.uuid) + 4 < sizeof uuids)
            snprintf(uuids + strlen(uuids), sizeof uuids - strlen(uuids), "%s%d=%s", d ? ", " : "", d,
                     info.uuid[0] ? info.uuid : "(none)");
        if (info.uuid[0] == '\0')
            continue;
        if (strcmp(info.uuid, want) == 0)
            exact = d;
        else if (strncmp(info.uuid, want, strlen(want)) == 0) {
            prefix = d;
            nprefix++;
        }
    }
    if (exact >= 0) {
        *device = exact;
        return KR_OK;
    }
    if (nprefix == 1) {
        *device = prefix;
        return KR_OK;
    }
    if (nprefix > 1)
        return kr_error_set(err, KR_EMISMATCH, "CUDA_VISIBLE_DEVICES entry '%s': expected a UUID prefix of one GPU, "
                                               "found %d GPUs with it (%s)", entry, nprefix, uuids);
    return kr_error_set(err, KR_ENOTFOUND, "CUDA_VISIBLE_DEVICES entry '%s': no GPU of the %s backend has UUID %s "
                                           "(devices: %s)", entry, kr_backend_name(b), want, uuids);
}

int kr_launch_device(const kr_launch *l, kr_backend *b, int *device, kr_gpu_device_info *info, kr_error *err)
{
    int ndev = 0, rc;
    if ((rc = kr_backend_device_count(b, &ndev)))
        return kr_error_set(err, rc, "%s", kr_backend_errmsg(b));
    if (l->visible_count == 0)
        return kr_error_set(err, KR_ENODEV, "CUDA_VISIBLE_DEVICES='%s' hides every GPU: rank %d has none", l->visible,
                            l->rank);
    if (l->visible_count < 0) { /* every GPU visible: local rank i computes on device i */
        if (l->local_world_size > ndev)
            return kr_error_set(err, KR_ERANGE, "more local ranks than GPUs: %d ranks on this node but the %s "
                                                "backend sees %d GPU%s (CUDA_VISIBLE_DEVICES is unset)",
                                l->local_world_size, kr_backend_name(b), ndev, ndev == 1 ? "" : "s");
        *device = l->local_rank;
    } else {
        if ((rc = map_entry(l->visible_entry, b, ndev, device, err)))
            return rc;
        if (!l->per_task_binding) { /* no other local rank may land on the same GPU */
            char entries[MAX_VISIBLE][KR_LAUNCH_ENTRY_MAX];
            kr_error tmp = {0};
            int n = split_visible(l->visible, entries, MAX_VISIBLE, &tmp);
            for (int i = 0; i < l->local_world_size && i < n; i++) {
                int other;
                if (i == l->local_rank || map_entry(entries[i], b, ndev, &other, &tmp) != KR_OK)
                    continue;
                if (other == *device)
                    return kr_error_set(err, KR_EMISMATCH, "two ranks on one GPU: local ranks %d and %d both map "
                                                           "to device %d (CUDA_VISIBLE_DEVICES='%s' entries '%s' and "
                                                           "'%s')", KR_MIN(i, l->local_rank), KR_MAX(i, l->local_rank),
                                        *device, l->visible, entries[KR_MIN(i, l->local_rank)],
                                        entries[KR_MAX(i, l->local_rank)]);
            }
        }
    }
    if (info && (rc = kr_backend_device_info(b, *device, info, err)))
        return rc;
    return KR_OK;
}

size_t kr_launch_abi_size(const char *type_name)
{
    if (type_name == NULL)
        return 0;
    if (strcmp(type_name, "kr_launch") == 0)
        return sizeof(kr_launch);
    if (strcmp(type_name, "kr_launch_config") == 0)
        return sizeof(kr_launch_config);
    if (strcmp(type_name, "kr_job") == 0)
        return sizeof(kr_job);
    if (strcmp(type_name, "kr_partition_set") == 0)
        return sizeof(kr_partition_set);
    if (strcmp(type_name, "kr_partition") == 0)
        return sizeof(kr_partition);
    return 0;
}
