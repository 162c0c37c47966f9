/*
 * secret.c - the list of secrets a forked child wipes (see secret.h).
 */
#include "secret.h"
#include "kj_err.h"

#include <string.h>

void secret_add(struct secret_list *s, void *p, size_t len)
{
    if (p == NULL || len == 0)
        return;
    KJ_ASSERT(s->n < SECRET_MAX);
    s->at[s->n].p = p;
    s->at[s->n].len = len;
    s->n++;
}

void secret_wipe(const struct secret_list *s)
{
    for (int i = 0; s != NULL && i < s->n && i < SECRET_MAX; i++)
        explicit_bzero(s->at[i].p, s->at[i].len);
}
