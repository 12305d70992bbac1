/* test_kareusd.c — kareusd, the scoped clock helper, on the fake GPU: the daemon (the real
 * executable) drives a fake whose clocks live in a state file, so that this test sees the
 * "GPU" across processes. A client running a plan through the runtime is SIGKILLed mid-plan and
 * the clocks must come back to the lock found before (the latency is printed, not asserted);
 * clients of other users or outside the group are refused with a logged reason; out-of-range or
 * unsupported clocks and devices off the allow-list are refused; a second client cannot take a
 * device another one controls; and a daemon SIGKILLed while a client holds a device restores it
 * when it starts again. Tests that change users need root (CI runs as root) and skip otherwise. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kareus/gpuctl.h"
#include "kareus/runtime.h"

#define NOBODY 65534
#define FOUND_MIN 1005 /* the lock in place before anyone runs (fake: locked=1005-1200) */
#define FOUND_MAX 1200

typedef struct daemon_ctx {
    char dir[64];
    char sock[128];
    char state[128];
    char log[128];
    char locks[128];
    pid_t pid;
} daemon_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A fresh directory in /tmp (short socket paths; reachable by other users). */
static void ctx_init(daemon_ctx *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/kr-kareusd-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    assert_int_equal(chmod(c->dir, 0755), 0);
    snprintf(c->sock, sizeof c->sock, "%s/kareusd.sock", c->dir);
    snprintf(c->state, sizeof c->state, "%s/gpu.state", c->dir);
    snprintf(c->log, sizeof c->log, "%s/kareusd.log", c->dir);
    snprintf(c->locks, sizeof c->locks, "%s/locks", c->dir);
    assert_int_equal(mkdir(c->locks, 0755), 0);
}

static void ctx_cleanup(daemon_ctx *c)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", c->dir);
}

/* Starts the daemon on a 2-device fake with the extra flags (NULL-terminated), logging to
 * c->log; waits until its socket answers. */
static void start_daemon(daemon_ctx *c, const char *const *extra)
{
    char backend[300];
    snprintf(backend, sizeof backend, "fake:devices=2,locked=%d-%d,state=%s", FOUND_MIN, FOUND_MAX, c->state);
    const char *argv[32] = {KR_KAREUSD, "--socket", c->sock, "--backend", backend, "--lock-dir", c->locks};
    int n = 7;
    for (int i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    unlink(c->sock);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Dies with the test (a failed assertion leaves no daemon behind) and keeps CTest's output
         * pipe free. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char *av[32] = {0};
        for (int i = 0; i < n; i++)
            av[i] = strdup(argv[i]);
        execv(KR_KAREUSD, av);
        _exit(127);
    }
    c->pid = pid;
    for (int i = 0; i < 6000; i++) { /* up to 60 s: a loaded machine, a sanitizer build */
        kr_backend *b = NULL;
        kr_error e = {0};
        if (kr_gpuctl_kareusd_create(c->sock, &b, &e) == KR_OK) {
            kr_backend_destroy(b);
            return;
        }
        sleep_ms(10);
    }
    fail_msg("kareusd did not start (log %s)", c->log);
}

static void stop_daemon(daemon_ctx *c, int sig)
{
    if (c->pid > 0) {
        kill(c->pid, sig);
        waitpid(c->pid, NULL, 0);
        c->pid = 0;
    }
}

/* The fake GPU's lock of device d, read from its state file. */
static void gpu_state(const daemon_ctx *c, int d, int *lmin, int *lmax)
{
    *lmin = *lmax = -1;
    FILE *f = fopen(c->state, "r");
    assert_non_null(f);
    int dd, a, b, cur;
    while (fscanf(f, "%d %d %d %d", &dd, &a, &b, &cur) == 4)
        if (dd == d) {
            *lmin = a;
            *lmax = b;
        }
    fclose(f);
}

