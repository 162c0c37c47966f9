/*
 * test_prog.c - unit tests for cli/prog.c, the live progress of a
 * submission: in plain mode exactly one line per event (queue position,
 * compile, each test and shape by its index from 0 with "k of N" done,
 * shapes with their medians, the verdict); in
 * terminal mode one status line rewritten with "\r ESC[K", permanent lines
 * for compiled kernels, shapes and failures, and nothing left on the
 * status line at the end. Counts follow the events, not their indexes. The
 * server's note on a GPU type that no runner serves is shown; a replayed
 * queued event without a position (the job was taken) prints nothing.
 * Prints "test_prog: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>

#include "prog.h"

static const char *const events[][2] = {
    {"queued", "{\"position\": 3, \"status\": \"queued\", \"gpu\": \"H200\"}"},
    {"queued", "{\"position\": null, \"status\": \"running\", \"gpu\": \"H200\"}"},
    {"compiling", "{\"arch\": \"sm_90a\"}"},
    {"compiled", "{\"ok\": true, \"seconds\": 0.41, \"kernels\": [{\"name\": \"quant\", \"registers\": 16},"
                 " {\"name\": \"b\\u001b[2J\"}]}"},
    {"test", "{\"index\": 0, \"shape\": {\"T\": 1}, \"status\": \"pass\"}"},
    {"test", "{\"index\": 1, \"shape\": {\"T\": 4}, \"status\": \"fail\", \"message\": \"x_q differs\"}"},
    {"benchmark", "{\"index\": 2, \"shape\": {\"T\": 256}, \"status\": \"pass\", \"median_ns\": 9888,"
                  " \"ci_lo_ns\": 9850, \"ci_hi_ns\": 9920, \"n\": 312}"},
    {"benchmark", "{\"index\": 0, \"shape\": {\"T\": 4096}, \"status\": \"pass\", \"median_ns\": 164576, \"n\": 100}"},
    {"mystery", "null"},
    {"verdict", "{\"verdict\": \"wrong_answer\", \"message\": \"test 1: x_q differs\"}"},
};

static char *run(int tty, int width)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct prog p;
    prog_init(&p, f, tty, width, "#7 fp8_quant on H200", 2, 3);
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        cJSON *d = cJSON_Parse(events[i][1]);
        prog_event(&p, events[i][0], d);
        cJSON_Delete(d);
    }
    prog_done(&p);
    fclose(f);
    return buf;
}

static void test_plain(void)
{
    char *s = run(0, 80);
    const char *want =
        "queued: position 3 on H200\n"
        "compiling for sm_90a\n"
        "compiled in 0.41 s: quant (16 registers), b?[2J\n"
        "test 0 T=1 (1 of 2): pass\n"
        "test 1 T=4 (2 of 2): fail: x_q differs\n"
        "shape 2 T=256 (1 of 3): median 9.888 us (95% CI 9.850 us - 9.920 us, n=312)\n"
        "shape 0 T=4096 (2 of 3): median 164.576 us (n=100)\n"
        "mystery\n"
        "verdict: wrong_answer: test 1: x_q differs\n";
    KT_CHECK(strcmp(s, want) == 0, "plain:\n%s", s);
    KT_CHECK(strchr(s, '\r') == NULL && strchr(s, '\x1b') == NULL, "no terminal control in a pipe");
    free(s);
}

static void test_tty(void)
{
    char *s = run(1, 40);
    KT_CHECK(strstr(s, "\r\033[K#7 fp8_quant on H200: queued, positi...") != NULL,
             "a status line cut to the width:\n%s", s);
    KT_CHECK(strstr(s, "\r\033[K  compiled in 0.41 s: quant (16 registers), b?[2J\n") != NULL,
             "compiled is a permanent line:\n%s", s);
    KT_CHECK(strstr(s, "\r\033[K#7 fp8_quant on H200: tests 1/2") != NULL, "tests k/N:\n%s", s);
    KT_CHECK(strstr(s, "\r\033[K  test 1 T=4 (2 of 2): fail: x_q differs\n") != NULL, "a failure stays:\n%s", s);
    KT_CHECK(strstr(s, "\r\033[K  shape 2 T=256 (1 of 3): median 9.888 us (95% CI 9.850 us - 9.920 us, n=312)\n") != NULL,
             "each shape stays with its median:\n%s", s);
    KT_CHECK(strstr(s, "\r\033[K#7 fp8_quant on H200: tests 2/2, sha") != NULL, "tests and shapes:\n%s", s);
    KT_CHECK(strstr(s, "test 0 T=1 (1 of 2): pass\n") == NULL, "a passing test is not a permanent line");
    KT_CHECK(strstr(s, "no longer waiting") == NULL, "a position-less queued event says nothing:\n%s", s);
    size_t n = strlen(s);
    KT_CHECK(n >= 4 && strcmp(s + n - 4, "\r\033[K") == 0, "the status line is cleared at the end");
    KT_CHECK(strstr(s, "verdict:") == NULL, "the verdict is left to the final view");
    free(s);
}

/* The server's note on a GPU type no runner serves is shown, and stays on a terminal. */
static void test_note(void)
{
    for (int tty = 0; tty < 2; tty++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct prog p;
        cJSON *d = cJSON_Parse("{\"position\": 1, \"status\": \"queued\", \"gpu\": \"H200\", "
                               "\"note\": \"no runner has asked for H200 jobs yet\"}");
        prog_init(&p, f, tty, 200, "#7 fp8_quant on H200", 2, 3);
        prog_event(&p, "queued", d);
        prog_done(&p);
        fclose(f);
        KT_CHECK(strstr(buf, tty ? "\r\033[K  queued: position 1 on H200: no runner has asked for "
                                   "H200 jobs yet\n"
                                 : "queued: position 1 on H200: no runner has asked for H200 jobs "
                                   "yet\n") != NULL,
                 "%s: the note is shown:\n%s", tty ? "terminal" : "pipe", buf);
        cJSON_Delete(d);
        free(buf);
    }
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_plain());
    KT_RUN(test_tty());
    KT_RUN(test_note());
    return kt_done("test_prog");
}
