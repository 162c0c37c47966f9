/*
 * api.h - the request handlers the route table in http.c points at.
 *
 * One file per resource: api_submissions.c (users submit and read
 * submissions), api_leaderboards.c (boards and rankings), api_runner.c
 * (GPU hosts claim jobs and post results), api_meta.c (health, OpenAPI,
 * whoami) and web.c (static files). Each handler answers with one http_*
 * call from http.h, or parks the request (wait.h).
 */
#ifndef KJ_API_H
#define KJ_API_H

#include "http.h"

/* api_submissions.c */
enum MHD_Result api_sub_create(struct http_req *r);
enum MHD_Result api_sub_list(struct http_req *r);
enum MHD_Result api_sub_get(struct http_req *r);
enum MHD_Result api_sub_events(struct http_req *r);

/* api_leaderboards.c */
/* At start: build srv->boards and srv->boards_list from srv->specs (reads each description). */
int api_boards_build(struct server *srv, struct kj_err *err);
enum MHD_Result api_boards_list(struct http_req *r);
enum MHD_Result api_board_get(struct http_req *r);
enum MHD_Result api_board_rankings(struct http_req *r);

/* api_runner.c */
enum MHD_Result api_runner_claim(struct http_req *r);
enum MHD_Result api_runner_event(struct http_req *r);
enum MHD_Result api_runner_result(struct http_req *r);

/* api_meta.c */
/* At start: read srv->openapi_path into srv->openapi (it must parse as JSON). */
int api_openapi_load(struct server *srv, struct kj_err *err);
enum MHD_Result api_healthz(struct http_req *r);
enum MHD_Result api_openapi(struct http_req *r);
enum MHD_Result api_me(struct http_req *r);

/* web.c */
enum MHD_Result web_index(struct http_req *r);
enum MHD_Result web_static(struct http_req *r);

#endif
