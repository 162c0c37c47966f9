/*
 * curlc.c - HTTP(S) requests and Server-Sent Events over libcurl (curlc.h).
 *
 * Callers (cli/kjc.c, runner/serve.c) make one struct curlc per server and thread and call
 * curlc_get/post/post_form/sse; each call resets the libcurl handle (the
 * connection cache survives), sets every option again, runs the transfer
 * and maps libcurl's result to a kj_err code plus a curlc_fail kind the
 * caller can turn into a message. Bodies are collected up to max_body;
 * an event stream is fed to the SSE parser at the bottom of this file as
 * it arrives, and the caller's function sees each event at once.
 */
#include "curlc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CURLC_MAX_TOKEN 512
#define CURLC_MAX_URL 4096

struct curlc {
    CURL *h;                 /* owned */
    char *base;              /* owned: base URL without a trailing '/' */
    char *auth;              /* owned: "Authorization: Bearer T", or NULL */
    char *ca_file;           /* owned, or NULL */
    char *agent;             /* owned */
    long connect_ms, timeout_ms;
    size_t max_body;
    const volatile sig_atomic_t *abort_flag; /* borrowed, or NULL (curlc_opts) */
    long abort_after_ms;                      /* curlc_opts */
};

/* State of one transfer, on the stack of the request function. */
struct xfer {
    CURL *h;                 /* borrowed from the struct curlc */
    struct curlc_resp *out;  /* borrowed: the caller's response */
    size_t cap, max;
    int too_large;
    int answered;            /* a byte of the answer (a header line) has come */
    double t0;               /* CLOCK_MONOTONIC seconds when the transfer began */
    const volatile sig_atomic_t *abort_flag; /* borrowed from the struct curlc */
    long abort_after_ms;
    /* streams only */
    int sse, decided, streaming, stopped, parse_rc;
    struct curlc_ssep ssep;
    curlc_event_fn fn;
    void *ctx;
    struct kj_err perr;
};

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

int curlc_init(struct kj_err *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return KJ_FAIL(err, KJ_EINTERNAL, "libcurl could not be initialized");
    return 0;
}

void curlc_cleanup(void)
{
    curl_global_cleanup();
}

