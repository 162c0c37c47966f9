/*
 * compile.c - a submission's CUDA C++ source to a cubin with NVRTC.
 *
 * The judge (runner/judge.c) calls compile_source() for the submission and
 * for the leaderboard's reference; `kjudge-runner compile` calls it too.
 * It checks the source (size, NUL bytes, #include of anything but toolkit
 * headers), builds the server-owned option list, compiles, reads ptxas's
 * resource report, and passes on a compile_result: the cubin, the lowered
 * name of every launched kernel and a log cleaned for users.
 *
 * Decisions (the next person should know them):
 * - #include is allowed only for headers found under the toolkit's include
 *   dirs, named literally, relative, without "..". The check looks at every
 *   '#' (or "%:") in the source, whatever the context, so a comment such as
 *   "# include foo" is rejected too: a lexer that gets comments or literals
 *   subtly wrong could let a real directive through, a context-free check
 *   cannot. An allowed #include "name" reaches NVRTC as #include <name>,
 *   which searches only the toolkit's dirs, never the current directory
 *   (--no-source-include would do that too, but it also breaks the
 *   toolkit's own relative includes).
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
#include "compile.h"
#include "kj_buf.h"
#include "kj_utf8.h"
#include "mono.h"
#include "ptxscan.h"

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

#define CC_MAX_OPTS (8 + DIR_MAX_NVRTC)
#define CC_MAX_HEADER 200    /* longest #include name accepted */
#define CC_MAX_INCLUDES 1000 /* #include lines (and look-alikes) in one source */
#define CC_MAX_ECHO_LINE 4096 /* longest line for full diagnostics (compile_passes) */
#define CC_STR2(x) #x
#define CC_STR(x) CC_STR2(x)
#define CC_TRUNC_FMT "\n[log truncated at %d bytes]\n"

/* Every NVRTC call goes through this: 0 when the call returned NVRTC_SUCCESS
 * or `tolerated`, else KJ_ENVRTC with the call text, file:line and NVRTC's
 * error string in err. *res receives the raw result. */
