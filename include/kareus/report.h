/*
 * report.h — the write stage of the flow: pictures, summary.json and the HTML report. Frontiers
 * of several methods on one chart, pipeline timelines, the summary of an optimize run (written
 * and read with one field table, src/report/summary.c) and the page that embeds them with the
 * tables (src/report/html.c).
 *
 * Every picture is a self-contained SVG written atomically. Colours: a fixed palette per method
 * (legend on the chart); clocks on a perceptually ordered scale from blue (lowest) to yellow
 * (highest), with the scale drawn on the chart.
 */
#ifndef KAREUS_REPORT_H
#define KAREUS_REPORT_H

#include "kareus/format.h"
#include "kareus/job.h"
#include "kareus/optimize.h"
#include "kareus/pipesim.h"
#include "kareus/sim.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* One series of a frontier chart. */
typedef struct kr_chart_series {
    const char *name;        /* Legend text. */
    int n;                   /* Points. */
    const double *time_s;    /* Iteration times. */
    const double *energy_j;  /* Energies (whole cluster). */
    int connect;             /* 1: join the points with a line (a frontier); 0: markers only. */
    int highlight;           /* Index of a point drawn larger (e.g. a chosen plan), or −1. */
} kr_chart_series;

/* Marks of the iso comparisons (NaN to omit one). */
typedef struct kr_chart_marks {
    double iso_time_s;     /* Vertical line: the reference's fastest plan time. */
    double iso_energy_j;   /* Horizontal line: the reference's most frugal plan energy. */
    const char *iso_label; /* Name of the reference method for the labels (e.g. "Perseus"). */
} kr_chart_marks;

/* Renders the series into an SVG chart of iteration time (x) vs cluster energy (y). */
int kr_svg_frontiers(const char *path, const char *title, const kr_chart_series *series, int nseries,
                     const kr_chart_marks *marks, kr_error *err);
/* Same, into a caller-owned heap string (*svg, free with free()). */
int kr_svg_frontiers_text(char **svg, const char *title, const kr_chart_series *series, int nseries,
                          const kr_chart_marks *marks, kr_error *err);

/* Renders a simulated iteration: one row per stage, one box per instruction coloured by its
 * clock, idle time hatched, the critical end marked; title with time and energy. */
int kr_svg_timeline(const char *path, const char *title, const kr_pipe_result *r, const kr_job *job, kr_error *err);
int kr_svg_timeline_text(char **svg, const char *title, const kr_pipe_result *r, const kr_job *job, kr_error *err);

/* Renders simulated partition executions one above the other on a shared time axis: per panel
 * the compute stream's ops and the comm stream's collective, and the board power under them. */
int kr_svg_partition(const char *path, const char *title, const kr_sim_timeline *tl, const char *const *titles, int n,
                     kr_error *err);

/*
 * Writes DIR/summary.json (schema "kareus.summary", docs/formats.md) of the optimize run r:
 * the job, the settings, every method's frontier and chosen plans, the metrics, the prediction
 * against the simulation, the search of every partition, the pictures (when r->pictures) and
 * the time of each stage. Atomic. KR_OK, KR_EIO naming the path, KR_ENOMEM.
 */
int kr_report_summary(const char *dir, const kr_optimize_result *r, kr_error *err);

/* Row i of the summary format's description (`kareus report format`); KR_ERANGE past the last. */
int kr_report_summary_format_field(int i, kr_field_info *out);

/*
 * Draws DIR/timeline-<method>-<label>.svg of the simulated plan sim when label is one whose
 * timeline the report shows (every method's fastest or max-clock plan, Kareus's most frugal);
 * KR_OK without drawing otherwise.
 */
int kr_report_timeline(const char *dir, kr_method m, const char *label, const kr_pipe_result *sim, const kr_job *job,
                       kr_error *err);

/*
 * Draws the run's charts into DIR: frontiers.svg (the solver's frontiers of every method) and
 * frontiers-10pt.svg (the simulated 10-point frontiers), with Perseus's iso marks; with Kareus
 * and Nanobatching run, partition.svg (the first partition of Kareus's fastest plan, read from
 * its plan file in DIR, against the default overlap).
 */
int kr_report_pictures(const char *dir, const kr_optimize_result *r, kr_error *err);

/*
 * Writes DIR/report.html from DIR/summary.json (schema "kareus.summary", written by
 * `kareus optimize`; docs/formats.md): the headline figures, the comparison table of the
 * methods, predicted-vs-simulated validation, search statistics, and every picture listed in
 * the summary embedded inline (so the page is one self-contained file). Atomic.
 */
int kr_report_html(const char *dir, kr_error *err);

KR_END_DECLS
#endif
