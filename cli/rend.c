/*
 * rend.c - text views of the server's JSON (rend.h).
 *
 * Called by the commands and by prog.c. Numbers are shown in the unit that
 * keeps three decimals readable; tables size their columns to the widest
 * cell; every string from the server goes through rend_clean() first.
 * Absent keys are shown as "-", never as zero: a missing measurement is
 * not a fast one.
 */
#include "rend.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Text pieces                                                         */
/* ------------------------------------------------------------------ */

void rend_clean(char *dst, size_t dstsz, const char *src)
{
    size_t o = 0;
    if (dstsz == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)(src != NULL ? src : "");
         *p != '\0' && o + 1 < dstsz; p++) {
        unsigned char c = *p;
        if (c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* a C1 control as UTF-8 */
            dst[o++] = '?';
            p++;
        } else if (c == '\t') {
            dst[o++] = ' ';
        } else if (c < 0x20 || c == 0x7f) {
            dst[o++] = '?';
        } else {
            dst[o++] = (char)c;
        }
    }
    dst[o] = '\0';
}

void rend_ns(double ns, char *buf, size_t bufsz)
{
    if (!isfinite(ns) || ns < 0)
        snprintf(buf, bufsz, "-");
    else if (ns < 1e3)
        snprintf(buf, bufsz, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, bufsz, "%.3f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, bufsz, "%.3f ms", ns / 1e6);
    else
        snprintf(buf, bufsz, "%.3f s", ns / 1e9);
}

void rend_value(const cJSON *v, char *buf, size_t bufsz)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, bufsz, "%.6g", v->valuedouble);
    else if (cJSON_IsString(v))
        rend_clean(buf, bufsz, v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(buf, bufsz, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else
        snprintf(buf, bufsz, "-");
}

/* Append printf output at *used in buf (bufsz bytes), never past its end. */
static void add(char *buf, size_t bufsz, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t bufsz, size_t *used, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (*used + 1 >= bufsz)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *used, bufsz - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n < bufsz - *used ? (size_t)n : bufsz - *used - 1;
}

void rend_shape(const cJSON *shape, char *buf, size_t bufsz)
{
    const cJSON *it;
    char name[64], val[64];
    size_t used = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(it, shape) {
        rend_clean(name, sizeof name, it->string);
        rend_value(it, val, sizeof val);
        add(buf, bufsz, &used, "%s%s=%s", used ? " " : "", name, val);
    }
    if (used == 0)
        snprintf(buf, bufsz, "-");
}

/* "(x,y,z)" of a JSON array of numbers. */
static void dims(const cJSON *a, char *buf, size_t bufsz)
{
    const cJSON *it;
    size_t used = 0;
    add(buf, bufsz, &used, "(");
    cJSON_ArrayForEach(it, a)
        add(buf, bufsz, &used, "%s%.0f", used > 1 ? "," : "", cJSON_IsNumber(it) ? it->valuedouble : 0);
    add(buf, bufsz, &used, ")");
}

void rend_launches(const cJSON *launches, char *buf, size_t bufsz)
{
    const cJSON *l;
    size_t used = 0;
    char k[96], g[64], b[64];
    buf[0] = '\0';
    cJSON_ArrayForEach(l, launches) {
        const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(l, "kernel");
        const cJSON *smem = cJSON_GetObjectItemCaseSensitive(l, "smem");
        rend_clean(k, sizeof k, cJSON_IsString(kernel) ? kernel->valuestring : "?");
        dims(cJSON_GetObjectItemCaseSensitive(l, "grid"), g, sizeof g);
        dims(cJSON_GetObjectItemCaseSensitive(l, "block"), b, sizeof b);
        add(buf, bufsz, &used, "%s%s grid%s block%s smem %.0f", used ? "; " : "", k, g, b,
            cJSON_IsNumber(smem) ? smem->valuedouble : 0);
    }
    if (used == 0)
        snprintf(buf, bufsz, "-");
}

/* ------------------------------------------------------------------ */
/* Tables                                                              */
/* ------------------------------------------------------------------ */

void rend_tab_init(struct rend_tab *t, int ncols, const char *const *heads)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols < REND_MAX_COLS ? ncols : REND_MAX_COLS;
    for (int i = 0; i < t->ncols; i++) {
        t->right[i] = heads[i][0] == '>';
        t->head[i] = heads[i] + t->right[i];
    }
}

