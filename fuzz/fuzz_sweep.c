/* fuzz_sweep.c — libFuzzer harness: comm-sweep logs (kareus profile --comm-sweep, issue 31). The
 * input is a whole log: read as `kareus calibrate` reads it (kr_profiler_sweep_read, then the fit
 * of the clock law on what it holds), detected by its header (kr_profiler_sweep_is_log), and
 * opened for resuming as `kareus profile --comm-sweep` opens it (header checked against the
 * default job, torn last line dropped). */
#include "fuzz_common.h"

#include "kareus/kareus.h"
#include "kareus/profiler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kr_job job;
    static int ready;
    if (!ready) {
        kr_job_default(&job);
        ready = 1;
    }
    char path[512];
    if (fuzz_write("s.jsonl", data, size, path, sizeof path) == NULL)
        return 0;
    kr_error err = {0};
    (void)kr_profiler_sweep_is_log(path);
    kr_profiler_sweep_data d;
    if (kr_profiler_sweep_read(path, &d, &err) == KR_OK) {
        kr_profiler_sweep_fit f;
        if (d.n <= 64) /* the fit is the slow part; small logs cover its branches */
            (void)kr_profiler_sweep_fit_law(d.p, d.n, d.clock_max_mhz, &f, &err);
        kr_profiler_sweep_data_free(&d);
    }
    kr_profiler_sweep_log *log = NULL;
    if (kr_profiler_sweep_log_open(path, &job, "sim", 0, &log, &err) == KR_OK)
        kr_profiler_sweep_log_close(log);
    return 0;
}
