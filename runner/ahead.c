/*
 * ahead.c - the compile-ahead process (see ahead.h): its loop. The socket
 * and the supervisor's end of it are ahead_link.c's (ahead_int.h).
 *
 * The loop is one thread, so it knows what its memory holds at each fork:
 * every compile box it forks wipes the runner's secrets and, of every
 * other job it holds, the source, the secret seed and the cubin (and of
 * its own job the seed), before NVRTC starts. It waits in poll() on the
 * supervisor's socket and the compile boxes' pipes, or in a claim: a long
 * poll (cfg->claim_wait_s) while nothing compiles, one of 1 s while
 * something does (so a compile that ends while the supervisor waits is
 * handed over within a second even then; normal compiles end before the
 * next claim is made: AHEAD_SECOND_S).
 */
#include "ahead_int.h"
#include "cbox.h"
#include "claim.h"
#include "sub_lang.h"
#include "cslot.h"
#include "curlc.h"
#include "deliver.h"
#include "directive.h"
#include "fdio.h"
#include "judge.h"
#include "mono.h"
#include "protocol.h"
#include "result.h"
#include "spec.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The process                                                          */
/* ------------------------------------------------------------------ */

enum aj_state { AJ_FREE = 0, AJ_SLOT, AJ_COMPILING, AJ_READY };

struct ahead_job {
    enum aj_state st;
    cJSON *reply;               /* owned: the claim's answer */
    long id, attempt;
    const struct spec *spec;    /* borrowed from the process's boards; NULL = unknown */
    enum kj_mode mode;
    char *src;                  /* borrowed from reply */
    size_t len;
    char *seed;                 /* borrowed from reply: "secret_seed", NULL when none */
    int compile;                /* 1: compiled ahead (d set), 0: handed over as it came */
    struct directives d;
    struct cslot slot;
    struct cbox_proc p;
    struct compile_result res;  /* owned once compiled */
    double claimed, next_beat, beat_s;
    unsigned long seq;          /* claim order */
};

struct ahead_proc {
    const struct ahead_cfg *cfg;
    struct curlc *http;         /* owned: events, heartbeats, results, releases */
    struct curlc *claim_http;   /* owned: claims (dropped within a second of a stop) */
    struct spec **specs;        /* owned */
    int nspecs;
    int fd;                     /* the supervisor's socket */
    int asked;                  /* 1: the supervisor waits for a job */
    int gap_asked;              /* 1: it asks for a test job for a gap, at once */
    int64_t gap_skip[AHEAD_GAP_MAX_SKIP]; /* not those */
    int gap_nskip;
    struct ahead_shared *sh;    /* the page the supervisor reads (ahead_int.h) */
    int gone;                   /* 1: the supervisor's end is closed */
    struct secret_list base;    /* the runner's secrets and this process's client's */
    struct ahead_job jobs[AHEAD_SLOTS_MAX];
    unsigned long seq;
    double next_claim, backoff;
    const struct ahead_job *posting; /* the job judge_compile_failed reports on */
};

/* POST body to path; 2xx -> 0; the job is no longer ours (404, 409) -> 1;
 * else -1 (logged). */
static int ahead_post(struct ahead_proc *ap, const char *path, const cJSON *body, long id,
                      const char *what)
{
    struct curlc_resp r;
    struct kj_err err;
    kj_err_clear(&err);
    int st = deliver_post(ap->http, path, body, &r, &err);
    curlc_resp_free(&r);
    if (st >= 200 && st < 300)
        return 0;
    if (st == 404 || st == 409)
        return 1;
    kj_log(KJ_LOG_WARN, "ahead", "%s not taken job=%ld status=%d%s%s", what, id, st,
           st < 0 ? ": " : "", st < 0 ? err.msg : "");
    return -1;
}

static void ahead_event(struct ahead_proc *ap, const struct ahead_job *j, enum kj_event ev,
                        const cJSON *data)
{
    char path[128];
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "event", kj_event_name(ev));
    cJSON_AddItemToObject(body, "data", cJSON_Duplicate(data, 1));
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/events?attempt=%ld", j->id, j->attempt);
    ahead_post(ap, path, body, j->id, "progress");
    cJSON_Delete(body);
}

