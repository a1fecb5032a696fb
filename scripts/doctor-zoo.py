#!/usr/bin/env python3
"""The doctor's zoo (issue 28): a seeded family of models it was not tuned on, and its error on
them, measured.

  scripts/doctor-zoo.py list [--count N]            the zoo, a line a model, with its half
  scripts/doctor-zoo.py write DIR [--count N]       each model as DIR/<name>.json
  scripts/doctor-zoo.py run CLI [--count N] [--half held-out|calibration|all]
                        [--steps N] [--warmup N] [--threads N] [--device cpu|cuda]
                        [--repeats N] [--roofline-only]
      mixlab-cli doctor --measure on this machine's CPU (or GPU) for each model of the half, then per
      model and policy the predicted step, the measured step and the error; the median and 90th
      percentile of the absolute errors; and the direction accuracy: the share of models where
      "mixed faster / slower / the same within 5%" was predicted right.

Model k (k = 0, 1, ...) is made from seed k alone; even seeds are the calibration half, odd ones
the held-out half, which nothing is tuned on. The families: MLPs of 1-6 Dense layers 10-4096
wide; CNNs with 1-32 input channels, 3-256 filters, kernels 1-7, strides 1-2, same or valid
padding and max, average or global pooling; residual blocks with BatchNormalization. Batches
1-512, cut down where a step would take more than a few hundred MFLOP per policy (so that the
zoo runs in minutes on two cores). Standard library only; figures, not a test.
"""
import argparse
import datetime
import json
import math
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile

# A step's forward FLOPs the zoo keeps under (mixlab-cli inspect's count times the batch): about
# 30 ms of float32 convolution on two cores.
MAX_STEP_FLOPS = 1.0e9
SAME_WITHIN = 0.05  # "the same speed": within 5%


def log_uniform(rng, low, high):
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def mlp(rng, k):
    features = log_uniform(rng, 16, 3072)
    layers = []
    for _ in range(rng.randint(1, 6)):
        layers.append({"type": "Dense", "units": log_uniform(rng, 10, 4096),
                       "activation": rng.choice(["relu", "tanh", "relu", "linear"])})
    layers.append({"type": "Dense", "units": 10, "activation": "softmax", "dtype": "float32"})
    return {"name": f"zoo-{k:02d}-mlp", "input": {"shape": [features]}, "layers": layers}


def cnn(rng, k):
    side = rng.choice([8, 12, 16, 24, 28, 32])
    channels = rng.choice([1, 2, 3, 3, 4, 8, 16, 32])
    layers = []
    size = side
    for _ in range(rng.randint(1, 3)):
        kernel = rng.choice([1, 3, 3, 5, 7])
        stride = rng.choice([1, 1, 2])
        padding = rng.choice(["same", "valid"])
        out = math.ceil(size / stride) if padding == "same" else (size - kernel) // stride + 1
        if out < 2:
            break
        layers.append({"type": "Conv2D", "filters": log_uniform(rng, 3, 256), "kernel_size": kernel,
                       "strides": stride, "padding": padding, "activation": "relu"})
        size = out
        if size >= 4 and rng.random() < 0.5:
            kind = rng.choice(["MaxPooling2D", "AveragePooling2D"])
            pool = rng.choice([2, 3])
            layers.append({"type": kind, "pool_size": pool, "strides": 2})
            size = (size - pool) // 2 + 1
    if not layers:
        layers.append({"type": "Conv2D", "filters": 8, "kernel_size": 1, "activation": "relu"})
    if rng.random() < 0.4:
        layers.append({"type": "GlobalAveragePooling2D"})
    else:
        layers.append({"type": "Flatten"})
    layers.append({"type": "Dense", "units": 10, "activation": "softmax", "dtype": "float32"})
    return {"name": f"zoo-{k:02d}-cnn", "input": {"shape": [side, side, channels]}, "layers": layers}


