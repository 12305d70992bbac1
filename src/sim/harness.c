/*
 * harness.c — the simulator against measured partitions: reads a calibration set (measured
 * executions of one partition under many overlap windows, CTA counts, block sizes and clocks,
 * in the Kareus artifact's energy_results.csv layout), predicts every row, summarises the
 * errors (`kareus sim check`), and fits the constants that only such measurements pin down
 * (`kareus calibrate`).
 *
 * Design.
 *   A calibration set is a manifest (schema "kareus.calib"): a job file with the partition's
 *   shape, the partition key, the comm kernel ("tuned" or "nccl"), the ranks that the file's
 *   "total energy" sums over, and the CSV files with the clock each was measured at ("max" =
 *   driver default with boost, simulated as a request for clock_max_mhz under the power cap).
 *   A row's window (overlap_start, overlap_end) maps to the simulator's run description: the
 *   comm launches before op overlap_start (−1: after all compute), and compute after op
 *   overlap_end waits for it (the artifact's older harness joined there). Time and per-GPU
 *   energy of a row are the medians of its repetitions.
 *
 *   The fit (Levenberg–Marquardt, MINPACK lmdif: src/solver/lmfit.c) minimises the squared log
 *   errors of time and energy of the rows in the fit fold, each constant searched inside
 *   physical bounds (a logistic transform), in two stages so that each mechanism is fitted on
 *   the rows that isolate it:
 *     1. the sequential rows (window −1, −1: compute, then the collective alone) fit v_max
 *        (loaded voltage at f_max; v_exp follows so that V(f) keeps passing through the
 *        0.744 V @ 1155 MHz reading, floor_const_w so that the floor at the idle clock is
 *        idle_w, and dyn_coeff_w is re-derived from the GEMM anchor), attn_eff (attn_bwd_eff
 *        keeps its published ratio to it), attn_activity, and the comm kernel alone:
 *        tuned_cta_Bps, tuned_cap_frac and comm_clock_exp. There the two streams never run
 *        together, so no overlap constant enters and the collective's clock law is not
 *        confounded with interference;
 *     2. the overlapped rows fit what only overlap shows: comm_lat_slow (the comm slowed by
 *        the overlapped op's HBM traffic), the stage-1 constants held.
 *   A set without sequential rows (or without overlapped ones) is fitted in one stage over
 *   everything. kappa_tensor (compute slowed by the comm's L2 traffic) is not fitted: the
 *   tuned kernel's traffic is too small for this data to pin it (docs/calibration.md gives the
 *   profile). Host dispatch (host_op_s, sync_s) is not identifiable from this harness: it runs
 *   GPU-bound. Folds: "odd" fits rows with an odd CTA count and validates on the even ones,
 *   "even" the reverse, "all" fits everything (no validation).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/job.h"
#include "sim_internal.h"
#include "solver/solver_internal.h"
#include "util/util.h"

#define V_REF_MHZ 1155.0 /* the A100 voltage reading the curve keeps passing through */
#define V_REF_V 0.744
#define A100_GEMM_TF 264.0 /* the 8192³ BF16 anchor dyn_coeff_w is derived from (catalog.c) */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void kr_sim_calib_free(kr_sim_calib *cs)
{
    if (cs == NULL)
        return;
    free(cs->rows);
    memset(cs, 0, sizeof *cs);
}

