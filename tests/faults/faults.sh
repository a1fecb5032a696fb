#!/usr/bin/env bash
# Fault tests of mixlab-cli's run store (issue 16): what a user's machine does to a run in
# progress. Each part prints one line, PASS, FAIL or SKIP, with its figures (and why for a SKIP):
#
#   kill        SIGKILL at random moments (0-2 s) against one store: after each kill the store
#               passes PRAGMA integrity_check and, at the next open, the killed run is listed as
#               `interrupted`, never `running`.
#   concurrent  2, 4 and 8 `train` processes started together (held on a lock, then released at
#               once) on a NEW database (a fresh path each trial: 40, 12 and 8 trials) and on an
#               EXISTING one (4 trials each): every process exits 0 with its run id, every run is
#               in the store exactly once and `finished`, the file is a valid MixLab database.
#   full        a 300 KiB tmpfs that fills mid-run: the run exits non-zero, stops early, does not
#               claim `finished` (its JSON nor the store) and says the disk is full.
#   readonly    a store on a read-only bind mount (binds root too) and one marked immutable
#               (chattr +i): runs list / show / export work without creating -wal or -shm beside
#               it; `train --db` on it fails with a named error (exit 1) and leaves it
#               byte-identical.
#   memory      a memory cgroup (v2, else v1) limited to 200 MiB, no swap: a model whose training
#               needs ~2.3 GB is refused with a named error before it starts (not OOM-killed,
#               exit 137); a tiny model still trains in the same group.
#
# usage: faults.sh CLI [PART...]     (all parts by default)
# Exit: 0 every part passed or skipped, 1 a part failed, 77 every part was skipped (ctest's
# SKIP_RETURN_CODE), 2 bad usage. Mounting, cgroups and chattr need root; without it those parts
# are skipped and say why. Environment: FAULTS_WRITERS (writers:trials on a new database, default
# "2:40 4:12 8:8"), FAULTS_TRIALS (overrides every such trial count), FAULTS_EXISTING_TRIALS
# (default 4), FAULTS_KILLS (default 10), FAULTS_KEEP=1 keeps the temporary folder.
# shellcheck disable=SC2317  # functions called indirectly (trap, "part_$part")
set -u

