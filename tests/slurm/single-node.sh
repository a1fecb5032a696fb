#!/usr/bin/env bash
# Start a throw-away single-node Slurm cluster (Debian 12 packages: slurmctld,
# slurmd, slurm-client, munge) for tests, run a command inside it, tear it down.
#
#   tests/slurm/single-node.sh run COMMAND [ARGS...]
#       Start munged + slurmctld + slurmd in a private temporary folder, export
#       SLURM_CONF, run COMMAND, stop everything, remove the folder, and return
#       COMMAND's exit status.
#   tests/slurm/single-node.sh selftest
#       Inside a cluster (SLURM_CONF set): job array, outputs, scancel, state.
#
# Inside "run": SLURM_CONF (client commands), MIXLAB_SLURM_JOBCOMP (text log
# of finished jobs; sacct does not work without slurmdbd, see write_config).
#
# Exit status 77 means "skipped" (packages missing or daemons cannot start
# here); CTest maps it through SKIP_RETURN_CODE.  With MIXLAB_REQUIRE_SLURM=1
# the same situations exit 1 instead, so CI that must have Slurm fails loudly.
#
# Everything (munge key/socket, slurm.conf, state, spool, logs) lives in one
# mktemp -d folder and the ports are picked per instance, so several instances
# can run at once (CTest -j) without clashing.  Needs root: slurmd must run as
# root to launch jobs, and SlurmUser=root avoids creating a "slurm" user.
set -euo pipefail

readonly SKIP_STATUS=77
readonly START_TIMEOUT_S=${MIXLAB_SLURM_START_TIMEOUT:-30}

log() { printf 'single-node.sh: %s\n' "$*" >&2; }

# One line saying why, then 77 (skip) or 1 (MIXLAB_REQUIRE_SLURM=1).
skip() {
    if [[ ${MIXLAB_REQUIRE_SLURM:-0} == 1 ]]; then
        printf 'single-node.sh: FAIL (MIXLAB_REQUIRE_SLURM=1): %s\n' "$*" >&2
        exit 1
    fi
    printf 'single-node.sh: SKIP: %s\n' "$*" >&2
    exit "$SKIP_STATUS"
}

# ---------------------------------------------------------------------------
# Cluster lifecycle
# ---------------------------------------------------------------------------

WORKDIR=""
MUNGED_PID=""
SLURMCTLD_PID=""
SLURMD_PID=""
CMD_PID=""

check_prerequisites() {
    local tool
    for tool in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scancel scontrol sacct; do
        command -v "$tool" >/dev/null 2>&1 ||
            skip "'$tool' not found (apt-get install -y slurmctld slurmd slurm-client munge)"
    done
    # slurmd has to be root to start jobs as the submitting user, and munged's
    # key file must belong to the user running it.
    [[ $(id -u) == 0 ]] || skip "must run as root to start slurmd"
}

# Is TCP port $1 free on all addresses?  python3 really binds (exact);
# ss is the fallback when python3 is missing.
port_is_free() {
    local port=$1
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$port" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(("0.0.0.0", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
    elif command -v ss >/dev/null 2>&1; then
        [[ -z $(ss -Htan "sport = :$port" 2>/dev/null) ]]
    else
        return 0 # cannot tell; a clash shows up as a start failure
    fi
}