static int log_has(const daemon_ctx *c, const char *needle)
{
    char buf[65536];
    FILE *f = fopen(c->log, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static int is_root(void)
{
    return geteuid() == 0;
}

/* Drops to uid/gid with the given supplementary groups (in a forked child). */
static void become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
    if (setgroups((size_t)ngroups, groups) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
        _exit(90);
}

/* ---- a client SIGKILLed mid-plan ------------------------------------------------------------- */

static const char plan_json[] =
    "{\"schema\": \"kareus.plan\", \"version\": 1, \"method\": \"test\",\n"
    " \"job\": {\"name\": \"kareusd-test\", \"stages\": 1, \"microbatches\": 2, \"schedule\": \"1f1b\"},\n"
    " \"stages\": [{\"stage\": 0, \"instructions\": [\n"
    "  {\"kind\": \"forward\", \"microbatch\": 0, \"freq_mhz\": 900},\n"
    "  {\"kind\": \"backward\", \"microbatch\": 0, \"freq_mhz\": 1305},\n"
    "  {\"kind\": \"forward\", \"microbatch\": 1, \"freq_mhz\": 900},\n"
    "  {\"kind\": \"backward\", \"microbatch\": 1, \"freq_mhz\": 1305}]}]}\n";

/* The client: runs the plan through the runtime on device dev via kareusd, forever; writes one
 * byte to ready_fd once a plan clock has been applied. */
static void plan_client(const daemon_ctx *c, int dev, int ready_fd)
{
    char plan[160], locks[160];
    snprintf(plan, sizeof plan, "%s/plan.json", c->dir);
    snprintf(locks, sizeof locks, "%s/client-locks", c->dir);
    char spec[200];
    snprintf(spec, sizeof spec, "kareusd:%s", c->sock);
    kr_runtime_config o = {.backend = spec, .lock_dir = locks, .energy_poll_s = -1};
    kr_runtime *rt;
    kr_error e = {0};
    if (kr_runtime_open(plan, 0, dev, &o, &rt, &e) != KR_OK) {
        fprintf(stderr, "client: %s\n", e.msg);
        _exit(92);
    }
    const kr_instr_kind kinds[4] = {KR_INSTR_FORWARD, KR_INSTR_BACKWARD, KR_INSTR_FORWARD, KR_INSTR_BACKWARD};
    const int mbs[4] = {0, 0, 1, 1};
    for (long step = 0;; step++) {
        for (int i = 0; i < 4; i++) {
            kr_runtime_instruction_begin(rt, kinds[i], mbs[i], 0, NULL);
            if (step == 0 && i == 0) {
                kr_runtime_sync(rt, 0, NULL);
                kr_runtime_status st;
                kr_runtime_status_get(rt, &st);
                char r = st.applied_mhz == 900 ? 'y' : 'n';
                if (write(ready_fd, &r, 1) != 1)
                    _exit(93);
            }
            sleep_ms(1);
            kr_runtime_instruction_end(rt, NULL);
        }
        kr_runtime_step_end(rt, NULL);
    }
}

static void sigkilled_client_is_restored(void **state)
{
    (void)state;
    daemon_ctx c;
    ctx_init(&c);
    char path[160];
    snprintf(path, sizeof path, "%s/plan.json", c.dir);
    kr_test_write(path, plan_json);
    /* The client runs as nobody, admitted by the users list, when we can change users. */
    const char *extra[] = {"--users", "65534", NULL};
    start_daemon(&c, extra);
    snprintf(path, sizeof path, "%s/client-locks", c.dir);
    assert_int_equal(mkdir(path, 0700), 0);
    if (is_root())
        assert_int_equal(chown(path, NOBODY, NOBODY), 0);
    int lmin, lmax;
    gpu_state(&c, 1, &lmin, &lmax);
    assert_int_equal(lmin, FOUND_MIN);
    for (int rep = 0; rep < 3; rep++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            if (is_root())
                become(NOBODY, NOBODY, NULL, 0);
            plan_client(&c, 1, p[1]);
        }
        close(p[1]);
        char r = 0;
        assert_int_equal(read(p[0], &r, 1), 1);
        close(p[0]);
        assert_int_equal(r, 'y'); /* the runtime applied the plan's first clock */
        gpu_state(&c, 1, &lmin, &lmax);
        assert_true(lmax == 900 || lmax == 1305); /* mid-plan: a plan clock is locked */
        sleep_ms(20 + 7 * rep);                   /* somewhere later in the plan */
        double t0 = now_s();
        assert_int_equal(kill(pid, SIGKILL), 0);
        double t_restored = -1;
        while (now_s() - t0 < 10) {
            gpu_state(&c, 1, &lmin, &lmax);
            if (lmin == FOUND_MIN && lmax == FOUND_MAX) {
                t_restored = now_s();
                break;
            }
            struct timespec us = {0, 200000};
            nanosleep(&us, NULL);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        assert_true(t_restored > 0); /* restored to the found lock (a generous 10 s bound) */
        printf("kareusd: client %s SIGKILLed mid-plan; found lock [%d, %d] MHz restored %.2f ms after kill()\n",
               is_root() ? "(uid nobody)" : "(same uid)", FOUND_MIN, FOUND_MAX, (t_restored - t0) * 1e3);
    }
    assert_true(log_has(&c, "client disconnected"));
    gpu_state(&c, 0, &lmin, &lmax); /* device 0 was never touched */
    assert_int_equal(lmax, FOUND_MAX);
    stop_daemon(&c, SIGTERM);
    ctx_cleanup(&c);
}

/* ---- authorisation -------------------------------------------------------------------------- */

/* Connects as uid/gid/groups in a child; returns the KR_ status it got. */
static int connect_as(const daemon_ctx *c, uid_t uid, gid_t gid, const gid_t *groups, int ng)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        become(uid, gid, groups, ng);
        kr_backend *b = NULL;
        kr_error e = {0};
        int rc = kr_gpuctl_kareusd_create(c->sock, &b, &e);
        if (rc == KR_OK)
            rc = kr_backend_set_clock(b, 0, 900, 900);
        if (rc)
            fprintf(stderr, "client uid %ld gid %ld: %s\n", (long)uid, (long)gid, rc ? (b ? kr_backend_errmsg(b) : e.msg) : "");
        kr_backend_destroy(b);
        _exit(rc == KR_OK ? 0 : -rc);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    return -WEXITSTATUS(status);
}

static void other_users_and_groups_are_refused(void **state)
{
    (void)state;
    if (!is_root())
        KR_SKIP("changing users needs root (CI runs as root)");
    daemon_ctx c;
    ctx_init(&c);
    const char *extra[] = {"--group", "4242", NULL};
    start_daemon(&c, extra);
    const gid_t member[1] = {4242}, other[1] = {4243};
    /* Another uid outside the group: refused at connect, with the reason logged. */
    assert_int_equal(connect_as(&c, NOBODY, NOBODY, other, 1), KR_EPERM);
    assert_true(log_has(&c, "refused client"));
    assert_true(log_has(&c, "uid 65534 is not root, not on the users list and not in group 4242"));
    int lmin, lmax;
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, FOUND_MAX); /* nothing changed */
    /* Members (supplementary or primary group) are served; their lock is undone at disconnect. */
    assert_int_equal(connect_as(&c, NOBODY, NOBODY, member, 1), KR_OK);
    assert_int_equal(connect_as(&c, NOBODY, 4242, NULL, 0), KR_OK);
    gpu_state(&c, 0, &lmin, &lmax);
    for (int i = 0; i < 2000 && lmax != FOUND_MAX; i++) {
        sleep_ms(5);
        gpu_state(&c, 0, &lmin, &lmax);
    }
    assert_int_equal(lmin, FOUND_MIN);
    assert_int_equal(lmax, FOUND_MAX);
    stop_daemon(&c, SIGTERM);
    /* Without a group or users list only root is served. */
    start_daemon(&c, NULL);
    assert_int_equal(connect_as(&c, 1234, 1234, NULL, 0), KR_EPERM);
    assert_true(log_has(&c, "uid 1234 is not root and not on the users list"));
    stop_daemon(&c, SIGTERM);
    ctx_cleanup(&c);
}

