/*
 * test_cslot.c - runner/cslot.c: the compile slots a host's runners share.
 *
 * Slots live in a temporary folder here. Checks: a taker gets what it
 * wants when that many are free, and only what is free otherwise, never
 * none (it waits for the first); with every slot held it times out with a
 * message and holds nothing; a slot given back can be taken again; a slot
 * held by another process (a child, which flock tells apart) is not taken
 * until that process dies, and is free the moment it does, so a killed
 * runner leaves no slot taken; the count comes from KJUDGE_COMPILE_SLOTS
 * when valid and from the host (at least 1) otherwise; bad arguments are
 * refused.
 */
#define KT_MAIN
#include "kt.h"

#include "cslot.h"
#include "mono.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/kjudge-test-cslot-XXXXXX";

static void test_take_give(void)
{
    struct cslot a, b, c;
    struct kj_err err;
    KT_CHECK(cslot_take(&a, dir, 3, 2, mono_now() + 1, &err) == KJ_OK && a.n == 2,
             "two of three free slots: both taken (%d)", a.n);
    KT_CHECK(cslot_take(&b, dir, 3, 3, mono_now() + 1, &err) == KJ_OK && b.n == 1,
             "three wanted, one free: one taken without waiting for more (%d)", b.n);
    double t0 = mono_now();
    int rc = cslot_take(&c, dir, 3, 1, mono_now() + 0.2, &err);
    KT_CHECK(rc == KJ_ETIMEOUT && c.n == 0 && mono_now() - t0 >= 0.19 &&
             strstr(err.msg, "no compile slot of 3") != NULL,
             "every slot held: a timeout that says so, nothing held (%d: %s)", rc, err.msg);
    cslot_give(&b);
    KT_CHECK(cslot_take(&c, dir, 3, 1, mono_now() + 1, &err) == KJ_OK && c.n == 1,
             "a slot given back is taken again");
    cslot_give(&a);
    cslot_give(&a); /* twice: nothing */
    cslot_give(&c);
    KT_CHECK(cslot_take(&a, dir, 3, 3, mono_now() + 1, &err) == KJ_OK && a.n == 3,
             "all given back: all three taken (%d)", a.n);
    cslot_give(&a);
}

static void test_other_process(void)
{
    int ready[2];
    struct cslot s;
    struct kj_err err;
    if (pipe(ready) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        struct cslot mine;
        char x = cslot_take(&mine, dir, 1, 1, mono_now() + 5, &err) == KJ_OK ? 'y' : 'n';
        (void)!write(ready[1], &x, 1);
        pause(); /* holds it until killed */
        _exit(0);
    }
    char x = 0;
    (void)!read(ready[0], &x, 1);
    KT_CHECK(x == 'y', "a child takes the one slot");
    KT_CHECK(cslot_take(&s, dir, 1, 1, mono_now() + 0.1, &err) == KJ_ETIMEOUT,
             "another process's slot is not taken: %s", err.msg);
    double t0 = mono_now();
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    KT_CHECK(cslot_take(&s, dir, 1, 1, mono_now() + 1, &err) == KJ_OK && s.n == 1 &&
             mono_now() - t0 < 0.5, "free the moment the holder dies: a killed runner "
             "leaves none taken");
    cslot_give(&s);
    close(ready[0]);
    close(ready[1]);
}

static void test_count_args(void)
{
    struct cslot s;
    struct kj_err err;
    setenv("KJUDGE_COMPILE_SLOTS", "5", 1);
    KT_CHECK(cslot_count() == 5, "KJUDGE_COMPILE_SLOTS sets the count");
    setenv("KJUDGE_COMPILE_SLOTS", "0", 1);
    int host = cslot_count();
    KT_CHECK(host >= 1 && host <= CSLOT_MAX, "0 is not a count: the host's (%d)", host);
    setenv("KJUDGE_COMPILE_SLOTS", "3x", 1);
    KT_CHECK(cslot_count() == host, "nor is 3x");
    unsetenv("KJUDGE_COMPILE_SLOTS");
    KT_CHECK(cslot_count() == host, "unset: the host's cores, bounded by its memory");
    KT_CHECK(cslot_take(&s, dir, 3, 0, mono_now() + 1, &err) == KJ_EINVAL && s.n == 0 &&
             cslot_take(&s, dir, 3, CSLOT_WANT_MAX + 1, mono_now() + 1, &err) == KJ_EINVAL &&
             cslot_take(&s, dir, 0, 1, mono_now() + 1, &err) == KJ_EINVAL,
             "wanting none or too many, or no slots at all: refused");
    setenv("KJUDGE_COMPILE_SLOT_DIR", dir, 1);
    char got[4096];
    KT_CHECK(cslot_dir(got, sizeof got, &err) == KJ_OK && strcmp(got, dir) == 0,
             "KJUDGE_COMPILE_SLOT_DIR names the folder");
    unsetenv("KJUDGE_COMPILE_SLOT_DIR");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_CHECK(mkdtemp(dir) != NULL, "a temporary folder");
    KT_RUN(test_take_give());
    KT_RUN(test_other_process());
    KT_RUN(test_count_args());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    return kt_done("test_cslot");
}
