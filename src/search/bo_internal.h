/*
 * bo_internal.h — the bo strategy's state, shared by bo.c (the loop: designs, batches, the
 * stopping rule) and bo_prior.c (the prior's linear model and its calibration); docs/search.md.
 */
#ifndef KR_SEARCH_BO_INTERNAL_H
#define KR_SEARCH_BO_INTERNAL_H

#include "gp.h"
#include "search_internal.h"

#define BO_SAMPLES 64       /* Monte Carlo draws of the EHVI and the stopping rule's estimate */
#define BO_PRIOR_RIDGE 0.05 /* pull of the prior's slope toward 1, relative to Σ(q − q̄)² */

enum { M_TIME, M_EFF, M_TOTAL, NMODELS };

/* One surrogate: a GP with its predictions on the candidates and the batch's fantasies. */
typedef struct model {
    kr__gp gp;
    kr__gp_hyper h;  /* warm start for the next fit */
    int have_h;
    int log;         /* targets on a log scale */
    double *y;       /* training targets (n) */
    double *mu, *var; /* posterior mean and (fantasy-updated) variance per candidate */
    double *V;       /* m × n rows of L⁻¹k */
    double *u;       /* q × m fantasy vectors */
} model;

typedef struct bo {
    kr__search *s;
    int q;
    /* candidates */
    int m;
    long *cand;
    double *xc;      /* m × 2 features */
    int *cc;         /* m slot categories */
    unsigned char *picked;
    model md[NMODELS];
    double z[BO_SAMPLES][NMODELS];
    kr__front2 feff, ftot;
    /* prior (NULL pr[0]: none): per configuration, in target units; the fitted line */
    double *pr[NMODELS];
    int ppos[NMODELS]; /* every prior value of the model is > 0 */
    double pa[NMODELS], pb[NMODELS];
    double *prior_v;   /* the memory of pr */
    double *sens;      /* s->nsens × 2 × NMODELS × size: the prior with each constant at ±its
                          uncertainty (their parameters and fitted coefficients live in s) */
    /* the loop */
    int has_prior;
    int flat;              /* the prior's frontiers hold fewer than BO_PRIOR_DESIGN points */
    int refit_left;        /* points of the design's refitted part still to come (refit_batch) */
    double *cal_v;         /* the calibrated prior's predictions (NMODELS × size; s->calib) */
    double stop, stop_abs; /* the stopping rule's relative and absolute bounds (≤ 0: none) */
    long n_prev;           /* points before the last batch (0: the initial design counts as one) */
    double *X;             /* n × 2 features of the evaluated points */
    int *cat;              /* their slot categories */
    kr__front2 scratch;
} bo;

/* Fits the prior's part of model k to the n evaluated points (md->y on the model's scale in,
 * the residual the GP models out): the line a + b·q, or with sensitivity features (s->nsens)
 * the Bayesian linear model; b->pa, b->pb, s->prior_b and s->sens_c hold the fit (bo_prior.c). */
void kr__bo_prior_fit(bo *b, int k, int n);
/* Adds the fitted prior part of model k at configuration idx to *mu (the GP's residual mean). */
void kr__bo_prior_add(const bo *b, int k, long idx, double *mu);
/* Calibrates the prior's constants to the measured points and, where they moved, replaces the
 * prior's predictions b->pr with the simulator's at them (bo_calib.c does the fit). KR_OK, or
 * KR_ENOMEM. */
int kr__bo_calibrate(bo *b, kr_error *err);

#endif
