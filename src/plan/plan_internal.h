/*
 * plan_internal.h — what the plan module's files share (not public API): the strict reader of
 * the Python literal subset that the published system's plan files use (pylit.c), for the
 * artifact import (artifact.c).
 */
#ifndef KR_PLAN_INTERNAL_H
#define KR_PLAN_INTERNAL_H

#include "kareus/status.h"

typedef enum kr__pv_type { KR__PV_LIST, KR__PV_TUPLE, KR__PV_STR, KR__PV_INT, KR__PV_FLOAT } kr__pv_type;

typedef struct kr__pv {
    kr__pv_type t;
    int line, col;    /* Where the value starts (1-based). */
    int n;            /* Items of a list or tuple. */
    struct kr__pv *items;
    char *s;          /* KR__PV_STR (NUL-terminated). */
    long long i;      /* KR__PV_INT. */
    double d;         /* KR__PV_FLOAT. */
} kr__pv;

/* The "# Iteration N <label>: <value>" trailer lines. */
typedef struct kr__pv_trailer {
    long long iter;   /* -1 when absent. */
    int have_change, have_total, have_with;
    double change, total, with;
} kr__pv_trailer;

/* Reads path as one top-level list literal followed only by blanks and comments (the trailer
 * lines go to *tr). On success *root holds the list (free with kr__plan_pv_free); on failure
 * it is empty and err names file:line:column, what was expected and what was found. */
int kr__plan_read_literal(const char *path, kr__pv *root, kr__pv_trailer *tr, kr_error *err);

/* Frees what a value holds (recursively) and zeroes it; NULL is allowed. */
void kr__plan_pv_free(kr__pv *v);

/* "a list", "a tuple", "a string", "an integer" or "a float", for messages. */
const char *kr__plan_pv_what(const kr__pv *v);

#endif
