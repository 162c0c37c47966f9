#!/usr/bin/env bash
# install.sh - install kjudge as system services from this (built) checkout.
#
#   deploy/install.sh --server            the front end: kjudge-server.service,
#                                         kjudge-backup.timer, user kjudge
#   deploy/install.sh --runner            a GPU host: kjudge-runner@.service
#   deploy/install.sh --server --runner   both on one host
# Options:
#   --prefix DIR      where bin/, leaderboards/ and web/ go (default /opt/kjudge)
#   --root DIR        install under DIR instead of / (packaging, tests): no
#                     user is created and systemctl is not called
#   --token-file F    (runner) copy the runner token from F to /etc/kjudge/runner.token
#   --enable          enable and start the services (server + backup timer;
#                     one runner per GPU that nvidia-smi lists, or --gpus N)
#   --gpus N          with --enable: start runners for GPUs 0..N-1
#
# Also, for each program installed: its manual page (man/mkman.sh, into
# /usr/local/share/man), and where bin/kjudge is built (make), the client
# with a link in /usr/local/bin and its bash completion.
#
# Build first: `make server` (front end, no CUDA) or `make` (GPU host). The
# state (database, admin token, TLS settings) lives in /var/lib/kjudge;
# settings in /etc/kjudge/*.env. Running this again upgrades the binaries,
# leaderboards and units and keeps /etc/kjudge and /var/lib/kjudge as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
root=/ prefix=/opt/kjudge state=/var/lib/kjudge
server=0 runner=0 enable=0 gpus=auto token=
die() { echo "install: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=1 ;;
    --runner) runner=1 ;;
    --enable) enable=1 ;;
    --prefix) prefix=${2:?--prefix needs a folder}; shift ;;
    --root) root=${2:?--root needs a folder}; shift ;;
    --token-file) token=${2:?--token-file needs a file}; shift ;;
    --gpus) gpus=${2:?--gpus needs a number}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
