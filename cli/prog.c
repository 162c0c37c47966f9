/*
 * prog.c - progress lines for a submission's events (prog.h).
 *
 * Each event is turned into a plain sentence (plain_line); in terminal
 * mode some of those sentences become permanent lines (shapes, failures,
 * retries) and the status line is redrawn after them with "\r" and the
 * erase-line sequence "ESC [ K". A test or shape is named by its index
 * from 0 (as the verdict and the web name it); the counts "k of N" come
 * from the events seen, not from the indexes: leaderboard mode times the
 * shapes in a random order.
 */
#include "prog.h"
#include "rend.h"

#include <math.h>
#include <string.h>

void prog_init(struct prog *p, FILE *out, int tty, int width, const char *head, int ntests,
               int nbench)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
    p->width = width > 20 ? width : 80;
    rend_clean(p->head, sizeof p->head, head);
    p->ntests = ntests;
    p->nbench = nbench;
}

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

/* "k/N", or "k" when N is unknown. */
static void count(char *buf, size_t bufsz, int k, int n)
{
    if (n > 0)
        snprintf(buf, bufsz, "%d/%d", k, n);
    else
        snprintf(buf, bufsz, "%d", k);
}

/* "test 2 T=16 H=1024 (3 of 5)": the case by its index from 0, as the
 * verdict, the web and the API number it, then how many have run. */
static void case_head(struct prog *p, int bench, const cJSON *d, char *buf, size_t bufsz)
{
    char shape[256], k[32];
    double idx = num(d, "index");
    int done = bench ? p->benches : p->tests, n = bench ? p->nbench : p->ntests;
    rend_shape(cJSON_GetObjectItemCaseSensitive(d, "shape"), shape, sizeof shape);
    if (n > 0)
        snprintf(k, sizeof k, " (%d of %d)", done, n);
    else
        k[0] = '\0';
    if (isnan(idx))
        snprintf(buf, bufsz, "%s %s%s", bench ? "shape" : "test", shape, k);
    else
        snprintf(buf, bufsz, "%s %.0f %s%s", bench ? "shape" : "test", idx, shape, k);
}

/* "queued: position 3 on H200", then the reason of a retry, or the
 * server's note (no runner serves that GPU type). */
static void queued_line(const cJSON *d, char *buf, size_t bufsz)
{
    char gpu[64], reason[256];
    double pos = num(d, "position"), attempt = num(d, "attempt");
    rend_clean(gpu, sizeof gpu, str(d, "gpu"));
    rend_clean(reason, sizeof reason, str(d, "reason") != NULL ? str(d, "reason") : str(d, "note"));
    if (isnan(pos))
        snprintf(buf, bufsz, "queued: no longer waiting%s%s", gpu[0] ? " on " : "", gpu);
    else
        snprintf(buf, bufsz, "queued: position %.0f%s%s%s", pos, gpu[0] ? " on " : "", gpu,
                 isnan(attempt) ? "" : " (again)");
    if (reason[0] != '\0') {
        size_t n = strlen(buf);
        snprintf(buf + n, bufsz - n, ": %s", reason);
    }
}

static void compiled_line(const cJSON *d, char *buf, size_t bufsz)
{
    const cJSON *k, *ok = cJSON_GetObjectItemCaseSensitive(d, "ok");
    char first[256], name[96];
    size_t used;
    int first_kernel = 1;
    if (cJSON_IsFalse(ok)) {
        const char *log = str(d, "log");
        size_t n = log != NULL ? strcspn(log, "\n") : 0;
        char raw[256];
        snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw - 1 ? n : sizeof raw - 1),
                 log != NULL ? log : "");
        rend_clean(first, sizeof first, raw);
        snprintf(buf, bufsz, "compile failed%s%s", first[0] ? ": " : "", first);
        return;
    }
    if (isnan(num(d, "seconds")))
        snprintf(buf, bufsz, "compiled");
    else
        snprintf(buf, bufsz, "compiled in %.2f s", num(d, "seconds"));
    used = strlen(buf);
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(d, "kernels")) {
        rend_clean(name, sizeof name, str(k, "name"));
        if (used + 1 < bufsz)
            used += (size_t)snprintf(buf + used, bufsz - used, "%s %s", first_kernel ? ":" : ",",
                                     name);
        first_kernel = 0;
        if (!isnan(num(k, "registers")) && used + 1 < bufsz)
            used += (size_t)snprintf(buf + used, bufsz - used, " (%.0f registers)",
                                     num(k, "registers"));
    }
    if (used >= bufsz)
        buf[bufsz - 1] = '\0';
}

