/*
 * pyenv.c - a runner's pinned Python environment (judge.h's struct pyenv):
 * found once, at start, by running the configured interpreter (outside any
 * box: it is the operator's, not a submission's) and asking it where its
 * libpython, its standard library and its site-packages are and which
 * versions of PyTorch, Triton and Helion it holds. Python run boxes
 * (pybox.h) load what it names.
 */
#include "pyenv.h"

#include "fdio.h"
#include "mono.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYENV_ANSWER_S 60          /* importlib.metadata only: seconds on a cold disk */
#define PYENV_MAX_ANSWER (64u << 10)

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
    char *argv[] = {(char *)exe, "-I", "-c", (char *)pyenv_probe, NULL};
    char *buf = NULL;
    size_t n = 0;
    int status = 0;
    memset(out, 0, sizeof *out);
    snprintf(out->exe, sizeof out->exe, "%s", exe);
    int rc = fdio_capture(argv, mono_now() + PYENV_ANSWER_S, PYENV_MAX_ANSWER, &buf, &n, &status, err);
    if (rc == KJ_ETIMEOUT)
        return KJ_FAIL(err, KJ_ETIMEOUT, "%s did not answer within %d s", exe, PYENV_ANSWER_S);
    if (rc != KJ_OK)
        return rc;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(buf, "python ") == NULL) {
        free(buf);
        return KJ_FAIL(err, KJ_EINVAL, "%s did not answer as a Python interpreter (exit %d)", exe,
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    char *p = buf;
    pyenv_line(&p, out->lib, sizeof out->lib);
    pyenv_line(&p, out->home, sizeof out->home);
    pyenv_line(&p, out->site, sizeof out->site);
    pyenv_line(&p, out->versions, sizeof out->versions);
    free(buf);
    if (out->lib[0] != '/' || access(out->lib, R_OK) != 0)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s has no shared libpython (%s): a Python run box "
                       "loads it; use an interpreter built with --enable-shared", exe,
                       out->lib[0] ? out->lib : "none");
    if (strstr(out->versions, "torch (none)") != NULL)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s has no PyTorch (%s)", exe, out->versions);
    return KJ_OK;
}
