/*
 * api_detail.c - GET /api/v1/submissions/{id}/detail: one submission as an
 * entry of a kernel index.
 *
 * Reads the submission (db_sub_get), its place in its board's rankings
 * (the cached rankings of boards.c), the compiled kernels and
 * per-shape launches and medians from the runner's stored result, and the
 * same user's previous submission to that board, which diff.c compares
 * with it. Visible to whom GET /submissions/{id} is (api_sub_view): the
 * owner, admins and, once the board's sources are published, anyone signed
 * in get everything (source and diff included); others get a ranked
 * submission's ranking fields only (rank, per-shape medians); anything else
 * is 404. Secret seeds never appear: only named keys are copied out of the
 * result.
 */
#include "api.h"
#include "db_rejudge.h"
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"rank": k, "of": N, "text": "#k of N"} when s is its user's ranked
 * entry on its board and GPU type, else null. */
static int rank_json(struct http_req *r, const struct db_sub *s, cJSON **out, struct kj_err *err)
{
    struct board *b = boards_find(r->boards, s->leaderboard);
    struct board_ranking *blob = NULL;
    int g, rc;
    *out = cJSON_CreateNull();
    if (b == NULL || s->mode != KJ_MODE_LEADERBOARD || !s->has_verdict ||
        s->verdict != KJ_V_ACCEPTED || s->disqualified || (g = boards_gpu(b, s->gpu)) < 0)
        return 0;
    if ((rc = boards_ranking(r->srv, b, g, &blob, err)) != 0)
        return rc;
    for (int i = 0; i < blob->n; i++) {
        if (blob->ids[i] != s->id)
            continue;
        char text[48];
        cJSON_Delete(*out);
        *out = cJSON_CreateObject();
        snprintf(text, sizeof text, "#%d of %d", blob->ranks[i], blob->n);
        cJSON_AddNumberToObject(*out, "rank", blob->ranks[i]);
        cJSON_AddNumberToObject(*out, "of", blob->n);
        cJSON_AddStringToObject(*out, "text", text);
        break;
    }
    boards_ranking_release(blob);
    return 0;
}

/* "timing": the timing s's result was measured with, and for a
 * leaderboard submission "ranking_timing": the one its ranking holds
 * (db_rejudge.h; each null when none), so an accepted entry that is not
 * ranked says why. */
static int timing_json(struct http_req *r, const struct db_sub *s, cJSON *o, struct kj_err *err)
{
    struct db_timing t[2];
    int rc = db_sub_timing(r->srv->db, s->id, &t[0], err);
    if (rc == 0 && s->mode == KJ_MODE_LEADERBOARD)
        rc = db_rank_timing(r->srv->db, s->leaderboard, s->gpu, &t[1], err);
    for (int i = 0; rc == 0 && i < (s->mode == KJ_MODE_LEADERBOARD ? 2 : 1); i++) {
        const char *key = i == 0 ? "timing" : "ranking_timing";
        if (t[i].protocol[0] == '\0') {
            cJSON_AddNullToObject(o, key);
            continue;
        }
        cJSON *x = cJSON_AddObjectToObject(o, key);
        cJSON_AddStringToObject(x, "protocol", t[i].protocol);
        cJSON_AddNumberToObject(x, "version", t[i].version);
    }
    return rc;
}

/* "kernels" and "shapes" out of the stored result (absent keys are left
 * out); ranked_only: "shapes" with the rankings' keys, no "kernels". */
static void add_result_parts(cJSON *o, const char *result, int ranked_only)
{
    static const char *const rkeys[] = {"index", "shape", "median_ns", "corrected_median_ns",
                                        NULL};
    static const char *const kkeys[] = {"name", "lowered", "registers", "smem_static",
                                        "stack_frame", "spill_stores", "spill_loads",
                                        "max_threads_per_block", "barriers", "tensor_cores",
                                        "tma", "bulk_copy", "cp_async", NULL};
    static const char *const skeys[] = {"index", "shape", "status", "median_ns",
                                        "corrected_median_ns", "ci_lo_ns", "ci_hi_ns", "n",
                                        "floor_ns", "below_floor", "launches", NULL};
    cJSON *res = result != NULL ? cJSON_Parse(result) : NULL, *it;
    cJSON *kernels = ranked_only ? NULL : cJSON_AddArrayToObject(o, "kernels");
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    const cJSON *compile = cJSON_GetObjectItemCaseSensitive(res, "compile");
    if (kernels != NULL)
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(compile, "kernels"))
            if (cJSON_IsObject(it))
                cJSON_AddItemToArray(kernels, api_pick(it, kkeys));
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(res, "benchmarks"))
        if (cJSON_IsObject(it))
            cJSON_AddItemToArray(shapes, api_pick(it, ranked_only ? rkeys : skeys));
    cJSON_Delete(res);
}

/* "a/quant.cu (#12)": a diff label from a stored (already checked) file name. */
static void label(char *buf, size_t sz, char side, const struct db_sub *s)
{
    char name[DB_MAX_FILE_NAME];
    kj_printable(name, sizeof name, s->file_name, sizeof name - 1);
    snprintf(buf, sz, "%c/%s (#%lld)", side, name, (long long)s->id);
}

