/*
 * svg.c — SVG pictures: frontier charts and pipeline timelines (see report.h).
 *
 * Hand-written SVG on purpose: the pictures are simple (axes, lines, boxes, text) and an SVG file
 * is readable, diffable and opens in any browser, so a plotting dependency would buy little.
 * Axis ticks use the 1-2-5 rule; energies are shown in kJ or MJ as their size suggests.
 */
#include "kareus/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Method palette (colour-blind friendly, Okabe–Ito) and a dark grey for anything else. */
static const char *const palette[] = {"#7f7f7f", "#0072B2", "#E69F00", "#CC79A7", "#009E73",
                                      "#D55E00", "#56B4E9", "#F0E442", "#000000"};

/* Fixed colours for the five methods so every chart reads the same; others use the palette. */
static const char *series_colour(const char *name, int index)
{
    static const struct {
        const char *name, *colour;
    } fixed[] = {{"Megatron", "#7f7f7f"},        {"Perseus", "#0072B2"},
                 {"Nanobatching", "#E69F00"},    {"Nanobatching+Perseus", "#CC79A7"},
                 {"N+P", "#CC79A7"},             {"Kareus", "#009E73"}};
    for (size_t i = 0; name && i < KR_ARRAY_LEN(fixed); i++)
        if (strcmp(name, fixed[i].name) == 0)
            return fixed[i].colour;
    return palette[(index + 5) % (int)KR_ARRAY_LEN(palette)];
}

static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1.0;
    double raw = range / target, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    double nice = f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0;
    return nice * mag;
}

/* A plot area mapping data coordinates to pixels. */
typedef struct area {
    double x0, x1, y0, y1;     /* data range */
    double px, py, pw, ph;     /* pixel box */
} area;

static double ax(const area *a, double x)
{
    return a->px + (x - a->x0) / (a->x1 - a->x0) * a->pw;
}

static double ay(const area *a, double y)
{
    return a->py + a->ph - (y - a->y0) / (a->y1 - a->y0) * a->ph;
}

static void header(kr__sb *sb, int w, int h)
{
    kr__sb_printf(sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                  w, h, w, h);
}

static void text(kr__sb *sb, double x, double y, const char *anchor, const char *extra, const char *s)
{
    kr__sb_printf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, extra ? extra : "");
    kr__sb_xml(sb, s);
    kr__sb_puts(sb, "</text>\n");
}

/* Axes, grid and tick labels; xscale/yscale divide the data values for the labels. */
static void axes(kr__sb *sb, const area *a, const char *xlabel, const char *ylabel, double yscale)
{
    double xs = nice_step(a->x1 - a->x0, 8), ys = nice_step(a->y1 - a->y0, 6);
    char buf[64];
    for (double x = ceil(a->x0 / xs) * xs; x <= a->x1 + 1e-9 * xs; x += xs) {
        double X = ax(a, x);
        kr__sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", X, a->py, X,
                      a->py + a->ph);
        snprintf(buf, sizeof buf, "%g", fabs(x) < 1e-12 * xs ? 0.0 : x);
        text(sb, X, a->py + a->ph + 18, "middle", NULL, buf);
    }
    for (double y = ceil(a->y0 / ys) * ys; y <= a->y1 + 1e-9 * ys; y += ys) {
        double Y = ay(a, y);
        kr__sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", a->px, Y,
                      a->px + a->pw, Y);
        snprintf(buf, sizeof buf, "%g", (fabs(y) < 1e-12 * ys ? 0.0 : y) / yscale);
        text(sb, a->px - 8, Y + 4, "end", NULL, buf);
    }
    kr__sb_printf(sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                  a->px, a->py, a->pw, a->ph);
    text(sb, a->px + a->pw / 2, a->py + a->ph + 40, "middle", NULL, xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", a->px - 58, a->py + a->ph / 2);
    text(sb, a->px - 58, a->py + a->ph / 2, "middle", rot, ylabel);
}

static int finish(kr__sb *sb, char **out, kr_error *err)
{
    kr__sb_puts(sb, "</svg>\n");
    if (sb->oom) {
        kr__sb_free(sb);
        return kr_error_set(err, KR_ENOMEM, "svg: out of memory");
    }
    *out = sb->buf;
    return KR_OK;
}

static int write_svg(const char *path, char *svg, kr_error *err)
{
    int rc = kr__write_file_atomic(path, svg, strlen(svg), err);
    free(svg);
    return rc;
}

/* ---- frontier chart --------------------------------------------------------------------- */

