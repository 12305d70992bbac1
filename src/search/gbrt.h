/*
 * gbrt.h — gradient-boosted regression trees (internal): the deterministic point regressor of
 * the artifact strategy, standing in for the XGBoost models of the published search with the
 * same settings (squared error, depth 6, learning rate 0.3, 100 rounds, row and column
 * subsampling 0.8, min child weight 1, L2 leaf regularisation 1). gbrt.c has the details.
 */
#ifndef KR_SEARCH_GBRT_H
#define KR_SEARCH_GBRT_H

#include <stdint.h>

#include "kareus/status.h"

typedef struct kr__gbrt_node {
    int feature;      /* split feature, or -1 for a leaf */
    double threshold; /* go left when x[feature] < threshold */
    int left, right;  /* child indices */
    double value;     /* leaf weight */
} kr__gbrt_node;

typedef struct kr__gbrt {
    int p;                 /* features */
    double base;           /* initial prediction (the target mean) */
    double eta;            /* learning rate */
    int ntrees;
    int *root;             /* first node of each tree */
    kr__gbrt_node *nodes;  /* all trees' nodes */
    int nnodes;
    size_t cap;
} kr__gbrt;

/*
 * Trains on n rows of p features (row-major X) and targets y, deterministically for seed.
 * Returns KR_OK, KR_EINVAL (n < 1, p < 1) or KR_ENOMEM. m must be zeroed or previously
 * trained (it is reset).
 */
int kr__gbrt_train(kr__gbrt *m, const double *X, const double *y, int n, int p, uint64_t seed, kr_error *err);
double kr__gbrt_predict(const kr__gbrt *m, const double *x);
void kr__gbrt_free(kr__gbrt *m);

#endif