/* judge_progress_fn of judge_compile_failed. */
static void ahead_progress(void *ctx, enum kj_event ev, const cJSON *data)
{
    struct ahead_proc *ap = ctx;
    ahead_event(ap, ap->posting, ev, data);
}

/* Forget job j: its compile killed, its slot given back, every copy of its
 * source, seed and cubin wiped. */
static void ahead_drop(struct ahead_job *j)
{
    if (j->st == AJ_COMPILING) {
        struct compile_result scrap;
        struct kj_err err;
        memset(&scrap, 0, sizeof scrap);
        kill(j->p.pid, SIGKILL);
        kj_err_clear(&err);
        cbox_finish(&j->p, "", &scrap, &err); /* reaps it */
        compile_result_free(&scrap);
    }
    cslot_give(&j->slot);
    if (j->res.cubin != NULL)
        explicit_bzero(j->res.cubin, j->res.cubin_size);
    compile_result_free(&j->res);
    if (j->src != NULL)
        explicit_bzero(j->src, j->len);
    if (j->seed != NULL)
        explicit_bzero(j->seed, strlen(j->seed));
    cJSON_Delete(j->reply);
    memset(j, 0, sizeof *j);
}

/* Give job j back to the server (queued again at once, no attempt
 * charged), saying why in the log, then forget it. */
static void ahead_give_back(struct ahead_proc *ap, struct ahead_job *j, const char *why)
{
    char path[128];
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "why", "stopping");
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/release?attempt=%ld", j->id, j->attempt);
    if (ahead_post(ap, path, body, j->id, "release") == 0)
        kj_log(KJ_LOG_INFO, "ahead", "%s: gave job=%ld back to the server", why, j->id);
    cJSON_Delete(body);
    ahead_drop(j);
}

/* What the compile box of job k wipes: the runner's secrets, the other
 * jobs' sources, seeds and cubins, and k's seed. */
static void ahead_wipe_list(const struct ahead_proc *ap, const struct ahead_job *k,
                            struct secret_list *w)
{
    *w = ap->base;
    for (int i = 0; i < ap->cfg->slots; i++) {
        const struct ahead_job *j = &ap->jobs[i];
        if (j->st == AJ_FREE)
            continue;
        if (j != k)
            secret_add(w, j->src, j->len);
        if (j->seed != NULL)
            secret_add(w, j->seed, strlen(j->seed));
        if (j != k)
            secret_add(w, j->res.cubin, j->res.cubin_size);
    }
}

/* Take the claim's answer (owned by the slot from now on). 0, or -1 when
 * it is not a job (dropped). */
static int ahead_take(struct ahead_proc *ap, struct ahead_job *j, cJSON *reply)
{
    const cJSON *job = cJSON_GetObjectItem(reply, "job");
    const cJSON *seed = cJSON_GetObjectItem(job, "secret_seed");
    const char *lb, *mode, *src;
    memset(j, 0, sizeof *j);
    j->reply = reply;
    if (!claim_fields(job, &j->id, &j->attempt, &lb, &mode, &src)) {
        kj_log(KJ_LOG_ERROR, "ahead", "malformed job from the server");
        ahead_drop(j);
        return -1;
    }
    j->src = (char *)src; /* the reply's, which this slot owns */
    j->len = strlen(src);
    j->seed = cJSON_IsString(seed) ? seed->valuestring : NULL;
    j->spec = spec_find_reload(ap->cfg->leaderboards, &ap->specs, &ap->nspecs, lb);
    j->claimed = mono_now();
    j->beat_s = claim_beat_s(job);
    j->next_beat = j->claimed + j->beat_s;
    j->seq = ++ap->seq;
    j->compile = j->spec != NULL && kj_mode_parse(mode, &j->mode) == 0 &&
                 claim_lang(job) == SUB_LANG_CUDA && /* a Python file has nothing to compile */
                 judge_ahead_dirs(j->spec, j->mode, j->src, j->len, &j->d);
    j->st = j->compile ? AJ_SLOT : AJ_READY;
    kj_log(KJ_LOG_INFO, "ahead", "claimed job=%ld leaderboard=%s mode=%s%s", j->id, lb, mode,
           j->compile ? "" : " (the judge compiles it)");
    return 0;
}