int rend_tab_add(struct rend_tab *t, const char *const *cells)
{
    char buf[REND_MAX_CELL + 4];
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **g = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *g);
        if (g == NULL)
            return -1;
        t->cells = g;
        t->cap = cap;
    }
    for (int i = 0; i < t->ncols; i++) {
        rend_clean(buf, REND_MAX_CELL + 1, cells[i]);
        if (cells[i] != NULL && strlen(cells[i]) > REND_MAX_CELL)
            memcpy(buf + REND_MAX_CELL - 3, "...", 4);
        char *c = strdup(buf);
        if (c == NULL) {
            for (int j = 0; j < i; j++)
                free(t->cells[t->nrows * t->ncols + j]);
            return -1;
        }
        t->cells[t->nrows * t->ncols + i] = c;
    }
    t->nrows++;
    return 0;
}

/* Display width of UTF-8 text: one per code point. */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void cell(FILE *out, const char *s, int w, int right, int last)
{
    int pad = w - width(s);
    if (right)
        fprintf(out, "%*s%s", pad > 0 ? pad : 0, "", s);
    else if (last)
        fputs(s, out);
    else
        fprintf(out, "%s%*s", s, pad > 0 ? pad : 0, "");
}

void rend_tab_print(const struct rend_tab *t, FILE *out)
{
    int w[REND_MAX_COLS], total = 0;
    if (t->nrows == 0) {
        fputs("(none)\n", out);
        return;
    }
    for (int c = 0; c < t->ncols; c++) {
        w[c] = width(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if (width(t->cells[r * t->ncols + c]) > w[c])
                w[c] = width(t->cells[r * t->ncols + c]);
        total += w[c] + (c ? 2 : 0);
    }
    for (int c = 0; c < t->ncols; c++) {
        fputs(c ? "  " : "", out);
        cell(out, t->head[c], w[c], t->right[c], c == t->ncols - 1);
    }
    fputc('\n', out);
    for (int i = 0; i < total; i++)
        fputc('-', out);
    fputc('\n', out);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            fputs(c ? "  " : "", out);
            cell(out, t->cells[r * t->ncols + c], w[c], t->right[c], c == t->ncols - 1);
        }
        fputc('\n', out);
    }
}

