#!/usr/bin/env bash
# The GPU check as one call of the device tool on a lent GPU machine, after tests/gpu/bundle.sh
# (and tests/gpu/bundle-check.sh) here:
#
#   run(command="tests/gpu/on-device.sh", carry=["build/gpu-bundle.tar.xz"], timeout_s=600)
#
# Unpacks the bundle and runs tests/gpu/check.sh on it under a time limit (MIXLAB_CHECK_SECONDS,
# default 540) that leaves the call time to pack the logs: check.sh's output in $OUT/check.log,
# its logs and JSON files in $OUT/check-logs.tar.gz (the tool brings back at most 8 files).
# Exit status: check.sh's (124 when it ran out of time).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$root" || exit 2
out=${OUT:-$(mktemp -d -t mixlab-on-device.XXXXXX)}
logs=$(mktemp -d -t mixlab-gpu-check.XXXXXX)
tar -xJf build/gpu-bundle.tar.xz || { echo "on-device.sh: no build/gpu-bundle.tar.xz to unpack" >&2; exit 2; }
MIXLAB_BUILD_DIR=build/gpu MIXLAB_CHECK_OUT=$logs \
  timeout -k 10 "${MIXLAB_CHECK_SECONDS:-540}" tests/gpu/check.sh 2>&1 | tee "$out/check.log"
rc=${PIPESTATUS[0]}
tar -czf "$out/check-logs.tar.gz" -C "$logs" .
echo "on-device.sh: check.sh exited $rc; logs in $out/check.log and $out/check-logs.tar.gz"
exit "$rc"
