/* test_report.c — SVG pictures: well-formed output with the expected elements, errors on bad input;
 * the summary reader and the HTML report built from it. */
#include "testutil.h"

#include <math.h>

#include "kareus/report.h"
#include "report/summary.h"
#include "util/util.h"

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void frontier_chart_has_series_legend_and_iso_lines(void **state)
{
    (void)state;
    double pt[20], pe[20], kt[30], ke[30], mt[1] = {1.95}, me[1] = {860e3};
    for (int i = 0; i < 20; i++) {
        pt[i] = 1.8 + 0.02 * i;
        pe[i] = 830e3 - 60e3 * (1 - exp(-i / 6.0));
    }
    for (int i = 0; i < 30; i++) {
        kt[i] = 1.6 + 0.02 * i;
        ke[i] = 760e3 - 70e3 * (1 - exp(-i / 8.0));
    }
    kr_chart_series s[3] = {{"Megatron", 1, mt, me, 0, -1}, {"Perseus", 20, pt, pe, 1, -1}, {"Kareus", 30, kt, ke, 1, 0}};
    kr_chart_marks m = {pt[0], pe[19], "Perseus"};
    char *svg;
    kr_error e = {0};
    assert_int_equal(kr_svg_frontiers_text(&svg, "test <frontiers>", s, 3, &m, &e), KR_OK);
    assert_non_null(strstr(svg, "<svg xmlns"));
    assert_non_null(strstr(svg, "</svg>"));
    assert_non_null(strstr(svg, "test &lt;frontiers&gt;"));
    assert_non_null(strstr(svg, "Kareus (30 plans)"));
    assert_non_null(strstr(svg, "iso-time (Perseus fastest)"));
    assert_non_null(strstr(svg, "iso-energy (Perseus most frugal)"));
    assert_int_equal(count(svg, "<polyline"), 2);
    assert_true(count(svg, "<circle") >= 50);
    const char *dir = kr_test_tmpdir("report_svg");
    char path[1200];
    snprintf(path, sizeof path, "%s/frontiers.svg", dir);
    assert_int_equal(kr_svg_frontiers(path, "frontiers", s, 3, &m, &e), KR_OK);
    free(svg);
    double bad[1] = {NAN};
    kr_chart_series b = {"bad", 1, bad, me, 0, -1};
    KR_ASSERT_ERR(kr_svg_frontiers_text(&svg, "x", &b, 1, NULL, &e), KR_EINVAL, e, "series 'bad' point 0");
    KR_ASSERT_ERR(kr_svg_frontiers_text(&svg, "x", s, 0, NULL, &e), KR_EINVAL, e, "at least one point");
}

static void timeline_draws_every_instruction(void **state)
{
    (void)state;
    kr_pipe_input in;
    memset(&in, 0, sizeof in);
    in.schedule = KR_SCHEDULE_1F1B;
    in.stages = 2;
    in.microbatches = 4;
    in.virtual_stages = 1;
    in.gpus_per_stage = 8;
    in.static_power_w = 85;
    in.p2p_time_s[0] = in.p2p_time_s[1] = 0.01;
    kr_pipe_instr st[2][8];
    kr_sched_item items[8];
    kr_error e = {0};
    for (int s = 0; s < 2; s++) {
        kr_sched_order(KR_SCHEDULE_1F1B, 2, 4, 1, s, items, 8, &e);
        for (int i = 0; i < 8; i++)
            st[s][i] = (kr_pipe_instr){items[i].kind, items[i].microbatch, 0, 900 + 30 * ((i + s) % 18),
                                       items[i].kind == KR_INSTR_FORWARD ? 0.05 : 0.15, 20.0};
        in.ninstr[s] = 8;
        in.instr[s] = st[s];
    }
    kr_pipe_result r;
    assert_int_equal(kr_pipesim_run(&in, &r, &e), KR_OK);
    char *svg;
    kr_job job;
    kr_job_default(&job);
    assert_int_equal(kr_svg_timeline_text(&svg, "timeline", &r, &job, &e), KR_OK);
    assert_int_equal(count(svg, "<title>stage"), 16);
    assert_non_null(strstr(svg, "stage 1"));
    assert_non_null(strstr(svg, "SM clock:"));
    assert_non_null(strstr(svg, "url(#idle)"));
    const char *dir = kr_test_tmpdir("report_timeline");
    char path[1200];
    snprintf(path, sizeof path, "%s/timeline.svg", dir);
    assert_int_equal(kr_svg_timeline(path, "timeline", &r, &job, &e), KR_OK);
    free(svg);
    kr_pipe_result_free(&r);
    kr_pipe_result empty = {0};
    KR_ASSERT_ERR(kr_svg_timeline_text(&svg, "x", &empty, &job, &e), KR_EINVAL, e, "expected a simulated iteration");
}

