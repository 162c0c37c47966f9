/*
 * api_hello.c - POST /api/v1/runner/hello: a runner's report at start.
 *
 * kjudge-runner serve calls it once, after probing its host and GPU and
 * before it asks for work: {"runner", "state": "ready", "gpu", "arch"} or
 * {"runner", "state": "refused", "reason"}. The report is checked, logged
 * (a refusal as a warning, with its reason) and kept in srv->hellos
 * (hello.h) for GET /metrics, so an operator sees a runner that could not
 * start (a node without a usable GPU) without logging in to its host.
 */
#include "api.h"
#include "hello.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A text field of at most max bytes; NULL when absent, "" when not a string or too long. */
static const char *text_field(const cJSON *o, const char *key, size_t max)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v == NULL)
        return NULL;
    if (!cJSON_IsString(v) || strlen(v->valuestring) > max)
        return "";
    return v->valuestring;
}

/* 1 when s is a short name: [A-Za-z0-9_.-]{1,HELLO_MAX_FIELD-1}. */
static int short_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < HELLO_MAX_FIELD &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Fill e from body; answers 400/422 and returns 1 when something is wrong. */
static int hello_parse(struct http_req *r, const cJSON *body, struct hello_entry *e,
                       enum MHD_Result *res)
{
    const char *runner = text_field(body, "runner", HELLO_MAX_FIELD);
    const char *state = text_field(body, "state", 16);
    const char *gpu = text_field(body, "gpu", HELLO_MAX_FIELD);
    const char *arch = text_field(body, "arch", HELLO_MAX_FIELD);
    const char *reason = text_field(body, "reason", HELLO_MAX_REASON - 1);

    if (runner == NULL)
        runner = r->user.name;
    if (!short_name(runner) || state == NULL || (gpu != NULL && !short_name(gpu)) ||
        (arch != NULL && !short_name(arch))) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_hello",
                          "send {\"runner\": NAME, \"state\": \"ready\", \"gpu\": GPU_TYPE, "
                          "\"arch\": ARCH} or {\"runner\": NAME, \"state\": \"refused\", "
                          "\"reason\": TEXT}; names are [A-Za-z0-9_.-], at most %d characters",
                          HELLO_MAX_FIELD - 1);
        return 1;
    }
    if (strcmp(state, "ready") == 0 && gpu != NULL) {
        e->state = HELLO_READY;
    } else if (strcmp(state, "refused") == 0 && reason != NULL && reason[0] != '\0') {
        e->state = HELLO_REFUSED;
    } else {
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_hello",
                          "state must be \"ready\" (with gpu) or \"refused\" (with a reason of "
                          "1 to %d bytes)", HELLO_MAX_REASON - 1);
        return 1;
    }
    snprintf(e->runner, sizeof e->runner, "%s", runner);
    snprintf(e->user, sizeof e->user, "%s", r->user.name);
    snprintf(e->gpu, sizeof e->gpu, "%s", gpu != NULL ? gpu : "");
    snprintf(e->arch, sizeof e->arch, "%s", arch != NULL ? arch : "");
    if (e->state == HELLO_REFUSED) {
        kj_printable(e->reason, sizeof e->reason, reason, sizeof e->reason - 1);
        for (char *q = e->reason; *q; q++)
            if (*q == '"' || *q == '\\')
                *q = '\'';
    }
    snprintf(e->addr, sizeof e->addr, "%s", r->client);
    e->at = (int64_t)time(NULL);
    return 0;
}

enum MHD_Result api_runner_hello(struct http_req *r)
{
    enum MHD_Result res;
    struct hello_entry e;
    cJSON *body = http_body_object(r, &res);
    if (body == NULL)
        return res;
    memset(&e, 0, sizeof e);
    if (hello_parse(r, body, &e, &res)) {
        cJSON_Delete(body);
        return res;
    }
    cJSON_Delete(body);
    if (api_runner_name_allowed(r, e.runner, &res))
        return res;
    hello_put(r->srv->hellos, &e);
    if (e.state == HELLO_READY)
        kj_log(KJ_LOG_INFO, "runner", "ready runner=%s user=%s gpu=%s arch=%s addr=%s", e.runner,
               e.user, e.gpu, e.arch[0] ? e.arch : "-", e.addr);
    else
        kj_log(KJ_LOG_WARN, "runner", "refused to start runner=%s user=%s addr=%s reason=\"%s\"",
               e.runner, e.user, e.addr, e.reason);
    return http_no_content(r);
}
