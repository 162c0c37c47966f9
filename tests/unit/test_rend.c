/*
 * test_rend.c - unit tests for cli/rend.c, the text views of the server's
 * JSON: durations in their unit, control bytes and escape sequences
 * removed, shapes and launches, table alignment, the timing table (with
 * "-" where a number is missing and the below-floor flag), mismatches with
 * their indices, the evidence of each failed verdict, and --json's copy of
 * the server's answer with control characters escaped.
 * Prints "test_rend: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>

#include "rend.h"

/* Run fn(out, arg) into a string (caller frees). */
static char *capture(void (*fn)(FILE *, const cJSON *), const cJSON *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, arg);
    fclose(f);
    return buf;
}

static void test_pieces(void)
{
    char b[256];
    struct { double ns; const char *want; } times[] = {
        {0, "0 ns"}, {987.4, "987 ns"}, {9888, "9.888 us"}, {1234567, "1.235 ms"},
        {2.5e9, "2.500 s"}, {-1, "-"}, {1.0 / 0.0, "-"},
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        rend_ns(times[i].ns, b, sizeof b);
        KT_CHECK(strcmp(b, times[i].want) == 0, "%g -> '%s' want '%s'", times[i].ns, b, times[i].want);
    }
    rend_clean(b, sizeof b, "ok\x1b[31mred\x1b]0;title\x07 \xc2\x9b" "2J tab\there \xc3\xa9");
    KT_CHECK(strcmp(b, "ok?[31mred?]0;title? ?2J tab here \xc3\xa9") == 0, "clean: '%s'", b);
    rend_clean(b, 4, "abcdef");
    KT_CHECK(strcmp(b, "abc") == 0, "cut: '%s'", b);
    rend_clean(b, sizeof b, NULL);
    KT_CHECK(b[0] == '\0', "NULL -> ''");

    cJSON *shape = cJSON_Parse("{\"T\": 256, \"H\": 4096, \"GS\": 128}");
    rend_shape(shape, b, sizeof b);
    KT_CHECK(strcmp(b, "T=256 H=4096 GS=128") == 0, "shape '%s'", b);
    cJSON_Delete(shape);
    rend_shape(NULL, b, sizeof b);
    KT_CHECK(strcmp(b, "-") == 0, "no shape '%s'", b);
    cJSON *l = cJSON_Parse("[{\"kernel\": \"a<1>\", \"grid\": [64, 2, 1], \"block\": [256, 1, 1], "
                           "\"smem\": 4096}, {\"kernel\": \"b\", \"grid\": [1], \"block\": [32]}]");
    rend_launches(l, b, sizeof b);
    KT_CHECK(strcmp(b, "a<1> grid(64,2,1) block(256,1,1) smem 4096; b grid(1) block(32) smem 0") == 0,
             "launches '%s'", b);
    cJSON_Delete(l);
}

static void print_tab(FILE *out, const cJSON *unused)
{
    static const char *const heads[] = {"name", ">n", "note"};
    struct rend_tab t;
    (void)unused;
    rend_tab_init(&t, 3, heads);
    const char *r1[] = {"alpha", "7", "x"}, *r2[] = {"b", "1234", NULL}, *r3[] = {"\xc3\xa9t\xc3\xa9", "5", "\x1b[2J"};
    rend_tab_add(&t, r1);
    rend_tab_add(&t, r2);
    rend_tab_add(&t, r3);
    rend_tab_print(&t, out);
    rend_tab_free(&t);
    rend_tab_init(&t, 3, heads);
    rend_tab_print(&t, out);
    rend_tab_free(&t);
}

static void test_table(void)
{
    char *s = capture(print_tab, NULL);
    const char *want = "name      n  note\n"
                       "-----------------\n"
                       "alpha     7  x\n"
                       "b      1234  \n"
                       "\xc3\xa9t\xc3\xa9       5  ?[2J\n"
                       "(none)\n";
    KT_CHECK(strcmp(s, want) == 0, "table:\n%s", s);
    free(s);
}

/* Is needle in the line that starts at line (after its leading '\n')? */
static int in_line(const char *line, const char *needle)
{
    const char *end = strchr(line + 1, '\n'), *at = strstr(line + 1, needle);
    return at != NULL && (end == NULL || at <= end);
}