/* ---- what a client may ask -------------------------------------------------------------------- */

static void out_of_range_clocks_and_devices_are_refused(void **state)
{
    (void)state;
    daemon_ctx c;
    ctx_init(&c);
    const char *extra[] = {"--clock-min", "600", "--clock-max", "1305", "--devices", "0", NULL};
    start_daemon(&c, extra);
    kr_backend *b, *b2;
    kr_error e = {0};
    assert_int_equal(kr_gpuctl_kareusd_create(c.sock, &b, &e), KR_OK);
    assert_string_equal(kr_backend_name(b), "kareusd");
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 1410, 1410), KR_ERANGE, *kr_backend_error(b), "outside the allowed range [600, 1305]");
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 450, 450), KR_ERANGE, *kr_backend_error(b), "outside the allowed range");
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 1007, 1007), KR_ERANGE, *kr_backend_error(b), "not a supported SM clock");
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 1200, 900), KR_ERANGE, *kr_backend_error(b), "min 1200 > max 900");
    KR_ASSERT_ERR(kr_backend_set_clock(b, 1, 900, 900), KR_EPERM, *kr_backend_error(b), "not on kareusd's allow-list");
    double x;
    KR_ASSERT_ERR(kr_backend_read_power(b, 1, &x), KR_EPERM, *kr_backend_error(b), "allow-list");
    assert_true(log_has(&c, "refused LOCK 0 [1410, 1410]"));
    assert_true(log_has(&c, "outside the allowed range"));
    int lmin, lmax;
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, FOUND_MAX); /* none of these reached the GPU */
    /* What it does accept, and reads. */
    assert_int_equal(kr_backend_set_clock(b, 0, 900, 900), KR_OK);
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, 900);
    int clocks[KR_GPU_MAX_CLOCKS], n = 0, cur, a, z;
    assert_int_equal(kr_backend_supported_clocks(b, 0, clocks, KR_GPU_MAX_CLOCKS, &n), KR_OK);
    assert_int_equal(n, 81);
    assert_int_equal(kr_backend_get_clock(b, 0, &cur, &a, &z), KR_OK);
    assert_int_equal(z, 900);
    assert_int_equal(kr_backend_read_energy(b, 0, &x), KR_OK);
    assert_int_equal(kr_backend_read_power(b, 0, &x), KR_OK);
    assert_true(x == 250);
    kr_gpu_device_info info;
    assert_int_equal(kr_backend_device_info(b, 0, &info, &e), KR_OK);
    assert_string_equal(info.uuid, "GPU-fake-0");
    assert_string_equal(info.name, "Kareus fake GPU");
    /* A control backend that restores by itself when it goes: what `kareus run` asks for. */
    assert_int_equal(kr_backend_caps(b), KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY |
                                             KR_BACKEND_POWER | KR_BACKEND_DEVICE_INFO | KR_BACKEND_SCOPED);
    /* A second client cannot take the device the first one controls. */
    assert_int_equal(kr_gpuctl_kareusd_create(c.sock, &b2, &e), KR_OK);
    KR_ASSERT_ERR(kr_backend_set_clock(b2, 0, 1005, 1005), KR_EBUSY, *kr_backend_error(b2), "controlled by another client");
    kr_backend_destroy(b); /* the first disconnects: restored, and the device is free again */
    for (int i = 0; i < 2000 && lmax != FOUND_MAX; i++) {
        sleep_ms(5);
        gpu_state(&c, 0, &lmin, &lmax);
    }
    assert_int_equal(lmax, FOUND_MAX);
    assert_int_equal(kr_backend_reset_clock(b2, 0), KR_OK);
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, 0);
    stop_daemon(&c, SIGTERM); /* SIGTERM: every device a client controls is restored first */
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, FOUND_MAX);
    kr_backend_destroy(b2);
    ctx_cleanup(&c);
}

