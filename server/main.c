/*
 * main.c - kjudge-server's command line: serve, user add, runner add,
 * runner bind, backup, restore.
 *
 *   kjudge-server serve [--port 8080] [--bind 127.0.0.1] [--db var/kjudge.db]
 *                       [--leaderboards leaderboards] [--web web]
 *                       [--vendor /usr/share/javascript]
 *                       [--config var/kjudge.conf] [--openapi PATH]
 *                       [--lease-seconds 120] [--rate-limit-test 30/min]
 *                       [--rate-limit-benchmark 10/min] [--rate-limit-leaderboard 5/min]
 *                       [--rate-limit-profile 2/min] [--rate-limit-sanitize 2/min]
 *                       [--max-waiters 512] [--max-waiters-per-user 8]
 *                       [--max-claim-waiters 256] [--max-claims-per-runner 16]
 *                       [--runner-names 8]
 *                       [--max-conns-per-ip 256] [--header-timeout 20]
 *                       [--tls-cert FILE --tls-key FILE] [--queue-rule fair|fifo|fair-prev]
 *   kjudge-server user add NAME [--admin] [--db var/kjudge.db]
 *   kjudge-server runner add NAME --gpu TYPE[,TYPE...] [--db var/kjudge.db]
 *   kjudge-server runner bind NAME --gpu TYPE[,TYPE...] [--db var/kjudge.db]
 *   kjudge-server backup FILE [--db var/kjudge.db]
 *   kjudge-server restore FILE [--db var/kjudge.db]
 *   kjudge-server --help
 *
 * `serve` reads the TLS files and the address lists (config.h, netacl.h,
 * tls.h), opens what it keeps (service.c: the database under its serve
 * lock, renewing the lease of every running job, and every leaderboard
 * with its public bodies), resolves the admin token, the rate limits and
 * the HTTP limits, starts the wait notifier, the lease sweeper, the
 * connection guard and the HTTP daemon (service.c again), then sleeps in
 * sigwait() until SIGINT or SIGTERM and shuts down in reverse order.
 * `user add` / `runner add` print
 * a new bearer token (only the token, one line) on stdout; they work while
 * the server runs (SQLite WAL + busy_timeout). A runner token claims only
 * the GPU types it is bound to (`--gpu`, common/gputype.h); `runner bind`
 * sets them for an existing runner (tokens made before binding have none).
 * `backup` works while the server runs (db_backup.c); `restore` refuses
 * while a server holds the database.
 *
 * Exit codes: 0 success; 1 usage or configuration error (unknown option,
 * bad leaderboard or config file, bad token, name already taken, cannot
 * create a folder or listen on the port, unreadable or mismatched TLS
 * files, a backup that fails its checks, a server holding the database);
 * 2 internal error (database, OpenSSL, out of memory, a bug).
 */
#include "api.h"
#include "auth.h"
#include "config.h"
#include "db.h"
#include "gputype.h"
#include "netacl.h"
#include "server.h"
#include "service.h"
#include "tls.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_INTERNAL = 2 };

