#!/bin/sh
# scripts/bench.sh --doctor's table (called by it): mixlab-cli doctor --measure on this machine's
# CPU for the four built-in models, each at the batch and optimizer its users train it with.
# Usage: scripts/doctor-bench.sh CLI THREADS STEPS WARMUP
set -eu
cli=$1 threads=$2 steps=$3 warmup=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The CPU's roofs are measured again first, under the same conditions as the runs.
recalibrate=--recalibrate
for row in "fashion-mlp 32 adam" "fashion-cnn 32 adam" "cifar10-mlp 32 sgd" "cifar100-convnet 128 adam"; do
  # shellcheck disable=SC2086
  set -- $row
  "$cli" doctor "$1" --device cpu --threads "$threads" --batch-size "$2" --optimizer "$3" \
    --measure --no-store --steps "$steps" --warmup "$warmup" $recalibrate --json > "$tmp/$1.json"
  recalibrate=""
done
/usr/bin/python3 - "$tmp"/*.json <<'PY'
import json, sys
rows = [json.load(open(p)) for p in sys.argv[1:]]
order = ["fashion-mlp", "fashion-cnn", "cifar10-mlp", "cifar100-convnet"]
rows.sort(key=lambda d: order.index(d["model"]) if d["model"] in order else 99)
print(f"{'model':17} {'policy':15} {'batch':>5} {'opt':5} {'predicted ms':>12} {'measured ms':>11} "
      f"{'error':>7} {'bound ms':>9} {'measured/bound':>14}")
worst = 0.0
for d in rows:
    for policy in ("float32", d["mixed_policy"]):
        p = d["predicted_step_ms"][policy]
        m = d["measured_step_ms"][policy]
        b = d["roofline_bound_ms"][policy]
        err = (p - m) / m
        worst = max(worst, abs(err))
        print(f"{d['model']:17} {policy:15} {d['batch_size']:>5} {d['optimizer']:5} {p:>12.2f} "
              f"{m:>11.2f} {err:>+7.0%} {b:>9.2f} {m / b:>13.2f}x")
dev = rows[0]["device"]
bf16 = dev["peak_tflops"].get("bfloat16")
print(f"device: {dev['name']}, {dev['threads']} threads, isa {dev['isa']}; roofs measured: "
      f"float32 matmul {dev['peak_tflops']['float32'] * 1e3:.0f} GFLOP/s, "
      + (f"bf16 matmul {bf16 * 1e3:.0f} GFLOP/s, " if bf16 else "")
      + f"stream {dev['memory_bandwidth_gb_s']:.1f} GB/s; worst prediction error {worst:.0%} "
      f"(target: within 35%)")
for d in rows:
    print(f"{d['model']}: {d['verdict']}")
PY
