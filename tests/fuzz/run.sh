#!/usr/bin/env bash
# run.sh - run libFuzzer harnesses for a bounded time each and count them as
# tests: a harness passes when it ran its time without a crash, a leak, a
# timeout or a broken property, and fails otherwise, with the path of the
# input that did it. Prints "fuzz: N passed, N failed, N skipped" last.
#
#   tests/fuzz/run.sh [--keep] SECONDS build/fuzz/fuzz_X...
#
# Each harness fuzz_X starts from its seed corpus tests/fuzz/corpus/X/
# (never written to), with tests/fuzz/X.dict as its dictionary and the
# libFuzzer flags of tests/fuzz/fuzz_X.options when they exist. New inputs
# go to a scratch folder that is deleted afterwards, or with --keep (make
# fuzz) to build/fuzz-corpus/X/, kept between runs so that long runs build
# on each other. Reproducers go to build/fuzz-artifacts/X/; rerun one with
# `build/fuzz/fuzz_X PATH` from the repository root. Logs: build/fuzz-logs/.
set -u
cd "$(dirname "$0")/../.."
keep=0
if [ "${1:-}" = "--keep" ]; then keep=1; shift; fi
secs=${1:?usage: run.sh [--keep] SECONDS HARNESS...}; shift
pass=0 fail=0 skip=0
mkdir -p build/fuzz-logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for bin in "$@"; do
  harness=$(basename "$bin")          # fuzz_X
  name=${harness#fuzz_}               # X
  log=build/fuzz-logs/$harness.log
  seeds=tests/fuzz/corpus/$name
  art=build/fuzz-artifacts/$name
  if [ ! -x "$bin" ]; then
    echo "FAIL $harness: $bin was not built"; fail=$((fail + 1)); continue
  fi
  if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
    echo "FAIL $harness: no seed corpus in $seeds"; fail=$((fail + 1)); continue
  fi
  if [ $keep -eq 1 ]; then
    work=build/fuzz-corpus/$name; mkdir -p "$work"
  else
    mkdir -p build/fuzz-work; work=$(mktemp -d "build/fuzz-work/$name.XXXXXX")
  fi
  mkdir -p "$art"
  flags=(-max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
         -artifact_prefix="$art/")
  [ -f "tests/fuzz/$name.dict" ] && flags+=(-dict="tests/fuzz/$name.dict")
  if [ -f "tests/fuzz/$harness.options" ]; then
    read -r -a extra < "tests/fuzz/$harness.options"; flags+=("${extra[@]}")
  fi
  # Scratch files of the harness (databases, folders) go to a TMPDIR of its
  # own, removed here even when a crash kept the harness from doing it.
  scratch=$(mktemp -d /dev/shm/kjfuzz.XXXXXX 2>/dev/null || mktemp -d)
  # The harness's own time limit plus a margin for loading the corpus.
  TMPDIR=$scratch timeout -k 10 $((secs + 120)) "$bin" "${flags[@]}" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  rm -rf "$scratch"
  [ $keep -eq 1 ] || rm -rf "$work"
  runs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
  found=$(grep -aoE 'Test unit written to .*' "$log" | sed 's/^Test unit written to //' | tail -n 1)
  if [ $rc -eq 0 ] && [ -n "$runs" ] && [ -z "$found" ]; then
    echo "$harness: ${runs} runs in ${secs} s, nothing found"
    pass=$((pass + 1))
    continue
  fi
  fail=$((fail + 1))
  echo "FAIL $harness: exit $rc after ${runs:-?} runs; log $log"
  grep -aE 'FUZZ PROPERTY FAILED|^SUMMARY|runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' \
    "$log" | head -n 5 | sed 's/^/  /'
  if [ -n "$found" ]; then
    echo "  reproducer: $found"
    echo "  rerun: $bin $found"
  fi
done
echo "fuzz: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