def residual(rng, k):
    side = rng.choice([8, 16, 32])
    filters = rng.choice([8, 16, 32, 64])
    layers = [{"type": "Conv2D", "filters": filters, "kernel_size": 3, "padding": "same",
               "use_bias": False, "name": "stem"},
              {"type": "BatchNormalization"},
              {"type": "Activation", "activation": "relu", "name": "b0"}]
    for b in range(1, rng.randint(1, 3) + 1):
        layers += [{"type": "Conv2D", "filters": filters, "kernel_size": 3, "padding": "same",
                    "use_bias": False, "name": f"b{b}_c1", "inputs": [f"b{b - 1}"]},
                   {"type": "BatchNormalization"},
                   {"type": "Activation", "activation": "relu"},
                   {"type": "Conv2D", "filters": filters, "kernel_size": 3, "padding": "same",
                    "use_bias": False},
                   {"type": "BatchNormalization", "name": f"b{b}_bn2"},
                   {"type": "Add", "inputs": [f"b{b}_bn2", f"b{b - 1}"]},
                   {"type": "Activation", "activation": "relu", "name": f"b{b}"}]
    layers += [{"type": "GlobalAveragePooling2D"},
               {"type": "Dense", "units": 10, "activation": "softmax", "dtype": "float32"}]
    return {"name": f"zoo-{k:02d}-resnet", "input": {"shape": [side, side, 3]}, "layers": layers}


def model(k):
    """Model k of the zoo, its batch and optimizer, from seed k alone."""
    rng = random.Random(1000 + k)
    pick = rng.random()
    family = mlp if pick < 0.35 else (cnn if pick < 0.8 else residual)
    spec = family(rng, k)
    # Pixels 0..255 scaled as users scale them (raw, a deep MLP's SGD run diverges).
    spec["layers"].insert(0, {"type": "Rescaling", "scale": 1 / 255})
    spec["loss"] = "sparse_categorical_crossentropy"
    return spec, log_uniform(rng, 1, 512), rng.choice(["sgd", "adam"])


def half(k):
    return "calibration" if k % 2 == 0 else "held-out"


