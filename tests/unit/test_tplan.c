/*
 * test_tplan.c - unit tests for runner/tplan.c, the plan of timing protocol
 * v2: buffer sets per case, visits and batches over the rounds (simulated
 * here as judge_time.c drives them), stream lanes, the table of GPU
 * constants, and the outputs' fingerprint on the host (common/kjhash.h).
 * Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "box.h"
#include "kjhash.h"
#include "stats.h"
#include "tplan.h"

static void test_sets(void)
{
    long long h200 = 150ll << 30;
    /* fp8_quant's largest case: 2 x 117 MB + 0.9 MB. */
    uint64_t big = 2ull * 4096 * 7168 * 4 + 4096ull * 56 * 4;
    KT_CHECK(tplan_sets(big, h200, BOX_MAX_SETS) == BOX_MAX_SETS, "235 MB cases get 8 sets: %d",
             tplan_sets(big, h200, BOX_MAX_SETS));
    KT_CHECK(tplan_sets(1ull << 30, h200, BOX_MAX_SETS) == 4, "1 GiB: 4 (4 GiB budget)");
    KT_CHECK(tplan_sets(3ull << 30, h200, BOX_MAX_SETS) == 1, "3 GiB: 1");
    KT_CHECK(tplan_sets(40ull << 30, h200, BOX_MAX_SETS) == 1, "larger than the budget: still 1");
    KT_CHECK(tplan_sets(1ull << 30, 16ll << 30, BOX_MAX_SETS) == 2,
             "a 16 GiB card: an eighth of its memory, 2 GiB");
    KT_CHECK(tplan_sets(0, h200, BOX_MAX_SETS) == BOX_MAX_SETS, "an empty case");
    KT_CHECK(tplan_sets(1024, 0, BOX_MAX_SETS) == BOX_MAX_SETS, "memory unknown: the budget");
    KT_CHECK(tplan_sets(1024, h200, 3) == 3 && tplan_sets(1024, h200, 0) == 1, "max_sets");
}

/* The rounds of one shape as judge_v2_visit drives them: per round one
 * visit of batches from tplan_next_batch until it says 0. */
struct sim { long n, batches, max_batch, visits, over_visit; };

static void simulate(long planned, int sets, int rounds, long max_samples, struct sim *out)
{
    long per_visit = tplan_visit_samples(planned, rounds);
    memset(out, 0, sizeof *out);
    for (int r = 0; r < rounds; r++) {
        long done = 0;
        int k;
        while ((k = tplan_next_batch(sets, per_visit, done, out->n, max_samples)) > 0) {
            out->n += k;
            done += k;
            out->batches++;
            out->max_batch = k > out->max_batch ? k : out->max_batch;
        }
        out->over_visit += done > per_visit;
        out->visits++;
    }
}

static void test_rounds(void)
{
    struct sim s;
    KT_CHECK(tplan_visit_samples(2858, 4) == 715 && tplan_visit_samples(100, 4) == 25 &&
             tplan_visit_samples(101, 4) == 26 && tplan_visit_samples(7, 1) == 7 &&
             tplan_visit_samples(7, 0) == 7 && tplan_visit_samples(0, 4) == 1, "visit sizes");
    /* fp8_quant fast on the H200: 2858, 2341 and 334 planned samples. */
    long planned[] = {2858, 2341, 334, 100, 101, 10000, 1};
    int sets[] = {8, 8, 8, 8, 3, 8, 1};
    for (size_t i = 0; i < sizeof planned / sizeof planned[0]; i++) {
        simulate(planned[i], sets[i], TPLAN_ROUNDS, 10000, &s);
        KT_CHECK(s.n >= planned[i] && s.n < planned[i] + TPLAN_ROUNDS, "planned %ld: %ld timed",
                 planned[i], s.n);
        KT_CHECK(s.max_batch <= sets[i] && s.over_visit == 0 && s.visits == TPLAN_ROUNDS,
                 "planned %ld: batches of at most %d sets, visits as planned", planned[i], sets[i]);
        KT_CHECK(s.batches == TPLAN_ROUNDS *
                 ((tplan_visit_samples(planned[i], TPLAN_ROUNDS) + sets[i] - 1) / sets[i]),
                 "planned %ld: %ld batches", planned[i], s.batches);
    }
    /* The cap wins over the visit. */
    simulate(10000, 8, TPLAN_ROUNDS, 9990, &s);
    KT_CHECK(s.n == 9990, "never past max_samples: %ld", s.n);
    KT_CHECK(tplan_next_batch(8, 100, 100, 0, 10000) == 0 &&
             tplan_next_batch(8, 100, 95, 0, 10000) == 5 &&
             tplan_next_batch(8, 100, 0, 9997, 10000) == 3 &&
             tplan_next_batch(0, 100, 0, 0, 10000) == 0 &&
             tplan_next_batch(8, 100, 0, 10000, 10000) == 0, "next batch");
    /* A whole job: 1 lead-in per batch and an empty kernel every 8 timed
     * samples cost fp8_quant fast about 25 % more samples than it times. */
    long timed = 0, batches = 0;
    for (int i = 0; i < 3; i++) {
        simulate(planned[i], 8, TPLAN_ROUNDS, 10000, &s);
        timed += s.n;
        batches += s.batches;
    }
    KT_CHECK(timed == 5544 && batches == 704, "fp8_quant fast: %ld timed in %ld batches", timed,
             batches);
    KT_CHECK(timed / TPLAN_EMPTY_EVERY >= 600, "about 690 empty-kernel samples");
}

