/*
 * directive_nvrtc.c - the NVRTC options a "//!kjudge nvrtc" line may pass.
 *
 * dir_parse() refuses any other option (naming the allowed ones), and the
 * runner checks again with dir_nvrtc_allowed() before NVRTC sees one
 * (runner/compile.c).
 */
#include "directive_int.h"

#include <stdio.h>
#include <string.h>

/* ---- the NVRTC allow-list ---- */

enum opt_kind {
    OPT_EXACT,  /* the text itself */
    OPT_BOOL,   /* text followed by true or false */
    OPT_REGS,   /* text followed by a register count 16..255 */
    OPT_DEFINE  /* -DNAME or -DNAME=VALUE, VALUE of [A-Za-z0-9_.] */
};

static const struct nvrtc_rule {
    const char *text;
    enum opt_kind kind;
    const char *shown; /* how the allow-list message shows it; NULL = an alias */
} nvrtc_rules[] = {
    {"--use_fast_math", OPT_EXACT, "--use_fast_math"},
    {"-use_fast_math", OPT_EXACT, NULL},
    {"--ftz=", OPT_BOOL, "--ftz=B"},
    {"--prec-div=", OPT_BOOL, "--prec-div=B"},
    {"--prec-sqrt=", OPT_BOOL, "--prec-sqrt=B"},
    {"--fmad=", OPT_BOOL, "--fmad=B"},
    {"--maxrregcount=", OPT_REGS, "--maxrregcount=N"},
    {"-maxrregcount=", OPT_REGS, NULL},
    {"--extra-device-vectorization", OPT_EXACT, "--extra-device-vectorization"},
    {"--generate-line-info", OPT_EXACT, "--generate-line-info"},
    {"-lineinfo", OPT_EXACT, "-lineinfo"},
    {"-D", OPT_DEFINE, "-DNAME[=VALUE]"},
};
#define NVRTC_LIST_NOTE "(B: true|false, N: 16..255)"

void dir_nvrtc_allowed_list(char *buf, size_t sz)
{
    size_t i, used = 0, n;

    buf[0] = '\0';
    for (i = 0; i < sizeof nvrtc_rules / sizeof nvrtc_rules[0]; i++) {
        if (nvrtc_rules[i].shown == NULL)
            continue;
        n = strlen(nvrtc_rules[i].shown);
        if (used + n + 2 > sz)
            return;
        memcpy(buf + used, nvrtc_rules[i].shown, n);
        buf[used + n] = ' ';
        used += n + 1;
        buf[used] = '\0';
    }
    if (used + sizeof NVRTC_LIST_NOTE <= sz)
        memcpy(buf + used, NVRTC_LIST_NOTE, sizeof NVRTC_LIST_NOTE);
}

static int regs_ok(const char *s)
{
    int v = 0, n = 0;

    if (*s == '0')
        return 0;
    for (; dir_is_digit(*s) && n < 4; s++, n++)
        v = v * 10 + (*s - '0');
    return *s == '\0' && n > 0 && v >= 16 && v <= 255;
}

static int define_ok(const char *s)
{
    if (!dir_is_alpha(*s))
        return 0;
    while (dir_is_alnum(*s))
        s++;
    if (*s == '\0')
        return 1;
    if (*s++ != '=' || *s == '\0')
        return 0;
    while (dir_is_alnum(*s) || *s == '.')
        s++;
    return *s == '\0';
}

static int rule_matches(const struct nvrtc_rule *r, const char *opt)
{
    size_t n = strlen(r->text);

    if (r->kind == OPT_EXACT)
        return strcmp(opt, r->text) == 0;
    if (strncmp(opt, r->text, n) != 0)
        return 0;
    opt += n;
    if (r->kind == OPT_BOOL)
        return strcmp(opt, "true") == 0 || strcmp(opt, "false") == 0;
    if (r->kind == OPT_REGS)
        return regs_ok(opt);
    return define_ok(opt);
}

int dir_nvrtc_allowed(const char *opt)
{
    size_t i, n = 0;

    if (opt == NULL)
        return 0;
    while (n < DIR_MAX_OPT && opt[n] != '\0')
        n++;
    if (n >= DIR_MAX_OPT)
        return 0;
    for (i = 0; i < sizeof nvrtc_rules / sizeof nvrtc_rules[0]; i++)
        if (rule_matches(&nvrtc_rules[i], opt))
            return 1;
    return 0;
}
