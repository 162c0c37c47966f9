#!/usr/bin/env bash
# deps.sh - make sure the Debian packages kjudge needs are installed.
#
#   deploy/deps.sh            build and run both programs (a GPU host; `make run`)
#   deploy/deps.sh --server   only kjudge-server (a front-end host: no CUDA needed)
#   deploy/deps.sh --test     everything `make test` uses: the above, plus openssl,
#                             nginx-light and wrk (bench/bench_http_load.py's smoke
#                             run, tests/api/test_benches.py), Slurm (slurmctld,
#                             slurmd, client) with munge, systemd (for systemd-analyze), clang with
#                             libFuzzer (tests/fuzz/) and python3-venv; schemathesis
#                             from PyPI goes into .venv/ at the versions pinned in
#                             deploy/schema-requirements.txt (tests/api/test_schema.py);
#                             Chromium with chromedriver, and Selenium from PyPI
#                             (pinned in deploy/browser-requirements.txt) in
#                             .venv-browser/ (tests/api/test_web.py), and man-db
#                             (the manual pages checked by tests/api/test_deploy.py)
#
# Every mode installs the web pages' libraries (libjs-highlight.js,
# libjs-chart.js, libjs-marked, libjs-katex, libjs-codemirror), which the
# server serves from /usr/share/javascript; the pages work without them.
#
# Installs the missing packages when run as root (apt-get); otherwise prints
# the command to run and fails. The CUDA 13 toolkit (nvcc, NVRTC, headers) is
# expected under ${CUDA:-/usr/local/cuda}; it is not a Debian package, and
# --server does not look for it. Without --server, where the toolkit has no
# nvdisasm, NVIDIA's nvidia-cuda-nvdisasm wheel is fetched from PyPI into
# .tools/bin (below), and CUTLASS's headers (CuTe included; the pinned
# nvidia-cutlass wheel from PyPI) go into .cutlass/include, where
# kjudge-runner finds them (runner/compile.h; a host without network: copy
# a .cutlass/include made elsewhere, or set KJUDGE_CUTLASS_INCLUDE).
# Installing Slurm or nginx does not start their
# services here (policy-rc.d); the tests start their own instances.
set -euo pipefail
mode=full
case "${1:-}" in
  "") ;;
  --server) mode=server ;;
  --test) mode=test ;;
  -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "deps: unknown option '$1' (use --server or --test)" >&2; exit 2 ;;
esac
pkgs=(build-essential libmicrohttpd-dev libcjson-dev libsqlite3-dev libssl-dev python3 curl openssl
      libjs-highlight.js libjs-chart.js libjs-marked libjs-katex libjs-codemirror)
[ "$mode" = server ] || pkgs+=(libseccomp-dev libcurl4-openssl-dev)
[ "$mode" = test ] && pkgs+=(nginx-light wrk slurmctld slurmd slurm-client munge systemd
                             clang libclang-rt-14-dev python3-venv chromium chromium-driver man-db)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$mode" != server ]; then
  cuda=${CUDA:-/usr/local/cuda}
  if [ ! -x "$cuda/bin/nvcc" ] || [ ! -f "$cuda/include/nvrtc.h" ]; then
    echo "deps: the CUDA 13 toolkit is missing at $cuda (need nvcc, nvrtc.h, libnvrtc)." >&2
    echo "deps: install it from NVIDIA's packages, or set CUDA=/path/to/cuda." >&2
    echo "deps: a front-end host that runs only kjudge-server needs no CUDA:" \
         "deploy/deps.sh --server, then make server." >&2
    exit 1
  fi
  # nvdisasm reads the instruction classes out of compiled kernels (runner/
  # sass.c). A full toolkit has it; where the toolkit lacks it (a trimmed or
  # CPU-only install), NVIDIA's redistributable wheel from PyPI (pinned
  # below) puts it in .tools/bin, once. kjudge-runner looks there by itself
  # (beside its bin/; deploy/install.sh copies it along). Best effort:
  # without it the classes come from the PTX and those tests skip.
  tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
  if [ ! -x "$cuda/bin/nvdisasm" ] && [ ! -x "$tools/bin/nvdisasm" ]; then
    tmp=$(mktemp -d)
    if python3 -m pip download -q --no-deps nvidia-cuda-nvdisasm==13.2.51 -d "$tmp" >&2 2>&1 &&
       python3 - "$tmp" "$tools/bin" <<'PY'
