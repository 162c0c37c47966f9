/*
 * api_leaderboards.c - GET /api/v1/leaderboards, /leaderboards/{name} and
 * /leaderboards/{name}/rankings?gpu=G.
 *
 * The list and detail bodies are public and change only when the boards
 * are reloaded: boards.c builds them once per set and they are served from
 * the set's buffers with an ETag (the request's reference keeps the set
 * alive while they are sent). Rankings come from boards.c's cache.
 */
#include "api.h"

#include <string.h>

enum MHD_Result api_boards_list(struct http_req *r)
{
    return http_static_json(r, MHD_HTTP_OK, r->boards->list, r->boards->list_len,
                            r->boards->list_etag);
}

enum MHD_Result api_board_get(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    if (b == NULL)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%.64s'", r->params[0]);
    return http_static_json(r, MHD_HTTP_OK, b->detail, b->detail_len, b->etag);
}

static void blob_done(void *cls)
{
    boards_ranking_release(cls);
}

enum MHD_Result api_board_rankings(struct http_req *r)
{
    struct board *b = boards_find(r->boards, r->params[0]);
    const char *gpu = http_query(r, "gpu");
    struct board_ranking *blob = NULL;
    struct kj_err err;
    int g;

    if (b == NULL)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%.64s'", r->params[0]);
    if (gpu == NULL || gpu[0] == '\0')
        return http_error(r, MHD_HTTP_BAD_REQUEST, "missing_gpu",
                          "add ?gpu=NAME (one of this leaderboard's gpus)");
    if ((g = boards_gpu(b, gpu)) < 0) {
        char safe[72];
        kj_printable(safe, sizeof safe, gpu, 64);
        return http_error(r, MHD_HTTP_BAD_REQUEST, "unknown_gpu",
                          "leaderboard %s does not run on '%s'", b->spec->name, safe);
    }
    kj_err_clear(&err);
    if (boards_ranking(r->srv, b, g, &blob, &err) != 0)
        return http_internal(r, &err);
    return http_shared_json(r, MHD_HTTP_OK, blob->body, blob->len, blob->etag, blob_done, blob);
}
