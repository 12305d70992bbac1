/*
 * util.h — internal helpers shared by every module of libkareus (not public API).
 *
 * JSON reading with JSON-path error messages, atomic file output (temp file + fsync +
 * rename), a small CSV table reader, a seeded RNG, a growable string buffer, array
 * growth and the allocator hook. One piece of code per idea: modules use these instead
 * of writing their own.
 */
#ifndef KR_UTIL_H
#define KR_UTIL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kareus/format.h"
#include "kareus/status.h"

#define KR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Copies src into dst (capacity cap), always NUL-terminating; returns 1 if truncated. */
int kr__strlcpy(char *dst, const char *src, size_t cap);

/* Monotonic clock in seconds (CLOCK_MONOTONIC). */
double kr__now_s(void);

/* ---- checked arithmetic and narrowing ------------------------------------------------ */

/*
 * Sizes and products computed from input go through these: each returns 0 and stores the
 * exact result, or returns 1 (overflow; *out unspecified). Callers turn 1 into a precise
 * KR_ERANGE message naming the input, never into an allocation or a loop bound.
 */
static inline int kr__mul_size(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline int kr__add_size(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }
static inline int kr__mul_int(int a, int b, int *out) { return __builtin_mul_overflow(a, b, out); }
static inline int kr__add_int(int a, int b, int *out) { return __builtin_add_overflow(a, b, out); }
static inline int kr__mul_ll(long long a, long long b, long long *out) { return __builtin_mul_overflow(a, b, out); }

/*
 * Narrowing conversions from input: 0 and *out = x when x is a whole number in [lo, hi]
 * (NaN, infinities, fractions and values out of range give 1 and leave *out alone). Casting
 * an out-of-range double to int is undefined behaviour; every such cast goes through here.
 */
int kr__double_to_int(double x, int lo, int hi, int *out);
int kr__ll_to_int(long long x, int lo, int hi, int *out);

/* ---- allocation -------------------------------------------------------------------- */

void *kr__alloc(const kr_allocator *a, size_t size);
void *kr__calloc(const kr_allocator *a, size_t n, size_t size);
void *kr__realloc(const kr_allocator *a, void *ptr, size_t size);
void kr__free(const kr_allocator *a, void *ptr);

/*
 * Makes *ptr (an array of elem-sized items with capacity *cap) hold at least need items,
 * growing geometrically with libc realloc. Returns KR_OK or KR_ENOMEM (*ptr untouched).
 */
int kr__grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* ---- enum names --------------------------------------------------------------------- */

/*
 * One row of an enum's name table. Each enum with a name and a parse function lists its names
 * once, as an X-macro list X(value, "name") expanded with KR__ENAME_ROW; both functions read
 * that table. The first row of a value gives its name; later rows of the same value are
 * aliases, accepted by parse and never written.
 */
typedef struct kr__ename {
    int value;
    const char *name;
} kr__ename;

#define KR__ENAME_ROW(value, name) {(int)(value), name},

/* The name of value in table t (n rows), or "?" when it has none. */
const char *kr__ename_of(const kr__ename *t, size_t n, int value);
/* The value named name in table t (n rows): KR_OK and *value, or KR_EINVAL (*value untouched). */
int kr__ename_parse(const kr__ename *t, size_t n, const char *name, int *value);
/* As kr__ename_parse, ignoring ASCII case (method names: "Kareus", "kareus", "KAREUS"). */
int kr__ename_parse_nocase(const kr__ename *t, size_t n, const char *name, int *value);

/* A name table with its length, for what refers to one from elsewhere (kr__jchoice). */
typedef struct kr__enames {
    const kr__ename *t;
    size_t n;
} kr__enames;
#define KR__ENAMES(table) {(table), KR_ARRAY_LEN(table)}

/* ---- progress ---------------------------------------------------------------------- */

/*
 * Progress lines. The library never prints: a long operation formats each line and hands it
 * to the caller's callback (the CLI's puts it on stderr with cli_progress). kr__progress does
 * nothing when fn is NULL (the line is not even formatted) and cuts lines at
 * KR__PROGRESS_MAX - 1 bytes.
 */
#define KR__PROGRESS_MAX 256
typedef void (*kr__progress_fn)(void *ud, const char *line);
void kr__progress(kr__progress_fn fn, void *ud, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* kr__progress for a caller that is itself variadic (one that adds its own fields to the line). */
void kr__vprogress(kr__progress_fn fn, void *ud, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* ---- strings ----------------------------------------------------------------------- */

/* Growable string buffer. Zero-initialise; an allocation failure sets oom and stops appending. */
typedef struct kr__sb {
    char *buf;  /* NUL-terminated text (NULL while empty). */
    size_t len; /* Bytes used, without the NUL. */
    size_t cap; /* Bytes allocated. */
    int oom;    /* 1 after an allocation failure. */
} kr__sb;

void kr__sb_printf(kr__sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kr__sb_vprintf(kr__sb *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void kr__sb_puts(kr__sb *sb, const char *s);
/* Appends s with &, <, >, " escaped for XML/HTML. */
void kr__sb_xml(kr__sb *sb, const char *s);
/*
 * Appends s as a Python string literal in single quotes: backslash, quotes and every control
 * or non-ASCII byte escaped (\\xNN), so the text can never end the literal or the line.
 */
void kr__sb_pystr(kr__sb *sb, const char *s);

/*
 * Checks that name is safe as one path component written under a directory: 1..255 bytes of
 * [A-Za-z0-9._+-], not starting with '.', so never "..", "/" or a hidden file. Returns 1 if safe.
 */
int kr__safe_filename(const char *name);
const char *kr__sb_str(const kr__sb *sb); /* "" when empty. */
/* Writes the buffer to path atomically (KR_ENOMEM if an append failed) and frees it. */
int kr__sb_write_atomic(kr__sb *sb, const char *path, kr_error *err);
void kr__sb_free(kr__sb *sb);

/* ---- random numbers (deterministic for a seed) -------------------------------------- */

/* xoshiro256** state, seeded through splitmix64. */
typedef struct kr__rng {
    uint64_t s[4];
} kr__rng;

void kr__rng_seed(kr__rng *r, uint64_t seed);
uint64_t kr__rng_next(kr__rng *r);
double kr__rng_uniform(kr__rng *r);         /* [0, 1) */
double kr__rng_normal(kr__rng *r);          /* standard normal (Box–Muller, no cache) */
uint64_t kr__rng_below(kr__rng *r, uint64_t n); /* uniform in [0, n), n > 0, unbiased */

/* ---- files -------------------------------------------------------------------------- */

/* Creates directory path and its parents (mode 0777 & umask). Existing directories are fine. */
int kr__mkdirs(const char *path, kr_error *err);

/* Largest file any reader accepts, and the longest line of a text file (bytes). */
#define KR__FILE_MAX ((size_t)256 << 20)
#define KR__LINE_MAX ((size_t)4 << 20)

/*
 * Reads a whole file into a NUL-terminated heap buffer (*out, free with free()). Refuses a
 * directory ("FILE: is a directory, expected a file") and files over KR__FILE_MAX.
 */
int kr__read_file(const char *path, char **out, size_t *len, kr_error *err);

/* Flags of kr__read_text / kr__text_check. */
#define KR__TEXT_NO_CR 1 /* line-oriented formats: a carriage return is an error (CRLF file) */

/*
 * Reads a text file like kr__read_file, then kr__text_check: every parser of a text format
 * reads through this, so bytes after a NUL are never silently ignored.
 */
int kr__read_text(const char *path, char **out, size_t *len, int flags, kr_error *err);

/*
 * Checks len bytes of text named name: no UTF-8 byte-order mark, no NUL byte, no line longer
 * than KR__LINE_MAX, and with KR__TEXT_NO_CR no carriage return. Errors name NAME:LINE:COLUMN.
 */
int kr__text_check(const char *text, size_t len, const char *name, int flags, kr_error *err);

/*
 * Atomic output file: write to a fresh temp file "<path>.tmp.XXXXXX" created in the target's
 * directory with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 (a planted file or symlink there is
 * never opened), then kr__afile_commit flushes, fsyncs, gives the final mode (the existing
 * file's, else 0666 & ~umask), and renames it over path (and fsyncs the directory). rename
 * replaces a symlink at path itself, so a symlink's target is never written. On any error, or
 * with kr__afile_abort, the temp file is removed and path is left as it was.
 */
typedef struct kr__afile {
    FILE *f;         /* Write here between open and commit. */
    char path[4096]; /* Final path. */
    char tmp[4160];  /* Temporary path. */
    int mode;        /* Final permission bits. */
} kr__afile;

int kr__afile_open(kr__afile *af, const char *path, kr_error *err);
int kr__afile_commit(kr__afile *af, kr_error *err);
void kr__afile_abort(kr__afile *af);

/* Writes a whole buffer atomically. */
int kr__write_file_atomic(const char *path, const char *data, size_t len, kr_error *err);

/* ---- JSON --------------------------------------------------------------------------- */

/*
 * Loads a JSON file (or text) with jansson. Parse errors name file:line:column and what
 * jansson found. name is used in messages for text input.
 */
/* JSON-lines logs (jsonl.c). kr__jsonl_open_append: path opened for appending, created if
 * missing, never through a symlink; newline_first: a newline written first (the last line was
 * complete but unterminated). kr__jsonl_append: o as one compact line, flushed, fsync'd when
 * sync; an I/O error says "PATH: cannot WHAT: ...". kr__jsonl_drop_torn: truncates path to valid
 * bytes (text[0..len) is what was read) and adds "PATH:LINE: dropped a torn last line ..." to
 * warning (after "; " when it already holds one). All return KR_OK or an error code. */
int kr__jsonl_open_append(const char *path, int newline_first, FILE **out, kr_error *err);
int kr__jsonl_append(FILE *f, const json_t *o, int sync, const char *path, const char *what, kr_error *err);
int kr__jsonl_drop_torn(const char *path, const char *text, size_t len, size_t valid, int lineno, char *warning,
                        size_t cap, kr_error *err);

int kr__json_load_file(const char *path, json_t **out, kr_error *err);
int kr__json_load_text(const char *text, const char *name, json_t **out, kr_error *err);

/* Writes root as indented JSON atomically (keys in insertion order, reals with %.17g). */
int kr__json_write_atomic(const char *path, const json_t *root, kr_error *err);

/* Short description of a JSON value for error messages: `string "abc"`, `number 3.5`, `null`. */
void kr__json_describe(const json_t *v, char *buf, size_t cap);

/*
 * Reading context: tracks the file name and the JSON path ("$.stages[1].freq_mhz") so
 * every error says where it is. Use push/pop around nested values.
 */
typedef struct kr__jctx {
    const char *file; /* File name for messages (or "<input>"). */
    kr_error *err;    /* Where errors go (may be NULL). */
    char path[512];   /* Current JSON path, "$" at the root. */
} kr__jctx;

void kr__jctx_init(kr__jctx *c, const char *file, kr_error *err);
/* The opening of every JSON file reader: kr__json_load_file, then on success *c initialised for
 * path. Returns its status; the caller owns *root (json_decref) when it is KR_OK. */
int kr__json_open(const char *path, json_t **root, kr__jctx *c, kr_error *err);
size_t kr__jpush_key(kr__jctx *c, const char *key); /* returns a mark for kr__jpop */
size_t kr__jpush_idx(kr__jctx *c, size_t idx);
void kr__jpop(kr__jctx *c, size_t mark);

/* Reports "FILE: PATH[.key]: expected WHAT, found DESCRIPTION" with code; returns code. */
int kr__jfail(kr__jctx *c, int code, const char *key, const char *expected, const json_t *found);
/* Same with a free-form message after the path. */
int kr__jfailf(kr__jctx *c, int code, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks that v is an object and has no keys outside allowed (NULL-terminated list). */
int kr__jobject(kr__jctx *c, const json_t *v, const char *const *allowed);

/*
 * Typed field readers. If the key is absent: required → error "missing field", else the
 * default is stored. Present values must have the right JSON type and lie in [lo, hi].
 */
int kr__jint(kr__jctx *c, const json_t *obj, const char *key, int required, long long lo,
             long long hi, long long def, long long *out);
int kr__jint32(kr__jctx *c, const json_t *obj, const char *key, int required, int lo, int hi,
               int def, int *out);
int kr__jnum(kr__jctx *c, const json_t *obj, const char *key, int required, double lo, double hi,
             double def, double *out);
int kr__jbool(kr__jctx *c, const json_t *obj, const char *key, int required, int def, int *out);
int kr__jstr(kr__jctx *c, const json_t *obj, const char *key, int required, const char *def,
             char *buf, size_t cap);

/* jansson's iteration API is not const-correct; this drops const without a cast warning. */
static inline json_t *kr__jmut(const json_t *v)
{
    json_t *r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* Adds a real that prints exactly (jansson uses %.17g). Returns 0 or -1 (oom). */
int kr__jset_real(json_t *obj, const char *key, double v);

/* ---- JSON field tables ------------------------------------------------------------- */

/*
 * A JSON object format as a table of fields (job specs, plans): one entry per field drives the
 * reader (type, range, default, required, unknown keys refused), the writer (in table order)
 * and the description (kr_field_info rows, docs/formats.md). Fields are read in table order,
 * so the first error reported is the first field's; what does not fit a plain type (a name or
 * an object, a list or a range, a derived value) is a hook of the field.
 */
typedef enum kr__jtype {
    KR__JT_INT,    /* int member; JSON integer (or an integral real) in [lo, hi]. */
    KR__JT_NUM,    /* double member; JSON number in [lo, hi], optionally in another unit. */
    KR__JT_BOOL,   /* int member; true or false. */
    KR__JT_STR,    /* char[cap] member; with a choice, the name must parse. */
    KR__JT_ENUM,   /* int-sized enum member; JSON string read through a choice. */
    KR__JT_SCHEMA, /* no member; JSON string that must equal sdef (written as sdef). */
    KR__JT_OBJ,    /* nested object: the fields of sub, at the same base. */
    KR__JT_HOOK    /* read and written by the field's hook only. */
} kr__jtype;

#define KR__JREQ 1u  /* Must be present. */
#define KR__JKEEP 2u /* Absent: the member keeps the value it has (the built-in default's). */
#define KR__JZDEF 4u /* INT: a member of 0 is written as def. */
#define KR__JPOS 8u  /* INT: read in [lo, hi], refused later unless >= 1 (described as [1, hi]). */
#define KR__JLATE 16u /* STR with a choice: the name is checked after the object's other fields. */
#define KR__JNOSTORE ((size_t)-1) /* off: read and checked, not stored. */

struct kr__jfield;
struct kr__jtable;

/* What a writer may need beyond the value: the output path (files written beside) and errors. */
typedef struct kr__jwctx {
    const char *path;
    kr_error *err;
} kr__jwctx;

/* Names of an enumeration: its name table (the enum's own, as its name and parse functions
 * read it) and the text an error expects. */
typedef struct kr__jchoice {
    const kr__enames *names;
    const char *expected;
} kr__jchoice;

/* A unit conversion between the member and the JSON value (e.g. B/s member, GB/s in JSON). */
typedef struct kr__jconv {
    double (*to_json)(double member);
    double (*from_json)(double json);
} kr__jconv;

/*
 * Custom behaviour of a field. read gets the enclosing object (the field may be absent) and
 * replaces the typed reader; write sets *out to the value (NULL: the field is omitted) and
 * replaces the typed writer; init runs before the field is read, present or not. type, range and
 * def override the generated description.
 */
typedef struct kr__jhook {
    int (*read)(kr__jctx *c, const json_t *obj, const struct kr__jfield *f, void *base);
    int (*write)(const kr__jwctx *w, const struct kr__jfield *f, const void *base, json_t **out);
    void (*init)(void *base);
    const char *type, *range, *def;
} kr__jhook;

typedef struct kr__jfield {
    const char *key;
    kr__jtype type;
    unsigned flags;                /* KR__JREQ, KR__JKEEP, KR__JZDEF. */
    size_t off;                    /* Member offset in the base struct, or KR__JNOSTORE. */
    size_t cap;                    /* STR/ENUM/SCHEMA: buffer size (longest string + 1). */
    double lo, hi;                 /* INT/NUM: accepted range. */
    double def;                    /* INT/NUM/BOOL/ENUM: value when absent. */
    const char *sdef;              /* STR/SCHEMA: value when absent (the schema name). */
    const kr__jchoice *choice;     /* STR/ENUM: accepted names. */
    const kr__jconv *conv;         /* NUM: unit conversion. */
    const struct kr__jtable *sub;  /* OBJ: its fields; HOOK: the entries' fields (description). */
    const kr__jhook *hook;         /* Custom read, write, init, description. */
    const char *doc;               /* Description, with the unit. */
} kr__jfield;

typedef struct kr__jtable {
    const kr__jfield *f;
    int n;
} kr__jtable;

#define KR__JTABLE(fields) {(fields), (int)KR_ARRAY_LEN(fields)}

/* One-line field definitions: T is the base struct, m the member (may be nested: "cluster.nodes"). */
#define KR__JF_INT(T, m, key, flags, lo, hi, def, doc)                                            \
    {(key), KR__JT_INT, (flags), offsetof(T, m), 0, (lo), (hi), (def), NULL, NULL, NULL, NULL, NULL, (doc)}
#define KR__JF_INTH(T, m, key, flags, lo, hi, def, hook, doc)                                     \
    {(key), KR__JT_INT, (flags), offsetof(T, m), 0, (lo), (hi), (def), NULL, NULL, NULL, NULL, (hook), (doc)}
#define KR__JF_VERSION(v, flags, doc)                                                             \
    {"version", KR__JT_INT, (flags), KR__JNOSTORE, 0, (v), (v), (v), NULL, NULL, NULL, NULL, NULL, (doc)}
#define KR__JF_NUM(T, m, key, flags, lo, hi, def, doc)                                            \
    {(key), KR__JT_NUM, (flags), offsetof(T, m), 0, (lo), (hi), (def), NULL, NULL, NULL, NULL, NULL, (doc)}
#define KR__JF_NUMCONV(T, m, key, flags, lo, hi, conv, doc)                                       \
    {(key), KR__JT_NUM, (flags), offsetof(T, m), 0, (lo), (hi), 0, NULL, NULL, (conv), NULL, NULL, (doc)}
#define KR__JF_NUMH(key, flags, off, lo, hi, hook, doc)                                           \
    {(key), KR__JT_NUM, (flags), (off), 0, (lo), (hi), 0, NULL, NULL, NULL, NULL, (hook), (doc)}
#define KR__JF_STR(T, m, key, flags, sdef, choice, doc)                                           \
    {(key), KR__JT_STR, (flags), offsetof(T, m), sizeof(((T *)0)->m), 0, 0, 0, (sdef), (choice), NULL, NULL, \
     NULL, (doc)}
#define KR__JF_ENUM(T, m, key, flags, cap, def, choice, doc)                                      \
    {(key), KR__JT_ENUM, (flags), offsetof(T, m), (cap), 0, 0, (def), NULL, (choice), NULL, NULL, NULL, (doc)}
#define KR__JF_SCHEMA(name, flags, doc)                                                           \
    {"schema", KR__JT_SCHEMA, (flags), KR__JNOSTORE, 32, 0, 0, 0, (name), NULL, NULL, NULL, NULL, (doc)}
#define KR__JF_OBJ(key, flags, sub, hook, doc)                                                    \
    {(key), KR__JT_OBJ, (flags), 0, 0, 0, 0, 0, NULL, NULL, NULL, (sub), (hook), (doc)}
#define KR__JF_HOOK(key, flags, off, sub, hook, doc)                                              \
    {(key), KR__JT_HOOK, (flags), (off), 0, 0, 0, 0, NULL, NULL, NULL, (sub), (hook), (doc)}

/* Reads obj (an object with no keys outside t) into base, field by field. */
int kr__jtable_read(kr__jctx *c, const json_t *obj, const kr__jtable *t, void *base);
/* kr__jtable_read of v, the value of key, with key on the context's path while it reads. */
int kr__jtable_read_key(kr__jctx *c, const json_t *v, const char *key, const kr__jtable *t, void *base);
/* Reads one field of t (the typed reader or its hook). */
int kr__jfield_read(kr__jctx *c, const json_t *obj, const kr__jfield *f, void *base);
/* The field of t named key (NULL if none). */
const kr__jfield *kr__jtable_find(const kr__jtable *t, const char *key);
/* The fields of t as a new object (*out), in table order. KR_OK or a hook's error. */
int kr__jtable_write(const kr__jwctx *w, const kr__jtable *t, const void *base, json_t **out);
/* Row i of t's description, nested fields after their object; KR_ERANGE past the last row.
 * keep_base (may be NULL) gives the values KEEP fields default to. */
int kr__jtable_describe(const kr__jtable *t, const void *keep_base, int i, kr_field_info *out);

/* ---- CSV ---------------------------------------------------------------------------- */

/*
 * A whole CSV file in memory: a header row and data rows of strings. Fields are split on
 * commas; surrounding whitespace is trimmed; double quotes around a field are removed
 * (quoted fields may contain commas). Blank lines and lines starting with '#' are skipped.
 */
typedef struct kr__csv {
    char *file;    /* File name (copy) for messages. */
    int ncols;     /* Columns in the header. */
    int nrows;     /* Data rows. */
    char **header; /* ncols names. */
    char **cells;  /* nrows × ncols, row-major. */
    int *line;     /* 1-based file line of each data row. */
    char *store;   /* Backing text. */
} kr__csv;

int kr__csv_read(const char *path, kr__csv *t, kr_error *err);
int kr__csv_parse(const char *text, const char *name, kr__csv *t, kr_error *err);
void kr__csv_free(kr__csv *t);
/* Index of the named column, or -1. */
int kr__csv_col(const kr__csv *t, const char *name);
/* Like kr__csv_col but fails with "FILE: missing column NAME (header: …)". */
int kr__csv_need_col(const kr__csv *t, const char *name, int *col, kr_error *err);
const char *kr__csv_cell(const kr__csv *t, int row, int col);
/* Parses a cell as a finite double / an integer, with "FILE:LINE: column C: expected …". */
int kr__csv_double(const kr__csv *t, int row, int col, double *out, kr_error *err);
int kr__csv_int(const kr__csv *t, int row, int col, long long *out, kr_error *err);

/* Formats a double so that strtod reads back the same value ("%.17g", trimmed). */
void kr__fmt_double(char *buf, size_t cap, double v);

#endif