/* Reads one CSV of the artifact's layout into cs (appends). */
static int read_csv(kr_sim_calib *cs, const char *path, double clock_mhz, int ranks, kr_error *err)
{
    kr__csv t;
    int rc = kr__csv_read(path, &t, err);
    if (rc)
        return rc;
    int cs_col, ce_col, cc_col, cb_col;
    if ((rc = kr__csv_need_col(&t, "overlap_start", &cs_col, err)) ||
        (rc = kr__csv_need_col(&t, "overlap_end", &ce_col, err)) ||
        (rc = kr__csv_need_col(&t, "comm_sm_number", &cc_col, err)) ||
        (rc = kr__csv_need_col(&t, "comm_block_size", &cb_col, err)))
        goto done;
    int tcol[16], ecol[16], nrep = 0;
    for (int r = 0; r < 16; r++) {
        char tn[32], en[40];
        snprintf(tn, sizeof tn, "%d:time (s)", r);
        snprintf(en, sizeof en, "%d:total energy (J)", r);
        int a = kr__csv_col(&t, tn), b = kr__csv_col(&t, en);
        if (a < 0 || b < 0)
            break;
        tcol[nrep] = a;
        ecol[nrep++] = b;
    }
    if (nrep == 0) {
        rc = kr_error_set(err, KR_EPARSE, "%s: line 1: expected repetition columns \"0:time (s)\" and "
                                          "\"0:total energy (J)\", found none", path);
        goto done;
    }
    if ((rc = kr__grow((void **)&cs->rows, &cs->cap, (size_t)cs->n + (size_t)t.nrows, sizeof *cs->rows)))
        goto done;
    for (int i = 0; i < t.nrows; i++) {
        kr_sim_calib_row *row = &cs->rows[cs->n];
        memset(row, 0, sizeof *row);
        long long a, b, c, d;
        if ((rc = kr__csv_int(&t, i, cs_col, &a, err)) || (rc = kr__csv_int(&t, i, ce_col, &b, err)) ||
            (rc = kr__csv_int(&t, i, cc_col, &c, err)) || (rc = kr__csv_int(&t, i, cb_col, &d, err)))
            goto done;
        if (a < -1 || a >= KR_MAX_OPS || b < -1 || b >= KR_MAX_OPS || (a < 0) != (b < 0) || (a >= 0 && b < a) ||
            c < 1 || c > 1024 || d < 32 || d > 1024) {
            rc = kr_error_set(err, KR_ERANGE,
                              "%s: line %d: expected overlap_start <= overlap_end in -1..%d (both -1 for none), "
                              "comm_sm_number 1..1024 and comm_block_size 32..1024, found %lld, %lld, %lld, %lld",
                              path, t.line[i], KR_MAX_OPS - 1, a, b, c, d);
            goto done;
        }
        double tv[16], ev[16];
        for (int r = 0; r < nrep; r++) {
            if ((rc = kr__csv_double(&t, i, tcol[r], &tv[r], err)) || (rc = kr__csv_double(&t, i, ecol[r], &ev[r], err)))
                goto done;
            if (!(tv[r] > 0) || !(ev[r] > 0) || !isfinite(tv[r]) || !isfinite(ev[r])) {
                rc = kr_error_set(err, KR_ERANGE, "%s: line %d: repetition %d: expected positive time and energy, "
                                                  "found %g s, %g J", path, t.line[i], r, tv[r], ev[r]);
                goto done;
            }
        }
        row->start = (int)a;
        row->end = (int)b;
        row->ctas = (int)c;
        row->block = (int)d;
        row->clock_mhz = clock_mhz;
        row->time_s = median_of(tv, nrep);
        row->energy_j = median_of(ev, nrep) / ranks;
        row->line = t.line[i];
        cs->n++;
    }
    rc = KR_OK;
done:
    kr__csv_free(&t);
    return rc;
}

/* dir of path (with the trailing '/'), or "" for a bare name. */
static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path + 1) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, path, n);
    out[n] = '\0';
}

/* The "files" array of a calibration file: each CSV (relative to dir) read at its clock. */
static int read_files(kr__jctx *c, const json_t *root, const char *dir, int ranks, kr_sim_calib *out, kr_error *err)
{
    const json_t *files = json_object_get(root, "files");
    size_t m = kr__jpush_key(c, "files");
    if (!json_is_array(files) || json_array_size(files) == 0) {
        kr__jpop(c, m);
        return kr__jfail(c, KR_EPARSE, "files", "a non-empty array of {file, clock}", files);
    }
    int rc;
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *f = json_array_get(files, i);
        size_t mi = kr__jpush_idx(c, i);
        static const char *const ff[] = {"file", "clock", NULL};
        char name[512], full[1100];
        if ((rc = kr__jobject(c, f, ff)) || (rc = kr__jstr(c, f, "file", 1, NULL, name, sizeof name)))
            return rc;
        const json_t *clk = json_object_get(f, "clock");
        double mhz;
        if (json_is_string(clk) && strcmp(json_string_value(clk), "max") == 0) {
            mhz = out->job.gpu.clock_max_mhz;
        } else if (json_is_number(clk) && json_number_value(clk) > 0 &&
                   json_number_value(clk) <= out->job.gpu.clock_max_mhz) {
            mhz = json_number_value(clk);
        } else {
            char want[64];
            snprintf(want, sizeof want, "\"max\" or a clock in (0, %g] MHz", out->job.gpu.clock_max_mhz);
            return kr__jfail(c, KR_EPARSE, "clock", want, clk);
        }
        snprintf(full, sizeof full, "%s%s", name[0] == '/' ? "" : dir, name);
        if ((rc = read_csv(out, full, mhz, ranks, err)))
            return rc;
        kr__jpop(c, mi);
    }
    kr__jpop(c, m);
    return KR_OK;
}

