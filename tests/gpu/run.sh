#!/usr/bin/env bash
# run.sh - `make gpu-test`: the GPU tests. Uses the binaries in bin/ (built by
# `make all` where the build dependencies are installed; on a GPU host without
# them, build elsewhere and bring bin/ along, with the shared libraries the
# host lacks in .gpulibs/ - see README). Prints "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/../.."
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
if [ ! -x bin/kjudge-runner ] || [ ! -x bin/kjudge-server ]; then
  make --no-print-directory all || exit 1
fi
exec python3 tests/gpu/test_gpu.py