void rend_tab_fit(struct rend_tab *t, int col, int max)
{
    int total = 0, wc = 0, keep;
    if (max <= 0 || col < 0 || col >= t->ncols || t->nrows == 0)
        return;
    for (int c = 0; c < t->ncols; c++) {
        int w = width(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if (width(t->cells[r * t->ncols + c]) > w)
                w = width(t->cells[r * t->ncols + c]);
        total += w + (c ? 2 : 0);
        if (c == col)
            wc = w;
    }
    if (total <= max)
        return;
    keep = wc - (total - max);
    if (keep < 8)
        keep = 8;
    for (int r = 0; r < t->nrows; r++) {
        char *s = t->cells[r * t->ncols + col];
        int w = 0;
        if (width(s) <= keep)
            continue;
        /* keep - 3 code points, then "..." (the cell has room: it was wider) */
        for (char *q = s; *q; q++)
            if (((unsigned char)*q & 0xc0) != 0x80 && w++ == keep - 3) {
                memcpy(q, "...", 4);
                break;
            }
    }
}

void rend_tab_free(struct rend_tab *t)
{
    for (int i = 0; t->cells != NULL && i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

void rend_block(FILE *out, const char *text, const char *indent, int max_lines)
{
    char line[1024];
    int shown = 0, total = 0;
    const char *p = text != NULL ? text : "";
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        total++;
        if (shown < max_lines) {
            char raw[1024];
            size_t k = n < sizeof raw - 1 ? n : sizeof raw - 1;
            memcpy(raw, p, k);
            raw[k] = '\0';
            rend_clean(line, sizeof line, raw);
            fprintf(out, "%s%s%s\n", indent, line, n > k ? "..." : "");
            shown++;
        }
        p += n + (nl != NULL);
    }
    if (total > shown)
        fprintf(out, "%s... %d more lines (the whole text is in --json)\n", indent, total - shown);
}

/* Is the byte at p (n bytes left) a control character: a C0 byte or DEL,
 * or a C1 code point as UTF-8 (C2 80..C2 9F)? Sets *len to its bytes and
 * *code to the character. */
static int json_control(const unsigned char *p, size_t n, size_t *len, unsigned *code)
{
    if (p[0] < 0x20 || p[0] == 0x7f) {
        *len = 1;
        *code = p[0];
        return 1;
    }
    if (p[0] == 0xc2 && n > 1 && p[1] >= 0x80 && p[1] <= 0x9f) {
        *len = 2;
        *code = p[1];
        return 1;
    }
    return 0;
}

void rend_json(FILE *out, const char *body, size_t len)
{
    const unsigned char *p = (const unsigned char *)body;
    int in_str = 0, esc = 0;
    size_t i = 0, clen;
    unsigned code;
    while (i < len) {
        if (json_control(p + i, len - i, &clen, &code)) {
            if (!in_str && (code == '\n' || code == '\t' || code == '\r'))
                fputc(code == '\n' ? '\n' : ' ', out); /* white space between tokens */
            else /* right after a backslash, that one starts the escape */
                fprintf(out, esc ? "u%04x" : "\\u%04x", code);
            esc = 0;
            i += clen;
            continue;
        }
        if (in_str && esc)
            esc = 0;
        else if (in_str && p[i] == '\\')
            esc = 1;
        else if (p[i] == '"')
            in_str = !in_str;
        fputc(p[i], out);
        i++;
    }
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Which of the timing table's optional columns any entry has: another
 * user's ranked submission shows its medians only, and a column of "-"
 * says nothing. */
struct timing_cols {
    int ci, floor, n, launch;
};

/* One row of the timing table for benchmark entry b, with the columns in c. */
static int timing_row(struct rend_tab *t, const cJSON *b, const struct timing_cols *c)
{
    char shape[256], med[32], lo[32], hi[32], ci[80], fl[40], n[32], launch[512];
    double floor_ns = num(b, "floor_ns"), nn = num(b, "n");
    const cJSON *below = cJSON_GetObjectItemCaseSensitive(b, "below_floor");
    const char *status = str(b, "status"), *row[6];
    int k = 0;
    rend_shape(cJSON_GetObjectItemCaseSensitive(b, "shape"), shape, sizeof shape);
    rend_ns(num(b, "median_ns"), med, sizeof med);
    if (status != NULL && strcmp(status, "pass") != 0) {
        char st[24];
        rend_clean(st, sizeof st, status);
        snprintf(med, sizeof med, "(%s)", st);
    }
    rend_ns(num(b, "ci_lo_ns"), lo, sizeof lo);
    rend_ns(num(b, "ci_hi_ns"), hi, sizeof hi);
    if (isnan(num(b, "ci_lo_ns")))
        snprintf(ci, sizeof ci, "-");
    else
        snprintf(ci, sizeof ci, "%s - %s", lo, hi);
    rend_ns(floor_ns, fl, sizeof fl);
    if (cJSON_IsTrue(below) || (cJSON_IsNumber(below) && below->valueint != 0))
        strncat(fl, " BELOW", sizeof fl - strlen(fl) - 1);
    if (isnan(nn))
        snprintf(n, sizeof n, "-");
    else
        snprintf(n, sizeof n, "%.0f", nn);
    rend_launches(cJSON_GetObjectItemCaseSensitive(b, "launches"), launch, sizeof launch);
    row[k++] = shape;
    row[k++] = med;
    if (c->ci)
        row[k++] = ci;
    if (c->floor)
        row[k++] = fl;
    if (c->n)
        row[k++] = n;
    if (c->launch)
        row[k++] = launch;
    return rend_tab_add(t, row);
}

void rend_timing(FILE *out, const cJSON *result)
{
    const cJSON *b, *all = cJSON_GetObjectItemCaseSensitive(result, "benchmarks");
    const char *heads[6];
    struct rend_tab t;
    struct timing_cols c = {0, 0, 0, 0};
    int below = 0, k = 0;
    cJSON_ArrayForEach(b, all) {
        c.ci |= !isnan(num(b, "ci_lo_ns"));
        c.floor |= !isnan(num(b, "floor_ns"));
        c.n |= !isnan(num(b, "n"));
        c.launch |= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "launches")) > 0;
    }
    heads[k++] = "shape";
    heads[k++] = ">median";
    if (c.ci)
        heads[k++] = "95% CI of the median";
    if (c.floor)
        heads[k++] = ">floor";
    if (c.n)
        heads[k++] = ">n";
    if (c.launch)
        heads[k++] = "launch";
    rend_tab_init(&t, k, heads);
    cJSON_ArrayForEach(b, all) {
        timing_row(&t, b, &c);
        below |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "below_floor"));
    }
    rend_tab_print(&t, out);
    rend_tab_free(&t);
    if (below)
        fputs("BELOW: the median is under the physical floor (bytes that must move / peak "
              "bandwidth); it is flagged for review\n", out);
}

