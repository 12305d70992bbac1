/*
 * pylit.c — the strict reader of the Python literal subset in the published system's plan
 * files (artifact.c imports them): lists, tuples, quoted strings, integers and floats, `#`
 * comments, and the optimizer's "# Iteration N <label>: <value>" trailer lines. We never
 * evaluate the files; every error names file:line:column, what was expected and what was found.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "util/util.h"

typedef struct lex {
    const char *file;
    const char *p, *end, *bol; /* cursor, end, beginning of the current line */
    int line;
    kr__pv_trailer tr;
    kr_error *err;
} lex;

#define MAX_DEPTH 8

static int col_of(const lex *x, const char *p)
{
    return (int)(p - x->bol) + 1;
}

/* What is at p, for messages: "end of file", "a newline" or the next few characters quoted. */
static void found_at(const lex *x, const char *p, char *buf, size_t cap)
{
    if (p >= x->end) {
        snprintf(buf, cap, "end of file");
        return;
    }
    if (*p == '\n' || *p == '\r') {
        snprintf(buf, cap, "a newline");
        return;
    }
    size_t n = 0;
    while (p + n < x->end && n < 12 && p[n] != '\n' && p[n] != '\r')
        n++;
    char tmp[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < sizeof tmp; i++) {
        unsigned char c = (unsigned char)p[i];
        k += (size_t)snprintf(tmp + k, sizeof tmp - k, isprint(c) ? "%c" : "\\x%02x", c);
    }
    tmp[k] = '\0';
    snprintf(buf, cap, "'%s'", tmp);
}

static int fail_at(lex *x, const char *p, const char *expected)
{
    char f[64];
    found_at(x, p, f, sizeof f);
    return kr_error_set(x->err, KR_EPARSE, "%s:%d:%d: expected %s, found %s", x->file, x->line, col_of(x, p), expected,
                        f);
}

/* Reads one trailer comment "# Iteration N label: value" (other comments are free text). */
static int comment(lex *x, const char *start, const char *stop)
{
    static const char pre[] = "# Iteration ";
    size_t len = (size_t)(stop - start);
    if (len < sizeof pre - 1 || memcmp(start, pre, sizeof pre - 1) != 0)
        return KR_OK;
    char buf[256];
    if (len >= sizeof buf)
        return kr_error_set(x->err, KR_EPARSE, "%s:%d:1: expected a trailer line '# Iteration N <label>: <number>', "
                            "found a line of %zu characters", x->file, x->line, len);
    memcpy(buf, start, len);
    buf[len] = '\0';
    char *q = buf + sizeof pre - 1, *endp;
    errno = 0;
    long long it = strtoll(q, &endp, 10);
    static const char *const labels[] = {"cost change: ", "total cost: ", "total cost with P2P: "};
    int which = -1;
    if (endp != q && errno == 0 && it >= 0 && *endp == ' ') {
        q = endp + 1;
        for (int k = 0; k < 3; k++)
            if (strncmp(q, labels[k], strlen(labels[k])) == 0)
                which = k;
    }
    double v = NAN;
    if (which >= 0) {
        q += strlen(labels[which]);
        errno = 0;
        v = strtod(q, &endp);
        while (*endp == ' ' || *endp == '\t' || *endp == '\r')
            endp++;
        if (endp == q || *endp != '\0' || errno || !isfinite(v))
            which = -1;
    }
    if (which < 0)
        return kr_error_set(x->err, KR_EPARSE,
                            "%s:%d:1: expected a trailer line '# Iteration N cost change|total cost|total cost with "
                            "P2P: <number>', found '%s'",
                            x->file, x->line, buf);
    if (x->tr.iter >= 0 && x->tr.iter != it)
        return kr_error_set(x->err, KR_EPARSE, "%s:%d:13: expected iteration %lld (as on the earlier trailer lines), found %lld",
                            x->file, x->line, x->tr.iter, it);
    x->tr.iter = it;
    int *have = which == 0 ? &x->tr.have_change : which == 1 ? &x->tr.have_total : &x->tr.have_with;
    double *dst = which == 0 ? &x->tr.change : which == 1 ? &x->tr.total : &x->tr.with;
    if (*have)
        return kr_error_set(x->err, KR_EPARSE, "%s:%d:1: expected one '%.*s' line, found a second", x->file, x->line,
                            (int)strlen(labels[which]) - 2, labels[which]);
    *have = 1;
    *dst = v;
    return KR_OK;
}