static const char usage_text[] =
    "usage:\n"
    "  kjudge-server serve [--port 8080] [--bind 127.0.0.1] [--db var/kjudge.db]\n"
    "                      [--leaderboards leaderboards] [--web web]\n"
    "                      [--vendor /usr/share/javascript]\n"
    "                      [--config var/kjudge.conf] [--openapi server/openapi.json]\n"
    "                      [--lease-seconds 120] [--rate-limit-test 30/min]\n"
    "                      [--rate-limit-benchmark 10/min] [--rate-limit-leaderboard 5/min]\n"
    "                      [--rate-limit-profile 2/min] [--rate-limit-sanitize 2/min]\n"
    "                      [--max-waiters 512] [--max-waiters-per-user 8]\n"
    "                      [--max-claim-waiters 256] [--max-claims-per-runner 16]\n"
    "                      [--runner-names 8]\n"
    "                      [--max-conns-per-ip 256] [--header-timeout 20]\n"
    "                      [--tls-cert FILE --tls-key FILE] [--queue-rule fair|fifo|fair-prev]\n"
    "  kjudge-server user add NAME [--admin] [--db var/kjudge.db]\n"
    "  kjudge-server runner add NAME --gpu TYPE[,TYPE...] [--db var/kjudge.db]\n"
    "  kjudge-server runner bind NAME --gpu TYPE[,TYPE...] [--db var/kjudge.db]\n"
    "  kjudge-server backup FILE [--force] [--db var/kjudge.db]\n"
    "  kjudge-server restore FILE [--db var/kjudge.db]\n"
    "  kjudge-server --help | -h   (also after any command)\n"
    "\n"
    "serve: the admin token comes from $KJUDGE_ADMIN_TOKEN, else from\n"
    "\"admin_token = ...\" in the config file, else a new one is generated,\n"
    "saved there (mode 0600) and printed once on stdout.\n"
    "--lease-seconds: a runner that sends nothing about a claimed job for this\n"
    "long loses it; the job is queued again (at most 3 attempts).\n"
    "--rate-limit-MODE: submissions per user per minute in that mode (0 = no\n"
    "limit; admins have none); else rate_limit_MODE in the config file.\n"
    "--max-waiters: ?wait=1 requests and event streams open at once, in all;\n"
    "--max-waiters-per-user: of them per user (admins: only the total).\n"
    "--max-claim-waiters: runners' long-poll claims parked at once, in all\n"
    "(apart from the waiters); --max-claims-per-runner: of them per runner token.\n"
    "--runner-names: runner names one runner token may report besides its own\n"
    "(the NAME of runner add); a further name is refused.\n"
    "--max-conns-per-ip: connections one address may hold at once; more are\n"
    "closed at once (0 = no limit; set 0 behind a reverse proxy, where every\n"
    "client has the proxy's address); else max_conns_per_ip in the config file.\n"
    "--header-timeout: seconds a client has to send a request's line and\n"
    "headers (also the longest idle time between kept-alive requests), and the\n"
    "grace before its body must arrive at 1 KiB/s at least; 0 = no deadline;\n"
    "else header_timeout in the config file.\n"
    "--vendor: the folder of Debian's JavaScript libraries (libjs-highlight.js,\n"
    "libjs-chart.js, libjs-marked, libjs-katex, libjs-codemirror) served under\n"
    "/static/vendor/; the pages work without them, plainer.\n"
    "--tls-cert/--tls-key: serve HTTPS with this PEM certificate (chain) and\n"
    "key; else tls_cert/tls_key in the config file; else plain HTTP.\n"
    "--queue-rule: which queued job a runner gets next. fair (default): the\n"
    "oldest job of the user with the least GPU time in the last minutes\n"
    "(half-life 10 min), and never more than 3 test jobs in a row while a\n"
    "benchmark or leaderboard job waits, nor the reverse, and one profile or\n"
    "sanitize job per user at a time; fifo: the oldest job; fair-prev: fair\n"
    "without the one tool job per user (for comparison).\n"
    "config trusted_proxies = ADDR[/BITS], ...: X-Forwarded-For from these\n"
    "peers names the client; metrics_allow = ...: may GET /metrics without\n"
    "an admin token.\n"
    "backup: a consistent copy of the database, also while serve runs; an\n"
    "existing FILE is left as it is (exit 1) unless --force replaces it.\n"
    "restore: checks FILE, then replaces the database (the old one is kept as\n"
    "DB.before-restore); refused while a server uses it.\n"
    "user add / runner add: print a new bearer token on stdout.\n"
    "runner add / bind --gpu: the GPU types (as the leaderboards name them, e.g.\n"
    "H200 or H200,B200) whose jobs the runner token may claim; runner bind sets\n"
    "them for an existing runner token (one made before tokens were bound).\n"
    "exit codes: 0 ok, 1 usage or configuration error, 2 internal error.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "kjudge-server: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return EXIT_USAGE;
}

