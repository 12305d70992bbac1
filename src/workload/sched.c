/*
 * sched.c — per-stage instruction order of the pipeline schedules (see sched.h).
 */
#include "kareus/sched.h"

#include <string.h>

#include "util/util.h"
#include "workload/workload_internal.h"

/* The instruction kinds' names, X(value, name). */
#define INSTR_KIND_NAMES(X) X(KR_INSTR_FORWARD, "forward") X(KR_INSTR_BACKWARD, "backward")

static const kr__ename instr_kind_names[] = {INSTR_KIND_NAMES(KR__ENAME_ROW)};
const kr__enames kr__instr_kind_enames = KR__ENAMES(instr_kind_names);

const char *kr_instr_kind_name(kr_instr_kind k)
{
    /* Every value but forward is named backward, as the schedules treat it. */
    return kr__ename_of(instr_kind_names, KR_ARRAY_LEN(instr_kind_names),
                        k == KR_INSTR_FORWARD ? KR_INSTR_FORWARD : KR_INSTR_BACKWARD);
}

int kr_instr_kind_parse(const char *s, kr_instr_kind *out)
{
    int v;
    if (kr__ename_parse(instr_kind_names, KR_ARRAY_LEN(instr_kind_names), s, &v))
        return KR_EINVAL;
    *out = (kr_instr_kind)v;
    return KR_OK;
}

int kr_sched_check(kr_schedule sch, int stages, int microbatches, int virtual_stages, kr_error *err)
{
    if (stages < 1 || microbatches < 1 || virtual_stages < 1)
        return kr_error_set(err, KR_ERANGE,
                            "schedule: expected stages, microbatches and virtual stages >= 1, found %d, %d, %d",
                            stages, microbatches, virtual_stages);
    if (kr_sched_length(microbatches, virtual_stages) < 0)
        return kr_error_set(err, KR_ERANGE,
                            "schedule: expected 2 x microbatches x virtual stages <= %d instructions per stage, found "
                            "2 x %d x %d",
                            KR_SCHED_MAX_LENGTH, microbatches, virtual_stages);
    if (sch == KR_SCHEDULE_INTERLEAVED_1F1B) {
        if (virtual_stages < 2)
            return kr_error_set(err, KR_EINVAL, "interleaved-1f1b: expected >= 2 virtual stages, found %d",
                                virtual_stages);
        if (microbatches % stages != 0)
            return kr_error_set(err, KR_EINVAL,
                                "interleaved-1f1b: expected microbatches to be a multiple of stages (%d), found %d",
                                stages, microbatches);
    } else if (virtual_stages != 1) {
        return kr_error_set(err, KR_EINVAL, "%s: expected 1 virtual stage, found %d", kr_schedule_name(sch),
                            virtual_stages);
    }
    return KR_OK;
}

int kr_sched_length(int microbatches, int virtual_stages)
{
    int len;
    if (microbatches < 1 || virtual_stages < 1 || kr__mul_int(microbatches, virtual_stages, &len) ||
        kr__mul_int(len, 2, &len) || len > KR_SCHED_MAX_LENGTH)
        return -1;
    return len;
}

static kr_sched_item item(kr_instr_kind k, int mb, int chunk)
{
    kr_sched_item it = {k, mb, chunk};
    return it;
}

/* Megatron's mapping of the k-th forward/backward "virtual microbatch" to (microbatch, chunk). */
static kr_sched_item interleaved_item(int k, int stages, int v, kr_instr_kind kind)
{
    int group = stages * v;
    int chunk = (k % group) / stages;
    if (kind == KR_INSTR_BACKWARD)
        chunk = v - 1 - chunk;
    int mb = (k / group) * stages + k % stages;
    return item(kind, mb, chunk);
}

int kr_sched_order(kr_schedule sch, int stages, int microbatches, int virtual_stages, int stage,
                   kr_sched_item *out, int cap, kr_error *err)
{
    int rc = kr_sched_check(sch, stages, microbatches, virtual_stages, err);
    if (rc)
        return rc;
    if (stage < 0 || stage >= stages)
        return kr_error_set(err, KR_ERANGE, "schedule: expected a stage in [0, %d], found %d", stages - 1, stage);
    int len = kr_sched_length(microbatches, virtual_stages);
    if (cap < len)
        return kr_error_set(err, KR_ERANGE, "schedule: output holds %d instructions, %d needed", cap, len);
    int n = 0;
    switch (sch) {
    case KR_SCHEDULE_GPIPE:
        for (int m = 0; m < microbatches; m++)
            out[n++] = item(KR_INSTR_FORWARD, m, 0);
        for (int m = 0; m < microbatches; m++)
            out[n++] = item(KR_INSTR_BACKWARD, m, 0);
        break;
    case KR_SCHEDULE_1F1B: {
        int warm = KR_MIN(stages - stage, microbatches);
        int f = 0, b = 0;
        while (f < warm)
            out[n++] = item(KR_INSTR_FORWARD, f++, 0);
        while (b < microbatches) {
            out[n++] = item(KR_INSTR_BACKWARD, b++, 0);
            if (f < microbatches)
                out[n++] = item(KR_INSTR_FORWARD, f++, 0);
        }
        break;
    }
    case KR_SCHEDULE_INTERLEAVED_1F1B: {
        int total = microbatches * virtual_stages;
        int warm = KR_MIN((stages - stage - 1) * 2 + (virtual_stages - 1) * stages, total);
        int f = 0, b = 0;
        while (f < warm)
            out[n++] = interleaved_item(f++, stages, virtual_stages, KR_INSTR_FORWARD);
        while (f < total) {
            out[n++] = interleaved_item(f++, stages, virtual_stages, KR_INSTR_FORWARD);
            out[n++] = interleaved_item(b++, stages, virtual_stages, KR_INSTR_BACKWARD);
        }
        while (b < total)
            out[n++] = interleaved_item(b++, stages, virtual_stages, KR_INSTR_BACKWARD);
        break;
    }
    }
    return n;
}
