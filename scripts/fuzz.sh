#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang under ASan + UBSan in build/fuzz and runs each:
# first every input under tests/fuzz/regressions/<target>/ once, then SECONDS of fuzzing on a
# copy of fuzz/corpus/<target>/ (the corpus in the tree is never changed). Prints, per target,
# the executions, the corpus size and the result; exits 1 naming the target and the input when
# any target crashes, leaks or hangs (-timeout=10) or runs out of memory (-rss_limit_mb=2048).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (SECONDS per target, default 60; all targets)
#   MIXLAB_FUZZ_JOBS   build jobs (default: all cores)
#   MIXLAB_FUZZ_PARALLEL  targets fuzzed at once (default: all cores), each SECONDS long
#   MIXLAB_FUZZ_ARGS   more libFuzzer options, e.g. "-fork=2 -ignore_crashes=1" to go on after
#                      a crash (each crash-* file under build/fuzz/work/<target>/ is a finding)
# Needs clang 14 and its sanitizer runtimes (installed with apt-get when missing, as root) and
# the engine's build dependencies without Qt (scripts/install-deps.sh).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=${1:-60}
case "$seconds" in
  ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
all_targets="model_spec idx cifar csv_field run_store keras_json keras_archive sweep_file"
all_targets="$all_targets gpu_profiles calibration_cache"
targets=${*:-$all_targets}
for t in $targets; do
  case " $all_targets " in
    *" $t "*) ;;
    *) echo "fuzz.sh: unknown target '$t' (targets: $all_targets)" >&2; exit 2 ;;
  esac
done

# --- what the build needs: clang 14 with its sanitizer and libFuzzer runtimes, OpenMP for clang
# and llvm-symbolizer (scripts/install-deps.sh --fuzz names them), with the engine's own.
"$root/scripts/install-deps.sh" --fuzz

# --- build: only the fuzzers and the libraries they link.
build=build/fuzz
jobs=${MIXLAB_FUZZ_JOBS:-$(nproc)}
mkdir -p "$build"
# -Wno-pass-failed: at -O1 clang does not vectorise the CPU loops marked `omp simd` and said so
# ~1,900 times, burying the warnings that matter; vectorisation is no concern of a fuzz build.
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only -Wno-pass-failed" \
  -DMIXLAB_FUZZ=ON -DMIXLAB_SANITIZE=ON -DMIXLAB_WERROR=OFF \
  -DMIXLAB_GUI=OFF -DMIXLAB_CUDA=OFF -DMIXLAB_BUILD_TESTS=OFF >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  echo "fuzz.sh: configuring $build failed" >&2
  exit 1
}
build_start=$(date +%s)
cmake --build "$build" --target mixlab_fuzz -j "$jobs"
echo "fuzz.sh: built the fuzzers in $(( $(date +%s) - build_start )) s"

export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-14}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
common="-timeout=10 -rss_limit_mb=2048"
failures=""
summary=""

# Prints a libFuzzer log's error lines and the first frames of its stack that are MixLab's (their
# function names shortened, their file:line kept).
show_error() {
  pattern='==FUZZ FINDING==|==ERROR|^SUMMARY|runtime error|ALARM|out-of-memory|Deadly|leak'
  if grep -qE "$pattern" "$1"; then
    grep -m 6 -E "$pattern" "$1" | cut -c1-300 >&2
    grep -E "^ +#[0-9]+ .* $root/[^ ]+:[0-9]+(:[0-9]+)?\$" "$1" | grep -vF " $root/build/" | head -n 8 |
      sed -E 's/^( +#[0-9]+) 0x[0-9a-f]+ in (.{0,60}).* ([^ ]+:[0-9]+(:[0-9]+)?)$/\1 \2... \3/' >&2
  else
    tail -n 20 "$1" >&2
  fi
}

