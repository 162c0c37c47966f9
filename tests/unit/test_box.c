/*
 * test_box.c - the run box's protocol states (runner/box.c), without a GPU:
 * which requests each state takes (box.h's transition list) and the
 * invariants assert_box_state() checks, on a struct box set up by hand.
 * Every refusal is BOX_INTERNAL with a message, never an abort; a request
 * refused by the dispatcher reaches no driver call (the driver table is
 * empty here, so one would crash). Includes runner/box.c to reach its
 * static functions (the archive's box.o is then not linked).
 */
#define KT_MAIN
#include "kt.h"

#include "../../runner/box.c"

static struct spec *spec;
static struct plan *plan;

static void fresh(struct box *b, struct box_cfg *cfg, int reference)
{
    memset(b, 0, sizeof *b);
    memset(cfg, 0, sizeof *cfg);
    cfg->spec = spec;
    cfg->plan = plan;
    cfg->role_reference = reference;
    b->cfg = cfg;
    b->spec = spec;
    b->cur_bench = b->cur_case = -1;
}

static int takes(const struct box *b, int op, const char *want_msg)
{
    struct box_rep rep;
    memset(&rep, 0, sizeof rep);
    int ok = assert_box_state(b, op, &rep);
    if (want_msg == NULL)
        return ok == 1 && rep.status == BOX_OK;
    return ok == 0 && rep.status == BOX_INTERNAL && strstr(rep.msg, want_msg) != NULL;
}

/* Put b in state CASE for tests[1], as box_setup_case leaves it. */
static void in_case(struct box *b)
{
    b->loaded = 1;
    b->umod = (CUmodule)(uintptr_t)1;
    b->cur_bench = 0;
    b->cur_case = 1;
    b->cp = plan_case(plan, 0, 1);
    b->nsets = 1;
    for (int i = 0; i < spec->nbuffers; i++)
        b->buf[0][i] = (CUdeviceptr)(0x1000 * (i + 1));
}

static void test_transitions(void)
{
    struct box b;
    struct box_cfg cfg;
    fresh(&b, &cfg, 0);
    KT_CHECK(box_state_of(&b) == BOX_FRESH, "a new box is FRESH");
    KT_CHECK(takes(&b, BOX_OP_LOAD, NULL) && takes(&b, BOX_OP_BASELINE, NULL) &&
             takes(&b, BOX_OP_CLOCK, NULL) && takes(&b, BOX_OP_HEALTH, NULL),
             "FRESH takes LOAD, BASELINE, CLOCK, HEALTH");
    KT_CHECK(takes(&b, BOX_OP_CASE, "request before LOAD") &&
             takes(&b, BOX_OP_SAMPLE, "request before LOAD") &&
             takes(&b, BOX_OP_BATCH, "request before LOAD") &&
             takes(&b, BOX_OP_VERIFY_SETS, "request before LOAD") &&
             takes(&b, BOX_OP_VERIFY, "request before LOAD") &&
             takes(&b, 99, "request before LOAD"), "FRESH refuses a case");

    b.loaded = 1;
    b.umod = (CUmodule)(uintptr_t)1;
    KT_CHECK(box_state_of(&b) == BOX_LOADED, "LOADED");
    KT_CHECK(takes(&b, BOX_OP_CASE, NULL) && takes(&b, BOX_OP_WARMUP, NULL) &&
             takes(&b, BOX_OP_GRAPH, NULL) && takes(&b, BOX_OP_COPY, NULL) &&
             takes(&b, BOX_OP_BATCH, NULL) && takes(&b, BOX_OP_VERIFY_SETS, NULL) &&
             takes(&b, BOX_OP_HEALTH, NULL), "LOADED takes the case requests");
    KT_CHECK(takes(&b, BOX_OP_LOAD, "request 1 after LOAD"), "a second LOAD is refused");

    in_case(&b);
    KT_CHECK(box_state_of(&b) == BOX_CASE && takes(&b, BOX_OP_SAMPLE, NULL) &&
             takes(&b, BOX_OP_VERIFY, NULL) && takes(&b, BOX_OP_BASELINE, NULL), "CASE");

    /* The dispatcher answers a refused request without touching the driver. */
    struct box_req req;
    struct box_rep rep;
    fresh(&b, &cfg, 0);
    memset(&req, 0, sizeof req);
    memset(&rep, 0, sizeof rep);
    req.op = BOX_OP_SAMPLE;
    KT_CHECK(box_dispatch(&b, &req, &rep) == -1 && rep.status == BOX_INTERNAL &&
             strcmp(rep.msg, "request before LOAD") == 0, "dispatch: %s", rep.msg);
}

