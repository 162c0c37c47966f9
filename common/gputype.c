/*
 * gputype.c - GPU type names and the device-name rule (see gputype.h).
 *
 * runner/serve.c derives the type it claims from its device's name;
 * server/main.c checks the list a runner token is bound to; the claim
 * handler and the result checker (server/result_check.c) compare types.
 * The Python directive parser (pydirective.c) maps KernelBot's GPU names
 * with a provider suffix to types (gputype_of_kernelbot).
 */
#include "gputype.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define GPUTYPE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

int gputype_valid(const char *type)
{
    size_t n = type != NULL ? strlen(type) : 0;
    return n > 0 && n < GPUTYPE_MAX && strspn(type, GPUTYPE_CHARS) == n;
}

void gputype_of_device(const char *device, char *out, size_t outsz)
{
    const char *n = device;
    size_t len;
    if (outsz == 0)
        return;
    out[0] = '\0';
    if (n == NULL)
        return;
    if (strncmp(n, "NVIDIA ", 7) == 0)
        n += 7;
    len = strcspn(n, " ");
    if (len == 0 || len >= outsz)
        return;
    memcpy(out, n, len);
    out[len] = '\0';
}

int gputype_matches(const char *type, const char *device)
{
    char t[GPUTYPE_MAX];
    gputype_of_device(device, t, sizeof t);
    return t[0] != '\0' && type != NULL && strcmp(t, type) == 0;
}

int gputype_list_parse(const char *list, char *out, size_t outsz, struct kj_err *err)
{
    char seen[GPUTYPE_MAX_LIST][GPUTYPE_MAX];
    const char *p = list;
    int n = 0;
    if (list == NULL || list[0] == '\0')
        return KJ_FAIL(err, KJ_EINVAL, "no GPU type given (e.g. --gpu H200 or --gpu H200,B200)");
    if (strlen(list) >= outsz || strlen(list) >= GPUTYPE_LIST_BYTES)
        return KJ_FAIL(err, KJ_EINVAL, "the GPU type list is too long");
    for (;;) {
        size_t len = strcspn(p, ",");
        if (n == GPUTYPE_MAX_LIST)
            return KJ_FAIL(err, KJ_EINVAL, "more than %d GPU types", GPUTYPE_MAX_LIST);
        if (len == 0 || len >= GPUTYPE_MAX)
            return KJ_FAIL(err, KJ_EINVAL, "GPU type %d of '%.80s' is empty or too long", n + 1,
                           list);
        memcpy(seen[n], p, len);
        seen[n][len] = '\0';
        if (!gputype_valid(seen[n]))
            return KJ_FAIL(err, KJ_EINVAL, "'%.63s' is not a GPU type name ([A-Za-z0-9_-]+, "
                           "e.g. H200)", seen[n]);
        for (int i = 0; i < n; i++)
            if (strcmp(seen[i], seen[n]) == 0)
                return KJ_FAIL(err, KJ_EINVAL, "GPU type '%s' is listed twice", seen[n]);
        n++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    snprintf(out, outsz, "%s", list);
    return KJ_OK;
}

int gputype_list_has(const char *list, const char *type)
{
    size_t tl = type != NULL ? strlen(type) : 0;
    const char *p = list;
    if (p == NULL || tl == 0)
        return 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == tl && strncmp(p, type, tl) == 0)
            return 1;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* Where KernelBot's GPUs run: the suffixes of its GPU names ("B200_Nebius"). */
static const char *const kernelbot_providers[] = {
    "Modal", "Nebius", "GitHub", "Lambda", "RunPod", "Vast", "CoreWeave", "Crusoe", "AWS",
    "GCP", "Azure", NULL
};

int gputype_of_kernelbot(const char *name, char *out, size_t outsz)
{
    const char *us = name != NULL ? strrchr(name, '_') : NULL;
    if (outsz == 0)
        return 0;
    snprintf(out, outsz, "%s", name != NULL ? name : "");
    if (us == NULL || us == name)
        return 0;
    for (int i = 0; kernelbot_providers[i] != NULL; i++) {
        size_t tl = (size_t)(us - name);
        if (strcasecmp(us + 1, kernelbot_providers[i]) != 0 || tl >= outsz || tl >= GPUTYPE_MAX)
            continue;
        memcpy(out, name, tl);
        out[tl] = '\0';
        if (gputype_valid(out))
            return 1;
        snprintf(out, outsz, "%s", name);
        return 0;
    }
    return 0;
}
