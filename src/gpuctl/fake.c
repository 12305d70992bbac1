/*
 * fake.c — a scripted GPU for tests: both backend interfaces with every call recorded, failures
 * injected on the N-th call (or every call of chosen operations), optional sleeps inside calls
 * (a slow driver) and an energy counter that grows at power × time from an injectable clock,
 * changing only every energy_period_s like NVML's counter.
 *
 * It is thread-safe (the runtime calls it from a worker thread while tests read the log) and its
 * file log is written with one O_APPEND write per call, so a forked child killed by a signal
 * leaves complete lines behind for the parent to check.
 */
#include "kareus/gpuctl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

/* The operations' names, X(value, name) (the call log and the fail/sleep specs use them). */
#define FAKE_OP_NAMES(X)                                                                                   \
    X(KR_GPUCTL_FAKE_MEASURE, "measure")                                                                   \
    X(KR_GPUCTL_FAKE_DEVICE_COUNT, "device_count")                                                         \
    X(KR_GPUCTL_FAKE_SUPPORTED_CLOCKS, "supported_clocks")                                                 \
    X(KR_GPUCTL_FAKE_GET_CLOCK, "get_clock")                                                               \
    X(KR_GPUCTL_FAKE_SET_CLOCK, "set_clock")                                                               \
    X(KR_GPUCTL_FAKE_RESET_CLOCK, "reset_clock")                                                           \
    X(KR_GPUCTL_FAKE_READ_ENERGY, "read_energy")                                                           \
    X(KR_GPUCTL_FAKE_READ_POWER, "read_power")                                                             \
    X(KR_GPUCTL_FAKE_DEVICE_INFO, "device_info")

static const kr__ename op_names[] = {FAKE_OP_NAMES(KR__ENAME_ROW)};

const char *kr_gpuctl_fake_op_name(kr_gpuctl_fake_op op)
{
    return kr__ename_of(op_names, KR_ARRAY_LEN(op_names), (int)op);
}

int kr_gpuctl_fake_op_parse(const char *name, kr_gpuctl_fake_op *out)
{
    int v;
    if (kr__ename_parse(op_names, KR_ARRAY_LEN(op_names), name, &v))
        return KR_ENOTFOUND;
    *out = (kr_gpuctl_fake_op)v;
    return KR_OK;
}

typedef struct fake_dev {
    int locked_min, locked_max; /* present lock (0, 0: none) */
    int cur;                    /* present clock */
    double extra_j;             /* energy added by kr_gpuctl_fake_add_energy */
} fake_dev;

typedef struct fake_impl {
    pthread_mutex_t mu; /* guards everything below */
    kr_gpuctl_fake_config o;  /* options with defaults filled in (strings point into name/uuid) */
    char name[KR_GPU_NAME_MAX];
    char uuid[KR_GPU_UUID_MAX];
    fake_dev *dev;
    double t0;          /* creation time on o.now_s's clock */
    long seq;           /* calls so far */
    long counted;       /* calls of the ops in fail_ops so far */
    kr_gpuctl_fake_call *calls;
    size_t ncalls, cap;
    int log_fd;         /* -1 without a log file */
    int state_fd;       /* -1 without a state file */
} fake_impl;

/* ---- the optional state file (clocks that outlive the process) ---------------------------- */

/* Reads the devices' clocks from the state file (caller holds mu and the file's flock). */
static void state_load(fake_impl *m)
{
    char text[8192];
    ssize_t n = pread(m->state_fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return;
    text[n] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int d, a, b, c;
        if (sscanf(line, "%d %d %d %d", &d, &a, &b, &c) == 4 && d >= 0 && d < m->o.devices)
            m->dev[d] = (fake_dev){a, b, c, m->dev[d].extra_j};
    }
}

/* Writes the devices' clocks to the state file (caller holds mu and the file's flock). */
static void state_store(fake_impl *m)
{
    char text[8192];
    size_t len = 0;
    for (int d = 0; d < m->o.devices && len + 64 < sizeof text; d++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d %d %d %d\n", d, m->dev[d].locked_min,
                                m->dev[d].locked_max, m->dev[d].cur);
    if (pwrite(m->state_fd, text, len, 0) != (ssize_t)len || ftruncate(m->state_fd, (off_t)len) != 0) {
        /* A test that cannot write its state file sees the wrong clocks and fails. */
    }
}

