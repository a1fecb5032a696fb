# shellcheck shell=bash
# Issue 25, item 7: a Slurm sweep that was never submitted (its --shared-dir is a file, sbatch
# refuses it) is `failed` with the reason, shown by sweep show and sweep status; sweep resume
# submits it again, or fails by name, and returns promptly; a submitted sweep whose job Slurm
# has forgotten ends; one whose squeue never answers is given up after 10 tries (about 10 s at
# --poll 1), `stopped` and saying so. sbatch, squeue, sacct and scontrol are fakes on PATH
# (tests/slurm/sweep-slurm.sh does the same against a real Slurm). Sourced by hostile-round2.sh.

SW_DIR=$WORK/r2-sweeps

# sweeps_fakes MODE: the fake Slurm clients in $SW_DIR/bin-MODE: sbatch refusing (refuse) or
# printing job 4242 (accept), squeue not knowing it (forgot) or failing (down).
sweeps_fakes() {
  local bin=$SW_DIR/bin-$1
  mkdir -p "$bin"
  printf '#!/bin/sh\necho "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2\nexit 1\n' >"$bin/sbatch"
  case $1 in
    accept-forgot | accept-down) printf '#!/bin/sh\necho 4242\n' >"$bin/sbatch" ;;
  esac
  case $1 in
    *-down) printf '#!/bin/sh\necho "squeue: error: Unable to contact slurm controller (connect failure)" >&2\nexit 1\n' >"$bin/squeue" ;;
    *) printf '#!/bin/sh\necho "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n' >"$bin/squeue" ;;
  esac
  printf '#!/bin/sh\nexit 1\n' >"$bin/sacct"
  printf '#!/bin/sh\nexit 1\n' >"$bin/scontrol"
  chmod +x "$bin"/*
  echo "$bin"
}

# sweeps_field DB KEY: sweep 1's KEY from `sweep show 1 --json`.
sweeps_field() {
  "$CLI" sweep show 1 --db "$1" --json 2>/dev/null |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$2" 2>/dev/null
}

# sweeps_expect DB STATE OUTCOME: OUTCOME, or wrong-success when sweep 1 is not in STATE.
sweeps_expect() {
  local state
  state=$(sweeps_field "$1" state)
  if [ "$3" = named-error ] || [ "$3" = ok ]; then
    [ "$state" = "$2" ] || { echo wrong-success; return; }
  fi
  echo "$3"
}

case_sweep_unsubmitted() {
  local db=$SW_DIR/runs.sqlite outcome bin
  mkdir -p "$SW_DIR/shared"
  : >"$SW_DIR/not-a-folder"
  local sweep=(sweep --model "$MODEL" --dataset "$DATA" --steps 2 --threads 1 --batch-size 8,16
    --executor slurm --poll 1 --db "$db")
  run_cmd 30 "$CLI" "${sweep[@]}" --shared-dir "$SW_DIR/not-a-folder"
  outcome=$(sweeps_expect "$db" failed "$(error_outcome 1 'sweep folder')")
  record 7 "sweep --executor slurm --shared-dir FILE" "exit 1 naming the folder; sweep failed" \
    "$outcome" "exit $RC, state '$(sweeps_field "$db" state)': $(said)"

  run_cmd 30 "$CLI" sweep show 1 --db "$db"
  outcome=$(success_outcome)
  [ "$outcome" = ok ] && ! grep -q 'failed - not submitted: cannot make the sweep folder' "$OUT" &&
    outcome=wrong-success
  record 7 "sweep show: the never-submitted sweep" "exit 0, 'failed' with the reason" "$outcome" \
    "exit $RC: $(said "$OUT" 100)" ok
  run_cmd 30 "$CLI" sweep status 1 --db "$db"
  outcome=$(success_outcome)
  [ "$outcome" = ok ] && ! grep -q 'failed - not submitted' "$OUT" && outcome=wrong-success
  record 7 "sweep status: the never-submitted sweep" "exit 0, 'failed' with the reason" \
    "$outcome" "exit $RC: $(said "$OUT" 100)" ok

  # resume submits it again: to the same file (fails again, by name), then refused by sbatch.
  run_cmd 30 "$CLI" sweep resume 1 --poll 1 --db "$db"
  outcome=$(sweeps_expect "$db" failed "$(error_outcome 1 'sweep folder')")
  record 7 "sweep resume, the shared folder still a file" "exit 1 naming it, at once; failed" \
    "$outcome" "exit $RC: $(said)"
  bin=$(sweeps_fakes refuse)
  run_cmd 30 env PATH="$bin:$PATH" "$CLI" sweep resume 1 --poll 1 --db "$db" \
    --shared-dir "$SW_DIR/shared"
  outcome=$(sweeps_expect "$db" failed "$(error_outcome 1 'sbatch refused.*Invalid partition')")
  [ "$outcome" = named-error ] && [[ $(sweeps_field "$db" message) != *"Invalid partition"* ]] &&
    outcome=wrong-success
  record 7 "sweep resume --shared-dir DIR, sbatch refusing" \
    "exit 1 with sbatch's reason; failed with it" "$outcome" "exit $RC: $(said)"

  # Submitted, then forgotten by Slurm: every member fails, saying so; the sweep ends.
  bin=$(sweeps_fakes accept-forgot)
  run_cmd 30 env PATH="$bin:$PATH" "$CLI" sweep resume 1 --poll 1 --db "$db"
  outcome=$(sweeps_expect "$db" finished "$(error_outcome 1 'no record|failed')")
  record 7 "sweep resume, submitted; squeue: Invalid job id" \
    "exit 1 at once, members failed, sweep finished" "$outcome" "exit $RC: $(said "$OUT" 100)"
}

case_sweep_squeue_down() {
  local db=$SW_DIR/down.sqlite outcome bin start
  mkdir -p "$SW_DIR/shared"
  bin=$(sweeps_fakes accept-down)
  run_cmd 30 env PATH="$bin:$PATH" "$CLI" sweep --model "$MODEL" --dataset "$DATA" --steps 2 \
    --executor slurm --shared-dir "$SW_DIR/shared" --no-follow --poll 1 --db "$db"
  start=$SECONDS
  run_cmd 60 env PATH="$bin:$PATH" "$CLI" sweep resume 1 --poll 1 --db "$db"
  outcome=$(sweeps_expect "$db" stopped "$(error_outcome 1 'squeue failed 10 times')")
  [ "$outcome" = named-error ] && [ $((SECONDS - start)) -gt 30 ] && outcome=hang
  record 7 "sweep resume --poll 1, squeue never answering" \
    "exit 1 after 10 tries (~10 s), stopped saying why" "$outcome" \
    "exit $RC after $((SECONDS - start)) s, state '$(sweeps_field "$db" state)': $(said)"
}

ROUND2_CASES+=" sweep_unsubmitted sweep_squeue_down"
