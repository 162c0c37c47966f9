#!/usr/bin/env bash
# run.sh - `make bench`: every benchmark under bench/, each printing a table.
# Needs a GPU (and ncu for timing_fidelity). Binaries from bin/; shared
# libraries a GPU host lacks may sit in .gpulibs/ (see docs/contributing.md).
set -eu
cd "$(dirname "$0")/.."
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
echo "## bench/bench_timing_fidelity"; python3 bench/bench_timing_fidelity.py
echo; echo "## bench/bench_e2e_latency"; python3 bench/bench_e2e_latency.py
echo; echo "## bench/bench_score_stability"; python3 bench/bench_score_stability.py
echo; echo "## bench/bench_queue"; python3 bench/bench_queue.py
