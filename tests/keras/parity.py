#!/usr/bin/env python3
"""MixLab against the real Keras 3 (issue 14, part 3): the numbers MixLab shows are Keras's.

Runs inside the venv of scripts/keras-env.sh (Keras 3 on JAX's CPU backend), driving mixlab-cli:

  structure  each built-in model: MixLab's Keras JSON builds in Keras with the same parameter
             count and per-layer output shapes as `mixlab-cli inspect`; Keras's own to_json() of
             it imports back to the same MixLab spec
  forward    same weights (a .keras archive Keras wrote), same test samples: MixLab's
             `predict` equals Keras's model.predict to 1e-5 relative in float32
  train      20 SGD steps and 20 Adam steps on a one-batch training split from the same
             .keras weights: per-step losses within 1e-4 relative (float32); SGD under
             mixed_bfloat16 and mixed_float16 within the bounds argued at BF16_LOSS_RTOL
  graphs     functional models: one with every merge layer (a residual Add, Concatenate,
             Subtract, Multiply, Average, Maximum) and the toy ResNet of Keras's functional API
             guide (GlobalAveragePooling2D): the Keras JSON export builds in Keras and Keras's
             to_json() of it imports back alike; parameters, shapes, forward and the train
             checks of each .keras archive
  applications  keras.applications MobileNetV2, ResNet50, DenseNet121 and EfficientNetB0
             (weights=None, 32x32x3) and keras.io's small Xception (SeparableConv2D): parameters
             (trainable and not) and predict in inference mode, to 1e-4
  names      a .keras archive whose layers carry their own names (not the class-based names
             under which Keras files their weights) imports with its weights
  tfkeras    a hand-written tf.keras 2.x JSON file (fixtures/) imports, with its policy
  torch      the exported PyTorch script's model, given Keras's weights, computes Keras's outputs
             (its layout switches, paddings and Flatten order are Keras's)
  fp8        the FP8 conversions (E4M3, E5M2) equal ml_dtypes' after Keras's clip for every
             bfloat16 and float32's edge cases; the delayed scales equal keras.quantizers'
             (needs --fp8-tool, the fp8_codes filter)
  scripts    `export --to keras` runs here and `--to pytorch` runs with Debian's python3-torch
             (/usr/bin/python3) for 3 steps, each printing Keras's step-time line

  parity.py --cli MIXLAB_CLI [--source DIR] [--work DIR] PART...

Prints PASS/FAIL lines and, at the end, a table of the largest differences seen (the README's
parity figures). Exit status: 0 all passed, 1 a check failed.
"""
import argparse
import contextlib
import csv
import io
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# XLA's CPU code for AVX2 (jaxlib 0.7.2) computes a jitted step wrongly once its inputs are
# donated buffers, as Keras's JAX trainer donates its state from the second train_on_batch on:
# on a 2-core AMD EPYC (AVX2, no AVX-512) cifar10-mlp-small's float32 SGD losses went
# 2.5845 -> 2.5572 instead of -> 2.4259 (what Keras's own jit_compile=False, jax.jit without
# donation and a float64 NumPy loop all give), while an AVX-512 machine ran it right. Limiting
# XLA to AVX (256-bit, as AVX2) ends it; check_peer_training() below shows the peer is sound.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()

import numpy as np  # noqa: E402
import keras  # noqa: E402

from keras_build import build_keras  # noqa: E402

BUILTINS = ["fashion-mlp", "fashion-cnn", "cifar10-mlp", "cifar100-convnet", "resnet20",
            "mobilenetv2-cifar"]

# --- Tolerances -----------------------------------------------------------------------------
# Relative difference of two arrays a (MixLab) and b (Keras), elementwise:
#   |a - b| / max(|b|, 1e-6 * max|b|)
# The floor keeps outputs that are nearly zero (a softmax's unlikely classes, 1e-9 and less)
# from turning last-bit differences of an exp() into huge ratios; a value a millionth of the
# largest output is still compared to 1e-5 of that millionth, i.e. far below float32's own
# resolution of the largest output (6e-8 relative).
FORWARD_RTOL = 1e-5
F32_LOSS_RTOL = 1e-4
# mixed_bfloat16: bfloat16 keeps 8 significant bits (machine epsilon 2^-8 = 3.9e-3, one
# rounding moves a value by up to 2^-9). Both sides round the weights' bfloat16 copies and the
# layer inputs alike, but need not round intermediate results at the same points (XLA fuses a
# Dense's matmul, bias add and activation and may round once where an op-by-op executor rounds
# after each op). So each logit differs by about one rounding, 2^-9 relative, and
# the batch-mean crossentropy (computed in float32 from float32 softmax logits on both sides)
# by a fraction of that, since the per-sample errors are independent and partly cancel; 20 SGD
# steps at these rates carry the difference along without amplifying it much (float32's 1e-7
# stays 1e-7 over the same 20 steps). Bound: 2 * 2^-8 = 7.8e-3 relative on every step's loss,
# two bfloat16 epsilons, i.e. four times a single rounding (measured: at most 2.5e-3).
BF16_LOSS_RTOL = 2 * 2.0**-8
# mixed_float8 (Keras: mixed_bfloat16 + model.quantize("float8")): both sides round the same
# bfloat16 values through E4M3/E5M2, but where their bfloat16 values differ by one rounding (as
# above, 2^-9), a value that close to the midpoint between two E4M3 values rounds to either: a
# jump of one E4M3 step, 2^-3 relative (4 significant bits). Such flips touch a few products of
# each matmul and move every step's loss on its own, without a drift: measured over four weight
# and data seeds, the first step (same weights, forward only) differs by up to 2.7e-3, every
# later step by 2e-3 typically and 1.3e-2 at worst (step 11 of one seed), the last no more than
# the first. Bound: 2^-5 = 3.1e-2, a quarter of one E4M3 step.
FP8_LOSS_RTOL = 2.0**-5
# The scales after 20 steps: each is computed from its amax history by the same float32
# operations on both sides, and an amax is a bfloat16 value, so where the two sides' amaxes
# differ they differ by one bfloat16 ulp: at most 2^-7 relative (measured: 0 on most tensors,
# up to 6.8e-3 on four seeds).
FP8_SCALE_RTOL = 2.0**-7

# mixed_float16 (with Keras's dynamic loss scale on both sides): the same argument with
# float16's 11 significant bits, epsilon 2^-10: 2 * 2^-10 = 2.0e-3.
F16_LOSS_RTOL = 2 * 2.0**-10

TRAIN_STEPS = 20
FORWARD_COUNT = 8

RESULTS = []  # (check, model, largest difference, tolerance, passed)
FAILURES = []


def log(message):
    print(message, flush=True)


def record(check, model, diff, tol):
    passed = bool(diff <= tol)
    RESULTS.append((check, model, diff, tol, passed))
    log(f"{'PASS' if passed else 'FAIL'}: {check} {model}: largest difference {diff:.3g} (tolerance {tol:.3g})")
    if not passed:
        FAILURES.append(f"{check} {model}")


def check(condition, what):
    log(f"{'PASS' if condition else 'FAIL'}: {what}")
    if not condition:
        FAILURES.append(what)
    return condition


@contextlib.contextmanager
def attempt(what):
    """A failed command inside fails `what` and lets the loop go on to the next model."""
    try:
        yield
    except Exception as e:
        FAILURES.append(f"{what}: {e}")
        log(f"FAIL: {what}: {e}")


def rel_diff(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    floor = 1e-6 * max(float(np.max(np.abs(b))), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor)))


# --- mixlab-cli -----------------------------------------------------------------------------


class Cli:
    def __init__(self, path):
        self.path = path

    def run(self, *args, check_rc=True):
        command = [self.path] + [str(a) for a in args]
        done = subprocess.run(command, capture_output=True, text=True)
        if check_rc and done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr}")
        return done.stdout

    def json(self, *args):
        return json.loads(self.run(*args))


# --- Models on the Keras side ---------------------------------------------------------------


def builtin_spec(source, name):
    with open(source / "resources" / "models" / f"{name}.json") as f:
        return json.load(f)


def reduced(spec, name, widths=None, drop_dropout=False):
    """A smaller copy of a built-in for the weight and training checks: Dense widths replaced
    (the structure otherwise the same), Dropout left out where training must be deterministic."""
    spec = json.loads(json.dumps(spec))
    spec["name"] = name
    layers = []
    dense = 0
    for l in spec["layers"]:
        if l["type"] == "Dropout" and drop_dropout:
            continue
        if l["type"] == "Dense" and widths is not None and dense < len(widths):
            l["units"] = widths[dense]
            dense += 1
        layers.append(l)
    spec["layers"] = layers
    return spec


# --- Datasets in the files MixLab reads (engine/data/idx.cpp, cifar.cpp) --------------------


def _idx(path, array, magic):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    path.write_bytes(header + np.ascontiguousarray(array, np.uint8).tobytes())


def write_mnist(directory, train, test):
    """mnist:DIR: the four IDX files; images (N, 28, 28, 1) uint8, labels < 10."""
    directory.mkdir(parents=True, exist_ok=True)
    for prefix, (x, y) in (("train", train), ("t10k", test)):
        _idx(directory / f"{prefix}-images-idx3-ubyte", x if x.ndim == 3 else x[..., 0], 0x803)
        _idx(directory / f"{prefix}-labels-idx1-ubyte", y, 0x801)


def _cifar_records(x, y, coarse):
    planes = x.transpose(0, 3, 1, 2).reshape(len(x), -1)  # HWC -> R, G, B planes
    labels = y.reshape(-1, 1).astype(np.uint8)
    if coarse:
        labels = np.concatenate([(y % 20).reshape(-1, 1).astype(np.uint8), labels], axis=1)
    return np.concatenate([labels, planes], axis=1).tobytes()


def write_cifar10(directory, train, test):
    """cifar10:DIR: data_batch_1..5.bin (each non-empty; MixLab reads them in order) and
    test_batch.bin, records of a label byte and the three 32x32 planes."""
    directory.mkdir(parents=True, exist_ok=True)
    x, y = train
    parts = np.array_split(np.arange(len(y)), 5)
    for i, part in enumerate(parts, 1):
        (directory / f"data_batch_{i}.bin").write_bytes(_cifar_records(x[part], y[part], False))
    (directory / "test_batch.bin").write_bytes(_cifar_records(*test, False))


