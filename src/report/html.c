/*
 * html.c — the HTML report of an optimize output directory (see report.h).
 *
 * The page is generated from summary.json alone, so `kareus report DIR` can rebuild it at any
 * time, and every SVG it names is inlined so the page stays one self-contained file that opens
 * in any browser. Missing optional parts of the summary are skipped, not errors; a summary of
 * the wrong schema or version is an error with its JSON path.
 */
#include "kareus/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

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

int kr_report_html(const char *dir, kr_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *root;
    int rc = kr__json_load_file(path, &root, err);
    if (rc)
        return rc;
    kr__jctx c;
    kr__jctx_init(&c, path, err);
    char schema[32];
    long long version;
    if ((rc = kr__jobject(&c, root, NULL)) || (rc = kr__jstr(&c, root, "schema", 1, NULL, schema, sizeof schema)))
        goto done;
    if (strcmp(schema, "kareus.summary") != 0) {
        rc = kr__jfail(&c, KR_EPARSE, "schema", "\"kareus.summary\"", json_object_get(root, "schema"));
        goto done;
    }
    if ((rc = kr__jint(&c, root, "version", 1, 1, 1, 1, &version)))
        goto done;

    const json_t *job = json_object_get(root, "job"), *settings = json_object_get(root, "settings");
    const json_t *metrics = json_object_get(root, "metrics"), *methods = json_object_get(root, "methods");
    kr__sb sb = {0};
    kr__sb_puts(&sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Kareus report: ");
    kr__sb_xml(&sb, str(job, "name"));
    kr__sb_printf(&sb, "</title><style>%s</style></head><body>\n", css);
    kr__sb_puts(&sb, "<h1>Kareus report — ");
    kr__sb_xml(&sb, str(job, "name"));
    kr__sb_puts(&sb, "</h1>\n<p class=\"sub\">");
    kr__sb_xml(&sb, str(job, "summary"));
    kr__sb_puts(&sb, "<br>search ");
    kr__sb_xml(&sb, str(settings, "strategy"));
    kr__sb_puts(&sb, ", solver cost model ");
    kr__sb_xml(&sb, str(settings, "cost_model"));
    kr__sb_printf(&sb, ", unit time %g ms, backend ", 1e3 * num(settings, "unit_time_s"));
    kr__sb_xml(&sb, str(settings, "backend"));
    kr__sb_puts(&sb, "</p>\n");

    /* Headline: Kareus against the reference and the baseline. */
    const json_t *rows = json_object_get(metrics, "rows");
    const json_t *kareus = NULL;
    for (size_t i = 0; json_is_array(rows) && i < json_array_size(rows); i++)
        if (strcmp(str(json_array_get(rows, i), "method"), "Kareus") == 0)
            kareus = json_array_get(rows, i);
    if (kareus) {
        kr__sb_puts(&sb, "<h2>Headline</h2>\n<div class=\"headline\">\n");
        card(&sb, "energy saved at iso-time vs Perseus (10-point frontiers)", num(kareus, "iso_time_energy_reduction_10pt"), "%");
        card(&sb, "time saved at iso-energy vs Perseus (10-point frontiers)", num(kareus, "iso_energy_time_reduction_10pt"), "%");
        card(&sb, "max-throughput time saved vs Megatron", num(kareus, "max_throughput_time_reduction"), "%");
        card(&sb, "max-throughput energy saved vs Megatron", num(kareus, "max_throughput_energy_reduction"), "%");
        card(&sb, "mean energy saved over the common time range vs Perseus", num(kareus, "robust_mean"), "%");
        kr__sb_puts(&sb, "</div>\n<p class=\"note\">The paper reports up to 28.3% energy at iso-time and up to 27.5% time at "
                         "iso-energy on 16 A100s; these figures come from the simulator (see docs/results.md for the "
                         "discussion).</p>\n");
    }

    const json_t *pics = json_object_get(root, "pictures");
    if (json_is_string(json_object_get(pics, "frontiers"))) {
        kr__sb_puts(&sb, "<h2>Frontiers</h2>\n");
        if ((rc = inline_svg(&sb, dir, str(pics, "frontiers"),
                             "Iteration time against whole-cluster energy for every method; dashed: Perseus's fastest "
                             "plan (iso-time) and most frugal plan (iso-energy).",
                             path, "$.pictures.frontiers", err)))
            goto fail;
    }

    if (json_is_array(methods)) {
        kr__sb_puts(&sb, "<h2>Methods</h2>\n<table><tr><th>method</th><th>execution</th><th>clocks</th><th>frontier steps</th>"
                         "<th>fastest (s)</th><th>its energy (kJ)</th><th>most frugal (s)</th><th>its energy (kJ)</th></tr>\n");
        for (size_t i = 0; i < json_array_size(methods); i++) {
            const json_t *m = json_array_get(methods, i);
            const json_t *f = json_object_get(m, "fastest"), *g = json_object_get(m, "frugal");
            kr__sb_puts(&sb, "<tr><td>");
            kr__sb_xml(&sb, str(m, "name"));
            kr__sb_puts(&sb, "</td><td>");
            kr__sb_xml(&sb, str(m, "execution"));
            kr__sb_puts(&sb, "</td><td>");
            kr__sb_xml(&sb, str(m, "clocks"));
            kr__sb_printf(&sb, "</td><td>%.0f</td><td>%.4f</td><td>%.2f</td><td>%.4f</td><td>%.2f</td></tr>\n", num(m, "steps"),
                          num(f, "time_s"), num(f, "energy_j") / 1e3, num(g, "time_s"), num(g, "energy_j") / 1e3);
        }
        kr__sb_puts(&sb, "</table>\n");
    }

    if (json_is_array(rows)) {
        kr__sb_puts(&sb, "<h2>Comparison</h2>\n<table><tr><th>method</th><th>max-throughput time vs Megatron</th>"
                         "<th>max-throughput energy vs Megatron</th><th>iso-time energy vs Perseus (10 pt)</th>"
                         "<th>iso-energy time vs Perseus (10 pt)</th><th>iso-time energy (full)</th>"
                         "<th>iso-energy time (full)</th><th>robust mean</th><th>robust max</th></tr>\n");
        for (size_t i = 0; i < json_array_size(rows); i++) {
            const json_t *r = json_array_get(rows, i);
            kr__sb_puts(&sb, "<tr><td>");
            kr__sb_xml(&sb, str(r, "method"));
            kr__sb_puts(&sb, "</td>");
            pct_cell(&sb, num(r, "max_throughput_time_reduction"));
            pct_cell(&sb, num(r, "max_throughput_energy_reduction"));
            pct_cell(&sb, num(r, "iso_time_energy_reduction_10pt"));
            pct_cell(&sb, num(r, "iso_energy_time_reduction_10pt"));
            pct_cell(&sb, num(r, "iso_time_energy_reduction_full"));
            pct_cell(&sb, num(r, "iso_energy_time_reduction_full"));
            pct_cell(&sb, num(r, "robust_mean"));
            pct_cell(&sb, num(r, "robust_max"));
            kr__sb_puts(&sb, "</tr>\n");
        }
        kr__sb_puts(&sb, "</table>\n<p class=\"note\">Reductions are positive when the method is better. \"--\": no plan of "
                         "the method qualifies (as in the paper's tables). 10-point frontiers are chosen by the artifact's "
                         "rule; \"full\" uses every solver step; \"robust\" compares the two lower envelopes at every "
                         "iteration time both frontiers reach.</p>\n");
    }

    const json_t *val = json_object_get(root, "validation");
    if (json_is_object(val)) {
        kr__sb_puts(&sb, "<h2>Solver prediction against the pipeline simulation</h2>\n<table><tr><th>method</th><th>plan</th>"
                         "<th>predicted time (s)</th><th>simulated time (s)</th><th>difference</th><th>predicted energy (kJ)</th>"
                         "<th>simulated energy (kJ)</th><th>difference</th></tr>\n");
        const json_t *plans = json_object_get(val, "plans");
        for (size_t i = 0; json_is_array(plans) && i < json_array_size(plans); i++) {
            const json_t *p = json_array_get(plans, i);
            double pt = num(p, "predicted_time_s"), st = num(p, "simulated_time_s");
            double pe = num(p, "predicted_energy_j"), se = num(p, "simulated_energy_j");
            kr__sb_puts(&sb, "<tr><td>");
            kr__sb_xml(&sb, str(p, "method"));
            kr__sb_puts(&sb, "</td><td>");
            kr__sb_xml(&sb, str(p, "label"));
            kr__sb_printf(&sb, "</td><td>%.4f</td><td>%.4f</td><td>%+.2f%%</td><td>%.2f</td><td>%.2f</td><td>%+.2f%%</td></tr>\n", pt,
                          st, 100 * (st - pt) / pt, pe / 1e3, se / 1e3, 100 * (se - pe) / pe);
        }
        kr__sb_puts(&sb, "</table>\n<p class=\"note\">");
        kr__sb_xml(&sb, str(val, "note"));
        kr__sb_puts(&sb, "</p>\n");
    }

    const json_t *tl = json_object_get(pics, "timelines");
    if (json_is_array(tl) && json_array_size(tl) > 0) {
        kr__sb_puts(&sb, "<h2>Pipeline timelines</h2>\n");
        for (size_t i = 0; i < json_array_size(tl); i++) {
            char where[64];
            snprintf(where, sizeof where, "$.pictures.timelines[%zu].file", i);
            if ((rc = inline_svg(&sb, dir, str(json_array_get(tl, i), "file"), str(json_array_get(tl, i), "title"), path,
                                 where, err)))
                goto fail;
        }
    }
    const json_t *pp = json_object_get(pics, "partitions");
    if (json_is_array(pp) && json_array_size(pp) > 0) {
        kr__sb_puts(&sb, "<h2>Inside a partition</h2>\n");
        for (size_t i = 0; i < json_array_size(pp); i++) {
            char where[64];
            snprintf(where, sizeof where, "$.pictures.partitions[%zu].file", i);
            if ((rc = inline_svg(&sb, dir, str(json_array_get(pp, i), "file"), str(json_array_get(pp, i), "title"), path,
                                 where, err)))
                goto fail;
        }
    }

    const json_t *search = json_object_get(root, "search");
    if (json_is_array(search) && json_array_size(search) > 0) {
        kr__sb_puts(&sb, "<h2>Partition search</h2>\n<table><tr><th>variant</th><th>partition</th><th>measured</th>"
                         "<th>space</th><th>share</th><th>frontier points</th></tr>\n");
        for (size_t i = 0; i < json_array_size(search); i++) {
            const json_t *s = json_array_get(search, i);
            kr__sb_puts(&sb, "<tr><td>");
            kr__sb_xml(&sb, str(s, "variant"));
            kr__sb_puts(&sb, "</td><td>");
            kr__sb_xml(&sb, str(s, "key"));
            kr__sb_printf(&sb, "</td><td>%.0f</td><td>%.0f</td><td>%.0f%%</td><td>%.0f</td></tr>\n", num(s, "measured"),
                          num(s, "space"), 100 * num(s, "measured") / num(s, "space"), num(s, "frontier_points"));
        }
        kr__sb_puts(&sb, "</table>\n");
    }
    kr__sb_puts(&sb, "<p class=\"note\">Generated by kareus from summary.json; plans, frontiers (CSV/JSON) and options are in "
                     "the same directory.</p>\n</body></html>\n");
    snprintf(path, sizeof path, "%s/report.html", dir);
    rc = kr__sb_write_atomic(&sb, path, err);
    goto done;
fail:
    kr__sb_free(&sb);
done:
    json_decref(root);
    return rc;
}
