/*
 * web.c - static files for the browser: GET / (index.html) and
 * GET /static/PATH from the --web folder, and GET /static/vendor/PATH from
 * the --vendor folder (Debian's /usr/share/javascript).
 *
 * Only regular files inside the web folder are served: a path with a ".."
 * segment, a backslash or a hidden segment is refused, and the resolved
 * path (symlinks followed) must still lie inside the folder's realpath.
 * Under /static/docs/ only the guides of a fixed list are served, from the
 * docs/ folder beside the web folder (the checkout's, or the installed
 * copy deploy/install.sh puts beside web/): the participant's and the board
 * author's guides, which the site renders from the same Markdown.
 * Under /static/vendor/ only the files of a fixed list are served (the
 * highlight.js, Chart.js, marked, KaTeX and CodeMirror files the pages
 * load), each compared as a whole string, so nothing else of the system's
 * folder can be named. The content type comes from the file's extension.
 * Every file carries an ETag (size and modification time; If-None-Match
 * gets 304); the site's own files are revalidated on every load
 * (no-cache), the libraries, which change only with their package, are
 * cached for a day. The HTML page carries a Content-Security-Policy that
 * allows scripts, styles, fonts and requests only from this server.
 */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WEB_VENDOR_PREFIX "vendor/"
#define WEB_DOCS_PREFIX "docs/"

/* The guides under /static/docs/, read from WEB/../docs/ (the site's
 * #/guide/NAME pages, web/js/pages/guide.js). */
static const char *const doc_files[] = {"participant.md", "boards.md", NULL};

static const struct { const char *ext, *type; } types[] = {
    {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
    {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
    {".woff2", "font/woff2"}, {NULL, NULL}
};

/* The library files a page may load, relative to the vendor folder; the
 * same string is the path under /static/vendor/. */
static const char *const vendor_files[] = {
    "highlight.js/highlight.min.js",
    "highlight.js/styles/github.css",
    "chart.js/chart.min.js",
    "marked/marked.min.js",
    "katex/katex.min.js",
    "katex/katex.min.css",
    "katex/fonts/KaTeX_AMS-Regular.woff2",
    "katex/fonts/KaTeX_Caligraphic-Bold.woff2",
    "katex/fonts/KaTeX_Caligraphic-Regular.woff2",
    "katex/fonts/KaTeX_Fraktur-Bold.woff2",
    "katex/fonts/KaTeX_Fraktur-Regular.woff2",
    "katex/fonts/KaTeX_Main-Bold.woff2",
    "katex/fonts/KaTeX_Main-BoldItalic.woff2",
    "katex/fonts/KaTeX_Main-Italic.woff2",
    "katex/fonts/KaTeX_Main-Regular.woff2",
    "katex/fonts/KaTeX_Math-BoldItalic.woff2",
    "katex/fonts/KaTeX_Math-Italic.woff2",
    "katex/fonts/KaTeX_SansSerif-Bold.woff2",
    "katex/fonts/KaTeX_SansSerif-Italic.woff2",
    "katex/fonts/KaTeX_SansSerif-Regular.woff2",
    "katex/fonts/KaTeX_Script-Regular.woff2",
    "katex/fonts/KaTeX_Size1-Regular.woff2",
    "katex/fonts/KaTeX_Size2-Regular.woff2",
    "katex/fonts/KaTeX_Size3-Regular.woff2",
    "katex/fonts/KaTeX_Size4-Regular.woff2",
    "katex/fonts/KaTeX_Typewriter-Regular.woff2",
    "codemirror/lib/codemirror.js",
    "codemirror/lib/codemirror.css",
    "codemirror/mode/clike/clike.js",
    "codemirror/mode/python/python.js",
    "codemirror/addon/edit/matchbrackets.js",
    NULL
};

/* What the pages may load and where they may send requests. Styles may be
 * inline: KaTeX's output and Chart.js set style attributes. */
static const char web_csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

static const char *content_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    for (int i = 0; dot != NULL && types[i].ext != NULL; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* 1 if rel (relative, '/'-separated) has no empty, ".", ".." or hidden segment. */
static int safe_relative(const char *rel)
{
    if (rel[0] == '\0' || strchr(rel, '\\') != NULL)
        return 0;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || p[0] == '.')
            return 0;
        p += n;
        if (*p == '/')
            p++;
    }
    return 1;
}

static enum MHD_Result not_found(struct http_req *r)
{
    return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
}

/* Answer r with the open regular file fd (taken: closed here or by MHD),
 * named name (for its type), with an ETag from st and cache_control. */
static enum MHD_Result send_fd(struct http_req *r, int fd, const struct stat *st,
                               const char *name, const char *cache_control)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
    struct MHD_Response *resp;
    char etag[64];
    int html = strcmp(content_type(name), types[0].type) == 0;

    snprintf(etag, sizeof etag, "\"%llx-%llx\"", (unsigned long long)st->st_size,
             (unsigned long long)st->st_mtim.tv_sec * 1000000000ULL +
                 (unsigned long long)st->st_mtim.tv_nsec);
    if (inm != NULL && strcmp(inm, etag) == 0) {
        close(fd);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (resp == NULL)
            return MHD_NO;
        MHD_add_response_header(resp, "ETag", etag);
        MHD_add_response_header(resp, "Cache-Control", cache_control);
        return http_queue(r, MHD_HTTP_NOT_MODIFIED, resp);
    }
    /* MHD closes fd when the response is destroyed. */
    resp = MHD_create_response_from_fd((uint64_t)st->st_size, fd);
    if (resp == NULL) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", content_type(name));
    MHD_add_response_header(resp, "Cache-Control", cache_control);
    MHD_add_response_header(resp, "ETag", etag);
    if (html) {
        MHD_add_response_header(resp, "Content-Security-Policy", web_csp);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    }
    return http_queue(r, MHD_HTTP_OK, resp);
}