usage() {
  echo "usage: $0 CLI [kill|concurrent|full|readonly|memory ...]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
CLI=$1
shift
case $CLI in /*) ;; *) CLI=$PWD/$CLI ;; esac
[ -x "$CLI" ] || { echo "faults.sh: '$CLI' is not an executable" >&2; exit 2; }
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(kill concurrent full readonly memory)
for part in "${PARTS[@]}"; do
  case $part in kill | concurrent | full | readonly | memory) ;; *) usage ;; esac
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The interpreter itself, not a version manager's shim (which costs 0.1 s a call).
# Skipped, saying why, where python3 (with its sqlite3 module) is missing.
PYTHON=$(python3 -c 'import sqlite3, sys; print(sys.executable)' 2>/dev/null) ||
  { echo "SKIP faults.sh: needs python3 with its sqlite3 module (Debian: python3)"; exit 77; }
CHECK=("$PYTHON" "$HERE/store_check.py")
KILLS=${FAULTS_KILLS:-10}
# Writers per trial and trials on a new database: the creation race shows most with two (about
# 1 trial in 12 before RunStore::open was fixed), so two get the most trials.
WRITERS=${FAULTS_WRITERS:-2:40 4:12 8:8}
EXISTING_TRIALS=${FAULTS_EXISTING_TRIALS:-4}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-faults.XXXXXX") || exit 2
MOUNTS=()     # mount points, unmounted in reverse order on exit
CGROUPS=()    # cgroup folders, removed on exit
IMMUTABLE=()  # files given chattr +i, made mutable again on exit
PIDS=()       # background processes, killed on exit if still there

cleanup() {
  local rc=$? i
  trap - EXIT INT TERM HUP
  # TERM first: timeout passes it on to mixlab-cli, which stops within a step.
  for i in "${PIDS[@]}"; do kill -TERM "$i" 2>/dev/null; done
  sleep 0.5
  for i in "${PIDS[@]}"; do kill -KILL "$i" 2>/dev/null; done
  wait 2>/dev/null
  for i in "${IMMUTABLE[@]}"; do chattr -i "$i" 2>/dev/null; done
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null ||
      echo "faults.sh: could not unmount ${MOUNTS[i]}" >&2
  done
  for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do rmdir "${CGROUPS[i]}" 2>/dev/null; done
  if [ "${FAULTS_KEEP:-0}" = 1 ]; then
    echo "faults.sh: kept $WORK" >&2
  else
    # --one-file-system: never reach into a mount that could not be undone.
    rm -rf --one-file-system "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A model and a dataset that make a step take tens of microseconds.
MODEL=$WORK/tiny.json
cat >"$MODEL" <<'EOF'
{"name": "tiny", "input": {"shape": [4, 4, 1]}, "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 8, "activation": "relu"},
            {"type": "Dense", "units": 4}, {"type": "Activation", "activation": "softmax"}]}
EOF
# About 2.3 GB to train (144 M float32 parameters, their gradients and Adam's two moments).
BIG_MODEL=$WORK/big.json
cat >"$BIG_MODEL" <<'EOF'
{"name": "too-big", "input": {"shape": [4, 4, 1]}, "loss": "sparse_categorical_crossentropy",
 "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 12000, "activation": "relu"},
            {"type": "Dense", "units": 12000, "activation": "relu"}, {"type": "Dense", "units": 4},
            {"type": "Activation", "activation": "softmax"}]}
EOF
DATA=synthetic:4x4x1:4:256

TRAIN=("$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 --quiet --no-eval)
train() {
  "${TRAIN[@]}" "$@"
}

FAILED=0 PASSED=0 SKIPPED=0
result() {  # PASS|FAIL|SKIP PART TEXT
  printf '%-4s %-10s %s\n' "$1" "$2" "$3"
  case $1 in
    PASS) PASSED=$((PASSED + 1)) ;;
    FAIL) FAILED=$((FAILED + 1)) ;;
    SKIP) SKIPPED=$((SKIPPED + 1)) ;;
  esac
}

# Runs a command in the background and waits for it: a signal to this script is then handled at
# once, and the EXIT trap ends the command.
run_waiting() {
  "$@" &
  local pid=$!
  PIDS+=("$pid")
  wait "$pid" 2>/dev/null  # no "Killed" from the shell in the command's stderr file
}

# The number of runs in a store (0 when there is none).
sqlite_count_runs() {
  [ -e "$1" ] || { echo 0; return; }
  "${CHECK[@]}" runs "$1" 2>/dev/null | wc -l
}

# The first line of a file, shortened, for a report.
first_line() {
  head -n 1 "$1" 2>/dev/null | cut -c 1-"${2:-160}"
}

# --- kill: SIGKILL at random moments against one store -----------------------------------------

part_kill() {
  local dir=$WORK/kill db problems=() killed=0 recorded=0 intact=0 delays=() i
  mkdir -p "$dir"
  db=$dir/runs.sqlite
  for ((i = 1; i <= KILLS; i++)); do
    local before after delay_ms pid id status
    before=$("${CHECK[@]}" runs "$db" 2>/dev/null | awk '{print $1}' | sort -n | tr '\n' ' ')
    delay_ms=$((RANDOM % 2001))
    delays+=("$delay_ms")
    # A run long enough (~7 s) to be killed mid-way whatever the delay; not through a function,
    # so that $! is mixlab-cli itself.
    "${TRAIN[@]}" --steps 200000 --db "$db" >"$dir/out.$i" 2>"$dir/err.$i" &
    pid=$!
    PIDS+=("$pid")
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    if kill -9 "$pid" 2>/dev/null; then
      killed=$((killed + 1))
    else
      problems+=("kill $i: the run had already ended ($(first_line "$dir/err.$i" 80))")
    fi
    wait "$pid" 2>/dev/null
    # The store as the kill left it (with its -wal): intact?
    if [ ! -e "$db" ]; then
      intact=$((intact + 1))  # killed before the file was created
    elif "${CHECK[@]}" integrity "$db" >"$dir/integrity.$i" 2>&1; then
      intact=$((intact + 1))
    else
      problems+=("kill $i at ${delay_ms} ms: integrity_check: $(first_line "$dir/integrity.$i" 120)")
    fi
    # The next open: the killed run must be listed as interrupted.
    if ! timeout 60 "$CLI" runs list --json --db "$db" >"$dir/list.$i" 2>"$dir/listerr.$i"; then
      [ -e "$db" ] && problems+=("kill $i: runs list failed: $(first_line "$dir/listerr.$i" 120)")
      continue
    fi
    after=$("${CHECK[@]}" list "$dir/list.$i" | awk '{print $1}' | sort -n | tr '\n' ' ')
    for id in $after; do
      case " $before " in *" $id "*) continue ;; esac
      recorded=$((recorded + 1))
      status=$("${CHECK[@]}" list "$dir/list.$i" | awk -v id="$id" '$1 == id {print $2}')
      [ "$status" = interrupted ] ||
        problems+=("kill $i at ${delay_ms} ms: run $id is '$status', expected 'interrupted'")
    done
  done
  # A last open for writing, then no run may be left `running`.
  train --steps 20 --db "$db" >"$dir/out.last" 2>"$dir/err.last" ||
    problems+=("a run after the kills failed: $(first_line "$dir/err.last" 120)")
  if timeout 60 "$CLI" runs list --json --db "$db" >"$dir/list.last" 2>"$dir/listerr.last"; then
    local running
    running=$("${CHECK[@]}" list "$dir/list.last" | awk '$2 == "running" {print $1}' | tr '\n' ' ')
    [ -z "$running" ] || problems+=("runs still 'running' after the kills: $running")
  else
    problems+=("runs list failed at the end: $(first_line "$dir/listerr.last" 120)")
  fi
  "${CHECK[@]}" integrity "$db" >"$dir/integrity.last" 2>&1 ||
    problems+=("integrity_check at the end: $(first_line "$dir/integrity.last" 120)")
  local sorted
  sorted=$(printf '%s\n' "${delays[@]}" | sort -n | tr '\n' ' ')
  local figures="$killed/$KILLS killed at ${sorted% } ms; $intact/$KILLS intact; $recorded recorded runs killed"
  if [ ${#problems[@]} -eq 0 ]; then
    result PASS kill "$figures, all 'interrupted' at the next open"
  else
    result FAIL kill "$figures; ${#problems[@]} problems: $(printf '%s | ' "${problems[@]:0:4}")"
  fi
}

# --- concurrent: N writers started together ----------------------------------------------------

# One trial: N `train` processes held on a lock and released together on DB (new or existing).
# Prints nothing; on failure appends the reasons to the array `trial_problems`.
concurrent_trial() {
  local db=$1 n=$2 dir=$3 lock=$3/go.lock lfd i pids=() rcs=() previous
  mkdir -p "$dir"
  previous=$(sqlite_count_runs "$db")
  : >"$lock"
  exec {lfd}>"$lock"
  flock -x "$lfd"
  for ((i = 1; i <= n; i++)); do
    flock -s "$lock" timeout 120 "$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 \
      --quiet --no-eval --steps 20 --json --db "$db" >"$dir/out.$i" 2>"$dir/err.$i" {lfd}>&- &
    pids+=($!)
  done
  PIDS+=("${pids[@]}")
  sleep 0.15  # every process is now waiting on the lock (it takes each a few ms to get there)
  flock -u "$lfd"
  exec {lfd}>&-
  for ((i = 1; i <= n; i++)); do
    wait "${pids[i - 1]}"
    rcs+=($?)
  done
  local outs=()
  for ((i = 1; i <= n; i++)); do
    [ "${rcs[i - 1]}" -eq 0 ] || trial_problems+=("exit ${rcs[i - 1]}: $(first_line "$dir/err.$i" 140)")
    outs+=("$dir/out.$i")
  done
  # Every process's run once in the store, finished; the file intact and MixLab's.
  local line
  while IFS= read -r line; do
    trial_problems+=("$line")
  done < <("${CHECK[@]}" writers "$db" "$previous" "${outs[@]}")
}

part_concurrent() {
  local dir=$WORK/concurrent n t summary=() failures=() existing start=$SECONDS
  mkdir -p "$dir"
  local spec
  for spec in $WRITERS; do
    local bad=0 trials=${FAULTS_TRIALS:-${spec#*:}}
    n=${spec%%:*}
    for ((t = 1; t <= trials; t++)); do
      local trial_problems=()
      concurrent_trial "$dir/new-$n-$t.sqlite" "$n" "$dir/new-$n-$t"
      if [ ${#trial_problems[@]} -gt 0 ]; then
        bad=$((bad + 1))
        failures+=("new N=$n trial $t: ${trial_problems[0]}")
      else
        rm -rf "$dir/new-$n-$t.sqlite"* "$dir/new-$n-$t"  # keep the folder small
      fi
    done
    summary+=("new N=$n: $((trials - bad))/$trials ok")
  done
  existing=$dir/existing.sqlite
  if train --steps 20 --db "$existing" >"$dir/seed.out" 2>"$dir/seed.err"; then
    for spec in $WRITERS; do
      local bad=0 trials=$EXISTING_TRIALS
      n=${spec%%:*}
      for ((t = 1; t <= trials; t++)); do
        local trial_problems=()
        concurrent_trial "$existing" "$n" "$dir/existing-$n-$t"
        if [ ${#trial_problems[@]} -gt 0 ]; then
          bad=$((bad + 1))
          failures+=("existing N=$n trial $t: ${trial_problems[0]}")
        fi
      done
      summary+=("existing N=$n: $((trials - bad))/$trials ok")
    done
  else
    failures+=("cannot create the existing database: $(first_line "$dir/seed.err" 120)")
  fi
  local figures
  figures="$(printf '%s; ' "${summary[@]}")$((SECONDS - start)) s"
  if [ ${#failures[@]} -eq 0 ]; then
    result PASS concurrent "$figures"
  else
    result FAIL concurrent "$figures; first failures: $(printf '%s | ' "${failures[@]:0:4}")"
  fi
}

# --- full: a tiny filesystem that fills mid-run -------------------------------------------------

part_full() {
  local dir=$WORK/full mnt=$WORK/full/mnt rc problems=() steps=100000 status done_steps
  mkdir -p "$mnt"
  if ! mount -t tmpfs -o size=300k,mode=0755 mixlab-faults "$mnt" 2>"$dir/mount.err"; then
    result SKIP full "cannot mount a 300 KiB tmpfs: $(first_line "$dir/mount.err" 120)"
    return
  fi
  MOUNTS+=("$mnt")
  run_waiting timeout 120 "$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 --quiet \
    --no-eval --steps "$steps" --json --db "$mnt/runs.sqlite" >"$dir/out" 2>"$dir/err"
  rc=$?
  { read -r status; read -r done_steps; } < <("${CHECK[@]}" json "$dir/out" status steps 2>/dev/null)
  status=${status:-} done_steps=${done_steps:-}
  if [ "$rc" -eq 124 ]; then
    problems+=("hung (killed after 120 s)")
  elif [ "$rc" -ge 128 ]; then
    problems+=("crashed (exit $rc)")
  elif [ "$rc" -eq 0 ]; then
    problems+=("exit 0 on a full disk")
  fi
  [ "$status" != finished ] || problems+=("JSON says 'finished'")
  if [[ $done_steps =~ ^[0-9]+$ ]] && [ "$done_steps" -ge "$steps" ]; then
    problems+=("trained on for all $done_steps steps after the store failed")
  fi
  cat "$dir/err" "$dir/out" | grep -Eqi 'full|no space' || problems+=("no message naming the full disk")
  local stored
  stored=$("${CHECK[@]}" runs "$mnt/runs.sqlite" 2>/dev/null | awk '{print $2}' | tr '\n' ' ')
  case " $stored " in *" finished "*) problems+=("the store says 'finished'") ;; esac
  local used
  used=$(df -k --output=used "$mnt" 2>/dev/null | tail -n 1 | tr -d ' ')
  if umount "$mnt"; then unset 'MOUNTS[-1]'; else problems+=("cannot unmount $mnt"); fi
  local figures
  figures="exit $rc, JSON status '${status:-none}' after ${done_steps:-?}/$steps steps, store: '${stored% }', ${used:-?} KiB used; stderr: $(first_line "$dir/err" 110)"
  if [ ${#problems[@]} -eq 0 ]; then
    result PASS full "$figures"
  else
    result FAIL full "$(printf '%s; ' "${problems[@]}")$figures"
  fi
}

# --- readonly: a store that cannot be written ----------------------------------------------------

# Reading commands on DB must work and leave no -wal/-shm beside it; train on it must fail with a
# named error (exit 1) and leave it byte-identical. Appends to `ro_problems`.
readonly_checks() {
  local label=$1 db=$2 out=$3 sum rc list_ids
  sum=$(sha256sum "$db" | cut -d ' ' -f 1)
  mkdir -p "$out"
  timeout 60 "$CLI" runs list --json --db "$db" >"$out/list" 2>"$out/list.err"
  rc=$?
  list_ids=$("${CHECK[@]}" list "$out/list" 2>/dev/null | awk '{print $1}' | sort -n | tr '\n' ' ')
  [ "$rc" -eq 0 ] && [ "$list_ids" = "1 2 " ] ||
    ro_problems+=("$label: runs list exit $rc, ids '${list_ids% }': $(first_line "$out/list.err" 100)")
  timeout 60 "$CLI" runs show 2 --db "$db" >"$out/show" 2>"$out/show.err"
  rc=$?
  [ "$rc" -eq 0 ] && [ -s "$out/show" ] ||
    ro_problems+=("$label: runs show exit $rc: $(first_line "$out/show.err" 100)")
  timeout 60 "$CLI" runs export 1 --steps --db "$db" -o "$out/steps.csv" >/dev/null 2>"$out/export.err"
  rc=$?
  local lines
  lines=$({ wc -l <"$out/steps.csv"; } 2>/dev/null || echo 0)
  [ "$rc" -eq 0 ] && [ "$lines" -eq 51 ] ||
    ro_problems+=("$label: runs export exit $rc, $lines lines (expected 51): $(first_line "$out/export.err" 100)")
  local side
  for side in "$db-wal" "$db-shm"; do
    [ ! -e "$side" ] || ro_problems+=("$label: reading created $(basename "$side") beside the database")
  done
  timeout 60 "$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 --quiet --no-eval \
    --steps 20 --db "$db" >"$out/train" 2>"$out/train.err"
  rc=$?
  [ "$rc" -eq 1 ] && grep -Eqi 'read-only|read only|cannot be written|not writable|permission' "$out/train.err" ||
    ro_problems+=("$label: train exit $rc (expected 1 with a named error): $(first_line "$out/train.err" 100)")
  [ "$(sha256sum "$db" | cut -d ' ' -f 1)" = "$sum" ] ||
    ro_problems+=("$label: the database changed")
  ro_figures+=("$label: train exit $rc '$(first_line "$out/train.err" 90)'")
}

part_readonly() {
  local dir=$WORK/readonly src=$WORK/readonly/src mnt=$WORK/readonly/ro ro_problems=()
  local ro_figures=() variants=() skipped=()
  mkdir -p "$src" "$mnt"
  if ! train --steps 50 --db "$src/runs.sqlite" >"$dir/seed1" 2>"$dir/seed.err" ||
    ! train --steps 50 --db "$src/runs.sqlite" >"$dir/seed2" 2>>"$dir/seed.err"; then
    result FAIL readonly "cannot create the store: $(first_line "$dir/seed.err" 120)"
    return
  fi
  rm -f "$src/runs.sqlite-wal" "$src/runs.sqlite-shm"  # a closed WAL store needs neither
  cp -p "$src/runs.sqlite" "$dir/imm.sqlite"

  # A read-only bind mount: the kernel refuses every write, root's too.
  if mount --bind "$src" "$mnt" 2>"$dir/mount.err"; then
    MOUNTS+=("$mnt")
    if mount -o remount,bind,ro "$mnt" 2>>"$dir/mount.err" && ! touch "$mnt/probe" 2>/dev/null; then
      variants+=("read-only bind mount")
      readonly_checks "bind-ro" "$mnt/runs.sqlite" "$dir/bind"
    else
      skipped+=("read-only bind remount refused: $(first_line "$dir/mount.err" 80)")
    fi
    umount "$mnt" && unset 'MOUNTS[-1]'
  else
    skipped+=("bind mount refused: $(first_line "$dir/mount.err" 80)")
  fi

  # An immutable file in a writable folder: SQLite could create -wal / -shm beside it.
  mkdir -p "$dir/imm"
  mv "$dir/imm.sqlite" "$dir/imm/runs.sqlite"
  if chattr +i "$dir/imm/runs.sqlite" 2>"$dir/chattr.err" &&
    ! (: >>"$dir/imm/runs.sqlite") 2>/dev/null; then
    IMMUTABLE+=("$dir/imm/runs.sqlite")
    variants+=("chattr +i")
    readonly_checks "immutable" "$dir/imm/runs.sqlite" "$dir/immout"
    chattr -i "$dir/imm/runs.sqlite"
  else
    skipped+=("chattr +i not possible here: $(first_line "$dir/chattr.err" 80)")
  fi

  if [ ${#variants[@]} -eq 0 ]; then
    result SKIP readonly "$(printf '%s; ' "${skipped[@]}")"
  elif [ ${#ro_problems[@]} -eq 0 ]; then
    result PASS readonly "$(printf '%s, ' "${variants[@]}")list/show/export ok, no -wal/-shm, unchanged; $(printf '%s; ' "${ro_figures[@]}")${skipped[*]:+ (${skipped[*]})}"
  else
    result FAIL readonly "$(printf '%s | ' "${ro_problems[@]:0:5}")"
  fi
}

# --- memory: a cgroup with a memory limit --------------------------------------------------------

# Creates a child cgroup limited to 200 MiB without swap; prints its folder, or a reason on
# stderr and returns 1.
# True when a process can move itself into the group (a container may let it be made but not
# joined: then the part skips rather than failing on the setup).
can_join() {
  # shellcheck disable=SC2016  # expanded by that sh
  sh -c 'echo $$ >"$1/cgroup.procs"' sh "$1" 2>/dev/null
}

make_memory_cgroup() {
  local base name=mixlab-faults-$$ cg
  # cgroup v2: the unified hierarchy where its memory controller is enabled.
  for base in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    [ -f "$base/cgroup.controllers" ] || continue
    grep -qw memory "$base/cgroup.controllers" || continue
    grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null ||
      echo +memory >"$base/cgroup.subtree_control" 2>/dev/null || continue
    cg=$base/$name
    mkdir "$cg" 2>/dev/null || continue
    CGROUPS+=("$cg")
    if echo 200M >"$cg/memory.max" 2>/dev/null && can_join "$cg"; then
      echo 0 >"$cg/memory.swap.max" 2>/dev/null  # absent without swap accounting
      echo "v2 $cg"
      return 0
    fi
  done
  # cgroup v1: the memory hierarchy, under this process's own group where that is writable.
  base=/sys/fs/cgroup/memory
  if [ -f "$base/memory.limit_in_bytes" ]; then
    local own
    own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
    for cg in "$base${own%/}/$name" "$base/$name"; do
      mkdir "$cg" 2>/dev/null || continue
      CGROUPS+=("$cg")
      if echo 200M >"$cg/memory.limit_in_bytes" 2>/dev/null && can_join "$cg"; then
        [ -f "$cg/memory.memsw.limit_in_bytes" ] && echo 200M >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
        echo "v1 $cg"
        return 0
      fi
    done
  fi
  echo "no writable memory cgroup (v2 with the memory controller, or v1 memory) at /sys/fs/cgroup" >&2
  return 1
}

part_memory() {
  local dir=$WORK/memory cg version problems=() rc small_rc
  mkdir -p "$dir"
  # Not in a subshell: the group must reach CGROUPS to be removed on exit.
  if ! make_memory_cgroup >"$dir/cgroup" 2>"$dir/cgroup.err"; then
    result SKIP memory "$(first_line "$dir/cgroup.err" 150)"
    return
  fi
  read -r version cg <"$dir/cgroup"
  # In the group: sh moves itself, then becomes mixlab-cli. timeout stays outside, unlimited.
  # shellcheck disable=SC2016  # expanded by that sh
  { run_waiting timeout 120 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
    "$CLI" train --model "$BIG_MODEL" --dataset "$DATA" --threads 1 --quiet --no-eval \
    --steps 5 --json --db "$dir/runs.sqlite" >"$dir/out" 2>"$dir/err"; } 2>/dev/null
  rc=$?
  local status steps
  { read -r status; read -r steps; } < <("${CHECK[@]}" json "$dir/out" status steps 2>/dev/null)
  if [ "$rc" -eq 124 ]; then
    problems+=("hung (killed after 120 s)")
  elif [ "$rc" -ge 128 ]; then
    problems+=("killed by signal $((rc - 128)) (exit $rc): no named error")
  elif [ "$rc" -eq 0 ]; then
    problems+=("exit 0: trained a ~2.3 GB model in 200 MiB")
  elif ! cat "$dir/err" "$dir/out" | grep -Eqi 'memory'; then
    problems+=("exit $rc without a message naming memory")
  fi
  [ "${status:-}" != finished ] || problems+=("JSON says 'finished'")
  if [[ ${steps:-} =~ ^[0-9]+$ ]] && [ "$steps" -gt 0 ]; then
    problems+=("refused only after $steps steps")
  fi
  # The limit must not refuse what fits.
  # shellcheck disable=SC2016  # expanded by that sh
  run_waiting timeout 120 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
    "$CLI" train --model "$MODEL" --dataset "$DATA" --threads 1 --quiet --no-eval \
    --steps 20 --db "$dir/runs.sqlite" >"$dir/small.out" 2>"$dir/small.err"
  small_rc=$?
  [ "$small_rc" -eq 0 ] ||
    problems+=("a tiny model in the same group failed (exit $small_rc): $(first_line "$dir/small.err" 100)")
  local figures said
  # What it said: stderr, else the run's JSON message.
  said=$(first_line "$dir/err" 140)
  [ -n "$said" ] || said=$("${CHECK[@]}" json "$dir/out" message 2>/dev/null | cut -c 1-140)
  figures="cgroup $version 200 MiB no swap ($cg): big model exit $rc '$said'; tiny model exit $small_rc"
  if [ ${#problems[@]} -eq 0 ]; then
    result PASS memory "$figures"
  else
    result FAIL memory "$(printf '%s; ' "${problems[@]}")$figures"
  fi
}

START=$SECONDS
for part in "${PARTS[@]}"; do
  "part_$part"
done
echo "faults: $PASSED passed, $FAILED failed, $SKIPPED skipped in $((SECONDS - START)) s ($CLI)"
if [ "$FAILED" -gt 0 ]; then
  exit 1
elif [ "$PASSED" -eq 0 ]; then
  exit 77
fi
exit 0