/* A chart point in time order (ties keep their input order, as the insertion sort did). */
typedef struct point {
    double t, e;
    int i;
} point;

static int cmp_point(const void *a, const void *b)
{
    const point *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The dashed iso lines of the reference: its fastest time (vertical), its lowest energy. */
static void iso_marks(kr__sb *sb, const area *a, const kr_chart_marks *marks)
{
    if (marks && isfinite(marks->iso_time_s)) {
        double X = ax(a, marks->iso_time_s);
        kr__sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"6 4\"/>\n",
                      X, a->py, X, a->py + a->ph);
        char lab[96];
        snprintf(lab, sizeof lab, "iso-time (%s fastest)", marks->iso_label ? marks->iso_label : "reference");
        char rot[96];
        snprintf(rot, sizeof rot, "fill=\"#555\" font-size=\"11\" transform=\"rotate(-90 %.1f %.1f)\"", X - 5, a->py + 8);
        text(sb, X - 5, a->py + 8, "end", rot, lab);
    }
    if (marks && isfinite(marks->iso_energy_j)) {
        double Y = ay(a, marks->iso_energy_j);
        kr__sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"2 4\"/>\n",
                      a->px, Y, a->px + a->pw, Y);
        char lab[96];
        snprintf(lab, sizeof lab, "iso-energy (%s most frugal)", marks->iso_label ? marks->iso_label : "reference");
        text(sb, a->px + 6, Y - 5, "start", "fill=\"#555\" font-size=\"11\"", lab);
    }
}

/* One series: its line by time (a frontier), its points, its highlighted point. */
static int series_draw(kr__sb *sb, const area *a, const kr_chart_series *se, const char *col, kr_error *err)
{
    if (se->connect && se->n > 1) {
        /* sort by time for the line */
        point *ord = malloc(sizeof(point) * (size_t)se->n);
        if (ord == NULL)
            return kr_error_set(err, KR_ENOMEM, "svg: out of memory");
        for (int i = 0; i < se->n; i++)
            ord[i] = (point){se->time_s[i], se->energy_j[i], i};
        qsort(ord, (size_t)se->n, sizeof *ord, cmp_point); /* by time, stable by index */
        kr__sb_printf(sb, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
        for (int i = 0; i < se->n; i++)
            kr__sb_printf(sb, "%.1f,%.1f ", ax(a, ord[i].t), ay(a, ord[i].e));
        kr__sb_puts(sb, "\"/>\n");
        free(ord);
    }
    double r = se->n > 60 ? 1.8 : 3.5;
    for (int i = 0; i < se->n; i++) {
        double X = ax(a, se->time_s[i]), Y = ay(a, se->energy_j[i]);
        if (!se->connect || se->n == 1)
            kr__sb_printf(sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\" stroke=\"black\"/>\n",
                          X - 5.5, Y - 5.5, col);
        else
            kr__sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n", X, Y, r, col);
        if (i == se->highlight)
            kr__sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                          X, Y, col);
    }
    return KR_OK;
}

static void legend(kr__sb *sb, const area *a, const kr_chart_series *series, int nseries)
{
    double lx = a->px + a->pw + 20, ly = a->py + 10;
    text(sb, lx, ly, "start", "font-weight=\"bold\"", "method");
    for (int s = 0; s < nseries; s++) {
        const char *col = series_colour(series[s].name, s);
        double y = ly + 24 + 22 * s;
        if (series[s].connect && series[s].n > 1)
            kr__sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n", lx,
                          y - 4, lx + 22, y - 4, col);
        else
            kr__sb_printf(sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\" stroke=\"black\"/>\n",
                          lx + 5, y - 10, col);
        char lab[160];
        if (series[s].n > 1)
            snprintf(lab, sizeof lab, "%s (%d plans)", series[s].name, series[s].n);
        else
            snprintf(lab, sizeof lab, "%s", series[s].name);
        text(sb, lx + 30, y, "start", NULL, lab);
    }
}

