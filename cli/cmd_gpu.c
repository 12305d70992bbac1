/*
 * cmd_gpu.c — `kareus gpu info|reset|restore`: what the GPUs of this machine offer (SM clocks,
 * current clock, power, energy counter), putting their clocks back to the driver's default, and
 * crash recovery: putting back the clocks a Kareus process recorded in its lock file before it
 * died without restoring them (SIGKILL, a crash, no kareusd).
 *
 * Exit statuses: 0 ok; 1 a call failed (no permission, a locked GPU); 2 bad arguments, or no
 * NVIDIA driver/library/GPU on this machine (a missing device is treated like a wrong input:
 * the command cannot do anything here) — the message names what is missing.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char usage_head[] =
    "usage: kareus gpu info [--device N] [--backend SPEC] [--json]\n"
    "       kareus gpu reset [--device N|all] [--backend SPEC] [--lock-dir DIR] [--force]\n"
    "       kareus gpu restore [--device N|all] [--backend SPEC] [--lock-dir DIR]\n\n"
    "  info        devices, supported SM clocks, current clocks, power and energy counter\n"
    "  reset       remove the SM clock lock (the driver's default behaviour); refuses a GPU that a\n"
    "              running Kareus process controls unless --force (needs root or CAP_SYS_ADMIN)\n"
    "  restore     after a Kareus process died without restoring (SIGKILL, crash): put back the\n"
    "              clocks its lock file recorded (default: all devices); a live holder is left alone\n";

/* What the options set. */
typedef struct gpu_args {
    const char *spec, *lock_dir;
    int device, all, json, force;
} gpu_args;

static int set_device(const char *cmd, const cli_opt *o, const char *arg, void *ctx)
{
    (void)o;
    gpu_args *a = ctx;
    if (strcmp(arg, "all") == 0)
        a->all = 1;
    else if (cli_parse_int(cmd, "--device", arg, 0, 1023, &a->device))
        return CLI_EXIT_INPUT;
    return 0;
}

static const cli_opt gpu_opts[] = {
    CLI_OPT_FN("device", 1,
        "  --device N  one device (default: all for info, 0 for reset)\n",
        set_device),
    CLI_OPT("backend", 1,
        "  --backend S auto (default: kareusd when not root and it runs, else nvml), nvml,\n"
        "              kareusd[:SOCKET], or a fake/sim spec for tests (see docs/runtime.md)\n",
        cli_set_str, gpu_args, spec),
    CLI_OPT("lock-dir", 1,
        "  --lock-dir  directory of the per-GPU lock files (default /run/kareus as root, else\n"
        "              $XDG_RUNTIME_DIR/kareus)\n",
        cli_set_str, gpu_args, lock_dir),
    CLI_OPT("json", 0,
        "  --json      machine-readable output\n",
        cli_set_flag, gpu_args, json),
    CLI_OPT("force", 0,
        NULL,
        cli_set_flag, gpu_args, force),
};
static const char usage_tail[] =
    "\nExit status 2 when there is no NVIDIA driver, library or GPU here (the message says which).\n";
static const cli_optset gpu_set = {"gpu", usage_head, gpu_opts, CLI_OPT_COUNT(gpu_opts), usage_tail, "", 0};

/* Opens the backend; maps a missing driver/library/GPU to exit status 2. */
static int open_backend(const char *spec, kr_backend **b)
{
    kr_error err = {0};
    int rc = kr_backend_open(spec, NULL, b, &err);
    if (rc == KR_OK)
        return 0;
    fprintf(stderr, "kareus gpu: %s\n", err.msg);
    return rc == KR_ENOLIB || rc == KR_ENODEV || kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
}

/* "1410..210 step 15 (81 clocks)" when evenly spaced, else the list. */
static void clocks_text(const int *mhz, int n, char *buf, size_t cap)
{
    int step = n > 1 ? mhz[0] - mhz[1] : 0, even = n > 2;
    for (int i = 2; i < n && even; i++)
        even = mhz[i - 1] - mhz[i] == step;
    if (even) {
        snprintf(buf, cap, "%d..%d MHz step %d (%d clocks)", mhz[0], mhz[n - 1], step, n);
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 8 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? " " : "", mhz[i]);
    if (len + 5 < cap)
        snprintf(buf + len, cap - len, " MHz");
}

