/*
 * compile_ptx.c - a PTX submission to a cubin (see compile_int.h).
 *
 * compile_source() (compile.c) comes here when the source is PTX
 * (sub_lang_is_ptx: it starts with ".version"), after the same checks on
 * the bytes and #include lines as CUDA. The //!kjudge lines are PTX
 * comments and were parsed by the caller. This file checks the module
 * against the launch lines and the GPU (naming the line), compiles it with
 * the toolkit's PTX compiler through nvJitLink, and leaves ptxas's report,
 * the cubin and the PTX (for ptxscan) in the job exactly as NVRTC's path
 * does, so the resource report and the log cleaning are shared.
 *
 * Decisions (docs/languages-cuda.md):
 * - nvJitLink, not the nvPTXCompiler static library: it is a shared library
 *   of every CUDA toolkit and embeds the same PTX compiler (ptxas) of the
 *   same version; nvPTXCompiler comes only as an 89 MB static archive from
 *   a separate package, which every build of kjudge-runner would need.
 * - Parameters map to the board's signature as for CUDA: one .u64/.b64/.s64
 *   per buffer, in order, one .u32/.s32/.b32 per variable, then the
 *   workspace pointer when there is a workspace line. This file checks the
 *   order of kinds (pointers, then ints, then at most the workspace) and
 *   names the line of the first parameter out of place; the run box checks
 *   the count and sizes against the board (box.c). Triton's trailing scratch
 *   pointers are not part of it: its export script drops them when unused.
 * - A .target with an 'a' suffix must be the runner's GPU exactly, an 'f'
 *   one the same family and not newer, a plain one not newer.
 */
#include "compile_int.h"
#include "mono.h"

#include <nvJitLink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_MAX_ENTRIES 64

/* Every nvJitLink call goes through this: KJ_ENVRTC with the call text and
 * the result when it is neither success nor `tolerated`. */
