/*
 * kareusd.c — the client side of kareusd, the scoped clock helper (daemon/kareusd.c): a backend
 * whose clock, energy and power calls are requests over a Unix socket to a root daemon, so that
 * a training job needs no privilege to have its clocks set — and the daemon puts the clocks back
 * the moment this connection drops, however the job dies.
 *
 * Protocol (shared with the daemon; one request, one reply, text lines of at most
 * KR_KAREUSD_LINE_MAX bytes):
 *   on connect   the daemon greets: "OK kareusd 1 devices N" — or "ERR CODE MESSAGE" and closes
 *                (a client it does not authorise; the message says why)
 *   CLOCKS D     "OK N MHZ…"                (supported SM clocks, highest first)
 *   GET D        "OK CUR LOCKED_MIN LOCKED_MAX"
 *   LOCK D A B   "OK"                       (lock the SM clock to [A, B] MHz)
 *   RESET D      "OK"                       (remove the lock)
 *   ENERGY D     "OK JOULES"                (cumulative counter)
 *   POWER D      "OK WATTS"
 *   INFO D       "OK MEM_MHZ CUR_MEM_MHZ UUID NAME…"
 * Any reply may be "ERR CODE MESSAGE" with CODE a KR_E… status.
 * Requests are serialised by a mutex (the runtime calls from its worker thread, tools from the
 * main thread); the connection is blocking with a receive timeout so a stuck daemon becomes
 * KR_ETIMEDOUT, never a hung job.
 */
#include "kareus/gpuctl.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/util.h"

typedef struct kd_impl {
    pthread_mutex_t mu; /* one request at a time */
    int fd;
    int devices;
    char path[108];
    char buf[KR_KAREUSD_LINE_MAX]; /* bytes received but not yet consumed */
    size_t nbuf;
} kd_impl;

static const kr_backend_class kd_class;

static kd_impl *impl_of(const kr_backend *b)
{
    return kr_backend_state(b, &kd_class);
}

