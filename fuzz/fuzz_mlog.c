/* fuzz_mlog.c — libFuzzer harness: measurement log lines. The input is a whole log: through
 * kr_search_log_check (header, every line, as `kareus search --log` checks it) and through the
 * replay backend (our lines and the artifact's eval_results.jsonl lines, key given). */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kr_job job;
    static int ready;
    if (!ready) {
        kr_job_default(&job);
        ready = 1;
    }
    char path[512], spec[600];
    if (fuzz_write("m.jsonl", data, size, path, sizeof path) == NULL)
        return 0;
    kr_error err = {0};
    (void)kr_search_log_check(path, &job, &err);
    snprintf(spec, sizeof spec, "fwd_mlp=%s", path);
    const char *paths[1] = {spec};
    kr_backend *b = NULL;
    if (kr_replay_backend_create(&job, paths, 1, &b, &err) == KR_OK)
        kr_backend_destroy(b);
    return 0;
}
