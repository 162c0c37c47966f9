/*
 * sass.c - instruction classes from nvdisasm's listing (see sass.h).
 *
 * The listing names each function in a line ".text.NAME:" and prints one
 * instruction per line as: address comment, optional predicate (@P0),
 * OPCODE.MODIFIERS, operands, ";".
 * Only the opcode (before its first '.') is looked at.
 */
#include "sass.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "mono.h"
#include "sandbox.h"

#ifndef KJ_CUDA_HOME
#define KJ_CUDA_HOME "/usr/local/cuda"
#endif

int sass_tool(char *buf, size_t bufsz)
{
    const char *env = getenv("KJUDGE_NVDISASM"), *home = getenv("CUDA_HOME");
    if (env != NULL && env[0] != '\0') {
        snprintf(buf, bufsz, "%s", env);
        return access(buf, X_OK) == 0 ? 0 : -1;
    }
    snprintf(buf, bufsz, "%s/bin/nvdisasm", home != NULL && home[0] ? home : KJ_CUDA_HOME);
    if (access(buf, X_OK) == 0)
        return 0;
    snprintf(buf, bufsz, "%s/bin/nvdisasm", KJ_CUDA_HOME);
    return access(buf, X_OK) == 0 ? 0 : -1;
}

/* Per-kernel counters while a listing is read. */
struct sass_count {
    long insns;
    int hgmma, mma, tcgen05, tma, bulk, ldgsts;
};

static void sass_classify(const char *op, size_t n, struct sass_count *c)
{
#define OP_IS(lit) (n == sizeof(lit) - 1 && memcmp(op, lit, n) == 0)
#define OP_PREFIX(lit) (n >= sizeof(lit) - 1 && memcmp(op, lit, sizeof(lit) - 1) == 0)
    c->insns++;
    if (OP_IS("HGMMA") || OP_IS("IGMMA") || OP_IS("QGMMA") || OP_IS("BGMMA"))
        c->hgmma++;
    else if (OP_IS("HMMA") || OP_IS("IMMA") || OP_IS("DMMA") || OP_IS("QMMA") || OP_IS("OMMA"))
        c->mma++;
    else if (OP_PREFIX("UTC") && n >= 6 && memcmp(op + n - 3, "MMA", 3) == 0)
        c->tcgen05++;
    else if (OP_PREFIX("UTMA"))
        c->tma++;
    else if (OP_PREFIX("UBLK"))
        c->bulk++;
    else if (OP_IS("LDGSTS"))
        c->ldgsts++;
#undef OP_IS
#undef OP_PREFIX
}

static int is_op_char(int ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Store a function's counts into the kernel whose lowered name it is. */
static int sass_store(struct compile_result *r, const char *fn, size_t fnlen,
                      const struct sass_count *c)
{
    for (int k = 0; k < r->nkernels; k++) {
        struct compile_kernel *kk = &r->kernels[k];
        if (strlen(kk->lowered) != fnlen || memcmp(kk->lowered, fn, fnlen) != 0)
            continue;
        snprintf(kk->tensor_cores, sizeof kk->tensor_cores, "%s",
                 c->tcgen05 ? "tcgen05" : c->hgmma ? "wgmma" : c->mma ? "mma" : "");
        kk->uses_tma = c->tma > 0;
        kk->uses_bulk_copy = c->bulk > 0;
        kk->uses_cp_async = c->ldgsts > 0;
        kk->sass = 1;
        kk->sass_instructions = c->insns > 0x7fffffff ? 0x7fffffff : (int)c->insns;
        return 1;
    }
    return 0;
}

int sass_apply(const char *text, size_t len, struct compile_result *r)
{
    const char *p = text, *end = text + len, *fn = NULL;
    size_t fnlen = 0;
    struct sass_count c;
    int updated = 0;

    memset(&c, 0, sizeof c);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end, *q = p;
        while (q < e && (*q == ' ' || *q == '\t'))
            q++;
        if (e - q > 7 && memcmp(q, ".text.", 6) == 0 && e[-1] == ':') {
            if (fn != NULL)
                updated += sass_store(r, fn, fnlen, &c);
            fn = q + 6;
            fnlen = (size_t)(e - 1 - fn);
            memset(&c, 0, sizeof c);
        } else if (fn != NULL && e - q > 4 && q[0] == '/' && q[1] == '*') {
            const char *x = q + 2;
            while (x + 1 < e && !(x[0] == '*' && x[1] == '/'))
                x++;
            x += 2;
            while (x < e && (*x == ' ' || *x == '\t'))
                x++;
            if (x < e && *x == '@') { /* predicate */
                while (x < e && *x != ' ' && *x != '\t')
                    x++;
                while (x < e && (*x == ' ' || *x == '\t'))
                    x++;
            }
            const char *op = x;
            while (x < e && is_op_char((unsigned char)*x))
                x++;
            if (x > op && (x == e || *x == '.' || *x == ' ' || *x == ';'))
                sass_classify(op, (size_t)(x - op), &c);
        }
        p = nl ? nl + 1 : end;
    }
    if (fn != NULL)
        updated += sass_store(r, fn, fnlen, &c);
    return updated;
}