int kr_svg_frontiers_text(char **svg, const char *title, const kr_chart_series *series, int nseries,
                          const kr_chart_marks *marks, kr_error *err)
{
    double tmin = INFINITY, tmax = -INFINITY, emin = INFINITY, emax = -INFINITY;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++) {
            double t = series[s].time_s[i], e = series[s].energy_j[i];
            if (!isfinite(t) || !isfinite(e))
                return kr_error_set(err, KR_EINVAL, "svg: series '%s' point %d: expected finite values, found %g s, %g J",
                                    series[s].name, i, t, e);
            tmin = KR_MIN(tmin, t), tmax = KR_MAX(tmax, t), emin = KR_MIN(emin, e), emax = KR_MAX(emax, e);
        }
    if (!isfinite(tmin))
        return kr_error_set(err, KR_EINVAL, "svg: expected at least one point to draw, found none");
    double padt = KR_MAX((tmax - tmin) * 0.06, tmax * 0.01), pade = KR_MAX((emax - emin) * 0.08, emax * 0.01);
    area a = {tmin - padt, tmax + padt, emin - pade, emax + pade, 90, 50, 640, 400};
    double yscale = emax >= 2e6 ? 1e6 : 1e3;
    const char *yunit = yscale == 1e6 ? "MJ" : "kJ";
    int W = 1060, H = 520;
    kr__sb sb = {0};
    header(&sb, W, H);
    text(&sb, a.px + a.pw / 2, 28, "middle", "font-size=\"16\" font-weight=\"bold\"", title);
    char ylabel[64];
    snprintf(ylabel, sizeof ylabel, "energy per iteration, whole cluster (%s)", yunit);
    axes(&sb, &a, "iteration time (s)", ylabel, yscale);
    iso_marks(&sb, &a, marks);
    for (int s = 0; s < nseries; s++) {
        int rc = series_draw(&sb, &a, &series[s], series_colour(series[s].name, s), err);
        if (rc) {
            kr__sb_free(&sb);
            return rc;
        }
    }
    legend(&sb, &a, series, nseries);
    return finish(&sb, svg, err);
}

int kr_svg_frontiers(const char *path, const char *title, const kr_chart_series *series, int nseries,
                     const kr_chart_marks *marks, kr_error *err)
{
    char *svg = NULL;
    int rc = kr_svg_frontiers_text(&svg, title, series, nseries, marks, err);
    return rc ? rc : write_svg(path, svg, err);
}

/* ---- pipeline timeline -------------------------------------------------------------------- */

/* A blue → green → yellow scale (viridis-like endpoints), u in [0, 1]. */
static void clock_colour(double u, char *buf, size_t cap)
{
    static const double stops[5][3] = {
        {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (!(u >= 0))
        u = 0;
    if (u > 1)
        u = 1;
    double x = u * 4;
    int i = (int)x;
    if (i >= 4)
        i = 3;
    double f = x - i;
    int r = (int)lround(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]));
    int g = (int)lround(stops[i][1] + f * (stops[i + 1][1] - stops[i][1]));
    int b = (int)lround(stops[i][2] + f * (stops[i + 1][2] - stops[i][2]));
    snprintf(buf, cap, "#%02x%02x%02x", r, g, b);
}

