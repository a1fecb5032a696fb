#!/usr/bin/env bash
# .ci/run fails, and goes no further, when a stage fails. Its first stage is one `a && b && c`
# list (the README's test command), and `set -e` ignores a failure anywhere in such a list but
# its last command: without an explicit exit, a failing test let CI go on to the fuzz and
# fresh-root stages and end with status 0. Runs a copy of .ci/run in a scratch folder whose
# scripts and `cmake` are stand-ins that log their calls; `cmake --workflow --preset test` fails.
# usage: run_stops_on_failure.sh SOURCE_DIR
set -u
src=${1:?usage: run_stops_on_failure.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/.ci" "$tmp/scripts" "$tmp/bin"
cp "$src/.ci/run" "$tmp/.ci/run"
for s in install-deps.sh package-check.sh fuzz.sh fresh-check.sh; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\n' "$s" "$tmp" > "$tmp/scripts/$s"
done
printf '#!/bin/sh\necho "cmake $*" >> "%s/calls"\n[ "$*" != "--workflow --preset test" ]\n' \
  "$tmp" > "$tmp/bin/cmake"
chmod +x "$tmp"/scripts/* "$tmp/bin/cmake" "$tmp/.ci/run"
(cd "$tmp" && PATH="$tmp/bin:$PATH" ./.ci/run > "$tmp/out" 2>&1)
status=$?
fail=0
if [ "$status" -eq 0 ]; then
  echo "FAIL: .ci/run exited 0 although its test stage failed"
  fail=1
fi
for s in "cmake --workflow --preset asan" fuzz.sh fresh-check.sh; do
  if grep -q "^$s" "$tmp/calls"; then
    echo "FAIL: .ci/run went on to '$s' after its test stage failed"
    fail=1
  fi
done
if ! grep -q "(failed)" "$tmp/out"; then
  echo "FAIL: .ci/run's stage times do not mark the failed stage"
  fail=1
fi
echo "calls:"; sed 's/^/  /' "$tmp/calls"
echo "output:"; sed 's/^/  /' "$tmp/out"
exit "$fail"
