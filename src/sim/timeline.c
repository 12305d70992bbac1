/*
 * timeline.c — writes a simulated partition execution (kr_sim_timeline) as JSON for pictures:
 * schema "kareus.timeline" version 1 with the job, the partition and its variant, the config,
 * the result, the per-stream events and the piecewise-constant power trace.
 */
#include <jansson.h>

#include "kareus/sim.h"
#include "util/util.h"

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
    json_t *res = json_object();
    kr__jset_real(res, "time_s", t->result.time_s);
    kr__jset_real(res, "energy_j", t->result.energy_j);
    kr__jset_real(res, "effective_energy_j", t->result.eff_energy_j);
    kr__jset_real(res, "compute_end_s", t->result.compute_end_s);
    kr__jset_real(res, "comm_start_s", t->result.comm_start_s);
    kr__jset_real(res, "comm_end_s", t->result.comm_end_s);
    kr__jset_real(res, "min_f_eff_mhz", t->result.min_f_eff_mhz);
    kr__jset_real(res, "max_power_w", t->result.max_power_w);
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
