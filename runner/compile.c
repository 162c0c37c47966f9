/*
 * compile.c - a submission's CUDA C++ source to a cubin with NVRTC.
 *
 * The judge (runner/judge.c) calls compile_source() for the submission and
 * for the leaderboard's reference; `kjudge-runner compile` calls it too.
 * It checks the source (size, NUL bytes, #include of anything but toolkit
 * headers), builds the server-owned option list, compiles, reads ptxas's
 * resource report, and passes on a compile_result: the cubin, the lowered
 * name of every launched kernel and a log cleaned for users. The checks on
 * the source are in compile_scan.c, the reading and cleaning of NVRTC's
 * log in compile_log.c (compile_int.h); this file has the toolkit paths,
 * the kernel names and options, and NVRTC itself.
 *
 * Decisions (the next person should know them):
 * - #include is allowed only for headers found under the toolkit's include
 *   dirs or CUTLASS's (COMPILE_CUTLASS_ENV; cute/ and cutlass/), named
 *   literally, relative, without "..". The check looks at every
 *   '#' (or "%:") in the source, whatever the context, so a comment such as
 *   "# include foo" is rejected too: a lexer that gets comments or literals
 *   subtly wrong could let a real directive through, a context-free check
 *   cannot. An allowed #include "name" reaches NVRTC as #include <name>,
 *   which searches only the toolkit's dirs, never the current directory
 *   (--no-source-include would do that too, but it also breaks the
 *   toolkit's own relative includes).
 * - A source that starts with ".version" is PTX (sub_lang_is_ptx): after the
 *   same checks on its bytes and #include lines it goes to the PTX compiler
 *   (compile_ptx.c) instead of NVRTC, and the same report comes back.
 * - An unknown kernel in a launch line makes NVRTC fail the whole compile
 *   with errors in a pseudo-file "__nv_name_map"; those errors are replaced
 *   by "line N: launch: no kernel named 'X' in the source".
 * - NVRTC_ERROR_COMPILATION, and NVRTC_ERROR_INVALID_OPTION when the
 *   directives added options, are the user's fault (ok = 0, return 0); any
 *   other NVRTC failure is ours (KJ_ENVRTC).
 * - The log keeps NVRTC's errors and warnings and drops ptxas's "info" lines
 *   (their numbers are in kernels[]); toolkit paths become "<cuda>", other
 *   absolute paths "<path>"; it is valid UTF-8 and at most COMPILE_MAX_LOG
 *   bytes, the truncation marker included.
 */
#include "compile_int.h"
#include "mono.h"
#include "ptxscan.h"
#include "sub_lang.h"

#include <limits.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef KJ_CUDA_HOME
#define KJ_CUDA_HOME "/usr/local/cuda" /* CUDA_HOME in the environment wins */
#endif

#define CC_MAX_OPTS (9 + DIR_MAX_NVRTC)
#define CC_MAX_ECHO_LINE 4096 /* longest line for full diagnostics (compile_passes) */

/* Every NVRTC call goes through this: 0 when the call returned NVRTC_SUCCESS
 * or `tolerated`, else KJ_ENVRTC with the call text, file:line and NVRTC's
 * error string in err. *res receives the raw result. */
