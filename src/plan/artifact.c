/*
 * artifact.c — the published system's plan files, read as data and written back (plan.h):
 * `freqs_pipeline_N.py` (one list per pipeline stage of ("forward"|"backward", MHz) tuples,
 * what Zeus's PointSolution3D loads) and `scheds_pipeline_N.py` (one list per stage of comm
 * configuration tuples, what Kareus's PipelineCommScheduler loads), both followed by the
 * optimizer's "# Iteration N …" trailer (ml-energy/kareus at 98f0255, tests/kareus/run_optimization.py
 * and kareus/scheduler/parser.py; docs/formats.md has the layouts).
 *
 * The files are Python source that their consumers `eval`. We never evaluate them: a strict
 * reader accepts exactly the literal subset the artifact writes — lists, tuples, quoted
 * strings, integers and floats, `#` comments — and every error names file:line:column, what was
 * expected and what was found. Import then checks the lists against a job: one list per stage,
 * each instruction in the job's schedule order, clocks the GPU supports, config strings whose
 * slot and SM count exist for the partition key.
 *
 * Energy trailer: "total cost" is the summed effective (dynamic) energy of one GPU per stage,
 * "total cost with P2P" adds stages × T × P_static, i.e. it is the whole cluster's energy
 * divided by the GPUs per stage (kareus-method.md §6). Import multiplies by the job's GPUs per
 * stage and recovers T = (with − total) / (stages · P_static); export divides.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kareus/options.h"
#include "kareus/partition.h"
#include "kareus/plan.h"
#include "util/util.h"

/* ---- the literal reader ---------------------------------------------------------------- */

typedef enum pv_type { PV_LIST, PV_TUPLE, PV_STR, PV_INT, PV_FLOAT } pv_type;

typedef struct pv {
    pv_type t;
    int line, col;    /* Where the value starts (1-based). */
    int n;            /* Items of a list or tuple. */
    struct pv *items;
    char *s;          /* PV_STR (NUL-terminated). */
    long long i;      /* PV_INT. */
    double d;         /* PV_FLOAT. */
} pv;

/* The "# Iteration N <label>: <value>" trailer lines. */
typedef struct trailer {
    long long iter;   /* -1 when absent. */
    int have_change, have_total, have_with;
    double change, total, with;
} trailer;

typedef struct lex {
    const char *file;
    const char *p, *end, *bol; /* cursor, end, beginning of the current line */
    int line;
    trailer tr;
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

static void pv_free(pv *v)
{
    if (v == NULL)
        return;
    for (int i = 0; i < v->n; i++)
        pv_free(&v->items[i]);
    free(v->items);
    free(v->s);
    memset(v, 0, sizeof *v);
}

static int parse_value(lex *x, pv *out, int depth);

static int parse_seq(lex *x, pv *out, int depth, char close)
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
            pv *grown = realloc(out->items, sizeof *grown * (size_t)cap);
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

static int parse_string(lex *x, pv *out)
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
    out->t = PV_STR;
    out->s = sb.buf ? sb.buf : calloc(1, 1);
    if (out->s == NULL)
        return kr_error_set(x->err, KR_ENOMEM, "%s: out of memory", x->file);
    return KR_OK;
}

static int parse_number(lex *x, pv *out)
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
        out->t = PV_FLOAT;
        out->d = strtod(buf, NULL);
        if (errno || !isfinite(out->d))
            return fail_at(x, s, "a finite number");
    } else {
        if (digits[0] == '0' && q - digits > 1)
            return fail_at(x, s, "an integer without leading zeros");
        out->t = PV_INT;
        out->i = strtoll(buf, NULL, 10);
        if (errno)
            return fail_at(x, s, "an integer that fits in 64 bits");
    }
    x->p = q;
    return KR_OK;
}

static int parse_value(lex *x, pv *out, int depth)
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
        out->t = PV_LIST;
        return parse_seq(x, out, depth, ']');
    }
    if (c == '(') {
        out->t = PV_TUPLE;
        return parse_seq(x, out, depth, ')');
    }
    if (c == '\'' || c == '"')
        return parse_string(x, out);
    return parse_number(x, out);
}

/* Reads path as one top-level literal followed only by blanks and comments. */
static int read_literal(const char *path, pv *root, trailer *tr, kr_error *err)
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
    if (rc == KR_OK && root->t != PV_LIST)
        rc = kr_error_set(err, KR_EPARSE, "%s:%d:%d: expected a top-level list, found a %s", path, root->line, root->col,
                          root->t == PV_TUPLE ? "tuple" : root->t == PV_STR ? "string" : "number");
    *tr = x.tr;
    free(text);
    if (rc)
        pv_free(root);
    return rc;
}

