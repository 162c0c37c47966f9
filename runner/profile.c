/*
 * profile.c - Nsight Compute's raw page into the profile summary (see
 * profile.h).
 */
#include "profile.h"
#include "fdio.h"
#include "mono.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROFILE_MAX_CSV (64u << 20)
#define PROFILE_MAX_COLS 4096
#define PROFILE_TOP_STALLS 3

int profile_import(const char *tool, const char *report, double deadline, char **out,
                   size_t *len, struct kj_err *err)
{
    char *argv[] = {(char *)tool, "--import", (char *)report, "--csv", "--page", "raw",
                    "--print-units", "base", NULL};
    int status = 0;
    int rc = fdio_capture(argv, deadline, PROFILE_MAX_CSV, out, len, &status, err);
    if (rc == KJ_ETIMEOUT)
        return KJ_FAIL(err, KJ_ETIMEOUT, "ncu --import took too long");
    if (rc == KJ_ELIMIT)
        return KJ_FAIL(err, KJ_ELIMIT, "the report's metrics exceed %u bytes", PROFILE_MAX_CSV);
    if (rc == KJ_OK && *len == 0) {
        free(*out);
        *out = NULL;
        return KJ_FAIL(err, KJ_EIO, "ncu --import printed nothing (status %d)",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return rc;
}

/* ------------------------------------------------------------------ CSV */

struct csv_row {
    char **f;
    int n;
};

static void row_free(struct csv_row *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->f[i]);
    free(r->f);
    r->f = NULL;
    r->n = 0;
}

/* One CSV record from *p (quotes, "" escapes); 0 at the end of input. */
static int csv_next(const char **p, const char *end, struct csv_row *r)
{
    const char *s = *p;
    r->f = NULL;
    r->n = 0;
    while (s < end && (*s == '\n' || *s == '\r'))
        s++;
    if (s >= end)
        return 0;
    int cap = 0;
    for (;;) {
        size_t fcap = 64, fn = 0;
        char *fv = malloc(fcap);
        if (fv == NULL)
            return -1;
        if (s < end && *s == '"') {
            s++;
            while (s < end) {
                if (*s == '"' && s + 1 < end && s[1] == '"') {
                    s += 2;
                    fv[fn++] = '"';
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    fv[fn++] = *s++;
                }
                if (fn + 1 >= fcap) {
                    char *nf = realloc(fv, fcap *= 2);
                    if (nf == NULL) { free(fv); return -1; }
                    fv = nf;
                }
            }
        }
        while (s < end && *s != ',' && *s != '\n' && *s != '\r') {
            fv[fn++] = *s++;
            if (fn + 1 >= fcap) {
                char *nf = realloc(fv, fcap *= 2);
                if (nf == NULL) { free(fv); return -1; }
                fv = nf;
            }
        }
        fv[fn] = '\0';
        if (r->n >= cap) {
            cap = cap ? cap * 2 : 64;
            if (cap > PROFILE_MAX_COLS) { free(fv); return -1; }
            char **nf = realloc(r->f, (size_t)cap * sizeof *nf);
            if (nf == NULL) { free(fv); return -1; }
            r->f = nf;
        }
        r->f[r->n++] = fv;
        if (s < end && *s == ',') {
            s++;
            continue;
        }
        break;
    }
    *p = s;
    return 1;
}

/* ------------------------------------------------------------- metrics */

struct pf {
    const struct csv_row *head, *row;
};

static int pf_col(const struct pf *p, const char *name)
{
    for (int i = 0; i < p->head->n; i++)
        if (strcmp(p->head->f[i], name) == 0)
            return i;
    return -1;
}

/* The metric as a number (thousands separators dropped); NAN when absent
 * or not a number. */
static double pf_num(const struct pf *p, const char *name)
{
    int c = pf_col(p, name);
    if (c < 0 || c >= p->row->n)
        return NAN;
    char tmp[64];
    size_t k = 0;
    for (const char *s = p->row->f[c]; *s && k + 1 < sizeof tmp; s++)
        if (*s != ',')
            tmp[k++] = *s;
    tmp[k] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    return end == tmp || *end != '\0' ? NAN : v;
}

static const char *pf_str(const struct pf *p, const char *name)
{
    int c = pf_col(p, name);
    return c >= 0 && c < p->row->n ? p->row->f[c] : NULL;
}

static void put_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
}

static double sum_nan(double a, double b) { return isnan(a) ? b : isnan(b) ? a : a + b; }

/* Instructions per elapsed cycle (over every SM sub-partition) of one
 * precision's add, mul and FMA, as FLOPs per cycle: 2 per FMA. */