/* ---- the daemon's own death ------------------------------------------------------------------- */

static void restart_leaves_no_device_locked(void **state)
{
    (void)state;
    daemon_ctx c;
    ctx_init(&c);
    start_daemon(&c, NULL);
    kr_backend *b;
    kr_error e = {0};
    assert_int_equal(kr_gpuctl_kareusd_create(c.sock, &b, &e), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 0, 900, 900), KR_OK);
    assert_int_equal(kr_backend_set_clock(b, 1, 600, 750), KR_OK);
    stop_daemon(&c, SIGKILL); /* the daemon dies with devices locked at the client's clocks */
    int lmin, lmax;
    gpu_state(&c, 0, &lmin, &lmax);
    assert_int_equal(lmax, 900);
    gpu_state(&c, 1, &lmin, &lmax);
    assert_int_equal(lmax, 750);
    KR_ASSERT_ERR(kr_backend_set_clock(b, 0, 1305, 1305), KR_ENODEV, *kr_backend_error(b), "connection closed");
    kr_backend_destroy(b);
    start_daemon(&c, NULL); /* restores from the lock records before serving */
    for (int d = 0; d < 2; d++) {
        gpu_state(&c, d, &lmin, &lmax);
        assert_int_equal(lmin, FOUND_MIN);
        assert_int_equal(lmax, FOUND_MAX);
    }
    assert_true(log_has(&c, "at start: device 0"));
    assert_true(log_has(&c, "at start: device 1"));
    stop_daemon(&c, SIGTERM);
    ctx_cleanup(&c);
}

static void bad_configuration_exits_2(void **state)
{
    (void)state;
    daemon_ctx c;
    ctx_init(&c);
    char conf[200], cmd[600];
    snprintf(conf, sizeof conf, "%s/kareusd.conf", c.dir);
    kr_test_write(conf, "# test\nsocket = /tmp/x.sock\nclock_max = lots\n");
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' 2>'%s'", KR_KAREUSD, conf, c.log);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_true(log_has(&c, "kareusd.conf:3: clock_max: expected an integer"));
    kr_test_write(conf, "frobnicate = 1\n");
    st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_true(log_has(&c, "kareusd.conf:1: unknown key 'frobnicate'"));
    ctx_cleanup(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(sigkilled_client_is_restored),
    cmocka_unit_test(other_users_and_groups_are_refused),
    cmocka_unit_test(out_of_range_clocks_and_devices_are_refused),
    cmocka_unit_test(restart_leaves_no_device_locked),
    cmocka_unit_test(bad_configuration_exits_2),
};

KR_TEST_MAIN(tests)
