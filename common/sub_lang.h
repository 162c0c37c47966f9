/*
 * sub_lang.h - the language of a submission: CUDA C++ (//!kjudge lines),
 * Python in KernelBot's form (#!POPCORN lines, custom_kernel), and PTX
 * (//!kjudge lines as PTX comments; compiled by runner/compile_ptx.c).
 *
 * The server detects the language of every upload (api_submissions.c, and
 * the popcorn routes), stores its name in submissions.lang and sends it to
 * the runner as the job's "lang"; the client picks the directive parser by
 * it. The names are the wire and database vocabulary. Pure functions.
 */
#ifndef KJ_SUB_LANG_H
#define KJ_SUB_LANG_H

#include <stddef.h>

enum sub_lang { SUB_LANG_CUDA = 0, SUB_LANG_PYTHON = 1, SUB_LANG_PTX = 2 };
#define SUB_LANG_COUNT 3

/* "cuda", "python", "ptx" (static); "?" out of range. */
const char *sub_lang_name(int lang);

/* 0 and *out when name is one of sub_lang_name's names, else -1. */
int sub_lang_parse(const char *name, int *out);

/* The language of an upload (an enum sub_lang value). A name ending ".py"
 * is Python; else a name ending ".ptx", or a source that sub_lang_is_ptx
 * (whatever its name), is PTX; a name ending ".cu", ".cuh", ".cpp", ".cc", ".h"
 * or ".hpp" is CUDA. Any other name (NULL, "", "-" from curl's stdin, "blob"
 * from a browser's editor, another extension) is decided by the content
 * (src, len bytes, need not be NUL-terminated): Python when a line starts
 * (after blanks) with "#!POPCORN" or "def custom_kernel", else CUDA. */
int sub_lang_detect(const char *filename, const char *src, size_t len);

/* 1 when the first thing in src (len bytes) after blanks and comments is
 * a ".version" directive, as a PTX module's must be (no CUDA source starts
 * so); the compile step picks NVRTC or the PTX compiler by it. */
int sub_lang_is_ptx(const char *src, size_t len);

#endif
