# shellcheck shell=bash
# Issue 25, item 2: no command writes its output over the run database or one of its side files
# (-wal, -shm, -journal), whatever the name it is given by: the same path, a path through "..",
# a symbolic link, a hard link. Each is refused with a named error, exit 2 (bad input), and the
# database is left byte for byte as it was. Sourced by hostile-round2.sh.

# The commands that write a file the user names; each takes the target as $1.
og_export_run() { run_cmd 30 "$CLI" export --run 1 --db "$OG_DB" --to keras -o "$1"; }
og_runs_export() { run_cmd 30 "$CLI" runs export 1 --summary --db "$OG_DB" -o "$1"; }
og_doctor_html() { run_cmd 30 "$CLI" doctor "$MODEL" --profile T4 --db "$OG_DB" --html "$1"; }
og_doctor_findings() {
  run_cmd 30 "$CLI" doctor "$MODEL" --profile T4 --db "$OG_DB" --findings-csv "$1"
}
og_doctor_layers() {
  run_cmd 30 "$CLI" doctor "$MODEL" --profile T4 --db "$OG_DB" --layers-csv "$1"
}

# What each command is, for the table.
og_label() {
  case $1 in
    export_run) echo "export --run 1 --db DB --to keras -o" ;;
    runs_export) echo "runs export 1 --summary --db DB -o" ;;
    doctor_html) echo "doctor MODEL --profile T4 --db DB --html" ;;
    doctor_findings) echo "doctor MODEL --profile T4 --db DB --findings-csv" ;;
    doctor_layers) echo "doctor MODEL --profile T4 --db DB --layers-csv" ;;
  esac
}

# A fresh store at $OG_DB with its hard link and symbolic link; sets OG_SUM.
og_new_store() {
  rm -f "$OG_DIR/hard.sqlite" "$OG_DIR/link.sqlite"
  new_store "$OG_DB" || return 1
  ln "$OG_DB" "$OG_DIR/hard.sqlite" && ln -s runs.sqlite "$OG_DIR/link.sqlite" || return 1
  OG_SUM=$(sum_of "$OG_DB")
}

case_output_guard() {
  OG_DIR=$WORK/og OG_DB=$WORK/og/runs.sqlite
  mkdir -p "$OG_DIR/sub"
  og_new_store || { record 25.2 "output guard setup" "-" skipped "cannot create a store"; return; }
  local command way target outcome made
  for command in export_run runs_export doctor_html doctor_findings doctor_layers; do
    for way in runs.sqlite sub/../runs.sqlite link.sqlite hard.sqlite runs.sqlite-wal \
      runs.sqlite-shm runs.sqlite-journal; do
      target=$OG_DIR/$way
      made=0
      [ -e "$target" ] || made=1
      "og_$command" "$target"
      outcome=$(error_outcome 2 "run database")
      # Refused means nothing was written: not the database, not a side file it did not have.
      if [ "$made" -eq 1 ] && [ -e "$target" ]; then
        outcome=wrong-success
        rm -f "$target"
      fi
      if [ "$(sum_of "$OG_DB")" != "$OG_SUM" ] || ! store_intact "$OG_DB"; then
        outcome=data-lost
        og_new_store
      fi
      record 25.2 "$(og_label "$command") $way (DB: runs.sqlite)" \
        "refused (exit 2), the database unchanged" "$outcome" "exit $RC: $(said)"
    done
  done
}

# The default run database ($XDG_DATA_HOME/mixlab/runs.sqlite) is protected from a command that
# does not open it at all.
case_output_guard_default_store() {
  local db=$XDG_DATA_HOME/mixlab/runs.sqlite before outcome
  mkdir -p "$(dirname "$db")"
  new_store "$db" || { record 25.2 "default store setup" "-" skipped "cannot create a store"; return; }
  before=$(sum_of "$db")
  run_cmd 30 "$CLI" export "$MODEL" --to mixlab -o "$db"
  outcome=$(error_outcome 2 "run database")
  if [ "$(sum_of "$db")" != "$before" ] || ! store_intact "$db"; then outcome=data-lost; fi
  record 25.2 "export MODEL --to mixlab -o <the default run database>" \
    "refused (exit 2), the database unchanged" "$outcome" "exit $RC: $(said)"
  # Any other file is written as before.
  run_cmd 30 "$CLI" export "$MODEL" --to mixlab -o "$WORK/og-model.json"
  outcome=$(success_outcome)
  [ -s "$WORK/og-model.json" ] || outcome=wrong-success
  record 25.2 "export MODEL --to mixlab -o a new file" "written (exit 0)" "$outcome" \
    "exit $RC: $(said)" ok
}

ROUND2_CASES="$ROUND2_CASES output_guard output_guard_default_store"