static const char *pv_what(const pv *v)
{
    switch (v->t) {
    case PV_LIST: return "a list";
    case PV_TUPLE: return "a tuple";
    case PV_STR: return "a string";
    case PV_INT: return "an integer";
    default: return "a float";
    }
}

/* ---- layouts ----------------------------------------------------------------------------- */

/* The partition keys of a scheds tuple, after the instruction name (kareus/scheduler/parser.py,
 * activation-checkpointing mode): forward = fwd keys; backward = recomputed fwd keys, then bwd
 * keys. */
static const char *const fwd_keys_cp1[] = {"fwd_attn", "fwd_mlp"};
static const char *const bwd_keys_cp1[] = {"bwd_attn", "bwd_mlp"};
static const char *const fwd_keys_cp[] = {"fwd_qkv_ar", "fwd_qkv_ag", "fwd_ao_ag", "fwd_ao_ar", "fwd_mlp"};
static const char *const bwd_keys_cp[] = {"bwd_qkv_ar", "bwd_qkv_rs", "bwd_a_rs", "bwd_a_ag", "bwd_o_ag", "bwd_o_ar",
                                          "bwd_mlp"};

typedef struct layout {
    const char *const *fwd;
    int nf;
    const char *const *bwd;
    int nb;
} layout;

static void layout_of(const kr_job *job, layout *l)
{
    if (job->cp > 1) {
        *l = (layout){fwd_keys_cp, 5, bwd_keys_cp, 7};
    } else {
        *l = (layout){fwd_keys_cp1, 2, bwd_keys_cp1, 2};
    }
}

static int method_variant(const char *method, kr_variant *v)
{
    if (strcmp(method, "kareus") == 0)
        *v = KR_VARIANT_KAREUS;
    else if (strcmp(method, "perseus") == 0 || strcmp(method, "megatron") == 0)
        *v = KR_VARIANT_SEQUENTIAL;
    else if (strcmp(method, "nanobatch+perseus") == 0 || strcmp(method, "nanobatch") == 0)
        *v = KR_VARIANT_DEFAULT_OVERLAP;
    else
        return -1;
    return 0;
}

/* Iteration number from a file name "…freqs_pipeline_00123.py" (-1 if it has none). */
static long long index_from_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *u = strrchr(b, '_');
    if (u == NULL || !isdigit((unsigned char)u[1]))
        return -1;
    char *end;
    long long v = strtoll(u + 1, &end, 10);
    return strcmp(end, ".py") == 0 ? v : -1;
}

/* 1 if cfg is the legacy all-integer form "start-end-sm-block" (negatives allowed). */
static int legacy_window(const char *cfg)
{
    const char *c = cfg;
    for (int part = 0; part < 4; part++) {
        if (part && *c++ != '-')
            return 0;
        if (*c == '-')
            c++;
        if (!isdigit((unsigned char)*c))
            return 0;
        while (isdigit((unsigned char)*c))
            c++;
    }
    return *c == '\0';
}

