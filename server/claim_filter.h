/*
 * claim_filter.h - the optional "modes" and "skip" of a runner's claim
 * body (POST /api/v1/runner/claim, docs/protocol.md), read into the
 * struct db_claim_filter that db_job_claim applies.
 *
 * A runner between two rounds of a timed job fills the gap with a short
 * test-mode job: it claims with "modes": ["test"] and "skip" naming the
 * jobs it gave back in earlier gaps of the same timed job. api_runner.c
 * parses the body with cJSON, then calls claim_filter_parse() before it
 * claims or marks the runner seen, so a malformed filter changes nothing.
 * Pure: no database, no HTTP (tests/unit/test_claim_filter.c).
 */
#ifndef KJ_CLAIM_FILTER_H
#define KJ_CLAIM_FILTER_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "db.h"
#include "kj_err.h"
#include "protocol.h"

#define CLAIM_FILTER_MAX_ID 9007199254740991.0 /* 2^53 - 1: larger JSON numbers lose exactness */

/* Read body's "modes" (absent: every mode; else a non-empty array of at
 * most KJ_MODE_COUNT mode names, repeats allowed) and "skip" (absent or
 * []: none; else an array of at most KJ_CLAIM_MAX_SKIP submission ids,
 * whole numbers from 1 to CLAIM_FILTER_MAX_ID) into *out. out->skip points
 * into ids (KJ_CLAIM_MAX_SKIP entries, the caller's), so *out lives no
 * longer than ids. Returns 0, or KJ_EINVAL with err's message naming the
 * field and what it must hold (the text of the 400 bad_claim); *out is
 * then the empty filter. */
int claim_filter_parse(const cJSON *body, struct db_claim_filter *out,
                       int64_t ids[KJ_CLAIM_MAX_SKIP], struct kj_err *err);

#endif
