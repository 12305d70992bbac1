/*
 * html.c — the HTML report of an optimize output directory (see report.h).
 *
 * The page is generated from summary.json alone (read by summary.c into its struct), so `kareus
 * report DIR` can rebuild it at any time, and every SVG it names is inlined so the page stays one
 * self-contained file that opens in any browser. Missing optional parts of the summary are
 * skipped, not errors; a summary of the wrong schema or version, or with a field of the wrong
 * type, is an error with its JSON path.
 */
#include "kareus/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "util/util.h"

static const char css[] =
    "body{font-family:Helvetica,Arial,sans-serif;max-width:1180px;margin:24px auto;color:#222;padding:0 16px}"
    "h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:34px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    ".sub{color:#555;margin-top:0}table{border-collapse:collapse;margin:10px 0;font-size:14px}"
    "th,td{border:1px solid #ccc;padding:4px 9px;text-align:right}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}.good{color:#08723f;font-weight:bold}.bad{color:#b00020}"
    ".headline{display:flex;gap:18px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:10px 16px;min-width:200px}"
    ".card .v{font-size:26px;font-weight:bold}.card .l{color:#555;font-size:13px}figure{margin:14px 0}"
    "figcaption{color:#555;font-size:13px}.note{color:#555;font-size:13px;max-width:900px}";

/* A percentage cell: "12.3%" coloured by sign, "--" when absent (no plan qualifies). */
static void pct_cell(kr__sb *sb, double v)
{
    if (!isfinite(v)) {
        kr__sb_puts(sb, "<td>--</td>");
        return;
    }
    kr__sb_printf(sb, "<td class=\"%s\">%.1f%%</td>", v > 0.0005 ? "good" : v < -0.0005 ? "bad" : "", 100.0 * v);
}

/*
 * Inlines the SVG picture file (named by summary.json at JSON path where) from dir. The name
 * comes from input: it must be a relative path without "..", resolve (after symlinks) to a
 * file inside dir, end in ".svg" and hold an SVG document — anything else is an error, so a
 * summary can never pull /etc/shadow or a script into the page. A missing file is a note.
 */
static int inline_svg(kr__sb *sb, const char *dir, const char *file, const char *caption, const char *summary,
                      const char *where, kr_error *err)
{
    size_t n = strlen(file);
    int bad = n == 0 || file[0] == '/' || n < 5 || strcmp(file + n - 4, ".svg") != 0 || strcmp(file, "..") == 0 ||
              strncmp(file, "../", 3) == 0 || strstr(file, "/../") != NULL ||
              (n >= 3 && strcmp(file + n - 3, "/..") == 0);
    if (bad)
        return kr_error_set(err, KR_EINVAL, "%s: %s: expected a relative .svg file name inside the output directory, "
                            "found '%s'", summary, where, file);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *rdir = realpath(dir, NULL), *rfile = realpath(path, NULL);
    if (rfile == NULL) {
        free(rdir);
        kr__sb_puts(sb, "<p class=\"bad\">missing picture ");
        kr__sb_xml(sb, file);
        kr__sb_puts(sb, "</p>\n");
        return KR_OK;
    }
    size_t dl = rdir ? strlen(rdir) : 0;
    int inside = rdir && strncmp(rfile, rdir, dl) == 0 && (rfile[dl] == '/' || (dl == 1 && rdir[0] == '/'));
    free(rdir);
    free(rfile);
    if (!inside)
        return kr_error_set(err, KR_EINVAL, "%s: %s: expected a picture inside the output directory %s, found '%s' "
                            "(resolves outside it)", summary, where, dir, file);
    char *text;
    size_t len;
    int rc = kr__read_text(path, &text, &len, 0, err);
    if (rc)
        return rc;
    const char *t = text;
    while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
        t++;
    if (strncmp(t, "<svg", 4) != 0 && strncmp(t, "<?xml", 5) != 0) {
        rc = kr_error_set(err, KR_EPARSE, "%s: %s: %s: expected an SVG document, found '%.20s'", summary, where, path, t);
        free(text);
        return rc;
    }
    kr__sb_puts(sb, "<figure>");
    kr__sb_puts(sb, text);
    kr__sb_puts(sb, "<figcaption>");
    kr__sb_xml(sb, caption);
    kr__sb_puts(sb, " (<a href=\"");
    kr__sb_xml(sb, file);
    kr__sb_puts(sb, "\">SVG file</a>)</figcaption></figure>\n");
    free(text);
    return KR_OK;
}

static void card(kr__sb *sb, const char *label, double v, const char *suffix)
{
    kr__sb_puts(sb, "<div class=\"card\"><div class=\"v\">");
    if (isfinite(v))
        kr__sb_printf(sb, "%.1f%s", 100.0 * v, suffix);
    else
        kr__sb_puts(sb, "--");
    kr__sb_puts(sb, "</div><div class=\"l\">");
    kr__sb_xml(sb, label);
    kr__sb_puts(sb, "</div></div>\n");
}

static void header(kr__sb *sb, const kr__summary *s)
{
    kr__sb_puts(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Kareus report: ");
    kr__sb_xml(sb, s->job_name);
    kr__sb_printf(sb, "</title><style>%s</style></head><body>\n", css);
    kr__sb_puts(sb, "<h1>Kareus report — ");
    kr__sb_xml(sb, s->job_name);
    kr__sb_puts(sb, "</h1>\n<p class=\"sub\">");
    kr__sb_xml(sb, s->job_summary);
    kr__sb_puts(sb, "<br>search ");
    kr__sb_xml(sb, s->strategy);
    kr__sb_puts(sb, ", solver cost model ");
    kr__sb_xml(sb, s->cost_model);
    kr__sb_printf(sb, ", unit time %g ms, backend ", 1e3 * s->unit_time_s);
    kr__sb_xml(sb, s->backend);
    kr__sb_puts(sb, "</p>\n");
}

/* Headline: Kareus against the reference and the baseline. */
static void headline(kr__sb *sb, const kr__summary *s)
{
    const kr_metric_row *k = NULL;
    for (int i = 0; i < s->nrows; i++)
        if (strcmp(s->rows[i].method, "Kareus") == 0)
            k = &s->rows[i].m;
    if (k == NULL)
        return;
    kr__sb_puts(sb, "<h2>Headline</h2>\n<div class=\"headline\">\n");
    card(sb, "energy saved at iso-time vs Perseus (10-point frontiers)", k->iso_time_10pt, "%");
    card(sb, "time saved at iso-energy vs Perseus (10-point frontiers)", k->iso_energy_10pt, "%");
    card(sb, "max-throughput time saved vs Megatron", k->mt_time_red, "%");
    card(sb, "max-throughput energy saved vs Megatron", k->mt_energy_red, "%");
    card(sb, "mean energy saved over the common time range vs Perseus", k->robust_mean, "%");
    kr__sb_puts(sb, "</div>\n<p class=\"note\">The paper reports up to 28.3% energy at iso-time and up to 27.5% time at "
                    "iso-energy on 16 A100s; these figures come from the simulator (see docs/results.md for the "
                    "discussion).</p>\n");
}

static void methods_table(kr__sb *sb, const kr__summary *s)
{
    if (s->nmethods < 0)
        return;
    kr__sb_puts(sb, "<h2>Methods</h2>\n<table><tr><th>method</th><th>execution</th><th>clocks</th><th>frontier steps</th>"
                    "<th>fastest (s)</th><th>its energy (kJ)</th><th>most frugal (s)</th><th>its energy (kJ)</th></tr>\n");
    for (int i = 0; i < s->nmethods; i++) {
        const kr__sum_method *m = &s->methods[i];
        kr__sb_puts(sb, "<tr><td>");
        kr__sb_xml(sb, m->name);
        kr__sb_puts(sb, "</td><td>");
        kr__sb_xml(sb, m->execution);
        kr__sb_puts(sb, "</td><td>");
        kr__sb_xml(sb, m->clocks);
        kr__sb_printf(sb, "</td><td>%d</td><td>%.4f</td><td>%.2f</td><td>%.4f</td><td>%.2f</td></tr>\n", m->steps,
                      m->fastest.time_s, m->fastest.energy_j / 1e3, m->frugal.time_s, m->frugal.energy_j / 1e3);
    }
    kr__sb_puts(sb, "</table>\n");
}

static void comparison_table(kr__sb *sb, const kr__summary *s)
{
    if (s->nrows < 0)
        return;
    kr__sb_puts(sb, "<h2>Comparison</h2>\n<table><tr><th>method</th><th>max-throughput time vs Megatron</th>"
                    "<th>max-throughput energy vs Megatron</th><th>iso-time energy vs Perseus (10 pt)</th>"
                    "<th>iso-energy time vs Perseus (10 pt)</th><th>iso-time energy (full)</th>"
                    "<th>iso-energy time (full)</th><th>robust mean</th><th>robust max</th></tr>\n");
    for (int i = 0; i < s->nrows; i++) {
        const kr_metric_row *r = &s->rows[i].m;
        kr__sb_puts(sb, "<tr><td>");
        kr__sb_xml(sb, s->rows[i].method);
        kr__sb_puts(sb, "</td>");
        const double cells[8] = {r->mt_time_red,   r->mt_energy_red, r->iso_time_10pt, r->iso_energy_10pt,
                                 r->iso_time_full, r->iso_energy_full, r->robust_mean, r->robust_max};
        for (int k = 0; k < 8; k++)
            pct_cell(sb, cells[k]);
        kr__sb_puts(sb, "</tr>\n");
    }
    kr__sb_puts(sb, "</table>\n<p class=\"note\">Reductions are positive when the method is better. \"--\": no plan of "
                    "the method qualifies (as in the paper's tables). 10-point frontiers are chosen by the artifact's "
                    "rule; \"full\" uses every solver step; \"robust\" compares the two lower envelopes at every "
                    "iteration time both frontiers reach.</p>\n");
}

static void validation_table(kr__sb *sb, const kr__summary *s)
{
    if (!s->has_validation)
        return;
    kr__sb_puts(sb, "<h2>Solver prediction against the pipeline simulation</h2>\n<table><tr><th>method</th><th>plan</th>"
                    "<th>predicted time (s)</th><th>simulated time (s)</th><th>difference</th><th>predicted energy (kJ)</th>"
                    "<th>simulated energy (kJ)</th><th>difference</th></tr>\n");
    for (int i = 0; i < s->nvplans; i++) {
        const kr__sum_vplan *p = &s->vplans[i];
        double pt = p->pred_time_s, st = p->sim_time_s, pe = p->pred_energy_j, se = p->sim_energy_j;
        kr__sb_puts(sb, "<tr><td>");
        kr__sb_xml(sb, p->method);
        kr__sb_puts(sb, "</td><td>");
        kr__sb_xml(sb, p->label);
        kr__sb_printf(sb, "</td><td>%.4f</td><td>%.4f</td><td>%+.2f%%</td><td>%.2f</td><td>%.2f</td><td>%+.2f%%</td></tr>\n", pt,
                      st, 100 * (st - pt) / pt, pe / 1e3, se / 1e3, 100 * (se - pe) / pe);
    }
    kr__sb_puts(sb, "</table>\n<p class=\"note\">");
    kr__sb_xml(sb, s->note);
    kr__sb_puts(sb, "</p>\n");
}

/* A section of pictures (timelines or partitions), each inlined; nothing when the list is empty. */
static int picture_section(kr__sb *sb, const char *dir, const char *heading, const kr__sum_picture *pics, int n,
                           const char *list, const char *path, kr_error *err)
{
    if (n <= 0)
        return KR_OK;
    kr__sb_printf(sb, "<h2>%s</h2>\n", heading);
    for (int i = 0; i < n; i++) {
        char where[64];
        snprintf(where, sizeof where, "$.pictures.%s[%d].file", list, i);
        int rc = inline_svg(sb, dir, pics[i].file, pics[i].title, path, where, err);
        if (rc)
            return rc;
    }
    return KR_OK;
}

static void search_table(kr__sb *sb, const kr__summary *s)
{
    if (s->nsearch <= 0)
        return;
    kr__sb_puts(sb, "<h2>Partition search</h2>\n<table><tr><th>variant</th><th>partition</th><th>measured</th>"
                    "<th>space</th><th>share</th><th>frontier points</th></tr>\n");
    for (int i = 0; i < s->nsearch; i++) {
        const kr__sum_search *x = &s->search[i];
        kr__sb_puts(sb, "<tr><td>");
        kr__sb_xml(sb, x->variant);
        kr__sb_puts(sb, "</td><td>");
        kr__sb_xml(sb, x->key);
        kr__sb_printf(sb, "</td><td>%lld</td><td>%lld</td><td>%.0f%%</td><td>%d</td></tr>\n", x->measured, x->space,
                      100 * (double)x->measured / (double)x->space, x->frontier_points);
    }
    kr__sb_puts(sb, "</table>\n");
}

/* The page of summary s (read from path) into sb, pictures inlined from dir. */
static int render(kr__sb *sb, const char *dir, const kr__summary *s, const char *path, kr_error *err)
{
    int rc;
    header(sb, s);
    headline(sb, s);
    if (s->pic_frontiers[0]) {
        kr__sb_puts(sb, "<h2>Frontiers</h2>\n");
        if ((rc = inline_svg(sb, dir, s->pic_frontiers,
                             "Iteration time against whole-cluster energy for every method; dashed: Perseus's fastest "
                             "plan (iso-time) and most frugal plan (iso-energy).",
                             path, "$.pictures.frontiers", err)))
            return rc;
    }
    methods_table(sb, s);
    comparison_table(sb, s);
    validation_table(sb, s);
    if ((rc = picture_section(sb, dir, "Pipeline timelines", s->timelines, s->ntimelines, "timelines", path, err)) ||
        (rc = picture_section(sb, dir, "Inside a partition", s->partitions, s->npartitions, "partitions", path, err)))
        return rc;
    search_table(sb, s);
    kr__sb_puts(sb, "<p class=\"note\">Generated by kareus from summary.json; plans, frontiers (CSV/JSON) and options are in "
                    "the same directory.</p>\n</body></html>\n");
    return KR_OK;
}

int kr_report_html(const char *dir, kr_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    kr__summary *s;
    int rc = kr__report_summary_read(path, &s, err);
    if (rc)
        return rc;
    kr__sb sb = {0};
    rc = render(&sb, dir, s, path, err);
    free(s);
    if (rc) {
        kr__sb_free(&sb);
        return rc;
    }
    snprintf(path, sizeof path, "%s/report.html", dir);
    return kr__sb_write_atomic(&sb, path, err);
}
