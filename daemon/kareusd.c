/*
 * kareusd.c — the scoped clock helper: a small root daemon that changes GPU SM clocks on behalf
 * of unprivileged training jobs, within limits an administrator set, and puts them back the moment
 * a job's connection drops — so a job needs no root, and a SIGKILLed job, a crashed one or a
 * killed `kareus run` wrapper never leaves a GPU at its plan's clocks.
 *
 * What it accepts (protocol: src/gpuctl/kareusd.c, the client backend `kareusd[:SOCKET]`):
 * lock the SM clock within the device's supported clocks and the configured range, reset the
 * lock, and read clocks, energy and power — nothing else (no memory clocks, no power limits, no
 * library paths, no files).
 *
 * Security model.
 * - Clients are authorised by the kernel's peer credentials (SO_PEERCRED, SO_PEERGROUPS), never by
 *   anything the client says: root, a uid on the `users` list, or a member of `group` (primary or
 *   supplementary group of the connecting process). The socket itself is 0666 so that a refused
 *   client gets a reason and the refusal is logged; everything else is refused before a request
 *   is read.
 * - Only devices on the `devices` allow-list can be read or changed; LOCK clocks must be
 *   supported by the device and inside [clock_min, clock_max].
 * - One client controls a device at a time (the first to change it); others get KR_EBUSY until it
 *   disconnects. The daemon also holds the device's per-GPU lock file (runtime.h) while a client
 *   controls it, so root `kareus` processes and the daemon never fight over a GPU.
 * - Restore: when a client first changes a device the daemon notes the clocks found then (and
 *   records them in the lock file); when the client's connection closes — exit, crash, SIGKILL —
 *   poll() reports it at once and the daemon restores those clocks before serving anyone else.
 * - Its own death: the lock-file record stays "held", so the next start restores every allowed
 *   device whose record says so (kr_runtime_gpu_restore) before accepting clients; SIGTERM and
 *   SIGINT restore all devices and exit.
 * - Single-threaded poll loop: requests of different clients are serialised, which is what a
 *   GPU's clock controls want anyway; a slow driver call delays other clients, never restores.
 *
 * Configuration: command-line flags, or the same keys in a file (--config FILE, "key = value"
 * lines, '#' comments): socket, backend, group, users, devices, clock_min, clock_max, lock_dir.
 * Logs go to stderr (the journal under systemd), one line per event.
 *
 * Exit status: 0 after SIGTERM/SIGINT; 2 bad configuration; 1 cannot start (socket in use,
 * backend missing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "kareus/gpuctl.h"
#include "kareus/runtime.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13, asm-generic/socket.h */
#endif

#define MAX_CLIENTS 64
#define MAX_DEVS 64
#define MAX_USERS 64

typedef struct config {
    char socket[108];
    char backend[512];
    char lock_dir[400];
    int have_group;
    gid_t group;
    char group_name[64];
    int nusers;
    uid_t users[MAX_USERS];
    int all_devices;
    unsigned long long devices; /* allow-list bit mask when !all_devices */
    int clock_min, clock_max;   /* 0: the device's own range */
} config;

typedef struct client {
    int fd;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    char buf[KR_KAREUSD_LINE_MAX];
    size_t nbuf;
} client;

typedef struct device {
    int nclocks;
    int clocks[KR_GPU_MAX_CLOCKS];
    kr_gpu_device_info info;
    int owner;                 /* client index, -1 when free */
    int base_min, base_max;    /* clocks found when the owner took it: lock (0, 0: none) */
    kr_gpu_lock lock;
} device;

static config g_cfg;
static client g_cl[MAX_CLIENTS];
static device g_dev[MAX_DEVS];
static int g_ndev;
static kr_backend *g_b;
static volatile sig_atomic_t g_stop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kareusd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- configuration ---------------------------------------------------------------------------- */

static int parse_int(const char *where, const char *key, const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno || x < lo || x > hi) {
        fprintf(stderr, "kareusd: %s%s: expected an integer in [%d, %d], found '%s'\n", where, key, lo, hi, v);
        return 2;
    }
    *out = (int)x;
    return 0;
}

