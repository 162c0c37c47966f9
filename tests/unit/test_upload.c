/*
 * test_upload.c - unit tests for server/upload.c: the source check and the
 * multipart collector.
 *
 * upload_check_source() must accept valid UTF-8 (ASCII, 2-, 3- and 4-byte
 * sequences, a BOM) and refuse empty files, files over the limit, NUL bytes
 * and every kind of malformed UTF-8 (stray continuation bytes, truncated
 * sequences, overlong forms, surrogates, code points over U+10FFFF), naming
 * the line of the first bad byte.
 *
 * The multipart collector needs a real MHD connection (its post processor
 * reads the request's Content-Type), so a small MHD daemon on a loopback
 * port feeds each body of the table through upload_new/feed/finish: parts
 * without a name, a file name only, no headers, NUL bytes in a field, a
 * leading byte-order mark, truncated and malformed bodies, then a few
 * thousand random mutations of a good body, which must all end in 0 or a
 * clean KJ_EINVAL/KJ_ELIMIT (the test runs under ASan and UBSan). Needs no
 * GPU and no network beyond loopback.
 */
#define KT_MAIN
#include "kt.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

/* ------------------------------------------------------------------ */
/* The multipart collector behind a loopback MHD daemon                */
/* ------------------------------------------------------------------ */

#define TU_MAX_FILE 4096

/* What the last request's upload_finish() said. Written by the daemon's
 * thread before it answers; read by the client after the answer arrived. */
struct tu_result {
    int rc;
    char msg[KJ_ERR_MSG];
    struct upload_fields f;
    char file[TU_MAX_FILE + 1];
};

static enum MHD_Result tu_answer(struct MHD_Connection *c)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(2, (void *)"ok",
                                                                MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result tu_handler(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
    struct tu_result *res = cls;
    struct upload *u = *con_cls;
    struct kj_err err;
    (void)url, (void)method, (void)version;
    kj_err_clear(&err);
    if (u == NULL) {
        memset(res, 0, sizeof *res);
        if ((res->rc = upload_new(c, TU_MAX_FILE, &u, &err)) != 0) {
            snprintf(res->msg, sizeof res->msg, "%s", err.msg);
            return tu_answer(c);
        }
        *con_cls = u;
        return MHD_YES;
    }
    if (*size > 0) {
        upload_feed(u, data, *size);
        *size = 0;
        return MHD_YES;
    }
    res->rc = upload_finish(u, &res->f, &err);
    snprintf(res->msg, sizeof res->msg, "%s", err.msg);
    if (res->rc == 0 && res->f.file != NULL && res->f.file_len <= TU_MAX_FILE) {
        memcpy(res->file, res->f.file, res->f.file_len);
        res->file[res->f.file_len] = '\0';
    }
    res->f.file = NULL; /* freed with the upload */
    return tu_answer(c);
}

static void tu_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    upload_free(*con_cls);
    *con_cls = NULL;
}

/* POST body (len bytes) with the given Content-Type to the daemon on port;
 * returns the status line's code, 0 when no answer came. */
static int tu_post(int port, const char *ctype, const char *body, size_t len)
{
    struct sockaddr_in a;
    struct timeval tv = {5, 0};
    char head[512], reply[512];
    int fd = socket(AF_INET, SOCK_STREAM, 0), n, got = 0, code = 0;
    if (fd < 0)
        return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    n = snprintf(head, sizeof head, "POST /u HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n", ctype, len);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, head, (size_t)n) == n &&
        (len == 0 || write(fd, body, len) == (ssize_t)len)) {
        while (got < (int)sizeof reply - 1 && (n = (int)read(fd, reply + got, sizeof reply - 1 - (size_t)got)) > 0)
            got += n;
        reply[got] = '\0';
        if (got > 12 && strncmp(reply, "HTTP/1.1 ", 9) == 0)
            code = atoi(reply + 9);
    }
    close(fd);
    return code;
}

