/*
 * main.c - kjudge-runner's command line.
 *
 *   kjudge-runner compile FILE [--leaderboard NAME] [--arch sm_90a]   NVRTC only, no GPU; JSON
 *   kjudge-runner eval FILE [--leaderboard NAME] [--mode M] [--json] [--protocol v1|v2]
 *                                                                      the judge on a local GPU
 *   kjudge-runner serve --server URL [--gpu N] [--name N] [--gpu-type T]  pull jobs from a server
 *                       [--ca-file PEM] [--grace SECONDS]
 *   kjudge-runner probe [--gpu N]                                      describe a GPU as JSON
 *   kjudge-runner calibrate [--gpu N] [--processes N] [--runs N] [--json]
 *                                      a GPU model's constants and tplan.c's row (calib.h)
 * Common: --leaderboards DIR (default: leaderboards). The runner token for
 * serve comes from $KJUDGE_RUNNER_TOKEN or --token-file; a private CA for an
 * https:// server from --ca-file or $KJUDGE_CA_FILE. SIGTERM or SIGINT stops
 * serve: the job being judged gets --grace seconds to finish, else it is
 * given back to the server (a second signal gives it back at once).
 * nvdisasm is looked for in the toolkit, then in .tools/bin beside the
 * program's folder (where deploy/deps.sh puts one: runner/sass.h);
 * CUTLASS's headers in $KJUDGE_CUTLASS_INCLUDE, then .cutlass/include
 * beside the program's folder (runner/compile.h).
 * Exit status: 0 ok / accepted; 1 the submission failed (any other verdict,
 * or a compile error); 2 usage error or the judge's own failure.
 */
#include "ahead.h"
#include "box.h"
#include "calib.h"
#include "cbox.h"
#include "compile.h"
#include "cpus.h"
#include "curlc.h"
#include "directive.h"
#include "box_exec.h"
#include "judge.h"
#include "pydirective.h"
#include "pyenv.h"
#include "sub_lang.h"
#include "kj_file.h"
#include "mono.h"
#include "protocol.h"
#include "tplan.h"
#include "report.h"
#include "rbox.h"
#include "result.h"
#include "sandbox.h"
#include "sass.h"
#include "secret.h"
#include "serve.h"
#include "share.h"
#include "spec.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define EXIT_OK 0
#define EXIT_VERDICT 1
#define EXIT_USAGE 2
#define KJ_TOKEN_FILE_MAX (1 << 20) /* a token file is one line; anything this big is not one */

#ifdef KJ_RUNNER_FAKE_GPU
/* The API tests' build (build/kjudge-runner-fakegpu): serve judges with
 * tests/api/fakegpu.c instead of a GPU. Never in bin/kjudge-runner. */
extern const struct serve_ops fakegpu_ops;
#endif

/* Signals seen: 1 stops serve after the job (within --grace), 2 gives the job back at once. */
static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    if (stop_flag < 2)
        stop_flag++;
}

