/*
 * rend_tool.c - profile and sanitize results as text (see rend.h): what
 * `kjudge show` and `kjudge submit` print for those modes. Input is the
 * result object the server stored (docs/profile.md); every string from it
 * is cleaned before it is printed.
 */
#include "rend.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define REND_TOOL_MAX_FINDINGS 20 /* per kind; the rest is counted */

static double tnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *tstr(const cJSON *o, const char *key, char *buf, size_t bufsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    rend_clean(buf, bufsz, cJSON_IsString(v) ? v->valuestring : "");
    return buf;
}

/* "12.3%" or "-" */
static const char *pct(double v, char *buf, size_t bufsz)
{
    if (isnan(v))
        snprintf(buf, bufsz, "-");
    else
        snprintf(buf, bufsz, "%.1f%%", v);
    return buf;
}

static const char *bytes(double v, char *buf, size_t bufsz)
{
    if (isnan(v))
        snprintf(buf, bufsz, "-");
    else if (v >= 1e9)
        snprintf(buf, bufsz, "%.2f GB", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, bufsz, "%.1f MB", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, bufsz, "%.1f kB", v / 1e3);
    else
        snprintf(buf, bufsz, "%.0f B", v);
    return buf;
}

static void rend_launch(FILE *out, const cJSON *l)
{
    char k[160], g[64], b[64], t[32], p1[16], p2[16], p3[16], by[32], s[96];
    double gbs = tnum(l, "achieved_gbs"), peak = tnum(l, "board_peak_gbs");
    rend_ns(tnum(l, "duration_ns"), t, sizeof t);
    fprintf(out, "  %s  grid %s  block %s\n", tstr(l, "kernel", k, sizeof k),
            tstr(l, "grid", g, sizeof g), tstr(l, "block", b, sizeof b));
    fprintf(out, "    time %s   SM %s   memory %s   DRAM %s", t,
            pct(tnum(l, "sm_throughput_pct"), p1, sizeof p1),
            pct(tnum(l, "memory_throughput_pct"), p2, sizeof p2),
            bytes(tnum(l, "dram_bytes"), by, sizeof by));
    if (!isnan(gbs))
        fprintf(out, " at %.0f GB/s", gbs);
    if (!isnan(peak))
        fprintf(out, " (%s of the board's %.0f GB/s)",
                pct(tnum(l, "pct_of_board_bandwidth"), p3, sizeof p3), peak);
    fputc('\n', out);
    fprintf(out, "    occupancy %s of %s theoretical   %.0f registers   shared %s static + %s "
            "dynamic\n", pct(tnum(l, "occupancy_achieved_pct"), p1, sizeof p1),
            pct(tnum(l, "occupancy_theoretical_pct"), p2, sizeof p2), tnum(l, "registers"),
            bytes(tnum(l, "shared_static_bytes"), by, sizeof by),
            bytes(tnum(l, "shared_dynamic_bytes"), s, sizeof s));
    fprintf(out, "    L1 hit %s   L2 hit %s", pct(tnum(l, "l1_hit_pct"), p1, sizeof p1),
            pct(tnum(l, "l2_hit_pct"), p2, sizeof p2));
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(l, "roofline");
    if (!isnan(tnum(r, "intensity_flop_per_byte")))
        fprintf(out, "   roofline %.2f FLOP/B, %s-bound (ridge %.1f), %.0f GFLOP/s",
                tnum(r, "intensity_flop_per_byte"), tstr(r, "bound", s, sizeof s),
                tnum(r, "ridge_flop_per_byte"), tnum(r, "achieved_gflops"));
    fputc('\n', out);
    const cJSON *st, *stalls = cJSON_GetObjectItemCaseSensitive(l, "stalls");
    if (cJSON_GetArraySize(stalls) > 0) {
        fprintf(out, "    top stalls (cycles per issued instruction):");
        cJSON_ArrayForEach(st, stalls)
            fprintf(out, " %s %.2f", tstr(st, "reason", s, sizeof s), tnum(st, "cycles_per_issue"));
        fputc('\n', out);
    }
}