#define TU_CT "multipart/form-data; boundary=XyZ"
#define TU_SRC "//!kjudge launch k grid=(1) block=(32)\n"
#define TU_GOOD                                                                      \
    "--XyZ\r\nContent-Disposition: form-data; name=\"leaderboard\"\r\n\r\nfp8_quant\r\n" \
    "--XyZ\r\nContent-Disposition: form-data; name=\"gpu\"\r\n\r\nH200\r\n"             \
    "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a/b.cu\"\r\n"       \
    "Content-Type: text/plain\r\n\r\n" TU_SRC "\r\n--XyZ--\r\n"

/* One body of the table: its rc and, for an error, a word its message must hold. */
struct tu_case {
    const char *what;
    const char *body;
    size_t len;          /* 0: strlen(body) */
    int rc;
    const char *needle;
};

static const struct tu_case tu_cases[] = {
    {"a good body", TU_GOOD, 0, 0, NULL},
    {"a part without Content-Disposition",
     "--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--\r\n", 0, KJ_EINVAL, "name"},
    {"a file part with a filename but no name",
     "--XyZ\r\nContent-Disposition: form-data; filename=\"k.cu\"\r\n\r\n" TU_SRC
     "\r\n--XyZ--\r\n", 0, KJ_EINVAL, "name"},
    {"a part without headers", "--XyZ\r\n\r\nx\r\n--XyZ--\r\n", 0, KJ_EINVAL, "name"},
    {"an unnamed part after good ones",
     "--XyZ\r\nContent-Disposition: form-data; name=\"gpu\"\r\n\r\nH200\r\n"
     "--XyZ\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZ--\r\n", 0, KJ_EINVAL, "name"},
    {"an empty name", "--XyZ\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nx\r\n--XyZ--\r\n",
     0, KJ_EINVAL, "unknown field"},
    {"a NUL inside a field",
     "--XyZ\r\nContent-Disposition: form-data; name=\"leaderboard\"\r\n\r\nfp8_quant\0evil\r\n"
     "--XyZ--\r\n", 86, KJ_EINVAL, "NUL"},
    /* No parts at all: nothing is collected (the handler answers missing_file). */
    {"an empty body", "", 0, 0, NULL},
    {"a body without the boundary", "just some text\r\n", 0, 0, NULL},
    {"a body cut before its end",
     "--XyZ\r\nContent-Disposition: form-data; name=\"gpu\"\r\n\r\nH2", 0, KJ_EINVAL,
     "malformed"},
};

static void tu_table(int port, struct tu_result *res)
{
    for (size_t i = 0; i < sizeof tu_cases / sizeof tu_cases[0]; i++) {
        const struct tu_case *c = &tu_cases[i];
        size_t len = c->len ? c->len : strlen(c->body);
        int code = tu_post(port, TU_CT, c->body, len);
        KT_CHECK(code == 200, "%s: the daemon answered (status %d)", c->what, code);
        if (code != 200)
            continue;
        KT_CHECK(res->rc == c->rc, "%s: rc %d, want %d (%s)", c->what, res->rc, c->rc, res->msg);
        if (c->needle != NULL)
            KT_CHECK(strstr(res->msg, c->needle) != NULL, "%s: message '%s' lacks '%s'", c->what,
                     res->msg, c->needle);
    }
    tu_post(port, TU_CT, TU_GOOD, strlen(TU_GOOD));
    KT_CHECK(res->rc == 0 && strcmp(res->f.leaderboard, "fp8_quant") == 0 &&
             strcmp(res->f.gpu, "H200") == 0 && !res->f.has_mode &&
             strcmp(res->f.file_name, "b.cu") == 0 && strcmp(res->file, TU_SRC) == 0,
             "the good body's fields: rc %d board '%s' gpu '%s' name '%s'", res->rc,
             res->f.leaderboard, res->f.gpu, res->f.file_name);
}