# One target: its regression inputs, then its fuzzing. It runs beside others (MIXLAB_FUZZ_PARALLEL),
# so what the summary needs goes to files in its work folder: `result` (its summary line) and
# `failures` (what failed, if anything).
fuzz_target() {
  t=$1
  bin="$build/fuzz/${t}_fuzz"
  work="$build/work/$t"
  failures=""
  result="ok"

  # 1. The regression inputs, one process each, so that a failure names its file. (They are not
  # added to the corpus: a long one would raise libFuzzer's -max_len for the whole run.)
  regressions=0
  if [ -d "tests/fuzz/regressions/$t" ]; then
    for f in "tests/fuzz/regressions/$t"/*; do
      [ -f "$f" ] || continue
      case "$(basename "$f")" in README*) continue ;; esac
      regressions=$((regressions + 1))
      # shellcheck disable=SC2086
      if ! "$bin" $common "$f" >"$work/replay.log" 2>&1; then
        echo "fuzz.sh: $t: regression input $f FAILS:" >&2
        show_error "$work/replay.log"
        cp "$work/replay.log" "$work/replay-$(basename "$f").log"
        failures="$failures\n  $t: regression input $f (log: $work/replay-$(basename "$f").log)"
        result="FAILED (regression $f)"
      fi
    done
  fi

  # 2. Fuzzing on a copy of the corpus.
  cp -r "fuzz/corpus/$t/." "$work/corpus/" 2>/dev/null || true
  dict=""
  [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
  echo "fuzz.sh: $t: replayed $regressions regression input(s); fuzzing for $seconds s"
  rc=0
  fuzz_start=$(date +%s)
  # shellcheck disable=SC2086
  "$bin" $common -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" $dict ${MIXLAB_FUZZ_ARGS:-} "$work/corpus" \
    >"$work/fuzz.log" 2>&1 || rc=$?
  fuzz_s=$(( $(date +%s) - fuzz_start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
  if [ -z "$execs" ]; then  # -fork mode prints no final stats: the last status line
    execs=$(grep -oE '^#[0-9]+' "$work/fuzz.log" | tail -n 1 | tr -d '#')
  fi
  artifacts=$(find "$work/artifacts" -type f | sort)
  # A slow unit (libFuzzer's report, over 10 s) that replays in a second or two was a stall of
  # the machine (another process, a VM's stolen time), not slow code: said, not counted. One did
  # on CI's 2-core VM: csv_field's unit took 21 s once and replays in 0.1 s.
  for a in $artifacts; do
    case "$(basename "$a")" in
      slow-unit-*)
        replay_start=$(date +%s)
        # shellcheck disable=SC2086
        if "$bin" $common "$a" >/dev/null 2>&1 && [ $(( $(date +%s) - replay_start )) -le 2 ]; then
          echo "fuzz.sh: $t: $(basename "$a") replays in $(( $(date +%s) - replay_start )) s: a stall of the machine, not counted" >&2
          rm -f "$a"
        fi ;;
    esac
  done
  artifacts=$(find "$work/artifacts" -type f | sort)
  if [ "$rc" -ne 0 ] || [ -n "$artifacts" ]; then
    kinds=$(for a in $artifacts; do basename "$a" | cut -d- -f1; done | sort -u | tr '\n' ' ')
    kinds=${kinds% }
    echo "fuzz.sh: $t: fuzzing FAILED (${kinds:-exit $rc}); input(s):" >&2
    for a in $artifacts; do echo "  $a" >&2; done
    show_error "$work/fuzz.log"
    failures="$failures\n  $t: ${kinds:-exit $rc} ${artifacts:-(no input saved)} (log: $work/fuzz.log)"
    if [ "$result" = "ok" ]; then result="FAILED (${kinds:-exit $rc})"; else result="$result, FAILED (${kinds:-exit $rc})"; fi
  fi
  corpus=$(find "$work/corpus" -type f | wc -l)
  line=$(printf '%-11s %4s s  executions %10s  corpus %5s files  %s' "$t" "$fuzz_s" "${execs:-0}" \
    "$corpus" "$result")
  echo "fuzz.sh: $line"
  printf '%s' "$line" >"$work/result"
  printf '%s' "$failures" >"$work/failures"
}

# The targets side by side, as many at once as the machine has cores (each fuzzer is one
# process on one core), each for the same SECONDS: a 2-core CI machine fuzzes every target as
# long in half the time.
parallel=${MIXLAB_FUZZ_PARALLEL:-$(nproc)}
case "$parallel" in
  ''|*[!0-9]*|0) echo "fuzz.sh: MIXLAB_FUZZ_PARALLEL must be a positive number, got '$parallel'" >&2; exit 2 ;;
esac
running=0
for t in $targets; do
  rm -rf "$build/work/$t"
  mkdir -p "$build/work/$t/corpus" "$build/work/$t/artifacts"
  fuzz_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
for t in $targets; do
  [ -f "$build/work/$t/result" ] || {
    echo "fuzz.sh: $t: the target's run ended without a result" >&2
    failures="$failures\n  $t: ended without a result (log: $build/work/$t/fuzz.log)"
    continue
  }
  summary="$summary\n  $(cat "$build/work/$t/result")"
  failures="$failures$(cat "$build/work/$t/failures")"
done

printf 'fuzz.sh: summary (%s s per target):%b\n' "$seconds" "$summary"
if [ -n "$failures" ]; then
  printf 'fuzz.sh: FAILED:%b\n' "$failures" >&2
  echo "fuzz.sh: minimise an input with $build/fuzz/<target>_fuzz -minimize_crash=1 -runs=100000 INPUT," >&2
  echo "         and keep it under tests/fuzz/regressions/<target>/ once its cause is known" >&2
  exit 1
fi
