/*
 * cmd_run.c — `kareus run --plan FILE [--stage S] -- CMD …`: runs a training command with a plan
 * exposed to it, and puts the GPU clocks back when the command ends, however it ends.
 *
 * The runtime inside the job restores clocks on close, exit, SIGINT and SIGTERM, but nothing in a
 * process survives SIGKILL, an OOM kill or a segfault. This wrapper is the outer guarantee: it
 * notes the clocks before starting the command, forwards the signals it receives to it, waits,
 * and then — once the advisory per-GPU lock is free again, so it never fights a live Kareus
 * process — restores them.
 *
 * The command finds the plan in its environment: KAREUS_PLAN (absolute path), KAREUS_STAGE (if
 * --stage), KAREUS_DEVICE (the --device list), KAREUS_BACKEND (the backend spec), KAREUS_JOB (if
 * --job), KAREUS_LOCK_DIR (if --lock-dir) and KAREUS_RUN_PID (the wrapper's pid). The Python
 * binding's Runtime.from_env() reads them.
 *
 * Under torchrun (`torchrun --no-python … kareus run …`) or srun, without --device, each rank
 * derives its own pipeline stage and GPU (launch.h: tp-cp-dp-pp order, CUDA_VISIBLE_DEVICES
 * mapped by UUID) and exports them; a geometry that does not fit (two ranks on one GPU, a stage
 * outside the plan) exits 2 before the command starts.
 *
 * Exit status: the command's (128 + N if it died of signal N); 2 for bad arguments or a plan
 * that does not fit; 1 if the clocks could not be restored after a successful command.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus run --plan FILE [--stage S] [--device N[,N…]|all] [--backend SPEC] [--job JOB]\n"
    "                  [--lock-dir DIR] [--restore-lock MIN,MAX] [--force] [--json] -- CMD [ARGS…]\n\n"
    "Runs CMD with the plan in its environment (KAREUS_PLAN, KAREUS_STAGE, KAREUS_DEVICE,\n"
    "KAREUS_BACKEND, KAREUS_JOB, KAREUS_LOCK_DIR, KAREUS_RUN_PID), forwards SIGINT, SIGTERM and\n"
    "SIGHUP sent to this wrapper, and restores the SM clocks of the devices when CMD ends —\n"
    "also after SIGKILL or a crash, which no in-process handler can catch.\n\n";

/* What the options set. */
typedef struct run_args {
    const char *plan, *spec, *job, *lock_dir, *devs, *stage_s;
    int stage, rmin, rmax, force, tp, cp, json;
} run_args;

static int set_stage(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    run_args *a = ctx;
    a->stage_s = arg;
    return cli_parse_int(cmd, "--stage", arg, 0, KR_MAX_STAGES - 1, &a->stage);
}

static int set_restore_lock(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    run_args *a = ctx;
    int n = 0;
    if (sscanf(arg, "%d,%d%n", &a->rmin, &a->rmax, &n) != 2 || arg[n] || a->rmin <= 0 || a->rmax < a->rmin)
        return cli_usage_error(cmd, "--restore-lock: expected MIN,MAX in MHz with 0 < MIN <= MAX, found '%s'", arg);
    return 0;
}