#define NV_CALL(err, res, tolerated, call) \
    nv_check((*(res) = (call)), (tolerated), #call, __FILE__, __LINE__, (err))
#define NV_CHECK(err, res, call) NV_CALL(err, res, NVRTC_SUCCESS, call)

/* ---- small helpers ---- */

static int nv_check(nvrtcResult r, nvrtcResult tolerated, const char *call,
                    const char *file, int line, struct kj_err *err)
{
    if (r == NVRTC_SUCCESS || r == tolerated)
        return KJ_OK;
    return kj_errf(err, KJ_ENVRTC, file, line, "%s: %s", call, nvrtcGetErrorString(r));
}

/* ---- the toolkit's include dirs ---- */

static void set_real(const char *path, char *real)
{
    if (realpath(path, real) == NULL)
        snprintf(real, PATH_MAX, "%s", path);
}

/* CUTLASS's include dir from the environment, when set: it must hold cute/
 * and cutlass/. Unset or empty: no CUTLASS (its #include is refused). */
static int cutlass_path(struct cc_paths *p, struct kj_err *err)
{
    const char *dir = getenv(COMPILE_CUTLASS_ENV);
    char probe[PATH_MAX + 32];
    struct stat st;

    if (dir == NULL || dir[0] == '\0')
        return KJ_OK;
    if (dir[0] != '/' || strlen(dir) >= PATH_MAX)
        return KJ_FAIL(err, KJ_EINVAL, "%s must be an absolute path", COMPILE_CUTLASS_ENV);
    snprintf(probe, sizeof probe, "%s/cute/tensor.hpp", dir);
    if (stat(probe, &st) != 0 || !S_ISREG(st.st_mode))
        return KJ_FAIL(err, KJ_ENVRTC, "%s=%s holds no cute/tensor.hpp", COMPILE_CUTLASS_ENV,
                       dir);
    snprintf(p->cutlass, sizeof p->cutlass, "%s", dir);
    set_real(p->cutlass, p->cutlass_real);
    return KJ_OK;
}

static int cuda_paths(struct cc_paths *p, struct kj_err *err)
{
    const char *home = getenv("CUDA_HOME");
    struct stat st;
    size_t n;

    memset(p, 0, sizeof *p);
    if (home == NULL || home[0] != '/')
        home = KJ_CUDA_HOME;
    n = strlen(home);
    while (n > 1 && home[n - 1] == '/')
        n--;
    if (n + sizeof "/include/cccl" > PATH_MAX)
        return KJ_FAIL(err, KJ_EINVAL, "CUDA_HOME is too long");
    memcpy(p->home, home, n);
    memcpy(p->inc, home, n);
    memcpy(p->inc + n, "/include", sizeof "/include");
    if (stat(p->inc, &st) != 0 || !S_ISDIR(st.st_mode))
        return KJ_FAIL(err, KJ_ENVRTC, "CUDA include dir %s not found", p->inc);
    set_real(p->home, p->home_real);
    set_real(p->inc, p->inc_real);
    /* CUDA 13 keeps cub, thrust and libcu++ (<cuda/...>) under include/cccl. */
    memcpy(p->cccl, p->inc, n + 8);
    memcpy(p->cccl + n + 8, "/cccl", sizeof "/cccl");
    if (stat(p->cccl, &st) == 0 && S_ISDIR(st.st_mode))
        set_real(p->cccl, p->cccl_real);
    else
        p->cccl[0] = '\0';
    return cutlass_path(p, err);
}

/* ---- kernels and options ---- */

/* 1 if a kernel name is safe to hand to NVRTC as a name expression: the
 * directive parser allows far less; this keeps a bad struct fail-closed. */
static int name_ok(const char *name)
{
    size_t i, n = strnlen(name, DIR_MAX_KERNEL);

    if (n == 0 || n >= DIR_MAX_KERNEL)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c > 0x7e || strchr("#\"'\\;{}", c))
            return 0;
        if (c == '/' && (name[i + 1] == '/' || name[i + 1] == '*'))
            return 0;
    }
    return 1;
}

/* One kernels[] entry per distinct kernel text in the launch lines. */
static void list_kernels(struct cc_job *j)
{
    struct compile_result *o = j->out;
    int l, k;

    for (l = 0; j->d != NULL && l < j->d->nlaunch && l < DIR_MAX_LAUNCHES; l++) {
        const struct dir_launch *dl = &j->d->launch[l];
        for (k = 0; k < o->nkernels; k++)
            if (strncmp(o->kernels[k].name, dl->kernel, DIR_MAX_KERNEL) == 0)
                break;
        if (k < o->nkernels)
            continue;
        snprintf(o->kernels[k].name, sizeof o->kernels[k].name, "%.*s",
                 (int)strnlen(dl->kernel, DIR_MAX_KERNEL - 1), dl->kernel);
        j->kline[k] = dl->line;
        j->kstate[k] = name_ok(dl->kernel) ? K_OK : K_BAD_NAME;
        o->nkernels++;
    }
}

/* Fill opts (pointing into store) with our options, then the directive's.
 * full: diagnostics with the source line and a caret, warnings off;
 * otherwise one short line per diagnostic, warnings on (see compile_source).
 * Returns 1 (message in j->pre) if a directive option is not allowed. */