/* One config string of a scheds tuple into a comm setting of partition p. */
static int import_config(const char *file, const pv *v, const kr_job *job, const kr_partition *p, int recompute,
                         int s, int i, kr_comm_setting *out, kr_error *err)
{
    const char *role = recompute ? "recomputed " : "";
    if (v->t != PV_STR)
        return kr_error_set(err, KR_EPARSE,
                            "%s:%d:%d: stage %d instruction %d, %s%s: expected a config string "
                            "'<slot>-none-<sm>-<block>', found %s",
                            file, v->line, v->col, s, i, role, p->key, pv_what(v));
    memset(out, 0, sizeof *out);
    kr__sb names = {0};
    for (int k = 0; k < p->nslots; k++)
        kr__sb_printf(&names, "%s%s", k ? ", " : "", p->slots[k].name);
    kr_error e = {0};
    int rc = KR_OK;
    if (legacy_window(v->s))
        rc = kr_error_set(err, KR_EPARSE,
                          "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected a launch slot name (%s), "
                          "found the all-integer window of an older artifact version, which indexes that runtime's "
                          "own op list and cannot be mapped to a slot here",
                          file, v->line, v->col, s, i, role, p->key, v->s, kr__sb_str(&names));
    else if (kr_comm_setting_parse(v->s, out, &e))
        rc = kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d instruction %d, %s%s: %s", file, v->line, v->col, s, i,
                          role, p->key, e.msg);
    if (rc) {
        kr__sb_free(&names);
        return rc;
    }
    const char *block = strrchr(v->s, '-');
    if (block == NULL || strcmp(block + 1, "1024") != 0) {
        kr__sb_free(&names);
        return kr_error_set(err, KR_ERANGE,
                            "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected block 1024 (the threads per "
                            "CTA every artifact comm kernel is compiled for), found %s",
                            file, v->line, v->col, s, i, role, p->key, v->s, block ? block + 1 : "none");
    }
    int slot;
    if (kr_partition_slot_index(p, out->slot, &slot, &e) || slot == KR_SLOT_NONE) {
        rc = kr_error_set(err, KR_EMISMATCH,
                          "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected a launch slot of %s (%s), "
                          "found '%s'",
                          file, v->line, v->col, s, i, role, p->key, v->s, p->key, kr__sb_str(&names), out->slot);
    } else if (out->sms < 1 || out->sms >= (int)job->gpu.sm_count) {
        rc = kr_error_set(err, KR_ERANGE, "%s:%d:%d: stage %d instruction %d, %s%s: config '%s': expected an SM count in "
                          "[1, %d] (the %s has %d SMs), found %d",
                          file, v->line, v->col, s, i, role, p->key, v->s, (int)job->gpu.sm_count - 1, job->gpu.name,
                          (int)job->gpu.sm_count, out->sms);
    }
    kr__sb_free(&names);
    if (rc)
        return rc;
    kr__strlcpy(out->key, p->key, sizeof out->key);
    out->recompute = recompute;
    return KR_OK;
}

/* The fixed comm settings of a baseline variant's instruction (what its runtime does without a
 * schedule file), in catalog order. */
static int fixed_comm(const kr_job *job, const kr_partition_set *parts, kr_plan_instr *in, kr_error *err)
{
    in->ncomm = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < parts->n; k++) {
            const kr_partition *p = &parts->p[k];
            int rec = pass == 1;
            int want = in->kind == KR_INSTR_FORWARD ? (!rec && !p->backward)
                                                    : (rec ? !p->backward && job->recompute : p->backward);
            if (!want || p->coll.kind == KR_COLL_NONE)
                continue;
            if (in->ncomm >= KR_PLAN_MAX_COMM)
                return kr_error_set(err, KR_ERANGE, "plan import: more than %d comm settings in one instruction",
                                    KR_PLAN_MAX_COMM);
            kr_comm_setting *c = &in->comm[in->ncomm++];
            memset(c, 0, sizeof *c);
            kr__strlcpy(c->key, p->key, sizeof c->key);
            c->recompute = rec;
            kr__strlcpy(c->slot, kr_partition_slot_name(p, p->fixed_slot), sizeof c->slot);
            c->sms = p->fixed_sms;
        }
    }
    return KR_OK;
}

/* Checks one stage list (of freqs or scheds) against the job's order. */
static int is_pair(const pv *t)
{
    return t->t == PV_TUPLE && t->n == 2 && t->items[0].t == PV_TUPLE && t->items[1].t == PV_TUPLE;
}

/* Checks one stage list (of freqs or scheds) against the job's order. pairs: a scheds file in the
 * per-microbatch layout of jobs without recomputation (one (forward, backward) pair per
 * microbatch, kareus/scheduler/parser.py's non-checkpointing branch). */