def write_cifar100(directory, train, test):
    """cifar100:DIR: train.bin and test.bin, records of a coarse and a fine label byte."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "train.bin").write_bytes(_cifar_records(*train, True))
    (directory / "test.bin").write_bytes(_cifar_records(*test, True))


def make_dataset(work, spec, n_train, n_test, seed=1234):
    """Random pixels and labels in the files MixLab reads for the model's input; returns the
    dataset argument and the arrays ((x_train, y_train), (x_test, y_test)) as Keras sees them."""
    shape = tuple(spec["input"]["shape"])
    classes = spec_outputs(spec)
    rng = np.random.default_rng(seed)
    if spec["layers"][0]["type"] == "Embedding":
        per_step = not any(l["type"] in ("GlobalAveragePooling1D", "GlobalMaxPooling1D", "Flatten")
                           for l in spec["layers"])
        if per_step:
            return text_dataset(work, spec, n_train, rng)
        return synthetic_tokens(spec, n_train, seed)
    # Pixels 0..255, except for a model that does not rescale them (cifar10-mlp): its first
    # Dense then sums 3072 products of size ~255, pre-activations reach ~10^3, the final sigmoid
    # saturates, and float32's rounding of such sums (6e-8 x 10^3, in a summation order that
    # oneDNN and XLA choose differently) moves the tiny saturated outputs by ~1e-4 relative and
    # flips Adam's sign-like steps on gradients that are nearly zero: a comparison of summation
    # orders, not of MixLab with Keras. Pixels 0..3 keep that model well-conditioned.
    rescales = any(l["type"] == "Rescaling" for l in spec["layers"])
    pixel_end = 256 if rescales else 4

    def split(n):
        return rng.integers(0, pixel_end, (n,) + shape, dtype=np.uint8), rng.integers(0, classes, n).astype(np.uint8)

    train, test = split(n_train), split(n_test)
    directory = work / f"data-{spec['name']}"
    if shape in ((28, 28, 1), (28, 28)):  # (28, 28): the rows as a sequence, as Keras's MNIST
        write_mnist(directory, train, test)
        dataset = f"mnist:{directory}"
    elif shape == (32, 32, 3) and classes <= 10:
        write_cifar10(directory, train, test)
        dataset = f"cifar10:{directory}"
    elif shape == (32, 32, 3):
        write_cifar100(directory, train, test)
        dataset = f"cifar100:{directory}"
    else:
        raise ValueError(f"no dataset format for input {shape}")

    def as_keras(x, y):
        return x.astype(np.float32), y.astype(np.int64)

    return dataset, as_keras(*train), as_keras(*test)


def text_dataset(work, spec, n_train, rng):
    """A language model's data as MixLab's text:PATH:SEQ_LEN reads it: random bytes, sequences of
    SEQ_LEN one after another with the next byte at every step as labels, the last tenth held
    out. The file's length gives exactly n_train training sequences (the held-out tenth then
    holds about a ninth as many)."""
    steps = spec["input"]["shape"][0]

    def windows(part):
        n = (len(part) - 1) // steps
        return part[:n * steps].reshape(n, steps), part[1:n * steps + 1].reshape(n, steps)

    for length in range(n_train * steps, 20 * n_train * steps):
        split = length - length // 10
        if (split - 1) // steps == n_train and (length // 10 - 1) // steps >= 1:
            break
    else:
        raise ValueError(f"no text length gives {n_train} sequences of {steps}")
    data = rng.integers(0, 256, length, dtype=np.uint8)
    path = work / f"text-{spec['name']}.txt"
    path.write_bytes(data.tobytes())
    (x, y), (x_test, y_test) = windows(data[:split]), windows(data[split:])
    return f"text:{path}:{steps}", (x.astype(np.int32), y.astype(np.int64)), \
        (x_test.astype(np.int32), y_test.astype(np.int64))


class SplitMix64:
    """engine/data/rng.h's generator, bit for bit."""
    MASK = (1 << 64) - 1

    def __init__(self, seed, stream=None):
        self.state = seed & self.MASK
        if stream is not None:
            self.state = SplitMix64(seed ^ ((stream * 0xD1B54A32D192ED03) & self.MASK)).next()

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def synthetic_tokens(spec, n_train, seed):
    """A token classifier's data as MixLab's tokens:synthetic:SEQ_LEN:VOCAB:CLASSES:N makes it
    (engine/data/tokens.cpp, replayed here): each sample draws 3 tokens in 10 from its class's 8
    favoured ones."""
    steps, vocab, classes = spec["input"]["shape"][0], spec["layers"][0]["input_dim"], spec_outputs(spec)
    vocab = min(vocab, 256)
    table = SplitMix64(1, 1)
    for _ in range(vocab * 4):
        table.below(vocab)  # the chain's successors (a language model's), drawn first
    favoured = [table.below(vocab) for _ in range(classes * 8)]

    def split(size, streams):
        x, y = np.zeros((size, steps), np.int32), np.zeros(size, np.int64)
        for i in range(size):
            rng = SplitMix64(1, streams + i)
            label = rng.below(classes)
            for t in range(steps):
                x[i, t] = favoured[label * 8 + rng.below(8)] if rng.below(10) < 3 else rng.below(vocab)
            y[i] = label
        return x, y
    return (f"tokens:synthetic:{steps}:{vocab}:{classes}:{n_train}", split(n_train, 1 << 40),
            split(max(1, n_train // 5), 2 << 40))


def spec_outputs(spec):
    units = [l["units"] for l in spec["layers"] if l["type"] == "Dense"]
    return units[-1]


# --- Checks ---------------------------------------------------------------------------------


def part_structure(cli, source, work):
    for name in BUILTINS:
        with attempt(f"structure {name}"):
            info = cli.json("inspect", name, "--json")
            path = work / f"{name}.keras.json"
            cli.run("export", name, "--to", "keras-json", "-o", path)
            model = keras.models.model_from_json(path.read_text())
            check(model.count_params() == info["params_total"],
                  f"structure {name}: Keras counts {model.count_params()} parameters, MixLab {info['params_total']}")
            keras_shapes = [list(layer.output.shape[1:]) for layer in model.layers
                            if not isinstance(layer, keras.layers.InputLayer)]  # a functional model's
            mixlab_shapes = [layer["output_shape"] for layer in info["layers"]]
            check(keras_shapes == mixlab_shapes,
                  f"structure {name}: per-layer output shapes {'agree' if keras_shapes == mixlab_shapes else f'differ: Keras {keras_shapes}, MixLab {mixlab_shapes}'}")
            check(keras_shapes[-1] == info["output_shape"],
                  f"structure {name}: output shape {keras_shapes[-1]} (MixLab {info['output_shape']})")

            # Keras's own JSON of that model, imported back. Under the float32 policy every layer of
            # the Keras model is float32, so a layer's "dtype": "float32" (kept in float32 under a
            # mixed policy) cannot survive: compared without it. The same model built in Keras under
            # mixed_float16 keeps it, and must come back whole.
            original = json.loads(cli.run("export", name, "--to", "mixlab"))
            original.pop("name", None)  # Keras may rename the model

            def without_dtype(spec):
                return dict(spec, layers=[{k: v for k, v in l.items() if k != "dtype"} for l in spec["layers"]])

            def as_graph(spec):
                """A graph whose layers are all named, keyed by name with what each reads: Keras
                may list a graph's layers in another order that runs them alike."""
                if not all("name" in l for l in spec["layers"]):
                    return spec
                layers, previous = {}, "input"
                for l in spec["layers"]:
                    layers[l["name"]] = dict(l, inputs=l.get("inputs", [previous]))
                    previous = l["name"]
                return dict(spec, layers=layers)

            for policy, keras_model, compare in (
                    ("float32", model, lambda s: as_graph(without_dtype(s))),
                    ("mixed_float16", build_keras(builtin_spec(source, name), "mixed_float16"), as_graph)):
                own = work / f"{name}.{policy}.keras-own.json"
                own.write_text(keras_model.to_json())
                back = work / f"{name}.{policy}.back.json"
                cli.run("export", own, "--to", "mixlab", "-o", back)
                returned = json.loads(back.read_text())
                returned.pop("name", None)
                same = compare(returned) == compare(original)
                check(same, f"structure {name}: Keras's to_json() under {policy} imports back to the same spec"
                      + ("" if same else f"\n  built-in: {original}\n  back:     {returned}"))
                if policy != "float32":
                    script = cli.run("export", own, "--to", "keras", "--steps", 1)
                    check(f'POLICY = "{policy}"' in script,
                          f"structure {name}: the Keras JSON's policy {policy} becomes the run's")


def forward_models(source):
    """(spec, training spec) pairs: the built-ins where they are small, reduced copies where
    they are big (cifar10-mlp's 12 M and cifar100-convnet's 55 M parameters would make the
    .keras files and the 20-step loops slow); training copies without Dropout (its masks are
    each framework's own random numbers)."""
    mlp = builtin_spec(source, "fashion-mlp")
    cnn = builtin_spec(source, "fashion-cnn")
    c10 = reduced(builtin_spec(source, "cifar10-mlp"), "cifar10-mlp-small", widths=[300, 100])
    c100 = reduced(builtin_spec(source, "cifar100-convnet"), "cifar100-convnet-small",
                   widths=[64, 64, 64, 64])
    c100_train = reduced(c100, "cifar100-convnet-small-nodrop", drop_dropout=True)
    return [(mlp, mlp), (cnn, cnn), (c10, c10), (c100, c100_train), (SEPARABLE_SPEC, SEPARABLE_SPEC)]


# SGD's learning rate in the training checks: Keras's default 0.01, but 0.001 for cifar10-mlp,
# whose loss at 0.01 on 16 samples jumps about (0.46 -> 1.95 -> 0.28 within a few steps; its
# crossentropy of normalised sigmoid outputs is steep where they saturate): on such a chaotic
# path float32's last-bit differences grow exponentially and, under bfloat16, change the path
# itself, whatever the implementation. At 0.001 the loss falls smoothly.
SGD_LR = {"cifar10-mlp-small": 0.001}

# Adam's learning rate in the training checks: Keras's default 0.001, but 0.0001 for the toy
# ResNet. At 0.001 its losses agree to 1e-7 for the first steps and then drift by up to 6e-4
# (step 18), without a trend: Adam divides each gradient by its own running magnitude, so on
# the many nearly-zero gradients of dead ReLUs a last-bit difference in a sum becomes a step
# of full size in either direction. At 0.0001 (the loss still falls 2.29 -> 1.99) every step
# agrees within 1e-6.
ADAM_LR = {"toy-resnet-nodrop": 0.0001}


# Every layout path of the PyTorch export and of MixLab's padding: 'same' with strides (Keras
# pads the extra row and column at the bottom and right), average pooling that leaves padded
# cells out of its means, max pooling over padding, a non-square kernel, Dense and softmax on an
# image's channels, Flatten in HWC order, Dropout (off in inference).
LAYOUTS_SPEC = {
    "name": "layouts", "input": {"shape": [28, 28, 1]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098, "offset": -0.5},
        {"type": "Conv2D", "filters": 4, "kernel_size": 3, "strides": 2, "padding": "same", "activation": "tanh"},
        {"type": "AveragePooling2D", "pool_size": 3, "strides": 2, "padding": "same"},
        {"type": "MaxPooling2D", "pool_size": 2, "strides": 1, "padding": "same"},
        {"type": "Conv2D", "filters": 6, "kernel_size": [2, 3], "activation": "gelu", "use_bias": False},
        {"type": "Dense", "units": 5, "activation": "sigmoid"},
        {"type": "Activation", "activation": "softmax"},
        {"type": "Flatten"},
        {"type": "Dropout", "rate": 0.5},
        {"type": "Dense", "units": 10},
        {"type": "Activation", "activation": "softmax", "dtype": "float32"},
    ],
}


def save_keras(spec, path, seed):
    # A fresh session: the layers get Keras's first names (dense, dense_1, ...), which are also
    # the class-based names model.weights.h5 files them under. part_archive_names checks layers
    # whose names differ from those.
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    model = build_keras(spec)
    randomize_batch_norm(model, seed)
    model.save(path)
    return model


def randomize_batch_norm(model, seed):
    """BatchNormalization starts at gamma 1, beta 0, mean 0, variance 1, under which inference
    would not show whether the moving statistics are read right: other values, seeded."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            values = []
            for w in layer.weights:
                n = w.shape
                if w.name == "gamma":
                    values.append(rng.uniform(0.5, 1.5, n))
                elif w.name in ("beta", "moving_mean"):
                    values.append(rng.uniform(-0.3, 0.3, n))
                else:  # moving_variance
                    values.append(rng.uniform(0.5, 2.0, n))
            layer.set_weights([v.astype(np.float32) for v in values])


def part_forward(cli, source, work, batch):
    for spec in [m for m, _ in forward_models(source)] + [LAYOUTS_SPEC]:
        name = spec["name"]
        with attempt(f"forward {name}"):
            path = work / f"{name}.keras"
            model = save_keras(spec, path, seed=7)
            dataset, _, (x_test, _) = make_dataset(work, spec, batch, FORWARD_COUNT)
            got = cli.json("predict", path, "--dataset", dataset, "--count", FORWARD_COUNT, "--json",
                           "--precision", "float32", "--device", "cpu")
            mixlab = np.array(got["outputs"], np.float64)
            expected = model.predict(x_test[:FORWARD_COUNT], verbose=0)
            if check(mixlab.shape == expected.shape,
                     f"forward {name}: output shape {mixlab.shape} (Keras {expected.shape})"):
                record("forward float32", name, rel_diff(mixlab, expected), FORWARD_RTOL)


def part_archive_names(cli, source, work, batch):
    """Keras 3 files a layer's weights in model.weights.h5 under a name made from its class
    (layers/dense, layers/dense_1, ... in model order), not under the layer's own name: a model
    whose layers are named otherwise (named by the user, or built after other models in one
    session, dense_2...) must import with its weights all the same."""
    spec = json.loads(json.dumps(builtin_spec(source, "fashion-mlp")))
    spec["name"] = "named-layers"
    for i, layer in enumerate(spec["layers"]):
        layer["name"] = f"my_{layer['type'].lower()}_{i}"
    path = work / "named-layers.keras"
    model = save_keras(spec, path, seed=5)
    dataset, _, (x_test, _) = make_dataset(work, spec, batch, FORWARD_COUNT)
    got = cli.json("predict", path, "--dataset", dataset, "--count", FORWARD_COUNT, "--json",
                   "--precision", "float32", "--device", "cpu")
    record("forward float32, own layer names", spec["name"],
           rel_diff(np.array(got["outputs"]), model.predict(x_test[:FORWARD_COUNT], verbose=0)), FORWARD_RTOL)


# Runs under Debian's python3 with torch: imports an exported PyTorch script as a module, loads
# Keras's weights into its build_model() (kernels transposed to PyTorch's layouts) and writes its
# inference outputs for the given inputs.
TORCH_FORWARD = r"""
import importlib.util, sys
import numpy as np
import torch
script, weights_path, x_path, out_path = sys.argv[1:]
sys.argv = [script]  # the script parses its own options when it is imported
spec = importlib.util.spec_from_file_location("exported", script)
exported = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exported)
model = exported.build_model()
weights = list(np.load(weights_path).values())
with torch.no_grad():
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            kernel = weights.pop(0)
            # Keras: Dense (in, out), Conv2D (kh, kw, in, out), DepthwiseConv2D (kh, kw, in,
            # multiplier), which is (kh, kw, 1, in * multiplier) in memory; PyTorch: (out, in),
            # (out, in / groups, kh, kw).
            if kernel.ndim == 4 and module.groups > 1:
                kernel = kernel.reshape(kernel.shape[0], kernel.shape[1], 1, -1)
            kernel = kernel.T if kernel.ndim == 2 else kernel.transpose(3, 2, 0, 1)
            module.weight.copy_(torch.from_numpy(np.ascontiguousarray(kernel)))
            if module.bias is not None:
                module.bias.copy_(torch.from_numpy(weights.pop(0)))
        if isinstance(module, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            # gamma, beta, moving mean and variance (the harness fills in a missing gamma or beta).
            for target in (module.weight, module.bias, module.running_mean, module.running_var):
                target.copy_(torch.from_numpy(weights.pop(0)))
assert not weights, f"{len(weights)} Keras weights left over"
model.eval()
with torch.no_grad():
    out = model(torch.from_numpy(np.load(x_path)))
np.save(out_path, out.numpy())
"""


def torch_order_weights(model):
    """Keras's weights layer by layer, BatchNormalization's as four arrays (gamma 1 and beta 0
    where the layer has none), as PyTorch's BatchNorm holds them."""
    out = []
    for layer in model.layers:
        weights = layer.get_weights()
        if isinstance(layer, keras.layers.BatchNormalization):
            c = weights[-1].shape[0]
            gamma = weights.pop(0) if layer.scale else np.ones(c, np.float32)
            beta = weights.pop(0) if layer.center else np.zeros(c, np.float32)
            weights = [gamma, beta] + weights
        out += weights
    return out


def part_torch_forward(cli, source, work, torch_python):
    """The exported PyTorch script's model, given Keras's weights, computes Keras's outputs: its
    NHWC/NCHW switches, paddings and Flatten order are Keras's (float32, 1e-5 relative)."""
    specs = [builtin_spec(source, "fashion-cnn"), forward_models(source)[3][0], LAYOUTS_SPEC,
             GRAPH_SPEC, BN_NET_SPEC, SEPARABLE_SPEC, SQUEEZE_EXCITE_SPEC, SEQUENCE_SPEC,
             SEQUENCE_MAX_SPEC]
    for spec in specs:
        with attempt(f"PyTorch export {spec['name']}"):
            name = spec["name"]
            spec_path = work / f"{name}.mixlab.json"
            spec_path.write_text(json.dumps(spec))
            script = work / f"{name}-torch-forward.py"
            cli.run("export", spec_path, "--to", "pytorch", "--steps", 1, "-o", script)
            keras.backend.clear_session()
            keras.utils.set_random_seed(3)
            model = build_keras(spec)
            # Random biases too: zero ones would not show a bias in the wrong place.
            rng = np.random.default_rng(8)
            model.set_weights([w if w.ndim > 1 else rng.normal(0, 0.1, w.shape).astype(np.float32)
                               for w in model.get_weights()])
            randomize_batch_norm(model, 8)
            shape = tuple(spec["input"]["shape"])
            x = np.random.default_rng(4).integers(0, 256, (FORWARD_COUNT,) + shape).astype(np.float32)
            np.savez(work / f"{name}-weights.npz", *torch_order_weights(model))
            np.save(work / f"{name}-x.npy", x)
            out = work / f"{name}-torch-out.npy"
            done = subprocess.run([torch_python, "-c", TORCH_FORWARD, script, work / f"{name}-weights.npz",
                                   work / f"{name}-x.npy", out], capture_output=True, text=True)
            if not check(done.returncode == 0, f"PyTorch export {name}: forward ran"
                         + ("" if done.returncode == 0 else f"\n{done.stderr[-3000:]}")):
                continue
            record("PyTorch export forward float32", name,
                   rel_diff(np.load(out), model.predict(x, verbose=0)), FORWARD_RTOL)


def keras_losses(spec, weights, x, y, optimizer, policy, steps, test=None, jit_compile="auto"):
    """Keras's loss before each of `steps` updates on the one batch (x, y); with `test`
    ((x, y)), (losses, the inference-mode loss on it after the last update)."""
    model = build_keras(spec, policy)
    model.set_weights(weights)
    # mixed_float16: Keras's dynamic LossScaleOptimizer (MixLab's --loss-scale dynamic); else none.
    model.compile(optimizer=optimizer, loss=spec.get("loss", "sparse_categorical_crossentropy"),
                  auto_scale_loss=policy == "mixed_float16", jit_compile=jit_compile)
    losses = []
    for _ in range(steps):
        model.reset_metrics()  # train_on_batch reports a running mean otherwise
        losses.append(float(model.train_on_batch(x, y)))
    if test is None:
        return np.array(losses)
    return np.array(losses), float(model.evaluate(test[0], test[1], batch_size=len(x), verbose=0))


PEER_STEPS = 3
PEER_RTOL = 1e-5


def check_peer_training(spec, weights, x, y, lr, jitted):
    """The peer itself: Keras's jitted training (XLA, its state donated from the second step on)
    takes the steps its eager training takes. A wrong XLA build or CPU path (see XLA_FLAGS above)
    shows here by name, instead of as MixLab disagreeing with Keras."""
    eager = keras_losses(spec, weights, x, y, keras.optimizers.SGD(learning_rate=lr), "float32",
                         PEER_STEPS, jit_compile=False)
    diff = rel_diff(jitted[:PEER_STEPS], eager)
    check(diff <= PEER_RTOL, f"peer {spec['name']}: Keras's jitted SGD steps equal its eager ones "
          f"(largest rel. diff {diff:.3g}, jitted {np.round(jitted[:PEER_STEPS], 6)}, "
          f"eager {np.round(eager, 6)})")


def mixlab_losses(cli, work, path, dataset, batch, optimizer, lr, policy, steps, tag, evaluate=False,
                  extra=(), result=None):
    """MixLab's loss of each step; with `evaluate`, (losses, the test loss after the last).
    `extra`: more train options; `result`: a dict that receives train's --json output."""
    db = work / f"{tag}.sqlite"
    if db.exists():
        db.unlink()
    out = cli.json("train", "--model", path, "--dataset", dataset, "--steps", steps,
                   "--batch-size", batch, "--optimizer", optimizer, "--lr", lr,
                   "--precision", policy, "--loss-scale", "dynamic" if policy == "mixed_float16" else "none",
                   *([] if evaluate else ["--no-eval"]), "--device", "cpu",
                   "--db", db, "--json", "--quiet", *extra)
    if result is not None:
        result.update(out)
    if out.get("status") != "finished":
        raise RuntimeError(f"mixlab-cli train {tag}: {out.get('status')}: {out.get('message')}")
    text = cli.run("runs", "export", out["run_id"], "--steps", "--db", db)
    rows = sorted(csv.DictReader(io.StringIO(text)), key=lambda r: int(r["step"]))
    losses = np.array([float(r["loss"]) for r in rows])
    if not evaluate:
        return losses
    shown = cli.json("runs", "show", out["run_id"], "--db", db, "--json")
    return losses, float(shown["summary"]["test_loss"])


def part_train(cli, source, work, batch, policies):
    for _, spec in forward_models(source):
        train_checks(cli, work, spec, batch, policies)


def train_checks(cli, work, spec, batch, policies):
    """20 steps of each optimizer and policy from the same .keras weights, losses compared."""
    name = spec["name"]
    path = work / f"{name}.train.keras"
    model = save_keras(spec, path, seed=11)
    weights = model.get_weights()
    # A training split of exactly one batch: every step sees all of it, so MixLab's
    # shuffling cannot change the (order-invariant) mean loss.
    dataset, (x, y), (x_test, y_test) = make_dataset(work, spec, batch, FORWARD_COUNT, seed=99)
    # BatchNormalization: the test loss after the steps reads the moving statistics they updated.
    has_bn = any(l["type"] == "BatchNormalization" for l in spec["layers"])
    sgd_lr = SGD_LR.get(name, 0.01)
    runs = []
    if "float32" in policies:
        runs += [("sgd", sgd_lr, "float32", F32_LOSS_RTOL),
                 ("adam", ADAM_LR.get(name, 0.001), "float32", F32_LOSS_RTOL)]
    if "mixed_bfloat16" in policies:
        runs += [("sgd", sgd_lr, "mixed_bfloat16", BF16_LOSS_RTOL)]
    if "mixed_float16" in policies:
        runs += [("sgd", sgd_lr, "mixed_float16", F16_LOSS_RTOL)]
    for optimizer, lr, policy, tol in runs:
        tag = f"{name}-{optimizer}-{policy}"
        with attempt(f"train {tag}"):
            evaluate = has_bn and policy == "float32" and optimizer == "sgd"
            mixlab = mixlab_losses(cli, work, path, dataset, batch, optimizer, lr, policy, TRAIN_STEPS, tag,
                                   evaluate=evaluate)
            opt = (keras.optimizers.SGD(learning_rate=lr) if optimizer == "sgd"
                   else keras.optimizers.Adam(learning_rate=lr))
            expected = keras_losses(spec, weights, x, y, opt, policy, TRAIN_STEPS,
                                    test=(x_test, y_test) if evaluate else None)
            if optimizer == "sgd" and policy == "float32":
                check_peer_training(spec, weights, x, y, lr, expected[0] if evaluate else expected)
            if evaluate:
                (mixlab, mixlab_test), (expected, keras_test) = mixlab, expected
                log(f"  {tag}: test loss after the steps (moving statistics) Keras {keras_test:.6f}, "
                    f"MixLab {mixlab_test:.6f}")
                record(f"test loss after {TRAIN_STEPS} {optimizer} steps {policy} (moving statistics)",
                       name, abs(mixlab_test - keras_test) / abs(keras_test), F32_LOSS_RTOL)
            if not check(len(mixlab) == TRAIN_STEPS, f"train {tag}: MixLab recorded {len(mixlab)} steps"):
                continue
            diffs = np.abs(mixlab - expected) / np.abs(expected)
            log(f"  {tag}: losses Keras {expected[0]:.6f} -> {expected[-1]:.6f}, "
                f"MixLab {mixlab[0]:.6f} -> {mixlab[-1]:.6f}; worst step {int(np.argmax(diffs)) + 1}")
            record(f"{TRAIN_STEPS} {optimizer} steps {policy}", name, float(np.max(diffs)), tol)


# A graph with every merge (issue 27), in Keras's functional form: a strided residual block
# (Add), a channel Concatenate, and on the dense features Subtract, Multiply, a three-way
# Average and Maximum; the softmax in float32.
GRAPH_SPEC = {
    "name": "graph-merges", "input": {"shape": [28, 28, 1]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098, "name": "scale"},
        {"type": "Conv2D", "filters": 8, "kernel_size": 3, "strides": 2, "padding": "same", "activation": "relu", "name": "c1", "inputs": ["scale"]},
        {"type": "Conv2D", "filters": 8, "kernel_size": 3, "padding": "same", "activation": "relu", "name": "c2", "inputs": ["c1"]},
        {"type": "Add", "name": "skip", "inputs": ["c1", "c2"]},
        {"type": "MaxPooling2D", "pool_size": 2, "name": "pool", "inputs": ["skip"]},
        {"type": "Conv2D", "filters": 8, "kernel_size": 3, "padding": "same", "activation": "tanh", "name": "c3", "inputs": ["pool"]},
        {"type": "Concatenate", "axis": -1, "name": "cat", "inputs": ["pool", "c3"]},
        {"type": "Flatten", "name": "flat", "inputs": ["cat"]},
        {"type": "Dense", "units": 16, "activation": "relu", "name": "h1", "inputs": ["flat"]},
        {"type": "Dense", "units": 16, "activation": "tanh", "name": "h2", "inputs": ["h1"]},
        {"type": "Subtract", "name": "sub", "inputs": ["h1", "h2"]},
        {"type": "Multiply", "name": "mul", "inputs": ["h1", "h2"]},
        {"type": "Average", "name": "avg", "inputs": ["sub", "mul", "h2"]},
        {"type": "Maximum", "name": "max", "inputs": ["avg", "h1"]},
        {"type": "Dense", "units": 10, "name": "logits", "inputs": ["max"]},
        {"type": "Activation", "activation": "softmax", "dtype": "float32", "name": "probs", "inputs": ["logits"]},
    ],
}


# The toy ResNet of Keras's functional API guide (keras.io/guides/functional_api), 223,242
# parameters: two residual blocks, GlobalAveragePooling2D and Dropout. The guide ends in logits
# for a from_logits loss; MixLab's losses read probabilities, so a float32 softmax follows.
TOY_RESNET_SPEC = {
    "name": "toy-resnet", "input": {"shape": [32, 32, 3]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098, "name": "scale"},
        {"type": "Conv2D", "filters": 32, "kernel_size": 3, "activation": "relu", "name": "c1"},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "name": "c2"},
        {"type": "MaxPooling2D", "pool_size": 3, "name": "block_1_output"},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "padding": "same", "name": "c3"},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "padding": "same", "name": "c4"},
        {"type": "Add", "name": "block_2_output", "inputs": ["c4", "block_1_output"]},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "padding": "same", "name": "c5"},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "padding": "same", "name": "c6"},
        {"type": "Add", "name": "block_3_output", "inputs": ["c6", "block_2_output"]},
        {"type": "Conv2D", "filters": 64, "kernel_size": 3, "activation": "relu", "name": "c7"},
        {"type": "GlobalAveragePooling2D", "name": "gap"},
        {"type": "Dense", "units": 256, "activation": "relu", "name": "d1"},
        {"type": "Dropout", "rate": 0.5, "name": "drop"},
        {"type": "Dense", "units": 10, "name": "logits"},
        {"type": "Activation", "activation": "softmax", "dtype": "float32", "name": "probs"},
    ],
}