static json_t *opt_real(int ok, double v)
{
    return ok ? json_real(v) : json_null();
}

/* NVML's own limits are worth a word next to what it reports. */
static int is_nvml(const kr_backend *b)
{
    return strcmp(kr_backend_name(b), "nvml") == 0;
}

static int gpu_info(kr_backend *b, int only, int json)
{
    int n = 0;
    kr_error err = {0};
    if (kr_backend_device_count(b, &n))
        return cli_report(KR_EBACKEND, kr_backend_error(b));
    if (only >= n) {
        fprintf(stderr, "kareus gpu: --device: expected 0..%d (%d device%s), found %d\n", n - 1, n, n == 1 ? "" : "s",
                only);
        return CLI_EXIT_INPUT;
    }
    json_t *arr = json ? json_array() : NULL;
    if (!json)
        printf("backend %s: %d device%s\n", kr_backend_name(b), n, n == 1 ? "" : "s");
    for (int d = only < 0 ? 0 : only; d < (only < 0 ? n : only + 1); d++) {
        kr_gpu_device_info info;
        int rc = kr_backend_device_info(b, d, &info, &err);
        if (rc) {
            json_decref(arr);
            return cli_report(rc, &err);
        }
        int clocks[KR_GPU_MAX_CLOCKS], nclk = 0, cur = 0, lmin = 0, lmax = 0;
        int have_clk = kr_backend_supported_clocks(b, d, clocks, KR_GPU_MAX_CLOCKS, &nclk) == KR_OK;
        int have_cur = kr_backend_get_clock(b, d, &cur, &lmin, &lmax) == KR_OK;
        double power = 0, energy = 0;
        int have_p = kr_backend_read_power(b, d, &power) == KR_OK;
        int have_e = kr_backend_read_energy(b, d, &energy) == KR_OK;
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "index", json_integer(d));
            json_object_set_new(o, "name", json_string(info.name));
            json_object_set_new(o, "uuid", json_string(info.uuid));
            json_object_set_new(o, "mem_clock_mhz", info.mem_clock_mhz ? json_integer(info.mem_clock_mhz) : json_null());
            json_t *cl = json_array();
            for (int i = 0; have_clk && i < nclk; i++)
                json_array_append_new(cl, json_integer(clocks[i]));
            json_object_set_new(o, "sm_clocks_mhz", cl);
            json_object_set_new(o, "sm_clock_mhz", have_cur ? json_integer(cur) : json_null());
            json_object_set_new(o, "power_w", opt_real(have_p, power));
            json_object_set_new(o, "energy_j", opt_real(have_e, energy));
            json_array_append_new(arr, o);
            continue;
        }
        char ctext[2048] = "not available";
        if (have_clk)
            clocks_text(clocks, nclk, ctext, sizeof ctext);
        printf("\ndevice %d: %s\n", d, info.name);
        if (info.uuid[0])
            printf("  uuid            %s\n", info.uuid);
        if (info.mem_clock_mhz)
            printf("  memory clock    %d MHz (SM clocks listed for it)\n", info.mem_clock_mhz);
        printf("  SM clocks       %s\n", ctext);
        if (have_cur)
            printf("  SM clock now    %d MHz%s\n", cur,
                   is_nvml(b) ? " (NVML cannot report an existing clock lock)" : "");
        if (have_cur && lmax > 0)
            printf("  locked          [%d, %d] MHz\n", lmin, lmax);
        if (have_p)
            printf("  power           %.1f W%s\n", power,
                   is_nvml(b) ? " (nvmlDeviceGetPowerUsage: a 1 s average after GA100)" : "");
        if (have_e)
            printf("  energy counter  %.3f J (cumulative%s)\n", energy,
                   is_nvml(b) ? "; NVML updates it about every 100 ms" : "");
        else
            printf("  energy counter  not available\n");
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "backend", json_string(kr_backend_name(b)));
        json_object_set_new(root, "devices", arr);
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(root);
    }
    return 0;
}