/* Applies one key; where is "" for flags or "FILE:LINE: " for the config file. */
static int set_key(const char *where, const char *key, const char *v)
{
    if (strcmp(key, "socket") == 0 || strcmp(key, "backend") == 0 || strcmp(key, "lock_dir") == 0) {
        char *dst = key[0] == 's' ? g_cfg.socket : key[0] == 'b' ? g_cfg.backend : g_cfg.lock_dir;
        size_t cap = key[0] == 's' ? sizeof g_cfg.socket : key[0] == 'b' ? sizeof g_cfg.backend : sizeof g_cfg.lock_dir;
        if (strlen(v) >= cap || *v == '\0') {
            fprintf(stderr, "kareusd: %s%s: expected a value of 1..%zu characters, found %zu\n", where, key, cap - 1,
                    strlen(v));
            return 2;
        }
        memcpy(dst, v, strlen(v) + 1);
        return 0;
    }
    if (strcmp(key, "group") == 0) {
        struct group *gr = getgrnam(v);
        int gid;
        if (gr)
            g_cfg.group = gr->gr_gid;
        else if (strspn(v, "0123456789") == strlen(v) && parse_int(where, key, v, 0, INT_MAX, &gid) == 0)
            g_cfg.group = (gid_t)gid;
        else {
            fprintf(stderr, "kareusd: %sgroup: no group named '%s'\n", where, v);
            return 2;
        }
        g_cfg.have_group = 1;
        snprintf(g_cfg.group_name, sizeof g_cfg.group_name, "%s", v);
        return 0;
    }
    if (strcmp(key, "users") == 0) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", v);
        char *save = NULL;
        for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            struct passwd *pw = getpwnam(t);
            int uid;
            if (g_cfg.nusers >= MAX_USERS) {
                fprintf(stderr, "kareusd: %susers: at most %d\n", where, MAX_USERS);
                return 2;
            }
            if (pw)
                g_cfg.users[g_cfg.nusers++] = pw->pw_uid;
            else if (strspn(t, "0123456789") == strlen(t) && parse_int(where, "users", t, 0, INT_MAX, &uid) == 0)
                g_cfg.users[g_cfg.nusers++] = (uid_t)uid;
            else {
                fprintf(stderr, "kareusd: %susers: no user named '%s'\n", where, t);
                return 2;
            }
        }
        return 0;
    }
    if (strcmp(key, "devices") == 0) {
        g_cfg.all_devices = strcmp(v, "all") == 0;
        g_cfg.devices = 0;
        if (g_cfg.all_devices)
            return 0;
        char buf[512];
        snprintf(buf, sizeof buf, "%s", v);
        char *save = NULL;
        for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            int d;
            if (parse_int(where, "devices", t, 0, MAX_DEVS - 1, &d))
                return 2;
            g_cfg.devices |= 1ull << d;
        }
        return 0;
    }
    if (strcmp(key, "clock_min") == 0)
        return parse_int(where, key, v, 0, 100000, &g_cfg.clock_min);
    if (strcmp(key, "clock_max") == 0)
        return parse_int(where, key, v, 0, 100000, &g_cfg.clock_max);
    fprintf(stderr,
            "kareusd: %sunknown key '%s' (known: socket, backend, group, users, devices, clock_min, clock_max, "
            "lock_dir)\n",
            where, key);
    return 2;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

static int read_config(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "kareusd: config %s: %s\n", path, strerror(errno));
        return 2;
    }
    char line[2048], where[600];
    int ln = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        ln++;
        snprintf(where, sizeof where, "%s:%d: ", path, ln);
        if (strchr(line, '\n') == NULL && !feof(f)) {
            fprintf(stderr, "kareusd: %sline longer than %zu characters\n", where, sizeof line - 2);
            rc = 2;
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL) {
            fprintf(stderr, "kareusd: %sexpected 'key = value', found '%s'\n", where, s);
            rc = 2;
            break;
        }
        *eq = '\0';
        rc = set_key(where, trim(s), trim(eq + 1));
    }
    fclose(f);
    return rc;
}

static const char usage_text[] =
    "usage: kareusd [--config FILE] [--socket PATH] [--backend SPEC] [--group G] [--users U,…]\n"
    "               [--devices LIST|all] [--clock-min MHZ] [--clock-max MHZ] [--lock-dir DIR]\n\n"
    "The scoped clock helper (docs/runtime.md, kareusd): runs as root, lets root, the listed users\n"
    "and members of the group lock SM clocks of the allowed devices within the range, and restores\n"
    "each client's devices as soon as its connection drops.\n"
    "  --socket   default " KR_KAREUSD_SOCKET "\n"
    "  --backend  nvml (default); fake:… for tests\n"
    "  --lock-dir per-GPU lock files (default /run/kareus)\n";

