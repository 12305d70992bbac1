/*
 * files.c — directory creation, whole-file reads and atomic writes (temp + fsync + rename).
 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
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
    if (path == NULL || path[0] == '\0')
        return kr_error_set(err, KR_EINVAL, "empty file name");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kr_error_set(err, KR_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kr_error_set(err, KR_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return kr_error_set(err, KR_EINVAL, "%s: is a directory, expected a file", path);
    }
    if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > KR__FILE_MAX) {
        close(fd);
        return kr_error_set(err, KR_ERANGE, "%s: expected a file of at most %zu MiB, found %lld bytes", path,
                            KR__FILE_MAX >> 20, (long long)st.st_size);
    }
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        close(fd);
        return kr_error_set(err, KR_ENOMEM, "%s: cannot open: out of memory", path);
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n > KR__FILE_MAX) {
            free(buf);
            fclose(f);
            return kr_error_set(err, KR_ERANGE, "%s: expected a file of at most %zu MiB, found more", path,
                                KR__FILE_MAX >> 20);
        }
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

int kr__text_check(const char *text, size_t len, const char *name, int flags, kr_error *err)
{
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        return kr_error_set(err, KR_EPARSE, "%s:1:1: expected text, found a UTF-8 byte-order mark (save the file "
                            "without BOM)", name);
    size_t line = 1, col = 1;
    for (size_t i = 0; i < len; i++, col++) {
        char c = text[i];
        if (c == '\n') {
            line++;
            col = 0;
            continue;
        }
        if (c == '\0')
            return kr_error_set(err, KR_EPARSE, "%s:%zu:%zu: expected text, found a NUL byte (byte offset %zu)",
                                name, line, col, i);
        if (c == '\r' && (flags & KR__TEXT_NO_CR))
            return kr_error_set(err, KR_EPARSE, "%s:%zu:%zu: expected LF line endings, found a carriage return "
                                "(CRLF file? convert it with dos2unix)", name, line, col);
        if (col > KR__LINE_MAX)
            return kr_error_set(err, KR_ERANGE, "%s:%zu: expected lines of at most %zu bytes, found a longer one",
                                name, line, KR__LINE_MAX);
    }
    return KR_OK;
}

int kr__read_text(const char *path, char **out, size_t *len, int flags, kr_error *err)
{
    char *text;
    size_t n;
    int rc = kr__read_file(path, &text, &n, err);
    if (rc)
        return rc;
    if ((rc = kr__text_check(text, n, path, flags, err))) {
        free(text);
        return rc;
    }
    *out = text;
    if (len)
        *len = n;
    return KR_OK;
}

/* The mode a new file gets: 0666 minus the umask, read from /proc (umask(2) would race). */
static int default_mode(void)
{
    int mode = 0644;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return mode;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned um;
        if (sscanf(line, "Umask: %o", &um) == 1) {
            mode = 0666 & ~(int)um;
            break;
        }
    }
    fclose(f);
    return mode;
}

int kr__afile_open(kr__afile *af, const char *path, kr_error *err)
{
    memset(af, 0, sizeof *af);
    if (path == NULL || path[0] == '\0')
        return kr_error_set(err, KR_EINVAL, "empty output file name");
    if (kr__strlcpy(af->path, path, sizeof af->path) || strlen(path) + 12 >= sizeof af->tmp)
        return kr_error_set(err, KR_EINVAL, "%s: path too long", path);
    struct stat st;
    af->mode = default_mode();
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return kr_error_set(err, KR_EINVAL, "%s: is a directory, expected a file name to write", path);
        if (S_ISREG(st.st_mode))
            af->mode = (int)(st.st_mode & 0777);
    }
    /* mkstemp-style: random suffix, exclusive creation, never through a symlink. */
    static unsigned long counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long x = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^
                           ((unsigned long long)getpid() << 32) ^ (uintptr_t)af ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    int fd = -1, e = 0;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        char suffix[7];
        for (int i = 0; i < 6; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            suffix[i] = alnum[(x >> 33) % (sizeof alnum - 1)];
        }
        suffix[6] = '\0';
        snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%s", path, suffix);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        e = errno;
        if (fd < 0 && e != EEXIST)
            break;
    }
    if (fd < 0)
        return kr_error_set(err, KR_EIO, "%s: cannot write (creating its temporary file): %s", path, strerror(e));
    af->f = fdopen(fd, "wb");
    if (af->f == NULL) {
        close(fd);
        unlink(af->tmp);
        return kr_error_set(err, KR_ENOMEM, "%s: cannot write: out of memory", path);
    }
    return KR_OK;
}

/*
 * Removes stale temp files of path ("<name>.tmp.*" beside it) that a killed writer left: only
 * regular files (never symlinks), owned by this user, untouched for 10 minutes — a live writer
 * finishes its file in far less. Best effort: errors are ignored.
 */
static void remove_stale_temps(const char *path)
{
    char dirbuf[4096], basebuf[4096];
    kr__strlcpy(dirbuf, path, sizeof dirbuf);
    kr__strlcpy(basebuf, path, sizeof basebuf);
    const char *dir = dirname(dirbuf), *base = basename(basebuf);
    char prefix[300];
    if ((size_t)snprintf(prefix, sizeof prefix, "%s.tmp.", base) >= sizeof prefix)
        return;
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && now - st.st_mtime > 600)
            (void)unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
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
    if (!bad && fchmod(fileno(af->f), (mode_t)af->mode) != 0) {
        bad = 1;
        saved = errno;
    }
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
    remove_stale_temps(af->path);
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