#define NV_CALL(err, res, tolerated, call) \
    nv_check((*(res) = (call)), (tolerated), #call, __FILE__, __LINE__, (err))
#define NV_CHECK(err, res, call) NV_CALL(err, res, NVRTC_SUCCESS, call)

/* What went wrong with one launched kernel, by the source's fault. */
enum cc_kstate { K_OK, K_MISSING, K_NOT_GLOBAL, K_BAD_NAME, K_LONG_NAME };

struct cc_paths {
    char inc[PATH_MAX];       /* <home>/include as configured */
    char inc_real[PATH_MAX];  /* the same, symlinks resolved */
    char cccl[PATH_MAX];      /* <home>/include/cccl; "" when absent */
    char cccl_real[PATH_MAX];
    char home[PATH_MAX];      /* <home> as configured */
    char home_real[PATH_MAX];
};

/* Everything one compile_source() call works with. */
struct cc_job {
    const char *src;
    size_t len;
    const struct directives *d;  /* borrowed; NULL = no directives */
    struct compile_result *out;  /* borrowed from the caller */
    struct cc_paths paths;
    int kline[DIR_MAX_LAUNCHES];  /* directive line of each kernel */
    int kstate[DIR_MAX_LAUNCHES]; /* enum cc_kstate */
    int kentry[DIR_MAX_LAUNCHES]; /* 1 once ptxas compiled it as an entry */
    struct kj_buf pre;            /* our messages; go before NVRTC's log */
    char *text;                   /* owned: the source as NVRTC gets it */
    char *raw;                    /* NVRTC's log, owned */
    char *ptx;                    /* owned: NVRTC's PTX after a good compile, for ptxscan */
    size_t ptx_len;
    int user_fault;               /* 1: the source does not compile */
    nvrtcResult status;           /* of the last nvrtcCompileProgram */
};

/* ---- small helpers ---- */

static int nv_check(nvrtcResult r, nvrtcResult tolerated, const char *call,
                    const char *file, int line, struct kj_err *err)
{
    if (r == NVRTC_SUCCESS || r == tolerated)
        return KJ_OK;
    return kj_errf(err, KJ_ENVRTC, file, line, "%s: %s", call, nvrtcGetErrorString(r));
}

static int is_ident(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- the toolkit's include dirs ---- */

static void set_real(const char *path, char *real)
{
    if (realpath(path, real) == NULL)
        snprintf(real, PATH_MAX, "%s", path);
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
    return KJ_OK;
}

/* 1 if name is a regular file under dir whose real path stays inside real. */
static int file_under(const char *dir, const char *real, const char *name)
{
    char path[PATH_MAX], res[PATH_MAX];
    struct stat st;
    size_t n = strlen(real);

    if (dir[0] == '\0' || snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return 0;
    if (realpath(path, res) == NULL || stat(res, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return strncmp(res, real, n) == 0 && res[n] == '/';
}

/* ---- checks on the source before NVRTC sees it ---- */

/* The source with every backslash-newline removed ("\\\n", also "\\ \n" and
 * "\\\r\n": more than the compiler splices, and joining more lines only
 * finds more '#'), with what it takes to map an offset back. */
struct spliced {
    char *s;      /* owned, NUL-terminated */
    size_t n;
    size_t *at;   /* owned: spliced offset after each removed splice */
    size_t *gone; /* owned: bytes that splice removed */
    size_t count;
};

static void spliced_free(struct spliced *sp)
{
    free(sp->s);
    free(sp->at);
    free(sp->gone);
}

static int splice(const char *src, size_t len, struct spliced *sp)
{
    size_t i = 0, o = 0;

    memset(sp, 0, sizeof *sp);
    sp->s = malloc(len + 1);
    sp->at = malloc((len / 2 + 1) * sizeof *sp->at);
    sp->gone = malloc((len / 2 + 1) * sizeof *sp->gone);
    if (sp->s == NULL || sp->at == NULL || sp->gone == NULL)
        return KJ_ENOMEM;
    while (i < len) {
        if (src[i] == '\\') {
            size_t j = i + 1;
            while (j < len && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r'))
                j++;
            if (j < len && src[j] == '\n') {
                sp->at[sp->count] = o;
                sp->gone[sp->count++] = j + 1 - i;
                i = j + 1;
                continue;
            }
        }
        sp->s[o++] = src[i++];
    }
    sp->s[o] = '\0';
    sp->n = o;
    return KJ_OK;
}

/* State of one scan over the spliced source. Every lookup below moves
 * forward only, so a hostile source costs linear time. */
struct scan {
    const struct spliced *sp;
    const struct cc_paths *paths;
    size_t close_from, close_at; /* the first "*\/" at or after close_from is at close_at */
    size_t splice_k, splice_sum; /* splices before the last offset mapped, bytes removed */
    int includes;                /* include-like constructs seen */
};

/* Offset in the original source of spliced offset off (off never decreases
 * between calls). */
static size_t orig_offset(struct scan *sc, size_t off)
{
    const struct spliced *sp = sc->sp;
    while (sc->splice_k < sp->count && sp->at[sc->splice_k] <= off)
        sc->splice_sum += sp->gone[sc->splice_k++];
    return off + sc->splice_sum;
}

/* 1-based line in the original source of spliced offset off. */
static int line_of(const struct spliced *sp, size_t off)
{
    size_t i, line = 1;

    for (i = 0; i < off; i++)
        line += sp->s[i] == '\n';
    for (i = 0; i < sp->count && sp->at[i] <= off; i++)
        line++;
    return line > INT_MAX ? INT_MAX : (int)line;
}

/* Offset just past the first "*\/" at or after i, or n. */
static size_t comment_end(struct scan *sc, size_t i)
{
    const char *s = sc->sp->s, *e;

    if (i < sc->close_from || i > sc->close_at) {
        e = strstr(s + i, "*/");
        sc->close_from = i;
        sc->close_at = e ? (size_t)(e - s) : sc->sp->n;
    }
    return sc->close_at < sc->sp->n ? sc->close_at + 2 : sc->sp->n;
}

/* Skip blanks and block comments from s[i]. */
static size_t skip_gap(struct scan *sc, size_t i)
{
    const char *s = sc->sp->s;
    size_t n = sc->sp->n;

    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\v' || s[i] == '\f' ||
                         s[i] == '\r'))
            i++;
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
            i = comment_end(sc, i + 2);
            continue;
        }
        return i;
    }
}

static int header_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("_.+-/", c) != NULL);
}