/* Brackets a clock call: takes the file's lock and loads the clocks (no-op without a file). */
static void state_begin(fake_impl *m)
{
    if (m->state_fd >= 0) {
        while (flock(m->state_fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        state_load(m);
    }
}

static void state_end(fake_impl *m, int store)
{
    if (m->state_fd >= 0) {
        if (store)
            state_store(m);
        flock(m->state_fd, LOCK_UN);
    }
}

static double fake_now(const fake_impl *m)
{
    return m->o.now_s ? m->o.now_s(m->o.now_ud) : kr__now_s();
}

/* Sleeps for s seconds, resuming after signal interruptions. */
static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Starts a call: numbers it and decides whether it fails. Returns the injected status or KR_OK. */
static int call_begin(fake_impl *m, kr_gpuctl_fake_op op, long *seq)
{
    unsigned bit = KR_GPUCTL_FAKE_MASK(op);
    pthread_mutex_lock(&m->mu);
    *seq = ++m->seq;
    int rc = KR_OK;
    if (m->o.fail_ops == 0 || (m->o.fail_ops & bit)) {
        m->counted++;
        if (m->o.fail_call > 0 &&
            (m->counted == m->o.fail_call || (m->o.fail_repeat && m->counted > m->o.fail_call)))
            rc = m->o.fail_code;
    }
    if (rc == KR_OK && (m->o.perm_ops & bit))
        rc = KR_EPERM;
    double s = (m->o.sleep_ops & bit) ? m->o.sleep_s : 0;
    pthread_mutex_unlock(&m->mu);
    sleep_s(s);
    return rc;
}

/* Records a finished call (caller holds m->mu). */
static void record(fake_impl *m, long seq, kr_gpuctl_fake_op op, int dev, int a, int b, int rc)
{
    if (kr__grow((void **)&m->calls, &m->cap, m->ncalls + 1, sizeof *m->calls) == KR_OK)
        m->calls[m->ncalls++] = (kr_gpuctl_fake_call){seq, op, dev, a, b, rc};
    if (m->log_fd >= 0) {
        char line[96];
        int n = snprintf(line, sizeof line, "%ld %s %d %d %d %d\n", seq, kr_gpuctl_fake_op_name(op), dev, a, b, rc);
        if (n > 0 && write(m->log_fd, line, (size_t)n) < 0) {
            /* A test log that cannot be written shows up as missing lines in the test. */
        }
    }
}

/* Message of an injected failure. */
static int injected(kr_backend *b, int rc, kr_gpuctl_fake_op op, long seq)
{
    if (rc == KR_EPERM)
        return kr_error_set(kr_backend_error(b), rc, "fake GPU: %s (call %ld): no permission (imitates NVML_ERROR_NO_PERMISSION)",
                            kr_gpuctl_fake_op_name(op), seq);
    return kr_error_set(kr_backend_error(b), rc, "fake GPU: %s (call %ld): injected failure", kr_gpuctl_fake_op_name(op), seq);
}

static const kr_backend_class fake_class;

/* b's state, NULL when b is not a fake. */
static fake_impl *impl_of(const kr_backend *b)
{
    return kr_backend_state(b, &fake_class);
}

/* Common prologue: numbering, injected failure, device check. Returns KR_OK to proceed. */
static int enter(kr_backend *b, kr_gpuctl_fake_op op, int dev, long *seq)
{
    fake_impl *m = impl_of(b);
    int rc = call_begin(m, op, seq);
    if (rc == KR_OK && dev != -1 && (dev < 0 || dev >= m->o.devices))
        rc = kr_error_set(kr_backend_error(b), KR_EINVAL, "fake GPU: %s: device %d: expected an index in [0, %d)", kr_gpuctl_fake_op_name(op), dev,
                          m->o.devices);
    else if (rc != KR_OK)
        injected(b, rc, op, *seq);
    if (rc != KR_OK) {
        pthread_mutex_lock(&m->mu);
        record(m, *seq, op, dev, 0, 0, rc);
        pthread_mutex_unlock(&m->mu);
    }
    return rc;
}

static int clock_supported(const fake_impl *m, int mhz)
{
    return mhz >= m->o.min_mhz && mhz <= m->o.max_mhz && (m->o.max_mhz - mhz) % m->o.step_mhz == 0;
}

static int fake_measure(kr_backend *b, const kr_partition *p, const kr_config *c, kr_measurement *out)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_MEASURE, -1, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    if (!clock_supported(m, c->freq_mhz))
        rc = kr_error_set(kr_backend_error(b), KR_ERANGE, "fake GPU: measure: clock %d MHz is not in %d..%d step %d", c->freq_mhz,
                          m->o.min_mhz, m->o.max_mhz, m->o.step_mhz);
    else {
        /* Synthetic and deliberately simple: time inversely proportional to the clock. */
        memset(out, 0, sizeof *out);
        out->time_s = 0.01 * m->o.max_mhz / c->freq_mhz;
        out->energy_j = m->o.power_w * out->time_s;
        out->eff_energy_j = out->energy_j;
        out->repeats = 1;
    }
    record(m, seq, KR_GPUCTL_FAKE_MEASURE, -1, c->freq_mhz, c->sms, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int fake_device_count(kr_backend *b, int *count)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_DEVICE_COUNT, -1, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    *count = m->o.devices;
    record(m, seq, KR_GPUCTL_FAKE_DEVICE_COUNT, -1, *count, 0, KR_OK);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int fake_supported_clocks(kr_backend *b, int dev, int *mhz, int cap, int *n)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_SUPPORTED_CLOCKS, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    int cnt = (m->o.max_mhz - m->o.min_mhz) / m->o.step_mhz + 1;
    if (cnt > cap)
        rc = kr_error_set(kr_backend_error(b), KR_ERANGE, "fake GPU: %d clocks, room for %d", cnt, cap);
    else {
        for (int i = 0; i < cnt; i++)
            mhz[i] = m->o.max_mhz - i * m->o.step_mhz;
        *n = cnt;
    }
    record(m, seq, KR_GPUCTL_FAKE_SUPPORTED_CLOCKS, dev, cnt, 0, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int fake_get_clock(kr_backend *b, int dev, int *cur, int *lmin, int *lmax)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_GET_CLOCK, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    state_begin(m);
    *cur = m->dev[dev].cur;
    *lmin = m->dev[dev].locked_min;
    *lmax = m->dev[dev].locked_max;
    state_end(m, 0);
    record(m, seq, KR_GPUCTL_FAKE_GET_CLOCK, dev, *cur, 0, KR_OK);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int fake_set_clock(kr_backend *b, int dev, int min_mhz, int max_mhz)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_SET_CLOCK, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    if (!clock_supported(m, min_mhz) || !clock_supported(m, max_mhz) || min_mhz > max_mhz)
        rc = kr_error_set(kr_backend_error(b), KR_EINVAL, "fake GPU: set_clock: expected supported clocks min <= max, found [%d, %d]",
                          min_mhz, max_mhz);
    else {
        state_begin(m);
        m->dev[dev].locked_min = min_mhz;
        m->dev[dev].locked_max = max_mhz;
        m->dev[dev].cur = max_mhz;
        state_end(m, 1);
    }
    record(m, seq, KR_GPUCTL_FAKE_SET_CLOCK, dev, min_mhz, max_mhz, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int fake_reset_clock(kr_backend *b, int dev)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_RESET_CLOCK, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    state_begin(m);
    m->dev[dev].locked_min = m->dev[dev].locked_max = 0;
    m->dev[dev].cur = m->o.cur_mhz;
    state_end(m, 1);
    record(m, seq, KR_GPUCTL_FAKE_RESET_CLOCK, dev, 0, 0, KR_OK);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static int fake_read_energy(kr_backend *b, int dev, double *energy_j)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_READ_ENERGY, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    double t = fake_now(m) - m->t0;
    pthread_mutex_lock(&m->mu);
    if (m->o.no_energy)
        rc = kr_error_set(kr_backend_error(b), KR_EUNSUPPORTED, "fake GPU: no energy counter (no_energy option)");
    else {
        if (m->o.energy_period_s > 0)
            t = floor(t / m->o.energy_period_s) * m->o.energy_period_s;
        *energy_j = m->o.power_w * (t > 0 ? t : 0) + m->dev[dev].extra_j;
    }
    record(m, seq, KR_GPUCTL_FAKE_READ_ENERGY, dev, 0, 0, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int fake_read_power(kr_backend *b, int dev, double *power_w)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_READ_POWER, dev, &seq);
    if (rc)
        return rc;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    *power_w = m->o.power_w;
    record(m, seq, KR_GPUCTL_FAKE_READ_POWER, dev, 0, 0, KR_OK);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

static void fake_destroy(void *state)
{
    fake_impl *m = state;
    if (m->log_fd >= 0)
        close(m->log_fd);
    if (m->state_fd >= 0)
        close(m->state_fd);
    pthread_mutex_destroy(&m->mu);
    free(m->calls);
    free(m->dev);
    free(m);
}

static int fake_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err);

static const kr_measure_ops fake_measure_ops = {fake_measure};
static const kr_control_ops fake_control_ops = {
    .device_count = fake_device_count,
    .supported_clocks = fake_supported_clocks,
    .get_clock = fake_get_clock,
    .set_clock = fake_set_clock,
    .reset_clock = fake_reset_clock,
    .read_energy = fake_read_energy,
    .read_power = fake_read_power,
    .device_info = fake_device_info,
};
static const kr_backend_class fake_class = {
    .name = "fake",
    .caps = KR_BACKEND_MEASURE | KR_BACKEND_CLOCK_LIST | KR_BACKEND_CLOCK_LOCK | KR_BACKEND_ENERGY | KR_BACKEND_POWER |
            KR_BACKEND_DEVICE_INFO,
    .measure = &fake_measure_ops,
    .control = &fake_control_ops,
    .destroy = fake_destroy,
};


static int fake_device_info(kr_backend *b, int dev, kr_gpu_device_info *out, kr_error *err)
{
    long seq;
    int rc = enter(b, KR_GPUCTL_FAKE_DEVICE_INFO, dev, &seq);
    if (rc)
        return kr_error_set(err, rc, "%s", kr_backend_errmsg(b));
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    memset(out, 0, sizeof *out);
    kr__strlcpy(out->name, m->name, sizeof out->name);
    snprintf(out->uuid, sizeof out->uuid, "%s-%d", m->uuid, dev);
    out->mem_clock_mhz = out->cur_mem_clock_mhz = 1215; /* an A100 40GB's one memory clock */
    record(m, seq, KR_GPUCTL_FAKE_DEVICE_INFO, dev, 0, 0, KR_OK);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

/* Fills the zero fields of o with the defaults and checks the result: KR_OK or KR_EINVAL. */
static int options_complete(kr_gpuctl_fake_config *o, kr_error *err)
{
    if (o->devices == 0)
        o->devices = 1;
    if (o->max_mhz == 0)
        o->max_mhz = 1410;
    if (o->min_mhz == 0)
        o->min_mhz = 210;
    if (o->step_mhz == 0)
        o->step_mhz = 15;
    if (o->cur_mhz == 0)
        o->cur_mhz = o->max_mhz;
    if (o->fail_code == 0)
        o->fail_code = KR_EBACKEND;
    if (o->sleep_ops == 0)
        o->sleep_ops = KR_GPUCTL_FAKE_CLOCK_WRITES;
    if (o->power_w == 0)
        o->power_w = 250;
    if (o->devices < 0 || o->devices > 64)
        return kr_error_set(err, KR_EINVAL, "fake GPU: devices: expected 1..64, found %d", o->devices);
    if (o->step_mhz <= 0 || o->min_mhz <= 0 || o->max_mhz < o->min_mhz || (o->max_mhz - o->min_mhz) % o->step_mhz != 0)
        return kr_error_set(err, KR_EINVAL,
                            "fake GPU: clocks: expected 0 < min_mhz <= max_mhz with max - min a multiple of step_mhz > 0, "
                            "found min %d, max %d, step %d",
                            o->min_mhz, o->max_mhz, o->step_mhz);
    if ((o->max_mhz - o->min_mhz) / o->step_mhz + 1 > KR_GPU_MAX_CLOCKS)
        return kr_error_set(err, KR_EINVAL, "fake GPU: clocks: at most %d supported clocks", KR_GPU_MAX_CLOCKS);
    if (o->fail_code >= 0)
        return kr_error_set(err, KR_EINVAL, "fake GPU: fail_code: expected a negative KR_E… status, found %d", o->fail_code);
    if (o->sleep_s < 0 || o->sleep_s > 60 || o->energy_period_s < 0 || o->power_w < 0)
        return kr_error_set(err, KR_EINVAL,
                            "fake GPU: expected sleep_s in [0, 60], energy_period_s >= 0 and power_w >= 0, found %g, %g, %g",
                            o->sleep_s, o->energy_period_s, o->power_w);
    return KR_OK;
}

int kr_gpuctl_fake_create(const kr_gpuctl_fake_config *opt, kr_backend **out, kr_error *err)
{
    *out = NULL;
    kr_gpuctl_fake_config o = opt ? *opt : (kr_gpuctl_fake_config){0};
    int rc = options_complete(&o, err);
    if (rc)
        return rc;
    fake_impl *m = calloc(1, sizeof *m);
    if (m == NULL)
        return kr_error_set(err, KR_ENOMEM, "fake GPU: out of memory");
    m->log_fd = m->state_fd = -1;
    m->dev = calloc((size_t)o.devices, sizeof *m->dev);
    if (m->dev == NULL) {
        free(m);
        return kr_error_set(err, KR_ENOMEM, "fake GPU: out of memory");
    }
    int lmin = o.locked_min_mhz, lmax = o.locked_max_mhz;
    for (int d = 0; d < o.devices; d++)
        m->dev[d] = (fake_dev){lmin, lmax, lmax ? lmax : o.cur_mhz, 0};
    kr__strlcpy(m->name, o.name ? o.name : "Kareus fake GPU", sizeof m->name);
    kr__strlcpy(m->uuid, o.uuid ? o.uuid : "GPU-fake", sizeof m->uuid);
    o.name = m->name;
    o.uuid = m->uuid;
    if (o.log_path) {
        m->log_fd = open(o.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (m->log_fd < 0) {
            int e = errno;
            free(m->dev);
            free(m);
            return kr_error_set(err, KR_EIO, "fake GPU: log %s: %s", o.log_path, strerror(e));
        }
    }
    if (o.state_path) {
        m->state_fd = open(o.state_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (m->state_fd < 0) {
            int e = errno;
            if (m->log_fd >= 0)
                close(m->log_fd);
            free(m->dev);
            free(m);
            return kr_error_set(err, KR_EIO, "fake GPU: state %s: %s", o.state_path, strerror(e));
        }
        m->o.devices = o.devices; /* state_load needs the device count */
        flock(m->state_fd, LOCK_EX);
        struct stat st;
        if (fstat(m->state_fd, &st) == 0 && st.st_size > 0)
            state_load(m);
        else
            state_store(m);
        flock(m->state_fd, LOCK_UN);
    }
    o.log_path = NULL; /* not kept: the caller's string may not outlive the backend */
    o.state_path = NULL;
    m->o = o;
    m->t0 = fake_now(m);
    pthread_mutex_init(&m->mu, NULL);
    rc = kr_backend_create(&fake_class, m, out);
    if (rc) {
        fake_destroy(m);
        return kr_error_set(err, rc, "fake GPU: out of memory");
    }
    return KR_OK;
}

int kr_gpuctl_fake_calls(kr_backend *b, kr_gpuctl_fake_call *out, int cap, int *n)
{
    if (impl_of(b) == NULL)
        return KR_EINVAL;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->ncalls && (int)i < cap; i++)
        out[i] = m->calls[i];
    *n = (int)m->ncalls;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

int kr_gpuctl_fake_state(kr_backend *b, int dev, int *lmin, int *lmax, int *cur)
{
    if (impl_of(b) == NULL || dev < 0 || dev >= impl_of(b)->o.devices)
        return KR_EINVAL;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    state_begin(m);
    *lmin = m->dev[dev].locked_min;
    *lmax = m->dev[dev].locked_max;
    *cur = m->dev[dev].cur;
    state_end(m, 0);
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

int kr_gpuctl_fake_add_energy(kr_backend *b, int dev, double energy_j)
{
    if (impl_of(b) == NULL || dev < 0 || dev >= impl_of(b)->o.devices)
        return KR_EINVAL;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    m->dev[dev].extra_j += energy_j;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}

int kr_gpuctl_fake_set_failure(kr_backend *b, long fail_call, int fail_repeat, int fail_code, unsigned fail_ops)
{
    if (impl_of(b) == NULL || fail_code > 0 || fail_call < 0)
        return KR_EINVAL;
    fake_impl *m = impl_of(b);
    pthread_mutex_lock(&m->mu);
    m->o.fail_call = fail_call;
    m->o.fail_repeat = fail_repeat;
    m->o.fail_code = fail_code ? fail_code : KR_EBACKEND;
    m->o.fail_ops = fail_ops;
    m->counted = 0;
    pthread_mutex_unlock(&m->mu);
    return KR_OK;
}
