/*
 * details.c — the profiler's detail log: one JSON line per measurement with everything behind
 * the means (profiler.h, kr_profiler_details_append). Append-only, one write per line, fsync'd,
 * so a crash loses at most the line being written and never corrupts earlier ones.
 */
#include "kareus/profiler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

static json_t *reals(const double *x, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(x[i]));
    return a;
}

int kr_profiler_details_append(const char *path, const kr_job *job, const kr_partition *p, const kr_config *c,
                               const kr_profiler_result *r, const char *device, kr_error *err)
{
    char fp[17];
    kr_job_fingerprint(job, fp);
    json_t *o = json_object();
    json_object_set_new(o, "unix_time", json_integer((json_int_t)time(NULL)));
    json_object_set_new(o, "job", json_string(fp));
    json_object_set_new(o, "key", json_string(p->key));
    json_object_set_new(o, "variant", json_string(kr_variant_name(p->variant)));
    json_object_set_new(o, "freq", json_integer(c->freq_mhz));
    json_object_set_new(o, "overlap_start", json_string(kr_partition_slot_name(p, c->slot)));
    json_object_set_new(o, "sm", json_integer(p->coll.kind != KR_COLL_NONE ? c->sms : 0));
    kr__jset_real(o, "time_s", r->m.time_s);
    kr__jset_real(o, "energy_j", r->m.energy_j);
    kr__jset_real(o, "eff_energy_j", r->m.eff_energy_j);
    kr__jset_real(o, "time_sd_s", r->m.time_sd_s);
    kr__jset_real(o, "energy_sd_j", r->m.energy_sd_j);
    json_object_set_new(o, "repeats", json_integer(r->m.repeats));
    json_object_set_new(o, "time_s_each", reals(r->time_s, r->m.repeats));
    json_object_set_new(o, "energy_j_each", reals(r->energy_j, r->m.repeats));
    json_object_set_new(o, "iters", json_integer(r->iters));
    kr__jset_real(o, "calib_iter_s", r->calib_iter_s);
    kr__jset_real(o, "window_s", r->window_s);
    kr__jset_real(o, "settle_s", r->settle_s);
    kr__jset_real(o, "busy_s", r->busy_s);
    kr__jset_real(o, "cooldown_s", r->cooldown_s);
    json_object_set_new(o, "retries", json_integer(r->retries));
    json_object_set_new(o, "clock_locked_mhz", json_integer(r->freq_mhz));
    json_object_set_new(o, "clock_read_mhz", json_integer(r->clock_read_mhz));
    json_object_set_new(o, "gpus", json_integer(r->nranks));
    json_object_set_new(o, "comm", json_string(r->comm));
    json_object_set_new(o, "device", json_string(device ? device : ""));
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (line == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    int rc = KR_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = kr_error_set(err, KR_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
    } else {
        kr__sb sb = {0}; /* the line and its newline in one write */
        kr__sb_printf(&sb, "%s\n", line);
        ssize_t w = sb.oom ? -1 : write(fd, kr__sb_str(&sb), sb.len);
        if (w != (ssize_t)sb.len || fsync(fd) != 0)
            rc = kr_error_set(err, KR_EIO, "%s: cannot append: %s", path, strerror(errno));
        kr__sb_free(&sb);
        close(fd);
    }
    free(line);
    return rc;
}
