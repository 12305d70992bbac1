/*
 * jsonl.c — the appending side of our JSON-lines logs (the measurement log, src/search/mlog.c,
 * and the comm-sweep log, src/profiler/sweep.c): open for appending without following a planted
 * symlink, one line per object flushed (and fsync'd when asked), and the torn last line a crash
 * left dropped with one warning. What a line holds and how a log is recognised stay with each log.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kr__jsonl_open_append(const char *path, int newline_first, FILE **out, kr_error *err)
{
    *out = NULL;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (f == NULL) {
        int rc = kr_error_set(err, KR_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (newline_first && (fputc('\n', f) == EOF || fflush(f) != 0)) {
        int rc = kr_error_set(err, KR_EIO, "%s: write failed: %s", path, strerror(errno));
        fclose(f);
        return rc;
    }
    *out = f;
    return KR_OK;
}

int kr__jsonl_append(FILE *f, const json_t *o, int sync, const char *path, const char *what, kr_error *err)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    if (text == NULL)
        return kr_error_set(err, KR_ENOMEM, "%s: out of memory", path);
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves room for the NUL; the newline replaces it */
    int ok = fwrite(text, 1, n + 1, f) == n + 1 && fflush(f) == 0 && (!sync || fsync(fileno(f)) == 0);
    int saved = errno;
    free(text);
    return ok ? KR_OK : kr_error_set(err, KR_EIO, "%s: cannot %s: %s", path, what, strerror(saved));
}

int kr__jsonl_drop_torn(const char *path, const char *text, size_t len, size_t valid, int lineno, char *warning,
                        size_t cap, kr_error *err)
{
    if (truncate(path, (off_t)valid) != 0)
        return kr_error_set(err, KR_EIO, "%s: cannot drop the torn last line: %s", path, strerror(errno));
    size_t w = strlen(warning);
    snprintf(warning + w, cap - w, "%s%s:%d: dropped a torn last line (%zu bytes, a write interrupted by a crash): '%.60s'",
             w ? "; " : "", path, lineno, len - valid, text + valid);
    return KR_OK;
}
