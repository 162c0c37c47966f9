/*
 * hello.h - what each runner said when it started (POST /api/v1/runner/hello).
 *
 * A runner reports once at start whether it is ready to judge (its GPU,
 * device and architecture) or refuses, and why ("no usable GPU 0: cannot
 * load the CUDA driver", a sandbox the host cannot build). api_hello.c
 * records each report here, keyed by runner name, and logs it; metrics.c
 * lists them. Kept in memory only: a runner reports again when it starts
 * again, and a restart of the server forgets them. Bounded: past
 * HELLO_MAX names the oldest report is replaced.
 */
#ifndef KJ_HELLO_H
#define KJ_HELLO_H

#include <stdint.h>
#include "kj_err.h"
#include "netacl.h"

#define HELLO_MAX 512          /* runner names remembered */
#define HELLO_MAX_REASON 512   /* bytes of a refusal reason kept */
#define HELLO_MAX_FIELD 64     /* name, GPU type, architecture */

enum hello_state { HELLO_READY = 0, HELLO_REFUSED };

struct hello_entry {
    char runner[HELLO_MAX_FIELD];     /* the name it serves under */
    char user[HELLO_MAX_FIELD];       /* the runner account whose token it used */
    enum hello_state state;
    char gpu[HELLO_MAX_FIELD];        /* GPU type, "" when unknown */
    char arch[HELLO_MAX_FIELD];       /* "sm_90a", "" when unknown */
    char reason[HELLO_MAX_REASON];    /* why it refused, printable; "" when ready */
    char addr[NETACL_ADDR_MAX];       /* client address it came from */
    int64_t at;                       /* unix seconds of the report */
};

struct hello_list;

/* A new, empty list (*out; caller frees with hello_free()). */
int hello_new(struct hello_list **out, struct kj_err *err);
void hello_free(struct hello_list *h);
/* Record e (copied), replacing the entry with the same runner name, else the oldest when full. */
void hello_put(struct hello_list *h, const struct hello_entry *e);
/* Copy every entry, sorted by runner name, into a new array *out of *n
 * (caller frees with free()). */
int hello_list_all(struct hello_list *h, struct hello_entry **out, int *n, struct kj_err *err);
/* "ready" or "refused". */
const char *hello_state_name(enum hello_state s);

#endif