static double pf_flops_per_cycle(const struct pf *p, char t)
{
    char n[96];
    double v = NAN;
    snprintf(n, sizeof n, "smsp__sass_thread_inst_executed_op_%cfma_pred_on.sum.per_cycle_elapsed", t);
    double fma = pf_num(p, n);
    if (isfinite(fma))
        v = 2 * fma;
    snprintf(n, sizeof n, "smsp__sass_thread_inst_executed_op_%cadd_pred_on.sum.per_cycle_elapsed", t);
    v = sum_nan(v, pf_num(p, n));
    snprintf(n, sizeof n, "smsp__sass_thread_inst_executed_op_%cmul_pred_on.sum.per_cycle_elapsed", t);
    return sum_nan(v, pf_num(p, n));
}

static cJSON *pf_stalls(const struct pf *p)
{
    static const char pre[] = "smsp__average_warps_issue_stalled_";
    static const char suf[] = "_per_issue_active.ratio";
    int top[PROFILE_TOP_STALLS];
    double val[PROFILE_TOP_STALLS];
    int n = 0;
    for (int i = 0; i < p->head->n && i < p->row->n; i++) {
        const char *h = p->head->f[i];
        size_t hl = strlen(h);
        if (strncmp(h, pre, sizeof pre - 1) != 0 || hl <= sizeof pre - 1 + sizeof suf - 1 ||
            strcmp(h + hl - (sizeof suf - 1), suf) != 0)
            continue;
        double v = strtod(p->row->f[i], NULL);
        if (!(v > 0) || (n == PROFILE_TOP_STALLS && v <= val[n - 1]))
            continue;
        int k = n < PROFILE_TOP_STALLS ? n++ : n - 1; /* the slot to fill, then sift up */
        while (k > 0 && val[k - 1] < v) {
            val[k] = val[k - 1];
            top[k] = top[k - 1];
            k--;
        }
        val[k] = v;
        top[k] = i;
    }
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; a != NULL && k < n; k++) {
        const char *h = p->head->f[top[k]];
        char reason[96];
        size_t rl = strlen(h) - (sizeof pre - 1) - (sizeof suf - 1);
        snprintf(reason, sizeof reason, "%.*s", (int)rl, h + sizeof pre - 1);
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "reason", reason);
        cJSON_AddNumberToObject(s, "cycles_per_issue", val[k]);
        cJSON_AddItemToArray(a, s);
    }
    return a;
}