static const cli_opt run_opts[] = {
    CLI_OPT("plan", 1,
        "  --plan FILE          plan to expose (checked first: exit 2 if it does not fit)\n",
        cli_set_str, run_args, plan),
    CLI_OPT_FN("stage", 1,
        "  --stage S            the stage of a single-rank job (multi-rank jobs pass their own)\n",
        set_stage),
    CLI_OPT("device", 1,
        "  --device LIST        devices whose clocks are restored (default 0; 'all'); any other\n"
        "                       device the command's runtimes left changed is restored too\n",
        cli_set_str, run_args, devs),
    CLI_OPT("backend", 1,
        "  --backend SPEC       auto (default: kareusd when not root and it runs, else nvml),\n"
        "                       kareusd[:SOCKET], nvml; sim needs no restore; fake:… for tests\n",
        cli_set_str, run_args, spec),
    CLI_OPT("job", 1,
        "  --job JOB            also check the plan against this job spec or built-in name\n",
        cli_set_str, run_args, job),
    CLI_OPT("lock-dir", 1,
        "  --lock-dir DIR       per-GPU lock files (default /run/kareus as root, else\n"
        "                       $XDG_RUNTIME_DIR/kareus)\n",
        cli_set_str, run_args, lock_dir),
    CLI_OPT_FN("restore-lock", 1,
        "  --restore-lock A,B   restore this lock instead of resetting (NVML cannot report the one\n"
        "                       in place before the run)\n",
        set_restore_lock),
    CLI_OPT("force", 0,
        "  --force              start even if another Kareus process controls a device\n",
        cli_set_flag, run_args, force),
    CLI_OPT_RANGE("tp", 1,
        "  --tp N, --cp N       under torchrun/srun (no --device): parallel degrees for the rank's\n"
        "                       stage and GPU (default: the --job's, else 1; order tp-cp-dp-pp)\n",
        cli_set_int, run_args, tp, 1, 1 << 16),
    CLI_OPT_RANGE("cp", 1,
        NULL,
        cli_set_int, run_args, cp, 1, 1 << 16),
    CLI_OPT("json", 0,
        "  --json               after CMD ends, one JSON object on stdout: command, exit_status,\n"
        "                       signal, devices restored, clocks_restored\n",
        cli_set_flag, run_args, json),
};
static const cli_optset run_set = {"run", usage_head, run_opts, CLI_OPT_COUNT(run_opts), NULL, "+", 0};

#define MAX_DEVS 64

static volatile sig_atomic_t g_child = 0;

/* Forwards a signal to the command. A terminal's Ctrl-C or hang-up already reaches the whole
 * foreground process group (si_code SI_KERNEL), the command included: forwarding it would
 * deliver it twice. */
static void forward_signal(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    if (si != NULL && si->si_code == SI_KERNEL)
        return;
    if (g_child > 0)
        kill((pid_t)g_child, sig);
}

static int parse_devices(const char *s, int *dev, int *n, int *all)
{
    *n = 0;
    *all = strcmp(s, "all") == 0;
    if (*all)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_DEVS || cli_parse_int("run", "--device", t, 0, 1023, &dev[*n]))
            return CLI_EXIT_INPUT;
        (*n)++;
    }
    return *n ? 0 : cli_usage_error("run", "--device: expected N[,N…] or all, found '%s'", s);
}

/* What was found on a device before the command ran. */
typedef struct found {
    int dev;
    kr_gpu_device_info info;
    int lmin, lmax; /* lock to restore (0, 0: reset) */
} found;

static int restore_device(kr_backend *b, const found *f, const char *lock_dir)
{
    kr_error err = {0};
    kr_gpu_lock lock = {.fd = -1};
    if (f->info.uuid[0] && kr_runtime_gpu_lock(lock_dir, f->info.uuid, f->dev, f->info.name, &lock, &err) != KR_OK) {
        fprintf(stderr, "kareus run: device %d: not restoring its clocks: %s\n", f->dev, err.msg);
        return CLI_EXIT_FAIL;
    }
    int rc = f->lmax > 0 ? kr_backend_set_clock(b, f->dev, f->lmin, f->lmax) : kr_backend_reset_clock(b, f->dev);
    kr_runtime_gpu_unlock(&lock);
    if (rc) {
        fprintf(stderr, "kareus run: device %d: restoring its clocks FAILED: %s\n", f->dev, kr_backend_errmsg(b));
        return CLI_EXIT_FAIL;
    }
    if (f->lmax > 0)
        fprintf(stderr, "kareus run: device %d (%s): clocks restored to the lock [%d, %d] MHz\n", f->dev, f->info.name,
                f->lmin, f->lmax);
    else
        fprintf(stderr, "kareus run: device %d (%s): clocks restored (lock removed)\n", f->dev, f->info.name);
    return 0;
}

