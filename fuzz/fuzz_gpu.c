/* fuzz_gpu.c — libFuzzer harness: GPU entry JSON (kr_gpu_read_json) and, when it parses, a job
 * that names it ({"gpu": {"file": ...}}), so the clocks and counts it gives reach validation. */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512], jpath[512];
    if (fuzz_write("gpu.json", data, size, path, sizeof path) == NULL)
        return 0;
    kr_gpu gpu;
    kr_error err = {0};
    if (kr_gpu_read_json(path, &gpu, &err) != KR_OK)
        return 0;
    static const char job[] = "{\"schema\": \"kareus.job\", \"gpu\": {\"file\": \"gpu.json\"}}\n";
    if (fuzz_write("job.json", (const uint8_t *)job, sizeof job - 1, jpath, sizeof jpath) == NULL)
        return 0;
    kr_job j;
    (void)kr_job_load(jpath, &j, &err);
    return 0;
}
