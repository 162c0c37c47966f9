/*
 * config.c - read and append to the server's configuration file.
 *
 * Called once by main.c at `serve` (config_admin_token, config_rate_limits,
 * config_http_limits, config_string). The token is never
 * logged; a generated one is written to the file before it is used, so a
 * restart finds the same token.
 */
#include "config.h"
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int valid_token(const char *t)
{
    size_t n = strlen(t);
    if (n < CONFIG_MIN_TOKEN || n > CONFIG_MAX_TOKEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
            return 0;
    return 1;
}

/* Keys whose value is kept as text for config_string(). */
static const char *const string_keys[] = {"tls_cert", "tls_key", "trusted_proxies",
                                          "metrics_allow", NULL};

/* What one read of the file collects: the token, the rate limits, the HTTP
 * limits and, when want is not NULL, the value of that string key. */
struct config_vals {
    char *tok;
    size_t toksz;
    int *limits;
    struct config_http *http;
    const char *want;
    char *val;
    size_t valsz;
};

int config_parse_rate(const char *text)
{
    char *end;
    long v;
    if (!isdigit((unsigned char)text[0]) || strlen(text) > 16)
        return -1;
    v = strtol(text, &end, 10);
    while (*end == ' ')
        end++;
    if ((*end != '\0' && strcmp(end, "/min") != 0) || v > CONFIG_MAX_RATE)
        return -1;
    return (int)v;
}

int config_parse_uint(const char *text, int max)
{
    long v = 0;
    size_t n = strlen(text);
    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)text[i]))
            return -1;
        v = v * 10 + (text[i] - '0');
    }
    return v <= max ? (int)v : -1;
}

/* max_conns_per_ip / header_timeout into h; 1 when key is neither. */
static int config_http_key(const char *path, int n, const char *key, const char *val,
                           struct config_http *h, struct kj_err *err)
{
    int *dst, max;
    if (strcmp(key, "max_conns_per_ip") == 0)
        dst = &h->max_conns_per_ip, max = CONFIG_MAX_CONNS_PER_IP;
    else if (strcmp(key, "header_timeout") == 0)
        dst = &h->header_timeout_s, max = CONFIG_MAX_HEADER_TIMEOUT;
    else
        return 1;
    if ((*dst = config_parse_uint(val, max)) < 0)
        return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: %s must be a whole number from 0 to %d "
                       "(0 = off)", path, n, key, max);
    return 0;
}

/* One "key = value" of the file into v. */
static int config_key(const char *path, int n, const char *key, const char *val,
                      struct config_vals *v, struct kj_err *err)
{
    int rc = config_http_key(path, n, key, val, v->http, err);
    if (rc != 1)
        return rc;
    for (int m = 0; m < KJ_MODE_COUNT; m++) {
        char name[40];
        snprintf(name, sizeof name, "rate_limit_%s", kj_mode_name((enum kj_mode)m));
        if (strcmp(key, name) != 0)
            continue;
        int r = config_parse_rate(val);
        if (r < 0)
            return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: %s must be \"N/min\" (0 to %d; 0 = "
                           "no limit)", path, n, name, CONFIG_MAX_RATE);
        v->limits[m] = r;
        return 0;
    }
    for (int k = 0; string_keys[k] != NULL; k++) {
        if (strcmp(key, string_keys[k]) != 0)
            continue;
        if (v->want == NULL || strcmp(v->want, key) != 0)
            return 0;
        if (strlen(val) >= v->valsz)
            return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: the value of %s is too long (at most "
                           "%zu bytes)", path, n, key, v->valsz - 1);
        memcpy(v->val, val, strlen(val) + 1);
        return 0;
    }
    if (strcmp(key, "admin_token") != 0)
        return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: unknown key '%.40s' (known: admin_token, "
                       "rate_limit_test, rate_limit_benchmark, rate_limit_leaderboard, "
                       "rate_limit_profile, rate_limit_sanitize, "
                       "max_conns_per_ip, header_timeout, tls_cert, tls_key, trusted_proxies, "
                       "metrics_allow)", path, n, key);
    if (!valid_token(val) || strlen(val) >= v->toksz)
        return KJ_FAIL(err, KJ_EINVAL, "%s: line %d: admin_token must be %d to %d printable "
                       "characters without spaces", path, n, CONFIG_MIN_TOKEN, CONFIG_MAX_TOKEN);
    memcpy(v->tok, val, strlen(val) + 1);
    return 0;
}

/* Read path into v: admin_token into v->tok ("" when absent), rate limits
 * into v->limits and HTTP limits into v->http (untouched when absent),
 * v->want's value into v->val ("" when absent). A missing file is not an
 * error. */