static int check_stage_list(const char *file, const pv *root, int s, int n, const kr_job *job, int pairs,
                            kr_error *err)
{
    const pv *st = &root->items[s];
    if (st->t != PV_LIST)
        return kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d: expected a list of instruction tuples, found %s", file,
                            st->line, st->col, s, pv_what(st));
    if (pairs) {
        if (st->n != job->num_microbatches)
            return kr_error_set(err, KR_EMISMATCH,
                                "%s:%d:%d: stage %d: expected %d (forward, backward) pairs, one per microbatch (job "
                                "'%s' runs without recomputation), found %d",
                                file, st->line, st->col, s, job->num_microbatches, job->name, st->n);
        for (int m = 0; m < st->n; m++)
            if (!is_pair(&st->items[m]))
                return kr_error_set(err, KR_EPARSE,
                                    "%s:%d:%d: stage %d microbatch %d: expected a pair of tuples (('forward', …), "
                                    "('backward', …)) (the artifact's layout for jobs without recomputation), found "
                                    "%s",
                                    file, st->items[m].line, st->items[m].col, s, m, pv_what(&st->items[m]));
        return KR_OK;
    }
    const pv *t0 = st->n > 0 ? &st->items[0] : NULL;
    if (t0 && is_pair(t0))
        return kr_error_set(err, KR_EPARSE,
                            "%s:%d:%d: stage %d item 0: expected one tuple per instruction ('forward'|'backward', "
                            "…) (the activation-checkpointing layout of job '%s', which recomputes), found a "
                            "(forward, backward) pair: the artifact's per-microbatch layout for jobs without "
                            "recomputation",
                            file, t0->line, t0->col, s, job->name);
    if (st->n != n)
        return kr_error_set(err, KR_EMISMATCH,
                            "%s:%d:%d: stage %d: expected %d instructions (%s, %d microbatches%s), found %d", file,
                            st->line, st->col, s, n, kr_schedule_name(job->schedule), job->num_microbatches,
                            job->virtual_stages > 1 ? ", several chunks" : "", st->n);
    return KR_OK;
}

static int check_name(const char *file, const pv *t, const kr_sched_item *want, int s, int i, const char *shape,
                      kr_error *err)
{
    if (t->t != PV_TUPLE || t->n < 1)
        return kr_error_set(err, KR_EPARSE, "%s:%d:%d: stage %d instruction %d: expected a tuple %s, found %s%s", file,
                            t->line, t->col, s, i, shape, t->t == PV_TUPLE ? "an empty " : "", pv_what(t));
    const pv *name = &t->items[0];
    const char *wk = kr_instr_kind_name(want->kind);
    if (name->t != PV_STR || strcmp(name->s, wk) != 0)
        return kr_error_set(err, KR_EMISMATCH,
                            "%s:%d:%d: stage %d instruction %d: expected '%s' (the job's order runs the %s of microbatch "
                            "%d here), found %s%s%s",
                            file, name->line, name->col, s, i, wk, wk, want->microbatch,
                            name->t == PV_STR ? "'" : "", name->t == PV_STR ? name->s : pv_what(name),
                            name->t == PV_STR ? "'" : "");
    return KR_OK;
}

