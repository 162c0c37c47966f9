/*
 * test_cbox.c - the compile box (runner/cbox.c): a compile in the child gives
 * the same result as one in this process, both halves of the split API work
 * side by side, and a source that cannot compile comes back as a compile
 * error with its log, never as a judge error.
 */
#define KT_MAIN
#include "kt.h"
#include "cbox.h"

#include <string.h>

static const char *good =
    "//!kjudge launch k grid=(1) block=(32)\n"
    "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n";
static const char *bad =
    "//!kjudge launch k grid=(1) block=(32)\n"
    "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = nope; }\n";

static int parse(const char *src, struct directives *d)
{
    struct kj_err err;
    return dir_parse(src, strlen(src), d, &err);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct directives dg, db;
    struct compile_result in, boxed, b2;
    struct cbox_proc p1, p2;
    struct kj_err err;
    memset(&in, 0, sizeof in);
    memset(&boxed, 0, sizeof boxed);
    memset(&b2, 0, sizeof b2);
    KT_CHECK(parse(good, &dg) == KJ_OK && parse(bad, &db) == KJ_OK, "directives parse");

    KT_CHECK(compile_source(good, strlen(good), &dg, "sm_90a", &in, &err) == KJ_OK && in.ok,
             "in-process compile: %s", in.log ? in.log : err.msg);
    KT_CHECK(cbox_compile(good, strlen(good), &dg, "sm_90a", &boxed, &err) == KJ_OK && boxed.ok,
             "boxed compile: %s", boxed.log ? boxed.log : err.msg);
    KT_CHECK(boxed.cubin_size == in.cubin_size && boxed.cubin_size > 0 &&
             memcmp(boxed.cubin, in.cubin, in.cubin_size) == 0, "same cubin in and out of the box");
    KT_CHECK(boxed.nkernels == 1 && strcmp(boxed.kernels[0].lowered, "k") == 0 &&
             boxed.kernels[0].registers == in.kernels[0].registers, "kernel facts cross the pipe");
    compile_result_free(&boxed);

    /* Two boxes at once, collected in the other order. */
    KT_CHECK(cbox_start(good, strlen(good), &dg, "sm_90a", NULL, &p1, &err) == KJ_OK, "start 1");
    KT_CHECK(cbox_start(bad, strlen(bad), &db, "sm_90a", NULL, &p2, &err) == KJ_OK, "start 2");
    KT_CHECK(cbox_finish(&p2, "sm_90a", &b2, &err) == KJ_OK && !b2.ok && b2.cubin == NULL,
             "the bad source is a compile error");
    KT_CHECK(b2.log != NULL && strstr(b2.log, "submission.cu(2)") != NULL && strstr(b2.log, "nope"),
             "its log names the line: %s", b2.log ? b2.log : "(none)");
    KT_CHECK(cbox_finish(&p1, "sm_90a", &boxed, &err) == KJ_OK && boxed.ok, "the good one compiled");
    compile_result_free(&boxed);
    compile_result_free(&b2);
    compile_result_free(&in);
    return kt_done("test_cbox");
}