static int parse_args(int argc, char **argv)
{
    snprintf(g_cfg.socket, sizeof g_cfg.socket, "%s", KR_KAREUSD_SOCKET);
    snprintf(g_cfg.backend, sizeof g_cfg.backend, "nvml");
    g_cfg.all_devices = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
            fprintf(stderr, "kareusd: expected --KEY VALUE, found '%s'\n%s", a, usage_text);
            return 2;
        }
        char key[64];
        snprintf(key, sizeof key, "%s", a + 2);
        for (char *c = key; *c; c++)
            if (*c == '-')
                *c = '_';
        const char *v = argv[++i];
        int rc = strcmp(key, "config") == 0 ? read_config(v) : set_key("--", key, v);
        if (rc)
            return rc;
    }
    if (g_cfg.clock_max && g_cfg.clock_min > g_cfg.clock_max) {
        fprintf(stderr, "kareusd: clock_min %d > clock_max %d\n", g_cfg.clock_min, g_cfg.clock_max);
        return 2;
    }
    return 0;
}

/* ---- devices -------------------------------------------------------------------------------- */

static int allowed_dev(int d)
{
    return d >= 0 && d < g_ndev && (g_cfg.all_devices || (g_cfg.devices >> d) & 1);
}

static int supported(const device *v, int mhz)
{
    for (int i = 0; i < v->nclocks; i++)
        if (v->clocks[i] == mhz)
            return 1;
    return 0;
}

/* Puts a device back to the clocks found when its owner took it, then frees it. */
static void release_dev(int d, const char *why)
{
    device *v = &g_dev[d];
    client *c = &g_cl[v->owner];
    double t0 = now_s();
    int rc = v->base_max > 0 ? kr_backend_set_clock(g_b, d, v->base_min, v->base_max) : kr_backend_reset_clock(g_b, d);
    double dt_ms = (now_s() - t0) * 1e3;
    if (rc) {
        logf_("device %d: restoring the clocks found for pid %ld FAILED (%s): %s; the lock record stays held, "
              "`kareus gpu restore` or a restart retries",
              d, (long)c->pid, why, kr_backend_errmsg(g_b));
        v->lock.writable = 0;
    } else if (v->base_max > 0)
        logf_("device %d: %s (pid %ld uid %ld): restored the lock [%d, %d] MHz found (%.2f ms)", d, why, (long)c->pid,
              (long)c->uid, v->base_min, v->base_max, dt_ms);
    else
        logf_("device %d: %s (pid %ld uid %ld): lock removed, as found (%.2f ms)", d, why, (long)c->pid, (long)c->uid,
              dt_ms);
    kr_runtime_gpu_unlock(&v->lock);
    v->owner = -1;
}

/* Makes client ci the device's owner if it is free; KR_OK, or an error reply written into msg. */
static int claim_dev(int ci, int d, char *msg, size_t cap)
{
    device *v = &g_dev[d];
    if (v->owner == ci)
        return KR_OK;
    if (v->owner >= 0) {
        snprintf(msg, cap, "ERR %d device %d is controlled by another client (pid %ld) until it disconnects\n",
                 KR_EBUSY, d, (long)g_cl[v->owner].pid);
        return KR_EBUSY;
    }
    kr_error err = {0};
    int rc = v->info.uuid[0] ? kr_runtime_gpu_lock(g_cfg.lock_dir[0] ? g_cfg.lock_dir : NULL, v->info.uuid, d,
                                                   v->info.name, &v->lock, &err)
                             : KR_OK;
    if (rc) {
        snprintf(msg, cap, "ERR %d %s\n", rc, err.msg);
        return rc;
    }
    int cur = 0, lmin = 0, lmax = 0;
    if ((rc = kr_backend_get_clock(g_b, d, &cur, &lmin, &lmax))) {
        snprintf(msg, cap, "ERR %d reading the clocks of device %d: %s\n", rc, d, kr_backend_errmsg(g_b));
        kr_runtime_gpu_unlock(&v->lock);
        return rc;
    }
    if (v->lock.stale) { /* a holder died before restoring: what it found is the truth */
        lmin = v->lock.rec_min_mhz;
        lmax = v->lock.rec_max_mhz;
    }
    v->base_min = lmin;
    v->base_max = lmax;
    kr_runtime_gpu_lock_note(&v->lock, lmin, lmax, cur);
    v->owner = ci;
    return KR_OK;
}

