/*
 * safety.c — what keeps a GPU from being left with the wrong clocks: the per-GPU advisory lock
 * (one controlling process per GPU) with the clocks its holder found, crash recovery from that
 * record, and the restore on exit and on the signals that end a process.
 *
 * Design.
 * - Lock: flock(LOCK_EX | LOCK_NB) on LOCK_DIR/kareus-gpu-UUID.lock. flock locks belong to the
 *   open file description, so a second open of the same GPU conflicts even inside one process,
 *   and the lock vanishes with the process however it dies. LOCK_DIR defaults to /run/kareus
 *   (root) or the user's $XDG_RUNTIME_DIR/kareus, directories no other user can write, so nobody
 *   can plant a file there or take the lock first. The file is opened with O_NOFOLLOW and must be
 *   a regular file with one link; it is rewritten only when empty or recognised as ours.
 * - The record (text, LOCK_MAGIC first) names the holder's pid, "state held|free" and the clocks
 *   the holder found before changing any. It outlives the holder: a record still "held" after
 *   the flock was released means the holder died (SIGKILL, a crash) before restoring, and the
 *   next holder — kr_runtime_gpu_restore, `kareus run` after its command, kareusd at start, or a
 *   new runtime — knows which clocks to put back. The file is never deleted (deleting lock files
 *   races with processes that just opened them).
 * - Signals and exit carry no user pointer, so restoring from them needs a process-wide registry
 *   of open runtimes. It is the second (and last) piece of process-wide mutable state in
 *   libkareus besides the NVML symbol table, and exists only because POSIX handlers cannot be
 *   given a context. Registration (open/close) takes a mutex; the handlers only read atomics:
 *   each slot holds an atomic pointer and a busy count, close clears the pointer and waits for the
 *   count to drop to zero before freeing the runtime.
 * - Signals handled: SIGINT and SIGTERM always (chained); SIGHUP, SIGQUIT, SIGPIPE, SIGABRT and
 *   the faults only while their disposition is the default one (see g_sigs). SIGKILL and _exit
 *   cannot be handled in-process: the lock record, `kareus run` and kareusd cover them.
 * - A handler asks each registered runtime of this process (getpid() equal to the opener's: a
 *   fork()ed DataLoader worker must not touch its parent's GPU) to restore, by bumping an atomic
 *   and writing its eventfd — both async-signal-safe — and polls with nanosleep until the worker
 *   says it is done, at most RT_SIGNAL_WAIT_S. Then it chains to the handler installed before
 *   ours (sa_handler or sa_sigaction), ignores the signal if it was ignored, or restores the
 *   default action and re-raises it so the process ends with the status its parent expects.
 * - The handlers are installed when the first runtime that wants them registers, and the
 *   previous ones are put back when the last one closes (unless someone replaced ours since).
 *   The atexit handler is registered once (pthread_once) and does nothing when no runtime is open.
 */
#include "runtime/runtime_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the advisory lock ---------------------------------------------------------------------- */

#define LOCK_MAGIC "kareus-gpu-lock 1\n"

/* Checks that an existing directory is safe to keep lock files in: a real directory (not a
 * symbolic link), owned by us, writable by nobody else. */
static int check_private_dir(const char *dir, mode_t others_mask, kr_error *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return kr_error_set(err, KR_EIO, "lock directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return kr_error_set(err, KR_EIO, "lock directory %s: expected a directory, found %s", dir,
                            S_ISLNK(st.st_mode) ? "a symbolic link" : "another kind of file");
    if (st.st_uid != geteuid() || (st.st_mode & others_mask))
        return kr_error_set(err, KR_EPERM,
                            "lock directory %s: expected a directory owned by uid %ld and writable by no one else, found "
                            "owner %ld, mode %04o (remove it, or choose a lock directory)",
                            dir, (long)geteuid(), (long)st.st_uid, (unsigned)(st.st_mode & 07777));
    return KR_OK;
}

/* Creates dir with mode if missing, then checks it. */
static int private_dir(const char *dir, mode_t mode, mode_t others_mask, kr_error *err)
{
    if (mkdir(dir, mode) != 0 && errno != EEXIST)
        return kr_error_set(err, KR_EIO, "lock directory %s: %s", dir, strerror(errno));
    return check_private_dir(dir, others_mask, err);
}

