/*
 * shim.c — finds and loads libkareus_cuda.so with dlopen, so that libkareus and the CLI build
 * and run without CUDA; turns every way of not having a usable GPU into a status and a message
 * that names what is missing (the library, the CUDA driver, a GPU).
 *
 * The library is looked for, in order, at $KAREUS_CUDA_LIB; in the directory of the running
 * executable (the build tree puts the CLI and the library side by side); in the directory of
 * the object holding this code (libkareus.so); in ../lib from the executable (an install
 * prefix); and finally by name through the dynamic loader's search path. It is loaded with
 * RTLD_NODELETE: the CUDA runtime does not support being unloaded while the process lives.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "util/util.h"

#define LIBNAME "libkareus_cuda.so"

int kr__profiler_env_check(const char *order, const char *visible, int nvisible, kr_error *err)
{
    if (visible != NULL && visible[0] != '\0') {
        /* Accept "0", "0,1", … : CUDA's device i is then the machine's device i. */
        const char *p = visible;
        for (int i = 0;; i++) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v != i)
                return kr_error_set(err, KR_EINVAL,
                                    "CUDA_VISIBLE_DEVICES='%s': the profiler reads energy and locks clocks through "
                                    "NVML, which numbers every GPU of the machine; expected unset or 0,1,... in "
                                    "order (choose GPUs with --device instead)",
                                    visible);
            if (*end == '\0')
                break;
            if (*end != ',')
                return kr_error_set(err, KR_EINVAL, "CUDA_VISIBLE_DEVICES='%s': expected a comma-separated list",
                                    visible);
            p = end + 1;
        }
    }
    if (nvisible > 1 && (order == NULL || strcmp(order, "PCI_BUS_ID") != 0))
        return kr_error_set(err, KR_EINVAL,
                            "CUDA_DEVICE_ORDER is '%s' with %d GPUs: expected PCI_BUS_ID so that CUDA and NVML "
                            "number the GPUs alike (kareus profile sets it when unset)",
                            order ? order : "(unset: FASTEST_FIRST)", nvisible);
    return KR_OK;
}

typedef struct loaded {
    const kr__prof_device_api *api;
    char path[512];
} loaded;

static int try_path(const char *path, loaded *out, kr__sb *tried)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h == NULL) {
        const char *e = dlerror();
        kr__sb_printf(tried, "\n  %s: %s", path, e ? e : "cannot load");
        return 0;
    }
    void *sym = dlsym(h, KR__PROF_DEVICE_SYMBOL);
    if (sym == NULL) {
        kr__sb_printf(tried, "\n  %s: loaded, but it has no %s (not a Kareus CUDA library)", path,
                      KR__PROF_DEVICE_SYMBOL);
        dlclose(h);
        return 0;
    }
    kr__prof_device_entry entry;
    memcpy(&entry, &sym, sizeof entry);
    const kr__prof_device_api *api = entry();
    if (api == NULL || api->abi != KR__PROF_DEVICE_ABI || api->plan_size != sizeof(kr_profiler_program) ||
        api->probe_size != sizeof(kr_profiler_probe_info) || api->runner_size != sizeof(kr_profiler_runner)) {
        kr__sb_printf(tried, "\n  %s: built for another version of libkareus (ABI %d, expected %d); rebuild it", path,
                      api ? api->abi : -1, KR__PROF_DEVICE_ABI);
        dlclose(h);
        return 0;
    }
    out->api = api;
    kr__strlcpy(out->path, path, sizeof out->path);
    return 1;
}

/* Directory of a file path (copied; "" for a bare name). */
static void dir_of(const char *file, char *dir, size_t cap)
{
    char tmp[PATH_MAX];
    kr__strlcpy(tmp, file, sizeof tmp);
    kr__strlcpy(dir, strchr(tmp, '/') ? dirname(tmp) : "", cap);
}

