/*
 * jtable.c — JSON object formats as field tables (util.h, "JSON field tables"): one reader, one
 * writer and one describer for every table, so a format's fields, ranges, defaults and
 * documentation are one list. The typed readers are json.c's (kr__jint, kr__jnum, …), so a
 * table-read field reports exactly what a hand-written call would.
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>

static void *member(void *base, const kr__jfield *f)
{
    return (char *)base + f->off;
}

static const void *cmember(const void *base, const kr__jfield *f)
{
    return (const char *)base + f->off;
}

/* The names of t's fields, NULL-terminated, for kr__jobject. A table has at most KEYS_MAX - 1
 * fields (the largest, the job's, has 15). */
enum { KEYS_MAX = 64 };

static void keys_of(const kr__jtable *t, const char **keys, int cap)
{
    int n = 0;
    for (int i = 0; i < t->n && n < cap - 1; i++)
        keys[n++] = t->f[i].key;
    keys[n] = NULL;
}

static int read_int(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    int keep = (f->flags & KR__JKEEP) && f->off != KR__JNOSTORE;
    long long def = keep ? *(int *)member(base, f) : (long long)f->def, x;
    int rc = kr__jint(c, obj, f->key, f->flags & KR__JREQ, (long long)f->lo, (long long)f->hi, def, &x);
    if (rc == KR_OK && f->off != KR__JNOSTORE)
        *(int *)member(base, f) = (int)x;
    return rc;
}

static int read_num(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    double def = f->def, x;
    if ((f->flags & KR__JKEEP) && f->off != KR__JNOSTORE) {
        def = *(double *)member(base, f);
        if (f->conv)
            def = f->conv->to_json(def);
    }
    int rc = kr__jnum(c, obj, f->key, f->flags & KR__JREQ, f->lo, f->hi, def, &x);
    if (rc == KR_OK && f->off != KR__JNOSTORE)
        *(double *)member(base, f) = f->conv ? f->conv->from_json(x) : x;
    return rc;
}

/* The name of value v in the choice of field f. */
static const char *choice_name(const kr__jfield *f, int v)
{
    return kr__ename_of(f->choice->names->t, f->choice->names->n, v);
}

static int check_choice(kr__jctx *c, const json_t *obj, const kr__jfield *f, const char *name, int *v)
{
    if (kr__ename_parse(f->choice->names->t, f->choice->names->n, name, v))
        return kr__jfail(c, KR_EPARSE, f->key, f->choice->expected, json_object_get(obj, f->key));
    return KR_OK;
}

/* STR, ENUM and SCHEMA: a string, then (with a choice) its name parsed. */
static int read_str(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    char tmp[64];
    int store = f->type == KR__JT_STR;
    char *buf = store ? member(base, f) : tmp;
    size_t cap = store || f->cap < sizeof tmp ? f->cap : sizeof tmp;
    const char *def = f->sdef;
    if (f->type == KR__JT_ENUM)
        def = choice_name(f, (int)f->def);
    int rc = kr__jstr(c, obj, f->key, f->flags & KR__JREQ, def, buf, cap);
    if (rc)
        return rc;
    int v = 0;
    if (f->type == KR__JT_SCHEMA && strcmp(buf, f->sdef) != 0) {
        char exp[64];
        snprintf(exp, sizeof exp, "\"%s\"", f->sdef);
        return kr__jfail(c, KR_EPARSE, f->key, exp, json_object_get(obj, f->key));
    }
    if (f->choice && !(f->flags & KR__JLATE) && (rc = check_choice(c, obj, f, buf, &v)))
        return rc;
    if (f->type == KR__JT_ENUM)
        *(int *)member(base, f) = v;
    return KR_OK;
}

/* Fixed (non-KEEP) defaults of t, as for fields absent from a present object. */
static void apply_defaults(const kr__jtable *t, void *base)
{
    for (int i = 0; i < t->n; i++) {
        const kr__jfield *f = &t->f[i];
        if (f->hook && f->hook->init)
            f->hook->init(base);
        if ((f->flags & (KR__JKEEP | KR__JREQ)) || f->off == KR__JNOSTORE)
            continue;
        switch (f->type) {
        case KR__JT_INT: case KR__JT_BOOL: case KR__JT_ENUM: *(int *)member(base, f) = (int)f->def; break;
        case KR__JT_NUM: *(double *)member(base, f) = f->def; break;
        case KR__JT_STR: kr__strlcpy(member(base, f), f->sdef ? f->sdef : "", f->cap); break;
        case KR__JT_OBJ: apply_defaults(f->sub, base); break;
        case KR__JT_SCHEMA: case KR__JT_HOOK: break;
        }
    }
}

