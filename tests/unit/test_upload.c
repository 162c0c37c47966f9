/*
 * test_upload.c - unit tests for server/upload.c's source check.
 *
 * upload_check_source() must accept valid UTF-8 (ASCII, 2-, 3- and 4-byte
 * sequences, a BOM) and refuse empty files, files over the limit, NUL bytes
 * and every kind of malformed UTF-8 (stray continuation bytes, truncated
 * sequences, overlong forms, surrogates, code points over U+10FFFF), naming
 * the line of the first bad byte. Needs no GPU and no network.
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "kj_err.h"
#include "upload.h"

static int check_src(const char *s, size_t len, size_t max, struct kj_err *err)
{
    kj_err_clear(err);
    return upload_check_source(s, len, max, err);
}

static void expect_bad(const char *what, const char *s, size_t len, int line)
{
    struct kj_err err;
    int rc = check_src(s, len, 1 << 20, &err);
    KT_CHECK(rc == KJ_EINVAL, "%s: rc %d", what, rc);
    KT_CHECK(err.line == line, "%s: line %d, want %d (%s)", what, err.line, line, err.msg);
    char want[16];
    snprintf(want, sizeof want, "line %d", line);
    KT_CHECK(strstr(err.msg, want) != NULL, "%s: message names the line: %s", what, err.msg);
}

static void test_good(void)
{
    struct kj_err err;
    static const char ascii[] = "//!kjudge launch k grid=(1) block=(32)\nint x;\n";
    static const char multi[] = "// caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\n";
    static const char bom[] = "\xef\xbb\xbf// bom\n";
    KT_CHECK(check_src(ascii, sizeof ascii - 1, 1 << 20, &err) == 0, "ascii: %s", err.msg);
    KT_CHECK(check_src(multi, sizeof multi - 1, 1 << 20, &err) == 0, "multi-byte: %s", err.msg);
    KT_CHECK(check_src(bom, sizeof bom - 1, 1 << 20, &err) == 0, "BOM: %s", err.msg);
    KT_CHECK(check_src("x", 1, 1, &err) == 0, "exactly at the limit");
}

static void test_limits(void)
{
    struct kj_err err;
    KT_CHECK(check_src("", 0, 100, &err) == KJ_EINVAL && strstr(err.msg, "empty") != NULL,
             "empty: %s", err.msg);
    KT_CHECK(check_src("abc", 3, 2, &err) == KJ_ELIMIT, "over the limit: %s", err.msg);
    KT_CHECK(upload_check_source("a\0b", 3, 10, NULL) == KJ_EINVAL, "NULL err is allowed");
}

static void test_bad(void)
{
    expect_bad("NUL", "ab\ncd\0ef", 8, 2);
    expect_bad("NUL at the start", "\0", 1, 1);
    expect_bad("stray continuation", "ok\n\n\x80\n", 5, 3);
    expect_bad("0xff", "\xff", 1, 1);
    expect_bad("0xfe", "a\n\xfe", 3, 2);
    expect_bad("overlong 2-byte C0", "\xc0\xaf", 2, 1);
    expect_bad("overlong 2-byte C1", "\xc1\xbf", 2, 1);
    expect_bad("overlong 3-byte", "\xe0\x80\xaf", 3, 1);
    expect_bad("overlong 4-byte", "\xf0\x80\x80\xaf", 4, 1);
    expect_bad("surrogate", "\xed\xa0\x80", 3, 1);
    expect_bad("above U+10FFFF", "\xf4\x90\x80\x80", 4, 1);
    expect_bad("F5 lead", "\xf5\x80\x80\x80", 4, 1);
    expect_bad("truncated 2-byte", "x\n\xc3", 3, 2);
    expect_bad("truncated 3-byte", "\xe2\x82", 2, 1);
    expect_bad("truncated 4-byte", "\xf0\x9f\x98", 3, 1);
    expect_bad("bad continuation", "\xe2\x28\xa1", 3, 1);
    expect_bad("ASCII in a 4-byte", "\xf0\x9f\x41\x80", 4, 1);
}

int main(void)
{
    test_good();
    test_limits();
    test_bad();
    return kt_done("test_upload");
}
