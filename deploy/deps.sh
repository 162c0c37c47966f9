#!/usr/bin/env bash
# deps.sh - make sure the Debian packages kjudge builds against are installed.
# Installs the missing ones when run as root (apt-get); otherwise prints the
# command to run and fails. The CUDA 13 toolkit (nvcc, NVRTC, headers) is
# expected under ${CUDA:-/usr/local/cuda}; it is not a Debian package.
set -euo pipefail
pkgs=(build-essential libmicrohttpd-dev libcjson-dev libsqlite3-dev libssl-dev libseccomp-dev python3 curl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
cuda=${CUDA:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ] || [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "deps: the CUDA 13 toolkit is missing at $cuda (need nvcc, nvrtc.h, libnvrtc)." >&2
  echo "deps: install it from NVIDIA's packages, or set CUDA=/path/to/cuda." >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq "${missing[@]}" >&2
