/*
 * test_api.c — the public face of libkareus as a consumer sees it: the version macros of
 * kareus/version.h agree with kr_version() and with the project version CMake builds, and the
 * umbrella header compiles on its own. (Exported symbols and C++ consumers are checked by
 * tests/cli/test_symbols.sh and the consumer builds of .ci/run.)
 */
#include "testutil.h"

#include "kareus/kareus.h"

#ifndef KR_PROJECT_VERSION
#error "CMakeLists.txt passes KR_PROJECT_VERSION (project(VERSION)) to this test"
#endif

/* kr_version() is "MAJOR.MINOR.PATCH" of the macros. */
static void version_string_matches_macros(void **state)
{
    (void)state;
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", KAREUS_VERSION_MAJOR, KAREUS_VERSION_MINOR, KAREUS_VERSION_PATCH);
    assert_string_equal(kr_version(), want);
    assert_int_equal(KAREUS_VERSION_NUMBER,
                     KAREUS_VERSION_ENCODE(KAREUS_VERSION_MAJOR, KAREUS_VERSION_MINOR, KAREUS_VERSION_PATCH));
    assert_true(KAREUS_VERSION_NUMBER >= KAREUS_VERSION_ENCODE(0, 1, 0));
}

/* The header's numbers are what CMake's project(VERSION) built (SONAME, kareus.pc, CMake package). */
static void version_matches_project(void **state)
{
    (void)state;
    assert_string_equal(kr_version(), KR_PROJECT_VERSION);
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(version_string_matches_macros),
    cmocka_unit_test(version_matches_project),
};
KR_TEST_MAIN(tests)
