# Issue 25, items 4, 5, 6 and 8: inputs read without bound, and memory taken before a refusal.
# Sourced by hostile-round2.sh (hostile_lib.sh's run_cmd, error_outcome, record, MEMLIMIT).
#   4  a .keras archive whose entries inflate past what the config needs, or whose headers lie
#   5  a sweep file that is /dev/zero, a FIFO or a directory
#   6  the doctor's calibration cache: a FIFO, a directory, absurd roofs; a profile file's
#   8  doctor --measure at a batch whose synthetic data cannot be held
# shellcheck shell=bash disable=SC2317  # functions called indirectly ("case_$name")

ROUND2_CASES="$ROUND2_CASES bounds_keras bounds_sweep_file bounds_profile bounds_doctor_cache
  bounds_doctor_memory"

BOUNDS_LIMIT_NOTE=""
[ ${#MEMLIMIT[@]} -gt 0 ] && BOUNDS_LIMIT_NOTE=" (1 GiB address-space limit)"

# --- 4: hostile .keras archives ---------------------------------------------------------------

case_bounds_keras() {
  local kind dir=$WORK/b4
  mkdir -p "$dir"
  for kind in bomb understated claims-2gib huge-config; do
    if ! "$PYTHON" "$HERE/round2/hostile_keras.py" "$dir/$kind.keras" "$kind"; then
      record 4 "inspect $kind.keras" "-" skipped "hostile_keras.py could not write it"
      continue
    fi
    run_cmd 20 "${MEMLIMIT[@]}" "$CLI" inspect "$dir/$kind.keras"
    local entry='model\.weights\.h5'
    [ "$kind" = huge-config ] && entry='config\.json'
    record 4 "inspect $kind.keras (1.2 MB; an entry inflating to 1.2 GB or saying 2 GiB)$BOUNDS_LIMIT_NOTE" \
      "exit 2 naming the archive and the entry, at once" \
      "$(error_outcome 2 "$kind\\.keras: $entry (says it )?inflates to")" "exit $RC: $(said)"
  done
}

# --- 5: sweep files that are not regular files ------------------------------------------------

case_bounds_sweep_file() {
  local dir=$WORK/b5
  mkdir -p "$dir/folder.json"
  mkfifo "$dir/fifo.json"
  run_cmd 10 "${MEMLIMIT[@]}" "$CLI" sweep --file /dev/zero --db "$dir/runs.sqlite"
  record 5 "sweep --file /dev/zero (timeout 10 s)$BOUNDS_LIMIT_NOTE" \
    "exit 2 naming the file, at once" "$(error_outcome 2 '/dev/zero: .*not a regular file')" \
    "exit $RC: $(said)"
  run_cmd 10 "$CLI" sweep --file "$dir/fifo.json" --db "$dir/runs.sqlite"
  record 5 "sweep --file FIFO (timeout 10 s)" "exit 2 naming the file (a FIFO)" \
    "$(error_outcome 2 'fifo\.json: .*FIFO')" "exit $RC: $(said)"
  run_cmd 10 "$CLI" sweep --file "$dir/folder.json" --db "$dir/runs.sqlite"
  record 5 "sweep --file DIRECTORY" "exit 2 naming the file (a directory)" \
    "$(error_outcome 2 'folder\.json: .*directory')" "exit $RC: $(said)"
}

# --- 6: figures out of any device's range, in a profile file and in the doctor's cache ----------

case_bounds_profile() {
  local dir=$WORK/b6p
  mkdir -p "$dir"
  "$PYTHON" - "$dir/tiny-bw.json" <<'EOF'
import json, sys
doc = {"format": "mixlab-gpu-profiles-1", "documents": {"d": "a datasheet"},
       "profiles": [{"name": "Tiny", "compute_capability": "8.6", "tensor_cores": True,
                     "sm_count": 10, "boost_clock_mhz": 1500, "memory_bytes": 8 << 30,
                     "memory_bandwidth_gb_s": 1e-308, "l2_bytes": 4 << 20,
                     "peak_tflops": {"float32": 10, "tf32": None, "float16_acc32": 20,
                                     "float16_acc16": None, "bfloat16": None, "fp8": None},
                     "sources": {f: "d" for f in ["compute_capability", "sm_count",
                                 "boost_clock_mhz", "memory_bytes", "memory_bandwidth_gb_s",
                                 "l2_bytes", "peak_tflops"]}}]}
open(sys.argv[1], "w").write(json.dumps(doc))
EOF
  run_cmd 20 "$CLI" doctor "$MODEL" --profiles "$dir/tiny-bw.json" --profile Tiny
  record 6 "doctor --profiles FILE whose memory_bandwidth_gb_s is 1e-308" \
    "exit 2 naming the file and the field" \
    "$(error_outcome 2 "tiny-bw\\.json: .*memory_bandwidth_gb_s.* is 1e-308")" "exit $RC: $(said)"
}

# doctor_with_cache NAME: runs the doctor on this CPU with XDG_CACHE_HOME=$WORK/b6/NAME.
doctor_with_cache() {
  run_cmd 90 env XDG_CACHE_HOME="$WORK/b6/$1" "$CLI" doctor "$MODEL" --device cpu --threads 1 \
    --json
}

# cache_outcome: ok when the last doctor run succeeded, said on stderr that the cache was
# ignored, listed that among its sources (--json) and predicted finite times.
cache_outcome() {
  local outcome
  outcome=$(success_outcome)
  if [ "$outcome" = ok ]; then
    grep -q 'calibration cache\|cpu-profiles\.json' "$ERR" || outcome=wrong-success
    grep -q '"calibration_cache"' "$OUT" || outcome=wrong-success
    # Finite, positive step times and speed-up (JSON writes inf and NaN as null).
    "$PYTHON" -c '
import json, math, sys
d = json.load(open(sys.argv[1]))
times = list(d["predicted_step_ms"].values()) + [d["predicted_speedup"]]
sys.exit(0 if all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in times) else 1)
' "$OUT" 2>/dev/null || outcome=wrong-success
  fi
  echo "$outcome"
}

case_bounds_doctor_cache() {
  local cache=$WORK/b6
  mkdir -p "$cache/fifo/mixlab" "$cache/dir/mixlab/cpu-profiles.json" "$cache/absurd/mixlab"
  mkfifo "$cache/fifo/mixlab/cpu-profiles.json"
  doctor_with_cache fifo
  record 6 "doctor with a FIFO as cpu-profiles.json (timeout 90 s)" \
    "exit 0, the cache ignored and measured again, saying so" "$(cache_outcome)" \
    "exit $RC: $(said)" ok
  [ -p "$cache/fifo/mixlab/cpu-profiles.json" ] ||
    record 6 "the FIFO cpu-profiles.json is left alone" "kept" data-lost "it was replaced" ok

  doctor_with_cache dir
  record 6 "doctor with a directory as cpu-profiles.json" \
    "exit 0, the cache ignored and measured again, saying so" "$(cache_outcome)" \
    "exit $RC: $(said)" ok

  # This CPU's entry as the doctor measured it, with every roof and rate made 1e-300.
  doctor_with_cache absurd
  if ! "$PYTHON" - "$cache/absurd/mixlab/cpu-profiles.json" <<'EOF'
import json, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    for k, v in e.items():
        if isinstance(v, float):
            e[k] = 1e-300
json.dump(entries, open(sys.argv[1], "w"))
EOF
  then
    record 6 "doctor with absurd roofs (1e-300) cached" "-" skipped "no cache was written"
    return
  fi
  doctor_with_cache absurd
  record 6 "doctor with this CPU's cached roofs all 1e-300" \
    "exit 0, the entry refused by field and measured again, finite times" "$(cache_outcome)" \
    "exit $RC: $(said)" ok
}

# --- 8: memory refused before the synthetic data is made ---------------------------------------

case_bounds_doctor_memory() {
  local limit=(prlimit --as=$((2 << 30)))
  if ! prlimit --as=$((2 << 30)) true 2>/dev/null; then
    record 8 "doctor --measure --batch-size 1048576 under a 2 GiB limit" "-" skipped "no prlimit"
    return
  fi
  # The roofs measured beforehand (not under the limit), so that the run below only measures.
  mkdir -p "$WORK/b8"
  env XDG_CACHE_HOME="$WORK/b8" "$CLI" doctor fashion-mlp --device cpu --json >/dev/null 2>&1
  run_cmd 10 env XDG_CACHE_HOME="$WORK/b8" "${limit[@]}" "$CLI" doctor fashion-mlp --device cpu \
    --measure --batch-size 1048576 --no-store
  record 8 "doctor fashion-mlp --measure --batch-size 1048576 (2 GiB address-space limit, 10 s)" \
    "exit 2: the bytes the synthetic set needs and those available" \
    "$(error_outcome 2 'synthetic:.* needs [0-9.]+ [MG]iB in memory; [0-9.]+ [MG]iB are available')" \
    "exit $RC: $(said)"
}
