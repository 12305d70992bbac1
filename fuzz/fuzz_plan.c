/* fuzz_plan.c — libFuzzer harness: plan JSON through the runtime's schedule check
 * (kr_runtime_plan_check, as every runtime open and `kareus plan validate` run it), then against
 * the built-in default job (kr_plan_validate: clocks, comm keys, order). */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_write("plan.json", data, size, path, sizeof path) == NULL)
        return 0;
    kr_error err = {0};
    if (kr_runtime_plan_check(path, -1, NULL, &err) == KR_OK)
        (void)kr_runtime_plan_check(path, -1, "default", &err);
    return 0;
}
