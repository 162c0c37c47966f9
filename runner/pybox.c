/*
 * pybox.c - the Python interpreter inside a Python run box (pybox.h): the
 * deployment's libpython loaded with dlopen (the runner does not link it,
 * and needs none where no Python board is judged), the interpreter
 * started, the trusted harness (runner/pybox_harness.py, embedded in the
 * runner by pybox_py.S) run, and its one callback called for each
 * operation.
 */
#include "pybox.h"
#include "sandbox.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char kj_pybox_harness[];     /* pybox_py.S: the harness, NUL-terminated */

typedef int (*pybox_cb)(int op, void *io);

/* The address the harness writes its callback to (see pybox_start). */
static volatile uintptr_t pybox_callback;

int pybox_start(const char *libpython, const char *site, int helion, struct kj_err *err)
{
    void *h = dlopen(libpython, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL)
        return KJ_FAIL(err, KJ_EINTERNAL, "python box: cannot load %s: %s", libpython, dlerror());
    void (*init)(int) = (void (*)(int))dlsym(h, "Py_InitializeEx");
    int (*run)(const char *, void *) = (int (*)(const char *, void *))dlsym(h, "PyRun_SimpleStringFlags");
    if (init == NULL || run == NULL)
        return KJ_FAIL(err, KJ_EINTERNAL, "python box: %s is not a libpython", libpython);
    if (strchr(site ? site : "", '\'') != NULL || strchr(site ? site : "", '\\') != NULL)
        return KJ_FAIL(err, KJ_EINVAL, "python box: a quote in the site folder's name");
    init(0); /* 0: the box's signal handlers stay */
    if (run(kj_pybox_harness, NULL) != 0) /* our own file: it compiles, or the build is broken */
        return KJ_FAIL(err, KJ_EINTERNAL, "python box: the embedded harness did not run");
    static char why[400]; /* the harness writes why its start failed here */
    char call[PATH_MAX + 160];
    snprintf(call, sizeof call, "_kj_start(%llu, %s%s%s, %d, %llu, %zu, %d)",
             (unsigned long long)(uintptr_t)&pybox_callback, site ? "'" : "", site ? site : "None",
             site ? "'" : "", SANDBOX_UID, (unsigned long long)(uintptr_t)why, sizeof why,
             helion ? 1 : 0);
    if (run(call, NULL) != 0 || pybox_callback == 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "python box: the harness could not import PyTorch: %s",
                       why[0] ? why : "(no message)");
    return KJ_OK;
}

int pybox_op(int op, struct pybox_io *io)
{
    io->msg[0] = '\0';
    if (pybox_callback == 0) {
        snprintf(io->msg, sizeof io->msg, "the Python interpreter is not running");
        return -1;
    }
    pybox_cb cb = (pybox_cb)pybox_callback;
    int rc = cb(op, io);
    io->msg[sizeof io->msg - 1] = '\0';
    return rc == 0 ? 0 : rc == 1 ? 1 : -1;
}