# The layers of ResNets and MobileNets (issue 27) in one small functional model: Conv-BN-ReLU,
# a residual basic block, ReLU6, MobileNetV2's ZeroPadding2D + strided DepthwiseConv2D, silu,
# hard_silu, BatchNormalization with other momentum, epsilon and no beta.
BN_NET_SPEC = {
    "name": "bn-net", "input": {"shape": [32, 32, 3]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098, "name": "scale"},
        {"type": "Conv2D", "filters": 16, "kernel_size": 3, "padding": "same", "use_bias": False, "name": "stem"},
        {"type": "BatchNormalization", "name": "stem_bn"},
        {"type": "ReLU", "name": "stem_relu"},
        {"type": "Conv2D", "filters": 16, "kernel_size": 3, "padding": "same", "use_bias": False, "name": "b1c1"},
        {"type": "BatchNormalization", "momentum": 0.9, "name": "b1bn1"},
        {"type": "Activation", "activation": "relu", "name": "b1r1"},
        {"type": "Conv2D", "filters": 16, "kernel_size": 3, "padding": "same", "use_bias": False, "name": "b1c2"},
        {"type": "BatchNormalization", "name": "b1bn2"},
        {"type": "Add", "name": "b1add", "inputs": ["b1bn2", "stem_relu"]},
        {"type": "ReLU", "max_value": 6.0, "name": "b1out"},
        {"type": "ZeroPadding2D", "padding": [[0, 1], [0, 1]], "name": "pad"},
        {"type": "DepthwiseConv2D", "kernel_size": 3, "strides": 2, "use_bias": False, "name": "dw"},
        {"type": "BatchNormalization", "epsilon": 1e-5, "name": "dw_bn"},
        {"type": "Activation", "activation": "silu", "name": "dw_act"},
        {"type": "Conv2D", "filters": 24, "kernel_size": 1, "name": "pw"},
        {"type": "BatchNormalization", "center": False, "name": "pw_bn"},
        {"type": "Activation", "activation": "hard_silu", "name": "pw_act"},
        {"type": "GlobalAveragePooling2D", "name": "gap"},
        {"type": "Dense", "units": 10, "name": "logits"},
        {"type": "Activation", "activation": "softmax", "dtype": "float32", "name": "probs"},
    ],
}


