#!/usr/bin/env python3
"""Keras 3 on TensorFlow's CPU build beside `mixlab-cli bench` (issue 27): the same model (a
MixLab spec, built by tests/keras/keras_build.py), batch, optimizer (Keras's defaults), thread
count and synthetic data; the median step time after a warm-up, per policy, as JSON rows.

  KERAS_BACKEND=tensorflow python keras_peer.py --spec resnet20.json --batch 128 --optimizer sgd \
      --threads 2 --steps 30 --warmup 5 [--precisions float32,mixed_bfloat16]

A figure, not a test: scripts/bench-keras.sh runs it in a venv with tensorflow-cpu from PyPI.
"""
import argparse
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "keras"))
    from keras_build import build_keras

    spec = json.loads(pathlib.Path(args.spec).read_text())
    shape = tuple(spec["input"]["shape"])
    classes = [l["units"] for l in spec["layers"] if l["type"] == "Dense"][-1]
    rng = np.random.default_rng(1)
    first = spec["layers"][0]
    if first["type"] == "Embedding":  # token ids (issue 29's tiny-gpt), as MixLab's tokens data
        x = rng.integers(0, first["input_dim"], (args.batch,) + shape).astype(np.int32)
    else:
        x = rng.integers(0, 256, (args.batch,) + shape).astype(np.float32)
    rows = []
    for policy in args.precisions.split(","):
        keras.backend.clear_session()
        keras.utils.set_random_seed(1)
        model = build_keras(spec, policy)
        # A label per step where the model predicts every step (a language model), else one.
        per_step = len(model.output_shape) == 3
        y = rng.integers(0, classes, (args.batch,) + (shape[:1] if per_step else ())).astype(np.int32)
        optimizer = keras.optimizers.SGD() if args.optimizer == "sgd" else keras.optimizers.Adam()
        model.compile(optimizer=optimizer, loss=spec.get("loss", "sparse_categorical_crossentropy"),
                      jit_compile=False)
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            times.append((time.perf_counter() - start) * 1e3)
        measured = sorted(times[args.warmup:])
        rows.append({"model": spec["name"], "precision": policy, "batch_size": args.batch,
                     "optimizer": args.optimizer, "median_step_ms": measured[len(measured) // 2],
                     "keras": keras.__version__, "tensorflow": tf.__version__})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
