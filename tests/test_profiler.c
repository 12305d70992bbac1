/* test_profiler.c — the hardware profiler on the CPU: the kernels' CPU references (finite
 * differences, inverse pairs), the kernel programs against the partition catalog, the measurement
 * protocol on a virtual GPU (fake runner + fake energy counter on a virtual clock), the GPU
 * backend, the library loader's errors, and — only where a GPU exists — the kernel self-test. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kareus/kareus.h"
#include "kareus/profiler.h"
#include "kareus/sim.h"
#include "profiler/device.h"
#include "profiler/refkern.h"
#include "util/util.h"

int main(int argc, char **argv);

/* ---- helpers -------------------------------------------------------------------------------- */

static float *randv(long n, uint64_t seed, float scale)
{
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    assert_non_null(v);
    for (long i = 0; i < n; i++)
        v[i] = kr__init_value(seed, (uint64_t)i, scale);
    return v;
}

static double dotv(const float *a, const float *b, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* ---- bf16 and random numbers ---------------------------------------------------------------- */

static void ref_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(kr__bf16_bits(1.0f), 0x3f80);
    assert_int_equal(kr__bf16_bits(-2.0f), 0xc000);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0). */
    assert_int_equal(kr__bf16_bits(1.0f + 1.0f / 256.0f), 0x3f80);
    /* 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: goes up to even. */
    assert_int_equal(kr__bf16_bits(1.0f + 3.0f / 256.0f), 0x3f82);
    assert_true(kr__bf16_float(kr__bf16_bits(3.140625f)) == 3.140625f);
    assert_true(isnan(kr__bf16_float(kr__bf16_bits(NAN))));
    for (int i = 0; i < 1000; i++) {
        float f = kr__init_value(7, (uint64_t)i, 3.0f);
        assert_true(kr__bf16_round(f) == f); /* init values are bf16-exact */
        assert_true(f >= -3.0f && f <= 3.0f);
    }
}

static void ref_hash_is_stateless_and_uniform(void **state)
{
    (void)state;
    double sum = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
        float u = kr__hash_uniform(42, (uint64_t)i);
        assert_true(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    KR_ASSERT_CLOSE(sum / n, 0.5, 0.02);
    assert_true(kr__hash64(42, 5) == kr__hash64(42, 5));
    assert_true(kr__hash64(42, 5) != kr__hash64(43, 5));
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += kr__dropout_keep(9, (uint64_t)i, 0.25f);
    KR_ASSERT_CLOSE(kept / (double)n, 0.75, 0.02);
}

/* ---- CPU references ------------------------------------------------------------------------- */

static void ref_gemm_gradients_match_finite_differences(void **state)
{
    (void)state;
    long T = 5, n = 4, k = 3;
    float *x = randv(T * k, 1, 1), *w = randv(n * k, 2, 1), *g = randv(T * n, 3, 1);
    float y[20], dx[15], dw[12] = {0};
    kr__pref_gemm_fprop(x, w, y, T, n, k);
    /* Y[0][1] = Σ_i X[0][i] W[1][i] */
    KR_ASSERT_CLOSE(y[1], (double)x[0] * w[3] + (double)x[1] * w[4] + (double)x[2] * w[5], 1e-6);
    kr__pref_gemm_dgrad(g, w, dx, T, n, k);
    kr__pref_gemm_wgrad(g, x, dw, T, n, k);
    float h = 1e-2f;
    for (long i = 0; i < T * k; i++) {
        float keep = x[i];
        x[i] = keep + h;
        kr__pref_gemm_fprop(x, w, y, T, n, k);
        double lp = dotv(y, g, T * n);
        x[i] = keep - h;
        kr__pref_gemm_fprop(x, w, y, T, n, k);
        double lm = dotv(y, g, T * n);
        x[i] = keep;
        KR_ASSERT_CLOSE(dx[i], (lp - lm) / (2 * h), 1e-4);
    }
    for (long i = 0; i < n * k; i++) {
        float keep = w[i];
        w[i] = keep + h;
        kr__pref_gemm_fprop(x, w, y, T, n, k);
        double lp = dotv(y, g, T * n);
        w[i] = keep - h;
        kr__pref_gemm_fprop(x, w, y, T, n, k);
        double lm = dotv(y, g, T * n);
        w[i] = keep;
        KR_ASSERT_CLOSE(dw[i], (lp - lm) / (2 * h), 1e-4);
    }
    /* wgrad accumulates (Megatron's fp32 main grad). */
    float dw2[12];
    memcpy(dw2, dw, sizeof dw);
    kr__pref_gemm_wgrad(g, x, dw2, T, n, k);
    for (int i = 0; i < 12; i++)
        KR_ASSERT_CLOSE(dw2[i], 2.0 * dw[i], 1e-6);
    free(x), free(w), free(g);
}

static void ref_rmsnorm_backward_matches_finite_differences(void **state)
{
    (void)state;
    long T = 3, h = 8;
    float *x = randv(T * h, 4, 2), *gm = randv(h, 5, 1), *g = randv(T * h, 6, 1);
    float y[24], rstd[3], dx[24], dgamma[8] = {0};
    kr__pref_rmsnorm_fwd(x, gm, y, rstd, T, h, 1e-5f);
    double ss = 0;
    for (int i = 0; i < h; i++)
        ss += (double)x[i] * x[i];
    KR_ASSERT_CLOSE(rstd[0], 1.0 / sqrt(ss / h + 1e-5), 1e-6);
    kr__pref_rmsnorm_bwd(x, gm, g, rstd, dx, dgamma, T, h);
    float hh = 1e-2f;
    for (long i = 0; i < T * h; i++) {
        float keep = x[i];
        x[i] = keep + hh;
        kr__pref_rmsnorm_fwd(x, gm, y, rstd, T, h, 1e-5f);
        double lp = dotv(y, g, T * h);
        x[i] = keep - hh;
        kr__pref_rmsnorm_fwd(x, gm, y, rstd, T, h, 1e-5f);
        double lm = dotv(y, g, T * h);
        x[i] = keep;
        KR_ASSERT_CLOSE(dx[i], (lp - lm) / (2 * hh), 2e-3);
    }
    for (long i = 0; i < h; i++) {
        float keep = gm[i];
        gm[i] = keep + hh;
        kr__pref_rmsnorm_fwd(x, gm, y, rstd, T, h, 1e-5f);
        double lp = dotv(y, g, T * h);
        gm[i] = keep - hh;
        kr__pref_rmsnorm_fwd(x, gm, y, rstd, T, h, 1e-5f);
        double lm = dotv(y, g, T * h);
        gm[i] = keep;
        KR_ASSERT_CLOSE(dgamma[i], (lp - lm) / (2 * hh), 2e-3);
    }
    free(x), free(gm), free(g);
}

static void ref_bias_dropout_add(void **state)
{
    (void)state;
    long n = 4000;
    float p = 0.1f;
    float *x = randv(n, 7, 1), *res = randv(n, 8, 1), *g = randv(n, 9, 1);
    float *out = malloc(sizeof(float) * n), *dx = malloc(sizeof(float) * n);
    unsigned char *mask = malloc((size_t)n);
    kr__pref_bda_fwd(x, res, out, mask, n, p, 77);
    long kept = 0;
    for (long i = 0; i < n; i++) {
        kept += mask[i];
        double expect = res[i] + (mask[i] ? x[i] / (1.0 - p) : 0.0);
        KR_ASSERT_CLOSE(out[i], expect, 1e-6);
        assert_int_equal(mask[i], kr__dropout_keep(77, (uint64_t)i, p));
    }
    KR_ASSERT_CLOSE(kept / (double)n, 0.9, 0.03);
    /* The backward is the adjoint of the forward's x-branch: <d out/dx · v, g> = <v, dx(g)>. */
    kr__pref_bda_bwd(g, mask, dx, n, p);
    float *zero = calloc((size_t)n, sizeof(float)), *fx = malloc(sizeof(float) * n);
    kr__pref_bda_fwd(x, zero, fx, mask, n, p, 77);
    KR_ASSERT_CLOSE(dotv(fx, g, n), dotv(x, dx, n), 1e-6); /* float rounding of x/(1-p) */
    free(x), free(res), free(g), free(out), free(dx), free(mask), free(zero), free(fx);
}

static void ref_qkv_split_and_merge_are_inverse(void **state)
{
    (void)state;
    long b = 2, s = 3;
    int nh = 4, nkv = 2, d = 4;
    long row = (long)(nh + 2 * nkv) * d, n = b * s * row;
    float *qkv = randv(n, 10, 1), *back = calloc((size_t)n, sizeof(float));
    float *q = malloc(sizeof(float) * b * nh * s * d), *k = malloc(sizeof(float) * b * nkv * s * d),
          *v = malloc(sizeof(float) * b * nkv * s * d);
    kr__pref_qkv_split(qkv, q, k, v, b, s, nh, nkv, d);
    /* Megatron's grouped layout: token 0's row is [q0 q1 k0 v0 | q2 q3 k1 v1]. */
    assert_true(q[0] == qkv[0]);                       /* q head 0 */
    assert_true(k[0] == qkv[2 * d]);                   /* k of group 0 after its 2 query heads */
    assert_true(v[0] == qkv[3 * d]);
    assert_true(q[(2 * s) * d] == qkv[4 * d]);         /* q head 2 starts group 1 */
    assert_true(k[(1 * s) * d] == qkv[6 * d]);         /* k of group 1 */
    assert_true(q[1 * d] == qkv[1 * row]);             /* q head 0 of token 1 */
    kr__pref_qkv_merge(q, k, v, back, b, s, nh, nkv, d);
    for (long i = 0; i < n; i++)
        assert_true(back[i] == qkv[i]);
    free(qkv), free(back), free(q), free(k), free(v);
}

static void ref_rope_rotates_and_inverts(void **state)
{
    (void)state;
    long b = 1, s = 8;
    int heads = 2, d = 8;
    long n = b * heads * s * d;
    float *x = randv(n, 11, 1), *y = malloc(sizeof(float) * n);
    memcpy(y, x, sizeof(float) * n);
    float lb = logf(10000.0f);
    kr__pref_rope(y, b, heads, s, d, 1, lb, 0);
    /* Position 0 is not rotated; norms of every (i, i+d/2) pair are kept. */
    for (int i = 0; i < d; i++)
        KR_ASSERT_CLOSE(y[i], x[i], 1e-6);
    for (long r = 0; r < b * heads * s; r++)
        for (int i = 0; i < d / 2; i++) {
            double a = hypot(x[r * d + i], x[r * d + i + d / 2]), c = hypot(y[r * d + i], y[r * d + i + d / 2]);
            KR_ASSERT_CLOSE(a, c, 1e-5);
        }
    /* Position 1, pair 0: rotation by exactly 1 radian. */
    float x1 = x[d], x2 = x[d + d / 2];
    KR_ASSERT_CLOSE(y[d], x1 * cos(1.0) - x2 * sin(1.0), 1e-5);
    kr__pref_rope(y, b, heads, s, d, 1, lb, 1);
    for (long i = 0; i < n; i++)
        KR_ASSERT_CLOSE(y[i], x[i], 1e-5);
    /* Context parallel: rank 0 of cp=2 holds chunks 0 and 3 of 4 (load balancing). */
    assert_int_equal(kr__cp_pos(0, 8, 2), 0);
    assert_int_equal(kr__cp_pos(3, 8, 2), 3);
    assert_int_equal(kr__cp_pos(4, 8, 2), 12);
    assert_int_equal(kr__cp_pos(7, 8, 2), 15);
    assert_int_equal(kr__cp_pos(5, 8, 1), 5);
    free(x), free(y);
}

static void ref_swiglu_backward_matches_finite_differences(void **state)
{
    (void)state;
    long T = 3, F = 5;
    float *in = randv(T * 2 * F, 12, 2), *g = randv(T * F, 13, 1);
    float out[15], din[30];
    kr__pref_swiglu_fwd(in, out, T, F);
    KR_ASSERT_CLOSE(out[0], in[0] / (1.0 + exp(-in[0])) * in[F], 1e-6);
    kr__pref_swiglu_bwd(in, g, din, T, F);
    float h = 1e-2f;
    for (long i = 0; i < T * 2 * F; i++) {
        float keep = in[i];
        in[i] = keep + h;
        kr__pref_swiglu_fwd(in, out, T, F);
        double lp = dotv(out, g, T * F);
        in[i] = keep - h;
        kr__pref_swiglu_fwd(in, out, T, F);
        double lm = dotv(out, g, T * F);
        in[i] = keep;
        KR_ASSERT_CLOSE(din[i], (lp - lm) / (2 * h), 1e-3);
    }
    free(in), free(g);
}

static void ref_embedding_backward_is_the_adjoint(void **state)
{
    (void)state;
    long T = 6, h = 3, V = 4, vstart = 4;
    long ids[6] = {4, 7, 0, 5, 9, 4}; /* 0 and 9 belong to other shards */
    float *table = randv(V * h, 14, 1), *g = randv(T * h, 15, 1);
    float out[18], dtable[12] = {0};
    kr__pref_embed_fwd(ids, table, out, T, h, vstart, V);
    assert_true(out[0] == table[0] && out[3 * 1 + 2] == table[3 * 3 + 2]);
    assert_true(out[2 * h] == 0.0f && out[4 * h + 1] == 0.0f);
    kr__pref_embed_bwd(ids, g, dtable, T, h, vstart, V);
    KR_ASSERT_CLOSE(dotv(out, g, T * h), dotv(table, dtable, V * h), 1e-9);
    free(table), free(g);
}

static void ref_cross_entropy_matches_finite_differences(void **state)
{
    (void)state;
    long T = 3, V = 7;
    long target[3] = {2, 6, 0};
    float *x = randv(T * V, 16, 3), *dloss = randv(T, 17, 1);
    float loss[3], mx[3], sum[3], grad[21];
    kr__pref_xent_fwd(x, target, loss, mx, sum, T, V, 0);
    double lse = 0;
    for (int j = 0; j < V; j++)
        lse += exp(x[j]);
    KR_ASSERT_CLOSE(loss[0], log(lse) - x[2], 1e-6);
    kr__pref_xent_bwd(x, target, mx, sum, dloss, grad, T, V, 0);
    float h = 1e-2f;
    for (long i = 0; i < T * V; i++) {
        float keep = x[i];
        x[i] = keep + h;
        kr__pref_xent_fwd(x, target, loss, mx, sum, T, V, 0);
        double lp = dotv(loss, dloss, T);
        x[i] = keep - h;
        kr__pref_xent_fwd(x, target, loss, mx, sum, T, V, 0);
        double lm = dotv(loss, dloss, T);
        x[i] = keep;
        KR_ASSERT_CLOSE(grad[i], (lp - lm) / (2 * h), 1e-3);
    }
    free(x), free(dloss);
}

static void attention_case(int cp)
{
    long b = 1, s = 6, S = s * cp;
    int nh = 4, nkv = 2, d = 4;
    long qn = b * nh * s * d, kn = b * nkv * S * d;
    float *q = randv(qn, 20, 1), *k = randv(kn, 21, 1), *v = randv(kn, 22, 1), *g = randv(qn, 23, 1);
    float *o = malloc(sizeof(float) * qn), *lse = malloc(sizeof(float) * b * nh * s);
    float *dq = malloc(sizeof(float) * qn), *dk = malloc(sizeof(float) * kn), *dv = malloc(sizeof(float) * kn);
    kr__pref_attn_fwd(q, k, v, o, lse, b, nh, nkv, s, S, d, cp);
    /* The first query (position 0) sees only key 0: its output is v_0 of its KV head. */
    for (int i = 0; i < d; i++)
        KR_ASSERT_CLOSE(o[i], v[i], 1e-6);
    /* Head 2 and 3 share KV head 1 (GQA): head 2's first output is v_0 of KV head 1. */
    for (int i = 0; i < d; i++)
        KR_ASSERT_CLOSE(o[2 * d + i], v[S * d + i], 1e-6);
    KR_ASSERT_CLOSE(lse[0], dotv(q, k, d) / sqrt(d), 1e-5);
    /* Causality: changing the last key changes no output of a query before it. */
    float *o2 = malloc(sizeof(float) * qn);
    float keep = k[(S - 1) * d];
    k[(S - 1) * d] += 1.0f;
    kr__pref_attn_fwd(q, k, v, o2, lse, b, nh, nkv, s, S, d, cp);
    k[(S - 1) * d] = keep;
    for (long si = 0; si < s; si++)
        if (kr__cp_pos(si, s, cp) < S - 1)
            for (int i = 0; i < d; i++)
                assert_true(o2[si * nh * d + i] == o[si * nh * d + i]);
    kr__pref_attn_fwd(q, k, v, o, lse, b, nh, nkv, s, S, d, cp);
    kr__pref_attn_bwd(q, k, v, o, g, lse, dq, dk, dv, b, nh, nkv, s, S, d, cp);
    /* L = Σ O∘G: compare every gradient entry with central differences. */
    float h = 1e-2f;
    float *bufs[3] = {q, k, v}, *grads[3] = {dq, dk, dv};
    long lens[3] = {qn, kn, kn};
    for (int t = 0; t < 3; t++)
        for (long i = 0; i < lens[t]; i++) {
            float kp = bufs[t][i];
            bufs[t][i] = kp + h;
            kr__pref_attn_fwd(q, k, v, o2, lse, b, nh, nkv, s, S, d, cp);
            double lp = dotv(o2, g, qn);
            bufs[t][i] = kp - h;
            kr__pref_attn_fwd(q, k, v, o2, lse, b, nh, nkv, s, S, d, cp);
            double lm = dotv(o2, g, qn);
            bufs[t][i] = kp;
            double fd = (lp - lm) / (2 * h);
            if (fabs(grads[t][i] - fd) > 2e-3 * (1 + fabs(fd))) {
                print_error("tensor %d entry %ld: analytic %g, finite difference %g\n", t, i, grads[t][i], fd);
                fail();
            }
        }
    free(q), free(k), free(v), free(g), free(o), free(o2), free(lse), free(dq), free(dk), free(dv);
}

static void ref_attention_forward_properties_and_backward(void **state)
{
    (void)state;
    attention_case(1);
}

static void ref_attention_context_parallel(void **state)
{
    (void)state;
    attention_case(2);
}

static void ref_proxy_copy_and_reduce(void **state)
{
    (void)state;
    float src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8] = {0};
    kr__pref_proxy(src, dst, 2, 3, 8, 1); /* chunks 0..2 added */
    float want[8] = {1, 2, 3, 4, 5, 6, 0, 0};
    for (int i = 0; i < 8; i++)
        assert_true(dst[i] == want[i]);
    kr__pref_proxy(src, dst, 4, 3, 8, 0); /* wraps: chunk 2 is elements 0..3 again */
    for (int i = 0; i < 8; i++)
        assert_true(dst[i] == src[i]);
}