int kr_runtime_lock_dir(char *buf, size_t cap, kr_error *err)
{
    int n;
    if (geteuid() == 0) {
        if (mkdir("/run", 0755) != 0 && errno != EEXIST)
            return kr_error_set(err, KR_EIO, "lock directory /run: %s", strerror(errno));
        n = snprintf(buf, cap, "%s", "/run/kareus");
        if (n < 0 || (size_t)n >= cap)
            return kr_error_set(err, KR_EINVAL, "lock directory: buffer too small");
        return private_dir(buf, 0755, 0022, err);
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (xdg && xdg[0] == '/' && lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
        n = snprintf(buf, cap, "%s/kareus", xdg);
    else
        n = snprintf(buf, cap, "/tmp/kareus-%ld", (long)geteuid());
    if (n < 0 || (size_t)n >= cap)
        return kr_error_set(err, KR_EINVAL, "lock directory: expected a path shorter than %zu characters", cap);
    return private_dir(buf, 0700, 0077, err);
}

/* Parses a lock file's text into out's record fields. Returns 1 if recognised (empty, ours, or
 * the pid-only file of earlier versions), 0 if not. */
static int parse_record(const char *text, size_t len, kr_gpu_lock *out)
{
    if (len == 0)
        return 1;
    size_t i = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    if (i > 0 && (i == len || (text[i] == '\n' && i + 1 == len))) {
        out->prev_pid = atol(text); /* an earlier version's lock: a pid, no clocks */
        return 1;
    }
    size_t m = strlen(LOCK_MAGIC);
    if (len < m || memcmp(text, LOCK_MAGIC, m) != 0)
        return 0;
    char line[160];
    for (const char *p = text + m; p < text + len;) {
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        if (l < sizeof line) {
            memcpy(line, p, l);
            line[l] = '\0';
            long v;
            int a, b;
            if (sscanf(line, "pid %ld", &v) == 1)
                out->prev_pid = v;
            else if (strcmp(line, "state held") == 0)
                out->stale = 1;
            else if (sscanf(line, "found_lock %d %d", &a, &b) == 2 && a >= 0 && b >= a && b < 1000000) {
                out->rec_min_mhz = a;
                out->rec_max_mhz = b;
            } else if (sscanf(line, "found_cur %d", &a) == 1 && a >= 0 && a < 1000000)
                out->rec_cur_mhz = a;
        }
        p += l + 1;
    }
    return 1;
}

/* Rewrites our lock file: the record first, then the tail cut off (never an empty file). */
static void write_record(const kr_gpu_lock *l, const char *state, int lmin, int lmax, int cur)
{
    char text[512];
    int n = snprintf(text, sizeof text, LOCK_MAGIC "pid %ld\nuuid %s\nstate %s\nfound_lock %d %d\nfound_cur %d\n",
                     (long)getpid(), l->uuid, state, lmin, lmax, cur);
    if (n <= 0 || (size_t)n >= sizeof text || pwrite(l->fd, text, (size_t)n, 0) != n || ftruncate(l->fd, n) != 0 ||
        fdatasync(l->fd) != 0) {
        /* A lost record only loses crash recovery's knowledge of the clocks; the flock is held. */
    }
}

int kr_runtime_gpu_lock(const char *lock_dir, const char *uuid, int device, const char *name, kr_gpu_lock *out,
                        kr_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    char dir[400];
    if (lock_dir == NULL || *lock_dir == '\0') {
        int rc = kr_runtime_lock_dir(dir, sizeof dir, err);
        if (rc)
            return rc;
    } else if (kr__strlcpy(dir, lock_dir, sizeof dir))
        return kr_error_set(err, KR_EINVAL, "lock directory %s: expected at most %zu characters", lock_dir,
                            sizeof dir - 1);
    kr__strlcpy(out->uuid, uuid, sizeof out->uuid);
    char safe[KR_GPU_UUID_MAX];
    kr__strlcpy(safe, uuid, sizeof safe);
    for (char *c = safe; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
            *c = '_';
    snprintf(out->path, sizeof out->path, "%s/kareus-gpu-%s.lock", dir, safe);
    /* O_NOFOLLOW: a planted symbolic link is refused, never followed; O_NONBLOCK: a planted FIFO
     * does not hang the open. Created 0644: readable for the busy message, never world-writable. */
    const int flags = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    int fd = open(out->path, O_RDWR | O_CREAT | flags, 0644);
    if (fd < 0 && errno == EACCES) /* made by another user: locking needs no write access */
        fd = open(out->path, O_RDONLY | flags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return kr_error_set(err, KR_EPERM, "lock file %s: is a symbolic link; refusing to follow it (remove it)",
                                out->path);
        return kr_error_set(err, KR_EIO, "lock file %s: %s (choose another lock directory)", out->path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        close(fd);
        return kr_error_set(err, KR_EPERM, "lock file %s: expected a regular file with one link; not touching it",
                            out->path);
    }
    /* Our record is written only into a file of ours; another user's file is only locked. */
    int writable = (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR && st.st_uid == geteuid();
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char text[512];
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        kr_gpu_lock rec = {0};
        parse_record(text, n > 0 ? (size_t)n : 0, &rec);
        close(fd);
        char pid[48] = "";
        if (rec.prev_pid > 0)
            snprintf(pid, sizeof pid, " (pid %ld)", rec.prev_pid);
        return kr_error_set(err, e == EWOULDBLOCK ? KR_EBUSY : KR_EIO,
                            "GPU %s (device %d, %s) is controlled by another Kareus process%s (lock %s): one process "
                            "per GPU may change its clocks; open read-only to measure only",
                            uuid, device, name ? name : "?", pid, out->path);
    }
    char text[4096];
    ssize_t n = pread(fd, text, sizeof text, 0);
    kr_gpu_lock rec = {0};
    if (n < 0 || (size_t)n >= sizeof text || !parse_record(text, (size_t)n, &rec)) {
        close(fd);
        return kr_error_set(err, KR_EPERM,
                            "lock file %s: not a Kareus lock file (its content is not recognised); not touching it "
                            "(remove it, or choose another lock directory)",
                            out->path);
    }
    if (writable && (st.st_mode & 07777) != 0644 && fchmod(fd, 0644) != 0) {
        /* An earlier version's 0666 file stays as it was; the lock itself works. */
    }
    out->fd = fd;
    out->writable = writable;
    out->prev_pid = rec.prev_pid;
    out->stale = rec.stale;
    out->rec_min_mhz = rec.rec_min_mhz;
    out->rec_max_mhz = rec.rec_max_mhz;
    out->rec_cur_mhz = rec.rec_cur_mhz;
    if (writable) /* held, clocks not yet known: recovery resets rather than guessing */
        write_record(out, "held", out->stale ? out->rec_min_mhz : 0, out->stale ? out->rec_max_mhz : 0,
                     out->stale ? out->rec_cur_mhz : 0);
    return KR_OK;
}

void kr_runtime_gpu_lock_note(kr_gpu_lock *lock, int lmin, int lmax, int cur)
{
    if (lock->fd >= 0 && lock->writable)
        write_record(lock, "held", lmin, lmax, cur);
}

void kr_runtime_gpu_unlock(kr_gpu_lock *lock)
{
    if (lock->fd >= 0) {
        if (lock->writable)
            write_record(lock, "free", 0, 0, 0);
        close(lock->fd); /* releases the flock */
        lock->fd = -1;
    }
}

int kr_runtime_gpu_restore(kr_backend *b, int dev, const char *lock_dir, int *restored, kr_error *err)
{
    *restored = 0;
    kr_gpu_device_info info;
    int rc = kr_backend_device_info(b, dev, &info, err);
    if (rc)
        return rc;
    if (info.uuid[0] == '\0')
        return KR_OK; /* no identity, no lock file: nothing can have been left behind */
    kr_gpu_lock l;
    if ((rc = kr_runtime_gpu_lock(lock_dir, info.uuid, dev, info.name, &l, err)))
        return rc;
    if (l.stale) {
        rc = l.rec_max_mhz > 0 ? kr_backend_set_clock(b, dev, l.rec_min_mhz, l.rec_max_mhz)
                               : kr_backend_reset_clock(b, dev);
        if (rc) {
            kr_error_set(err, rc, "device %d (%s): restoring the clocks recorded in %s by pid %ld: %s", dev, info.name,
                         l.path, l.prev_pid, kr_backend_errmsg(b));
            close(l.fd); /* keep the record "held": a later attempt still knows the clocks */
            return rc;
        }
        *restored = 1;
        if (err) {
            if (l.rec_max_mhz > 0)
                kr_error_set(err, KR_OK, "device %d (%s): restored the lock [%d, %d] MHz found by pid %ld (%s)", dev,
                             info.name, l.rec_min_mhz, l.rec_max_mhz, l.prev_pid, l.path);
            else
                kr_error_set(err, KR_OK, "device %d (%s): lock removed (pid %ld found none; %s)", dev, info.name,
                             l.prev_pid, l.path);
        }
    }
    kr_runtime_gpu_unlock(&l);
    return KR_OK;
}

int kr__rt_lock(kr_runtime *rt, const char *dir, int explicit_restore, kr_error *err)
{
    int rc = kr_runtime_gpu_lock(dir, rt->info.uuid, rt->device, rt->info.name, &rt->lock, err);
    if (rc == KR_OK) {
        if (rt->lock.stale && !explicit_restore) {
            /* The clocks read at open are the dead holder's; the ones it found are the truth. */
            rt->restore_min = rt->lock.rec_min_mhz;
            rt->restore_max = rt->lock.rec_max_mhz;
            if (rt->lock.rec_cur_mhz > 0)
                rt->found_cur = rt->lock.rec_cur_mhz;
            rt->dirty = 1; /* the GPU may still run at the dead holder's clocks: close restores */
        }
        kr_runtime_gpu_lock_note(&rt->lock, rt->restore_min, rt->restore_max, rt->found_cur);
        rt->lock_fd = rt->lock.fd;
        kr__strlcpy(rt->lock_path, rt->lock.path, sizeof rt->lock_path);
    }
    return rc;
}

void kr__rt_unlock(kr_runtime *rt)
{
    if (rt->lock_fd >= 0)
        kr_runtime_gpu_unlock(&rt->lock);
    rt->lock_fd = -1;
}

/* ---- the registry, signal handlers and atexit ------------------------------------------------ */

#define REG_SLOTS 32

/* The signals we restore on. The first two are always handled (and chained to whatever was
 * installed before); the others only while their disposition is the default one, which for each
 * of them ends the process — a program that handles SIGHUP to reload its settings, or ignores
 * SIGPIPE, keeps its behaviour and its clocks. The synchronous faults (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) and SIGABRT are best effort: the handler only touches atomics and an eventfd and waits
 * for the worker thread, which still works unless the crash broke the heap it shares. */
static const int g_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGS ((int)(sizeof g_sigs / sizeof g_sigs[0]))
#define NSIGS_ALWAYS 2

static struct registry {
    pthread_mutex_t mu;                    /* open/close only; never taken by handlers */
    _Atomic(kr_runtime *) slot[REG_SLOTS]; /* registered runtimes */
    _Atomic int busy[REG_SLOTS];           /* handlers using the slot right now */
    int nsignal_users;                     /* registered runtimes that want signal handlers */
    struct sigaction old[NSIGS];           /* handlers in place before ours */
    int installed[NSIGS];                  /* 1 where ours was installed */
} g_reg = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_atexit_once = PTHREAD_ONCE_INIT;

/* Asks every runtime of this process to restore its clocks, waiting for each (signal-safe). */
static void restore_all(int sig)
{
    pid_t me = getpid();
    for (int i = 0; i < REG_SLOTS; i++) {
        atomic_fetch_add(&g_reg.busy[i], 1);
        kr_runtime *rt = atomic_load(&g_reg.slot[i]);
        int wanted = rt != NULL && rt->owner_pid == me &&
                     (sig ? !(rt->flags & KR_RUNTIME_NO_SIGNALS) : !(rt->flags & KR_RUNTIME_NO_ATEXIT));
        if (wanted && !atomic_load(&rt->restore_done)) {
            atomic_store(&rt->restore_signal, sig);
            atomic_fetch_add(&rt->restore_req, 1);
            kr__rt_wake(rt);
            struct timespec ms = {0, 1000000};
            for (int k = 0; k < (int)(RT_SIGNAL_WAIT_S * 1000) && !atomic_load(&rt->restore_done); k++)
                nanosleep(&ms, NULL);
        }
        atomic_fetch_sub(&g_reg.busy[i], 1);
    }
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    restore_all(sig);
    const struct sigaction *old = NULL;
    for (int i = 0; i < NSIGS; i++)
        if (g_sigs[i] == sig)
            old = &g_reg.old[i];
    if (old && (old->sa_flags & SA_SIGINFO)) {
        if (old->sa_sigaction)
            old->sa_sigaction(sig, info, uctx);
    } else if (old == NULL || old->sa_handler == SIG_DFL) {
        /* Default action: terminate with this signal once the handler returns (the signal is
         * blocked while we run, so raise() leaves it pending until then; a fault re-executes the
         * faulting instruction and ends the process the same way). */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig);
    } else if (old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    }
    errno = saved_errno;
}

static void on_exit_restore(void)
{
    restore_all(0);
}

static void register_atexit(void)
{
    if (atexit(on_exit_restore) != 0) {
        /* atexit fails only when its table is full; close and the signal handlers still restore. */
    }
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIGS; i++) {
        g_reg.installed[i] = 0;
        if (sigaction(g_sigs[i], NULL, &g_reg.old[i]) != 0)
            continue;
        int dfl = !(g_reg.old[i].sa_flags & SA_SIGINFO) && g_reg.old[i].sa_handler == SIG_DFL;
        if (i < NSIGS_ALWAYS || dfl)
            g_reg.installed[i] = sigaction(g_sigs[i], &sa, NULL) == 0;
    }
}

/* Puts the previous handlers back, but only where ours is still the one installed. */
static void uninstall_handlers(void)
{
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction cur;
        if (g_reg.installed[i] && sigaction(g_sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_signal)
            sigaction(g_sigs[i], &g_reg.old[i], NULL);
        g_reg.installed[i] = 0;
    }
}

int kr__rt_register(kr_runtime *rt, kr_error *err)
{
    rt->registry_slot = -1;
    if ((rt->flags & KR_RUNTIME_NO_SIGNALS) && (rt->flags & KR_RUNTIME_NO_ATEXIT))
        return KR_OK;
    if (!(rt->flags & KR_RUNTIME_NO_ATEXIT))
        pthread_once(&g_atexit_once, register_atexit);
    pthread_mutex_lock(&g_reg.mu);
    int slot = -1;
    for (int i = 0; i < REG_SLOTS && slot < 0; i++)
        if (atomic_load(&g_reg.slot[i]) == NULL)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&g_reg.mu);
        return kr_error_set(err, KR_EBUSY, "runtime: at most %d runtimes may be open in one process", REG_SLOTS);
    }
    if (!(rt->flags & KR_RUNTIME_NO_SIGNALS) && g_reg.nsignal_users++ == 0)
        install_handlers();
    atomic_store(&g_reg.slot[slot], rt);
    rt->registry_slot = slot;
    pthread_mutex_unlock(&g_reg.mu);
    return KR_OK;
}

void kr__rt_unregister(kr_runtime *rt)
{
    int slot = rt->registry_slot;
    if (slot < 0)
        return;
    pthread_mutex_lock(&g_reg.mu);
    atomic_store(&g_reg.slot[slot], NULL);
    /* A handler that loaded the pointer before we cleared it finishes before we go on. */
    while (atomic_load(&g_reg.busy[slot]) != 0) {
        struct timespec us = {0, 100000};
        nanosleep(&us, NULL);
    }
    if (!(rt->flags & KR_RUNTIME_NO_SIGNALS) && --g_reg.nsignal_users == 0)
        uninstall_handlers();
    pthread_mutex_unlock(&g_reg.mu);
    rt->registry_slot = -1;
}