/* ---- requests ------------------------------------------------------------------------------- */

/* Handles one request line of client ci; writes the reply into out. */
static void handle(int ci, const char *line, char *out, size_t cap)
{
    client *c = &g_cl[ci];
    char op[16];
    int d = -1, a = 0, b = 0, off = 0;
    int n = sscanf(line, "%15s %d %d %d%n", op, &d, &a, &b, &off);
    if (n < 2) {
        snprintf(out, cap, "ERR %d expected 'OP DEVICE …', found '%.100s'\n", KR_EINVAL, line);
        return;
    }
    if (!allowed_dev(d)) {
        logf_("refused %s from pid %ld uid %ld: device %d is not on the allow-list", op, (long)c->pid, (long)c->uid, d);
        snprintf(out, cap, "ERR %d device %d is not on kareusd's allow-list\n", KR_EPERM, d);
        return;
    }
    device *v = &g_dev[d];
    int rc;
    if (strcmp(op, "CLOCKS") == 0) {
        size_t len = (size_t)snprintf(out, cap, "OK %d", v->nclocks);
        for (int i = 0; i < v->nclocks && len + 16 < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, " %d", v->clocks[i]);
        snprintf(out + len, cap - len, "\n");
    } else if (strcmp(op, "GET") == 0) {
        int cur = 0, lmin = 0, lmax = 0;
        if ((rc = kr_backend_get_clock(g_b, d, &cur, &lmin, &lmax)))
            snprintf(out, cap, "ERR %d %s\n", rc, kr_backend_errmsg(g_b));
        else
            snprintf(out, cap, "OK %d %d %d\n", cur, lmin, lmax);
    } else if (strcmp(op, "ENERGY") == 0 || strcmp(op, "POWER") == 0) {
        double x = 0;
        rc = op[0] == 'E' ? kr_backend_read_energy(g_b, d, &x) : kr_backend_read_power(g_b, d, &x);
        if (rc)
            snprintf(out, cap, "ERR %d %s\n", rc, kr_backend_errmsg(g_b));
        else
            snprintf(out, cap, "OK %.17g\n", x);
    } else if (strcmp(op, "INFO") == 0) {
        snprintf(out, cap, "OK %d %d %s %s\n", v->info.mem_clock_mhz, v->info.cur_mem_clock_mhz,
                 v->info.uuid[0] ? v->info.uuid : "-", v->info.name);
    } else if (strcmp(op, "LOCK") == 0) {
        if (n != 4) {
            snprintf(out, cap, "ERR %d LOCK: expected 'LOCK DEVICE MIN MAX'\n", KR_EINVAL);
            return;
        }
        int lo = g_cfg.clock_min, hi = g_cfg.clock_max;
        /* Putting back the lock the client found is always allowed, whatever the range. */
        int found = v->owner == ci && v->base_max > 0 && a == v->base_min && b == v->base_max;
        if (!found && (a > b || !supported(v, a) || !supported(v, b) || (lo && a < lo) || (hi && b > hi))) {
            char why[160];
            if (a > b)
                snprintf(why, sizeof why, "min %d > max %d", a, b);
            else if (!supported(v, a) || !supported(v, b))
                snprintf(why, sizeof why, "not a supported SM clock of device %d (%d..%d MHz)", d,
                         v->nclocks ? v->clocks[v->nclocks - 1] : 0, v->nclocks ? v->clocks[0] : 0);
            else
                snprintf(why, sizeof why, "outside the allowed range [%d, %d] MHz", lo ? lo : 0, hi ? hi : 0);
            logf_("refused LOCK %d [%d, %d] from pid %ld uid %ld: %s", d, a, b, (long)c->pid, (long)c->uid, why);
            snprintf(out, cap, "ERR %d LOCK [%d, %d] MHz: %s\n", KR_ERANGE, a, b, why);
            return;
        }
        if (claim_dev(ci, d, out, cap))
            return;
        if ((rc = kr_backend_set_clock(g_b, d, a, b)))
            snprintf(out, cap, "ERR %d %s\n", rc, kr_backend_errmsg(g_b));
        else
            snprintf(out, cap, "OK\n");
    } else if (strcmp(op, "RESET") == 0) {
        if (claim_dev(ci, d, out, cap))
            return;
        if ((rc = kr_backend_reset_clock(g_b, d)))
            snprintf(out, cap, "ERR %d %s\n", rc, kr_backend_errmsg(g_b));
        else
            snprintf(out, cap, "OK\n");
    } else {
        logf_("refused unknown request '%.40s' from pid %ld uid %ld", op, (long)c->pid, (long)c->uid);
        snprintf(out, cap, "ERR %d unknown request '%.40s' (CLOCKS, GET, LOCK, RESET, ENERGY, POWER, INFO)\n",
                 KR_EINVAL, op);
    }
}

