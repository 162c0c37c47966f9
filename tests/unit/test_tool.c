/*
 * test_tool.c - runner/profile.c and runner/sanitize.c on outputs recorded
 * on an H200 (tests/data/tool/, made by the runner's profile and sanitize
 * modes through the sandboxed box path, Nsight Compute and
 * compute-sanitizer 2025.3.1, driver 580):
 * 1. fast_shape2_raw.csv: `ncu --import --csv --page raw --print-units
 *    base` of fp8_quant's examples/fast.cu at T=4096 H=7168 GS=128 - the
 *    summary's numbers are the report's (duration, throughputs, occupancy,
 *    registers, hit rates, stalls, DRAM bytes from rate x duration, the
 *    roofline from the peaks), its shape label the board's;
 * 2. a table without "Kernel Name" and an empty input are refused;
 * 3. race_racecheck.log (tests/gpu/tool/race.cu): five races grouped in one
 *    kind with both lines and the hazard count; the same log with other
 *    kernel names counts them as the judge's;
 * 4. clean_memcheck.log: clean; oob_memcheck.log (tests/gpu/tool/oob_read.cu,
 *    recorded with the box's uid change skipped, see docs/profile.md): one
 *    invalid read of 4 bytes at line 15 with thread, block and address;
 * 5. a memcheck log in the tool's documented format: kind, size, thread,
 *    block, address, line, and the cap (shown / more);
 * 6. profile_import (fdio_capture) with stand-ins for ncu: its output read
 *    whole; nothing printed, a hang past the deadline and output over the
 *    cap each refused with their message.
 * Prints "test_tool: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mono.h"
#include "profile.h"
#include "sanitize.h"
#include "spec.h"

#define DATA "tests/data/tool/"

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_profile(void)
{
    size_t n = 0;
    char *csv = kt_slurp(DATA "fast_shape2_raw.csv", &n);
    struct spec *s = NULL;
    struct kj_err err;
    kj_err_clear(&err);
    KT_CHECK(csv != NULL, "the recorded report");
    KT_CHECK(spec_load("leaderboards/fp8_quant", &s, &err) == KJ_OK, "%s", err.msg);
    if (csv == NULL || s == NULL) {
        free(csv);
        spec_free(s);
        return;
    }
    struct profile_ctx c = {s, 1, 2, 4800.0};
    cJSON *o = profile_summary(csv, n, &c, &err);
    KT_CHECK(o != NULL, "%s", err.msg);
    if (o != NULL) {
        KT_CHECK(num(o, "launches") == 1, "one profiled launch");
        const cJSON *sh = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "shapes"), 0);
        KT_CHECK(num(sh, "benchmark") == 2, "benchmark 2");
        KT_CHECK(strcmp(str(sh, "shape"), "T=4096 H=7168 GS=128") == 0, "label %s", str(sh, "shape"));
        const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(sh, "launches"), 0);
        KT_CHECK(strcmp(str(l, "kernel"), "quant_fast") == 0, "kernel %s", str(l, "kernel"));
        KT_CHECK(strcmp(str(l, "grid"), "(7168, 1, 1)") == 0, "grid %s", str(l, "grid"));
        KT_CHECK(num(l, "duration_ns") == 58656, "duration %g", num(l, "duration_ns"));
        KT_CHECK(num(l, "sm_throughput_pct") == 46.99, "sm %g", num(l, "sm_throughput_pct"));
        KT_CHECK(num(l, "memory_throughput_pct") == 75.51, "mem %g", num(l, "memory_throughput_pct"));
        KT_CHECK(num(l, "occupancy_achieved_pct") == 40.84 && num(l, "occupancy_theoretical_pct") == 50,
                 "occupancy %g of %g", num(l, "occupancy_achieved_pct"),
                 num(l, "occupancy_theoretical_pct"));
        KT_CHECK(num(l, "registers") == 62, "registers %g", num(l, "registers"));
        KT_CHECK(num(l, "l2_hit_pct") == 52.37 && num(l, "l1_hit_pct") == 2.7, "hit rates");
        /* 3,630,468,085,106.38 B/s over 58,656 ns */
        double gbs = num(l, "achieved_gbs");
        KT_CHECK(fabs(gbs - 3630.468) < 0.01, "achieved %g GB/s", gbs);
        KT_CHECK(fabs(num(l, "dram_bytes") - 3630468085106.38 * 58656e-9) < 1, "bytes %g",
                 num(l, "dram_bytes"));
        KT_CHECK(fabs(num(l, "pct_of_board_bandwidth") - 100 * gbs / 4800) < 1e-9, "share");
        const cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "stalls"), 0);
        KT_CHECK(strcmp(str(st, "reason"), "long_scoreboard") == 0 &&
                 num(st, "cycles_per_issue") == 6.31, "top stall %s", str(st, "reason"));
        KT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(l, "stalls")) == 3, "three stalls");
        const cJSON *r = cJSON_GetObjectItem(l, "roofline");
        KT_CHECK(fabs(num(r, "peak_dram_gbs") - 4808.2) < 0.1, "peak dram %g", num(r, "peak_dram_gbs"));
        KT_CHECK(strcmp(str(r, "bound"), "memory") == 0, "bound %s", str(r, "bound"));
        /* the true division is a few FMAs: about 1.7 FLOP per DRAM byte, far below the ridge */
        KT_CHECK(num(r, "intensity_flop_per_byte") > 1 &&
                 num(r, "intensity_flop_per_byte") < num(r, "ridge_flop_per_byte"),
                 "intensity %g", num(r, "intensity_flop_per_byte"));
    }
    cJSON_Delete(o);
    o = profile_summary("\"ID\",\"Name\"\n\"\",\"\"\n\"0\",\"x\"\n", 30, &c, &err);
    KT_CHECK(o == NULL && strstr(err.msg, "Kernel Name") != NULL, "no kernel column: %s", err.msg);
    cJSON_Delete(o);
    o = profile_summary("", 0, &c, &err);
    KT_CHECK(o == NULL, "empty input");
    cJSON_Delete(o);
    free(csv);
    spec_free(s);
}

