/* fuzz_job.c — libFuzzer harness: job spec JSON (kr_job_load, validation included). */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_write("job.json", data, size, path, sizeof path) == NULL)
        return 0;
    kr_job job;
    kr_error err = {0};
    (void)kr_job_load(path, &job, &err);
    return 0;
}