# SeparableConv2D (its depthwise and pointwise kernels) and Reshape in Keras's HWC order, for the
# PyTorch export's check: the separable layer's two convolutions, and Dense on a reshaped
# (positions, features) tensor's last axis; a Normalization with fixed per-channel statistics
# first, as EfficientNet's (its mean and variance in the layer's dtype under the mixed policies).
SEPARABLE_SPEC = {
    "name": "separable", "input": {"shape": [32, 32, 3]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098},
        {"type": "Normalization", "mean": [0.485, 0.456, 0.406], "variance": [0.052, 0.05, 0.0506]},
        {"type": "SeparableConv2D", "filters": 8, "kernel_size": 3, "strides": 2, "padding": "same",
         "depth_multiplier": 2, "activation": "relu"},
        {"type": "Reshape", "target_shape": [16, -1]},
        {"type": "Dense", "units": 4, "activation": "tanh"},
        {"type": "Reshape", "target_shape": [-1]},
        {"type": "Dense", "units": 10},
        {"type": "Activation", "activation": "softmax", "dtype": "float32"},
    ],
}


# EfficientNet's block end (issue 27): squeeze-and-excitation (a Multiply of 8x8x8 by its 1x1x8
# gate, broadcast) and stochastic depth (Dropout with noise_shape [None, 1, 1, 1]) before the
# residual Add. In the PyTorch export forward check (the Dropout is the identity there).
SQUEEZE_EXCITE_SPEC = {
    "name": "squeeze-excite", "input": {"shape": [8, 8, 3]}, "loss": "sparse_categorical_crossentropy",
    "layers": [
        {"type": "Rescaling", "scale": 0.00392156862745098, "name": "scale"},
        {"type": "Conv2D", "filters": 8, "kernel_size": 3, "padding": "same", "activation": "silu",
         "name": "c"},
        {"type": "GlobalAveragePooling2D", "keepdims": True, "name": "squeeze"},
        {"type": "Conv2D", "filters": 2, "kernel_size": 1, "activation": "silu", "name": "reduce"},
        {"type": "Conv2D", "filters": 8, "kernel_size": 1, "activation": "sigmoid", "name": "expand"},
        {"type": "Multiply", "inputs": ["c", "expand"], "name": "excite"},
        {"type": "Dropout", "rate": 0.2, "noise_shape": [None, 1, 1, 1], "name": "drop"},
        {"type": "Add", "inputs": ["drop", "c"], "name": "add"},
        {"type": "GlobalAveragePooling2D"},
        {"type": "Dense", "units": 10, "activation": "softmax"},
    ],
}