/* What one '#include'-like construct names. */
struct hdr {
    char what[24];                /* "#include", "__has_include", ... */
    char name[CC_MAX_HEADER + 2]; /* the header name as written */
    int shown;                    /* 1: name is harmless to echo */
    size_t quote[2];              /* spliced offsets of "..." quotes; quote[1] = 0 if <...> */
};

/* Check the header-name at s[i]: "<name>" or "\"name\"", relative, without
 * "..", of [A-Za-z0-9_.+/-]. With must_exist, the file must be a toolkit
 * header. Returns NULL when fine, else the reason. */
static const char *check_header(struct scan *sc, size_t i, int must_exist, struct hdr *h)
{
    const char *literal = "must name a header literally, in <...> or \"...\"";
    const char *s = sc->sp->s;
    size_t k = 0, open = i, n = sc->sp->n;
    char close;

    if (i >= n || (s[i] != '<' && s[i] != '"'))
        return literal;
    close = s[i] == '<' ? '>' : '"';
    for (i++; i < n && s[i] != close && s[i] != '\n' && k <= CC_MAX_HEADER; i++)
        h->name[k++] = s[i];
    h->name[k] = '\0';
    if (i >= n || s[i] != close || k == 0)
        return literal;
    for (k = 0; h->name[k] != '\0'; k++)
        if (!header_char((unsigned char)h->name[k]))
            return "names a file outside the CUDA toolkit";
    if (h->name[0] == '/' || strstr(h->name, "..") != NULL)
        return "names a file outside the CUDA toolkit";
    h->shown = 1;
    if (must_exist && !file_under(sc->paths->inc, sc->paths->inc_real, h->name) &&
        !file_under(sc->paths->cccl, sc->paths->cccl_real, h->name))
        return "is not a header of the CUDA toolkit";
    if (close == '"') {
        h->quote[0] = open;
        h->quote[1] = i;
    }
    return NULL;
}

/* Length of the identifier at s[i], 0 if none. */
static size_t ident_at(const char *s, size_t n, size_t i)
{
    size_t k = i;
    while (k < n && is_ident((unsigned char)s[k]))
        k++;
    return k - i;
}

/* Index of the identifier at s[i] in names, -1 if none. */
static int ident_in(const char *s, size_t n, size_t i, const char *const *names, int count)
{
    size_t w = ident_at(s, n, i);
    int k;

    for (k = 0; k < count; k++)
        if (w == strlen(names[k]) && strncmp(s + i, names[k], w) == 0)
            return k;
    return -1;
}

static const char *const has_names[] = {"__has_include", "__has_include_next", "__has_embed"};

/* Check one '#' (directive name at s[i]) or one __has_include-like name (at
 * s[i], when is_has). Returns NULL when fine, else the reason. */
static const char *check_hash(struct scan *sc, size_t i, int is_has, struct hdr *h)
{
    static const char *const reads[] = {"include", "include_next", "import", "embed"};
    const char *s = sc->sp->s;
    size_t n = sc->sp->n;
    int k;

    memset(h, 0, sizeof *h);
    if (is_has) {
        snprintf(h->what, sizeof h->what, "%s", has_names[ident_in(s, n, i, has_names, 3)]);
        i = skip_gap(sc, i + ident_at(s, n, i));
        if (i >= n || s[i] != '(')
            return "must name a header literally, in <...> or \"...\"";
        return check_header(sc, skip_gap(sc, i + 1), 0, h);
    }
    if ((k = ident_in(s, n, i, reads, 4)) < 0)
        return NULL;
    snprintf(h->what, sizeof h->what, "#%s", reads[k]);
    if (++sc->includes > CC_MAX_INCLUDES)
        return "is one too many (the limit is " CC_STR(CC_MAX_INCLUDES) ")";
    if (k >= 2)
        return "is not allowed";
    return check_header(sc, skip_gap(sc, i + ident_at(s, n, i)), 1, h);
}

/* Find the first forbidden file access in the spliced source; turn every
 * allowed "name" into <name> in text (the original layout), so that NVRTC
 * looks only in the toolkit's dirs and never in the current directory.
 * Returns the spliced offset of the offending text and fills msg, or sp->n
 * when there is none. */
