# shellcheck shell=bash
# Issue 25, item 12: `runs import SOURCE` never writes beside the source, accepted or refused:
# the source folder lists the same files afterwards (no SOURCE-wal, SOURCE-shm left behind) and
# the source's bytes are unchanged. Sourced by hostile-round2.sh.

# is_files FOLDER: the names in FOLDER, sorted, on one line.
is_files() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f ' | tr ' ' '\n' | sort | tr '\n' ' '; }
# is_state FOLDER FILE: the folder's listing and the file's sha256, one line.
is_state() { printf '%s %s' "$(is_files "$1")" "$(sum_of "$2")"; }

# is_import LABEL EXPECTED ACCEPTED...: imports $IS_SRC into a fresh store, checks the folder.
is_import() {
  local label=$1 expected=$2 before outcome
  shift 2
  local db=$WORK/is-target.sqlite
  rm -f "$db"
  before=$(is_state "$WORK/is" "$IS_SRC")
  run_cmd 30 "$CLI" runs import "$IS_SRC" --db "$db"
  if [ "$1" = ok ]; then outcome=$(success_outcome); else outcome=$(error_outcome 1 "source"); fi
  [ "$(is_state "$WORK/is" "$IS_SRC")" = "$before" ] || outcome=data-lost
  record 25.12 "runs import $label" "$expected, nothing written beside it" "$outcome" \
    "exit $RC: $(said); folder: $(is_files "$WORK/is")" "$@"
}

case_import_sources() {
  IS_SRC=$WORK/is/source.sqlite
  mkdir -p "$WORK/is"
  new_store "$IS_SRC" || { record 25.12 "import setup" "-" skipped "cannot create a store"; return; }
  is_import "SOURCE (two runs)" "imported (exit 0)" ok

  "$PYTHON" -c 'import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); con.execute("PRAGMA user_version = 99"); con.close()' "$IS_SRC"
  is_import "SOURCE from a newer MixLab" "refused (exit 1)" named-error

  new_store "$IS_SRC"
  "$PYTHON" -c 'import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); con.execute("UPDATE runs SET precision = ? WHERE id = 2", ("evil",))
con.commit(); con.close()' "$IS_SRC"
  is_import "SOURCE whose run 2 has precision 'evil'" "refused (exit 1)" named-error

  "$PYTHON" -c 'import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); con.execute("PRAGMA application_id = 7"); con.close()' "$IS_SRC"
  is_import "SOURCE of another program" "refused (exit 1)" named-error
}

ROUND2_CASES="$ROUND2_CASES import_sources"