/* "test 0 T=1 H=256 (1 of 5): pass" or "shape 2 T=256 ... (1 of 3): median 9.888 us (...)". */
static void case_line(struct prog *p, int bench, const cJSON *d, char *buf, size_t bufsz)
{
    char head[320], msg[512], med[32], lo[32], hi[32];
    const char *st = str(d, "status");
    case_head(p, bench, d, head, sizeof head);
    rend_clean(msg, sizeof msg, str(d, "message"));
    if (st != NULL && strcmp(st, "pass") != 0) {
        snprintf(buf, bufsz, "%s: %s%s%s", head, strcmp(st, "error") == 0 ? "error" : "fail",
                 msg[0] ? ": " : "", msg);
        return;
    }
    if (!bench || isnan(num(d, "median_ns"))) {
        snprintf(buf, bufsz, "%s: pass", head);
        return;
    }
    rend_ns(num(d, "median_ns"), med, sizeof med);
    rend_ns(num(d, "ci_lo_ns"), lo, sizeof lo);
    rend_ns(num(d, "ci_hi_ns"), hi, sizeof hi);
    if (isnan(num(d, "ci_lo_ns")))
        snprintf(buf, bufsz, "%s: median %s (n=%.0f)", head, med, num(d, "n"));
    else
        snprintf(buf, bufsz, "%s: median %s (95%% CI %s - %s, n=%.0f)", head, med, lo, hi,
                 num(d, "n"));
}

/* The plain sentence for an event; *permanent says whether a terminal keeps it. */
static void plain_line(struct prog *p, const char *event, const cJSON *d, char *buf,
                       size_t bufsz, int *permanent)
{
    char a[128], b[512];
    *permanent = 0;
    if (strcmp(event, "queued") == 0) {
        queued_line(d, buf, bufsz);
        *permanent = !isnan(num(d, "attempt")) || str(d, "reason") != NULL ||
                     str(d, "note") != NULL;
    } else if (strcmp(event, "compiling") == 0) {
        rend_clean(a, sizeof a, str(d, "arch"));
        snprintf(buf, bufsz, "compiling%s%s", a[0] ? " for " : "", a);
    } else if (strcmp(event, "compiled") == 0) {
        compiled_line(d, buf, bufsz);
        *permanent = 1;
    } else if (strcmp(event, "test") == 0 || strcmp(event, "benchmark") == 0) {
        int bench = event[0] == 'b';
        const char *st = str(d, "status");
        case_line(p, bench, d, buf, bufsz);
        *permanent = bench || (st != NULL && strcmp(st, "pass") != 0);
    } else if (strcmp(event, "verdict") == 0) {
        rend_clean(a, sizeof a, str(d, "verdict"));
        rend_clean(b, sizeof b, str(d, "message"));
        snprintf(buf, bufsz, "verdict: %s%s%s", a[0] ? a : "?", b[0] ? ": " : "", b);
    } else {
        rend_clean(a, sizeof a, event);
        snprintf(buf, bufsz, "%s", a);
    }
}

/* Terminal mode: redraw the status line. */
static void draw_status(struct prog *p)
{
    char line[512];
    int max = p->width - 1;
    snprintf(line, sizeof line, "%s: %s", p->head, p->status);
    if ((int)strlen(line) > max && max > 3)
        memcpy(line + max - 3, "...", 4);
    fprintf(p->out, "\r\033[K%s", line);
    fflush(p->out);
    p->shown = 1;
}

/* Terminal mode: the status text after an event. */
static void set_status(struct prog *p, const char *event, const char *plain)
{
    char t[32], b[32];
    if (strcmp(event, "test") == 0 || strcmp(event, "benchmark") == 0) {
        count(t, sizeof t, p->tests, p->ntests);
        count(b, sizeof b, p->benches, p->nbench);
        if (p->benches > 0)
            snprintf(p->status, sizeof p->status, "tests %s, shapes %s%s", t, b,
                     p->failed ? " (failures above)" : "");
        else
            snprintf(p->status, sizeof p->status, "tests %s%s", t,
                     p->failed ? " (failures above)" : "");
    } else if (strcmp(event, "compiled") == 0) {
        snprintf(p->status, sizeof p->status, "%s", "compiled; running");
    } else if (strncmp(plain, "queued: ", 8) == 0) {
        snprintf(p->status, sizeof p->status, "queued, %.*s", (int)sizeof p->status - 9, plain + 8);
    } else {
        snprintf(p->status, sizeof p->status, "%.*s", (int)sizeof p->status - 1, plain);
    }
}

void prog_event(struct prog *p, const char *event, const cJSON *data)
{
    char line[1024];
    int permanent;
    const char *st = str(data, "status");
    if (strcmp(event, "test") == 0)
        p->tests++;
    else if (strcmp(event, "benchmark") == 0)
        p->benches++;
    if ((strcmp(event, "test") == 0 || strcmp(event, "benchmark") == 0) && st != NULL &&
        strcmp(st, "pass") != 0)
        p->failed++;
    /* A job already taken (a replay, or a stream opened late) says nothing
     * new with a position-less queued event: the compiling event follows. */
    if (strcmp(event, "queued") == 0 && isnan(num(data, "position")) &&
        str(data, "reason") == NULL && str(data, "note") == NULL)
        return;
    plain_line(p, event, data, line, sizeof line, &permanent);
    if (!p->tty) {
        fprintf(p->out, "%s\n", line);
        fflush(p->out);
        return;
    }
    if (permanent)
        fprintf(p->out, "\r\033[K  %s\n", line);
    if (strcmp(event, "verdict") == 0) {
        prog_done(p);
        return;
    }
    set_status(p, event, line);
    draw_status(p);
}

void prog_done(struct prog *p)
{
    if (p->tty && p->shown) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
    p->shown = 0;
}
