/*
 * result_tool.c - the schema tables of profile mode's "profile" object and
 * sanitize mode's "sanitize" object in a runner's result (docs/profile.md),
 * used by result_check.c's top-level table (result_int.h). Like every
 * table there: known keys are copied with their types and ranges checked,
 * unknown ones dropped.
 */
#include "result_int.h"

#define BIG 1e18
#define PCT 0, 1e6                /* a percentage (ncu may report slightly above 100) */
#define NUM RK_NUM, RF_NULL

static const struct rc_field f_stall_keys[] = {
    {"reason", RK_STR, 0, 0, 96, NULL}, {"cycles_per_issue", NUM, 0, BIG, NULL},
    {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_stall = {NULL, RK_OBJ, 0, 0, 0, f_stall_keys};

static const struct rc_field f_roof_keys[] = {
    {"flops", NUM, 0, BIG, NULL}, {"intensity_flop_per_byte", NUM, 0, BIG, NULL},
    {"achieved_gflops", NUM, 0, BIG, NULL}, {"peak_fp32_gflops", NUM, 0, BIG, NULL},
    {"peak_dram_gbs", NUM, 0, BIG, NULL}, {"ridge_flop_per_byte", NUM, 0, BIG, NULL},
    {"bound", RK_STR, 0, 0, 16, NULL}, {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_plaunch_keys[] = {
    {"id", NUM, 0, BIG, NULL}, {"kernel", RK_STR, RF_TEXT, 0, 1024, NULL},
    {"grid", RK_STR, 0, 0, 64, NULL}, {"block", RK_STR, 0, 0, 64, NULL},
    {"duration_ns", NUM, 0, BIG, NULL}, {"sm_throughput_pct", NUM, PCT, NULL},
    {"memory_throughput_pct", NUM, PCT, NULL}, {"dram_throughput_pct", NUM, PCT, NULL},
    {"dram_bytes", NUM, 0, BIG, NULL}, {"achieved_gbs", NUM, 0, BIG, NULL},
    {"board_peak_gbs", NUM, 0, BIG, NULL}, {"pct_of_board_bandwidth", NUM, PCT, NULL},
    {"occupancy_achieved_pct", NUM, PCT, NULL}, {"occupancy_theoretical_pct", NUM, PCT, NULL},
    {"registers", NUM, 0, BIG, NULL}, {"shared_static_bytes", NUM, 0, BIG, NULL},
    {"shared_dynamic_bytes", NUM, 0, BIG, NULL}, {"l1_hit_pct", NUM, PCT, NULL},
    {"l2_hit_pct", NUM, PCT, NULL}, {"stalls", RK_ARR, 0, 0, 16, &f_stall},
    {"roofline", RK_OBJ, 0, 0, 0, f_roof_keys}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_plaunch = {NULL, RK_OBJ, 0, 0, 0, f_plaunch_keys};

static const struct rc_field f_pshape_keys[] = {
    {"benchmark", RK_INT, 0, 0, 1e6, NULL}, {"shape", RK_STR, 0, 0, 256, NULL},
    {"launches", RK_ARR, 0, 0, 256, &f_plaunch}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_pshape = {NULL, RK_OBJ, 0, 0, 0, f_pshape_keys};

const struct rc_field rc_profile_keys[] = {
    {"tool", RK_STR, 0, 0, 16, NULL}, {"launches", RK_INT, 0, 0, 1e6, NULL},
    {"shapes", RK_ARR, 0, 0, 256, &f_pshape}, {"note", RK_STR, RF_TEXT, 0, 1024, NULL},
    {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_int3 = {NULL, RK_INT, 0, -1, 4294967295.0, NULL};

static const struct rc_field f_finding_keys[] = {
    {"kernel", RK_STR, RF_TEXT, 0, 256, NULL}, {"file", RK_STR, RF_TEXT, 0, 256, NULL},
    {"line", RK_INT, 0, 0, 1e9, NULL}, {"thread", RK_ARR, 0, 3, 3, &f_int3},
    {"block", RK_ARR, 0, 3, 3, &f_int3}, {"address", RK_STR, 0, 0, 40, NULL},
    {"size", RK_NUM, 0, 0, BIG, NULL}, {"text", RK_STR, RF_TEXT, 0, 512, NULL},
    {"file2", RK_STR, RF_TEXT, 0, 256, NULL}, {"line2", RK_INT, 0, 0, 1e9, NULL},
    {"hazards", RK_NUM, 0, 0, BIG, NULL}, {"test", RK_INT, 0, 0, SPEC_MAX_CASES - 1, NULL},
    {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_finding = {NULL, RK_OBJ, 0, 0, 0, f_finding_keys};

static const struct rc_field f_group_keys[] = {
    {"kind", RK_STR, RF_TEXT, 0, 256, NULL}, {"count", RK_INT, 0, 0, 1e12, NULL},
    {"findings", RK_ARR, 0, 0, 1000, &f_finding}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_group = {NULL, RK_OBJ, 0, 0, 0, f_group_keys};

const struct rc_field rc_sanitize_keys[] = {
    {"tool", RK_STR, 0, 0, 16, NULL}, {"clean", RK_BOOL, 0, 0, 0, NULL},
    {"errors", RK_INT, 0, 0, 1e12, NULL}, {"shown", RK_INT, 0, 0, 1e6, NULL},
    {"more", RK_INT, 0, 0, 1e12, NULL}, {"tool_error_summary", RK_INT, 0, 0, 1e12, NULL},
    {"judge_findings", RK_INT, 0, 0, 1e12, NULL}, {"groups", RK_ARR, 0, 0, 64, &f_group},
    {"note", RK_STR, RF_TEXT, 0, 1024, NULL}, {NULL, 0, 0, 0, 0, NULL}};