/* ---- kernel programs ---------------------------------------------------------------------------- */

static void load_job(const char *name, kr_job *job)
{
    kr_error e = {0};
    if (strcmp(name, "default") == 0)
        kr_job_default(job);
    else
        assert_int_equal(kr_job_builtin(name, job, &e), KR_OK);
}

static kr_config first_config(const kr_job *job, const kr_partition *p)
{
    kr_config c = {(int)job->gpu.plan_max_mhz, p->coll.kind == KR_COLL_ALLREDUCE ? 12 : 4,
                   p->nslots > 0 ? 0 : KR_SLOT_NONE, 0};
    if (p->coll.kind == KR_COLL_NONE)
        c.sms = 0;
    return c;
}

/* Checks every op's kernels against the catalog's FLOPs and bytes. */
static void check_plan_against_catalog(const kr_job *job, const kr_partition *p)
{
    kr_profiler_program *plan = malloc(sizeof *plan);
    kr_error e = {0};
    kr_config c = first_config(job, p);
    int rc = kr_profiler_program_build(job, p, &c, NULL, plan, &e);
    if (rc) {
        print_error("%s/%s: %s\n", job->name, p->key, e.msg);
        fail();
    }
    for (int i = 0; i < p->nops; i++) {
        const kr_op *op = &p->ops[i];
        double fl = 0, by = 0;
        for (int s = plan->op_step[i]; s < plan->op_step[i + 1]; s++) {
            fl += plan->steps[s].flops;
            by += plan->steps[s].bytes;
            assert_int_equal(plan->steps[s].op, i);
        }
        assert_true(plan->op_step[i + 1] > plan->op_step[i]); /* every op runs kernels */
        double byte_tol = 0.02;
        if (op->kind == KR_OP_ATTN && op->backward) {
            /* FlashAttention-2's fp32 dQ accumulator (zeroed, accumulated, converted) is HBM
             * traffic the catalog's formula leaves out; allow it, but bounded. */
            if (!(by >= op->bytes && by <= 4.0 * op->bytes)) {
                print_error("%s %s/%s: attention backward bytes %g vs catalog %g\n", job->name, p->key, op->name, by,
                            op->bytes);
                fail();
            }
        } else if (fabs(by - op->bytes) > byte_tol * op->bytes) {
            print_error("%s %s/%s: kernels move %.6g bytes, the catalog says %.6g\n", job->name, p->key, op->name, by,
                        op->bytes);
            fail();
        }
        double flop_tol = op->kind == KR_OP_ATTN ? 0.01 : 1e-9;
        if (op->kind == KR_OP_GEMM || op->kind == KR_OP_ATTN)
            if (fabs(fl - op->flops) > flop_tol * op->flops) {
                print_error("%s %s/%s: kernels do %.6g FLOPs, the catalog says %.6g\n", job->name, p->key, op->name,
                            fl, op->flops);
                fail();
            }
    }
    free(plan);
}

