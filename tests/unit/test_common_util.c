/* test_common_util.c - the small shared helpers of common/: the growable
 * string (kj_buf), whole-file reads (kj_file), strict UTF-8 (kj_utf8), the
 * ticker thread (kj_ticker) and the protocol name tables (protocol). */
#define KT_MAIN
#include "kt.h"
#include "kj_buf.h"
#include "kj_err.h"
#include "kj_file.h"
#include "kj_ticker.h"
#include "kj_utf8.h"
#include "protocol.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_buf(void)
{
    struct kj_buf b;
    size_t len = 99;
    char *t;

    kj_buf_init(&b, 0);
    KT_CHECK(strcmp(kj_buf_str(&b), "") == 0, "an empty buffer reads as \"\"");
    t = kj_buf_take(&b, &len);
    KT_CHECK(t != NULL && t[0] == '\0' && len == 0, "taking an empty buffer gives \"\"");
    free(t);
    for (int i = 0; i < 1000; i++)
        kj_buf_printf(&b, "%d,", i);
    KT_CHECK(kj_buf_status(&b) == KJ_OK, "no cap: no failure");
    KT_CHECK(strncmp(kj_buf_str(&b), "0,1,2,", 6) == 0 && b.len == strlen(kj_buf_str(&b)),
             "printf appends and keeps the NUL: len %zu", b.len);
    KT_CHECK(strstr(kj_buf_str(&b), ",999,") != NULL, "every piece kept");
    kj_buf_free(&b);
    KT_CHECK(b.p == NULL && b.len == 0, "free resets");
    kj_buf_free(&b); /* twice is fine */

    kj_buf_init(&b, 8);
    KT_CHECK(kj_buf_puts(&b, "12345") == KJ_OK, "under the cap");
    KT_CHECK(kj_buf_puts(&b, "6789") == KJ_ELIMIT, "past the cap: KJ_ELIMIT");
    KT_CHECK(strcmp(kj_buf_str(&b), "12345") == 0, "a refused append adds nothing: '%s'",
             kj_buf_str(&b));
    KT_CHECK(kj_buf_putc(&b, 'x') == KJ_ELIMIT && kj_buf_status(&b) == KJ_ELIMIT,
             "failure is sticky even for appends that would fit");
    t = kj_buf_take(&b, &len);
    KT_CHECK(t != NULL && strcmp(t, "12345") == 0 && len == 5, "take hands the text over");
    KT_CHECK(kj_buf_status(&b) == KJ_OK && b.max == 8, "take clears the failure, keeps the cap");
    free(t);
    KT_CHECK(kj_buf_printf(&b, "%s", "123456789") == KJ_ELIMIT && b.len == 0,
             "printf past the cap adds nothing");
    kj_buf_free(&b);
}

static void test_file(void)
{
    char path[] = "/tmp/kjtest-file-XXXXXX";
    struct kj_err err;
    char *buf = (char *)1;
    size_t len = 0;
    int fd = mkstemp(path);

    KT_CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    KT_CHECK(write(fd, "abc\0def", 7) == 7, "write");
    close(fd);
    kj_err_clear(&err);
    KT_CHECK(kj_read_file(path, 100, &buf, &len, &err) == 0 && len == 7 && buf[7] == '\0' &&
                 memcmp(buf, "abc\0def", 7) == 0,
             "reads every byte, NULs included, and terminates: %s", err.msg);
    free(buf);
    KT_CHECK(kj_read_file(path, 7, &buf, &len, &err) == 0 && len == 7, "exactly at the cap");
    free(buf);
    KT_CHECK(kj_read_file(path, 6, &buf, &len, &err) == KJ_ELIMIT && buf == NULL &&
                 strstr(err.msg, path) != NULL,
             "over the cap: KJ_ELIMIT naming the path: %s", err.msg);
    unlink(path);
    KT_CHECK(kj_read_file(path, 100, &buf, NULL, &err) == KJ_ENOTFOUND && buf == NULL,
             "a missing file: KJ_ENOTFOUND");
    KT_CHECK(kj_read_file("/tmp", 100, &buf, NULL, &err) == KJ_EINVAL,
             "a directory is not a file: %s", err.msg);
    KT_CHECK(kj_read_file("/proc/self/stat", 1 << 16, &buf, &len, &err) == 0 && len > 10 &&
                 strlen(buf) == len,
             "a file whose size stat cannot tell (procfs) is read to its end: %zu", len);
    free(buf);
}