int kr_plan_import_artifact(const kr_job *job, const char *freqs_path, const char *scheds_path, const char *method,
                            kr_plan *out, kr_error *err)
{
    memset(out, 0, sizeof *out);
    if (method == NULL)
        method = scheds_path ? "kareus" : "perseus";
    kr_variant var;
    if (method_variant(method, &var))
        return kr_error_set(err, KR_EINVAL,
                            "plan import: method: expected kareus, perseus, nanobatch+perseus, megatron or nanobatch, "
                            "found '%s'",
                            method);
    if ((var == KR_VARIANT_KAREUS) != (scheds_path != NULL))
        return kr_error_set(err, KR_EINVAL,
                            var == KR_VARIANT_KAREUS
                                ? "plan import: method kareus: expected a scheds_pipeline_N.py file with the freqs file, "
                                  "found none"
                                : "plan import: method %s: expected no scheds file (only Kareus plans have one), found one",
                            method);
    int pairs = var == KR_VARIANT_KAREUS && !job->recompute;
    if (pairs && job->virtual_stages > 1)
        return kr_error_set(err, KR_EMISMATCH,
                            "plan import: job '%s' runs interleaved chunks without recomputation; the artifact's "
                            "per-microbatch schedule layout has one pair per microbatch and no chunks",
                            job->name);
    pv fr, sc;
    trailer ftr, str;
    memset(&sc, 0, sizeof sc);
    int rc = read_literal(freqs_path, &fr, &ftr, err);
    if (rc)
        return rc;
    if (scheds_path && (rc = read_literal(scheds_path, &sc, &str, err))) {
        pv_free(&fr);
        return rc;
    }
    kr_partition_set *parts = malloc(sizeof *parts);
    int len = kr_sched_length(job->num_microbatches, job->virtual_stages);
    kr_sched_item *order = malloc(sizeof *order * (size_t)len);
    int *counts = malloc(sizeof(int) * (size_t)job->pp);
    layout lay;
    layout_of(job, &lay);
    if (parts == NULL || order == NULL || counts == NULL) {
        rc = kr_error_set(err, KR_ENOMEM, "plan import: out of memory");
        goto done;
    }
    if ((rc = kr_partition_catalog(job, var, parts, err)))
        goto done;
    for (int f = 0; f < (scheds_path ? 2 : 1); f++) {
        const pv *root = f ? &sc : &fr;
        const char *file = f ? scheds_path : freqs_path;
        if (root->n != job->pp) {
            rc = kr_error_set(err, KR_EMISMATCH,
                              "%s:%d:%d: expected one list per pipeline stage (job '%s' has %d stages; Zeus's "
                              "PointSolution3D copies each to the stage's ranks), found %d",
                              file, root->line, root->col, job->name, job->pp, root->n);
            goto done;
        }
    }
    for (int s = 0; s < job->pp; s++) {
        int n = kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, order, len, err);
        if (n < 0) {
            rc = n;
            goto done;
        }
        counts[s] = n;
        if ((rc = check_stage_list(freqs_path, &fr, s, n, job, 0, err)) ||
            (scheds_path && (rc = check_stage_list(scheds_path, &sc, s, n, job, pairs, err))))
            goto done;
    }
    if ((rc = kr_plan_init(out, job, counts, err)))
        goto done;
    kr__strlcpy(out->method, method, sizeof out->method);
    kr__strlcpy(out->variant, kr_variant_name(var), sizeof out->variant);
    kr__strlcpy(out->cost_model, "artifact", sizeof out->cost_model);
    for (int s = 0; s < job->pp && rc == KR_OK; s++) {
        kr_sched_order(job->schedule, job->pp, job->num_microbatches, job->virtual_stages, s, order, len, err);
        for (int i = 0; i < counts[s]; i++) {
            const pv *t = &fr.items[s].items[i];
            if ((rc = check_name(freqs_path, t, &order[i], s, i, "('forward'|'backward', MHz)", err)))
                goto done;
            if (t->n != 2 || t->items[1].t != PV_INT) {
                const pv *bad = t->n >= 2 ? &t->items[1] : t;
                rc = kr_error_set(err, KR_EPARSE,
                                  "%s:%d:%d: stage %d instruction %d: expected ('%s', MHz) with an integer clock, "
                                  "found %s",
                                  freqs_path, bad->line, bad->col, s, i, kr_instr_kind_name(order[i].kind),
                                  t->n != 2 ? "a tuple of another length" : pv_what(bad));
                goto done;
            }
            long long mhz = t->items[1].i;
            if (mhz < 1 || mhz > INT_MAX || !kr_gpu_clock_supported(&job->gpu, (int)mhz)) {
                rc = kr_error_set(err, KR_ERANGE,
                                  "%s:%d:%d: stage %d instruction %d: expected a clock the %s supports (%d..%d MHz, "
                                  "step %d), found %lld",
                                  freqs_path, t->items[1].line, t->items[1].col, s, i, job->gpu.name,
                                  (int)job->gpu.clock_min_mhz, (int)job->gpu.clock_max_mhz, (int)job->gpu.clock_step_mhz,
                                  mhz);
                goto done;
            }
            kr_plan_instr *in = &out->stages[s].instr[i];
            in->kind = order[i].kind;
            in->microbatch = order[i].microbatch;
            in->chunk = order[i].chunk;
            in->freq_mhz = (int)mhz;
            if (!scheds_path) {
                if ((rc = fixed_comm(job, parts, in, err)))
                    goto done;
                continue;
            }
            int bwd = order[i].kind == KR_INSTR_BACKWARD;
            const pv *u = pairs ? &sc.items[s].items[order[i].microbatch].items[bwd] : &sc.items[s].items[i];
            int want = 1 + (bwd ? (pairs ? 0 : lay.nf) + lay.nb : lay.nf);
            char shape[96];
            snprintf(shape, sizeof shape, "('%s', %d config strings)", kr_instr_kind_name(order[i].kind), want - 1);
            if ((rc = check_name(scheds_path, u, &order[i], s, i, shape, err)))
                goto done;
            if (u->n != want) {
                rc = kr_error_set(err, KR_EMISMATCH,
                                  "%s:%d:%d: stage %d instruction %d: expected %s (%s, CP %d, %s), found %d config "
                                  "strings",
                                  scheds_path, u->line, u->col, s, i, shape,
                                  bwd ? (pairs ? "backward keys" : "recomputed forward keys, then backward keys")
                                      : "forward keys",
                                  job->cp,
                                  job->cp > 1 ? "the CP key set" : "attention and MLP", u->n - 1);
                goto done;
            }
            in->ncomm = 0;
            for (int k = 1; k < u->n; k++) {
                int skip = bwd && !pairs ? lay.nf : 0; /* recomputed forward configs come first */
                int rec = bwd && k <= skip;
                const char *key = !bwd ? lay.fwd[k - 1] : k <= skip ? lay.fwd[k - 1] : lay.bwd[k - 1 - skip];
                const kr_partition *p = kr_partition_find(parts, key);
                if (p == NULL) {
                    rc = kr_error_set(err, KR_EMISMATCH, "%s: job '%s' has no partition '%s' for the kareus variant",
                                      scheds_path, job->name, key);
                    goto done;
                }
                if ((rc = import_config(scheds_path, &u->items[k], job, p, rec, s, i, &in->comm[in->ncomm], err)))
                    goto done;
                in->ncomm++;
            }
        }
    }
    if (scheds_path && (ftr.have_total != str.have_total || ftr.have_with != str.have_with ||
                        (ftr.have_total && ftr.total != str.total) || (ftr.have_with && ftr.with != str.with) ||
                        ftr.iter != str.iter)) {
        rc = kr_error_set(err, KR_EMISMATCH,
                          "%s: expected the same '# Iteration N …' trailer as %s (the optimizer writes one to both), "
                          "found a different one",
                          scheds_path, freqs_path);
        goto done;
    }
    out->step = ftr.iter >= 0 && ftr.iter <= INT_MAX ? (int)ftr.iter : (int)KR_MIN(index_from_name(freqs_path), INT_MAX);
    if (out->step < 0)
        out->step = -1;
    out->unit_time_s = 0;
    if (ftr.have_total && ftr.have_with) {
        int gps = kr_job_gpus_per_stage(job);
        out->pred_energy_j = ftr.with * gps;
        out->pred_eff_energy_j = ftr.total * gps;
        out->pred_time_s = job->static_power_w > 0 ? (ftr.with - ftr.total) / (job->pp * job->static_power_w) : 0;
        if (!(out->pred_time_s >= 0) || !(out->pred_energy_j >= 0)) {
            rc = kr_error_set(err, KR_ERANGE,
                              "%s: trailer: expected 'total cost with P2P' (%g) >= 'total cost' (%g) >= 0 J, found "
                              "otherwise",
                              freqs_path, ftr.with, ftr.total);
            goto done;
        }
    }
    if ((rc = kr_plan_validate(out, job, err)))
        kr_error_prefix(err, "%s", freqs_path);
