/*
 * status.h — status codes, the error object and the allocator hook of libkareus.
 *
 * Every fallible function of the library returns an int: 0 (KR_OK) on success, a
 * negative KR_E… code from the single list below on failure. Details go to a
 * kr_error the caller passes (may be NULL): a code plus a human message of the form
 *   "FILE:LINE:COL: PATH: expected WHAT, found WHAT"
 * where each part is present when it is known. The library never prints and never
 * exits; the CLI decides what to show and which exit status to use (exit 2 for bad
 * input: KR_EINVAL, KR_EPARSE, KR_ERANGE, KR_ENOTFOUND, KR_EMISMATCH, KR_ECYCLE).
 */
#ifndef KAREUS_STATUS_H
#define KAREUS_STATUS_H

#include <stddef.h>

#include "kareus/export.h"
KR_BEGIN_DECLS

/* X(name, value, message). One list; kr_strerror and kr_status_name are generated. */
#define KR_STATUS_LIST(X)                                                              \
    X(KR_OK, 0, "success")                                                             \
    X(KR_EINVAL, -1, "invalid argument")                                               \
    X(KR_ENOMEM, -2, "out of memory")                                                  \
    X(KR_EIO, -3, "input/output error")                                                \
    X(KR_EPARSE, -4, "malformed input")                                                \
    X(KR_ERANGE, -5, "value out of range")                                             \
    X(KR_ENOTFOUND, -6, "not found")                                                   \
    X(KR_EMISMATCH, -7, "inputs do not match each other")                              \
    X(KR_ECYCLE, -8, "graph has a cycle")                                              \
    X(KR_EINFEASIBLE, -9, "no feasible solution")                                      \
    X(KR_EUNSUPPORTED, -10, "operation not supported")                                 \
    X(KR_ENOLIB, -11, "required library not available")                                \
    X(KR_ENODEV, -12, "no GPU device")                                                 \
    X(KR_EPERM, -13, "permission denied")                                              \
    X(KR_EBACKEND, -14, "backend call failed")                                         \
    X(KR_ESTATE, -15, "call out of order")                                             \
    X(KR_EBUSY, -16, "resource busy")                                                  \
    X(KR_ETIMEDOUT, -17, "timed out")                                                  \
    X(KR_EINTERNAL, -18, "internal error")

enum {
#define KR_STATUS_ENUM_(name, value, msg) name = value,
    KR_STATUS_LIST(KR_STATUS_ENUM_)
#undef KR_STATUS_ENUM_
};

/* Longest message an error object holds (longer messages are truncated, never overrun). */
#define KR_ERROR_MSG_MAX 1024

/* Error detail filled by a failing call. A zeroed kr_error is a valid "no error". */
typedef struct kr_error {
    int code;                   /* KR_OK or a KR_E… code. */
    char msg[KR_ERROR_MSG_MAX]; /* Human-readable detail, NUL-terminated; may be empty. */
} kr_error;

/* Static message of a status code ("unknown status" for codes not in the list). */
const char *kr_strerror(int code);

/* Symbolic name of a status code, e.g. "KR_EPARSE" ("KR_E?" if unknown). */
const char *kr_status_name(int code);

/*
 * Sets err (if not NULL) to code and a printf-style message; returns code so callers
 * can write `return kr_error_set(err, KR_EINVAL, "...")`.
 */
int kr_error_set(kr_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to err's message (context added on the way up); returns err->code. */
int kr_error_prefix(kr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears err (code KR_OK, empty message). NULL is allowed. */
void kr_error_clear(kr_error *err);

/* 1 when a status code means "the user's input is wrong" (the CLI exits 2 for those). */
int kr_status_is_input_error(int code);

/*
 * Allocator hook. Stateful runtime paths take one of these so tests can make the N-th
 * allocation fail; NULL members (or a NULL allocator) mean libc malloc/realloc/free.
 */
typedef struct kr_allocator {
    void *(*alloc)(void *ud, size_t size);              /* Like malloc. */
    void *(*realloc)(void *ud, void *ptr, size_t size); /* Like realloc. */
    void (*free)(void *ud, void *ptr);                  /* Like free; NULL is a no-op. */
    void *ud;                                           /* Passed to each call. */
} kr_allocator;

KR_END_DECLS
#endif