static void test_utf8(void)
{
    static const struct {
        const char *s;
        size_t n;
        int ok;
        size_t bad;
        const char *what;
    } cases[] = {
        {"plain ascii", 11, 1, 0, "ASCII"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 1, 0, "2, 3 and 4 byte sequences"},
        {"a\0b", 3, 0, 1, "NUL"},
        {"\xc0\xaf", 2, 0, 0, "overlong 2-byte"},
        {"\xe0\x80\xaf", 3, 0, 0, "overlong 3-byte"},
        {"\xf0\x80\x80\xaf", 4, 0, 0, "overlong 4-byte"},
        {"x\xed\xa0\x80", 4, 0, 1, "a UTF-16 surrogate"},
        {"\xf4\x90\x80\x80", 4, 0, 0, "above U+10FFFF"},
        {"ab\x80", 3, 0, 2, "a lone continuation byte"},
        {"ab\xe2\x82", 4, 0, 2, "a truncated sequence"},
        {"\xff", 1, 0, 0, "0xFF"},
    };
    unsigned cp = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bad = 99;
        int ok = kj_utf8_valid(cases[i].s, cases[i].n, &bad);
        KT_CHECK(ok == cases[i].ok && (ok || bad == cases[i].bad), "%s: valid=%d bad=%zu",
                 cases[i].what, ok, bad);
    }
    KT_CHECK(kj_utf8_decode((const unsigned char *)"\xe2\x82\xac", 3, &cp) == 3 && cp == 0x20AC,
             "decodes the euro sign: U+%04X", cp);
    KT_CHECK(kj_utf8_decode((const unsigned char *)"\xc2\x85", 2, &cp) == 2 && cp == 0x85,
             "C1 controls decode (the caller decides about them)");
}

struct tick_count {
    atomic_int n;
};

static void on_tick(void *arg)
{
    struct tick_count *c = arg;
    atomic_fetch_add(&c->n, 1);
}

static void test_ticker(void)
{
    struct tick_count c;
    struct kj_ticker *t = NULL;
    struct kj_err err;
    struct timespec nap = {0, 20 * 1000000L};
    int n;

    atomic_init(&c.n, 0);
    kj_err_clear(&err);
    KT_CHECK(kj_ticker_start(60000, on_tick, &c, "test", &t, &err) == 0 && t != NULL,
             "start: %s", err.msg);
    if (t == NULL)
        return;
    nanosleep(&nap, NULL);
    KT_CHECK(atomic_load(&c.n) == 0, "no tick before the period (a minute)");
    kj_ticker_kick(t);
    for (int i = 0; i < 250 && atomic_load(&c.n) == 0; i++)
        nanosleep(&nap, NULL);
    KT_CHECK(atomic_load(&c.n) == 1, "a kick runs one tick at once: %d", atomic_load(&c.n));
    kj_ticker_stop(t);
    n = atomic_load(&c.n);
    nanosleep(&nap, NULL);
    KT_CHECK(atomic_load(&c.n) == n, "no tick after stop");
    kj_ticker_stop(NULL);

    atomic_store(&c.n, 0);
    KT_CHECK(kj_ticker_start(5, on_tick, &c, "fast", &t, &err) == 0, "start a 5 ms ticker");
    for (int i = 0; i < 250 && atomic_load(&c.n) < 3; i++)
        nanosleep(&nap, NULL);
    KT_CHECK(atomic_load(&c.n) >= 3, "it ticks by itself: %d", atomic_load(&c.n));
    kj_ticker_stop(t);
}

static void test_protocol(void)
{
    char list[256];
    enum kj_verdict v;
    enum kj_mode m;
    enum kj_event e;

    for (int i = 0; i < KJ_V_COUNT; i++)
        KT_CHECK(kj_verdict_parse(kj_verdict_name((enum kj_verdict)i), &v) == 0 && (int)v == i,
                 "verdict %d round-trips", i);
    for (int i = 0; i < KJ_MODE_COUNT; i++)
        KT_CHECK(kj_mode_parse(kj_mode_name((enum kj_mode)i), &m) == 0 && (int)m == i,
                 "mode %d round-trips", i);
    for (int i = 0; i < KJ_EV_COUNT; i++)
        KT_CHECK(kj_event_parse(kj_event_name((enum kj_event)i), &e) == 0 && (int)e == i,
                 "event %d round-trips", i);
    KT_CHECK(strcmp(kj_verdict_name(KJ_V_INTERNAL), "internal_error") == 0 &&
                 strcmp(kj_mode_name(KJ_MODE_LEADERBOARD), "leaderboard") == 0 &&
                 strcmp(kj_event_name(KJ_EV_VERDICT), "verdict") == 0,
             "the wire names of docs/protocol.md");
    v = KJ_V_ACCEPTED;
    KT_CHECK(kj_verdict_parse("Accepted", &v) == -1 && kj_verdict_parse(NULL, &v) == -1 &&
                 kj_verdict_parse("", &v) == -1 && v == KJ_V_ACCEPTED,
             "unknown names are refused and leave *out alone");
    KT_CHECK(strcmp(kj_verdict_name((enum kj_verdict)KJ_V_COUNT), "?") == 0,
             "an out-of-range value prints as ?");
    KT_CHECK(kj_mode_sql_list(list, sizeof list) == 0 &&
                 strcmp(list, "'test','benchmark','leaderboard','profile','sanitize'") == 0,
             "mode SQL list: %s", list);
    KT_CHECK(kj_verdict_sql_list(list, sizeof list) == 0 && strstr(list, "'time_limit'") != NULL,
             "verdict SQL list: %s", list);
    KT_CHECK(kj_verdict_sql_list(list, 10) == -1, "a short buffer is refused");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_buf());
    KT_RUN(test_file());
    KT_RUN(test_utf8());
    KT_RUN(test_ticker());
    KT_RUN(test_protocol());
    return kt_done("test_common_util");
}