static int config_read(const char *path, struct config_vals *v, struct kj_err *err)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0, rc = 0;
    v->tok[0] = '\0';
    if (v->val != NULL)
        v->val[0] = '\0';
    if (f == NULL)
        return errno == ENOENT ? 0 : KJ_FAIL(err, KJ_EIO, "%s: %s", path, strerror(errno));
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        char *hash = strchr(line, '#'), *eq, *key;
        n++;
        if (hash != NULL)
            *hash = '\0';
        key = trim(line);
        if (*key == '\0')
            continue;
        if ((eq = strchr(key, '=')) == NULL) {
            rc = KJ_FAIL(err, KJ_EINVAL, "%s: line %d: expected \"key = value\"", path, n);
            break;
        }
        *eq = '\0';
        rc = config_key(path, n, trim(key), trim(eq + 1), v, err);
    }
    fclose(f);
    return rc;
}

int config_rate_limits(const char *path, int limits[KJ_MODE_COUNT], struct kj_err *err)
{
    char tok[CONFIG_MAX_TOKEN + 1];
    struct config_http http;
    struct config_vals v = {tok, sizeof tok, limits, &http, NULL, NULL, 0};
    int rc = config_read(path, &v, err);
    memset(tok, 0, sizeof tok);
    return rc;
}

int config_http_limits(const char *path, struct config_http *h, struct kj_err *err)
{
    char tok[CONFIG_MAX_TOKEN + 1];
    int limits[KJ_MODE_COUNT];
    struct config_vals v = {tok, sizeof tok, limits, h, NULL, NULL, 0};
    int rc = config_read(path, &v, err);
    memset(tok, 0, sizeof tok);
    return rc;
}

int config_string(const char *path, const char *key, char *out, size_t outsz,
                  struct kj_err *err)
{
    char tok[CONFIG_MAX_TOKEN + 1];
    int limits[KJ_MODE_COUNT];
    struct config_http http;
    struct config_vals v = {tok, sizeof tok, limits, &http, key, out, outsz};
    int rc;
    if (KJ_NEVER(outsz == 0))
        return KJ_FAIL(err, KJ_EINTERNAL, "no room for the value of %s", key);
    rc = config_read(path, &v, err);
    memset(tok, 0, sizeof tok);
    if (rc != 0)
        out[0] = '\0';
    return rc;
}

/* Append "admin_token = tok" to path, creating it (0600) and its folder. */
static int config_append(const char *path, const char *tok, struct kj_err *err)
{
    char dir[1024], text[CONFIG_MAX_TOKEN + 128];
    char *slash;
    int fd, len, rc = 0;
    snprintf(dir, sizeof dir, "%s", path);
    if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return KJ_FAIL(err, KJ_EIO, "cannot create folder %s: %s", dir, strerror(errno));
    }
    if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
        return KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", path, strerror(errno));
    len = snprintf(text, sizeof text, "# written by kjudge-server serve\nadmin_token = %s\n", tok);
    if (fchmod(fd, 0600) != 0 || write(fd, text, (size_t)len) != len || fsync(fd) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", path, strerror(errno));
    memset(text, 0, sizeof text);
    if (close(fd) != 0 && rc == 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

int config_admin_token(const char *path, char *tok, size_t toksz, enum config_source *from,
                    struct kj_err *err)
{
    const char *env = getenv("KJUDGE_ADMIN_TOKEN");
    struct stat st;
    int rc;
    if (env != NULL && env[0] != '\0') {
        if (!valid_token(env) || strlen(env) >= toksz)
            return KJ_FAIL(err, KJ_EINVAL, "KJUDGE_ADMIN_TOKEN must be %d to %d printable "
                           "characters without spaces", CONFIG_MIN_TOKEN, CONFIG_MAX_TOKEN);
        memcpy(tok, env, strlen(env) + 1);
        *from = CONFIG_FROM_ENV;
        return 0;
    }
    int limits[KJ_MODE_COUNT];
    struct config_http http;
    struct config_vals v = {tok, toksz, limits, &http, NULL, NULL, 0};
    if ((rc = config_read(path, &v, err)) != 0)
        return rc;
    if (tok[0] != '\0') {
        if (stat(path, &st) == 0 && (st.st_mode & 077) != 0)
            kj_log(KJ_LOG_WARN, "config", "%s holds the admin token but is readable by others "
                   "(chmod 600 it)", path);
        *from = CONFIG_FROM_FILE;
        return 0;
    }
    if (toksz < AUTH_TOKEN_HEX)
        return KJ_FAIL(err, KJ_EINTERNAL, "token buffer too small");
    if ((rc = auth_new_token(tok, err)) != 0 || (rc = config_append(path, tok, err)) != 0)
        return rc;
    *from = CONFIG_GENERATED;
    return 0;
}