done:
    free(parts);
    free(order);
    free(counts);
    pv_free(&fr);
    pv_free(&sc);
    if (rc)
        kr_plan_free(out);
    return rc;
}

/* ---- export ------------------------------------------------------------------------------ */

/* A double as Python's repr writes it: the shortest text that reads back, with ".0" when %g
 * leaves no decimal point. */
static void py_float(char *buf, size_t cap, double v)
{
    kr__fmt_double(buf, cap, v);
    if (strpbrk(buf, ".eni") == NULL && strlen(buf) + 2 < cap)
        strcat(buf, ".0");
}

/* Text safe inside a Python comment: printable ASCII only, everything else as \xNN, so no
 * newline (or carriage return) can end the comment and start code. */
static void py_comment_text(kr__sb *sb, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\')
            kr__sb_printf(sb, "%c", c);
        else
            kr__sb_printf(sb, "\\x%02x", c);
    }
}

static void trailer_out(kr__sb *sb, const kr_plan *plan, int gps, int iter)
{
    char a[40], b[40];
    py_float(a, sizeof a, plan->pred_eff_energy_j / gps);
    py_float(b, sizeof b, plan->pred_energy_j / gps);
    kr__sb_printf(sb, "# Iteration %d total cost: %s\n", iter, a);
    kr__sb_printf(sb, "# Iteration %d total cost with P2P: %s\n", iter, b);
    kr__sb_puts(sb, "# kareus: method ");
    py_comment_text(sb, plan->method);
    kr__sb_puts(sb, ", job ");
    py_comment_text(sb, plan->job_name);
    char t[40];
    py_float(t, sizeof t, plan->pred_time_s);
    kr__sb_printf(sb, ", iteration time %s s; energies are one GPU per stage summed over the %d stages "
                      "(x %d GPUs per stage = whole cluster)\n",
                  t, plan->num_stages, gps);
}

