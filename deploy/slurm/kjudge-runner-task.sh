#!/bin/bash
# kjudge-runner-task.sh - one Slurm task of kjudge-runners.sbatch: runs
# `kjudge-runner serve` on the one GPU Slurm bound to this task, starts it
# again after KJUDGE_RETRY_S seconds whenever it stops (a runner that
# refused to start, no usable GPU for instance, has told the server why),
# and on SIGTERM (scancel) stops it and exits 0.
#
# GPU binding: Slurm gives the task its GPU in CUDA_VISIBLE_DEVICES (one
# entry with --gpus-per-task=1; when it lists several, the task takes the
# one at its SLURM_LOCALID). The runner then uses CUDA device 0 of that
# list. The name shows the node's GPU index (SLURM_STEP_GPUS when Slurm
# gives it, else the visible index).
set -u
case "${1:-}" in -h|--help)
  echo "usage: kjudge-runner-task   (one task of kjudge-runners.sbatch, started by srun: runs"
  echo "       kjudge-runner serve on this task's GPU and starts it again when it stops;"
  echo "       settings from KJUDGE_SERVER, KJUDGE_TOKEN_FILE, KJUDGE_HOME, KJUDGE_NAME_PREFIX,"
  echo "       KJUDGE_RUNNER_ARGS, KJUDGE_RETRY_S: see kjudge-runners.sbatch)"
  exit 0 ;;
esac
home=${KJUDGE_HOME:-/opt/kjudge}
bin=$home/bin/kjudge-runner
tokfile=${KJUDGE_TOKEN_FILE:-/etc/kjudge/runner.token}
retry=${KJUDGE_RETRY_S:-60}
local=${SLURM_LOCALID:-}
say() { echo "kjudge-runner-task: $*"; }
[ -n "$local" ] || { say "not a Slurm task (no SLURM_LOCALID)" >&2; exit 2; }
[ -x "$bin" ] || { say "no $bin (set KJUDGE_HOME)" >&2; exit 2; }
[ -r "$tokfile" ] || { say "cannot read the token file $tokfile" >&2; exit 2; }
case "$retry" in ''|*[!0-9]*) say "KJUDGE_RETRY_S must be a number" >&2; exit 2 ;; esac

pick() { # $1 comma list, $2 index: the one entry, else entry $2, else empty
  local -a l
  IFS=, read -ra l <<<"$1"
  if [ "${#l[@]}" -eq 1 ]; then echo "${l[0]}"; elif [ "${#l[@]}" -gt "$2" ]; then echo "${l[$2]}"; fi
}
dev=$(pick "${CUDA_VISIBLE_DEVICES:-}" "$local")
[ -n "$dev" ] || { say "task $local has no GPU (CUDA_VISIBLE_DEVICES='${CUDA_VISIBLE_DEVICES:-}')" >&2; exit 2; }
phys=$(pick "${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}" "$local")
[ -n "$phys" ] || phys=$dev
prefix=${KJUDGE_NAME_PREFIX:-$(hostname -s)}
name=$(printf '%s-gpu%s' "$prefix" "$phys" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_.\n-' '-' | cut -c1-63)
export CUDA_VISIBLE_DEVICES=$dev CUDA_DEVICE_ORDER=PCI_BUS_ID
# shellcheck disable=SC2206
args=(serve --server "${KJUDGE_SERVER:?set KJUDGE_SERVER}" --gpu 0 --name "$name" --token-file "$tokfile"
      --leaderboards "$home/leaderboards" ${KJUDGE_RUNNER_ARGS:-})

stop=0 child=
on_term() {
  stop=1
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi
}
trap on_term TERM INT
while [ "$stop" = 0 ]; do
  say "node=$(hostname -s) task=${SLURM_PROCID:-?} local=$local gpu=$phys CUDA_VISIBLE_DEVICES=$dev:" \
      "$bin ${args[*]}"
  "$bin" "${args[@]}" &
  child=$!
  wait "$child"
  rc=$?
  # A status above 128 with the runner still there: the wait was cut by SIGTERM.
  while [ "$rc" -gt 128 ] && kill -0 "$child" 2>/dev/null; do
    wait "$child"
    rc=$?
  done
  child=
  [ "$stop" = 0 ] || break
  say "runner $name exited rc=$rc; starting it again in ${retry}s"
  sleep "$retry" &
  child=$!
  wait "$child" 2>/dev/null
  child=
done
say "stopped runner $name (task ${SLURM_PROCID:-?})"
exit 0