static const char result_json[] =
    "{\"verdict\": \"accepted\", \"benchmarks\": ["
    " {\"index\": 0, \"shape\": {\"N\": 1024}, \"status\": \"pass\", \"median_ns\": 9888, \"ci_lo_ns\": 9850,"
    "  \"ci_hi_ns\": 9920.5, \"floor_ns\": 1958.5, \"n\": 312, \"launches\": [{\"kernel\": \"k\", \"grid\": [8,1,1],"
    "  \"block\": [128,1,1], \"smem\": 0}]},"
    " {\"index\": 1, \"shape\": {\"N\": 65536}, \"status\": \"pass\", \"median_ns\": 1500, \"floor_ns\": 2000,"
    "  \"below_floor\": true},"
    " {\"index\": 2, \"shape\": {\"N\": 7}, \"status\": \"fail\"}]}";

static void test_timing(void)
{
    cJSON *res = cJSON_Parse(result_json);
    char *s = capture(rend_timing, res);
    const char *r1 = strstr(s, "\nN=1024 "), *r2 = strstr(s, "\nN=65536 "), *r3 = strstr(s, "\nN=7 ");
    KT_CHECK(r1 && r2 && r3 && r1 < r2 && r2 < r3, "one row per shape, in order:\n%s", s);
    if (r1 && r2 && r3) {
        KT_CHECK(in_line(r1, " 9.888 us ") && in_line(r1, " 9.850 us - 9.921 us ") &&
                 in_line(r1, " 1.958 us ") && in_line(r1, " 312 ") &&
                 in_line(r1, " k grid(8,1,1) block(128,1,1) smem 0\n"), "row 1:\n%s", s);
        KT_CHECK(in_line(r2, " 1.500 us  -  ") && in_line(r2, " 2.000 us BELOW ") &&
                 in_line(r2, "    -  -\n"), "row 2: '-' for the missing CI, n and launch:\n%s", s);
        KT_CHECK(in_line(r3, " (fail) "), "a failed shape shows its status:\n%s", s);
    }
    KT_CHECK(strstr(s, "BELOW: the median is under the physical floor") != NULL, "the flag is explained");
    free(s);
    cJSON_Delete(res);
}

static void test_evidence(void)
{
    cJSON *sub = cJSON_Parse(
        "{\"verdict\": \"wrong_answer\", \"result\": {\"message\": \"test 2: x_q differs\","
        " \"tests\": [{\"index\": 0, \"shape\": {\"T\": 1}, \"status\": \"pass\"},"
        "  {\"index\": 2, \"shape\": {\"T\": 16}, \"status\": \"fail\", \"message\": \"x_q: 12 of 1024\","
        "   \"mismatch\": {\"buffer\": \"x_q\", \"count\": 12, \"total\": 1024, \"max_abs_err\": 0.5,"
        "   \"max_rel_err\": 0.1, \"first\": [{\"index\": [0, 17], \"expected\": 1.5, \"got\": 2},"
        "   {\"index\": [3], \"expected\": -448, \"got\": \"nan\"}]}}]}}");
    char *s = capture(rend_evidence, sub);
    KT_CHECK(strstr(s, "test 2: x_q differs\n") == s, "the message first:\n%s", s);
    KT_CHECK(strstr(s, "test 2 (T=16): fail: x_q: 12 of 1024\n") != NULL, "the failing test:\n%s", s);
    KT_CHECK(strstr(s, "  x_q: 12 of 1024 elements differ (max abs err 0.5, max rel err 0.1)\n"
                       "    at [0, 17] expected 1.5 got 2\n    at [3] expected -448 got nan\n") != NULL,
             "the mismatch with its indices:\n%s", s);
    KT_CHECK(strstr(s, "(T=1)") == NULL, "passing tests are not shown");
    free(s);
    cJSON_Delete(sub);

    sub = cJSON_Parse("{\"verdict\": \"compile_error\", \"result\": {\"message\": \"k.cu(3): error\","
                      " \"compile\": {\"ok\": false, \"log\": \"k.cu(3): error: x\\n\\u001b[1mbold\\nlast\"}}}");
    s = capture(rend_evidence, sub);
    KT_CHECK(strstr(s, "compile log:\n  k.cu(3): error: x\n  ?[1mbold\n  last\n") != NULL,
             "the compile log, cleaned:\n%s", s);
    free(s);
    cJSON_Delete(sub);

    sub = cJSON_Parse("{\"verdict\": \"runtime_error\", \"reason\": \"\", \"result\": {\"message\": \"m\","
                      " \"tests\": [{\"index\": 1, \"shape\": {\"N\": 2}, \"status\": \"error\","
                      " \"message\": \"CUDA_ERROR_ILLEGAL_ADDRESS\"}]}}");
    s = capture(rend_evidence, sub);
    KT_CHECK(strstr(s, "test 1 (N=2): error: CUDA_ERROR_ILLEGAL_ADDRESS\n") != NULL, "the CUDA error:\n%s", s);
    free(s);
    cJSON_Delete(sub);

    /* The judge's own message repeats the failing test's line: said once. */
    sub = cJSON_Parse("{\"verdict\": \"wrong_answer\", \"result\": {\"message\":"
                      " \"test 0 (T=1 H=256): x_q: 189 of 256 elements differ\","
                      " \"tests\": [{\"index\": 0, \"shape\": {\"T\": 1, \"H\": 256}, \"status\": \"fail\","
                      " \"message\": \"x_q: 189 of 256 elements differ\"}]}}");
    s = capture(rend_evidence, sub);
    KT_CHECK(strcmp(s, "test 0 (T=1 H=256): fail: x_q: 189 of 256 elements differ\n") == 0,
             "a message that the failing test's line repeats is shown once:\n%s", s);
    free(s);
    cJSON_Delete(sub);

    sub = cJSON_Parse("{\"verdict\": \"internal_error\", \"reason\": \"the runner stopped answering 3 times\","
                      " \"result\": {\"message\": \"the runner stopped answering 3 times\"}}");
    s = capture(rend_evidence, sub);
    KT_CHECK(strstr(s, "reason: the runner stopped answering 3 times\n") != NULL, "the reason:\n%s", s);
    free(s);
    cJSON_Delete(sub);
}