static void test_invariants(void)
{
    struct box b;
    struct box_cfg cfg;
    fresh(&b, &cfg, 0);
    b.loaded = 1;
    KT_CHECK(takes(&b, BOX_OP_CLOCK, "loaded without a module"), "loaded needs a module");

    fresh(&b, &cfg, 0);
    in_case(&b);
    KT_CHECK(takes(&b, BOX_OP_CASE, NULL), "a consistent CASE");
    b.cp = plan_case(plan, 1, 0);
    KT_CHECK(takes(&b, BOX_OP_CASE, "the current case and its plan disagree"), "wrong plan");
    b.cp = NULL;
    KT_CHECK(takes(&b, BOX_OP_CASE, "the current case and its plan disagree"), "no plan");
    in_case(&b);
    b.buf[0][2] = 0;
    KT_CHECK(takes(&b, BOX_OP_CASE, "a buffer of the current case is missing"), "a buffer");
    in_case(&b);
    b.nsets = 0;
    KT_CHECK(takes(&b, BOX_OP_BATCH, "the case has no buffer set"), "a case has a set");
    b.nsets = BOX_MAX_SETS + 1;
    KT_CHECK(takes(&b, BOX_OP_BATCH, "the case has no buffer set"), "at most BOX_MAX_SETS");
    in_case(&b);
    b.nsets = 3;
    for (int k = 1; k < 3; k++)
        for (int i = 0; i < spec->nbuffers; i++)
            b.buf[k][i] = (CUdeviceptr)(0x10000 * k + 0x1000 * (i + 1));
    KT_CHECK(takes(&b, BOX_OP_BATCH, NULL), "three full sets");
    b.buf[2][1] = 0;
    KT_CHECK(takes(&b, BOX_OP_BATCH, "a buffer of the current case is missing"),
             "every set is checked");
    b.buf[2][1] = 0x777;
    in_case(&b);
    b.ws_size = 64;
    KT_CHECK(takes(&b, BOX_OP_CASE, "the workspace does not match"), "no workspace");
    b.ws[0] = (CUdeviceptr)0x9000;
    KT_CHECK(takes(&b, BOX_OP_CASE, NULL), "with its workspace");
    b.nsets = 2;
    for (int i = 0; i < spec->nbuffers; i++)
        b.buf[1][i] = (CUdeviceptr)(0x20000 + 0x1000 * i);
    KT_CHECK(takes(&b, BOX_OP_CASE, "the workspace does not match"),
             "every set has its own workspace");
    b.ws[1] = (CUdeviceptr)0xa000;
    KT_CHECK(takes(&b, BOX_OP_CASE, NULL), "two sets, two workspaces");
    b.peer[3][0] = (CUdeviceptr)0x8000;
    KT_CHECK(takes(&b, BOX_OP_CASE, "mapped another box's buffers"), "only the reference maps");
    cfg.role_reference = 1;
    KT_CHECK(takes(&b, BOX_OP_VERIFY, NULL), "the reference box may");
    b.gmod = (CUmodule)(uintptr_t)2;
    KT_CHECK(takes(&b, BOX_OP_CASE, "generate.cu loaded"), "generate.cu needs the board's");
    fresh(&b, &cfg, 0);
    cfg.plan = NULL;
    b.loaded = 1;
    b.umod = (CUmodule)(uintptr_t)1;
    KT_CHECK(takes(&b, BOX_OP_CASE, "loaded without a plan"), "a loaded box has a plan");
}

/* A request to a box that is gone (its end of the pipe closed, as when a
 * Python box started ahead died at import): KJ_EIO, and this process is not
 * killed by SIGPIPE (box_send writes with fdio_write_quiet). */
static void test_send_to_gone(void)
{
    int fds[2];
    KT_CHECK(pipe(fds) == 0, "pipe");
    close(fds[0]);
    struct box_proc p;
    memset(&p, 0, sizeof p);
    p.pid = -1;
    p.fd_req = fds[1];
    p.fd_rep = p.fd_info = -1;
    struct box_req req;
    memset(&req, 0, sizeof req);
    req.op = BOX_OP_START;
    struct kj_err err;
    kj_err_clear(&err);
    KT_CHECK(box_send(&p, &req, NULL, &err) == KJ_EIO && strstr(err.msg, "gone") != NULL,
             "sent to a box that is gone: %s", err.msg);
    sigset_t pending;
    sigpending(&pending);
    KT_CHECK(!sigismember(&pending, SIGPIPE), "no SIGPIPE left pending");
    close(fds[1]);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct directives d;
    struct kj_err err;
    const char *src = "//!kjudge launch quant grid=(T) block=(32)\n";
    KT_CHECK(spec_load("leaderboards/fp8_quant", &spec, &err) == KJ_OK &&
             dir_parse(src, strlen(src), &d, &err) == KJ_OK &&
             plan_build(spec, &d, &d, NULL, &plan, &err) == KJ_OK, "setup: %s", err.msg);
    if (plan == NULL)
        return kt_done("test_box");
    KT_RUN(test_transitions());
    KT_RUN(test_invariants());
    KT_RUN(test_send_to_gone());
    plan_free(plan);
    spec_free(spec);
    return kt_done("test_box");
}
