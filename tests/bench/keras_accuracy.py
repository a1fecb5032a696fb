#!/usr/bin/env python3
"""Keras 3 on TensorFlow's CPU build trained on Fashion-MNIST beside `mixlab-cli train` (issue
27): the same model (a MixLab spec, built by tests/keras/keras_build.py), batch, optimizer
(Keras's defaults), epochs and thread count, reading Debian's dataset-fashion-mnist files as
MixLab does (pixels 0..255; the model's Rescaling divides). Prints, per policy, the test
accuracy after the last epoch as JSON rows.

  KERAS_BACKEND=tensorflow python keras_accuracy.py --spec resnet20-28.json --batch 128 \
      --optimizer adam --epochs 2 --threads 2 [--precisions float32,mixed_bfloat16]

A figure, not a test: scripts/accuracy-keras.sh runs it in a venv with tensorflow-cpu.
"""
import argparse
import gzip
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")


def idx(name):
    """An IDX file's array (images N x 28 x 28, labels N)."""
    import numpy as np
    raw = gzip.open(DATA / name, "rb").read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
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
    x_train = idx("train-images-idx3-ubyte.gz").astype(np.float32)[..., None]
    y_train = idx("train-labels-idx1-ubyte.gz").astype(np.int32)
    x_test = idx("t10k-images-idx3-ubyte.gz").astype(np.float32)[..., None]
    y_test = idx("t10k-labels-idx1-ubyte.gz").astype(np.int32)
    rows = []
    for policy in args.precisions.split(","):
        keras.backend.clear_session()
        keras.utils.set_random_seed(args.seed)
        model = build_keras(spec, policy)
        optimizer = keras.optimizers.SGD() if args.optimizer == "sgd" else keras.optimizers.Adam()
        model.compile(optimizer=optimizer, loss=spec.get("loss", "sparse_categorical_crossentropy"),
                      metrics=["accuracy"], jit_compile=False)
        start = time.perf_counter()
        model.fit(x_train, y_train, batch_size=args.batch, epochs=args.epochs, shuffle=True,
                  verbose=0)
        seconds = time.perf_counter() - start
        loss, accuracy = model.evaluate(x_test, y_test, batch_size=512, verbose=0)
        rows.append({"model": spec["name"], "precision": policy, "epochs": args.epochs,
                     "batch_size": args.batch, "optimizer": args.optimizer,
                     "test_accuracy": accuracy, "test_loss": loss, "train_seconds": seconds,
                     "keras": keras.__version__, "tensorflow": tf.__version__})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
