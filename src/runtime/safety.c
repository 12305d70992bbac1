/*
 * safety.c — what keeps a GPU from being left with the wrong clocks: the per-GPU advisory lock
 * (one controlling process per GPU), and the restore on SIGINT, SIGTERM and exit.
 *
 * Design.
 * - Lock: flock(LOCK_EX | LOCK_NB) on LOCK_DIR/kareus-gpu-UUID.lock. flock locks belong to the
 *   open file description, so a second open of the same GPU conflicts even inside one process,
 *   and the lock vanishes with the process however it dies. The holder's pid is written into the
 *   file for the message the next process gets. The file is never deleted (deleting lock files
 *   races with processes that just opened them).
 * - Signals and exit carry no user pointer, so restoring from them needs a process-wide registry
 *   of open runtimes. It is the second (and last) piece of process-wide mutable state in
 *   libkareus besides the NVML symbol table, and exists only because POSIX handlers cannot be
 *   given a context. Registration (open/close) takes a mutex; the handlers only read atomics:
 *   each slot holds an atomic pointer and a busy count, close clears the pointer and waits for the
 *   count to drop to zero before freeing the runtime.
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

int kr_runtime_gpu_lock(const char *lock_dir, const char *uuid, int device, const char *name, kr_gpu_lock *out,
                        kr_error *err)
{
    out->fd = -1;
    char safe[KR_GPU_UUID_MAX];
    kr__strlcpy(safe, uuid, sizeof safe);
    for (char *c = safe; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
            *c = '_';
    snprintf(out->path, sizeof out->path, "%s/kareus-gpu-%s.lock", lock_dir ? lock_dir : "/tmp", safe);
    int fd = open(out->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int writable = fd >= 0;
    if (fd < 0 && errno == EACCES) /* made by another user: locking needs no write access */
        fd = open(out->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return kr_error_set(err, KR_EIO, "lock file %s: %s (choose another lock directory)", out->path, strerror(e));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        return kr_error_set(err, e == EWOULDBLOCK ? KR_EBUSY : KR_EIO,
                            "GPU %s (device %d, %s) is controlled by another Kareus process%s%s%s (lock %s): one process "
                            "per GPU may change its clocks; open read-only to measure only",
                            uuid, device, name ? name : "?", pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "", out->path);
    }
    if (writable) {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (fchmod(fd, 0666) != 0 || ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            /* The pid only improves the next process's message; the lock itself is held. */
        }
    }
    out->fd = fd;
    return KR_OK;
}

void kr_runtime_gpu_unlock(kr_gpu_lock *lock)
{
    if (lock->fd >= 0) {
        if (ftruncate(lock->fd, 0) != 0) {
            /* Read-only lock file (another user's): the stale pid only affects a message. */
        }
        close(lock->fd); /* releases the flock */
        lock->fd = -1;
    }
}

int kr__rt_lock(kr_runtime *rt, const char *dir, kr_error *err)
{
    kr_gpu_lock l;
    int rc = kr_runtime_gpu_lock(dir, rt->info.uuid, rt->device, rt->info.name, &l, err);
    if (rc == KR_OK) {
        rt->lock_fd = l.fd;
        kr__strlcpy(rt->lock_path, l.path, sizeof rt->lock_path);
    }
    return rc;
}

void kr__rt_unlock(kr_runtime *rt)
{
    kr_gpu_lock l = {.fd = rt->lock_fd};
    kr_runtime_gpu_unlock(&l);
    rt->lock_fd = -1;
}

/* ---- the registry, signal handlers and atexit ------------------------------------------------ */

#define REG_SLOTS 32

static struct registry {
    pthread_mutex_t mu;                    /* open/close only; never taken by handlers */
    _Atomic(kr_runtime *) slot[REG_SLOTS]; /* registered runtimes */
    _Atomic int busy[REG_SLOTS];           /* handlers using the slot right now */
    int nsignal_users;                     /* registered runtimes that want signal handlers */
    struct sigaction old_int, old_term;    /* handlers in place before ours */
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
    const struct sigaction *old = sig == SIGINT ? &g_reg.old_int : &g_reg.old_term;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction)
            old->sa_sigaction(sig, info, uctx);
    } else if (old->sa_handler == SIG_DFL) {
        /* Default action: terminate with this signal once the handler returns (the signal is
         * blocked while we run, so raise() leaves it pending until then). */
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
    sigaction(SIGINT, &sa, &g_reg.old_int);
    sigaction(SIGTERM, &sa, &g_reg.old_term);
}

/* Puts the previous handlers back, but only where ours is still the one installed. */
static void uninstall_handlers(void)
{
    const int sigs[2] = {SIGINT, SIGTERM};
    const struct sigaction *olds[2] = {&g_reg.old_int, &g_reg.old_term};
    for (int i = 0; i < 2; i++) {
        struct sigaction cur;
        if (sigaction(sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)
            sigaction(sigs[i], olds[i], NULL);
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
