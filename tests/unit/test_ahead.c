/*
 * test_ahead.c - compile-ahead's parts that need no server: which jobs may
 * be compiled before their turn (judge_ahead_dirs), the result of one that
 * does not compile (judge_compile_failed), the boards' compiled files kept
 * across jobs (judge_boards), and the supervisor's reading of the frames
 * the compile-ahead process hands jobs over in (ahead_link.c), played here
 * on a socket of the test's own: a good frame, every malformed one
 * refused with nothing handed over, and a gap's request with its skip list
 * answered by a job or by "none" (a late "none" passed over). The process itself, with a real server
 * and real compile boxes, is tests/api/test_ahead.py's.
 */
#define KT_MAIN
#include "kt.h"

#include "ahead_int.h"
#include "judge_int.h"
#include "fdio.h"
#include "result.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct spec *board;

#define GOOD "//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n" \
             "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n" \
             "                                  int T, int H, int GS) {}\n"

static int dirs_of(enum kj_mode m, const char *src)
{
    struct directives d;
    return judge_ahead_dirs(board, m, src, strlen(src), &d);
}

static void test_dirs(void)
{
    KT_CHECK(dirs_of(KJ_MODE_TEST, GOOD) && dirs_of(KJ_MODE_BENCHMARK, GOOD) &&
             dirs_of(KJ_MODE_LEADERBOARD, GOOD), "test, benchmark and leaderboard jobs are compiled ahead");
    KT_CHECK(!dirs_of(KJ_MODE_PROFILE, GOOD) && !dirs_of(KJ_MODE_SANITIZE, GOOD),
             "profile and sanitize jobs are not (their compile adds line information)");
    KT_CHECK(!dirs_of(KJ_MODE_TEST, "//!kjudge launch nosuch grid=(1) block=(1)\n"
                                    "//!kjudge frobnicate\n" GOOD),
             "a directive the judge rejects: handed over as it came");
    KT_CHECK(!dirs_of(KJ_MODE_TEST, "//!kjudge leaderboard other_board\n" GOOD),
             "a source naming another board: handed over as it came");
    KT_CHECK(dirs_of(KJ_MODE_TEST, "//!kjudge leaderboard fp8_quant\n" GOOD),
             "a source naming its own board: compiled ahead");
}

static int events[KJ_EV_COUNT];
static void count_event(void *ctx, enum kj_event ev, const cJSON *data)
{
    (void)ctx;
    (void)data;
    events[ev]++;
}

static void test_compile_failed(void)
{
    struct compile_result c;
    struct judge_job jj;
    struct box_device dev;
    struct judge_result *res = NULL;
    struct kj_err err;
    memset(&c, 0, sizeof c);
    memset(&jj, 0, sizeof jj);
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "NVIDIA H200");
    snprintf(dev.arch, sizeof dev.arch, "sm_90a");
    snprintf(c.arch, sizeof c.arch, "sm_90a");
    c.log = strdup("k.cu(3): error: identifier \"x\" is undefined\n1 error detected\n");
    jj.spec = board;
    jj.mode = KJ_MODE_LEADERBOARD;
    jj.compiled = &c;
    jj.progress = count_event;
    memset(events, 0, sizeof events);
    int rc = judge_compile_failed(&jj, &dev, &res, &err);
    KT_CHECK(rc == KJ_OK && res != NULL && res->has_verdict && res->verdict == KJ_V_COMPILE_ERROR,
             "a submission that did not compile: compile_error (%d)", rc);
    KT_CHECK(res != NULL && strcmp(res->message, "k.cu(3): error: identifier \"x\" is undefined") == 0,
             "its message is the log's first line (%s)", res ? res->message : "");
    KT_CHECK(res != NULL && res->has_compile && res->compile.log != NULL && res->compile.cubin == NULL &&
             strstr(res->compile.log, "1 error detected") != NULL, "the whole log is in its compile report");
    KT_CHECK(res != NULL && res->has_system && strcmp(res->sys.gpu, "NVIDIA H200") == 0 &&
             strcmp(res->sys.arch, "sm_90a") == 0, "its system block is the runner's probe");
    KT_CHECK(events[KJ_EV_COMPILED] == 1 && events[KJ_EV_VERDICT] == 1 && events[KJ_EV_COMPILING] == 0 &&
             events[KJ_EV_TEST] == 0, "events: compiled and verdict (compiling was posted at the claim)");
    KT_CHECK(c.log == NULL, "the compile result was taken (zeroed)");
    result_free(res);
}

