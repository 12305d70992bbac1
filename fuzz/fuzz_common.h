/*
 * fuzz_common.h — shared by the libFuzzer harnesses in fuzz/: every parser of Kareus reads
 * files, so each input is written to a private file (on /dev/shm when it exists, where writes
 * and fsync cost nothing) and the parser's public entry point reads it back, text checks
 * included. A harness never asserts on the result: bad input must give an error code, and
 * anything else — a crash, a sanitizer report, a leak — is what the fuzzer finds.
 */
#ifndef KR_FUZZ_COMMON_H
#define KR_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A directory of this process's own (created once); path of NAME inside it in buf. */
static inline const char *fuzz_path(const char *name, char *buf, size_t cap)
{
    static char dir[256];
    if (dir[0] == '\0') {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        snprintf(dir, sizeof dir, "%s/kareus-fuzz.%ld", base, (long)getpid());
        mkdir(dir, 0700);
    }
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

/* Writes the input to NAME in the private directory and returns its path (NULL on failure). */
static inline const char *fuzz_write(const char *name, const uint8_t *data, size_t size, char *buf, size_t cap)
{
    fuzz_path(name, buf, cap);
    FILE *f = fopen(buf, "wb");
    if (f == NULL)
        return NULL;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return NULL;
    }
    fclose(f);
    return buf;
}

#endif