static void test_race(void)
{
    size_t n = 0;
    char *log = kt_slurp(DATA "race_racecheck.log", &n);
    const char *mine[] = {"quant"}, *other[] = {"quant_fast"};
    KT_CHECK(log != NULL, "the recorded log");
    if (log == NULL)
        return;
    cJSON *o = sanitize_report(log, n, "racecheck", mine, 1, SANITIZE_MAX_FINDINGS, NULL);
    KT_CHECK(o != NULL && !cJSON_IsTrue(cJSON_GetObjectItem(o, "clean")), "not clean");
    KT_CHECK(num(o, "errors") == 5 && num(o, "shown") == 5 && num(o, "more") == 0, "5 races");
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "groups"), 0);
    KT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "groups")) == 1, "one kind");
    KT_CHECK(strcmp(str(g, "kind"), "Race between Write access and Read access") == 0, "kind '%s'",
             str(g, "kind"));
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "findings"), 0);
    KT_CHECK(strcmp(str(f, "kernel"), "quant") == 0 && strcmp(str(f, "file"), "submission.cu") == 0,
             "where %s %s", str(f, "kernel"), str(f, "file"));
    KT_CHECK(num(f, "line") == 15 && num(f, "line2") == 19 && num(f, "hazards") == 512,
             "lines %g and %g, %g hazards", num(f, "line"), num(f, "line2"), num(f, "hazards"));
    cJSON_Delete(o);
    /* Named by another function (a device function of the source), still in
     * submission.cu: the submission's. */
    o = sanitize_report(log, n, "racecheck", other, 1, SANITIZE_MAX_FINDINGS, NULL);
    KT_CHECK(o != NULL && num(o, "errors") == 5 && num(o, "judge_findings") == 0,
             "findings in submission.cu are the submission's whatever function they name");
    cJSON_Delete(o);
    free(log);
}

static const char memcheck[] =
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at quant+0x1b0 in /box/submission.cu:15\n"
    "=========     by thread (63,0,0) in block (3,0,0)\n"
    "=========     Address 0x7f3a00001000 is out of bounds\n"
    "=========     and is 1 bytes after the nearest allocation at 0x7f3a00000000 of size 4096 bytes\n"
    "========= \n"
    "========= Invalid __global__ write of size 16 bytes\n"
    "=========     at quant<128>+0x200 in submission.cu:21\n"
    "=========     by thread (1,0,0) in block (0,0,0)\n"
    "=========     Address 0x10 is misaligned\n"
    "========= \n"
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at quant+0x1b0 in submission.cu:15\n"
    "=========     by thread (63,0,0) in block (4,0,0)\n"
    "=========     Address 0x7f3a00002000 is out of bounds\n"
    "========= \n"
    "========= ERROR SUMMARY: 3 errors\n";

