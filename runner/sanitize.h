/*
 * sanitize.h - compute-sanitizer's text log read into sanitize mode's
 * result object (docs/profile.md "sanitize").
 *
 * Input: the log of `compute-sanitizer --tool T --log-file F` (judge_tool.c).
 * Each finding is a line "========= WHAT" followed by indented lines
 * "=========     at KERNEL+0xOFF in FILE:LINE", "by thread (x,y,z) in block
 * (x,y,z)", "Address 0x... is out of bounds", ...; racecheck's analysis
 * has "Error: Race reported between A access at K in F:L" and "and B
 * access at K in F:L [N hazards]". The log ends with "ERROR SUMMARY".
 * Output:
 *   {"tool":"memcheck", "clean":false, "errors":N, "shown":n, "more":N-n,
 *    "groups":[{"kind":"Invalid __global__ read", "count":c,
 *               "findings":[{"kernel","file","line","thread":[x,y,z],
 *                            "block":[x,y,z],"address","size","test","text"}...]}...],
 *    "judge_findings":k}
 * Findings outside the submission's code (neither in submission.cu nor in
 * one of its kernels: the judge's own fill and check kernels, generate.cu)
 * are only counted in judge_findings.
 */
#ifndef KJ_SANITIZE_H
#define KJ_SANITIZE_H

#include <stddef.h>
#include <cjson/cJSON.h>

#define SANITIZE_MAX_FINDINGS 200

/* Where the log stood after each test's call (judge_tool.c): end[i] is its
 * size once test i's call had returned. A finding that starts before end[i]
 * (and at or after end[i-1]) came from test i and says so ("test": i); one
 * written later (a tool that wrote its log only at its exit) says nothing. */
struct sanitize_marks {
    const size_t *end;
    int n;
};

/* The result object for log (len bytes) of tool, the submission's kernel
 * names (as in its launch lines; a template-id matches its base name);
 * at most max findings listed; marks NULL: no test is named. NULL only when
 * out of memory. */
cJSON *sanitize_report(const char *log, size_t len, const char *tool, const char *const *kernels,
                       int nkernels, int max, const struct sanitize_marks *marks);

/* memcheck runs with --destroy-on-device-error kernel (tool.c): at the
 * first invalid access of a kernel it ends that kernel, reports the access,
 * and the process goes on with what the kernel left in its outputs. When
 * report (sanitize_report's object) is memcheck's and lists a finding in
 * the submission's kernels, writes "KIND in KERNEL at FILE:LINE (thread
 * (x,y,z), block (x,y,z))" for its first one to out and returns 1; else 0. */
int sanitize_stopped(const cJSON *report, char *out, size_t outsz);

#endif