# Sequences (issue 29): (steps, features) inputs, here MNIST's 28 rows of 28 pixels as Keras's
# mnist.load_data() gives them; Dense on the last axis, GlobalAveragePooling1D and
# GlobalMaxPooling1D (with keepdims, then Flatten).
SEQUENCE_SPEC = {
    "name": "row-sequence", "input": {"shape": [28, 28]},
    "layers": [
        {"type": "Rescaling", "scale": 1.0 / 255, "name": "rescale"},
        {"type": "Dense", "units": 32, "activation": "relu", "name": "rows"},
        {"type": "GlobalAveragePooling1D", "name": "mean_over_rows"},
        {"type": "Dense", "units": 10, "activation": "softmax", "dtype": "float32", "name": "out"},
    ],
}
SEQUENCE_MAX_SPEC = {
    "name": "row-sequence-max", "input": {"shape": [28, 28]},
    "layers": [
        {"type": "Rescaling", "scale": 1.0 / 255, "name": "rescale"},
        {"type": "Dense", "units": 24, "activation": "tanh", "name": "rows"},
        {"type": "Dense", "units": 16, "name": "rows_2"},
        {"type": "GlobalMaxPooling1D", "keepdims": True, "name": "max_over_rows"},
        {"type": "Flatten", "name": "flat"},
        {"type": "Dense", "units": 10, "activation": "softmax", "dtype": "float32", "name": "out"},
    ],
}


# A small language model of bytes (issue 29): token Embedding plus keras_hub's PositionEmbedding
# (keras_build's copy of its source), LayerNormalization (Keras 3 computes it in float32 under the
# mixed policies, as MixLab does), Dense on every step, and a float32 softmax over the 256 bytes
# at each of the 16 steps: the loss is sparse crossentropy over every position.
BYTE_LM_SPEC = {
    "name": "byte-lm", "input": {"shape": [16]},
    "layers": [
        {"type": "Embedding", "input_dim": 256, "output_dim": 24, "name": "tokens"},
        {"type": "PositionEmbedding", "sequence_length": 20, "name": "positions"},
        {"type": "Add", "name": "embedded", "inputs": ["tokens", "positions"]},
        {"type": "LayerNormalization", "name": "norm"},
        {"type": "Dense", "units": 48, "activation": "gelu", "name": "hidden"},
        {"type": "LayerNormalization", "epsilon": 1e-5, "center": False, "name": "norm_2"},
        {"type": "Dense", "units": 256, "activation": "softmax", "dtype": "float32", "name": "next"},
    ],
}


# keras.io's "Text classification with Transformer" (its TokenAndPositionEmbedding and
# TransformerBlock written out as layers; embed_dim 32, 2 heads, ff_dim 32, LayerNormalization
# epsilon 1e-6) on 16 token ids of 64, 4 classes; its Dropout layers kept (MixLab's masks are
# its own, so the training checks run the same model without them).
TRANSFORMER_SPEC = {
    "name": "text-transformer", "input": {"shape": [16]},
    "layers": [
        {"type": "Embedding", "input_dim": 64, "output_dim": 32, "name": "token_emb"},
        {"type": "PositionEmbedding", "sequence_length": 16, "name": "pos_emb"},
        {"type": "Add", "name": "embedded", "inputs": ["token_emb", "pos_emb"]},
        {"type": "MultiHeadAttention", "num_heads": 2, "key_dim": 32, "name": "att", "inputs": ["embedded"]},
        {"type": "Dropout", "rate": 0.1, "name": "dropout1"},
        {"type": "Add", "name": "residual1", "inputs": ["embedded", "dropout1"]},
        {"type": "LayerNormalization", "epsilon": 1e-6, "name": "layernorm1"},
        {"type": "Dense", "units": 32, "activation": "relu", "name": "ffn_1"},
        {"type": "Dense", "units": 32, "name": "ffn_2"},
        {"type": "Dropout", "rate": 0.1, "name": "dropout2"},
        {"type": "Add", "name": "residual2", "inputs": ["layernorm1", "dropout2"]},
        {"type": "LayerNormalization", "epsilon": 1e-6, "name": "layernorm2"},
        {"type": "GlobalAveragePooling1D", "name": "pool"},
        {"type": "Dropout", "rate": 0.1, "name": "dropout3"},
        {"type": "Dense", "units": 20, "activation": "relu", "name": "head"},
        {"type": "Dropout", "rate": 0.1, "name": "dropout4"},
        {"type": "Dense", "units": 4, "activation": "softmax", "dtype": "float32", "name": "classes"},
    ],
}


def without_dropout(spec, name):
    """The spec with its Dropout layers left out (their readers read what the Dropout read)."""
    layers, renamed = [], {}
    for l in spec["layers"]:
        if l["type"] == "Dropout":
            renamed[l["name"]] = renamed.get(layers[-1]["name"], layers[-1]["name"])
            continue
        l = dict(l)
        if "inputs" in l:
            l["inputs"] = [renamed.get(i, i) for i in l["inputs"]]
        layers.append(l)
    return {**spec, "name": name, "layers": layers}


# A one-block GPT-style decoder of bytes: token and position embeddings, pre-LayerNormalization
# causal self-attention (4 heads of 8) and a GELU feed-forward with residuals, a final
# LayerNormalization and a float32 softmax over 256 bytes at each of 16 steps.
GPT_SPEC = {
    "name": "gpt-block", "input": {"shape": [16]},
    "layers": [
        {"type": "Embedding", "input_dim": 256, "output_dim": 32, "name": "tokens"},
        {"type": "PositionEmbedding", "sequence_length": 16, "name": "positions"},
        {"type": "Add", "name": "x0", "inputs": ["tokens", "positions"]},
        {"type": "LayerNormalization", "epsilon": 1e-5, "name": "ln1"},
        {"type": "MultiHeadAttention", "num_heads": 4, "key_dim": 8, "use_causal_mask": True, "name": "attention"},
        {"type": "Add", "name": "x1", "inputs": ["x0", "attention"]},
        {"type": "LayerNormalization", "epsilon": 1e-5, "name": "ln2"},
        {"type": "Dense", "units": 128, "activation": "gelu", "name": "up"},
        {"type": "Dense", "units": 32, "name": "down"},
        {"type": "Add", "name": "x2", "inputs": ["x1", "down"]},
        {"type": "LayerNormalization", "epsilon": 1e-5, "name": "ln_f"},
        {"type": "Dense", "units": 256, "activation": "softmax", "dtype": "float32", "name": "next"},
    ],
}


def part_attention(cli, work, batch, policies):
    # Keras 3 on JAX's CPU cannot train MultiHeadAttention under mixed_float16: XLA's CPU
    # dot_general refuses the F16_F16_F32 precision that jax.nn.dot_product_attention asks for
    # ("The precision 'F16_F16_F32' is not supported by dot_general on CPU"). MixLab's
    # mixed_float16 attention is checked against its own float32 (cpu.attention) instead.
    if "mixed_float16" in policies:
        log("  mixed_float16 left out: Keras 3 on JAX's CPU cannot run MultiHeadAttention under it "
            "(XLA: F16_F16_F32 not supported by dot_general on CPU)")
        policies = [p for p in policies if p != "mixed_float16"]
    graph_checks(cli, work, TRANSFORMER_SPEC, without_dropout(TRANSFORMER_SPEC, "text-transformer-nodrop"),
                 batch, policies)
    graph_checks(cli, work, GPT_SPEC, GPT_SPEC, batch, policies)