static void test_memcheck(void)
{
    const char *mine[] = {"quant<128>"};
    cJSON *o = sanitize_report(memcheck, sizeof memcheck - 1, "memcheck", mine, 1, 2, NULL);
    KT_CHECK(o != NULL, "a report");
    if (o == NULL)
        return;
    KT_CHECK(num(o, "errors") == 3 && num(o, "shown") == 2 && num(o, "more") == 1,
             "3 errors, 2 shown: %g %g %g", num(o, "errors"), num(o, "shown"), num(o, "more"));
    KT_CHECK(num(o, "tool_error_summary") == 3, "the tool's own count");
    const cJSON *gs = cJSON_GetObjectItem(o, "groups");
    KT_CHECK(cJSON_GetArraySize(gs) == 2, "two kinds");
    const cJSON *g = cJSON_GetArrayItem(gs, 0), *f = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "findings"), 0);
    KT_CHECK(strcmp(str(g, "kind"), "Invalid __global__ read") == 0 && num(g, "count") == 2,
             "kind %s x%g", str(g, "kind"), num(g, "count"));
    KT_CHECK(num(f, "size") == 4 && num(f, "line") == 15 && strcmp(str(f, "file"), "submission.cu") == 0,
             "size %g line %g file %s", num(f, "size"), num(f, "line"), str(f, "file"));
    KT_CHECK(strcmp(str(f, "address"), "0x7f3a00001000") == 0, "address %s", str(f, "address"));
    const cJSON *t = cJSON_GetObjectItem(f, "thread"), *b = cJSON_GetObjectItem(f, "block");
    KT_CHECK(cJSON_GetArrayItem(t, 0)->valueint == 63 && cJSON_GetArrayItem(b, 0)->valueint == 3,
             "thread and block");
    cJSON_Delete(o);
    size_t n = 0;
    char *clean = kt_slurp(DATA "clean_memcheck.log", &n);
    o = clean != NULL ? sanitize_report(clean, n, "memcheck", mine, 1, 10, NULL) : NULL;
    KT_CHECK(o != NULL && cJSON_IsTrue(cJSON_GetObjectItem(o, "clean")) && num(o, "errors") == 0,
             "the recorded clean run");
    cJSON_Delete(o);
    free(clean);
    const char *quant[] = {"quant"};
    char *oob = kt_slurp(DATA "oob_memcheck.log", &n);
    o = oob != NULL ? sanitize_report(oob, n, "memcheck", quant, 1, 10, NULL) : NULL;
    g = o != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(o, "groups"), 0) : NULL;
    f = g != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(g, "findings"), 0) : NULL;
    KT_CHECK(f != NULL && num(o, "errors") == 1 && strcmp(str(g, "kind"), "Invalid __global__ read") == 0,
             "the recorded out-of-bounds read");
    KT_CHECK(f != NULL && num(f, "line") == 15 && num(f, "size") == 4 &&
             strcmp(str(f, "address"), "0x7f7e41a01600") == 0 &&
             cJSON_GetArrayItem(cJSON_GetObjectItem(f, "block"), 0)->valueint == 3,
             "line 15, 4 bytes, its address and block");
    char what[400];
    KT_CHECK(o != NULL && sanitize_stopped(o, what, sizeof what) &&
             strcmp(what, "Invalid __global__ read of size 4 bytes in quant at submission.cu:15 "
                          "(thread (63,0,0), block (3,0,0))") == 0,
             "the access memcheck stopped the kernel at: '%s'", o ? what : "");
    cJSON_Delete(o);
    /* Where the log stood after each test's call: the finding names the
     * test whose call wrote it, and nothing when it came after the last. */
    const char *first = oob != NULL ? strstr(oob, "========= Invalid") : NULL;
    size_t off = first != NULL ? (size_t)(first - oob) : 0;
    size_t ends[3] = {off, off + 1, n};
    struct sanitize_marks m3 = {ends, 3}, m1 = {ends, 1};
    o = oob != NULL ? sanitize_report(oob, n, "memcheck", quant, 1, 10, &m3) : NULL;
    g = o != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(o, "groups"), 0) : NULL;
    f = g != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(g, "findings"), 0) : NULL;
    KT_CHECK(first != NULL && f != NULL && num(f, "test") == 1, "the finding names test 1, whose call wrote it");
    cJSON_Delete(o);
    o = oob != NULL ? sanitize_report(oob, n, "memcheck", quant, 1, 10, &m1) : NULL;
    g = o != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(o, "groups"), 0) : NULL;
    f = g != NULL ? cJSON_GetArrayItem(cJSON_GetObjectItem(g, "findings"), 0) : NULL;
    KT_CHECK(f != NULL && cJSON_GetObjectItem(f, "test") == NULL,
             "a finding written after the last test's call names none");
    cJSON_Delete(o);
    free(oob);
    /* No finding, or another tool's (racecheck does not stop kernels): none. */
    o = sanitize_report("========= ERROR SUMMARY: 0 errors\n", 34, "memcheck", quant, 1, 10, NULL);
    KT_CHECK(o != NULL && !sanitize_stopped(o, what, sizeof what), "a clean memcheck run stopped nothing");
    cJSON_Delete(o);
    char *race = kt_slurp(DATA "race_racecheck.log", &n);
    o = race != NULL ? sanitize_report(race, n, "racecheck", quant, 1, 10, NULL) : NULL;
    KT_CHECK(o != NULL && num(o, "errors") == 5 && !sanitize_stopped(o, what, sizeof what),
             "racecheck's findings stop no kernel");
    cJSON_Delete(o);
    free(race);
    /* memcheck's findings only in the judge's kernels (no line information,
     * another name): the judge's, and the submission's kernel was not stopped. */
    static const char judge_only[] =
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at kj_fingerprint+0x90\n"
        "=========     by thread (0,0,0) in block (0,0,0)\n"
        "=========     Address 0x10 is out of bounds\n"
        "========= \n"
        "========= ERROR SUMMARY: 1 error\n";
    o = sanitize_report(judge_only, sizeof judge_only - 1, "memcheck", quant, 1, 10, NULL);
    KT_CHECK(o != NULL && num(o, "errors") == 0 && num(o, "judge_findings") == 1 &&
             !sanitize_stopped(o, what, sizeof what), "a finding in the judge's kernel");
    cJSON_Delete(o);
    /* A device function of the submission, as scan_near.cu's looks_expected(). */
    static const char devfn[] =
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at looks_expected(const float *, const float *, int)+0x40 in submission.cu:25\n"
        "=========     by thread (5,0,0) in block (0,0,0)\n"
        "=========     Address 0x7f0000200000 is out of bounds\n"
        "========= \n"
        "========= ERROR SUMMARY: 1 error\n";
    o = sanitize_report(devfn, sizeof devfn - 1, "memcheck", quant, 1, 10, NULL);
    KT_CHECK(o != NULL && num(o, "errors") == 1 && sanitize_stopped(o, what, sizeof what) &&
             strstr(what, "looks_expected") != NULL && strstr(what, "submission.cu:25") != NULL,
             "a device function's finding is the submission's: '%s'", o ? what : "");
    cJSON_Delete(o);
}