/* 1 when s is made of printable ASCII without blanks (header-safe). */
static int is_token_text(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

static int check_base(const char *url, struct kj_err *err)
{
    const char *host;
    if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    else
        return KJ_FAIL(err, KJ_EINVAL, "the server URL must start with http:// or https://");
    if (!is_token_text(url, CURLC_MAX_URL / 2))
        return KJ_FAIL(err, KJ_EINVAL, "the server URL has blanks or control characters");
    if (host[0] == '\0' || host[0] == '/')
        return KJ_FAIL(err, KJ_EINVAL, "the server URL has no host");
    if (strpbrk(url, "?#") != NULL)
        return KJ_FAIL(err, KJ_EINVAL, "the server URL must not have a query or fragment");
    if (strchr(host, '@') != NULL)
        return KJ_FAIL(err, KJ_EINVAL, "the server URL must not hold a user name or password");
    return 0;
}

int curlc_new(const struct curlc_opts *o, struct curlc **out, struct kj_err *err)
{
    struct curlc *c = NULL;
    size_t n;
    int rc;
    *out = NULL;
    if (o->base_url == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "no server URL");
    if ((rc = check_base(o->base_url, err)) != 0)
        return rc;
    if (o->bearer != NULL && !is_token_text(o->bearer, CURLC_MAX_TOKEN))
        return KJ_FAIL(err, KJ_EINVAL, "the token must be printable text without blanks");
    if ((c = calloc(1, sizeof *c)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    c->base = strdup(o->base_url);
    c->agent = strdup(o->user_agent != NULL ? o->user_agent : "kjudge-curlc");
    c->ca_file = o->ca_file != NULL ? strdup(o->ca_file) : NULL;
    if (o->bearer != NULL && (c->auth = malloc(strlen(o->bearer) + 32)) != NULL)
        snprintf(c->auth, strlen(o->bearer) + 32, "Authorization: Bearer %s", o->bearer);
    c->h = curl_easy_init();
    if (c->base == NULL || c->agent == NULL || (o->ca_file != NULL && c->ca_file == NULL) ||
        (o->bearer != NULL && c->auth == NULL) || c->h == NULL) {
        curlc_free(c);
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory setting up the HTTP client");
    }
    n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = '\0';
    c->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : CURLC_DEFAULT_CONNECT_MS;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
    c->max_body = o->max_body > 0 ? o->max_body : CURLC_DEFAULT_MAX_BODY;
    c->abort_flag = o->abort_flag;
    c->abort_after_ms = o->abort_after_ms > 0 ? o->abort_after_ms : 0;
    *out = c;
    return 0;
}

void curlc_free(struct curlc *c)
{
    if (c == NULL)
        return;
    if (c->h != NULL)
        curl_easy_cleanup(c->h);
    if (c->auth != NULL)
        memset(c->auth, 0, strlen(c->auth));
    free(c->auth);
    free(c->base);
    free(c->ca_file);
    free(c->agent);
    free(c);
}

const char *curlc_base(const struct curlc *c)
{
    return c->base;
}

char *curlc_auth(struct curlc *c, size_t *len)
{
    *len = c->auth != NULL ? strlen(c->auth) : 0;
    return c->auth;
}

void curlc_resp_free(struct curlc_resp *r)
{
    if (r == NULL)
        return;
    if (r->body != NULL) /* a body may hold a secret (a claim's seed): wiped first */
        explicit_bzero(r->body, r->len);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

/* Copy the value of header line h (n bytes, "Name: value\r\n") into dst. */
static void header_value(const char *h, size_t n, size_t name_len, char *dst, size_t dstsz)
{
    size_t i = name_len, j = n;
    while (i < n && (h[i] == ' ' || h[i] == '\t'))
        i++;
    while (j > i && (h[j - 1] == '\r' || h[j - 1] == '\n' || h[j - 1] == ' '))
        j--;
    if (j - i >= dstsz)
        j = i + dstsz - 1;
    memcpy(dst, h + i, j - i);
    dst[j - i] = '\0';
}

static size_t on_header(char *h, size_t size, size_t nitems, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nitems;
    char v[32];
    x->answered = 1;
    if (n >= 5 && strncmp(h, "HTTP/", 5) == 0) { /* a new response (after 100 Continue) */
        x->out->content_type[0] = '\0';
        x->out->content_disposition[0] = '\0';
        x->out->retry_after = -1;
    } else if (n > 13 && strncasecmp(h, "Content-Type:", 13) == 0) {
        header_value(h, n, 13, x->out->content_type, sizeof x->out->content_type);
    } else if (n > 20 && strncasecmp(h, "Content-Disposition:", 20) == 0) {
        header_value(h, n, 20, x->out->content_disposition, sizeof x->out->content_disposition);
    } else if (n > 12 && strncasecmp(h, "Retry-After:", 12) == 0) {
        header_value(h, n, 12, v, sizeof v);
        if (v[0] >= '0' && v[0] <= '9' && strlen(v) <= 9 && strspn(v, "0123456789") == strlen(v))
            x->out->retry_after = atoi(v);
    }
    return n;
}

/* Append n bytes to the response body, within the cap. */
static int body_append(struct xfer *x, const char *p, size_t n)
{
    struct curlc_resp *r = x->out;
    if (r->len + n > x->max) {
        x->too_large = 1;
        return -1;
    }
    if (r->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        /* Not realloc: the block it frees would keep what the body held so
         * far (a claim's secret seed); copied, then wiped and freed. */
        char *grown = malloc(cap);
        if (grown == NULL)
            return -1;
        if (r->body != NULL) {
            memcpy(grown, r->body, r->len + 1);
            explicit_bzero(r->body, x->cap);
            free(r->body);
        }
        r->body = grown;
        x->cap = cap;
    }
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = '\0';
    return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (x->sse && !x->decided) {
        long st = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
        x->streaming = st == 200 &&
                       strncasecmp(x->out->content_type, "text/event-stream", 17) == 0;
        x->decided = 1;
    }
    if (!x->streaming)
        return body_append(x, p, n) == 0 ? n : 0;
    int rc = curlc_ssep_feed(&x->ssep, p, n, x->fn, x->ctx, &x->perr);
    if (rc == 1)
        x->stopped = 1;
    else if (rc < 0)
        x->parse_rc = rc;
    return rc == 0 ? n : 0;
}

/* ------------------------------------------------------------------ */
/* Transfers                                                           */
/* ------------------------------------------------------------------ */

static enum curlc_fail fail_kind(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return CURLC_FAIL_RESOLVE;
    case CURLE_COULDNT_CONNECT:
        return CURLC_FAIL_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        return CURLC_FAIL_TIMEOUT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_USE_SSL_FAILED:
        return CURLC_FAIL_TLS;
    case CURLE_FILESIZE_EXCEEDED:
        return CURLC_FAIL_TOO_LARGE;
    default:
        return CURLC_FAIL_IO;
    }
}

/* The full URL of path into buf; KJ_EINVAL for a path that is not "/..." printable text. */
static int make_url(const struct curlc *c, const char *path, char *buf, size_t bufsz,
                    struct kj_err *err)
{
    if (path[0] != '/' || !is_token_text(path, CURLC_MAX_URL / 2))
        return KJ_FAIL(err, KJ_EINVAL, "bad request path (it must start with '/' and have no "
                       "blanks or control characters)");
    if ((size_t)snprintf(buf, bufsz, "%s%s", c->base, path) >= bufsz)
        return KJ_FAIL(err, KJ_EINVAL, "the request URL is too long");
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* libcurl's progress callback (at least once a second, even idle): a
 * non-zero return aborts the transfer with CURLE_ABORTED_BY_CALLBACK.
 * With the abort flag set, only a request whose answer has not begun and
 * that has run abort_after_ms is dropped (curlc_opts). */
static int on_progress(void *cls, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct xfer *x = cls;
    (void)dt, (void)ut, (void)un;
    if (*x->abort_flag == 0 || x->answered || dn > 0)
        return 0;
    return (now_s() - x->t0) * 1000 >= (double)x->abort_after_ms;
}

/* Options every transfer shares. */
static void set_common(struct curlc *c, struct xfer *x, const char *url, struct curl_slist *hdrs,
                       char *errbuf, long timeout_ms, long idle_ms)
{
    CURL *h = c->h;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    /* Certificates are always checked (libcurl's defaults, said here). No
     * CURLOPT_PROXY: libcurl takes http_proxy, https_proxy and no_proxy
     * from the environment, which is what operators behind a proxy set. */
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->agent);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    if (!x->sse)
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max);
    if (idle_ms > 0) {
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (idle_ms + 999) / 1000);
    }
    if (c->ca_file != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    x->t0 = now_s();
    x->answered = 0;
    if (c->abort_flag != NULL) {
        x->abort_flag = c->abort_flag;
        x->abort_after_ms = c->abort_after_ms;
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
}

/* Headers: the token, Accept, and the extra ones given (NULL-terminated). */
static struct curl_slist *make_headers(const struct curlc *c, const char *accept,
                                       const char *const *extra)
{
    struct curl_slist *l = NULL, *t;
    char buf[160];
    snprintf(buf, sizeof buf, "Accept: %s", accept);
    if ((l = curl_slist_append(NULL, buf)) == NULL)
        return NULL;
    if (c->auth != NULL && (t = curl_slist_append(l, c->auth)) == NULL)
        goto fail;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++)
        if ((t = curl_slist_append(l, extra[i])) == NULL)
            goto fail;
    return l;
fail:
    curl_slist_free_all(l);
    return NULL;
}

/* Run the transfer set up on c->h; map the outcome into out and err. */
static int run(struct curlc *c, struct xfer *x, const char *method, const char *url,
               const char *errbuf, struct kj_err *err)
{
    CURLcode cc = curl_easy_perform(c->h);
    struct curlc_resp *r = x->out;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &r->status);
    if (cc == CURLE_WRITE_ERROR && x->stopped)
        cc = CURLE_OK;
    if (cc == CURLE_OK) {
        if (r->body == NULL && (r->body = calloc(1, 1)) == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
        return 0;
    }
    if (cc == CURLE_WRITE_ERROR && x->parse_rc != 0) {
        r->fail = CURLC_FAIL_IO;
        return KJ_FAIL(err, x->parse_rc, "%s %s: bad event stream: %s", method, url, x->perr.msg);
    }
    r->fail = (cc == CURLE_WRITE_ERROR && x->too_large) ? CURLC_FAIL_TOO_LARGE : fail_kind(cc);
    if (r->fail == CURLC_FAIL_TOO_LARGE)
        return KJ_FAIL(err, KJ_ELIMIT, "%s %s: the answer is larger than %zu bytes", method, url,
                       x->max);
    if (cc == CURLE_WRITE_ERROR)
        return KJ_FAIL(err, KJ_ENOMEM, "%s %s: out of memory reading the answer", method, url);
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        r->fail = CURLC_FAIL_ABORTED;
        return KJ_FAIL(err, KJ_ECONFLICT, "%s %s: dropped: the client is stopping", method, url);
    }
    return KJ_FAIL(err, r->fail == CURLC_FAIL_TIMEOUT ? KJ_ETIMEOUT : KJ_EIO, "%s %s: %s", method,
                   url, errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc));
}

