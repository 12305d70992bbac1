/*
 * options.h — instruction options: for every pipeline instruction type (stage, forward or
 * backward, model chunk) the set of ways it can run, each with its time, its energy on one
 * GPU, its SM clock and its provenance (the comm configuration of every partition key,
 * recompute-forward keys included).
 *
 * CSV layout (the Perseus/Kareus profile layout, so their files import):
 *   stage,instruction,frequency,time,energy[,chunk][,KEY…]
 * stage is 0-based; instruction is "forward" or "backward"; frequency in MHz; time in
 * seconds; energy in joules per GPU (static power included). An optional "chunk" column
 * gives the model chunk for interleaved schedules. Every other column is a partition key
 * whose cell is the artifact's config string "<overlap_start>-<overlap_end>-<sm>-<block>"
 * (e.g. "rope_0-none-12-1024"), or empty when the key does not apply to the row. A column
 * named "recompute.KEY" holds the config of KEY for the forward recomputed inside a backward.
 * overlap_end must be "none" (the artifact never uses another value, kareus-method.md §1.3);
 * block is carried for compatibility and written back as 1024.
 * Other layouts read as well: Merak's per-rank rows (extra columns rank, dp_rank, pp_rank,
 * tp_rank; pp_rank must equal stage; the rows of one stage, instruction, clock and configs merge
 * into one option with the slowest rank's time and the ranks' mean energy), and the artifact's
 * Kareus profile CSV: with CP 1 its columns attention_configs / mlp_configs (the forward keys on
 * forward rows, the backward keys on backward rows) and recompute_attention_configs /
 * recompute_mlp_configs (recomputed forward, backward rows only); with CP > 1 one column per key,
 * where a fwd_* column on a backward row is the recomputed forward.
 */
#ifndef KAREUS_OPTIONS_H
#define KAREUS_OPTIONS_H

#include "kareus/plan.h"
#include "kareus/sched.h"
#include "kareus/status.h"

#include "kareus/export.h"
KR_BEGIN_DECLS

/* One way to run an instruction. */
typedef struct kr_option {
    double time_s;   /* Duration of one execution. */
    double energy_j; /* Energy of one GPU for it, static power included. */
    int freq_mhz;    /* SM clock of the whole instruction. */
    int comm_first;  /* Index of its first comm setting in kr_options.comm (-1: none). */
    int ncomm;       /* Comm settings of this option. */
} kr_option;

/* The options of one instruction type. */
typedef struct kr_option_set {
    int stage;          /* Pipeline stage, 0-based. */
    kr_instr_kind kind; /* Forward or backward. */
    int chunk;          /* Model chunk (virtual stage), 0 unless interleaved. */
    int n;              /* Options used. */
    int cap;            /* Options allocated. */
    kr_option *opt;     /* n options (owned). */
} kr_option_set;

typedef struct kr_options {
    int num_stages;         /* Pipeline stages. */
    int virtual_stages;     /* Chunks per stage (1 unless interleaved). */
    int nsets;              /* num_stages × virtual_stages × 2. */
    kr_option_set *sets;    /* Indexed by kr_options_index (owned). */
    int ncomm;              /* Comm settings stored. */
    int comm_cap;           /* Comm settings allocated. */
    kr_comm_setting *comm;  /* Provenance pool shared by all options (owned). */
} kr_options;

/* Allocates empty option sets for num_stages × virtual_stages × {forward, backward}.
 * Returns KR_OK, KR_ERANGE (counts < 1) or KR_ENOMEM. Free with kr_options_free. */
int kr_options_init(kr_options *opts, int num_stages, int virtual_stages, kr_error *err);
void kr_options_free(kr_options *opts);

/* Index of the set of (stage, kind, chunk), or -1 when out of range. */
int kr_options_index(const kr_options *opts, int stage, kr_instr_kind kind, int chunk);

/* The set of (stage, kind, chunk), or NULL when out of range. */
const kr_option_set *kr_options_get(const kr_options *opts, int stage, kr_instr_kind kind, int chunk);

/*
 * Appends an option (time, energy, clock; o->comm_* are ignored) with ncomm comm settings
 * (copied) to the set of (stage, kind, chunk). Checks time > 0, energy finite and >= 0,
 * clock > 0. Returns KR_OK, KR_ERANGE (bad set or value) or KR_ENOMEM.
 */
int kr_options_add(kr_options *opts, int stage, kr_instr_kind kind, int chunk, const kr_option *o,
                   const kr_comm_setting *comm, int ncomm, kr_error *err);

/* Checks that every set has at least one option and every value is valid; the message names
 * the first empty set ("stage 1 backward (chunk 0): no options"). KR_EINVAL otherwise. */
int kr_options_check(const kr_options *opts, kr_error *err);

/*
 * Reads an options CSV (layout above). num_stages > 0 requires stages in [0, num_stages);
 * 0 takes the largest stage + 1. virtual_stages likewise (0: from the chunk column, or 1).
 * Errors name FILE:LINE and the column: a missing column, a bad number, a stage out of
 * range, a NaN or negative energy, a non-positive time, a bad config string, and (after
 * reading) an instruction with no options. Returns KR_OK, KR_EIO, KR_EPARSE, KR_ERANGE,
 * KR_EINVAL or KR_ENOMEM.
 */
int kr_options_read_csv(const char *path, int num_stages, int virtual_stages, kr_options *out,
                        kr_error *err);
/* Same from text; name is used in messages. */
int kr_options_parse_csv(const char *text, const char *name, int num_stages, int virtual_stages,
                         kr_options *out, kr_error *err);

/* Writes the options as CSV (atomic), doubles round-trip exactly. The chunk column is
 * written only when virtual_stages > 1; one column per distinct comm key. */
int kr_options_write_csv(const char *path, const kr_options *opts, kr_error *err);

/* Formats one comm setting as the artifact's config string "<slot>-none-<sms>-1024", with
 * "-nccl" appended when the setting runs NCCL (the artifact knows the tuned kernel only). */
void kr_comm_setting_format(const kr_comm_setting *c, char *buf, size_t cap);
/* Parses "<start>-<end>-<sm>-<block>[-nccl]" into slot, sms and kernel (end must be "none").
 * Returns KR_OK or KR_EPARSE with what was expected in err (no file context). */
int kr_comm_setting_parse(const char *s, kr_comm_setting *out, kr_error *err);

KR_END_DECLS
#endif