/* out->part: the partition named by out->partition in the job's Kareus catalog, its rotary
 * bytes scaled to rope_passes; every row's window must lie inside it. */
static int find_partition(const char *path, double rope_passes, kr_sim_calib *out, kr_error *err)
{
    kr_partition_set *ps = malloc(sizeof *ps);
    if (ps == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    int rc = kr_partition_catalog(&out->job, KR_VARIANT_KAREUS, ps, err);
    int found = -1;
    for (int i = 0; rc == KR_OK && i < ps->n; i++)
        if (strcmp(ps->p[i].key, out->partition) == 0)
            found = i;
    if (rc == KR_OK && found < 0)
        rc = kr_error_set(err, KR_ENOTFOUND, "%s: $.partition: no partition '%s' in the job's catalog", path,
                          out->partition);
    if (rc == KR_OK) {
        out->part = ps->p[found];
        /* An unfused rotary embedding (elementwise PyTorch ops) makes rope_passes passes over q
         * and k where the fused kernel makes 2 (read, write). */
        for (int i = 0; i < out->part.nops; i++)
            if (strcmp(out->part.ops[i].name, "rotary") == 0)
                out->part.ops[i].bytes *= rope_passes / 2.0;
    }
    free(ps);
    for (int i = 0; rc == KR_OK && i < out->n; i++)
        if (out->rows[i].start >= out->part.nops || out->rows[i].end >= out->part.nops)
            rc = kr_error_set(err, KR_ERANGE, "%s: row %d (line %d): overlap window %d..%d outside the partition's %d ops",
                              path, i, out->rows[i].line, out->rows[i].start, out->rows[i].end, out->part.nops);
    return rc;
}

int kr_sim_calib_read(const char *path, kr_sim_calib *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    kr__jctx c;
    int rc = kr__json_open(path, &root, &c, err);
    if (rc)
        return rc;
    static const char *const top[] = {"schema", "version", "description", "job", "partition", "kernel", "ranks",
                                      "rope_passes", "files", NULL};
    char schema[32], jobfile[512], kernel[16], desc[256];
    long long version, ranks;
    double rope_passes;
    char dir[512], full[1100];
    dir_of(path, dir, sizeof dir);
    if ((rc = kr__jobject(&c, root, top)) ||
        (rc = kr__jstr(&c, root, "schema", 1, NULL, schema, sizeof schema)))
        goto done;
    if (strcmp(schema, "kareus.calib") != 0) {
        rc = kr__jfail(&c, KR_EPARSE, "schema", "\"kareus.calib\"", json_object_get(root, "schema"));
        goto done;
    }
    if ((rc = kr__jint(&c, root, "version", 1, 1, 1, 1, &version)) ||
        (rc = kr__jstr(&c, root, "description", 0, "", desc, sizeof desc)) ||
        (rc = kr__jstr(&c, root, "job", 1, NULL, jobfile, sizeof jobfile)) ||
        (rc = kr__jstr(&c, root, "partition", 1, NULL, out->partition, sizeof out->partition)) ||
        (rc = kr__jstr(&c, root, "kernel", 0, "tuned", kernel, sizeof kernel)) ||
        (rc = kr__jint(&c, root, "ranks", 0, 1, 1024, 1, &ranks)) ||
        (rc = kr__jnum(&c, root, "rope_passes", 0, 1, 64, 2, &rope_passes)))
        goto done;
    if (strcmp(kernel, "tuned") != 0 && strcmp(kernel, "nccl") != 0) {
        rc = kr__jfail(&c, KR_EPARSE, "kernel", "\"tuned\" or \"nccl\"", json_object_get(root, "kernel"));
        goto done;
    }
    out->kernel = strcmp(kernel, "tuned") == 0 ? KR_SIM_TUNED : KR_SIM_NCCL;
    snprintf(full, sizeof full, "%s%s", jobfile[0] == '/' ? "" : dir, jobfile);
    if ((rc = kr_job_load(full, &out->job, err)) == KR_OK && (rc = read_files(&c, root, dir, (int)ranks, out, err)) == KR_OK)
        rc = find_partition(path, rope_passes, out, err);
done:
    json_decref(root);
    if (rc)
        kr_sim_calib_free(out);
    return rc;
}

int kr_sim_calib_predict(const kr_sim_calib *cs, const kr_gpu *gpu, int i, kr_sim_result *out, kr_error *err)
{
    const kr_sim_calib_row *row = &cs->rows[i];
    kr_job job = cs->job;
    if (gpu)
        job.gpu = *gpu;
    kr_config c = {(int)row->clock_mhz, row->ctas, KR_SLOT_NONE, 0};
    kr__sim_run run = {row->block, row->end, cs->kernel, row->start};
    if (row->ctas >= (int)job.gpu.sm_count)
        return kr_error_set(err, KR_ERANGE, "row %d: %d CTAs on a %g-SM GPU", i, row->ctas, job.gpu.sm_count);
    return kr__sim_partition_run(&job, &cs->part, &c, &run, out, NULL, err);
}

int kr_sim_calib_write_rows(const kr_sim_calib *cs, const kr_gpu *gpu, const char *path, kr_error *err)
{
    kr__sb sb = {0};
    kr__sb_puts(&sb, "line,clock_mhz,overlap_start,overlap_end,ctas,block,time_s,energy_j,pred_time_s,pred_energy_j,"
                     "pred_compute_end_s,pred_comm_start_s,pred_comm_end_s,pred_floor_energy_j,pred_dispatch_s,"
                     "pred_skew_s\n");
    for (int i = 0; i < cs->n; i++) {
        kr_sim_result r;
        int rc = kr_sim_calib_predict(cs, gpu, i, &r, err);
        if (rc) {
            kr__sb_free(&sb);
            return rc;
        }
        const kr_sim_calib_row *w = &cs->rows[i];
        kr__sb_printf(&sb, "%d,%g,%d,%d,%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", w->line,
                      w->clock_mhz, w->start, w->end, w->ctas, w->block, w->time_s, w->energy_j, r.time_s, r.energy_j,
                      r.compute_end_s, r.comm_start_s, r.comm_end_s, r.floor_energy_j, r.dispatch_s, r.skew_s);
    }
    int rc = kr__sb_write_atomic(&sb, path, err);
    kr__sb_free(&sb);
    return rc;
}

/* ---- summary ------------------------------------------------------------------------------ */

static double quantile(double *v, int n, double q)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double x = q * (n - 1);
    int lo = (int)floor(x);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (x - lo);
}