int kr_svg_timeline_text(char **svg, const char *title, const kr_pipe_result *r, const kr_job *job, kr_error *err)
{
    if (r->nevents < 1 || !(r->time_s > 0))
        return kr_error_set(err, KR_EINVAL, "svg: expected a simulated iteration with events, found none");
    int S = r->stages;
    int fmin = 1 << 30, fmax = 0;
    for (int i = 0; i < r->nevents; i++) {
        fmin = KR_MIN(fmin, r->events[i].freq_mhz);
        fmax = KR_MAX(fmax, r->events[i].freq_mhz);
    }
    int row = 46, W = 1100;
    area a = {0, r->time_s, 0, 1, 120, 60, 900, (double)row * S};
    int H = (int)(a.py + a.ph + 110);
    kr__sb sb = {0};
    header(&sb, W, H);
    kr__sb_puts(&sb, "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                     "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
                     "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c8c8c8\" stroke-width=\"2\"/></pattern></defs>\n");
    text(&sb, a.px + a.pw / 2, 26, "middle", "font-size=\"16\" font-weight=\"bold\"", title);
    char sub[256];
    snprintf(sub, sizeof sub, "iteration %.4f s, %.1f kJ for %d GPUs; hatched = idle (bubble or waiting on a neighbour stage)",
             r->time_s, r->energy_j / 1e3, job ? kr_job_gpus_total(job) : 0);
    text(&sb, a.px + a.pw / 2, 45, "middle", "fill=\"#444\" font-size=\"12\"", sub);
    /* time axis */
    double xs = nice_step(r->time_s, 10);
    char buf[64];
    for (double x = 0; x <= r->time_s + 1e-9 * xs; x += xs) {
        double X = ax(&a, x);
        kr__sb_printf(&sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", X, a.py, X,
                      a.py + a.ph + 4);
        snprintf(buf, sizeof buf, "%g", x);
        text(&sb, X, a.py + a.ph + 18, "middle", NULL, buf);
    }
    text(&sb, a.px + a.pw / 2, a.py + a.ph + 38, "middle", NULL, "time in the iteration (s)");
    for (int s = 0; s < S; s++) {
        double y = a.py + row * s + 4, h = row - 8;
        kr__sb_printf(&sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#idle)\"/>\n", a.px, y,
                      a.pw, h);
        char lab[64];
        snprintf(lab, sizeof lab, "stage %d", s);
        text(&sb, a.px - 10, y + h / 2 + 1, "end", "font-weight=\"bold\"", lab);
        snprintf(lab, sizeof lab, "busy %.0f%%", 100.0 * r->stage_busy_s[s] / r->time_s);
        text(&sb, a.px - 10, y + h / 2 + 15, "end", "fill=\"#666\" font-size=\"11\"", lab);
    }
    for (int i = 0; i < r->nevents; i++) {
        const kr_pipe_event *ev = &r->events[i];
        double x0 = ax(&a, ev->start_s), x1 = ax(&a, ev->end_s);
        double y = a.py + row * ev->stage + 4, h = row - 8;
        char col[16];
        clock_colour(fmax > fmin ? (double)(ev->freq_mhz - fmin) / (fmax - fmin) : 1.0, col, sizeof col);
        kr__sb_printf(&sb,
                      "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\" "
                      "stroke-width=\"0.8\"><title>stage %d %s mb %d%s: %.4f-%.4f s at %d MHz, %.1f J per GPU</title></rect>\n",
                      x0, y, KR_MAX(x1 - x0, 0.5), h, col, ev->stage, kr_instr_kind_name(ev->kind), ev->microbatch,
                      ev->chunk ? " (chunk)" : "", ev->start_s, ev->end_s, ev->freq_mhz, ev->energy_j);
        if (x1 - x0 > 22) {
            snprintf(buf, sizeof buf, "%c%d", ev->kind == KR_INSTR_FORWARD ? 'F' : 'B', ev->microbatch);
            int light = fmax > fmin && (double)(ev->freq_mhz - fmin) / (fmax - fmin) > 0.6;
            text(&sb, (x0 + x1) / 2, y + h / 2 + 4, "middle", light ? "fill=\"black\" font-size=\"11\"" : "fill=\"white\" font-size=\"11\"",
                 buf);
        }
    }
    /* clock scale */
    double ly = a.py + a.ph + 58;
    text(&sb, a.px, ly + 12, "start", NULL, "SM clock:");
    int steps = 40;
    for (int k = 0; k < steps; k++) {
        char col[16];
        clock_colour((double)k / (steps - 1), col, sizeof col);
        kr__sb_printf(&sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"6.5\" height=\"14\" fill=\"%s\"/>\n", a.px + 75 + 6 * k, ly,
                      col);
    }
    snprintf(buf, sizeof buf, "%d MHz", fmin);
    text(&sb, a.px + 75, ly + 28, "start", "font-size=\"11\"", buf);
    snprintf(buf, sizeof buf, "%d MHz", fmax);
    text(&sb, a.px + 75 + 6 * steps, ly + 28, "end", "font-size=\"11\"", buf);
    return finish(&sb, svg, err);
}

int kr_svg_timeline(const char *path, const char *title, const kr_pipe_result *r, const kr_job *job, kr_error *err)
{
    char *svg = NULL;
    int rc = kr_svg_timeline_text(&svg, title, r, job, err);
    return rc ? rc : write_svg(path, svg, err);
}

/* ---- inside a partition --------------------------------------------------------------------- */

static const char *op_colour(const char *name, int stream)
{
    if (stream == KR_SIM_STREAM_COMM)
        return "#D55E00";
    if (strstr(name, "linear") || strstr(name, "output_layer"))
        return "#0072B2";
    if (strstr(name, "attn"))
        return "#E69F00";
    if (strstr(name, "swiglu"))
        return "#009E73";
    if (strstr(name, "rotary") || strstr(name, "qkv_post"))
        return "#CC79A7";
    return "#999999";
}

