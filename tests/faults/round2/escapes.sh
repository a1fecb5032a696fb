# shellcheck shell=bash
# Issue 25, item 9: ESC and BEL in text that a message quotes (a Keras layer's class name,
# activation, padding, dtype, an unknown field's name, a loss, a layer type, a GPU profile's
# name, a damaged store row) reach the terminal escaped (\x1b), never raw. Each input must end in its
# named error (or, for what is only a warning, success) with no raw control byte in the output.
# Sourced by hostile-round2.sh.

# escapes_write FILE PYTHON_EXPR: writes json.dumps(EXPR) to FILE; E is ESC + "[2J" + BEL + ESC
# + "]0;pwned" + BEL, the bytes a terminal would act on.
escapes_write() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
E = "\x1b[2J\x07\x1b]0;pwned\x07"
def keras(*layers, compile_config=None):
    model = {"module": "keras", "class_name": "Sequential",
             "config": {"name": "s", "layers": [
                 {"module": "keras.layers", "class_name": "InputLayer",
                  "config": {"batch_shape": [None, 4, 4, 1], "name": "input"}}] + list(layers)}}
    if compile_config is not None:
        model["compile_config"] = compile_config
    return model
def klayer(cls, **config):
    return {"module": "keras.layers", "class_name": cls, "config": dict(config)}
def mixlab(*layers, loss="sparse_categorical_crossentropy"):
    return {"name": "m", "input": {"shape": [4, 4, 1]}, "loss": loss,
            "layers": list(layers) + [{"type": "Flatten"}, {"type": "Dense", "units": 2}]}
def profile(**fields):
    p = {"name": "GPU", "tensor_cores": True, "compute_capability": "8.6", "sm_count": 10,
         "boost_clock_mhz": 1000, "memory_bandwidth_gbps": 100, "memory_gb": 8,
         "peak_tflops": {"float32": 1, "float16": 2, "bfloat16": 2}}
    p.update(fields)
    return {"format": "mixlab-gpu-profiles-1", "documents": {}, "profiles": [p]}
open(sys.argv[1], "w").write(json.dumps(eval(sys.argv[2])))
PY
}

# escapes_check DEFECT INPUT CODES REGEX: the last run_cmd's outcome: an error exit in CODES
# naming REGEX (or, CODES "0", success), and no raw control byte on stdout or stderr.
escapes_check() {
  local defect=$1 input=$2 codes=$3 regex=$4 outcome
  if [ "$codes" = 0 ]; then
    outcome=$(success_outcome)
  else
    outcome=$(error_outcome "$codes" "$regex")
  fi
  if { [ "$outcome" = ok ] || [ "$outcome" = named-error ]; } &&
    { raw_controls "$ERR" || raw_controls "$OUT"; }; then
    outcome=wrong-success
  fi
  local expected="exit $codes naming it, ESC/BEL escaped"
  record "$defect" "$input" "$expected" "$outcome" "exit $RC: $(said "$ERR" 110)" ok named-error
}

# escapes_inspect KIND: `inspect`s one file per line of stdin, "name|python expression of the
# file|what the message must name", each expected to end in its named error, escaped.
escapes_inspect() {
  local kind=$1 dir=$WORK/r2-esc-$1 name expr regex
  mkdir -p "$dir"
  while IFS='|' read -r name expr regex; do
    escapes_write "$dir/$name.json" "$expr" || { record 9 "$kind $name" - skipped "python"; continue; }
    run_cmd 30 "$CLI" inspect "$dir/$name.json"
    escapes_check 9 "inspect a $kind file whose $name holds ESC/BEL" 2 "$regex"
  done
}

case_escapes_keras() {
  escapes_inspect Keras <<'EOF_CASES'
class name|keras(klayer("Den" + E + "se", units=2))|has no .*layer
activation|keras(klayer("Flatten"), klayer("Dense", units=2, activation="re" + E + "lu"))|activation
padding|keras(klayer("Conv2D", filters=2, kernel_size=3, padding="sa" + E + "me"), klayer("Flatten"), klayer("Dense", units=2))|padding
dtype|keras(klayer("Flatten", dtype="float" + E + "32"), klayer("Dense", units=2))|dtype
unknown field|keras(klayer("Flatten", **{"colour" + E: 1}), klayer("Dense", units=2))|colour
layer name|keras(klayer("Flatten", name="flat" + E, colour=1), klayer("Dense", units=2))|colour
EOF_CASES
  # A loss Keras has but MixLab does not is a warning: success, the warning escaped.
  local dir=$WORK/r2-esc-Keras
  escapes_write "$dir/loss.json" \
    'keras(klayer("Flatten"), klayer("Dense", units=2), compile_config={"loss": "hu" + E + "ber"})'
  run_cmd 30 "$CLI" inspect "$dir/loss.json"
  escapes_check 9 "inspect a Keras file whose compiled loss holds ESC/BEL (a warning)" 0 ""
}

case_escapes_model() {
  escapes_inspect MixLab <<'EOF_CASES'
layer type|mixlab({"type": "Den" + E + "se", "units": 2})|layer type
activation|mixlab({"type": "Activation", "activation": "re" + E + "lu"})|activation
padding|mixlab({"type": "Conv2D", "filters": 2, "kernel_size": 3, "padding": "sa" + E + "me"})|padding
dtype|mixlab({"type": "Flatten", "dtype": "float" + E + "32"})|dtype
unknown field|mixlab({"type": "Flatten", "colour" + E: 1})|colour
unknown key|dict(mixlab(), **{"colour" + E: 1})|colour
loss|mixlab(loss="cross" + E + "entropy")|loss
EOF_CASES
}

case_escapes_profile() {
  local dir=$WORK/r2-esc-profile
  mkdir -p "$dir"
  escapes_write "$dir/profiles.json" 'profile(name="GPU" + E, sm_count="many")'
  run_cmd 30 "$CLI" doctor fashion-mlp --profiles "$dir/profiles.json" --list-profiles
  escapes_check 9 "doctor --profiles FILE whose profile's name holds ESC/BEL" 2 "'name'.*not printable"
  run_cmd 30 "$CLI" doctor fashion-mlp --profile $'RTX\e[2J\a'
  escapes_check 9 "doctor --profile NAME with ESC/BEL" 2 "unknown device profile"
}

case_escapes_store_row() {
  local db=$WORK/r2-esc-store/runs.sqlite
  mkdir -p "$(dirname "$db")"
  if ! new_store "$db" || ! "$PYTHON" - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET optimizer = ? WHERE id = 1", ("ad\x1b[2J\x07am",))
db.commit()
PY
  then
    record 9 "runs show with a damaged row" - skipped "cannot create the store"
    return
  fi
  # A damaged row is shown, saying what is damaged: its text escaped.
  local sub
  for sub in "show 1" list "list --json"; do
    # shellcheck disable=SC2086  # sub is several words
    run_cmd 30 "$CLI" runs $sub --db "$db"
    escapes_check 9 "runs $sub, run 1's optimizer column holding ESC/BEL (a damaged row)" 0 ""
  done
  # Left out of an export with a warning that says why, escaped; nothing else to export.
  run_cmd 30 "$CLI" runs export 1 --summary --db "$db"
  escapes_check 9 "runs export 1 --summary, run 1 damaged with ESC/BEL" "1 2" "damaged"
}

ROUND2_CASES+=" escapes_keras escapes_model escapes_profile escapes_store_row"
