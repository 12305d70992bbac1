/*
 * calib_profile.c — `kareus calibrate --profile NAME=LO:HI:STEP`: how well the measured set
 * pins one fitted constant. For each value of the grid the fit is rerun with the constant held
 * there, and the RMS log error is printed on the rows of the stage that fits that constant (the
 * sequential rows for the compute, power and comm-kernel constants; the overlapped rows for
 * comm_lat_slow) and on all rows of the fold. Two ranges of the constant are reported: where the
 * stage RMS is within 10 % of its minimum (room for the model's own error), and a 95 % interval
 * of the likelihood ratio if the residuals were independent and Gaussian (Δχ² ≤ 3.84, i.e.
 * RMS ≤ RMS_min · exp(1.92 / N) for N residuals) — the optimistic one, since the residuals are
 * not independent. docs/calibration.md uses it for the comm kernel's clock exponent.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PROFILE_MAX 256

/* Parses NAME=LO:HI:STEP; *param the fitted constant. Returns 0 or a usage error (2). */
static int parse_profile(const char *s, int *param, double *lo, double *hi, double *step)
{
    const char *eq = strchr(s, '=');
    int nf;
    const int *fp = kr_sim_calib_fitted(&nf);
    *param = -1;
    for (int j = 0; eq && j < nf; j++) {
        const char *f = kr_gpu_param(fp[j])->field;
        if (strlen(f) == (size_t)(eq - s) && strncmp(f, s, (size_t)(eq - s)) == 0)
            *param = fp[j];
    }
    char tail;
    if (*param < 0 || sscanf(eq + 1, "%lf:%lf:%lf%c", lo, hi, step, &tail) != 3 || !(*step > 0) || !(*hi >= *lo) ||
        (*hi - *lo) / *step > PROFILE_MAX - 1)
        return cli_usage_error("calibrate", "--profile: expected NAME=LO:HI:STEP with NAME a fitted constant (see "
                               "--help), LO <= HI, STEP > 0 and at most %d values, found '%s'", PROFILE_MAX, s);
    return 0;
}

int cli_calib_profile(const kr_sim_calib *cs, const kr_gpu *start, int fold, const int *fixed, int nfixed,
                      const char *spec, int json)
{
    int param;
    double lo, hi, step;
    int rc = parse_profile(spec, &param, &lo, &hi, &step);
    if (rc)
        return rc;
    int fx[KR_GPU_NPARAMS + 1], nfx = 0;
    for (int j = 0; j < nfixed; j++)
        if (fixed[j] != param)
            fx[nfx++] = fixed[j];
    fx[nfx++] = param;
    int part = param == KR_GPU_P_comm_lat_slow ? KR_CALIB_ROWS_OVERLAPPED : KR_CALIB_ROWS_SEQUENTIAL;
    int nrows = 0;
    for (int i = 0; i < cs->n; i++)
        if ((fold == KR_CALIB_ALL || (fold == KR_CALIB_ODD) == (cs->rows[i].ctas % 2 == 1)) &&
            (cs->rows[i].start < 0) == (part == KR_CALIB_ROWS_SEQUENTIAL))
            nrows++;
    double v[PROFILE_MAX], rs[PROFILE_MAX], ra[PROFILE_MAX], best = INFINITY;
    int n = 0;
    kr_error err = {0};
    kr_gpu g = *start, out;
    for (double x = lo; x <= hi + 1e-9 * step && n < PROFILE_MAX; x = lo + ++n * step) {
        kr_gpu_param_set(&g, param, x);
        v[n] = x;
        if ((rc = kr_sim_calib_fit_fixed(cs, &g, fold, fx, nfx, &out, &ra[n], &err)) ||
            (rc = kr_sim_calib_rms(cs, &out, fold, part, &rs[n], &err)))
            return cli_report(rc, &err);
        best = fmin(best, rs[n]);
    }
    double lr = best * exp(1.92 / (2.0 * (nrows > 0 ? nrows : 1)));
    double r10[2] = {NAN, NAN}, r95[2] = {NAN, NAN};
    for (int i = 0; i < n; i++) {
        if (rs[i] <= 1.10 * best)
            r10[0] = isnan(r10[0]) ? v[i] : r10[0], r10[1] = v[i];
        if (rs[i] <= lr)
            r95[0] = isnan(r95[0]) ? v[i] : r95[0], r95[1] = v[i];
    }
    const char *name = kr_gpu_param(param)->field, *rows = part == KR_CALIB_ROWS_OVERLAPPED ? "overlapped" : "sequential";
    if (json) {
        json_t *o = json_object(), *a = json_array();
        json_object_set_new(o, "constant", json_string(name));
        json_object_set_new(o, "fold", json_string(fold == KR_CALIB_ODD ? "odd" : fold == KR_CALIB_EVEN ? "even" : "all"));
        json_object_set_new(o, "stage_rows", json_string(rows));
        json_object_set_new(o, "stage_row_count", json_integer(nrows));
        for (int i = 0; i < n; i++)
            json_array_append_new(a, json_pack("{s:f,s:f,s:f}", "value", v[i], "rms_stage", rs[i], "rms_all", ra[i]));
        json_object_set_new(o, "profile", a);
        json_object_set_new(o, "range_within_10pct", json_pack("[f,f]", r10[0], r10[1]));
        json_object_set_new(o, "range_lr95_independent", json_pack("[f,f]", r95[0], r95[1]));
        char *txt = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        puts(txt);
        free(txt);
        json_decref(o);
        return 0;
    }
    printf("profile of %s: refit with it held, RMS log error on the %d %s rows of the fold (the stage that fits it) "
           "and on all rows\n", name, nrows, rows);
    printf("  %12s  %10s  %10s\n", name, "rms stage", "rms all");
    for (int i = 0; i < n; i++)
        printf("  %12.6g  %10.5f  %10.5f%s\n", v[i], rs[i], ra[i], rs[i] == best ? "  <- least" : "");
    printf("  within 10 %% of the least stage RMS: %g .. %g (the range the data allow, model error included)\n",
           r10[0], r10[1]);
    printf("  95 %% likelihood-ratio interval if the residuals were independent: %g .. %g (optimistic)\n", r95[0],
           r95[1]);
    return 0;
}