[ "$server" = 1 ] || [ "$runner" = 1 ] || die "say what this host runs: --server, --runner or both"
case "$prefix" in /*) ;; *) die "--prefix must be an absolute path" ;; esac
case "$gpus" in auto|[0-9]|[0-9][0-9]) ;; *) die "--gpus must be a number" ;; esac
root=${root%/}
[ "$server" = 0 ] || [ -x bin/kjudge-server ] || die "bin/kjudge-server is not built (make server)"
[ "$runner" = 0 ] || [ -x bin/kjudge-runner ] || die "bin/kjudge-runner is not built (make)"
[ -z "$token" ] || [ -s "$token" ] || die "the token file $token is empty or missing"
[ -z "$root" ] || [ -d "$root" ] || die "--root $root is not a folder"
if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then die "run as root (or give --root DIR)"; fi

dest=$root$prefix units=$root/etc/systemd/system etc=$root/etc/kjudge
umask 022
mkdir -p "$dest/bin" "$dest/server" "$units" "$etc"

# Program files: replaced on every run (an upgrade), written beside and renamed.
put() { install -m "$1" "$2" "$3.new" && mv -f "$3.new" "$3"; }
[ "$server" = 0 ] || put 755 bin/kjudge-server "$dest/bin/kjudge-server"
[ "$runner" = 0 ] || put 755 bin/kjudge-runner "$dest/bin/kjudge-runner"
# The nvdisasm deploy/deps.sh fetched where the toolkit has none: the runner
# looks for it in .tools/bin beside its bin/ folder.
if [ "$runner" = 1 ] && [ -x .tools/bin/nvdisasm ]; then
  mkdir -p "$dest/.tools/bin"
  put 755 .tools/bin/nvdisasm "$dest/.tools/bin/nvdisasm"
fi
# CUTLASS's headers deploy/deps.sh unpacked: the runner looks for them in
# .cutlass/include beside its bin/ folder (runner/compile.h).
if [ "$runner" = 1 ] && [ -f .cutlass/include/cute/tensor.hpp ]; then
  rm -rf "$dest/.cutlass.new"
  mkdir -p "$dest/.cutlass.new"
  cp -R .cutlass/include "$dest/.cutlass.new/include"
  rm -rf "$dest/.cutlass" && mv "$dest/.cutlass.new" "$dest/.cutlass"
fi
# The backup job reads the server's database: front ends only.
[ "$server" = 0 ] || put 755 deploy/systemd/kjudge-backup "$dest/bin/kjudge-backup"
if [ "$runner" = 1 ]; then # the Slurm launcher, for clusters (deploy/slurm/)
  mkdir -p "$dest/slurm"
  put 755 deploy/slurm/kjudge-runner-task.sh "$dest/bin/kjudge-runner-task"
  put 644 deploy/slurm/kjudge-runners.sbatch "$dest/slurm/kjudge-runners.sbatch"
fi
# The client, where built (make; not make server), for the admin's and the tests' use.
client=0
if [ -x bin/kjudge ]; then
  client=1
  put 755 bin/kjudge "$dest/bin/kjudge"
  mkdir -p "$root/usr/local/bin" "$root/usr/local/share/bash-completion/completions"
  ln -sfn "$prefix/bin/kjudge" "$root/usr/local/bin/kjudge"
  put 644 deploy/bash-completion/kjudge "$root/usr/local/share/bash-completion/completions/kjudge"
fi
# Manual pages, each with the installed program's own --help (man/mkman.sh).
man=$root/usr/local/share/man
mkman() { # PROGRAM SECTION
  mkdir -p "$man/man$2"
  man/mkman.sh "bin/$1" "man/$1.$2.in" >"$man/man$2/$1.$2.new" &&
    chmod 644 "$man/man$2/$1.$2.new" && mv -f "$man/man$2/$1.$2.new" "$man/man$2/$1.$2"
}
[ "$client" = 0 ] || mkman kjudge 1
[ "$server" = 0 ] || mkman kjudge-server 8
[ "$runner" = 0 ] || mkman kjudge-runner 8
put 644 server/openapi.json "$dest/server/openapi.json"
put 644 README.md "$dest/README.md"
for d in leaderboards web docs; do # docs/: the guides the site serves (server/web.c)
  rm -rf "$dest/$d.new"
  cp -R "$d" "$dest/$d.new"
  rm -rf "$dest/$d.old"
  if [ -e "$dest/$d" ]; then mv "$dest/$d" "$dest/$d.old"; fi
  mv "$dest/$d.new" "$dest/$d"
  rm -rf "$dest/$d.old"
done

# Units: @PREFIX@ and @STATE@ rendered.
render() { sed -e "s|@PREFIX@|$prefix|g" -e "s|@STATE@|$state|g" "deploy/systemd/$1" >"$units/$1.new" &&
           chmod 644 "$units/$1.new" && mv -f "$units/$1.new" "$units/$1"; }
list=() start=() # the units rendered; those to enable (each has an [Install] section)
[ "$server" = 0 ] || { list+=(kjudge-server.service kjudge-backup.service kjudge-backup.timer)
                       start+=(kjudge-server.service kjudge-backup.timer); }
[ "$runner" = 0 ] || { list+=(kjudge-runner@.service); start+=("kjudge-runner@0.service"); }
for u in "${list[@]}"; do render "$u"; done
hint="systemctl enable --now ${start[*]}"
[ "$runner" = 0 ] || hint="$hint (one kjudge-runner@N per GPU)"

# Settings: written once, then the operator's.
envfile() {
  if [ ! -e "$etc/$1" ]; then
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@STATE@|$state|g" "deploy/systemd/$1" >"$etc/$1"
    chmod 644 "$etc/$1"
    echo "install: wrote $etc/$1 (edit it)"
  fi
}
[ "$server" = 0 ] || envfile server.env
[ "$runner" = 0 ] || envfile runner.env
if [ -n "$token" ]; then
  install -m 600 "$token" "$etc/runner.token.new" && mv -f "$etc/runner.token.new" "$etc/runner.token"
fi

if [ -z "$root" ] && [ "$server" = 1 ] && ! id kjudge >/dev/null 2>&1; then
  useradd --system --home-dir "$state" --no-create-home --shell /usr/sbin/nologin kjudge
  echo "install: created the system user kjudge"
fi
# The server's state folder and config file, with a new admin token, once
# (never printed: read it from the file as root).
if [ "$server" = 1 ] && [ ! -e "$root$state/kjudge.conf" ]; then
  mkdir -p "$root$state"
  chmod 700 "$root$state"
  (umask 077; printf '# kjudge-server settings (docs/operator.md)\nadmin_token = %s\n' \
     "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$root$state/kjudge.conf")
  [ -n "$root" ] || chown -R kjudge:kjudge "$state"
  echo "install: wrote $root$state/kjudge.conf with a new admin token (sudo cat it)"
fi

if [ -n "$root" ]; then
  echo "install: installed under $root (no user created, systemctl not called)"
  echo "install: on the host itself, start with: $hint"
  exit 0
fi
if [ "$runner" = 1 ] && [ ! -s "$etc/runner.token" ]; then
  echo "install: no runner token yet: on the front end run" >&2
  echo "           kjudge-server runner add $(hostname -s) --gpu TYPE --db $state/kjudge.db" >&2
  echo "         and save it here: install -m 600 /dev/stdin $etc/runner.token" >&2
fi
command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] || {
  echo "install: systemd is not running here; units are in $units"; exit 0; }
systemctl daemon-reload
[ "$enable" = 1 ] || { echo "install: done; start with: $hint"; exit 0; }
if [ "$server" = 1 ]; then
  systemctl enable --now kjudge-server.service kjudge-backup.timer
fi
if [ "$runner" = 1 ]; then
  n=$gpus
  if [ "$n" = auto ]; then
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  fi
  for ((g = 0; g < n; g++)); do systemctl enable --now "kjudge-runner@$g.service"; done
  echo "install: started $n runner(s)"
fi
