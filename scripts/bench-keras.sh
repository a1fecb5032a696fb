#!/bin/sh
# MixLab's step times beside Keras 3 on TensorFlow's CPU build (issue 27): resnet20 (or the
# models given: tiny-gpt, issue 29) on synthetic data shaped as the model's input, at the bench
# row's batch and optimizer (resnet20 128 and SGD, tiny-gpt 32 and Adam), the same thread count,
# in float32 and mixed_bfloat16, in one run. Prints each side's median step and the ratio.
# Keras comes from PyPI (tensorflow-cpu, pinned below) into a venv under ~/.cache/mixlab, never a
# dependency of MixLab. A figure, not a test.
# Usage: scripts/bench-keras.sh [--threads N] [--steps N] [--warmup N] [--models a,b]
#        (after a release build)
set -eu
cd "$(dirname "$0")/.."
threads=2 steps=30 warmup=5 models=resnet20
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "bench-keras.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
cli=build/release/app/mixlab-cli
[ -x "$cli" ] || { echo "bench-keras.sh: build first: cmake --workflow --preset release" >&2; exit 2; }
requirement="tensorflow-cpu==2.21.0"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/mixlab/tf-venv-$(echo "$requirement" | sha256sum | cut -c1-12)"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow, keras' 2>/dev/null; then
  echo "bench-keras.sh: making $venv ($requirement from PyPI)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "$requirement"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" bench --json --models "$models" --threads "$threads" --steps "$steps" --warmup "$warmup" \
  --precisions float32,mixed_bfloat16 > "$tmp/mixlab.json"
for model in $(echo "$models" | tr ',' ' '); do
  "$cli" export "$model" --to mixlab -o "$tmp/$model.json" 2>/dev/null
  # The bench row's batch and optimizer, as MixLab ran them.
  set -- $(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1])) if r["model"]==sys.argv[2]][0]; print(r["batch_size"], r["optimizer"])' "$tmp/mixlab.json" "$model")
  KERAS_BACKEND=tensorflow "$venv/bin/python" tests/bench/keras_peer.py --spec "$tmp/$model.json" \
    --batch "$1" --optimizer "$2" --threads "$threads" --steps "$steps" --warmup "$warmup" \
    2>/dev/null > "$tmp/keras-$model.json"
done
python3 - "$tmp" <<'PY'
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])
mixlab = {(r["model"], r["precision"]): r for r in json.loads((tmp / "mixlab.json").read_text())}
print(f"{'model':<12} {'precision':<16} {'batch':>5} {'MixLab ms':>10} {'Keras ms':>10} {'MixLab/Keras':>13}")
for path in sorted(tmp.glob("keras-*.json")):
    for k in json.loads(path.read_text()):
        m = mixlab[(k["model"], k["precision"])]
        print(f"{k['model']:<12} {k['precision']:<16} {k['batch_size']:>5} {m['median_step_ms']:>10.2f} "
              f"{k['median_step_ms']:>10.2f} {m['median_step_ms'] / k['median_step_ms']:>12.2f}x")
    print(f"(Keras {k['keras']} on TensorFlow {k['tensorflow']}, jit_compile off; MixLab's batch and "
          f"optimizer as the bench row's)")
PY
