/*
 * mlog_merge.c — merging the measurement logs of a sharded profiling campaign into one log
 * (kr_search_log_merge, `kareus log merge`).
 *
 * Each shard of a campaign (`kareus profile --shard I/N`) writes its own log; the merged log is
 * what one machine's log would hold for the same searches: the header, then every measured
 * configuration once. Lines are copied byte for byte (the values they hold are the ones the
 * shard's search used, printed with 17 significant digits), so a search resumed from the merged
 * log reads exactly the numbers the shard read and finds the same frontier.
 *
 * The rule for a configuration measured twice: the first copy in argument order, then line
 * order, is kept. Equal copies (same time, energy, spreads and repeats) are duplicates — a
 * shard rerun over a unit another node had already done, say; copies that differ are
 * conflicts, counted and the first one named, because a search that read the dropped value
 * would have gone elsewhere. The merge never fails on duplicates or conflicts; the caller
 * decides what a conflict means (the CLI prints it).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search_internal.h"

/* One shard's text and the offsets of its lines. */
typedef struct shard {
    char *text;
    size_t len;
    size_t *start; /* start[l-1]: offset of line l */
    int nlines;
} shard;

static int index_lines(shard *s)
{
    int n = 0;
    for (size_t i = 0; i < s->len; i++)
        n += s->text[i] == '\n';
    s->start = malloc(((size_t)n + 2) * sizeof *s->start);
    if (s->start == NULL)
        return KR_ENOMEM;
    size_t at = 0;
    s->nlines = 0;
    while (at < s->len) {
        s->start[s->nlines++] = at;
        const char *nl = memchr(s->text + at, '\n', s->len - at);
        at = nl ? (size_t)(nl - s->text) + 1 : s->len;
    }
    s->start[s->nlines] = s->len;
    return KR_OK;
}

