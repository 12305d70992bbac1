/*
 * timeline.c — writes a simulated partition execution (kr_sim_timeline) as JSON for pictures:
 * schema "kareus.timeline" version 1 with the job, the partition and its variant, the config,
 * the result, the per-stream events and the piecewise-constant power trace.
 */
#include <jansson.h>

#include "kareus/sim.h"
#include "util/util.h"

json_t *kr_sim_result_json(const kr_sim_result *r, double static_power_w)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    kr__jset_real(o, "time_s", r->time_s);
    kr__jset_real(o, "energy_j", r->energy_j);
    kr__jset_real(o, "effective_energy_j", r->eff_energy_j);
    kr__jset_real(o, "static_power_w", static_power_w);
    kr__jset_real(o, "compute_end_s", r->compute_end_s);
    kr__jset_real(o, "comm_start_s", r->comm_start_s);
    kr__jset_real(o, "comm_end_s", r->comm_end_s);
    kr__jset_real(o, "min_f_eff_mhz", r->min_f_eff_mhz);
    kr__jset_real(o, "max_power_w", r->max_power_w);
    kr__jset_real(o, "floor_w", r->floor_w);
    kr__jset_real(o, "floor_energy_j", r->floor_energy_j);
    kr__jset_real(o, "work_energy_j", r->energy_j - r->floor_energy_j);
    kr__jset_real(o, "dispatch_s", r->dispatch_s);
    kr__jset_real(o, "sync_s", r->sync_s);
    kr__jset_real(o, "skew_s", r->skew_s);
    json_object_set_new(o, "comm_kernel", r->comm_kernel == KR_SIM_TUNED  ? json_string("tuned")
                                          : r->comm_kernel == KR_SIM_NCCL ? json_string("nccl")
                                                                          : json_null());
    json_object_set_new(o, "comm_sms", json_integer(r->comm_sms));
    kr__jset_real(o, "comm_hbm_bytes", r->comm_hbm_bytes);
    return o;
}

int kr_sim_timeline_write_json(const char *path, const kr_job *job, const kr_partition *p, const kr_config *c,
                               const kr_sim_timeline *t, kr_error *err)
{
    json_t *root = json_object();
    if (root == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory building the timeline", path);
    json_object_set_new(root, "schema", json_string("kareus.timeline"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "job", json_string(job->name));
    json_object_set_new(root, "gpu", json_string(job->gpu.name));
    json_object_set_new(root, "partition", json_string(p->key));
    json_object_set_new(root, "variant", json_string(kr_variant_name(p->variant)));
    json_t *cfg = json_object();
    json_object_set_new(cfg, "freq_mhz", json_integer(c->freq_mhz));
    json_object_set_new(cfg, "sms", json_integer(c->sms));
    json_object_set_new(cfg, "slot", json_string(kr_partition_slot_name(p, c->slot)));
    json_object_set_new(root, "config", cfg);
    json_t *res = kr_sim_result_json(&t->result, job->static_power_w);
    json_object_set_new(root, "result", res);
    json_t *ev = json_array();
    for (int i = 0; i < t->nevents; i++) {
        const kr_sim_event *e = &t->events[i];
        json_t *o = json_object();
        json_object_set_new(o, "stream", json_string(e->stream == KR_SIM_STREAM_COMM ? "comm" : "compute"));
        json_object_set_new(o, "name", json_string(e->name));
        kr__jset_real(o, "start_s", e->start_s);
        kr__jset_real(o, "end_s", e->end_s);
        kr__jset_real(o, "power_w", e->power_w);
        json_array_append_new(ev, o);
    }
    json_object_set_new(root, "events", ev);
    json_t *seg = json_array();
    for (int i = 0; i < t->nsegments; i++) {
        const kr_sim_segment *s = &t->segments[i];
        json_t *o = json_object();
        kr__jset_real(o, "start_s", s->start_s);
        kr__jset_real(o, "end_s", s->end_s);
        kr__jset_real(o, "power_w", s->power_w);
        kr__jset_real(o, "f_eff_mhz", s->f_eff_mhz);
        json_object_set_new(o, "op", s->op >= 0 ? json_string(p->ops[s->op].name) : json_null());
        json_object_set_new(o, "comm", json_boolean(s->comm));
        json_array_append_new(seg, o);
    }
    json_object_set_new(root, "segments", seg);
    int rc = kr__json_write_atomic(path, root, err);
    json_decref(root);
    return rc;
}