/* An object field: absent, its fields' fixed defaults (or an error if it is required);
 * present, its fields read under its key. */
static int read_obj(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    const json_t *v = json_object_get(obj, f->key);
    if (v == NULL) {
        if (f->flags & KR__JREQ)
            return kr__jfailf(c, KR_EPARSE, f->key, "missing required field");
        apply_defaults(f->sub, base);
        return KR_OK;
    }
    return kr__jtable_read_key(c, v, f->key, f->sub, base);
}

int kr__jtable_read_key(kr__jctx *c, const json_t *v, const char *key, const kr__jtable *t, void *base)
{
    size_t m = kr__jpush_key(c, key);
    int rc = kr__jtable_read(c, v, t, base);
    if (rc == KR_OK)
        kr__jpop(c, m);
    return rc;
}

int kr__jfield_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base)
{
    if (f->hook && f->hook->init)
        f->hook->init(base);
    if (f->hook && f->hook->read)
        return f->hook->read(c, obj, f, base);
    switch (f->type) {
    case KR__JT_INT: return read_int(c, obj, f, base);
    case KR__JT_NUM: return read_num(c, obj, f, base);
    case KR__JT_BOOL: {
        int *out = member(base, f);
        return kr__jbool(c, obj, f->key, f->flags & KR__JREQ, (f->flags & KR__JKEEP) ? *out : (int)f->def, out);
    }
    case KR__JT_STR: case KR__JT_ENUM: case KR__JT_SCHEMA: return read_str(c, obj, f, base);
    case KR__JT_OBJ: return read_obj(c, obj, f, base);
    case KR__JT_HOOK: break;
    }
    return KR_OK;
}

int kr__jtable_read(kr__jctx *c, const json_t *obj, const kr__jtable *t, void *base)
{
    const char *keys[KEYS_MAX];
    keys_of(t, keys, KEYS_MAX);
    int rc = kr__jobject(c, obj, keys), v;
    for (int i = 0; rc == KR_OK && i < t->n; i++)
        rc = kr__jfield_read(c, obj, &t->f[i], base);
    for (int i = 0; rc == KR_OK && i < t->n; i++)
        if ((t->f[i].flags & KR__JLATE) && t->f[i].type == KR__JT_STR)
            rc = check_choice(c, obj, &t->f[i], member(base, &t->f[i]), &v);
    return rc;
}

const kr__jfield *kr__jtable_find(const kr__jtable *t, const char *key)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->f[i].key, key) == 0)
            return &t->f[i];
    return NULL;
}

/* ---- writing ------------------------------------------------------------------------ */

static int write_field(const kr__jwctx *w, const kr__jfield *f, const void *base, json_t **out)
{
    *out = NULL;
    if (f->hook && f->hook->write)
        return f->hook->write(w, f, base, out);
    switch (f->type) {
    case KR__JT_INT: {
        int v = f->off == KR__JNOSTORE ? (int)f->def : *(const int *)cmember(base, f);
        *out = json_integer(v == 0 && (f->flags & KR__JZDEF) ? (long long)f->def : v);
        break;
    }
    case KR__JT_NUM: {
        double v = *(const double *)cmember(base, f);
        if (f->conv)
            v = f->conv->to_json(v);
        *out = isfinite(v) ? json_real(v) : json_null(); /* as kr__jset_real */
        break;
    }
    case KR__JT_BOOL: *out = json_boolean(*(const int *)cmember(base, f)); break;
    case KR__JT_STR: *out = json_string(cmember(base, f)); break;
    case KR__JT_ENUM: *out = json_string(choice_name(f, *(const int *)cmember(base, f))); break;
    case KR__JT_SCHEMA: *out = json_string(f->sdef); break;
    case KR__JT_OBJ: return kr__jtable_write(w, f->sub, base, out);
    case KR__JT_HOOK: break;
    }
    return KR_OK;
}

