#!/usr/bin/env bash
# run-local.sh - `make run`: install what is missing (as root), build, and run
# kjudge on this machine: kjudge-server on ${KJUDGE_BIND:-127.0.0.1}:${KJUDGE_PORT:-8080}
# with its SQLite file in ${KJUDGE_VAR:-var}/, plus one kjudge-runner per
# local GPU. Prints the URL, the admin token and what to do next. Ctrl-C
# stops everything (each runner finishes or gives back its job first).
# When the port is taken (another kjudge, or any other program, even one
# that never answers) it says so and exits 1 without starting anything.
# KJUDGE_PREBUILT=1: a GPU host that runs binaries built on another host
# (bin/ brought along, the shared libraries it lacks in .gpulibs/): neither
# installs nor builds. Python submissions run with $KJUDGE_PYTHON, else
# with the python3 on the PATH when it holds PyTorch (kjudge-runner --python).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${KJUDGE_PREBUILT:-0}" = 1 ]; then
  if [ ! -x bin/kjudge-server ] || [ ! -x bin/kjudge-runner ]; then
    echo "run: KJUDGE_PREBUILT=1 but bin/kjudge-server or bin/kjudge-runner is missing" >&2
    exit 1
  fi
else
  deploy/deps.sh
  make --no-print-directory all
fi
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
port=${KJUDGE_PORT:-8080}
bind=${KJUDGE_BIND:-127.0.0.1}
var=${KJUDGE_VAR:-var}
probe=$bind
case "$bind" in 0.0.0.0) probe=127.0.0.1 ;; ::) probe=::1 ;; esac
url_host=$probe
case "$probe" in *:*) url_host="[$probe]" ;; esac

# The port must be free: a readiness probe against another program would
# hang (one that never answers) or report another instance's URL.
if timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$probe" "$port" 2>/dev/null; then
  who=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n 1 |
        sed 's/users:(("\([^"]*\)",pid=\([0-9]*\)/\1, pid \2/' || true)
  if curl -fsS -m 3 "http://$url_host:$port/healthz" 2>/dev/null | grep -q '"status"'; then
    echo "run: another kjudge server already listens on $probe:$port${who:+ ($who)}." >&2
    echo "run: use it, stop it, or start this one on another port: KJUDGE_PORT=$((port + 1)) make run" >&2
  else
    echo "run: port $port on $probe is taken by another program${who:+ ($who)}, which does not" \
         "answer as kjudge." >&2
    echo "run: stop it, or choose another port: KJUDGE_PORT=$((port + 1)) make run" >&2
  fi
  exit 1
fi