static void freqs_out(kr__sb *sb, const kr_plan *plan)
{
    kr__sb_puts(sb, "[\n");
    for (int s = 0; s < plan->num_stages; s++) {
        kr__sb_puts(sb, "[");
        for (int i = 0; i < plan->stages[s].ninstr; i++) {
            const kr_plan_instr *in = &plan->stages[s].instr[i];
            kr__sb_printf(sb, "%s('%s', %d)", i ? ", " : "", kr_instr_kind_name(in->kind), in->freq_mhz);
        }
        kr__sb_puts(sb, "],\n");
    }
    kr__sb_puts(sb, "]\n");
}

int kr_plan_export_zeus(const kr_plan *plan, int gpus_per_stage, const char *path, kr_error *err)
{
    if (gpus_per_stage < 1)
        return kr_error_set(err, KR_EINVAL, "export: expected >= 1 GPU per stage, found %d", gpus_per_stage);
    kr__sb sb = {0};
    freqs_out(&sb, plan);
    trailer_out(&sb, plan, gpus_per_stage, plan->step >= 0 ? plan->step : 0);
    return kr__sb_write_atomic(&sb, path, err);
}

static const kr_comm_setting *find_comm(const kr_plan_instr *in, const char *key, int recompute)
{
    for (int c = 0; c < in->ncomm; c++)
        if (in->comm[c].recompute == recompute && strcmp(in->comm[c].key, key) == 0)
            return &in->comm[c];
    return NULL;
}

/* The instruction of microbatch m (chunk 0) of stage s, forward or backward; NULL if absent. */
static const kr_plan_instr *find_instr(const kr_plan *plan, int s, int m, int bwd)
{
    for (int i = 0; i < plan->stages[s].ninstr; i++) {
        const kr_plan_instr *in = &plan->stages[s].instr[i];
        if (in->microbatch == m && in->chunk == 0 && (in->kind == KR_INSTR_BACKWARD) == bwd)
            return in;
    }
    return NULL;
}

static int put_config(kr__sb *sb, const kr_plan_instr *in, const char *key, int rec, int s, kr_error *err)
{
    const kr_comm_setting *c = in ? find_comm(in, key, rec) : NULL;
    if (c == NULL)
        return kr_error_set(err, KR_EMISMATCH,
                            "export: plan stage %d: expected a %s setting for key '%s' (the artifact's schedule tuple "
                            "needs one), found none",
                            s, rec ? "recompute" : "comm", key);
    char buf[64];
    kr_comm_setting_format(c, buf, sizeof buf);
    kr__sb_printf(sb, ", '%s'", buf);
    return KR_OK;
}

/* Without recomputation the artifact's scheduler advances on forwards only and gives each
 * backward the pair of the latest forward (kareus/scheduler/pipeline_comm_scheduler.py), which
 * in 1F1B belongs to a later microbatch. A plan runs as planned there only if every backward of
 * a stage has the same configs. */
static int check_pairs_exportable(const kr_plan *plan, const kr_job *job, kr_error *err)
{
    for (int s = 0; s < plan->num_stages; s++) {
        const kr_plan_instr *first = find_instr(plan, s, 0, 1);
        for (int m = 1; first && m < job->num_microbatches; m++) {
            const kr_plan_instr *in = find_instr(plan, s, m, 1);
            if (in == NULL)
                break;
            for (int c = 0; c < first->ncomm; c++) {
                const kr_comm_setting *a = &first->comm[c], *b = find_comm(in, a->key, a->recompute);
                if (b == NULL || strcmp(a->slot, b->slot) != 0 || a->sms != b->sms)
                    return kr_error_set(err, KR_EMISMATCH,
                                        "export: stage %d: the backward of microbatch %d runs %s at slot %s with %d "
                                        "SMs, that of microbatch 0 at slot %s with %d: without recomputation the "
                                        "artifact's scheduler gives each backward the configs of the latest forward's "
                                        "pair (a later microbatch in 1F1B), so it runs a plan as planned only if every "
                                        "backward of a stage has the same configs",
                                        s, m, a->key, b ? b->slot : "(none)", b ? b->sms : 0, a->slot, a->sms);
            }
        }
    }
    return KR_OK;
}

