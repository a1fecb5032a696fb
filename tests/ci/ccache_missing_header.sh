#!/usr/bin/env bash
# The compiler cache cannot hide a missing package (issue 26): a source compiled through the
# build's own ccache launcher (cmake/MixLabCcache.cmake) and cached, compiled again once the
# header it includes is gone, must fail as it would without the cache, naming the header.
# Uses a cache of its own, in a scratch folder. Exit 0 pass, 1 fail, 77 skipped (no ccache).
#
# usage: ccache_missing_header.sh CXX LAUNCHER...
set -u
[ $# -ge 2 ] || { echo "usage: $0 CXX LAUNCHER..." >&2; exit 2; }
cxx=$1
shift
launcher=("$@")
command -v ccache >/dev/null || { echo "SKIP: ccache is not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-ccache.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export CCACHE_DIR=$work/cache
mkdir -p "$work/src/include/dep"
cd "$work/src" || exit 1
cat >include/dep/dep.h <<'H'
inline int dep_value() { return 42; }
H
cat >use.cpp <<'C'
#include <dep/dep.h>
int use() { return dep_value(); }
C
compile() { "${launcher[@]}" "$cxx" -O1 -Iinclude -c use.cpp -o use.o 2>"$work/err"; }
hits() { ccache --print-stats | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { n += $2 } END { print n + 0 }'; }

compile || { echo "FAIL: the first compile failed: $(cat "$work/err")"; exit 1; }
rm -f use.o
compile || { echo "FAIL: the second compile failed: $(cat "$work/err")"; exit 1; }
[ "$(hits)" -ge 1 ] || { echo "FAIL: the second compile was no cache hit: is the launcher ccache?"; exit 1; }
echo "cached: the second compile was a hit"

rm -rf include/dep  # the package that brought the header is gone
rm -f use.o
if compile; then
  echo "FAIL: the compile succeeded from the cache without the header it includes"
  exit 1
fi
grep -q 'dep/dep.h' "$work/err" || { echo "FAIL: the error does not name the header: $(cat "$work/err")"; exit 1; }
echo "pass: without its header the cached source fails to compile: $(grep -m1 'dep/dep.h' "$work/err")"