static void block_200(FILE *out, const cJSON *unused)
{
    char text[4000] = "";
    (void)unused;
    for (int i = 0; i < 200; i++)
        sprintf(text + strlen(text), "line %d\n", i);
    rend_block(out, text, "> ", 3);
}

static void test_block(void)
{
    char *s = capture(block_200, NULL);
    KT_CHECK(strcmp(s, "> line 0\n> line 1\n> line 2\n> ... 197 more lines (the whole text is in --json)\n") == 0,
             "block:\n%s", s);
    free(s);
}

/* rend_json of text into a string (caller frees). */
static char *json_out(const char *text, size_t len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    rend_json(f, text, len);
    fclose(f);
    return buf;
}

static void test_json(void)
{
    /* Raw control bytes in strings (invalid JSON, but a hostile server may
     * send them) become \u00XX: the same string to a JSON reader, harmless to
     * a terminal. Escapes already there are kept. */
    static const char in[] = "{\"name\": \"a\x1b[2J\x1b]0;t\x07 \xc2\x9b" "b\x7f\", \"q\": \"\\\"\x1b\\\\\",\r\n"
                             "\t\"s\": \"\\u001b ok \xc3\xa9\", \"e\": \"\\\x1b\"}\x01\n";
    static const char want[] = "{\"name\": \"a\\u001b[2J\\u001b]0;t\\u0007 \\u009bb\\u007f\", "
                               "\"q\": \"\\\"\\u001b\\\\\", \n \"s\": \"\\u001b ok \xc3\xa9\", "
                               "\"e\": \"\\u001b\"}\\u0001\n";
    char *s = json_out(in, sizeof in - 1);
    KT_CHECK(strcmp(s, want) == 0, "json:\n%s\nwant:\n%s", s, want);
    free(s);
    /* The string part alone parses to what the raw bytes meant. */
    static const char obj[] = "{\"name\": \"x\x1b[31my\xc2\x9b\", \"n\": 1}";
    s = json_out(obj, sizeof obj - 1);
    cJSON *a = cJSON_Parse(s);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");
    KT_CHECK(cJSON_IsString(name) && strcmp(name->valuestring, "x\x1b[31my\xc2\x9b") == 0,
             "escaped string parses back: %s", s);
    for (const char *c = s; *c != '\0'; c++)
        KT_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f, "no control byte at %d", (int)(c - s));
    cJSON_Delete(a);
    free(s);
    s = json_out("a\0b", 3);
    KT_CHECK(strcmp(s, "a\\u0000b") == 0, "a NUL byte: '%s'", s);
    free(s);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_pieces());
    KT_RUN(test_table());
    KT_RUN(test_timing());
    KT_RUN(test_evidence());
    KT_RUN(test_block());
    KT_RUN(test_json());
    return kt_done("test_rend");
}