/* Restores every device whose lock record a dead holder left "held", with the clocks it found. */
static int restore_stale(kr_backend *b, const char *lock_dir)
{
    int n = 0, failed = 0;
    for (int d = 0; kr_backend_device_count(b, &n) == KR_OK && d < n; d++) {
        kr_error err = {0};
        int restored = 0;
        int rc = kr_runtime_gpu_restore(b, d, lock_dir, &restored, &err);
        if (rc != KR_OK && rc != KR_EBUSY) { /* busy: a live process (another rank) holds it */
            fprintf(stderr, "kareus run: device %d: %s\n", d, err.msg);
            failed = 1;
        } else if (restored)
            fprintf(stderr, "kareus run: %s\n", err.msg);
    }
    return failed;
}

/* Opens the backend and notes each device's identity and clocks; checks nobody controls them. */
static int survey(const char *spec, const int *dev, int ndev, int all, int rmin, int rmax, const char *lock_dir,
                  int force, kr_backend **b, found *fd, int *nfound)
{
    kr_error err = {0};
    int rc = kr_backend_open(spec, NULL, b, &err);
    if (rc) {
        fprintf(stderr, "kareus run: cannot guarantee that clocks are restored: %s\n(with --backend sim nothing needs "
                        "restoring)\n", err.msg);
        return rc == KR_ENOLIB || rc == KR_ENODEV || kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
    }
    int n = 0;
    if ((rc = kr_backend_device_count(*b, &n)))
        return cli_report(rc, kr_backend_error(*b));
    *nfound = all ? (n < MAX_DEVS ? n : MAX_DEVS) : ndev;
    for (int i = 0; i < *nfound; i++) {
        found *f = &fd[i];
        f->dev = all ? i : dev[i];
        if (f->dev >= n) {
            fprintf(stderr, "kareus run: --device: expected 0..%d (%d device%s), found %d\n", n - 1, n,
                    n == 1 ? "" : "s", f->dev);
            return CLI_EXIT_INPUT;
        }
        /* A job that died earlier without restoring: put its found clocks back first, so that
         * they, not its plan's, are what this run notes and restores. A live holder: refuse. */
        int cur, restored = 0, helper = (kr_backend_caps(*b) & KR_BACKEND_SCOPED) != 0; /* kareusd restores by itself */
        if (!helper && (rc = kr_runtime_gpu_restore(*b, f->dev, lock_dir, &restored, &err)) == KR_EBUSY && !force) {
            fprintf(stderr, "kareus run: %s (--force starts anyway)\n", err.msg);
            return CLI_EXIT_FAIL;
        } else if (!helper && rc == KR_EBUSY)
            fprintf(stderr, "kareus run: --force: %s\n", err.msg);
        else if (!helper && rc)
            return cli_report(rc, &err);
        else if (restored)
            fprintf(stderr, "kareus run: %s\n", err.msg);
        if ((rc = kr_backend_device_info(*b, f->dev, &f->info, &err)) ||
            (rc = kr_backend_get_clock(*b, f->dev, &cur, &f->lmin, &f->lmax)))
            return cli_report(rc, err.msg[0] ? &err : kr_backend_error(*b));
        if (rmax > 0) {
            f->lmin = rmin;
            f->lmax = rmax;
        }
    }
    return 0;
}

/* Under torchrun or srun: this rank's GPU (devbuf) and, unless --stage was given, its stage
 * (stagebuf); both "" for a single process. Degrees default to the job's. */
