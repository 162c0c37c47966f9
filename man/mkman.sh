#!/bin/sh
# mkman.sh PROGRAM PAGE.in - a manual page on stdout: PAGE.in (mdoc, written
# by hand: NAME, DESCRIPTION, FILES, SEE ALSO) with the line ".\" @USAGE@"
# replaced by PROGRAM's own --help text as a literal display, so the page's
# SYNOPSIS and options come from the one text the program prints.
# Run by `make man` (build/man/) and deploy/install.sh; checked by
# tests/api/test_deploy.py with `man --warnings`.
set -eu
[ $# -eq 2 ] || { echo "usage: mkman.sh PROGRAM PAGE.in" >&2; exit 2; }
prog=$1 page=$2
case "$prog" in */*) ;; *) prog=./$prog ;; esac
help=$("$prog" --help) || { echo "mkman.sh: $prog --help failed" >&2; exit 1; }
[ -n "$help" ] || { echo "mkman.sh: $prog --help printed nothing" >&2; exit 1; }
grep -q '^\.\\" @USAGE@$' "$page" || { echo "mkman.sh: $page has no @USAGE@ line" >&2; exit 1; }
# roff: a backslash is \e; a line starting with . or ' gets \& first.
usage=$(printf '%s\n' "$help" | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/")
while IFS= read -r line || [ -n "$line" ]; do
  if [ "$line" = '.\" @USAGE@' ]; then
    printf '.Bd -literal\n%s\n.Ed\n' "$usage"
  else
    printf '%s\n' "$line"
  fi
done <"$page"