/* A stand-in for ncu: a shell script that ignores its arguments. */
static void stand_in(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
    }
    KT_CHECK(f != NULL && chmod(path, 0755) == 0, "stand-in %s written", path);
}

static void test_import(void)
{
    char dir[] = "/tmp/kjudge-import-XXXXXX", tool[64], *out = NULL;
    size_t n = 0;
    struct kj_err err;
    KT_CHECK(mkdtemp(dir) != NULL, "a scratch folder");
    snprintf(tool, sizeof tool, "%s/ncu", dir);
    stand_in(tool, "echo '\"ID\",\"Kernel Name\"'; echo '\"0\",\"quant\"'");
    kj_err_clear(&err);
    int rc = profile_import(tool, "r.ncu-rep", mono_now() + 10, &out, &n, &err);
    KT_CHECK(rc == KJ_OK && out != NULL && n == strlen(out) && strstr(out, "quant") != NULL,
             "the output read whole: rc %d, %zu bytes", rc, n);
    free(out);
    stand_in(tool, "exit 3");
    rc = profile_import(tool, "r.ncu-rep", mono_now() + 10, &out, &n, &err);
    KT_CHECK(rc == KJ_EIO && out == NULL && strstr(err.msg, "printed nothing (status 3)") != NULL,
             "nothing printed: %s", err.msg);
    stand_in(tool, "exec sleep 30");
    double t0 = mono_now();
    rc = profile_import(tool, "r.ncu-rep", mono_now() + 0.3, &out, &n, &err);
    KT_CHECK(rc == KJ_ETIMEOUT && out == NULL && mono_now() - t0 < 5 &&
             strstr(err.msg, "took too long") != NULL, "a hang ends at the deadline: %s", err.msg);
    stand_in(tool, "exec head -c 80000000 /dev/zero");
    rc = profile_import(tool, "r.ncu-rep", mono_now() + 30, &out, &n, &err);
    KT_CHECK(rc == KJ_ELIMIT && out == NULL && strstr(err.msg, "exceed") != NULL,
             "output over the cap refused: %s", err.msg);
    unlink(tool);
    rmdir(dir);
}

int main(void)
{
    test_profile();
    test_race();
    test_memcheck();
    test_import();
    return kt_done("test_tool");
}