#define JL_CALL(err, res, tolerated, call) \
    jl_check((*(res) = (call)), (tolerated), #call, __FILE__, __LINE__, (err))

static int jl_check(nvJitLinkResult r, nvJitLinkResult tolerated, const char *call,
                    const char *file, int line, struct kj_err *err)
{
    if (r == NVJITLINK_SUCCESS || r == tolerated)
        return KJ_OK;
    return kj_errf(err, KJ_ENVRTC, file, line, "%s: nvJitLink error %d", call, (int)r);
}

/* 1 when nvJitLink's result r says the module itself is bad. */
static int jl_module_fault(nvJitLinkResult r)
{
    return r == NVJITLINK_ERROR_PTX_COMPILE || r == NVJITLINK_ERROR_INVALID_INPUT ||
           r == NVJITLINK_ERROR_UNRECOGNIZED_INPUT || r == NVJITLINK_ERROR_ARCH_MISMATCH ||
           r == NVJITLINK_ERROR_INCORRECT_INPUT_TYPE;
}

/* What the pre-scan finds in the module. */
struct ptx_mod {
    int version_line, target_line;
    char target[32];             /* first sm_ target, "" if none */
    int nentries;
    char entry[CP_MAX_ENTRIES][DIR_MAX_KERNEL];
    int entry_line[CP_MAX_ENTRIES];
};

static size_t skip_blank(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    return i;
}

/* 1 when s[i..] is the word w followed by a non-identifier byte. */
static int word_at(const char *s, size_t i, size_t n, const char *w)
{
    size_t m = strlen(w);
    return i + m <= n && memcmp(s + i, w, m) == 0 &&
           (i + m == n || !cc_is_ident((unsigned char)s[i + m]));
}

/* Check one parameter's declaration at s[i] (after ".param"), line `line`
 * of entry e. *stage: 0 pointers, 1 ints, 2 workspace seen. Returns 1 with
 * a message in j->pre when it is out of place. */
static int check_param(struct cc_job *j, const char *s, size_t i, size_t n, int line,
                       const char *e, int *stage)
{
    int ptr, ws = j->d != NULL && j->d->workspace[0] != '\0';
    i = skip_blank(s, i, n);
    ptr = word_at(s, i, n, ".u64") || word_at(s, i, n, ".b64") || word_at(s, i, n, ".s64");
    if (!ptr && !word_at(s, i, n, ".u32") && !word_at(s, i, n, ".s32") &&
        !word_at(s, i, n, ".b32")) {
        kj_buf_printf(&j->pre, "line %d: .entry %s: a parameter that is neither a pointer "
                      "(.u64) nor an int (.u32); the board's signature is its buffers as "
                      "pointers, then its variables as ints%s\n",
                      line, e, ws ? ", then the workspace pointer" : "");
        return 1;
    }
    if (ptr && *stage == 1 && ws) {
        *stage = 2;
        return 0;
    }
    if ((ptr && *stage >= 1) || (!ptr && *stage == 2)) {
        kj_buf_printf(&j->pre, "line %d: .entry %s: a %s parameter after the %s; the board's "
                      "signature is its buffers as pointers (.u64), then its variables as "
                      "ints (.u32)%s (Triton's scratch pointers: see the export script)\n",
                      line, e, ptr ? "pointer" : "int", *stage == 2 ? "workspace" : "ints",
                      ws ? ", then the workspace pointer" : ", and nothing after them");
        return 1;
    }
    if (!ptr)
        *stage = 1;
    return 0;
}

/* Scan the module line by line, past // comment lines (the //!kjudge lines
 * among them): .version, .target, each .entry and its parameters (checked
 * for the kernels of the launch lines). Returns 1 with
 * a message in j->pre when a parameter is out of place. */
static int scan_module(struct cc_job *j, struct ptx_mod *m)
{
    const char *s = j->text;
    size_t n = j->len, i = 0;
    int line = 1, in_params = 0, stage = 0, check = 0;
    const char *cur = "";

    memset(m, 0, sizeof *m);
    while (i < n) {
        size_t eol = i, k;
        while (eol < n && s[eol] != '\n')
            eol++;
        k = skip_blank(s, i, eol);
        if (k + 1 < eol && s[k] == '/' && s[k + 1] == '/') { /* a comment line */
            line++;
            i = eol + 1;
            continue;
        }
        if (m->version_line == 0 && word_at(s, k, eol, ".version"))
            m->version_line = line;
        if (m->target_line == 0 && word_at(s, k, eol, ".target")) {
            size_t t = skip_blank(s, k + 7, eol), w = 0;
            m->target_line = line;
            while (t + w < eol && w + 1 < sizeof m->target && cc_is_ident((unsigned char)s[t + w]))
                w++;
            memcpy(m->target, s + t, w);
        }
        for (size_t p = k; p + 6 <= eol; p++) {
            if (memcmp(s + p, ".entry", 6) != 0 ||
                (p + 6 < eol && cc_is_ident((unsigned char)s[p + 6])))
                continue;
            size_t t = skip_blank(s, p + 6, eol), w = 0;
            while (t + w < eol && cc_is_ident((unsigned char)s[t + w]))
                w++;
            if (w == 0 || w >= DIR_MAX_KERNEL || m->nentries >= CP_MAX_ENTRIES)
                break;
            memcpy(m->entry[m->nentries], s + t, w);
            m->entry_line[m->nentries] = line;
            cur = m->entry[m->nentries++];
            check = 0;
            for (int q = 0; q < j->out->nkernels; q++)
                check |= strcmp(j->out->kernels[q].name, cur) == 0;
            in_params = 1;
            stage = 0;
            break;
        }
        for (size_t p = k; in_params && p < eol; p++) {
            if (s[p] == ')') {
                in_params = 0;
                break;
            }
            if (p + 6 <= eol && memcmp(s + p, ".param", 6) == 0 &&
                (p == 0 || s[p - 1] == ' ' || s[p - 1] == '\t' || s[p - 1] == '(' ||
                 s[p - 1] == '\n') && check &&
                check_param(j, s, p + 6, eol, line, cur, &stage))
                return 1;
        }
        line++;
        i = eol + 1;
    }
    return 0;
}

/* 1 (message in j->pre) when the module's .target cannot run on arch. */
static int check_target(struct cc_job *j, const struct ptx_mod *m, const char *arch)
{
    int want = atoi(arch + 3), got;
    char gs;

    if (m->version_line == 0 || m->target_line == 0) {
        kj_buf_printf(&j->pre, "line 1: a PTX module needs a .version and a .target line\n");
        return 1;
    }
    if (strncmp(m->target, "sm_", 3) != 0 || (got = atoi(m->target + 3)) <= 0) {
        kj_buf_printf(&j->pre, "line %d: .target must name an sm_ architecture\n",
                      m->target_line);
        return 1;
    }
    gs = m->target[strlen(m->target) - 1];
    if ((gs == 'a' && got != want) || (gs == 'f' && (got / 10 != want / 10 || got > want)) ||
        got > want) {
        kj_buf_printf(&j->pre, "line %d: .target %s is PTX for another GPU; this runner "
                      "compiles for %s\n", m->target_line, m->target, arch);
        return 1;
    }
    return 0;
}

/* Rewrite ptxas's "ptxas application ptx input, line N; " as "line N: "
 * in place (the message is never longer). */
static void name_lines(char *s)
{
    static const char pre[] = "ptxas application ptx input, line ";
    char *p;
    while ((p = strstr(s, pre)) != NULL) {
        char *q = p + sizeof pre - 1, *semi;
        semi = q + strspn(q, "0123456789");
        if (semi == q || *semi != ';')
            break;
        int len = (int)(semi - q);
        memmove(p, "line ", 5);
        memmove(p + 5, q, (size_t)len);
        p[5 + len] = ':';
        memmove(p + 6 + len, semi + 1, strlen(semi + 1) + 1);
    }
}

/* nvJitLink's error and info logs, joined, into j->raw (owned). */
static int fetch_logs(struct cc_job *j, nvJitLinkHandle h, struct kj_err *err)
{
    size_t ne = 0, ni = 0;
    nvJitLinkResult r;
    int rc;

    if ((rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetErrorLogSize(h, &ne))) ||
        (rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetInfoLogSize(h, &ni))))
        return rc;
    if ((j->raw = calloc(ne + ni + 2, 1)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for a %zu-byte log", ne + ni);
    if (ne > 0 && (rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetErrorLog(h, j->raw))))
        return rc;
    ne = strlen(j->raw);
    if (ni > 0 && (rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetInfoLog(h, j->raw + ne))))
        return rc;
    name_lines(j->raw);
    return KJ_OK;
}

