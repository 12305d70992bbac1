/*
 * reference.c — plain-C reference implementations of every kernel the profiler runs (the
 * definitions are in refkern.h). They are the readable version the CUDA kernels are checked
 * against on small shapes (cuda/selftest.c, on a GPU) and are themselves tested on the CPU
 * (tests/test_profiler.c: finite differences for every backward, inverse pairs for the
 * permutations and rotations). Straightforward loops in double precision; speed is not a goal.
 *
 * This file is compiled into libkareus and, a second time, into libkareus_cuda.so (which has
 * no link dependency on libkareus); it therefore uses only libc and libm.
 */
#include <math.h>
#include <stddef.h>

#include "refkern.h"

void kr__pref_gemm_fprop(const float *x, const float *w, float *y, long T, long n, long k)
{
    for (long t = 0; t < T; t++)
        for (long j = 0; j < n; j++) {
            double acc = 0;
            for (long i = 0; i < k; i++)
                acc += (double)x[t * k + i] * w[j * k + i];
            y[t * n + j] = (float)acc;
        }
}

void kr__pref_gemm_dgrad(const float *dy, const float *w, float *dx, long T, long n, long k)
{
    for (long t = 0; t < T; t++)
        for (long i = 0; i < k; i++) {
            double acc = 0;
            for (long j = 0; j < n; j++)
                acc += (double)dy[t * n + j] * w[j * k + i];
            dx[t * k + i] = (float)acc;
        }
}

void kr__pref_gemm_wgrad(const float *dy, const float *x, float *dw, long T, long n, long k)
{
    for (long j = 0; j < n; j++)
        for (long i = 0; i < k; i++) {
            double acc = dw[j * k + i];
            for (long t = 0; t < T; t++)
                acc += (double)dy[t * n + j] * x[t * k + i];
            dw[j * k + i] = (float)acc;
        }
}

void kr__pref_rmsnorm_fwd(const float *x, const float *gamma, float *y, float *rstd, long T, long h, float eps)
{
    for (long t = 0; t < T; t++) {
        const float *xr = x + t * h;
        double ss = 0;
        for (long i = 0; i < h; i++)
            ss += (double)xr[i] * xr[i];
        double r = 1.0 / sqrt(ss / (double)h + eps);
        rstd[t] = (float)r;
        for (long i = 0; i < h; i++)
            y[t * h + i] = (float)(xr[i] * r * gamma[i]);
    }
}

void kr__pref_rmsnorm_bwd(const float *x, const float *gamma, const float *dy, const float *rstd, float *dx,
                          float *dgamma, long T, long h)
{
    for (long t = 0; t < T; t++) {
        const float *xr = x + t * h, *dyr = dy + t * h;
        double r = rstd[t], dot = 0;
        for (long i = 0; i < h; i++)
            dot += (double)dyr[i] * gamma[i] * xr[i] * r;
        dot /= (double)h;
        for (long i = 0; i < h; i++) {
            double xhat = xr[i] * r;
            dx[t * h + i] = (float)(r * ((double)dyr[i] * gamma[i] - xhat * dot));
            dgamma[i] += (float)((double)dyr[i] * xhat);
        }
    }
}

void kr__pref_bda_fwd(const float *x, const float *residual, float *out, unsigned char *mask, long n, float p,
                      uint64_t seed)
{
    double scale = p < 1.0f ? 1.0 / (1.0 - p) : 0.0;
    for (long i = 0; i < n; i++) {
        int keep = kr__dropout_keep(seed, (uint64_t)i, p);
        mask[i] = (unsigned char)keep;
        out[i] = (float)((double)residual[i] + (keep ? x[i] * scale : 0.0));
    }
}

void kr__pref_bda_bwd(const float *dy, const unsigned char *mask, float *dx, long n, float p)
{
    double scale = p < 1.0f ? 1.0 / (1.0 - p) : 0.0;
    for (long i = 0; i < n; i++)
        dx[i] = mask[i] ? (float)(dy[i] * scale) : 0.0f;
}

/* One element move between the fused QKV row layout and the head-major q/k/v tensors; the
 * split and the merge are the same loop with the direction flipped. */
static void qkv_permute(float *qkv, float *q, float *k, float *v, long b, long s, int nh, int nkv, int d, int split)
{
    long row = (long)nkv * (nh / nkv + 2) * d;
    for (long bi = 0; bi < b; bi++)
        for (long si = 0; si < s; si++) {
            float *src = qkv + (bi * s + si) * row;
            for (int hq = 0; hq < nh; hq++) {
                float *a = src + kr__qkv_col_q(hq, nh, nkv, d);
                float *o = q + ((bi * nh + hq) * s + si) * d;
                for (int i = 0; i < d; i++)
                    split ? (void)(o[i] = a[i]) : (void)(a[i] = o[i]);
            }
            for (int g = 0; g < nkv; g++)
                for (int which = 1; which <= 2; which++) {
                    float *a = src + kr__qkv_col_kv(g, which, nh, nkv, d);
                    float *o = (which == 1 ? k : v) + ((bi * nkv + g) * s + si) * d;
                    for (int i = 0; i < d; i++)
                        split ? (void)(o[i] = a[i]) : (void)(a[i] = o[i]);
                }
        }
}

