/*
 * spec_python.c - leaderboard.json's "python" block: how a Python
 * submission in KernelBot's form sees the board.
 *
 *   "python": {"args": ["x", "x_q", "x_s"], "returns": ["x_q", "x_s"]}
 *
 * args is the tuple custom_kernel(data) receives: each a buffer (a tensor)
 * or a shape variable (a Python int). returns is the tuple it returns:
 * output buffers, in order. An output in args is given (the harness's own
 * tensor, which the submission may fill and return); an output not in
 * args must be returned. Called by spec.c's load after the buffers; the
 * server reads spec->python to accept Python uploads, the runner's Python
 * box to build the call.
 */
#include "spec_int.h"

#include <stdio.h>
#include <string.h>

/* The index of buffer name in s, or -1. */
static int buffer_index(const struct spec *s, const char *name)
{
    for (int i = 0; i < s->nbuffers; i++)
        if (strcmp(s->buffers[i].name, name) == 0)
            return i;
    return -1;
}

/* One string list of the block (key "args" or "returns") checked for
 * shape: a list of 1..SPEC_MAX_PYARGS distinct strings. */
static int name_list(struct ld *c, const cJSON *obj, const char *key, const cJSON **out)
{
    char field[32], ofield[32];
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    int i = 0;
    snprintf(field, sizeof field, "python.%s", key);
    if (arr == NULL)
        return LD_FAIL(c, field, "missing (a list of %s names)",
                       strcmp(key, "args") == 0 ? "buffer or variable" : "output buffer");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return LD_FAIL(c, field, "must be a non-empty list of names");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_PYARGS)
        return LD_FAIL(c, field, "more than %d names", SPEC_MAX_PYARGS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next, i++) {
        snprintf(field, sizeof field, "python.%s[%d]", key, i);
        if (!cJSON_IsString(it) || it->valuestring[0] == '\0')
            return LD_FAIL(c, field, "must be a buffer or variable name");
        int j = 0;
        for (const cJSON *o = arr->child; o != it; o = o->next, j++)
            if (strcmp(o->valuestring, it->valuestring) == 0) {
                snprintf(ofield, sizeof ofield, "python.%s[%d]", key, j);
                return LD_FAIL(c, field, "'%.63s' is listed twice (also %s)", it->valuestring,
                               ofield);
            }
    }
    *out = arr;
    return 0;
}

static int py_args(struct ld *c, const cJSON *arr)
{
    struct spec *s = c->s;
    char field[32];
    int i = 0;
    for (const cJSON *it = arr->child; it != NULL; it = it->next, i++) {
        int b = buffer_index(s, it->valuestring), v = spec_var_index(s, it->valuestring);
        snprintf(field, sizeof field, "python.args[%d]", i);
        if (b < 0 && v < 0)
            return LD_FAIL(c, field, "'%.63s' is neither a buffer nor a variable of the board",
                           it->valuestring);
        s->python.args[i].kind = b >= 0 ? SPEC_PYARG_BUFFER : SPEC_PYARG_VAR;
        s->python.args[i].index = b >= 0 ? b : v;
    }
    s->python.nargs = i;
    return 0;
}

static int py_returns(struct ld *c, const cJSON *arr)
{
    struct spec *s = c->s;
    char field[40];
    int i = 0;
    for (const cJSON *it = arr->child; it != NULL; it = it->next, i++) {
        int b = buffer_index(s, it->valuestring);
        snprintf(field, sizeof field, "python.returns[%d]", i);
        if (b < 0)
            return LD_FAIL(c, field, "'%.63s' is not a buffer of the board%s", it->valuestring,
                           spec_var_index(s, it->valuestring) >= 0
                           ? " (a variable cannot be returned)" : "");
        if (s->buffers[b].role != SPEC_OUTPUT)
            return LD_FAIL(c, field, "'%.63s' is an input; only outputs are returned",
                           it->valuestring);
        s->python.returns[i] = b;
    }
    s->python.nreturns = i;
    return 0;
}

/* Every output is given (in args) or returned. */
static int py_outputs_covered(struct ld *c)
{
    const struct spec *s = c->s;
    for (int b = 0; b < s->nbuffers; b++) {
        int seen = s->buffers[b].role != SPEC_OUTPUT;
        for (int i = 0; !seen && i < s->python.nargs; i++)
            seen = s->python.args[i].kind == SPEC_PYARG_BUFFER && s->python.args[i].index == b;
        for (int i = 0; !seen && i < s->python.nreturns; i++)
            seen = s->python.returns[i] == b;
        if (!seen)
            return LD_FAIL(c, "python", "output '%s' is neither given (in args) nor returned "
                           "(in returns)", s->buffers[b].name);
    }
    return 0;
}

int ld_python(struct ld *c, const cJSON *root)
{
    static const char *const keys[] = {"args", "returns", NULL};
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "python"), *args, *rets;
    int rc;
    if (obj == NULL)
        return 0;
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, "python", "must be an object {\"args\": [...], \"returns\": [...]}");
    if ((rc = ld_keys(c, obj, "python", keys)) != 0 || (rc = name_list(c, obj, "args", &args)) != 0 ||
        (rc = name_list(c, obj, "returns", &rets)) != 0 || (rc = py_args(c, args)) != 0 ||
        (rc = py_returns(c, rets)) != 0 || (rc = py_outputs_covered(c)) != 0)
        return rc;
    c->s->python.present = 1;
    return 0;
}
