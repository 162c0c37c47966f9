/*
 * kjconf.h - where the command-line client keeps the server URL and token.
 *
 * The file is $XDG_CONFIG_HOME/kjudge/config (or ~/.config/kjudge/config),
 * lines "url = ..." and "token = ...", '#' comments. `kjudge login` writes
 * it (kjconf_save: folder 0700, a fresh file 0600 renamed into place);
 * every other command reads it (kjconf_load), then KJUDGE_URL and
 * KJUDGE_TOKEN override what it says (kjconf_env). The token never goes
 * into a message.
 */
#ifndef KJ_KJCONF_H
#define KJ_KJCONF_H

#include <stddef.h>
#include "kj_err.h"

#define KJCONF_MAX_URL 1024
#define KJCONF_MAX_TOKEN 512
#define KJCONF_MAX_FILE (16 * 1024)

struct kjconf {
    char path[4096];               /* the config file's path ("" when none could be named) */
    int exists;                    /* the file was read */
    int loose;                     /* the file is readable or writable by group or others */
    char url[KJCONF_MAX_URL];      /* "" when not set */
    char token[KJCONF_MAX_TOKEN];  /* "" when not set */
    const char *url_from;          /* "config", "KJUDGE_URL" or NULL: where url came from */
    const char *token_from;        /* "config", "KJUDGE_TOKEN" or NULL */
};

/* The config file's path into buf from XDG_CONFIG_HOME, else HOME.
 * KJ_ENOTFOUND when neither is set (or relative). */
int kjconf_path(char *buf, size_t bufsz, struct kj_err *err);

/* Zero c, name its path and read it if it exists (a missing file is not an
 * error). KJ_EINVAL names the line of a malformed file; KJ_ELIMIT for a
 * file over KJCONF_MAX_FILE. */
int kjconf_load(struct kjconf *c, struct kj_err *err);

/* Apply KJUDGE_URL / KJUDGE_TOKEN when set and not empty. */
void kjconf_env(struct kjconf *c);

/* Write url and token to c->path: create its folder (0700) if needed,
 * write a new file with mode 0600 beside it, fsync and rename it over the
 * old one. The old file stays as it was on any failure. */
int kjconf_save(const struct kjconf *c, const char *url, const char *token, struct kj_err *err);

/* Wipe the token from memory. */
void kjconf_clear(struct kjconf *c);

#endif
