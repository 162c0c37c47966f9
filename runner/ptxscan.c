/*
 * ptxscan.c - see ptxscan.h. Finds the entry's body by its ".entry NAME("
 * line and the next ".entry" (or the end), then looks for instruction
 * mnemonics as whole tokens.
 */
#include "ptxscan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTX_REGS_PER_BLOCK 65536
#define PTX_REG_UNIT 256 /* registers are allocated per warp in units of 256 */

/* First occurrence of needle in [p, end) that starts a token; lo is the
 * start of the whole text (nothing before it to look at). */
static const char *find_in(const char *lo, const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; p + n <= end; p++) {
        if (memcmp(p, needle, n) != 0)
            continue;
        if (p == lo || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.'))
            return p;
    }
    return NULL;
}

/* Within a body, the character before any match is inside the text. */
static const char *find_token(const char *p, const char *end, const char *needle)
{
    return find_in(p, p, end, needle);
}

/* [*body, *end) = the text of entry name; 0 if absent. */
static int entry_body(const char *ptx, size_t len, const char *name, const char **body,
                      const char **end)
{
    const char *stop = ptx + len, *p = ptx;
    size_t n = strlen(name);
    while ((p = find_in(ptx, p, stop, ".entry")) != NULL) {
        const char *q = p + 6;
        while (q < stop && (*q == ' ' || *q == '\t'))
            q++;
        if ((size_t)(stop - q) > n && memcmp(q, name, n) == 0 && (q[n] == '(' || isspace((unsigned char)q[n]))) {
            const char *next = find_token(q + n, stop, ".entry");
            *body = q + n;
            *end = next ? next : stop;
            return 1;
        }
        p = q;
    }
    return 0;
}

static int has(const char *b, const char *e, const char *mnemonic)
{
    return find_token(b, e, mnemonic) != NULL;
}

void ptxscan_kernel(const char *ptx, size_t len, struct compile_kernel *k)
{
    const char *b, *e, *m;
    int maxntid = 0;
    k->tensor_cores[0] = '\0';
    k->uses_tma = k->uses_bulk_copy = k->uses_cp_async = 0;
    if (ptx == NULL || k->lowered[0] == '\0' || !entry_body(ptx, len, k->lowered, &b, &e)) {
        k->max_threads_per_block = ptxscan_max_threads(k->registers, 0);
        return;
    }
    if (has(b, e, "wgmma.mma_async"))
        snprintf(k->tensor_cores, sizeof k->tensor_cores, "wgmma");
    else if (has(b, e, "tcgen05.mma"))
        snprintf(k->tensor_cores, sizeof k->tensor_cores, "tcgen05");
    else if (has(b, e, "mma.sync") || has(b, e, "wmma.mma.sync"))
        snprintf(k->tensor_cores, sizeof k->tensor_cores, "mma");
    k->uses_tma = has(b, e, "cp.async.bulk.tensor");
    for (m = b; (m = find_token(m, e, "cp.async.bulk")) != NULL; m++)
        if (strncmp(m, "cp.async.bulk.tensor", 20) != 0 && strncmp(m, "cp.async.bulk.commit", 20) != 0 &&
            strncmp(m, "cp.async.bulk.wait", 18) != 0)
            k->uses_bulk_copy = 1;
    for (m = b; (m = find_token(m, e, "cp.async")) != NULL; m++)
        if (strncmp(m, "cp.async.bulk", 13) != 0)
            k->uses_cp_async = 1;
    /* ".maxntid 128, 1, 1" sits between the parameter list and the body. */
    const char *mx = find_token(b, e, ".maxntid");
    if (mx != NULL) {
        long x = 1, y = 1, z = 1;
        if (sscanf(mx + 8, " %ld , %ld , %ld", &x, &y, &z) >= 1 && x > 0 && y > 0 && z > 0 &&
            x * y * z <= 1024)
            maxntid = (int)(x * y * z);
    }
    k->max_threads_per_block = ptxscan_max_threads(k->registers, maxntid);
}

int ptxscan_max_threads(int registers, int maxntid)
{
    if (registers <= 0)
        return 0;
    int per_warp = (registers * 32 + PTX_REG_UNIT - 1) / PTX_REG_UNIT * PTX_REG_UNIT;
    int threads = PTX_REGS_PER_BLOCK / per_warp * 32;
    if (threads > 1024)
        threads = 1024;
    if (maxntid > 0 && maxntid < threads)
        threads = maxntid;
    return threads;
}
