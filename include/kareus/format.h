/*
 * format.h — the description of one field of a Kareus file format (job spec, plan, partition
 * frontier, optimize summary).
 *
 * Each JSON format is read, checked and written from one field table inside the library; the
 * same table describes the format, row by row, through kr_job_format_field,
 * kr_plan_format_field, kr_frontier_format_field and kr_report_summary_format_field.
 * `kareus job format`, `kareus plan format`, `kareus compose format` and `kareus report format`
 * print it, and the tables of docs/formats.md are that output (a test keeps them equal), so the
 * description cannot drift from what the reader accepts.
 */
#ifndef KAREUS_FORMAT_H
#define KAREUS_FORMAT_H

#include "kareus/export.h"
KR_BEGIN_DECLS

/* One row of a format's description. Strings are static or held in the struct. */
typedef struct kr_field_info {
    char path[96];           /* Field path: "cluster.nodes"; "[]" marks the entries of an array. */
    const char *type;        /* "integer", "number", "string", "boolean", "object", or a hook's own. */
    char range[96];          /* Accepted values ("[1, 1024]", "\"1f1b\", \"gpipe\" …"); "" for any. */
    char def[96];            /* Value when absent; "required" when it must be present. */
    const char *description; /* What the field means, with its unit. */
} kr_field_info;

KR_END_DECLS
#endif