static int launch_rank(const char *plan_path, const char *job_spec, const char *spec, int is_sim, int tp, int cp,
                       int have_stage, char *devbuf, char *stagebuf, kr_error *err)
{
    devbuf[0] = stagebuf[0] = '\0';
    kr_launch l;
    kr_launch_config o = {.tp = tp, .cp = cp};
    int rc = kr_launch_resolve(&o, &l, err);
    if (rc || l.launcher == KR_LAUNCHER_NONE)
        return rc;
    kr_job job;
    if (job_spec && (rc = kr_job_load(job_spec, &job, err)))
        return rc;
    kr_plan p;
    if ((rc = kr_plan_read(plan_path, &p, err)))
        return rc;
    o.plan_stages = p.num_stages;
    kr_plan_free(&p);
    o.tp = tp ? tp : job_spec ? job.tp : 1;
    o.cp = cp ? cp : job_spec ? job.cp : 1;
    if ((rc = kr_launch_resolve(&o, &l, err)))
        return kr_error_prefix(err, "kareus run (%s rank %d)", kr_launcher_name(l.launcher), l.rank);
    int device = l.local_rank;
    kr_backend *b = NULL;
    if (!is_sim && ((rc = kr_backend_open(spec, NULL, &b, err)) || (rc = kr_launch_device(&l, b, &device, NULL, err)))) {
        kr_backend_destroy(b);
        return kr_error_prefix(err, "kareus run (%s rank %d)", kr_launcher_name(l.launcher), l.rank);
    }
    kr_backend_destroy(b);
    snprintf(devbuf, 16, "%d", device);
    if (!have_stage)
        snprintf(stagebuf, 16, "%d", l.stage);
    return KR_OK;
}

/*
 * The plan's clocks (stage's, or every stage's without --stage) must be supported SM clocks of
 * each device the wrapper opened: a plan made for another GPU is refused (exit 2) before the
 * command starts, with the plan location, the clock and the device's range.
 */
static int check_plan_clocks(kr_backend *b, const char *path, int stage, const found *fd, int nfound)
{
    kr_plan p;
    kr_error err = {0};
    int rc = kr_plan_read(path, &p, &err);
    if (rc)
        return cli_report(rc, &err);
    int status = 0;
    for (int d = 0; d < nfound && status == 0; d++) {
        static int clocks[KR_GPU_MAX_CLOCKS];
        int n = 0;
        if ((rc = kr_backend_supported_clocks(b, fd[d].dev, clocks, KR_GPU_MAX_CLOCKS, &n))) {
            fprintf(stderr, "kareus run: device %d: listing supported clocks: %s\n", fd[d].dev, kr_backend_errmsg(b));
            status = CLI_EXIT_FAIL;
            break;
        }
        for (int s = stage < 0 ? 0 : stage; s < (stage < 0 ? p.num_stages : stage + 1) && s < p.num_stages && !status; s++)
            for (int i = 0; i < p.stages[s].ninstr && !status; i++) {
                int f = p.stages[s].instr[i].freq_mhz, ok = 0;
                for (int k = 0; k < n && !ok; k++)
                    ok = clocks[k] == f;
                if (!ok) {
                    fprintf(stderr, "kareus: %s: stages[%d].instructions[%d].freq_mhz: expected a supported SM clock of "
                                    "device %d (%s: %d clocks from %d to %d MHz), found %d MHz (plan made for %s)\n",
                            path, s, i, fd[d].dev, fd[d].info.name, n, n ? clocks[n - 1] : 0, n ? clocks[0] : 0, f,
                            p.gpu[0] ? p.gpu : "an unknown GPU");
                    status = CLI_EXIT_INPUT;
                }
            }
    }
    kr_plan_free(&p);
    return status;
}