/* Exit code for a failure of ours or of the configuration. */
static int exit_for(int code)
{
    switch (code) {
    case KJ_EINVAL: case KJ_ENOTFOUND: case KJ_EIO: case KJ_ELIMIT: case KJ_ECONFLICT:
        return EXIT_USAGE;
    default:
        return EXIT_INTERNAL;
    }
}

static int fail(const struct kj_err *err)
{
    kj_log(KJ_LOG_ERROR, "main", "%s (%s at %s:%d)", err->msg, kj_code_name(err->code),
           err->file != NULL ? err->file : "?", err->src_line);
    return exit_for(err->code);
}

/* Copy the value of option argv[*i] into dst; returns 0 or prints usage. */
static int opt_value(int argc, char **argv, int *i, char *dst, size_t dstsz)
{
    if (*i + 1 >= argc || strlen(argv[*i + 1]) >= dstsz)
        return usage_error("%s needs a value", argv[*i]);
    snprintf(dst, dstsz, "%s", argv[++*i]);
    return 0;
}

/* ------------------------------------------------------------------ */
/* user add / runner add                                               */
/* ------------------------------------------------------------------ */

/* The options of user add, runner add and runner bind. */
struct add_opts {
    char db_path[PATH_MAX];
    const char *name;
    const char *role;                /* "user", "admin" or "runner" */
    char gpus[GPUTYPE_LIST_BYTES];   /* runner add / bind: "H200,B200" */
};

/* argv = {"user"|"runner", "add"|"bind", ...} into o; 0 or a usage exit code. */
static int parse_add(int argc, char **argv, int runner, int bind, struct add_opts *o)
{
    char gpus[GPUTYPE_LIST_BYTES] = "";
    struct kj_err err;
    snprintf(o->db_path, sizeof o->db_path, "var/kjudge.db");
    o->role = runner ? "runner" : "user";
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0) {
            if (opt_value(argc, argv, &i, o->db_path, sizeof o->db_path) != 0)
                return EXIT_USAGE;
        } else if (strcmp(argv[i], "--gpu") == 0 && runner) {
            if (opt_value(argc, argv, &i, gpus, sizeof gpus) != 0)
                return EXIT_USAGE;
        } else if (strcmp(argv[i], "--admin") == 0 && !runner) {
            o->role = "admin";
        } else if (argv[i][0] == '-' || o->name != NULL) {
            return usage_error("unexpected argument '%s'", argv[i]);
        } else {
            o->name = argv[i];
        }
    }
    if (o->name == NULL || !srv_valid_name(o->name))
        return usage_error("NAME must be 1-32 characters of [a-z0-9_.-], starting with a letter "
                           "or digit%s", "");
    if (strcmp(o->name, "admin") == 0 && !bind)
        return usage_error("the name '%s' is reserved for the configured admin token", o->name);
    kj_err_clear(&err);
    if (runner && gputype_list_parse(gpus, o->gpus, sizeof o->gpus, &err) != KJ_OK)
        return usage_error("--gpu: %s", err.msg);
    return 0;
}

/* kjudge-server user add NAME [--admin] [--db PATH];
 * kjudge-server runner add NAME --gpu TYPES [--db PATH];
 * kjudge-server runner bind NAME --gpu TYPES [--db PATH] */