/* Start job j's compile when a compile slot is free (else it waits). */
static void ahead_compile(struct ahead_proc *ap, struct ahead_job *j)
{
    struct kj_err err;
    struct secret_list wipe;
    kj_err_clear(&err);
    if (cslot_take(&j->slot, NULL, cslot_count(), 1, mono_now(), &err) != KJ_OK) {
        if (err.code != KJ_ETIMEOUT) {
            kj_log(KJ_LOG_WARN, "ahead", "job=%ld: %s; the judge compiles it", j->id, err.msg);
            j->compile = 0;
            j->st = AJ_READY;
        }
        return;
    }
    cJSON *ev = result_compiling_json(ap->cfg->dev->arch);
    ahead_event(ap, j, KJ_EV_COMPILING, ev);
    cJSON_Delete(ev);
    ahead_wipe_list(ap, j, &wipe);
    if (cbox_start(j->src, j->len, &j->d, ap->cfg->dev->arch, &wipe, &j->p, &err) != KJ_OK) {
        kj_log(KJ_LOG_WARN, "ahead", "job=%ld: %s; the judge compiles it", j->id, err.msg);
        cslot_give(&j->slot);
        j->compile = 0;
        j->st = AJ_READY;
        return;
    }
    j->st = AJ_COMPILING;
}

/* Job j's compile box has written (or its time is up): collect it. A
 * submission that does not compile gets its result here. */
static void ahead_collect(struct ahead_proc *ap, struct ahead_job *j)
{
    struct kj_err err;
    kj_err_clear(&err);
    int rc = cbox_finish(&j->p, ap->cfg->dev->arch, &j->res, &err);
    cslot_give(&j->slot);
    j->st = AJ_READY;
    if (rc != KJ_OK) { /* the box's fault, not the source's: the judge tries */
        kj_log(KJ_LOG_WARN, "ahead", "job=%ld: %s; the judge compiles it", j->id, err.msg);
        compile_result_free(&j->res);
        j->compile = 0;
        return;
    }
    if (j->res.ok) {
        cJSON *cj = result_compile_json(&j->res);
        ahead_event(ap, j, KJ_EV_COMPILED, cj);
        cJSON_Delete(cj);
        kj_log(KJ_LOG_INFO, "ahead", "compiled job=%ld in %.2f s", j->id, mono_now() - j->claimed);
        return;
    }
    struct judge_job jj;
    struct judge_result *result = NULL;
    memset(&jj, 0, sizeof jj);
    jj.spec = j->spec;
    jj.mode = j->mode;
    jj.compiled = &j->res;
    jj.progress = ahead_progress;
    jj.progress_ctx = ap;
    ap->posting = j;
    if (judge_compile_failed(&jj, ap->cfg->dev, &result, &err) != KJ_OK) {
        kj_log(KJ_LOG_ERROR, "ahead", "job=%ld: %s", j->id, err.msg);
        result = result_internal(err.msg);
    }
    if (result != NULL) {
        struct deliver_to to = {ap->http, j->id, j->attempt, ap->cfg->name, ap->cfg->stop};
        kj_log(KJ_LOG_INFO, "ahead", "judged job=%ld verdict=%s without the GPU", j->id,
               result->has_verdict ? kj_verdict_name(result->verdict) : "?");
        deliver_result(&to, result);
        result_free(result);
    }
    ahead_drop(j);
}

/* Write job j to the supervisor. 0; -1 when it is gone; 1 when there was
 * no memory to write it (nothing sent, j still held). */
static int ahead_send(struct ahead_proc *ap, struct ahead_job *j)
{
    struct ahead_head h;
    size_t cap = 6 * j->len + 65536; /* the source escaped, at worst, and the rest */
    char *text = malloc(cap);
    int rc = -1;
    memset(&h, 0, sizeof h);
    if (text == NULL || !cJSON_PrintPreallocated(j->reply, text, (int)cap, 0)) {
        kj_log(KJ_LOG_ERROR, "ahead", "job=%ld: no memory to hand it over", j->id);
        if (text != NULL)
            explicit_bzero(text, cap); /* what was printed of it */
        free(text);
        return 1;
    }
    h.magic = AHEAD_MAGIC;
    h.json_len = (uint32_t)strlen(text);
    h.compiled = j->compile;
    if (j->compile) {
        h.r = j->res;
        h.r.log = NULL;
        h.r.cubin = NULL;
        h.log_len = j->res.log != NULL ? (uint32_t)strlen(j->res.log) : 0;
        h.cubin_len = (uint32_t)j->res.cubin_size;
    }
    if (fdio_send_full(ap->fd, &h, sizeof h) == 0 &&
        fdio_send_full(ap->fd, text, h.json_len) == 0 &&
        (!j->compile || fdio_send_full(ap->fd, j->res.log, h.log_len) == 0) &&
        (!j->compile || fdio_send_full(ap->fd, j->res.cubin, h.cubin_len) == 0))
        rc = 0;
    explicit_bzero(text, cap);
    free(text);
    if (rc == 0)
        kj_log(KJ_LOG_INFO, "ahead", "handed job=%ld over, %.2f s after its claim", j->id,
               mono_now() - j->claimed);
    return rc;
}

