/*
 * config.h - the server's configuration file (var/kjudge.conf by default).
 *
 * Lines "key = value"; '#' starts a comment. Keys: admin_token and
 * rate_limit_test, rate_limit_benchmark, rate_limit_leaderboard ("N/min"
 * or "N": submissions per user per minute; 0 = no limit), the HTTP
 * limits max_conns_per_ip (connections from one address at once; 0 = no
 * limit) and header_timeout (seconds to send a request's head; 0 = none);
 * tls_cert and tls_key (PEM files, as serve --tls-cert/--tls-key);
 * trusted_proxies and metrics_allow (address lists, netacl.h).
 * main.c calls config_admin_token(), config_rate_limits(),
 * config_http_limits() and config_string() at `serve`:
 * the token comes from the environment (KJUDGE_ADMIN_TOKEN), else from the
 * file, else a new one is generated and appended to the file (mode 0600,
 * folder created).
 */
#ifndef KJ_CONFIG_H
#define KJ_CONFIG_H

#include <stddef.h>
#include "kj_err.h"
#include "protocol.h"

#define CONFIG_MIN_TOKEN 16  /* shorter admin tokens are refused */
#define CONFIG_MAX_TOKEN 256

#define CONFIG_MAX_RATE 100000 /* submissions per minute */
#define CONFIG_MAX_CONNS_PER_IP 100000
#define CONFIG_MAX_HEADER_TIMEOUT 3600 /* seconds */

/* The HTTP limits of the file; -1 = not in the file. */
struct config_http {
    int max_conns_per_ip;
    int header_timeout_s;
};

/* Where the token came from. */
enum config_source { CONFIG_FROM_ENV = 0, CONFIG_FROM_FILE, CONFIG_GENERATED };

/* Resolve the admin token into tok (size toksz > CONFIG_MAX_TOKEN). KJ_EINVAL
 * for a malformed file or token (the message names the file and line),
 * KJ_EIO when the file cannot be read or written. */
int config_admin_token(const char *path, char *tok, size_t toksz, enum config_source *from,
                    struct kj_err *err);

/* Overwrite limits[mode] with the file's rate_limit_<mode> values, when
 * present (a missing file changes nothing). KJ_EINVAL names file and line. */
/* limits is indexed by enum kj_mode (protocol.h): submissions per user per
 * minute, 0 = none. */
int config_rate_limits(const char *path, int limits[KJ_MODE_COUNT], struct kj_err *err);

/* Overwrite h's fields with the file's max_conns_per_ip and header_timeout,
 * when present (a missing file changes nothing). KJ_EINVAL names file and line. */
int config_http_limits(const char *path, struct config_http *h, struct kj_err *err);

/* A whole number in [0, max] (at most 9 digits); -1 when malformed. */
int config_parse_uint(const char *text, int max);

/* The value of key (one of the string keys above) into out (size outsz):
 * the file's last line for it, "" when absent (or no file). KJ_EINVAL for a
 * malformed file or a value of outsz bytes or more, naming file and line. */
int config_string(const char *path, const char *key, char *out, size_t outsz,
                  struct kj_err *err);

/* Parse "N" or "N/min" (0 <= N <= CONFIG_MAX_RATE); -1 when malformed. */
int config_parse_rate(const char *text);

#endif
