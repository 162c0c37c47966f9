/*
 * fuzz_upload.c - libFuzzer harness for the multipart upload path: POST
 * /api/v1/submissions through the real server (http_daemon.c routing and limits,
 * upload.c over MHD's post processor, then api_submissions.c's checks of
 * the fields, the source and its directives, and the insert).
 *
 * LLVMFuzzerInitialize starts the server in this process once, through
 * the same set-up as `serve` (server/service.c: a scratch SQLite database,
 * the repository's leaderboards, one user token, no rate limits), on a
 * loopback port. Each input is
 *   Content-Type value '\n' body
 * (bytes of the value outside printable ASCII become '_', so the request is
 * always well-formed HTTP) and is sent over one keep-alive connection with
 * the user's token. A crash anywhere in the server is a crash of this
 * process; besides that, every input must get an answer within 10 s that
 * is not 5xx, whose body is valid UTF-8 JSON: {"error":{"code","message"}}
 * for 4xx, the new submission for 202.
 * The database lives under $TMPDIR (run.sh gives a folder in /dev/shm and
 * removes it even after a crash), else /dev/shm or /tmp.
 * Run it from the repository root (it reads leaderboards/), with
 * -close_fd_mask=2 (fuzz_upload.options) to silence the request log; its
 * own findings go to the original stderr. FUZZ_UPLOAD_SHOW=1 prints every
 * answer, to see what an input does.
 */
#include "fuzz.h"
#include "auth.h"
#include "db.h"
#include "server.h"
#include "service.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <ftw.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#define UP_TIMEOUT_S 10
#define UP_MAX_ANSWER (256 * 1024)

/* The harness's state: libFuzzer calls in with no context of its own. */
static struct {
    struct server *srv;
    int port;
    int sock;                   /* keep-alive connection, -1 when closed */
    int diag;                   /* the original stderr */
    char token[AUTH_TOKEN_HEX];
    char scratch[64];
    char *answer;               /* UP_MAX_ANSWER + 1 bytes */
} up = {.sock = -1, .diag = 2};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void scratch_remove(void)
{
    if (up.scratch[0] != '\0')
        nftw(up.scratch, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void setup_fail(const char *what, const struct kj_err *err)
{
    dprintf(up.diag, "fuzz_upload: cannot start the server: %s: %s\n", what,
            err != NULL ? err->msg : strerror(errno));
    exit(2);
}

/* What `serve` does (service.c), with no configuration file: no OpenAPI
 * body, no admin token, no rate limits; one user token. */
static void server_start(void)
{
    struct server *srv = calloc(1, sizeof *srv);
    char hash[DB_HASH_HEX];
    struct kj_err err;
    const union MHD_DaemonInfo *info;
    if (srv == NULL)
        abort();
    kj_err_clear(&err);
    service_init(srv);
    snprintf(srv->bind, sizeof srv->bind, "127.0.0.1");
    snprintf(srv->db_path, sizeof srv->db_path, "%s/kjudge.db", up.scratch);
    snprintf(srv->boards_dir, sizeof srv->boards_dir, "leaderboards");
    srv->lease_s = KJ_LEASE_DEFAULT_S;
    srv->max_conns_per_ip = 0;
    srv->header_timeout_s = KJ_HTTP_HEADER_TIMEOUT_S;
    srv->conn_limit = KJ_HTTP_CONN_LIMIT;
    srv->max_waiters = KJ_MAX_WAITERS;
    srv->max_waiters_user = KJ_MAX_WAITERS_PER_USER;
    srv->max_claims = KJ_MAX_CLAIM_WAITERS;
    srv->max_claims_runner = KJ_MAX_CLAIMS_PER_RUNNER;
    srv->runner_names = KJ_RUNNER_NAMES;
    if (service_open(srv, &err) != 0)
        setup_fail("service_open (run from the repository root, for leaderboards/)", &err);
    if (auth_new_token(up.token, &err) != 0 ||
        auth_sha256_hex(up.token, strlen(up.token), hash, &err) != 0 ||
        db_user_add(srv->db, "fuzzer", "user", hash, NULL, &err) != 0)
        setup_fail("adding the user", &err);
    if (service_listen(srv, &err) != 0)
        setup_fail("service_listen", &err);
    if ((info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT)) == NULL)
        setup_fail("the daemon's port", NULL);
    up.port = info->port;
    up.srv = srv;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Runs before libFuzzer applies -close_fd_mask: keep the real stderr. */
    if ((up.diag = dup(2)) < 0)
        up.diag = 2;
    signal(SIGPIPE, SIG_IGN);
    const char *tmp = getenv("TMPDIR");
    snprintf(up.scratch, sizeof up.scratch, "%s/kjfuzz-upload-XXXXXX",
             tmp != NULL && tmp[0] != '\0' && strlen(tmp) < 40 ? tmp
             : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (mkdtemp(up.scratch) == NULL)
        setup_fail("mkdtemp", NULL);
    atexit(scratch_remove);
    if ((up.answer = malloc(UP_MAX_ANSWER + 1)) == NULL)
        abort();
    server_start();
    return 0;
}

static int conn_open(void)
{
    struct sockaddr_in a;
    struct timeval tv = {UP_TIMEOUT_S, 0};
    int one = 1, s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)up.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        close(s);
        return -1;
    }
    return s;
}

