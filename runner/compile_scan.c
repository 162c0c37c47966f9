/*
 * compile_scan.c - the checks on a source before NVRTC sees it (see
 * compile_int.h): its size, NUL bytes, and the pre-scan of every '#'
 * (or "%:") and __has_include-like name that refuses a file access outside
 * the toolkit's headers and CUTLASS's (compile.h, COMPILE_CUTLASS_ENV).
 * compile.c's header comment gives the decisions; the scan is a pure
 * function of the source and the toolkit's paths, and costs linear time
 * whatever the source holds.
 */
#include "compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CC_MAX_HEADER 200    /* longest #include name accepted */
#define CC_MAX_INCLUDES 1000 /* #include lines (and look-alikes) in one source */
#define CC_STR2(x) #x
#define CC_STR(x) CC_STR2(x)

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
    int cutlass;                 /* 1 once a CUTLASS header was included */
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
            return "names a file outside the CUDA toolkit and CUTLASS";
    if (h->name[0] == '/' || strstr(h->name, "..") != NULL)
        return "names a file outside the CUDA toolkit and CUTLASS";
    h->shown = 1;
    if (must_exist && !file_under(sc->paths->inc, sc->paths->inc_real, h->name) &&
        !file_under(sc->paths->cccl, sc->paths->cccl_real, h->name) &&
        !file_under(sc->paths->cutlass, sc->paths->cutlass_real, h->name))
        return (strncmp(h->name, "cute/", 5) == 0 || strncmp(h->name, "cutlass/", 8) == 0)
                   ? (sc->paths->cutlass[0] ? "is not a header of CUTLASS " KJ_CUTLASS_VERSION
                                            : "needs CUTLASS, which this runner does not have")
                   : "is not a header of the CUDA toolkit";
    if (must_exist && file_under(sc->paths->cutlass, sc->paths->cutlass_real, h->name))
        sc->cutlass = 1;
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
    while (k < n && cc_is_ident((unsigned char)s[k]))
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
 * when there is none; *cutlass becomes 1 when a CUTLASS header is included. */
static size_t scan_includes(const struct spliced *sp, const struct cc_paths *p, char *text,
                            char *msg, size_t msgsz, int *cutlass)
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
        else if (s[i] == '_' && (i == 0 || !cc_is_ident((unsigned char)s[i - 1])) &&
                 ident_in(s, n, i, has_names, 3) >= 0)
            at = i, is_has = 1;
        else
            continue;
        why = check_hash(&sc, at, is_has, &h);
        if (why != NULL) {
            char shown[64];
            kj_printable(shown, sizeof shown, h.name, sizeof shown - 1);
            snprintf(msg, msgsz, "%s%s%s%s %s; only the CUDA toolkit's and CUTLASS's headers "
                     "can be included (e.g. <cuda_fp16.h>, <cub/cub.cuh>, <cute/tensor.hpp>)",
                     h.what, h.shown ? " \"" : "", h.shown ? shown : "", h.shown ? "\"" : "", why);
            return i;
        }
        if (h.quote[1] != 0) {
            text[orig_offset(&sc, h.quote[0])] = '<';
            text[orig_offset(&sc, h.quote[1])] = '>';
        }
        *cutlass |= sc.cutlass;
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
int cc_check_source(struct cc_job *j)
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
    at = scan_includes(&sp, &j->paths, j->text, msg, sizeof msg, &j->cutlass);
    rc = at < sp.n;
    if (rc)
        kj_buf_printf(&j->pre, "line %d: %s\n", line_of(&sp, at), msg);
out:
    spliced_free(&sp);
    return rc;
}