/* Compile j->text for arch; on success the cubin into j->out. */
static int jit(struct cc_job *j, const char *arch, struct kj_err *err)
{
    char archopt[32];
    const char *opts[2] = {archopt, "-Xptxas=-v"};
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r, add;
    struct compile_result *o = j->out;
    double t0 = mono_now();
    int rc;

    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    if ((rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkCreate(&h, 2, opts))) != KJ_OK)
        return rc;
    /* A module that does not compile fails here or at Complete; our own
     * options are fixed and known good, so what fails is the module. */
    add = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, j->text, j->len, "submission.ptx");
    if (add == NVJITLINK_SUCCESS)
        add = nvJitLinkComplete(h);
    o->seconds += mono_now() - t0;
    rc = jl_module_fault(add) ? KJ_OK : JL_CALL(err, &r, NVJITLINK_SUCCESS, add);
    if (rc == KJ_OK)
        rc = fetch_logs(j, h, err);
    if (rc == KJ_OK && add != NVJITLINK_SUCCESS) {
        j->user_fault = 1;
        if (j->raw[0] == '\0')
            kj_buf_printf(&j->pre, "the PTX compiler refused the module (nvJitLink error %d)\n",
                          (int)add);
    }
    if (rc == KJ_OK && !j->user_fault) {
        rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetLinkedCubinSize(h, &o->cubin_size));
        if (rc == KJ_OK && (o->cubin_size == 0 || (o->cubin = malloc(o->cubin_size)) == NULL))
            rc = KJ_FAIL(err, KJ_ENOMEM, "no memory for a %zu-byte cubin", o->cubin_size);
        if (rc == KJ_OK)
            rc = JL_CALL(err, &r, NVJITLINK_SUCCESS, nvJitLinkGetLinkedCubin(h, o->cubin));
    }
    nvJitLinkDestroy(&h);
    return rc;
}

int cc_compile_ptx(struct cc_job *j, const char *arch, struct kj_err *err)
{
    struct ptx_mod m;
    int k, e;

    if (j->d != NULL && j->d->nnvrtc > 0) {
        kj_buf_printf(&j->pre, "line %d: nvrtc: options do not apply to a PTX module\n",
                      j->d->nvrtc_line[0]);
        j->user_fault = 1;
        return KJ_OK;
    }
    if (scan_module(j, &m) != 0 || check_target(j, &m, arch) != 0) {
        j->user_fault = 1;
        return KJ_OK;
    }
    for (k = 0; k < j->out->nkernels; k++) {
        for (e = 0; e < m.nentries; e++)
            if (strcmp(m.entry[e], j->out->kernels[k].name) == 0)
                break;
        if (j->kstate[k] != K_OK)
            continue;
        if (e == m.nentries)
            j->kstate[k] = K_MISSING;
        else
            snprintf(j->out->kernels[k].lowered, sizeof j->out->kernels[k].lowered, "%s",
                     m.entry[e]);
    }
    for (k = 0; k < j->out->nkernels; k++)
        if (j->kstate[k] != K_OK) {
            j->user_fault = 1; /* cc_judge_kernels names the launch line */
            return KJ_OK;
        }
    int rc = jit(j, arch, err);
    if (rc == KJ_OK && !j->user_fault && (j->ptx = malloc(j->len + 1)) != NULL) {
        memcpy(j->ptx, j->text, j->len + 1); /* ptxscan reads the module itself */
        j->ptx_len = j->len;
    }
    return rc;
}