static int cmd_add(int argc, char **argv, int runner)
{
    char token[AUTH_TOKEN_HEX], hash[DB_HASH_HEX];
    struct add_opts o;
    struct db *db = NULL;
    struct kj_err err;
    int bind = runner && argc >= 2 && strcmp(argv[1], "bind") == 0, rc;

    memset(&o, 0, sizeof o);
    if (argc < 3 || (strcmp(argv[1], "add") != 0 && !bind))
        return usage_error(runner ? "expected '%s add|bind NAME --gpu TYPE[,TYPE...]'"
                                  : "expected '%s add NAME'", argv[0]);
    if ((rc = parse_add(argc, argv, runner, bind, &o)) != 0)
        return rc;
    kj_err_clear(&err);
    if ((rc = db_open(o.db_path, &db, &err)) != 0) {
        db_close(db);
        return fail(&err);
    }
    if (bind) {
        rc = db_runner_bind(db, o.name, o.gpus, &err);
        db_close(db);
        if (rc != 0)
            return fail(&err);
        kj_log(KJ_LOG_INFO, "main", "bound runner name=%s gpus=%s db=%s", o.name, o.gpus,
               o.db_path);
        return EXIT_OK;
    }
    if ((rc = auth_new_token(token, &err)) == 0 &&
        (rc = auth_sha256_hex(token, strlen(token), hash, &err)) == 0)
        rc = runner ? db_runner_add(db, o.name, hash, o.gpus, &err)
                    : db_user_add(db, o.name, o.role, hash, NULL, &err);
    db_close(db);
    if (rc != 0)
        return fail(&err);
    kj_log(KJ_LOG_INFO, "main", "created %s name=%s%s%s db=%s", o.role, o.name,
           runner ? " gpus=" : "", runner ? o.gpus : "", o.db_path);
    printf("%s\n", token);
    memset(token, 0, sizeof token);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_INTERNAL;
}

/* ------------------------------------------------------------------ */
/* serve                                                               */
/* ------------------------------------------------------------------ */

/* server/openapi.json next to the binary's bin/ folder, else relative to the cwd. */
static void default_openapi(char *out, size_t outsz)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 2 && (slash = strrchr(exe, '/')) != NULL; up++)
            *slash = '\0';
        if ((size_t)snprintf(out, outsz, "%s/server/openapi.json", exe) < outsz &&
            access(out, R_OK) == 0)
            return;
    }
    snprintf(out, outsz, "server/openapi.json");
}

/* A whole number in [lo, hi] from text; -1 when it is not one. */
static long parse_range(const char *text, long lo, long hi)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    return v;
}

/* --max-claim-waiters, --max-claims-per-runner or --runner-names VALUE
 * into srv. Returns 0, 1 when o is none of them, or a usage exit code. */
static int opt_runner_limit(int argc, char **argv, int *i, struct server *srv)
{
    const struct { const char *name; int *to; long max; } opts[] = {
        {"--max-claim-waiters", &srv->max_claims, KJ_HTTP_CONN_LIMIT},
        {"--max-claims-per-runner", &srv->max_claims_runner, KJ_HTTP_CONN_LIMIT},
        {"--runner-names", &srv->runner_names, KJ_RUNNER_NAMES_MAX},
    };
    char val[16];
    long v;
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        if (strcmp(argv[*i], opts[k].name) != 0)
            continue;
        if (opt_value(argc, argv, i, val, sizeof val) != 0)
            return EXIT_USAGE;
        if ((v = parse_range(val, 1, opts[k].max)) < 0) {
            char what[64];
            snprintf(what, sizeof what, "%s '%.15s'", opts[k].name, val);
            return usage_error(opts[k].max == KJ_RUNNER_NAMES_MAX ?
                               "%s is not a whole number from 1 to 1024" :
                               "%s is not a whole number from 1 to the connection limit (4096)",
                               what);
        }
        *opts[k].to = (int)v;
        return 0;
    }
    return 1;
}

/* --rate-limit-MODE VALUE into rates[MODE] (-2 = not given). Returns 0,
 * 1 when o is not such an option, or a usage exit code. */
static int opt_rate(int argc, char **argv, int *i, int *rates)
{
    char val[32];
    for (int m = 0; m < KJ_MODE_COUNT; m++) {
        char name[40];
        snprintf(name, sizeof name, "--rate-limit-%s", kj_mode_name((enum kj_mode)m));
        if (strcmp(argv[*i], name) != 0)
            continue;
        if (opt_value(argc, argv, i, val, sizeof val) != 0)
            return EXIT_USAGE;
        if ((rates[m] = config_parse_rate(val)) < 0)
            return usage_error("%s must be N or N/min (0 = no limit)", name);
        return 0;
    }
    return 1;
}