static size_t scan_includes(const struct spliced *sp, const struct cc_paths *p, char *text,
                            char *msg, size_t msgsz)
{
    struct scan sc = {.sp = sp, .paths = p, .close_from = 1}; /* empty cache */
    const char *s = sp->s, *why;
    size_t i, n = sp->n;
    struct hdr h;

    for (i = 0; i < n; i++) {
        int is_has = 0;
        size_t at;
        if (s[i] == '#')
            at = skip_gap(&sc, i + 1);
        else if (s[i] == '%' && i + 1 < n && s[i + 1] == ':')
            at = skip_gap(&sc, i + 2);
        else if (s[i] == '_' && (i == 0 || !is_ident((unsigned char)s[i - 1])) &&
                 ident_in(s, n, i, has_names, 3) >= 0)
            at = i, is_has = 1;
        else
            continue;
        why = check_hash(&sc, at, is_has, &h);
        if (why != NULL) {
            char shown[64];
            kj_printable(shown, sizeof shown, h.name, sizeof shown - 1);
            snprintf(msg, msgsz, "%s%s%s%s %s; only the CUDA toolkit's headers can be "
                     "included (e.g. <cuda_fp16.h>, <cuda/barrier>, <cub/cub.cuh>)", h.what,
                     h.shown ? " \"" : "", h.shown ? shown : "", h.shown ? "\"" : "", why);
            return i;
        }
        if (h.quote[1] != 0) {
            text[orig_offset(&sc, h.quote[0])] = '<';
            text[orig_offset(&sc, h.quote[1])] = '>';
        }
    }
    return n;
}

/* 1 (message in j->pre) if the source is too long or holds a NUL byte. */
static int check_bytes(struct cc_job *j)
{
    const char *nul;
    size_t line = 1;

    if (j->len > COMPILE_MAX_SOURCE) {
        kj_buf_printf(&j->pre, "the source is %zu bytes; the limit is %d bytes\n", j->len,
                  COMPILE_MAX_SOURCE);
        return 1;
    }
    nul = j->len ? memchr(j->src, '\0', j->len) : NULL;
    if (nul == NULL)
        return 0;
    for (const char *c = j->src; c < nul; c++)
        line += *c == '\n';
    kj_buf_printf(&j->pre, "line %zu: the source contains a NUL byte; submit a text file\n", line);
    return 1;
}

/* Reasons the source cannot go to NVRTC at all (message to j->pre); also
 * makes j->text, the NUL-terminated copy NVRTC compiles. Returns 1 when
 * the source is refused, 0 when it may go on, KJ_ENOMEM. */
static int check_source(struct cc_job *j)
{
    char msg[KJ_ERR_MSG + 64];
    struct spliced sp = {0};
    size_t at;
    int rc;

    if ((rc = check_bytes(j)) != 0)
        return rc;
    if ((j->text = malloc(j->len + 1)) == NULL)
        return KJ_ENOMEM;
    memcpy(j->text, j->src, j->len);
    j->text[j->len] = '\0';
    if ((rc = splice(j->src, j->len, &sp)) != KJ_OK)
        goto out;
    at = scan_includes(&sp, &j->paths, j->text, msg, sizeof msg);
    rc = at < sp.n;
    if (rc)
        kj_buf_printf(&j->pre, "line %d: %s\n", line_of(&sp, at), msg);
out:
    spliced_free(&sp);
    return rc;
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

/* ---- NVRTC's log: name expressions and ptxas's report ---- */

/* Copy s without blanks into buf. */
static void squash(const char *s, size_t n, char *buf, size_t bufsz)
{
    size_t i, k = 0;
    for (i = 0; i < n && s[i] != '\0' && k + 1 < bufsz; i++)
        if (s[i] != ' ' && s[i] != '\t')
            buf[k++] = s[i];
    buf[k] = '\0';
}

/* Mark the kernel whose name is the name expression text t (n bytes). */
static int mark_name(struct cc_job *j, const char *t, size_t n, int not_global)
{
    char a[2 * DIR_MAX_KERNEL], b[2 * DIR_MAX_KERNEL];
    int k, hit = 0;

    squash(t, n, a, sizeof a);
    for (k = 0; k < j->out->nkernels; k++) {
        squash(j->out->kernels[k].name, DIR_MAX_KERNEL, b, sizeof b);
        if (a[0] == '\0' || strcmp(a, b) != 0)
            continue;
        if (not_global)
            j->kstate[k] = K_NOT_GLOBAL;
        else if (j->kstate[k] == K_OK)
            j->kstate[k] = K_MISSING;
        hit = 1;
    }
    return hit;
}

/* Read the "__nv_name_map" errors NVRTC gives for name expressions that do
 * not resolve; mark those kernels. Returns how many errors named a kernel. */
static int scan_name_map(struct cc_job *j)
{
    const char *line = j->raw, *key = "Input name expression was: \"";
    int in_map = 0, not_global = 0, hits = 0;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n'), *t;
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (starts(line, "__nv_name_map(")) {
            in_map = 1;
            not_global = memmem(line, n, "non-__global__", 14) != NULL ||
                         memmem(line, n, "must form address of a __global__", 33) != NULL;
            t = memmem(line, n, key, strlen(key));
            if (t != NULL) {
                const char *q;
                t += strlen(key);
                q = memchr(t, '"', n - (size_t)(t - line));
                hits += mark_name(j, t, q ? (size_t)(q - t) : 0, not_global);
            }
        } else if (n > 0 && (line[0] == ' ' || line[0] == '\t')) {
            t = memmem(line, n, "#pragma nv_mangled_name ", 24);
            if (in_map && t != NULL)
                hits += mark_name(j, t + 24, n - (size_t)(t + 24 - line), not_global);
        } else {
            in_map = 0;
        }
        line = end ? end + 1 : NULL;
    }
    return hits;
}