static void plan_matches_catalog_for_every_partition(void **state)
{
    (void)state;
    static const char *const jobs[] = {"default", "llama3.2-3b-cp2tp4-mbs8-s4096", "qwen3-1.7b-tp8-mbs8-s4096",
                                       "qwen3-1.7b-cp2tp4-mbs8-s8192"};
    kr_partition_set *set = malloc(sizeof *set);
    int checked = 0;
    for (size_t j = 0; j < KR_ARRAY_LEN(jobs); j++) {
        kr_job job;
        load_job(jobs[j], &job);
        kr_error e = {0};
        for (int v = 0; v < 3; v++) {
            assert_int_equal(kr_partition_catalog(&job, (kr_variant)v, set, &e), KR_OK);
            for (int i = 0; i < set->n; i++, checked++)
                check_plan_against_catalog(&job, &set->p[i]);
        }
        for (int st = 0; st < job.pp; st++)
            for (int bw = 0; bw < 2; bw++) {
                assert_int_equal(kr_partition_nonpartition(&job, st, bw, set, &e), KR_OK);
                for (int i = 0; i < set->n; i++, checked++)
                    check_plan_against_catalog(&job, &set->p[i]);
            }
    }
    assert_true(checked > 60);
    free(set);
}

static const kr_partition *find_part(const kr_job *job, kr_variant v, const char *key, kr_partition_set *set)
{
    kr_error e = {0};
    assert_int_equal(kr_partition_catalog(job, v, set, &e), KR_OK);
    const kr_partition *p = kr_partition_find(set, key);
    assert_non_null(p);
    return p;
}

static void plan_launch_step_follows_the_slot(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_profiler_program *plan = malloc(sizeof *plan);
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_attn", set);
    kr_error e = {0};
    for (int s = KR_SLOT_NONE; s < p->nslots; s++) {
        kr_config c = {1410, 9, s, 0};
        assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
        if (s == KR_SLOT_NONE) {
            assert_int_equal(plan->launch_step, plan->nsteps);
            continue;
        }
        int op = p->slots[s].op_index;
        assert_int_equal(plan->launch_step, plan->op_step[op]);
        for (int i = 0; i < plan->launch_step; i++)
            assert_true(plan->steps[i].op < op);
        for (int i = plan->launch_step; i < plan->nsteps; i++)
            assert_true(plan->steps[i].op >= op);
    }
    /* norm_0 is partition start; attn_0 is right before the attention kernel. */
    kr_config c = {1410, 9, 0, 0};
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    assert_int_equal(plan->launch_step, 0);
    int attn;
    assert_int_equal(kr_partition_slot_index(p, "attn_0", &attn, &e), KR_OK);
    c.slot = attn;
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    assert_int_equal(plan->steps[plan->launch_step].kernel, KR_PK_ATTN_FWD);
    free(set), free(plan);
}

static void plan_chains_buffers_along_the_layer(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_profiler_program *plan = malloc(sizeof *plan);
    kr_error e = {0};
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_mlp", set);
    kr_config c = {1410, 9, 0, 0};
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    /* bda → rmsnorm → fc1 → swiglu → fc2: each reads what the previous wrote. */
    assert_int_equal(plan->nsteps, 5);
    for (int i = 1; i < 5; i++)
        assert_int_equal(plan->steps[i].in[0], plan->steps[i - 1].out[0]);
    p = find_part(&job, KR_VARIANT_KAREUS, "bwd_attn", set);
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    int dgrad = -1, pre = -1, bwd = -1, merge = -1, rope = -1;
    for (int i = 0; i < plan->nsteps; i++) {
        const kr_profiler_step *s = &plan->steps[i];
        if (s->kernel == KR_PK_GEMM_DGRAD && dgrad < 0)
            dgrad = i;
        if (s->kernel == KR_PK_ATTN_BWD_PRE)
            pre = i;
        if (s->kernel == KR_PK_ATTN_BWD)
            bwd = i;
        if (s->kernel == KR_PK_QKV_MERGE)
            merge = i;
        if (s->kernel == KR_PK_ROPE_BWD)
            rope = i;
    }
    assert_true(dgrad >= 0 && pre > dgrad && bwd == pre + 1 && rope > bwd && merge > rope);
    assert_int_equal(plan->steps[pre].in[1], plan->steps[dgrad].out[0]); /* dO = out-proj dgrad */
    assert_int_equal(plan->steps[rope].in[1], plan->steps[bwd].out[1]);  /* rotary bwd on dK */
    assert_int_equal(plan->steps[merge].in[2], plan->steps[bwd].out[2]); /* merge reads dV */
    /* The last GEMM's dgrad reads the merged dQKV. */
    assert_int_equal(plan->steps[merge + 1].kernel, KR_PK_GEMM_DGRAD);
    assert_int_equal(plan->steps[merge + 1].in[0], plan->steps[merge].out[0]);
    free(set), free(plan);
}

static void plan_collective_modes(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_profiler_program *plan = malloc(sizeof *plan);
    kr_error e = {0};
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_mlp", set);
    kr_config c = {1410, 9, 1, 0};
    kr_profiler_program_params pp;
    kr_profiler_program_params_default(&pp);
    /* One GPU: the link-capped proxy, moving k·S with k = 2(n−1)/n. */
    assert_int_equal(kr_profiler_program_build(&job, p, &c, &pp, plan, &e), KR_OK);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_PROXY);
    assert_int_equal(plan->ranks, 1);
    assert_int_equal(plan->ctas, 9);
    assert_int_equal(plan->proxy_reduce_steps, 7);
    assert_int_equal(plan->proxy_copy_steps, 7);
    KR_ASSERT_CLOSE(plan->proxy_bus_bytes, 2.0 * 7 / 8 * p->coll.bytes, 1e-6);
    KR_ASSERT_CLOSE(plan->proxy_floor_s, job.gpu.coll_alpha_s + plan->proxy_bus_bytes / job.gpu.busbw_ar_Bps, 1e-12);
    char label[128];
    kr_profiler_comm_label(plan, label, sizeof label);
    assert_non_null(strstr(label, "PROXY"));
    assert_non_null(strstr(label, "9 CTAs"));
    pp.comm = KR_PROFILER_COMM_PROXY_UNPACED;
    assert_int_equal(kr_profiler_program_build(&job, p, &c, &pp, plan, &e), KR_OK);
    assert_true(plan->proxy_floor_s == 0.0);
    /* NCCL needs two GPUs. */
    pp.comm = KR_PROFILER_COMM_NCCL;
    KR_ASSERT_ERR(kr_profiler_program_build(&job, p, &c, &pp, plan, &e), KR_EINVAL, e, "needs two or more GPUs");
    pp.devices = 4;
    pp.comm = KR_PROFILER_COMM_AUTO;
    assert_int_equal(kr_profiler_program_build(&job, p, &c, &pp, plan, &e), KR_OK);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_NCCL);
    assert_int_equal(plan->ranks, 4);
    assert_int_equal(plan->coll_send, plan->coll_recv); /* in-place all-reduce */
    kr_profiler_comm_label(plan, label, sizeof label);
    assert_non_null(strstr(label, "nccl allreduce x4 ranks (group 8)"));
    /* CP all-gather and reduce-scatter. */
    kr_job cpj;
    load_job("llama3.2-3b-cp2tp4-mbs8-s4096", &cpj);
    p = find_part(&cpj, KR_VARIANT_KAREUS, "fwd_qkv_ag", set);
    kr_config cg = {1410, 4, 0, 0};
    pp.devices = 2;
    assert_int_equal(kr_profiler_program_build(&cpj, p, &cg, &pp, plan, &e), KR_OK);
    assert_int_equal(plan->ranks, 2);
    KR_ASSERT_CLOSE(plan->bufs[plan->coll_recv].elems, 2.0 * plan->bufs[plan->coll_send].elems, 1e-12);
    p = find_part(&cpj, KR_VARIANT_KAREUS, "bwd_a_rs", set);
    pp.devices = 1;
    assert_int_equal(kr_profiler_program_build(&cpj, p, &cg, &pp, plan, &e), KR_OK);
    assert_int_equal(plan->proxy_reduce_steps, 1);
    assert_int_equal(plan->proxy_copy_steps, 0);
    /* Bad configs are refused with the catalog's messages. */
    kr_config bad = {1411, 9, 0, 0};
    KR_ASSERT_ERR(kr_profiler_program_build(&job, find_part(&job, KR_VARIANT_KAREUS, "fwd_mlp", set), &bad, NULL, plan,
                                         &e),
                  KR_ERANGE, e, "clock");
    /* Non-partition work without a collective. */
    assert_int_equal(kr_partition_nonpartition(&job, 1, 0, set, &e), KR_OK);
    kr_config cn = {1410, 0, KR_SLOT_NONE, 0};
    assert_int_equal(kr_profiler_program_build(&job, kr_partition_find(set, "loss_fwd"), &cn, NULL, plan, &e), KR_OK);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_NONE);
    assert_int_equal(plan->steps[0].kernel, KR_PK_XENT_MAX);
    free(set), free(plan);
}

static void plan_refuses_unsupported_shapes(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_profiler_program *plan = malloc(sizeof *plan);
    kr_error e = {0};
    job.model.head_dim = 96;
    job.model.heads = 32;
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_attn", set);
    kr_config c = {1410, 9, 0, 0};
    KR_ASSERT_ERR(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_EUNSUPPORTED, e,
                  "head dimension: the attention kernel handles 64 or 128, found 96");
    /* The MLP needs no attention kernel: fine. */
    p = find_part(&job, KR_VARIANT_KAREUS, "fwd_mlp", set);
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    kr_profiler_program_params pp;
    kr_profiler_program_params_default(&pp);
    pp.dropout_p = 1.0f;
    KR_ASSERT_ERR(kr_profiler_program_build(&job, p, &c, &pp, plan, &e), KR_EINVAL, e, "dropout");
    free(set), free(plan);
}