/* Average ranks (ties share their mean rank). */
static void ranks_of(const double *v, int n, double *rank, int *idx)
{
    for (int i = 0; i < n; i++)
        idx[i] = i;
    for (int i = 1; i < n; i++) { /* insertion sort by value: n is a few hundred */
        int k = idx[i], j = i - 1;
        while (j >= 0 && v[idx[j]] > v[k]) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = k;
    }
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[idx[j + 1]] == v[idx[i]])
            j++;
        for (int k = i; k <= j; k++)
            rank[idx[k]] = 0.5 * (i + j) + 1.0;
        i = j + 1;
    }
}

double kr_sim_spearman(const double *a, const double *b, int n)
{
    if (n < 2)
        return NAN;
    double *ra = malloc(sizeof(double) * (size_t)n * 2);
    int *idx = malloc(sizeof(int) * (size_t)n);
    if (ra == NULL || idx == NULL) {
        free(ra);
        free(idx);
        return NAN;
    }
    double *rb = ra + n;
    ranks_of(a, n, ra, idx);
    ranks_of(b, n, rb, idx);
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i];
        mb += rb[i];
    }
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(idx);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

/* Median Spearman over groups of rows that agree on everything but one knob (the window, or
 * the CTA count): how well the simulator ranks that knob. */
static double group_spearman(const kr_sim_calib *cs, const double *pred_t, const int *sel, double clock, int by_window)
{
    double rhos[512];
    int nr = 0;
    double *a = malloc(sizeof(double) * (size_t)cs->n * 2);
    if (a == NULL)
        return NAN;
    double *b = a + cs->n;
    char *done = calloc((size_t)cs->n, 1);
    for (int i = 0; done && i < cs->n && nr < 512; i++) {
        const kr_sim_calib_row *r = &cs->rows[i];
        if (done[i] || !sel[i] || r->clock_mhz != clock)
            continue;
        int n = 0;
        for (int j = i; j < cs->n; j++) {
            const kr_sim_calib_row *q = &cs->rows[j];
            if (!sel[j] || q->clock_mhz != clock || done[j])
                continue;
            int same = by_window ? (q->ctas == r->ctas && q->block == r->block)
                                 : (q->start == r->start && q->end == r->end && q->block == r->block);
            if (!same)
                continue;
            done[j] = 1;
            a[n] = q->time_s;
            b[n++] = pred_t[j];
        }
        if (n >= 3) {
            double rho = kr_sim_spearman(a, b, n);
            if (isfinite(rho))
                rhos[nr++] = rho;
        }
    }
    free(a);
    free(done);
    return nr ? quantile(rhos, nr, 0.5) : NAN;
}