/* One request: method GET (body NULL, mime NULL), POST with a body, or POST with mime. */
static int request(struct curlc *c, const char *method, const char *path, const char *ctype,
                   const char *body, size_t len, curl_mime *mime, struct curlc_resp *out,
                   struct kj_err *err)
{
    char url[CURLC_MAX_URL], errbuf[CURL_ERROR_SIZE] = "", ct[160];
    const char *extra[3] = {"Expect:", NULL, NULL};
    struct curl_slist *hdrs;
    struct xfer x;
    int rc;
    memset(out, 0, sizeof *out);
    out->retry_after = -1;
    if ((rc = make_url(c, path, url, sizeof url, err)) != 0)
        return rc;
    if (ctype != NULL) {
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        extra[1] = ct;
    }
    if ((hdrs = make_headers(c, "application/json", extra)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    memset(&x, 0, sizeof x);
    x.h = c->h;
    x.out = out;
    x.max = c->max_body;
    set_common(c, &x, url, hdrs, errbuf, c->timeout_ms, 0);
    if (mime != NULL) {
        curl_easy_setopt(c->h, CURLOPT_MIMEPOST, mime);
    } else if (body != NULL) {
        curl_easy_setopt(c->h, CURLOPT_POST, 1L);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, len > 0 ? body : "");
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    rc = run(c, &x, method, url, errbuf, err);
    curl_slist_free_all(hdrs);
    if (rc != 0) {
        enum curlc_fail f = out->fail;
        curlc_resp_free(out);
        out->fail = f;
    }
    return rc;
}

int curlc_get(struct curlc *c, const char *path, struct curlc_resp *out, struct kj_err *err)
{
    return request(c, "GET", path, NULL, NULL, 0, NULL, out, err);
}

int curlc_post(struct curlc *c, const char *path, const char *content_type, const char *body,
               size_t len, struct curlc_resp *out, struct kj_err *err)
{
    return request(c, "POST", path, content_type, body != NULL ? body : "", len, NULL, out, err);
}

int curlc_post_form(struct curlc *c, const char *path, const struct curlc_part *parts, int n,
                    struct curlc_resp *out, struct kj_err *err)
{
    curl_mime *mime = curl_mime_init(c->h);
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (mime == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    for (int i = 0; i < n && rc == 0; i++) {
        curl_mimepart *p = curl_mime_addpart(mime);
        if (p == NULL || curl_mime_name(p, parts[i].name) != CURLE_OK ||
            curl_mime_data(p, parts[i].data, parts[i].len) != CURLE_OK ||
            (parts[i].filename != NULL &&
             (curl_mime_filename(p, parts[i].filename) != CURLE_OK ||
              curl_mime_type(p, "application/octet-stream") != CURLE_OK)))
            rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory building the upload");
    }
    if (rc == 0)
        rc = request(c, "POST", path, NULL, NULL, 0, mime, out, err);
    curl_mime_free(mime);
    return rc;
}

int curlc_sse(struct curlc *c, const char *path, const char *last_id, long idle_ms,
              curlc_event_fn fn, void *ctx, struct curlc_resp *out, struct kj_err *err)
{
    char url[CURLC_MAX_URL], errbuf[CURL_ERROR_SIZE] = "", lid[96];
    const char *extra[2] = {NULL, NULL};
    struct curl_slist *hdrs;
    struct xfer x;
    int rc;
    memset(out, 0, sizeof *out);
    out->retry_after = -1;
    if ((rc = make_url(c, path, url, sizeof url, err)) != 0)
        return rc;
    if (last_id != NULL) {
        if (!is_token_text(last_id, 63))
            return KJ_FAIL(err, KJ_EINVAL, "bad Last-Event-ID");
        snprintf(lid, sizeof lid, "Last-Event-ID: %s", last_id);
        extra[0] = lid;
    }
    if ((hdrs = make_headers(c, "text/event-stream", extra)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    memset(&x, 0, sizeof x);
    x.h = c->h;
    x.out = out;
    x.max = c->max_body;
    x.sse = 1;
    x.fn = fn;
    x.ctx = ctx;
    curlc_ssep_init(&x.ssep);
    set_common(c, &x, url, hdrs, errbuf, 0, idle_ms);
    rc = run(c, &x, "GET", url, errbuf, err);
    curlc_ssep_free(&x.ssep);
    curl_slist_free_all(hdrs);
    if (rc != 0) {
        enum curlc_fail f = out->fail;
        curlc_resp_free(out);
        out->fail = f;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Server-Sent Events parser                                           */
/* ------------------------------------------------------------------ */

void curlc_ssep_init(struct curlc_ssep *p)
{
    memset(p, 0, sizeof *p);
}

void curlc_ssep_free(struct curlc_ssep *p)
{
    free(p->line);
    free(p->data);
    memset(p, 0, sizeof *p);
}

/* Grow *buf (capacity *cap) to hold need bytes; KJ_ENOMEM on failure. */
static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    char *g = realloc(*buf, n);
    if (g == NULL)
        return KJ_ENOMEM;
    *buf = g;
    *cap = n;
    return 0;
}

/* Dispatch the event collected so far (if it has data) and reset it. */
static int ssep_dispatch(struct curlc_ssep *p, curlc_event_fn fn, void *ctx)
{
    int stop = 0;
    if (p->has_data)
        stop = fn(ctx, p->id, p->event[0] != '\0' ? p->event : "message",
                  p->data != NULL ? p->data : "") != 0;
    p->dlen = 0;
    if (p->data != NULL)
        p->data[0] = '\0';
    p->has_data = 0;
    p->event[0] = '\0';
    return stop;
}

/* One complete line (p->line, p->len bytes, NUL-terminated). */
static int ssep_line(struct curlc_ssep *p, curlc_event_fn fn, void *ctx, struct kj_err *err)
{
    char *colon, *v;
    size_t vlen;
    if (p->len == 0)
        return ssep_dispatch(p, fn, ctx);
    if (p->line[0] == ':')
        return 0;
    colon = memchr(p->line, ':', p->len);
    v = colon != NULL ? colon + 1 : p->line + p->len;
    if (colon != NULL)
        *colon = '\0';
    if (*v == ' ')
        v++;
    vlen = strlen(v);
    if (strcmp(p->line, "data") == 0) {
        if (p->dlen + vlen + 2 > CURLC_MAX_EVENT_BYTES)
            return KJ_FAIL(err, KJ_ELIMIT, "an event's data is larger than %u bytes",
                           CURLC_MAX_EVENT_BYTES);
        if (grow(&p->data, &p->dcap, p->dlen + vlen + 2) != 0)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading an event");
        if (p->has_data)
            p->data[p->dlen++] = '\n';
        memcpy(p->data + p->dlen, v, vlen + 1);
        p->dlen += vlen;
        p->has_data = 1;
    } else if (strcmp(p->line, "event") == 0 || strcmp(p->line, "id") == 0) {
        char *dst = p->line[0] == 'e' ? p->event : p->id;
        if (vlen >= sizeof p->id)
            return KJ_FAIL(err, KJ_ELIMIT, "an event's %s is longer than %zu bytes", p->line,
                           sizeof p->id - 1);
        memcpy(dst, v, vlen + 1);
    }
    return 0; /* other fields ("retry") are ignored */
}

int curlc_ssep_feed(struct curlc_ssep *p, const char *buf, size_t n, curlc_event_fn fn,
                    void *ctx, struct kj_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        int rc;
        if (ch == '\n' && p->after_cr) { /* the LF of a CRLF */
            p->after_cr = 0;
            continue;
        }
        p->after_cr = ch == '\r';
        if (ch != '\n' && ch != '\r') {
            if (p->len + 2 > CURLC_MAX_EVENT_BYTES + 16)
                return KJ_FAIL(err, KJ_ELIMIT, "an event stream line is longer than %u bytes",
                               CURLC_MAX_EVENT_BYTES);
            if (grow(&p->line, &p->cap, p->len + 2) != 0)
                return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading an event");
            p->line[p->len++] = ch == '\0' ? ' ' : ch;
            continue;
        }
        if (grow(&p->line, &p->cap, p->len + 1) != 0)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading an event");
        p->line[p->len] = '\0';
        rc = ssep_line(p, fn, ctx, err);
        p->len = 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}
