#!/bin/sh
# Fashion-MNIST test accuracy of MixLab beside Keras 3 on TensorFlow's CPU build (issue 27):
# resnet20 with its input made 28x28x1, the same batch (128), optimizer (Adam, Keras's
# defaults), epochs (2), seed and thread count, in float32 and mixed_bfloat16. Both read Debian's
# dataset-fashion-mnist; each shuffles with its own generator, so the figures match within
# run-to-run spread, not to the digit. Keras comes from PyPI (tensorflow-cpu, pinned below) into
# a venv under ~/.cache/mixlab, never a dependency of MixLab. A figure, not a test (about 15
# minutes on 2 cores).
# Usage: scripts/accuracy-keras.sh [--threads N] [--epochs N] [--model NAME]   (after a release build)
set -eu
cd "$(dirname "$0")/.."
threads=2 epochs=2 model=resnet20
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) echo "accuracy-keras.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
cli=build/release/app/mixlab-cli
[ -x "$cli" ] || { echo "accuracy-keras.sh: build first: cmake --workflow --preset release" >&2; exit 2; }
requirement="tensorflow-cpu==2.21.0"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/mixlab/tf-venv-$(echo "$requirement" | sha256sum | cut -c1-12)"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow, keras' 2>/dev/null; then
  echo "accuracy-keras.sh: making $venv ($requirement from PyPI)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "$requirement"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" export "$model" --to mixlab -o "$tmp/built-in.json" 2>/dev/null
python3 - "$tmp/built-in.json" "$tmp/model.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["input"]["shape"] = [28, 28, 1]
spec["name"] += "-28x28x1"
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
for precision in float32 mixed_bfloat16; do
  "$cli" train "$tmp/model.json" --dataset fashion-mnist --precision "$precision" \
    --batch-size 128 --optimizer adam --epochs "$epochs" --threads "$threads" --seed 42 \
    --no-store --quiet --json > "$tmp/mixlab-$precision.json"
done
KERAS_BACKEND=tensorflow "$venv/bin/python" tests/bench/keras_accuracy.py --spec "$tmp/model.json" \
  --batch 128 --optimizer adam --epochs "$epochs" --threads "$threads" --seed 42 \
  2>/dev/null > "$tmp/keras.json"
python3 - "$tmp" <<'PY'
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])
keras = {r["precision"]: r for r in json.loads((tmp / "keras.json").read_text())}
print(f"{'model':<20} {'precision':<16} {'MixLab acc':>10} {'Keras acc':>10} {'MixLab s':>9} {'Keras s':>8}")
for precision in ("float32", "mixed_bfloat16"):
    m = json.loads((tmp / f"mixlab-{precision}.json").read_text())
    k = keras[precision]
    print(f"{k['model']:<20} {precision:<16} {m['test_accuracy']:>10.4f} {k['test_accuracy']:>10.4f} "
          f"{m['wall_s']:>9.0f} {k['train_seconds']:>8.0f}")
print(f"({k['epochs']} epochs, batch {k['batch_size']}, {k['optimizer']}; Keras {k['keras']} on "
      f"TensorFlow {k['tensorflow']}, jit_compile off)")
PY
