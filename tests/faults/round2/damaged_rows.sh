# shellcheck shell=bash
# Issue 25, item 3: one bad row must not lock the user out of the whole history.
#  - `runs import FILE` of a run whose setting is not one MixLab knows (precision 'evil', set
#    with sqlite3) is refused naming the run, the column and the value, importing nothing from
#    the file (exit 1, as every refused import source).
#  - A row made bad in the store itself is listed as damaged with the reason; `runs show` says
#    what is damaged, `runs delete` deletes it, `runs export` leaves it out with a warning naming
#    it (its unreadable settings would be wrong numbers in a CSV), the others still work.
# Sourced by hostile-round2.sh.

# dr_set DB ID COLUMN VALUE: writes VALUE into run ID's COLUMN by hand, as another tool could.
dr_set() {
  "$PYTHON" - "$@" <<'EOF'
import sqlite3, sys
db, run, column, value = sys.argv[1:5]
con = sqlite3.connect(db)
con.execute("UPDATE runs SET %s = ? WHERE id = ?" % column, (value, int(run)))
con.commit()
con.close()
EOF
}

case_import_bad_setting() {
  local src=$WORK/dr/source.sqlite db=$WORK/dr/runs.sqlite column before outcome
  mkdir -p "$WORK/dr"
  for column in precision loss_scaling optimizer dataset; do
    if ! new_store "$src" || ! new_store "$db"; then
      record 25.3 "import setup" "-" skipped "cannot create a store"
      return
    fi
    dr_set "$src" 2 "$column" evil
    before=$(sum_of "$db")
    run_cmd 30 "$CLI" runs import "$src" --db "$db"
    outcome=$(error_outcome 1 "run 2.*$column.*evil")
    if [ "$(sum_of "$db")" != "$before" ] || ! store_intact "$db"; then outcome=data-lost; fi
    record 25.3 "runs import SOURCE whose run 2 has $column 'evil'" \
      "refused naming run 2, $column and 'evil' (exit 1), nothing imported" "$outcome" \
      "exit $RC: $(said)"
  done
}

case_damaged_row() {
  local db=$WORK/dr/damaged.sqlite outcome
  mkdir -p "$WORK/dr"
  new_store "$db" || { record 25.3 "damaged setup" "-" skipped "cannot create a store"; return; }
  dr_set "$db" 2 precision evil

  run_cmd 30 "$CLI" runs list --db "$db"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] && ! { grep -Eq '^ *1 ' "$OUT" && grep -Eq '^ *2 .*damaged' "$OUT" &&
    grep -q "evil" "$OUT"; }; then outcome=wrong-success; fi
  record 25.3 "runs list (run 2's precision 'evil')" "both runs, run 2 damaged with the reason" \
    "$outcome" "exit $RC: $(said "$OUT")" ok

  run_cmd 30 "$CLI" runs list --json --db "$db"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] && ! "$PYTHON" - "$OUT" <<'EOF'; then outcome=wrong-success; fi
import json, sys
runs = {r["id"]: r for r in json.load(open(sys.argv[1]))}
assert sorted(runs) == [1, 2], runs
assert runs[1]["damaged"] is None, runs[1]
assert "precision" in runs[2]["damaged"] and "evil" in runs[2]["damaged"], runs[2]
EOF
  record 25.3 "runs list --json (run 2 damaged)" "both runs, \"damaged\" says why for run 2" \
    "$outcome" "exit $RC: $(said "$OUT")" ok

  run_cmd 30 "$CLI" runs show 2 --db "$db"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] && ! grep -Eiq "damaged.*precision.*evil" "$OUT"; then
    outcome=wrong-success
  fi
  record 25.3 "runs show 2 (damaged)" "shown, saying what is damaged" "$outcome" \
    "exit $RC: $(grep -i damaged "$OUT" | head -n 1 | cut -c 1-100)" ok

  run_cmd 30 "$CLI" runs export 1 2 --summary --db "$db"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] && ! { grep -Eiq "run 2.*damaged" "$ERR" &&
    [ "$(wc -l <"$OUT")" -eq 2 ] && grep -q "^1," "$OUT"; }; then outcome=wrong-success; fi
  record 25.3 "runs export 1 2 --summary (2 damaged)" "run 1 exported, run 2 left out, warned" \
    "$outcome" "exit $RC: $(said)" ok

  run_cmd 30 "$CLI" runs export 2 --steps --db "$db"
  outcome=$(error_outcome 1 "run 2.*damaged")
  record 25.3 "runs export 2 --steps (only a damaged run)" "nothing to export (exit 1)" \
    "$outcome" "exit $RC: $(said)"

  run_cmd 30 "$CLI" runs delete 2 --db "$db"
  outcome=$(success_outcome)
  if [ "$outcome" = ok ] &&
    [ "$("${CHECK[@]}" runs "$db" 2>/dev/null | awk '{print $1}' | tr '\n' ' ')" != "1 " ]; then
    outcome=wrong-success
  fi
  record 25.3 "runs delete 2 (damaged)" "deleted, run 1 kept" "$outcome" "exit $RC: $(said)" ok
}

ROUND2_CASES="$ROUND2_CASES import_bad_setting damaged_row"