/* Candidate paths in search order, without duplicates (see the file comment). */
static int candidates(char cand[][PATH_MAX + 32], int cap)
{
    int n = 0;
    char dir[PATH_MAX], exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        dir_of(exe, dir, sizeof dir);
        snprintf(cand[n++], PATH_MAX + 32, "%s/%s", dir, LIBNAME);
    }
    Dl_info info;
    char real[PATH_MAX];
    if (dladdr((void *)(uintptr_t)&kr_profiler_probe, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
        realpath(info.dli_fname, real) != NULL) {
        dir_of(real, dir, sizeof dir);
        snprintf(cand[n], PATH_MAX + 32, "%s/%s", dir, LIBNAME);
        if (n == 0 || strcmp(cand[n], cand[0]) != 0)
            n++;
    }
    if (len > 0 && n < cap) {
        dir_of(exe, dir, sizeof dir);
        snprintf(cand[n++], PATH_MAX + 32, "%s/../lib/%s", dir, LIBNAME);
    }
    snprintf(cand[n++], PATH_MAX + 32, "%s", LIBNAME); /* the loader's search path */
    return n;
}

static int load_library(loaded *out, kr_error *err)
{
    kr__sb tried = {0};
    int ok = 0;
    const char *env = getenv("KAREUS_CUDA_LIB");
    if (env && env[0]) {
        ok = try_path(env, out, &tried);
    } else {
        char cand[4][PATH_MAX + 32];
        int n = candidates(cand, 4);
        for (int i = 0; i < n && !ok; i++) {
            if (strchr(cand[i], '/') && access(cand[i], F_OK) != 0) {
                kr__sb_printf(&tried, "\n  %s: no such file", cand[i]);
                continue;
            }
            ok = try_path(cand[i], out, &tried);
        }
    }
    int rc = KR_OK;
    if (!ok && env && env[0])
        rc = kr_error_set(err, KR_ENOLIB, "no libkareus_cuda: $KAREUS_CUDA_LIB does not load:%s", kr__sb_str(&tried));
    else if (!ok)
        rc = kr_error_set(err, KR_ENOLIB,
                          "no libkareus_cuda: the CUDA profiler library was not found or does not load (build it "
                          "with the CUDA toolkit: cmake -DKAREUS_CUDA=ON; or point KAREUS_CUDA_LIB at it). Tried:%s",
                          kr__sb_str(&tried));
    kr__sb_free(&tried);
    return rc;
}

int kr_profiler_probe(kr_profiler_probe_info *info, kr_error *err)
{
    kr_profiler_probe_info local;
    kr_profiler_probe_info *pi = info ? info : &local;
    memset(pi, 0, sizeof *pi);
    loaded lib = {0};
    int rc = load_library(&lib, err);
    if (rc)
        return rc;
    kr__strlcpy(pi->lib_path, lib.path, sizeof pi->lib_path);
    rc = lib.api->probe(pi, err);
    kr__strlcpy(pi->lib_path, lib.path, sizeof pi->lib_path);
    kr__strlcpy(pi->build, lib.api->build ? lib.api->build : "?", sizeof pi->build);
    return rc;
}

int kr_profiler_runner_open(int first, int devices, kr_profiler_runner **out, kr_error *err)
{
    *out = NULL;
    loaded lib = {0};
    int rc = load_library(&lib, err);
    if (rc)
        return rc;
    kr_profiler_probe_info pi;
    memset(&pi, 0, sizeof pi);
    if ((rc = lib.api->probe(&pi, err)))
        return rc;
    if (first < 0 || first >= pi.ndevices)
        return kr_error_set(err, KR_ERANGE, "--device: expected a GPU index in [0, %d), found %d", pi.ndevices, first);
    if ((rc = kr__profiler_env_check(getenv("CUDA_DEVICE_ORDER"), getenv("CUDA_VISIBLE_DEVICES"), pi.ndevices, err)))
        return rc;
    kr_profiler_runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    rc = lib.api->open(first, devices, r, err);
    if (rc) {
        free(r);
        return rc;
    }
    *out = r;
    return KR_OK;
}

void kr_profiler_runner_destroy(kr_profiler_runner *r)
{
    if (r == NULL)
        return;
    if (r->ops && r->ops->destroy)
        r->ops->destroy(r->impl);
    free(r);
}

int kr_profiler_selftest(kr_profiler_runner *r, char *report, size_t cap, kr_error *err)
{
    if (r == NULL || r->ops == NULL || r->ops->selftest == NULL)
        return kr_error_set(err, KR_EUNSUPPORTED, "this runner has no kernel self-test");
    return r->ops->selftest(r->impl, report, cap, err);
}