static void plan_format_and_calibration_plans(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    kr_profiler_program *plan = malloc(sizeof *plan);
    kr_error e = {0};
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_attn", set);
    kr_config c = {1410, 9, 2, 0};
    assert_int_equal(kr_profiler_program_build(&job, p, &c, NULL, plan, &e), KR_OK);
    char text[8192];
    kr_profiler_program_format(plan, text, sizeof text);
    assert_non_null(strstr(text, "plan fwd_attn"));
    assert_non_null(strstr(text, "attn_fwd"));
    assert_non_null(strstr(text, "-- launch allreduce"));
    for (int i = 0; i < plan->nsteps; i++)
        assert_non_null(strstr(text, kr_profiler_kernel_name(plan->steps[i].kernel)));
    assert_true(kr_profiler_program_memory(plan) > 0);

    assert_int_equal(kr_profiler_program_gemm(8192, 8192, 8192, plan, &e), KR_OK);
    KR_ASSERT_CLOSE(plan->flops, 2.0 * 8192.0 * 8192.0 * 8192.0, 1e-12);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_NONE);
    assert_int_equal(kr_profiler_program_stream(1 << 30, plan, &e), KR_OK);
    KR_ASSERT_CLOSE(plan->bytes, (double)(1 << 30), 1e-9);
    assert_int_equal(kr_profiler_program_collective(KR_COLL_ALLREDUCE, 64e6, 8, 6, KR_PROFILER_COMM_PROXY_UNPACED, 1,
                                                 plan, &e),
                     KR_OK);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_PROXY_UNPACED);
    assert_int_equal(plan->ctas, 6);
    assert_int_equal(plan->nsteps, 0);
    KR_ASSERT_CLOSE(plan->proxy_bus_bytes, 2.0 * 7 / 8 * 64e6, 1e-6);
    assert_int_equal(kr_profiler_program_collective(KR_COLL_ALLGATHER, 64e6, 8, 4, KR_PROFILER_COMM_NCCL, 2, plan, &e),
                     KR_OK);
    assert_int_equal(plan->ranks, 2);
    assert_int_equal(plan->comm, KR_PROFILER_COMM_NCCL);
    assert_int_equal(kr_profiler_program_spin(1, 1000000, 1, plan, &e), KR_OK);
    assert_int_equal(plan->steps[0].ctas, 1);
    KR_ASSERT_ERR(kr_profiler_program_gemm(0, 1, 1, plan, &e), KR_EINVAL, e, "positive");
    KR_ASSERT_ERR(kr_profiler_program_spin(1, 1, 0, plan, &e), KR_EINVAL, e, "launches");
    KR_ASSERT_ERR(kr_profiler_program_collective(KR_COLL_ALLREDUCE, 64e6, 1, 6, KR_PROFILER_COMM_NCCL, 2, plan, &e),
                  KR_EINVAL, e, "group >= 2");
    KR_ASSERT_ERR(kr_profiler_program_collective(KR_COLL_ALLREDUCE, 64e6, 8, 6, KR_PROFILER_COMM_NCCL, 1, plan, &e),
                  KR_EINVAL, e, "needs two or more GPUs");
    kr_profiler_comm comm;
    assert_int_equal(kr_profiler_comm_parse("proxy-unpaced", &comm), KR_OK);
    assert_int_equal(comm, KR_PROFILER_COMM_PROXY_UNPACED);
    assert_int_equal(kr_profiler_comm_parse("mpi", &comm), KR_EINVAL);
    free(set), free(plan);
}

/* ---- protocol host logic -------------------------------------------------------------------- */

static void protocol_options_and_window_sizing(void **state)
{
    (void)state;
    kr_profiler_config o;
    kr_error e = {0};
    kr_profiler_config_default(&o);
    assert_int_equal(kr_profiler_options_validate(&o, &e), KR_OK);
    o.window_s = 0.5;
    KR_ASSERT_ERR(kr_profiler_options_validate(&o, &e), KR_EINVAL, e, "window_s: expected a value in [1, 600], found 0.5");
    kr_profiler_config_default(&o);
    o.repeats = 2;
    KR_ASSERT_ERR(kr_profiler_options_validate(&o, &e), KR_EINVAL, e, "repeats");
    long long n;
    assert_int_equal(kr_profiler_iters_for_window(0.003, 1.0, 10, 1000000, &n, &e), KR_OK);
    assert_int_equal(n, 334);
    assert_int_equal(kr_profiler_iters_for_window(2.0, 1.0, 10, 1000000, &n, &e), KR_OK);
    assert_int_equal(n, 10);
    assert_int_equal(kr_profiler_iters_for_window(1e-9, 1.0, 10, 1000000, &n, &e), KR_OK);
    assert_int_equal(n, 1000000);
    KR_ASSERT_ERR(kr_profiler_iters_for_window(0, 1.0, 10, 100, &n, &e), KR_EINVAL, e, "positive");
    KR_ASSERT_ERR(kr_profiler_iters_for_window(NAN, 1.0, 10, 100, &n, &e), KR_EINVAL, e, "finite");
    KR_ASSERT_ERR(kr_profiler_iters_for_window(1, 1.0, 10, 5, &n, &e), KR_EINVAL, e, "min_iters");
}

static void protocol_stats_and_cooldown(void **state)
{
    (void)state;
    double x[4] = {2, 4, 4, 6}, m, sd;
    assert_int_equal(kr_profiler_stats(x, 4, &m, &sd), KR_OK);
    KR_ASSERT_CLOSE(m, 4.0, 1e-15);
    KR_ASSERT_CLOSE(sd, sqrt(8.0 / 3.0), 1e-15);
    assert_int_equal(kr_profiler_stats(x, 1, &m, &sd), KR_OK);
    assert_true(sd == 0.0 && m == 2.0);
    assert_int_equal(kr_profiler_stats(x, 0, &m, &sd), KR_EINVAL);
    double big[3] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    kr_profiler_stats(big, 3, &m, &sd);
    KR_ASSERT_CLOSE(sd, 1.0, 1e-9); /* no cancellation */
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    KR_ASSERT_CLOSE(kr_profiler_cooldown_s(&o, 4.0), 2.0, 1e-15);
    KR_ASSERT_CLOSE(kr_profiler_cooldown_s(&o, 0.1), 0.5, 1e-15);
    KR_ASSERT_CLOSE(kr_profiler_cooldown_s(&o, 100.0), 5.0, 1e-15);
}

/* ---- a virtual GPU: fake runner + fake NVML on a virtual clock ------------------------------- */

#define VDEV 2
typedef struct vgpu {
    double t;                 /* virtual time, s */
    long long tick;           /* counter updates so far */
    double period;            /* counter update period */
    double energy[VDEV];      /* true energy */
    double published[VDEV];   /* the counter as NVML shows it */
    double busy_w[VDEV], idle_w;
    double run_start, run_end[VDEV];
    double iter_s[VDEV];      /* per-iteration time of each rank */
    double window_scale;      /* iteration time factor after the first `calib_runs` runs */
    int runs, calib_runs;
    long long iters;
    int running;
    int locked[VDEV];
    int set_calls, reset_calls, energy_reads;
    int fail_set;             /* set_clock returns this (0: ok) */
    int fail_energy;          /* read_energy returns this */
    int frozen;               /* the counter never changes */
    int fail_start_at;        /* start fails on this run (0: never) */
    int prepared;
    kr_profiler_program last_plan;
    /* Optional: sets iter_s and busy_w of device d from the prepared plan and its clock. */
    void (*model)(struct vgpu *g, int d);
} vgpu;

static double run_end_of(const vgpu *g, int d)
{
    return g->run_end[d];
}

/* Integrates power over [g->t, t1] (busy while the run covers the instant). */
static void integrate(vgpu *g, double t1)
{
    for (int d = 0; d < VDEV; d++) {
        double a = g->t, b = t1;
        double bs = a > g->run_start ? a : g->run_start, be = b < run_end_of(g, d) ? b : run_end_of(g, d);
        double busy = g->running && be > bs ? be - bs : 0;
        g->energy[d] += busy * g->busy_w[d] + (b - a - busy) * g->idle_w;
    }
    g->t = t1;
}

static void vadvance(vgpu *g, double dt)
{
    double end = g->t + dt;
    while (g->t < end) {
        double next = (double)(g->tick + 1) * g->period;
        if (next <= end) {
            integrate(g, next);
            g->tick++;
            if (!g->frozen)
                memcpy(g->published, g->energy, sizeof g->energy);
        } else {
            integrate(g, end);
        }
    }
}

static double v_now(void *ud)
{
    return ((vgpu *)ud)->t;
}

static void v_sleep(void *ud, double s)
{
    vadvance(ud, s);
}

static int vr_prepare(void *impl, const kr_profiler_program *plan, kr_error *err)
{
    vgpu *g = impl;
    (void)err;
    g->prepared++;
    g->last_plan = *plan;
    return KR_OK;
}

static int vr_start(void *impl, long long iters, kr_error *err)
{
    vgpu *g = impl;
    if (g->fail_start_at && g->runs + 1 == g->fail_start_at)
        return kr_error_set(err, KR_EBACKEND, "fake runner: launch failed");
    g->runs++;
    if (g->model)
        for (int d = 0; d < VDEV; d++)
            g->model(g, d);
    double scale = g->runs > g->calib_runs ? g->window_scale : 1.0;
    g->running = 1;
    g->iters = iters;
    g->run_start = g->t;
    for (int d = 0; d < VDEV; d++)
        g->run_end[d] = g->t + (double)iters * g->iter_s[d] * scale;
    return KR_OK;
}

static int vr_poll(void *impl, int *done, kr_error *err)
{
    vgpu *g = impl;
    (void)err;
    *done = g->t >= fmax(g->run_end[0], g->run_end[1]);
    return KR_OK;
}

static int vr_finish(void *impl, kr_profiler_run *out, kr_error *err)
{
    vgpu *g = impl;
    (void)err;
    double end = fmax(g->run_end[0], g->run_end[1]);
    if (g->t < end)
        vadvance(g, end - g->t);
    out->nranks = VDEV;
    for (int d = 0; d < VDEV; d++)
        out->time_s[d] = g->run_end[d] - g->run_start;
    g->running = 0;
    return KR_OK;
}

static void vr_destroy(void *impl)
{
    (void)impl;
}

static const kr_profiler_runner_ops vrunner_ops = {"virtual", vr_prepare, vr_start, vr_poll, vr_finish, vr_destroy,
                                                    NULL, NULL};

static const kr_backend_class vctl_class;

static int vc_set_clock(kr_backend *b, int dev, int lo, int hi)
{
    vgpu *g = kr_backend_state(b, &vctl_class);
    g->set_calls++;
    if (g->fail_set)
        return kr_error_set(kr_backend_error(b), g->fail_set, "NVML: Insufficient Permissions");
    assert_int_equal(lo, hi);
    g->locked[dev] = lo;
    return KR_OK;
}

static int vc_reset_clock(kr_backend *b, int dev)
{
    vgpu *g = kr_backend_state(b, &vctl_class);
    g->reset_calls++;
    g->locked[dev] = 0;
    return KR_OK;
}

static int vc_get_clock(kr_backend *b, int dev, int *cur, int *lo, int *hi)
{
    vgpu *g = kr_backend_state(b, &vctl_class);
    *cur = *lo = *hi = g->locked[dev];
    return KR_OK;
}

static int vc_read_energy(kr_backend *b, int dev, double *e)
{
    vgpu *g = kr_backend_state(b, &vctl_class);
    g->energy_reads++;
    if (g->fail_energy)
        return kr_error_set(kr_backend_error(b), g->fail_energy, "fake NVML: no energy counter");
    *e = g->published[dev];
    return KR_OK;
}

static int vc_device_count(kr_backend *b, int *n)
{
    (void)b;
    *n = VDEV;
    return KR_OK;
}

static const kr_control_ops vctl_ops = {.device_count = vc_device_count, .get_clock = vc_get_clock,
                                        .set_clock = vc_set_clock, .reset_clock = vc_reset_clock,
                                        .read_energy = vc_read_energy};
static const kr_backend_class vctl_class = {.name = "vnvml", .caps = KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY,
                                            .control = &vctl_ops};