/* A judge as judge_compile sees it: board, architecture, the board's files. */
static void judge_of(struct judge *j, const char *arch, char *ref, char *gen)
{
    memset(j, 0, sizeof *j);
    j->spec = board;
    snprintf(j->dev.arch, sizeof j->dev.arch, "%s", arch);
    j->refsrc = ref;
    j->reflen = strlen(ref);
    j->gensrc = gen;
    j->genlen = gen != NULL ? strlen(gen) : 0;
}

static void compiled(struct compile_result *c, const char *what)
{
    memset(c, 0, sizeof *c);
    c->ok = 1;
    c->log = strdup("");
    c->cubin = strdup(what);
    c->cubin_size = strlen(what) + 1;
}

static void test_boards(void)
{
    struct judge_boards *b = judge_boards_new();
    struct judge j, k;
    char ref[] = "reference text", ref2[] = "reference edited", gen[] = "generate text";
    KT_CHECK(b != NULL, "a store");
    judge_of(&k, "sm_90a", ref, gen);
    KT_CHECK(!judge_boards_get(b, &k) && k.refc.cubin == NULL, "empty: nothing kept");
    judge_of(&j, "sm_90a", ref, gen);
    compiled(&j.refc, "REFCUBIN");
    compiled(&j.genc, "GENCUBIN");
    judge_boards_put(b, &j);
    judge_of(&k, "sm_90a", ref, gen);
    KT_CHECK(judge_boards_get(b, &k) && k.refc.cubin != NULL && k.genc.cubin != NULL &&
             strcmp(k.refc.cubin, "REFCUBIN") == 0 && strcmp(k.genc.cubin, "GENCUBIN") == 0 &&
             k.refc.cubin != j.refc.cubin, "the same board, files and arch: a copy of both cubins");
    compile_result_free(&k.refc);
    compile_result_free(&k.genc);
    judge_of(&k, "sm_100a", ref, gen);
    KT_CHECK(!judge_boards_get(b, &k), "another architecture: compiled again");
    judge_of(&k, "sm_90a", ref2, gen);
    KT_CHECK(!judge_boards_get(b, &k), "reference.cu edited on disk: compiled again");
    judge_of(&k, "sm_90a", ref, NULL);
    KT_CHECK(!judge_boards_get(b, &k), "generate.cu gone: compiled again");
    judge_of(&k, "sm_90a", ref, gen);
    k.refdirs.nnvrtc = 1;
    KT_CHECK(!judge_boards_get(b, &k), "other directives: compiled again");
    /* A failed compile is never kept. */
    struct judge f;
    judge_of(&f, "sm_80", ref, NULL);
    compiled(&f.refc, "X");
    f.refc.ok = 0;
    judge_boards_put(b, &f);
    judge_of(&k, "sm_80", ref, NULL);
    KT_CHECK(!judge_boards_get(b, &k), "a reference that did not compile is not kept");
    compile_result_free(&f.refc);
    /* Sixteen more architectures: the least recently used goes first. */
    char arch[16][16];
    for (int i = 0; i < 16; i++) {
        struct judge m;
        snprintf(arch[i], sizeof arch[i], "sm_%d", 10 + i);
        judge_of(&m, arch[i], ref, NULL);
        compiled(&m.refc, arch[i]);
        judge_boards_put(b, &m);
        compile_result_free(&m.refc);
        if (i == 7) { /* use the first entry again: it stays */
            judge_of(&k, "sm_90a", ref, gen);
            judge_boards_get(b, &k);
            compile_result_free(&k.refc);
            compile_result_free(&k.genc);
        }
    }
    judge_of(&k, "sm_90a", ref, gen);
    int first = judge_boards_get(b, &k);
    compile_result_free(&k.refc);
    compile_result_free(&k.genc);
    judge_of(&k, arch[0], ref, NULL);
    int oldest = judge_boards_get(b, &k);
    compile_result_free(&k.refc);
    judge_of(&k, arch[15], ref, NULL);
    int newest = judge_boards_get(b, &k) && strcmp(k.refc.cubin, arch[15]) == 0;
    compile_result_free(&k.refc);
    KT_CHECK(first && !oldest && newest, "full: the least recently used went, a used one stayed "
             "(%d %d %d)", first, oldest, newest);
    compile_result_free(&j.refc);
    compile_result_free(&j.genc);
    judge_boards_free(b);
    judge_boards_free(NULL);
}

