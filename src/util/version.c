/* version.c — the library version (set by CMake from the project version). */
#include "kareus/kareus.h"

#ifndef KR_VERSION
#define KR_VERSION "0.0.0"
#endif

const char *kr_version(void)
{
    return KR_VERSION;
}
