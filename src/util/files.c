/*
 * files.c — directory creation, whole-file reads and atomic writes (temp + fsync + rename).
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kr__mkdirs(const char *path, kr_error *err)
{
    char buf[4096];
    if (kr__strlcpy(buf, path, sizeof buf))
        return kr_error_set(err, KR_EINVAL, "%s: path too long", path);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return kr_error_set(err, KR_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return kr_error_set(err, KR_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return kr_error_set(err, KR_EIO, "%s: exists and is not a directory", buf);
    return KR_OK;
}

int kr__read_file(const char *path, char **out, size_t *len, kr_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return kr_error_set(err, KR_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (kr__grow((void **)&buf, &cap, n + 65536 + 1, 1) != KR_OK) {
            free(buf);
            fclose(f);
            return kr_error_set(err, KR_ENOMEM, "%s: out of memory reading file", path);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return kr_error_set(err, KR_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return KR_OK;
}

int kr__afile_open(kr__afile *af, const char *path, kr_error *err)
{
    memset(af, 0, sizeof *af);
    if (kr__strlcpy(af->path, path, sizeof af->path))
        return kr_error_set(err, KR_EINVAL, "%s: path too long", path);
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", path, (long)getpid());
    af->f = fopen(af->tmp, "wb");
    if (af->f == NULL)
        return kr_error_set(err, KR_EIO, "%s: cannot write: %s", path, strerror(errno));
    return KR_OK;
}

static void fsync_dir_of(const char *path)
{
    char buf[4096];
    kr__strlcpy(buf, path, sizeof buf);
    int fd = open(dirname(buf), O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int kr__afile_commit(kr__afile *af, kr_error *err)
{
    if (af->f == NULL)
        return kr_error_set(err, KR_ESTATE, "%s: atomic file not open", af->path);
    int bad = fflush(af->f) != 0 || ferror(af->f);
    int saved = errno;
    if (!bad && fsync(fileno(af->f)) != 0) {
        bad = 1;
        saved = errno;
    }
    if (fclose(af->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    af->f = NULL;
    if (bad) {
        unlink(af->tmp);
        return kr_error_set(err, KR_EIO, "%s: write failed: %s", af->path, strerror(saved));
    }
    if (rename(af->tmp, af->path) != 0) {
        saved = errno;
        unlink(af->tmp);
        return kr_error_set(err, KR_EIO, "%s: cannot rename into place: %s", af->path, strerror(saved));
    }
    fsync_dir_of(af->path);
    return KR_OK;
}

void kr__afile_abort(kr__afile *af)
{
    if (af->f) {
        fclose(af->f);
        af->f = NULL;
        unlink(af->tmp);
    }
}

int kr__write_file_atomic(const char *path, const char *data, size_t len, kr_error *err)
{
    kr__afile af;
    int rc = kr__afile_open(&af, path, err);
    if (rc)
        return rc;
    if (len && fwrite(data, 1, len, af.f) != len) {
        kr__afile_abort(&af);
        return kr_error_set(err, KR_EIO, "%s: write failed", path);
    }
    return kr__afile_commit(&af, err);
}

int kr__sb_write_atomic(kr__sb *sb, const char *path, kr_error *err)
{
    int rc = sb->oom ? kr_error_set(err, KR_ENOMEM, "%s: out of memory", path)
                     : kr__write_file_atomic(path, kr__sb_str(sb), sb->len, err);
    kr__sb_free(sb);
    return rc;
}
