/*
 * fuzz_pydirective.c - libFuzzer harness for common/pydirective.c (the
 * "#!POPCORN" and "#!kjudge" lines the server reads from every Python
 * upload) and common/sub_lang.c (which language an upload is).
 *
 * The input is a source file. Properties besides ASan/UBSan's: a line error
 * is KJ_EINVAL, printable, starts "line N: " with N within the file; the
 * missing custom_kernel is KJ_ENOTFOUND without a line; a parsed file's
 * fields are NUL-terminated, a board or GPU name is a non-empty word of
 * [A-Za-z0-9_-], the GPU type is the name or its prefix before a provider
 * suffix, lines are within the file and 0 exactly when absent, the notes
 * are printable ASCII; the same file with CRLF line ends gives the same
 * result; and sub_lang_detect says Python for any file name ending ".py"
 * and CUDA for ".cu", whatever the content.
 */
#include "fuzz.h"
#include "kj_err.h"
#include "pydirective.h"
#include "sub_lang.h"

static void check_word(const char *what, const char *s, size_t cap, int line)
{
    if (memchr(s, '\0', cap) == NULL)
        fuzz_fail("%s is not NUL-terminated", what);
    if ((s[0] == '\0') != (line == 0))
        fuzz_fail("%s '%s' and its line %d disagree", what, s, line);
    if (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s))
        fuzz_fail("%s '%s' has a byte outside [A-Za-z0-9_-]", what, s);
}

static void check_parsed(const struct pydir *d, int nlines, int rc)
{
    check_word("leaderboard", d->leaderboard, sizeof d->leaderboard, d->leaderboard_line);
    check_word("gpu", d->gpu, sizeof d->gpu, d->gpu_line);
    check_word("gpu as written", d->gpu_written, sizeof d->gpu_written, d->gpu_line);
    if (strncmp(d->gpu, d->gpu_written, strlen(d->gpu)) != 0 ||
        (strlen(d->gpu) < strlen(d->gpu_written) && d->gpu_written[strlen(d->gpu)] != '_'))
        fuzz_fail("gpu type '%s' is not '%s' or its prefix before a suffix", d->gpu, d->gpu_written);
    if (d->leaderboard_line > nlines || d->gpu_line > nlines || d->custom_kernel_line > nlines ||
        d->leaderboard_line < 0 || d->gpu_line < 0 || d->custom_kernel_line < 0)
        fuzz_fail("a line outside the file's %d lines", nlines);
    if ((rc == 0) != (d->custom_kernel_line > 0))
        fuzz_fail("rc %d but custom_kernel on line %d", rc, d->custom_kernel_line);
    if (memchr(d->notes, '\0', sizeof d->notes) == NULL)
        fuzz_fail("notes are not NUL-terminated");
    for (const char *p = d->notes; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            fuzz_fail("a non-printable byte in the notes '%s'", d->notes);
}

static void check_err(const struct kj_err *e, int rc, int nlines)
{
    char want[24];
    if (rc == KJ_ENOTFOUND) {
        if (e->line != 0 || strstr(e->msg, "custom_kernel") == NULL)
            fuzz_fail("ENOTFOUND with line %d: %s", e->line, e->msg);
        return;
    }
    if (rc != KJ_EINVAL || e->code != KJ_EINVAL)
        fuzz_fail("rc %d code %s: %s", rc, kj_code_name(e->code), e->msg);
    if (e->line < 1 || e->line > nlines)
        fuzz_fail("line %d outside the file's %d lines: %s", e->line, nlines, e->msg);
    snprintf(want, sizeof want, "line %d: ", e->line);
    if (strncmp(e->msg, want, strlen(want)) != 0)
        fuzz_fail("message does not start with '%s': %s", want, e->msg);
    for (const char *m = e->msg; *m; m++)
        if ((unsigned char)*m < 0x20 || (unsigned char)*m >= 0x7f)
            fuzz_fail("non-printable byte in the message '%s'", e->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pydir *d = calloc(2, sizeof *d);
    char *crlf = malloc(2 * size + 1);
    struct kj_err e, e2;
    int nlines = 1, rc, rc2;
    size_t n = 0;
    if (d == NULL || crlf == NULL)
        abort();
    for (size_t i = 0; i < size; i++)
        nlines += data[i] == '\n';
    kj_err_clear(&e);
    rc = pydir_parse((const char *)data, size, d, &e);
    if (rc == 0 || rc == KJ_ENOTFOUND)
        check_parsed(d, nlines, rc);
    if (rc != 0)
        check_err(&e, rc, nlines);
    /* CRLF: the same answer (a '\r' already before a '\n' is kept, so skip those inputs) */
    int has_cr = memchr(data, '\r', size) != NULL;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = (char)data[i];
    }
    kj_err_clear(&e2);
    rc2 = pydir_parse(crlf, n, d + 1, &e2);
    if (!has_cr && (rc2 != rc || (rc != 0 && (e.line != e2.line || strcmp(e.msg, e2.msg) != 0)) ||
                    ((rc == 0 || rc == KJ_ENOTFOUND) && memcmp(d, d + 1, sizeof *d) != 0)))
        fuzz_fail("CRLF changes the result: rc %d/%d '%s' / '%s'", rc, rc2, e.msg, e2.msg);
    /* A .py name decides; a .cu name too, unless the content is PTX (the
     * runner compiles PTX by its content: sub_lang.h). */
    if (sub_lang_detect("k.py", (const char *)data, size) != SUB_LANG_PYTHON ||
        sub_lang_detect("k.cu", (const char *)data, size) !=
            (sub_lang_is_ptx((const char *)data, size) ? SUB_LANG_PTX : SUB_LANG_CUDA))
        fuzz_fail("the file name does not decide the language");
    int l = sub_lang_detect(NULL, (const char *)data, size);
    if (l != SUB_LANG_PYTHON && l != SUB_LANG_CUDA && l != SUB_LANG_PTX)
        fuzz_fail("sub_lang_detect gave %d", l);
    free(crlf);
    free(d);
    return 0;
}
