/*
 * testutil.h — the shared test harness: cmocka plus a main that runs one test by name.
 *
 * CMake registers every cmocka_unit_test(name) of tests/test_<module>.c as the CTest test
 * "<module>.<name>", run as `test_<module> <name>`; without an argument all tests of the file
 * run. A test that cannot run here calls KR_SKIP("why"), which prints the reason and makes
 * CTest report it as skipped (exit 77).
 */
#ifndef KR_TESTUTIL_H
#define KR_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define KR_TEST_MAIN(tests)                                                                       \
    int main(int argc, char **argv)                                                               \
    {                                                                                             \
        if (argc > 1) {                                                                           \
            for (size_t i_ = 0; i_ < sizeof(tests) / sizeof((tests)[0]); i_++)                    \
                if (strcmp((tests)[i_].name, argv[1]) == 0)                                       \
                    return _cmocka_run_group_tests(argv[1], &(tests)[i_], 1, NULL, NULL);         \
            fprintf(stderr, "no test named %s\n", argv[1]);                                       \
            return 1;                                                                             \
        }                                                                                         \
        return cmocka_run_group_tests(tests, NULL, NULL);                                         \
    }

/* Skips the current test with a visible reason (CTest SKIP_RETURN_CODE 77). */
#define KR_SKIP(...)                                                                              \
    do {                                                                                          \
        fprintf(stderr, "SKIPPED: ");                                                             \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fprintf(stderr, "\n");                                                                    \
        exit(77);                                                                                 \
    } while (0)

/* Asserts |a - b| <= tol * max(1, |a|, |b|) and prints both values if not. */
#define KR_ASSERT_CLOSE(a, b, tol)                                                                \
    do {                                                                                          \
        double a_ = (a), b_ = (b), s_ = 1.0;                                                      \
        if (a_ > s_ || -a_ > s_) s_ = a_ > 0 ? a_ : -a_;                                           \
        if (b_ > s_ || -b_ > s_) s_ = b_ > 0 ? b_ : -b_;                                           \
        if (!((a_ - b_) <= (tol) * s_ && (b_ - a_) <= (tol) * s_)) {                              \
            print_error("%s = %.17g, %s = %.17g, relative tolerance %g\n", #a, a_, #b, b_, (double)(tol)); \
            fail();                                                                               \
        }                                                                                         \
    } while (0)

/* Asserts a library call returned rc and, for errors, that the message contains needle. */
#define KR_ASSERT_ERR(call, rc_expected, err, needle)                                             \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != (rc_expected)) {                                                               \
            print_error("%s returned %d, expected %d (%s)\n", #call, rc_, (rc_expected), (err).msg); \
            fail();                                                                               \
        }                                                                                         \
        if ((needle) != NULL && strstr((err).msg, (needle)) == NULL) {                            \
            print_error("error message '%s' lacks '%s'\n", (err).msg, (needle));                  \
            fail();                                                                               \
        }                                                                                         \
    } while (0)

/* A fresh scratch directory under the build tree for one test (created, emptied); under
 * $KR_TEST_TMPDIR instead when set (tests run as another user, e.g. nobody in CI). */
static inline const char *kr_test_tmpdir(const char *name)
{
    static char buf[1024];
    const char *base = getenv("KR_TEST_TMPDIR");
    if (base && *base)
        snprintf(buf, sizeof buf, "%s/%s", base, name);
    else
        snprintf(buf, sizeof buf, "%s/test-tmp/%s", KR_BINARY_DIR, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
    if (system(cmd) != 0)
        return NULL;
    return buf;
}

/* Writes text to path (test helper; aborts the test on failure). */
static inline void kr_test_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#endif
