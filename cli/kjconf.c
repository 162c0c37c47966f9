/*
 * kjconf.c - read and write the client's config file (kjconf.h).
 *
 * main.c loads it once per run and applies the environment; cmd_login.c
 * saves it. Reading: at most KJCONF_MAX_FILE bytes, "key = value" lines,
 * unknown keys ignored (a later version may add some), a bad line is an
 * error naming it. Writing never truncates the old file in place: a new
 * file is made with O_EXCL and mode 0600 (whatever the umask), synced,
 * then renamed over it, so a crash leaves the old or the new one.
 */
#include "kjconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kjconf_path(char *buf, size_t bufsz, struct kj_err *err)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(buf, bufsz, "%s/kjudge/config", xdg);
    else if (home != NULL && home[0] == '/')
        n = snprintf(buf, bufsz, "%s/.config/kjudge/config", home);
    else
        return KJ_FAIL(err, KJ_ENOTFOUND, "neither XDG_CONFIG_HOME nor HOME names a folder");
    if (n < 0 || (size_t)n >= bufsz)
        return KJ_FAIL(err, KJ_ELIMIT, "the config file's path is too long");
    return 0;
}

/* Trim blanks at both ends of s in place; returns s. */
static char *trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* One line of the file (NUL-terminated, without '\n'). */
static int parse_line(struct kjconf *c, char *line, int lineno, struct kj_err *err)
{
    char *eq, *key, *val;
    line = trim(line);
    if (line[0] == '\0' || line[0] == '#')
        return 0;
    if ((eq = strchr(line, '=')) == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: expected \"key = value\"", c->path, lineno);
    *eq = '\0';
    key = trim(line);
    val = trim(eq + 1);
    if (strcmp(key, "url") == 0) {
        if (strlen(val) >= sizeof c->url)
            return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: url is too long", c->path, lineno);
        snprintf(c->url, sizeof c->url, "%s", val);
        c->url_from = "config";
    } else if (strcmp(key, "token") == 0) {
        if (strlen(val) >= sizeof c->token)
            return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: token is too long", c->path, lineno);
        snprintf(c->token, sizeof c->token, "%s", val);
        c->token_from = "config";
    }
    return 0;
}

int kjconf_load(struct kjconf *c, struct kj_err *err)
{
    char *buf = NULL, *line, *next;
    struct stat st;
    ssize_t n;
    int fd, rc = 0, lineno = 0;
    memset(c, 0, sizeof *c);
    if ((rc = kjconf_path(c->path, sizeof c->path, err)) != 0) {
        c->path[0] = '\0';
        return rc == KJ_ENOTFOUND ? 0 : rc;
    }
    if ((fd = open(c->path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? 0 : KJ_FAIL(err, KJ_EIO, "cannot read %s: %s", c->path,
                                              strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return KJ_FAIL(err, KJ_EIO, "%s is not a regular file", c->path);
    }
    c->loose = (st.st_mode & 077) != 0;
    if (st.st_size > KJCONF_MAX_FILE || (buf = malloc(KJCONF_MAX_FILE + 1)) == NULL) {
        close(fd);
        return buf == NULL && st.st_size <= KJCONF_MAX_FILE
               ? KJ_FAIL(err, KJ_ENOMEM, "out of memory")
               : KJ_FAIL(err, KJ_ELIMIT, "%s is larger than %d bytes", c->path, KJCONF_MAX_FILE);
    }
    n = read(fd, buf, KJCONF_MAX_FILE);
    close(fd);
    if (n < 0) {
        free(buf);
        return KJ_FAIL(err, KJ_EIO, "cannot read %s: %s", c->path, strerror(errno));
    }
    buf[n] = '\0';
    c->exists = 1;
    for (line = buf; rc == 0 && line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        rc = parse_line(c, line, ++lineno, err);
    }
    memset(buf, 0, (size_t)n);
    free(buf);
    return rc;
}

void kjconf_env(struct kjconf *c)
{
    const char *u = getenv("KJUDGE_URL"), *t = getenv("KJUDGE_TOKEN");
    if (u != NULL && u[0] != '\0' && strlen(u) < sizeof c->url) {
        snprintf(c->url, sizeof c->url, "%s", u);
        c->url_from = "KJUDGE_URL";
    }
    if (t != NULL && t[0] != '\0' && strlen(t) < sizeof c->token) {
        snprintf(c->token, sizeof c->token, "%s", t);
        c->token_from = "KJUDGE_TOKEN";
    }
}

/* mkdir -p of the folders above path (each new one mode 0700). */
static int make_parents(const char *path, struct kj_err *err)
{
    char dir[sizeof ((struct kjconf *)0)->path];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return KJ_FAIL(err, KJ_EIO, "cannot create folder %s: %s", dir, strerror(errno));
        *p = '/';
    }
    return 0;
}

/* Write all of buf to fd. */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

int kjconf_save(const struct kjconf *c, const char *url, const char *token, struct kj_err *err)
{
    char tmp[sizeof c->path + 32], text[KJCONF_MAX_URL + KJCONF_MAX_TOKEN + 128];
    int fd, rc, n;
    if (c->path[0] == '\0')
        return KJ_FAIL(err, KJ_ENOTFOUND, "no place for the config file (set HOME or XDG_CONFIG_HOME)");
    if (strpbrk(url, "\r\n") != NULL || strpbrk(token, "\r\n") != NULL)
        return KJ_FAIL(err, KJ_EINVAL, "the URL and token must be one line each");
    if ((rc = make_parents(c->path, err)) != 0)
        return rc;
    n = snprintf(text, sizeof text, "# kjudge client configuration, written by `kjudge login`\n"
                 "url = %s\ntoken = %s\n", url, token);
    if (n < 0 || (size_t)n >= sizeof text)
        return KJ_FAIL(err, KJ_ELIMIT, "the URL or token is too long");
    snprintf(tmp, sizeof tmp, "%s.new.%ld", c->path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot create %s: %s", tmp, strerror(errno));
    else if (fchmod(fd, 0600) != 0 || write_all(fd, text, (size_t)n) != 0 || fsync(fd) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, c->path) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot replace %s: %s", c->path, strerror(errno));
    if (rc != 0 && fd >= 0)
        unlink(tmp);
    memset(text, 0, sizeof text);
    return rc;
}

void kjconf_clear(struct kjconf *c)
{
    memset(c->token, 0, sizeof c->token);
}
