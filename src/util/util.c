/*
 * util.c — strings, allocation, growable buffers, the RNG and the clock (see util.h).
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int kr__strlcpy(char *dst, const char *src, size_t cap)
{
    if (cap == 0)
        return 1;
    size_t n = strlen(src);
    int trunc = n >= cap;
    if (trunc)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return trunc;
}

const char *kr__ename_of(const kr__ename *t, size_t n, int value)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].value == value)
            return t[i].name;
    return "?";
}

/* kr__ename_parse with the comparison cmp (strcmp or strcasecmp). */
static int ename_find(const kr__ename *t, size_t n, const char *name, int (*cmp)(const char *, const char *),
                      int *value)
{
    for (size_t i = 0; i < n; i++)
        if (cmp(t[i].name, name) == 0) {
            *value = t[i].value;
            return KR_OK;
        }
    return KR_EINVAL;
}

int kr__ename_parse(const kr__ename *t, size_t n, const char *name, int *value)
{
    return ename_find(t, n, name, strcmp, value);
}

int kr__ename_parse_nocase(const kr__ename *t, size_t n, const char *name, int *value)
{
    return ename_find(t, n, name, strcasecmp, value);
}

void kr__vprogress(kr__progress_fn fn, void *ud, const char *fmt, va_list ap)
{
    if (fn == NULL)
        return;
    char line[KR__PROGRESS_MAX];
    vsnprintf(line, sizeof line, fmt, ap);
    fn(ud, line);
}

void kr__progress(kr__progress_fn fn, void *ud, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kr__vprogress(fn, ud, fmt, ap);
    va_end(ap);
}

double kr__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void *kr__alloc(const kr_allocator *a, size_t size)
{
    if (a && a->alloc)
        return a->alloc(a->ud, size);
    return malloc(size);
}

void *kr__calloc(const kr_allocator *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = kr__alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *kr__realloc(const kr_allocator *a, void *ptr, size_t size)
{
    if (a && a->realloc)
        return a->realloc(a->ud, ptr, size);
    return realloc(ptr, size);
}

void kr__free(const kr_allocator *a, void *ptr)
{
    if (ptr == NULL)
        return;
    if (a && a->free)
        a->free(a->ud, ptr);
    else
        free(ptr);
}

int kr__grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return KR_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return KR_ENOMEM;
        ncap *= 2;
    }
    void *p = realloc(*ptr, ncap * elem);
    if (p == NULL)
        return KR_ENOMEM;
    *ptr = p;
    *cap = ncap;
    return KR_OK;
}

/* ---- string buffer ------------------------------------------------------------------ */

static int sb_reserve(kr__sb *sb, size_t extra)
{
    if (sb->oom)
        return 0;
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 1;
    size_t ncap = sb->cap ? sb->cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *p = realloc(sb->buf, ncap);
    if (p == NULL) {
        sb->oom = 1;
        return 0;
    }
    sb->buf = p;
    sb->cap = ncap;
    return 1;
}

void kr__sb_vprintf(kr__sb *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !sb_reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void kr__sb_printf(kr__sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kr__sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void kr__sb_puts(kr__sb *sb, const char *s)
{
    size_t n = strlen(s);
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n + 1);
    sb->len += n;
}

void kr__sb_xml(kr__sb *sb, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': kr__sb_puts(sb, "&amp;"); break;
        case '<': kr__sb_puts(sb, "&lt;"); break;
        case '>': kr__sb_puts(sb, "&gt;"); break;
        case '"': kr__sb_puts(sb, "&quot;"); break;
        case '\'': kr__sb_puts(sb, "&#39;"); break;
        default: {
            char c[2] = {*s, '\0'};
            kr__sb_puts(sb, c);
        }
        }
    }
}

void kr__sb_pystr(kr__sb *sb, const char *s)
{
    kr__sb_puts(sb, "'");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'' || *p == '"')
            kr__sb_printf(sb, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            kr__sb_printf(sb, "\\x%02x", *p);
        else
            kr__sb_printf(sb, "%c", *p);
    }
    kr__sb_puts(sb, "'");
}

int kr__safe_filename(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 255 || name[0] == '.' || name[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '+'))
            return 0;
    }
    return 1;
}

int kr__double_to_int(double x, int lo, int hi, int *out)
{
    /* The comparisons are false for NaN, so NaN is refused too. */
    if (!(x >= (double)lo && x <= (double)hi) || x != (double)(long long)x)
        return 1;
    *out = (int)x;
    return 0;
}

int kr__ll_to_int(long long x, int lo, int hi, int *out)
{
    if (x < lo || x > hi)
        return 1;
    *out = (int)x;
    return 0;
}

const char *kr__sb_str(const kr__sb *sb)
{
    return sb->buf ? sb->buf : "";
}

void kr__sb_free(kr__sb *sb)
{
    free(sb->buf);
    memset(sb, 0, sizeof *sb);
}

/* ---- RNG: xoshiro256** (Blackman & Vigna), seeded with splitmix64 ------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void kr__rng_seed(kr__rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t kr__rng_next(kr__rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double kr__rng_uniform(kr__rng *r)
{
    return (double)(kr__rng_next(r) >> 11) * 0x1.0p-53;
}

double kr__rng_normal(kr__rng *r)
{
    double u1 = kr__rng_uniform(r);
    double u2 = kr__rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t kr__rng_below(kr__rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = kr__rng_next(r);
    while (x >= limit);
    return x % n;
}

void kr__fmt_double(char *buf, size_t cap, double v)
{
    /* Shortest of %.15g/%.16g/%.17g that round-trips. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}
