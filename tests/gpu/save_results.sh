#!/usr/bin/env bash
# save_results.sh - on a GPU host: judge fp8_quant's template, examples and a
# few verdict cases with `kjudge-runner eval --json` in each mode and save
# each result as real_<case>_<mode>.json in DIR (default the result-check
# seed corpus, tests/fuzz/corpus/result_check/). tests/unit/test_result_check.c
# then checks that the server takes every one of them as the runner wrote it
# (nothing refused, no key dropped), and the fuzzer starts from them.
# Usage: tests/gpu/save_results.sh [DIR]; needs bin/kjudge-runner (make all).
set -u
cd "$(dirname "$0")/../.."
dir=${1:-tests/fuzz/corpus/result_check}
mkdir -p "$dir"
lb=leaderboards/fp8_quant
n=0
for src in "$lb/template.cu" "$lb/examples/fast.cu" "$lb/examples/wrong.cu" "$lb/examples/broken.cu" \
           tests/gpu/cases/modifies_input.cu tests/gpu/cases/out_of_bounds.cu \
           tests/gpu/cases/infinite_loop.cu tests/gpu/cases/block_too_big.cu; do
  [ -e "$src" ] || continue
  for mode in test benchmark leaderboard; do
    case $(basename "$src" .cu) in infinite_loop|out_of_bounds|block_too_big|modifies_input)
      [ "$mode" = test ] || continue;; esac
    out="$dir/real_$(basename "$src" .cu)_$mode.json"
    bin/kjudge-runner eval "$src" --leaderboard fp8_quant --mode "$mode" --time-limit 60 --json \
      >"$out" 2>/dev/null
    rc=$?
    if [ "$rc" -gt 1 ] || [ ! -s "$out" ]; then
      echo "save_results: $src ($mode): eval exited $rc, nothing saved" >&2
      rm -f "$out"
    else
      n=$((n + 1))
    fi
  done
done
echo "save_results: $n results saved in $dir"