import glob, os, sys, zipfile
whl = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
os.makedirs(sys.argv[2], exist_ok=True)
with zipfile.ZipFile(whl) as z:
    data = z.read("nvidia/cu13/bin/nvdisasm")
dst = os.path.join(sys.argv[2], "nvdisasm")
with open(dst + ".tmp", "wb") as f:
    f.write(data)
os.chmod(dst + ".tmp", 0o755)
os.rename(dst + ".tmp", dst)
PY
    then echo "deps: nvdisasm from PyPI in $tools/bin" >&2
    else echo "deps: no nvdisasm (toolkit or PyPI); instruction-class tests will skip" >&2
    fi
    rm -rf "$tmp"
  fi
  # CUTLASS and CuTe headers for CUDA submissions (docs/languages-cuda.md):
  # one pinned release, unpacked once into .cutlass/include (read-only in
  # the compile box). Replaced when the pin changes; best effort: without
  # them an #include <cute/...> gets a compile error and those tests skip.
  cutlass_pin=4.2.0.0
  cutlass="$(cd "$(dirname "$0")/.." && pwd)/.cutlass"
  if [ "$(cat "$cutlass/VERSION" 2>/dev/null)" != "$cutlass_pin" ]; then
    tmp=$(mktemp -d)
    if python3 -m pip download -q --no-deps "nvidia-cutlass==$cutlass_pin" -d "$tmp" >&2 2>&1 &&
       python3 - "$tmp" "$cutlass" "$cutlass_pin" <<'PY'
import glob, os, shutil, sys, zipfile
whl = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
dst, pre = sys.argv[2], "cutlass_library/source/include/"
new = dst + ".new"
shutil.rmtree(new, ignore_errors=True)
with zipfile.ZipFile(whl) as z:
    for m in z.infolist():
        if m.is_dir() or not m.filename.startswith(pre) or ".." in m.filename:
            continue
        out = os.path.join(new, "include", m.filename[len(pre):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(z.read(m))
with open(os.path.join(new, "VERSION"), "w") as f:
    f.write(sys.argv[3])
shutil.rmtree(dst, ignore_errors=True)
os.rename(new, dst)
PY
    then echo "deps: CUTLASS $cutlass_pin headers in $cutlass/include" >&2
    else echo "deps: no CUTLASS headers from PyPI; CuTe submissions and their tests will skip" >&2
    fi
    rm -rf "$tmp"
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages: ${missing[*]}" >&2
    echo "deps: run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Package scripts must not start daemons (nginx, munge, slurm) on this host:
  # a policy-rc.d that says "no" for the length of the install, unless one exists.
  policy=/usr/sbin/policy-rc.d made_policy=0
  if [ "$mode" = test ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  trap 'if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
  apt-get update -qq >&2
  apt-get install -y -qq "${missing[@]}" >&2
fi
[ "$mode" = test ] || exit 0
# schemathesis in .venv/, (re)built when the pinned list changes.
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/deploy/schema-requirements.txt"
if [ ! -x "$root/.venv/bin/st" ] || ! cmp -s "$req" "$root/.venv/kjudge-requirements.txt"; then
  echo "deps: installing schemathesis into $root/.venv" >&2
  rm -rf "$root/.venv"
  python3 -m venv "$root/.venv" >&2
  "$root/.venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  cp "$req" "$root/.venv/kjudge-requirements.txt"
fi
# Selenium for the browser tests (tests/api/test_web.py), in its own virtual
# environment, rebuilt when the pinned list changes. Best effort: without it
# those tests say SKIP.
breq="$root/deploy/browser-requirements.txt"
if [ ! -x "$root/.venv-browser/bin/python3" ] || ! cmp -s "$breq" "$root/.venv-browser/kjudge-requirements.txt"; then
  echo "deps: installing Selenium into $root/.venv-browser" >&2
  rm -rf "$root/.venv-browser"
  if python3 -m venv "$root/.venv-browser" >&2 &&
     "$root/.venv-browser/bin/pip" install -q --disable-pip-version-check -r "$breq" >&2; then
    cp "$breq" "$root/.venv-browser/kjudge-requirements.txt"
  else
    echo "deps: cannot install Selenium from PyPI; the browser tests will skip" >&2
  fi
fi
