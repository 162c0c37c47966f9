#!/usr/bin/env bash
# run-cpu.sh - run every CPU test (unit binaries given as arguments, the
# libFuzzer harnesses of tests/fuzz/ for FUZZ_TEST_SECONDS each, then the API
# tests under tests/api/) and print their sum as the last line:
# "N passed, N failed, N skipped". Exit status is 0 only when nothing failed
# and every suite ran to its summary line.
set -u
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pass=0 fail=0 skip=0 broken=0
log=build/test-logs; mkdir -p "$log"
tally() { # $1 suite name, $2 output file, $3 exit status
  local line
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
  if [ -z "$line" ]; then
    echo "$1: no summary line (exit $3); see $2" >&2; broken=$((broken + 1)); return
  fi
  local p f s
  p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
  f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
  s=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+' || echo 0)
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ${s:-0}))
  if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$1: exited $3 after its summary; see $2" >&2; broken=$((broken + 1))
  fi
  echo "$line"
}
for t in "$@"; do
  name=$(basename "$t")
  "$t" >"$log/$name.out" 2>&1; rc=$?
  grep -E '^(FAIL|SKIP)|ERROR: (Address|Undefined)|runtime error' "$log/$name.out" | head -20 >&2
  tally "$name" "$log/$name.out" "$rc"
done
fuzz=()
for src in tests/fuzz/fuzz_*.c; do
  [ -e "$src" ] && fuzz+=("build/fuzz/$(basename "$src" .c)")
done
if [ ${#fuzz[@]} -gt 0 ]; then
  tests/fuzz/run.sh "${FUZZ_TEST_SECONDS:-15}" "${fuzz[@]}" >"$log/fuzz.out" 2>&1; rc=$?
  grep -E '^(FAIL|SKIP)|^  ' "$log/fuzz.out" | head -30 >&2
  tally fuzz "$log/fuzz.out" "$rc"
fi
for t in tests/api/test_*.py; do
  [ -e "$t" ] || continue
  name=$(basename "$t" .py)
  PYTHONUNBUFFERED=1 timeout 600 python3 "$t" >"$log/$name.out" 2>&1; rc=$?
  grep -E '^(FAIL|SKIP)' "$log/$name.out" | head -20 >&2
  tally "$name" "$log/$name.out" "$rc"
done
fail=$((fail + broken))
echo "total: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
