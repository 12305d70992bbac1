/*
 * json.c — jansson loading with line:column errors, JSON-path tracking for semantic errors,
 * typed field readers that reject wrong types and out-of-range values, atomic JSON output.
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kr__json_load_file(const char *path, json_t **out, kr_error *err)
{
    char *text = NULL;
    int rc = kr__read_text(path, &text, NULL, 0, err);
    if (rc)
        return rc;
    rc = kr__json_load_text(text, path, out, err);
    free(text);
    return rc;
}

int kr__json_open(const char *path, json_t **root, kr__jctx *c, kr_error *err)
{
    int rc = kr__json_load_file(path, root, err);
    if (rc == KR_OK)
        kr__jctx_init(c, path, err);
    return rc;
}

int kr__json_load_text(const char *text, const char *name, json_t **out, kr_error *err)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return kr_error_set(err, KR_EPARSE, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column,
                            je.text);
    *out = root;
    return KR_OK;
}

int kr__json_write_atomic(const char *path, const json_t *root, kr_error *err)
{
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (text == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: cannot serialise JSON", path);
    size_t n = strlen(text);
    text[n] = '\0';
    kr__afile af;
    int rc = kr__afile_open(&af, path, err);
    if (rc == KR_OK) {
        if (fwrite(text, 1, n, af.f) != n || fputc('\n', af.f) == EOF) {
            kr__afile_abort(&af);
            rc = kr_error_set(err, KR_EIO, "%s: write failed", path);
        } else {
            rc = kr__afile_commit(&af, err);
        }
    }
    free(text);
    return rc;
}

void kr__json_describe(const json_t *v, char *buf, size_t cap)
{
    if (v == NULL) {
        snprintf(buf, cap, "nothing (field missing)");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: snprintf(buf, cap, "an object"); break;
    case JSON_ARRAY: snprintf(buf, cap, "an array of %zu", json_array_size(v)); break;
    case JSON_STRING: snprintf(buf, cap, "string \"%.60s\"", json_string_value(v)); break;
    case JSON_INTEGER: snprintf(buf, cap, "integer %lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: snprintf(buf, cap, "number %.17g", json_real_value(v)); break;
    case JSON_TRUE: snprintf(buf, cap, "true"); break;
    case JSON_FALSE: snprintf(buf, cap, "false"); break;
    case JSON_NULL: snprintf(buf, cap, "null"); break;
    }
}

void kr__jctx_init(kr__jctx *c, const char *file, kr_error *err)
{
    c->file = file ? file : "<input>";
    c->err = err;
    snprintf(c->path, sizeof c->path, "$");
}

size_t kr__jpush_key(kr__jctx *c, const char *key)
{
    size_t mark = strlen(c->path);
    snprintf(c->path + mark, sizeof c->path - mark, ".%s", key);
    return mark;
}

size_t kr__jpush_idx(kr__jctx *c, size_t idx)
{
    size_t mark = strlen(c->path);
    snprintf(c->path + mark, sizeof c->path - mark, "[%zu]", idx);
    return mark;
}

void kr__jpop(kr__jctx *c, size_t mark)
{
    if (mark < sizeof c->path)
        c->path[mark] = '\0';
}

static void where(const kr__jctx *c, const char *key, char *buf, size_t cap)
{
    if (key)
        snprintf(buf, cap, "%s: %s.%s", c->file, c->path, key);
    else
        snprintf(buf, cap, "%s: %s", c->file, c->path);
}

int kr__jfail(kr__jctx *c, int code, const char *key, const char *expected, const json_t *found)
{
    char w[700], f[160];
    where(c, key, w, sizeof w);
    kr__json_describe(found, f, sizeof f);
    return kr_error_set(c->err, code, "%s: expected %s, found %s", w, expected, f);
}

int kr__jfailf(kr__jctx *c, int code, const char *key, const char *fmt, ...)
{
    char w[700], m[600];
    where(c, key, w, sizeof w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return kr_error_set(c->err, code, "%s: %s", w, m);
}

int kr__jobject(kr__jctx *c, const json_t *v, const char *const *allowed)
{
    if (!json_is_object(v))
        return kr__jfail(c, KR_EPARSE, NULL, "an object", v);
    if (allowed == NULL)
        return KR_OK;
    const char *key;
    json_t *val;
    json_object_foreach(kr__jmut(v), key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0) {
                ok = 1;
                break;
            }
        if (!ok) {
            char list[400] = "";
            size_t n = 0;
            for (const char *const *a = allowed; *a && n < sizeof list - 40; a++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
            return kr__jfailf(c, KR_EPARSE, key, "unknown field (allowed: %s)", list);
        }
    }
    return KR_OK;
}

static const json_t *field(kr__jctx *c, const json_t *obj, const char *key, int required, int *rc)
{
    *rc = KR_OK;
    const json_t *v = json_object_get(obj, key);
    if (v == NULL && required)
        *rc = kr__jfailf(c, KR_EPARSE, key, "missing required field");
    return v;
}

int kr__jint(kr__jctx *c, const json_t *obj, const char *key, int required, long long lo,
             long long hi, long long def, long long *out)
{
    int rc;
    const json_t *v = field(c, obj, key, required, &rc);
    if (rc)
        return rc;
    if (v == NULL) {
        *out = def;
        return KR_OK;
    }
    long long x;
    if (json_is_integer(v)) {
        x = (long long)json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
               fabs(json_real_value(v)) < 9e15) {
        x = (long long)json_real_value(v);
    } else {
        return kr__jfail(c, KR_EPARSE, key, "an integer", v);
    }
    if (x < lo || x > hi) {
        char exp[128];
        snprintf(exp, sizeof exp, "an integer in [%lld, %lld]", lo, hi);
        return kr__jfail(c, KR_ERANGE, key, exp, v);
    }
    *out = x;
    return KR_OK;
}

int kr__jint32(kr__jctx *c, const json_t *obj, const char *key, int required, int lo, int hi,
               int def, int *out)
{
    long long x = 0;
    int rc = kr__jint(c, obj, key, required, lo, hi, def, &x);
    if (rc == KR_OK)
        *out = (int)x;
    return rc;
}

int kr__jnum(kr__jctx *c, const json_t *obj, const char *key, int required, double lo, double hi,
             double def, double *out)
{
    int rc;
    const json_t *v = field(c, obj, key, required, &rc);
    if (rc)
        return rc;
    if (v == NULL) {
        *out = def;
        return KR_OK;
    }
    if (!json_is_number(v))
        return kr__jfail(c, KR_EPARSE, key, "a number", v);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi) {
        char exp[128];
        snprintf(exp, sizeof exp, "a number in [%g, %g]", lo, hi);
        return kr__jfail(c, KR_ERANGE, key, exp, v);
    }
    *out = x;
    return KR_OK;
}

int kr__jbool(kr__jctx *c, const json_t *obj, const char *key, int required, int def, int *out)
{
    int rc;
    const json_t *v = field(c, obj, key, required, &rc);
    if (rc)
        return rc;
    if (v == NULL) {
        *out = def;
        return KR_OK;
    }
    if (!json_is_boolean(v))
        return kr__jfail(c, KR_EPARSE, key, "true or false", v);
    *out = json_is_true(v);
    return KR_OK;
}

int kr__jstr(kr__jctx *c, const json_t *obj, const char *key, int required, const char *def,
             char *buf, size_t cap)
{
    int rc;
    const json_t *v = field(c, obj, key, required, &rc);
    if (rc)
        return rc;
    if (v == NULL) {
        kr__strlcpy(buf, def ? def : "", cap);
        return KR_OK;
    }
    if (!json_is_string(v))
        return kr__jfail(c, KR_EPARSE, key, "a string", v);
    if (kr__strlcpy(buf, json_string_value(v), cap)) {
        char exp[64];
        snprintf(exp, sizeof exp, "a string of at most %zu characters", cap - 1);
        return kr__jfail(c, KR_ERANGE, key, exp, v);
    }
    return KR_OK;
}

int kr__jset_real(json_t *obj, const char *key, double v)
{
    return json_object_set_new(obj, key, isfinite(v) ? json_real(v) : json_null());
}
