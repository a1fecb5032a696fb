# What the bad-input passes (hostile-inputs.sh, hostile-round2.sh) share: a scratch HOME and
# store, a tiny model, running one input under a time limit, classifying its outcome, recording
# it, and the summary. Sourced after the caller has set CLI (the mixlab-cli under test) and
# TABLE (1: print a markdown table at the end).
# shellcheck shell=bash disable=SC2034  # variables used by the sourcing scripts

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Skipped, saying why, where python3 (with its sqlite3 module) is missing.
PYTHON=$(python3 -c 'import sqlite3, sys; print(sys.executable)' 2>/dev/null) ||
  { echo "SKIP $(basename "$0"): needs python3 with its sqlite3 module (Debian: python3)"; exit 77; }
CHECK=("$PYTHON" "$HERE/store_check.py")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-hostile.XXXXXX") || exit 2
PIDS=()
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM HUP
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  sleep 0.2
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf --one-file-system "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Nothing here may touch the user's own run history.
export HOME=$WORK/home XDG_DATA_HOME=$WORK/xdg
unset MIXLAB_DB
mkdir -p "$HOME" "$XDG_DATA_HOME"
cd "$WORK" || exit 2

MODEL=$WORK/tiny.json
cat >"$MODEL" <<'EOF'
{"name": "tiny", "input": {"shape": [4, 4, 1]}, "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 8, "activation": "relu"},
            {"type": "Dense", "units": 4}, {"type": "Activation", "activation": "softmax"}]}