static cJSON *pf_roofline(const struct pf *p, double dram_bytes, double dur_ns)
{
    double per_cycle = sum_nan(sum_nan(pf_flops_per_cycle(p, 'f'), pf_flops_per_cycle(p, 'd')),
                               pf_flops_per_cycle(p, 'h'));
    double flops = per_cycle * pf_num(p, "smsp__cycles_elapsed.avg.per_second") * dur_ns * 1e-9;
    double peak_fma = pf_num(p, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained");
    double sm_hz = pf_num(p, "sm__cycles_elapsed.avg.per_second");
    double peak_dram = pf_num(p, "dram__bytes.sum.peak_sustained");
    double dram_hz = pf_num(p, "dram__cycles_elapsed.avg.per_second");
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    put_num(o, "flops", flops);
    if (isfinite(flops) && dram_bytes > 0)
        put_num(o, "intensity_flop_per_byte", flops / dram_bytes);
    if (isfinite(flops) && dur_ns > 0)
        put_num(o, "achieved_gflops", flops / dur_ns);
    double pf32 = 2 * peak_fma * sm_hz / 1e9, pbw = peak_dram * dram_hz / 1e9;
    put_num(o, "peak_fp32_gflops", pf32);
    put_num(o, "peak_dram_gbs", pbw);
    if (isfinite(pf32) && isfinite(pbw) && pbw > 0) {
        double ridge = pf32 / pbw;
        put_num(o, "ridge_flop_per_byte", ridge);
        if (isfinite(flops) && dram_bytes > 0)
            cJSON_AddStringToObject(o, "bound", flops / dram_bytes < ridge ? "memory" : "compute");
    }
    return o;
}

static cJSON *pf_launch(const struct pf *p, double peak_gbs)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    const char *k = pf_str(p, "Kernel Name"), *g = pf_str(p, "Grid Size"),
               *b = pf_str(p, "Block Size");
    put_num(o, "id", pf_num(p, "ID"));
    cJSON_AddStringToObject(o, "kernel", k ? k : "?");
    if (g) cJSON_AddStringToObject(o, "grid", g);
    if (b) cJSON_AddStringToObject(o, "block", b);
    double dur = pf_num(p, "gpu__time_duration.sum");
    /* DRAM bytes moved: the average rate over the launch times its duration
     * (written data still in L2 when the kernel ends is not counted). */
    double bytes = pf_num(p, "dram__bytes.sum.per_second") * dur * 1e-9;
    put_num(o, "duration_ns", dur);
    put_num(o, "sm_throughput_pct", pf_num(p, "sm__throughput.avg.pct_of_peak_sustained_elapsed"));
    put_num(o, "memory_throughput_pct",
            pf_num(p, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
    put_num(o, "dram_throughput_pct", pf_num(p, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"));
    put_num(o, "dram_bytes", bytes);
    if (dur > 0 && isfinite(bytes)) {
        put_num(o, "achieved_gbs", bytes / dur);
        if (peak_gbs > 0) {
            put_num(o, "board_peak_gbs", peak_gbs);
            put_num(o, "pct_of_board_bandwidth", 100.0 * bytes / dur / peak_gbs);
        }
    }
    put_num(o, "occupancy_achieved_pct", pf_num(p, "sm__warps_active.avg.pct_of_peak_sustained_active"));
    put_num(o, "occupancy_theoretical_pct", pf_num(p, "sm__maximum_warps_per_active_cycle_pct"));
    put_num(o, "registers", pf_num(p, "launch__registers_per_thread"));
    put_num(o, "shared_static_bytes", pf_num(p, "launch__shared_mem_per_block_static"));
    put_num(o, "shared_dynamic_bytes", pf_num(p, "launch__shared_mem_per_block_dynamic"));
    put_num(o, "l1_hit_pct", pf_num(p, "l1tex__t_sector_hit_rate.pct"));
    put_num(o, "l2_hit_pct", pf_num(p, "lts__t_sector_hit_rate.pct"));
    cJSON_AddItemToObject(o, "stalls", pf_stalls(p));
    cJSON_AddItemToObject(o, "roofline", pf_roofline(p, bytes, dur));
    return o;
}

/* The shape entry for benchmark i in shapes, made on first use. */
static cJSON *pf_shape(cJSON *shapes, int i, const struct profile_ctx *c)
{
    cJSON *it;
    cJSON_ArrayForEach(it, shapes) {
        cJSON *b = cJSON_GetObjectItem(it, "benchmark");
        if (cJSON_IsNumber(b) && b->valueint == i)
            return cJSON_GetObjectItem(it, "launches");
    }
    cJSON *s = cJSON_CreateObject();
    if (s == NULL)
        return NULL;
    cJSON_AddNumberToObject(s, "benchmark", i);
    if (c->spec != NULL && i >= 0 && i < c->spec->nbenchmarks) {
        char label[256];
        spec_case_label(c->spec, &c->spec->benchmarks[i], label, sizeof label);
        cJSON_AddStringToObject(s, "shape", label);
    }
    cJSON *l = cJSON_AddArrayToObject(s, "launches");
    cJSON_AddItemToArray(shapes, s);
    return l;
}

cJSON *profile_summary(const char *csv, size_t len, const struct profile_ctx *c,
                       struct kj_err *err)
{
    const char *p = csv, *end = csv + len;
    struct csv_row head, units, row;
    /* ncu may print "==PROF==" lines before the table */
    while (p < end && strncmp(p, "\"ID\"", 4) != 0 && strncmp(p, "ID,", 3) != 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (csv_next(&p, end, &head) != 1) {
        KJ_FAIL(err, KJ_EINVAL, "no table in the report's raw page");
        return NULL;
    }
    struct pf f = {&head, &head};
    if (pf_col(&f, "Kernel Name") < 0) {
        row_free(&head);
        KJ_FAIL(err, KJ_EINVAL, "the raw page has no \"Kernel Name\" column");
        return NULL;
    }
    if (csv_next(&p, end, &units) != 1)
        units.n = 0, units.f = NULL;
    cJSON *o = cJSON_CreateObject(), *shapes = cJSON_CreateArray();
    int n = 0, nl = c->nlaunch > 0 ? c->nlaunch : 1;
    while (o != NULL && shapes != NULL && csv_next(&p, end, &row) == 1) {
        f.row = &row;
        int shape = c->only >= 0 ? c->only : n / nl;
        cJSON *l = pf_shape(shapes, shape, c);
        if (l != NULL)
            cJSON_AddItemToArray(l, pf_launch(&f, c->peak_gbs));
        row_free(&row);
        n++;
    }
    row_free(&head);
    row_free(&units);
    if (o == NULL || shapes == NULL) {
        cJSON_Delete(o);
        cJSON_Delete(shapes);
        KJ_FAIL(err, KJ_ENOMEM, "out of memory");
        return NULL;
    }
    cJSON_AddStringToObject(o, "tool", "ncu");
    cJSON_AddNumberToObject(o, "launches", n);
    cJSON_AddItemToObject(o, "shapes", shapes);
    return o;
}
