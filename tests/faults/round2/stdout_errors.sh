# shellcheck shell=bash
# Issue 25, item 10: a command whose main output goes to stdout says so when stdout cannot be
# written (a full disk: /dev/full fails every write with ENOSPC) and exits 1, instead of exiting
# 0 having written nothing. Sourced by hostile-round2.sh.

case_stdout_full() {
  local db=$WORK/so/runs.sqlite outcome args
  mkdir -p "$WORK/so"
  new_store "$db" || { record 25.10 "stdout setup" "-" skipped "cannot create a store"; return; }
  run_cmd 60 "$CLI" sweep --model "$MODEL" --dataset "$DATA" --precision float32 --steps 5 \
    --threads 1 --quiet --db "$db"
  [ "$RC" -eq 0 ] || { record 25.10 "stdout setup" "-" skipped "cannot run a sweep"; return; }
  local -a commands=(
    "export $MODEL --to mixlab"
    "export --run 1 --db $db --to pytorch"
    "runs export 1 --summary --db $db"
    "runs list --db $db"
    "runs show 1 --json --db $db"
    "doctor $MODEL --profile T4 --json"
    "doctor $MODEL --profile T4"
    "bench --models $MODEL --precisions float32 --steps 6 --warmup 1 --threads 1 --json"
    "sweep show 1 --json --db $db"
    "sweep status 1 --json --db $db"
    "predict $MODEL --dataset $DATA --count 2 --threads 1"
    "predict $MODEL --dataset $DATA --count 2 --threads 1 --json"
    "--help"
  )
  for args in "${commands[@]}"; do
    # shellcheck disable=SC2086  # the words of the command line
    run_cmd 60 bash -c 'exec "$@" >/dev/full' - "$CLI" $args
    outcome=$(error_outcome 1 "stdout")
    record 25.10 "${args//$WORK/} > /dev/full" "exit 1 naming stdout" "$outcome" \
      "exit $RC: $(said)"
  done
}

ROUND2_CASES="$ROUND2_CASES stdout_full"
