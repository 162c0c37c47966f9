/*
 * ahead_link.c - the supervisor's side of compile-ahead (ahead.h): the
 * process forked, the next job asked for and read, the end.
 */
#include "ahead_int.h"
#include "fdio.h"
#include "mono.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ahead {
    pid_t pid;
    int fd;
    int asked;                  /* 1: 'N' sent, no frame read since */
    struct ahead_shared *sh;    /* the shared page (mapped), NULL in the unit tests */
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
    struct ahead_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return KJ_FAIL(err, KJ_ENOMEM, "compile-ahead: mmap: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        munmap(sh, sizeof *sh);
        return KJ_FAIL(err, KJ_EIO, "socketpair: %s", strerror(errno));
    }
    struct ahead *a = ahead_link_new(-1, sv[0]);
    pid_t parent = getpid(), pid = a != NULL ? fork() : -1;
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        free(a);
        munmap(sh, sizeof *sh);
        return a == NULL ? KJ_FAIL(err, KJ_ENOMEM, "out of memory")
                         : KJ_FAIL(err, KJ_EIO, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) /* the supervisor ended before the line above */
            _exit(0);
        madvise(sh, sizeof *sh, MADV_DONTFORK); /* not for its compile boxes */
        ahead_main(cfg, sv[1], sh);
    }
    close(sv[1]);
    madvise(sh, sizeof *sh, MADV_DONTFORK); /* not for the run boxes */
    a->sh = sh;
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
    if (h.magic == AHEAD_MAGIC && h.json_len == 0) /* a late "none" to a gap's request */
        return ahead_next(a, stop, reply, compiled, has_compiled, err);
    a->asked = 0;
    int rc = ahead_read_frame(a, &h, reply, compiled, has_compiled, err);
    return rc == KJ_OK ? 1 : rc;
}

int ahead_gap(struct ahead *a, const int64_t *skip, int nskip, cJSON **reply,
              struct compile_result *compiled, int *has_compiled, struct kj_err *err)
{
    struct ahead_head h;
    unsigned char msg[2 + AHEAD_GAP_MAX_SKIP * sizeof(int64_t)];
    *reply = NULL;
    *has_compiled = 0;
    memset(compiled, 0, sizeof *compiled);
    if (a == NULL || a->asked || (a->sh != NULL && a->sh->ready_test <= 0))
        return 0;
    if (nskip > AHEAD_GAP_MAX_SKIP)
        nskip = AHEAD_GAP_MAX_SKIP;
    msg[0] = 'G';
    msg[1] = (unsigned char)nskip;
    memcpy(msg + 2, skip, (size_t)nskip * sizeof(int64_t));
    if (fdio_send_full(a->fd, msg, 2 + (size_t)nskip * sizeof(int64_t)) != 0)
        return KJ_FAIL(err, KJ_EIO, "compile-ahead has ended");
    /* It holds a compiled test job, so it waits in poll(), not in a claim. */
    if (fdio_wait(a->fd, mono_now() + AHEAD_GAP_WAIT_S) != 1 ||
        fdio_read_full(a->fd, &h, sizeof h) != 0)
        return KJ_FAIL(err, KJ_ETIMEOUT, "compile-ahead did not answer a gap's request "
                       "within %.0f s", AHEAD_GAP_WAIT_S);
    if (h.magic == AHEAD_MAGIC && h.json_len == 0)
        return 0; /* none fits */
    int rc = ahead_read_frame(a, &h, reply, compiled, has_compiled, err);
    return rc == KJ_OK ? 1 : rc;
}

void ahead_return(cJSON *reply, struct compile_result *compiled,
                  void (*give_back)(void *ctx, long id, long attempt), void *ctx)
{
    const cJSON *job = cJSON_GetObjectItem(reply, "job");
    const cJSON *id = cJSON_GetObjectItem(job, "id"), *at = cJSON_GetObjectItem(job, "attempt");
    const cJSON *src = cJSON_GetObjectItem(job, "source");
    if (give_back != NULL && cJSON_IsNumber(id))
        give_back(ctx, (long)id->valuedouble, cJSON_IsNumber(at) ? (long)at->valuedouble : 1);
    if (cJSON_IsString(src))
        explicit_bzero(src->valuestring, strlen(src->valuestring));
    cJSON_Delete(reply);
    if (compiled != NULL && compiled->cubin != NULL)
        explicit_bzero(compiled->cubin, compiled->cubin_size);
    compile_result_free(compiled);
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
    while (fdio_wait(a->fd, until) == 1 && fdio_read_full(a->fd, &h, sizeof h) == 0) {
        cJSON *reply = NULL;
        struct compile_result c;
        int has = 0;
        struct kj_err err;
        if (h.magic == AHEAD_MAGIC && h.json_len == 0)
            continue; /* a "none" */
        if (ahead_read_frame(a, &h, &reply, &c, &has, &err) != KJ_OK)
            break;
        ahead_return(reply, has ? &c : NULL, give_back, ctx);
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
    if (a->sh != NULL)
        munmap(a->sh, sizeof *a->sh);
    free(a);
}