static void conn_close(void)
{
    if (up.sock >= 0)
        close(up.sock);
    up.sock = -1;
}

static int send_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(up.sock, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read one answer: status, body (NUL-terminated in up.answer), whether the
 * server closes. Returns 0, or -1 (closed, timed out, malformed: errno says). */
static int read_answer(unsigned *status, char **body, size_t *body_len, int *closes)
{
    size_t have = 0, need = 0;
    char *end = NULL;
    up.answer[0] = '\0';
    for (;;) {
        if (end == NULL && (end = strstr(up.answer, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(up.answer, "\r\nContent-Length:");
            if (sscanf(up.answer, "HTTP/1.%*d %u", status) != 1 || cl == NULL || cl > end)
                return errno = EPROTO, -1;
            need = (size_t)(end + 4 - up.answer) + strtoul(cl + 17, NULL, 10);
            *closes = strcasestr(up.answer, "\r\nConnection: close") != NULL;
            if (need > UP_MAX_ANSWER)
                return errno = EMSGSIZE, -1;
        }
        if (end != NULL && have >= need)
            break;
        ssize_t r = recv(up.sock, up.answer + have, UP_MAX_ANSWER - have, 0);
        if (r <= 0)
            return r == 0 ? (errno = ECONNRESET, -1) : -1;
        have += (size_t)r;
        up.answer[have] = '\0';
    }
    *body = end + 4;
    *body_len = need - (size_t)(end + 4 - up.answer);
    (*body)[*body_len] = '\0';
    return 0;
}

static void check_answer(unsigned status, const char *body, size_t len, const char *ctype)
{
    cJSON *j, *e;
    if (status >= 500)
        fuzz_fail_fd(up.diag, "answer %u to a multipart POST (Content-Type %s): %.500s", status,
                     ctype, body);
    if (!fuzz_utf8_ok(body, len))
        fuzz_fail_fd(up.diag, "answer %u is not valid UTF-8: %.500s", status, body);
    if ((j = cJSON_ParseWithLength(body, len)) == NULL)
        fuzz_fail_fd(up.diag, "answer %u is not JSON: %.500s", status, body);
    if (status == 202) {
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "id")))
            fuzz_fail_fd(up.diag, "202 without an id: %.500s", body);
    } else if (status >= 400) {
        e = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "code")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")))
            fuzz_fail_fd(up.diag, "answer %u is not {\"error\":{code,message}}: %.500s",
                         status, body);
    } else {
        fuzz_fail_fd(up.diag, "unexpected answer %u: %.500s", status, body);
    }
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    const char *payload = nl != NULL ? (const char *)nl + 1 : "";
    size_t ctlen = nl != NULL ? (size_t)(nl - data) : size, blen = nl != NULL ? size - ctlen - 1 : 0;
    char ctype[512], head[1024], *body;
    unsigned status = 0;
    size_t body_len;
    int closes = 0, n;

    if (ctlen >= sizeof ctype)
        return -1; /* not worth keeping */
    for (size_t i = 0; i < ctlen; i++)
        ctype[i] = data[i] >= 0x20 && data[i] < 0x7f ? (char)data[i] : '_';
    ctype[ctlen] = '\0';
    n = snprintf(head, sizeof head,
                 "POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Authorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                 up.token, ctype, blen);
    for (int attempt = 0;; attempt++) {
        if (up.sock < 0 && (up.sock = conn_open()) < 0)
            fuzz_fail_fd(up.diag, "cannot connect to the server: %s", strerror(errno));
        if (send_all(head, (size_t)n) == 0 && send_all(payload, blen) == 0 &&
            read_answer(&status, &body, &body_len, &closes) == 0)
            break;
        int why = errno;
        conn_close();
        /* A keep-alive connection the server closed between two requests is
         * retried once on a new one; no answer on a fresh one is a finding. */
        if (attempt > 0)
            fuzz_fail_fd(up.diag, "no answer to a %zu-byte body (Content-Type %s): %s", blen,
                         ctype, strerror(why));
    }
    if (closes)
        conn_close();
    if (getenv("FUZZ_UPLOAD_SHOW") != NULL)
        dprintf(up.diag, "%u %s\n", status, body);
    check_answer(status, body, body_len, ctype);
    return 0;
}
