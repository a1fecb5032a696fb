#!/usr/bin/env bash
# The bad-input pass of issue 16 as a script: for each defect 1-13 that the command line can
# trigger, a few concrete inputs, each classified as
#
#   ok             the correct success, where success is right (exit 0, the right final state)
#   named-error    a non-zero exit with the documented code, a message naming the problem (the
#                  file, the option) in words, and nothing changed
#   unnamed-error  a non-zero exit, but with another code or a raw message (std::bad_alloc, an
#                  SQLite statement, a source line) that does not say what is wrong
#   wrong-success  exit 0 where it should fail, or a wrong final state (a run `finished` that is
#                  not, a formula left live in a CSV cell, terminal escapes printed raw)
#   data-lost      a file or the store was overwritten or changed where it must not be
#   crash          killed by a signal (exit >= 128)
#   hang           still running at its time limit
#
# Every command runs under `timeout`. Exit codes (README, mixlab-cli --help): 0 success, 1 run
# failed or the store / an output file cannot be read or written, 2 bad input.
#
# usage: hostile-inputs.sh CLI [--table]
#   --table  also print a markdown table: defect, input, expected, outcome, what happened
# Exit: 0 every input got its expected outcome (skipped ones aside), 1 some did not, 77 all were
# skipped, 2 bad usage. Cases that need root (mknod) or a tool that is missing are skipped.
# HOSTILE_CASES="escapes dash_names ..." runs only those groups (the case_* functions below).
# shellcheck disable=SC2317  # functions called indirectly (trap, "case_$name")
set -u