/* Skips blanks, newlines and comments (collecting the trailer). */
static int skip(lex *x)
{
    while (x->p < x->end) {
        char c = *x->p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            x->p++;
        } else if (c == '\n') {
            x->p++;
            x->line++;
            x->bol = x->p;
        } else if (c == '#') {
            const char *s = x->p;
            while (x->p < x->end && *x->p != '\n')
                x->p++;
            const char *e = x->p;
            if (e > s && e[-1] == '\r')
                e--;
            int rc = comment(x, s, e);
            if (rc)
                return rc;
        } else if (c == '\0') {
            return fail_at(x, x->p, "text (a NUL byte is not allowed)");
        } else {
            break;
        }
    }
    return KR_OK;
}

void kr__plan_pv_free(kr__pv *v)
{
    if (v == NULL)
        return;
    for (int i = 0; i < v->n; i++)
        kr__plan_pv_free(&v->items[i]);
    free(v->items);
    free(v->s);
    memset(v, 0, sizeof *v);
}

static int parse_value(lex *x, kr__pv *out, int depth);

static int parse_seq(lex *x, kr__pv *out, int depth, char close)
{
    const char *kind = close == ']' ? "list" : "tuple";
    int cap = 0, commas = 0;
    x->p++;
    for (;;) {
        int rc = skip(x);
        if (rc)
            return rc;
        if (x->p < x->end && *x->p == close) {
            x->p++;
            break;
        }
        if (out->n > 0 && out->n > commas) {
            char exp[64];
            snprintf(exp, sizeof exp, "',' or '%c' (in the %s opened at %d:%d)", close, kind, out->line, out->col);
            return fail_at(x, x->p, exp);
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 8;
            kr__pv *grown = realloc(out->items, sizeof *grown * (size_t)cap);
            if (grown == NULL)
                return kr_error_set(x->err, KR_ENOMEM, "%s: out of memory", x->file);
            out->items = grown;
        }
        memset(&out->items[out->n], 0, sizeof out->items[0]);
        out->n++;
        if ((rc = parse_value(x, &out->items[out->n - 1], depth + 1)))
            return rc;
        if ((rc = skip(x)))
            return rc;
        if (x->p < x->end && *x->p == ',') {
            x->p++;
            commas++;
        }
    }
    /* "(x)" is a parenthesised value in Python, not a tuple; the artifact never writes it. */
    if (close == ')' && out->n == 1 && commas == 0)
        return kr_error_set(x->err, KR_EPARSE, "%s:%d:%d: expected a tuple, found a parenthesised single value (write "
                            "'(x,)' for a one-element tuple)", x->file, out->line, out->col);
    return KR_OK;
}

static int parse_string(lex *x, kr__pv *out)
{
    char q = *x->p++;
    kr__sb sb = {0};
    for (;;) {
        if (x->p >= x->end || *x->p == '\n' || *x->p == '\r') {
            kr__sb_free(&sb);
            char exp[40];
            snprintf(exp, sizeof exp, "the closing %c of the string", q);
            return fail_at(x, x->p, exp);
        }
        char c = *x->p;
        if (c == q) {
            x->p++;
            break;
        }
        if (c == '\\') {
            char e = x->p + 1 < x->end ? x->p[1] : '\0';
            const char *map = strchr("\\\\''\"\"n\nt\t", e);
            if (e == '\0' || map == NULL || (map - "\\\\''\"\"n\nt\t") % 2) {
                kr__sb_free(&sb);
                return fail_at(x, x->p, "one of the escapes \\\\ \\' \\\" \\n \\t");
            }
            char buf[2] = {map[1], '\0'};
            kr__sb_puts(&sb, buf);
            x->p += 2;
            continue;
        }
        if ((unsigned char)c < 0x20 || c == 0x7f) {
            kr__sb_free(&sb);
            return fail_at(x, x->p, "a printable character in the string");
        }
        char buf[2] = {c, '\0'};
        kr__sb_puts(&sb, buf);
        x->p++;
    }
    if (sb.oom) {
        kr__sb_free(&sb);
        return kr_error_set(x->err, KR_ENOMEM, "%s: out of memory", x->file);
    }
    out->t = KR__PV_STR;
    out->s = sb.buf ? sb.buf : calloc(1, 1);
    if (out->s == NULL)
        return kr_error_set(x->err, KR_ENOMEM, "%s: out of memory", x->file);
    return KR_OK;
}