static int gpu_reset(kr_backend *b, int only, int all, const char *lock_dir, int force)
{
    int n = 0;
    kr_error err = {0};
    if (kr_backend_device_count(b, &n))
        return cli_report(KR_EBACKEND, kr_backend_error(b));
    if (!all && only >= n) {
        fprintf(stderr, "kareus gpu: --device: expected 0..%d or all (%d device%s), found %d\n", n - 1, n,
                n == 1 ? "" : "s", only);
        return CLI_EXIT_INPUT;
    }
    int status = 0;
    for (int d = all ? 0 : only; d < (all ? n : only + 1); d++) {
        kr_gpu_device_info info;
        int rc = kr_backend_device_info(b, d, &info, &err);
        if (rc)
            return cli_report(rc, &err);
        kr_gpu_lock lock = {.fd = -1};
        if (info.uuid[0] && (rc = kr_runtime_gpu_lock(lock_dir, info.uuid, d, info.name, &lock, &err)) != KR_OK) {
            if (!force) {
                fprintf(stderr, "kareus gpu reset: not resetting: %s (--force resets anyway)\n", err.msg);
                status = CLI_EXIT_FAIL;
                continue;
            }
            fprintf(stderr, "kareus gpu reset: --force: %s\n", err.msg);
        }
        rc = kr_backend_reset_clock(b, d);
        kr_runtime_gpu_unlock(&lock);
        if (rc) {
            fprintf(stderr, "kareus gpu reset: device %d: %s\n", d, kr_backend_errmsg(b));
            status = CLI_EXIT_FAIL;
            continue;
        }
        printf("device %d (%s): SM clock lock removed (driver default)\n", d, info.name);
    }
    return status;
}

static int gpu_restore(kr_backend *b, int only, const char *lock_dir)
{
    int n = 0;
    if (kr_backend_device_count(b, &n))
        return cli_report(KR_EBACKEND, kr_backend_error(b));
    if (only >= n) {
        fprintf(stderr, "kareus gpu: --device: expected 0..%d or all (%d device%s), found %d\n", n - 1, n,
                n == 1 ? "" : "s", only);
        return CLI_EXIT_INPUT;
    }
    int status = 0;
    for (int d = only < 0 ? 0 : only; d < (only < 0 ? n : only + 1); d++) {
        kr_error err = {0};
        int restored = 0;
        int rc = kr_runtime_gpu_restore(b, d, lock_dir, &restored, &err);
        if (rc) {
            fprintf(stderr, "kareus gpu restore: device %d: %s\n", d, err.msg);
            status = kr_status_is_input_error(rc) ? CLI_EXIT_INPUT : CLI_EXIT_FAIL;
        } else if (restored)
            printf("%s\n", err.msg);
        else
            printf("device %d: nothing to restore (no Kareus process died holding it)\n", d);
    }
    return status;
}

int cmd_gpu(int argc, char **argv)
{
    int urc = cli_opt_subcommand_usage(argc, argv, &gpu_set);
    if (urc >= 0)
        return urc;
    const char *sub = argv[1];
    gpu_args a = {.device = -1};
    int next;
    int prc = cli_opt_parse(&gpu_set, argc, argv, 2, &a, &next);
    if (prc)
        return prc;
    if (next < argc)
        return cli_usage_error("gpu", "unexpected argument '%s'", argv[next]);
    const char *spec = a.spec, *lock_dir = a.lock_dir;
    int device = a.device, all = a.all, json = a.json, force = a.force;
    int is_info = strcmp(sub, "info") == 0, is_reset = strcmp(sub, "reset") == 0,
        is_restore = strcmp(sub, "restore") == 0;
    if (!is_info && !is_reset && !is_restore)
        return cli_usage_error("gpu", "unknown subcommand '%s' (expected info, reset or restore)", sub);
    if (is_restore && (force || json))
        return cli_usage_error("gpu", "restore: --force and --json belong to reset and info");
    if (is_info && (all || force || lock_dir))
        return cli_usage_error("gpu", "info: --device all, --force and --lock-dir belong to reset");
    if (is_reset && json)
        return cli_usage_error("gpu", "reset: --json belongs to info");
    kr_backend *b;
    int rc = open_backend(spec, &b);
    if (rc)
        return rc;
    rc = is_info      ? gpu_info(b, device, json)
         : is_restore ? gpu_restore(b, all ? -1 : device, lock_dir)
                      : gpu_reset(b, device < 0 ? 0 : device, all, lock_dir, force);
    kr_backend_destroy(b);
    return rc;
}
