/*
 * sub_lang.c - a submission's language: names and detection (sub_lang.h).
 *
 * Called by the server on every upload (api_submissions.c) and by the
 * client before it reads a file's directives (cli/cmd_submit.c); the name
 * goes on to the database (submissions.lang) and the runner's job.
 */
#include "sub_lang.h"

#include <string.h>

static const char *const names[SUB_LANG_COUNT] = {"cuda", "python", "ptx"};

const char *sub_lang_name(int lang)
{
    return lang >= 0 && lang < SUB_LANG_COUNT ? names[lang] : "?";
}

int sub_lang_parse(const char *name, int *out)
{
    for (int i = 0; name != NULL && i < SUB_LANG_COUNT; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

/* 1 when name ends with ext (".py"). */
static int ends_with(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    return n > e && strcmp(name + n - e, ext) == 0;
}

/* 1 when some line of src starts, after blanks, with word. */
static int has_line_start(const char *src, size_t len, const char *word)
{
    size_t w = strlen(word), i = 0;
    while (i < len) {
        while (i < len && (src[i] == ' ' || src[i] == '\t'))
            i++;
        if (len - i >= w && memcmp(src + i, word, w) == 0)
            return 1;
        const char *nl = memchr(src + i, '\n', len - i);
        if (nl == NULL)
            break;
        i = (size_t)(nl - src) + 1;
    }
    return 0;
}

int sub_lang_is_ptx(const char *src, size_t len)
{
    size_t i = 0;
    while (src != NULL && i < len) {
        if (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
            i++;
        } else if (len - i >= 2 && src[i] == '/' && src[i + 1] == '/') {
            const char *nl = memchr(src + i, '\n', len - i);
            i = nl ? (size_t)(nl - src) + 1 : len;
        } else if (len - i >= 2 && src[i] == '/' && src[i + 1] == '*') {
            size_t k = i + 2;
            while (k + 1 < len && !(src[k] == '*' && src[k + 1] == '/'))
                k++;
            i = k + 2;
        } else {
            return len - i > 9 && memcmp(src + i, ".version", 8) == 0 &&
                   (src[i + 8] == ' ' || src[i + 8] == '\t');
        }
    }
    return 0;
}

int sub_lang_detect(const char *filename, const char *src, size_t len)
{
    /* A .py name is Python whatever it holds (its box imports it); else PTX
     * by name, or by content whatever the name: the runner compiles by the
     * content (sub_lang_is_ptx), and no CUDA source starts so. */
    if (filename != NULL && ends_with(filename, ".py"))
        return SUB_LANG_PYTHON;
    if ((filename != NULL && ends_with(filename, ".ptx")) || sub_lang_is_ptx(src, len))
        return SUB_LANG_PTX;
    static const char *const cuda_ext[] = {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", NULL};
    for (int i = 0; filename != NULL && cuda_ext[i] != NULL; i++)
        if (ends_with(filename, cuda_ext[i]))
            return SUB_LANG_CUDA;
    if (src != NULL && (has_line_start(src, len, "#!POPCORN") ||
                        has_line_start(src, len, "def custom_kernel")))
        return SUB_LANG_PYTHON;
    return sub_lang_is_ptx(src, len) ? SUB_LANG_PTX : SUB_LANG_CUDA;
}
