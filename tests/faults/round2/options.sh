# shellcheck shell=bash
# Issue 25, item 13: an option given an empty value, or a value that cannot be right, is refused
# before the command does any work: exit 2, a message naming the option, nothing on stdout,
# nothing measured, trained or recorded (no run database made), and promptly. It used to be
# ignored (--profile "", --sweep "", sweep --name "") or found only after the work (doctor
# --sweep batch=0 after the whole report, sweep --poll 0 after submitting, bench --models
# cifar10-mlp,nosuch after benchmarking cifar10-mlp). Sourced by hostile-round2.sh.

# option_case REGEX CMD...: runs `mixlab-cli CMD... --db DB` where the command takes --db (DB is
# a fresh path), and records its outcome.
option_case() {
  local regex=$1 outcome start elapsed db
  shift
  db=$WORK/r2-options/runs-$N.sqlite
  mkdir -p "$WORK/r2-options"
  local args=("$@")
  case ${args[0]} in train | sweep | doctor | runs) args+=(--db "$db") ;; esac
  start=$SECONDS
  run_cmd 60 "$CLI" "${args[@]}"
  elapsed=$((SECONDS - start))
  outcome=$(error_outcome 2 "$regex")
  local why=""
  if [ "$outcome" = named-error ]; then
    if [ -s "$OUT" ]; then
      outcome=wrong-success why="stdout: $(said "$OUT" 50); "
    elif grep -Eqi 'measur|\[[0-9]+/[0-9]+\]|submitted' "$ERR"; then
      outcome=wrong-success why="worked first; "
    elif [ -e "$db" ]; then
      outcome=wrong-success why="made a run database; "
    elif [ "$elapsed" -gt 10 ]; then
      outcome=wrong-success why="took ${elapsed} s; "
    fi
  fi
  record 13 "${args[*]//$WORK/}" "exit 2 naming the option, before any work" "$outcome" \
    "${why}exit $RC: $(said "$ERR" 100)"
}

case_options_doctor() {
  option_case "--profile" doctor fashion-mlp --profile ""
  option_case "--sweep" doctor fashion-mlp --sweep ""
  option_case "--sweep" doctor fashion-mlp --sweep batch=0
  option_case "--sweep" doctor fashion-mlp --sweep batch=32,x --json
  option_case "--steps" doctor fashion-mlp --measure --steps 1
  option_case "--warmup" doctor fashion-mlp --measure --warmup x
  option_case "--precision" doctor fashion-mlp --precision float32
  option_case "--device" doctor fashion-mlp --device ""
  option_case "--html" doctor fashion-mlp --html ""
}

case_options_bench() {
  option_case "nosuch" bench --models cifar10-mlp,nosuch --steps 2 --warmup 0 --threads 1
  option_case "--models" bench --models ""
  option_case "--models" bench --models ,
  option_case "--precisions" bench --precisions ,
  option_case "--steps" bench --steps ""
  option_case "--suite" bench --suite ""
}

case_options_sweep() {
  local sweep=(sweep --model "$MODEL" --dataset "$DATA" --steps 2 --threads 1)
  option_case "--poll" "${sweep[@]}" --poll 0
  option_case "--name" "${sweep[@]}" --name ""
  option_case "--device" "${sweep[@]}" --device ""
  option_case "--device" "${sweep[@]}" --device gpu7
  option_case "--devices" "${sweep[@]}" --devices cpu,nowhere
  option_case "--batch-size" "${sweep[@]}" --batch-size ""
  option_case "--model" sweep --model "" --dataset "$DATA" --steps 2
  option_case "--sbatch-option" "${sweep[@]}" --executor slurm --shared-dir "$WORK" --sbatch-option ""
  option_case "--threads" sweep resume 1 --threads abc
  option_case "--devices" sweep resume 1 --devices ""
  option_case "--poll" sweep resume 1 --poll 0
}

case_options_other() {
  option_case "--model" train --model "" --dataset "$DATA" --steps 2
  option_case "--device" train --device "" --model "$MODEL" --dataset "$DATA" --steps 2
  option_case "--dataset" train --dataset "" --model "$MODEL" --steps 2
  option_case "--count" predict "$MODEL" --count ""
  option_case "--device" predict "$MODEL" --dataset "$DATA" --device nowhere
  option_case "--sweep" runs export --sweep ""
}

ROUND2_CASES+=" options_doctor options_bench options_sweep options_other"