/* The virtual GPU's control backend, destroyed when the test's variable goes out of scope. */
static kr_backend *vctl_open(vgpu *g)
{
    kr_backend *b = NULL;
    assert_int_equal(kr_backend_create(&vctl_class, g, &b), KR_OK);
    return b;
}

static void vctl_close(kr_backend **b)
{
    kr_backend_destroy(*b);
}

static void vgpu_init(vgpu *g)
{
    memset(g, 0, sizeof *g);
    g->period = 0.1;
    g->busy_w[0] = 400, g->busy_w[1] = 300;
    g->idle_w = 60;
    g->iter_s[0] = 0.00123, g->iter_s[1] = 0.00117;
    g->window_scale = 1.0;
    g->calib_runs = 1000000;
}

static void vrunner_init(kr_profiler_runner *r, vgpu *g)
{
    memset(r, 0, sizeof *r);
    r->ops = &vrunner_ops;
    r->impl = g;
    r->ndevices = VDEV;
    r->device[0] = 0, r->device[1] = 1;
    r->sm_count = 132;
    kr__strlcpy(r->device_name, "virtual", sizeof r->device_name);
}

static void two_rank_plan(kr_profiler_program *plan, int mhz)
{
    kr_error e = {0};
    assert_int_equal(kr_profiler_program_spin(1, 1000, 1, plan, &e), KR_OK);
    plan->ranks = 2;
    plan->freq_mhz = mhz;
}

static void protocol_measures_exact_energy_on_a_virtual_gpu(void **state)
{
    (void)state;
    vgpu g;
    vgpu_init(&g);
    kr_profiler_runner r;
    vrunner_init(&r, &g);
    __attribute__((cleanup(vctl_close))) kr_backend *ctl = vctl_open(&g);
    kr_profiler_clock clk = {v_now, v_sleep, &g};
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    kr_profiler_program plan;
    two_rank_plan(&plan, 1200);
    kr_profiler_result res;
    kr_error e = {0};
    int locked = 0;
    double t0 = g.t;
    assert_int_equal(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 100.0, &locked, &res, &e), KR_OK);
    /* Clocks locked on both devices, settled, read back. */
    assert_int_equal(locked, 1200);
    assert_int_equal(g.locked[0], 1200);
    assert_int_equal(g.locked[1], 1200);
    assert_int_equal(g.set_calls, 2);
    assert_int_equal(res.clock_read_mhz, 1200);
    assert_true(res.settle_s >= o.settle_min_s);
    /* Time: the slowest rank; energy: the mean over GPUs of busy power × time, without the
     * counter's 100 ms quantisation. */
    KR_ASSERT_CLOSE(res.m.time_s, 0.00123, 1e-12);
    KR_ASSERT_CLOSE(res.m.energy_j, 0.5 * (400 + 300) * 0.00123, 0.005);
    KR_ASSERT_CLOSE(res.m.eff_energy_j, res.m.energy_j - 100.0 * res.m.time_s, 1e-12);
    assert_int_equal(res.m.repeats, 3);
    assert_true(res.m.energy_sd_j < 0.005 * res.m.energy_j);
    assert_true(res.window_s >= o.window_s && res.window_s < o.window_s + 2 * g.period);
    assert_true((double)res.iters * 0.00123 >= o.window_s);
    assert_int_equal(res.nranks, 2);
    assert_int_equal(res.retries, 0);
    /* Cooldown: half the busy time, clamped, and actually slept. */
    KR_ASSERT_CLOSE(res.cooldown_s, fmin(5.0, fmax(0.5, 0.5 * res.busy_s)), 1e-12);
    KR_ASSERT_CLOSE(g.t - t0, res.busy_s + res.cooldown_s, 1e-9);
    /* The same clock again: no relock, no settle. */
    assert_int_equal(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 100.0, &locked, &res, &e), KR_OK);
    assert_int_equal(g.set_calls, 2);
    assert_true(res.settle_s == 0.0);
    /* A naive window read at arbitrary instants would be off by up to a counter step at each
     * end; the edge-aligned one is within 0.5 % over every one of several phases. */
    for (int k = 0; k < 5; k++) {
        vadvance(&g, 0.0137 * (k + 1));
        assert_int_equal(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 100.0, &locked, &res, &e), KR_OK);
        for (int i = 0; i < 3; i++)
            KR_ASSERT_CLOSE(res.energy_j[i], 350 * 0.00123, 0.005);
    }
}

static void protocol_retries_when_the_run_ends_early(void **state)
{
    (void)state;
    vgpu g;
    vgpu_init(&g);
    g.calib_runs = 2; /* warm-up + calibration at one speed … */
    g.window_scale = 0.3; /* … then the windows run 3.3x faster (e.g. boost after warm-up) */
    kr_profiler_runner r;
    vrunner_init(&r, &g);
    __attribute__((cleanup(vctl_close))) kr_backend *ctl = vctl_open(&g);
    kr_profiler_clock clk = {v_now, v_sleep, &g};
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    o.warmup_s = 0;
    o.calib_min_s = 0.001;
    kr_profiler_program plan;
    two_rank_plan(&plan, 1200);
    kr_profiler_result res;
    kr_error e = {0};
    int locked = 0;
    assert_int_equal(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0.0, &locked, &res, &e), KR_OK);
    assert_true(res.retries >= 1);
    KR_ASSERT_CLOSE(res.m.time_s, 0.3 * 0.00123, 1e-9);
    KR_ASSERT_CLOSE(res.m.energy_j, 350 * 0.3 * 0.00123, 0.005);
}

static void protocol_reports_missing_permission_and_counter(void **state)
{
    (void)state;
    vgpu g;
    vgpu_init(&g);
    kr_profiler_runner r;
    vrunner_init(&r, &g);
    __attribute__((cleanup(vctl_close))) kr_backend *ctl = vctl_open(&g);
    kr_profiler_clock clk = {v_now, v_sleep, &g};
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    kr_profiler_program plan;
    two_rank_plan(&plan, 1200);
    kr_profiler_result res;
    kr_error e = {0};
    int locked = 0;
    g.fail_set = KR_EPERM;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_EPERM, e,
                  "no permission to lock the SM clock on GPU 0");
    assert_int_equal(locked, 0);
    g.fail_set = 0;
    g.fail_energy = KR_EUNSUPPORTED;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_EUNSUPPORTED, e,
                  "cannot read the energy counter");
    assert_int_equal(g.running, 0); /* the started run was finished */
    g.fail_energy = 0;
    g.frozen = 1;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_ETIMEDOUT, e,
                  "did not change");
    g.frozen = 0;
    g.fail_start_at = g.runs + 1;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_EBACKEND, e,
                  "launch failed");
    g.fail_start_at = 0;
    plan.ranks = 3;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_EINVAL, e,
                  "needs 3 GPUs, the runner has 2");
    plan.ranks = 2;
    o.window_s = 0.2;
    KR_ASSERT_ERR(kr_profiler_measure(&r, ctl, &o, &clk, &plan, 0, &locked, &res, &e), KR_EINVAL, e, "window_s");
}

typedef struct observed {
    int calls;
    char key[KR_KEY_MAX];
    double time_s;
} observed;

static void observe(void *ud, const kr_partition *p, const kr_config *c, const kr_profiler_result *r)
{
    observed *ob = ud;
    (void)c;
    ob->calls++;
    kr__strlcpy(ob->key, p->key, sizeof ob->key);
    ob->time_s = r->m.time_s;
}