void kr__pref_qkv_split(const float *qkv, float *q, float *k, float *v, long b, long s, int nh, int nkv, int d)
{
    /* qkv_permute only reads qkv when split = 1; the cast keeps one loop for both directions. */
    float *src;
    memcpy(&src, &qkv, sizeof src);
    qkv_permute(src, q, k, v, b, s, nh, nkv, d, 1);
}

void kr__pref_qkv_merge(const float *dq, const float *dk, const float *dv, float *dqkv, long b, long s, int nh,
                        int nkv, int d)
{
    float *q, *k, *v;
    memcpy(&q, &dq, sizeof q);
    memcpy(&k, &dk, sizeof k);
    memcpy(&v, &dv, sizeof v);
    qkv_permute(dqkv, q, k, v, b, s, nh, nkv, d, 0);
}

void kr__pref_rope(float *x, long b, int heads, long s, int d, int cp, float log_base, int inverse)
{
    int half = d / 2;
    for (long bh = 0; bh < b * heads; bh++)
        for (long si = 0; si < s; si++) {
            float *r = x + (bh * s + si) * d;
            long pos = kr__cp_pos(si, s, cp);
            for (int i = 0; i < half; i++) {
                double a = kr__rope_angle(pos, i, d, log_base);
                double c = cos(a), sn = inverse ? -sin(a) : sin(a);
                double x1 = r[i], x2 = r[i + half];
                r[i] = (float)(x1 * c - x2 * sn);
                r[i + half] = (float)(x2 * c + x1 * sn);
            }
        }
}

static double silu(double a)
{
    return a / (1.0 + exp(-a));
}

void kr__pref_swiglu_fwd(const float *in, float *out, long T, long F)
{
    for (long t = 0; t < T; t++)
        for (long j = 0; j < F; j++)
            out[t * F + j] = (float)(silu(in[t * 2 * F + j]) * in[t * 2 * F + F + j]);
}

void kr__pref_swiglu_bwd(const float *in, const float *dy, float *din, long T, long F)
{
    for (long t = 0; t < T; t++)
        for (long j = 0; j < F; j++) {
            double a = in[t * 2 * F + j], u = in[t * 2 * F + F + j], g = dy[t * F + j];
            double sg = 1.0 / (1.0 + exp(-a));
            din[t * 2 * F + j] = (float)(g * u * sg * (1.0 + a * (1.0 - sg)));
            din[t * 2 * F + F + j] = (float)(g * a * sg);
        }
}

void kr__pref_embed_fwd(const long *ids, const float *table, float *out, long T, long h, long vstart, long V)
{
    for (long t = 0; t < T; t++) {
        long row = ids[t] - vstart;
        for (long i = 0; i < h; i++)
            out[t * h + i] = (row >= 0 && row < V) ? table[row * h + i] : 0.0f;
    }
}

void kr__pref_embed_bwd(const long *ids, const float *dy, float *dtable, long T, long h, long vstart, long V)
{
    for (long t = 0; t < T; t++) {
        long row = ids[t] - vstart;
        if (row < 0 || row >= V)
            continue;
        for (long i = 0; i < h; i++)
            dtable[row * h + i] += dy[t * h + i];
    }
}

void kr__pref_xent_fwd(const float *logits, const long *target, float *loss, float *rowmax, float *rowsum, long T,
                       long V, long vstart)
{
    for (long t = 0; t < T; t++) {
        const float *x = logits + t * V;
        double mx = -INFINITY;
        for (long j = 0; j < V; j++)
            mx = x[j] > mx ? x[j] : mx;
        double sum = 0;
        for (long j = 0; j < V; j++)
            sum += exp(x[j] - mx);
        long tj = target[t] - vstart;
        double xt = (tj >= 0 && tj < V) ? x[tj] : 0.0;
        rowmax[t] = (float)mx;
        rowsum[t] = (float)sum;
        loss[t] = (float)(log(sum) + mx - xt);
    }
}