void rend_mismatch(FILE *out, const cJSON *m, const char *indent)
{
    char buf[64], idx[128], exp[48], got[48];
    const cJSON *f;
    rend_clean(buf, sizeof buf, str(m, "buffer"));
    fprintf(out, "%s%s: %.0f of %.0f elements differ (max abs err %.4g, max rel err %.4g)\n",
            indent, buf[0] ? buf : "output", num(m, "count"), num(m, "total"),
            num(m, "max_abs_err"), num(m, "max_rel_err"));
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(m, "first")) {
        const cJSON *i;
        size_t used = 0;
        idx[0] = '\0';
        add(idx, sizeof idx, &used, "[");
        cJSON_ArrayForEach(i, cJSON_GetObjectItemCaseSensitive(f, "index"))
            add(idx, sizeof idx, &used, "%s%.0f", used > 1 ? ", " : "", cJSON_IsNumber(i) ? i->valuedouble : 0);
        add(idx, sizeof idx, &used, "]");
        rend_value(cJSON_GetObjectItemCaseSensitive(f, "expected"), exp, sizeof exp);
        rend_value(cJSON_GetObjectItemCaseSensitive(f, "got"), got, sizeof got);
        fprintf(out, "%s  at %s expected %s got %s\n", indent, idx, exp, got);
    }
}

/* Entry e of a tests or benchmarks array, when it failed: its status, its
 * name as "test 2 (T=16)" (what, the case's index and its shape) and its
 * message, cleaned. NULL when it passed or has no status. */
static const char *case_failed(const cJSON *e, const char *what, char *name, size_t namesz,
                               char *msg, size_t msgsz)
{
    char shape[256];
    const char *st = str(e, "status");
    if (st == NULL || strcmp(st, "pass") == 0)
        return NULL;
    rend_shape(cJSON_GetObjectItemCaseSensitive(e, "shape"), shape, sizeof shape);
    snprintf(name, namesz, "%s %.0f (%s)", what, num(e, "index"), shape);
    rend_clean(msg, msgsz, str(e, "message"));
    return st;
}

/* The failing entries of a tests or benchmarks array. */
static void failed_cases(FILE *out, const cJSON *arr, const char *what)
{
    const cJSON *e;
    char name[320], msg[1024];
    cJSON_ArrayForEach(e, arr) {
        const char *st = case_failed(e, what, name, sizeof name, msg, sizeof msg);
        if (st == NULL)
            continue;
        fprintf(out, "%s: %s%s%s\n", name, strcmp(st, "error") == 0 ? "error" : "fail",
                msg[0] ? ": " : "", msg);
        const cJSON *mm = cJSON_GetObjectItemCaseSensitive(e, "mismatch");
        if (cJSON_IsObject(mm))
            rend_mismatch(out, mm, "  ");
    }
}

/* Does some failed case of arr say exactly msg, as "what N (shape): its
 * message"? Then its own line (with its status) says it already. */
static int case_says(const cJSON *arr, const char *what, const char *msg)
{
    const cJSON *e;
    char name[320], cmsg[1024], line[1400];
    cJSON_ArrayForEach(e, arr) {
        if (case_failed(e, what, name, sizeof name, cmsg, sizeof cmsg) == NULL)
            continue;
        snprintf(line, sizeof line, "%s: %s", name, cmsg);
        if (strcmp(line, msg) == 0)
            return 1;
    }
    return 0;
}

void rend_evidence(FILE *out, const cJSON *sub)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(sub, "result");
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(res, "compile");
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(res, "tests");
    const cJSON *benches = cJSON_GetObjectItemCaseSensitive(res, "benchmarks");
    const char *verdict = str(sub, "verdict"), *log = str(comp, "log");
    char msg[2048];
    rend_clean(msg, sizeof msg, str(res, "message"));
    if (msg[0] != '\0' && !case_says(tests, "test", msg) && !case_says(benches, "shape", msg) &&
        !case_says(benches, "benchmark", msg))
        fprintf(out, "%s\n", msg);
    if (verdict != NULL && strcmp(verdict, "compile_error") == 0 && log != NULL && log[0]) {
        fputs("compile log:\n", out);
        rend_block(out, log, "  ", 60);
    }
    failed_cases(out, tests, "test");
    failed_cases(out, benches, "shape");
    rend_clean(msg, sizeof msg, str(sub, "reason"));
    if (msg[0] != '\0')
        fprintf(out, "reason: %s\n", msg);
}
