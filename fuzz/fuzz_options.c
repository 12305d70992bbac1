/* fuzz_options.c — libFuzzer harness: instruction options CSV (kr_options_read_csv), with the
 * stage and chunk counts free and fixed to a 2-stage job. */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_write("options.csv", data, size, path, sizeof path) == NULL)
        return 0;
    kr_options o;
    kr_error err = {0};
    if (kr_options_read_csv(path, 0, 0, &o, &err) == KR_OK)
        kr_options_free(&o);
    if (kr_options_read_csv(path, 2, 1, &o, &err) == KR_OK)
        kr_options_free(&o);
    return 0;
}
