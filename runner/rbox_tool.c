/*
 * rbox_tool.c - the run box's root under a profiler or sanitizer (tool.h).
 *
 * A box started by tool.c runs the tool's code injected into it, and that
 * code opens files after the box is locked: its own libraries (Nsight
 * Compute loads libnvperf_host.so when the first profiled launch comes),
 * the driver's PTX JIT library, the GPU's device files again, and its
 * scratch files in /tmp and /dev/shm that the tool's own process (outside
 * the box) reads. So instead of rbox.c's empty root, this root holds
 * exactly those, bound at their own paths: /tmp and /dev/shm (read-write;
 * both are private tmpfs mounts tool.c made for this tool and box alone),
 * the box's GPU nodes, and read-only the folders of the tool's libraries
 * the box has mapped (the whole install folder of the tool), the loader's
 * /etc/ld.so.cache, plus libnvidia-ptxjitcompiler.so.1 from libcuda's
 * folder. KJUDGE_TOOL_BINDS (colon list) adds read-only paths, for a tool
 * version that needs one more. Everything else stays as in rbox.c: the
 * root is read-only, no /proc, no /sys, the rest of the host invisible.
 */
#include "rbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RT_MAX_BINDS 32

struct rt_list {
    char path[RT_MAX_BINDS][PATH_MAX];
    int rw[RT_MAX_BINDS];
    int n;
};

static void rt_add(struct rt_list *l, const char *path, int rw)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->path[i], path) == 0)
            return;
    if (l->n < RT_MAX_BINDS && strlen(path) < PATH_MAX && access(path, F_OK) == 0) {
        snprintf(l->path[l->n], PATH_MAX, "%s", path);
        l->rw[l->n++] = rw;
    }
}