/* Play the process's side: write a frame (json, then log and cubin when
 * compiled) after changing its header with tweak, then read it as the
 * supervisor. Returns ahead_next's value. */
static int frame(void (*tweak)(struct ahead_head *), const char *json, int cut, cJSON **reply,
                 struct compile_result *c, int *has, struct kj_err *err)
{
    int sv[2];
    struct ahead_head h;
    static volatile sig_atomic_t stop;
    const char log[] = "ptxas info: 1 kernel", cubin[] = "\x7f" "ELF...cubin";
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -100;
    memset(&h, 0, sizeof h);
    h.magic = AHEAD_MAGIC;
    h.json_len = (uint32_t)strlen(json);
    h.compiled = 1;
    h.r.ok = 1;
    h.r.nkernels = 1;
    snprintf(h.r.arch, sizeof h.r.arch, "sm_90a");
    h.log_len = sizeof log - 1;
    h.cubin_len = sizeof cubin;
    if (tweak != NULL)
        tweak(&h);
    pid_t pid = fork();
    if (pid == 0) { /* the process: the frame, then the supervisor's request, then its end */
        char n;
        close(sv[0]);
        int ok = fdio_write_full(sv[1], &h, sizeof h) == 0 &&
                 fdio_write_full(sv[1], json, strlen(json)) == 0 &&
                 fdio_write_full(sv[1], log, sizeof log - 1) == 0 &&
                 fdio_write_full(sv[1], cubin, cut ? 3 : sizeof cubin) == 0 &&
                 read(sv[1], &n, 1) == 1 && n == 'N';
        _exit(ok ? 0 : 1);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return -100;
    }
    struct ahead *a = ahead_link_new(pid, sv[0]);
    int rc = ahead_next(a, &stop, reply, c, has, err);
    ahead_end(a, NULL, NULL);
    return rc;
}

static void bad_magic(struct ahead_head *h) { h->magic = 0x12345678u; }
static void huge_json(struct ahead_head *h) { h->json_len = AHEAD_MAX_JSON + 1; }
static void huge_cubin(struct ahead_head *h) { h->cubin_len = AHEAD_MAX_CUBIN + 1; }
static void huge_log(struct ahead_head *h) { h->log_len = 4 * COMPILE_MAX_LOG + 1; }
static void bad_kernels(struct ahead_head *h) { h->r.nkernels = 1 << 20; memset(h->r.arch, 'x', sizeof h->r.arch); }

static void test_frames(void)
{
    const char *job = "{\"job\":{\"id\":7,\"attempt\":2,\"source\":\"S\"}}";
    cJSON *reply = NULL;
    struct compile_result c;
    struct kj_err err;
    int has = 0;
    int rc = frame(NULL, job, 0, &reply, &c, &has, &err);
    const cJSON *id = cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "job"), "id");
    KT_CHECK(rc == 1 && reply != NULL && cJSON_IsNumber(id) && id->valueint == 7,
             "a frame: the claim's answer handed over (%d)", rc);
    KT_CHECK(rc == 1 && has && c.ok && c.cubin_size == 13 && memcmp(c.cubin, "\x7f" "ELF", 4) == 0 &&
             strcmp(c.log, "ptxas info: 1 kernel") == 0 && strcmp(c.arch, "sm_90a") == 0,
             "with its compiled submission: log and cubin");
    cJSON_Delete(reply);
    compile_result_free(&c);
    struct { void (*tweak)(struct ahead_head *); const char *json; int cut; const char *what; } bad[] = {
        {bad_magic, job, 0, "a frame of something else"},
        {huge_json, job, 0, "a claim's answer over the bound"},
        {huge_cubin, job, 0, "a cubin over the bound"},
        {huge_log, job, 0, "a log over the bound"},
        {NULL, "{\"job\": not json", 0, "an answer that is not JSON"},
        {NULL, job, 1, "a frame cut short (the process died writing it)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reply = NULL;
        has = 0;
        kj_err_clear(&err);
        rc = frame(bad[i].tweak, bad[i].json, bad[i].cut, &reply, &c, &has, &err);
        KT_CHECK(rc < 0 && reply == NULL && c.cubin == NULL && c.log == NULL &&
                 strstr(err.msg, "compile-ahead") != NULL,
                 "%s: refused, nothing handed over (%d: %s)", bad[i].what, rc, err.msg);
    }
    rc = frame(bad_kernels, job, 0, &reply, &c, &has, &err);
    KT_CHECK(rc == 1 && c.nkernels == 0 && strlen(c.arch) < sizeof c.arch,
             "a kernel count out of range is dropped and the arch ends within its field");
    cJSON_Delete(reply);
    compile_result_free(&c);
}

