/*
 * gbrt.c — gradient-boosted regression trees with XGBoost's formulation for squared error
 * (Chen & Guestrin 2016, §2): each round fits a tree to the gradients g_i = ŷ_i − y_i (hessians
 * h_i = 1); a split's gain is G_L²/(H_L + λ) + G_R²/(H_R + λ) − G²/(H + λ), a leaf's weight
 * −G/(H + λ), scaled by the learning rate η. Settings are those of the published search's
 * XGBoost models (kareus-method.md §3 step 5): 100 rounds, η = 0.3, depth ≤ 6, min child weight
 * 1, row subsample 0.8 (each row kept with probability 0.8 per tree), column subsample 0.8 per
 * tree (max(1, ⌊0.8 p⌋) features), λ = 1 (XGBoost's default), γ = 0, base score = the target
 * mean. Splits are exact: the search's features take few distinct values (clock, SM index,
 * one-hot slot), so each feature is binned by its distinct values once and a node's best split
 * is a scan of per-bin gradient sums, O(rows + bins) per feature. Deterministic for a seed.
 */
#include "gbrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define ROUNDS 100
#define ETA 0.3
#define DEPTH 6
#define LAMBDA 1.0
#define MIN_CHILD 1.0
#define SUBSAMPLE 0.8
#define COLSAMPLE 0.8

typedef struct trainer {
    int n, p;
    const double *X;
    int *bin;        /* n × p bin index of each value */
    double *binval;  /* p × n distinct sorted values (first nbins[f] used) */
    int *nbins;
    double *g;       /* gradients */
    double *G, *H;   /* per-bin sums (scratch, size n) */
    int *cols;       /* features of this tree */
    int ncols;
    kr__gbrt *m;
} trainer;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int new_node(kr__gbrt *m)
{
    if (kr__grow((void **)&m->nodes, &m->cap, (size_t)m->nnodes + 1, sizeof *m->nodes))
        return -1;
    kr__gbrt_node *nd = &m->nodes[m->nnodes];
    nd->feature = -1;
    nd->threshold = 0;
    nd->left = nd->right = -1;
    nd->value = 0;
    return m->nnodes++;
}

/* Builds the subtree over rows[0..cnt) at depth d; returns its node index or -1 (oom). */
static int build(trainer *t, int *rows, int cnt, int d)
{
    int id = new_node(t->m);
    if (id < 0)
        return -1;
    double G = 0, H = cnt;
    for (int i = 0; i < cnt; i++)
        G += t->g[rows[i]];
    t->m->nodes[id].value = -G / (H + LAMBDA) * ETA;
    if (d >= DEPTH || cnt < 2)
        return id;
    double parent = G * G / (H + LAMBDA), best_gain = 1e-12;
    int best_f = -1, best_b = -1;
    for (int c = 0; c < t->ncols; c++) {
        int f = t->cols[c], nb = t->nbins[f];
        memset(t->G, 0, (size_t)nb * sizeof *t->G);
        memset(t->H, 0, (size_t)nb * sizeof *t->H);
        for (int i = 0; i < cnt; i++) {
            int b = t->bin[rows[i] * t->p + f];
            t->G[b] += t->g[rows[i]];
            t->H[b] += 1.0;
        }
        double GL = 0, HL = 0;
        for (int b = 0; b + 1 < nb; b++) {
            GL += t->G[b];
            HL += t->H[b];
            double HR = H - HL, GR = G - GL;
            if (t->H[b] == 0 && b > 0)
                continue; /* same split as the previous populated bin */
            if (HL < MIN_CHILD || HR < MIN_CHILD)
                continue;
            double gain = GL * GL / (HL + LAMBDA) + GR * GR / (HR + LAMBDA) - parent;
            if (gain > best_gain) {
                best_gain = gain;
                best_f = f;
                best_b = b;
            }
        }
    }
    if (best_f < 0)
        return id;
    /* Threshold halfway between the last value going left and the next populated value. */
    int nb = t->nbins[best_f];
    memset(t->H, 0, (size_t)nb * sizeof *t->H);
    for (int i = 0; i < cnt; i++)
        t->H[t->bin[rows[i] * t->p + best_f]] += 1.0;
    int next = best_b + 1;
    while (next < nb && t->H[next] == 0)
        next++;
    const double *vals = t->binval + (size_t)best_f * t->n;
    double thr = 0.5 * (vals[best_b] + vals[next]);
    int k = 0;
    for (int i = 0; i < cnt; i++)
        if (t->X[rows[i] * t->p + best_f] < thr) {
            int tmp = rows[k];
            rows[k++] = rows[i];
            rows[i] = tmp;
        }
    t->m->nodes[id].feature = best_f;
    t->m->nodes[id].threshold = thr;
    int l = build(t, rows, k, d + 1);
    if (l < 0)
        return -1;
    int r = build(t, rows + k, cnt - k, d + 1);
    if (r < 0)
        return -1;
    t->m->nodes[id].left = l;
    t->m->nodes[id].right = r;
    return id;
}

