/*
 * web.c - static files for the browser: GET / (index.html) and
 * GET /static/PATH, both from the --web folder.
 *
 * Only regular files inside the folder are served: a path with a ".."
 * segment, a backslash or a hidden segment is refused, and the resolved
 * path (symlinks followed) must still lie inside the folder's realpath.
 * The content type comes from the file's extension.
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

static const struct { const char *ext, *type; } types[] = {
    {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
    {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
    {".woff2", "font/woff2"}, {NULL, NULL}
};

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

static enum MHD_Result serve_file(struct http_req *r, const char *rel)
{
    char path[PATH_MAX], real[PATH_MAX];
    size_t root = strlen(r->srv->web_real);
    struct stat st;
    int fd;

    if (root == 0 || !safe_relative(rel))
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
    if ((size_t)snprintf(path, sizeof path, "%s/%s", r->srv->web_real, rel) >= sizeof path ||
        realpath(path, real) == NULL || strncmp(real, r->srv->web_real, root) != 0 ||
        real[root] != '/')
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
    if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
    }
    /* MHD closes fd when the response is destroyed. */
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (resp == NULL) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", content_type(real));
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    return http_queue(r, MHD_HTTP_OK, resp);
}

enum MHD_Result web_index(struct http_req *r)
{
    return serve_file(r, "index.html");
}

enum MHD_Result web_static(struct http_req *r)
{
    return serve_file(r, r->path + strlen("/static/"));
}