/* The errors and rank correlations of clock group g (its clock set) over the selected rows;
 * pt, pe: predicted times and energies; w: scratch of 5·n doubles. */
static void clock_group(const kr_sim_calib *cs, const double *pt, const double *pe, const int *sel, double *w,
                        kr_sim_calib_clock *g)
{
    int n = cs->n;
    double clk = g->clock_mhz;
    double *et = w, *ee = w + n, *ep = w + 2 * n, *mt = w + 3 * n, *tmp = w + 4 * n;
    int m = 0;
    for (int j = 0; j < n; j++) {
        const kr_sim_calib_row *r = &cs->rows[j];
        if (r->clock_mhz != clk || !sel[j])
            continue;
        et[m] = fabs(pt[j] / r->time_s - 1);
        ee[m] = fabs(pe[j] / r->energy_j - 1);
        ep[m] = fabs((pe[j] / pt[j]) / (r->energy_j / r->time_s) - 1);
        mt[m] = r->time_s;
        tmp[m] = pt[j];
        m++;
    }
    g->rows = m;
    g->spearman_time = kr_sim_spearman(mt, tmp, m);
    g->spearman_windows = group_spearman(cs, pt, sel, clk, 1);
    g->spearman_ctas = group_spearman(cs, pt, sel, clk, 0);
    memcpy(tmp, et, sizeof(double) * (size_t)m);
    g->time_med = quantile(et, m, 0.5);
    g->time_p90 = quantile(tmp, m, 0.9);
    memcpy(tmp, ee, sizeof(double) * (size_t)m);
    g->energy_med = quantile(ee, m, 0.5);
    g->energy_p90 = quantile(tmp, m, 0.9);
    memcpy(tmp, ep, sizeof(double) * (size_t)m);
    g->power_med = quantile(ep, m, 0.5);
    g->power_p90 = quantile(tmp, m, 0.9);
    double st = 0, se = 0;
    for (int j = 0; j < n; j++)
        if (cs->rows[j].clock_mhz == clk && sel[j]) {
            st += cs->rows[j].time_s;
            se += cs->rows[j].energy_j;
        }
    g->meas_power_w = se / st;
}

/* Ratios of group g's clock to the first clock c0, over the selected rows measured at both
 * (matched configs). */
