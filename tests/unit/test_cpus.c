/*
 * test_cpus.c - runner/cpus.c: the CPUs compile boxes may use.
 *
 * Checks: the compile set is the allowed mask less its first R CPUs, R
 * capped at half of them, and the whole mask when R is 0 (or the mask has
 * one CPU); gaps in the mask are kept as gaps; $KJUDGE_TIMING_CPUS is read
 * when a whole number from 0 to 1024 and refused (-1) otherwise; a compile
 * box (the same fork as NVRTC's) runs on exactly that set, the first CPU of
 * the runner's mask not in it; the compile slots count the set.
 */
#define KT_MAIN
#include "kt.h"

#include "cbox.h"
#include "cpus.h"
#include "cslot.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void set_of(cpu_set_t *s, const int *cpus, int n)
{
    CPU_ZERO(s);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], s);
}

static void test_from(void)
{
    cpu_set_t all, out;
    const int sixteen[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    set_of(&all, sixteen, 16);
    KT_CHECK(cpus_compile_set_from(&all, 1, &out) == 15 && !CPU_ISSET(0, &out) && CPU_ISSET(1, &out) &&
             CPU_ISSET(15, &out), "16 CPUs, one GPU: compiles on 1-15");
    KT_CHECK(cpus_compile_set_from(&all, 8, &out) == 8 && !CPU_ISSET(7, &out) && CPU_ISSET(8, &out),
             "16 CPUs, eight GPUs: compiles on 8-15");
    KT_CHECK(cpus_compile_set_from(&all, 12, &out) == 8 && CPU_ISSET(8, &out),
             "more GPUs than half the CPUs: compiles keep half");
    KT_CHECK(cpus_compile_set_from(&all, 0, &out) == 0 && CPU_EQUAL(&out, &all),
             "none kept: compiles anywhere (0, the whole mask)");
    const int gappy[] = {2, 5, 9, 12};
    set_of(&all, gappy, 4);
    KT_CHECK(cpus_compile_set_from(&all, 1, &out) == 3 && !CPU_ISSET(2, &out) && CPU_ISSET(5, &out) &&
             !CPU_ISSET(3, &out), "a mask with gaps: its first CPU kept, the gaps stay gaps");
    const int one[] = {3};
    set_of(&all, one, 1);
    KT_CHECK(cpus_compile_set_from(&all, 1, &out) == 0 && CPU_ISSET(3, &out),
             "one CPU: nothing kept (compiles need it)");
}

static void test_env(void)
{
    const char *bad[] = {"x", "-1", "1025", "2x", " 1", "1.5"};
    setenv("KJUDGE_TIMING_CPUS", "3", 1);
    KT_CHECK(cpus_reserved() == 3, "KJUDGE_TIMING_CPUS=3 -> 3");
    setenv("KJUDGE_TIMING_CPUS", "0", 1);
    KT_CHECK(cpus_reserved() == 0, "KJUDGE_TIMING_CPUS=0 -> 0");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("KJUDGE_TIMING_CPUS", bad[i], 1);
        KT_CHECK(cpus_reserved() == -1, "KJUDGE_TIMING_CPUS='%s' refused", bad[i]);
    }
    unsetenv("KJUDGE_TIMING_CPUS");
    KT_CHECK(cpus_reserved() >= 0, "unset: the host's GPU count (%d)", cpus_reserved());
}

struct probe {
    cpu_set_t want;
};

static int in_box(void *arg)
{
    struct probe *p = arg;
    cpu_set_t got;
    if (sched_getaffinity(0, sizeof got, &got) != 0)
        return 2;
    return CPU_EQUAL(&got, &p->want) ? 1 : 0;
}

static void test_box(void)
{
    cpu_set_t mine;
    struct probe p;
    struct kj_err err;
    int result = -1;
    KT_CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0, "the affinity mask can be read");
    if (CPU_COUNT(&mine) < 2) {
        KT_SKIP("one CPU: no CPU can be kept from the compile boxes");
        return;
    }
    setenv("KJUDGE_TIMING_CPUS", "1", 1);
    KT_CHECK(cpus_compile_set(&p.want) == CPU_COUNT(&mine) - 1, "one kept: the set has one CPU fewer");
    kj_err_clear(&err);
    int rc = cbox_run_in_box(in_box, &p, 0, NULL, &result, &err);
    KT_CHECK(rc == KJ_OK && result == 1, "a compile box runs on that set only: rc %d result %d %s", rc,
             result, err.msg);
    unsetenv("KJUDGE_COMPILE_SLOTS");
    int slots = cslot_count();
    KT_CHECK(slots >= 1 && slots <= CPU_COUNT(&mine) - 1, "compile slots count the set's CPUs (%d)", slots);
    setenv("KJUDGE_TIMING_CPUS", "0", 1);
    KT_CHECK(cpus_compile_set(&p.want) == 0 && CPU_EQUAL(&p.want, &mine), "none kept: the whole mask");
    result = -1;
    rc = cbox_run_in_box(in_box, &p, 0, NULL, &result, &err);
    KT_CHECK(rc == KJ_OK && result == 1, "and the compile box runs anywhere the runner may: rc %d %s", rc,
             err.msg);
    unsetenv("KJUDGE_TIMING_CPUS");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_from());
    KT_RUN(test_env());
    KT_RUN(test_box());
    return kt_done("test_cpus");
}
