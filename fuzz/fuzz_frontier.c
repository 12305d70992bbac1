/* fuzz_frontier.c — libFuzzer harness: partition frontier files, CSV and JSON (kr_frontier_read
 * picks the format from the first bytes). */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_write("frontier", data, size, path, sizeof path) == NULL)
        return 0;
    kr_partition_frontier f;
    kr_error err = {0};
    if (kr_frontier_read(path, &f, &err) == KR_OK)
        kr_frontier_free(&f);
    return 0;
}