int kr__jtable_write(const kr__jwctx *w, const kr__jtable *t, const void *base, json_t **out)
{
    json_t *o = json_object();
    for (int i = 0; i < t->n; i++) {
        const kr__jfield *f = &t->f[i];
        json_t *v;
        int rc;
        if ((rc = write_field(w, f, base, &v))) {
            json_decref(o);
            return rc;
        }
        if (v)
            json_object_set_new(o, f->key, v);
    }
    *out = o;
    return KR_OK;
}

/* ---- description -------------------------------------------------------------------- */

static const char *type_name(const kr__jfield *f)
{
    if (f->hook && f->hook->type)
        return f->hook->type;
    switch (f->type) {
    case KR__JT_INT: return "integer";
    case KR__JT_NUM: return "number";
    case KR__JT_BOOL: return "boolean";
    case KR__JT_OBJ: return "object";
    case KR__JT_HOOK: return "array";
    case KR__JT_STR: case KR__JT_ENUM: case KR__JT_SCHEMA: break;
    }
    return "string";
}

static void describe_range(const kr__jfield *f, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (f->hook && f->hook->range)
        snprintf(buf, cap, "%s", f->hook->range);
    else if (f->type == KR__JT_INT)
        snprintf(buf, cap, "[%lld, %lld]", (f->flags & KR__JPOS) ? 1LL : (long long)f->lo, (long long)f->hi);
    else if (f->type == KR__JT_NUM)
        snprintf(buf, cap, "[%g, %g]", f->lo, f->hi);
    else if (f->choice)
        snprintf(buf, cap, "%s", f->choice->expected);
    else if (f->type == KR__JT_SCHEMA)
        snprintf(buf, cap, "\"%s\"", f->sdef);
    else if (f->type == KR__JT_STR)
        snprintf(buf, cap, "at most %zu characters", f->cap - 1);
}

static void describe_default(const kr__jfield *f, const void *keep, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (f->flags & KR__JREQ)
        snprintf(buf, cap, "required");
    else if (f->hook && f->hook->def)
        snprintf(buf, cap, "%s", f->hook->def);
    else if ((f->flags & KR__JKEEP) && keep && f->type == KR__JT_INT)
        snprintf(buf, cap, "%d", *(const int *)cmember(keep, f));
    else if ((f->flags & KR__JKEEP) && keep && f->type == KR__JT_NUM)
        snprintf(buf, cap, "%g", f->conv ? f->conv->to_json(*(const double *)cmember(keep, f))
                                         : *(const double *)cmember(keep, f));
    else if (f->type == KR__JT_INT || f->type == KR__JT_NUM)
        snprintf(buf, cap, "%g", f->def);
    else if (f->type == KR__JT_BOOL)
        snprintf(buf, cap, "%s", f->def != 0 ? "true" : "false");
    else if (f->type == KR__JT_ENUM)
        snprintf(buf, cap, "\"%s\"", choice_name(f, (int)f->def));
    else if (f->type == KR__JT_STR || f->type == KR__JT_SCHEMA)
        snprintf(buf, cap, "\"%s\"", f->sdef ? f->sdef : "");
}

/* Counts down *i over the rows of t under prefix; fills out at row 0 and returns 1. */
static int walk(const kr__jtable *t, const void *keep, const char *prefix, int *i, kr_field_info *out)
{
    for (int k = 0; k < t->n; k++) {
        const kr__jfield *f = &t->f[k];
        char path[sizeof out->path];
        snprintf(path, sizeof path, "%s%s", prefix, f->key);
        if ((*i)-- == 0) {
            memset(out, 0, sizeof *out);
            kr__strlcpy(out->path, path, sizeof out->path);
            out->type = type_name(f);
            describe_range(f, out->range, sizeof out->range);
            describe_default(f, keep, out->def, sizeof out->def);
            out->description = f->doc;
            return 1;
        }
        if (f->sub) {
            char sub[sizeof out->path];
            snprintf(sub, sizeof sub, "%s%s.", path, f->type == KR__JT_OBJ ? "" : "[]");
            if (walk(f->sub, keep, sub, i, out))
                return 1;
        }
    }
    return 0;
}

int kr__jtable_describe(const kr__jtable *t, const void *keep_base, int i, kr_field_info *out)
{
    if (i < 0 || !walk(t, keep_base, "", &i, out))
        return KR_ERANGE;
    return KR_OK;
}