static int build_options(struct cc_job *j, const char *arch, int full,
                         char store[4][PATH_MAX + 32], const char **opts, int *nopts)
{
    int n = 0, i;

    snprintf(store[0], sizeof store[0], "--gpu-architecture=%s", arch);
    snprintf(store[1], sizeof store[1], "--include-path=%s", j->paths.inc);
    opts[n++] = store[0];
    opts[n++] = "--std=c++17";
    opts[n++] = store[1];
    if (j->paths.cccl[0] != '\0') {
        snprintf(store[2], sizeof store[2], "--include-path=%s", j->paths.cccl);
        opts[n++] = store[2];
    }
    if (j->paths.cutlass[0] != '\0') {
        snprintf(store[3], sizeof store[3], "--include-path=%s", j->paths.cutlass);
        opts[n++] = store[3];
    }
    /* CUTLASS's constexpr helpers carry no __host__ __device__; NVRTC has
     * no host side, so they are device functions. */
    if (j->cutlass)
        opts[n++] = "-default-device";
    opts[n++] = "-Xptxas=-v";
    opts[n++] = full ? "-w" : "--brief-diagnostics=true";
    for (i = 0; j->d != NULL && i < j->d->nnvrtc && i < DIR_MAX_NVRTC; i++) {
        const char *o = j->d->nvrtc[i];
        if (strnlen(o, DIR_MAX_OPT) >= DIR_MAX_OPT || !dir_nvrtc_allowed(o)) {
            char shown[DIR_MAX_OPT];
            kj_printable(shown, sizeof shown, o, DIR_MAX_OPT - 1);
            kj_buf_printf(&j->pre, "line %d: nvrtc: option '%s' is not allowed\n",
                      j->d->nvrtc_line[i], shown);
            return 1;
        }
        opts[n++] = o;
    }
    *nopts = n;
    return 0;
}

/* arch must be "sm_<N>" with an optional 'a' or 'f' suffix, and N one that
 * this NVRTC can compile for. */
static int check_arch(const char *arch, struct kj_err *err)
{
    int supported[64], count = 0, num = 0, i, rc;
    size_t k = 3, n = arch ? strnlen(arch, 16) : 0;
    nvrtcResult r;

    if (n < 5 || n >= 16 || strncmp(arch, "sm_", 3) != 0)
        return KJ_FAIL(err, KJ_EINVAL, "bad GPU architecture '%.16s'", arch ? arch : "");
    while (k < n && arch[k] >= '0' && arch[k] <= '9' && num < 100000)
        num = num * 10 + (arch[k++] - '0');
    if (k == 3 || (k < n && !(k + 1 == n && (arch[k] == 'a' || arch[k] == 'f'))))
        return KJ_FAIL(err, KJ_EINVAL, "bad GPU architecture '%.16s'", arch);
    if ((rc = NV_CHECK(err, &r, nvrtcGetNumSupportedArchs(&count))) != KJ_OK)
        return rc;
    if (count <= 0 || count > (int)(sizeof supported / sizeof supported[0]))
        return KJ_FAIL(err, KJ_ENVRTC, "NVRTC reports %d architectures", count);
    if ((rc = NV_CHECK(err, &r, nvrtcGetSupportedArchs(supported))) != KJ_OK)
        return rc;
    for (i = 0; i < count; i++)
        if (supported[i] == num)
            return KJ_OK;
    return KJ_FAIL(err, KJ_EINVAL, "this NVRTC cannot compile for %.16s", arch);
}

/* ---- the compile itself ---- */