static int parse_number(lex *x, kr__pv *out)
{
    const char *s = x->p, *q = s;
    if (q < x->end && (*q == '-' || *q == '+'))
        q++;
    const char *digits = q;
    while (q < x->end && isdigit((unsigned char)*q))
        q++;
    int ndig = (int)(q - digits), isfloat = 0;
    if (q < x->end && *q == '.') {
        isfloat = 1;
        q++;
        while (q < x->end && isdigit((unsigned char)*q)) {
            q++;
            ndig++;
        }
    }
    if (ndig > 0 && q < x->end && (*q == 'e' || *q == 'E')) {
        const char *r = q + 1;
        if (r < x->end && (*r == '-' || *r == '+'))
            r++;
        if (r < x->end && isdigit((unsigned char)*r)) {
            isfloat = 1;
            q = r;
            while (q < x->end && isdigit((unsigned char)*q))
                q++;
        }
    }
    if (ndig == 0)
        return fail_at(x, s, "a list '[', a tuple '(', a quoted string or a number");
    if (q < x->end && (isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
        return fail_at(x, s, "a decimal number");
    char buf[64];
    if ((size_t)(q - s) >= sizeof buf)
        return fail_at(x, s, "a number of at most 63 characters");
    memcpy(buf, s, (size_t)(q - s));
    buf[q - s] = '\0';
    errno = 0;
    if (isfloat) {
        out->t = KR__PV_FLOAT;
        out->d = strtod(buf, NULL);
        if (errno || !isfinite(out->d))
            return fail_at(x, s, "a finite number");
    } else {
        if (digits[0] == '0' && q - digits > 1)
            return fail_at(x, s, "an integer without leading zeros");
        out->t = KR__PV_INT;
        out->i = strtoll(buf, NULL, 10);
        if (errno)
            return fail_at(x, s, "an integer that fits in 64 bits");
    }
    x->p = q;
    return KR_OK;
}

static int parse_value(lex *x, kr__pv *out, int depth)
{
    int rc = skip(x);
    if (rc)
        return rc;
    out->line = x->line;
    out->col = col_of(x, x->p);
    if (depth > MAX_DEPTH)
        return fail_at(x, x->p, "lists nested at most 8 deep");
    if (x->p >= x->end)
        return fail_at(x, x->p, "a list '[', a tuple '(', a quoted string or a number");
    char c = *x->p;
    if (c == '[') {
        out->t = KR__PV_LIST;
        return parse_seq(x, out, depth, ']');
    }
    if (c == '(') {
        out->t = KR__PV_TUPLE;
        return parse_seq(x, out, depth, ')');
    }
    if (c == '\'' || c == '"')
        return parse_string(x, out);
    return parse_number(x, out);
}

/* Reads path as one top-level literal followed only by blanks and comments. */
int kr__plan_read_literal(const char *path, kr__pv *root, kr__pv_trailer *tr, kr_error *err)
{
    memset(root, 0, sizeof *root);
    char *text = NULL;
    size_t len = 0;
    int rc = kr__read_file(path, &text, &len, err);
    if (rc)
        return rc;
    lex x = {path, text, text + len, text, 1, {-1, 0, 0, 0, 0, 0, 0}, err};
    /* A UTF-8 byte-order mark is allowed, as Python allows it. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        x.p = x.bol = text + 3;
    rc = parse_value(&x, root, 0);
    if (rc == KR_OK && (rc = skip(&x)) == KR_OK && x.p < x.end)
        rc = fail_at(&x, x.p, "nothing but comments after the top-level list");
    if (rc == KR_OK && root->t != KR__PV_LIST)
        rc = kr_error_set(err, KR_EPARSE, "%s:%d:%d: expected a top-level list, found a %s", path, root->line, root->col,
                          root->t == KR__PV_TUPLE ? "tuple" : root->t == KR__PV_STR ? "string" : "number");
    *tr = x.tr;
    free(text);
    if (rc)
        kr__plan_pv_free(root);
    return rc;
}

const char *kr__plan_pv_what(const kr__pv *v)
{
    switch (v->t) {
    case KR__PV_LIST: return "a list";
    case KR__PV_TUPLE: return "a tuple";
    case KR__PV_STR: return "a string";
    case KR__PV_INT: return "an integer";
    default: return "a float";
    }
}
