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

/* A stop drops a claim in flight (curlc's abort flag) only once the claim
 * has waited this long for the start of its answer, and never one whose
 * answer has begun: a claim the server has just answered with a job (its
 * lease already running) is read to its end and the job given back, not
 * stranded until its lease runs out. A claim this old with no answer is
 * parked (the server checks a parked claim's connection before it hands it
 * a job), so a stop ends an idle runner within this time and a second. */
#define CLAIM_STOP_ANSWER_MS 5000L

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
