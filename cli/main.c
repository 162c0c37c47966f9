/*
 * main.c - `kjudge`, the command-line client of a kjudge server.
 *
 * Parses the global options (--json anywhere, --help, --version), loads
 * the config (kjconf.c) and the KJUDGE_URL / KJUDGE_TOKEN overrides, sets
 * up libcurl and runs one command from the table below (cmd_*.c), whose
 * result is the exit code: 0 done (a submission accepted), 1 a submission
 * got another verdict, 2 a usage, configuration, network or server error.
 */
#include "kjc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define KJUDGE_CLI_VERSION "1.0"

struct command {
    const char *name;
    kjc_cmd fn;
    const char *usage;   /* arguments */
    const char *what;    /* one line */
};

static const struct command commands[] = {
    {"login", cmd_login, "URL [--token T | --invite CODE --name NAME]",
     "check a token (or redeem an invite) and save the server and token in the config file; "
     "without --token or --invite the token is read from standard input"},
    {"whoami", cmd_whoami, "", "the account the token belongs to"},
    {"submit", cmd_submit, "FILE [--leaderboard L] [--gpu G] [--mode test|benchmark|leaderboard|profile|sanitize] "
     "[--tool memcheck|racecheck|initcheck|synccheck] [--shape N] "
     "[--no-wait]",
     "upload a kernel (CUDA C++, or Python in KernelBot's form: a .py file) and follow its "
     "judging live; board, GPU and mode may come from \"//!kjudge leaderboard|gpu|mode\" lines "
     "(a .py's \"#!POPCORN leaderboard|gpu\" lines); exit 0 accepted, 1 another verdict"},
    {"boards", cmd_boards, "", "the leaderboards"},
    {"board", cmd_board, "L", "a leaderboard's statement, kernel arguments, shapes and deadline"},
    {"template", cmd_template, "L [-o FILE] [--force] [--reference] [--lang cuda|python|ptx]",
     "download the board's starter kernel (--lang python: its template.py; or its reference, "
     "once published) to stdout or FILE"},
    {"rankings", cmd_rankings, "L [--gpu G]", "the ranking of a board on one GPU type"},
    {"submissions", cmd_submissions, "[--leaderboard L] [--gpu G] [--mode M] [--verdict V] "
     "[--limit N] [--cursor C] [--user NAME|*]",
     "your submissions, newest first (admins: --user)"},
    {"show", cmd_show, "ID [--source] [--diff [ID2]]",
     "a submission's verdict and evidence or timings; its source; its diff against your previous "
     "submission or against ID2"},
    {"artifact", cmd_artifact, "ID [-o FILE] [--force] [--name profile.ncu-rep]",
     "a profile submission's Nsight Compute report (open it with ncu-ui or ncu --import)"},
    {"events", cmd_events, "ID", "a submission's progress events, live until its verdict"},
    {"withdraw", cmd_withdraw, "ID [--yes]",
     "take your accepted leaderboard-mode submission out of the rankings (kept, marked withdrawn); "
     "cannot be undone: asks first on a terminal, else needs --yes"},
    {"admin", cmd_admin, "users | stats | invite [--days N] | ban NAME | unban NAME | "
     "disqualify ID --reason TEXT | publish L | reload [--force] | "
     "rejudge L [--gpu G] [--since DATE] | rejudge --status L | rejudge --cancel L [--gpu G]",
     "the admin's controls (an admin token)"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: kjudge [--json] COMMAND [ARGS]\n\n");
    for (const struct command *c = commands; c->name != NULL; c++)
        fprintf(out, "  kjudge %s %s\n      %s\n", c->name, c->usage, c->what);
    fprintf(out, "\n--json prints the server's JSON unchanged (for scripts).\n"
            "config: $XDG_CONFIG_HOME/kjudge/config or ~/.config/kjudge/config (mode 0600); "
            "KJUDGE_URL and KJUDGE_TOKEN override it; KJUDGE_CA_FILE names a CA bundle to "
            "trust instead of the system's.\n"
            "exit codes: 0 done (a submission accepted), 1 a submission got another verdict, "
            "2 usage, configuration, network or server error.\n");
}

static const struct command *find(const char *name)
{
    for (const struct command *c = commands; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Remove the global flags from argv (in place); returns the new argc. */
static int take_globals(struct kjc *k, int argc, char **argv, int *help)
{
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            k->json = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            *help = 1;
        else
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    return n;
}

/* Load the config and the environment; a broken config file only matters
 * to commands that need it, but it is reported at once. */
static int load_config(struct kjc *k, const char *cmd)
{
    struct kj_err err;
    kj_err_clear(&err);
    if (kjconf_load(&k->conf, &err) != 0 && strcmp(cmd, "login") != 0)
        return kjc_fail(k, "%s (fix or remove it, or log in again)", err.msg);
    kjconf_env(&k->conf);
    if (k->conf.loose && k->conf.token_from != NULL && strcmp(k->conf.token_from, "config") == 0)
        fprintf(k->err, "kjudge: warning: %s is readable by other users; run: chmod 600 %s\n",
                k->conf.path, k->conf.path);
    return KJC_OK;
}

int main(int argc, char **argv)
{
    struct kjc k;
    struct winsize ws;
    struct kj_err err;
    const struct command *c;
    int help = 0, rc;
    memset(&k, 0, sizeof k);
    k.out = stdout;
    k.err = stderr;
    argc = take_globals(&k, argc, argv, &help);
    if (argc < 2 || strcmp(argv[1], "help") == 0) {
        c = argc > 2 ? find(argv[2]) : NULL;
        if (c != NULL)
            fprintf(stdout, "usage: kjudge %s %s\n%s\n", c->name, c->usage, c->what);
        else
            usage(argc < 2 && !help ? stderr : stdout);
        return argc < 2 && !help ? KJC_ERROR : KJC_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kjudge %s\n", KJUDGE_CLI_VERSION);
        return KJC_OK;
    }
    if ((c = find(argv[1])) == NULL) {
        fprintf(stderr, "kjudge: unknown command '%.64s' (kjudge help lists them)\n", argv[1]);
        return KJC_ERROR;
    }
    if (help) {
        printf("usage: kjudge %s %s\n%s\n", c->name, c->usage, c->what);
        return KJC_OK;
    }
    k.tty = isatty(STDOUT_FILENO);
    k.width = k.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    k.fit = k.tty ? k.width : 0;
    if (getenv("COLUMNS") != NULL && atoi(getenv("COLUMNS")) > 20) /* a pipe to a pager */
        k.fit = atoi(getenv("COLUMNS"));
    if ((rc = load_config(&k, c->name)) != KJC_OK)
        return rc;
    kj_err_clear(&err);
    if (curlc_init(&err) != 0)
        return kjc_fail(&k, "%s", err.msg);
    rc = c->fn(&k, argc - 1, argv + 1);
    kjc_close(&k);
    curlc_cleanup();
    fflush(stdout);
    return rc;
}
