#!/usr/bin/env bash
# The one GPU check of the CUDA backend (issue 5): builds for this machine's GPU (or takes a
# prebuilt build), runs the GPU tests (ctest -L gpu), MixLab's GPU bench suite and its PyTorch
# peer, and prints last a table of MixLab's and PyTorch's median step times against the targets.
#
#   tests/gpu/check.sh                               build into build/gpu-check, then check
#   MIXLAB_BUILD_DIR=build/release tests/gpu/check.sh   use a build made elsewhere
#
# MIXLAB_BUILD_DIR: a machine lent for GPU checks has the NVIDIA driver and PyTorch but not the
# oneDNN, Qt or CUDA toolkit development packages, so it cannot build MixLab. Build on a machine
# that has them, for the GPU's architecture (-DMIXLAB_CUDA_ARCHITECTURES=90 for an H100/H200),
# and bring the build folder with the sources; ideally build it at the absolute path it will
# have there. When it moved, this script rewrites the paths in its ctest files; the engine
# must then still find libmixlab-cuda.so (MIXLAB_CUDA_BACKEND below names it), and a
# GPU test that skips on a machine with a GPU counts as a failure, so a plugin that does not
# load cannot pass as "skipped".
#
# Environment: MIXLAB_BUILD_DIR (above); MIXLAB_CHECK_OUT, a folder for the logs and JSON files
# (default: a new temporary folder, kept); PYTHON (default python3).
# Exit status: 0 every test and target passes, or there is no GPU (the build is checked and the
# reason printed); 1 a test fails or skips, a run fails, or a target is missed; 2 the build or
# the configuration failed.
# Time: about 6 minutes on one H200 after the build (each phase has its own timeout).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$root" || exit 2
python=${PYTHON:-python3}
out=${MIXLAB_CHECK_OUT:-$(mktemp -d -t mixlab-gpu-check.XXXXXX)}
mkdir -p "$out"
say() { printf '== %s\n' "$*"; }

gpu_cc=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 |
           tr -d ' .\r')
fi
if [[ -n "$gpu_cc" ]]; then
  say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
             head -n 1), compute capability ${gpu_cc}"
fi

# --- the build ---
if [[ -n "${MIXLAB_BUILD_DIR:-}" ]]; then
  build=$(cd "$MIXLAB_BUILD_DIR" 2>/dev/null && pwd -P) || {
    echo "check.sh: MIXLAB_BUILD_DIR=$MIXLAB_BUILD_DIR is not a folder" >&2
    exit 2
  }
  say "prebuilt build: $build"
  # A build folder that moved: point its ctest files at where the build and sources are now.
  old_build=$(sed -n 's/^MixLab_BINARY_DIR:STATIC=//p' "$build/CMakeCache.txt" 2>/dev/null)
  old_source=$(sed -n 's/^MixLab_SOURCE_DIR:STATIC=//p' "$build/CMakeCache.txt" 2>/dev/null)
  if [[ -n "$old_build" && "$old_build" != "$build" ]]; then
    say "the build moved from $old_build: rewriting its ctest files"
    find "$build" \( -name CTestTestfile.cmake -o -name '*_tests.cmake' -o -name '*_include.cmake' \) \
      -print0 | xargs -0 -r sed -i -e "s#${old_build}#${build}#g" -e "s#${old_source}#${root}#g"
  fi
else
  build="$root/build/gpu-check"
  arch_args=()
  [[ -n "$gpu_cc" ]] && arch_args=("-DMIXLAB_CUDA_ARCHITECTURES=${gpu_cc}")
  say "configuring $build (Release, CUDA on, GUI off${gpu_cc:+, sm_${gpu_cc}})"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXLAB_CUDA=ON \
    -DMIXLAB_GUI=OFF -DMIXLAB_WERROR=ON "${arch_args[@]}" > "$out/configure.log" 2>&1 || {
    tail -n 40 "$out/configure.log"
    echo "check.sh: configuring failed (log: $out/configure.log)" >&2
    exit 2
  }
  say "building (log: $out/build.log)"
  cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 || {
    grep -E -A5 'error|FAILED' "$out/build.log" | head -n 60
    echo "check.sh: the build failed (log: $out/build.log)" >&2
    exit 2
  }