/* After a successful compile: lowered names and the cubin. */
static int fetch_results(struct cc_job *j, nvrtcProgram prog, struct kj_err *err)
{
    struct compile_result *o = j->out;
    nvrtcResult r;
    int k, rc;

    for (k = 0; k < o->nkernels; k++) {
        const char *low = NULL;
        if (j->kstate[k] != K_OK)
            continue;
        rc = NV_CALL(err, &r, NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID,
                     nvrtcGetLoweredName(prog, o->kernels[k].name, &low));
        if (rc != KJ_OK)
            return rc;
        if (r != NVRTC_SUCCESS || low == NULL)
            j->kstate[k] = K_MISSING;
        else if (strlen(low) >= sizeof o->kernels[k].lowered)
            j->kstate[k] = K_LONG_NAME;
        else
            snprintf(o->kernels[k].lowered, sizeof o->kernels[k].lowered, "%s", low);
    }
    if ((rc = NV_CHECK(err, &r, nvrtcGetCUBINSize(prog, &o->cubin_size))) != KJ_OK)
        return rc;
    if (o->cubin_size == 0)
        return KJ_FAIL(err, KJ_ENVRTC, "NVRTC compiled but produced no cubin");
    if ((o->cubin = malloc(o->cubin_size)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for a %zu-byte cubin", o->cubin_size);
    if ((rc = NV_CHECK(err, &r, nvrtcGetCUBIN(prog, o->cubin))) != KJ_OK)
        return rc;
    /* The PTX tells which instructions each kernel uses (ptxscan.c); a
     * missing PTX only leaves those fields empty. */
    free(j->ptx);
    j->ptx = NULL;
    if (nvrtcGetPTXSize(prog, &j->ptx_len) == NVRTC_SUCCESS && j->ptx_len > 0 &&
        (j->ptx = malloc(j->ptx_len)) != NULL && nvrtcGetPTX(prog, j->ptx) != NVRTC_SUCCESS) {
        free(j->ptx);
        j->ptx = NULL;
    }
    return KJ_OK;
}

/* Fetch NVRTC's log into j->raw (owned). */
static int fetch_log(struct cc_job *j, nvrtcProgram prog, struct kj_err *err)
{
    size_t n = 0;
    nvrtcResult r;
    int rc;

    if ((rc = NV_CHECK(err, &r, nvrtcGetProgramLogSize(prog, &n))) != KJ_OK)
        return rc;
    if ((j->raw = calloc(n + 1, 1)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for a %zu-byte log", n);
    if (n > 0 && (rc = NV_CHECK(err, &r, nvrtcGetProgramLog(prog, j->raw))) != KJ_OK)
        return rc;
    j->raw[n] = '\0';
    return KJ_OK;
}

/* Add the name expressions and compile. *status gets nvrtcCompileProgram's
 * result; a failure that is the source's fault returns KJ_OK. */
static int run_compile(struct cc_job *j, nvrtcProgram prog, const char **opts, int nopts,
                       nvrtcResult *status, struct kj_err *err)
{
    int user_opts = j->d != NULL && j->d->nnvrtc > 0;
    nvrtcResult r;
    int k, rc;
    double t0;

    for (k = 0; k < j->out->nkernels; k++)
        if (j->kstate[k] == K_OK &&
            (rc = NV_CHECK(err, &r, nvrtcAddNameExpression(prog, j->out->kernels[k].name))))
            return rc;
    t0 = mono_now();
    rc = NV_CALL(err, status, NVRTC_ERROR_COMPILATION, nvrtcCompileProgram(prog, nopts, opts));
    j->out->seconds += mono_now() - t0;
    /* Our own options are known good (check_arch), so a refused option is
     * one the directives added, e.g. a value NVRTC does not take. */
    if (rc != KJ_OK && *status == NVRTC_ERROR_INVALID_OPTION && user_opts) {
        kj_err_clear(err);
        kj_buf_printf(&j->pre, "line %d: nvrtc: NVRTC refused the options (see below)\n",
                  j->d->nvrtc_line[0]);
        rc = KJ_OK;
    }
    return rc;
}

/* Compile j->text (full: see build_options); on success fill kernels and
 * the cubin. j->status gets nvrtcCompileProgram's result. */
static int nvrtc_compile(struct cc_job *j, const char *arch, int full, struct kj_err *err)
{
    char store[4][PATH_MAX + 32];
    const char *opts[CC_MAX_OPTS];
    nvrtcProgram prog = NULL;
    nvrtcResult r, status = NVRTC_SUCCESS;
    int nopts = 0, rc = KJ_OK;

    if (build_options(j, arch, full, store, opts, &nopts) != 0) {
        j->user_fault = 1;
        return KJ_OK;
    }
    rc = NV_CHECK(err, &r, nvrtcCreateProgram(&prog, j->text, "submission.cu", 0, NULL, NULL));
    if (rc != KJ_OK)
        goto out;
    rc = run_compile(j, prog, opts, nopts, &status, err);
    j->status = status;
    if (rc != KJ_OK)
        goto out;
    if ((rc = fetch_log(j, prog, err)) != KJ_OK)
        goto out;
    if (status != NVRTC_SUCCESS) {
        j->user_fault = 1;
        goto out;
    }
    rc = fetch_results(j, prog, err);
out:
    if (prog != NULL)
        NV_CHECK(NULL, &r, nvrtcDestroyProgram(&prog));
    return rc;
}

/* Build out->log from our messages and NVRTC's log; decide out->ok. */
static int finish(struct cc_job *j, struct kj_err *err)
{
    struct kj_buf all, clean;
    int map_hits, bad, rc = KJ_OK;

    kj_buf_init(&all, 0);
    kj_buf_init(&clean, 0);
    bad = cc_judge_kernels(j, &map_hits);
    if (j->raw != NULL && j->user_fault && map_hits == 0 && strstr(j->raw, "__nv_name_map("))
        kj_buf_puts(&j->pre, "launch: NVRTC could not resolve a kernel of a launch line\n");
    kj_buf_putn(&all, kj_buf_str(&j->pre), j->pre.len);
    if (j->raw != NULL)
        cc_filter_log(j->raw, map_hits > 0, &all);
    cc_clean_log(kj_buf_str(&all), all.len, &j->paths, &clean);
    cc_cap_log(&clean);
    if (kj_buf_status(&all) != KJ_OK || kj_buf_status(&clean) != KJ_OK ||
        kj_buf_status(&j->pre) != KJ_OK ||
        (j->out->log = kj_buf_take(&clean, NULL)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory for the compile log");
        goto out;
    }
    j->out->ok = !j->user_fault && bad == 0 && j->out->cubin != NULL;
    for (int k = 0; j->out->ok && k < j->out->nkernels; k++)
        ptxscan_kernel(j->ptx, j->ptx ? j->ptx_len : 0, &j->out->kernels[k]);
    if (!j->out->ok) {
        free(j->out->cubin);
        j->out->cubin = NULL;
        j->out->cubin_size = 0;
    }
out:
    kj_buf_free(&all);
    kj_buf_free(&clean);
    return rc;
}

/* Length of the longest line of s. */
static size_t longest_line(const char *s, size_t n)
{
    size_t best = 0, cur = 0, i;

    for (i = 0; i < n; i++) {
        cur = s[i] == '\n' ? 0 : cur + 1;
        if (cur > best)
            best = cur;
    }
    return best;
}

/* NVRTC's full diagnostics repeat the whole source line (and a caret line)
 * for every diagnostic, and warnings have no limit: a line of 1 MB holding
 * 300,000 warnings makes a log of about 300 GB, and NVRTC aborts the
 * process when it runs out of memory. So the first pass prints one short
 * line per diagnostic, warnings included. Only when it fails, a second pass
 * with warnings off (NVRTC stops at 100 errors) and source lines of at most
 * CC_MAX_ECHO_LINE bytes gives the user the readable errors, source line
 * and caret. If that pass does not fail (it should not), its result is
 * dropped and the first pass's log stands. */
static int compile_passes(struct cc_job *j, const char *arch, struct kj_err *err)
{
    int kstate[DIR_MAX_LAUNCHES], rc, k;
    char *brief_log;

    rc = nvrtc_compile(j, arch, 0, err);
    if (rc != KJ_OK || j->status != NVRTC_ERROR_COMPILATION ||
        longest_line(j->text, j->len) > CC_MAX_ECHO_LINE)
        return rc;
    memcpy(kstate, j->kstate, sizeof kstate);
    brief_log = j->raw;
    j->raw = NULL;
    j->user_fault = 0;
    rc = nvrtc_compile(j, arch, 1, err);
    if (rc == KJ_OK && j->status != NVRTC_ERROR_COMPILATION) {
        free(j->raw);
        j->raw = brief_log;
        brief_log = NULL;
        free(j->out->cubin);
        j->out->cubin = NULL;
        j->out->cubin_size = 0;
        memcpy(j->kstate, kstate, sizeof kstate);
        for (k = 0; k < j->out->nkernels; k++)
            j->out->kernels[k].lowered[0] = '\0';
        j->user_fault = 1;
    }
    free(brief_log);
    return rc;
}

int compile_source(const char *src, size_t len, const struct directives *d,
                   const char *arch, struct compile_result *out, struct kj_err *err)
{
    struct cc_job j;
    int rc;

    KJ_ASSERT(out != NULL);
    memset(out, 0, sizeof *out);
    memset(&j, 0, sizeof j);
    j.src = src != NULL ? src : "";
    j.len = src != NULL ? len : 0;
    j.d = d;
    j.out = out;
    if ((rc = check_arch(arch, err)) != KJ_OK || (rc = cuda_paths(&j.paths, err)) != KJ_OK)
        goto out;
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    list_kernels(&j);
    rc = cc_check_source(&j);
    if (rc < 0) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory checking the source");
        goto out;
    }
    j.user_fault = rc;
    if (j.user_fault)
        rc = KJ_OK;
    else if (sub_lang_is_ptx(j.src, j.len))
        rc = cc_compile_ptx(&j, arch, err); /* compile_ptx.c */
    else
        rc = compile_passes(&j, arch, err);
    if (rc == KJ_OK)
        rc = finish(&j, err);
out:
    kj_buf_free(&j.pre);
    free(j.text);
    free(j.raw);
    free(j.ptx);
    return rc;
}

void compile_result_free(struct compile_result *out)
{
    if (out == NULL)
        return;
    free(out->log);
    free(out->cubin);
    memset(out, 0, sizeof *out);
}

void compile_nvrtc_version(char *buf, size_t bufsz)
{
    int major = 0, minor = 0;
    nvrtcResult r;

    if (bufsz == 0)
        return;
    if (NV_CHECK(NULL, &r, nvrtcVersion(&major, &minor)) != KJ_OK)
        snprintf(buf, bufsz, "unknown");
    else
        snprintf(buf, bufsz, "%d.%d", major, minor);
}
