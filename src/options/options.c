/*
 * options.c — instruction option sets: storage, validation and the Perseus/Kareus CSV
 * layout (see options.h for the format).
 */
#include "kareus/options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kareus/backend.h"
#include "util/util.h"

/* Key columns of a CSV: every key any instruction uses (a CP job has 5 forward, 7 backward and
 * 5 recompute keys, more than one instruction holds). */
#define MAX_KEY_COLUMNS (2 * KR_PLAN_MAX_COMM)

int kr_options_init(kr_options *opts, int num_stages, int virtual_stages, kr_error *err)
{
    memset(opts, 0, sizeof *opts);
    if (num_stages < 1 || num_stages > KR_MAX_STAGES || virtual_stages < 1 || virtual_stages > 1024)
        return kr_error_set(err, KR_ERANGE, "options: expected 1..%d stages and >= 1 virtual stages, found %d and %d",
                            KR_MAX_STAGES, num_stages, virtual_stages);
    opts->num_stages = num_stages;
    opts->virtual_stages = virtual_stages;
    opts->nsets = num_stages * virtual_stages * 2;
    opts->sets = calloc((size_t)opts->nsets, sizeof *opts->sets);
    if (opts->sets == NULL)
        return kr_error_set(err, KR_ENOMEM, "options: out of memory");
    for (int s = 0; s < num_stages; s++)
        for (int c = 0; c < virtual_stages; c++)
            for (int k = 0; k < 2; k++) {
                kr_option_set *set = &opts->sets[kr_options_index(opts, s, (kr_instr_kind)k, c)];
                set->stage = s;
                set->chunk = c;
                set->kind = (kr_instr_kind)k;
            }
    return KR_OK;
}

void kr_options_free(kr_options *opts)
{
    if (opts == NULL)
        return;
    for (int i = 0; i < opts->nsets; i++)
        free(opts->sets[i].opt);
    free(opts->sets);
    free(opts->comm);
    memset(opts, 0, sizeof *opts);
}

int kr_options_index(const kr_options *opts, int stage, kr_instr_kind kind, int chunk)
{
    if (stage < 0 || stage >= opts->num_stages || chunk < 0 || chunk >= opts->virtual_stages ||
        (kind != KR_INSTR_FORWARD && kind != KR_INSTR_BACKWARD))
        return -1;
    return (stage * opts->virtual_stages + chunk) * 2 + (int)kind;
}

const kr_option_set *kr_options_get(const kr_options *opts, int stage, kr_instr_kind kind, int chunk)
{
    int i = kr_options_index(opts, stage, kind, chunk);
    return i < 0 ? NULL : &opts->sets[i];
}

int kr_options_add(kr_options *opts, int stage, kr_instr_kind kind, int chunk, const kr_option *o,
                   const kr_comm_setting *comm, int ncomm, kr_error *err)
{
    int i = kr_options_index(opts, stage, kind, chunk);
    if (i < 0)
        return kr_error_set(err, KR_ERANGE, "options: expected stage in [0, %d] and chunk in [0, %d], found stage %d chunk %d",
                            opts->num_stages - 1, opts->virtual_stages - 1, stage, chunk);
    if (!(o->time_s > 0) || !isfinite(o->time_s))
        return kr_error_set(err, KR_ERANGE, "options: expected a time > 0 s, found %g", o->time_s);
    if (!(o->energy_j >= 0) || !isfinite(o->energy_j))
        return kr_error_set(err, KR_ERANGE, "options: expected a finite energy >= 0 J, found %g", o->energy_j);
    if (o->freq_mhz <= 0)
        return kr_error_set(err, KR_ERANGE, "options: expected a clock > 0 MHz, found %d", o->freq_mhz);
    if (ncomm < 0 || ncomm > KR_PLAN_MAX_COMM)
        return kr_error_set(err, KR_ERANGE, "options: expected at most %d comm settings, found %d", KR_PLAN_MAX_COMM, ncomm);
    kr_option_set *set = &opts->sets[i];
    size_t cap = (size_t)set->cap, ccap = (size_t)opts->comm_cap;
    if (kr__grow((void **)&set->opt, &cap, (size_t)set->n + 1, sizeof *set->opt) ||
        kr__grow((void **)&opts->comm, &ccap, (size_t)opts->ncomm + (size_t)ncomm, sizeof *opts->comm))
        return kr_error_set(err, KR_ENOMEM, "options: out of memory");
    set->cap = (int)cap;
    opts->comm_cap = (int)ccap;
    kr_option *dst = &set->opt[set->n++];
    *dst = *o;
    dst->ncomm = ncomm;
    dst->comm_first = ncomm ? opts->ncomm : -1;
    if (ncomm)
        memcpy(opts->comm + opts->ncomm, comm, sizeof *comm * (size_t)ncomm);
    opts->ncomm += ncomm;
    return KR_OK;
}