static void clock_ratios(const kr_sim_calib *cs, const double *pt, const double *pe, const int *sel, double c0,
                         kr_sim_calib_clock *g)
{
    int n = cs->n;
    double mt_sum[2] = {0, 0}, me_sum[2] = {0, 0}, pt_sum[2] = {0, 0}, pe_sum[2] = {0, 0};
    int pairs = 0;
    for (int j = 0; j < n; j++) {
        const kr_sim_calib_row *r = &cs->rows[j];
        if (r->clock_mhz != g->clock_mhz || !sel[j])
            continue;
        for (int i = 0; i < n; i++) {
            const kr_sim_calib_row *q = &cs->rows[i];
            if (q->clock_mhz == c0 && q->start == r->start && q->end == r->end && q->ctas == r->ctas &&
                q->block == r->block) {
                mt_sum[0] += q->time_s;
                mt_sum[1] += r->time_s;
                me_sum[0] += q->energy_j;
                me_sum[1] += r->energy_j;
                pt_sum[0] += pt[i];
                pt_sum[1] += pt[j];
                pe_sum[0] += pe[i];
                pe_sum[1] += pe[j];
                pairs++;
                break;
            }
        }
    }
    g->pairs = pairs;
    if (pairs) {
        g->meas_time_ratio = mt_sum[1] / mt_sum[0];
        g->meas_energy_ratio = me_sum[1] / me_sum[0];
        g->pred_time_ratio = pt_sum[1] / pt_sum[0];
        g->pred_energy_ratio = pe_sum[1] / pe_sum[0];
    }
}

int kr_sim_calib_check(const kr_sim_calib *cs, const kr_gpu *gpu, int fold, kr_sim_calib_report *rep, kr_error *err)
{
    memset(rep, 0, sizeof *rep);
    int n = cs->n, rc = KR_OK;
    double *pt = malloc(sizeof(double) * (size_t)n * 8);
    int *sel = malloc(sizeof(int) * (size_t)n);
    if (pt == NULL || sel == NULL) {
        free(pt);
        free(sel);
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    }
    double *pe = pt + n;
    for (int i = 0; i < n; i++) {
        kr_sim_result r;
        if ((rc = kr_sim_calib_predict(cs, gpu, i, &r, err)))
            goto done;
        pt[i] = r.time_s;
        pe[i] = r.energy_j;
        sel[i] = fold == KR_CALIB_ALL || (fold == KR_CALIB_ODD) == (cs->rows[i].ctas % 2 == 1);
    }
    /* Per clock group (in order of first appearance). */
    for (int i = 0; i < n && rep->nclocks < KR_CALIB_MAX_CLOCKS; i++) {
        double clk = cs->rows[i].clock_mhz;
        int seen = 0;
        for (int k = 0; k < rep->nclocks; k++)
            seen |= rep->clocks[k].clock_mhz == clk;
        if (seen)
            continue;
        kr_sim_calib_clock *g = &rep->clocks[rep->nclocks++];
        g->clock_mhz = clk;
        clock_group(cs, pt, pe, sel, pt + 2 * n, g);
    }
    for (int k = 1; k < rep->nclocks; k++)
        clock_ratios(cs, pt, pe, sel, rep->clocks[0].clock_mhz, &rep->clocks[k]);
done:
    free(pt);
    free(sel);
    return rc;
}

/* ---- fit ---------------------------------------------------------------------------------- */

enum { FIT_VMAX, FIT_ATTN, FIT_CTA, FIT_CAP, FIT_EXP, FIT_ACT, FIT_LAT, FIT_N };

static const int fit_param[FIT_N] = {KR_GPU_P_v_max,          KR_GPU_P_attn_eff,        KR_GPU_P_tuned_cta_Bps,
                                     KR_GPU_P_tuned_cap_frac, KR_GPU_P_comm_clock_exp, KR_GPU_P_attn_activity,
                                     KR_GPU_P_comm_lat_slow};

/* Physical bounds of each fitted constant: the fit searches inside them (logistic transform),
 * so a poor model shows as a poor fit instead of as an unphysical constant. comm_lat_slow ≤ 3:
 * a latency-bound copy at most 4× slower beside a neighbour that saturates HBM (loaded DRAM
 * latency a few times the idle one). */
static const double fit_lo[FIT_N] = {0.76, 0.15, 1e9, 0.05, 0.0, 0.2, 0.0};
static const double fit_hi[FIT_N] = {1.10, 0.80, 60e9, 1.0, 1.5, 1.0, 3.0};

static double to_param(int k, double x)
{
    return fit_lo[k] + (fit_hi[k] - fit_lo[k]) / (1.0 + exp(-x));
}

static double to_x(int k, double v)
{
    double u = (v - fit_lo[k]) / (fit_hi[k] - fit_lo[k]);
    u = KR_MIN(0.999, KR_MAX(0.001, u));
    return log(u / (1.0 - u));
}