/* A leading UTF-8 byte-order mark is dropped from the file, and only there. */
static void tu_bom(int port, struct tu_result *res)
{
    static const char bom[] =
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"k.cu\"\r\n\r\n"
        "\xef\xbb\xbf" TU_SRC "\r\n--XyZ--\r\n";
    static const char only[] =
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"k.cu\"\r\n\r\n"
        "\xef\xbb\xbf\r\n--XyZ--\r\n";
    static const char inner[] =
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"k.cu\"\r\n\r\n"
        "// x\n\xef\xbb\xbf\r\n--XyZ--\r\n";
    tu_post(port, TU_CT, bom, sizeof bom - 1);
    KT_CHECK(res->rc == 0 && res->f.file_len == strlen(TU_SRC) && strcmp(res->file, TU_SRC) == 0,
             "a leading BOM is dropped: rc %d len %zu", res->rc, res->f.file_len);
    tu_post(port, TU_CT, only, sizeof only - 1);
    KT_CHECK(res->rc == 0 && res->f.has_file && res->f.file_len == 0,
             "a file that is only a BOM becomes empty: rc %d len %zu", res->rc, res->f.file_len);
    tu_post(port, TU_CT, inner, sizeof inner - 1);
    KT_CHECK(res->rc == 0 && res->f.file_len == 8, "a BOM after the start stays: len %zu",
             res->f.file_len);
}

/* Random mutations of the good body: flipped, dropped and inserted bytes. */
static void tu_mutations(int port, struct tu_result *res, int rounds)
{
    char buf[sizeof TU_GOOD + 64];
    uint64_t x = 0x9e3779b97f4a7c15u;
    int odd = 0, answered = 0;
    for (int i = 0; i < rounds; i++) {
        size_t len = sizeof TU_GOOD - 1;
        memcpy(buf, TU_GOOD, len);
        for (int k = 0; k < 1 + i % 4; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x >> 8) % len;
            int what = (int)(x % 3);
            if (what == 0)
                buf[at] = (char)(x >> 40);
            else if (what == 1 && len > 1)
                memmove(buf + at, buf + at + 1, --len - at);
            else if (len + 1 < sizeof buf) {
                memmove(buf + at + 1, buf + at, len++ - at);
                buf[at] = "\r\n-\"; =\0"[(x >> 32) % 7];
            }
        }
        if (tu_post(port, TU_CT, buf, len) != 200)
            continue;
        answered++;
        odd += res->rc != 0 && res->rc != KJ_EINVAL && res->rc != KJ_ELIMIT;
    }
    KT_CHECK(answered == rounds, "every mutated body was answered: %d of %d", answered, rounds);
    KT_CHECK(odd == 0, "every mutated body ends in 0, KJ_EINVAL or KJ_ELIMIT: %d did not", odd);
}

static void test_multipart(void)
{
    static struct tu_result res;
    struct sockaddr_in lo;
    memset(&lo, 0, sizeof lo);
    lo.sin_family = AF_INET;
    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                                            tu_handler, &res, MHD_OPTION_NOTIFY_COMPLETED,
                                            tu_completed, NULL, MHD_OPTION_SOCK_ADDR, &lo,
                                            MHD_OPTION_END);
    const union MHD_DaemonInfo *info = d != NULL ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)
                                                 : NULL;
    KT_CHECK(info != NULL && info->port != 0, "the loopback daemon starts");
    if (info == NULL || info->port == 0) {
        if (d != NULL)
            MHD_stop_daemon(d);
        return;
    }
    tu_table(info->port, &res);
    tu_bom(info->port, &res);
    tu_mutations(info->port, &res, 3000);
    MHD_stop_daemon(d);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_good());
    KT_RUN(test_limits());
    KT_RUN(test_bad());
    KT_RUN(test_multipart());
    return kt_done("test_upload");
}