/* "previous", and for those allowed the "source" and "diff" keys. */
static int add_previous(struct http_req *r, cJSON *o, const struct db_sub *s, int source,
                        struct kj_err *err)
{
    static const struct diff_limits lim = {3, KJ_DIFF_MAX_LINES, KJ_DIFF_MAX_EDITS,
                                           KJ_DIFF_MAX_BYTES};
    struct db_sub prev;
    char la[DB_MAX_FILE_NAME + 32], lb[DB_MAX_FILE_NAME + 32], *text = NULL;
    int rc = db_sub_prev(r->srv->db, s, &prev, err), nadd = 0, ndel = 0;
    if (rc == KJ_ENOTFOUND) {
        cJSON_AddNullToObject(o, "previous");
        if (source)
            cJSON_AddNullToObject(o, "diff");
        return 0;
    }
    if (rc != 0)
        return rc;
    cJSON *p = cJSON_AddObjectToObject(o, "previous");
    cJSON_AddNumberToObject(p, "id", (double)prev.id);
    cJSON_AddStringToObject(p, "mode", kj_mode_name(prev.mode));
    cJSON_AddStringToObject(p, "status", db_status_name(prev.status)); /* queued: no verdict */
    if (prev.has_verdict)
        cJSON_AddStringToObject(p, "verdict", kj_verdict_name(prev.verdict));
    else
        cJSON_AddNullToObject(p, "verdict");
    api_add_score(p, &prev);
    api_add_time(p, "created_at", prev.created_at);
    cJSON_AddStringToObject(p, "source_sha256", prev.source_sha256);
    if (source) {
        label(la, sizeof la, 'a', &prev);
        label(lb, sizeof lb, 'b', s);
        rc = diff_unified(prev.source != NULL ? prev.source : "", prev.source_len,
                          s->source != NULL ? s->source : "", s->source_len, la, lb, &lim, &text,
                          &nadd, &ndel, err);
        if (rc == KJ_ELIMIT) { /* too large to show: say so, not an error */
            cJSON_AddNullToObject(o, "diff");
            cJSON_AddStringToObject(o, "diff_note", err->msg);
            rc = 0;
        } else if (rc == 0) {
            cJSON *d = cJSON_AddObjectToObject(o, "diff");
            cJSON_AddStringToObject(d, "unified", text);
            cJSON_AddNumberToObject(d, "added", nadd);
            cJSON_AddNumberToObject(d, "removed", ndel);
        }
        free(text);
    }
    db_sub_clear(&prev);
    return rc;
}

/* "artifacts": the files the job left that GET .../artifacts/{name} serves
 * ([{name, bytes}]; profile mode's report), so a page offers only what exists. */
static int add_artifacts(struct http_req *r, cJSON *o, const struct db_sub *s, struct kj_err *err)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "artifacts");
    int64_t size = -1;
    int rc;
    if (s->mode != KJ_MODE_PROFILE)
        return 0;
    if ((rc = db_artifact_size(r->srv->db, s->id, "profile.ncu-rep", &size, err)) != 0)
        return rc;
    if (size >= 0) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "name", "profile.ncu-rep");
        cJSON_AddNumberToObject(a, "bytes", (double)size);
        cJSON_AddItemToArray(arr, a);
    }
    return 0;
}

static int count_lines(const char *t, size_t n)
{
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += t[i] == '\n';
    return lines + (n > 0 && t[n - 1] != '\n');
}

/* The detail of s as JSON into *out, for view (not API_VIEW_NONE): the
 * ranked view has no file facts, kernels, previous submission or source. */
static int detail_json(struct http_req *r, const struct db_sub *s, enum api_view view,
                       cJSON **out, struct kj_err *err)
{
    cJSON *o = cJSON_CreateObject(), *rank = NULL;
    int source = view >= API_VIEW_PUBLISHED, rc;
    *out = NULL;
    if (KJ_NEVER(view == API_VIEW_NONE)) {
        cJSON_Delete(o);
        return KJ_FAIL(err, KJ_EINTERNAL, "no view of submission %lld to show",
                       (long long)s->id);
    }
    api_sub_summary(o, s);
    if (source) {
        cJSON_AddStringToObject(o, "file_name", s->file_name);
        cJSON_AddStringToObject(o, "source_sha256", s->source_sha256);
        cJSON_AddNumberToObject(o, "source_bytes", (double)s->source_len);
        cJSON_AddNumberToObject(o, "source_lines", count_lines(s->source, s->source_len));
    }
    if ((rc = rank_json(r, s, &rank, err)) != 0) {
        cJSON_Delete(rank);
        cJSON_Delete(o);
        return rc;
    }
    cJSON_AddItemToObject(o, "rank", rank);
    if (source && (rc = timing_json(r, s, o, err)) != 0) {
        cJSON_Delete(o);
        return rc;
    }
    add_result_parts(o, s->result, !source);
    cJSON_AddBoolToObject(o, "source_visible", source);
    if (!source) {
        *out = o;
        return 0;
    }
    cJSON_AddStringToObject(o, "source", s->source != NULL ? s->source : "");
    if ((rc = add_artifacts(r, o, s, err)) != 0 || (rc = add_previous(r, o, s, source, err)) != 0) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return 0;
}

enum MHD_Result api_sub_detail(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    enum api_view view;
    struct db_sub s;
    struct kj_err err;
    cJSON *o = NULL;
    int rc;
    if (id == 0)
        return api_sub_not_found(r);
    kj_err_clear(&err);
    rc = api_sub_view(r, id, &s, &view, &err);
    db_sub_clear(&s);
    if (rc == KJ_ENOTFOUND || (rc == 0 && view == API_VIEW_NONE))
        return api_sub_not_found(r);
    if (rc == 0 && (rc = db_sub_get(r->srv->db, id, 1, &s, &err)) == 0)
        rc = detail_json(r, &s, view, &o, &err);
    db_sub_clear(&s);
    if (rc == KJ_ENOTFOUND) /* gone in between: cannot happen, nothing is deleted */
        return api_sub_not_found(r);
    if (rc != 0)
        return http_internal(r, &err);
    return http_json(r, MHD_HTTP_OK, o);
}
