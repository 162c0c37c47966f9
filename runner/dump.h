/*
 * dump.h - `kjudge-runner eval --dump DIR`: the inputs and outputs of every
 * shape as raw files, for checking a board's kernels against an
 * independent implementation (tests/oracle).
 *
 * The judge (judge.c) runs every test and benchmark shape once without
 * timing, copies both boxes' buffers to the host, and hands them here: the
 * inputs as the trusted code built them (fill kernel and generate.cu, from
 * the reference box), the outputs of the evaluated file (from the
 * submission box). Layout of DIR:
 *
 *   manifest.json   {"leaderboard", "mode": "dump", "cases": [{"kind":
 *                   "test"|"benchmark", "index", "vars": {NAME: int},
 *                   "seed": "decimal u64", "status": "pass"|"fail",
 *                   "buffers": [{"name", "dtype", "shape": [ints], "role",
 *                   "file", "atol", "rtol" (outputs, evaluated)}]}]}
 *   test0/x.bin ... raw little-endian arrays in C order
 *
 * manifest.json is written last, so its presence means the dump is whole.
 */
#ifndef KJ_DUMP_H
#define KJ_DUMP_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "plan.h"
#include "spec.h"

struct dump {
    char dir[1024];
    cJSON *manifest;   /* owned */
    cJSON *cases;      /* borrowed from manifest */
};

/* Create dir (and no more than its last component), refuse one that holds
 * anything but an earlier dump, start the manifest. */
int dump_open(struct dump *d, const char *dir, const struct spec *s, struct kj_err *err);

/* Write case cp (its kind, index, variables, buffer shapes and tolerances
 * from the plan) run with seed: input buffers from in_region, outputs from
 * out_region, both laid out as the plan says. status is "pass" or "fail"
 * (what the judge's own check said). */
int dump_case(struct dump *d, const struct spec *s, const struct case_plan *cp, uint64_t seed,
              const unsigned char *in_region, const unsigned char *out_region,
              const char *status, struct kj_err *err);

/* Write manifest.json (atomically: temporary file, then rename) and free. */
int dump_close(struct dump *d, struct kj_err *err);

/* Free without writing the manifest (after an error). */
void dump_abort(struct dump *d);

#endif
