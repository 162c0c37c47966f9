/*
 * kjc.h - what every `kjudge` command shares: the run's context, requests
 * to the server with their errors turned into messages, and the commands.
 *
 * main.c parses the global options, loads the config (kjconf.h) and calls
 * one cmd_* function; the commands call kjc_get/kjc_post/... (kjc.c),
 * which print a clear message for anything that is not a 2xx answer (and,
 * with --json, the server's JSON body) and return KJC_ERROR. Exit codes:
 * KJC_OK 0 (done; a submission accepted), KJC_FAILED 1 (a submission got
 * another verdict), KJC_ERROR 2 (usage, configuration, network or any
 * answer the server refused).
 */
#ifndef KJ_KJC_H
#define KJ_KJC_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include "curlc.h"
#include "kjconf.h"

#define KJC_OK 0
#define KJC_FAILED 1
#define KJC_ERROR 2

#define KJC_TIMEOUT_MS 120000L     /* one request (uploads included) */
#define KJC_STREAM_IDLE_MS 60000L  /* an event stream without a byte (the server pings every 15 s) */

struct kjc {
    struct kjconf conf;     /* the config file and environment */
    int json;               /* --json: print the server's JSON (control characters escaped) */
    int tty;                /* stdout is a terminal */
    int width;              /* its columns */
    int fit;                /* columns wide tables are cut to: the terminal's, or $COLUMNS; 0: none */
    FILE *out, *err;        /* borrowed: stdout and stderr */
    struct curlc *http;     /* owned (kjc_ready makes it); curlc_free in kjc_close */
};

/* A command: argc/argv after the command's name (argv[0] is the name). */
typedef int (*kjc_cmd)(struct kjc *k, int argc, char **argv);

/* Make sure a server URL (and, when need_token, a token) is configured and
 * the HTTP client exists. Prints what is missing and returns KJC_ERROR. */
int kjc_ready(struct kjc *k, int need_token);
void kjc_close(struct kjc *k);

/* Requests: KJC_OK with *out holding a 2xx answer (free with
 * curlc_resp_free), else the failure is reported and KJC_ERROR returned
 * (*out freed). */
int kjc_get(struct kjc *k, const char *path, struct curlc_resp *out);
int kjc_post_json(struct kjc *k, const char *path, const cJSON *body, struct curlc_resp *out);
int kjc_post_form(struct kjc *k, const char *path, const struct curlc_part *parts, int n,
                  struct curlc_resp *out);
/* Report a request that failed (rc != 0) or got a non-2xx answer. Returns KJC_ERROR. */
int kjc_report(struct kjc *k, int rc, const struct kj_err *err, const struct curlc_resp *r);

/* r's body as JSON (caller deletes it); reports and returns NULL when it is not. */
cJSON *kjc_json(struct kjc *k, const struct curlc_resp *r);
/* --json: write r's body unchanged but for control characters, escaped
 * (rend_json), plus a newline when it lacks one. */
void kjc_print_body(struct kjc *k, const struct curlc_resp *r);

/* "kjudge: " + message on stderr. Returns KJC_ERROR. */
int kjc_fail(struct kjc *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message and a pointer to the command's help. Returns KJC_ERROR. */
int kjc_usage(struct kjc *k, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Percent-encode s for a URL query value or path segment into buf. */
void kjc_urlenc(const char *s, char *buf, size_t bufsz);
/* 1 when s is a positive decimal id (what the server uses for submissions). */
int kjc_is_id(const char *s);
/* A string or number member of o as text ("" / "-" when absent); cleaned for a terminal. */
const char *kjc_str(const cJSON *o, const char *key, char *buf, size_t bufsz);

/* Option parsing for the commands: walks argv after the command name.
 * kjc_opt() returns the next option's name without dashes ("gpu" for
 * --gpu; a buffer overwritten by the next call) with its value in *val
 * when the option takes one, the next positional
 * argument as "" with *val set, or NULL at the end. Unknown options and
 * missing values are reported (usage) and *bad set. */
struct kjc_args {
    int argc, i;
    char **argv;
    const char *cmd;                  /* for messages */
    const char *const *with_value;    /* options that take a value (NULL-terminated) */
    const char *const *flags;         /* options without one */
    int bad;
};
const char *kjc_opt(struct kjc *k, struct kjc_args *a, const char **val);

/* Shared by submit, show and events (cmd_submit.c, cmd_read.c). */
struct prog;
/* Follow submission id's event stream into p until the job is done,
 * resuming with Last-Event-ID when the stream ends early. KJC_OK once
 * done, with *final holding GET /submissions/{id} (the caller frees it
 * with curlc_resp_free); else reported and KJC_ERROR. p may be NULL. */
int cmd_follow(struct kjc *k, const char *id, struct prog *p, struct curlc_resp *final);
/* Print a submission (the server's JSON) for a person: a summary line,
 * then its timing table or its failure's evidence; rank is the detail's
 * "rank" or NULL. */
void cmd_print_sub(struct kjc *k, const cJSON *sub, const cJSON *rank);

/* commands (cmd_*.c) */
int cmd_login(struct kjc *k, int argc, char **argv);
int cmd_whoami(struct kjc *k, int argc, char **argv);
int cmd_submit(struct kjc *k, int argc, char **argv);
int cmd_boards(struct kjc *k, int argc, char **argv);
int cmd_board(struct kjc *k, int argc, char **argv);
int cmd_template(struct kjc *k, int argc, char **argv);
int cmd_rankings(struct kjc *k, int argc, char **argv);
int cmd_submissions(struct kjc *k, int argc, char **argv);
int cmd_show(struct kjc *k, int argc, char **argv);
int cmd_artifact(struct kjc *k, int argc, char **argv);
/* cmd_boards.c: write n bytes of buf to a new file at path (replace it
 * only with force). */
int cmd_write_file(struct kjc *k, const char *path, const char *buf, size_t n, int force);
int cmd_events(struct kjc *k, int argc, char **argv);
int cmd_withdraw(struct kjc *k, int argc, char **argv);
int cmd_admin(struct kjc *k, int argc, char **argv);

#endif
