/* fuzz_summary.c — libFuzzer harness: summary.json through `kareus report` (kr_report_html),
 * which reads it, resolves the pictures it names and writes report.html beside it. */
#include "fuzz_common.h"

#include "kareus/kareus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512], dir[512];
    if (fuzz_write("summary.json", data, size, path, sizeof path) == NULL)
        return 0;
    fuzz_path("", dir, sizeof dir);
    kr_error err = {0};
    (void)kr_report_html(dir, &err);
    return 0;
}
