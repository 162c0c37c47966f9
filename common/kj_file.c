/*
 * kj_file.c - kj_read_file (kj_file.h). Used by the spec loader, the
 * server's static documents and the runner's local commands.
 */
#include "kj_file.h"
#include "kj_err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Double *buf's capacity *cap, to at most limit bytes. */
static int grow(char **buf, size_t *cap, size_t limit, const char *path, struct kj_err *err)
{
    size_t want = *cap > limit / 2 ? limit : *cap * 2;
    char *p = realloc(*buf, want);
    if (p == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "%s: out of memory", path);
    *buf = p;
    *cap = want;
    return 0;
}

int kj_read_file(const char *path, size_t max, char **out, size_t *len, struct kj_err *err)
{
    struct stat st;
    char *buf = NULL;
    size_t n = 0, cap;
    int fd, rc = 0;

    *out = NULL;
    if (len != NULL)
        *len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = KJ_FAIL(err, KJ_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s: not a regular file", path);
        goto out;
    }
    if ((unsigned long long)st.st_size > max) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "%s: %lld bytes, larger than the limit of %zu", path,
                     (long long)st.st_size, max);
        goto out;
    }
    /* The size is a hint: the file may grow while it is read, so read until
     * EOF or max + 1 bytes, growing the buffer as needed. */
    cap = ((size_t)st.st_size < max ? (size_t)st.st_size : max) + 1;
    if ((buf = malloc(cap)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    while (n <= max) {
        ssize_t got;
        if (n == cap && (rc = grow(&buf, &cap, max + 1, path, err)) != 0)
            goto out;
        got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = KJ_FAIL(err, KJ_EIO, "%s: cannot read: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    if (n > max) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "%s: larger than the limit of %zu bytes", path, max);
        goto out;
    }
    if (n == cap && (rc = grow(&buf, &cap, n + 1, path, err)) != 0)
        goto out;
    buf[n] = '\0';
    *out = buf;
    buf = NULL;
    if (len != NULL)
        *len = n;
out:
    free(buf);
    close(fd);
    return rc;
}