usage() {
  echo "usage: $0 CLI [--table]" >&2
  exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
CLI=$1
case $CLI in /*) ;; *) CLI=$PWD/$CLI ;; esac
[ -x "$CLI" ] || { echo "hostile-inputs.sh: '$CLI' is not an executable" >&2; exit 2; }
TABLE=0
if [ $# -eq 2 ]; then
  [ "$2" = --table ] || usage
  TABLE=1
fi

# shellcheck source=hostile_lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hostile_lib.sh"

# --- 1: runs export -o FILE replaces whatever is at FILE ----------------------------------------

case_export_targets() {
  local db=$WORK/d1/runs.sqlite before outcome
  mkdir -p "$WORK/d1"
  new_store "$db" || { record 1 "export setup" "-" skipped "cannot create a store"; return; }
  before=$(sum_of "$db")

  # The open database itself, by its own name, a hard link and a symlink.
  local target name
  ln "$db" "$WORK/d1/hardlink.sqlite"
  ln -s runs.sqlite "$WORK/d1/symlink.sqlite"
  for name in runs.sqlite hardlink.sqlite symlink.sqlite ./../d1/runs.sqlite; do
    target=$WORK/d1/$name
    run_cmd 30 "$CLI" runs export 1 --summary --db "$db" -o "$target"
    outcome=$(error_outcome "1 2" "$(basename "$name")|database|store")
    if [ "$(sum_of "$db")" != "$before" ] || ! store_intact "$db"; then
      outcome=data-lost
      new_store "$db"
      before=$(sum_of "$db")
      rm -f "$WORK/d1/hardlink.sqlite"
      ln "$db" "$WORK/d1/hardlink.sqlite"
    fi
    record 1 "runs export 1 --summary --db runs.sqlite -o $name" \
      "refused (exit 1/2), store unchanged" "$outcome" "exit $RC: $(said)"
  done

  # A device node: must stay one (never replaced by a regular file).
  if mknod "$WORK/d1/nulldev" c 1 3 2>/dev/null; then
    run_cmd 30 "$CLI" runs export 1 --summary --db "$db" -o "$WORK/d1/nulldev"
    outcome=$(error_outcome "1 2" "nulldev|regular|device")
    [ -c "$WORK/d1/nulldev" ] || outcome=data-lost
    record 1 "runs export -o CHARDEV (mknod c 1 3)" "refused (not a regular file), node kept" \
      "$outcome" "exit $RC: $(said)"
  else
    record 1 "runs export -o CHARDEV (mknod c 1 3)" "-" skipped "mknod not permitted"
  fi

  # A FIFO: refused, not replaced, not opened (which would block).
  mkfifo "$WORK/d1/fifo.csv"
  run_cmd 10 "$CLI" runs export 1 --summary --db "$db" -o "$WORK/d1/fifo.csv"
  outcome=$(error_outcome "1 2" "fifo\.csv|regular|fifo|pipe")
  [ -p "$WORK/d1/fifo.csv" ] || outcome=data-lost
  record 1 "runs export -o FIFO" "refused (not a regular file), FIFO kept" "$outcome" \
    "exit $RC: $(said)"

  # A directory.
  mkdir -p "$WORK/d1/adir"
  run_cmd 30 "$CLI" runs export 1 --summary --db "$db" -o "$WORK/d1/adir"
  outcome=$(error_outcome "1 2" "adir")
  [ -d "$WORK/d1/adir" ] || outcome=data-lost
  record 1 "runs export -o DIRECTORY" "refused, folder kept" "$outcome" "exit $RC: $(said)"

  # A symlink planted at FILE.tmp must not make the export write through it.
  printf 'precious\n' >"$WORK/d1/victim.txt"
  ln -s victim.txt "$WORK/d1/out.csv.tmp"
  run_cmd 30 "$CLI" runs export 1 --summary --db "$db" -o "$WORK/d1/out.csv"
  if [ "$RC" -eq 0 ]; then outcome=$(success_outcome); else outcome=$(error_outcome "1 2" "out\.csv"); fi
  if [ "$(cat "$WORK/d1/victim.txt")" != precious ]; then
    outcome=data-lost
  elif [ "$RC" -eq 0 ] && ! head -n 1 "$WORK/d1/out.csv" 2>/dev/null | grep -q '^run_id,'; then
    outcome=wrong-success
  fi
  record 1 "runs export -o out.csv with a symlink out.csv.tmp -> victim" \
    "victim untouched (export written, or refused)" "$outcome" "exit $RC: $(said)" ok named-error

  # A symlink given as FILE is written through, not replaced.
  printf 'old\n' >"$WORK/d1/real.csv"
  ln -s real.csv "$WORK/d1/link.csv"
  run_cmd 30 "$CLI" runs export 1 --summary --db "$db" -o "$WORK/d1/link.csv"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ]; then
    if ! [ -L "$WORK/d1/link.csv" ]; then
      outcome=wrong-success
    elif ! head -n 1 "$WORK/d1/real.csv" | grep -q '^run_id,'; then
      outcome=wrong-success
    fi
  fi
  local state
  state=$([ -L "$WORK/d1/link.csv" ] && echo "link kept" || echo "link replaced by a file")
  record 1 "runs export -o link.csv (symlink -> real.csv)" \
    "exit 0, written through the link, link kept" "$outcome" "exit $RC, $state: $(said)" ok
}

# --- 3: deeply nested JSON -----------------------------------------------------------------------

case_deep_json() {
  local f
  "$PYTHON" -c 'import sys; sys.stdout.write("[" * 100000)' >"$WORK/deep-open.json"
  "$PYTHON" -c 'import sys; sys.stdout.write("[" * 100000 + "]" * 100000)' >"$WORK/deep-closed.json"
  "$PYTHON" -c 'import sys; sys.stdout.write("{\"a\":" * 100000 + "1" + "}" * 100000)' >"$WORK/deep-object.json"
  for f in deep-open.json deep-closed.json deep-object.json; do
    run_cmd 30 "$CLI" inspect "$WORK/$f"
    record 3 "inspect $f (nesting 100,000)" "exit 2 naming the file" \
      "$(error_outcome 2 "${f//./\\.}")" "exit $RC: $(said)"
  done
  run_cmd 30 "${TRAIN[@]}" --model "$WORK/deep-open.json" --no-store --steps 5
  record 3 "train --model deep-open.json ('[' x 100,000)" "exit 2 naming the file" \
    "$(error_outcome 2 'deep-open\.json')" "exit $RC: $(said)"
}

# --- 4: CSV formula injection --------------------------------------------------------------------

case_csv_injection() {
  local db=$WORK/d4/runs.sqlite outcome bad=""
  mkdir -p "$WORK/d4"
  cat >"$WORK/d4/model.json" <<'EOF'
{"name": "@SUM(1+1)*cmd|' /C calc'!A0", "input": {"shape": [4, 4, 1]},
 "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 4},
            {"type": "Activation", "activation": "softmax"}]}
EOF
  if ! "$CLI" train --model "$WORK/d4/model.json" --dataset "$DATA" --threads 1 --quiet \
    --no-eval --steps 20 --db "$db" >/dev/null 2>&1 ||
    ! "${TRAIN[@]}" --steps 20 --db "$db" >/dev/null 2>&1; then
    record 4 "CSV injection setup" "-" skipped "cannot train the runs"
    return
  fi
  local name="=cmd|' /C calc'!A0"
  run_cmd 30 "$CLI" runs rename 1 "$name" --db "$db"
  [ "$RC" -eq 0 ] || bad+="rename exit $RC; "
  run_cmd 30 "$CLI" runs tag 1 "+SUM(1+1)" --db "$db"
  [ "$RC" -eq 0 ] || bad+="tag exit $RC; "
  run_cmd 30 "$CLI" runs note 1 $'\t=1+2' --db "$db"
  [ "$RC" -eq 0 ] || bad+="note exit $RC; "
  run_cmd 30 "$CLI" runs rename --db "$db" 2 -- "-2+3+cmd|' /C calc'!A0"
  [ "$RC" -eq 0 ] || bad+="rename -- exit $RC; "

  local columns
  for columns in "--summary name model tags note" "--steps run_name"; do
    local kind=${columns%% *} cols=${columns#* } ids="1" live
    [ "$kind" = --steps ] && ids="1 2"
    # shellcheck disable=SC2086  # ids and cols are lists
    run_cmd 30 "$CLI" runs export $ids "$kind" --db "$db" -o "$WORK/d4/export.csv"
    outcome=$(success_outcome)
    # shellcheck disable=SC2086
    live=$("${CHECK[@]}" formulas "$WORK/d4/export.csv" $cols 2>&1)
    if [ "$outcome" = ok ]; then
      if [ -n "$live" ]; then
        outcome=wrong-success
      elif ! grep -Fq "/C calc" "$WORK/d4/export.csv"; then
        outcome=wrong-success  # neutralised by deleting the user's text
      fi
    fi
    record 4 "runs export $ids $kind, a run named \`$name\` (and -2+3+cmd..., model @..., tag +..., note TAB=...)" \
      "exit 0, no cell in ${cols// /, } starts with = + - @ TAB CR" "$outcome" \
      "${bad}exit $RC; live: $(tr '\n' ' ' <<<"${live:-none}" | cut -c 1-120)" ok
  done
}

# --- 5: memory: files and datasets read without bound ---------------------------------------------

case_memory() {
  local limit_note="" f
  [ ${#MEMLIMIT[@]} -gt 0 ] && limit_note=" (1 GiB address-space limit)"
  truncate -s 600M "$WORK/big-model.json"
  run_cmd 30 "${MEMLIMIT[@]}" "$CLI" inspect "$WORK/big-model.json"
  record 5 "inspect big-model.json (600 MB sparse)$limit_note" "exit 2 naming the file" \
    "$(error_outcome 2 'big-model\.json')" "exit $RC: $(said)"
  run_cmd 30 "${MEMLIMIT[@]}" "${TRAIN[@]}" --model "$WORK/big-model.json" --no-store --steps 5
  record 5 "train --model big-model.json (600 MB sparse)$limit_note" "exit 2 naming the file" \
    "$(error_outcome 2 'big-model\.json')" "exit $RC: $(said)"
  rm -f "$WORK/big-model.json"

  run_cmd 10 "$CLI" inspect /dev/zero
  record 5 "inspect /dev/zero (timeout 10 s)" "exit 2 naming the file, at once" \
    "$(error_outcome 2 '/dev/zero')" "exit $RC: $(said)"

  # An IDX gzip whose header promises 4e9 images (3 TB); 1.5 GB of zeros actually inside.
  mkdir -p "$WORK/bomb"
  "$PYTHON" - "$WORK/bomb" <<'EOF'
import os, struct, sys, zlib
d = sys.argv[1]
def member(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()
zeros = bytes(64 << 20)
with open(os.path.join(d, "train-images-idx3-ubyte.gz"), "wb") as f:
    f.write(member(struct.pack(">IIII", 0x803, 4_000_000_000, 28, 28) + zeros))
    rest = member(zeros)
    for _ in range(23):
        f.write(rest)
for name, count in (("train-labels-idx1-ubyte", 10), ("t10k-labels-idx1-ubyte", 10)):
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack(">II", 0x801, count) + bytes(count))
with open(os.path.join(d, "t10k-images-idx3-ubyte"), "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 10, 28, 28) + bytes(10 * 784))
EOF
  run_cmd 60 "${MEMLIMIT[@]}" "$CLI" train --model fashion-mlp --dataset "mnist:$WORK/bomb" \
    --no-store --quiet --steps 5
  record 5 "train --dataset mnist:DIR, a 1.5 MB gzip whose IDX header claims 4e9 images$limit_note" \
    "exit 2 naming the file, before decompressing" \
    "$(error_outcome 2 'train-images-idx3-ubyte')" "exit $RC: $(said)"
  rm -rf "$WORK/bomb"

  # A model far larger than this machine's memory: refused by the pre-check, before and after.
  cat >"$WORK/huge.json" <<'EOF'
{"name": "huge", "input": {"shape": [4, 4, 1]}, "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 200000}, {"type": "Dense", "units": 200000},
            {"type": "Dense", "units": 4}, {"type": "Activation", "activation": "softmax"}]}
EOF
  run_cmd 60 "${TRAIN[@]}" --model "$WORK/huge.json" --no-store --steps 5
  record 5 "train a model needing ~640 GB (Dense 200000 x 200000)" \
    "exit 1 or 2 naming memory" "$(error_outcome "1 2" 'memory')" "exit $RC: $(said)"
}

# --- 6: a corrupt store ----------------------------------------------------------------------------

# corrupt COPY FIRST_PAGE PAGES: overwrites PAGES pages (4 KiB) from FIRST_PAGE (0-based) with
# seeded garbage.
corrupt() {
  "$PYTHON" - "$@" <<'EOF'
import random, sys
path, first, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(16)
with open(path, "r+b") as f:
    f.seek(first * 4096)
    f.write(bytes(r.getrandbits(8) for _ in range(pages * 4096)))
EOF
}

case_corrupt_store() {
  local good=$WORK/d6/good.sqlite i outcome before
  mkdir -p "$WORK/d6"
  for i in 1 2 3 4; do
    "${TRAIN[@]}" --steps 3000 --db "$good" >/dev/null 2>&1 ||
      { record 6 "corrupt store setup" "-" skipped "cannot create a store"; return; }
  done
  # (a) pages in the middle (the steps table), (b) the runs table's root page.
  cp "$good" "$WORK/d6/middle.sqlite"
  corrupt "$WORK/d6/middle.sqlite" 150 4
  cp "$good" "$WORK/d6/runs-page.sqlite"
  corrupt "$WORK/d6/runs-page.sqlite" 1 1

  local db
  for db in middle.sqlite runs-page.sqlite; do
    before=$(sum_of "$WORK/d6/$db")
    run_cmd 60 "${TRAIN[@]}" --steps 50 --db "$WORK/d6/$db"
    outcome=$(error_outcome 1 'corrupt')
    [ "$(sum_of "$WORK/d6/$db")" = "$before" ] && [ ! -s "$WORK/d6/$db-wal" ] || outcome=data-lost
    record 6 "train --db $db (4 KiB pages overwritten)" \
      "exit 1 saying corrupt, file unchanged" "$outcome" "exit $RC: $(said)"
    rm -f "$WORK/d6/$db-wal" "$WORK/d6/$db-shm"
    cp "$good" "$WORK/d6/$db"
    [ "$db" = middle.sqlite ] && corrupt "$WORK/d6/$db" 150 4
    [ "$db" = runs-page.sqlite ] && corrupt "$WORK/d6/$db" 1 1
    before=$(sum_of "$WORK/d6/$db")

    run_cmd 30 "$CLI" runs list --db "$WORK/d6/$db"
    if [ "$RC" -eq 0 ]; then outcome=$(success_outcome); else outcome=$(error_outcome 1 'corrupt'); fi
    [ "$(sum_of "$WORK/d6/$db")" = "$before" ] || outcome=data-lost
    record 6 "runs list --db $db" "the list, or exit 1 saying corrupt; file unchanged" \
      "$outcome" "exit $RC: $(said)" ok named-error

    run_cmd 30 "$CLI" runs export 2 --steps --db "$WORK/d6/$db" -o "$WORK/d6/steps.csv"
    if [ "$RC" -eq 0 ]; then outcome=$(success_outcome); else outcome=$(error_outcome 1 'corrupt'); fi
    [ "$(sum_of "$WORK/d6/$db")" = "$before" ] || outcome=data-lost
    record 6 "runs export 2 --steps --db $db" "the CSV, or exit 1 saying corrupt" \
      "$outcome" "exit $RC: $(said)" ok named-error
  done
}

# --- 7: --db '' ------------------------------------------------------------------------------------

case_empty_db() {
  run_cmd 60 "${TRAIN[@]}" --steps 5 --db ''
  record 7 "train --db ''" "exit 2 (usage) naming --db" "$(error_outcome 2 'db|path')" \
    "exit $RC: $(said "$ERR")$(grep -m1 'run id' "$OUT" | sed 's/^/ stdout: /')"
  run_cmd 30 "$CLI" runs list --db ''
  record 7 "runs list --db ''" "exit 2 (usage) naming --db" "$(error_outcome 2 'db|path')" \
    "exit $RC: $(said "$ERR")$(head -n 1 "$OUT" | cut -c 1-60 | sed 's/^/ stdout: /')"
}

# --- 8: allocation failures ------------------------------------------------------------------------

case_allocation() {
  local db=$WORK/d8/runs.sqlite outcome status
  mkdir -p "$WORK/d8"
  run_cmd 60 "${TRAIN[@]}" --steps 10000000000 --db "$db"
  outcome=$(error_outcome "1 2" 'steps|memory|bytes')
  status=$("${CHECK[@]}" runs "$db" 2>/dev/null | awk '{print $2}' | tr '\n' ' ')
  case " $status " in *" interrupted "* | *" running "*) [ "$outcome" = named-error ] && outcome=wrong-success ;; esac
  record 8 "train --steps 10000000000" \
    "refused up front (exit 2), or a failed run (exit 1) naming the bytes" "$outcome" \
    "exit $RC, stored '${status% }': $(said)"

  mkdir -p "$WORK/d8/cifar"
  if truncate -s 10T "$WORK/d8/cifar/data_batch_1.bin" 2>/dev/null; then
    run_cmd 60 "$CLI" train --model cifar10-mlp --dataset "cifar10:$WORK/d8/cifar" --quiet \
      --steps 5 --db "$db"
    outcome=$(error_outcome "1 2" 'data_batch_1\.bin')
    status=$("${CHECK[@]}" runs "$db" 2>/dev/null | awk 'END {print $2}')
    case $status in interrupted | running) [ "$outcome" = named-error ] && outcome=wrong-success ;; esac
    record 8 "train --dataset cifar10:DIR, data_batch_1.bin a 10 TB sparse file" \
      "exit 2 naming the file (its size against the format)" "$outcome" \
      "exit $RC, stored '$status': $(said)"
    rm -f "$WORK/d8/cifar/data_batch_1.bin"
  else
    record 8 "train --dataset cifar10:DIR, 10 TB sparse batch" "-" skipped \
      "this file system refuses a 10 TB sparse file"
  fi
}

# --- 10: a FIFO as model path ----------------------------------------------------------------------

case_fifo_model() {
  mkfifo "$WORK/model-fifo.json"
  run_cmd 10 "$CLI" inspect "$WORK/model-fifo.json"
  record 10 "inspect FIFO (timeout 10 s)" "exit 2 naming the file (not a regular file)" \
    "$(error_outcome 2 'model-fifo\.json')" "exit $RC: $(said)"
  run_cmd 10 "${TRAIN[@]}" --model "$WORK/model-fifo.json" --no-store --steps 5
  record 10 "train --model FIFO (timeout 10 s)" "exit 2 naming the file (not a regular file)" \
    "$(error_outcome 2 'model-fifo\.json')" "exit $RC: $(said)"
}

# --- 11: terminal escapes ---------------------------------------------------------------------------

case_escapes() {
  local outcome db=$WORK/d11/runs.sqlite
  mkdir -p "$WORK/d11"
  "$PYTHON" - "$WORK/d11/esc.json" <<'EOF'
import json, sys
spec = {"name": "evil\x1b]0;pwned\x07\x1b[2J\x1b[31m", "input": {"shape": [4, 4, 1]},
        "loss": "sparse_categorical_crossentropy",
        "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 4},
                   {"type": "Activation", "activation": "softmax"}]}
open(sys.argv[1], "w").write(json.dumps(spec))
EOF
  run_cmd 30 "$CLI" inspect "$WORK/d11/esc.json"
  if [ "$RC" -eq 0 ]; then
    outcome=$(success_outcome)
    raw_controls "$OUT" && outcome=wrong-success
  else
    # Refusing such a name, by name, is as good as printing it sanitised.
    outcome=$(error_outcome 2 'esc\.json')
    [ "$outcome" = named-error ] && raw_controls "$ERR" && outcome=wrong-success
  fi
  record 11 "inspect a model named ESC]0;pwned BEL ESC[2J" \
    "exit 0 with no raw control bytes (or exit 2 refusing the name)" "$outcome" \
    "exit $RC: $(said "$OUT" 60)$(said "$ERR" 100)" ok named-error

  # Names, model, message, note and tag with escapes, as an older store may hold them.
  if new_store "$db" && "${CHECK[@]}" escapes "$db" 1; then
    local sub
    for sub in list "show 1" "compare 1 2"; do
      # shellcheck disable=SC2086  # sub is several words
      run_cmd 30 "$CLI" runs $sub --db "$db"
      outcome=$(success_outcome)
      [ "$outcome" = ok ] && raw_controls "$OUT" && outcome=wrong-success
      record 11 "runs $sub, run 1's name, model, message, note, tag holding ESC/BEL" \
        "exit 0, no raw control bytes" "$outcome" "exit $RC: $(said)" ok
    done
  else
    record 11 "runs list/show with ESC in the store" "-" skipped "cannot create the store"
  fi
}

# --- 12: a run name that starts with - --------------------------------------------------------------

case_dash_names() {
  local db=$WORK/d12/runs.sqlite outcome name
  mkdir -p "$WORK/d12"
  new_store "$db" || { record 12 "rename setup" "-" skipped "cannot create a store"; return; }
  run_cmd 30 "$CLI" runs rename --db "$db" 1 -- -x
  outcome=$(success_outcome)
  "$CLI" runs list --json --db "$db" >"$WORK/d12/list.json" 2>/dev/null
  name=$("$PYTHON" -c 'import json, sys; print([r["name"] for r in json.load(open(sys.argv[1])) if r["id"] == 1][0])' \
    "$WORK/d12/list.json" 2>/dev/null)
  [ "$outcome" = ok ] && [ "$name" != -x ] && outcome=wrong-success
  record 12 "runs rename 1 -- -x" "exit 0, the name is -x" "$outcome" \
    "exit $RC, name '$name': $(said)" ok
  run_cmd 30 "$CLI" runs note --db "$db" 2 -- "-5 degrees"
  record 12 "runs note 2 -- '-5 degrees'" "exit 0" "$(success_outcome)" "exit $RC: $(said)" ok
  run_cmd 30 "$CLI" runs tag --db "$db" 2 -- -baseline
  outcome=$(success_outcome)
  [ "$outcome" = ok ] && ! grep -q -- '-baseline' "$OUT" && outcome=wrong-success
  record 12 "runs tag 2 -- -baseline" "exit 0, tag -baseline" "$outcome" \
    "exit $RC: $(said "$OUT" 60) $(said "$ERR" 60)" ok
}

# --- 13: misleading final states --------------------------------------------------------------------

case_final_states() {
  local db=$WORK/d13/runs.sqlite outcome status
  mkdir -p "$WORK/d13"
  run_cmd 60 "${TRAIN[@]}" --precision mixed_float16 --loss-scale 1e300 --steps 3000 --json \
    --db "$db"
  status=$("${CHECK[@]}" json "$OUT" status 2>/dev/null)
  local skipped
  skipped=$("${CHECK[@]}" json "$OUT" skipped_steps 2>/dev/null)
  if [ "$HUNG" -eq 1 ]; then
    outcome=hang
  elif [ "$RC" -ge 128 ]; then
    outcome=crash
  elif [ "$RC" -eq 0 ] || [ "$status" = finished ]; then
    outcome=wrong-success
  elif [ "$RC" -eq 1 ] && { [ "$status" = diverged ] || [ "$status" = failed ]; }; then
    outcome=named-error
  else
    outcome=unnamed-error
  fi
  record 13 "train --precision mixed_float16 --loss-scale 1e300 --steps 3000" \
    "diverged or failed after N skipped steps, exit 1" "$outcome" \
    "exit $RC, status '$status', $skipped skipped: $(said "$ERR")$("${CHECK[@]}" json "$OUT" message 2>/dev/null | cut -c 1-100)"

  # A run deleted while it trains.
  rm -f "$db"
  "${TRAIN[@]}" --steps 150000 --json --db "$db" >"$WORK/d13/train.json" 2>"$WORK/d13/train.err" &
  local pid=$! id="" i
  PIDS+=("$pid")
  for ((i = 0; i < 100; i++)); do
    sleep 0.05
    id=$("${CHECK[@]}" runs "$db" 2>/dev/null | awk '$2 == "running" {print $1; exit}')
    [ -z "$id" ] || break
  done
  if [ -z "$id" ]; then
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    record 13 "runs delete ID while it trains" "-" skipped "the run did not show as running"
    return
  fi
  run_cmd 30 "$CLI" runs delete "$id" --db "$db"
  local del_rc=$RC del_err
  del_err=$(said "$ERR" 80)
  local train_rc
  # At most 60 s for the run to end.
  for ((i = 0; i < 600; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -TERM "$pid"
  wait "$pid"
  train_rc=$?
  status=$("${CHECK[@]}" json "$WORK/d13/train.json" status 2>/dev/null)
  if [ "$train_rc" -ge 128 ] || [ "$del_rc" -ge 128 ]; then
    outcome=crash
  elif [ "$del_rc" -ne 0 ]; then
    # Refused: the run must then go on to finish normally.
    if [ "$del_rc" -le 2 ] && grep -Eqi 'running|in progress|training' "$ERR" && [ "$train_rc" -eq 0 ]; then
      outcome=named-error
    else
      outcome=unnamed-error
    fi
  elif [ "$status" = finished ] || [ "$train_rc" -eq 0 ]; then
    outcome=wrong-success
  elif grep -Eq 'FOREIGN KEY|\.cpp:[0-9]' "$WORK/d13/train.err"; then
    outcome=unnamed-error
  else
    outcome=named-error
  fi
  record 13 "runs delete ID while run ID trains" \
    "delete refused (run finishes), or the run ends failed saying why" "$outcome" \
    "delete exit $del_rc '$del_err'; train exit $train_rc, JSON '$status': $(said "$WORK/d13/train.err" 80)"
}

hostile_run "hostile inputs" "export_targets deep_json csv_injection memory corrupt_store empty_db \
  allocation fifo_model escapes dash_names final_states"