/* Reads and checks one shard log, appending its records (file = idx) to recs. */
static int read_shard(const char *path, int idx, const kr_job *job, const kr__catalogs *cat, shard *s,
                      kr__mrecs *recs, int *torn, kr_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return kr_error_set(err, KR_EINVAL, "%s: cannot read: %s", path, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: is a symbolic link; give the log's real path", path);
    if (!S_ISREG(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: expected a measurement log file, found %s", path,
                            S_ISDIR(st.st_mode) ? "a directory" : "a special file");
    /* The header (and the fingerprint) first, with the log's own messages. */
    int rc = kr_search_log_check(path, job, err);
    if (rc)
        return rc;
    if ((rc = kr__read_file(path, &s->text, &s->len, err)))
        return rc;
    if (s->len == 0)
        return kr_error_set(err, KR_EINVAL,
                            "%s:1: expected a Kareus measurement log (first line {\"schema\":\"" MLOG_SCHEMA
                            "\",...}), found an empty file", path);
    if (index_lines(s))
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    kr__mparse o = {path, idx, job, cat, NULL, 1};
    size_t valid;
    int complete_last;
    *torn = 0;
    return kr__mlog_parse(&o, s->text, s->len, recs, &valid, torn, &complete_last, err);
}

static int cmp_config_then_place(const void *x, const void *y)
{
    const kr__mrec *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (c == 0 && a->variant != b->variant)
        c = a->variant < b->variant ? -1 : 1;
    if (c == 0 && a->freq_mhz != b->freq_mhz)
        c = a->freq_mhz < b->freq_mhz ? -1 : 1;
    if (c == 0)
        c = strcmp(a->slot, b->slot);
    if (c == 0)
        c = (a->sms > b->sms) - (a->sms < b->sms);
    if (c == 0)
        c = (a->kernel > b->kernel) - (a->kernel < b->kernel);
    if (c == 0)
        c = (a->file > b->file) - (a->file < b->file);
    if (c == 0)
        c = (a->line > b->line) - (a->line < b->line);
    return c;
}

static int same_config(const kr__mrec *a, const kr__mrec *b)
{
    return strcmp(a->key, b->key) == 0 && a->variant == b->variant && a->freq_mhz == b->freq_mhz &&
           strcmp(a->slot, b->slot) == 0 && a->sms == b->sms && a->kernel == b->kernel;
}

static int same_value(const kr__mrec *a, const kr__mrec *b)
{
    return a->time_s == b->time_s && a->energy_j == b->energy_j && a->time_sd_s == b->time_sd_s &&
           a->energy_sd_j == b->energy_sd_j && a->repeats == b->repeats;
}

/* Marks in keep[file][line] the first copy of each configuration; fills the counts. */
static void choose(kr__mrecs *recs, unsigned char **keep, const char *const *paths, kr_search_merge_stats *st)
{
    qsort(recs->r, recs->n, sizeof *recs->r, cmp_config_then_place);
    for (size_t i = 0; i < recs->n;) {
        const kr__mrec *first = &recs->r[i];
        keep[first->file][first->line] = 1;
        st->records++;
        size_t j = i + 1;
        for (; j < recs->n && same_config(first, &recs->r[j]); j++) {
            const kr__mrec *r = &recs->r[j];
            if (same_value(first, r)) {
                st->duplicates++;
                continue;
            }
            if (st->conflicts++ == 0)
                snprintf(st->conflict, sizeof st->conflict,
                         "%s %s %d MHz %d SMs %s %s: %s:%d kept over %s:%d (time_s %.17g vs %.17g, energy_j %.17g vs %.17g)",
                         r->key, kr_variant_name(r->variant), r->freq_mhz, r->sms, r->slot, kr_comm_kernel_name(r->kernel),
                         paths[first->file],
                         first->line, paths[r->file], r->line, first->time_s, r->time_s, first->energy_j, r->energy_j);
        }
        i = j;
    }
}

/* Refuses an out that is a symlink, not a regular file, or a regular file that is not a log of
 * job (so a mistyped OUT never replaces a user's file). */
static int check_out(const char *out, const kr_job *job, kr_error *err)
{
    struct stat st;
    if (out[0] == '\0')
        return kr_error_set(err, KR_EINVAL, "empty output file name");
    if (lstat(out, &st) != 0)
        return KR_OK;
    if (S_ISLNK(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: is a symbolic link; give the merged log's real path", out);
    if (!S_ISREG(st.st_mode))
        return kr_error_set(err, KR_EINVAL, "%s: expected a new file or a measurement log to replace, found %s", out,
                            S_ISDIR(st.st_mode) ? "a directory" : "a special file");
    return kr_search_log_check(out, job, err);
}

/* Writes the header and the kept lines to a temporary file beside out, then renames it. */
static int write_merged(const char *out, const kr_job *job, const shard *sh, int n, unsigned char *const *keep,
                        kr_error *err)
{
    char tmp[4200], dir[4200];
    if (snprintf(tmp, sizeof tmp, "%s.merge.XXXXXX", out) >= (int)sizeof tmp)
        return kr_error_set(err, KR_EINVAL, "%s: path too long", out);
    int fd = mkstemp(tmp); /* O_CREAT | O_EXCL: never an existing file or a symlink's target */
    if (fd < 0)
        return kr_error_set(err, KR_EIO, "%s: cannot create a temporary file beside it: %s", out, strerror(errno));
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "w");
    char fp[17];
    kr_job_fingerprint(job, fp);
    json_t *h = json_pack("{s:s, s:i, s:s, s:s}", "schema", MLOG_SCHEMA, "version", MLOG_VERSION, "job", fp,
                          "job_name", job->name);
    char *ht = h ? json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(h);
    int ok = f != NULL && ht != NULL && fputs(ht, f) != EOF && fputc('\n', f) != EOF;
    free(ht);
    for (int i = 0; i < n && ok; i++)
        for (int l = 1; l <= sh[i].nlines && ok; l++)
            if (keep[i][l]) {
                size_t a = sh[i].start[l - 1], b = sh[i].start[l];
                ok = fwrite(sh[i].text + a, 1, b - a, f) == b - a &&
                     (sh[i].text[b - 1] == '\n' || fputc('\n', f) != EOF);
            }
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f ? fclose(f) != 0 : close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, out) != 0) {
        int e = errno;
        unlink(tmp);
        return kr_error_set(err, KR_EIO, "%s: cannot write the merged log: %s", out, strerror(e));
    }
    snprintf(dir, sizeof dir, "%s", out);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd); /* the rename itself survives a crash of the machine */
        close(dfd);
    }
    return KR_OK;
}

int kr_search_log_merge(const char *out, const char *const *paths, int n, const kr_job *job,
                        kr_search_merge_stats *st, kr_error *err)
{
    memset(st, 0, sizeof *st);
    if (n < 1)
        return kr_error_set(err, KR_EINVAL, "expected at least one shard log to merge, found none");
    int rc = check_out(out, job, err);
    if (rc)
        return rc;
    kr__catalogs *cat = malloc(sizeof *cat);
    shard *sh = calloc((size_t)n, sizeof *sh);
    unsigned char **keep = calloc((size_t)n, sizeof *keep);
    kr__mrecs recs = {0};
    if (cat == NULL || sh == NULL || keep == NULL)
        rc = kr_error_set(err, KR_ENOMEM, "out of memory");
    if (rc == KR_OK)
        rc = kr__catalogs_build(job, cat, err);
    for (int i = 0; i < n && rc == KR_OK; i++) {
        int torn = 0;
        rc = read_shard(paths[i], i, job, cat, &sh[i], &recs, &torn, err);
        st->torn += torn != 0;
        if (rc == KR_OK && (keep[i] = calloc((size_t)sh[i].nlines + 1, 1)) == NULL)
            rc = kr_error_set(err, KR_ENOMEM, "out of memory");
    }
    if (rc == KR_OK) {
        choose(&recs, keep, paths, st);
        rc = write_merged(out, job, sh, n, keep, err);
    }
    for (int i = 0; sh && keep && i < n; i++) {
        free(sh[i].text);
        free(sh[i].start);
        free(keep[i]);
    }
    free(recs.r);
    free(keep);
    free(sh);
    free(cat);
    return rc;
}
