#!/usr/bin/env python3
"""bench/bench_gap_load: do test-mode jobs judged in the gaps of a timed job move its score?

A runner judges queued test-mode jobs between the rounds of a benchmark or
leaderboard job (runner/serve_gap.c, docs/timing.md 4.1). This bench judges
--kernel on --leaderboard in interleaved rounds; each round has one `quiet`
run and one run per gap kind, in an order that rotates from round to round,
every run a fresh `kjudge-runner eval KERNEL --leaderboard B --mode
leaderboard --json`, a gap run with `--gap FILE`: FILE judged as a test-mode
job in every gap, as a runner does when test jobs are queued. The gap kinds
(--gaps NAME=FILE,...) default to:

  template  the board's template.cu: a typical test job (about 0.5 s a gap)
  heavy     bench/gap_heavy.cu: every SM busy for about a second, the worst
            a participant can put between someone else's rounds

Each gap run records how many gap jobs ran (a run without one is an error:
the load did not happen) and their mean time. Stops after --runs rounds or
before the next round would overrun --budget seconds (at least one round).

OUT (--out, else $OUT, else build/gap_load) gets each run's result
(runs/rNN-VARIANT.json), the runs as gap_load.csv and the table as
table.md: per variant the runs, mean score, CV, range, offset, wall time,
gap jobs per run and their time; for each gap kind the gap - quiet
difference of the mean score in % with a 95 % interval (Welch t) and the
paired difference within rounds, beside the board's resolution_pct and a
verdict. --merge CSV... runs nothing and prints the table of earlier runs.

--fake runs a stand-in for kjudge-runner (this script with --fake-runner):
`eval` prints a seeded score, shifted by $KJ_FAKE_GAP_SHIFT_PCT % when it
is given --gap, and one line per gap on stderr ($KJ_FAKE_GAP=none: no gap
line, =nojson: no JSON) (tests/api/test_gap_load.py). --smoke is --fake
--runs 2, a few seconds (tests/api/test_benches.py).

Sizing: a v2 leaderboard run of fast.cu takes about 9 s on an H200, a gap of
the template about 0.6 s, of the heavy kernel about 1.8 s (seven gaps a run):
a round of the three about 45 s, --runs 8 in about 6 minutes.
Python 3 standard library only.
"""
import json, os, random, re, statistics, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (BenchError, eval_accepted, paired_checks, paired_parser, read_csv_rows, run_to_csv,  # noqa: E402
                    score_cells)
from bench_compile_load import judge, paired, welch  # noqa: E402
from bench_score_stability import gpu_type, resolution_of  # noqa: E402

EVAL_TIMEOUT = 240
DEFAULT_GAPS = "template=leaderboards/fp8_quant/template.cu,heavy=bench/gap_heavy.cu"
FIELDS = ["round", "variant", "seq", "board", "kernel", "gap_file", "verdict", "score_ns", "raw_score_ns",
          "offset_ns", "eval_wall_s", "gap_jobs", "gap_s", "gap_verdicts", "gpu", "driver"]
NEEDED = {"round", "variant", "score_ns", "eval_wall_s", "gap_jobs", "board", "gpu"}
GAP_LINE = re.compile(r"^kjudge-runner: gap (\d+): (.*) \(([0-9.]+) s\)$")


Bad = BenchError  # input the bench cannot measure with: message to print, exit 1


log = lambda msg: print(msg, flush=True)  # noqa: E731


def parse_gaps(spec):
    """"name=file,..." -> [(name, absolute file)]; Bad when malformed or missing."""
    out = []
    for part in spec.split(","):
        name, eq, path = part.partition("=")
        if not eq or not re.fullmatch(r"[a-z][a-z0-9_-]{0,15}", name) or name == "quiet" or not path:
            raise Bad("--gaps wants NAME=FILE,... (names: lowercase letters, digits, _ or -, not 'quiet'), "
                      "not %r" % part)
        path = path if os.path.isabs(path) else os.path.join(ROOT, path)
        if not os.path.isfile(path):
            raise Bad("--gaps %s: no file %s" % (name, path))
        if name in (n for n, _ in out):
            raise Bad("--gaps names %s twice" % name)
        out.append((name, path))
    return out


def run_eval(args, seq, gap_file):
    """One eval in a fresh process: (result dict, stdout, gap lines [(verdict, s)]) or Bad."""
    rest = ["eval", args.kernel, "--leaderboard", args.leaderboard, "--mode", "leaderboard", "--json"]
    if gap_file:
        rest += ["--gap", gap_file]
    cmd = ([sys.executable, os.path.abspath(__file__), "--fake-runner", str(seq)] if args.fake
           else [args.runner]) + rest
    r, p = eval_accepted(cmd, EVAL_TIMEOUT)
    gaps = [(m.group(2), float(m.group(3))) for m in map(GAP_LINE.match, p.stderr.splitlines()) if m]
    return r, p.stdout, gaps