int kr_options_check(const kr_options *opts, kr_error *err)
{
    for (int i = 0; i < opts->nsets; i++) {
        const kr_option_set *set = &opts->sets[i];
        if (set->n == 0)
            return kr_error_set(err, KR_EINVAL, "options: stage %d %s (chunk %d): expected at least one option, found none",
                                set->stage, kr_instr_kind_name(set->kind), set->chunk);
        for (int j = 0; j < set->n; j++) {
            const kr_option *o = &set->opt[j];
            if (!(o->time_s > 0) || !isfinite(o->time_s) || !(o->energy_j >= 0) || !isfinite(o->energy_j))
                return kr_error_set(err, KR_ERANGE,
                                    "options: stage %d %s (chunk %d) option %d: expected time > 0 and energy >= 0, "
                                    "found %g s, %g J",
                                    set->stage, kr_instr_kind_name(set->kind), set->chunk, j, o->time_s, o->energy_j);
        }
    }
    return KR_OK;
}

/* ---- config strings ------------------------------------------------------------------ */

void kr_comm_setting_format(const kr_comm_setting *c, char *buf, size_t cap)
{
    /* The artifact's string knows the tuned kernel only; NCCL is a suffix of ours. */
    snprintf(buf, cap, "%s-none-%d-1024%s", c->slot, c->sms, c->kernel == KR_KERNEL_NCCL ? "-nccl" : "");
}

