/*
 * test_kjconf.c - unit tests for cli/kjconf.c, the client's config file:
 * its path from XDG_CONFIG_HOME or HOME, a missing file, save (folder 0700,
 * file 0600 whatever the umask, no temporary file left, the old file kept
 * when saving fails) and load back, comments and unknown keys, a bad line
 * named by number, a loose mode noticed, the size cap, and KJUDGE_URL /
 * KJUDGE_TOKEN overriding the file.
 * Prints "test_kjconf: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kjconf.h"

static char root[256];

static void write_text(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d != NULL && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    return n;
}

static void test_path(void)
{
    char p[512], want[512];
    struct kj_err err;
    setenv("XDG_CONFIG_HOME", root, 1);
    KT_CHECK(kjconf_path(p, sizeof p, &err) == 0, "xdg: %s", err.msg);
    snprintf(want, sizeof want, "%s/kjudge/config", root);
    KT_CHECK(strcmp(p, want) == 0, "xdg path %s", p);
    setenv("XDG_CONFIG_HOME", "relative/dir", 1);
    setenv("HOME", "/home/someone", 1);
    KT_CHECK(kjconf_path(p, sizeof p, &err) == 0 && strcmp(p, "/home/someone/.config/kjudge/config") == 0,
             "a relative XDG_CONFIG_HOME is ignored: %s", p);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("HOME");
    KT_CHECK(kjconf_path(p, sizeof p, &err) == KJ_ENOTFOUND, "neither set");
    setenv("XDG_CONFIG_HOME", root, 1);
}

static void test_save_load(void)
{
    struct kjconf c;
    struct kj_err err;
    struct stat st;
    char dir[512];
    kj_err_clear(&err);
    KT_CHECK(kjconf_load(&c, &err) == 0 && !c.exists && c.url[0] == '\0' && c.url_from == NULL,
             "a missing file is no error: %s", err.msg);
    mode_t old = umask(0);
    int rc = kjconf_save(&c, "http://example:8080", "0123abcd", &err);
    umask(old);
    KT_CHECK(rc == 0, "save: %s", err.msg);
    snprintf(dir, sizeof dir, "%s/kjudge", root);
    KT_CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "folder mode %o", st.st_mode & 0777);
    KT_CHECK(stat(c.path, &st) == 0 && (st.st_mode & 0777) == 0600, "file mode %o under umask 0",
             st.st_mode & 0777);
    KT_CHECK(count_files(dir) == 1, "no temporary file is left");
    KT_CHECK(kjconf_load(&c, &err) == 0 && c.exists && !c.loose &&
             strcmp(c.url, "http://example:8080") == 0 && strcmp(c.token, "0123abcd") == 0 &&
             strcmp(c.url_from, "config") == 0, "load back: %s %s", c.url, err.msg);
    /* Saving again replaces it. */
    KT_CHECK(kjconf_save(&c, "https://other", "ffff", &err) == 0 && kjconf_load(&c, &err) == 0 &&
             strcmp(c.url, "https://other") == 0 && strcmp(c.token, "ffff") == 0, "replace");
    KT_CHECK(kjconf_save(&c, "http://x\nurl = http://evil", "t", &err) == KJ_EINVAL,
             "a URL with a newline is refused");
    KT_CHECK(kjconf_load(&c, &err) == 0 && strcmp(c.url, "https://other") == 0,
             "a refused save keeps the old file");
    /* The new file cannot be made (its name is taken): the save fails, the file stays. */
    char tmp[sizeof c.path + 32];
    snprintf(tmp, sizeof tmp, "%s.new.%ld", c.path, (long)getpid());
    mkdir(tmp, 0700);
    KT_CHECK(kjconf_save(&c, "http://y", "t", &err) == KJ_EIO && strstr(err.msg, "cannot create") != NULL,
             "a failed save: %s", err.msg);
    rmdir(tmp);
    KT_CHECK(kjconf_load(&c, &err) == 0 && strcmp(c.url, "https://other") == 0,
             "and the old file is still there");
    kjconf_clear(&c);
    KT_CHECK(c.token[0] == '\0', "clear wipes the token");
}

static void test_parse(void)
{
    struct kjconf c;
    struct kj_err err;
    char path[512];
    snprintf(path, sizeof path, "%s/kjudge/config", root);
    write_text(path, "# comment\n\n  url =  http://h:1/  \r\ncolour = blue\ntoken=abc\n", 0644);
    KT_CHECK(kjconf_load(&c, &err) == 0 && strcmp(c.url, "http://h:1/") == 0 &&
             strcmp(c.token, "abc") == 0 && c.loose, "blanks trimmed, unknown keys skipped, mode "
             "0644 noticed: '%s' '%s' %d", c.url, c.token, c.loose);
    write_text(path, "url = http://h\nthis is not a setting\n", 0600);
    kj_err_clear(&err);
    KT_CHECK(kjconf_load(&c, &err) == KJ_EINVAL && strstr(err.msg, "line 2") != NULL &&
             strstr(err.msg, path) != NULL, "a bad line is named: %s", err.msg);
    char *big = malloc(KJCONF_MAX_FILE + 10);
    memset(big, '#', KJCONF_MAX_FILE + 9);
    big[KJCONF_MAX_FILE + 9] = '\0';
    write_text(path, big, 0600);
    free(big);
    KT_CHECK(kjconf_load(&c, &err) == KJ_ELIMIT, "an oversized file is refused");
    write_text(path, "url = http://file\ntoken = from-file\n", 0600);
    setenv("KJUDGE_URL", "http://env", 1);
    setenv("KJUDGE_TOKEN", "", 1);
    KT_CHECK(kjconf_load(&c, &err) == 0, "load");
    kjconf_env(&c);
    KT_CHECK(strcmp(c.url, "http://env") == 0 && strcmp(c.url_from, "KJUDGE_URL") == 0 &&
             strcmp(c.token, "from-file") == 0 && strcmp(c.token_from, "config") == 0,
             "KJUDGE_URL overrides, an empty KJUDGE_TOKEN does not");
    setenv("KJUDGE_TOKEN", "from-env", 1);
    kjconf_env(&c);
    KT_CHECK(strcmp(c.token, "from-env") == 0 && strcmp(c.token_from, "KJUDGE_TOKEN") == 0,
             "KJUDGE_TOKEN overrides");
    unsetenv("KJUDGE_URL");
    unsetenv("KJUDGE_TOKEN");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/kjconf-test-XXXXXX");
    if (mkdtemp(root) == NULL) {
        KT_CHECK(0, "mkdtemp");
        return kt_done("test_kjconf");
    }
    KT_RUN(test_path());
    KT_RUN(test_save_load());
    KT_RUN(test_parse());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return kt_done("test_kjconf");
}
