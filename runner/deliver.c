/*
 * deliver.c - the result and the artifact of a judged job sent to the
 * server, and the JSON POST of every request of the supervisor (see
 * deliver.h). serve.c calls it after the judge has its verdict (and the
 * GPU health check, when one was due) and before the job's boxes are torn
 * down; nothing here calls back into serve.c.
 */
#include "deliver.h"
#include "kj_file.h"
#include "mono.h"
#include "protocol.h"
#include "result.h"
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELIVER_MAX_ARTIFACT (64u << 20) /* the server's limit of an artifact */
#define DELIVER_MAX_BACKOFF_S 30         /* between two tries of a result */

/* What to check when a request failed on the way (not an HTTP answer). */
static const char *deliver_hint(const struct curlc_resp *r)
{
    switch (r->fail) {
    case CURLC_FAIL_TLS:
        return " (TLS failed: certificate not trusted, or no TLS server; a private CA: "
               "--ca-file; a plain server: http://)";
    case CURLC_FAIL_IO:
        return " (no HTTP answer: is it an https:// server?)";
    case CURLC_FAIL_RESOLVE:
        return " (the host name does not resolve)";
    case CURLC_FAIL_CONNECT:
        return " (nothing answers there, or at the proxy of https_proxy/http_proxy)";
    default:
        return "";
    }
}

int deliver_post(struct curlc *h, const char *path, const cJSON *body,
                 struct curlc_resp *resp, struct kj_err *err)
{
    char *text = cJSON_PrintUnformatted(body);
    memset(resp, 0, sizeof *resp);
    if (text == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    int rc = curlc_post(h, path, "application/json", text, strlen(text), resp, err);
    free(text);
    if (rc != KJ_OK) { /* the hint always fits: the message is cut before it */
        char msg[KJ_ERR_MSG];
        const char *hint = deliver_hint(resp);
        snprintf(msg, sizeof msg, "%.*s%s", (int)(sizeof msg - 1 - strlen(hint)), err->msg, hint);
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return rc == KJ_OK ? (int)resp->status : rc;
}

void deliver_error_msg(const struct curlc_resp *r, char *out, size_t outsz)
{
    cJSON *j = r->body != NULL ? cJSON_Parse(r->body) : NULL;
    const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message");
    out[0] = '\0';
    if (cJSON_IsString(m))
        kj_printable(out, outsz, m->valuestring, outsz - 1);
    cJSON_Delete(j);
}

void deliver_result(const struct deliver_to *to, const struct judge_result *result)
{
    char path[128], why[300];
    double backoff = 1;
    cJSON *body = result_json(result), *replaced = NULL;
    long id = to->job_id;
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/result?attempt=%ld", id, to->attempt);
    for (int attempt = 0; attempt < 20; attempt++) {
        struct curlc_resp r;
        struct kj_err err;
        kj_err_clear(&err);
        int st = deliver_post(to->http, path, replaced != NULL ? replaced : body, &r, &err);
        if (st == 422)
            deliver_error_msg(&r, why, sizeof why);
        curlc_resp_free(&r);
        if ((st >= 200 && st < 300) || st == 409 || st == 404 || (st == 422 && replaced != NULL)) {
            if (st >= 300)
                kj_log(KJ_LOG_WARN, "serve", "result refused job=%ld status=%d", id, st);
            break;
        }
        if (st == 422) {
            char msg[400];
            kj_log(KJ_LOG_ERROR, "serve", "the server refused the result of job=%ld: %s; "
                   "posting internal_error instead", id, why);
            snprintf(msg, sizeof msg, "runner %s: the server refused its result (%s)",
                     to->runner, why);
            struct judge_result *ir = result_internal(msg);
            replaced = ir != NULL ? result_json(ir) : NULL;
            result_free(ir);
            continue;
        }
        kj_log(KJ_LOG_WARN, "serve", "result not delivered job=%ld status=%d: %s", id, st,
               st < 0 ? err.msg : "");
        if (*to->stop) {
            kj_log(KJ_LOG_WARN, "serve", "stopping: job=%ld goes back to the queue when its "
                   "lease runs out", id);
            break;
        }
        mono_sleep(backoff, to->stop);
        backoff = backoff * 2 > DELIVER_MAX_BACKOFF_S ? DELIVER_MAX_BACKOFF_S : backoff * 2;
    }
    cJSON_Delete(replaced);
    cJSON_Delete(body);
}

void deliver_artifact(const struct deliver_to *to, const char *path)
{
    char url[256], dir[4096];
    char *data = NULL;
    size_t n = 0;
    struct kj_err err;
    struct curlc_resp r;
    const char *base = strrchr(path, '/');
    long id = to->job_id;
    base = base != NULL ? base + 1 : path;
    kj_err_clear(&err);
    memset(&r, 0, sizeof r);
    snprintf(url, sizeof url, "/api/v1/runner/jobs/%ld/artifacts/%.64s?attempt=%ld", id, base,
             to->attempt);
    if (kj_read_file(path, DELIVER_MAX_ARTIFACT, &data, &n, &err) != KJ_OK) {
        kj_log(KJ_LOG_WARN, "serve", "artifact of job=%ld not read: %s", id, err.msg);
    } else {
        int rc = curlc_post(to->http, url, "application/octet-stream", data, n, &r, &err);
        if (rc != 0 || r.status < 200 || r.status > 299)
            kj_log(KJ_LOG_WARN, "serve", "artifact of job=%ld not delivered status=%ld: %s", id,
                   r.status, rc != 0 ? err.msg : r.body != NULL ? r.body : "");
        else
            kj_log(KJ_LOG_INFO, "serve", "artifact of job=%ld delivered bytes=%zu", id, n);
        curlc_resp_free(&r);
    }
    free(data);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
        tool_outdir_remove(dir);
    }
}
