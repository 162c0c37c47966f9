/*
 * box_client.c - the judge's side of a run box (see box.h): fork a box
 * running box_main(), send requests and read replies under deadlines, read
 * the device description it writes once, kill and reap it; and the two
 * short-lived boxes of the supervisor, box_probe and box_health.
 */
#include "box_int.h"
#include "fdio.h"
#include "mono.h"
#include "rbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int box_start(const struct box_cfg *cfg, struct box_proc *out, struct kj_err *err)
{
    int req[2] = {-1, -1}, rep[2] = {-1, -1}, info[2] = {-1, -1};
    unsigned skip = 0;
    memset(out, 0, sizeof *out);
    out->pid = -1;
    out->fd_req = out->fd_rep = out->fd_info = -1;
    int rc = rbox_parse_skip(getenv("KJUDGE_RBOX_SKIP"), &skip, err);
    if (rc != KJ_OK)
        return rc;
    if (pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 || pipe2(info, O_CLOEXEC) != 0)
        goto fail;
    pid_t pid = fork();
    if (pid < 0)
        goto fail;
    if (pid == 0) {
        secret_wipe(cfg->wipe); /* first: the child never holds the runner's secrets */
        struct box_cfg c = *cfg;
        c.rbox_skip = skip;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(req[1]);
        close(rep[0]);
        close(info[0]);
        c.fd_in = req[0];
        c.fd_out = rep[1];
        c.fd_info = info[1];
        if (c.unmap != NULL)
            munmap(c.unmap, c.unmap_size);
        box_main(&c);
    }
    close(req[0]);
    close(rep[1]);
    close(info[1]);
    out->pid = pid;
    out->fd_req = req[1];
    out->fd_rep = rep[0];
    out->fd_info = info[0];
    return KJ_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (req[i] >= 0) close(req[i]);
        if (rep[i] >= 0) close(rep[i]);
        if (info[i] >= 0) close(info[i]);
    }
    return KJ_FAIL(err, KJ_EIO, "cannot start a box: %s", strerror(errno));
}

int box_read_info(struct box_proc *p, struct box_device *dev, int timeout_ms, struct kj_err *err)
{
    int r = fdio_wait(p->fd_info, mono_now() + timeout_ms / 1000.0);
    if (r == 0)
        return KJ_FAIL(err, KJ_ETIMEOUT, "the GPU box did not start within %d ms", timeout_ms);
    if (r < 0 || fdio_read_full(p->fd_info, dev, sizeof *dev) != 0)
        return KJ_FAIL(err, KJ_EIO, "the GPU box died while starting");
    dev->error[sizeof dev->error - 1] = '\0';
    dev->name[sizeof dev->name - 1] = '\0';
    dev->arch[sizeof dev->arch - 1] = '\0';
    if (dev->error[0] != '\0')
        return KJ_FAIL(err, KJ_ECUDA, "%s", dev->error);
    return KJ_OK;
}

int box_send(struct box_proc *p, const struct box_req *req, const void *payload,
             struct kj_err *err)
{
    if (fdio_write_quiet(p->fd_req, req, sizeof *req) != 0 ||
        (req->payload > 0 && fdio_write_quiet(p->fd_req, payload, req->payload) != 0))
        return KJ_FAIL(err, KJ_EIO, "the GPU box is gone");
    return KJ_OK;
}

/* Wait for the reply until timeout_ms. */
static int box_recv(struct box_proc *p, struct box_rep *rep, int timeout_ms, struct kj_err *err)
{
    int r = fdio_wait(p->fd_rep, mono_now() + timeout_ms / 1000.0);
    if (r == 0)
        return KJ_FAIL(err, KJ_ETIMEOUT, "no answer within %.1f s", timeout_ms / 1000.0);
    if (r < 0 || fdio_read_full(p->fd_rep, rep, sizeof *rep) != 0)
        return KJ_FAIL(err, KJ_EIO, "the GPU box died");
    rep->msg[sizeof rep->msg - 1] = '\0';
    return KJ_OK;
}

int box_call(struct box_proc *p, const struct box_req *req, const void *payload,
             struct box_rep *rep, int timeout_ms, struct kj_err *err)
{
    int rc = box_send(p, req, payload, err);
    return rc != KJ_OK ? rc : box_recv(p, rep, timeout_ms, err);
}

void box_signal(struct box_proc *p)
{
    if (p->pgid > 0)
        kill(-p->pgid, SIGKILL);
    p->pgid = 0;
    if (p->pid > 0)
        kill(p->pid, SIGKILL);
    if (p->fd_req >= 0) close(p->fd_req);
    if (p->fd_rep >= 0) close(p->fd_rep);
    if (p->fd_info >= 0) close(p->fd_info);
    p->fd_req = p->fd_rep = p->fd_info = -1;
}

void box_reap(struct box_proc *p)
{
    if (p->pid > 0) {
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        rbox_cleanup(p->pid);
        p->pid = -1;
    }
}

void box_kill(struct box_proc *p)
{
    box_signal(p);
    box_reap(p);
}

int box_probe(int gpu, const struct secret_list *wipe, struct box_device *dev,
              struct kj_err *err)
{
    struct box_cfg c;
    struct box_proc p;
    memset(&c, 0, sizeof c);
    c.gpu = gpu;
    c.wipe = wipe;
    int rc = box_start(&c, &p, err);
    if (rc != KJ_OK)
        return rc;
    rc = box_read_info(&p, dev, 120000, err);
    box_kill(&p);
    return rc;
}

int box_single(int gpu, const struct secret_list *wipe, enum box_op op, int info_ms, int call_ms,
               struct box_device *dev, struct box_rep *rep, struct kj_err *err)
{
    struct box_cfg c;
    struct box_proc p;
    struct box_req req;
    memset(&c, 0, sizeof c);
    memset(&req, 0, sizeof req);
    c.gpu = gpu;
    c.wipe = wipe;
    req.op = op;
    int rc = box_start(&c, &p, err);
    if (rc != KJ_OK)
        return rc;
    rc = box_read_info(&p, dev, info_ms, err);
    if (rc == KJ_OK)
        rc = box_call(&p, &req, NULL, rep, call_ms, err);
    box_kill(&p);
    return rc;
}

int box_health(int gpu, const struct secret_list *wipe, struct kj_err *err)
{
    struct box_device dev;
    struct box_rep rep;
    int rc = box_single(gpu, wipe, BOX_OP_HEALTH, 120000, 60000, &dev, &rep, err);
    if (rc == KJ_OK && rep.status != BOX_OK)
        rc = KJ_FAIL(err, KJ_ECUDA, "%s", rep.msg);
    return rc;
}
