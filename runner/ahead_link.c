/*
 * ahead_link.c - the supervisor's side of compile-ahead (ahead.h): the
 * process forked, the next job asked for and read, the end.
 *
 * The socket (SOCK_STREAM, one each way):
 *   supervisor -> process: 'N', "I am free: the next job";
 *   process -> supervisor: one frame per job: struct ahead_head, the
 *     claim's answer (JSON text), then the compile's log and cubin.
 * Both ends are this program, so the header is sent as it is in memory;
 * the reader still bounds every length.
 */
#include "ahead_int.h"
#include "fdio.h"
#include "mono.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ahead {
    pid_t pid;
    int fd;
    int asked;                  /* 1: 'N' sent, no frame read since */
};

struct ahead *ahead_link_new(pid_t pid, int fd)
{
    struct ahead *a = calloc(1, sizeof *a);
    if (a != NULL) {
        a->pid = pid;
        a->fd = fd;
    }
    return a;
}

int ahead_start(const struct ahead_cfg *cfg, struct ahead **out, struct kj_err *err)
{
    int sv[2];
    *out = NULL;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return KJ_FAIL(err, KJ_EIO, "socketpair: %s", strerror(errno));
    struct ahead *a = ahead_link_new(-1, sv[0]);
    pid_t parent = getpid(), pid = a != NULL ? fork() : -1;
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        free(a);
        return a == NULL ? KJ_FAIL(err, KJ_ENOMEM, "out of memory")
                         : KJ_FAIL(err, KJ_EIO, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) /* the supervisor ended before the line above */
            _exit(0);
        ahead_main(cfg, sv[1]);
    }
    close(sv[1]);
    a->pid = pid;
    *out = a;
    return KJ_OK;
}

/* Read one frame (its header already read into h). 0, or <0 with err. */
static int ahead_read_frame(struct ahead *a, const struct ahead_head *h, cJSON **reply,
                            struct compile_result *compiled, int *has_compiled,
                            struct kj_err *err)
{
    if (h->magic != AHEAD_MAGIC || h->json_len == 0 || h->json_len > AHEAD_MAX_JSON ||
        (h->compiled && (h->log_len > 4 * COMPILE_MAX_LOG || h->cubin_len > AHEAD_MAX_CUBIN)))
        return KJ_FAIL(err, KJ_EIO, "compile-ahead: a malformed frame");
    char *text = malloc((size_t)h->json_len + 1);
    if (text == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    int rc = fdio_read_full(a->fd, text, h->json_len);
    text[h->json_len] = '\0';
    *reply = rc == 0 ? cJSON_Parse(text) : NULL;
    explicit_bzero(text, h->json_len);
    free(text);
    if (rc != 0 || *reply == NULL)
        return KJ_FAIL(err, KJ_EIO, "compile-ahead: a frame cut short or not JSON");
    *has_compiled = h->compiled != 0;
    if (!*has_compiled)
        return KJ_OK;
    *compiled = h->r;
    compiled->log = malloc((size_t)h->log_len + 1);
    compiled->cubin = h->cubin_len > 0 ? malloc(h->cubin_len) : NULL;
    compiled->cubin_size = h->cubin_len;
    if (compiled->log == NULL || (h->cubin_len > 0 && compiled->cubin == NULL) ||
        fdio_read_full(a->fd, compiled->log, h->log_len) != 0 ||
        (h->cubin_len > 0 && fdio_read_full(a->fd, compiled->cubin, h->cubin_len) != 0)) {
        compile_result_free(compiled);
        cJSON_Delete(*reply);
        *reply = NULL;
        return KJ_FAIL(err, KJ_EIO, "compile-ahead: a frame cut short");
    }
    compiled->log[h->log_len] = '\0';
    compiled->arch[sizeof compiled->arch - 1] = '\0';
    if (compiled->nkernels < 0 || compiled->nkernels > DIR_MAX_LAUNCHES)
        compiled->nkernels = 0;
    return KJ_OK;
}

int ahead_next(struct ahead *a, const volatile sig_atomic_t *stop, cJSON **reply,
               struct compile_result *compiled, int *has_compiled, struct kj_err *err)
{
    struct ahead_head h;
    *reply = NULL;
    *has_compiled = 0;
    memset(compiled, 0, sizeof *compiled);
    if (!a->asked) {
        char c = 'N';
        if (fdio_send_full(a->fd, &c, 1) != 0)
            return KJ_FAIL(err, KJ_EIO, "compile-ahead has ended");
        a->asked = 1;
    }
    for (;;) {
        if (*stop)
            return 0;
        int w = fdio_wait(a->fd, mono_now() + 0.2);
        if (w < 0)
            return KJ_FAIL(err, KJ_EIO, "compile-ahead: poll: %s", strerror(errno));
        if (w == 1)
            break;
    }
    if (fdio_read_full(a->fd, &h, sizeof h) != 0)
        return KJ_FAIL(err, KJ_EIO, "compile-ahead has ended");
    a->asked = 0;
    int rc = ahead_read_frame(a, &h, reply, compiled, has_compiled, err);
    return rc == KJ_OK ? 1 : rc;
}

void ahead_end(struct ahead *a, void (*give_back)(void *ctx, long id, long attempt), void *ctx)
{
    struct ahead_head h;
    int status;
    if (a == NULL)
        return;
    if (a->pid > 0) /* never 0 or -1: those name groups */
        kill(a->pid, SIGTERM);
    double until = mono_now() + AHEAD_END_WAIT_S;
    /* A frame already on its way: the job is ours to give back. */
    while (a->asked && fdio_wait(a->fd, until) == 1 &&
           fdio_read_full(a->fd, &h, sizeof h) == 0) {
        cJSON *reply = NULL;
        struct compile_result c;
        int has = 0;
        struct kj_err err;
        a->asked = 0;
        if (ahead_read_frame(a, &h, &reply, &c, &has, &err) != KJ_OK)
            break;
        const cJSON *job = cJSON_GetObjectItem(reply, "job");
        const cJSON *id = cJSON_GetObjectItem(job, "id"), *at = cJSON_GetObjectItem(job, "attempt");
        if (give_back != NULL && cJSON_IsNumber(id))
            give_back(ctx, (long)id->valuedouble, cJSON_IsNumber(at) ? (long)at->valuedouble : 1);
        const cJSON *src = cJSON_GetObjectItem(job, "source");
        if (cJSON_IsString(src))
            explicit_bzero(src->valuestring, strlen(src->valuestring));
        cJSON_Delete(reply);
        if (has && c.cubin != NULL)
            explicit_bzero(c.cubin, c.cubin_size);
        compile_result_free(&c);
    }
    while (a->pid > 0 && waitpid(a->pid, &status, WNOHANG) == 0) {
        if (mono_now() >= until) {
            kill(a->pid, SIGKILL);
            waitpid(a->pid, &status, 0);
            break;
        }
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    close(a->fd);
    free(a);
}
