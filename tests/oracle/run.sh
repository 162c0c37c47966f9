#!/usr/bin/env bash
# run.sh - the oracle suite, on a GPU host with PyTorch (python3 -c 'import torch').
#   1. tests/oracle/test_oracle.py: the oracle's own checks on synthetic dumps;
#   2. for every leaderboards/*/leaderboard.json: dump the board's reference.cu
#      (`kjudge-runner eval ... --dump`, every test and benchmark shape once)
#      and run oracle.py on it: it must pass;
#   3. for every tests/oracle/broken/B.cu: copy board B to a temporary
#      leaderboards folder with that file as its reference.cu, dump it the
#      same way, and run oracle.py: it must FAIL (the oracle catches the bug).
# Prints the oracle's lines, then "oracle-suite: N passed, N failed, N skipped";
# exits 0 only when nothing failed.
#
# Environment: PYTHON (default python3); ORACLE_DUMP, the dump command, called
# as `$ORACLE_DUMP FILE --leaderboard B --leaderboards DIR --dump OUT` (default
# "bin/kjudge-runner eval", whose --dump runs every shape once;
# "python3 tests/oracle/emu/emu.py --cases tests" runs the plain kernels on the
# CPU instead, to test this script without a GPU); ORACLE_KEEP=1 keeps the
# dumps and logs (their folder is printed).
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
DUMP=${ORACLE_DUMP:-bin/kjudge-runner eval}
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
pass=0 fail=0 skip=0
work=$(mktemp -d "${TMPDIR:-/tmp}/kjoracle.XXXXXX")
if [ "${ORACLE_KEEP:-0}" = 1 ]; then echo "oracle-suite: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

ok()   { pass=$((pass + 1)); echo "PASS $*"; }
bad()  { fail=$((fail + 1)); echo "FAIL $*"; }
tail_of() { tail -n "${2:-15}" "$1" | sed 's/^/    /'; }

# $1 file, $2 board, $3 leaderboards dir, $4 output dir, $5 log: the dump command.
dump() {
  # shellcheck disable=SC2086  # ORACLE_DUMP is a command line
  $DUMP "$1" --leaderboard "$2" --leaderboards "$3" --dump "$4" >"$5" 2>&1
}

boards=()
for d in leaderboards/*/; do
  [ -f "$d/leaderboard.json" ] && boards+=("$(basename "$d")")
done
broken=(tests/oracle/broken/*.cu)
[ -e "${broken[0]}" ] || broken=()
total=$((1 + ${#boards[@]} + ${#broken[@]}))

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "SKIP oracle suite: $PY cannot import torch"
  echo "oracle-suite: 0 passed, 0 failed, $total skipped"; exit 0
fi
if [ -z "${ORACLE_DUMP:-}" ]; then
  if [ ! -x bin/kjudge-runner ]; then make --no-print-directory all || exit 1; fi
  if ! nvidia-smi -L >/dev/null 2>&1; then
    "$PY" tests/oracle/test_oracle.py >"$work/self.log" 2>&1 && ok "oracle self-test" ||
      { bad "oracle self-test"; tail_of "$work/self.log"; }
    echo "SKIP dumps: no GPU here (nvidia-smi -L failed)"
    echo "oracle-suite: $pass passed, $fail failed, $((total - 1)) skipped"
    [ "$fail" -eq 0 ]; exit
  fi
fi

# 1. the oracle's own tests
if "$PY" tests/oracle/test_oracle.py >"$work/self.log" 2>&1; then
  ok "oracle self-test: $(tail -n 1 "$work/self.log")"
else
  bad "oracle self-test"; tail_of "$work/self.log" 30
fi

# 2. every board's reference must agree with the oracle
for b in "${boards[@]}"; do
  out="$work/ref-$b"
  if ! dump "leaderboards/$b/reference.cu" "$b" leaderboards "$out" "$work/ref-$b.log"; then
    bad "$b: dumping reference.cu failed"; tail_of "$work/ref-$b.log"; continue
  fi
  "$PY" tests/oracle/oracle.py "$out" 2>&1 | tee "$work/oracle-$b.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then ok "$b: reference.cu agrees with the oracle"
  else bad "$b: reference.cu disagrees with the oracle (exit $rc)"; fi
done

# 3. every deliberately broken reference must be caught
for f in "${broken[@]}"; do
  b=$(basename "$f" .cu)
  if [ ! -f "leaderboards/$b/leaderboard.json" ]; then bad "$f: no board $b"; continue; fi
  lb="$work/broken-$b/boards"
  mkdir -p "$lb" && cp -r "leaderboards/$b" "$lb/" && cp "$f" "$lb/$b/reference.cu"
  out="$work/broken-$b/dump"
  dump "$lb/$b/reference.cu" "$b" "$lb" "$out" "$work/broken-$b.log"
  if [ ! -f "$out/manifest.json" ]; then
    bad "$f: dumping it failed"; tail_of "$work/broken-$b.log"; continue
  fi
  "$PY" tests/oracle/oracle.py "$out" >"$work/oracle-broken-$b.log" 2>&1
  rc=$?
  case $rc in
    1) ok "$f: the oracle catches it ($(grep -c '^FAIL' "$work/oracle-broken-$b.log") failing checks)" ;;
    0) bad "$f: the oracle does NOT catch it"; tail_of "$work/oracle-broken-$b.log" ;;
    *) bad "$f: the oracle could not check its dump (exit $rc)"; tail_of "$work/oracle-broken-$b.log" ;;
  esac
done

echo "oracle-suite: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
