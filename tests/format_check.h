/*
 * format_check.h — a file format's description (kr_job_format_field, kr_plan_format_field) and
 * the files its writer makes agree: every key of a written file (nested ones as "a.b", entries
 * of arrays as "a[].b") is a described field, and every described field is in the file (write
 * it with every optional field present). Both come from one field table; this keeps it so.
 */
#ifndef KR_TEST_FORMAT_CHECK_H
#define KR_TEST_FORMAT_CHECK_H

#include <jansson.h>
#include <string.h>

#include "kareus/format.h"

enum { FC_MAX = 128, FC_LEN = 96 };

static void fc_collect(json_t *v, const char *prefix, char (*paths)[FC_LEN], int *n)
{
    if (json_is_array(v)) {
        char sub[FC_LEN];
        snprintf(sub, sizeof sub, "%.*s[]", (int)strlen(prefix) - 1, prefix); /* "a." -> "a[]" */
        for (size_t i = 0; i < json_array_size(v); i++)
            if (json_is_object(json_array_get(v, i))) {
                char p[FC_LEN];
                snprintf(p, sizeof p, "%s.", sub);
                fc_collect(json_array_get(v, i), p, paths, n);
            }
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        char p[FC_LEN];
        snprintf(p, sizeof p, "%s%s", prefix, key);
        int seen = 0;
        for (int i = 0; i < *n; i++)
            seen |= strcmp(paths[i], p) == 0;
        if (!seen && *n < FC_MAX)
            snprintf(paths[(*n)++], FC_LEN, "%s", p);
        if (json_is_object(val) || json_is_array(val)) {
            char q[FC_LEN];
            snprintf(q, sizeof q, "%s.", p);
            fc_collect(val, q, paths, n);
        }
    }
}

/* Asserts that the fields of the file at path are exactly the described ones. */
static void fc_check(const char *path, int (*field)(int i, kr_field_info *out))
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    static char paths[FC_MAX][FC_LEN];
    int n = 0, rows = 0;
    fc_collect(root, "", paths, &n);
    json_decref(root);
    kr_field_info f;
    for (; field(rows, &f) == KR_OK; rows++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found |= strcmp(paths[i], f.path) == 0;
        if (!found)
            print_error("described field %s is not in %s\n", f.path, path);
        assert_true(found);
        assert_non_null(f.description);
        assert_true(f.type != NULL && f.type[0]);
    }
    if (n != rows)
        for (int i = 0; i < n; i++)
            print_error("written: %s\n", paths[i]);
    assert_int_equal(n, rows);
}

#endif