/* The wall cap shared by the rounds: a short shape that the cap would end
 * during its last rounds takes fewer samples per visit instead. */
static void test_fit(void)
{
    /* fp8_quant fast's 7 us shape on the H200: 2858 planned, 0.866 ms of
     * wall per timed sample (batch, fingerprint and check included). */
    KT_CHECK(tplan_fit_visit(358, 7, 358, 0.31, 2.2) == 275, "7 visits left in 1.67 s: %ld",
             tplan_fit_visit(358, 7, 358, 0.31, 2.2));
    KT_CHECK(tplan_fit_visit(42, 7, 42, 0.04, 2.2) == 42, "a shape far from its cap keeps its visits");
    KT_CHECK(tplan_fit_visit(300, 3, 1000, 2.1, 2.2) == 1, "past the share already: 1 per visit");
    KT_CHECK(tplan_fit_visit(300, 0, 1000, 1.0, 2.2) == 300 &&
             tplan_fit_visit(300, 3, 0, 0, 2.2) == 300 && tplan_fit_visit(0, 3, 0, 0, 2.2) == 1,
             "nothing to fit to");
    KT_CHECK(tplan_fit_visit(300, 3, 100, 0.1, 1e9) == 300, "no wall cap (exact sample counts)");
    /* Every planned round gets its share, and the rounds end within the share. */
    const double per_sample = 0.000866, cap = TPLAN_MAX_WALL_S;
    long per_visit = tplan_visit_samples(2858, TPLAN_ROUNDS), n = 0, least = per_visit, most = 0;
    double wall = 0;
    for (int round = 0; round < TPLAN_ROUNDS; round++) {
        if (round > 0)
            per_visit = tplan_fit_visit(per_visit, TPLAN_ROUNDS - round, n, wall, cap);
        if (round > 0 && per_visit < least)
            least = per_visit;
        if (round > 0 && per_visit > most)
            most = per_visit;
        n += per_visit;
        wall += (double)per_visit * per_sample;
    }
    KT_CHECK(wall <= TPLAN_WALL_SHARE * cap + per_sample && wall < cap,
             "the rounds end at %.3f s of the %.1f s cap", wall, cap);
    KT_CHECK(least >= 1 && most - least <= 1, "the later visits split it evenly: %ld-%ld", least,
             most);
}

static void test_lanes(void)
{
    int seen[BOX_LANES] = {0};
    for (long b = 0; b < 4 * BOX_LANES; b++)
        seen[tplan_lane(b, BOX_LANES)]++;
    for (int l = 0; l < BOX_LANES; l++)
        KT_CHECK(seen[l] == 4, "lane %d gets every %d-th batch", l, BOX_LANES);
    KT_CHECK(tplan_lane(5, 1) == 0 && tplan_lane(5, 0) == 0 && tplan_lane(-1, 4) == 0,
             "degenerate lanes");
}