static enum MHD_Result serve_file(struct http_req *r, const char *rel)
{
    char path[PATH_MAX], real[PATH_MAX];
    size_t root = strlen(r->srv->web_real);
    struct stat st;
    int fd;

    if (root == 0 || !safe_relative(rel))
        return not_found(r);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", r->srv->web_real, rel) >= sizeof path ||
        realpath(path, real) == NULL || strncmp(real, r->srv->web_real, root) != 0 ||
        real[root] != '/')
        return not_found(r);
    if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0)
        return not_found(r);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return not_found(r);
    }
    return send_fd(r, fd, &st, real, "no-cache");
}

/* A file named in list (NULL-terminated) from the folder dir followed by
 * sub ("" or "/../docs"), sent with the Cache-Control cache; anything else
 * (not listed, no folder, not a regular file) is 404. Links are followed:
 * the vendor packages link some files elsewhere (KaTeX's fonts). */
static enum MHD_Result serve_listed(struct http_req *r, const char *const *list, const char *dir,
                                    const char *sub, const char *rel, const char *cache)
{
    char path[PATH_MAX];
    struct stat st;
    int fd, known = 0;

    for (int i = 0; list[i] != NULL && !known; i++)
        known = strcmp(list[i], rel) == 0;
    if (!known || dir[0] == '\0' ||
        (size_t)snprintf(path, sizeof path, "%s%s/%s", dir, sub, rel) >= sizeof path)
        return not_found(r);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return not_found(r);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return not_found(r);
    }
    return send_fd(r, fd, &st, rel, cache);
}

/* A file of vendor_files from the vendor folder. */
static enum MHD_Result serve_vendor(struct http_req *r, const char *rel)
{
    return serve_listed(r, vendor_files, r->srv->vendor_dir, "", rel, "public, max-age=86400");
}

/* A guide of doc_files from the docs folder beside the web folder. */
static enum MHD_Result serve_doc(struct http_req *r, const char *rel)
{
    return serve_listed(r, doc_files, r->srv->web_real, "/../docs", rel, "no-cache");
}

enum MHD_Result web_index(struct http_req *r)
{
    return serve_file(r, "index.html");
}

enum MHD_Result web_static(struct http_req *r)
{
    const char *rel = r->path + strlen("/static/");
    if (strncmp(rel, WEB_VENDOR_PREFIX, strlen(WEB_VENDOR_PREFIX)) == 0)
        return serve_vendor(r, rel + strlen(WEB_VENDOR_PREFIX));
    if (strncmp(rel, WEB_DOCS_PREFIX, strlen(WEB_DOCS_PREFIX)) == 0)
        return serve_doc(r, rel + strlen(WEB_DOCS_PREFIX));
    return serve_file(r, rel);
}