static void backend_measures_through_the_vtable(void **state)
{
    (void)state;
    vgpu g;
    vgpu_init(&g);
    g.iter_s[1] = g.iter_s[0]; /* one rank used: the proxy plan */
    kr_profiler_runner *r = calloc(1, sizeof *r);
    vrunner_init(r, &g);
    r->ndevices = 1;
    __attribute__((cleanup(vctl_close))) kr_backend *ctl = vctl_open(&g);
    kr_profiler_clock clk = {v_now, v_sleep, &g};
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_mlp", set);
    kr_backend *b;
    kr_error e = {0};
    observed ob = {0};
    assert_int_equal(kr_profiler_backend_create(&job, r, ctl, &o, NULL, &clk, observe, &ob, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "gpu");
    int n;
    assert_int_equal(kr_backend_device_count(b, &n), KR_OK);
    assert_int_equal(n, 1);
    kr_profiler_result last;
    assert_int_equal(kr_profiler_backend_last(b, &last), KR_ESTATE);
    kr_config c = {1200, 9, 1, 0};
    kr_measurement m;
    assert_int_equal(kr_backend_measure(b, p, &c, &m), KR_OK);
    KR_ASSERT_CLOSE(m.time_s, 0.00123, 1e-12);
    KR_ASSERT_CLOSE(m.energy_j, 400 * 0.00123, 0.005);
    KR_ASSERT_CLOSE(m.eff_energy_j, m.energy_j - job.static_power_w * m.time_s, 1e-12);
    assert_int_equal(g.prepared, 1);
    assert_int_equal(g.last_plan.comm, KR_PROFILER_COMM_PROXY);
    assert_int_equal(g.last_plan.ctas, 9);
    assert_int_equal(ob.calls, 1);
    assert_string_equal(ob.key, "fwd_mlp");
    assert_int_equal(kr_profiler_backend_last(b, &last), KR_OK);
    assert_non_null(strstr(last.comm, "PROXY"));
    /* The same config again: no new preparation. Another slot: prepared again. */
    assert_int_equal(kr_backend_measure(b, p, &c, &m), KR_OK);
    assert_int_equal(g.prepared, 1);
    c.slot = 2;
    assert_int_equal(kr_backend_measure(b, p, &c, &m), KR_OK);
    assert_int_equal(g.prepared, 2);
    assert_int_equal(g.last_plan.slot, 2);
    /* A bad config names the partition and the value. */
    c.sms = 500;
    assert_int_equal(kr_backend_measure(b, p, &c, &m), KR_ERANGE);
    assert_non_null(strstr(kr_backend_errmsg(b), "fwd_mlp: comm SMs"));
    /* Forwarded control; a failing measure is prefixed with the config. */
    double ej;
    assert_int_equal(kr_backend_read_energy(b, 0, &ej), KR_OK);
    assert_int_equal(kr_backend_read_power(b, 0, &ej), KR_EUNSUPPORTED);
    c.sms = 9;
    g.fail_set = KR_EPERM;
    c.freq_mhz = 1110;
    assert_int_equal(kr_backend_measure(b, p, &c, &m), KR_EPERM);
    assert_non_null(strstr(kr_backend_errmsg(b), "partition fwd_mlp at 1110 MHz, 9 SMs, slot activation_0: no permission"));
    g.fail_set = 0;
    int resets = g.reset_calls;
    kr_backend_destroy(b); /* restores the clock it locked */
    assert_int_equal(g.reset_calls, resets + 1);
    assert_int_equal(g.locked[0], 0);
    free(set);
}

/* ---- calibration ------------------------------------------------------------------------------ */

static void h200(kr_gpu *g)
{
    kr_error e = {0};
    assert_int_equal(kr_catalog_gpu_find("h200", g, &e), KR_OK);
}

static void calib_power_fit_recovers_the_model(void **state)
{
    (void)state;
    kr_gpu g;
    h200(&g);
    kr_gpu truth = g;
    truth.v_max = g.v_min + 0.6 * (g.v_max - g.v_min) + 0.05;
    kr_profiler_point pts[6];
    int f[6] = {1980, 1800, 1620, 1440, 1260, 1080};
    for (int i = 0; i < 6; i++) {
        double v = kr_sim_voltage(&truth, f[i]);
        pts[i] = (kr_profiler_point){f[i], 0, 123.0 + 640.0 * f[i] / 1000.0 * v * v, 0};
    }
    double p0, c, vmax, rms;
    kr_error e = {0};
    assert_int_equal(kr_profiler_fit_power(pts, 6, &g, &p0, &c, &vmax, &rms, &e), KR_OK);
    KR_ASSERT_CLOSE(c, 640.0, 0.02);
    KR_ASSERT_CLOSE(p0, 123.0, 0.02);
    KR_ASSERT_CLOSE(vmax, truth.v_max, 0.01);
    assert_true(rms < 1.0);
    KR_ASSERT_ERR(kr_profiler_fit_power(pts, 2, &g, &p0, &c, &vmax, &rms, &e), KR_EINVAL, e, "3 distinct clocks");
    for (int i = 0; i < 6; i++) /* power rising as the clock falls: no physical fit */
        pts[i].power_w = 200 + 10.0 * i;
    KR_ASSERT_ERR(kr_profiler_fit_power(pts, 6, &g, &p0, &c, &vmax, &rms, &e), KR_EINVAL, e, "does not rise");
}

static void calib_switch_latency_from_a_trace(void **state)
{
    (void)state;
    enum { N = 1000 };
    double t[N], k[N];
    /* 20 µs samples at 1980 MHz; request at sample 200; the clock changes 3 ms later to 1200. */
    double clk = 0;
    for (int i = 0; i < N; i++) {
        t[i] = i * 20000.0;
        if (i > 0)
            clk += 20000.0 * (i <= 350 ? 1.980 : 1.200);
        k[i] = clk;
    }
    double lat;
    kr_error e = {0};
    assert_int_equal(kr_profiler_switch_latency(t, k, N, 200, 1200, 0.02, &lat, &e), KR_OK);
    KR_ASSERT_CLOSE(lat, 0.003, 0.01);
    KR_ASSERT_CLOSE(kr_profiler_sample_mhz(t, k, 0, 100), 1980.0, 1e-12);
    KR_ASSERT_ERR(kr_profiler_switch_latency(t, k, N, 200, 1500, 0.02, &lat, &e), KR_ENOTFOUND, e, "never settled");
    KR_ASSERT_ERR(kr_profiler_switch_latency(t, k, N, 0, 1200, 0.02, &lat, &e), KR_EINVAL, e, "request");
}

static void calib_entry_sets_measured_parameters_with_sources(void **state)
{
    (void)state;
    kr_gpu base;
    h200(&base);
    kr_profiler_calib c;
    memset(&c, 0, sizeof c);
    kr__strlcpy(c.device, "NVIDIA H200", sizeof c.device);
    kr__strlcpy(c.date, "2026-01-02", sizeof c.date);
    c.idle_w = 77;
    c.blocked_w = 105;
    c.launch_s = 2.5e-6;
    double peak = base.sm_count * base.flops_per_sm_clk * 1e6;
    int f[4] = {1980, 1740, 1500, 1260};
    for (int i = 0; i < 4; i++) {
        double fr = i == 0 ? 1700 : f[i]; /* the top clock is power-throttled */
        double v = kr_sim_voltage(&base, fr);
        c.gemm[c.ngemm++] = (kr_profiler_point){f[i], 0.8 * peak * fr, 100 + 600 * fr / 1000 * v * v, fr};
    }
    c.stream[c.nstream++] = (kr_profiler_point){1980, 4.0e12, 400, 1980};
    c.stream[c.nstream++] = (kr_profiler_point){1020, 3.0e12, 300, 1020};
    kr__strlcpy(c.coll_label, "nccl allreduce x8 ranks (group 8), 1 CTAs", sizeof c.coll_label);
    c.coll[c.ncoll++] = (kr_profiler_point){1980, 1, 150, 20e9};
    c.coll[c.ncoll++] = (kr_profiler_point){1980, 16, 250, 400e9};
    c.switch_down_s = 0.004, c.switch_up_s = 0.006;
    kr_error e = {0};
    assert_int_equal(kr_profiler_calib_entry(&base, &c, &e), KR_OK);
    KR_ASSERT_CLOSE(c.gpu.idle_w, 77, 1e-12);
    KR_ASSERT_CLOSE(c.gpu.static_w, 105, 1e-12);
    KR_ASSERT_CLOSE(c.gpu.gemm_eff, 0.8, 1e-9); /* the throttled point uses its real clock */
    KR_ASSERT_CLOSE(c.gpu.dyn_coeff_w, 600, 0.02);
    KR_ASSERT_CLOSE(c.gpu.mem_eff, 4.0e12 / base.hbm_bw_Bps, 1e-12);
    KR_ASSERT_CLOSE(c.gpu.mem_knee_frac, (1020.0 / base.clock_max_mhz) / 0.75, 1e-9);
    KR_ASSERT_CLOSE(c.gpu.busbw_ar_Bps, 400e9, 1e-12);
    KR_ASSERT_CLOSE(c.gpu.busbw_per_cta_Bps, 20e9, 1e-12);
    KR_ASSERT_CLOSE(c.gpu.clock_switch_s, 0.006, 1e-12);
    assert_string_equal(c.gpu.display, "NVIDIA H200");
    assert_true(c.measured[KR_GPU_P_gemm_eff] && !c.measured[KR_GPU_P_tdp_w]);
    assert_non_null(strstr(c.gpu.source[KR_GPU_P_gemm_eff], "measured by kareus profile --calibrate on NVIDIA H200 2026-01-02"));
    assert_string_equal(c.gpu.source[KR_GPU_P_tdp_w], base.source[KR_GPU_P_tdp_w]);
    /* The entry is a catalog entry the simulator can load. */
    const char *dir = kr_test_tmpdir("calib_entry");
    char path[1200], raw[1200];
    snprintf(path, sizeof path, "%s/gpu.json", dir);
    snprintf(raw, sizeof raw, "%s/raw.json", dir);
    assert_int_equal(kr_gpu_write_json(path, &c.gpu, &e), KR_OK);
    kr_gpu back;
    assert_int_equal(kr_gpu_read_json(path, &back, &e), KR_OK);
    KR_ASSERT_CLOSE(back.dyn_coeff_w, c.gpu.dyn_coeff_w, 1e-15);
    assert_string_equal(back.source[KR_GPU_P_idle_w], c.gpu.source[KR_GPU_P_idle_w]);
    assert_int_equal(kr_profiler_calib_write_raw(raw, &c, &e), KR_OK);
    json_t *root;
    assert_int_equal(kr__json_load_file(raw, &root, &e), KR_OK);
    assert_int_equal(json_array_size(json_object_get(root, "gemm")), 4);
    assert_true(json_array_size(json_object_get(root, "measured_parameters")) >= 10);
    json_decref(root);
    /* Fewer than 8 NCCL ranks or a proxy: no link parameters. */
    kr__strlcpy(c.coll_label, "PROXY allreduce (1 GPU, unpaced, group 8), 1 CTAs", sizeof c.coll_label);
    assert_int_equal(kr_profiler_calib_entry(&base, &c, &e), KR_OK);
    assert_false(c.measured[KR_GPU_P_busbw_ar_Bps]);
    KR_ASSERT_CLOSE(c.gpu.busbw_ar_Bps, base.busbw_ar_Bps, 1e-15);
}

/* The virtual GPU's physics for the calibration test: time and power from the plan and clock. */
static void calib_model(vgpu *g, int d)
{
    const kr_profiler_program *p = &g->last_plan;
    double f = g->locked[d] > 0 ? g->locked[d] : 1980.0;
    kr_gpu h;
    h200(&h);
    double v = kr_sim_voltage(&h, f);
    if (p->nsteps > 0 && p->steps[0].kernel == KR_PK_GEMM_FPROP) {
        g->iter_s[d] = p->flops / (132.0 * 4096.0 * f * 1e6 * 0.7);
        g->busy_w[d] = 95.0 + 610.0 * f / 1000.0 * v * v;
    } else if (p->nsteps > 0 && p->steps[0].kernel == KR_PK_STREAM) {
        g->iter_s[d] = p->bytes / 4.2e12;
        g->busy_w[d] = 350;
    } else if (p->nsteps > 0 && p->steps[0].kernel == KR_PK_SPIN) {
        g->iter_s[d] = p->nsteps * (p->steps[0].ns > 0 ? p->steps[0].ns * 1e-9 : 3e-6);
        g->busy_w[d] = 112;
    } else {
        g->iter_s[d] = p->proxy_bus_bytes / (p->ctas * 40e9);
        g->busy_w[d] = 150 + 3.0 * p->ctas;
    }
}

static void calib_progress(void *ud, const char *what)
{
    (*(int *)ud)++;
    (void)what;
}

static void calib_runs_the_protocol_on_a_virtual_gpu(void **state)
{
    (void)state;
    vgpu g;
    vgpu_init(&g);
    g.model = calib_model;
    g.idle_w = 74;
    kr_profiler_runner r;
    vrunner_init(&r, &g);
    r.ndevices = 1;
    kr__strlcpy(r.device_name, "NVIDIA H200", sizeof r.device_name);
    __attribute__((cleanup(vctl_close))) kr_backend *ctl = vctl_open(&g);
    kr_profiler_clock clk = {v_now, v_sleep, &g};
    kr_profiler_config o;
    kr_profiler_config_default(&o);
    kr_profiler_calib_config co;
    kr_profiler_calib_config_default(&co);
    int steps = 0;
    co.progress = calib_progress;
    co.progress_ud = &steps;
    kr_gpu base;
    h200(&base);
    kr_profiler_calib *c = malloc(sizeof *c);
    kr_error e = {0};
    assert_int_equal(kr_profiler_calibrate(&r, ctl, &base, &co, &o, &clk, c, &e), KR_OK);
    assert_int_equal(steps, 3 + 5 + 3 + 6); /* no clock trace on this runner */
    KR_ASSERT_CLOSE(c->idle_w, 74, 0.005);
    KR_ASSERT_CLOSE(c->blocked_w, 112, 0.005);
    KR_ASSERT_CLOSE(c->launch_s, 3e-6, 0.005);
    KR_ASSERT_CLOSE(c->gpu.gemm_eff, 0.7, 0.005);
    KR_ASSERT_CLOSE(c->gpu.dyn_coeff_w, 610, 0.03);
    KR_ASSERT_CLOSE(c->fit_p0_w, 95, 0.05);
    KR_ASSERT_CLOSE(c->gpu.mem_eff, 4.2e12 / base.hbm_bw_Bps, 0.005);
    assert_int_equal(c->ngemm, 5);
    assert_int_equal(c->gemm[0].freq_mhz, (int)base.plan_max_mhz);
    assert_int_equal(c->gemm[4].freq_mhz, (int)base.plan_min_mhz);
    assert_int_equal(c->ncoll, 6);
    KR_ASSERT_CLOSE(c->coll[3].y, 8 * 40e9, 0.005); /* 8 CTAs × 40 GB/s of wire bytes */
    assert_non_null(strstr(c->coll_label, "PROXY"));
    assert_false(c->measured[KR_GPU_P_busbw_ar_Bps]);
    assert_true(c->switch_down_s == 0 && !c->measured[KR_GPU_P_clock_switch_s]);
    assert_int_equal(g.locked[0], 0); /* clocks reset at the end */
    /* A failure mid-way still resets the clocks. */
    g.fail_energy = KR_EBACKEND;
    g.locked[0] = 1500;
    assert_int_equal(kr_profiler_calibrate(&r, ctl, &base, &co, &o, &clk, c, &e), KR_EBACKEND);
    assert_int_equal(g.locked[0], 0);
    free(c);
}

static void details_log_appends_one_line_per_measurement(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    kr_partition_set *set = malloc(sizeof *set);
    const kr_partition *p = find_part(&job, KR_VARIANT_KAREUS, "fwd_attn", set);
    kr_profiler_result r;
    memset(&r, 0, sizeof r);
    r.m.time_s = 0.0012345678901234567, r.m.energy_j = 0.5, r.m.repeats = 3;
    r.time_s[0] = 1, r.time_s[1] = 2, r.time_s[2] = 3;
    r.iters = 812;
    snprintf(r.comm, sizeof r.comm, "PROXY allreduce");
    kr_config c = {1410, 9, 3, 0};
    const char *dir = kr_test_tmpdir("details");
    char path[1200];
    snprintf(path, sizeof path, "%s/d.jsonl", dir);
    kr_error e = {0};
    assert_int_equal(kr_profiler_details_append(path, &job, p, &c, &r, "NVIDIA H200", &e), KR_OK);
    c.slot = KR_SLOT_NONE;
    assert_int_equal(kr_profiler_details_append(path, &job, p, &c, &r, "NVIDIA H200", &e), KR_OK);
    char *text;
    size_t len;
    assert_int_equal(kr__read_file(path, &text, &len, &e), KR_OK);
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_true(text[len - 1] == '\n' && strchr(nl + 1, '\n') == text + len - 1); /* two lines */
    *nl = '\0';
    json_t *o;
    assert_int_equal(kr__json_load_text(text, "line", &o, &e), KR_OK);
    assert_string_equal(json_string_value(json_object_get(o, "overlap_start")), "attn_0");
    assert_int_equal(json_integer_value(json_object_get(o, "sm")), 9);
    assert_true(json_real_value(json_object_get(o, "time_s")) == r.m.time_s); /* round trip */
    assert_int_equal(json_array_size(json_object_get(o, "time_s_each")), 3);
    assert_string_equal(json_string_value(json_object_get(o, "comm")), "PROXY allreduce");
    json_decref(o);
    assert_non_null(strstr(nl + 1, "\"overlap_start\":\"none\""));
    free(text);
    KR_ASSERT_ERR(kr_profiler_details_append("/nonexistent/dir/d.jsonl", &job, p, &c, &r, "x", &e), KR_EIO, e,
                  "/nonexistent/dir/d.jsonl: cannot open");
    free(set);
}

/* ---- the loader and the environment --------------------------------------------------------- */

static void env_check_for_nvml_numbering(void **state)
{
    (void)state;
    kr_error e = {0};
    assert_int_equal(kr__profiler_env_check(NULL, NULL, 1, &e), KR_OK);
    assert_int_equal(kr__profiler_env_check("PCI_BUS_ID", "0,1,2", 3, &e), KR_OK);
    assert_int_equal(kr__profiler_env_check(NULL, "0", 1, &e), KR_OK);
    KR_ASSERT_ERR(kr__profiler_env_check(NULL, NULL, 2, &e), KR_EINVAL, e, "expected PCI_BUS_ID");
    KR_ASSERT_ERR(kr__profiler_env_check("PCI_BUS_ID", "1", 1, &e), KR_EINVAL, e, "CUDA_VISIBLE_DEVICES='1'");
    KR_ASSERT_ERR(kr__profiler_env_check("PCI_BUS_ID", "0,2", 2, &e), KR_EINVAL, e, "in order");
    KR_ASSERT_ERR(kr__profiler_env_check("PCI_BUS_ID", "GPU-abc", 1, &e), KR_EINVAL, e, "GPU-abc");
}

static void probe_names_a_missing_library(void **state)
{
    (void)state;
    kr_error e = {0};
    setenv("KAREUS_CUDA_LIB", "/nonexistent/libkareus_cuda.so", 1);
    kr_profiler_probe_info info;
    KR_ASSERT_ERR(kr_profiler_probe(&info, &e), KR_ENOLIB, e, "no libkareus_cuda: $KAREUS_CUDA_LIB does not load");
    assert_non_null(strstr(e.msg, "/nonexistent/libkareus_cuda.so"));
    kr_profiler_runner *r;
    KR_ASSERT_ERR(kr_profiler_runner_open(0, 1, &r, &e), KR_ENOLIB, e, "no libkareus_cuda");
    assert_null(r);
    /* A file that is not a Kareus CUDA library. */
    setenv("KAREUS_CUDA_LIB", "libm.so.6", 1);
    KR_ASSERT_ERR(kr_profiler_probe(&info, &e), KR_ENOLIB, e, "not a Kareus CUDA library");
    unsetenv("KAREUS_CUDA_LIB");
}

static void loader_runs_a_library_through_the_abi(void **state)
{
    (void)state;
#ifndef KR_MOCK_CUDA
    KR_SKIP("the mock CUDA library is not built");
#else
    kr_error e = {0};
    kr_profiler_probe_info info;
    setenv("KAREUS_CUDA_LIB", KR_MOCK_CUDA, 1);
    unsetenv("KAREUS_MOCK_CUDA_FAIL");
    assert_int_equal(kr_profiler_probe(&info, &e), KR_OK);
    assert_int_equal(info.ndevices, 1);
    assert_string_equal(info.name[0], "Kareus mock GPU");
    assert_string_equal(info.build, "mock (no CUDA)");
    assert_string_equal(info.lib_path, KR_MOCK_CUDA);
    kr_profiler_runner *r;
    assert_int_equal(kr_profiler_runner_open(0, 1, &r, &e), KR_OK);
    assert_int_equal(r->ndevices, 1);
    char rep[256];
    assert_int_equal(kr_profiler_selftest(r, rep, sizeof rep, &e), KR_OK);
    assert_non_null(strstr(rep, "mock"));
    kr_profiler_runner_destroy(r);
    KR_ASSERT_ERR(kr_profiler_runner_open(3, 1, &r, &e), KR_ERANGE, e, "--device: expected a GPU index in [0, 1), found 3");
    /* The library's own verdicts pass through: no driver, no GPU. */
    setenv("KAREUS_MOCK_CUDA_FAIL", "nodriver", 1);
    KR_ASSERT_ERR(kr_profiler_probe(&info, &e), KR_ENOLIB, e, "no CUDA driver");
    setenv("KAREUS_MOCK_CUDA_FAIL", "nodev", 1);
    KR_ASSERT_ERR(kr_profiler_runner_open(0, 1, &r, &e), KR_ENODEV, e, "no GPU");
    unsetenv("KAREUS_MOCK_CUDA_FAIL");
    /* Several GPUs need the PCI-bus numbering NVML uses. */
    setenv("KAREUS_MOCK_CUDA_DEVICES", "3", 1);
    const char *order = getenv("CUDA_DEVICE_ORDER");
    char saved[64] = "";
    if (order)
        snprintf(saved, sizeof saved, "%s", order);
    unsetenv("CUDA_DEVICE_ORDER");
    KR_ASSERT_ERR(kr_profiler_runner_open(0, 0, &r, &e), KR_EINVAL, e, "expected PCI_BUS_ID");
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    assert_int_equal(kr_profiler_runner_open(1, 0, &r, &e), KR_OK);
    assert_int_equal(r->ndevices, 2);
    assert_int_equal(r->device[0], 1);
    kr_profiler_runner_destroy(r);
    /* The backend in one call; it owns the runner and the control backend. */
    unsetenv("KAREUS_MOCK_CUDA_DEVICES");
    kr_job job;
    kr_job_default(&job);
    kr_profiler_open_config oo;
    memset(&oo, 0, sizeof oo);
    oo.control = "fake";
    kr_backend *b;
    assert_int_equal(kr_profiler_open_backend(&job, &oo, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "gpu");
    assert_string_equal(kr_profiler_backend_device(b), "Kareus mock GPU");
    kr_backend_destroy(b);
    assert_string_equal(kr_profiler_backend_device(NULL), "");
    oo.control = "nosuch";
    KR_ASSERT_ERR(kr_profiler_open_backend(&job, &oo, &b, &e), KR_EINVAL, e, "cannot measure on this machine:");
    setenv("KAREUS_MOCK_CUDA_FAIL", "nodev", 1);
    KR_ASSERT_ERR(kr_profiler_open_backend(&job, &oo, &b, &e), KR_ENODEV, e, "no GPU: mock");
    assert_non_null(strstr(e.msg, "nosuch")); /* both problems named */
    unsetenv("KAREUS_MOCK_CUDA_FAIL");
    if (saved[0])
        setenv("CUDA_DEVICE_ORDER", saved, 1);
    else
        unsetenv("CUDA_DEVICE_ORDER");
    unsetenv("KAREUS_MOCK_CUDA_DEVICES");
    unsetenv("KAREUS_CUDA_LIB");
#endif
}

static void probe_without_a_gpu_names_what_is_missing(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/libkareus_cuda.so", KR_BINARY_DIR);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        KR_SKIP("libkareus_cuda.so was not built (configure with the CUDA toolkit, KAREUS_CUDA=ON/AUTO)");
    fclose(f);
    setenv("KAREUS_CUDA_LIB", path, 1);
    kr_error e = {0};
    kr_profiler_probe_info info;
    int rc = kr_profiler_probe(&info, &e);
    unsetenv("KAREUS_CUDA_LIB");
    if (rc == KR_OK)
        KR_SKIP("a GPU is present (%d devices): the no-GPU path cannot be tested here", info.ndevices);
    assert_true(rc == KR_ENOLIB || rc == KR_ENODEV);
    assert_true(strstr(e.msg, "no CUDA driver") != NULL || strstr(e.msg, "no GPU") != NULL);
    assert_string_equal(info.lib_path, path);
    assert_non_null(strstr(info.build, "CUDA"));
}

static void gpu_kernels_match_cpu_references(void **state)
{
    (void)state;
    kr_error e = {0};
    kr_profiler_runner *r;
    int rc = kr_profiler_runner_open(0, 1, &r, &e);
    if (rc)
        KR_SKIP("needs a GPU: %s", e.msg);
    static char report[16384];
    rc = kr_profiler_selftest(r, report, sizeof report, &e);
    fprintf(stderr, "%s", report);
    kr_profiler_runner_destroy(r);
    if (rc)
        print_error("%s\n", e.msg);
    assert_int_equal(rc, KR_OK);
}

/* ---- comm sweep: the fit of the clock law and the log ------------------------------------------ */

/* Synthetic points of one kernel's law (the simulator's forms) on a 3 x 5 grid, times scaled by
 * 1 + noise·z, z standard normal from rng (NULL: exact). */
static int law_points(kr_profiler_sweep_point *p, kr_profiler_sweep_kernel k, double e, double noise, kr__rng *rng)
{
    static const int clocks[] = {1410, 1155, 900}, ctas[] = {1, 2, 4, 8, 16};
    double c = 8e9, sat = 200e9, alpha = 2e-5;
    int n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++, n++) {
            kr_profiler_sweep_point *q = &p[n];
            memset(q, 0, sizeof *q);
            q->kernel = k;
            q->coll = KR_COLL_ALLREDUCE;
            q->bytes = 64e6;
            q->group = 8;
            q->ctas = ctas[j];
            q->freq_mhz = q->clock_mhz = clocks[i];
            double lin = ctas[j] * c * pow(clocks[i] / 1410.0, e);
            double bw = k == KR_SWEEP_NCCL ? fmin(sat, lin) : sat * -expm1(-lin / sat);
            q->time_s = (alpha + kr_profiler_sweep_bus_bytes(q) / bw) * (1 + (rng ? noise * kr__rng_normal(rng) : 0));
            q->busbw_Bps = kr_profiler_sweep_bus_bytes(q) / q->time_s;
            q->ranks = 8, q->repeats = 1;
        }
    return n;
}

static void sweep_fit_recovers_the_exponent(void **state)
{
    (void)state;
    kr_profiler_sweep_point p[30];
    kr_profiler_sweep_fit f;
    kr_error e = {0};
    /* Exact points of both laws: the exponent to 1e-3. */
    for (double want = 0.5; want <= 1.3; want += 0.25) {
        int n = law_points(p, KR_SWEEP_TUNED, want, 0, NULL);
        n += law_points(p + n, KR_SWEEP_NCCL, want, 0, NULL);
        assert_int_equal(kr_profiler_sweep_fit_law(p, n, 1410, &f, &e), KR_OK);
        assert_true(fabs(f.clock_exp - want) < 1e-3);
        assert_int_equal(f.ngroups, 2);
        assert_true(f.rms_log < 1e-4);
    }
    /* A group of 3 points (any times) fits every exponent exactly: left out, the fit unchanged. */
    int n = law_points(p, KR_SWEEP_TUNED, 0.9, 0, NULL);
    for (int i = 0; i < 3; i++) {
        p[n + i] = p[i];
        p[n + i].kernel = KR_SWEEP_NCCL;
        p[n + i].time_s *= 1.0 + 0.3 * i;
    }
    assert_int_equal(kr_profiler_sweep_fit_law(p, n + 3, 1410, &f, &e), KR_OK);
    assert_int_equal(f.ngroups, 1);
    assert_int_equal(f.npoints, n);
    assert_true(fabs(f.clock_exp - 0.9) < 1e-3);
    /* 1.5 % Gaussian noise on the proxy's law alone (15 points, as a short GPU sweep), 40 draws:
     * unbiased, every fit within 0.1, and the stated range holds the truth about as often as a
     * 95 % interval should (measured: 36 of 40). */
    kr__rng rng;
    kr__rng_seed(&rng, 7);
    int cover = 0;
    double bias = 0;
    for (int s = 0; s < 40; s++) {
        n = law_points(p, KR_SWEEP_PROXY, 0.7, 0.015, &rng);
        assert_int_equal(kr_profiler_sweep_fit_law(p, n, 1410, &f, &e), KR_OK);
        assert_true(fabs(f.clock_exp - 0.7) < 0.1);
        assert_true(f.clock_exp_lo <= f.clock_exp && f.clock_exp <= f.clock_exp_hi);
        cover += f.clock_exp_lo <= 0.7 && 0.7 <= f.clock_exp_hi;
        bias += (f.clock_exp - 0.7) / 40;
    }
    assert_true(fabs(bias) < 0.02);
    assert_true(cover >= 32);
    /* One clock pins nothing. */
    assert_int_equal(kr_profiler_sweep_fit_law(p, 5, 1410, &f, &e), KR_EINVAL);
}

static char *slurp(const char *path)
{
    char *t = NULL;
    size_t len = 0;
    kr_error e = {0};
    return kr__read_file(path, &t, &len, &e) == KR_OK ? t : NULL;
}

static void sweep_log_resumes_and_refuses_foreign_files(void **state)
{
    (void)state;
    kr_job job;
    kr_job_default(&job);
    char dir[] = "/tmp/kr-sweep-XXXXXX", path[64], notes[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.jsonl", dir);
    snprintf(notes, sizeof notes, "%s/notes.txt", dir);
    kr_profiler_sweep_config cfg = {2, {KR_SWEEP_TUNED, KR_SWEEP_NCCL}, 2, {1410, 900}, 2, {2, 8}, 0};
    kr_profiler_sweep_point *pts;
    int n;
    kr_error e = {0};
    assert_int_equal(kr_profiler_sweep_plan(&job, &cfg, &pts, &n, &e), KR_OK);
    assert_int_equal(n, 8);
    kr_profiler_sweep_log *log;
    assert_int_equal(kr_profiler_sweep_log_open(path, &job, "sim", 0, &log, &e), KR_OK);
    for (int i = 0; i < n; i++) {
        assert_int_equal(kr_profiler_sweep_measure_sim(&job.gpu, &job.cluster, &pts[i], &e), KR_OK);
        assert_int_equal(kr_profiler_sweep_log_append(log, &pts[i], &e), KR_OK);
    }
    kr_profiler_sweep_log_close(log);
    char *full = slurp(path);
    assert_non_null(full);
    /* A torn last line: dropped on open (the file cut after the last newline), points kept. */
    FILE *f = fopen(path, "a");
    fputs("{\"kernel\":\"tuned\",\"coll\":\"allre", f);
    fclose(f);
    assert_int_equal(kr_profiler_sweep_log_open(path, &job, "sim", 0, &log, &e), KR_OK);
    assert_non_null(strstr(kr_profiler_sweep_log_warning(log), "dropped a torn last line"));
    assert_int_equal(kr_profiler_sweep_log_count(log), n);
    for (int i = 0; i < n; i++)
        assert_true(kr_profiler_sweep_log_has(log, &pts[i]));
    kr_profiler_sweep_log_close(log);
    char *again = slurp(path);
    assert_string_equal(full, again);
    assert_true(kr_profiler_sweep_is_log(path));
    /* Read back: the same points (a blank line, as an editor may leave, is skipped). */
    f = fopen(path, "a");
    fputs("\n", f);
    fclose(f);
    kr_profiler_sweep_data d;
    assert_int_equal(kr_profiler_sweep_read(path, &d, &e), KR_OK);
    assert_int_equal(d.n, n);
    assert_true(d.p[3].time_s == pts[3].time_s && d.p[3].ctas == pts[3].ctas);
    assert_string_equal(d.backend, "sim");
    kr_profiler_sweep_data_free(&d);
    assert_int_equal(kr_profiler_sweep_log_open(path, &job, "sim", 0, &log, &e), KR_OK);
    assert_int_equal(kr_profiler_sweep_log_count(log), n);
    kr_profiler_sweep_log_close(log);
    /* Another backend, and a file that is not ours: refused, unchanged. */
    assert_int_equal(kr_profiler_sweep_log_open(path, &job, "gpu", 0, &log, &e), KR_EMISMATCH);
    f = fopen(notes, "w");
    fputs("my notes\n", f);
    fclose(f);
    assert_false(kr_profiler_sweep_is_log(notes));
    assert_int_equal(kr_profiler_sweep_log_open(notes, &job, "sim", 0, &log, &e), KR_EPARSE);
    assert_non_null(strstr(e.msg, "expected a Kareus comm-sweep log"));
    char *kept = slurp(notes);
    assert_string_equal(kept, "my notes\n");
    free(kept);
    free(again);
    free(full);
    free(pts);
    remove(path);
    remove(notes);
    rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(ref_bf16_rounding),
    cmocka_unit_test(ref_hash_is_stateless_and_uniform),
    cmocka_unit_test(ref_gemm_gradients_match_finite_differences),
    cmocka_unit_test(ref_rmsnorm_backward_matches_finite_differences),
    cmocka_unit_test(ref_bias_dropout_add),
    cmocka_unit_test(ref_qkv_split_and_merge_are_inverse),
    cmocka_unit_test(ref_rope_rotates_and_inverts),
    cmocka_unit_test(ref_swiglu_backward_matches_finite_differences),
    cmocka_unit_test(ref_embedding_backward_is_the_adjoint),
    cmocka_unit_test(ref_cross_entropy_matches_finite_differences),
    cmocka_unit_test(ref_attention_forward_properties_and_backward),
    cmocka_unit_test(ref_attention_context_parallel),
    cmocka_unit_test(ref_proxy_copy_and_reduce),
    cmocka_unit_test(plan_matches_catalog_for_every_partition),
    cmocka_unit_test(plan_launch_step_follows_the_slot),
    cmocka_unit_test(plan_chains_buffers_along_the_layer),
    cmocka_unit_test(plan_collective_modes),
    cmocka_unit_test(plan_refuses_unsupported_shapes),
    cmocka_unit_test(plan_format_and_calibration_plans),
    cmocka_unit_test(protocol_options_and_window_sizing),
    cmocka_unit_test(protocol_stats_and_cooldown),
    cmocka_unit_test(protocol_measures_exact_energy_on_a_virtual_gpu),
    cmocka_unit_test(protocol_retries_when_the_run_ends_early),
    cmocka_unit_test(protocol_reports_missing_permission_and_counter),
    cmocka_unit_test(backend_measures_through_the_vtable),
    cmocka_unit_test(calib_power_fit_recovers_the_model),
    cmocka_unit_test(calib_switch_latency_from_a_trace),
    cmocka_unit_test(calib_entry_sets_measured_parameters_with_sources),
    cmocka_unit_test(calib_runs_the_protocol_on_a_virtual_gpu),
    cmocka_unit_test(details_log_appends_one_line_per_measurement),
    cmocka_unit_test(env_check_for_nvml_numbering),
    cmocka_unit_test(probe_names_a_missing_library),
    cmocka_unit_test(loader_runs_a_library_through_the_abi),
    cmocka_unit_test(probe_without_a_gpu_names_what_is_missing),
    cmocka_unit_test(gpu_kernels_match_cpu_references),
    cmocka_unit_test(sweep_fit_recovers_the_exponent),
    cmocka_unit_test(sweep_log_resumes_and_refuses_foreign_files),
};

KR_TEST_MAIN(tests)