static int parse_posint(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

int kr_comm_setting_parse(const char *s, kr_comm_setting *out, kr_error *err)
{
    /* Parse from the right: start slot names contain no '-', but be lenient about it. */
    char buf[96];
    if (kr__strlcpy(buf, s, sizeof buf))
        return kr_error_set(err, KR_EPARSE, "expected a config string <start>-<end>-<sm>-<block>, found '%.40s…'", s);
    char *parts[3];
    size_t len = strlen(buf);
    out->kernel = KR_KERNEL_TUNED;
    if (len > 5 && strcmp(buf + len - 5, "-nccl") == 0) {
        buf[len - 5] = '\0';
        out->kernel = KR_KERNEL_NCCL;
    }
    for (int k = 2; k >= 0; k--) {
        char *dash = strrchr(buf, '-');
        if (dash == NULL)
            return kr_error_set(err, KR_EPARSE, "expected a config string <start>-<end>-<sm>-<block>, found '%s'", s);
        *dash = '\0';
        parts[k] = dash + 1;
    }
    int sms, block;
    if (buf[0] == '\0' || strlen(buf) >= KR_SLOT_NAME_MAX)
        return kr_error_set(err, KR_EPARSE, "config string '%s': expected a slot name of 1..%d characters, found '%s'", s,
                            KR_SLOT_NAME_MAX - 1, buf);
    if (strcmp(parts[0], "none") != 0)
        return kr_error_set(err, KR_EPARSE,
                            "config string '%s': expected overlap_end 'none' (the comm always completes at the end "
                            "of the partition), found '%s'",
                            s, parts[0]);
    if (parse_posint(parts[1], &sms))
        return kr_error_set(err, KR_EPARSE, "config string '%s': expected an SM count, found '%s'", s, parts[1]);
    if (parse_posint(parts[2], &block) || block < 1)
        return kr_error_set(err, KR_EPARSE, "config string '%s': expected a block size >= 1, found '%s'", s, parts[2]);
    kr__strlcpy(out->slot, buf, sizeof out->slot);
    out->sms = sms;
    return KR_OK;
}

/* ---- CSV ------------------------------------------------------------------------------- */

#define RECOMPUTE_PREFIX "recompute."

typedef struct keycol {
    int col;                  /* CSV column. */
    int recompute;            /* 1 for "recompute.KEY". */
    char key[KR_KEY_MAX];     /* Partition key. */
    char bwd_key[KR_KEY_MAX]; /* Artifact CP 1 columns: the key on backward rows ("" otherwise). */
} keycol;

/* Columns other layouts add that carry no partition key: Merak's per-rank rows
 * (rank,dp_rank,pp_rank,tp_rank,stage,…; ml-energy/merak-zeus Merak/merak_trainer.py). */
static int rank_column(const char *h)
{
    return strcmp(h, "rank") == 0 || strcmp(h, "dp_rank") == 0 || strcmp(h, "pp_rank") == 0 ||
           strcmp(h, "tp_rank") == 0;
}

/* The artifact's CP 1 profile CSV names its config columns by role, not by key
 * (ml-energy/kareus tests/kareus/generate_profile_csv.py): attention_configs and mlp_configs are
 * the forward keys on forward rows and the backward keys on backward rows; recompute_* are the
 * recomputed forward inside a backward. Returns 1 and fills k for such a header. */
static int artifact_role_column(const char *h, keycol *k)
{
    static const struct {
        const char *col, *fwd, *bwd;
        int recompute;
    } map[] = {
        {"attention_configs", "fwd_attn", "bwd_attn", 0},
        {"mlp_configs", "fwd_mlp", "bwd_mlp", 0},
        {"recompute_attention_configs", "fwd_attn", "fwd_attn", 1},
        {"recompute_mlp_configs", "fwd_mlp", "fwd_mlp", 1},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(h, map[i].col) == 0) {
            kr__strlcpy(k->key, map[i].fwd, sizeof k->key);
            kr__strlcpy(k->bwd_key, map[i].bwd, sizeof k->bwd_key);
            k->recompute = map[i].recompute;
            return 1;
        }
    return 0;
}

static int same_comm(const kr_options *opts, const kr_option *a, const kr_option *b)
{
    if (a->freq_mhz != b->freq_mhz || a->ncomm != b->ncomm)
        return 0;
    for (int c = 0; c < a->ncomm; c++) {
        const kr_comm_setting *x = &opts->comm[a->comm_first + c], *y = &opts->comm[b->comm_first + c];
        if (strcmp(x->key, y->key) || x->recompute != y->recompute || strcmp(x->slot, y->slot) || x->sms != y->sms)
            return 0;
    }
    return 1;
}

/* Per-rank rows (Merak): the rows of one (stage, instruction, chunk, clock, configs) measured on
 * the ranks of a stage become one option with the slowest rank's time (the instruction ends
 * when its last rank does) and the ranks' mean energy (per GPU), as the artifact aggregates its
 * profiles (tests/perseus/generate_profile_csv.py: max time over ranks, mean energy per rank). */
static int merge_ranks(kr_options *opts, kr_error *err)
{
    for (int i = 0; i < opts->nsets; i++) {
        kr_option_set *set = &opts->sets[i];
        int *rows = calloc((size_t)(set->n > 0 ? set->n : 1), sizeof *rows);
        if (rows == NULL)
            return kr_error_set(err, KR_ENOMEM, "options: out of memory");
        int n = 0;
        for (int j = 0; j < set->n; j++) {
            int k = 0;
            while (k < n && !same_comm(opts, &set->opt[k], &set->opt[j]))
                k++;
            if (k == n) {
                set->opt[n++] = set->opt[j]; /* n <= j: only processed entries are overwritten */
            } else {
                if (set->opt[j].time_s > set->opt[k].time_s)
                    set->opt[k].time_s = set->opt[j].time_s;
                set->opt[k].energy_j += set->opt[j].energy_j;
            }
            rows[k]++;
        }
        for (int k = 0; k < n; k++)
            set->opt[k].energy_j /= rows[k];
        set->n = n;
        free(rows);
    }
    return KR_OK;
}

/* The columns of an options table: the required ones, the optional chunk and pp_rank, and the
 * partition-key columns. */
typedef struct table_cols {
    int cs, ci, cf, ct, ce, cc, cpp; /* stage, instruction, frequency, time, energy, chunk, pp_rank */
    keycol keys[MAX_KEY_COLUMNS];
    int nkeys;
    int has_ranks; /* rank columns present (rows of one stage per rank, merged) */
} table_cols;

/* Finds the columns of t by their headers. */
static int table_columns(const kr__csv *t, table_cols *k, kr_error *err)
{
    memset(k, 0, sizeof *k);
    k->cc = kr__csv_col(t, "chunk");
    int rc;
    if ((rc = kr__csv_need_col(t, "stage", &k->cs, err)) || (rc = kr__csv_need_col(t, "instruction", &k->ci, err)) ||
        (rc = kr__csv_need_col(t, "frequency", &k->cf, err)) || (rc = kr__csv_need_col(t, "time", &k->ct, err)) ||
        (rc = kr__csv_need_col(t, "energy", &k->ce, err)))
        return rc;
    k->cpp = kr__csv_col(t, "pp_rank");
    for (int c = 0; c < t->ncols; c++) {
        if (c == k->cs || c == k->ci || c == k->cf || c == k->ct || c == k->ce || c == k->cc)
            continue;
        const char *h = t->header[c];
        if (rank_column(h)) {
            k->has_ranks = 1;
            continue;
        }
        int rec = strncmp(h, RECOMPUTE_PREFIX, strlen(RECOMPUTE_PREFIX)) == 0;
        const char *key = rec ? h + strlen(RECOMPUTE_PREFIX) : h;
        keycol role;
        memset(&role, 0, sizeof role);
        int is_role = artifact_role_column(h, &role);
        if (k->nkeys >= MAX_KEY_COLUMNS || (!is_role && (key[0] == '\0' || strlen(key) >= KR_KEY_MAX)))
            return kr_error_set(err, KR_EPARSE,
                                "%s:1: column '%s': expected at most %d partition-key columns with names of 1..%d "
                                "characters",
                                t->file, h, MAX_KEY_COLUMNS, KR_KEY_MAX - 1);
        keycol *kc = &k->keys[k->nkeys++];
        *kc = role;
        kc->col = c;
        if (!is_role) {
            kc->recompute = rec;
            kr__strlcpy(kc->key, key, sizeof kc->key);
        }
    }
    return KR_OK;
}

/* First pass: checks the stage and chunk cells; *ns, *nv = the stages and chunks of the table
 * (num_stages and virtual_stages where > 0). */
static int table_ranges(const kr__csv *t, const table_cols *k, int num_stages, int virtual_stages, int *ns, int *nv,
                        kr_error *err)
{
    int max_stage = -1, max_chunk = 0, rc;
    for (int r = 0; r < t->nrows; r++) {
        long long v;
        if ((rc = kr__csv_int(t, r, k->cs, &v, err)))
            return rc;
        if (v < 0 || v >= KR_MAX_STAGES || (num_stages > 0 && v >= num_stages))
            return kr_error_set(err, KR_ERANGE, "%s:%d: column 'stage': expected a stage in [0, %d], found %lld", t->file,
                                t->line[r], (num_stages > 0 ? num_stages : KR_MAX_STAGES) - 1, v);
        max_stage = KR_MAX(max_stage, (int)v);
        if (k->cc >= 0) {
            if ((rc = kr__csv_int(t, r, k->cc, &v, err)))
                return rc;
            if (v < 0 || v >= 1024 || (virtual_stages > 0 && v >= virtual_stages))
                return kr_error_set(err, KR_ERANGE, "%s:%d: column 'chunk': expected a chunk in [0, %d], found %lld",
                                    t->file, t->line[r], (virtual_stages > 0 ? virtual_stages : 1024) - 1, v);
            max_chunk = KR_MAX(max_chunk, (int)v);
        }
    }
    if (t->nrows == 0)
        return kr_error_set(err, KR_EINVAL, "%s: expected option rows after the header, found none", t->file);
    *ns = num_stages > 0 ? num_stages : max_stage + 1;
    *nv = virtual_stages > 0 ? virtual_stages : max_chunk + 1;
    return KR_OK;
}

/* The partition settings of row r (an instruction of the given kind) into comm[*ncomm]. */
static int row_comm(const kr__csv *t, const table_cols *k, int r, kr_instr_kind kind, kr_comm_setting *comm,
                    int *ncomm, kr_error *err)
{
    int line = t->line[r];
    *ncomm = 0;
    for (int j = 0; j < k->nkeys; j++) {
        const keycol *kc = &k->keys[j];
        const char *cell = kr__csv_cell(t, r, kc->col);
        if (cell[0] == '\0' || strcmp(cell, "nan") == 0 || strcmp(cell, "NaN") == 0)
            continue; /* pandas writes empty or NaN cells for keys that do not apply */
        /* A row may fill at most KR_PLAN_MAX_COMM of the (up to 2x as many) key columns. */
        if (*ncomm >= KR_PLAN_MAX_COMM)
            return kr_error_set(err, KR_ERANGE,
                                "%s:%d: column '%s': expected at most %d partition settings in one row, found more",
                                t->file, line, t->header[kc->col], KR_PLAN_MAX_COMM);
        kr_comm_setting *c = &comm[*ncomm];
        memset(c, 0, sizeof *c);
        kr_error e = {0};
        if (kr_comm_setting_parse(cell, c, &e))
            return kr_error_set(err, KR_EPARSE, "%s:%d: column '%s': %s", t->file, line, t->header[kc->col], e.msg);
        /* Role-named columns take the backward key on backward rows; in the artifact's CP
         * layout a forward key's column on a backward row is the recomputed forward. */
        int bwd = kind == KR_INSTR_BACKWARD;
        kr__strlcpy(c->key, bwd && kc->bwd_key[0] ? kc->bwd_key : kc->key, sizeof c->key);
        c->recompute = kc->recompute || (bwd && !kc->bwd_key[0] && strncmp(kc->key, "fwd_", 4) == 0);
        if (!bwd && kc->recompute)
            return kr_error_set(err, KR_EPARSE,
                                "%s:%d: column '%s': expected an empty cell on a forward row (a recomputed forward "
                                "exists only inside a backward), found '%s'",
                                t->file, line, t->header[kc->col], cell);
        (*ncomm)++;
    }
    return KR_OK;
}

/* Row r of the table (stage and chunk already checked) into out. */
static int table_row(const kr__csv *t, const table_cols *k, int r, kr_options *out, kr_error *err)
{
    long long stage, chunk = 0, freq;
    double time_s, energy_j;
    kr_instr_kind kind;
    int line = t->line[r], rc;
    kr__csv_int(t, r, k->cs, &stage, err);
    if (k->cc >= 0)
        kr__csv_int(t, r, k->cc, &chunk, err);
    if (kr_instr_kind_parse(kr__csv_cell(t, r, k->ci), &kind))
        return kr_error_set(err, KR_EPARSE, "%s:%d: column 'instruction': expected 'forward' or 'backward', found '%s'",
                            t->file, line, kr__csv_cell(t, r, k->ci));
    if ((rc = kr__csv_int(t, r, k->cf, &freq, err)))
        return rc;
    if (freq <= 0 || freq > 100000)
        return kr_error_set(err, KR_ERANGE, "%s:%d: column 'frequency': expected a clock in MHz > 0, found %lld",
                            t->file, line, freq);
    /* NaN and infinities are refused by kr__csv_double with the cell text. */
    if ((rc = kr__csv_double(t, r, k->ct, &time_s, err)) || (rc = kr__csv_double(t, r, k->ce, &energy_j, err)))
        return rc;
    if (!(time_s > 0))
        return kr_error_set(err, KR_ERANGE, "%s:%d: column 'time': expected a time > 0 s, found %s", t->file, line,
                            kr__csv_cell(t, r, k->ct));
    if (!(energy_j >= 0))
        return kr_error_set(err, KR_ERANGE, "%s:%d: column 'energy': expected an energy >= 0 J, found %s", t->file,
                            line, kr__csv_cell(t, r, k->ce));
    kr_comm_setting comm[KR_PLAN_MAX_COMM];
    int ncomm;
    if ((rc = row_comm(t, k, r, kind, comm, &ncomm, err)))
        return rc;
    if (k->cpp >= 0) {
        long long pp;
        if ((rc = kr__csv_int(t, r, k->cpp, &pp, err)))
            return rc;
        if (pp != stage)
            return kr_error_set(err, KR_EMISMATCH, "%s:%d: column 'pp_rank': expected the row's stage %lld, found %lld",
                                t->file, line, stage, pp);
    }
    kr_option o = {time_s, energy_j, (int)freq, -1, 0};
    if ((rc = kr_options_add(out, (int)stage, kind, (int)chunk, &o, comm, ncomm, err)))
        kr_error_prefix(err, "%s:%d", t->file, line);
    return rc;
}

static int parse_table(const kr__csv *t, int num_stages, int virtual_stages, kr_options *out, kr_error *err)
{
    table_cols k;
    int ns = 0, nv = 0, rc;
    if ((rc = table_columns(t, &k, err)) || (rc = table_ranges(t, &k, num_stages, virtual_stages, &ns, &nv, err)) ||
        (rc = kr_options_init(out, ns, nv, err)))
        return rc;
    for (int r = 0; r < t->nrows; r++)
        if ((rc = table_row(t, &k, r, out, err)))
            return rc;
    if (k.has_ranks && (rc = merge_ranks(out, err)))
        return rc;
    if ((rc = kr_options_check(out, err))) {
        kr_error_prefix(err, "%s", t->file);
        return rc;
    }
    return KR_OK;
}

int kr_options_parse_csv(const char *text, const char *name, int num_stages, int virtual_stages,
                         kr_options *out, kr_error *err)
{
    kr__csv t;
    memset(out, 0, sizeof *out);
    int rc = kr__csv_parse(text, name, &t, err);
    if (rc)
        return rc;
    rc = parse_table(&t, num_stages, virtual_stages, out, err);
    kr__csv_free(&t);
    if (rc)
        kr_options_free(out);
    return rc;
}

int kr_options_read_csv(const char *path, int num_stages, int virtual_stages, kr_options *out, kr_error *err)
{
    char *text;
    memset(out, 0, sizeof *out);
    int rc = kr__read_text(path, &text, NULL, 0, err);
    if (rc)
        return rc;
    rc = kr_options_parse_csv(text, path, num_stages, virtual_stages, out, err);
    free(text);
    return rc;
}

int kr_options_write_csv(const char *path, const kr_options *opts, kr_error *err)
{
    /* Distinct (key, recompute) pairs in order of first appearance. */
    keycol keys[MAX_KEY_COLUMNS];
    int nkeys = 0;
    for (int i = 0; i < opts->ncomm; i++) {
        const kr_comm_setting *c = &opts->comm[i];
        int found = 0;
        for (int k = 0; k < nkeys && !found; k++)
            found = keys[k].recompute == c->recompute && strcmp(keys[k].key, c->key) == 0;
        if (!found) {
            if (nkeys >= MAX_KEY_COLUMNS)
                return kr_error_set(err, KR_ERANGE, "%s: more than %d distinct partition keys", path, MAX_KEY_COLUMNS);
            keys[nkeys].recompute = c->recompute;
            kr__strlcpy(keys[nkeys].key, c->key, sizeof keys[nkeys].key);
            nkeys++;
        }
    }
    kr__sb sb = {0};
    kr__sb_puts(&sb, "stage,instruction,frequency,time,energy");
    if (opts->virtual_stages > 1)
        kr__sb_puts(&sb, ",chunk");
    for (int k = 0; k < nkeys; k++)
        kr__sb_printf(&sb, ",%s%s", keys[k].recompute ? RECOMPUTE_PREFIX : "", keys[k].key);
    kr__sb_puts(&sb, "\n");
    for (int i = 0; i < opts->nsets; i++) {
        const kr_option_set *set = &opts->sets[i];
        for (int j = 0; j < set->n; j++) {
            const kr_option *o = &set->opt[j];
            char t[40], e[40];
            kr__fmt_double(t, sizeof t, o->time_s);
            kr__fmt_double(e, sizeof e, o->energy_j);
            kr__sb_printf(&sb, "%d,%s,%d,%s,%s", set->stage, kr_instr_kind_name(set->kind), o->freq_mhz, t, e);
            if (opts->virtual_stages > 1)
                kr__sb_printf(&sb, ",%d", set->chunk);
            for (int k = 0; k < nkeys; k++) {
                kr__sb_puts(&sb, ",");
                for (int c = 0; c < o->ncomm; c++) {
                    const kr_comm_setting *cs = &opts->comm[o->comm_first + c];
                    if (cs->recompute == keys[k].recompute && strcmp(cs->key, keys[k].key) == 0) {
                        char buf[64];
                        kr_comm_setting_format(cs, buf, sizeof buf);
                        kr__sb_puts(&sb, buf);
                        break;
                    }
                }
            }
            kr__sb_puts(&sb, "\n");
        }
    }
    return kr__sb_write_atomic(&sb, path, err);
}