struct opts {
    const char *cmd, *file, *leaderboard, *arch, *mode, *leaderboards, *server, *name,
        *gpu_type, *token_file, *dump, *ca_file, *protocol, *tool, *trace, *gap, *python, *share;
    int json, gpu, once, compile_unboxed, shape;
    double warmup, time_limit;
    long samples;
    int processes;
    double gpu_plan_ms; /* --gpu-plan-ms; 0: not given */
    double gap_s;       /* --gap-seconds; < 0: not given */
    double grace_s;     /* --grace; < 0: not given */
    int ahead;          /* --ahead; < 0: not given */
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kjudge-runner compile FILE [--leaderboard NAME] [--arch sm_90a]\n"
        "       kjudge-runner eval FILE [--leaderboard NAME]\n"
        "                     [--mode test|benchmark|leaderboard|profile|sanitize]\n"
        "                     [--shape N]     (profile: only benchmark shape N, from 0)\n"
        "                     [--tool memcheck|racecheck|initcheck|synccheck] (sanitize)\n"
        "                     [--json] [--gpu N] [--warmup SECONDS] [--time-limit SECONDS]\n"
        "                     [--samples N]   (exactly N timed calls per shape, for profiling)\n"
        "                     [--protocol v1|v2] (how shapes are timed, docs/timing.md; v2 is\n"
        "                                      the ranked one and the default)\n"
        "                     [--processes N] (v2: submission boxes the rounds are spread\n"
        "                                      over, 1-8; runners use 8, 2 for a job\n"
        "                                      ranked on GPU time)\n"
        "                     [--gpu-plan-ms MS] (v2 ranked on GPU time: sample time each shape\n"
        "                                      is planned for, instead of 5 ms; for benches)\n"
        "                     [--trace FILE]  (v2: every timed and empty-kernel sample as CSV,\n"
        "                                      docs/timing.md 7.2)\n"
        "                     [--gap FILE]    (v2 timed modes: judge FILE as a test-mode job of\n"
        "                                      the board in every gap between rounds, as a\n"
        "                                      runner does with queued test jobs;\n"
        "                                      docs/timing.md 4.1)\n"
        "                     [--dump DIR]    (every shape once, untimed: inputs and outputs\n"
        "                                      as raw files + manifest.json, see runner/dump.h)\n"
        "                     [--compile-unboxed] (NVRTC in this process, not in the compile\n"
        "                                      box: for your own files under ncu, whose fork\n"
        "                                      tracking breaks inside the box)\n"
        "                     [--python PATH] (a Python file: the interpreter of the pinned\n"
        "                                      environment it runs in; also KJUDGE_PYTHON)\n"
        "       kjudge-runner serve --server URL [--gpu N] [--name NAME] [--gpu-type H200]\n"
        "                     [--token-file FILE] [--once]   (token also from KJUDGE_RUNNER_TOKEN)\n"
        "                     [--ca-file PEM]  (a private CA of an https:// server; also\n"
        "                                      KJUDGE_CA_FILE; proxies from https_proxy/no_proxy)\n"
        "                     [--grace SECONDS] (on SIGTERM: finish the job within this, default\n"
        "                                      20, else give it back to the server; 0 = at once)\n"
        "                     [--gap-seconds S] (judge queued test jobs between the rounds of a\n"
        "                                      timed job, each given back when it has no\n"
        "                                      verdict within S; default 2, 0 = never; also\n"
        "                                      eval --gap's limit)\n"
        "                     [--share MODE=HOW,...] (what judges beside or between a job\n"
        "                                      of each mode: side, turns or alone; default\n"
        "                                      test=alone,sanitize=side,profile=turns,\n"
        "                                      benchmark=turns,leaderboard=turns; ranked\n"
        "                                      modes never side; docs/operator-tools.md)\n"
        "                     [--python PATH]  (Python submissions' environment; without it\n"
        "                                      they end internal_error on this runner)\n"
        "                     [--ahead N]     (claim and compile up to N jobs while the GPU\n"
        "                                      judges, 0-3, default 2; a job that does not\n"
        "                                      compile never reaches the GPU; 0 = one job at\n"
        "                                      a time)\n"
        "       kjudge-runner probe [--gpu N]\n"
        "       kjudge-runner --help | -h   (also after any command)\n"
        "       kjudge-runner calibrate [--gpu N] [--processes N] [--runs N] [--json]\n"
        "                     (a GPU model's empty-kernel constant, copy bandwidth and score\n"
        "                                      spread; prints the row for runner/tplan.c)\n"
        "common: --leaderboards DIR (default ./leaderboards)\n"
        "exit: 0 ok/accepted, 1 the submission failed, 2 usage or judge error\n");
}

/* The number v of option flag into *out: all of v, finite, within [lo, hi],
 * and whole when integer is set. -1 after a message on stderr. */