/* ---- clients -------------------------------------------------------------------------------- */

static void drop_client(int ci, const char *why)
{
    for (int d = 0; d < g_ndev; d++)
        if (g_dev[d].owner == ci)
            release_dev(d, why);
    close(g_cl[ci].fd);
    g_cl[ci].fd = -1;
}

/* Why this peer may not use the daemon ("" if it may). */
static void authorise(int fd, const struct ucred *cr, char *why, size_t cap)
{
    why[0] = '\0';
    if (cr->uid == 0)
        return;
    for (int i = 0; i < g_cfg.nusers; i++)
        if (g_cfg.users[i] == cr->uid)
            return;
    if (g_cfg.have_group) {
        if (cr->gid == g_cfg.group)
            return;
        gid_t groups[256];
        socklen_t len = sizeof groups;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
            for (size_t i = 0; i < len / sizeof groups[0]; i++)
                if (groups[i] == g_cfg.group)
                    return;
        snprintf(why, cap, "uid %ld is not root, not on the users list and not in group %s (gid %ld)", (long)cr->uid,
                 g_cfg.group_name, (long)g_cfg.group);
        return;
    }
    snprintf(why, cap, "uid %ld is not root and not on the users list (no group configured)", (long)cr->uid);
}

static void accept_client(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t len = sizeof cr;
    char why[256] = "", msg[400];
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
        snprintf(why, sizeof why, "no peer credentials: %s", strerror(errno));
        cr.pid = 0;
        cr.uid = cr.gid = (uid_t)-1;
    } else
        authorise(fd, &cr, why, sizeof why);
    int slot = -1;
    for (int i = 0; i < MAX_CLIENTS && slot < 0 && !why[0]; i++)
        if (g_cl[i].fd < 0)
            slot = i;
    if (!why[0] && slot < 0)
        snprintf(why, sizeof why, "%d clients already connected", MAX_CLIENTS);
    if (why[0]) {
        logf_("refused client pid %ld uid %ld gid %ld: %s", (long)cr.pid, (long)cr.uid, (long)cr.gid, why);
        int n = snprintf(msg, sizeof msg, "ERR %d refused by kareusd: %s\n", KR_EPERM, why);
        if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            /* The refusal is logged; the client sees the connection close. */
        }
        close(fd);
        return;
    }
    g_cl[slot] = (client){.fd = fd, .pid = cr.pid, .uid = cr.uid, .gid = cr.gid};
    logf_("client pid %ld uid %ld gid %ld connected", (long)cr.pid, (long)cr.uid, (long)cr.gid);
    int n = snprintf(msg, sizeof msg, "OK kareusd 1 devices %d\n", g_ndev);
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
        drop_client(slot, "greeting failed");
}