int kr_plan_export_artifact(const kr_plan *plan, const kr_job *job, const char *dir, int index, char *freqs_path,
                            size_t freqs_cap, char *scheds_path, size_t scheds_cap, kr_error *err)
{
    if (freqs_path && freqs_cap)
        freqs_path[0] = '\0';
    if (scheds_path && scheds_cap)
        scheds_path[0] = '\0';
    int rc = kr_plan_validate(plan, job, err);
    if (rc)
        return rc;
    int iter = index >= 0 ? index : plan->step >= 0 ? plan->step : 0;
    kr_variant var;
    kr_variant_parse(plan->variant, &var);
    int kareus = var == KR_VARIANT_KAREUS;
    int pairs = kareus && !job->recompute;
    if (pairs && (rc = check_pairs_exportable(plan, job, err)))
        return rc;
    int gps = kr_job_gpus_per_stage(job);
    kr__sb fs = {0}, ss = {0};
    freqs_out(&fs, plan);
    trailer_out(&fs, plan, gps, iter);
    if (pairs) {
        layout lay;
        layout_of(job, &lay);
        kr__sb_puts(&ss, "[\n");
        for (int s = 0; s < plan->num_stages && rc == KR_OK; s++) {
            kr__sb_puts(&ss, "[");
            for (int m = 0; m < job->num_microbatches && rc == KR_OK; m++) {
                kr__sb_puts(&ss, m ? ", (" : "(");
                for (int bwd = 0; bwd < 2 && rc == KR_OK; bwd++) {
                    const kr_plan_instr *in = find_instr(plan, s, m, bwd);
                    kr__sb_printf(&ss, "%s('%s'", bwd ? ", " : "", bwd ? "backward" : "forward");
                    for (int k = 0; k < (bwd ? lay.nb : lay.nf) && rc == KR_OK; k++)
                        rc = put_config(&ss, in, bwd ? lay.bwd[k] : lay.fwd[k], 0, s, err);
                    kr__sb_puts(&ss, ")");
                }
                kr__sb_puts(&ss, ")");
            }
            kr__sb_puts(&ss, "],\n");
        }
        kr__sb_puts(&ss, "]\n");
        trailer_out(&ss, plan, gps, iter);
    } else if (kareus) {
        layout lay;
        layout_of(job, &lay);
        kr__sb_puts(&ss, "[\n");
        for (int s = 0; s < plan->num_stages && rc == KR_OK; s++) {
            kr__sb_puts(&ss, "[");
            for (int i = 0; i < plan->stages[s].ninstr && rc == KR_OK; i++) {
                const kr_plan_instr *in = &plan->stages[s].instr[i];
                int bwd = in->kind == KR_INSTR_BACKWARD;
                kr__sb_printf(&ss, "%s('%s'", i ? ", " : "", kr_instr_kind_name(in->kind));
                for (int k = 0; k < lay.nf + (bwd ? lay.nb : 0); k++) {
                    int rec = bwd && k < lay.nf;
                    const char *key = k < lay.nf ? lay.fwd[k] : lay.bwd[k - lay.nf];
                    const kr_comm_setting *c = find_comm(in, key, rec);
                    if (c == NULL) {
                        rc = kr_error_set(err, KR_EMISMATCH,
                                          "export: plan stages[%d].instructions[%d]: expected a %s setting for key '%s' "
                                          "(the artifact's schedule tuple needs one), found none",
                                          s, i, rec ? "recompute" : "comm", key);
                        break;
                    }
                    char buf[64];
                    kr_comm_setting_format(c, buf, sizeof buf);
                    kr__sb_printf(&ss, ", '%s'", buf);
                }
                kr__sb_puts(&ss, ")");
            }
            kr__sb_puts(&ss, "],\n");
        }
        kr__sb_puts(&ss, "]\n");
        trailer_out(&ss, plan, gps, iter);
    }
    char fpath[4200], spath[4200];
    if (rc == KR_OK && (rc = kr__mkdirs(dir, err)) == KR_OK) {
        snprintf(fpath, sizeof fpath, "%s/freqs_pipeline_%05d.py", dir, iter);
        snprintf(spath, sizeof spath, "%s/scheds_pipeline_%05d.py", dir, iter);
        if (kareus && (rc = kr__sb_write_atomic(&ss, spath, err)) == KR_OK && (rc = kr__sb_write_atomic(&fs, fpath, err)))
            unlink(spath); /* never one file of the pair without the other */
        else if (!kareus)
            rc = kr__sb_write_atomic(&fs, fpath, err);
    }
    kr__sb_free(&fs);
    kr__sb_free(&ss);
    if (rc)
        return rc;
    if (freqs_path)
        kr__strlcpy(freqs_path, fpath, freqs_cap);
    if (scheds_path && kareus)
        kr__strlcpy(scheds_path, spath, scheds_cap);
    return KR_OK;
}
