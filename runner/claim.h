/*
 * claim.h - a claimed job as the server hands it out (POST
 * /api/v1/runner/claim, docs/protocol.md): the fields a runner needs from
 * it and the heartbeat period its lease asks for.
 *
 * Read by the supervisor (serve.c, serve_gap.c) and by the compile-ahead
 * process (ahead.c), which both claim jobs; below both, above nothing of
 * the runner's.
 */
#ifndef KJ_CLAIM_H
#define KJ_CLAIM_H

#include <cjson/cJSON.h>

#define CLAIM_BEAT_MAX_S 20.0 /* a heartbeat at least this often; more often for short leases */

/* A job object's id, attempt (1 when absent), leaderboard, mode and
 * source, borrowed from job; 0 when one is missing or malformed. */
int claim_fields(const cJSON *job, long *id, long *attempt, const char **lb, const char **mode,
                 const char **src);

/* The job's language (enum sub_lang): its "lang", CUDA when absent (a
 * server from before languages) or unknown. */
int claim_lang(const cJSON *job);

/* The heartbeat period of job: CLAIM_BEAT_MAX_S, or a third of its
 * lease_seconds when that is shorter (at least 1 s). */
double claim_beat_s(const cJSON *job);

#endif
