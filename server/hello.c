/*
 * hello.c - the in-memory list of runner start-up reports (see hello.h).
 *
 * Written by api_hello.c (one report per runner start), read by metrics.c
 * at every scrape. One mutex; both sides copy, nothing is borrowed.
 */
#include "hello.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct hello_list {
    pthread_mutex_t mu;     /* guards n and e */
    int n;
    struct hello_entry e[HELLO_MAX];
};

int hello_new(struct hello_list **out, struct kj_err *err)
{
    struct hello_list *h = calloc(1, sizeof *h);
    *out = NULL;
    if (h == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the runner list");
    pthread_mutex_init(&h->mu, NULL);
    *out = h;
    return 0;
}

void hello_free(struct hello_list *h)
{
    if (h == NULL)
        return;
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void hello_put(struct hello_list *h, const struct hello_entry *e)
{
    int at = -1, oldest = 0;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->n && at < 0; i++) {
        if (strcmp(h->e[i].runner, e->runner) == 0)
            at = i;
        else if (h->e[i].at < h->e[oldest].at)
            oldest = i;
    }
    if (at < 0)
        at = h->n < HELLO_MAX ? h->n++ : oldest;
    h->e[at] = *e;
    pthread_mutex_unlock(&h->mu);
}

static int by_runner(const void *a, const void *b)
{
    return strcmp(((const struct hello_entry *)a)->runner, ((const struct hello_entry *)b)->runner);
}

int hello_list_all(struct hello_list *h, struct hello_entry **out, int *n, struct kj_err *err)
{
    struct hello_entry *copy;
    pthread_mutex_lock(&h->mu);
    *n = h->n;
    copy = malloc(sizeof *copy * (size_t)(h->n > 0 ? h->n : 1));
    if (copy != NULL)
        memcpy(copy, h->e, sizeof *copy * (size_t)h->n);
    pthread_mutex_unlock(&h->mu);
    *out = copy;
    if (copy == NULL) {
        *n = 0;
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory listing runners");
    }
    qsort(copy, (size_t)*n, sizeof *copy, by_runner);
    return 0;
}

const char *hello_state_name(enum hello_state s)
{
    return s == HELLO_READY ? "ready" : "refused";
}
