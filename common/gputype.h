/*
 * gputype.h - GPU type names ("H200") and how they map to CUDA device names.
 *
 * A leaderboard lists the GPU types it ranks on; a runner token is bound to
 * some of them (kjudge-server runner add/bind --gpu); a runner claims jobs
 * for the type of its device; the server checks that a result's device
 * (system.gpu, the CUDA device name) is of the job's type. The one rule:
 * the type of a device is the first word of its name after an optional
 * "NVIDIA " prefix ("NVIDIA H200" and "NVIDIA H200 NVL" are H200,
 * "NVIDIA B200" is B200). Used by runner/serve.c and server/api_runner.c,
 * server/result_check.c and server/main.c. Pure functions, no allocation.
 */
#ifndef KJ_GPUTYPE_H
#define KJ_GPUTYPE_H

#include <stddef.h>
#include "kj_err.h"

#define GPUTYPE_MAX 64        /* a type name, NUL included (SPEC_MAX_NAME) */
#define GPUTYPE_MAX_LIST 8    /* types one runner token may be bound to (SPEC_MAX_GPUS) */
#define GPUTYPE_LIST_BYTES (GPUTYPE_MAX_LIST * GPUTYPE_MAX) /* "H200,B200" text, NUL included */

/* 1 when type is a GPU type name: [A-Za-z0-9_-]{1,63}. */
int gputype_valid(const char *type);

/* The type of the CUDA device called device into out (size outsz; "" when
 * the name yields none). */
void gputype_of_device(const char *device, char *out, size_t outsz);

/* 1 when device (a CUDA device name) is of GPU type type. */
int gputype_matches(const char *type, const char *device);

/* Check a comma-separated list of types ("H200,B200": 1 to
 * GPUTYPE_MAX_LIST valid names, no repeats, no spaces) and write its
 * canonical form (the same text) into out (GPUTYPE_LIST_BYTES). KJ_EINVAL
 * with a message naming the bad entry. */
int gputype_list_parse(const char *list, char *out, size_t outsz, struct kj_err *err);

/* The GPU type a KernelBot GPU name stands for: a name ending with a
 * provider suffix ("B200_Nebius", "H100_Modal"; the providers are listed
 * in gputype.c, compared without case) is the type before it ("B200").
 * out (size outsz) gets the type, or name unchanged when it has no such
 * suffix or the type would not be valid. Returns 1 when a suffix was
 * removed, 0 otherwise. Python submissions' "#!POPCORN gpu" lines. */
int gputype_of_kernelbot(const char *name, char *out, size_t outsz);

/* 1 when type is one of the entries of a list checked by gputype_list_parse. */
int gputype_list_has(const char *list, const char *type);

#endif