/* The child: no privileges, limits, the listing on out; never returns. */
static void sass_child(const char *tool, int memfd, int out)
{
    char path[64];
    char *argv[] = {"nvdisasm", "-c", path, NULL}, *envp[] = {NULL};
    struct rlimit cpu = {SASS_WALL_S, SASS_WALL_S}, as = {4ull << 30, 4ull << 30},
                  core = {0, 0}, fsize = {0, 0};
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(null, 2) < 0 ||
        dup2(memfd, 3) < 0 || syscall(SYS_close_range, 4, ~0u, 0) != 0)
        _exit(126);
    snprintf(path, sizeof path, "/proc/self/fd/3");
    if (setrlimit(RLIMIT_CPU, &cpu) != 0 || setrlimit(RLIMIT_AS, &as) != 0 ||
        setrlimit(RLIMIT_CORE, &core) != 0 || setrlimit(RLIMIT_FSIZE, &fsize) != 0)
        _exit(126);
    struct kj_err err;
    if (sandbox_drop_creds(geteuid() == 0, &err) != KJ_OK || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        _exit(126);
    execve(tool, argv, envp);
    _exit(127);
}

int sass_start(const struct compile_result *r, struct sass_proc *p, struct kj_err *err)
{
    char tool[1024];
    int fds[2] = {-1, -1}, memfd = -1;

    p->pid = p->fd = -1;
    if (!r->ok || r->cubin == NULL || r->cubin_size == 0)
        return KJ_FAIL(err, KJ_EINVAL, "no cubin to disassemble");
    if (sass_tool(tool, sizeof tool) != 0)
        return KJ_FAIL(err, KJ_ENOTFOUND, "no nvdisasm (set KJUDGE_NVDISASM or CUDA_HOME)");
    memfd = memfd_create("cubin", 0); /* inherited by the child as its fd 3 */
    if (memfd < 0 || write(memfd, r->cubin, r->cubin_size) != (ssize_t)r->cubin_size ||
        pipe2(fds, O_CLOEXEC) != 0) {
        int e = errno;
        if (memfd >= 0)
            close(memfd);
        return KJ_FAIL(err, KJ_EIO, "nvdisasm: cannot pass the cubin: %s", strerror(e));
    }
    pid_t pid = fork();
    if (pid == 0)
        sass_child(tool, memfd, fds[1]);
    int e = errno;
    close(fds[1]);
    close(memfd);
    if (pid < 0) {
        close(fds[0]);
        return KJ_FAIL(err, KJ_EIO, "nvdisasm: fork: %s", strerror(e));
    }
    p->pid = pid;
    p->fd = fds[0];
    p->deadline = mono_now() + SASS_WALL_S;
    return KJ_OK;
}

int sass_finish(struct sass_proc *p, struct compile_result *r, struct kj_err *err)
{
    int rc = KJ_OK, status = 0;
    char *buf = NULL;
    size_t len = 0, cap = 0;

    if (p->pid <= 0)
        return KJ_FAIL(err, KJ_EINVAL, "nvdisasm was not started");
    for (;;) {
        int pr = fdio_wait(p->fd, p->deadline);
        if (pr <= 0) {
            rc = pr == 0 ? KJ_FAIL(err, KJ_ETIMEOUT, "nvdisasm took longer than %d s", SASS_WALL_S)
                         : KJ_FAIL(err, KJ_EIO, "nvdisasm: poll: %s", strerror(errno));
            break;
        }
        if (len + 65536 > cap) {
            if (cap >= SASS_MAX_OUTPUT) {
                rc = KJ_FAIL(err, KJ_ELIMIT, "nvdisasm printed more than %u bytes", SASS_MAX_OUTPUT);
                break;
            }
            char *nb = realloc(buf, cap ? cap * 2 : 1u << 20);
            if (nb == NULL) {
                rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory");
                break;
            }
            buf = nb;
            cap = cap ? cap * 2 : 1u << 20;
        }
        ssize_t n = read(p->fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (rc != KJ_OK)
        kill(p->pid, SIGKILL);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    close(p->fd);
    p->pid = p->fd = -1;
    if (rc == KJ_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = KJ_FAIL(err, KJ_EIO, "nvdisasm failed (status %#x)", (unsigned)status);
    if (rc == KJ_OK)
        sass_apply(buf, len, r);
    free(buf);
    return rc;
}

int sass_scan(struct compile_result *r, struct kj_err *err)
{
    struct sass_proc p;
    int rc = sass_start(r, &p, err);
    return rc != KJ_OK ? rc : sass_finish(&p, r, err);
}