static int opt_num(const char *flag, const char *v, double lo, double hi, int integer,
                   double *out)
{
    char *end = NULL;
    double x = v != NULL ? strtod(v, &end) : NAN;
    if (v == NULL || end == v || *end != '\0' || !isfinite(x) || x < lo || x > hi ||
        (integer && x != floor(x))) {
        fprintf(stderr, "kjudge-runner: %s '%s' is not %s from %.10g to %.10g\n", flag, v ? v : "",
                integer ? "a whole number" : "a number", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->leaderboards = "leaderboards";
    o->mode = "test";
    o->arch = "sm_90a";
    o->gap_s = o->grace_s = -1;
    o->ahead = -1;
    if (argc < 2)
        return -1;
    o->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        struct { const char *flag; const char **dst; } s[] = {
            {"--leaderboard", &o->leaderboard}, {"--arch", &o->arch}, {"--mode", &o->mode},
            {"--leaderboards", &o->leaderboards}, {"--server", &o->server}, {"--name", &o->name},
            {"--gpu-type", &o->gpu_type}, {"--token-file", &o->token_file}, {"--dump", &o->dump},
            {"--ca-file", &o->ca_file}, {"--protocol", &o->protocol},
            {"--tool", &o->tool}, {"--trace", &o->trace}, {"--gap", &o->gap},
            {"--python", &o->python}, {"--share", &o->share},
        };
        int hit = 0;
        for (size_t k = 0; k < sizeof s / sizeof s[0]; k++)
            if (strcmp(a, s[k].flag) == 0) {
                if (v == NULL)
                    return -1;
                *s[k].dst = v;
                i++;
                hit = 1;
            }
        if (hit)
            continue;
        /* Numbers: flag, range, whole, where it goes. */
        struct { const char *flag; double lo, hi; int integer; double x; } n[] = {
            {"--gpu", 0, 1023, 1, 0}, {"--warmup", 0, 3600, 0, 0},
            {"--time-limit", 0, 86400, 0, 0}, {"--samples", 0, 1e7, 1, 0},
            {"--processes", 1, TPLAN_ROUNDS, 1, 0}, {"--shape", 0, SPEC_MAX_CASES - 1, 1, 0},
            {"--gap-seconds", 0, 60, 0, 0}, {"--grace", 0, 3600, 0, 0},
            {"--ahead", 0, AHEAD_SLOTS_MAX, 1, 0}, {"--gpu-plan-ms", 0.1, 1000, 0, 0},
        };
        for (size_t k = 0; k < sizeof n / sizeof n[0] && !hit; k++) {
            if (strcmp(a, n[k].flag) != 0)
                continue;
            if (opt_num(a, v, n[k].lo, n[k].hi, n[k].integer, &n[k].x) != 0)
                return -2;
            i++;
            hit = 1;
            switch (k) {
            case 0: o->gpu = (int)n[k].x; break;
            case 1: o->warmup = n[k].x; break;
            case 2: o->time_limit = n[k].x; break;
            case 3: o->samples = (long)n[k].x; break;
            case 4: o->processes = (int)n[k].x; break;
            case 5: o->shape = 1 + (int)n[k].x; break;
            case 6: o->gap_s = n[k].x; break;
            case 7: o->grace_s = n[k].x; break;
            case 8: o->ahead = (int)n[k].x; break;
            default: o->gpu_plan_ms = n[k].x; break;
            }
        }
        if (hit)
            continue;
        if (strcmp(a, "--json") == 0) o->json = 1;
        else if (strcmp(a, "--once") == 0) o->once = 1;
        else if (strcmp(a, "--compile-unboxed") == 0) o->compile_unboxed = 1;
        else if (a[0] != '-' && o->file == NULL) o->file = a;
        else { fprintf(stderr, "kjudge-runner: unknown argument '%s'\n", a); return -1; }
    }
    return 0;
}

/* The file at path (at most COMPILE_MAX_SOURCE bytes), NUL-terminated,
 * without a leading byte-order mark; NULL after a message on stderr. The
 * caller frees it. */
static char *slurp(const char *path, size_t *len)
{
    struct kj_err err;
    char *buf = NULL;
    size_t n = 0;
    if (kj_read_file(path, COMPILE_MAX_SOURCE, &buf, &n, &err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: %s\n", err.msg);
        return NULL;
    }
    /* A leading UTF-8 byte-order mark is dropped, as the server drops it
     * from a submission: NVRTC and the directive parser would choke on it. */
    if (n >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
        memmove(buf, buf + 3, n - 3);
        n -= 3;
        buf[n] = '\0';
    }
    *len = n;
    return buf;
}

/* The Python environment of Python run boxes (pybox.h): --python, else
 * $KJUDGE_PYTHON; 1 (not configured: py stays empty), 0 found, -1 after a
 * message when the interpreter named does not do. */
static int runner_pyenv(const struct opts *o, struct pyenv *py)
{
    const char *exe = o->python ? o->python : getenv("KJUDGE_PYTHON");
    struct kj_err err;
    memset(py, 0, sizeof *py);
    if (exe == NULL || exe[0] == '\0') {
        fprintf(stderr, "kjudge-runner: a Python submission needs the Python environment to run "
                        "it in: --python PATH (or KJUDGE_PYTHON), e.g. /opt/torch/.venv/bin/python3\n");
        return 1;
    }
    kj_err_clear(&err);
    if (pyenv_find(exe, py, &err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: --python %s: %s\n", exe, err.msg);
        return -1;
    }
    return 0;
}

/* The leaderboard: --leaderboard, else the source's directive. */
static struct spec *load_board(const struct opts *o, const char *src, size_t len)
{
    struct directives d;
    struct kj_err err;
    struct spec *s = NULL;
    char dir[1024];
    const char *name = o->leaderboard;
    struct pydir pd;
    if (name == NULL && sub_lang_detect(o->file, src, len) == SUB_LANG_PYTHON) {
        if (pydir_parse(src, len, &pd, &err) == KJ_OK && pd.leaderboard[0] != '\0')
            name = pd.leaderboard;
    } else if (name == NULL && dir_parse(src, len, &d, &err) == KJ_OK && d.leaderboard[0] != '\0')
        name = d.leaderboard;
    if (name == NULL) {
        fprintf(stderr, "kjudge-runner: name the leaderboard with --leaderboard NAME or a "
                        "'//!kjudge leaderboard NAME' line (Python: '#!POPCORN leaderboard NAME')\n");
        return NULL;
    }
    snprintf(dir, sizeof dir, "%s/%s", o->leaderboards, name);
    if (strchr(name, '/') != NULL || spec_load(dir, &s, &err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: leaderboard '%s': %s\n", name,
                strchr(name, '/') ? "bad name" : err.msg);
        return NULL;
    }
    return s;
}

static void print_json(const cJSON *o)
{
    char *t = cJSON_Print(o);
    if (t != NULL)
        printf("%s\n", t);
    free(t);
}

static int cmd_compile(const struct opts *o)
{
    size_t len;
    struct directives d;
    struct compile_result r;
    struct kj_err err;
    char *src = slurp(o->file, &len);
    int rc = EXIT_USAGE;
    memset(&r, 0, sizeof r);
    if (src == NULL)
        return EXIT_USAGE;
    kj_err_clear(&err);
    if (dir_parse(src, len, &d, &err) != KJ_OK) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "ok", 0);
        cJSON_AddStringToObject(j, "error", err.msg);
        cJSON_AddNumberToObject(j, "line", err.line);
        print_json(j);
        cJSON_Delete(j);
        rc = EXIT_VERDICT;
    } else if (cbox_compile(src, len, &d, o->arch, &r, &err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: %s\n", err.msg);
    } else {
        struct kj_err serr;
        kj_err_clear(&serr);
        if (r.ok && sass_scan(&r, &serr) != KJ_OK && serr.code != KJ_ENOTFOUND)
            fprintf(stderr, "kjudge-runner: instruction classes from the PTX only: %s\n", serr.msg);
        cJSON *j = result_compile_json(&r);
        print_json(j);
        cJSON_Delete(j);
        rc = r.ok ? EXIT_OK : EXIT_VERDICT;
    }
    compile_result_free(&r);
    free(src);
    return rc;
}

/* eval --gap: the test-mode job judged in every gap of the timed one. */
struct eval_gap {
    const struct spec *spec;
    char *src;          /* owned by cmd_eval */
    size_t len;
    double give_up_s;
    int n;              /* gaps so far */
    int failed;         /* 1: a gap job was not accepted (or not judged) */
};

static void eval_gap_fill(void *ctx, const struct secret_list *outer)
{
    struct eval_gap *g = ctx;
    struct judge_job jj;
    struct judge_result *res = NULL;
    struct kj_err err;
    memset(&jj, 0, sizeof jj);
    jj.spec = g->spec;
    jj.source = g->src;
    jj.source_len = g->len;
    jj.mode = KJ_MODE_TEST;
    jj.secrets = outer;
    jj.give_up_s = g->give_up_s;
    kj_err_clear(&err);
    double t0 = mono_now();
    int rc = judge_run(&jj, &res, &err);
    g->n++;
    if (rc != KJ_OK) {
        fprintf(stderr, "kjudge-runner: gap %d: %s (%.2f s)\n", g->n, err.msg, mono_now() - t0);
        g->failed = 1;
        return;
    }
    fprintf(stderr, "kjudge-runner: gap %d: %s (%.2f s)\n", g->n,
            res->has_verdict ? kj_verdict_name(res->verdict) : "?", mono_now() - t0);
    g->failed |= !res->has_verdict || res->verdict != KJ_V_ACCEPTED;
    result_free(res);
}

static int cmd_eval(const struct opts *o)
{
    size_t len;
    char *src = slurp(o->file, &len);
    struct spec *s = src ? load_board(o, src, len) : NULL;
    enum kj_mode mode = KJ_MODE_TEST;
    int mode_ok = kj_mode_parse(o->mode, &mode) == 0, rc = EXIT_USAGE;
    struct judge_result *res = NULL;
    struct secret_list secrets = {0};
    struct kj_err err;
    int proto_ok = o->protocol == NULL || strcmp(o->protocol, "v1") == 0 ||
                   strcmp(o->protocol, "v2") == 0;
    enum kj_sanitizer san = KJ_SAN_MEMCHECK;
    int tool_ok = o->tool == NULL || kj_sanitizer_parse(o->tool, &san) == 0;
    FILE *trace = NULL;
    struct eval_gap gap = {s, NULL, 0, o->gap_s >= 0 ? o->gap_s : SERVE_GAP_DEFAULT_S, 0, 0};
    if (s != NULL && o->gap != NULL && (gap.src = slurp(o->gap, &gap.len)) == NULL)
        goto out;
    if (s == NULL || !mode_ok || !proto_ok || !tool_ok) {
        if (!mode_ok)
            fprintf(stderr, "kjudge-runner: --mode must be test, benchmark, leaderboard, "
                            "profile or sanitize\n");
        if (!tool_ok)
            fprintf(stderr, "kjudge-runner: --tool must be memcheck, racecheck, initcheck or "
                            "synccheck\n");
        if (!proto_ok)
            fprintf(stderr, "kjudge-runner: --protocol must be v1 or v2\n");
        goto out;
    }
    if (o->trace != NULL && (trace = fopen(o->trace, "w")) == NULL) {
        fprintf(stderr, "kjudge-runner: --trace %s: %s\n", o->trace, strerror(errno));
        goto out;
    }
    struct judge_job jj;
    memset(&jj, 0, sizeof jj);
    jj.trace = trace;
    jj.spec = s;
    jj.source = src;
    jj.source_len = len;
    jj.mode = mode;
    jj.gpu = o->gpu;
    jj.protocol = o->protocol != NULL && strcmp(o->protocol, "v1") == 0 ? JUDGE_PROTOCOL_V1
                                                                        : JUDGE_PROTOCOL_V2;
    jj.warmup_s = o->warmup;
    jj.time_limit_s = o->time_limit;
    jj.samples = o->samples;
    jj.processes = o->processes;
    jj.gpu_min_total_s = o->gpu_plan_ms / 1e3;
    jj.dump_dir = o->dump;
    jj.sanitizer = san;
    jj.profile_shape = o->shape;
    jj.compile_unboxed = o->compile_unboxed;
    jj.lang = sub_lang_detect(o->file, src, len);
    static struct pyenv py;
    if (jj.lang == SUB_LANG_PYTHON) {
        if (runner_pyenv(o, &py) != 0)
            goto out;
        jj.pyenv = &py;
    }
    jj.progress = report_progress;
    jj.progress_ctx = stderr;
    if (gap.src != NULL) {
        jj.gap = eval_gap_fill;
        jj.gap_ctx = &gap;
    }
    /* A local leaderboard run has no server secret: draw one for this run,
     * kept from the boxes like a server's. */
    if (getrandom(&jj.secret_seed, sizeof jj.secret_seed, 0) != sizeof jj.secret_seed)
        jj.secret_seed = (uint64_t)getpid();
    secret_add(&secrets, &jj.secret_seed, sizeof jj.secret_seed);
    jj.secrets = &secrets;
    kj_err_clear(&err);
    if (judge_run(&jj, &res, &err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: judge error (not the submission's fault): %s\n", err.msg);
        goto out;
    }
    if (o->json) {
        cJSON *j = result_json(res);
        print_json(j);
        cJSON_Delete(j);
    } else {
        report_table(stdout, res, o->file);
    }
    if (res->artifact[0] != '\0')
        fprintf(stderr, "kjudge-runner: the Nsight Compute report is %s\n", res->artifact);
    rc = res->has_verdict && res->verdict == KJ_V_ACCEPTED ? EXIT_OK : EXIT_VERDICT;
    if (gap.src != NULL)
        fprintf(stderr, "kjudge-runner: %d gap job(s)%s\n", gap.n,
                gap.failed ? ", not all of them accepted" : ", all accepted");
out:
    if (trace != NULL) {
        int werr = ferror(trace); /* a failed write before the close */
        if (fclose(trace) != 0 || werr) {
            fprintf(stderr, "kjudge-runner: --trace %s: not all of it was written: %s\n",
                    o->trace, strerror(errno));
            rc = EXIT_USAGE;
        }
    }
    result_free(res);
    spec_free(s);
    free(src);
    free(gap.src);
    return rc;
}

/* What this host offers: the GPU (exit 2 when there is none) and the
 * sandbox protections, as JSON. */
static int cmd_probe(const struct opts *o)
{
    struct box_device d;
    struct sandbox_probe sp;
    struct kj_err err;
    cJSON *j = cJSON_CreateObject();
    int rc = box_probe(o->gpu, NULL, &d, &err);
    if (rc == KJ_OK) {
        cJSON_AddStringToObject(j, "gpu", d.name);
        cJSON_AddStringToObject(j, "arch", d.arch);
        cJSON_AddStringToObject(j, "pci", d.pci);
        cJSON_AddNumberToObject(j, "sm_count", d.sm_count);
        cJSON_AddNumberToObject(j, "gpu_count", d.gpu_count);
        cJSON_AddNumberToObject(j, "l2_bytes", (double)d.l2_bytes);
        cJSON_AddNumberToObject(j, "memory_bytes", (double)d.total_mem);
        cJSON_AddNumberToObject(j, "driver_api_version", d.driver_version);
        cJSON_AddStringToObject(j, "run_box_sandbox", d.sandbox);
        cJSON_AddBoolToObject(j, "gpu_time", d.gpu_time);
        cJSON_AddStringToObject(j, "gpu_time_note", d.gpu_time_note);
    } else {
        cJSON_AddNullToObject(j, "gpu");
        cJSON_AddStringToObject(j, "gpu_error", err.msg);
        fprintf(stderr, "kjudge-runner: no usable GPU %d: %s\n", o->gpu, err.msg);
    }
    sandbox_probe(&sp);
    cJSON *s = cJSON_AddObjectToObject(j, "sandbox");
    cJSON_AddBoolToObject(s, "root", sp.root);
    cJSON_AddBoolToObject(s, "user_namespace", sp.userns);
    cJSON_AddBoolToObject(s, "mount_namespace", sp.mountns);
    cJSON_AddBoolToObject(s, "network_namespace", sp.netns);
    cJSON_AddBoolToObject(s, "pid_namespace", sp.pidns);
    cJSON_AddBoolToObject(s, "ipc_namespace", sp.ipcns);
    cJSON_AddBoolToObject(s, "uts_namespace", sp.utsns);
    cJSON_AddBoolToObject(s, "no_new_privs", sp.no_new_privs);
    cJSON_AddBoolToObject(s, "seccomp", sp.seccomp);
    cJSON_AddNumberToObject(s, "landlock_abi", sp.landlock_abi);
    cJSON_AddBoolToObject(s, "cgroup2_memory_pids", sp.cgroup2);
    char missing[512];
    rbox_missing(&sp, missing, sizeof missing);
    cJSON_AddStringToObject(s, "missing", missing);
    print_json(j);
    cJSON_Delete(j);
    return rc == KJ_OK ? EXIT_OK : EXIT_USAGE;
}

static int cmd_serve(const struct opts *o)
{
    char token[256] = "", name[128];
    char *env = getenv("KJUDGE_RUNNER_TOKEN");
    const char *ca = o->ca_file;
    double grace = o->grace_s >= 0 ? o->grace_s : SERVE_GRACE_DEFAULT_S;
    struct kj_err err;
    int rc;
    static struct share_policy share;
    char why[200];
    share_default(&share);
    if (o->share != NULL && share_parse(o->share, &share, why, sizeof why) != 0) {
        fprintf(stderr, "kjudge-runner: %s\n", why);
        return EXIT_USAGE;
    }
    /* The token is kept in token[] only (the boxes wipe their copy of it,
     * secret.h): the environment's copy is wiped in place and removed, the
     * file's buffer wiped before it is freed. */
    if (env != NULL && o->token_file == NULL)
        snprintf(token, sizeof token, "%s", env);
    if (env != NULL) {
        explicit_bzero(env, strlen(env));
        unsetenv("KJUDGE_RUNNER_TOKEN");
    }
    if (o->token_file != NULL) {
        char *text = NULL;
        size_t n = 0;
        if (kj_read_file(o->token_file, KJ_TOKEN_FILE_MAX, &text, &n, &err) != KJ_OK || n == 0) {
            fprintf(stderr, "kjudge-runner: cannot read the token file %s\n", o->token_file);
            free(text);
            return EXIT_USAGE;
        }
        snprintf(token, sizeof token, "%.*s", (int)strcspn(text, "\r\n"), text);
        explicit_bzero(text, n);
        free(text);
    }
    if (o->server == NULL || token[0] == '\0') {
        fprintf(stderr, "kjudge-runner: serve needs --server URL and a runner token "
                        "(KJUDGE_RUNNER_TOKEN or --token-file)\n");
        return EXIT_USAGE;
    }
    if (ca == NULL && getenv("KJUDGE_CA_FILE") != NULL && getenv("KJUDGE_CA_FILE")[0] != '\0')
        ca = getenv("KJUDGE_CA_FILE");
    if (ca != NULL && access(ca, R_OK) != 0) {
        fprintf(stderr, "kjudge-runner: cannot read the CA file %s: %s\n", ca, strerror(errno));
        return EXIT_USAGE;
    }
    if (o->name == NULL) {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(name, sizeof name, "%s-gpu%d", host, o->gpu);
    }
    if (curlc_init(&err) != KJ_OK) {
        fprintf(stderr, "kjudge-runner: %s\n", err.msg);
        return EXIT_USAGE;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct serve_cfg c = {
        .server = o->server, .token = token, .ca_file = ca, .gpu = o->gpu,
        .name = o->name ? o->name : name, .gpu_type = o->gpu_type,
        .leaderboards = o->leaderboards, .once = o->once, .grace_s = grace, .stop = &stop_flag,
        .gap_s = o->gap_s >= 0 ? o->gap_s : SERVE_GAP_DEFAULT_S,
        .ahead = o->ahead >= 0 ? o->ahead : AHEAD_SLOTS_DEFAULT,
        .share = &share,
    };
    static struct pyenv py;
    if ((o->python != NULL || getenv("KJUDGE_PYTHON") != NULL)) {
        if (runner_pyenv(o, &py) != 0)
            return EXIT_USAGE;
        c.pyenv = &py;
        c.py_prestart = getenv("KJUDGE_PY_PRESTART") == NULL ||
                        strcmp(getenv("KJUDGE_PY_PRESTART"), "0") != 0;
        c.py_early = getenv("KJUDGE_PY_PRESTART_EARLY") != NULL &&
                     strcmp(getenv("KJUDGE_PY_PRESTART_EARLY"), "1") == 0;
        kj_log(KJ_LOG_INFO, "serve", "Python submissions run with %s (%s)%s%s", py.exe, py.versions,
               c.py_prestart ? "; a Python pair of boxes waits after a Python job" : "",
               c.py_prestart && c.py_early ? ", started held beside a timed one" : "");
    }
#ifdef KJ_RUNNER_FAKE_GPU
    c.ops = &fakegpu_ops;
    c.ahead = o->ahead >= 0 ? o->ahead : 0; /* the API tests ask for it by name */
#endif
    kj_err_clear(&err);
    rc = serve_loop(&c, &err);
    explicit_bzero(token, sizeof token);
    curlc_cleanup();
    if (rc != KJ_OK) {
        fprintf(stderr, "kjudge-runner: %s\n", err.msg);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* nvdisasm for runner/sass.c: when neither $KJUDGE_NVDISASM nor the
 * toolkit has one, the copy deploy/deps.sh fetched into .tools/bin of the
 * checkout this program was built in (bin/..), or of its install folder. */
static void find_nvdisasm(void)
{
    char tool[PATH_MAX], exe[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n;
    if (sass_tool(tool, sizeof tool) == 0)
        return;
    if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
        return;
    exe[n] = '\0';
    char *bindir = dirname(exe); /* .../bin */
    snprintf(path, sizeof path, "%s/../.tools/bin/nvdisasm", bindir);
    if (access(path, X_OK) == 0 && realpath(path, tool) != NULL)
        setenv("KJUDGE_NVDISASM", tool, 1);
}

/* CUTLASS's headers for runner/compile.c: $KJUDGE_CUTLASS_INCLUDE when set
 * (an empty value: none), else the copy deploy/deps.sh unpacked into
 * .cutlass/include of the checkout this program was built in (bin/..), or
 * of its install folder. */
static void find_cutlass(void)
{
    char exe[PATH_MAX], path[PATH_MAX + 32], real[PATH_MAX];
    ssize_t n;
    if (getenv(COMPILE_CUTLASS_ENV) != NULL)
        return;
    if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
        return;
    exe[n] = '\0';
    snprintf(path, sizeof path, "%s/../.cutlass/include", dirname(exe));
    if (realpath(path, real) != NULL && access(real, R_OK | X_OK) == 0)
        setenv(COMPILE_CUTLASS_ENV, real, 1);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (argc >= 2 && strcmp(argv[1], "box-exec") == 0) /* a tool's target (tool.h) */
        return box_exec_main(argc, argv);
    for (int i = 1; i < argc; i++) /* --help or -h anywhere: `serve --help` too */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
    if (argc >= 2 && strcmp(argv[1], "calibrate") == 0) /* its own arguments (calib_run.c) */
        return calib_main(argc, argv);
    int prc = parse_opts(argc, argv, &o);
    if (prc != 0) {
        if (prc == -1) /* -2: a bad number, said already */
            usage(stderr);
        return EXIT_USAGE;
    }
    find_nvdisasm();
    find_cutlass();
    if (cpus_reserved() < 0) { /* read by every compile box (cpus.h) */
        fprintf(stderr, "kjudge-runner: KJUDGE_TIMING_CPUS must be a whole number from 0 to 1024 "
                        "(the CPUs kept free of compiles; unset: one per GPU of the host)\n");
        return EXIT_USAGE;
    }
    if (strcmp(o.cmd, "compile") == 0 && o.file) return cmd_compile(&o);
    if (strcmp(o.cmd, "eval") == 0 && o.file) return cmd_eval(&o);
    if (strcmp(o.cmd, "serve") == 0) return cmd_serve(&o);
    if (strcmp(o.cmd, "probe") == 0) return cmd_probe(&o);
    usage(stderr);
    return EXIT_USAGE;
}
