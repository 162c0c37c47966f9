/*
 * cslot.c - compile slots shared by the runners of a host (see cslot.h):
 * N lock files slot-0 .. slot-(N-1) in one folder, each taken with a
 * non-blocking exclusive flock on a descriptor of its own.
 */
#include "cslot.h"
#include "cpus.h"
#include "cbox.h"
#include "mono.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CSLOT_POLL_NS 2000000L /* between two looks for a free slot */

/* MemTotal from /proc/meminfo in bytes, 0 when unknown. */
static unsigned long long cslot_memtotal(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024ull;
}

int cslot_count(void)
{
    const char *env = getenv("KJUDGE_COMPILE_SLOTS");
    if (env != NULL && env[0] != '\0') {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= CSLOT_MAX)
            return (int)v;
    }
    cpu_set_t set; /* the CPUs compile boxes may use (cpus.h) */
    int c = cpus_compile_set(&set);
    long cpus = c > 0 ? c : c == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    unsigned long long mem = cslot_memtotal();
    long n = cpus > 0 ? cpus : 1;
    if (mem > 0 && (unsigned long long)n > mem / CBOX_MEM_BYTES)
        n = (long)(mem / CBOX_MEM_BYTES);
    return n < 1 ? 1 : n > CSLOT_MAX ? CSLOT_MAX : (int)n;
}

int cslot_dir(char *buf, size_t size, struct kj_err *err)
{
    const char *env = getenv("KJUDGE_COMPILE_SLOT_DIR");
    int n;
    if (env != NULL && env[0] != '\0')
        n = snprintf(buf, size, "%s", env);
    else if (geteuid() == 0) {
        if (mkdir("/run/kjudge", 0755) != 0 && errno != EEXIST)
            return KJ_FAIL(err, KJ_EIO, "compile slots: mkdir /run/kjudge: %s", strerror(errno));
        n = snprintf(buf, size, "/run/kjudge/compile-slots");
    } else
        n = snprintf(buf, size, "/tmp/kjudge-compile-slots-%u", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= size)
        return KJ_FAIL(err, KJ_EINVAL, "compile slots: the folder's name is too long");
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return KJ_FAIL(err, KJ_EIO, "compile slots: mkdir %s: %s", buf, strerror(errno));
    return KJ_OK;
}

/* One look at every slot from a random first one: take free ones until s
 * holds want. KJ_OK (maybe none taken) or KJ_EIO. */
static int cslot_sweep(struct cslot *s, const char *dir, int count, int want, struct kj_err *err)
{
    int first = rand() % count;
    for (int k = 0; k < count && s->n < want; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/slot-%d", dir, (first + k) % count);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return KJ_FAIL(err, KJ_EIO, "compile slots: open %s: %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            s->fd[s->n++] = fd;
        else {
            int e = errno;
            close(fd);
            if (e != EWOULDBLOCK)
                return KJ_FAIL(err, KJ_EIO, "compile slots: flock %s: %s", path, strerror(e));
        }
    }
    return KJ_OK;
}

int cslot_take(struct cslot *s, const char *dir, int count, int want, double deadline,
               struct kj_err *err)
{
    char own[4096];
    double t0 = mono_now();
    memset(s, 0, sizeof *s);
    if (want < 1 || want > CSLOT_WANT_MAX || count < 1 || count > CSLOT_MAX)
        return KJ_FAIL(err, KJ_EINVAL, "compile slots: want %d of %d", want, count);
    if (dir == NULL) {
        int rc = cslot_dir(own, sizeof own, err);
        if (rc != KJ_OK)
            return rc;
        dir = own;
    }
    for (;;) {
        int rc = cslot_sweep(s, dir, count, want, err);
        if (rc != KJ_OK) {
            cslot_give(s);
            return rc;
        }
        if (s->n > 0)
            break;
        if (mono_now() >= deadline)
            return KJ_FAIL(err, KJ_ETIMEOUT, "no compile slot of %d came free in %.1f s "
                           "(every one in use by this host's runners)", count, mono_now() - t0);
        struct timespec ts = {0, CSLOT_POLL_NS};
        nanosleep(&ts, NULL);
    }
    s->waited_s = mono_now() - t0;
    return KJ_OK;
}

void cslot_give(struct cslot *s)
{
    for (int i = 0; i < s->n; i++)
        close(s->fd[i]); /* the lock goes with the last descriptor of its open file */
    s->n = 0;
}
