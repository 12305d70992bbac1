/* version.c — the library version, "MAJOR.MINOR.PATCH" from include/kareus/version.h. */
#include "kareus/version.h"

#define KR__STR(x) #x
#define KR__XSTR(x) KR__STR(x)

const char *kr_version(void)
{
    return KR__XSTR(KAREUS_VERSION_MAJOR) "." KR__XSTR(KAREUS_VERSION_MINOR) "." KR__XSTR(KAREUS_VERSION_PATCH);
}
