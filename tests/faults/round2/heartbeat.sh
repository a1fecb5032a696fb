# shellcheck shell=bash
# Issue 26: a run recorded on another host (a store on a shared folder) whose process was
# killed stayed `running` forever. Its heartbeat now tells: run 2, owned by host node-17 with no
# heartbeat for 11 minutes, shows as interrupted, saying so; run 1, owned by node-18 with a
# heartbeat a minute old, stays running. Sourced by hostile-round2.sh.

case_remote_heartbeat() {
  local db=$WORK/hb/runs.sqlite outcome
  mkdir -p "$WORK/hb"
  new_store "$db" || { record 26 "heartbeat setup" "-" skipped "cannot create a store"; return; }
  "$PYTHON" - "$db" <<'PY'
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1])
now = int(time.time() * 1000)
for run, host, age_ms in ((2, "node-17", 11 * 60000), (1, "node-18", 60000)):
    con.execute("UPDATE runs SET status = 'running', finished_at_ms = NULL, owner_host = ?, "
                "heartbeat_at_ms = ? WHERE id = ?", (host, now - age_ms, run))
con.commit()
con.close()
PY
  run_cmd 30 "$CLI" runs list --db "$db"
  outcome=$(success_showing '^ *2 .* interrupted ')
  [ "$(success_showing '^ *1 .* running ')" = ok ] || outcome=wrong-success
  record 26 "runs list (run 2 of host node-17, last heartbeat 11 min ago)" \
    "run 2 interrupted, run 1 (heartbeat 1 min ago) running" "$outcome" \
    "exit $RC: $(said "$OUT")" ok

  run_cmd 30 "$CLI" runs show 2 --db "$db"
  outcome=$(success_showing 'no heartbeat from host node-17 since')
  record 26 "runs show 2" "says no heartbeat from host node-17 since when" "$outcome" \
    "exit $RC: $(grep -m 1 message: "$OUT" | cut -c 1-110)" ok
}

ROUND2_CASES="$ROUND2_CASES remote_heartbeat"