/* Sets the GPU's free constants (free[0..nfree)) from x and the ones that follow from them. */
static void apply_fit(kr_gpu *g, const int *free_k, int nfree, const double *x)
{
    double ratio = g->attn_eff > 0 ? g->attn_bwd_eff / g->attn_eff : 1.0;
    for (int j = 0; j < nfree; j++)
        kr_gpu_param_set(g, fit_param[free_k[j]], to_param(free_k[j], x[j]));
    g->attn_bwd_eff = g->attn_eff * ratio;
    /* V(f) through (V_REF_MHZ, V_REF_V): v_min + (v_max − v_min)·x^p. */
    double xr = (V_REF_MHZ - g->v_floor_mhz) / (g->clock_max_mhz - g->v_floor_mhz);
    double yr = (V_REF_V - g->v_min) / (g->v_max - g->v_min);
    if (xr > 0 && xr < 1 && yr > 0 && yr < 1)
        g->v_exp = log(yr) / log(xr);
    kr_sim_derive_floor(g);
    double c = kr_sim_derive_dyn_coeff(g, A100_GEMM_TF);
    if (isfinite(c))
        g->dyn_coeff_w = c;
}

typedef struct fit_ctx {
    const kr_sim_calib *cs;
    const int *rows;
    int nrows;
    kr_gpu gpu;
    int free_k[FIT_N]; /* the fitted constants (indices into fit_param) not held fixed */
    int nfree;
} fit_ctx;

static int residuals(void *ud, int m, int n, const double *x, double *fvec)
{
    (void)n;
    fit_ctx *fc = ud;
    kr_gpu g = fc->gpu;
    apply_fit(&g, fc->free_k, fc->nfree, x);
    for (int k = 0; k < fc->nrows; k++) {
        const kr_sim_calib_row *row = &fc->cs->rows[fc->rows[k]];
        kr_sim_result r;
        if (kr_sim_calib_predict(fc->cs, &g, fc->rows[k], &r, NULL) != KR_OK) {
            fvec[2 * k] = fvec[2 * k + 1] = 10.0;
            continue;
        }
        fvec[2 * k] = log(r.time_s / row->time_s);
        fvec[2 * k + 1] = log(r.energy_j / row->energy_j);
    }
    (void)m;
    return 0;
}

/* RMS of the log errors of time and energy of rows[0..n) on gpu (NaN for n = 0). */
static int rows_rms(const kr_sim_calib *cs, const kr_gpu *gpu, int *rows, int n, double *rms_log, kr_error *err)
{
    *rms_log = NAN;
    if (n <= 0)
        return KR_OK;
    double *fvec = malloc(sizeof(double) * 2 * (size_t)n);
    if (fvec == NULL)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    fit_ctx all = {cs, rows, n, *gpu, {0}, 0};
    double ss = 0;
    residuals(&all, 2 * n, 0, NULL, fvec);
    for (int i = 0; i < 2 * n; i++)
        ss += fvec[i] * fvec[i];
    *rms_log = sqrt(ss / (2 * n));
    free(fvec);
    return KR_OK;
}

int kr_sim_calib_fit(const kr_sim_calib *cs, const kr_gpu *start, int fold, kr_gpu *out, double *rms_log,
                     kr_error *err)
{
    return kr_sim_calib_fit_fixed(cs, start, fold, NULL, 0, out, rms_log, err);
}

/* Least squares over the free constants of fc on its rows; fc->gpu receives the result. */
static int fit_stage(fit_ctx *fc, kr_error *err)
{
    if (fc->nfree == 0 || fc->nrows == 0)
        return KR_OK;
    double x[FIT_N];
    for (int j = 0; j < fc->nfree; j++)
        x[j] = to_x(fc->free_k[j], kr_gpu_param_value(&fc->gpu, fit_param[fc->free_k[j]]));
    kr__lm_opts o = {1e-10, 1e-10, 0, 4000, 1e-7, 100};
    int nfev = 0;
    int info = kr__lm_minimize(residuals, fc, 2 * fc->nrows, fc->nfree, x, &o, &nfev, NULL, NULL);
    if (info <= 0)
        return kr_error_set(err, KR_EINTERNAL, "calibrate: the least-squares fit failed (MINPACK info %d)", info);
    apply_fit(&fc->gpu, fc->free_k, fc->nfree, x);
    return KR_OK;
}