static int parse_serve(int argc, char **argv, struct server *srv)
{
    char port[16] = "8080", lease[16] = "", waiters[16] = "", per_user[16] = "", perip[16] = "",
         htime[16] = "", rule[16] = "fair";
    srv->max_claims = KJ_MAX_CLAIM_WAITERS;
    srv->max_claims_runner = KJ_MAX_CLAIMS_PER_RUNNER;
    srv->runner_names = KJ_RUNNER_NAMES;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int rc;
        if (strcmp(o, "--port") == 0)
            rc = opt_value(argc, argv, &i, port, sizeof port);
        else if (strcmp(o, "--bind") == 0)
            rc = opt_value(argc, argv, &i, srv->bind, sizeof srv->bind);
        else if (strcmp(o, "--db") == 0)
            rc = opt_value(argc, argv, &i, srv->db_path, sizeof srv->db_path);
        else if (strcmp(o, "--leaderboards") == 0)
            rc = opt_value(argc, argv, &i, srv->boards_dir, sizeof srv->boards_dir);
        else if (strcmp(o, "--web") == 0)
            rc = opt_value(argc, argv, &i, srv->web_dir, sizeof srv->web_dir);
        else if (strcmp(o, "--vendor") == 0)
            rc = opt_value(argc, argv, &i, srv->vendor_dir, sizeof srv->vendor_dir);
        else if (strcmp(o, "--config") == 0)
            rc = opt_value(argc, argv, &i, srv->config_path, sizeof srv->config_path);
        else if (strcmp(o, "--openapi") == 0)
            rc = opt_value(argc, argv, &i, srv->openapi_path, sizeof srv->openapi_path);
        else if (strcmp(o, "--lease-seconds") == 0)
            rc = opt_value(argc, argv, &i, lease, sizeof lease);
        else if (strcmp(o, "--max-waiters") == 0)
            rc = opt_value(argc, argv, &i, waiters, sizeof waiters);
        else if (strcmp(o, "--max-waiters-per-user") == 0)
            rc = opt_value(argc, argv, &i, per_user, sizeof per_user);
        else if (strcmp(o, "--max-conns-per-ip") == 0)
            rc = opt_value(argc, argv, &i, perip, sizeof perip);
        else if (strcmp(o, "--header-timeout") == 0)
            rc = opt_value(argc, argv, &i, htime, sizeof htime);
        else if (strcmp(o, "--tls-cert") == 0)
            rc = opt_value(argc, argv, &i, srv->tls_cert, sizeof srv->tls_cert);
        else if (strcmp(o, "--tls-key") == 0)
            rc = opt_value(argc, argv, &i, srv->tls_key, sizeof srv->tls_key);
        else if (strcmp(o, "--queue-rule") == 0)
            rc = opt_value(argc, argv, &i, rule, sizeof rule);
        else if ((rc = opt_rate(argc, argv, &i, srv->rate_limits)) == 1 &&
                 (rc = opt_runner_limit(argc, argv, &i, srv)) == 1)
            return usage_error("unknown option '%s'", o);
        if (rc != 0)
            return rc;
    }
    long p = parse_range(port, 1, 65535), l = parse_range(lease, 1, KJ_LEASE_MAX_S);
    long mw = parse_range(waiters, 1, KJ_HTTP_CONN_LIMIT);
    long mu = parse_range(per_user, 1, KJ_HTTP_CONN_LIMIT);
    if (p < 0)
        return usage_error("--port '%s' is not a port number (1-65535)", port);
    if (lease[0] != '\0' && l < 0)
        return usage_error("--lease-seconds '%s' is not a whole number of seconds (1-86400)",
                           lease);
    if ((waiters[0] != '\0' && mw < 0) || (per_user[0] != '\0' && mu < 0))
        return usage_error("--max-waiters and --max-waiters-per-user take a whole number from 1 to "
                           "the connection limit (4096)%s", "");
    if (queue_rule_parse(rule, &srv->queue_rule) != 0)
        return usage_error("--queue-rule '%s' is not fair, fifo or fair-prev", rule);
    srv->port = (int)p;
    srv->lease_s = lease[0] != '\0' ? (int)l : KJ_LEASE_DEFAULT_S;
    srv->max_waiters = waiters[0] != '\0' ? (int)mw : KJ_MAX_WAITERS;
    srv->max_waiters_user = per_user[0] != '\0' ? (int)mu : KJ_MAX_WAITERS_PER_USER;
    if (perip[0] != '\0' &&
        (srv->max_conns_per_ip = config_parse_uint(perip, CONFIG_MAX_CONNS_PER_IP)) < 0)
        return usage_error("--max-conns-per-ip '%s' is not a whole number (0 = no limit)", perip);
    if (htime[0] != '\0' &&
        (srv->header_timeout_s = config_parse_uint(htime, CONFIG_MAX_HEADER_TIMEOUT)) < 0)
        return usage_error("--header-timeout '%s' is not a whole number of seconds (0-3600)",
                           htime);
    return 0;
}