/* Apply one "N what" item of ptxas's report to kernel k. */
static void ptxas_item(struct compile_kernel *k, const char *item, int is_entry_line)
{
    long v;
    char what[32] = "";

    if (sscanf(item, " %*[Uu]sed %ld %31[a-z]", &v, what) != 2 &&
        sscanf(item, " %ld bytes %31[a-z ]", &v, what) != 2)
        return;
    if (v < 0 || v > INT_MAX)
        v = INT_MAX;
    if (strcmp(what, "registers") == 0)
        k->registers = (int)v;
    else if (strcmp(what, "barriers") == 0)
        k->barriers = (int)v;
    else if (strcmp(what, "smem") == 0)
        k->smem_static = (int)v;
    else if (strcmp(what, "stack frame") == 0 && !is_entry_line)
        k->stack_frame = (int)v;
    else if (strcmp(what, "cumulative stack size") == 0 && v > k->stack_frame)
        k->stack_frame = (int)v; /* includes the frames of called functions */
    else if (strcmp(what, "spill stores") == 0)
        k->spill_stores = (int)v;
    else if (strcmp(what, "spill loads") == 0)
        k->spill_loads = (int)v;
}

/* Apply a comma-separated ptxas message to every kernel lowered to name. */
static void ptxas_apply(struct cc_job *j, const char *name, size_t nlen,
                        const char *msg, size_t mlen, int is_entry_line)
{
    char buf[512];
    int k;

    for (k = 0; k < j->out->nkernels; k++) {
        struct compile_kernel *ck = &j->out->kernels[k];
        if (strlen(ck->lowered) != nlen || strncmp(ck->lowered, name, nlen) != 0)
            continue;
        snprintf(buf, sizeof buf, "%.*s", (int)mlen, msg);
        for (char *save = NULL, *it = strtok_r(buf, ",", &save); it != NULL;
             it = strtok_r(NULL, ",", &save))
            ptxas_item(ck, it, is_entry_line);
        if (is_entry_line)
            j->kentry[k] = 1;
    }
}

/* If line is ptxas output ("ptxas info    : m" or "ptxas         . m"),
 * return 1 and point *msg at m. */
static int ptxas_line(const char *line, size_t n, int *is_info, const char **msg)
{
    size_t i = 5;

    if (n < 6 || strncmp(line, "ptxas", 5) != 0)
        return 0;
    *is_info = n >= 10 && strncmp(line + 5, " info", 5) == 0;
    if (*is_info)
        i = 10;
    while (i < n && line[i] == ' ')
        i++;
    if (i >= n || (line[i] != ':' && !(line[i] == '.' && !*is_info)))
        return 0;
    i++;
    while (i < n && line[i] == ' ')
        i++;
    *msg = line + i;
    return 1;
}

/* Read ptxas's per-kernel report. Later lines win over earlier ones, so
 * text that the source made the front end print cannot override ptxas. */
