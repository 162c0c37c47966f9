/*
 * deliver.h - what the supervisor (runner/serve.c) sends the server about a
 * judged job: its result (POST /runner/jobs/{id}/result, retried until the
 * server takes it) and profile mode's artifact (POST .../artifacts/{name});
 * and the JSON POST every request of serve.c goes through, with a hint of
 * what to check when it fails on the way.
 *
 * Sits below serve.c: it calls common/curlc.h and runner/result.h, never
 * serve.c.
 */
#ifndef KJ_DELIVER_H
#define KJ_DELIVER_H

#include <signal.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "curlc.h"
#include "kj_err.h"

struct judge_result;

/* Where a job's result and artifact go. All borrowed. */
struct deliver_to {
    struct curlc *http;                 /* the client to post with */
    long job_id;
    long attempt;                       /* the claim's attempt, sent as ?attempt= */
    const char *runner;                 /* this runner's name, quoted in a replacement result */
    const volatile sig_atomic_t *stop;  /* set: a failed post is not tried again */
};

/* POST body (JSON) to path with client h. Returns the HTTP status, or <0
 * when no answer came (err names the URL, never the token, and what to
 * check). The caller frees *resp (curlc_resp_free) either way. */
int deliver_post(struct curlc *h, const char *path, const cJSON *body,
                 struct curlc_resp *resp, struct kj_err *err);

/* The "message" of a JSON error answer into out (printable, "" when none). */
void deliver_error_msg(const struct curlc_resp *r, char *out, size_t outsz);

/* Post the result until the server answers 2xx (or says the job is not
 * ours: 404, 409). A result it refuses (422) becomes an internal_error
 * naming why, posted in its place once: the job is tried again, the user
 * not charged. While the runner stops, a failed post is not tried again:
 * the server requeues the job when its lease runs out. */
void deliver_result(const struct deliver_to *to, const struct judge_result *result);

/* Upload the file at path (profile mode's report) as the job's artifact
 * named after its base name, then remove it and its folder (tool.h). A
 * failed upload is logged: the result still goes out, without the file. */
void deliver_artifact(const struct deliver_to *to, const char *path);

#endif
