#!/usr/bin/env bash
# mixlab-cli sweep --executor slurm against a real single-node Slurm (run it inside
# tests/slurm/single-node.sh run ...). One part per argument, or all:
#   grid      a 2 x 2 grid with 2 repeats: every member done, every run in the history once
#   resume    the submitter is killed (SIGKILL) mid-sweep; `sweep resume` follows the tasks
#             again; every run arrives exactly once, and importing a task's file again adds
#             nothing
#   cancel    one running task cancelled with scancel is recorded failed with Slurm's word for it;
#             `sweep cancel` cancels the rest, from a machine without the history (the folder)
#   unsubmitted  a sweep whose --shared-dir is a file, or whose partition sbatch refuses, is
#             `failed` with the reason; `sweep resume --shared-dir DIR` submits it and it finishes
#
#   tests/slurm/sweep-slurm.sh MIXLAB_CLI [grid|resume|cancel|unsubmitted]...
set -euo pipefail

CLI=$(readlink -f "$1")
shift
PARTS=("$@")
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(grid resume cancel unsubmitted)
[[ -n ${SLURM_CONF:-} ]] || { echo "sweep-slurm.sh: run me inside tests/slurm/single-node.sh run" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-sweep-slurm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }

# A query on a run database: sqlite3 is not a dependency, so mixlab-cli's JSON and python3.
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# The same training settings everywhere: fashion-mlp on synthetic 28x28 data, one thread.
TRAIN=(--model fashion-mlp --dataset synthetic:28x28x1:10:256 --threads 1)

part_grid() {
    local db=$WORK/grid.sqlite
    if "$CLI" sweep "${TRAIN[@]}" --steps 40 --precision float32,mixed_bfloat16 \
        --batch-size 16,32 --repeats 2 --executor slurm --shared-dir "$WORK/shared" \
        --poll 1 --db "$db" --json >"$WORK/grid.json" 2>"$WORK/grid.err"; then
        pass "grid: the sweep ended with exit 0"
    else
        fail "grid: exit $? ($(tail -3 "$WORK/grid.err"))"
    fi
    local done runs unique
    done=$(json 'd["members_done"]' <"$WORK/grid.json")
    [[ $done == 8 ]] && pass "grid: 8 of 8 members done" || fail "grid: $done of 8 members done"
    runs=$("$CLI" runs list --db "$db" --json | json 'len(d)')
    unique=$("$CLI" runs list --db "$db" --json | json 'len({r["uid"] for r in d})')
    [[ $runs == 8 && $unique == 8 ]] && pass "grid: 8 runs in the history, 8 uids" ||
        fail "grid: $runs runs, $unique uids (want 8)"
    local points
    points=$(json 'sum(1 for p in d["points"] if p["measured"] == 2)' <"$WORK/grid.json")
    [[ $points == 4 ]] && pass "grid: 4 points with 2 measured repeats each" ||
        fail "grid: $points points with both repeats measured"
    local csv_rows
    csv_rows=$("$CLI" runs export --db "$db" --sweep 1 | wc -l)
    [[ $csv_rows == 9 ]] && pass "grid: runs export --sweep has a header and 8 rows" ||
        fail "grid: runs export --sweep has $csv_rows lines"
}

