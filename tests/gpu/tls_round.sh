#!/usr/bin/env bash
# tls_round.sh - a round of real judging through TLS on a GPU host, with a
# short transcript: a CA and a certificate for 127.0.0.1 made here with
# openssl; kjudge-server serving HTTPS (--tls-cert/--tls-key); one
# kjudge-runner per GPU reaching it with --server https://... --ca-file;
# leaderboard-mode submissions of fp8_quant's fast.cu through the client
# (KJUDGE_CA_FILE), one per GPU, each accepted; a runner trusting another CA
# refused; then SIGTERM: idle runners exit 0, a runner in the middle of a
# job gives it back after --grace (the server queues it again, no attempt
# counted, no box left behind) and a new runner finishes it; the server
# drains and exits 0.
#
#   tests/gpu/tls_round.sh           (from anywhere; uses bin/, builds it if missing)
#   KJ_KEEP=1 tests/gpu/tls_round.sh keeps the work folder (logs, database)
#
# Needs a GPU and its driver, openssl, curl and python3. Binaries built on
# another host may need .gpulibs/ (see docs/contributing.md, Tests); the runner and the
# client link libcurl. Last line: "tls_round: N passed, N failed"; exit 0
# when nothing failed.
set -u
cd "$(dirname "$0")/../.."
if [ -d .gpulibs ]; then export LD_LIBRARY_PATH="$PWD/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
say() { echo "tls_round: $*"; }
pass=0 fail=0
ok() { pass=$((pass + 1)); say "ok   $*"; }
bad() { fail=$((fail + 1)); say "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { say "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

for t in openssl curl python3 nvidia-smi; do
  command -v "$t" >/dev/null || { bad "$t is needed"; finish; }
done
if [ ! -x bin/kjudge-server ] || [ ! -x bin/kjudge-runner ] || [ ! -x bin/kjudge ]; then
  make --no-print-directory all >/dev/null || { bad "make all"; finish; }
fi
for b in bin/kjudge-server bin/kjudge-runner bin/kjudge; do
  missing=$(ldd "$b" | grep "not found" | tr -s ' \t' ' ')
  [ -z "$missing" ] || { bad "$b lacks:$missing (put them in .gpulibs/)"; finish; }
done

tmp=$(mktemp -d /tmp/kjudge-tls-round.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${KJ_KEEP:-0}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# --- a CA, the server's certificate, and an unrelated CA --------------------
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
(cd "$tmp" &&
 openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=kjudge round CA" &&
 openssl req -x509 "${ec[@]}" -keyout wrongca.key -out wrongca.pem -days 2 -subj "/CN=another CA" &&
 openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=localhost" &&
 printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext.cnf &&
 openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
   -extfile ext.cnf) >"$tmp/openssl.log" 2>&1 || { bad "openssl: $(tail -n 3 "$tmp/openssl.log")"; finish; }
ok "a CA and a certificate for 127.0.0.1 made with openssl"

# --- the server over HTTPS ---------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=https://127.0.0.1:$port
printf 'admin_token = %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$tmp/k.conf"
chmod 600 "$tmp/k.conf"
bin/kjudge-server serve --port "$port" --bind 127.0.0.1 --db "$tmp/k.db" --config "$tmp/k.conf" \
  --leaderboards leaderboards --web web --tls-cert "$tmp/server.pem" --tls-key "$tmp/server.key" \
  >"$tmp/server.out" 2>"$tmp/server.log" &
server=$!
pids+=("$server")
for _ in $(seq 100); do
  curl -fsS -m 2 --cacert "$tmp/ca.pem" "$url/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
check "the server answers HTTPS ($url), verified against the CA" \
  curl -fsS -m 5 --cacert "$tmp/ca.pem" "$url/healthz" -o /dev/null
check "plain HTTP to the HTTPS port gets no answer" \
  bash -c "! curl -sS -m 5 http://127.0.0.1:$port/healthz >/dev/null 2>&1"
db=$tmp/k.db
alice=$(bin/kjudge-server user add alice --db "$db" 2>>"$tmp/admin.log")

# --- one runner per GPU ------------------------------------------------------
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$ngpu" -ge 1 ] || { bad "no GPU listed by nvidia-smi"; finish; }
gname=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
gtype=${gname#NVIDIA }
gtype=${gtype%% *}
say "GPUs: $ngpu x $gname (type $gtype)"
runner() { # $1 GPU, $2 name, then more serve options; its pid in $rpid
  local g=$1 name=$2
  shift 2
  [ -s "$tmp/$name.token" ] ||
    (umask 077; bin/kjudge-server runner add "$name" --gpu "$gtype" --db "$db" >"$tmp/$name.token" \
       2>>"$tmp/admin.log")
  bin/kjudge-runner serve --server "$url" --ca-file "$tmp/ca.pem" --gpu "$g" --name "$name" \
    --token-file "$tmp/$name.token" --leaderboards leaderboards "$@" >>"$tmp/$name.log" 2>&1 &
  rpid=$!
  pids+=("$rpid")
}
waitlog() { # $1 file, $2 text, $3 seconds
  for _ in $(seq $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
rpids=()
for ((g = 0; g < ngpu; g++)); do
  runner "$g" "tls-gpu$g"
  rpids+=("$rpid")
done
for ((g = 0; g < ngpu; g++)); do
  check "runner tls-gpu$g reported ready over HTTPS" waitlog "$tmp/tls-gpu$g.log" "reported to https://" 120
done

# A runner that trusts another CA stops at start (exit 2), saying why.
bin/kjudge-runner serve --server "$url" --ca-file "$tmp/wrongca.pem" --gpu 0 --name tls-wrongca \
  --token-file "$tmp/tls-gpu0.token" --leaderboards leaderboards >"$tmp/wrongca.log" 2>&1
rc=$?
check "a runner trusting another CA is refused (exit $rc)" \
  bash -c "[ $rc = 2 ] && grep -q 'SSL certificate problem' '$tmp/wrongca.log'"
say "  $(grep 'kjudge-runner:' "$tmp/wrongca.log" | head -n 1 | cut -c1-300)"

# --- submissions through the client over HTTPS, one per GPU ------------------
export KJUDGE_URL=$url KJUDGE_TOKEN=$alice KJUDGE_CA_FILE=$tmp/ca.pem HOME=$tmp/home
mkdir -p "$HOME"
spids=()
for ((g = 0; g < ngpu; g++)); do
  bin/kjudge submit leaderboards/fp8_quant/examples/fast.cu --gpu "$gtype" --mode leaderboard \
    >"$tmp/submit$g.out" 2>&1 &
  spids+=($!)
done
for ((g = 0; g < ngpu; g++)); do
  wait "${spids[$g]}"
  rc=$?
  check "kjudge submit #$g over HTTPS: accepted (exit $rc)" [ "$rc" = 0 ]
done
say "  --- kjudge submit (first) ---"
sed -n '/^#[0-9]* fp8_quant/,$p' "$tmp/submit0.out" | head -n 12 | sed 's/^/tls_round:   /'
for ((g = 0; g < ngpu; g++)); do
  n=$(grep -c "judged job=" "$tmp/tls-gpu$g.log")
  say "  runner tls-gpu$g judged $n job(s)"
done
check "every runner judged a job" \
  bash -c "for g in \$(seq 0 $((ngpu - 1))); do grep -q 'judged job=' '$tmp'/tls-gpu\$g.log || exit 1; done"

# --- SIGTERM: idle runners exit 0 ----------------------------------------------
for ((g = 0; g < ngpu; g++)); do
  kill -TERM "${rpids[$g]}"
  wait "${rpids[$g]}"
  rc=$?
  check "idle runner tls-gpu$g stops on SIGTERM with exit 0 (got $rc)" [ "$rc" = 0 ]
done

# --- SIGTERM in the middle of a job: given back after --grace ---------------
sub() { curl -fsS -m 10 --cacert "$tmp/ca.pem" -H "Authorization: Bearer $alice" "$url/api/v1/submissions/$1"; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1]))' "$1"; }
out=$(bin/kjudge submit leaderboards/fp8_quant/examples/fast.cu --gpu "$gtype" --mode leaderboard --no-wait 2>&1)
sid=$(grep -o 'submitted #[0-9]*' <<<"$out" | grep -o '[0-9]*$')
runner 0 tls-stop --grace 2
stop=$rpid
for _ in $(seq 600); do [ "$(sub "$sid" | field status)" = running ] && break; sleep 0.1; done
sleep 4 # into the benchmark, boxes up
boxes=$(pgrep -c -f -- "--name tls-stop" || true)
say "  job #$sid running on tls-stop: $boxes process(es) with its command line (runner + boxes)"
kill -TERM "$stop"
t0=$(date +%s.%N)
wait "$stop"
rc=$?
t1=$(date +%s.%N)
view=$(sub "$sid")
check "SIGTERM mid-job: the runner exits 0 (got $rc) after $(python3 -c "print(round($t1 - $t0, 1))") s" [ "$rc" = 0 ]
check "the job is queued again at once, no attempt counted" \
  bash -c "[ '$(field status <<<"$view")' = queued ] && [ '$(field attempts <<<"$view")' = 0 ]"
check "the runner says it gave the job back" grep -q "gave job=$sid back" "$tmp/tls-stop.log"
sleep 1
left=$(pgrep -f -- "--name tls-stop" || true)
check "no box of the stopped runner is left" [ -z "$left" ]
runner 0 tls-after
after=$rpid
for _ in $(seq 1800); do [ "$(sub "$sid" | field status)" = done ] && break; sleep 0.1; done
view=$(sub "$sid")
check "another runner judges it: $(field verdict <<<"$view"), attempts $(field attempts <<<"$view")" \
  bash -c "[ '$(field verdict <<<"$view")' = accepted ] && [ '$(field attempts <<<"$view")' = 0 ]"
kill -TERM "$after"
wait "$after"

# --- the server drains and stops ----------------------------------------------
kill -TERM "$server"
wait "$server"
rc=$?
check "the server stops on SIGTERM with exit 0 (got $rc)" [ "$rc" = 0 ]
check "the token of alice is in no log" bash -c "! grep -qr -- '$alice' '$tmp'/*.log"
finish
