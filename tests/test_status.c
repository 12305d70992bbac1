/* test_status.c — status codes, error messages and the shared utilities (JSON, CSV, files). */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kareus/status.h"
#include "util/util.h"

static void strerror_covers_every_code(void **state)
{
    (void)state;
    assert_string_equal(kr_strerror(KR_OK), "success");
    assert_string_equal(kr_status_name(KR_EPARSE), "KR_EPARSE");
    for (int c = 0; c >= KR_EINTERNAL; c--)
        assert_string_not_equal(kr_strerror(c), "unknown status");
    assert_string_equal(kr_strerror(-999), "unknown status");
    assert_true(kr_status_is_input_error(KR_EPARSE));
    assert_false(kr_status_is_input_error(KR_ENOMEM));
}

static void error_set_and_prefix(void **state)
{
    (void)state;
    kr_error e = {0};
    assert_int_equal(kr_error_set(&e, KR_ERANGE, "x=%d", 3), KR_ERANGE);
    kr_error_prefix(&e, "file.json");
    assert_string_equal(e.msg, "file.json: x=3");
    assert_int_equal(kr_error_set(NULL, KR_EIO, "ignored"), KR_EIO);
}

static void json_paths_in_messages(void **state)
{
    (void)state;
    kr_error e = {0};
    json_t *root;
    assert_int_equal(kr__json_load_text("{\"a\": {\"b\": \"x\"}}", "t.json", &root, &e), KR_OK);
    kr__jctx c;
    kr__jctx_init(&c, "t.json", &e);
    size_t m = kr__jpush_key(&c, "a");
    int v;
    KR_ASSERT_ERR(kr__jint32(&c, json_object_get(root, "a"), "b", 1, 0, 10, 0, &v), KR_EPARSE, e,
                  "t.json: $.a.b: expected an integer, found string \"x\"");
    kr__jpop(&c, m);
    static const char *const allowed[] = {"z", NULL};
    KR_ASSERT_ERR(kr__jobject(&c, root, allowed), KR_EPARSE, e, "$.a: unknown field (allowed: z)");
    json_decref(root);
    KR_ASSERT_ERR(kr__json_load_text("{\n  \"a\": ,\n}", "bad.json", &root, &e), KR_EPARSE, e, "bad.json:2:");
}

static void csv_reader_and_errors(void **state)
{
    (void)state;
    kr_error e = {0};
    kr__csv t;
    assert_int_equal(kr__csv_parse("a,b\n# comment\n1, \"x,y\"\n\n2,3\n", "t.csv", &t, &e), KR_OK);
    assert_int_equal(t.nrows, 2);
    assert_string_equal(kr__csv_cell(&t, 0, 1), "x,y");
    double d;
    KR_ASSERT_ERR(kr__csv_double(&t, 0, 1, &d, &e), KR_EPARSE, e, "t.csv:3: column 'b'");
    assert_int_equal(kr__csv_double(&t, 1, 1, &d, &e), KR_OK);
    assert_true(d == 3.0);
    int col;
    KR_ASSERT_ERR(kr__csv_need_col(&t, "zz", &col, &e), KR_EPARSE, e, "column named 'zz'");
    kr__csv_free(&t);
    KR_ASSERT_ERR(kr__csv_parse("a,b\n1\n", "u.csv", &t, &e), KR_EPARSE, e, "u.csv:2: expected 2 fields");
}

static void atomic_write_leaves_no_partial_file(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("atomic");
    assert_non_null(dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    kr_error e = {0};
    assert_int_equal(kr__write_file_atomic(path, "hello", 5, &e), KR_OK);
    kr__afile af;
    assert_int_equal(kr__afile_open(&af, path, &e), KR_OK);
    fputs("partial", af.f);
    kr__afile_abort(&af);
    char *text;
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    assert_string_equal(text, "hello");
    free(text);
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/missing-dir/out.txt", dir);
    KR_ASSERT_ERR(kr__write_file_atomic(bad, "x", 1, &e), KR_EIO, e, "cannot write");
}

/* Counts directory entries whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void atomic_write_never_follows_a_planted_symlink(void **state)
{
    (void)state;
    const char *dir = kr_test_tmpdir("atomic_symlink");
    assert_non_null(dir);
    char victim[1200], path[1200], tmpl[1300];
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    snprintf(path, sizeof path, "%s/out.json", dir);
    kr_test_write(victim, "root-only secret\n");
    assert_int_equal(chmod(victim, 0600), 0);
    unlink(path);
    assert_int_equal(symlink(victim, path), 0);
    /* The old temp name scheme: a symlink planted there must not matter either. */
    snprintf(tmpl, sizeof tmpl, "%s.tmp.%ld", path, (long)getpid());
    unlink(tmpl);
    assert_int_equal(symlink(victim, tmpl), 0);
    kr_error e = {0};
    assert_int_equal(kr__write_file_atomic(path, "new", 3, &e), KR_OK);
    /* The symlink itself was replaced; its target is untouched, mode included. */
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    char *text;
    assert_int_equal(kr__read_file(victim, &text, NULL, &e), KR_OK);
    assert_string_equal(text, "root-only secret\n");
    free(text);
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(kr__read_file(path, &text, NULL, &e), KR_OK);
    assert_string_equal(text, "new");
    free(text);
    /* A new file gets 0666 & ~umask, never the temp file's 0600. */
    char fresh[1200];
    snprintf(fresh, sizeof fresh, "%s/fresh.txt", dir);
    unlink(fresh);
    mode_t old = umask(022);
    assert_int_equal(kr__write_file_atomic(fresh, "x", 1, &e), KR_OK);
    umask(old);
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    /* Aborts and failures leave no temp file behind. */
    kr__afile af;
    assert_int_equal(kr__afile_open(&af, fresh, &e), KR_OK);
    fputs("partial", af.f);
    kr__afile_abort(&af);
    assert_int_equal(count_prefixed(dir, "fresh.txt.tmp."), 0);
    /* Stale temp files of a killed writer (regular, 10+ minutes old) are removed on the next
     * commit; fresh ones and symlinks are left alone. */
    char stale[1300], young[1300];
    snprintf(stale, sizeof stale, "%s.tmp.99999", fresh);
    snprintf(young, sizeof young, "%s.tmp.abcdef", fresh);
    kr_test_write(stale, "old");
    kr_test_write(young, "new");
    struct timespec times[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(utimensat(AT_FDCWD, stale, times, 0), 0);
    assert_int_equal(kr__write_file_atomic(fresh, "y", 1, &e), KR_OK);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(young, F_OK), 0);
    assert_int_equal(lstat(tmpl, &st), 0); /* the planted symlink is not ours to remove */
    unlink(young);
    /* A directory is not a file to write. */
    KR_ASSERT_ERR(kr__write_file_atomic(dir, "x", 1, &e), KR_EINVAL, e, "is a directory");
    KR_ASSERT_ERR(kr__write_file_atomic("", "x", 1, &e), KR_EINVAL, e, "empty output file name");
    unlink(tmpl);
}