static double tree_predict(const kr__gbrt *m, int node, const double *x)
{
    while (m->nodes[node].feature >= 0)
        node = x[m->nodes[node].feature] < m->nodes[node].threshold ? m->nodes[node].left : m->nodes[node].right;
    return m->nodes[node].value;
}

double kr__gbrt_predict(const kr__gbrt *m, const double *x)
{
    double v = m->base;
    for (int i = 0; i < m->ntrees; i++)
        v += tree_predict(m, m->root[i], x);
    return v;
}

void kr__gbrt_free(kr__gbrt *m)
{
    free(m->root);
    free(m->nodes);
    memset(m, 0, sizeof *m);
}

/* Each feature's distinct values (sorted, in t->binval) and every row's bin index. */
static void make_bins(trainer *t)
{
    int n = t->n, p = t->p;
    const double *X = t->X;
    for (int f = 0; f < p; f++) {
        double *v = t->binval + (size_t)f * n;
        for (int i = 0; i < n; i++)
            v[i] = X[i * p + f];
        qsort(v, (size_t)n, sizeof *v, cmp_double);
        int k = 0;
        for (int i = 0; i < n; i++)
            if (i == 0 || v[i] != v[k - 1])
                v[k++] = v[i];
        t->nbins[f] = k;
        for (int i = 0; i < n; i++) {
            int lo = 0, hi = k - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (v[mid] < X[i * p + f])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            t->bin[i * p + f] = lo;
        }
    }
}

/* One round's row subsample (into rows; returns how many, at least 1) and column order. */
static int sample(trainer *t, kr__rng *r, int *rows)
{
    int n = t->n, p = t->p, cnt = 0;
    for (int i = 0; i < n; i++)
        if (kr__rng_uniform(r) < SUBSAMPLE)
            rows[cnt++] = i;
    if (cnt == 0)
        rows[cnt++] = (int)kr__rng_below(r, (uint64_t)n);
    for (int f = 0; f < p; f++)
        t->cols[f] = f;
    for (int f = p - 1; f > 0; f--) {
        int j = (int)kr__rng_below(r, (uint64_t)f + 1), tmp = t->cols[f];
        t->cols[f] = t->cols[j];
        t->cols[j] = tmp;
    }
    return cnt;
}

int kr__gbrt_train(kr__gbrt *m, const double *X, const double *y, int n, int p, uint64_t seed, kr_error *err)
{
    kr__gbrt_free(m);
    if (n < 1 || p < 1)
        return kr_error_set(err, KR_EINVAL, "gbrt: expected rows and features, found %d x %d", n, p);
    trainer t;
    memset(&t, 0, sizeof t);
    t.n = n;
    t.p = p;
    t.X = X;
    t.m = m;
    t.bin = malloc((size_t)n * p * sizeof *t.bin);
    t.binval = malloc((size_t)n * p * sizeof *t.binval);
    t.nbins = malloc((size_t)p * sizeof *t.nbins);
    t.g = malloc((size_t)n * sizeof *t.g);
    t.G = malloc((size_t)n * sizeof *t.G);
    t.H = malloc((size_t)n * sizeof *t.H);
    t.cols = malloc((size_t)p * sizeof *t.cols);
    double *pred = malloc((size_t)n * sizeof *pred);
    int *rows = malloc((size_t)n * sizeof *rows);
    m->root = malloc(ROUNDS * sizeof *m->root);
    int rc = KR_OK;
    if (!t.bin || !t.binval || !t.nbins || !t.g || !t.G || !t.H || !t.cols || !pred || !rows || !m->root) {
        rc = kr_error_set(err, KR_ENOMEM, "gbrt: out of memory");
        goto out;
    }
    make_bins(&t);
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    m->base = mean / n;
    m->p = p;
    m->eta = ETA;
    for (int i = 0; i < n; i++)
        pred[i] = m->base;
    kr__rng r;
    kr__rng_seed(&r, seed);
    int ncols = KR_MAX(1, (int)(COLSAMPLE * p));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < n; i++)
            t.g[i] = pred[i] - y[i];
        int cnt = sample(&t, &r, rows);
        t.ncols = ncols;
        int root = build(&t, rows, cnt, 0);
        if (root < 0) {
            rc = kr_error_set(err, KR_ENOMEM, "gbrt: out of memory");
            goto out;
        }
        m->root[m->ntrees++] = root;
        for (int i = 0; i < n; i++)
            pred[i] += tree_predict(m, root, X + (size_t)i * p);
    }
out:
    free(t.bin);
    free(t.binval);
    free(t.nbins);
    free(t.g);
    free(t.G);
    free(t.H);
    free(t.cols);
    free(pred);
    free(rows);
    if (rc)
        kr__gbrt_free(m);
    return rc;
}
