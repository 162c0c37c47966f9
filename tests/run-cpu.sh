#!/usr/bin/env bash
# run-cpu.sh - run every CPU test (unit binaries given as arguments, the
# libFuzzer harnesses of tests/fuzz/ for FUZZ_TEST_SECONDS each, then the API
# tests under tests/api/) and print their sum as the last line:
# "N passed, N failed, N skipped". Exit status is 0 only when nothing failed
# and every suite ran to its summary line. The unit binaries and the API
# suites run KJ_TEST_JOBS at a time (default 2: each suite keeps its own
# temporary folders, ports and log file, and every suite must pass with a
# second `make test` beside it anyway); their results print in order.
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
jobs=${KJ_TEST_JOBS:-2}
case "$jobs" in ''|*[!0-9]*|0) echo "KJ_TEST_JOBS must be a positive number" >&2; exit 2 ;; esac
# lanes NAME_CMD...: run each "name|command" KJ_TEST_JOBS at a time, each
# into $log/name.out with its exit status in $log/name.rc; then tally them in
# the order given, with the lines of each that say what failed or was skipped.
lanes() {
  local spec name cmd running=0
  for spec in "$@"; do
    name=${spec%%|*}; cmd=${spec#*|}
    rm -f "$log/$name.rc"
    ( bash -c "$cmd" >"$log/$name.out" 2>&1; echo $? >"$log/$name.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  for spec in "$@"; do
    name=${spec%%|*}
    grep -E '^(FAIL|SKIP)|ERROR: (Address|Undefined)|runtime error' "$log/$name.out" | head -20 >&2
    tally "$name" "$log/$name.out" "$(cat "$log/$name.rc" 2>/dev/null || echo 99)"
  done
}
units=()
for t in "$@"; do
  units+=("$(basename "$t")|exec $(printf %q "$t")")
done
[ ${#units[@]} -gt 0 ] && lanes "${units[@]}"
fuzz=()
for src in tests/fuzz/fuzz_*.c; do
  [ -e "$src" ] && fuzz+=("build/fuzz/$(basename "$src" .c)")
done
if [ ${#fuzz[@]} -gt 0 ]; then
  tests/fuzz/run.sh "${FUZZ_TEST_SECONDS:-15}" "${fuzz[@]}" >"$log/fuzz.out" 2>&1; rc=$?
  grep -E '^(FAIL|SKIP)|^  ' "$log/fuzz.out" | head -30 >&2
  tally fuzz "$log/fuzz.out" "$rc"
fi
api=()
for t in tests/api/test_*.py; do
  [ -e "$t" ] || continue
  api+=("$(basename "$t" .py)|PYTHONUNBUFFERED=1 exec timeout 600 python3 $(printf %q "$t")")
done
[ ${#api[@]} -gt 0 ] && lanes "${api[@]}"
fail=$((fail + broken))
echo "total: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
