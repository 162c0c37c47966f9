/*
 * kjc.c - the shared part of every `kjudge` command (kjc.h): the HTTP
 * client made from the config, requests, messages for every way a request
 * can fail, and a small option parser.
 *
 * Messages say what went wrong and what to do, in one or two lines on
 * stderr: no server configured, not logged in, the host does not resolve,
 * nothing listens, TLS failed, a timeout, and each refusal by the server
 * with its status, error code and message (401 says where the token came
 * from, 429 when to retry). The token itself is never printed.
 */
#include "kjc.h"
#include "rend.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

int kjc_fail(struct kjc *k, const char *fmt, ...)
{
    va_list ap;
    fputs("kjudge: ", k->err);
    va_start(ap, fmt);
    vfprintf(k->err, fmt, ap);
    va_end(ap);
    fputc('\n', k->err);
    return KJC_ERROR;
}

int kjc_usage(struct kjc *k, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(k->err, "kjudge %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(k->err, fmt, ap);
    va_end(ap);
    fprintf(k->err, "\n(kjudge %s --help shows its usage)\n", cmd);
    return KJC_ERROR;
}

/* Where the token came from, for a 401's hint. */
static const char *token_origin(const struct kjc *k, char *buf, size_t bufsz)
{
    if (k->conf.token_from != NULL && strcmp(k->conf.token_from, "KJUDGE_TOKEN") == 0)
        snprintf(buf, bufsz, "the KJUDGE_TOKEN variable");
    else if (k->conf.token_from != NULL)
        snprintf(buf, bufsz, "%s", k->conf.path);
    else
        snprintf(buf, bufsz, "nowhere (no token is configured)");
    return buf;
}

/* A transfer that got no complete answer. */
static int report_transfer(struct kjc *k, const struct kj_err *err, enum curlc_fail f)
{
    const char *url = k->conf.url;
    switch (f) {
    case CURLC_FAIL_RESOLVE:
        return kjc_fail(k, "cannot resolve the server's host name in %s (%s)", url, err->msg);
    case CURLC_FAIL_CONNECT:
        return kjc_fail(k, "cannot reach the server at %s: nothing answers there (is it running? "
                        "is the URL right?) (%s)", url, err->msg);
    case CURLC_FAIL_TLS:
        return kjc_fail(k, "TLS failure talking to %s (%s): the server's certificate is not "
                        "trusted, or the server does not speak TLS; check https:// against "
                        "http://, or set KJUDGE_CA_FILE to the CA that signed it", url, err->msg);
    case CURLC_FAIL_TIMEOUT:
        return kjc_fail(k, "the server at %s did not answer in time (%s)", url, err->msg);
    case CURLC_FAIL_TOO_LARGE:
        return kjc_fail(k, "the server's answer is too large (%s)", err->msg);
    default:
        return kjc_fail(k, "the request to %s failed (%s)", url, err->msg);
    }
}

static const char *status_words(long st)
{
    switch (st) {
    case 400: return "bad request";
    case 401: return "the server did not accept the token";
    case 403: return "not allowed";
    case 404: return "not found";
    case 405: return "not supported by this server";
    case 409: return "refused in the current state";
    case 413: return "too large";
    case 415: return "wrong body type";
    case 422: return "refused";
    case 429: return "rate limited";
    case 503: return "the server is busy";
    default: return st >= 500 ? "server error" : "unexpected answer";
    }
}

int kjc_report(struct kjc *k, int rc, const struct kj_err *err, const struct curlc_resp *r)
{
    char code[64] = "", msg[1024] = "", origin[sizeof k->conf.path + 8];
    cJSON *j, *e;
    if (rc != 0)
        return report_transfer(k, err, r->fail);
    if (k->json && r->body != NULL && r->len > 0)
        kjc_print_body(k, r);
    j = r->body != NULL ? cJSON_Parse(r->body) : NULL;
    e = cJSON_GetObjectItemCaseSensitive(j, "error");
    kjc_str(e, "code", code, sizeof code);
    kjc_str(e, "message", msg, sizeof msg);
    cJSON_Delete(j);
    if (code[0] == '\0') {
        char ct[128];
        rend_clean(ct, sizeof ct, r->content_type);
        return kjc_fail(k, "unexpected answer from %s: HTTP %ld%s%s%s (is the URL that of a "
                        "kjudge server?)", k->conf.url, r->status, ct[0] ? " (" : "", ct,
                        ct[0] ? ")" : "");
    }
    kjc_fail(k, "%s (HTTP %ld %s): %s", status_words(r->status), r->status, code, msg);
    if (r->status == 401)
        fprintf(k->err, "kjudge: the token came from %s; log in again: kjudge login %s --token "
                "TOKEN\n", token_origin(k, origin, sizeof origin), k->conf.url);
    if (r->status == 429 && r->retry_after >= 0)
        fprintf(k->err, "kjudge: retry after %d s (Retry-After)\n", r->retry_after);
    return KJC_ERROR;
}

/* ------------------------------------------------------------------ */
/* Setup and requests                                                  */
/* ------------------------------------------------------------------ */

int kjc_ready(struct kjc *k, int need_token)
{
    struct curlc_opts o;
    struct kj_err err;
    const char *where = k->conf.path[0] ? k->conf.path : "~/.config/kjudge/config";
    if (k->conf.url[0] == '\0')
        return kjc_fail(k, "no server configured: %s %s and KJUDGE_URL is not set; run: kjudge "
                        "login URL --token TOKEN", where,
                        k->conf.exists ? "has no url" : "does not exist");
    if (need_token && k->conf.token[0] == '\0')
        return kjc_fail(k, "not logged in: %s %s and KJUDGE_TOKEN is not set; run: kjudge login "
                        "%s --token TOKEN", where, k->conf.exists ? "has no token" :
                        "does not exist", k->conf.url);
    if (k->http != NULL)
        return KJC_OK;
    memset(&o, 0, sizeof o);
    o.base_url = k->conf.url;
    o.bearer = k->conf.token[0] ? k->conf.token : NULL;
    o.timeout_ms = KJC_TIMEOUT_MS;
    o.ca_file = getenv("KJUDGE_CA_FILE");
    if (o.ca_file != NULL && o.ca_file[0] == '\0')
        o.ca_file = NULL;
    o.user_agent = "kjudge-cli";
    kj_err_clear(&err);
    if (curlc_new(&o, &k->http, &err) != 0)
        return kjc_fail(k, "%s (server URL from %s)", err.msg,
                        k->conf.url_from != NULL ? k->conf.url_from : "?");
    return KJC_OK;
}

void kjc_close(struct kjc *k)
{
    curlc_free(k->http);
    k->http = NULL;
    kjconf_clear(&k->conf);
}

/* KJC_OK for a 2xx answer; otherwise report, free *out and return KJC_ERROR. */
static int check(struct kjc *k, int rc, const struct kj_err *err, struct curlc_resp *out)
{
    if (rc == 0 && out->status >= 200 && out->status < 300)
        return KJC_OK;
    kjc_report(k, rc, err, out);
    curlc_resp_free(out);
    return KJC_ERROR;
}

int kjc_get(struct kjc *k, const char *path, struct curlc_resp *out)
{
    struct kj_err err;
    kj_err_clear(&err);
    return check(k, curlc_get(k->http, path, out, &err), &err, out);
}

int kjc_post_json(struct kjc *k, const char *path, const cJSON *body, struct curlc_resp *out)
{
    struct kj_err err;
    char *text = body != NULL ? cJSON_PrintUnformatted(body) : NULL;
    int rc;
    kj_err_clear(&err);
    memset(out, 0, sizeof *out);
    if (body != NULL && text == NULL)
        return kjc_fail(k, "out of memory");
    rc = curlc_post(k->http, path, "application/json", text != NULL ? text : "{}",
                    text != NULL ? strlen(text) : 2, out, &err);
    cJSON_free(text);
    return check(k, rc, &err, out);
}

int kjc_post_form(struct kjc *k, const char *path, const struct curlc_part *parts, int n,
                  struct curlc_resp *out)
{
    struct kj_err err;
    kj_err_clear(&err);
    return check(k, curlc_post_form(k->http, path, parts, n, out, &err), &err, out);
}

cJSON *kjc_json(struct kjc *k, const struct curlc_resp *r)
{
    cJSON *j = r->body != NULL ? cJSON_Parse(r->body) : NULL;
    if (j == NULL)
        kjc_fail(k, "the server's answer is not JSON (HTTP %ld, %zu bytes)", r->status, r->len);
    return j;
}

void kjc_print_body(struct kjc *k, const struct curlc_resp *r)
{
    if (r->body == NULL)
        return;
    rend_json(k->out, r->body, r->len);
    if (r->len == 0 || r->body[r->len - 1] != '\n')
        fputc('\n', k->out);
    fflush(k->out);
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

void kjc_urlenc(const char *s, char *buf, size_t bufsz)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < bufsz; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            buf[o++] = (char)*p;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[*p >> 4];
            buf[o++] = hex[*p & 15];
        }
    }
    buf[o] = '\0';
}

