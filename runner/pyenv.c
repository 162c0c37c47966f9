/*
 * pyenv.c - a runner's pinned Python environment (judge.h's struct pyenv):
 * found once, at start, by running the configured interpreter (outside any
 * box: it is the operator's, not a submission's) and asking it where its
 * libpython, its standard library and its site-packages are and which
 * versions of PyTorch, Triton and Helion it holds. Python run boxes
 * (pybox.h) load what it names.
 */
#include "pyenv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Printed by the interpreter, one fact a line. */
static const char pyenv_probe[] =
    "import os, sys, sysconfig\n"
    "from importlib import metadata\n"
    "d = sysconfig.get_config_var\n"
    "print(os.path.join(d('LIBDIR') or '', d('LDLIBRARY') or ''))\n"
    "print(sys.base_prefix)\n"
    "print(sysconfig.get_paths()['purelib'] if sys.prefix != sys.base_prefix else '')\n"
    "v = ['python %d.%d.%d' % sys.version_info[:3]]\n"
    "for m in ('torch', 'triton', 'helion'):\n"
    "    try: v.append('%s %s' % (m, metadata.version(m)))\n"
    "    except Exception: v.append(m + ' (none)')\n"
    "print(', '.join(v))\n";

static void pyenv_line(char **p, char *out, size_t outsz)
{
    size_t n = strcspn(*p, "\n");
    snprintf(out, outsz, "%.*s", (int)n, *p);
    *p += n + ((*p)[n] == '\n');
}

int pyenv_find(const char *exe, struct pyenv *out, struct kj_err *err)
{
    int fd[2];
    char buf[8192];
    size_t n = 0;
    memset(out, 0, sizeof *out);
    snprintf(out->exe, sizeof out->exe, "%s", exe);
    if (pipe(fd) != 0)
        return KJ_FAIL(err, KJ_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return KJ_FAIL(err, KJ_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl(exe, exe, "-I", "-c", pyenv_probe, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    for (;;) {
        ssize_t r = read(fd[0], buf + n, sizeof buf - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof buf - 1)
            break;
    }
    close(fd[0]);
    buf[n] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(buf, "python ") == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "%s did not answer as a Python interpreter (exit %d)", exe,
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char *p = buf;
    pyenv_line(&p, out->lib, sizeof out->lib);
    pyenv_line(&p, out->home, sizeof out->home);
    pyenv_line(&p, out->site, sizeof out->site);
    pyenv_line(&p, out->versions, sizeof out->versions);
    if (out->lib[0] != '/' || access(out->lib, R_OK) != 0)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s has no shared libpython (%s): a Python run box "
                       "loads it; use an interpreter built with --enable-shared", exe,
                       out->lib[0] ? out->lib : "none");
    if (strstr(out->versions, "torch (none)") != NULL)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s has no PyTorch (%s)", exe, out->versions);
    return KJ_OK;
}
