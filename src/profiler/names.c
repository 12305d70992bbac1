/*
 * names.c — names of the profiler's kernels and collective modes. A file of its own because
 * libkareus_cuda.so compiles it in as well (for its messages) without the rest of the planner.
 */
#include <string.h>

#include "kareus/profiler.h"
#include "util/util.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *kr_profiler_kernel_name(kr_profiler_kernel k)
{
    static const char *const names[KR_PK_COUNT] = {
        "gemm_fprop", "gemm_dgrad", "gemm_wgrad", "attn_fwd", "attn_bwd_pre", "attn_bwd", "attn_bwd_dq",
        "rmsnorm_fwd", "rmsnorm_bwd", "bda_fwd", "bda_bwd", "qkv_split", "qkv_merge", "qknorm_fwd",
        "qknorm_bwd", "rope_fwd", "rope_bwd", "swiglu_fwd", "swiglu_bwd", "embed_fwd", "embed_bwd",
        "xent_max", "xent_sum", "xent_bwd", "stream", "spin"};
    return (unsigned)k < KR_PK_COUNT ? names[k] : "?";
}

/* The collective modes' names, X(value, name). */
#define COMM_NAMES(X)                                                                                      \
    X(KR_PROFILER_COMM_AUTO, "auto")                                                                       \
    X(KR_PROFILER_COMM_NCCL, "nccl")                                                                       \
    X(KR_PROFILER_COMM_PROXY, "proxy")                                                                     \
    X(KR_PROFILER_COMM_PROXY_UNPACED, "proxy-unpaced")                                                     \
    X(KR_PROFILER_COMM_NONE, "none")

static const kr__ename comm_names[] = {COMM_NAMES(KR__ENAME_ROW)};

const char *kr_profiler_comm_name(kr_profiler_comm c)
{
    return kr__ename_of(comm_names, LEN(comm_names), (int)c);
}

int kr_profiler_comm_parse(const char *name, kr_profiler_comm *out)
{
    int v;
    if (kr__ename_parse(comm_names, LEN(comm_names), name, &v))
        return KR_EINVAL;
    *out = (kr_profiler_comm)v;
    return KR_OK;
}

