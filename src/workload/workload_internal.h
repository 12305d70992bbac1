/*
 * workload_internal.h — what the workload module shares with other modules inside libkareus
 * (not public API): the schedule names as a field-table choice, for the formats that carry a
 * schedule (job specs, plans).
 */
#ifndef KR_WORKLOAD_INTERNAL_H
#define KR_WORKLOAD_INTERNAL_H

#include "util/util.h"

/* "1f1b", "gpipe", "interleaved-1f1b" (and "interleaved"): kr_schedule_parse / kr_schedule_name. */
extern const kr__jchoice kr__schedule_choice;

#endif