fi
cli="$build/app/mixlab-cli"
[[ -x "$cli" ]] || { echo "check.sh: no $cli in the build" >&2; exit 2; }

# --- libraries: the plugin's build folder, a bundle's carried libraries (tests/gpu/bundle.sh),
# and PyTorch's CUDA libraries (cuBLAS, cuDNN). MixLab's programs get them all; Python (the
# PyTorch peer) keeps its own environment, so that no carried library shadows one of its own.
nvidia_libs=$("$python" - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
dirs = sorted({d for base in nvidia.__path__ for d in glob.glob(os.path.join(base, "*", "lib"))
               if glob.glob(os.path.join(d, "lib*.so*"))})
print(":".join(dirs))
PY
)
mixlab_ld="$build/lib/mixlab"
[[ -d "$build/carry-lib" ]] && mixlab_ld="$mixlab_ld:$build/carry-lib"
[[ -n "$nvidia_libs" ]] && mixlab_ld="$mixlab_ld:$nvidia_libs"
[[ -n "${LD_LIBRARY_PATH:-}" ]] && mixlab_ld="$mixlab_ld:$LD_LIBRARY_PATH"
# The engine looks for its plugin beside the program or in the build folder it was built in; a
# build that moved (a bundle) has its test programs elsewhere, so the plugin is named outright.
plugin="$build/lib/mixlab/libmixlab-cuda.so"
[[ -f "$plugin" ]] || { echo "check.sh: no $plugin in the build (was CUDA found?)" >&2; exit 2; }
mx() { LD_LIBRARY_PATH="$mixlab_ld" MIXLAB_CUDA_BACKEND="$plugin" "$@"; }

# The programs must start here before anything else is worth running: a library missing or too
# old names itself now, not as a hundred failed tests. A libstdc++ older than the build's takes
# the bundle's own (carry-lib/compat).
if ! mx "$cli" --version > "$out/version.log" 2>&1; then
  if grep -q 'GLIBCXX_\|CXXABI_\|GCC_[0-9]' "$out/version.log" && [[ -d "$build/carry-lib/compat" ]]; then
    say "this machine's libstdc++ is older than the build's: taking carry-lib/compat"
    mixlab_ld="$build/carry-lib/compat:$mixlab_ld"
  fi
  if ! mx "$cli" --version > "$out/version.log" 2>&1; then
    cat "$out/version.log"
    echo "check.sh: $cli does not start here (LD_LIBRARY_PATH=$mixlab_ld);" \
         "a missing library is named above: bundle it (tests/gpu/bundle.sh) or install it" >&2
    exit 2
  fi
fi
say "LD_LIBRARY_PATH for MixLab's programs: $mixlab_ld"
cat "$out/version.log"

if [[ -z "$gpu_cc" ]]; then
  say "no NVIDIA GPU here (nvidia-smi missing or it found none): the build is done and starts, the"
  say "GPU tests skip (ctest -L gpu), and the bench needs a GPU; nothing more to check"
  exit 0
fi
mx "$cli" devices || true

failures=()

# --- the GPU tests ---
say "ctest -L gpu (log: $out/ctest.log)"
mx timeout 240 ctest --test-dir "$build" -L gpu -j 8 --timeout 200 --output-on-failure 2>&1 |
  tee "$out/ctest.log"
ctest_rc=${PIPESTATUS[0]}
# CMake 3.25 prints "N% tests passed, K tests failed out of M", the GPU machine's newer one
# "100% tests passed out of M" when none failed.
ran=$(sed -n 's/^[0-9]*% tests passed.* out of \([0-9]*\)$/\1/p' "$out/ctest.log" | tail -n 1)
skipped=$(grep -c '(Skipped)' "$out/ctest.log" || true)
if [[ $ctest_rc -ne 0 ]]; then
  failures+=("ctest -L gpu failed (exit $ctest_rc)")