def step_flops(cli, path, batch):
    info = json.loads(subprocess.run([cli, "inspect", str(path), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    return info["flops_total"] * batch  # forward, per sample


def zoo(count):
    return [(k,) + model(k) for k in range(count)]


def write(directory, count):
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, spec, batch, optimizer in zoo(count):
        path = directory / f"{spec['name']}.json"
        path.write_text(json.dumps(spec, indent=1))
        paths.append((k, path, batch, optimizer))
    return paths


def direction(speedup):
    if speedup > 1 + SAME_WITHIN:
        return "faster"
    if speedup < 1 - SAME_WITHIN:
        return "slower"
    return "same"


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def keep_summary(device, kind, mode, models, errors, right):
    """The held-out half's figures, for the doctor's confidence line (engine/doctor/confidence.h):
    ${XDG_CACHE_HOME:-~/.cache}/mixlab/doctor-zoo.json, the entry of this device and mode
    replaced."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = pathlib.Path(base) / "mixlab" / "doctor-zoo.json"
    entries = []
    try:
        entries = json.loads(path.read_text()) if path.is_file() else []
        if not isinstance(entries, list):
            entries = []
    except (OSError, ValueError):
        entries = []
    entries = [e for e in entries if not (isinstance(e, dict) and e.get("device") == device
                                          and e.get("kind") == kind and e.get("mode") == mode)]
    entries.append({"kind": kind, "device": device, "mode": mode, "models": models,
                    "median_error": statistics.median(errors),
                    "p90_error": percentile(errors, 0.9), "direction_right": right,
                    "date": datetime.date.today().isoformat()})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + f".tmp-{os.getpid()}")
    temporary.write_text(json.dumps(entries, indent=2) + "\n")
    os.replace(temporary, path)
    return path


def run(args):
    rows, errors, right, unstable = [], [], 0, 0
    device = kind = None
    with tempfile.TemporaryDirectory() as tmp:
        for k, path, batch, optimizer in write(pathlib.Path(tmp), args.count):
            if args.half != "all" and half(k) != args.half:
                continue
            # Cut the batch down until a step stays under the zoo's FLOPs.
            while batch > 1 and step_flops(args.cli, path, batch) > MAX_STEP_FLOPS:
                batch //= 2
            # The prediction once (each layer timed afresh); the measurement `repeats` times,
            # its median per policy: a 2-core VM's steps drift by 10% between runs, enough to
            # flip a speed-up near 1 across the 5% band.
            measured_runs = []
            for repeat in range(args.repeats):
                done = subprocess.run(
                    [args.cli, "doctor", str(path), "--device", args.device,
                     "--threads", str(args.threads), "--batch-size", str(batch),
                     "--optimizer", optimizer, "--measure", "--no-store", "--steps", str(args.steps),
                     "--warmup", str(args.warmup), "--json"]
                    + (["--retime"] if repeat == 0 else [])
                    + (["--roofline-only"] if args.roofline_only else []),
                    capture_output=True, text=True)
                if done.returncode != 0:
                    print(f"{path.stem}: doctor failed: {done.stderr.strip()}", file=sys.stderr)
                    return 1
                run_json = json.loads(done.stdout)
                if repeat == 0:
                    d = run_json
                measured_runs.append(run_json["measured_step_ms"])
            device, kind = d["device"]["name"], d["device"]["kind"]
            mixed = d["mixed_policy"]
            measured_ms = {policy: statistics.median(r[policy] for r in measured_runs)
                           for policy in ("float32", mixed)}
            speedups = [r["float32"] / r[mixed] for r in measured_runs]
            if len({direction(x) for x in speedups}) > 1:
                unstable += 1
            for policy in ("float32", mixed):
                p = d["predicted_step_ms"][policy]
                m = measured_ms[policy]
                errors.append(abs(p - m) / m)
                rows.append((path.stem, policy, batch, optimizer, p, m, (p - m) / m))
            predicted = d["predicted_step_ms"]["float32"] / d["predicted_step_ms"][mixed]
            measured = measured_ms["float32"] / measured_ms[mixed]
            ok = direction(predicted) == direction(measured)
            right += ok
            rows.append((path.stem, "speed-up", batch, optimizer, predicted, measured,
                         "right" if ok else "WRONG"))
            spread = (f" (repeats {min(speedups):.2f}-{max(speedups):.2f}x)"
                      if len(speedups) > 1 else "")
            print(f"  {path.stem}: predicted {predicted:.2f}x, measured {measured:.2f}x{spread} "
                  f"({'right' if ok else 'wrong'} direction)", file=sys.stderr, flush=True)
    models = sum(1 for r in rows if r[1] == "speed-up")
    print(f"{'model':18} {'policy':15} {'batch':>5} {'opt':4} {'predicted':>10} {'measured':>10} "
          f"{'error':>7}")
    for name, policy, batch, optimizer, p, m, e in rows:
        if policy == "speed-up":
            print(f"{name:18} {'mixed speed-up':15} {batch:>5} {optimizer:4} {p:>9.2f}x {m:>9.2f}x "
                  f"{e:>7}")
        else:
            print(f"{name:18} {policy:15} {batch:>5} {optimizer:4} {p:>8.2f}ms {m:>8.2f}ms {e:>+7.0%}")
    print(f"{args.half} half, {models} models: median absolute error "
          f"{statistics.median(errors):.0%}, 90th percentile {percentile(errors, 0.9):.0%} "
          f"(targets 15% and 30%); direction right in {right} of {models} "
          f"({right / models:.0%}; target 90%)")
    if args.repeats > 1:
        print(f"measured {args.repeats} times a model, the median per policy; the measured "
              f"direction itself changed between repeats for {unstable} of {models} models")
    if args.half == "held-out" and models > 0:
        kept = keep_summary(device, kind, "roofline" if args.roofline_only else "timed", models,
                            errors, right)
        print(f"kept for the doctor's confidence line in {kept}", file=sys.stderr)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list")
    listing.add_argument("--count", type=int, default=60)
    writing = sub.add_parser("write")
    writing.add_argument("directory", type=pathlib.Path)
    writing.add_argument("--count", type=int, default=60)
    running = sub.add_parser("run")
    running.add_argument("cli")
    running.add_argument("--count", type=int, default=60)
    running.add_argument("--half", choices=["held-out", "calibration", "all"], default="held-out")
    running.add_argument("--steps", type=int, default=30)
    running.add_argument("--warmup", type=int, default=5)
    running.add_argument("--threads", type=int, default=2)
    running.add_argument("--device", default="cpu")
    running.add_argument("--repeats", type=int, default=1,
                         help="measure each model this many times and take the median per "
                              "policy (the prediction is made once)")
    running.add_argument("--roofline-only", action="store_true",
                         help="predict from the roofline model alone (the doctor before it "
                              "timed layers), for comparison")
    args = parser.parse_args()
    if args.command == "list":
        for k, spec, batch, optimizer in zoo(args.count):
            print(f"{spec['name']:18} {half(k):11} batch {batch:>3} {optimizer:4} "
                  f"{len(spec['layers'])} layers, input {spec['input']['shape']}")
        return 0
    if args.command == "write":
        for k, path, batch, optimizer in write(args.directory, args.count):
            print(f"{path} ({half(k)}, batch {batch}, {optimizer})")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