static void test_processes(void)
{
    KT_CHECK(tplan_processes(0, 0, 0) == TPLAN_PROCESSES && TPLAN_PROCESSES == 8,
             "a CUDA job ranked on events: eight processes");
    KT_CHECK(tplan_processes(0, 0, 1) == TPLAN_GPU_PROCESSES && TPLAN_GPU_PROCESSES == 2,
             "ranked on GPU time: two (no launch-path offset to average)");
    KT_CHECK(tplan_processes(0, 1, 0) == TPLAN_PY_PROCESSES && tplan_processes(0, 1, 1) == TPLAN_PY_PROCESSES,
             "a Python file: its two either way");
    KT_CHECK(tplan_processes(4, 0, 1) == 4 && tplan_processes(1, 1, 0) == 1 &&
             tplan_processes(TPLAN_ROUNDS, 0, 0) == TPLAN_ROUNDS,
             "--processes N from 1 to the rounds wins");
    KT_CHECK(tplan_processes(TPLAN_ROUNDS + 1, 0, 0) == TPLAN_PROCESSES && tplan_processes(-3, 0, 1) == 2,
             "out of range: as not asked");
}

static void test_gpu_table(void)
{
    const char *where = NULL;
    double e = tplan_gpu_empty_ns("NVIDIA H200", &where);
    KT_CHECK(e > 2000 && e < 4000 && where != NULL && strstr(where, "H200") != NULL,
             "the H200's constant: %g (%s)", e, where ? where : "");
    KT_CHECK(tplan_gpu_empty_ns("NVIDIA H200 NVL", &where) == 0 && where != NULL &&
             where[0] == '\0', "another model is not the H200");
    KT_CHECK(tplan_gpu_empty_ns("nvidia h200", NULL) == 0, "names match exactly");
    KT_CHECK(tplan_gpu_empty_ns(NULL, &where) == 0, "no name");
    /* The constant keeps corrections of the H200's observed offsets (sd
     * 65 ns, range about +-150 ns) well inside the accepted range. */
    KT_CHECK(150.0 < STATS_MAX_OFFSET_FRAC * e, "the range covers the H200's spread");
}

/* The outputs' fingerprint (common/kjhash.h): any changed byte changes it,
 * the salt changes it, the tail shorter than a word counts. */
static void test_fingerprint(void)
{
    unsigned char a[67], c[67];
    for (int i = 0; i < 67; i++)
        a[i] = (unsigned char)(i * 37 + 11);
    uint64_t h = kjhash_host(a, 67, 5);
    KT_CHECK(h == kjhash_host(a, 67, 5), "the same bytes, the same fingerprint");
    KT_CHECK(h != kjhash_host(a, 67, 6), "another salt, another fingerprint");
    int all = 1;
    for (int i = 0; i < 67; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(c, a, sizeof c);
            c[i] ^= (unsigned char)(1u << bit);
            all &= kjhash_host(c, 67, 5) != h;
        }
    KT_CHECK(all, "every one-bit change of 67 bytes (a 3-byte tail) changes it");
    /* Swapping two words changes it: the index is part of each term. */
    memcpy(c, a, sizeof c);
    memcpy(c, a + 4, 4);
    memcpy(c + 4, a, 4);
    KT_CHECK(kjhash_host(c, 67, 5) != h, "moved words count");
    /* It is a sum of per-word terms: the GPU may add them in any order. */
    uint64_t sum = 0;
    for (int i = 15; i >= 0; i--) {
        uint32_t w;
        memcpy(&w, a + 4 * i, 4);
        sum += kjhash_word(w, (uint64_t)i, 5);
    }
    for (int i = 66; i >= 64; i--)
        sum += kjhash_byte(a[i], (uint64_t)i, 5);
    KT_CHECK(sum == h, "the sum of its terms in any order");
    KT_CHECK(kjhash_host(a, 0, 5) == 0, "nothing: 0");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_sets());
    KT_RUN(test_rounds());
    KT_RUN(test_fit());
    KT_RUN(test_lanes());
    KT_RUN(test_processes());
    KT_RUN(test_gpu_table());
    KT_RUN(test_fingerprint());
    return kt_done("test_tplan");
}
