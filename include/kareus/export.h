/*
 * export.h — what libkareus exports, and C++ linkage, in one place.
 *
 * The library is compiled with -fvisibility=hidden, so nothing is exported unless it is declared
 * between KR_BEGIN_DECLS and KR_END_DECLS in a public header (include/kareus/). These two macros
 * open and close the declarations of every public header: they give them C linkage when the
 * header is read by a C++ compiler, and default (exported) visibility with GCC and clang. The
 * internal kr__ functions are declared in src/ headers only, so they stay hidden in
 * libkareus.so; the tests reach them through the static library, where visibility plays no part.
 *
 * KR_HIDE_API (defined by a build that compiles some libkareus sources into another shared
 * library, as cuda/ does) keeps the public declarations hidden there too.
 */
#ifndef KAREUS_EXPORT_H
#define KAREUS_EXPORT_H

#if defined(__GNUC__) && !defined(KR_HIDE_API) /* GCC and clang both define __GNUC__ */
#define KR__VISIBILITY_PUSH _Pragma("GCC visibility push(default)")
#define KR__VISIBILITY_POP _Pragma("GCC visibility pop")
#else
#define KR__VISIBILITY_PUSH
#define KR__VISIBILITY_POP
#endif

#ifdef __cplusplus
#define KR_BEGIN_DECLS extern "C" { KR__VISIBILITY_PUSH
#define KR_END_DECLS KR__VISIBILITY_POP }
#else
#define KR_BEGIN_DECLS KR__VISIBILITY_PUSH
#define KR_END_DECLS KR__VISIBILITY_POP
#endif

#endif
