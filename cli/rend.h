/*
 * rend.h - turn the server's JSON into text for a terminal.
 *
 * The commands (cmd_*.c) and the progress display (prog.c) print through
 * these: times in ns/us/ms, shapes "T=256 H=4096", launch configurations,
 * aligned tables, the per-shape timing table of a result, and a failed
 * verdict's evidence (compile log, mismatches with their indices, the CUDA
 * error). Everything the server sends is untrusted text: rend_clean()
 * drops control bytes (escape sequences included) before it is printed.
 * Pure functions over cJSON values and a FILE *; no I/O besides writing.
 */
#ifndef KJ_REND_H
#define KJ_REND_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#define REND_MAX_COLS 12
#define REND_MAX_CELL 200   /* bytes of one table cell; longer ones end in "..." */

/* Copy src into dst (dstsz bytes) without control characters: C0 bytes,
 * DEL and UTF-8 C1 code points become '?', a tab a blank. NULL -> "". */
void rend_clean(char *dst, size_t dstsz, const char *src);

/* A duration in nanoseconds as "987 ns", "9.888 us", "1.234 ms" or "2.500 s";
 * "-" for a negative or non-finite value. */
void rend_ns(double ns, char *buf, size_t bufsz);

/* A shape object {"T": 256, "H": 4096} as "T=256 H=4096" (keys in order). */
void rend_shape(const cJSON *shape, char *buf, size_t bufsz);

/* A launches array [{"kernel", "grid": [x,y,z], "block": [...], "smem"}]
 * as "quant grid(1024,1,1) block(32,8,1) smem 0", several joined by "; ". */
void rend_launches(const cJSON *launches, char *buf, size_t bufsz);

/* A JSON number or string value as text ("-" for anything else). */
void rend_value(const cJSON *v, char *buf, size_t bufsz);

/* An aligned text table. Cells are copied (cleaned, cut at REND_MAX_CELL). */
struct rend_tab {
    int ncols;
    const char *head[REND_MAX_COLS]; /* borrowed: static column titles */
    int right[REND_MAX_COLS];        /* 1: align the column right (numbers) */
    char **cells;                    /* owned: nrows * ncols strings */
    int nrows, cap;
};

/* Set up t with ncols titles (static strings); right-aligned columns are
 * those whose title starts with '>' (the '>' is not printed). */
void rend_tab_init(struct rend_tab *t, int ncols, const char *const *heads);
/* Add a row of t->ncols cells (NULL = ""). -1 when out of memory. */
int rend_tab_add(struct rend_tab *t, const char *const *cells);
/* Print the titles, a rule and every row; nothing but "(none)" when empty. */
void rend_tab_print(const struct rend_tab *t, FILE *out);
/* Cut the cells of column col (with "...") so that the table printed is at
 * most max columns wide; the column keeps at least 8. max <= 0: no limit. */
void rend_tab_fit(struct rend_tab *t, int col, int max);
/* Free the cells; t can be initialized again. */
void rend_tab_free(struct rend_tab *t);

/* Print text line by line, each cleaned and prefixed by indent; at most
 * max_lines lines, then a note of how many were left out. */
void rend_block(FILE *out, const char *text, const char *indent, int max_lines);

/* Write a JSON text (len bytes, the server's answer for --json) to out
 * unchanged but for control characters, which never reach a terminal: in a
 * string, each C0 byte, DEL and UTF-8 C1 code point becomes its \u00XX
 * escape (the same string for a JSON reader); between tokens a newline
 * stays, a tab or CR becomes a blank and anything else \u00XX. */
void rend_json(FILE *out, const char *body, size_t len);

/* The per-shape timing table of a result object: shape, median, 95% CI,
 * floor, n and launch, and a flag for a median below its floor. */
void rend_timing(FILE *out, const cJSON *result);

/* A mismatch object as "x_q: 12 of 1024 elements differ (max abs err ...)"
 * and its first mismatches "[0, 17] expected 1.5 got 2", under indent. */
void rend_mismatch(FILE *out, const cJSON *mismatch, const char *indent);

/* The evidence of a failed submission (the owner's view): the message,
 * the compile log, the failing tests or shapes with their mismatches or
 * CUDA errors, the judge's reason. */
void rend_evidence(FILE *out, const cJSON *sub);

/* rend_tool.c: profile mode's summary, per shape and launch (id: the
 * submission's number, for the artifact command it suggests), and sanitize
 * mode's findings by kind; each prints nothing when result has none. */
void rend_profile(FILE *out, const cJSON *result, const char *id);
void rend_sanitize(FILE *out, const cJSON *result);

#endif