elif [[ -z "$ran" || "$ran" -eq 0 ]]; then
  failures+=("ctest -L gpu ran no tests")
elif [[ "$skipped" -gt 0 ]]; then
  failures+=("$skipped GPU tests skipped on a machine with a GPU (why: $out/skip-reason.log)")
  # ctest shows no output of a skipped test: run one test of each suite again, verbosely, and
  # print their reasons (a plugin or library that did not load, or something else).
  names=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$out/ctest.log" |
            awk -F. '!seen[$2]++')
  regex=$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<< "$names" | paste -sd '|')
  mx ctest --test-dir "$build" -R "^($regex)\$" -V > "$out/skip-reason.log" 2>&1 || true
  say "why they skipped (one test of each of $(wc -l <<< "$names") suites; count, reason):"
  sed -n 's/^[0-9]*: //p' "$out/skip-reason.log" | grep -A 1 ': Skipped$' |
    grep -v ': Skipped$' | grep -v '^--$' | sort | uniq -c
fi

# Without a usable CUDA backend the benches and the doctor would train on the CPU instead: that
# measures nothing of the GPU and spends the machine's minutes.
if ! grep -Eq '^ *cuda +available' "$out/version.log"; then
  failures+=("the CUDA backend is unusable here: $(sed -n 's/^ *cuda *unavailable: //p' "$out/version.log")")
  for f in "${failures[@]}"; do echo "FAIL: $f"; done
  say "no benches and no doctor: without the CUDA backend they would measure the CPU"
  exit 1
fi

# --- the benches ---
say "mixlab-cli bench --suite gpu --device cuda (log: $out/bench.log)"
if ! mx timeout 150 "$cli" bench --suite gpu --device cuda --json > "$out/mixlab.json" \
    2> "$out/bench.log"; then
  cat "$out/bench.log"
  failures+=("mixlab-cli bench --suite gpu failed")
fi
say "tests/bench/pytorch_peer.py --device cuda (log: $out/peer.log)"
if ! timeout 150 "$python" "$root/tests/bench/pytorch_peer.py" --device cuda > "$out/torch.json" \
    2> "$out/peer.log"; then
  tail -n 20 "$out/peer.log"
  failures+=("the PyTorch peer failed (is PyTorch with CUDA installed for $python?)")
fi

# --- the doctor on this GPU: predicted (from its measured roofs) against measured, per model ---
# (The first call calibrates the GPU through cuBLASLt and caches it: gpu.GpuCalibration above
# checks that calibration against the published profile.)
say "mixlab-cli doctor --device cuda --measure, the four built-in models (log: $out/doctor.log)"
doctor_ok=1
for row in "fashion-mlp 32 adam" "fashion-cnn 32 adam" "cifar10-mlp 32 sgd" \
           "cifar100-convnet 1020 adam" "resnet20 128 sgd"; do
  read -r model batch opt <<< "$row"
  if ! mx timeout 120 "$cli" doctor "$model" --device cuda --batch-size "$batch" --optimizer "$opt" \
      --measure --no-store --json > "$out/doctor-$model.json" 2>> "$out/doctor.log"; then
    doctor_ok=0
    failures+=("mixlab-cli doctor $model --device cuda --measure failed")
  fi
done
if [[ $doctor_ok -eq 1 ]]; then
  "$python" - "$out"/doctor-*.json <<'PY'
