/*
 * open.c — the one backend factory: a spec string ("sim", "replay:FILE", "gpu:1", "nvml",
 * "fake:sleep_s=0.02,log=calls.log", "kareusd", "auto") opens any backend, measuring or control,
 * with one syntax shared by every command (--backend), `kareus run`'s environment
 * (KAREUS_BACKEND), kareusd's configuration and the Python binding (backend.h:
 * kr_backend_open). This is the one file that knows every implementation; backend.c below it
 * knows none.
 */
#include "kareus/backend.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kareus/gpuctl.h"
#include "kareus/job.h"
#include "kareus/profiler.h"
#include "kareus/search.h"
#include "kareus/sim.h"
#include "util/util.h"

/* ---- spec strings ------------------------------------------------------------------------- */

/* One KEY=VALUE of a spec, for messages. */
typedef struct spec_kv {
    const char *spec;
    const char *key;
    const char *val;
} spec_kv;

static int bad_value(const spec_kv *kv, const char *expected, kr_error *err)
{
    return kr_error_set(err, KR_EINVAL, "backend spec '%s': %s: expected %s, found '%s'", kv->spec, kv->key, expected,
                        kv->val);
}

static int parse_long(const spec_kv *kv, long lo, long hi, long *out, kr_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(kv->val, &end, 10);
    if (*kv->val == '\0' || *end != '\0' || errno || v < lo || v > hi) {
        char what[80];
        snprintf(what, sizeof what, "an integer in [%ld, %ld]", lo, hi);
        return bad_value(kv, what, err);
    }
    *out = v;
    return KR_OK;
}

static int parse_int(const spec_kv *kv, int lo, int hi, int *out, kr_error *err)
{
    long v;
    int rc = parse_long(kv, lo, hi, &v, err);
    if (rc == KR_OK)
        *out = (int)v;
    return rc;
}

static int parse_double(const spec_kv *kv, double lo, double hi, double *out, kr_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(kv->val, &end);
    if (*kv->val == '\0' || *end != '\0' || errno || !isfinite(v) || v < lo || v > hi) {
        char what[80];
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
        return bad_value(kv, what, err);
    }
    *out = v;
    return KR_OK;
}

/* "set_clock+reset_clock", "writes" (set and reset) or "all" → op mask. */
static int parse_ops(const spec_kv *kv, unsigned *mask, kr_error *err)
{
    if (strcmp(kv->val, "writes") == 0) {
        *mask = KR_GPUCTL_FAKE_CLOCK_WRITES;
        return KR_OK;
    }
    if (strcmp(kv->val, "all") == 0) {
        *mask = (1u << KR_GPUCTL_FAKE_NOPS) - 1;
        return KR_OK;
    }
    char buf[256];
    if (kr__strlcpy(buf, kv->val, sizeof buf))
        return bad_value(kv, "a shorter list of operations", err);
    *mask = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        kr_gpuctl_fake_op op;
        if (kr_gpuctl_fake_op_parse(t, &op))
            return bad_value(kv, "operations joined by '+' (measure, device_count, supported_clocks, get_clock, "
                                 "set_clock, reset_clock, read_energy, read_power, device_info), 'writes' or 'all'",
                             err);
        *mask |= KR_GPUCTL_FAKE_MASK(op);
    }
    return *mask ? KR_OK : bad_value(kv, "at least one operation", err);
}

static int parse_fail_code(const spec_kv *kv, int *code, kr_error *err)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {{"perm", KR_EPERM}, {"backend", KR_EBACKEND}, {"nodev", KR_ENODEV}, {"unsupported", KR_EUNSUPPORTED},
                 {"timeout", KR_ETIMEDOUT}};
    for (size_t i = 0; i < KR_ARRAY_LEN(codes); i++)
        if (strcmp(kv->val, codes[i].name) == 0) {
            *code = codes[i].code;
            return KR_OK;
        }
    return bad_value(kv, "perm, backend, nodev, unsupported or timeout", err);
}

