/*
 * cmd_login.c - `kjudge login URL [--token T | --invite CODE --name NAME]`
 * and `kjudge whoami`.
 *
 * main.c calls these. login checks the token with GET /api/v1/me (or
 * trades the invite for a new account with POST /api/v1/register) and
 * only then saves the URL and token (kjconf_save: mode 0600). Without
 * --token or --invite the token is read from standard input (not echoed
 * on a terminal), so it stays out of the shell's history. The token is
 * printed once, by `login --invite`, because nobody else has it.
 */
#include "kjc.h"

#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

/* Read one line (the token) from stdin; echo off on a terminal. */
static int read_token(struct kjc *k, char *buf, size_t bufsz)
{
    struct termios old, quiet;
    int tty = isatty(STDIN_FILENO), off = 0;
    size_t n;
    if (tty) {
        fputs("token: ", k->err);
        fflush(k->err);
        if (tcgetattr(STDIN_FILENO, &old) == 0) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            off = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
        }
    }
    char *got = fgets(buf, (int)bufsz, stdin);
    if (off)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    if (tty)
        fputc('\n', k->err);
    if (got == NULL)
        return kjc_usage(k, "login", "no token given (--token T, --invite CODE --name NAME, or "
                         "the token on standard input)");
    n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    if (n == 0)
        return kjc_usage(k, "login", "the token read from standard input is empty");
    return KJC_OK;
}

/* Check the token (GET /me); *name and *role get who it is. */
static int check_token(struct kjc *k, char *name, size_t namesz, char *role, size_t rolesz)
{
    struct curlc_resp r;
    cJSON *j;
    if (kjc_get(k, "/api/v1/me", &r) != KJC_OK)
        return KJC_ERROR;
    if ((j = kjc_json(k, &r)) == NULL) {
        curlc_resp_free(&r);
        return KJC_ERROR;
    }
    if (k->json)
        kjc_print_body(k, &r);
    kjc_str(j, "name", name, namesz);
    kjc_str(j, "role", role, rolesz);
    cJSON_Delete(j);
    curlc_resp_free(&r);
    return KJC_OK;
}

/* Trade the invite for an account; the new token into k->conf.token. */
static int redeem(struct kjc *k, const char *invite, const char *name)
{
    struct curlc_resp r;
    cJSON *body = cJSON_CreateObject(), *j;
    char token[KJCONF_MAX_TOKEN];
    int rc;
    cJSON_AddStringToObject(body, "name", name);
    cJSON_AddStringToObject(body, "invite", invite);
    rc = kjc_post_json(k, "/api/v1/register", body, &r);
    cJSON_Delete(body);
    if (rc != KJC_OK)
        return rc;
    if ((j = kjc_json(k, &r)) == NULL) {
        curlc_resp_free(&r);
        return KJC_ERROR;
    }
    kjc_str(j, "token", token, sizeof token);
    if (k->json)
        kjc_print_body(k, &r);
    cJSON_Delete(j);
    curlc_resp_free(&r);
    if (token[0] == '\0')
        return kjc_fail(k, "the server's answer has no token");
    snprintf(k->conf.token, sizeof k->conf.token, "%s", token);
    memset(token, 0, sizeof token);
    return KJC_OK;
}

struct login_opts {
    const char *url, *token, *invite, *name;
};

static int login_args(struct kjc *k, int argc, char **argv, struct login_opts *o)
{
    static const char *const with_value[] = {"token", "invite", "name", NULL};
    struct kjc_args a = {argc, 1, argv, "login", with_value, NULL, 0};
    const char *opt, *val;
    memset(o, 0, sizeof *o);
    while ((opt = kjc_opt(k, &a, &val)) != NULL) {
        if (opt[0] == '\0' && o->url == NULL)
            o->url = val;
        else if (opt[0] == '\0')
            return kjc_usage(k, "login", "unexpected '%.64s'", val);
        else if (strcmp(opt, "token") == 0)
            o->token = val;
        else if (strcmp(opt, "invite") == 0)
            o->invite = val;
        else
            o->name = val;
    }
    if (a.bad)
        return KJC_ERROR;
    if (o->url == NULL)
        return kjc_usage(k, "login", "name the server: kjudge login https://HOST --token TOKEN");
    if (o->token != NULL && o->invite != NULL)
        return kjc_usage(k, "login", "--token and --invite do not go together");
    if ((o->invite == NULL) != (o->name == NULL))
        return kjc_usage(k, "login", "--invite CODE and --name NAME go together");
    if (strlen(o->url) >= sizeof k->conf.url ||
        (o->token != NULL && strlen(o->token) >= sizeof k->conf.token))
        return kjc_usage(k, "login", "the URL or token is too long");
    return KJC_OK;
}

int cmd_login(struct kjc *k, int argc, char **argv)
{
    struct login_opts o;
    char name[72] = "", role[24] = "", url[KJCONF_MAX_URL];
    struct kj_err err;
    int rc;
    if ((rc = login_args(k, argc, argv, &o)) != KJC_OK)
        return rc;
    snprintf(url, sizeof url, "%s", o.url);
    for (size_t n = strlen(url); n > 0 && url[n - 1] == '/'; n--)
        url[n - 1] = '\0';
    snprintf(k->conf.url, sizeof k->conf.url, "%s", url);
    k->conf.url_from = "the command line";
    k->conf.token_from = "the command line";
    k->conf.token[0] = '\0';
    if (o.token != NULL)
        snprintf(k->conf.token, sizeof k->conf.token, "%s", o.token);
    else if (o.invite == NULL && (rc = read_token(k, k->conf.token, sizeof k->conf.token)) != KJC_OK)
        return rc;
    if ((rc = kjc_ready(k, o.invite == NULL)) != KJC_OK)
        return rc;
    if (o.invite != NULL) {
        if ((rc = redeem(k, o.invite, o.name)) != KJC_OK)
            return rc;
        snprintf(name, sizeof name, "%s", o.name);
        snprintf(role, sizeof role, "user");
    } else if ((rc = check_token(k, name, sizeof name, role, sizeof role)) != KJC_OK) {
        return rc;
    }
    kj_err_clear(&err);
    if (kjconf_save(&k->conf, url, k->conf.token, &err) != 0)
        return kjc_fail(k, "the login worked but it could not be saved: %s", err.msg);
    if (!k->json) {
        fprintf(k->out, "logged in to %s as %s (%s); saved in %s\n", url, name, role, k->conf.path);
        if (o.invite != NULL)
            fprintf(k->out, "your token, shown this once (keep it to log in elsewhere): %s\n",
                    k->conf.token);
    }
    if (getenv("KJUDGE_URL") != NULL || getenv("KJUDGE_TOKEN") != NULL)
        fprintf(k->err, "kjudge: note: KJUDGE_URL or KJUDGE_TOKEN is set and overrides what "
                "was saved\n");
    return KJC_OK;
}

int cmd_whoami(struct kjc *k, int argc, char **argv)
{
    char name[72], role[24];
    int rc;
    (void)argv;
    if (argc > 1)
        return kjc_usage(k, "whoami", "takes no arguments");
    if ((rc = kjc_ready(k, 1)) != KJC_OK || (rc = check_token(k, name, sizeof name, role,
                                                              sizeof role)) != KJC_OK)
        return rc;
    if (!k->json)
        fprintf(k->out, "%s (%s) at %s\n", name, role, k->conf.url);
    return KJC_OK;
}