def part_sequences(cli, work, batch, policies):
    for spec in (SEQUENCE_SPEC, SEQUENCE_MAX_SPEC, BYTE_LM_SPEC):
        graph_checks(cli, work, spec, spec, batch, policies)


def part_graphs(cli, work, batch, policies):
    for spec, train_spec in ((GRAPH_SPEC, GRAPH_SPEC),
                             (TOY_RESNET_SPEC, reduced(TOY_RESNET_SPEC, "toy-resnet-nodrop", drop_dropout=True)),
                             (BN_NET_SPEC, BN_NET_SPEC)):
        graph_checks(cli, work, spec, train_spec, batch, policies)


def graph_checks(cli, work, spec, train_spec, batch, policies):
    """A functional Keras model: its Keras JSON export builds in Keras, and its .keras archive
    imports with the parameter count and per-layer shapes Keras has, predicts what Keras
    predicts, and trains as Keras does (the `train` checks, on `train_spec`)."""
    name = spec["name"]
    path = work / f"{name}.keras"
    with attempt(f"graph {name} export"):
        own = work / f"{name}.json"
        own.write_text(json.dumps(spec))
        exported = work / f"{name}.keras.json"
        cli.run("export", own, "--to", "keras-json", "--precision", "mixed_float16", "-o", exported)
        model = keras.models.model_from_json(exported.read_text())
        info = cli.json("inspect", own, "--json")
        check(model.count_params() == info["params_total"],
              f"graph {name}: the exported functional JSON builds in Keras with {model.count_params()} "
              f"parameters (MixLab {info['params_total']})")
        back_keras = work / f"{name}.keras-own.json"
        back_keras.write_text(model.to_json())
        ours = cli.run("export", exported, "--to", "mixlab")
        theirs = cli.run("export", back_keras, "--to", "mixlab")
        check(ours == theirs, f"graph {name}: Keras's to_json() of the exported model imports as the "
              f"export does" + ("" if ours == theirs else f"\n  export: {ours}\n  Keras:  {theirs}"))
    with attempt(f"graph {name}"):
        model = save_keras(spec, path, seed=5)
        info = cli.json("inspect", path, "--json")
        check(model.count_params() == info["params_total"],
              f"graph {name}: Keras counts {model.count_params()} parameters, MixLab {info['params_total']}")
        non_trainable = sum(int(np.prod(w.shape)) for w in model.non_trainable_weights)
        check(non_trainable == info["non_trainable_params"],
              f"graph {name}: Keras counts {non_trainable} non-trainable parameters, MixLab "
              f"{info['non_trainable_params']}")
        # A functional model lists its InputLayer, a Sequential one does not.
        keras_shapes = {layer.name: list(layer.output.shape[1:]) for layer in model.layers
                        if not isinstance(layer, keras.layers.InputLayer)}
        mixlab_shapes = {layer["name"]: layer["output_shape"] for layer in info["layers"]}
        check(keras_shapes == mixlab_shapes,
              f"graph {name}: per-layer output shapes {'agree' if keras_shapes == mixlab_shapes else f'differ: Keras {keras_shapes}, MixLab {mixlab_shapes}'}")
        dataset, _, (x_test, _) = make_dataset(work, spec, batch, FORWARD_COUNT)
        count = min(FORWARD_COUNT, len(x_test))  # a text's held-out tenth may hold fewer
        got = cli.json("predict", path, "--dataset", dataset, "--count", count, "--json",
                       "--precision", "float32", "--device", "cpu")
        expected = model.predict(x_test[:count], verbose=0)
        got = np.array(got["outputs"], np.float64).reshape(expected.shape)
        record("forward float32", name, rel_diff(got, expected), FORWARD_RTOL)
    train_checks(cli, work, train_spec, batch, policies)


# keras.applications models with weights=None, 32x32x3 inputs and 10 classes (issue 27): each
# imports from its .keras archive with Keras's parameter counts (trainable and not) and predicts
# what Keras predicts in inference mode (BatchNormalization's moving statistics seeded).
# EfficientNetB0 adds squeeze-and-excitation (a Multiply of HxWxC by 1x1xC, broadcast) and
# stochastic depth (Dropout with noise_shape [None, 1, 1, 1]); its Normalization's mean, variance
# and count are Keras's weights and MixLab's constants (normalization_adapted below).
APPLICATIONS = ("MobileNetV2", "ResNet50", "DenseNet121", "xception-small", "EfficientNetB0")
APPLICATIONS_RTOL = 1e-4


