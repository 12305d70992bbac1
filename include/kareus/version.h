/*
 * version.h — the version of libkareus, for the preprocessor.
 *
 * These three numbers are the single source of the version: CMakeLists.txt reads them from this
 * file for project(VERSION), the SONAME, kareus.pc and kareusConfigVersion.cmake, and
 * kr_version() returns them as "MAJOR.MINOR.PATCH" (tests/test_api.c checks that the two agree).
 * Compare KAREUS_VERSION_NUMBER against KAREUS_VERSION_ENCODE(maj, min, patch) to require one.
 */
#ifndef KAREUS_VERSION_H
#define KAREUS_VERSION_H

#include "kareus/export.h"

#define KAREUS_VERSION_MAJOR 0
#define KAREUS_VERSION_MINOR 1
#define KAREUS_VERSION_PATCH 0

#define KAREUS_VERSION_ENCODE(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define KAREUS_VERSION_NUMBER                                                                  \
    KAREUS_VERSION_ENCODE(KAREUS_VERSION_MAJOR, KAREUS_VERSION_MINOR, KAREUS_VERSION_PATCH)

KR_BEGIN_DECLS
/* Version string of the library, "MAJOR.MINOR.PATCH" of the numbers above, e.g. "0.1.0". */
const char *kr_version(void);
KR_END_DECLS

#endif
