/*
 * report.h - prints a judging result for people: the table of
 * `kjudge-runner eval` (from the struct judge_result that judge.c fills),
 * and one progress line per judging step (from the event's JSON, the same
 * object the supervisor posts). Only reads; the numbers come from judge.c.
 */
#ifndef KJ_REPORT_H
#define KJ_REPORT_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "protocol.h"
#include "result.h"

/* The whole result as a readable table. */
void report_table(FILE *f, const struct judge_result *r, const char *file_name);

/* One line for a progress event (judge_progress_fn signature, ctx = FILE*). */
void report_progress(void *ctx, enum kj_event event, const cJSON *data);

#endif
