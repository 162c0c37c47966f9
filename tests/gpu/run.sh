#!/usr/bin/env bash
# run.sh - `make gpu-test`: the GPU tests. Uses the binaries in bin/ (built by
# `make all` where the build dependencies are installed; on a GPU host without
# them, build elsewhere and bring bin/ along, with the shared libraries the
# host lacks in .gpulibs/ - see docs/contributing.md).
#   1. tests/gpu/test_gpu.py: the boards, the verdict corpus, the exploit
#      corpus, the server loop and the fault/valid cycles;
#   2. tests/oracle/run.sh: every board's reference against an independent
#      PyTorch implementation, and every deliberately broken reference caught.
# 2 runs at the same time as 1 (it checks values, not times, and none of 1's
# checks suffers from a busier GPU but in the direction of a slower pass), so
# the whole run takes about as long as 1 alone; its output follows 1's.
# KJ_GPU_ONLY=name,... runs only those parts of 1 (e.g. "boards,corpus");
# KJ_GPU_ORACLE=0 leaves out 2. KJ_GPU_PROFILE=1 adds tests/gpu/profile_round.py
# (profile and sanitize modes; needs ncu and compute-sanitizer; a few
# minutes). KJ_GPU_SPLIT=1 runs 1 as four processes at once (the boards,
# corpus and server loop; the exploit corpus; the fault cycles; Python), which takes
# the time of the longest part: every check is a verdict or a bound
# that a busier GPU only makes harder to pass, but the latencies and medians
# it prints are then not for comparison. The tests no part names (GPU time
# and calibrate, which time; test_gpu.py --list has them all) run after
# the four. Ends with one line summing them:
# "gpu-test: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/../.."
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
if [ ! -x bin/kjudge-runner ] || [ ! -x bin/kjudge-server ]; then
  make --no-print-directory all || exit 1
fi
log=$(mktemp)
olog=$(mktemp)
trap 'rm -f "$log" "$olog"' EXIT
opid=
if [ "${KJ_GPU_ORACLE:-1}" != 0 ]; then
  bash tests/oracle/run.sh >"$olog" 2>&1 &
  opid=$!
fi
if [ "${KJ_GPU_SPLIT:-0}" = 1 ] && [ -z "${KJ_GPU_ONLY:-}" ]; then
  parts=("compile,examples,boards,corpus,server" "exploits,languages_eval" "fault_cycles"
         "python,languages_server")
  plogs=() ppids=()
  for part in "${parts[@]}"; do
    plog=$(mktemp)
    plogs+=("$plog")
    KJ_GPU_ONLY=$part python3 tests/gpu/test_gpu.py >"$plog" 2>&1 &
    ppids+=($!)
  done
  for i in "${!parts[@]}"; do
    wait "${ppids[$i]}"
    echo "---- part ${parts[$i]}" | tee -a "$log"
    tee -a "$log" <"${plogs[$i]}"
    rm -f "${plogs[$i]}"
  done
  # What the parts leave (the tests that time: GPU time, calibrate; and any
  # test added since) runs after them, with the GPU to itself.
  rest=$(python3 tests/gpu/test_gpu.py --list | tr ' ' '\n' |
         grep -vxF -f <(printf '%s\n' "${parts[@]}" | tr ',' '\n') | paste -sd, -)
  if [ -n "$rest" ]; then
    echo "---- part $rest (after the others)" | tee -a "$log"
    KJ_GPU_ONLY=$rest python3 tests/gpu/test_gpu.py 2>&1 | tee -a "$log"
  fi
else
  python3 tests/gpu/test_gpu.py 2>&1 | tee -a "$log"
fi
if [ "${KJ_GPU_PROFILE:-0}" = 1 ]; then
  python3 tests/gpu/profile_round.py 2>&1 | tee -a "$log"
fi
if [ -n "$opid" ]; then
  wait "$opid"
  tee -a "$log" <"$olog"
fi
python3 - "$log" <<'PY'
import re, sys
p = f = s = 0
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(test_gpu|oracle-suite|profile_round): (\d+) passed, (\d+) failed, (\d+) skipped", line)
    if m:
        p += int(m.group(2)); f += int(m.group(3)); s += int(m.group(4))
print("gpu-test: %d passed, %d failed, %d skipped" % (p, f, s))
sys.exit(1 if f or p == 0 else 0)
PY