/* HTTP limits: serve flags, else the config file, else the defaults. Also
 * raises the open-file limit so that conn_limit connections fit. */
static int setup_http_limits(struct server *srv, struct kj_err *err)
{
    struct config_http h = {-1, -1};
    struct rlimit rl;
    rlim_t want = KJ_HTTP_CONN_LIMIT + 256;
    int rc = config_http_limits(srv->config_path, &h, err);
    if (rc != 0)
        return rc;
    if (srv->max_conns_per_ip < 0)
        srv->max_conns_per_ip = h.max_conns_per_ip >= 0 ? h.max_conns_per_ip : KJ_HTTP_PER_IP_DEFAULT;
    if (srv->header_timeout_s < 0)
        srv->header_timeout_s = h.header_timeout_s >= 0 ? h.header_timeout_s : KJ_HTTP_HEADER_TIMEOUT_S;
    srv->conn_limit = KJ_HTTP_CONN_LIMIT;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < want) /* sockets, the database, log files: keep 256 spare */
            srv->conn_limit = rl.rlim_cur > 512 ? (unsigned)(rl.rlim_cur - 256) : 256;
    }
    kj_log(KJ_LOG_INFO, "main", "http limits connections=%u per_ip=%d header_timeout_s=%d",
           srv->conn_limit, srv->max_conns_per_ip, srv->header_timeout_s);
    return 0;
}

/* Rate limits: serve flags, else the config file, else the defaults. */
static int setup_rates(struct server *srv, struct kj_err *err)
{
    int file[KJ_MODE_COUNT] = {KJ_RATE_DEFAULT_TEST, KJ_RATE_DEFAULT_BENCHMARK,
                               KJ_RATE_DEFAULT_LEADERBOARD, KJ_RATE_DEFAULT_PROFILE,
                               KJ_RATE_DEFAULT_SANITIZE};
    int rc = config_rate_limits(srv->config_path, file, err);
    for (int m = 0; rc == 0 && m < KJ_MODE_COUNT; m++)
        if (srv->rate_limits[m] < 0)
            srv->rate_limits[m] = file[m];
    if (rc == 0)
        kj_log(KJ_LOG_INFO, "main", "rate limits per minute test=%d benchmark=%d leaderboard=%d "
               "profile=%d sanitize=%d", srv->rate_limits[0], srv->rate_limits[1],
               srv->rate_limits[2], srv->rate_limits[3], srv->rate_limits[4]);
    return rc;
}