/* Reads one line (without its newline) into line. Returns KR_OK or a failure with err set. */
static int read_line(kd_impl *k, char *line, size_t cap, kr_error *err)
{
    for (;;) {
        char *nl = memchr(k->buf, '\n', k->nbuf);
        if (nl) {
            size_t l = (size_t)(nl - k->buf);
            if (l >= cap)
                return kr_error_set(err, KR_EBACKEND, "kareusd %s: reply longer than %zu bytes", k->path, cap);
            memcpy(line, k->buf, l);
            line[l] = '\0';
            memmove(k->buf, nl + 1, k->nbuf - l - 1);
            k->nbuf -= l + 1;
            return KR_OK;
        }
        if (k->nbuf == sizeof k->buf)
            return kr_error_set(err, KR_EBACKEND, "kareusd %s: reply without a newline", k->path);
        ssize_t n = recv(k->fd, k->buf + k->nbuf, sizeof k->buf - k->nbuf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return kr_error_set(err, KR_ETIMEDOUT, "kareusd %s: no reply within 10 s", k->path);
        if (n <= 0)
            return kr_error_set(err, KR_ENODEV, "kareusd %s: connection closed by the daemon%s%s", k->path,
                                n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        k->nbuf += (size_t)n;
    }
}

/* Parses "OK rest" (returns KR_OK, *rest set) or "ERR CODE MESSAGE" (returns CODE, err set). */
static int parse_reply(const kd_impl *k, char *line, char **rest, kr_error *err)
{
    if (strncmp(line, "OK", 2) == 0 && (line[2] == '\0' || line[2] == ' ')) {
        *rest = line[2] ? line + 3 : line + 2;
        return KR_OK;
    }
    int code = 0, off = 0;
    if (sscanf(line, "ERR %d %n", &code, &off) == 1 && code < 0 && off > 0)
        return kr_error_set(err, code, "kareusd: %s", line + off);
    return kr_error_set(err, KR_EBACKEND, "kareusd %s: unexpected reply '%.200s'", k->path, line);
}

/* Sends one request and reads its reply into line; *rest points after "OK ". */
static int request(kr_backend *b, char *line, size_t cap, char **rest, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int request(kr_backend *b, char *line, size_t cap, char **rest, const char *fmt, ...)
{
    kd_impl *k = impl_of(b);
    char req[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(req, sizeof req, fmt, ap);
    va_end(ap);
    if (n <= 0 || (size_t)n >= sizeof req)
        return kr_error_set(kr_backend_error(b), KR_EINTERNAL, "kareusd: request too long");
    pthread_mutex_lock(&k->mu);
    int rc = KR_OK;
    if (k->fd < 0)
        rc = kr_error_set(kr_backend_error(b), KR_ENODEV, "kareusd %s: not connected (an earlier failure closed it)", k->path);
    else if (send(k->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        rc = kr_error_set(kr_backend_error(b), KR_ENODEV, "kareusd %s: sending a request: %s%s", k->path, strerror(errno),
                          errno == EPIPE || errno == ECONNRESET ? " (connection closed by the daemon)" : "");
    else if ((rc = read_line(k, line, cap, kr_backend_error(b))) == KR_OK)
        rc = parse_reply(k, line, rest, kr_backend_error(b));
    if (rc == KR_ENODEV || rc == KR_ETIMEDOUT) { /* the stream is out of step: stop using it */
        if (k->fd >= 0)
            close(k->fd);
        k->fd = -1;
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}

static int kd_device_count(kr_backend *b, int *count)
{
    *count = impl_of(b)->devices;
    return KR_OK;
}

static int kd_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    char line[KR_KAREUSD_LINE_MAX], *rest;
    int rc = request(b, line, sizeof line, &rest, "CLOCKS %d\n", dev);
    if (rc)
        return rc;
    int cnt = 0, off = 0;
    char *p = rest;
    if (sscanf(p, "%d%n", &cnt, &off) != 1 || cnt < 0 || cnt > KR_GPU_MAX_CLOCKS)
        return kr_error_set(kr_backend_error(b), KR_EBACKEND, "kareusd: CLOCKS: malformed reply");
    if (cnt > cap)
        return kr_error_set(kr_backend_error(b), KR_ERANGE, "kareusd: %d clocks, room for %d", cnt, cap);
    p += off;
    for (int i = 0; i < cnt; i++) {
        if (sscanf(p, "%d%n", &mhz[i], &off) != 1)
            return kr_error_set(kr_backend_error(b), KR_EBACKEND, "kareusd: CLOCKS: malformed reply");
        p += off;
    }
    *n = cnt;
    return KR_OK;
}

static int kd_get_clock(kr_backend *b, int dev, int *cur, int *lmin, int *lmax)
{
    char line[256], *rest;
    int rc = request(b, line, sizeof line, &rest, "GET %d\n", dev);
    if (rc == KR_OK && sscanf(rest, "%d %d %d", cur, lmin, lmax) != 3)
        rc = kr_error_set(kr_backend_error(b), KR_EBACKEND, "kareusd: GET: malformed reply '%s'", rest);
    return rc;
}

static int kd_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    char line[KR_KAREUSD_LINE_MAX], *rest;
    return request(b, line, sizeof line, &rest, "LOCK %d %d %d\n", dev, min_mhz, max_mhz);
}

static int kd_reset_clock(kr_backend *b, int dev)
{
    char line[KR_KAREUSD_LINE_MAX], *rest;
    return request(b, line, sizeof line, &rest, "RESET %d\n", dev);
}

static int read_double(kr_backend *b, const char *what, int dev, double *out)
{
    char line[KR_KAREUSD_LINE_MAX], *rest;
    int rc = request(b, line, sizeof line, &rest, "%s %d\n", what, dev);
    if (rc == KR_OK && sscanf(rest, "%lf", out) != 1)
        rc = kr_error_set(kr_backend_error(b), KR_EBACKEND, "kareusd: %s: malformed reply '%s'", what, rest);
    return rc;
}

static int kd_read_energy(kr_backend *b, int dev, double *energy_j)
{
    return read_double(b, "ENERGY", dev, energy_j);
}

static int kd_read_power(kr_backend *b, int dev, double *power_w)
{
    return read_double(b, "POWER", dev, power_w);
}

static void kd_destroy(void *state)
{
    kd_impl *k = state;
    if (k->fd >= 0)
        close(k->fd); /* the daemon restores this client's devices now */
    pthread_mutex_destroy(&k->mu);
    free(k);
}

static int kd_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);

/* Control only: measure is not offered through the daemon. */
static const kr_control_ops kd_control_ops = {
    .device_count = kd_device_count,
    .supported_clocks = kd_supported_clocks,
    .get_clock = kd_get_clock,
    .set_clock = kd_set_clock,
    .reset_clock = kd_reset_clock,
    .read_energy = kd_read_energy,
    .read_power = kd_read_power,
    .device_info = kd_device_info,
};
static const kr_backend_class kd_class = {
    .name = "kareusd",
    .caps = KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER |
            KR_BACKEND_DEVICE_INFO | KR_BACKEND_SCOPED,
    .control = &kd_control_ops,
    .destroy = kd_destroy,
};


static int kd_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err)
{
    char line[KR_KAREUSD_LINE_MAX], *rest;
    int rc = request(b, line, sizeof line, &rest, "INFO %d\n", dev);
    if (rc)
        return kr_error_set(err, rc, "%s", kr_backend_errmsg(b));
    memset(out, 0, sizeof *out);
    int off = 0;
    char uuid[KR_GPU_UUID_MAX];
    if (sscanf(rest, "%d %d %95s %n", &out->mem_clock_mhz, &out->cur_mem_clock_mhz, uuid, &off) != 3 || off == 0)
        return kr_error_set(err, KR_EBACKEND, "kareusd: INFO: malformed reply '%s'", rest);
    kr__strlcpy(out->uuid, strcmp(uuid, "-") == 0 ? "" : uuid, sizeof out->uuid);
    kr__strlcpy(out->name, rest + off, sizeof out->name);
    return KR_OK;
}

const char *kr_gpuctl_kareusd_default_socket(void)
{
    const char *env = getenv("KAREUSD_SOCKET");
    return env && *env ? env : KR_KAREUSD_SOCKET;
}

int kr_gpuctl_kareusd_create(const char *socket_path, kr_backend **out, kr_error *err)
{
    *out = NULL;
    const char *path = socket_path && *socket_path ? socket_path : kr_gpuctl_kareusd_default_socket();
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return kr_error_set(err, KR_EINVAL, "kareusd socket %s: expected a path shorter than %zu characters", path,
                            sizeof sa.sun_path);
    kd_impl *k = calloc(1, sizeof *k);
    if (k == NULL)
        return kr_error_set(err, KR_ENOMEM, "kareusd: out of memory");
    kr__strlcpy(k->path, path, sizeof k->path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    k->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (k->fd < 0 || connect(k->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        if (k->fd >= 0)
            close(k->fd);
        free(k);
        return kr_error_set(err, e == ENOENT || e == ECONNREFUSED ? KR_ENODEV : KR_EIO,
                            "kareusd socket %s: %s (is kareusd running? see docs/runtime.md, kareusd)", path,
                            strerror(e));
    }
    struct timeval tv = {10, 0};
    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char line[KR_KAREUSD_LINE_MAX], *rest;
    int rc = read_line(k, line, sizeof line, err);
    if (rc == KR_OK)
        rc = parse_reply(k, line, &rest, err);
    if (rc == KR_OK && (sscanf(rest, "kareusd 1 devices %d", &k->devices) != 1 || k->devices < 0))
        rc = kr_error_set(err, KR_EBACKEND, "kareusd %s: unexpected greeting '%s'", path, line);
    if (rc == KR_OK) {
        pthread_mutex_init(&k->mu, NULL);
        rc = kr_backend_create(&kd_class, k, out);
        if (rc) {
            pthread_mutex_destroy(&k->mu);
            kr_error_set(err, rc, "kareusd: out of memory");
        }
    }
    if (rc) {
        close(k->fd);
        free(k);
    }
    return rc;
}