/* Applies one KEY=VALUE to fake options (strings point into the caller's copy of the spec). */
static int fake_key(const spec_kv *kv, kr_gpuctl_fake_config *o, kr_error *err)
{
    const char *k = kv->key;
    if (strcmp(k, "devices") == 0)
        return parse_int(kv, 1, 64, &o->devices, err);
    if (strcmp(k, "max_mhz") == 0)
        return parse_int(kv, 1, 100000, &o->max_mhz, err);
    if (strcmp(k, "min_mhz") == 0)
        return parse_int(kv, 1, 100000, &o->min_mhz, err);
    if (strcmp(k, "step_mhz") == 0)
        return parse_int(kv, 1, 100000, &o->step_mhz, err);
    if (strcmp(k, "cur_mhz") == 0)
        return parse_int(kv, 1, 100000, &o->cur_mhz, err);
    if (strcmp(k, "locked") == 0) {
        int a, b, n = 0;
        if (sscanf(kv->val, "%d-%d%n", &a, &b, &n) != 2 || kv->val[n] != '\0' || a <= 0 || b < a)
            return bad_value(kv, "MIN-MAX in MHz with 0 < MIN <= MAX", err);
        o->locked_min_mhz = a;
        o->locked_max_mhz = b;
        return KR_OK;
    }
    if (strcmp(k, "name") == 0) {
        o->name = kv->val;
        return KR_OK;
    }
    if (strcmp(k, "uuid") == 0) {
        o->uuid = kv->val;
        return KR_OK;
    }
    if (strcmp(k, "log") == 0) {
        o->log_path = kv->val;
        return KR_OK;
    }
    if (strcmp(k, "state") == 0) {
        o->state_path = kv->val;
        return KR_OK;
    }
    if (strcmp(k, "fail_call") == 0)
        return parse_long(kv, 0, 1L << 40, &o->fail_call, err);
    if (strcmp(k, "fail_repeat") == 0)
        return parse_int(kv, 0, 1, &o->fail_repeat, err);
    if (strcmp(k, "fail_code") == 0)
        return parse_fail_code(kv, &o->fail_code, err);
    if (strcmp(k, "fail_ops") == 0)
        return parse_ops(kv, &o->fail_ops, err);
    if (strcmp(k, "perm_ops") == 0)
        return parse_ops(kv, &o->perm_ops, err);
    if (strcmp(k, "sleep_ops") == 0)
        return parse_ops(kv, &o->sleep_ops, err);
    if (strcmp(k, "sleep_s") == 0)
        return parse_double(kv, 0, 60, &o->sleep_s, err);
    if (strcmp(k, "power_w") == 0)
        return parse_double(kv, 0, 1e5, &o->power_w, err);
    if (strcmp(k, "period_s") == 0)
        return parse_double(kv, 0, 3600, &o->energy_period_s, err);
    if (strcmp(k, "no_energy") == 0)
        return parse_int(kv, 0, 1, &o->no_energy, err);
    return kr_error_set(err, KR_EINVAL,
                        "backend spec '%s': unknown key '%s' for fake (known: devices, max_mhz, min_mhz, step_mhz, cur_mhz, "
                        "locked, name, uuid, log, state, fail_call, fail_repeat, fail_code, fail_ops, perm_ops, sleep_ops, "
                        "sleep_s, power_w, period_s, no_energy)",
                        kv->spec, k);
}

/* 1 when this process runs with privileges its caller may not have (root, setuid, setgid). */
static int privileged(void)
{
    return geteuid() == 0 || getuid() != geteuid() || getgid() != getegid();
}

/* A library a privileged process may load: a bare name (found by the dynamic loader's own search
 * in the system's library directories, as the default names are), or a path whose file and every
 * directory above it (after resolving links) belong to root and are writable by no one else. */
