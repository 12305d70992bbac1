/*
 * gp.h — Gaussian-process regression for the bo strategy (internal): a product kernel of a
 * Matérn-5/2 ARD kernel over continuous features in [0, 1] and a compound-symmetry kernel over
 * one categorical feature (the launch slot), hyperparameters fitted by maximising the marginal
 * likelihood, predictions with variances and the cross-covariances needed to fantasise batch
 * members (gp.c has the formulation).
 */
#ifndef KR_SEARCH_GP_H
#define KR_SEARCH_GP_H

#include "kareus/status.h"

#define KR_GP_MAX_DIM 4

/* Hyperparameters (in standardised target units). */
typedef struct kr__gp_hyper {
    double ls[KR_GP_MAX_DIM]; /* length scales of the continuous features */
    double rho;               /* correlation between different categories, [0, 1) */
    double nugget;            /* noise variance / signal variance */
} kr__gp_hyper;

typedef struct kr__gp {
    int n, d;          /* training points, continuous features */
    double *X;         /* n × d features (row-major) */
    int *cat;          /* n categories */
    double ymean, ysd; /* standardisation of the targets */
    kr__gp_hyper h;
    double sigma2;     /* profiled signal variance (standardised units) */
    double *L;         /* n × n lower Cholesky factor of C + nugget·I (row-major) */
    double *alpha;     /* (C + nugget·I)⁻¹ y_std */
    double loglik;     /* profiled log marginal likelihood at h */
} kr__gp;

/*
 * Fits a GP to (X, cat, y) (n points, d <= KR_GP_MAX_DIM continuous features in [0, 1]),
 * starting the hyperparameter search from *start (NULL: a coarse grid first). The fitted
 * hyperparameters are in gp->h. gp must be zeroed or previously fitted (its buffers are reused).
 * Returns KR_OK, KR_EINVAL (n < 2, d out of range), KR_ENOMEM, KR_EINTERNAL (no positive-
 * definite factorisation even with the largest nugget).
 */
int kr__gp_fit(kr__gp *gp, const double *X, const int *cat, const double *y, int n, int d, const kr__gp_hyper *start,
               kr_error *err);

void kr__gp_free(kr__gp *gp);

/* Correlation k(a, b) of the fitted kernel (without sigma2). */
double kr__gp_corr(const kr__gp *gp, const double *xa, int ca, const double *xb, int cb);

/*
 * Posterior at m points: mean and variance of the latent function in target units. If V is not
 * NULL it receives the m × n matrix of L⁻¹ k(X, x_j) rows (row j for point j), used by
 * kr__gp_post_cov. Returns KR_OK or KR_ENOMEM.
 */
int kr__gp_predict(const kr__gp *gp, const double *Xc, const int *catc, int m, double *mean, double *var, double *V,
                   kr_error *err);

/* Posterior covariance (target units) of points a and b given their rows of V. */
double kr__gp_post_cov(const kr__gp *gp, const double *xa, int ca, const double *va, const double *xb, int cb,
                       const double *vb);

/* Noise variance in target units (what a new observation adds to the latent variance). */
double kr__gp_noise_var(const kr__gp *gp);

#endif