static void html_report_from_summary(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("report_html");
    char path[1200];
    double t[2] = {1.0, 1.2}, en[2] = {900e3, 850e3};
    kr_chart_series s = {"Kareus", 2, t, en, 1, -1};
    kr_error e = {0};
    snprintf(path, sizeof path, "%s/frontiers.svg", dir);
    assert_int_equal(kr_svg_frontiers(path, "f", &s, 1, NULL, &e), KR_OK);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    kr_test_write(path,
                  "{\"schema\": \"kareus.summary\", \"version\": 1, \"job\": {\"name\": \"default\", \"summary\": \"llama <3B>\"},"
                  " \"settings\": {\"strategy\": \"exhaustive\", \"cost_model\": \"exact\", \"unit_time_s\": 0.001, \"backend\": \"sim\"},"
                  " \"methods\": [{\"name\": \"Kareus\", \"execution\": \"tuned overlap\", \"clocks\": \"per instruction\", \"steps\": 2,"
                  "   \"fastest\": {\"time_s\": 1.0, \"energy_j\": 900000}, \"frugal\": {\"time_s\": 1.2, \"energy_j\": 850000}}],"
                  " \"metrics\": {\"rows\": [{\"method\": \"Kareus\", \"iso_time_energy_reduction_10pt\": 0.123, \"iso_energy_time_reduction_10pt\": null,"
                  "   \"max_throughput_time_reduction\": -0.01}]},"
                  " \"pictures\": {\"frontiers\": \"frontiers.svg\", \"timelines\": [{\"title\": \"t\", \"file\": \"missing.svg\"}]}}");
    assert_int_equal(kr_report_html(dir, &e), KR_OK);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html;
    assert_int_equal(kr__read_file(path, &html, NULL, &e), KR_OK);
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    assert_non_null(strstr(html, "llama &lt;3B&gt;"));
    assert_non_null(strstr(html, "<td class=\"good\">12.3%</td><td>--</td>"));
    assert_non_null(strstr(html, "<td class=\"bad\">-1.0%</td>"));
    assert_non_null(strstr(html, "<svg xmlns")); /* inlined */
    assert_non_null(strstr(html, "missing picture missing.svg"));
    assert_non_null(strstr(html, "</html>"));
    free(html);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    kr_test_write(path, "{\"schema\": \"kareus.plan\", \"version\": 1}");
    KR_ASSERT_ERR(kr_report_html(dir, &e), KR_EPARSE, e, "$.schema: expected \"kareus.summary\"");
    KR_ASSERT_ERR(kr_report_html("/nonexistent-dir", &e), KR_EIO, e, "summary.json: cannot open");
}

/* summary.json through its field table: nulls and absent numbers read as NaN, absent lists as
 * -1 (their section left out), a field of the wrong type or an unknown one refused with its path. */
static void summary_reader_follows_the_table(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("report_summary");
    char path[1200];
    kr_error e = {0};
    snprintf(path, sizeof path, "%s/summary.json", dir);
    kr_test_write(path, "{\"schema\": \"kareus.summary\", \"version\": 1, \"job\": {\"name\": \"j\", \"gpus\": 16},"
                        " \"metrics\": {\"rows\": [{\"method\": \"Kareus\", \"robust_mean\": null, \"robust_max\": 0.25}]},"
                        " \"methods\": [{\"name\": \"Kareus\", \"steps\": 3, \"ten_point\": [{\"step\": 7, \"time_s\": 1.5}]}]}");
    kr__summary *s;
    assert_int_equal(kr__report_summary_read(path, &s, &e), KR_OK);
    assert_string_equal(s->job_name, "j");
    assert_int_equal(s->job_gpus, 16);
    assert_int_equal(s->nrows, 1);
    assert_true(isnan(s->rows[0].m.robust_mean));
    assert_true(s->rows[0].m.robust_max == 0.25);
    assert_true(isnan(s->rows[0].m.mt_time_red));
    assert_int_equal(s->nmethods, 1);
    assert_int_equal(s->methods[0].steps, 3);
    assert_int_equal(s->methods[0].nten, 1);
    assert_int_equal(s->methods[0].ten[0].step, 7);
    assert_true(isnan(s->methods[0].fastest.time_s));
    assert_int_equal(s->nsearch, -1);
    assert_int_equal(s->has_validation, 0);
    assert_int_equal(s->has_pictures, 0);
    free(s);
    kr_test_write(path, "{\"schema\": \"kareus.summary\", \"version\": 1, \"methods\": [{\"steps\": \"three\"}]}");
    KR_ASSERT_ERR(kr__report_summary_read(path, &s, &e), KR_EPARSE, e, "$.methods[0].steps: expected an integer");
    kr_test_write(path, "{\"schema\": \"kareus.summary\", \"version\": 1, \"colour\": 1}");
    KR_ASSERT_ERR(kr__report_summary_read(path, &s, &e), KR_EPARSE, e, "colour: unknown field");
    kr_test_write(path, "{\"schema\": \"kareus.summary\", \"version\": 2}");
    KR_ASSERT_ERR(kr__report_summary_read(path, &s, &e), KR_ERANGE, e, "$.version");
    kr_field_info f;
    assert_int_equal(kr_report_summary_format_field(0, &f), KR_OK);
    assert_string_equal(f.path, "schema");
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(frontier_chart_has_series_legend_and_iso_lines),
    cmocka_unit_test(timeline_draws_every_instruction),
    cmocka_unit_test(html_report_from_summary),
    cmocka_unit_test(summary_reader_follows_the_table),
};
KR_TEST_MAIN(tests)
