#!/bin/sh
# Fashion-MNIST test accuracy of MixLab beside Keras 3 on TensorFlow's CPU build (issue 27):
# resnet20 with its input made 28x28x1, the same batch (128), optimizer (Adam, Keras's
# defaults), epochs (2), seeds and thread count, in float32 and mixed_bfloat16. Both read Debian's
# dataset-fashion-mnist; each draws its own weights and shuffles with its own generator, and
# after 2 epochs a BatchNormalization network's test accuracy swings by several points from seed
# to seed (0.82 to 0.87 for MixLab's seeds 42 and 1), so each side runs every seed and the
# medians compare. Keras comes from PyPI (tensorflow-cpu, pinned below) into a venv under
# ~/.cache/mixlab, never a dependency of MixLab. A figure, not a test (about 15 minutes per seed
# on 2 cores).
# Usage: scripts/accuracy-keras.sh [--threads N] [--epochs N] [--seeds 1,2,3] [--model NAME]
#        (after a release build)
set -eu
cd "$(dirname "$0")/.."
threads=2 epochs=2 model=resnet20 seeds=1,2,3
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
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
for seed in $(echo "$seeds" | tr ',' ' '); do
  for precision in float32 mixed_bfloat16; do
    "$cli" train "$tmp/model.json" --dataset fashion-mnist --precision "$precision" \
      --batch-size 128 --optimizer adam --epochs "$epochs" --threads "$threads" --seed "$seed" \
      --no-store --quiet --json > "$tmp/mixlab-$precision-$seed.json"
  done
  KERAS_BACKEND=tensorflow "$venv/bin/python" tests/bench/keras_accuracy.py --spec "$tmp/model.json" \
    --batch 128 --optimizer adam --epochs "$epochs" --threads "$threads" --seed "$seed" \
    2>/dev/null > "$tmp/keras-$seed.json"
done
python3 - "$tmp" "$seeds" <<'PY'
import json, pathlib, statistics, sys
tmp, seeds = pathlib.Path(sys.argv[1]), sys.argv[2].split(",")
print(f"{'model':<20} {'precision':<16} {'seed':>5} {'MixLab acc':>10} {'Keras acc':>10} {'MixLab s':>9} {'Keras s':>8}")
for precision in ("float32", "mixed_bfloat16"):
    ours, theirs = [], []
    for seed in seeds:
        m = json.loads((tmp / f"mixlab-{precision}-{seed}.json").read_text())
        k = {r["precision"]: r for r in json.loads((tmp / f"keras-{seed}.json").read_text())}[precision]
        ours.append(m["test_accuracy"])
        theirs.append(k["test_accuracy"])
        print(f"{k['model']:<20} {precision:<16} {seed:>5} {m['test_accuracy']:>10.4f} "
              f"{k['test_accuracy']:>10.4f} {m['wall_s']:>9.0f} {k['train_seconds']:>8.0f}")
    print(f"{k['model']:<20} {precision:<16} {'median':>5} {statistics.median(ours):>10.4f} "
          f"{statistics.median(theirs):>10.4f}")
print(f"({k['epochs']} epochs, batch {k['batch_size']}, {k['optimizer']}; Keras {k['keras']} on "
      f"TensorFlow {k['tensorflow']}, jit_compile off)")
PY
