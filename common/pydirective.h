/*
 * pydirective.h - the directive lines of a Python submission in KernelBot's
 * form (DESIGN.md, "The submission contract").
 *
 * The server parses them on upload (api_submissions.c) to learn the
 * leaderboard and GPU type when the request does not name them, and to
 * refuse a file that defines no custom_kernel; the client reads them for
 * `kjudge submit file.py`. Lines (after optional blanks):
 *   #!POPCORN leaderboard NAME     #!kjudge leaderboard NAME
 *   #!POPCORN gpu NAME             #!kjudge gpu NAME
 * "#!POPCORN gpus NAME" is read as gpu. A GPU name with a provider suffix
 * ("B200_Nebius") stands for its GPU type ("B200", gputype_of_kernelbot);
 * the mapping is noted. Other "#!POPCORN" keys are ignored with a note (as
 * KernelBot ignores them); any other "#!kjudge" line is an error naming its
 * line. Two lines may name the same board or GPU; different ones are an
 * error. The file must define custom_kernel: a line starting (after
 * blanks) with "def custom_kernel" then "(", or "custom_kernel =".
 */
#ifndef KJ_PYDIRECTIVE_H
#define KJ_PYDIRECTIVE_H

#include <stddef.h>
#include "kj_err.h"

#define PYDIR_NOTES_BYTES 512

struct pydir {
    char leaderboard[64];       /* "" when absent */
    int leaderboard_line;
    char gpu[64];               /* the GPU type, after the mapping; "" when absent */
    char gpu_written[64];       /* the name as the line wrote it ("B200_Nebius") */
    int gpu_line;
    int custom_kernel_line;     /* the line defining custom_kernel */
    char notes[PYDIR_NOTES_BYTES]; /* "" or notes for the user, "; "-separated: ignored
                                      keys, the GPU mapping (printable ASCII) */
};

/* Parse src (len bytes, need not be NUL-terminated) into *out. Errors:
 * KJ_EINVAL with "line N: ..." and err->line = N for a bad line;
 * KJ_ENOTFOUND (err->line 0) when no line defines custom_kernel, with
 * *out filled from every line all the same. */
int pydir_parse(const char *src, size_t len, struct pydir *out, struct kj_err *err);

#endif
