/*
 * pictures.c — the pictures of an optimize run (report.h): the frontiers of every method on
 * one chart (the solver's full frontiers and the simulated 10-point ones, with the reference's
 * iso marks) and the first partition of Kareus's fastest plan against the default overlap.
 */
#include "kareus/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The iso marks of the reference (Perseus) on the full frontiers: its fastest time and its
 * lowest energy over every step. NaN when it did not run. */
static kr_chart_marks marks_full(const kr_method_result *per)
{
    kr_chart_marks marks = {NAN, NAN, "Perseus"};
    if (!per->enabled)
        return marks;
    marks.iso_time_s = per->time_s[0];
    marks.iso_energy_j = per->energy_j[0];
    for (int k = 0; k < per->nsteps; k++) {
        if (per->time_s[k] < marks.iso_time_s)
            marks.iso_time_s = per->time_s[k];
        if (per->energy_j[k] < marks.iso_energy_j)
            marks.iso_energy_j = per->energy_j[k];
    }
    return marks;
}

/* … and on the simulated 10-point frontiers. */
static kr_chart_marks marks_ten(const kr_method_result *per, kr_chart_marks marks)
{
    if (!per->enabled)
        return marks;
    marks.iso_time_s = marks.iso_energy_j = INFINITY;
    for (int i = 0; i < per->nten; i++) {
        marks.iso_time_s = KR_MIN(marks.iso_time_s, per->plans[per->ten[i]].sim_time_s);
        marks.iso_energy_j = KR_MIN(marks.iso_energy_j, per->plans[per->ten[i]].sim_energy_j);
    }
    return marks;
}

static int frontier_charts(const char *dir, const kr_optimize_result *o, kr_error *err)
{
    kr_chart_series full[KR_NUM_METHODS], ten[KR_NUM_METHODS];
    double tt[KR_NUM_METHODS][10], te[KR_NUM_METHODS][10];
    int ns = 0;
    for (int m = 0; m < KR_NUM_METHODS; m++) {
        const kr_method_result *mr = &o->m[m];
        if (!mr->enabled)
            continue;
        full[ns] = (kr_chart_series){kr_method_name((kr_method)m), mr->nsteps, mr->time_s, mr->energy_j,
                                     !kr_method_is_point((kr_method)m), -1};
        for (int i = 0; i < mr->nten; i++) {
            tt[ns][i] = mr->plans[mr->ten[i]].sim_time_s;
            te[ns][i] = mr->plans[mr->ten[i]].sim_energy_j;
        }
        ten[ns] = (kr_chart_series){kr_method_name((kr_method)m), mr->nten, tt[ns], te[ns],
                                    !kr_method_is_point((kr_method)m), -1};
        ns++;
    }
    const kr_method_result *per = &o->m[KR_METHOD_PERSEUS];
    kr_chart_marks marks = marks_full(per);
    char path[4400], title[200];
    int rc;
    snprintf(title, sizeof title, "%s: iteration frontiers (solver, every step)", o->job.name);
    snprintf(path, sizeof path, "%s/frontiers.svg", dir);
    if ((rc = kr_svg_frontiers(path, title, full, ns, &marks, err)))
        return rc;
    marks = marks_ten(per, marks);
    snprintf(title, sizeof title, "%s: 10-point frontiers (pipeline simulation)", o->job.name);
    snprintf(path, sizeof path, "%s/frontiers-10pt.svg", dir);
    return kr_svg_frontiers(path, title, ten, ns, &marks, err);
}

/* The first partition of instruction in (Kareus's fastest plan, stage 0) with the default
 * overlap's launch and SMs and with the plan's own; nothing when the partition is not in both
 * catalogs. */
static int partition_picture(const char *dir, const kr_job *job, const kr_plan_instr *in, kr_error *err)
{
    kr_partition_set *set = malloc(sizeof *set), *dflt = malloc(sizeof *dflt);
    kr_sim_timeline *tl = malloc(2 * sizeof *tl);
    int rc = set && dflt && tl ? KR_OK : kr_error_set(err, KR_ENOMEM, "optimize: out of memory");
    if (rc == KR_OK)
        rc = kr_partition_catalog(job, KR_VARIANT_KAREUS, set, err);
    if (rc == KR_OK)
        rc = kr_partition_catalog(job, KR_VARIANT_DEFAULT_OVERLAP, dflt, err);
    if (rc == KR_OK && in->ncomm > 0) {
        const kr_partition *p = kr_partition_find(set, in->comm[0].key);
        const kr_partition *q = kr_partition_find(dflt, in->comm[0].key);
        kr_config ck = {in->freq_mhz, in->comm[0].sms, 0, in->comm[0].kernel}, cd = {in->freq_mhz, q ? q->fixed_sms : 0, q ? q->fixed_slot : 0, 0};
        if (p && q && kr_partition_slot_index(p, in->comm[0].slot, &ck.slot, err) == KR_OK &&
            (rc = kr_sim_partition_timeline(job, q, &cd, &tl[0], err)) == KR_OK &&
            (rc = kr_sim_partition_timeline(job, p, &ck, &tl[1], err)) == KR_OK) {
            char t0[160], t1[160], title[200], path[4400];
            snprintf(t0, sizeof t0, "default overlap: launch at %s, %d SMs", kr_partition_slot_name(q, cd.slot), cd.sms);
            snprintf(t1, sizeof t1, "Kareus: launch at %s, %d SMs%s", in->comm[0].slot, ck.sms,
                     ck.kernel == KR_KERNEL_NCCL ? " (NCCL)" : "");
            const char *titles[2] = {t0, t1};
            snprintf(title, sizeof title, "%s on stage 0 at %d MHz: compute and comm streams", p->key, in->freq_mhz);
            snprintf(path, sizeof path, "%s/partition.svg", dir);
            rc = kr_svg_partition(path, title, tl, titles, 2, err);
        }
    }
    free(set);
    free(dflt);
    free(tl);
    return rc;
}

int kr_report_pictures(const char *dir, const kr_optimize_result *o, kr_error *err)
{
    int rc = frontier_charts(dir, o, err);
    if (rc)
        return rc;
    /* Inside a partition: the first forward partition at the highest clock, with NCCL's default
     * launch and SMs, and with the configuration of Kareus's fastest plan. */
    const kr_method_result *ka = &o->m[KR_METHOD_KAREUS];
    if (ka->enabled && o->m[KR_METHOD_NANOBATCH].enabled && ka->plans[ka->fastest].file[0]) {
        kr_plan plan;
        char ppath[4400];
        snprintf(ppath, sizeof ppath, "%s/%s", dir, ka->plans[ka->fastest].file);
        if ((rc = kr_plan_read(ppath, &plan, err)))
            return rc;
        rc = partition_picture(dir, &o->job, &plan.stages[0].instr[0], err);
        kr_plan_free(&plan);
    }
    return rc;
}