/* mkdir -p of every component of path (which the caller owns). */
static int rt_mkdirs(char *path)
{
    for (char *p = path + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Bind path at stage+path: a folder onto a folder, anything else onto an
 * empty file; read-only unless rw. */
static int rt_bind(const char *stage, const char *path, int rw, struct kj_err *err)
{
    char at[2 * PATH_MAX + 2];
    struct stat st;
    if (stat(path, &st) != 0)
        return KJ_OK; /* gone since it was listed: nothing to bind */
    snprintf(at, sizeof at, "%s%s", stage, path);
    if (S_ISDIR(st.st_mode)) {
        if (rt_mkdirs(at) != 0)
            return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: mkdir %s: %s", at, strerror(errno));
    } else {
        char *slash = strrchr(at, '/');
        *slash = '\0';
        int bad = rt_mkdirs(at) != 0;
        *slash = '/';
        int fd = bad ? -1 : open(at, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
            return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: create %s: %s", at, strerror(errno));
        close(fd);
    }
    unsigned long ro = rw ? 0 : MS_RDONLY;
    /* /usr with what is mounted inside it (a GPU host's driver files often
     * are); a submount keeps its own flags, and nothing under /usr is
     * writable for the box's uid anyway. */
    unsigned long rec = strcmp(path, "/usr") == 0 ? MS_REC : 0;
    if (mount(path, at, NULL, MS_BIND | rec, NULL) != 0 ||
        mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | ro, NULL) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: bind %s: %s", path, strerror(errno));
    return KJ_OK;
}

/* The install folder of a tool from a library path inside it: up to the
 * version folder after ".../nsight-compute/" (or the "nsight-compute-V"
 * folder), or the "compute-sanitizer" folder. 0 when path is neither. */
static int rt_tool_root(const char *path, char *out, size_t outsz)
{
    static const char *const marks[] = {"/nsight-compute", "/compute-sanitizer"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        const char *m = strstr(path, marks[i]);
        if (m == NULL)
            continue;
        const char *end = m + strlen(marks[i]);
        end += strcspn(end, "/");             /* the rest of this folder's name */
        if (i == 0 && end - m == (long)strlen(marks[0]) && *end == '/')
            end = end + 1 + strcspn(end + 1, "/"); /* ".../nsight-compute/2025.3.1" */
        snprintf(out, outsz, "%.*s", (int)(end - path), path);
        return 1;
    }
    return 0;
}

/* The install folders of the tool's libraries this process has mapped,
 * the folders of any other profiling library it mapped (CUPTI, the perf
 * libraries), and the PTX JIT library next to libcuda. Nsight Compute's
 * injected code loads libnvperf_host.so from its own target folder the
 * first time a launch is profiled: binding only the folders of what is
 * mapped at lock time was not enough (the profiled launch failed). */
static void rt_mapped(struct rt_list *l)
{
    static const char *const other_marks[] = {"CUPTI", "libnvperf", "libcupti"};
    char line[PATH_MAX + 256], root[PATH_MAX];
    FILE *f = fopen("/proc/self/maps", "re");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        char *path = strchr(line, '/');
        if (path == NULL)
            continue;
        path[strcspn(path, "\n")] = '\0';
        char *slash = strrchr(path, '/');
        if (slash == NULL || slash == path)
            continue;
        if (rt_tool_root(path, root, sizeof root)) {
            rt_add(l, root, 0);
            continue;
        }
        int other = 0;
        for (size_t i = 0; i < sizeof other_marks / sizeof other_marks[0]; i++)
            other |= strstr(path, other_marks[i]) != NULL;
        if (strstr(slash, "/libcuda.so") != NULL) {
            char jit[PATH_MAX + 40];
            snprintf(jit, sizeof jit, "%.*s/libnvidia-ptxjitcompiler.so.1", (int)(slash - path),
                     path);
            char real[PATH_MAX];
            if (realpath(jit, real) != NULL)
                rt_add(l, real, 0);
            rt_add(l, jit, 0);
        }
        if (other) {
            *slash = '\0';
            rt_add(l, path, 0);
        }
    }
    fclose(f);
}

/* The GPU's device files: the control node, UVM, and the box's GPU (its
 * minor from the driver's /proc entry for pci, else every /dev/nvidiaN). */
static void rt_devices(struct rt_list *l, const char *pci)
{
    char path[PATH_MAX], line[256];
    int minor = -1;
    rt_add(l, "/dev/nvidiactl", 1);
    rt_add(l, "/dev/nvidia-uvm", 1);
    rt_add(l, "/dev/nvidia-uvm-tools", 1);
    snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", pci);
    for (char *p = path; *p; p++)
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    FILE *f = fopen(path, "re");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Device Minor: %d", &minor) == 1)
            break;
    if (f != NULL)
        fclose(f);
    for (int i = 0; i < 64; i++) {
        if (minor >= 0 && i != minor)
            continue;
        snprintf(path, sizeof path, "/dev/nvidia%d", i);
        rt_add(l, path, 1);
    }
}

/* A Python box's root beyond a tool's: /usr read-only (the interpreter,
 * its standard library, the C compiler and ptxas that Triton runs), the
 * top-level links of a merged /usr (/bin -> usr/bin ...) or those folders,
 * the pinned environment's site-packages, and the folder of the CUDA
 * driver library (Triton links its launcher against it). */
static void rt_python(struct rt_list *l, const struct rbox *r)
{
    char real[PATH_MAX], line[PATH_MAX + 256];
    rt_add(l, "/usr", 0);
    rt_add(l, "/dev/null", 1); /* subprocess's DEVNULL when Triton runs the compiler */
    rt_add(l, "/dev/zero", 1);
    rt_add(l, "/dev/urandom", 1);
    rt_add(l, "/dev/random", 1);
    if (r->python_site != NULL && realpath(r->python_site, real) != NULL)
        rt_add(l, real, 0);
    FILE *f = fopen("/proc/self/maps", "re");
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        char *path = strchr(line, '/'), *slash;
        if (path == NULL)
            continue;
        path[strcspn(path, "\n")] = '\0';
        if ((slash = strrchr(path, '/')) == NULL || strstr(slash, "/libcuda.so") == NULL)
            continue;
        *slash = '\0';
        if (path[0] != '\0' && strncmp(path, "/usr/", 5) != 0)
            rt_add(l, path, 0);
    }
    if (f != NULL)
        fclose(f);
}

/* The top-level folders that are links into /usr on a merged system: the
 * same links in the new root; real folders are bound read-only. */
static int rt_python_links(struct rt_list *l, const char *stage, struct kj_err *err)
{
    static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        char target[PATH_MAX], at[PATH_MAX + 80];
        struct stat st;
        if (lstat(top[i], &st) != 0)
            continue;
        if (!S_ISLNK(st.st_mode)) {
            rt_add(l, top[i], 0);
            continue;
        }
        ssize_t n = readlink(top[i], target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        snprintf(at, sizeof at, "%s%s", stage, top[i]);
        if (symlink(target, at) != 0 && errno != EEXIST)
            return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: symlink %s: %s", at, strerror(errno));
    }
    return KJ_OK;
}

int rbox_tool_fs(const char *pci, const struct rbox *r, struct kj_err *err)
{
    static struct rt_list l; /* one per box process, used once */
    char stage[64], old[80];
    memset(&l, 0, sizeof l);
    rt_add(&l, "/tmp", 1);
    rt_add(&l, "/dev/shm", 1);
    rt_devices(&l, pci);
    rt_add(&l, "/etc/ld.so.cache", 0); /* where a library loaded by name is (no secret) */
    rt_mapped(&l);
    if (r->python)
        rt_python(&l, r);
    const char *extra = getenv("KJUDGE_TOOL_BINDS");
    while (extra != NULL && *extra != '\0') {
        size_t n = strcspn(extra, ":");
        char p[PATH_MAX];
        if (n > 0 && n < sizeof p) {
            memcpy(p, extra, n);
            p[n] = '\0';
            if (p[0] == '/')
                rt_add(&l, p, 0);
        }
        extra += n + (extra[n] == ':');
    }
    umask(022); /* as rbox_prepare set it: the folders below are 0755 whatever the runner's umask */
    snprintf(stage, sizeof stage, "/tmp/.kjroot-%d", (int)getpid());
    snprintf(old, sizeof old, "%s/.old", stage);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        (mkdir(stage, 0700) != 0 && errno != EEXIST) ||
        mount("kjrun", stage, "tmpfs", MS_NOSUID, "size=1m,mode=0755") != 0 ||
        mkdir(old, 0700) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: root tmpfs: %s", strerror(errno));
    if (r->python) {
        int rc = rt_python_links(&l, stage, err);
        if (rc != KJ_OK)
            return rc;
    }
    for (int i = 0; i < l.n; i++) {
        int rc = rt_bind(stage, l.path[i], l.rw[i], err);
        if (rc != KJ_OK)
            return rc;
    }
    if (chdir(stage) != 0 || syscall(SYS_pivot_root, ".", ".old") != 0 || chdir("/") != 0 ||
        umount2("/.old", MNT_DETACH) != 0 || rmdir("/.old") != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: pivot_root: %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: read-only root: %s", strerror(errno));
    return KJ_OK;
}