/* The free constants of one stage: those of fit_param[lo..hi) not in fixed. */
static void stage_free(fit_ctx *fc, int lo, int hi, const int *fixed, int nfixed)
{
    fc->nfree = 0;
    for (int k = lo; k < hi; k++) {
        int held = 0;
        for (int j = 0; j < nfixed; j++)
            held |= fixed[j] == fit_param[k];
        if (!held)
            fc->free_k[fc->nfree++] = k;
    }
}

/* The fold's rows, sequential ones (window −1) first: *nseq of them. */
static int fold_rows(const kr_sim_calib *cs, int fold, int **out, int *nseq)
{
    int *rows = malloc(sizeof(int) * (size_t)(cs->n ? cs->n : 1));
    if (rows == NULL)
        return -1;
    int nr = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < cs->n; i++)
            if ((fold == KR_CALIB_ALL || (fold == KR_CALIB_ODD) == (cs->rows[i].ctas % 2 == 1)) &&
                (cs->rows[i].start < 0) == (pass == 0))
                rows[nr++] = i;
    *nseq = 0;
    while (*nseq < nr && cs->rows[rows[*nseq]].start < 0)
        (*nseq)++;
    *out = rows;
    return nr;
}

int kr_sim_calib_fit_fixed(const kr_sim_calib *cs, const kr_gpu *start, int fold, const int *fixed, int nfixed,
                           kr_gpu *out, double *rms_log, kr_error *err)
{
    for (int j = 0; j < nfixed; j++) {
        int known = 0;
        for (int k = 0; k < FIT_N; k++)
            known |= fixed[j] == fit_param[k];
        if (!known)
            return kr_error_set(err, KR_EINVAL, "calibrate: fixed constant %s: expected one of the fitted constants",
                                kr_gpu_param(fixed[j]) ? kr_gpu_param(fixed[j])->field : "?");
    }
    int *rows, nseq;
    int nr = fold_rows(cs, fold, &rows, &nseq);
    if (nr < 0)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    if (nr < FIT_N) {
        free(rows);
        return kr_error_set(err, KR_EINVAL, "calibrate: %d rows in the fit fold, need at least %d", nr, FIT_N);
    }
    fit_ctx fc = {cs, rows, nr, *start, {0}, 0};
    int rc;
    if (nseq >= FIT_LAT && nr - nseq >= 1) {
        fc.nrows = nseq; /* stage 1: the sequential rows, every constant but the overlap's */
        stage_free(&fc, 0, FIT_LAT, fixed, nfixed);
        if ((rc = fit_stage(&fc, err)) == KR_OK) {
            fc.rows = rows + nseq; /* stage 2: the overlapped rows, the overlap constant */
            fc.nrows = nr - nseq;
            stage_free(&fc, FIT_LAT, FIT_N, fixed, nfixed);
            rc = fit_stage(&fc, err);
        }
    } else {
        stage_free(&fc, 0, FIT_N, fixed, nfixed);
        rc = fit_stage(&fc, err);
    }
    *out = fc.gpu;
    if (rc == KR_OK && rms_log)
        rc = rows_rms(cs, &fc.gpu, rows, nr, rms_log, err);
    free(rows);
    return rc;
}

int kr_sim_calib_rms(const kr_sim_calib *cs, const kr_gpu *gpu, int fold, int part, double *rms_log, kr_error *err)
{
    int *rows, nseq;
    int nr = fold_rows(cs, fold, &rows, &nseq);
    if (nr < 0)
        return kr_error_set(err, KR_ENOMEM, "out of memory");
    int lo = part == KR_CALIB_ROWS_OVERLAPPED ? nseq : 0, hi = part == KR_CALIB_ROWS_SEQUENTIAL ? nseq : nr;
    int rc = rows_rms(cs, gpu ? gpu : &cs->job.gpu, rows + lo, hi - lo, rms_log, err);
    free(rows);
    return rc;
}

const int *kr_sim_calib_fitted(int *n)
{
    *n = FIT_N;
    return fit_param;
}