def xception_small(input_shape, classes):
    """The small Xception of keras.io's "Image classification from scratch" (its make_model),
    with a softmax on its logits (MixLab's losses read probabilities)."""
    layers = keras.layers
    inputs = keras.Input(shape=input_shape)
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(128, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for size in [256, 512, 728]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    x = layers.SeparableConv2D(1024, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def part_applications(cli, work, batch):
    normalization_adapted(cli, work, batch)
    for cls in APPLICATIONS:
        name = cls.lower()
        with attempt(f"applications {name}"):
            keras.backend.clear_session()
            keras.utils.set_random_seed(13)
            if cls == "xception-small":
                model = xception_small((32, 32, 3), 10)
            else:
                model = getattr(keras.applications, cls)(weights=None, input_shape=(32, 32, 3), classes=10)
            randomize_batch_norm(model, 13)
            path = work / f"{name}.keras"
            model.save(path)
            info = cli.json("inspect", path, "--json")
            non_trainable = sum(int(np.prod(w.shape)) for w in model.non_trainable_weights)
            constants = sum(int(np.prod(w.shape)) for l in model.layers
                            if isinstance(l, keras.layers.Normalization) for w in l.weights)
            check(model.count_params() - constants == info["params_total"] and
                  non_trainable - constants == info["non_trainable_params"],
                  f"applications {name}: Keras counts {model.count_params()} parameters "
                  f"({non_trainable} non-trainable, {constants} of them Normalization's "
                  f"constants), MixLab {info['params_total']} ({info['non_trainable_params']})")
            # Raw pixels 0..3 (no Rescaling layer): the applications expect preprocessed inputs.
            spec = {"name": name, "input": {"shape": [32, 32, 3]},
                    "layers": [{"type": "Dense", "units": 10}]}
            dataset, _, (x_test, _) = make_dataset(work, spec, batch, FORWARD_COUNT)
            started = time.monotonic()
            got = cli.json("predict", path, "--dataset", dataset, "--count", FORWARD_COUNT, "--json",
                           "--precision", "float32", "--device", "cpu")
            log(f"  {name}: {len(model.layers)} Keras layers, MixLab predict took "
                f"{time.monotonic() - started:.1f} s")
            expected = model.predict(x_test[:FORWARD_COUNT], verbose=0)
            record("forward float32", name, rel_diff(np.array(got["outputs"], np.float64), expected),
                   APPLICATIONS_RTOL)


def normalization_adapted(cli, work, batch):
    """A Normalization adapted to data (EfficientNet's first layers are one): its mean and
    variance are the layer's weights in the .keras archive, and become MixLab's constants. Keras
    counts them and the sample count (2C + 1) as non-trainable weights; MixLab, which holds them
    as the layer's constants, counts none: the check says so rather than hide it."""
    name = "normalization-adapted"
    with attempt(f"applications {name}"):
        keras.backend.clear_session()
        keras.utils.set_random_seed(17)
        layers = keras.layers
        norm = layers.Normalization(axis=-1)
        norm.adapt(np.random.default_rng(17).uniform(0, 3, (64, 32, 32, 3)).astype(np.float32)
                   * np.array([1.0, 0.5, 2.0], np.float32))
        inputs = keras.Input(shape=(32, 32, 3))
        x = norm(inputs)
        x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
        x = layers.GlobalAveragePooling2D()(x)
        outputs = layers.Dense(10, activation="softmax")(x)
        model = keras.Model(inputs, outputs)
        path = work / f"{name}.keras"
        model.save(path)
        info = cli.json("inspect", path, "--json")
        non_trainable = sum(int(np.prod(w.shape)) for w in model.non_trainable_weights)
        check(model.count_params() - non_trainable == info["params_total"] and
              non_trainable == 2 * 3 + 1 and info["non_trainable_params"] == 0,
              f"applications {name}: Keras counts {model.count_params()} parameters ({non_trainable} "
              f"non-trainable: the adapted mean, variance and count), MixLab {info['params_total']} "
              f"({info['non_trainable_params']}: the statistics are the layer's constants)")
        spec = json.loads(cli.run("export", path, "--to", "mixlab"))
        mean = spec["layers"][0].get("mean", [])
        check(np.allclose(mean, np.asarray(norm.mean).reshape(-1), rtol=1e-6),
              f"applications {name}: the adapted mean {mean} imports as the layer's mean")
        dataset, _, (x_test, _) = make_dataset(work, {"name": name, "input": {"shape": [32, 32, 3]},
                                                      "layers": [{"type": "Dense", "units": 10}]},
                                               batch, FORWARD_COUNT)
        got = cli.json("predict", path, "--dataset", dataset, "--count", FORWARD_COUNT, "--json",
                       "--precision", "float32", "--device", "cpu")
        expected = model.predict(x_test[:FORWARD_COUNT], verbose=0)
        record("forward float32", name, rel_diff(np.array(got["outputs"], np.float64), expected),
               APPLICATIONS_RTOL)


def part_tfkeras(cli, source, work):
    fixture = pathlib.Path(__file__).resolve().parent / "fixtures" / "tf_keras_2_cnn.json"
    info = cli.json("inspect", fixture, "--json")
    # Conv2D 3x3x1x8 + 8, Conv2D 3x3x8x16 + 16, Dense 400x32 + 32, Dense 32x10 + 10.
    expected = (3 * 3 * 1 * 8 + 8) + (3 * 3 * 8 * 16 + 16) + (400 * 32 + 32) + (32 * 10 + 10)
    check(info["params_total"] == expected,
          f"tf.keras 2 JSON: {info['params_total']} parameters (expected {expected})")
    check(info["output_shape"] == [10], f"tf.keras 2 JSON: output shape {info['output_shape']}")
    # Its layers' Policy objects ({"class_name": "Policy", ...}) set the run's precision (a
    # script's settings, the Keras JSON's model policy) ...
    script = cli.run("export", fixture, "--to", "keras", "--steps", 1)
    check('POLICY = "mixed_float16"' in script, "tf.keras 2 JSON: its Policy becomes the run's precision")
    policy = json.loads(cli.run("export", fixture, "--to", "keras-json"))["config"]["dtype"]["config"]["name"]
    check(policy == "mixed_float16", f"tf.keras 2 JSON: exported again as Keras 3 JSON with policy {policy}")
    # ... and its final Activation's plain "float32" keeps that layer in float32.
    mixed = cli.json("inspect", fixture, "--json", "--precision", "mixed_float16")
    dtypes = [layer["dtype"] for layer in mixed["layers"]]
    check(dtypes[-1] == "float32" and dtypes[:-1] == ["float16"] * (len(dtypes) - 1),
          f"tf.keras 2 JSON: layer dtypes under mixed_float16 {dtypes} (the final softmax in float32)")
    spec = json.loads(cli.run("export", fixture, "--to", "mixlab"))
    types = [l["type"] for l in spec["layers"]]
    check(types == ["Rescaling", "Conv2D", "MaxPooling2D", "Conv2D", "MaxPooling2D", "Flatten",
                    "Dense", "Dropout", "Dense", "Activation"],
          f"tf.keras 2 JSON: layers {types}")


STEP_LINE = re.compile(r"^(\d+)/\1 - \d+s \d+(s|ms|us)/step - accuracy: [0-9.]+ - loss: [0-9.na]+$", re.M)
MEDIAN_LINE = re.compile(r"^median step ms: [0-9.]+ ", re.M)


def part_scripts(cli, source, work, torch_python):
    """Each built-in's exported Keras and PyTorch scripts train for 3 steps and print step
    times. fashion-* on Debian's Fashion-MNIST when it is installed, else on IDX files written
    here; the CIFAR models on synthetic data of their shape (batch 8 to keep cifar100-convnet's
    4096-wide layers quick)."""
    fashion = "fashion-mnist"
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        fashion, _, _ = make_dataset(work, builtin_spec(source, "fashion-mlp"), 64, 16)
    plans = {
        "fashion-mlp": (fashion, "mixed_float16", 32),
        "fashion-cnn": (fashion, "mixed_bfloat16", 32),
        "cifar10-mlp": ("synthetic:32x32x3:10:64", "float32", 8),
        "cifar100-convnet": ("synthetic:32x32x3:100:64", "mixed_bfloat16", 8),
    }
    # Graphs: a functional Keras model, a PyTorch Graph of per-layer modules.
    for spec, dataset, policy in ((GRAPH_SPEC, "synthetic:28x28x1:10:64", "mixed_float16"),
                                  (BN_NET_SPEC, "synthetic:32x32x3:10:64", "mixed_bfloat16")):
        path = work / f"{spec['name']}.script.json"
        path.write_text(json.dumps(spec))
        plans[str(path)] = (dataset, policy, 8)
    env = dict(os.environ, KERAS_BACKEND="jax")
    for name, (dataset, policy, batch) in plans.items():
        label = pathlib.Path(name).name
        with attempt(f"scripts {label}"):
            for kind, python in (("keras", sys.executable), ("pytorch", torch_python)):
                script = work / f"{label}-{kind}.py"
                cli.run("export", name, "--to", kind, "--steps", 3, "--dataset", dataset,
                        "--precision", policy, "--batch-size", batch, "--no-eval", "-o", script)
                start = time.monotonic()
                done = subprocess.run([python, script], capture_output=True, text=True, env=env)
                seconds = time.monotonic() - start
                out = done.stdout
                ok = done.returncode == 0 and STEP_LINE.search(out) and MEDIAN_LINE.search(out)
                line = STEP_LINE.search(out)
                check(bool(ok), f"script {label} {kind} ({policy}): ran 3 steps in {seconds:.1f} s: "
                      + (line.group(0) if line else f"exit {done.returncode}\n{out}\n{done.stderr[-3000:]}"))


def print_table():
    if not RESULTS:
        return
    log("\nParity with Keras 3 (largest differences seen):")
    log(f"| {'check':<30} | {'model':<30} | {'largest rel. diff':>17} | {'tolerance':>9} |")
    log(f"|{'-' * 32}|{'-' * 32}|{'-' * 19}:|{'-' * 10}:|")
    for check_name, model, diff, tol, passed in RESULTS:
        log(f"| {check_name:<30} | {model:<30} | {diff:>17.2e} | {tol:>9.1e} |" + ("" if passed else " FAIL"))


# --- FP8 (issue 30): the formats against ml_dtypes, the scales against keras.quantizers ------


def fp8_inputs():
    """float32 values for the conversions: every bfloat16 (2^16 bit patterns), each value of
    both formats and every midpoint between neighbours with the float32 values one and two
    steps either side, the range's ends, float32 subnormals, and a million random bit patterns."""
    import ml_dtypes
    values = [(np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)]
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
        finite = np.sort(codes[np.isfinite(codes)])
        mids = (finite[:-1] + (finite[1:] - finite[:-1]) / 2).astype(np.float32)
        points = np.concatenate([finite, mids, [finite[-1] * 1.0625, finite[-1] * 1.125, finite[-1] * 2]])
        points = points.astype(np.float32)
        for steps in range(1, 3):
            up, down = points.copy(), points.copy()
            for _ in range(steps):
                up = np.nextafter(up, np.float32(np.inf))
                down = np.nextafter(down, np.float32(-np.inf))
            values += [points, up, down]
    values.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.1754942e-38,
                            3.4028235e38, -3.4028235e38], np.float32))
    rng = np.random.default_rng(30)
    values.append(rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32))
    return np.concatenate(values).astype(np.float32)


def part_fp8(tool, work):
    import ml_dtypes
    from keras import ops, quantizers
    x = fp8_inputs()
    (work / "fp8-in.bin").write_bytes(x.tobytes())
    subprocess.run([tool, "encode", work / "fp8-in.bin", work / "fp8-out.bin"], check=True)
    got = np.frombuffer((work / "fp8-out.bin").read_bytes(), np.uint8).reshape(2, -1)
    for row, dtype, name in ((0, ml_dtypes.float8_e4m3fn, "E4M3"), (1, ml_dtypes.float8_e5m2, "E5M2")):
        top = float(ml_dtypes.finfo(dtype).max)
        # Keras's quantize_and_dequantize: clip to the format's range, then ml_dtypes' cast.
        expected = np.clip(x, -top, top).astype(dtype)
        mine = got[row].view(dtype)
        nan_expected = np.isnan(expected.astype(np.float32))
        nan_mine = np.isnan(mine.astype(np.float32))
        same = (got[row] == expected.view(np.uint8)) | (nan_expected & nan_mine)
        wrong = np.flatnonzero(~same)
        check(wrong.size == 0,
              f"fp8 {name}: {x.size} float32 values (every bfloat16 among them) convert as ml_dtypes "
              f"{ml_dtypes.__version__} after Keras's clip" +
              ("" if wrong.size == 0 else
               f"; {wrong.size} differ, e.g. {x[wrong[0]]!r}: MixLab 0x{got[row][wrong[0]]:02x}, "
               f"ml_dtypes 0x{expected.view(np.uint8)[wrong[0]]:02x}"))

    rng = np.random.default_rng(31)
    for dtype, name in ((ml_dtypes.float8_e4m3fn, "e4m3"), (ml_dtypes.float8_e5m2, "e5m2")):
        top = ops.cast(float(ml_dtypes.finfo(dtype).max), "float32")
        for history in (1, 4, 16):
            amax = (np.exp(rng.normal(0, 6, 60)) * rng.choice([0, 1], 60, p=[0.1, 0.9])).astype(np.float32)
            amax[[17, 33]] = [np.inf, np.nan]
            (work / "fp8-amax.bin").write_bytes(amax.tobytes())
            subprocess.run([tool, "scales", name, str(history), "0", "max", work / "fp8-amax.bin",
                            work / "fp8-scales.bin"], check=True)
            mine = np.frombuffer((work / "fp8-scales.bin").read_bytes(), np.float32)
            scale, hist, keras_scales = ops.ones((), "float32"), ops.zeros((history,), "float32"), []
            for a in amax:  # Dense._float8_call's order: the scale from the history, then the push
                new_scale = quantizers.compute_float8_scale(ops.max(hist, axis=0), scale, top)
                hist = quantizers.compute_float8_amax_history(ops.convert_to_tensor(a), hist)
                scale = new_scale
                keras_scales.append(float(scale))
            keras_scales = np.array(keras_scales, np.float32)
            same = np.array_equal(mine, keras_scales)
            check(same, f"fp8 scales {name}, history {history}: 60 steps of amaxes (zeros, inf and NaN "
                        f"among them) give keras.quantizers' scales bit for bit" +
                  ("" if same else f"\n  MixLab {mine}\n  Keras  {keras_scales}"))


FP8_TRAIN_STEPS = 20


FP8_ROLES = ("input", "kernel", "gradient")


def compare_fp8_scales(out, keras_scales, when, name, tag):
    """MixLab's scales after a run's last step (train --json's fp8_tensors), per FP8 matmul in
    (layer, part) order, against Keras's (input, kernel, gradient) per quantized matmul
    (keras_fp8_matmuls' order)."""
    by_part = {}
    for t in out.get("fp8_tensors", []):
        by_part.setdefault((t["layer"], t["part"]), {})[t["role"]] = t["scale"]
    mine = [tuple(by_part[k].get(r) for r in FP8_ROLES) for k in sorted(by_part)]
    if check(len(mine) == len(keras_scales),
             f"fp8 {tag}: MixLab reports {len(mine)} FP8 matmuls, Keras quantized "
             f"{len(keras_scales)} matmuls"):
        for i, (m, theirs) in enumerate(zip(mine, keras_scales)):
            for role, a, b in zip(FP8_ROLES, m, theirs):
                record(f"{role} scale {when} (matmul {i})", name, abs(a - b) / abs(b),
                       FP8_SCALE_RTOL)