/* Admin token -> the "admin" user row; prints a freshly generated token once. */
static int setup_admin(struct server *srv, struct kj_err *err)
{
    char token[CONFIG_MAX_TOKEN + 1], hash[DB_HASH_HEX];
    enum config_source from;
    int rc;
    if ((rc = config_admin_token(srv->config_path, token, sizeof token, &from, err)) != 0)
        return rc;
    rc = auth_sha256_hex(token, strlen(token), hash, err);
    if (rc == 0 && (rc = db_user_set_admin(srv->db, hash, err)) == 0 && from == CONFIG_GENERATED) {
        kj_log(KJ_LOG_INFO, "main", "generated an admin token, saved in %s", srv->config_path);
        printf("%s\n", token);
        fflush(stdout);
    } else if (rc == 0) {
        kj_log(KJ_LOG_INFO, "main", "admin token from %s",
               from == CONFIG_FROM_ENV ? "KJUDGE_ADMIN_TOKEN" : srv->config_path);
    }
    memset(token, 0, sizeof token);
    return rc;
}

/* One address list of the config file into out; errors name the key. */
static int setup_acl(struct server *srv, const char *key, struct netacl *out, struct kj_err *err)
{
    char text[4096];
    int rc = config_string(srv->config_path, key, text, sizeof text, err);
    if (rc == 0 && (rc = netacl_parse(text, out, err)) != 0) {
        char msg[KJ_ERR_MSG];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return KJ_FAIL(err, KJ_EINVAL, "%s: %s: %s", srv->config_path, key, msg);
    }
    if (rc == 0 && out->n > 0)
        kj_log(KJ_LOG_INFO, "main", "%s: %d networks", key, out->n);
    return rc;
}

/* TLS files (flags, else the config file) and the address lists. */
static int setup_net(struct server *srv, struct kj_err *err)
{
    int rc;
    if (srv->tls_cert[0] == '\0' &&
        (rc = config_string(srv->config_path, "tls_cert", srv->tls_cert, sizeof srv->tls_cert,
                            err)) != 0)
        return rc;
    if (srv->tls_key[0] == '\0' &&
        (rc = config_string(srv->config_path, "tls_key", srv->tls_key, sizeof srv->tls_key,
                            err)) != 0)
        return rc;
    if ((srv->tls_cert[0] == '\0') != (srv->tls_key[0] == '\0'))
        return KJ_FAIL(err, KJ_EINVAL, "HTTPS needs both a certificate and a key "
                       "(--tls-cert and --tls-key, or tls_cert and tls_key in %s)",
                       srv->config_path);
    if (srv->tls_cert[0] != '\0' &&
        (rc = tls_load(srv->tls_cert, srv->tls_key, &srv->tls, err)) != 0)
        return rc;
    if ((rc = setup_acl(srv, "trusted_proxies", &srv->trusted_proxies, err)) != 0 ||
        (rc = setup_acl(srv, "metrics_allow", &srv->metrics_allow, err)) != 0)
        return rc;
    return 0;
}

/* Everything `serve` needs before it listens, in order: the network
 * settings, then what serve keeps open (service.c), then what needs the
 * database and the configuration file, then the threads and the daemon. */
static int serve_start(struct server *srv, struct kj_err *err)
{
    int rc;
    if ((rc = setup_net(srv, err)) != 0 || (rc = service_open(srv, err)) != 0 ||
        (rc = setup_admin(srv, err)) != 0 || (rc = setup_rates(srv, err)) != 0 ||
        (rc = setup_http_limits(srv, err)) != 0 || (rc = api_openapi_load(srv, err)) != 0)
        return rc;
    if (realpath(srv->web_dir, srv->web_real) == NULL) {
        srv->web_real[0] = '\0';
        kj_log(KJ_LOG_WARN, "main", "web folder %s not found; / and /static/ answer 404",
               srv->web_dir);
    }
    if (srv->vendor_dir[0] != '\0' && access(srv->vendor_dir, R_OK | X_OK) != 0)
        kj_log(KJ_LOG_WARN, "main", "vendor folder %s not found; pages show plain text, no "
               "highlighting or charts (deploy/deps.sh installs the libraries)", srv->vendor_dir);
    return service_listen(srv, err);
}