/* The process's side of a gap's request: read 'G' and its skip list, check
 * it is {41, 42}, answer "none" (answer 0) or a frame of job 9 (1); then,
 * for ahead_next, a late "none" before the frame of job 10. */
static int gap_peer(int fd, int answer)
{
    unsigned char g[2];
    int64_t ids[2];
    struct ahead_head h;
    const char *job9 = "{\"job\":{\"id\":9}}", *job10 = "{\"job\":{\"id\":10}}";
    if (fdio_read_full(fd, g, 2) != 0 || g[0] != 'G' || g[1] != 2 ||
        fdio_read_full(fd, ids, sizeof ids) != 0 || ids[0] != 41 || ids[1] != 42)
        return 2;
    memset(&h, 0, sizeof h);
    h.magic = AHEAD_MAGIC;
    if (answer == 1)
        h.json_len = (uint32_t)strlen(job9);
    if (fdio_write_full(fd, &h, sizeof h) != 0 ||
        (answer == 1 && fdio_write_full(fd, job9, strlen(job9)) != 0))
        return 3;
    /* ahead_next: 'N', a "none" that came late, then job 10. */
    char n;
    if (read(fd, &n, 1) != 1 || n != 'N')
        return 4;
    memset(&h, 0, sizeof h);
    h.magic = AHEAD_MAGIC;
    if (fdio_write_full(fd, &h, sizeof h) != 0)
        return 5;
    h.json_len = (uint32_t)strlen(job10);
    if (fdio_write_full(fd, &h, sizeof h) != 0 || fdio_write_full(fd, job10, strlen(job10)) != 0)
        return 6;
    return 0;
}

static void test_gap_request(void)
{
    static volatile sig_atomic_t stop;
    const int64_t skip[2] = {41, 42};
    for (int answer = 0; answer < 2; answer++) {
        int sv[2], status = -1;
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            return;
        pid_t pid = fork();
        if (pid == 0) {
            close(sv[0]);
            _exit(gap_peer(sv[1], answer));
        }
        close(sv[1]);
        struct ahead *a = ahead_link_new(-1, sv[0]);
        cJSON *reply = NULL;
        struct compile_result c;
        struct kj_err err;
        int has = 1;
        int rc = ahead_gap(a, skip, 2, &reply, &c, &has, &err);
        const cJSON *id = cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "job"), "id");
        if (answer == 0)
            KT_CHECK(rc == 0 && reply == NULL && has == 0,
                     "a gap's request that nothing fits: none, at once (%d)", rc);
        else
            KT_CHECK(rc == 1 && cJSON_IsNumber(id) && id->valueint == 9 && has == 0,
                     "a gap's request: the job held, with the skip list sent along (%d)", rc);
        cJSON_Delete(reply);
        compile_result_free(&c);
        rc = ahead_next(a, &stop, &reply, &c, &has, &err);
        id = cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "job"), "id");
        KT_CHECK(rc == 1 && cJSON_IsNumber(id) && id->valueint == 10,
                 "the next job after a late \"none\": the none is passed over (%d)", rc);
        cJSON_Delete(reply);
        compile_result_free(&c);
        ahead_end(a, NULL, NULL);
        waitpid(pid, &status, 0);
        KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "the process's side saw 'G', the skip list and 'N' (%d)", WEXITSTATUS(status));
    }
}

int main(int argc, char **argv)
{
    struct kj_err err;
    kt_init(argc, argv);
    if (spec_load("leaderboards/fp8_quant", &board, &err) != KJ_OK) {
        KT_CHECK(0, "the fp8_quant board loads: %s", err.msg);
        return kt_done("test_ahead");
    }
    KT_RUN(test_dirs());
    KT_RUN(test_compile_failed());
    KT_RUN(test_boards());
    KT_RUN(test_frames());
    KT_RUN(test_gap_request());
    spec_free(board);
    return kt_done("test_ahead");
}
