/*
 * workload_internal.h — what the workload module shares with other modules inside libkareus
 * (not public API): the name tables of its enums, for the formats that carry one (job specs,
 * plans, frontiers), and the schedule names as a field-table choice.
 */
#ifndef KR_WORKLOAD_INTERNAL_H
#define KR_WORKLOAD_INTERNAL_H

#include "util/util.h"

/* The tables kr_instr_kind_name/parse, kr_variant_name/parse read. */
extern const kr__enames kr__instr_kind_enames;
extern const kr__enames kr__variant_enames;

/* "1f1b", "gpipe", "interleaved-1f1b" (and "interleaved"): kr_schedule_parse / kr_schedule_name. */
extern const kr__jchoice kr__schedule_choice;

#endif
