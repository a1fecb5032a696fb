#!/usr/bin/env bash
# The second bad-input pass (issue 25): exported scripts, output paths against the run store,
# imported rows, archives and files read without bound, caches, sweeps, terminal text. Each
# group of cases lives in tests/faults/round2/<group>.sh, which defines case_<name> functions
# and adds their names to ROUND2_CASES; the outcomes are those of hostile-inputs.sh
# (hostile_lib.sh): ok, named-error, unnamed-error, wrong-success, data-lost, crash, hang.
#
# usage: hostile-round2.sh CLI [--table]
# Exit: 0 every input got its expected outcome (skipped ones aside), 1 some did not, 77 all were
# skipped, 2 bad usage. HOSTILE_CASES="name ..." runs only those cases.
# shellcheck disable=SC2317  # functions called indirectly ("case_$name")
set -u

usage() {
  echo "usage: $0 CLI [--table]" >&2
  exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
CLI=$1
case $CLI in /*) ;; *) CLI=$PWD/$CLI ;; esac
[ -x "$CLI" ] || { echo "hostile-round2.sh: '$CLI' is not an executable" >&2; exit 2; }
TABLE=0
if [ $# -eq 2 ]; then
  [ "$2" = --table ] || usage
  TABLE=1
fi

# shellcheck source=hostile_lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hostile_lib.sh"

ROUND2_CASES=""
for group in "$HERE"/round2/*.sh; do
  [ -e "$group" ] || continue
  # shellcheck disable=SC1090
  . "$group"
done
[ -n "$ROUND2_CASES" ] || { echo "hostile-round2.sh: no cases under $HERE/round2"; exit 77; }
hostile_run "hostile inputs, round 2" "$ROUND2_CASES"