static int cmd_serve(int argc, char **argv)
{
    struct server *srv = calloc(1, sizeof *srv);
    struct kj_err err;
    sigset_t stop;
    int sig = 0, rc;

    if (srv == NULL)
        return EXIT_INTERNAL;
    service_init(srv);
    snprintf(srv->bind, sizeof srv->bind, "127.0.0.1");
    snprintf(srv->db_path, sizeof srv->db_path, "var/kjudge.db");
    snprintf(srv->boards_dir, sizeof srv->boards_dir, "leaderboards");
    snprintf(srv->web_dir, sizeof srv->web_dir, "web");
    snprintf(srv->vendor_dir, sizeof srv->vendor_dir, "/usr/share/javascript");
    snprintf(srv->config_path, sizeof srv->config_path, "var/kjudge.conf");
    default_openapi(srv->openapi_path, sizeof srv->openapi_path);
    for (int m = 0; m < KJ_MODE_COUNT; m++)
        srv->rate_limits[m] = -2; /* not given on the command line */
    srv->max_conns_per_ip = -1;   /* not given on the command line */
    srv->header_timeout_s = -1;
    if ((rc = parse_serve(argc, argv, srv)) != 0) {
        free(srv);
        return rc;
    }
    /* Block the stop signals in every thread; only sigwait() below takes them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    kj_err_clear(&err);
    if ((rc = serve_start(srv, &err)) != 0) {
        rc = fail(&err);
        service_stop(srv);
        free(srv);
        return rc;
    }
    kj_log(KJ_LOG_INFO, "main", "listening on %s://%s:%d leaderboards=%d db=%s",
           srv->tls.cert != NULL ? "https" : "http", srv->bind, srv->port, srv->boards->nspecs,
           srv->db_path);
    while (sigwait(&stop, &sig) != 0)
        ;
    kj_log(KJ_LOG_INFO, "main", "stopping signal=%d", sig);
    service_stop(srv);
    free(srv);
    kj_log(KJ_LOG_INFO, "main", "stopped");
    return EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* backup / restore                                                    */
/* ------------------------------------------------------------------ */

/* kjudge-server backup FILE [--force] [--db PATH], restore FILE [--db PATH] */
static int cmd_backup(int argc, char **argv, int restore)
{
    char db_path[PATH_MAX] = "var/kjudge.db";
    const char *file = NULL;
    struct kj_err err;
    int64_t pages = 0;
    int rc, force = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0) {
            if (opt_value(argc, argv, &i, db_path, sizeof db_path) != 0)
                return EXIT_USAGE;
        } else if (!restore && strcmp(argv[i], "--force") == 0) {
            force = 1;
        } else if (argv[i][0] == '-' || file != NULL) {
            return usage_error("unexpected argument '%s'", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (file == NULL)
        return usage_error("%s needs a FILE", argv[0]);
    kj_err_clear(&err);
    if (restore)
        rc = db_restore(file, db_path, &err);
    else
        rc = db_backup(db_path, file, force, &pages, &err);
    if (rc != 0)
        return fail(&err);
    if (!restore)
        kj_log(KJ_LOG_INFO, "main", "backup of %s written to %s pages=%lld", db_path, file,
               (long long)pages);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "missing command");
    if (strcmp(argv[1], "help") == 0) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) /* --help or -h anywhere, as after a command */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        }
    if (strcmp(argv[1], "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(argv[1], "user") == 0)
        return cmd_add(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "runner") == 0)
        return cmd_add(argc - 1, argv + 1, 1);
    if (strcmp(argv[1], "backup") == 0)
        return cmd_backup(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "restore") == 0)
        return cmd_backup(argc - 1, argv + 1, 1);
    return usage_error("unknown command '%s'", argv[1]);
}