def one_run(args, rnd, variant, gap_file, seq):
    t0 = time.time()
    r, text, gaps = run_eval(args, seq, gap_file)
    wall = time.time() - t0
    if gap_file and not gaps:
        raise Bad("round %d %s: no gap job ran (does this runner know --gap?)" % (rnd, variant))
    with open(os.path.join(args.out, "runs", "r%02d-%s.json" % (rnd, variant)), "w") as f:
        f.write(text)
    t, sysj = r.get("timing") or {}, r.get("system") or {}
    verdicts = sorted(set(v for v, _ in gaps))
    return {"round": rnd, "variant": variant, "seq": seq, "board": args.leaderboard,
            "kernel": os.path.relpath(args.kernel, ROOT), "gap_file": os.path.relpath(gap_file, ROOT) if gap_file
            else "", "verdict": r["verdict"], "score_ns": r["score_ns"],
            "raw_score_ns": t.get("raw_score_ns", r["score_ns"]), "offset_ns": t.get("offset_ns"),
            "eval_wall_s": round(wall, 3), "gap_jobs": len(gaps),
            "gap_s": round(statistics.mean(s for _, s in gaps), 3) if gaps else 0.0,
            "gap_verdicts": " ".join(verdicts), "gpu": sysj.get("gpu", ""), "driver": sysj.get("driver", "")}


def run_all(args, writer, rows):
    t_start, seq, longest = time.time(), 0, 0.0
    variants = [("quiet", None)] + args.gaps
    for rnd in range(1, args.runs + 1):
        el = time.time() - t_start
        if rnd > 1 and el + longest > args.budget:
            log("budget: %.0f s used, a round takes up to %.0f s: stopping after %d rounds" % (el, longest, rnd - 1))
            break
        t_round = time.time()
        k = (rnd - 1) % len(variants)
        for variant, gap_file in variants[k:] + variants[:k]:
            seq += 1
            row = one_run(args, rnd, variant, gap_file, seq)
            rows.append(row)
            writer.writerow(row)
            log("[%4.0f s] round %2d %-9s %10.3f us (raw %.3f, offset %+.0f ns)  %5.1f s  %d gap jobs of %.2f s %s"
                % (time.time() - t_start, rnd, variant, row["score_ns"] / 1e3, row["raw_score_ns"] / 1e3,
                   row["offset_ns"] or 0, row["eval_wall_s"], row["gap_jobs"], row["gap_s"], row["gap_verdicts"]))
        longest = max(longest, time.time() - t_round)


def report(rows, out_dir):
    """Print the tables and verdicts of rows, also into out_dir/table.md; 0 when the
    quiet runs and every gap kind have at least two runs."""
    lines = []
    emit = lines.append
    first = rows[0] if rows else {"kernel": "?", "board": "", "gpu": "", "driver": ""}
    gpu, board = gpu_type(first["gpu"]), first["board"]
    res = resolution_of(board, gpu) if board else None
    variants = ["quiet"] + sorted(set(r["variant"] for r in rows) - {"quiet"})
    emit("gap jobs in the gaps of %s, board %s, GPU %s (%s), driver %s" % (first["kernel"], board or "?", gpu or "?",
                                                                        first["gpu"], first.get("driver") or "?"))
    emit("")
    emit("| variant | runs | mean score us | CV % | range % | mean offset ns | s per run | gap jobs per run (min) "
         "| s per gap job |")
    emit("|---|---|---|---|---|---|---|---|---|")
    by = {v: [r for r in rows if r["variant"] == v] for v in variants}
    for v, rs in by.items():
        s = [r["score_ns"] for r in rs]
        if not s:
            emit("| %s | 0 |%s" % (v, " - |" * 7))
            continue
        emit("| %s | %s | %.1f | %.1f (%d) | %.2f |" % (
            v, score_cells(rs), statistics.mean(r["eval_wall_s"] for r in rs),
            statistics.mean(r["gap_jobs"] for r in rs), min(r["gap_jobs"] for r in rs),
            statistics.mean(r["gap_s"] or 0 for r in rs)))
    q = [r["score_ns"] for r in by["quiet"]]
    emit("")
    emit("| gap - quiet | difference %% | 95 %% interval %% | df | published resolution_pct (%s) |" % (gpu or "?"))
    emit("|---|---|---|---|---|")
    ress = "%.2f" % res if res is not None else "none"
    verdicts, ok = [], len(q) >= 2
    for v in variants[1:]:
        g = [r["score_ns"] for r in by[v]]
        pairs = {}
        for r in rows:
            if r["variant"] in ("quiet", v):
                pairs.setdefault((r.get("_src", 0), r["round"]), {})[r["variant"]] = r["score_ns"]
        ds = [100 * (p[v] - p["quiet"]) / p["quiet"] for p in pairs.values() if len(p) == 2]
        w, pw = welch(g, q), paired(ds)
        if w:
            w = (100 * w[0] / statistics.mean(q), 100 * w[1] / statistics.mean(q), w[2])
        ok = ok and w is not None
        for name, label, x in (("Welch", "%s, mean score (Welch t)" % v, w),
                               ("paired", "%s, paired within %d rounds" % (v, len(ds)), pw)):
            emit("| %s | %s | %s | %s | %s |" % ((label, "%+.3f" % x[0], "%+.3f .. %+.3f" % (x[0] - x[1], x[0] + x[1]),
                                                 "%.1f" % x[2], ress) if x else (label, "-", "-", "-", ress)))
            verdicts.append("verdict (%s, %s): gap - quiet %+.3f %% +- %.3f %%: %s" % (v, name, x[0], x[1],
                                                                                    judge(x[0], x[1], res))
                            if x else "verdict (%s, %s): not enough runs (at least 2 of each, in 2 rounds)"
                            % (v, name))
    emit("")
    lines.extend(verdicts)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    return 0 if ok and len(variants) > 1 else 1


