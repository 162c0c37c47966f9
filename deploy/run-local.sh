#!/usr/bin/env bash
# run-local.sh - `make run`: install what is missing (as root), build, and run
# kjudge on this machine: kjudge-server on localhost:${KJUDGE_PORT:-8080} with
# its SQLite file in var/, plus one kjudge-runner per local GPU. Prints the
# URL and the admin token. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/deps.sh
make --no-print-directory all
port=${KJUDGE_PORT:-8080}
mkdir -p var
chmod 700 var
conf=var/kjudge.conf db=var/kjudge.db
if [ ! -s "$conf" ]; then
  umask 077
  printf 'admin_token = %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$conf"
fi
admin=$(sed -n 's/^admin_token *= *//p' "$conf")

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

bin/kjudge-server serve --port "$port" --bind 127.0.0.1 --db "$db" --config "$conf" \
  --leaderboards leaderboards --web web &
pids+=($!)
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { echo "run: the server did not start" >&2; exit 1; }

# Runner names: lower case letters, digits, '_', '.', '-', at most 32 characters.
host=$(hostname | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_.\n-' '-' | cut -c1-24)
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
for ((g = 0; g < ngpu; g++)); do
  tok=var/runner-gpu$g.token
  # The GPU type the token may claim: the device name's first word after
  # "NVIDIA " (NVIDIA H200 -> H200), the rule of common/gputype.h.
  gname=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$g" 2>/dev/null || true)
  gtype=${gname#NVIDIA }
  gtype=${gtype%% *}
  if [ ! -s "$tok" ]; then
    (umask 077; bin/kjudge-server runner add "$host-gpu$g" --gpu "$gtype" --db "$db" >"$tok")
  else # a token from an earlier run, perhaps made before tokens were bound
    bin/kjudge-server runner bind "$host-gpu$g" --gpu "$gtype" --db "$db"
  fi
  bin/kjudge-runner serve --server "http://127.0.0.1:$port" --gpu "$g" \
    --name "$host-gpu$g" --token-file "$tok" --leaderboards leaderboards &
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
fi
cat <<EOT
new user:    bin/kjudge-server user add alice --db $db
Ctrl-C stops the server and the runners.
EOT
wait -n "${pids[@]}"
