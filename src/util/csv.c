/*
 * csv.c — a small CSV table reader with file:line error messages (see util.h).
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Splits line in place into fields (handles "quoted, fields"); returns count or -1 on oom. */
static int split(char *line, char ***fields, size_t *cap)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (kr__grow((void **)fields, cap, (size_t)n + 1, sizeof(char *)))
            return -1;
        while (*p == ' ' || *p == '\t')
            p++;
        char *start = p;
        if (*p == '"') {
            start = ++p;
            char *w = p;
            while (*p) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            char *after = p;
            *w = '\0';
            p = after;
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',')
                p++;
        }
        int last = *p == '\0';
        *p = '\0';
        (*fields)[n++] = trim(start);
        if (last)
            break;
        p++;
    }
    return n;
}

int kr__csv_parse(const char *text, const char *name, kr__csv *t, kr_error *err)
{
    memset(t, 0, sizeof *t);
    t->file = strdup(name ? name : "<csv>");
    t->store = strdup(text);
    if (!t->file || !t->store) {
        kr__csv_free(t);
        return kr_error_set(err, KR_ENOMEM, "out of memory reading CSV");
    }
    char **fields = NULL;
    size_t fcap = 0, ccap = 0, lcap = 0;
    int lineno = 0;
    char *p = t->store;
    while (*p) {
        char *line = p;
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = '\0';
            p = nl + 1;
        } else {
            p += strlen(p);
        }
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        char *tl = trim(line);
        if (*tl == '\0' || *tl == '#')
            continue;
        int n = split(tl, &fields, &fcap);
        if (n < 0)
            goto oom;
        if (t->header == NULL) {
            t->header = calloc((size_t)n, sizeof(char *));
            if (!t->header)
                goto oom;
            memcpy(t->header, fields, (size_t)n * sizeof(char *));
            t->ncols = n;
            continue;
        }
        if (n != t->ncols) {
            free(fields);
            int rc = kr_error_set(err, KR_EPARSE, "%s:%d: expected %d fields (as in the header), found %d",
                                  t->file, lineno, t->ncols, n);
            kr__csv_free(t);
            return rc;
        }
        size_t need = (size_t)(t->nrows + 1) * (size_t)t->ncols;
        if (kr__grow((void **)&t->cells, &ccap, need, sizeof(char *)) ||
            kr__grow((void **)&t->line, &lcap, (size_t)t->nrows + 1, sizeof(int)))
            goto oom;
        memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, fields, (size_t)n * sizeof(char *));
        t->line[t->nrows] = lineno;
        t->nrows++;
    }
    free(fields);
    if (t->header == NULL) {
        int rc = kr_error_set(err, KR_EPARSE, "%s: expected a CSV header line, found an empty file", t->file);
        kr__csv_free(t);
        return rc;
    }
    return KR_OK;
oom:
    free(fields);
    kr__csv_free(t);
    return kr_error_set(err, KR_ENOMEM, "out of memory reading CSV");
}

int kr__csv_read(const char *path, kr__csv *t, kr_error *err)
{
    char *text;
    memset(t, 0, sizeof *t);
    int rc = kr__read_text(path, &text, NULL, 0, err);
    if (rc)
        return rc;
    rc = kr__csv_parse(text, path, t, err);
    free(text);
    return rc;
}

void kr__csv_free(kr__csv *t)
{
    free(t->file);
    free(t->header);
    free(t->cells);
    free(t->line);
    free(t->store);
    memset(t, 0, sizeof *t);
}

int kr__csv_col(const kr__csv *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0)
            return i;
    return -1;
}

int kr__csv_need_col(const kr__csv *t, const char *name, int *col, kr_error *err)
{
    *col = kr__csv_col(t, name);
    if (*col >= 0)
        return KR_OK;
    char hdr[512] = "";
    size_t n = 0;
    for (int i = 0; i < t->ncols && n < sizeof hdr - 64; i++)
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, "%s%s", i ? "," : "", t->header[i]);
    return kr_error_set(err, KR_EPARSE, "%s:1: expected a column named '%s', found header '%s'", t->file,
                        name, hdr);
}

const char *kr__csv_cell(const kr__csv *t, int row, int col)
{
    return t->cells[(size_t)row * (size_t)t->ncols + (size_t)col];
}

int kr__csv_double(const kr__csv *t, int row, int col, double *out, kr_error *err)
{
    const char *s = kr__csv_cell(t, row, col);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
        return kr_error_set(err, KR_EPARSE, "%s:%d: column '%s': expected a finite number, found '%s'",
                            t->file, t->line[row], t->header[col], s);
    *out = v;
    return KR_OK;
}

int kr__csv_int(const kr__csv *t, int row, int col, long long *out, kr_error *err)
{
    const char *s = kr__csv_cell(t, row, col);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE) {
        /* Accept integral reals such as "1410.0" (profile CSVs written by pandas). */
        double d = strtod(s, &end);
        if (*s != '\0' && *end == '\0' && isfinite(d) && d == floor(d) && fabs(d) < 9e15) {
            *out = (long long)d;
            return KR_OK;
        }
        return kr_error_set(err, KR_EPARSE, "%s:%d: column '%s': expected an integer, found '%s'",
                            t->file, t->line[row], t->header[col], s);
    }
    *out = v;
    return KR_OK;
}
