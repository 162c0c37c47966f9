/*
 * protocol.c - the name tables of protocol.h, and their lookups.
 * Both binaries link it; the order of each table is the enum's order.
 */
#include "protocol.h"

#include <stdio.h>
#include <string.h>

static const char *const mode_names[KJ_MODE_COUNT] = {"test", "benchmark", "leaderboard",
                                                         "profile", "sanitize"};

static const char *const sanitizer_names[KJ_SAN_COUNT] = {"memcheck", "racecheck", "initcheck",
                                                          "synccheck"};

static const char *const verdict_names[KJ_V_COUNT] = {
    "accepted", "compile_error", "rejected", "wrong_answer",
    "runtime_error", "time_limit", "internal_error"};

static const char *const event_names[KJ_EV_COUNT] = {"queued", "compiling", "compiled",
                                                     "test", "benchmark", "verdict"};

/* ------------------------------------------------------------------ */
/* Private functions                                                   */
/* ------------------------------------------------------------------ */

static const char *name_at(const char *const *names, int count, int i)
{
    return i >= 0 && i < count ? names[i] : "?";
}

static int index_of(const char *const *names, int count, const char *s)
{
    if (s == NULL)
        return -1;
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

static int sql_list(const char *const *names, int count, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return -1;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        int n = snprintf(buf + used, size - used, "%s'%s'", i ? "," : "", names[i]);
        if (n < 0 || (size_t)n >= size - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

const char *kj_mode_name(enum kj_mode m) { return name_at(mode_names, KJ_MODE_COUNT, (int)m); }

const char *kj_verdict_name(enum kj_verdict v)
{
    return name_at(verdict_names, KJ_V_COUNT, (int)v);
}

const char *kj_event_name(enum kj_event e) { return name_at(event_names, KJ_EV_COUNT, (int)e); }

int kj_mode_parse(const char *s, enum kj_mode *out)
{
    int i = index_of(mode_names, KJ_MODE_COUNT, s);
    if (i < 0)
        return -1;
    *out = (enum kj_mode)i;
    return 0;
}

int kj_verdict_parse(const char *s, enum kj_verdict *out)
{
    int i = index_of(verdict_names, KJ_V_COUNT, s);
    if (i < 0)
        return -1;
    *out = (enum kj_verdict)i;
    return 0;
}

int kj_event_parse(const char *s, enum kj_event *out)
{
    int i = index_of(event_names, KJ_EV_COUNT, s);
    if (i < 0)
        return -1;
    *out = (enum kj_event)i;
    return 0;
}

int kj_mode_sql_list(char *buf, size_t size)
{
    return sql_list(mode_names, KJ_MODE_COUNT, buf, size);
}

int kj_verdict_sql_list(char *buf, size_t size)
{
    return sql_list(verdict_names, KJ_V_COUNT, buf, size);
}

const char *kj_sanitizer_name(enum kj_sanitizer t)
{
    return name_at(sanitizer_names, KJ_SAN_COUNT, (int)t);
}

int kj_sanitizer_parse(const char *s, enum kj_sanitizer *out)
{
    int i = index_of(sanitizer_names, KJ_SAN_COUNT, s);
    if (i < 0)
        return -1;
    *out = (enum kj_sanitizer)i;
    return 0;
}

int kj_mode_timed(enum kj_mode m) { return m == KJ_MODE_BENCHMARK || m == KJ_MODE_LEADERBOARD; }