static void text_checks_name_file_and_place(void **state)
{
    (void)state;
    kr_error e = {0};
    KR_ASSERT_ERR(kr__text_check("\xef\xbb\xbf{}", 5, "a.json", 0, &e), KR_EPARSE, e, "a.json:1:1: expected text, found a UTF-8 byte-order mark");
    KR_ASSERT_ERR(kr__text_check("{}\n{\0}", 6, "b.json", 0, &e), KR_EPARSE, e, "b.json:2:2: expected text, found a NUL byte");
    KR_ASSERT_ERR(kr__text_check("a\r\nb", 4, "c.csv", KR__TEXT_NO_CR, &e), KR_EPARSE, e, "c.csv:1:2: expected LF line endings");
    assert_int_equal(kr__text_check("a\r\nb", 4, "c.csv", 0, &e), KR_OK);
    const char *dir = kr_test_tmpdir("text_checks");
    char *text;
    KR_ASSERT_ERR(kr__read_text(dir, &text, NULL, 0, &e), KR_EINVAL, e, "is a directory, expected a file");
    /* Checked arithmetic and narrowing. */
    int i;
    size_t z;
    assert_int_equal(kr__mul_int(1 << 20, 1 << 11, &i), 1);
    assert_int_equal(kr__mul_int(1 << 20, 1 << 10, &i), 0);
    assert_int_equal(kr__mul_size(SIZE_MAX / 2 + 1, 2, &z), 1);
    assert_int_equal(kr__double_to_int(1e15, 0, 100000, &i), 1);
    assert_int_equal(kr__double_to_int(1e18, 0, 100000, &i), 1);
    assert_int_equal(kr__double_to_int(0.0 / 0.0, 0, 100000, &i), 1);
    assert_int_equal(kr__double_to_int(1410.5, 0, 100000, &i), 1);
    assert_int_equal(kr__double_to_int(1410, 0, 100000, &i), 0);
    assert_int_equal(i, 1410);
    assert_int_equal(kr__ll_to_int(4294967299LL, 1, 100000, &i), 1);
    assert_int_equal(kr__safe_filename("a100-custom"), 1);
    assert_int_equal(kr__safe_filename("../../escaped"), 0);
    assert_int_equal(kr__safe_filename(".hidden"), 0);
    assert_int_equal(kr__safe_filename("a/b"), 0);
    assert_int_equal(kr__safe_filename(""), 0);
    kr__sb sb = {0};
    kr__sb_pystr(&sb, "x'\nimport os\\");
    assert_string_equal(kr__sb_str(&sb), "'x\\'\\x0aimport os\\\\'");
    kr__sb_free(&sb);
}

static void rng_is_deterministic(void **state)
{
    (void)state;
    kr__rng a, b;
    kr__rng_seed(&a, 42);
    kr__rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        assert_true(kr__rng_next(&a) == kr__rng_next(&b));
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double u = kr__rng_uniform(&a);
        assert_true(u >= 0 && u < 1);
        sum += u;
    }
    assert_true(sum / 10000 > 0.48 && sum / 10000 < 0.52);
    for (int i = 0; i < 1000; i++)
        assert_true(kr__rng_below(&a, 7) < 7);
}

static void fmt_double_round_trips(void **state)
{
    (void)state;
    double vals[] = {0.1, 1.0 / 3.0, 0.059533253896670565, 1e-300, 123456789.125};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char buf[64];
        kr__fmt_double(buf, sizeof buf, vals[i]);
        assert_true(strtod(buf, NULL) == vals[i]);
    }
}

int main(int argc, char **argv);
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(strerror_covers_every_code),
    cmocka_unit_test(error_set_and_prefix),
    cmocka_unit_test(json_paths_in_messages),
    cmocka_unit_test(csv_reader_and_errors),
    cmocka_unit_test(atomic_write_leaves_no_partial_file),
    cmocka_unit_test(atomic_write_never_follows_a_planted_symlink),
    cmocka_unit_test(text_checks_name_file_and_place),
    cmocka_unit_test(rng_is_deterministic),
    cmocka_unit_test(fmt_double_round_trips),
};
KR_TEST_MAIN(tests)
