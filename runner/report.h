/*
 * report.h - prints a result object (docs/protocol.md) for people: the table
 * of `kjudge-runner eval`, and one progress line per judging step.
 * Reads the JSON only; the numbers come from judge.c.
 */
#ifndef KJ_REPORT_H
#define KJ_REPORT_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "protocol.h"

/* The whole result as a readable table. */
void report_table(FILE *f, const cJSON *result, const char *file_name);

/* One line for a progress event (judge_progress_fn signature, ctx = FILE*). */
void report_progress(void *ctx, enum kj_event event, const cJSON *data);

#endif