static void parse_ptxas(struct cc_job *j)
{
    const char *line = j->raw, *entry = "", *props = "", *msg;
    size_t elen = 0, plen = 0;
    int info;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (ptxas_line(line, n, &info, &msg)) {
            size_t m = n - (size_t)(msg - line);
            const char *q;
            if (info && starts(msg, "Compiling entry function '") &&
                (q = memchr(msg + 26, '\'', m - 26)) != NULL) {
                entry = msg + 26, elen = (size_t)(q - entry);
                ptxas_apply(j, entry, elen, "", 0, 1);
            } else if (info && starts(msg, "Function properties for ")) {
                props = msg + 24, plen = m - 24;
            } else if (info && starts(msg, "Used ")) {
                ptxas_apply(j, entry, elen, msg, m, 1);
            } else if (!info) {
                ptxas_apply(j, props, plen, msg, m, 0);
            }
        }
        line = end ? end + 1 : NULL;
    }
}

/* Copy the raw log into dst without ptxas's info lines and, when drop_map,
 * without the "__nv_name_map" error blocks (replaced by our messages). A
 * block is a line at column 0 and the indented lines under it, up to a
 * blank line. ptxas's warnings and errors stay. */
static void filter_log(const char *raw, int drop_map, struct kj_buf *dst)
{
    const char *line = raw, *msg;
    int dropping = 0, info, keep;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (ptxas_line(line, n, &info, &msg)) {
            keep = 0;
            dropping = 0;
        } else if (n == 0) {
            keep = !dropping;
            dropping = 0;
        } else if (line[0] != ' ' && line[0] != '\t') {
            dropping = drop_map && starts(line, "__nv_name_map(");
            keep = !dropping;
        } else {
            keep = !dropping;
        }
        if (keep) {
            kj_buf_putn(dst, line, n);
            kj_buf_puts(dst, "\n");
        }
        line = end ? end + 1 : NULL;
    }
}

/* ---- cleaning the log for users ---- */

static int path_char(int c)
{
    return is_ident(c) || c == '.' || c == '-' || c == '+' || c == '~' || c == '@';
}

/* Length of an absolute path of at least two components at s[i], 0 if none. */
static size_t abs_path_len(const char *s, size_t n, size_t i)
{
    size_t k = i, comps = 0;

    if (s[i] != '/' || (i > 0 && (path_char((unsigned char)s[i - 1]) || s[i - 1] == ')' ||
                                  s[i - 1] == ']' || s[i - 1] == '/')))
        return 0;
    while (k < n && s[k] == '/') {
        size_t c = k + 1;
        while (c < n && path_char((unsigned char)s[c]))
            c++;
        if (c == k + 1)
            break;
        comps++;
        k = c;
    }
    return comps >= 2 ? k - i : 0;
}

/* If one of the toolkit prefixes starts at s[i], emit its stand-in, return
 * the prefix length (the relative rest stays), else 0. */
static size_t cuda_prefix(const char *s, size_t n, size_t i, const struct cc_paths *p,
                          struct kj_buf *dst)
{
    const char *pre[2] = {p->inc_real, p->inc};
    size_t k;

    for (k = 0; k < 2; k++) {
        size_t m = strlen(pre[k]);
        if (m > 1 && i + m <= n && memcmp(s + i, pre[k], m) == 0 &&
            (i + m == n || !path_char((unsigned char)s[i + m]))) {
            kj_buf_puts(dst, "<cuda>");
            return m;
        }
    }
    return 0;
}

/* Copy s into dst: toolkit include dir -> "<cuda>", other absolute paths ->
 * "<path>", control characters and invalid UTF-8 -> '?', "\r\n" -> "\n". */
static void clean_log(const char *s, size_t n, const struct cc_paths *p, struct kj_buf *dst)
{
    size_t i = 0, m;
    unsigned cp;

    /* Past the cap the rest is cut anyway (cap_log). */
    while (i < n && kj_buf_status(dst) == KJ_OK && dst->len <= COMPILE_MAX_LOG) {
        unsigned char c = (unsigned char)s[i];
        if ((m = cuda_prefix(s, n, i, p, dst)) > 0) {
            i += m;
            while (i < n && (path_char((unsigned char)s[i]) || s[i] == '/'))
                kj_buf_putn(dst, s + i++, 1);
        } else if ((m = abs_path_len(s, n, i)) > 0) {
            kj_buf_puts(dst, "<path>");
            i += m;
        } else if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
            kj_buf_putn(dst, s + i++, 1);
        } else if (c == '\r' && i + 1 < n && s[i + 1] == '\n') {
            i++;
        } else if (c >= 0x80 && (m = kj_utf8_decode((const unsigned char *)s + i, n - i, &cp)) > 0) {
            if (cp <= 0x9F) /* a C1 control (U+0080..U+009F) */
                kj_buf_puts(dst, "?");
            else
                kj_buf_putn(dst, s + i, m);
            i += m;
        } else {
            kj_buf_puts(dst, "?");
            i++;
        }
    }
}

