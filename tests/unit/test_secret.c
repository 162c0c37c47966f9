/*
 * test_secret.c - unit tests for runner/secret.c and for the wipe in a
 * forked child: a compile box (the fork every compile goes through, built
 * without a GPU) finds its copies of the listed secrets zeroed while the
 * memory next to them and the parent's copies are untouched; without the
 * list the child sees the secrets, so the check can fail. Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <stdint.h>
#include <string.h>

#include "cbox.h"
#include "secret.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct probe {
    char *token;       /* listed */
    uint64_t *seed;    /* listed */
    char *control;     /* not listed */
};

static int all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != 0)
            return 0;
    return 1;
}

/* In the box: 1 when the listed secrets are gone and the rest is intact,
 * 0 when a secret is still there, 2 when the control was harmed. */
static int in_box(void *arg)
{
    const struct probe *p = arg;
    if (strcmp(p->control, "not a secret") != 0)
        return 2;
    return all_zero(p->token, sizeof TOKEN) && *p->seed == 0 ? 1 : 0;
}

static void test_list(void)
{
    char a[16] = "abcdefghijklmno", b[8] = "1234567";
    struct secret_list s = {0};
    secret_add(&s, a, 4);
    secret_add(&s, NULL, 8);
    secret_add(&s, b, 0);
    KT_CHECK(s.n == 1, "NULL and empty ranges are not listed: %d", s.n);
    secret_wipe(&s);
    KT_CHECK(all_zero(a, 4) && strcmp(a + 4, "efghijklmno") == 0 && strcmp(b, "1234567") == 0,
             "exactly the listed bytes are zeroed");
    secret_wipe(NULL);
}

static void test_compile_box(void)
{
    char *token = strdup(TOKEN), *control = strdup("not a secret");
    uint64_t seed = 8410298740174ull;
    struct probe p = {token, &seed, control};
    struct secret_list s = {0};
    struct kj_err err;
    int result = -1;
    secret_add(&s, token, sizeof TOKEN);
    secret_add(&s, &seed, sizeof seed);

    kj_err_clear(&err);
    int rc = cbox_run_in_box(in_box, &p, 0, &s, &result, &err);
    KT_CHECK(rc == KJ_OK && result == 1, "the compile box finds zeros where the token and the "
             "seed were, the rest intact: rc %d result %d %s", rc, result, err.msg);
    KT_CHECK(strcmp(token, TOKEN) == 0 && seed == 8410298740174ull,
             "the parent keeps its own copies");

    result = -1;
    kj_err_clear(&err);
    rc = cbox_run_in_box(in_box, &p, 0, NULL, &result, &err);
    KT_CHECK(rc == KJ_OK && result == 0, "without the list the child still sees them: rc %d "
             "result %d %s", rc, result, err.msg);
    free(token);
    free(control);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_list());
    KT_RUN(test_compile_box());
    return kt_done("test_secret");
}