int kjc_is_id(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 15 && s[0] != '0' && strspn(s, "0123456789") == n;
}

const char *kjc_str(const cJSON *o, const char *key, char *buf, size_t bufsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v))
        rend_clean(buf, bufsz, v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(buf, bufsz, "%.15g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, bufsz, "%s", cJSON_IsTrue(v) ? "yes" : "no");
    else
        snprintf(buf, bufsz, "%s", v == NULL ? "" : "-");
    return buf;
}

static int listed(const char *name, size_t n, const char *const *list)
{
    for (int i = 0; list != NULL && list[i] != NULL; i++)
        if (strlen(list[i]) == n && strncmp(list[i], name, n) == 0)
            return 1;
    return 0;
}

const char *kjc_opt(struct kjc *k, struct kjc_args *a, const char **val)
{
    static char name[64];
    const char *s, *eq;
    size_t n;
    *val = NULL;
    if (a->i >= a->argc || a->bad)
        return NULL;
    s = a->argv[a->i++];
    if (s[0] != '-' || s[1] == '\0' || (s[1] != '-' && s[2] != '\0')) { /* positional */
        *val = s;
        return "";
    }
    s += s[1] == '-' ? 2 : 1;
    eq = strchr(s, '=');
    n = eq != NULL ? (size_t)(eq - s) : strlen(s);
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name - 1 ? n : sizeof name - 1), s);
    if (listed(s, n, a->flags) && eq == NULL)
        return name;
    if (!listed(s, n, a->with_value)) {
        a->bad = 1;
        kjc_usage(k, a->cmd, "unknown option '%.64s'", a->argv[a->i - 1]);
        return NULL;
    }
    if (eq != NULL) {
        *val = eq + 1;
    } else if (a->i < a->argc) {
        *val = a->argv[a->i++];
    } else {
        a->bad = 1;
        kjc_usage(k, a->cmd, "%s needs a value", a->argv[a->i - 1]);
        return NULL;
    }
    return name;
}