/* Reads what client ci sent and answers each complete line; drops it on EOF or error. */
static void serve_client(int ci)
{
    client *c = &g_cl[ci];
    ssize_t n = recv(c->fd, c->buf + c->nbuf, sizeof c->buf - c->nbuf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        drop_client(ci, "client disconnected");
        return;
    }
    c->nbuf += (size_t)n;
    char *nl;
    while (c->fd >= 0 && (nl = memchr(c->buf, '\n', c->nbuf)) != NULL) {
        *nl = '\0';
        char reply[KR_KAREUSD_LINE_MAX];
        handle(ci, c->buf, reply, sizeof reply);
        size_t used = (size_t)(nl - c->buf) + 1;
        memmove(c->buf, nl + 1, c->nbuf - used);
        c->nbuf -= used;
        size_t len = strlen(reply);
        if (send(c->fd, reply, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
            drop_client(ci, "client stopped reading");
    }
    if (c->fd >= 0 && c->nbuf == sizeof c->buf) {
        logf_("refused client pid %ld uid %ld: request longer than %zu bytes", (long)c->pid, (long)c->uid,
              sizeof c->buf);
        drop_client(ci, "request too long");
    }
}

/* ---- start-up and the loop -------------------------------------------------------------------- */

static int open_devices(void)
{
    kr_error err = {0};
    if (kr_backend_open(g_cfg.backend, NULL, &g_b, &err)) {
        logf_("backend %s: %s", g_cfg.backend, err.msg);
        return 1;
    }
    if (kr_backend_device_count(g_b, &g_ndev)) {
        logf_("counting devices: %s", kr_backend_errmsg(g_b));
        return 1;
    }
    if (g_ndev > MAX_DEVS)
        g_ndev = MAX_DEVS;
    for (int d = 0; d < g_ndev; d++) {
        device *v = &g_dev[d];
        v->owner = -1;
        v->lock.fd = -1;
        if (!allowed_dev(d))
            continue;
        if (kr_backend_device_info(g_b, d, &v->info, &err) ||
            kr_backend_supported_clocks(g_b, d, v->clocks, KR_GPU_MAX_CLOCKS, &v->nclocks)) {
            logf_("device %d: %s", d, err.msg[0] ? err.msg : kr_backend_errmsg(g_b));
            return 1;
        }
        /* A previous kareusd (or kareus process) that died controlling this device left its
         * record "held": put back the clocks it found before serving anyone. */
        int restored = 0;
        err.msg[0] = '\0';
        int rc = kr_runtime_gpu_restore(g_b, d, g_cfg.lock_dir[0] ? g_cfg.lock_dir : NULL, &restored, &err);
        if (rc)
            logf_("device %d: at start: %s", d, err.msg);
        else if (restored)
            logf_("at start: %s", err.msg);
    }
    return 0;
}

static int open_socket(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(g_cfg.socket) >= sizeof sa.sun_path) {
        logf_("socket %s: path too long", g_cfg.socket);
        return -1;
    }
    memcpy(sa.sun_path, g_cfg.socket, strlen(g_cfg.socket) + 1);
    struct stat st;
    if (lstat(g_cfg.socket, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            logf_("socket %s: exists and is not a socket; not touching it", g_cfg.socket);
            return -1;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            logf_("socket %s: another kareusd is running", g_cfg.socket);
            return -1;
        }
        unlink(g_cfg.socket);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(g_cfg.socket, 0666) != 0 ||
        listen(fd, 16) != 0) {
        logf_("socket %s: %s", g_cfg.socket, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void on_stop(int sig)
{
    g_stop = sig;
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    int rc = parse_args(argc, argv);
    if (rc)
        return rc;
    for (int i = 0; i < MAX_CLIENTS; i++)
        g_cl[i].fd = -1;
    if (open_devices()) {
        kr_backend_destroy(g_b);
        return 1;
    }
    int lfd = open_socket();
    if (lfd < 0) {
        kr_backend_destroy(g_b);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    logf_("listening on %s (backend %s, %d device%s, %s%s, clocks %d..%d MHz)", g_cfg.socket,
          kr_backend_name(g_b), g_ndev, g_ndev == 1 ? "" : "s", g_cfg.have_group ? "group " : "no group",
          g_cfg.have_group ? g_cfg.group_name : "", g_cfg.clock_min, g_cfg.clock_max);
    while (!g_stop) {
        struct pollfd pf[MAX_CLIENTS + 1];
        int idx[MAX_CLIENTS + 1], np = 0;
        pf[np] = (struct pollfd){lfd, POLLIN, 0};
        idx[np++] = -1;
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (g_cl[i].fd >= 0) {
                pf[np] = (struct pollfd){g_cl[i].fd, POLLIN, 0};
                idx[np++] = i;
            }
        if (poll(pf, (nfds_t)np, -1) < 0)
            continue; /* EINTR: g_stop is checked */
        /* Clients first, so that a disconnect restores before a new client can claim the GPU. */
        for (int k = 1; k < np; k++)
            if (pf[k].revents && g_cl[idx[k]].fd >= 0)
                serve_client(idx[k]);
        if (pf[0].revents & POLLIN)
            accept_client(lfd);
    }
    logf_("signal %d: restoring every device a client controls, then exiting", (int)g_stop);
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (g_cl[i].fd >= 0)
            drop_client(i, "kareusd stopping");
    close(lfd);
    unlink(g_cfg.socket);
    kr_backend_destroy(g_b);
    return 0;
}