void rend_profile(FILE *out, const cJSON *result, const char *id)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(result, "profile"), *sh, *l;
    char label[300], note[600];
    if (!cJSON_IsObject(p))
        return;
    fprintf(out, "profile (Nsight Compute, %.0f launches; the full report: kjudge artifact %s)\n",
            isnan(tnum(p, "launches")) ? 0 : tnum(p, "launches"), id);
    cJSON_ArrayForEach(sh, cJSON_GetObjectItemCaseSensitive(p, "shapes")) {
        fprintf(out, "benchmark %.0f: %s\n", tnum(sh, "benchmark"), tstr(sh, "shape", label, sizeof label));
        cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(sh, "launches"))
            rend_launch(out, l);
    }
    if (tstr(p, "note", note, sizeof note)[0])
        fprintf(out, "note: %s\n", note);
}

static void rend_finding(FILE *out, const cJSON *f)
{
    char k[160], file[160], file2[160], addr[48];
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f, "thread"),
                *b = cJSON_GetObjectItemCaseSensitive(f, "block");
    fprintf(out, "    %s", tstr(f, "kernel", k, sizeof k));
    if (tstr(f, "file", file, sizeof file)[0])
        fprintf(out, "  %s:%.0f", file, tnum(f, "line"));
    if (!isnan(tnum(f, "line2")))
        fprintf(out, " and %s:%.0f", tstr(f, "file2", file2, sizeof file2), tnum(f, "line2"));
    if (cJSON_GetArraySize(t) == 3 && cJSON_GetArraySize(b) == 3)
        fprintf(out, "  thread (%d,%d,%d) block (%d,%d,%d)", cJSON_GetArrayItem(t, 0)->valueint,
                cJSON_GetArrayItem(t, 1)->valueint, cJSON_GetArrayItem(t, 2)->valueint,
                cJSON_GetArrayItem(b, 0)->valueint, cJSON_GetArrayItem(b, 1)->valueint,
                cJSON_GetArrayItem(b, 2)->valueint);
    if (tstr(f, "address", addr, sizeof addr)[0])
        fprintf(out, "  address %s", addr);
    if (!isnan(tnum(f, "size")))
        fprintf(out, "  %.0f bytes", tnum(f, "size"));
    if (!isnan(tnum(f, "hazards")))
        fprintf(out, "  %.0f hazards", tnum(f, "hazards"));
    if (!isnan(tnum(f, "test")))
        fprintf(out, "  in test %.0f", tnum(f, "test"));
    fputc('\n', out);
}

void rend_sanitize(FILE *out, const cJSON *result)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(result, "sanitize"), *g, *f;
    char tool[32], kind[300], note[600];
    if (!cJSON_IsObject(s))
        return;
    tstr(s, "tool", tool, sizeof tool);
    double errors = tnum(s, "errors");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "clean")))
        fprintf(out, "sanitize (%s): clean, no findings\n", tool);
    else
        fprintf(out, "sanitize (%s): %.0f finding%s in %d kind%s%s\n", tool, errors,
                errors == 1 ? "" : "s", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "groups")),
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "groups")) == 1 ? "" : "s",
                tnum(s, "more") > 0 ? " (the first ones listed)" : "");
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(s, "groups")) {
        int n = 0, listed = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "findings"));
        fprintf(out, "  %s: %.0f\n", tstr(g, "kind", kind, sizeof kind), tnum(g, "count"));
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "findings"))
            if (n++ < REND_TOOL_MAX_FINDINGS)
                rend_finding(out, f);
        if (listed > REND_TOOL_MAX_FINDINGS)
            fprintf(out, "    ... %d more like these\n", listed - REND_TOOL_MAX_FINDINGS);
    }
    if (tnum(s, "more") > 0)
        fprintf(out, "  %.0f more findings not listed\n", tnum(s, "more"));
    if (tstr(s, "note", note, sizeof note)[0])
        fprintf(out, "note: %s\n", note);
}
