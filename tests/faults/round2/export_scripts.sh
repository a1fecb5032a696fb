# Issue 25, item 1: code injection through exported scripts. A model whose name (and a layer's)
# closes the docstring and runs `touch pwned` is exported to Keras and PyTorch scripts from every
# way a model reaches `export`: MixLab JSON, Keras JSON, a trained run (--run) and a run brought
# in by `runs import`. Each script must parse (Python's ast) and, executed with `python3 -I` in
# an empty folder, must not create `pwned`, whatever its exit status: without numpy, keras or
# torch installed it stops at their import, after the module-level text where an injected
# statement would already have run.
# Sourced by hostile-round2.sh (hostile_lib.sh's helpers).
# shellcheck shell=bash disable=SC2317  # functions called indirectly ("case_$name")

# export_script_outcome INPUT SCRIPT: the outcome of the last run_cmd (an export that wrote
# SCRIPT), then SCRIPT parsed and run; recorded under INPUT.
export_script_outcome() {
  local input=$1 script=$2 dir outcome detail python_rc
  outcome=$(success_outcome)
  detail="export exit $RC: $(said)"
  if [ "$outcome" = ok ]; then
    dir=$(mktemp -d "$WORK/run.XXXXXX")
    if ! "$PYTHON" -c 'import ast, sys; ast.parse(open(sys.argv[1], "rb").read())' "$script" \
      >"$dir/parse.err" 2>&1; then
      outcome=wrong-success
      detail="the script does not parse: $(tail -n 1 "$dir/parse.err" | cut -c 1-100)"
    else
      (cd "$dir" && timeout -k 5 60 "$PYTHON" -I "$script" --steps 1 >/dev/null 2>&1)
      python_rc=$?
      if [ -e "$dir/pwned" ]; then
        outcome=wrong-success
        detail="running the script ran the model's name as code: $dir/pwned exists"
      else
        detail="parses; python3 -I ran it (exit $python_rc) and made no pwned"
      fi
    fi
  fi
  record 1 "$input" "exit 0; the script parses and running it makes no file" "$outcome" \
    "$detail" ok
}

case_export_script_injection() {
  local d=$WORK/r2-export to
  mkdir -p "$d"
  # The name of issue 25: it closes the docstring the script used to start with; the layer's
  # name would close a single-quoted literal. (Names with line ends are refused on reading.)
  cat >"$d/inj.json" <<'EOF'
{"name": "x\"\"\";import os;os.system(\"touch pwned\");\"\"\"", "input": {"shape": [4, 4, 1]},
 "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten", "name": "f');import os;os.system('touch pwned');('"},
            {"type": "Dense", "units": 4},
            {"type": "Activation", "activation": "softmax"}]}
EOF
  local settings=(--dataset "$DATA" --steps 1)
  for to in keras pytorch; do
    run_cmd 30 "$CLI" export "$d/inj.json" --to "$to" "${settings[@]}" -o "$d/json-$to.py"
    export_script_outcome "export MODEL.json --to $to, a name that closes the docstring" \
      "$d/json-$to.py"
  done

  run_cmd 30 "$CLI" export "$d/inj.json" --to keras-json -o "$d/inj-keras.json"
  if [ "$RC" -ne 0 ]; then
    record 1 "export KERAS.json --to keras" "-" skipped "cannot write the Keras JSON: $(said)"
  else
    run_cmd 30 "$CLI" export "$d/inj-keras.json" --to keras "${settings[@]}" -o "$d/keras.py"
    export_script_outcome "export KERAS.json --to keras, the same name in Keras JSON" \
      "$d/keras.py"
  fi

  local db=$d/runs.sqlite imported=$d/imported.sqlite
  if ! "$CLI" train --model "$d/inj.json" --dataset "$DATA" --threads 1 --quiet --no-eval \
    --steps 5 --db "$db" >/dev/null 2>&1; then
    record 1 "export --run ID --to pytorch" "-" skipped "cannot train a run of the model"
    return
  fi
  run_cmd 30 "$CLI" export --run 1 --db "$db" --to pytorch --steps 1 -o "$d/run.py"
  export_script_outcome "export --run ID --to pytorch, a run of that model" "$d/run.py"
  if ! "$CLI" runs import "$db" --db "$imported" >/dev/null 2>&1; then
    record 1 "export --run ID (imported) --to keras" "-" skipped "runs import failed"
    return
  fi
  run_cmd 30 "$CLI" export --run 1 --db "$imported" --to keras --steps 1 -o "$d/imported.py"
  export_script_outcome "export --run ID --to keras, the run brought in by runs import" \
    "$d/imported.py"
}

ROUND2_CASES+=" export_script_injection"
