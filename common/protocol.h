/*
 * protocol.h - the wire vocabulary kjudge-server and kjudge-runner share:
 * submission modes, verdicts and progress event names, each an enum with
 * one name table (protocol.c).
 *
 * The names are what crosses the network (docs/protocol.md), what the
 * SQLite CHECK lists accept (server/db.c builds them from these tables)
 * and what users read. Code compares enums, never the strings: parse a
 * name once where it enters (kj_*_parse), print it where it leaves
 * (kj_*_name).
 */
#ifndef KJ_PROTOCOL_H
#define KJ_PROTOCOL_H

#include <stddef.h>

/* POST /runner/claim's "skip": at most this many submission ids (docs/protocol.md). */
#define KJ_CLAIM_MAX_SKIP 16

/* The version of the timing a result's medians were measured with, sent
 * with the protocol's name ("timing": {"protocol": "v2", "version": 1}).
 * Raise it with every change that moves scores (the protocol's code, a GPU
 * model's empty-kernel constant in runner/tplan.c, the statistics): the
 * server never ranks results of two versions together, and `kjudge admin
 * rejudge` brings a board's ranked submissions to the new one
 * (docs/rejudge.md). A result that names no version is version 1. */
#define KJ_TIMING_VERSION 1
/* The version a result names when its score ranks GPU time (CUPTI, docs/
 * timing.md) instead of events: another measure, never ranked with them.
 * KJ_TIMING_GPU_REV counts the changes that move GPU-time scores alone
 * (2: the stopping rule's half-tick test, runner/tplan.h TPLAN_GPU_TICK_NS;
 * 3: a call's copies and sets in its span, runner/gputime.h, and 2.5 ms of
 * samples per shape, runner/tplan.h TPLAN_GPU_MIN_TOTAL_S). */
#define KJ_TIMING_GPU_REV 3
#define KJ_TIMING_VERSION_GPU_TIME (100000 + 1000 * KJ_TIMING_GPU_REV + KJ_TIMING_VERSION)
#define KJ_TIMING_VERSION_MAX 1000000 /* the largest version a result may name */
/* Whether timing version v ranks GPU time (the versions above 100000). */
#define KJ_TIMING_VERSION_IS_GPU(v) ((v) > 100000)

/* What a submission asks the runner to do (DESIGN.md "Modes and verdicts"). */
enum kj_mode {
    KJ_MODE_TEST = 0,    /* compile; every test shape once, checked */
    KJ_MODE_BENCHMARK,   /* test, then every benchmark shape timed, public seeds */
    KJ_MODE_LEADERBOARD, /* benchmark with secret seeds; the only ranked mode */
    KJ_MODE_PROFILE,     /* test, then the benchmark shapes (or one) under Nsight Compute */
    KJ_MODE_SANITIZE,    /* the test shapes under compute-sanitizer (docs/profile.md) */
    KJ_MODE_COUNT
};

/* The compute-sanitizer tools a sanitize request may pick (memcheck when
 * it picks none). */
enum kj_sanitizer {
    KJ_SAN_MEMCHECK = 0,
    KJ_SAN_RACECHECK,
    KJ_SAN_INITCHECK,
    KJ_SAN_SYNCCHECK,
    KJ_SAN_COUNT
};

/* The outcome of a judged submission. Every verdict but KJ_V_INTERNAL is
 * the submission's doing; KJ_V_INTERNAL is the judge's own fault, never
 * charged to the user and retried. */
enum kj_verdict {
    KJ_V_ACCEPTED = 0,
    KJ_V_COMPILE_ERROR,
    KJ_V_REJECTED,      /* bad directives or launch configuration */
    KJ_V_WRONG_ANSWER,
    KJ_V_RUNTIME_ERROR,
    KJ_V_TIME_LIMIT,
    KJ_V_INTERNAL,
    KJ_V_COUNT
};

/* Progress events a runner posts for a job (and the server's own "queued"),
 * in the order a job produces them. */
enum kj_event {
    KJ_EV_QUEUED = 0, /* server: the job entered the queue (position, attempt) */
    KJ_EV_COMPILING,  /* runner: compilation started */
    KJ_EV_COMPILED,   /* runner: compile report */
    KJ_EV_TEST,       /* runner: one test shape checked */
    KJ_EV_BENCHMARK,  /* runner: one benchmark shape timed */
    KJ_EV_VERDICT,    /* runner: the verdict, last */
    KJ_EV_COUNT
};

/* Static lower-case wire name; "?" for a value out of range. */
const char *kj_mode_name(enum kj_mode m);
const char *kj_verdict_name(enum kj_verdict v);
const char *kj_event_name(enum kj_event e);
const char *kj_sanitizer_name(enum kj_sanitizer t);

/* The enum named by s (exact, case-sensitive match). Returns 0 and sets
 * *out, or -1 when s is NULL or names nothing (then *out is untouched). */
int kj_mode_parse(const char *s, enum kj_mode *out);
int kj_verdict_parse(const char *s, enum kj_verdict *out);
int kj_event_parse(const char *s, enum kj_event *out);
int kj_sanitizer_parse(const char *s, enum kj_sanitizer *out);

/* 1 for the modes that run the timed benchmark protocol (benchmark,
 * leaderboard); profile and sanitize never time anything. */
int kj_mode_timed(enum kj_mode m);

/* Write "'a','b',..." of every name of a table into buf (an SQL IN list),
 * for the CHECK constraints. Returns 0, or -1 when buf is too small. */
int kj_mode_sql_list(char *buf, size_t size);
int kj_verdict_sql_list(char *buf, size_t size);

#endif