/* One claim, waiting at most wait_s. */
static void ahead_claim(struct ahead_proc *ap, int wait_s)
{
    struct curlc_resp r;
    struct kj_err err;
    char path[64];
    cJSON *body = cJSON_CreateObject(), *reply = NULL;
    cJSON_AddStringToObject(body, "runner", ap->cfg->name);
    cJSON_AddStringToObject(body, "gpu", ap->cfg->gpu_type);
    cJSON_AddStringToObject(body, "arch", ap->cfg->dev->arch);
    snprintf(path, sizeof path, "/api/v1/runner/claim?wait=%d", wait_s);
    kj_err_clear(&err);
    int st = deliver_post(ap->claim_http, path, body, &r, &err);
    cJSON_Delete(body);
    if (st == 200 && r.body != NULL) {
        reply = cJSON_Parse(r.body);
        explicit_bzero(r.body, r.len); /* the job's source and seed: the parsed copy stays */
    }
    curlc_resp_free(&r);
    if (st == 200 && cJSON_IsObject(cJSON_GetObjectItem(reply, "job"))) {
        for (int i = 0; i < ap->cfg->slots; i++)
            if (ap->jobs[i].st == AJ_FREE) {
                ahead_take(ap, &ap->jobs[i], reply);
                reply = NULL;
                break;
            }
        ap->backoff = 1;
    } else if (st == 200 || st == 204) {
        ap->backoff = 1;
    } else if (st == 401 || st == 403) {
        kj_log(KJ_LOG_ERROR, "ahead", "the server refused this runner's claim (HTTP %d); "
               "the runner claims for itself", st);
        ap->gone = 1; /* the supervisor's claim says why, and stops */
    } else if (!*ap->cfg->stop) {
        kj_log(KJ_LOG_WARN, "ahead", "claim failed (status %d%s%s), retrying in %.0f s", st,
               st < 0 ? ": " : "", st < 0 ? err.msg : "", ap->backoff);
        ap->next_claim = mono_now() + ap->backoff;
        ap->backoff = ap->backoff * 2 > AHEAD_MAX_BACKOFF_S ? AHEAD_MAX_BACKOFF_S : ap->backoff * 2;
    }
    cJSON_Delete(reply); /* NULL when taken */
}

/* Heartbeats of the jobs held that are due; a job the server says is no
 * longer ours is forgotten. */
static void ahead_beats(struct ahead_proc *ap)
{
    double now = mono_now();
    for (int i = 0; i < ap->cfg->slots; i++) {
        struct ahead_job *j = &ap->jobs[i];
        char path[128];
        if (j->st == AJ_FREE || now < j->next_beat)
            continue;
        j->next_beat = now + j->beat_s;
        cJSON *empty = cJSON_CreateObject();
        snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/heartbeat?attempt=%ld", j->id,
                 j->attempt);
        if (ahead_post(ap, path, empty, j->id, "heartbeat") == 1) {
            kj_log(KJ_LOG_WARN, "ahead", "job=%ld is no longer this runner's; dropped", j->id);
            ahead_drop(j);
        }
        cJSON_Delete(empty);
    }
}

/* What the loop does next. *wait_s: the claim's wait when it returns 1;
 * *poll_s: how long poll() may wait when it returns 0. */
