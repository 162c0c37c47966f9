/*
 * config.h - the server's configuration file (var/kjudge.conf by default).
 *
 * Lines "key = value"; '#' starts a comment. The only key is admin_token.
 * main.c calls config_admin_token() at `serve`: the token comes from the
 * environment (KJUDGE_ADMIN_TOKEN), else from the file, else a new one is
 * generated and appended to the file (mode 0600, folder created).
 */
#ifndef KJ_CONFIG_H
#define KJ_CONFIG_H

#include <stddef.h>
#include "kj_err.h"

#define CONFIG_MIN_TOKEN 16  /* shorter admin tokens are refused */
#define CONFIG_MAX_TOKEN 256

/* Where the token came from. */
enum config_source { CONFIG_FROM_ENV = 0, CONFIG_FROM_FILE, CONFIG_GENERATED };

/* Resolve the admin token into tok (size toksz > CONFIG_MAX_TOKEN). KJ_EINVAL
 * for a malformed file or token (the message names the file and line),
 * KJ_EIO when the file cannot be read or written. */
int config_admin_token(const char *path, char *tok, size_t toksz, enum config_source *from,
                    struct kj_err *err);

#endif