static int trusted_library(const spec_kv *kv, kr_error *err)
{
    if (strchr(kv->val, '/') == NULL)
        return KR_OK;
    char real[PATH_MAX];
    if (realpath(kv->val, real) == NULL) {
        int e = errno;
        return kr_error_set(err, e == ENOENT ? KR_ENOLIB : KR_EPERM, "backend spec '%s': lib: cannot load %s: %s",
                            kv->spec, kv->val, strerror(e));
    }
    for (char *end = real + strlen(real);; ) {
        struct stat st;
        if (stat(real[0] ? real : "/", &st) != 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
            return kr_error_set(err, KR_EPERM,
                                "backend spec '%s': lib: refusing to load '%s' as root: %s is not owned by root or is "
                                "writable by group or others (anyone who can write it would run code as root)",
                                kv->spec, kv->val, real[0] ? real : "/");
        char *slash = strrchr(real, '/');
        if (slash == NULL || end == real)
            break;
        *slash = '\0';
        end = slash;
    }
    return KR_OK;
}

static int nvml_key(const spec_kv *kv, kr_gpuctl_nvml_config *o, kr_error *err)
{
    if (strcmp(kv->key, "lib") == 0) {
        if (privileged()) {
            int rc = trusted_library(kv, err);
            if (rc)
                return rc;
        }
        o->library = kv->val;
        return KR_OK;
    }
    return kr_error_set(err, KR_EINVAL, "backend spec '%s': unknown key '%s' for nvml (known: lib)", kv->spec, kv->key);
}

/* Options of the sim kind. */
typedef struct sim_spec {
    const char *job;
    kr_sim_config o;
} sim_spec;

static int sim_key(const spec_kv *kv, sim_spec *o, kr_error *err)
{
    if (strcmp(kv->key, "job") == 0) {
        o->job = kv->val;
        return KR_OK;
    }
    if (strcmp(kv->key, "devices") == 0)
        return parse_int(kv, 1, 64, &o->o.device_count, err);
    if (strcmp(kv->key, "activity") == 0)
        return parse_double(kv, 0, 1, &o->o.activity, err);
    return kr_error_set(err, KR_EINVAL, "backend spec '%s': unknown key '%s' for sim (known: job, devices, activity)",
                        kv->spec, kv->key);
}

/* The job a measuring backend works on: the caller's, else job= of the spec, else the
 * default job by name. *own is set when the job was loaded (free it). */
static int spec_job(const char *spec, const char *named, int sim, const kr_backend_open_config *o,
                    const kr_job **job, kr_job **own, kr_error *err)
{
    *job = NULL;
    *own = NULL;
    if (named == NULL && o->job) {
        *job = o->job;
        return KR_OK;
    }
    const char *name = named ? named : o->default_job && *o->default_job ? o->default_job : "default";
    kr_job *j = malloc(sizeof *j);
    if (j == NULL)
        return kr_error_set(err, KR_ENOMEM, "backend spec '%s': out of memory", spec);
    int rc = kr_job_load(name, j, err);
    if (rc) {
        free(j);
        return kr_error_prefix(err, "backend spec '%s': the %sjob%s", spec, sim ? "simulated " : "",
                               named || !sim ? "" : " (the plan's job; name another with sim:job=PATH)");
    }
    *job = *own = j;
    return KR_OK;
}

static int open_sim(const char *spec, sim_spec *ss, const kr_backend_open_config *o, kr_backend **out,
                    kr_error *err)
{
    const kr_job *job;
    kr_job *own;
    int rc = spec_job(spec, ss->job, 1, o, &job, &own, err);
    if (rc == KR_OK)
        rc = kr_sim_backend_create(job, &ss->o, out, err);
    free(own);
    return rc;
}

/* "replay[:[KEY=]FILE]": the spec's recording, then the options' (the CLI's --replay). */
static int open_replay(const char *spec, const char *file, const kr_backend_open_config *o, kr_backend **out,
                       kr_error *err)
{
    int n = (file != NULL) + (o->nreplay > 0 ? o->nreplay : 0);
    if (n == 0)
        return kr_error_set(err, KR_EINVAL, "backend spec '%s': expected replay:FILE or recordings to replay, found none",
                            spec);
    const char **paths = malloc((size_t)n * sizeof *paths);
    if (paths == NULL)
        return kr_error_set(err, KR_ENOMEM, "backend spec '%s': out of memory", spec);
    int k = 0;
    if (file)
        paths[k++] = file;
    for (int i = 0; i < o->nreplay; i++)
        paths[k++] = o->replay[i];
    const kr_job *job;
    kr_job *own;
    int rc = spec_job(spec, NULL, 0, o, &job, &own, err);
    if (rc == KR_OK)
        rc = kr_replay_backend_create(job, paths, n, out, err);
    free(own);
    free(paths);
    return rc;
}

/* "gpu[:N]": the CUDA profiler from device N on, clocks through NVML (profiler.h). */
static int open_gpu(const char *spec, const char *arg, const kr_backend_open_config *o, kr_backend **out,
                    kr_error *err)
{
    kr_profiler_open_config po = {0};
    if (arg) {
        spec_kv kv = {spec, "device", arg};
        int rc = parse_int(&kv, 0, 1023, &po.device, err);
        if (rc)
            return rc;
    }
    const kr_job *job;
    kr_job *own;
    int rc = spec_job(spec, NULL, 0, o, &job, &own, err);
    if (rc == KR_OK)
        rc = kr_profiler_open_backend(job, &po, out, err);
    free(own);
    return rc;
}

/* The control kinds and sim: "KIND[:KEY=VALUE,…]". */
static int open_keyed(const char *spec, const kr_backend_open_config *o, kr_backend **out, kr_error *err)
{
    char buf[1024];
    if (kr__strlcpy(buf, spec, sizeof buf))
        return kr_error_set(err, KR_EINVAL, "backend spec: expected at most %zu characters, found %zu", sizeof buf - 1,
                            strlen(spec));
    char *args = strchr(buf, ':');
    if (args)
        *args++ = '\0';
    const char *kind = buf;
    int is_fake = strcmp(kind, "fake") == 0, is_nvml = strcmp(kind, "nvml") == 0, is_sim = strcmp(kind, "sim") == 0;
    if (!is_fake && !is_nvml && !is_sim)
        return kr_error_set(err, KR_EINVAL,
                            "backend spec '%s': kind: expected nvml, sim or fake (or kareusd, auto, replay:FILE, gpu[:N]), "
                            "found '%s'",
                            spec, kind);
    kr_gpuctl_fake_config fo = {0};
    kr_gpuctl_nvml_config no = {0};
    sim_spec ss = {0};
    char *save = NULL;
    for (char *t = args ? strtok_r(args, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (eq == NULL)
            return kr_error_set(err, KR_EINVAL, "backend spec '%s': expected KEY=VALUE, found '%s'", spec, t);
        *eq = '\0';
        spec_kv kv = {spec, t, eq + 1};
        int rc = is_fake ? fake_key(&kv, &fo, err) : is_sim ? sim_key(&kv, &ss, err) : nvml_key(&kv, &no, err);
        if (rc)
            return rc;
    }
    if (is_sim)
        return open_sim(spec, &ss, o, out, err);
    return is_fake ? kr_gpuctl_fake_create(&fo, out, err) : kr_gpuctl_nvml_create(&no, out, err);
}

/* 1 when spec is KIND alone or KIND:…; *arg is what follows the colon (NULL without one). */
static int spec_kind(const char *spec, const char *kind, const char **arg)
{
    size_t n = strlen(kind);
    if (strncmp(spec, kind, n) != 0 || (spec[n] != '\0' && spec[n] != ':'))
        return 0;
    *arg = spec[n] ? spec + n + 1 : NULL;
    return 1;
}

int kr_backend_open(const char *spec, const kr_backend_open_config *opt, kr_backend **out, kr_error *err)
{
    *out = NULL;
    kr_backend_open_config o = opt ? *opt : (kr_backend_open_config){0};
    const char *arg;
    if (spec == NULL || *spec == '\0' || strcmp(spec, "auto") == 0) {
        /* Unprivileged with a helper running: go through it (no root needed for clocks). */
        if (geteuid() != 0 && access(kr_gpuctl_kareusd_default_socket(), F_OK) == 0)
            return kr_gpuctl_kareusd_create(NULL, out, err);
        spec = "nvml";
    }
    if (spec_kind(spec, "kareusd", &arg))
        return kr_gpuctl_kareusd_create(arg, out, err);
    if (spec_kind(spec, "replay", &arg))
        return open_replay(spec, arg, &o, out, err);
    if (spec_kind(spec, "gpu", &arg))
        return open_gpu(spec, arg, &o, out, err);
    return open_keyed(spec, &o, out, err);
}