import json, sys
dev = json.load(open(sys.argv[1]))["device"]
peaks = ", ".join(f"{k} {v:.1f}" for k, v in dev["peak_tflops"].items() if v)
how = "measured" if dev["measured"] else "PUBLISHED (the calibration failed)"
print(f"{dev['name']}: roofs {how}: "
      f"TFLOP/s {peaks}; {dev['memory_bandwidth_gb_s']:.0f} GB/s; "
      f"host link {dev['host_link_gb_s']:.1f} GB/s; a call {dev['launch_overhead_us']:.1f} us; "
      f"a misaligned 16-bit matmul (K = 4095) at {dev['misaligned_matmul_efficiency']:.0%} of the "
      f"aligned rate ({dev['sources'].get('misaligned_matmul_efficiency', '?')})")
print(f"{'model':17} {'policy':15} {'batch':>5} {'predicted ms':>12} {'measured ms':>11} {'error':>7}")
for path in sys.argv[1:]:
    d = json.load(open(path))
    for policy in ("float32", d["mixed_policy"]):
        p, m = d["predicted_step_ms"][policy], d["measured_step_ms"][policy]
        print(f"{d['model']:17} {policy:15} {d['batch_size']:>5} {p:>12.3f} {m:>11.3f} {(p - m) / m:>+7.0%}")
    print(f"  verdict: {d['verdict']}")
PY
fi

# --- the doctor's held-out zoo on this GPU (issue 28): predicted (each layer timed here) against
# measured, per model and policy, and the error summary ---
if [[ $doctor_ok -eq 1 ]]; then
  say "scripts/doctor-zoo.py run --device cuda: the held-out half (log: $out/zoo.log)"
  if ! timeout 300 "$python" "$root/scripts/doctor-zoo.py" run "$cli" --device cuda \
      --half held-out --steps 20 --warmup 5 > "$out/zoo.txt" 2> "$out/zoo.log"; then
    failures+=("scripts/doctor-zoo.py run --device cuda failed (see $out/zoo.log)")
  fi
  cat "$out/zoo.txt"
fi

# --- scaling (issue 28, section 2): resnet20's layers timed on this GPU, scaled to published
# profiles; to this GPU's own profile the scaled step should land near the measured one ---
if [[ $doctor_ok -eq 1 ]]; then
  say "mixlab-cli doctor resnet20 --profile P --from cuda: scaled predictions"
  for target in "H200" "H100 SXM" "A100 80GB" "RTX 4090"; do
    if ! mx timeout 120 "$cli" doctor resnet20 --profile "$target" --from cuda --batch-size 128 \
        --optimizer sgd --json > "$out/scaled-${target// /-}.json" 2>> "$out/doctor.log"; then
      failures+=("mixlab-cli doctor resnet20 --profile '$target' --from cuda failed")
    fi
  done
  "$python" - "$out/doctor-resnet20.json" "$out"/scaled-*.json <<'PY'
import json, sys
measured = json.load(open(sys.argv[1]))
print(f"measured here: {measured['device']['name']}: "
      + ", ".join(f"{p} {v:.2f} ms" for p, v in measured["measured_step_ms"].items()))
for path in sys.argv[2:]:
    d = json.load(open(path))
    policy = d["mixed_policy"]
    sources = [l["predicted"][policy]["source"] for l in d["layers"]]
    print(f"  -> {d['device']['name']:10} predicted float32 {d['predicted_step_ms']['float32']:.2f} ms, "
          f"{policy} {d['predicted_step_ms'][policy]:.2f} ms; layers scaled {sources.count('scaled')}, "
          f"modelled {sources.count('modelled')}")
PY
fi

for f in "${failures[@]}"; do echo "FAIL: $f"; done
say "MixLab vs PyTorch, median step ms after warm-up (files in $out)"
table_rc=1
if [[ -s "$out/mixlab.json" && -s "$out/torch.json" ]]; then
  "$python" "$root/tests/gpu/compare.py" "$out/mixlab.json" "$out/torch.json"
  table_rc=$?
else
  echo "no table: a bench gave no figures"
fi
[[ ${#failures[@]} -eq 0 && $table_rc -eq 0 ]] && exit 0
exit 1