part_resume() {
    local db=$WORK/resume.sqlite
    "$CLI" sweep "${TRAIN[@]}" --steps 2500 --batch-size 8,16,24,32,40,48 --executor slurm \
        --shared-dir "$WORK/shared" --poll 1 --db "$db" --quiet >"$WORK/resume.out" 2>&1 &
    local submitter=$!
    # Kill it once it has imported the first finished task.
    local i done=0
    for i in $(seq 1 600); do
        sleep 0.2
        [[ -f $db ]] || continue
        done=$("$CLI" sweep show 1 --db "$db" --json 2>/dev/null | json 'd["members_done"]' || echo 0)
        [[ $done -ge 1 ]] && break
    done
    kill -KILL "$submitter"
    wait "$submitter" 2>/dev/null || true
    [[ $done -ge 1 && $done -lt 6 ]] && pass "resume: submitter killed with $done of 6 imported" ||
        fail "resume: submitter killed with $done of 6 imported (want 1 to 5)"
    if "$CLI" sweep resume 1 --db "$db" --poll 1 --quiet >"$WORK/resume2.out" 2>&1; then
        pass "resume: sweep resume exit 0"
    else
        fail "resume: sweep resume exit $? ($(tail -3 "$WORK/resume2.out"))"
    fi
    local runs unique members
    runs=$("$CLI" runs list --db "$db" --json | json 'len(d)')
    unique=$("$CLI" runs list --db "$db" --json | json 'len({r["uid"] for r in d})')
    members=$("$CLI" sweep show 1 --db "$db" --json | json 'd["members_done"]')
    [[ $runs == 6 && $unique == 6 && $members == 6 ]] &&
        pass "resume: 6 members done, 6 runs, each once" ||
        fail "resume: $members members done, $runs runs, $unique uids (want 6)"
    local folder
    folder=$("$CLI" sweep show 1 --db "$db" --json | json 'd["folder"]')
    "$CLI" runs import "$folder"/member-*.sqlite --db "$db" >"$WORK/import.out"
    runs=$("$CLI" runs list --db "$db" --json | json 'len(d)')
    [[ $runs == 6 ]] && pass "resume: importing the task files again adds nothing" ||
        fail "resume: $runs runs after importing again ($(cat "$WORK/import.out"))"
}

part_cancel() {
    local db=$WORK/cancel.sqlite
    # Member 1 trains long enough to be cancelled while it runs (a pending task that is
    # cancelled leaves Slurm no record to give a reason from).
    "$CLI" sweep "${TRAIN[@]}" --batch-size 8 --steps 30,400000,30 --executor slurm \
        --shared-dir "$WORK/shared" --no-follow --db "$db" --quiet >"$WORK/cancel.out" 2>&1 || true
    local job i
    job=$("$CLI" sweep show 1 --db "$db" --json | json 'd["slurm_job_id"]')
    for i in $(seq 1 300); do
        squeue -h -r -j "$job" -o '%K %T' | grep -q '^1 RUNNING' && break
        sleep 0.2
    done
    sleep 1  # into its training loop
    scancel "${job}_1"
    if "$CLI" sweep resume 1 --db "$db" --poll 1 --quiet >"$WORK/cancel2.out" 2>&1; then
        fail "cancel: sweep resume exit 0 with a cancelled member"
    else
        pass "cancel: sweep resume exit $? with a cancelled member"
    fi
    local states message
    states=$("$CLI" sweep show 1 --db "$db" --json | json '",".join(m["state"] for m in d["members"])')
    message=$("$CLI" sweep show 1 --db "$db" --json | json 'd["members"][1].get("message", "")')
    [[ $states == done,failed,done ]] && pass "cancel: members done,failed,done" ||
        fail "cancel: members $states"
    [[ $message == *CANCELLED* ]] && pass "cancel: the failed member says '$message'" ||
        fail "cancel: the failed member says '$message'"

    # The whole sweep, from a machine that sees only the shared folder.
    local db2=$WORK/cancel-all.sqlite
    "$CLI" sweep "${TRAIN[@]}" --steps 20 --batch-size 8,16 --executor slurm \
        --shared-dir "$WORK/shared" --sbatch-option=--hold --no-follow --db "$db2" --quiet \
        >/dev/null 2>&1 || true
    local folder
    folder=$("$CLI" sweep show 1 --db "$db2" --json | json 'd["folder"]')
    if "$CLI" sweep status "$folder" --db "$WORK/elsewhere/none.sqlite" >"$WORK/status.out" 2>&1 &&
        grep -q PENDING "$WORK/status.out"; then
        pass "cancel: sweep status FOLDER without the history shows the pending tasks"
    else
        fail "cancel: sweep status FOLDER: $(cat "$WORK/status.out")"
    fi
    "$CLI" sweep cancel "$folder" --db "$WORK/elsewhere/none.sqlite" >"$WORK/cancel3.out" 2>&1 ||
        fail "cancel: sweep cancel FOLDER: $(cat "$WORK/cancel3.out")"
    "$CLI" sweep resume 1 --db "$db2" --poll 1 --quiet >/dev/null 2>&1 || true
    local state
    state=$("$CLI" sweep show 1 --db "$db2" --json | json 'd["state"] + " " + str(d["members_failed"])')
    [[ $state == "cancelled 2" ]] && pass "cancel: the sweep is cancelled, both members failed" ||
        fail "cancel: the sweep is '$state'"
}