def keras_fp8_run(spec, weights, x, y, lr, steps):
    """Keras's float8 training: the model under mixed_bfloat16, its weights, then
    model.quantize("float8") (every Dense gets its E4M3 input and kernel scales and an E5M2
    output-gradient scale, amax histories of 1024); the loss before each SGD step and, after the
    last, each Dense's three scales."""
    model = build_keras(spec, "mixed_bfloat16")
    model.set_weights(weights)
    model.quantize("float8")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr),
                  loss=spec.get("loss", "sparse_categorical_crossentropy"))
    losses = []
    for _ in range(steps):
        model.reset_metrics()
        losses.append(float(model.train_on_batch(x, y)))
    return np.array(losses), fp8_scales_of(keras_fp8_matmuls(model))


def part_fp8_train(cli, source, work, batch):
    """mixed_float8 against Keras's float8 training, fashion-mlp (its two Dense layers in FP8,
    the float32 softmax outside) from the same .keras weights on one batch."""
    spec = builtin_spec(source, "fashion-mlp")
    name = spec["name"]
    path = work / f"{name}.fp8.keras"
    model = save_keras(spec, path, seed=13)
    weights = model.get_weights()
    dataset, (x, y), _ = make_dataset(work, spec, batch, FORWARD_COUNT, seed=98)
    lr = 0.01
    tag = f"{name}-sgd-mixed_float8"
    with attempt(f"train {tag}"):
        out = {}
        mixlab = mixlab_losses(cli, work, path, dataset, batch, "sgd", lr, "mixed_float8",
                               FP8_TRAIN_STEPS, tag, result=out)
        expected, keras_scales = keras_fp8_run(spec, weights, x, y, lr, FP8_TRAIN_STEPS)
        compare_fp8_scales(out, keras_scales, f"after {FP8_TRAIN_STEPS} steps", name, tag)
        if check(len(mixlab) == FP8_TRAIN_STEPS, f"train {tag}: MixLab recorded {len(mixlab)} steps"):
            diffs = np.abs(mixlab - expected) / np.abs(expected)
            log(f"  {tag}: losses Keras {expected[0]:.6f} -> {expected[-1]:.6f}, "
                f"MixLab {mixlab[0]:.6f} -> {mixlab[-1]:.6f}; worst step {int(np.argmax(diffs)) + 1}")
            record(f"{FP8_TRAIN_STEPS} sgd steps mixed_float8", name, float(np.max(diffs)), FP8_LOSS_RTOL)
        log(f"  {tag}: Keras's scales after {FP8_TRAIN_STEPS} steps (input, kernel, gradient) "
            f"per Dense: {keras_scales}")
    with attempt(f"continue {tag}"):
        fp8_continue_checks(cli, work, spec, weights, dataset, x, y, batch, lr)
    # The same with a MultiHeadAttention, whose four projections Keras quantizes as EinsumDense
    # sub-layers (their states filed under the layer's query_dense, key_dense, ...).
    with attempt(f"continue {FP8_ATTENTION_SPEC['name']}"):
        attention_path = work / f"{FP8_ATTENTION_SPEC['name']}.keras"
        attention = save_keras(FP8_ATTENTION_SPEC, attention_path, seed=17)
        dataset, (x, y), _ = make_dataset(work, FP8_ATTENTION_SPEC, batch, FORWARD_COUNT, seed=97)
        fp8_continue_checks(cli, work, FP8_ATTENTION_SPEC, attention.get_weights(), dataset, x, y,
                            batch, lr)


FP8_CONTINUE_STEPS = 10
FP8_ATTENTION_SPEC = {
    "name": "fp8-attention", "input": {"shape": [8]},
    "layers": [
        {"type": "Embedding", "input_dim": 32, "output_dim": 16},
        {"type": "MultiHeadAttention", "num_heads": 2, "key_dim": 16},
        {"type": "GlobalAveragePooling1D"},
        {"type": "Dense", "units": 4},
        {"type": "Activation", "activation": "softmax", "dtype": "float32"},
    ],
}


def keras_fp8_matmuls(model):
    """Keras's float8-quantized matmuls in MixLab's order of its FP8 matmuls (layer, part): a
    Dense each, a MultiHeadAttention's query, key, value and output EinsumDense sub-layers."""
    out = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.MultiHeadAttention):
            out += [layer._query_dense, layer._key_dense, layer._value_dense, layer._output_dense]
        elif isinstance(layer, keras.layers.Dense):
            out.append(layer)
    return [l for l in out if getattr(l, "quantization_mode", None) == "float8"]


def fp8_scales_of(layers):
    return [(float(l.inputs_scale.numpy()), float(l.kernel_scale.numpy()),
             float(l.outputs_grad_scale.numpy())) for l in layers]


def fp8_continue_checks(cli, work, spec, weights, dataset, x, y, batch, lr):
    """A float8 model Keras trained and saved, trained on in both: MixLab imports the .keras with
    each Dense's FP8 scales and amax histories and continues from them, so its first step
    quantizes with Keras's saved scales (not the initial 1) and the next steps' losses and the
    final scales follow Keras's own continuation."""
    name = spec["name"]
    model = build_keras(spec, "mixed_bfloat16")
    model.set_weights(weights)
    model.quantize("float8")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr),
                  loss=spec.get("loss", "sparse_categorical_crossentropy"))
    for _ in range(FP8_TRAIN_STEPS):
        model.train_on_batch(x, y)
    path = work / f"{name}.fp8-trained.keras"
    model.save(path)
    matmuls = keras_fp8_matmuls(model)
    saved = fp8_scales_of(matmuls)
    expected = []
    for _ in range(FP8_CONTINUE_STEPS):
        model.reset_metrics()
        expected.append(float(model.train_on_batch(x, y)))
    expected = np.array(expected)
    after = fp8_scales_of(matmuls)
    tag = f"{name}-sgd-mixed_float8-continued"
    out = {}
    mixlab = mixlab_losses(cli, work, path, dataset, batch, "sgd", lr, "mixed_float8",
                           FP8_CONTINUE_STEPS, tag, result=out)
    check(any("FP8 scales and amax histories from" in n for n in out.get("notes", [])),
          f"fp8 {tag}: the run says it continues from the file's FP8 states "
          f"(notes: {out.get('notes')})")
    text = cli.run("runs", "export", out["run_id"], "--fp8", "--db", work / f"{tag}.sqlite")
    rows = list(csv.DictReader(io.StringIO(text)))
    first = min(int(r["step"]) for r in rows) if rows else -1
    firsts = {}
    for r in rows:
        if int(r["step"]) == first:
            firsts[(int(r["layer"]), int(r["part"]), r["role"])] = float(r["scale"])
    layers = sorted({k[:2] for k in firsts})
    if check(len(layers) == len(saved), f"fp8 {tag}: MixLab's first step has {len(layers)} FP8 "
                                        f"matmuls, Keras saved {len(saved)} quantized ones"):
        for i, (key, theirs) in enumerate(zip(layers, saved)):
            for role, b in zip(FP8_ROLES, theirs):
                a = firsts.get((*key, role), float("nan"))
                record(f"first continued step's {role} scale = the saved one (matmul {i})", name,
                       abs(a - b) / abs(b), 0.0)
    compare_fp8_scales(out, after, f"after {FP8_CONTINUE_STEPS} continued steps", name, tag)
    if check(len(mixlab) == FP8_CONTINUE_STEPS, f"train {tag}: MixLab recorded {len(mixlab)} steps"):
        diffs = np.abs(mixlab - expected) / np.abs(expected)
        log(f"  {tag}: Keras saved scales {saved}; losses Keras {expected[0]:.6f} -> "
            f"{expected[-1]:.6f}, MixLab {mixlab[0]:.6f} -> {mixlab[-1]:.6f}")
        record(f"{FP8_CONTINUE_STEPS} more sgd steps mixed_float8 from a saved float8 model", name,
               float(np.max(diffs)), FP8_LOSS_RTOL)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="mixlab-cli")
    parser.add_argument("--source", default=str(pathlib.Path(__file__).resolve().parents[2]),
                        help="MixLab's source tree (for resources/models)")
    parser.add_argument("--work", help="a folder for the files (default: a temporary one, removed)")
    parser.add_argument("--batch", type=int, default=16, help="the training batch (and split) size")
    parser.add_argument("--policies", default="float32,mixed_bfloat16,mixed_float16",
                        help="train: the policies (comma-separated)")
    parser.add_argument("--torch-python", default="/usr/bin/python3", help="scripts: Python with torch")
    parser.add_argument("--fp8-tool", help="fp8: the fp8_codes filter (tests/core/fp8_codes.cpp)")
    parser.add_argument("parts", nargs="+",
                        choices=["structure", "forward", "names", "train", "graphs", "sequences",
                                 "attention", "applications", "tfkeras", "torch", "scripts", "fp8",
                                 "fp8_train"])
    args = parser.parse_args()
    cli = Cli(os.path.abspath(args.cli))
    source = pathlib.Path(args.source)
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp(prefix="mixlab-keras-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"Keras {keras.__version__}, backend {keras.backend.backend()}; mixlab-cli {args.cli}; work {work}")
    parts = {
        "structure": lambda: part_structure(cli, source, work),
        "forward": lambda: part_forward(cli, source, work, args.batch),
        "names": lambda: part_archive_names(cli, source, work, args.batch),
        "train": lambda: part_train(cli, source, work, args.batch, args.policies.split(",")),
        "graphs": lambda: part_graphs(cli, work, args.batch, args.policies.split(",")),
        "sequences": lambda: part_sequences(cli, work, args.batch, args.policies.split(",")),
        "attention": lambda: part_attention(cli, work, args.batch, args.policies.split(",")),
        "applications": lambda: part_applications(cli, work, args.batch),
        "tfkeras": lambda: part_tfkeras(cli, source, work),
        "torch": lambda: part_torch_forward(cli, source, work, args.torch_python),
        "scripts": lambda: part_scripts(cli, source, work, args.torch_python),
        "fp8": lambda: part_fp8(args.fp8_tool, work),
        "fp8_train": lambda: part_fp8_train(cli, source, work, args.batch),
    }
    try:
        for part in args.parts:
            try:
                parts[part]()
            except Exception as e:  # a failed command: a failure of this part, with its words
                FAILURES.append(f"{part}: {e}")
                log(f"FAIL: {part}: {e}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print_table()
    if FAILURES:
        log(f"\n{len(FAILURES)} check(s) failed")
        return 1
    log("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