static int ahead_plan(const struct ahead_proc *ap, int *wait_s, double *poll_s)
{
    const struct ahead_cfg *c = ap->cfg;
    double now = mono_now(), young = -1, beat = now + c->claim_wait_s;
    int held = 0, ready = 0, slot = 0;
    for (int i = 0; i < c->slots; i++) {
        const struct ahead_job *j = &ap->jobs[i];
        if (j->st == AJ_FREE)
            continue;
        held++;
        ready += j->st == AJ_READY;
        slot += j->st == AJ_SLOT;
        if (j->st != AJ_READY && j->claimed > young)
            young = j->claimed;
        if (j->next_beat < beat)
            beat = j->next_beat;
    }
    *poll_s = beat - now;
    if (slot > 0 && *poll_s > 0.01)
        *poll_s = 0.01; /* a compile slot may come free */
    if (held >= c->slots || ready > 0 || *c->stop || ap->gone)
        return 0;
    if (now < ap->next_claim) {
        if (ap->next_claim - now < *poll_s)
            *poll_s = ap->next_claim - now;
        return 0;
    }
    if (young < 0) { /* nothing compiles: a long poll, up to the next heartbeat */
        double w = beat - now;
        *wait_s = w < 1 ? 1 : w > c->claim_wait_s ? (int)c->claim_wait_s : (int)w;
        return 1;
    }
    if (now - young >= AHEAD_SECOND_S) { /* a slow compile: the next job beside it */
        *wait_s = 1;
        return 1;
    }
    if (young + AHEAD_SECOND_S - now < *poll_s)
        *poll_s = young + AHEAD_SECOND_S - now;
    return 0;
}

/* Wait up to poll_s for the supervisor or a compile box; read the
 * supervisor's requests. */
static void ahead_wait(struct ahead_proc *ap, double poll_s)
{
    struct pollfd pf[1 + AHEAD_SLOTS_MAX];
    int n = 0;
    pf[n++] = (struct pollfd){ap->fd, POLLIN, 0};
    for (int i = 0; i < ap->cfg->slots; i++)
        if (ap->jobs[i].st == AJ_COMPILING)
            pf[n++] = (struct pollfd){ap->jobs[i].p.fd, POLLIN, 0};
    int ms = poll_s <= 0 ? 0 : poll_s > 1 ? 1000 : (int)(poll_s * 1000) + 1;
    if (poll(pf, (nfds_t)n, ms) <= 0 || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
        return;
    unsigned char c, k;
    ssize_t got = read(ap->fd, &c, 1);
    if (got == 1 && c == 'N') {
        ap->asked = 1;
    } else if (got == 1 && c == 'G') { /* then the skip list, written with it */
        if (fdio_read_full(ap->fd, &k, 1) != 0 || k > AHEAD_GAP_MAX_SKIP ||
            fdio_read_full(ap->fd, ap->gap_skip, k * sizeof(int64_t)) != 0)
            ap->gone = 1;
        ap->gap_nskip = k;
        ap->gap_asked = 1;
    } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        ap->gone = 1;
    }
}

/* Whether j may go into a gap of a timed job: a compiled (or passed
 * through) test-mode job of a board this process knows. */
static int ahead_gap_fits(const struct ahead_job *j)
{
    return j->st == AJ_READY && j->mode == KJ_MODE_TEST && j->spec != NULL;
}

/* The oldest compiled job the supervisor may take: any for its next job,
 * one that fits a gap and is not in the skip list for a gap. NULL when
 * none. */
static struct ahead_job *ahead_first(struct ahead_proc *ap, int gap)
{
    struct ahead_job *first = NULL;
    for (int i = 0; i < ap->cfg->slots; i++) {
        struct ahead_job *j = &ap->jobs[i];
        int skip = 0;
        for (int k = 0; gap && k < ap->gap_nskip; k++)
            skip |= ap->gap_skip[k] == (int64_t)j->id;
        if (j->st == AJ_READY && (!gap || (ahead_gap_fits(j) && !skip)) &&
            (first == NULL || j->seq < first->seq))
            first = j;
    }
    return first;
}

/* Hand the supervisor what it asked for, if held; a gap's request is
 * answered at once, with "none" when nothing fits. */