int kr_svg_partition(const char *path, const char *title, const kr_sim_timeline *tl, const char *const *titles, int n,
                     kr_error *err)
{
    if (n < 1)
        return kr_error_set(err, KR_EINVAL, "svg: expected at least one partition timeline, found none");
    double tmax = 0, pmax = 0;
    for (int k = 0; k < n; k++) {
        tmax = KR_MAX(tmax, tl[k].result.time_s);
        for (int i = 0; i < tl[k].nsegments; i++)
            pmax = KR_MAX(pmax, tl[k].segments[i].power_w);
    }
    if (!(tmax > 0))
        return kr_error_set(err, KR_EINVAL, "svg: expected timelines with a positive duration");
    pmax = ceil(pmax / 100.0) * 100.0;
    const double panel = 150, top = 56, left = 150, width = 860;
    int W = 1060, H = (int)(top + panel * n + 60);
    kr__sb sb = {0};
    header(&sb, W, H);
    text(&sb, left + width / 2, 26, "middle", "font-size=\"16\" font-weight=\"bold\"", title);
    text(&sb, left + width / 2, 44, "middle", "fill=\"#444\" font-size=\"12\"",
         "blue: GEMMs, orange: attention, green: SwiGLU, pink: rotary/QKV, grey: norms and residuals, red: the collective");
    double xs = nice_step(tmax * 1e3, 10);
    char buf[96];
    for (int k = 0; k < n; k++) {
        const kr_sim_timeline *t = &tl[k];
        double y0 = top + panel * k;
        area a = {0, tmax, 0, pmax, left, y0 + 76, width, 46};
        text(&sb, left, y0 + 12, "start", "font-weight=\"bold\"", titles ? titles[k] : "");
        snprintf(buf, sizeof buf, "%.3f ms, %.2f J per GPU", t->result.time_s * 1e3, t->result.energy_j);
        text(&sb, left + width, y0 + 12, "end", "fill=\"#444\"", buf);
        for (int row = 0; row < 2; row++) {
            double y = y0 + 18 + 27 * row;
            text(&sb, left - 8, y + 16, "end", NULL, row == 0 ? "compute" : "comm");
            kr__sb_printf(&sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"22\" fill=\"#f6f6f6\"/>\n", left, y,
                          width);
        }
        for (int i = 0; i < t->nevents; i++) {
            const kr_sim_event *ev = &t->events[i];
            double x0 = ax(&a, ev->start_s), x1 = ax(&a, ev->end_s);
            double y = y0 + 18 + 27 * (ev->stream == KR_SIM_STREAM_COMM);
            kr__sb_printf(&sb,
                          "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"22\" fill=\"%s\" stroke=\"white\" "
                          "stroke-width=\"0.6\"><title>%s: %.3f-%.3f ms, %.0f W</title></rect>\n",
                          x0, y, KR_MAX(x1 - x0, 0.5), op_colour(ev->name, ev->stream), ev->name, ev->start_s * 1e3,
                          ev->end_s * 1e3, ev->power_w);
            if (x1 - x0 > 60) {
                kr__sb_printf(&sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"white\" font-size=\"11\">",
                              (x0 + x1) / 2, y + 15);
                kr__sb_xml(&sb, ev->name);
                kr__sb_puts(&sb, "</text>\n");
            }
        }
        /* board power as a step function */
        kr__sb_printf(&sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#ccc\"/>\n",
                      a.px, a.py, a.pw, a.ph);
        kr__sb_puts(&sb, "<polyline fill=\"none\" stroke=\"#333\" stroke-width=\"1.3\" points=\"");
        for (int i = 0; i < t->nsegments; i++) {
            const kr_sim_segment *sg = &t->segments[i];
            kr__sb_printf(&sb, "%.1f,%.1f %.1f,%.1f ", ax(&a, sg->start_s), ay(&a, sg->power_w), ax(&a, sg->end_s),
                          ay(&a, sg->power_w));
        }
        kr__sb_puts(&sb, "\"/>\n");
        text(&sb, left - 8, a.py + 10, "end", "font-size=\"11\"", "power (W)");
        snprintf(buf, sizeof buf, "%.0f", pmax);
        text(&sb, left - 8, a.py + 22, "end", "font-size=\"10\" fill=\"#666\"", buf);
        text(&sb, left - 8, a.py + a.ph, "end", "font-size=\"10\" fill=\"#666\"", "0");
    }
    double yb = top + panel * n;
    for (double x = 0; x <= tmax * 1e3 + 1e-9 * xs; x += xs) {
        double X = left + x / (tmax * 1e3) * width;
        snprintf(buf, sizeof buf, "%g", x);
        text(&sb, X, yb + 6, "middle", NULL, buf);
    }
    text(&sb, left + width / 2, yb + 26, "middle", NULL, "time in the partition (ms)");
    char *svg = NULL;
    int rc = finish(&sb, &svg, err);
    return rc ? rc : write_svg(path, svg, err);
}