def read_rows(paths):
    """The runs of earlier calls' gap_load.csv files, typed; Bad when one lacks columns."""
    rows = read_csv_rows(paths, NEEDED, ("score_ns", "raw_score_ns", "offset_ns", "eval_wall_s", "gap_s", "round",
                                         "gap_jobs"), "gap_load.csv")
    for r in rows:
        if not r["variant"] or r["score_ns"] is None or r["round"] is None or r["gap_jobs"] is None:
            raise Bad("%s: no variant, score, round or gap_jobs" % r["_line"])
        r["gap_jobs"] = int(r["gap_jobs"])
    return rows


def main(argv=None):
    ap = paired_parser("gap_load", __doc__, "rounds of one quiet run and one per gap kind (default 8)")
    ap.add_argument("--gaps", default=DEFAULT_GAPS, help="NAME=FILE,... the gap kinds (default %s)" % DEFAULT_GAPS)
    args = ap.parse_args(argv)
    try:
        if args.merge:
            return report(read_rows(args.merge), args.out)
        paired_checks(args, ("runs", "budget"))
        args.gaps = parse_gaps(args.gaps)
        os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
        log("gap_load: %s on %s, up to %d rounds of quiet, %s; budget %d s%s"
            % (os.path.relpath(args.kernel, ROOT), args.leaderboard, args.runs, ", ".join(n for n, _ in args.gaps),
               args.budget, " (fake runner)" if args.fake else ""))
        return run_to_csv(os.path.join(args.out, "gap_load.csv"), FIELDS, lambda w, rows: run_all(args, w, rows), report,
                          args.out)
    except Bad as e:
        print("gap_load: %s" % e, file=sys.stderr, flush=True)
        return 1


def fake_runner(seq, argv):
    """kjudge-runner eval as the bench calls it, without a GPU."""
    how = os.environ.get("KJ_FAKE_GAP", "")
    if how == "nojson":
        print("kjudge-runner: cuInit failed", file=sys.stderr)
        return 2
    gap = "--gap" in argv
    time.sleep(0.2)
    rnd = random.Random(seq * 7919 + 17)
    shift = float(os.environ.get("KJ_FAKE_GAP_SHIFT_PCT", "0")) if gap else 0.0
    score = 7000.0 * (1 + rnd.gauss(0, 0.001)) * (1 + shift / 100)
    off = rnd.gauss(0, 10)
    if gap and how != "none":
        for k in range(1, 8):
            print("kjudge-runner: gap %d: accepted (0.%d1 s)" % (k, k), file=sys.stderr)
        print("kjudge-runner: 7 gap job(s), all accepted", file=sys.stderr)
    print(json.dumps({"verdict": "accepted", "message": "fake", "score_ns": score, "mode": "leaderboard",
                      "timing": {"protocol": "v2", "corrected": True, "offset_ns": off, "raw_score_ns": score + off},
                      "system": {"gpu": "NVIDIA H200", "driver": "580.159.04"}}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--fake-runner":
        sys.exit(fake_runner(int(sys.argv[2]), sys.argv[3:]))
    sys.exit(main())
