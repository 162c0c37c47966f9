/*
 * pyenv.h - a runner's pinned Python environment, found once at start
 * (struct pyenv is in judge.h, which the judge's job carries).
 */
#ifndef KJ_PYENV_H
#define KJ_PYENV_H

#include "judge.h"
#include "kj_err.h"

/* Ask the interpreter exe (the environment's python3) for its libpython,
 * its home, its site-packages and the versions of PyTorch, Triton and
 * Helion. KJ_OK with *out filled; an error naming what is missing (no
 * shared libpython, no PyTorch, not an interpreter). */
int pyenv_find(const char *exe, struct pyenv *out, struct kj_err *err);

#endif