mkdir -p "$var"
chmod 700 "$var"
conf=$var/kjudge.conf db=$var/kjudge.db
# The umask only for this file (a subshell): the server and the runners
# started below keep the caller's (tests/api/test_run_local.py checks it).
if [ ! -s "$conf" ]; then
  (umask 077
   printf 'admin_token = %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$conf")
fi
admin=$(sed -n 's/^admin_token *= *//p' "$conf")

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

bin/kjudge-server serve --port "$port" --bind "$bind" --db "$db" --config "$conf" \
  --leaderboards leaderboards --web web &
server=$!
pids+=("$server")
# Ready when this server answers (each probe bounded by -m); gone = it could not start.
ready=0
for _ in $(seq 100); do
  kill -0 "$server" 2>/dev/null || break
  if curl -fsS -m 2 "http://$url_host:$port/healthz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.1
done
if [ "$ready" = 0 ] || ! kill -0 "$server" 2>/dev/null; then
  echo "run: the server did not start (its messages are above)" >&2
  exit 1
fi

# Runner names: lower case letters, digits, '_', '.', '-', at most 32 characters.
host=$(hostname | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_.\n-' '-' | cut -c1-24)
ngpu=0 runner=bin/kjudge-runner runner_args=()
# Tests only (tests/api/test_run_local.py): KJUDGE_TEST_RUNNER names a runner
# program that needs no GPU (build/kjudge-runner-fakegpu); it is started as
# if one H200 had been found, with --ahead 1 so that its jobs are compiled
# in real compile boxes as a GPU runner's are.
if [ -n "${KJUDGE_TEST_RUNNER:-}" ]; then
  ngpu=1 runner=$KJUDGE_TEST_RUNNER runner_args=(--ahead 1)
elif command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "$ngpu" -gt 0 ] && [ -z "${KJUDGE_PYTHON:-}" ] && command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
  KJUDGE_PYTHON=$(command -v python3)
  export KJUDGE_PYTHON
fi
# GPU time (docs/timing.md 8) needs CUPTI in the run boxes: the toolkit's
# libcupti.so.13, found through the runner's rpath or LD_LIBRARY_PATH. A
# host whose toolkit lacks it often has the one PyTorch's wheels bring
# (nvidia-cuda-cupti, under site-packages/nvidia/): use that one then.
if [ "$ngpu" -gt 0 ] && [ -z "${KJUDGE_TEST_RUNNER:-}" ] && [ -z "${KJUDGE_CUPTI_LIB:-}" ] &&
   [ -n "${KJUDGE_PYTHON:-}" ] &&
   ! bin/kjudge-runner probe --gpu 0 2>/dev/null | grep -Eq '"gpu_time":[[:space:]]*true'; then
  cupti=$("$KJUDGE_PYTHON" - 2>/dev/null <<'PY' || true
import glob, os, site
for d in site.getsitepackages():
    for f in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libcupti.so.13"))):
        print(f)
        raise SystemExit
PY
)
  if [ -n "$cupti" ]; then
    export KJUDGE_CUPTI_LIB=$cupti
    echo "run: GPU time with CUPTI from $cupti (the toolkit has none)"
  fi
fi
for ((g = 0; g < ngpu; g++)); do
  tok=$var/runner-gpu$g.token
  # The GPU type the token may claim: the device name's first word after
  # "NVIDIA " (NVIDIA H200 -> H200), the rule of common/gputype.h.
  gname="NVIDIA H200"
  [ -n "${KJUDGE_TEST_RUNNER:-}" ] ||
    gname=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$g" 2>/dev/null || true)
  gtype=${gname#NVIDIA }
  gtype=${gtype%% *}
  if [ ! -s "$tok" ]; then
    (umask 077; bin/kjudge-server runner add "$host-gpu$g" --gpu "$gtype" --db "$db" >"$tok")
  else # a token from an earlier run, perhaps made before tokens were bound
    bin/kjudge-server runner bind "$host-gpu$g" --gpu "$gtype" --db "$db"
  fi
  "$runner" serve --server "http://$url_host:$port" --gpu "$g" \
    --name "$host-gpu$g" --token-file "$tok" --leaderboards leaderboards "${runner_args[@]}" &
  pids+=($!)
done

cat <<EOT

kjudge is running at http://localhost:$port/  (API: http://localhost:$port/api/v1/leaderboards)
admin token: $admin   (kept in $conf)
EOT
if [ "$ngpu" -eq 0 ]; then
  echo "no GPU found: the server runs alone, no runner is attached; submissions stay queued."
else
  echo "runners attached: $ngpu (one per GPU)"
  if [ -n "${KJUDGE_PYTHON:-}" ]; then
    echo "Python submissions run with $KJUDGE_PYTHON"
  else
    echo "Python submissions: none on this host (no python3 with PyTorch; set KJUDGE_PYTHON)"
  fi
fi
cat <<EOT

next:
  open http://localhost:$port/ in a browser: the leaderboards, their rankings and statements
  a user:   T=\$(bin/kjudge-server user add alice --db $db)
  log in:   bin/kjudge login http://localhost:$port --token \$T
  submit:   bin/kjudge template fp8_quant -o quant.cu && bin/kjudge submit quant.cu --gpu H200
  a runner on another GPU host: on this host
              bin/kjudge-server runner add gpuhost1 --gpu H200 --db $db > gpuhost1.token
            then on that host (a checkout, deploy/deps.sh && make)
              bin/kjudge-runner serve --server http://THIS-HOST:$port --token-file gpuhost1.token
            with this server reachable from it: KJUDGE_BIND=0.0.0.0 make run on a trusted
            network, or HTTPS (docs/operator.md, "Deploying")
Ctrl-C stops the server and the runners.
EOT
wait -n "${pids[@]}"
