/*
 * http_route.h - the route table (http_route.c): a request's route and
 * path parameters, and the routes' names for the metrics.
 */
#ifndef KJ_HTTP_ROUTE_H
#define KJ_HTTP_ROUTE_H

#include <stddef.h>
#include "http.h"

/* Find r's route by r->method and r->path: returns 0 with r->route and
 * r->params set, or 404, or 405 with allow (size allowsz) listing the
 * methods of the path ("GET, HEAD, POST"). */
unsigned http_route_find(struct http_req *r, char *allow, size_t allowsz);

/* The index of rt in the table (the metrics' slot), -1 for NULL. */
int http_route_index(const struct http_route *rt);

/* The method and pattern of each route, in table order, into methods[] and
 * patterns[] (static strings; at most max). Returns the number of routes. */
int http_route_names(const char **methods, const char **patterns, int max);

#endif