# Print a free port in 20000-31999: random so concurrent instances rarely pick
# the same one, and below the kernel's ephemeral range (32768+) so outgoing
# connections (Slurm's own RPCs) cannot grab it before the daemon binds it.
pick_port() {
    local avoid=${1:-} port
    for _ in $(seq 1 200); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
        [[ $port == "$avoid" ]] && continue
        if port_is_free "$port"; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

# Stop daemons and the command, remove the folder.  Runs on every exit path.
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    set +e
    if [[ -n $CMD_PID ]] && kill -0 "$CMD_PID" 2>/dev/null; then
        stop_pid "$CMD_PID"
    fi
    # Cancel leftover jobs first: with proctrack/linuxproc the job steps
    # (slurmstepd and its children) are not children of slurmd and would
    # survive it.  scancel only reaches this instance (SLURM_CONF).
    if [[ -n $SLURMCTLD_PID ]] && kill -0 "$SLURMCTLD_PID" 2>/dev/null; then
        scancel --quiet --user="$(id -un)" 2>/dev/null
        local i
        for i in $(seq 1 50); do
            [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
            sleep 0.1
        done
    fi
    stop_pid "$SLURMD_PID"
    stop_pid "$SLURMCTLD_PID"
    kill_strays
    stop_pid "$MUNGED_PID"
    if [[ -n $WORKDIR && -d $WORKDIR ]]; then
        if [[ ${MIXLAB_SLURM_KEEP:-0} == 1 ]]; then
            log "keeping $WORKDIR (MIXLAB_SLURM_KEEP=1)"
        else
            rm -rf "$WORKDIR"
        fi
    fi
    exit "$status"
}

# kill, wait up to ~5 s, then kill -9.
stop_pid() {
    local pid=${1:-} i
    [[ -n $pid ]] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Last resort for slurmstepd / job processes that scancel did not end: they
# inherit SLURM_CONF=<our conf> from slurmd, which identifies this instance.
kill_strays() {
    local env_file pid
    [[ -n $WORKDIR ]] || return 0
    for env_file in /proc/[0-9]*/environ; do
        pid=${env_file#/proc/}
        pid=${pid%/environ}
        [[ $pid == "$$" || $pid == "$MUNGED_PID" ]] && continue
        if grep -qszxF "SLURM_CONF=$WORKDIR/slurm.conf" "$env_file"; then
            kill -9 "$pid" 2>/dev/null
        fi
    done
}

# The daemons' log files, or their stderr (*.out) when they died before
# opening the log file (bad config, port in use...).
print_logs() {
    local name f
    for name in munged slurmctld slurmd; do
        f=$WORKDIR/$name.log
        [[ -s $f ]] || f=$WORKDIR/$name.out
        [[ -s $f ]] || continue
        echo "----- tail of $f -----" >&2
        tail -n 25 "$f" >&2
    done
}

start_munge() {
    local key=$WORKDIR/munge.key
    # mungekey ships with munge >= 0.5.14; dd is the documented alternative.
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$key" >/dev/null 2>&1 ||
            dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
    else
        dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
    fi
    chmod 0600 "$key"
    # -F: stay in the foreground so $! is munged's real PID.
    # --force: start even where munged would refuse over path permissions
    # (e.g. an unusual TMPDIR); not needed for root itself with munge 0.5.15.
    munged -F --force \
        --socket="$MUNGE_SOCKET" --key-file="$key" \
        --pid-file="$WORKDIR/munged.pid" --log-file="$WORKDIR/munged.log" \
        --seed-file="$WORKDIR/munged.seed" \
        >>"$WORKDIR/munged.out" 2>&1 &
    MUNGED_PID=$!
    local i
    for i in $(seq 1 50); do
        if munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; then
            return 0
        fi
        kill -0 "$MUNGED_PID" 2>/dev/null || break
        sleep 0.1
    done
    print_logs
    skip "munged did not start or munge/unmunge failed on $MUNGE_SOCKET"
}

# The node line as slurmd itself detects it (CPUs, sockets, cores, memory), so
# slurmctld never drains the node for "Low RealMemory"/"Low socket*core count".
node_hardware() {
    local line
    line=$(slurmd -C 2>/dev/null | head -n 1 || true)
    if [[ $line == NodeName=* ]]; then
        echo "${line#NodeName=* }"
    else
        echo "CPUs=$(nproc) RealMemory=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))"
    fi
}

write_config() {
    local ctld_port=$1 slurmd_port=$2
    mkdir -p "$WORKDIR/state" "$WORKDIR/spool"
    cat >"$SLURM_CONF" <<EOF
# Generated by tests/slurm/single-node.sh for one test run.
ClusterName=mixlabtest
# name(address): the node name need not resolve through DNS.
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
# AuthInfo socket= is honoured by both auth/munge and cred/munge.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$WORKDIR/state
SlurmdSpoolDir=$WORKDIR/spool
SlurmctldPidFile=$WORKDIR/slurmctld.pid
SlurmdPidFile=$WORKDIR/slurmd.pid
SlurmctldLogFile=$WORKDIR/slurmctld.log
SlurmdLogFile=$WORKDIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups needed: linuxproc tracks processes by parentage.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
# No slurmdbd: sacct prints "Slurm accounting storage is disabled" and exits
# 1 (jobcomp/filetxt does not feed sacct; 22.05 has no file-based accounting
# storage).  Finished jobs stay visible to squeue -t all / scontrol show job
# for MinJobAge seconds, and forever in the jobcomp text file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$WORKDIR/jobcomp.txt
MinJobAge=300
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 $(node_hardware) State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

start_slurm() {
    # -D: foreground, so $! is the daemon's PID and no pid-file race.
    # -c (slurmctld): ignore any saved state (the folder is fresh anyway).
    # -N: node name even if the host's name differs from the config's.
    slurmctld -D -c -f "$SLURM_CONF" >>"$WORKDIR/slurmctld.out" 2>&1 &
    SLURMCTLD_PID=$!
    if cgroup_fs_mounted || ! command -v unshare >/dev/null 2>&1; then
        slurmd -D -N "$NODE" -f "$SLURM_CONF" >>"$WORKDIR/slurmd.out" 2>&1 &
    else
        # slurmd 22.05 will not start without a cgroup file system, which a chroot (the fresh
        # Debian root of scripts/fresh-check.sh) lacks: mount one in a mount namespace of its
        # own, seen by slurmd and its jobs only. unshare and sh exec, so $! is slurmd's PID.
        # The kind the kernel runs this process under: slurmd refuses a mix of the two.
        local mount_cgroup='mount -t cgroup2 cgroup2 /sys/fs/cgroup'
        if grep -qs '^[1-9]' /proc/self/cgroup; then
            # v1: its cgroup/v1 plugin wants the named systemd hierarchy and freezer.
            mount_cgroup='mount -t tmpfs cgroup /sys/fs/cgroup &&
                mkdir /sys/fs/cgroup/systemd /sys/fs/cgroup/freezer &&
                mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd &&
                mount -t cgroup -o freezer cgroup /sys/fs/cgroup/freezer'
        fi
        unshare --mount --propagation unchanged sh -c \
            "mount -t sysfs sysfs /sys 2>/dev/null; $mount_cgroup && exec \"\$@\"" \
            sh slurmd -D -N "$NODE" -f "$SLURM_CONF" >>"$WORKDIR/slurmd.out" 2>&1 &
    fi
    SLURMD_PID=$!
}

# True when /sys/fs/cgroup holds a cgroup file system (v2, or v1 hierarchies).
cgroup_fs_mounted() {
    [[ -e /sys/fs/cgroup/cgroup.controllers ]] && return 0
    grep -qs ' /sys/fs/cgroup[/ ]' /proc/mounts
}

# 0 when the node reports idle, 1 on timeout, 2 when a daemon died.
wait_until_idle() {
    local deadline=$((SECONDS + START_TIMEOUT_S)) state
    while ((SECONDS < deadline)); do
        kill -0 "$SLURMCTLD_PID" 2>/dev/null || return 2
        kill -0 "$SLURMD_PID" 2>/dev/null || return 2
        state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1 || true)
        [[ $state == idle ]] && return 0
        sleep 0.2
    done
    return 1
}

cmd_run() {
    (($# > 0)) || { echo "usage: $0 run COMMAND [ARGS...]" >&2; exit 2; }
    check_prerequisites

    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-slurm.XXXXXX")
    # Not group/world-writable (munged refuses that), but traversable so
    # that non-root clients could reach the munge socket.
    chmod 0711 "$WORKDIR"
    NODE=$(hostname -s)
    MUNGE_SOCKET=$WORKDIR/munge.socket
    export SLURM_CONF=$WORKDIR/slurm.conf
    # jobcomp/filetxt record of every finished job (one line each, with
    # JobState=, ArrayJobId=, ArrayTaskId=): what we have instead of sacct.
    export MIXLAB_SLURM_JOBCOMP=$WORKDIR/jobcomp.txt

    start_munge

    # A port picked free can still be taken by a concurrent instance before
    # slurmctld binds it; retry the daemons with new ports in that case.
    local attempt rc=1 ctld_port slurmd_port
    for attempt in 1 2 3; do
        ctld_port=$(pick_port) || skip "no free TCP port found"
        slurmd_port=$(pick_port "$ctld_port") || skip "no free TCP port found"
        write_config "$ctld_port" "$slurmd_port"
        start_slurm
        rc=0
        wait_until_idle || rc=$?
        ((rc == 0)) && break
        if ((attempt < 3)) && grep -qs 'Address already in use' \
            "$WORKDIR"/slurmctld.log "$WORKDIR"/slurmd.log "$WORKDIR"/*.out; then
            log "port clash (ctld $ctld_port, slurmd $slurmd_port); retrying"
            stop_pid "$SLURMD_PID"
            stop_pid "$SLURMCTLD_PID"
            SLURMD_PID="" SLURMCTLD_PID=""
            rm -f "$WORKDIR"/slurmctld.log "$WORKDIR"/slurmd.log "$WORKDIR"/*.out
            rm -rf "$WORKDIR/state" "$WORKDIR/spool"
            continue
        fi
        break
    done
    if ((rc != 0)); then
        print_logs
        if ((rc == 2)); then
            skip "slurmctld or slurmd exited during start-up (logs above)"
        fi
        skip "node $NODE not idle within ${START_TIMEOUT_S}s: $(sinfo -h -N -o '%T %E' 2>&1 | head -n 1)"
    fi
    log "cluster up in $WORKDIR (node $NODE, slurmctld :$ctld_port, slurmd :$slurmd_port)"

    # Run in the background and wait, so INT/TERM reach the traps at once.
    local status=0
    "$@" &
    CMD_PID=$!
    wait "$CMD_PID" || status=$?
    CMD_PID=""
    exit "$status"
}

# ---------------------------------------------------------------------------
# Self-test (runs inside the cluster)
# ---------------------------------------------------------------------------

FAILURES=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }

# Wait until squeue no longer lists job $1 (or any of its array tasks).
wait_for_job_end() {
    local job=$1 timeout=$2 deadline
    deadline=$((SECONDS + timeout))
    while ((SECONDS < deadline)); do
        [[ -z $(squeue -h -j "$job" -t PD,R,CG,CF,S 2>/dev/null) ]] && return 0
        sleep 0.2
    done
    return 1
}

# State of job $1 as slurmctld still remembers it (MinJobAge).
job_state() {
    scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2
}

cmd_selftest() {
    [[ -n ${SLURM_CONF:-} ]] || { echo "selftest: run it via '$0 run $0 selftest'" >&2; exit 2; }
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-slurm-selftest.XXXXXX")
    # shellcheck disable=SC2064 # expand $dir now
    trap "rm -rf '$dir'" EXIT
    cd "$dir"

    # munge client round trip on the cluster's socket.
    local sock
    sock=$(sed -n 's/^AuthInfo=socket=//p' "$SLURM_CONF")
    if munge -n -S "$sock" | unmunge -S "$sock" >/dev/null; then
        pass "munge/unmunge via $sock"
    else
        fail "munge/unmunge via $sock"
    fi

    # 1. Two-task array: both tasks run and write their outputs.
    local t0=$SECONDS array
    # shellcheck disable=SC2016 # expanded by the job, not here
    array=$(sbatch --parsable --array=0-1 -o /dev/null \
        --wrap 'echo task $SLURM_ARRAY_TASK_ID > out-$SLURM_ARRAY_TASK_ID') ||
        { fail "sbatch of the array job"; echo "FAIL: selftest"; return 1; }
    array=${array%%;*} # --parsable prints "id[;cluster]"
    echo "array job $array: $(squeue -h -j "$array" -o '%i %t %r' | tr '\n' '|')"
    if wait_for_job_end "$array" 60; then
        pass "array job $array finished in $((SECONDS - t0)) s"
    else
        fail "array job $array still queued after 60 s: $(squeue -h -j "$array" -o '%i %t %r' | tr '\n' ' ')"
    fi
    local i
    for i in 0 1; do
        if [[ $(cat "out-$i" 2>/dev/null) == "task $i" ]]; then
            pass "array task $i wrote out-$i"
        else
            fail "array task $i: out-$i missing or wrong"
        fi
        local state
        state=$(job_state "${array}_$i")
        if [[ $state == COMPLETED ]]; then
            pass "array task ${array}_$i state COMPLETED"
        else
            fail "array task ${array}_$i state '${state}'"
        fi
    done

    # 2. A long job, cancelled: its state must read CANCELLED.
    local job
    job=$(sbatch --parsable -o /dev/null --wrap 'sleep 100') ||
        { fail "sbatch of the sleep job"; echo "FAIL: selftest"; return 1; }
    job=${job%%;*}
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)) && [[ $(job_state "$job") != RUNNING ]]; do sleep 0.2; done
    scancel "$job"
    wait_for_job_end "$job" 30 || fail "job $job still queued 30 s after scancel"
    # sacct needs slurmdbd; without it, it says so and slurmctld's memory
    # (scontrol show job, kept MinJobAge seconds) is the source of truth.
    local sacct_out state
    if sacct_out=$(sacct -j "$job" -n -P -o JobID,State,Reason 2>&1) && [[ $sacct_out == *CANCELLED* ]]; then
        pass "sacct reports job $job CANCELLED ($sacct_out)"
    else
        state=$(job_state "$job")
        echo "note: sacct unavailable: ${sacct_out//$'\n'/ }"
        if [[ $state == CANCELLED ]]; then
            pass "scontrol reports job $job CANCELLED"
        else
            fail "job $job state '$state' after scancel"
        fi
    fi

    # The jobcomp/filetxt log keeps finished jobs beyond MinJobAge.
    if grep -qs "^JobId=$job .*JobState=CANCELLED" "${MIXLAB_SLURM_JOBCOMP:-/nonexistent}"; then
        pass "jobcomp log records job $job CANCELLED"
    else
        fail "jobcomp log ${MIXLAB_SLURM_JOBCOMP:-(unset)} has no CANCELLED record for job $job"
    fi

    if ((FAILURES == 0)); then
        echo "PASS: selftest"
        return 0
    fi
    echo "FAIL: selftest ($FAILURES failures)"
    return 1
}

case ${1:-} in
run) shift; cmd_run "$@" ;;
selftest) shift; cmd_selftest "$@" ;;
*)
    echo "usage: $0 run COMMAND [ARGS...] | $0 selftest" >&2
    exit 2
    ;;
esac