EOF
DATA=synthetic:4x4x1:4:256
TRAIN=("$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 --quiet --no-eval)
# A memory limit like a small container's, for the inputs that would read without bound.
MEMLIMIT=()
if command -v prlimit >/dev/null && prlimit --as=$((1 << 30)) true 2>/dev/null; then
  MEMLIMIT=(prlimit --as=$((1 << 30)))
fi

# --- running one input ------------------------------------------------------------------------

# run_cmd SECONDS CMD...: runs CMD under timeout; sets RC, OUT, ERR (files), HUNG (0/1).
N=0
run_cmd() {
  local limit=$1 start
  shift
  N=$((N + 1))
  OUT=$WORK/out.$N ERR=$WORK/err.$N
  start=$(date +%s%N)
  timeout -k 5 "$limit" "$@" >"$OUT" 2>"$ERR" &
  local pid=$!
  PIDS+=("$pid")
  wait "$pid" 2>/dev/null  # no "Segmentation fault" from the shell: the table says it
  RC=$?
  local elapsed_ms=$((($(date +%s%N) - start) / 1000000))
  HUNG=0
  if [ "$RC" -eq 124 ] || { [ "$RC" -eq 137 ] && [ "$elapsed_ms" -ge $((limit * 1000)) ]; }; then
    HUNG=1
  fi
}

# The first line of stderr (of stdout when stderr is empty: a failed run says why in its
# summary), control characters made visible, for the table.
said() {
  local file=${1:-$ERR}
  [ $# -gt 0 ] || [ -s "$ERR" ] || file=$OUT
  head -n 1 "$file" | cut -c 1-"${2:-110}" | LC_ALL=C sed 's/[[:cntrl:]]/?/g'
}

# error_outcome CODES REGEX: the outcome of the last run_cmd where an error is expected: exit
# in CODES (e.g. "1 2"), its output (stderr, or stdout, where a failed run's summary says why)
# matching REGEX (extended, case-insensitive), and no raw message.
error_outcome() {
  local codes=$1 regex=$2
  if [ "$HUNG" -eq 1 ]; then
    echo hang
  elif [ "$RC" -ge 128 ]; then
    echo crash
  elif [ "$RC" -eq 0 ]; then
    echo wrong-success
  elif ! [[ " $codes " == *" $RC "* ]] || ! cat "$ERR" "$OUT" | grep -Eqi -- "$regex" ||
    grep -Eq 'std::|\.cpp:[0-9]|\.h:[0-9]| in '"'"'(SELECT|INSERT|UPDATE|PRAGMA|DELETE)' "$ERR"; then
    echo unnamed-error
  else
    echo named-error
  fi
}

# success_outcome: the outcome of the last run_cmd where success is expected (the caller checks
# the final state and may turn `ok` into wrong-success or data-lost).
success_outcome() {
  if [ "$HUNG" -eq 1 ]; then
    echo hang
  elif [ "$RC" -ge 128 ]; then
    echo crash
  elif [ "$RC" -ne 0 ]; then
    echo unnamed-error
  else
    echo ok
  fi
}

# success_showing REGEX: success_outcome, made wrong-success when stdout does not match REGEX
# (extended).
success_showing() {
  local outcome
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] && ! grep -Eq -- "$1" "$OUT"; then outcome=wrong-success; fi
  echo "$outcome"
}

ROWS=()
PASS=0 FAIL=0 SKIP=0
# record DEFECT INPUT EXPECTED OUTCOME DETAIL [ACCEPTED...]: one input's result; it passes when
# OUTCOME is one of ACCEPTED (default: named-error).
record() {
  local defect=$1 input=$2 expected=$3 outcome=$4 detail=$5 verdict=FAIL
  shift 5
  local accepted=("$@")
  [ ${#accepted[@]} -gt 0 ] || accepted=(named-error)
  if [ "$outcome" = skipped ]; then
    verdict=SKIP
    SKIP=$((SKIP + 1))
  elif [[ " ${accepted[*]} " == *" $outcome "* ]]; then
    verdict=PASS
    PASS=$((PASS + 1))
  else
    FAIL=$((FAIL + 1))
  fi
  printf '%-4s %-3s %-13s %s -- %s\n' "$verdict" "$defect" "$outcome" "$input" "$detail"
  local sep=$'\x1f'
  ROWS+=("$defect$sep$input$sep$expected$sep$outcome$sep$detail")
}

# raw_controls FILE: succeeds when FILE holds ESC, BEL or another C0 control besides \n and \t.
raw_controls() {
  LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1"
}

sum_of() { sha256sum "$1" 2>/dev/null | cut -d ' ' -f 1; }

# A store with two short runs: ids 1 and 2.
new_store() {
  rm -f "$1" "$1-wal" "$1-shm"
  "${TRAIN[@]}" --steps 30 --db "$1" >/dev/null 2>&1 &&
    "${TRAIN[@]}" --steps 30 --db "$1" >/dev/null 2>&1
}

# The store still lists runs 1 and 2 (read without mixlab-cli).
store_intact() {
  [ "$("${CHECK[@]}" runs "$1" 2>/dev/null | awk '{print $1}' | tr '\n' ' ')" = "1 2 " ]
}

# hostile_run NAME DEFAULT_CASES: runs case_<name> for each name in $HOSTILE_CASES (default:
# DEFAULT_CASES), prints the summary (and the table), and exits: 0 every input got its expected
# outcome, 1 some did not, 77 all were skipped.
hostile_run() {
  local title=$1 defaults=$2 name
  START=$SECONDS
  for name in ${HOSTILE_CASES:-$defaults}; do
    "case_$name"
  done
  echo "$title: $PASS as expected, $FAIL not, $SKIP skipped in $((SECONDS - START)) s ($CLI)"

  if [ "$TABLE" -eq 1 ]; then
    echo
    echo "| # | input | expected | outcome | what happened |"
    echo "| --- | --- | --- | --- | --- |"
    for row in "${ROWS[@]}"; do
      IFS=$'\x1f' read -r d input expected outcome detail <<<"$row"
      # A | inside a cell would end it.
      printf '| %s | %s | %s | %s | %s |\n' "$d" "${input//|/\\|}" "${expected//|/\\|}" \
        "$outcome" "${detail//|/\\|}"
    done
  fi

  if [ "$FAIL" -gt 0 ]; then
    exit 1
  elif [ "$PASS" -eq 0 ]; then
    exit 77
  fi
  exit 0
}