part_unsubmitted() {
    local db=$WORK/unsubmitted.sqlite state message
    : >"$WORK/a-file"
    if "$CLI" sweep "${TRAIN[@]}" --steps 20 --batch-size 8,16 --executor slurm \
        --shared-dir "$WORK/a-file" --poll 1 --db "$db" --quiet >"$WORK/unsub.out" 2>&1; then
        fail "unsubmitted: exit 0 with a file for --shared-dir"
    fi
    state=$("$CLI" sweep show 1 --db "$db" --json | json 'd["state"] + " | " + d["message"]')
    [[ $state == "failed | not submitted: cannot make the sweep folder"* ]] &&
        pass "unsubmitted: --shared-dir FILE leaves the sweep '$state'" ||
        fail "unsubmitted: --shared-dir FILE leaves the sweep '$state'"
    if timeout 120 "$CLI" sweep resume 1 --shared-dir "$WORK/shared" --poll 1 --db "$db" \
        --quiet >"$WORK/unsub2.out" 2>&1; then
        pass "unsubmitted: sweep resume --shared-dir DIR submitted it and it ended with exit 0"
    else
        fail "unsubmitted: sweep resume --shared-dir DIR: exit $? ($(tail -3 "$WORK/unsub2.out"))"
    fi
    state=$("$CLI" sweep show 1 --db "$db" --json | json 'd["state"] + " " + str(d["members_done"])')
    [[ $state == "finished 2" ]] && pass "unsubmitted: then finished, 2 of 2 done" ||
        fail "unsubmitted: then '$state'"

    local db2=$WORK/refused.sqlite
    "$CLI" sweep "${TRAIN[@]}" --steps 20 --executor slurm --shared-dir "$WORK/shared" \
        --partition nowhere --poll 1 --db "$db2" --quiet >"$WORK/refused.out" 2>&1 || true
    message=$("$CLI" sweep show 1 --db "$db2" --json | json 'd["state"] + " | " + d["message"]')
    [[ $message == "failed | not submitted: sbatch refused the job array: "*partition* ]] &&
        pass "unsubmitted: a partition sbatch refuses leaves the sweep '$message'" ||
        fail "unsubmitted: a partition sbatch refuses leaves the sweep '$message'"
    # Resumed as it was given: refused again, at once, by name.
    if timeout 60 "$CLI" sweep resume 1 --poll 1 --db "$db2" >"$WORK/refused2.out" 2>&1; then
        fail "unsubmitted: resume with the refused partition exit 0"
    elif grep -q "sbatch refused" "$WORK/refused2.out"; then
        pass "unsubmitted: resume with the refused partition fails again, naming sbatch's reason"
    else
        fail "unsubmitted: resume with the refused partition: $(tail -2 "$WORK/refused2.out")"
    fi
}

for part in "${PARTS[@]}"; do
    "part_$part"
done
[[ $FAILURES == 0 ]] && echo "sweep-slurm.sh: all passed" || echo "sweep-slurm.sh: $FAILURES failed"
exit $((FAILURES > 0))