static void ahead_hand(struct ahead_proc *ap)
{
    if (ap->gap_asked) {
        struct ahead_job *j = ahead_first(ap, 1);
        struct ahead_head none = {AHEAD_MAGIC, 0, 0, {0}, 0, 0};
        int rc = j != NULL ? ahead_send(ap, j) : 1;
        ap->gap_asked = 0;
        if (rc == 1 && fdio_send_full(ap->fd, &none, sizeof none) != 0)
            rc = -1;
        if (rc < 0)
            ap->gone = 1;
        else if (rc == 0)
            ahead_drop(j);
    }
    if (ap->asked) {
        struct ahead_job *j = ahead_first(ap, 0);
        int rc = j != NULL ? ahead_send(ap, j) : -2;
        if (rc == 0 || rc == -1)
            ap->asked = 0;
        if (rc == -1)
            ap->gone = 1; /* j is given back with the rest as the process ends */
        else if (rc == 0)
            ahead_drop(j);
        else if (rc == 1) /* it could not go: back to the queue for another try */
            ahead_give_back(ap, j, "no memory to hand it over");
    }
    int n = 0; /* what a gap may ask for next */
    for (int i = 0; i < ap->cfg->slots; i++)
        n += ahead_gap_fits(&ap->jobs[i]);
    ap->sh->ready_test = n;
}

/* 1 when fd can be read now (data or end of file). */
static int ahead_readable(int fd)
{
    struct pollfd pf = {fd, POLLIN, 0};
    return poll(&pf, 1, 0) > 0;
}

/* One turn of the loop: compiles collected and started, a job handed over
 * to a waiting supervisor, heartbeats, then a claim or a wait. */
static void ahead_turn(struct ahead_proc *ap)
{
    const struct ahead_cfg *c = ap->cfg;
    double now = mono_now();
    for (int i = 0; i < c->slots; i++) {
        struct ahead_job *j = &ap->jobs[i];
        if (j->st == AJ_COMPILING && (now >= j->p.deadline || ahead_readable(j->p.fd)))
            ahead_collect(ap, j);
        if (j->st == AJ_SLOT)
            ahead_compile(ap, j);
    }
    ahead_hand(ap);
    ahead_beats(ap);
    int wait_s;
    double poll_s;
    if (ahead_plan(ap, &wait_s, &poll_s))
        ahead_claim(ap, wait_s);
    else
        ahead_wait(ap, poll_s);
}

/* The process: runs until a stop or the supervisor's end; never returns. */
void ahead_main(const struct ahead_cfg *cfg, int fd, struct ahead_shared *sh)
{
    struct ahead_proc ap;
    struct curlc_opts o;
    struct kj_err err;
    memset(&ap, 0, sizeof ap);
    ap.cfg = cfg;
    ap.fd = fd;
    ap.sh = sh;
    ap.base = *cfg->secrets;
    ap.backoff = 1;
    memset(&o, 0, sizeof o);
    o.base_url = cfg->server;
    o.bearer = cfg->token;
    o.ca_file = cfg->ca_file;
    o.connect_timeout_ms = 10000;
    o.timeout_ms = (long)(cfg->claim_wait_s + 10) * 1000;
    o.user_agent = "kjudge-runner";
    kj_err_clear(&err);
    int rc = curlc_new(&o, &ap.http, &err);
    o.abort_flag = cfg->stop;
    o.abort_after_ms = CLAIM_STOP_ANSWER_MS;
    if (rc != KJ_OK || curlc_new(&o, &ap.claim_http, &err) != KJ_OK ||
        spec_load_all(cfg->leaderboards, &ap.specs, &ap.nspecs, &err) != KJ_OK) {
        kj_log(KJ_LOG_ERROR, "ahead", "cannot start: %s", err.msg);
        _exit(1);
    }
    struct curlc *clients[2] = {ap.http, ap.claim_http};
    for (int i = 0; i < 2; i++) {
        size_t len = 0;
        char *auth = curlc_auth(clients[i], &len);
        secret_add(&ap.base, auth, len);
    }
    kj_log(KJ_LOG_INFO, "ahead", "compiling up to %d jobs ahead of the GPU", cfg->slots);
    while (!*cfg->stop && !ap.gone)
        ahead_turn(&ap);
    for (int i = 0; i < cfg->slots; i++)
        if (ap.jobs[i].st != AJ_FREE)
            ahead_give_back(&ap, &ap.jobs[i], "stopped");
    curlc_free(ap.http);
    curlc_free(ap.claim_http);
    spec_free_all(ap.specs, ap.nspecs);
    _exit(0);
}