void kr__pref_xent_bwd(const float *logits, const long *target, const float *rowmax, const float *rowsum,
                       const float *dloss, float *grad, long T, long V, long vstart)
{
    for (long t = 0; t < T; t++) {
        long tj = target[t] - vstart;
        for (long j = 0; j < V; j++) {
            double sm = exp((double)logits[t * V + j] - rowmax[t]) / rowsum[t];
            grad[t * V + j] = (float)((sm - (j == tj ? 1.0 : 0.0)) * dloss[t]);
        }
    }
}

/* Longest head dimension the reference handles (its accumulator lives on the stack). */
#define REF_MAX_HEAD_DIM 256

void kr__pref_attn_fwd(const float *q, const float *k, const float *v, float *o, float *lse, long b, int nh,
                       int nkv, long s, long S, int d, int cp)
{
    double scale = 1.0 / sqrt((double)d);
    int r = nh / nkv;
    if (d > REF_MAX_HEAD_DIM)
        return;
    for (long bi = 0; bi < b; bi++)
        for (int h = 0; h < nh; h++) {
            const float *kh = k + (bi * nkv + h / r) * S * d, *vh = v + (bi * nkv + h / r) * S * d;
            for (long si = 0; si < s; si++) {
                const float *qr = q + ((bi * nh + h) * s + si) * d;
                long qpos = kr__cp_pos(si, s, cp);
                long last = qpos < S - 1 ? qpos : S - 1; /* causal: keys at positions <= qpos */
                double mx = -INFINITY, sum = 0, acc[REF_MAX_HEAD_DIM] = {0};
                /* Two passes over the keys (maximum, then exponentials) avoid a heap buffer. */
                for (long j = 0; j <= last; j++) {
                    double sc = 0;
                    for (int i = 0; i < d; i++)
                        sc += (double)qr[i] * kh[j * d + i];
                    mx = sc * scale > mx ? sc * scale : mx;
                }
                for (long j = 0; j <= last; j++) {
                    double sc = 0;
                    for (int i = 0; i < d; i++)
                        sc += (double)qr[i] * kh[j * d + i];
                    double e = exp(sc * scale - mx);
                    sum += e;
                    for (int i = 0; i < d; i++)
                        acc[i] += e * vh[j * d + i];
                }
                float *orow = o + (bi * s + si) * (long)nh * d + (long)h * d;
                for (int i = 0; i < d; i++)
                    orow[i] = (float)(acc[i] / sum);
                lse[(bi * nh + h) * s + si] = (float)(mx + log(sum));
            }
        }
}

void kr__pref_attn_bwd(const float *q, const float *k, const float *v, const float *o, const float *do_,
                       const float *lse, float *dq, float *dk, float *dv, long b, int nh, int nkv, long s, long S,
                       int d, int cp)
{
    double scale = 1.0 / sqrt((double)d);
    int r = nh / nkv;
    for (long i = 0; i < b * nh * s * d; i++)
        dq[i] = 0;
    for (long i = 0; i < b * nkv * S * d; i++)
        dk[i] = dv[i] = 0;
    for (long bi = 0; bi < b; bi++)
        for (int h = 0; h < nh; h++) {
            long kvoff = (bi * nkv + h / r) * S * d;
            for (long si = 0; si < s; si++) {
                const float *qr = q + ((bi * nh + h) * s + si) * d;
                const float *orow = o + (bi * s + si) * (long)nh * d + (long)h * d;
                const float *dorow = do_ + (bi * s + si) * (long)nh * d + (long)h * d;
                float *dqr = dq + ((bi * nh + h) * s + si) * d;
                long qpos = kr__cp_pos(si, s, cp);
                double l = lse[(bi * nh + h) * s + si], D = 0;
                for (int i = 0; i < d; i++)
                    D += (double)dorow[i] * orow[i];
                for (long j = 0; j <= qpos && j < S; j++) {
                    const float *kr = k + kvoff + j * d, *vr = v + kvoff + j * d;
                    double sc = 0, dp = 0;
                    for (int i = 0; i < d; i++) {
                        sc += (double)qr[i] * kr[i];
                        dp += (double)dorow[i] * vr[i];
                    }
                    double pj = exp(sc * scale - l);
                    double ds = pj * (dp - D);
                    for (int i = 0; i < d; i++) {
                        dv[kvoff + j * d + i] += (float)(pj * dorow[i]);
                        dk[kvoff + j * d + i] += (float)(scale * ds * qr[i]);
                        dqr[i] += (float)(scale * ds * kr[i]);
                    }
                }
            }
        }
}

void kr__pref_proxy(const float *src, float *dst, long chunk, int nsteps, long dst_elems, int reduce)
{
    for (int st = 0; st < nsteps; st++)
        for (long i = 0; i < chunk; i++) {
            long j = ((long)st * chunk + i) % dst_elems;
            dst[j] = reduce ? (float)((double)dst[j] + src[j]) : src[j];
        }
}