/* Cut b to COMPILE_MAX_LOG bytes, marker included, at a UTF-8 boundary. */
static void cap_log(struct kj_buf *b)
{
    char mark[64], *text;
    int mlen = snprintf(mark, sizeof mark, CC_TRUNC_FMT, COMPILE_MAX_LOG);
    size_t cut;

    if (kj_buf_status(b) != KJ_OK || b->len <= COMPILE_MAX_LOG)
        return;
    cut = COMPILE_MAX_LOG - (size_t)mlen;
    while (cut > 0 && ((unsigned char)b->p[cut] & 0xC0) == 0x80)
        cut--;
    text = kj_buf_take(b, NULL);
    kj_buf_putn(b, text, cut);
    kj_buf_putn(b, mark, (size_t)mlen);
    free(text);
}

/* ---- the compile itself ---- */

/* Messages for kernels that did not resolve; returns how many. */
static int kernel_messages(struct cc_job *j)
{
    int k, bad = 0;

    for (k = 0; k < j->out->nkernels; k++) {
        char shown[DIR_MAX_KERNEL];
        kj_printable(shown, sizeof shown, j->out->kernels[k].name, DIR_MAX_KERNEL - 1);
        switch (j->kstate[k]) {
        case K_OK:
            continue;
        case K_MISSING:
            kj_buf_printf(&j->pre, "line %d: launch: no kernel named '%s' in the source\n",
                      j->kline[k], shown);
            break;
        case K_NOT_GLOBAL:
            kj_buf_printf(&j->pre, "line %d: launch: '%s' is not a __global__ kernel "
                      "(declare it extern \"C\" __global__)\n", j->kline[k], shown);
            break;
        case K_BAD_NAME:
            kj_buf_printf(&j->pre, "line %d: launch: '%s' is not a valid kernel name\n",
                      j->kline[k], shown);
            break;
        default:
            kj_buf_printf(&j->pre, "line %d: launch: the mangled name of '%s' is longer "
                      "than %d bytes\n", j->kline[k], shown,
                      (int)sizeof j->out->kernels[k].lowered - 1);
        }
        bad++;
    }
    return bad;
}

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

/* Decide which kernels failed, by NVRTC's log; returns how many. */
static int judge_kernels(struct cc_job *j, int *map_hits)
{
    int k;

    *map_hits = 0;
    if (j->raw != NULL && j->user_fault)
        *map_hits = scan_name_map(j);
    if (j->raw != NULL && !j->user_fault) {
        parse_ptxas(j);
        /* Only when ptxas reported its entries (a compile served from a
         * cache reports none; the run box then checks the function). */
        for (k = 0; k < j->out->nkernels && strstr(j->raw, "Compiling entry function"); k++)
            if (j->kstate[k] == K_OK && !j->kentry[k])
                j->kstate[k] = K_NOT_GLOBAL; /* resolved, but not to an entry */
    }
    return kernel_messages(j);
}

/* Build out->log from our messages and NVRTC's log; decide out->ok. */
static int finish(struct cc_job *j, struct kj_err *err)
{
    struct kj_buf all, clean;
    int map_hits, bad, rc = KJ_OK;

    kj_buf_init(&all, 0);
    kj_buf_init(&clean, 0);
    bad = judge_kernels(j, &map_hits);
    if (j->raw != NULL && j->user_fault && map_hits == 0 && strstr(j->raw, "__nv_name_map("))
        kj_buf_puts(&j->pre, "launch: NVRTC could not resolve a kernel of a launch line\n");
    kj_buf_putn(&all, kj_buf_str(&j->pre), j->pre.len);
    if (j->raw != NULL)
        filter_log(j->raw, map_hits > 0, &all);
    clean_log(kj_buf_str(&all), all.len, &j->paths, &clean);
    cap_log(&clean);
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
    rc = check_source(&j);
    if (rc < 0) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory checking the source");
        goto out;
    }
    j.user_fault = rc;
    rc = j.user_fault ? KJ_OK : compile_passes(&j, arch, err);
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