int cmd_run(int argc, char **argv)
{
    int urc = cli_opt_subcommand_usage(argc, argv, &run_set);
    if (urc >= 0)
        return urc;
    run_args a = {.spec = "auto", .stage = -1};
    int next;
    /* "+": stop at the first non-option, so CMD's own options are left alone. */
    int prc = cli_opt_parse(&run_set, argc, argv, 1, &a, &next);
    if (prc)
        return prc;
    const char *plan = a.plan, *spec = a.spec, *job = a.job, *lock_dir = a.lock_dir, *devs = a.devs,
               *stage_s = a.stage_s;
    int stage = a.stage, rmin = a.rmin, rmax = a.rmax, force = a.force, tp = a.tp, cp = a.cp, json = a.json;
    if (plan == NULL)
        return cli_usage_error("run", "--plan FILE is required");
    if (next >= argc || strcmp(argv[next - 1], "--") != 0)
        return cli_usage_error("run", "expected '-- CMD [ARGS…]' after the options");
    char **cmd = argv + next;
    int is_sim = strncmp(spec, "sim", 3) == 0 && (spec[3] == '\0' || spec[3] == ':');
    kr_error err = {0};
    char devbuf[16], stagebuf[16];
    int rc = devs ? 0 : launch_rank(plan, job, spec, is_sim, tp, cp, stage_s != NULL, devbuf, stagebuf, &err);
    if (rc)
        return cli_report(rc, &err);
    if (!devs)
        devs = devbuf[0] ? devbuf : "0";
    if (!stage_s && stagebuf[0]) {
        stage_s = stagebuf;
        stage = atoi(stagebuf);
    }
    int dev[MAX_DEVS], ndev = 0, all = 0;
    if (parse_devices(devs, dev, &ndev, &all))
        return CLI_EXIT_INPUT;
    if ((rc = kr_runtime_plan_check(plan, stage, job, &err)))
        return cli_report(rc, &err);

    kr_backend *b = NULL;
    static found fd[MAX_DEVS];
    int nfound = 0;
    if (!is_sim && ((rc = survey(spec, dev, ndev, all, rmin, rmax, lock_dir, force, &b, fd, &nfound)) ||
                    (rc = check_plan_clocks(b, plan, stage, fd, nfound)))) {
        kr_backend_destroy(b);
        return rc;
    }

    char abs[PATH_MAX], pid[32];
    setenv("KAREUS_PLAN", realpath(plan, abs) ? abs : plan, 1);
    if (stage_s)
        setenv("KAREUS_STAGE", stage_s, 1);
    setenv("KAREUS_DEVICE", devs, 1);
    setenv("KAREUS_BACKEND", spec, 1);
    if (job)
        setenv("KAREUS_JOB", job, 1);
    if (lock_dir)
        setenv("KAREUS_LOCK_DIR", lock_dir, 1);
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    setenv("KAREUS_RUN_PID", pid, 1);

    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 3; i++)
            sigaction(sigs[i], &old[i], NULL);
        execvp(cmd[0], cmd);
        fprintf(stderr, "kareus run: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    int status = 0, code;
    if (child < 0) {
        fprintf(stderr, "kareus run: fork: %s\n", strerror(errno));
        code = CLI_EXIT_FAIL;
    } else {
        g_child = child;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
        g_child = 0;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (WIFSIGNALED(status))
            fprintf(stderr, "kareus run: %s ended by signal %d (%s)\n", cmd[0], WTERMSIG(status),
                    strsignal(WTERMSIG(status)));
    }
    int restore_failed = 0;
    if (b && (kr_backend_caps(b) & KR_BACKEND_SCOPED))
        fprintf(stderr, "kareus run: kareusd restored the devices %s changed when its connection closed\n", cmd[0]);
    else if (b) /* every device whose lock the command's runtimes left "held" (any --device) */
        restore_failed |= restore_stale(b, lock_dir);
    for (int i = 0; i < nfound && b && !(kr_backend_caps(b) & KR_BACKEND_SCOPED); i++)
        restore_failed |= restore_device(b, &fd[i], lock_dir) != 0;
    kr_backend_destroy(b);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (json) {
        printf("{\"command\": ");
        cli_json_string(cmd[0]);
        printf(", \"exit_status\": %d, \"signal\": ", code);
        if (child > 0 && WIFSIGNALED(status))
            printf("%d", WTERMSIG(status));
        else
            printf("null");
        printf(", \"devices\": [");
        for (int i = 0; i < nfound; i++)
            printf("%s%d", i ? ", " : "", fd[i].dev);
        printf("], \"clocks_restored\": %s}\n", restore_failed ? "false" : "true");
    }
    return code == 0 && restore_failed ? CLI_EXIT_FAIL : code;
}
