/*
 * summary.h — the summary of an optimize run (summary.json, schema "kareus.summary") as a plain
 * struct, inside the report module: summary.c fills it from a kr_optimize_result and writes it,
 * or reads it back from a file, with one field table; html.c renders the page from it.
 *
 * Numbers are NaN where the file has null or nothing; a list's count is -1 where the file has no
 * such list (the page leaves its section out), and a flag marks the optional objects.
 */
#ifndef KAREUS_REPORT_SUMMARY_H
#define KAREUS_REPORT_SUMMARY_H

#include "kareus/format.h"
#include "kareus/optimize.h"

/* Capacities of the lists (a summary that holds more is refused when read). */
enum {
    KR__SUM_MAX_METHODS = 16,
    KR__SUM_MAX_PLANS = KR__SUM_MAX_METHODS * KR_OPT_MAX_PLANS,
    KR__SUM_MAX_SEARCH = 512,
    KR__SUM_MAX_PICTURES = 32
};

/* A chosen plan as methods[].fastest / .frugal list it; bound_j and gap NaN: no bound. */
typedef struct kr__sum_plan {
    double time_s, energy_j;
    char file[128];
    double bound_j, gap;
    char source[12];
} kr__sum_plan;

/* One plan of the 10-point frontier. */
typedef struct kr__sum_point {
    int step;
    double time_s, energy_j;
    char file[128];
    char source[12];
} kr__sum_point;

typedef struct kr__sum_method {
    char name[64], slug[64], variant[64], execution[96], clocks[96];
    int steps, steps_own;
    char frontier_csv[96];
    kr__sum_plan fastest, frugal;
    int nten;
    kr__sum_point ten[10];
    long long search_evaluated, search_space;
    double solve_s;
} kr__sum_method;

/* The paper's figures of one method (kr_metric_row, named). */
typedef struct kr__sum_row {
    char method[64];
    kr_metric_row m;
} kr__sum_row;

/* Prediction against simulation of one plan. */
typedef struct kr__sum_vplan {
    char method[64], label[32], file[128];
    double pred_time_s, sim_time_s, pred_energy_j, sim_energy_j;
} kr__sum_vplan;

/* The search of one partition; restricted 0: not a partial recording. */
typedef struct kr__sum_search {
    char variant[64], key[64];
    long long measured, space;
    int frontier_points;
    long long restricted;
} kr__sum_search;

typedef struct kr__sum_picture {
    char title[200], file[128];
} kr__sum_picture;

typedef struct kr__summary {
    char job_name[64], job_summary[256], job_fingerprint[17];
    int job_gpus;
    char strategy[64], cost_model[64], backend[64];
    double unit_time_s;
    long long seed;
    int nmethods;
    kr__sum_method methods[KR__SUM_MAX_METHODS];
    char reference[64], baseline[64];
    int nrows;
    kr__sum_row rows[KR__SUM_MAX_METHODS];
    int has_validation;
    int nvplans;
    kr__sum_vplan vplans[KR__SUM_MAX_PLANS];
    double max_time_err, max_energy_err;
    char note[768];
    int nsearch;
    kr__sum_search search[KR__SUM_MAX_SEARCH];
    int has_pictures;
    char pic_frontiers[128], pic_frontiers_10pt[128];
    int ntimelines, npartitions;
    kr__sum_picture timelines[KR__SUM_MAX_PICTURES], partitions[KR__SUM_MAX_PICTURES];
    double time_search_s, time_compose_s, time_solve_s, time_simulate_s;
} kr__summary;

/* Reads path (a summary.json) into a new *out (free with free()). KR_EPARSE/KR_ERANGE with the
 * JSON path of the first bad field, KR_EIO when it cannot be read, KR_ENOMEM. */
int kr__report_summary_read(const char *path, kr__summary **out, kr_error *err);

#endif
