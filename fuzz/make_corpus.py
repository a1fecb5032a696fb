#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (committed; run again after a format change).

Usage: fuzz/make_corpus.py [--mixlab-cli PATH] [--keras-seeds PATH]
The run_store seeds need a mixlab-cli (e.g. build/release/app/mixlab-cli) to record a few runs
and a doctor report, the keras_archive seeds the test helper that writes them
(build/release/tests/interop/keras_fuzz_seeds); without them they are left as they are.
"""
import argparse
import gzip
import itertools
import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def gz(data):
    return gzip.compress(data, mtime=0)


# --- model_spec: the example models and one model per layer type and field.
def model_seeds():
    models = os.path.join(ROOT, "resources", "models")
    for name in sorted(os.listdir(models)):
        if name.endswith(".json"):
            with open(os.path.join(models, name), "rb") as f:
                write("model_spec", name, f.read())
    write("model_spec", "every-field.json", """{"name": "every field", "input": {"shape": [16, 12, 3]},
 "loss": "categorical_crossentropy",
 "layers": [
   {"type": "Rescaling", "scale": 0.5, "offset": -1, "name": "scale"},
   {"type": "Conv2D", "filters": 4, "kernel_size": 3, "strides": [2, 1], "padding": "valid",
    "activation": "gelu", "use_bias": false},
   {"type": "AveragePooling2D", "pool_size": [2, 3], "strides": null, "padding": "same"},
   {"type": "MaxPooling2D", "pool_size": 1, "strides": 1},
   {"type": "Dropout", "rate": 0.25},
   {"type": "Flatten"},
   {"type": "Dense", "units": 5, "activation": "tanh", "dtype": "float32"},
   {"type": "Activation", "activation": "sigmoid"}]}
""")
    write("model_spec", "features.json",
          '{"input": {"shape": [20]}, "loss": "binary_crossentropy", "layers": '
          '[{"type": "Dense", "units": 1, "activation": "sigmoid"}]}')
    write("model_spec", "same-padding.json",
          '{"name": "same", "input": {"shape": [7, 5, 2]}, "layers": ['
          '{"type": "Conv2D", "filters": 3, "kernel_size": [4, 2], "strides": 3, '
          '"padding": "same", "activation": "relu"}, {"type": "MaxPooling2D", "padding": "same"}, '
          '{"type": "Flatten"}, {"type": "Dense", "units": 10}, '
          '{"type": "Activation", "activation": "softmax", "dtype": "float32"}]}')
    write("model_spec", "duplicate-key.json",
          '{"input": {"shape": [2]}, "layers": [{"type": "Dense", "units": 1, "units": 2}]}')
    write("model_spec", "bad-shape.json",
          '{"input": {"shape": [2, 2, 1]}, "layers": [{"type": "Conv2D", "filters": 1, '
          '"kernel_size": 3}]}')


# --- idx: [4 bytes big-endian: length of the image file][image file][label file].
def idx_images(count, rows, cols):
    pixels = bytes((i * 37) % 256 for i in range(count * rows * cols))
    return struct.pack(">IIII", 0x803, count, rows, cols) + pixels


def idx_labels(count):
    return struct.pack(">II", 0x801, count) + bytes(i % 10 for i in range(count))


def idx_input(images, labels):
    return struct.pack(">I", len(images)) + images + labels


def idx_seeds():
    images, labels = idx_images(3, 4, 5), idx_labels(3)
    write("idx", "plain", idx_input(images, labels))
    write("idx", "gzip-images", idx_input(gz(images), labels))
    write("idx", "gzip-labels", idx_input(images, gz(labels)))
    write("idx", "gzip-both", idx_input(gz(images), gz(labels)))
    write("idx", "28x28", idx_input(idx_images(1, 28, 28), idx_labels(1)))
    write("idx", "truncated-gzip", idx_input(gz(images)[:-9], labels))
    write("idx", "count-mismatch", idx_input(images, idx_labels(2)))


# --- cifar: [1 byte: 0 CIFAR-10, 1 CIFAR-100][the batch file].
def cifar_records(count, label_bytes):
    out = b""
    for r in range(count):
        labels = bytes([r % 20, r % 100]) if label_bytes == 2 else bytes([r % 10])
        out += labels + bytes((i + 7 * r) % 256 for i in range(3072))
    return out


def cifar_seeds():
    write("cifar", "cifar10-2", b"\x00" + cifar_records(2, 1))
    write("cifar", "cifar100-1", b"\x01" + cifar_records(1, 2))
    write("cifar", "cifar10-gzip", b"\x00" + gz(cifar_records(2, 1)))
    write("cifar", "cifar100-gzip", b"\x01" + gz(cifar_records(2, 2)))


# --- csv_field: texts as run names, tags and notes hold them.
def csv_seeds():
    texts = ["fashion-cnn mixed_float16 b32", "", "with,comma", 'say "hi"', "two\r\nlines",
             "=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", "\tindented", "\rreturn",
             "'quoted already", "ünïcödé ✓", "1e-07"]
    for i, text in enumerate(texts):
        write("csv_field", "text-%02d" % i, text)
    for i, value in enumerate([0.1, -0.0, 1e300, 5e-324, float("inf"), float("nan")]):
        write("csv_field", "number-%02d" % i, struct.pack("<d", value) + b"x")


# --- run_store: databases as mixlab-cli records them, older schemas and other SQLite files.
TINY_MODEL = ('{"name": "tiny", "input": {"shape": [8, 8, 1]}, "layers": [{"type": "Flatten"}, '
              '{"type": "Dense", "units": 4, "activation": "relu"}, {"type": "Dense", "units": 2}, '
              '{"type": "Activation", "activation": "softmax", "dtype": "float32"}]}')


def shrink(path, wal=False):
    """Smallest pages, no free pages; rollback journal unless wal."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("PRAGMA page_size = 512")
    db.execute("VACUUM")
    if wal:
        db.execute("PRAGMA journal_mode = WAL")
    db.close()
    with open(path, "rb") as f:
        return f.read()


def store_seeds(cli):
    work = tempfile.mkdtemp(prefix="mixlab-corpus-")
    try:
        model = os.path.join(work, "tiny.json")
        with open(model, "w") as f:
            f.write(TINY_MODEL)
        db = os.path.join(work, "runs.sqlite")

        def run(*args):
            subprocess.run([cli, *args], check=True, stdout=subprocess.DEVNULL)

        common = ["--model", model, "--dataset", "synthetic:8x8x1:2:64", "--db", db, "--quiet",
                  "--threads", "1"]
        run("train", *common, "--steps", "4", "--batch-size", "16")
        run("train", *common, "--steps", "3", "--batch-size", "8", "--precision",
            "mixed_float16", "--layer-timing", "--optimizer", "sgd")
        run("runs", "rename", "--db", db, "1", "=cmd|x")
        run("runs", "tag", "--db", db, "1", "fast", "fp16")
        run("runs", "note", "--db", db, "2", 'a "note", with\nlines')
        run("doctor", model, "--measure", "--steps", "3", "--warmup", "1", "--batch-size", "8",
            "--db", db)

        def variant(name, sql=None, wal=False):
            path = os.path.join(work, name)
            shutil.copy(db, path)
            if sql:
                con = sqlite3.connect(path)
                con.executescript(sql)
                con.commit()
                con.close()
            write("run_store", name, shrink(path, wal))

        variant("v4-runs.sqlite")
        variant("v4-runs-wal.sqlite", wal=True)
        variant("v4-empty.sqlite", "DELETE FROM doctor_report_runs; DELETE FROM doctor_reports; "
                "DELETE FROM layer_times; DELETE FROM steps; DELETE FROM epochs; "
                "DELETE FROM run_tags; DELETE FROM runs;")
        variant("v4-running.sqlite", "UPDATE runs SET status = 'running', finished_at_ms = NULL "
                "WHERE id = 2;")
        variant("newer-schema.sqlite", "PRAGMA user_version = 5;")

        # Version 1 (schema.cpp's first migration) with the runs above, to be migrated.
        with open(os.path.join(ROOT, "app", "store", "schema.cpp")) as f:
            schema = f.read()
        v1_sql = re.search(r'kVersion1 = R"sql\((.*?)\)sql"', schema, re.S).group(1)
        v1 = os.path.join(work, "v1-runs.sqlite")
        con = sqlite3.connect(v1)
        con.executescript(v1_sql)
        con.execute("ATTACH DATABASE ? AS v4", (db,))
        for table in ("runs", "steps", "epochs", "run_tags"):
            columns = ", ".join(row[1] for row in con.execute("PRAGMA main.table_info(%s)" % table))
            con.execute("INSERT INTO main.%s (%s) SELECT %s FROM v4.%s" %
                        (table, columns, columns, table))
        con.commit()
        con.execute("DETACH DATABASE v4")
        con.execute("PRAGMA application_id = %d" % 0x4D584C42)
        con.execute("PRAGMA user_version = 1")
        con.commit()
        con.close()
        write("run_store", "v1-runs.sqlite", shrink(v1))

        other = os.path.join(work, "other.sqlite")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        con.execute("INSERT INTO notes (text) VALUES ('not a run database')")
        con.commit()
        con.close()
        write("run_store", "other-program.sqlite", shrink(other))
        write("run_store", "empty-file", b"")
    finally:
        shutil.rmtree(work)


# --- keras_json: the built-in models as export_keras_json writes them (with --mixlab-cli), and
# the Keras 2 and functional forms by hand. keras3-saved.json, written by Keras 3.12's
# model.to_json(), is kept as it is.
def keras_seeds(cli):
    if cli:
        for name in ("fashion-mlp", "fashion-cnn", "cifar10-mlp", "cifar100-convnet"):
            for policy in ("float32", "mixed_float16"):
                out = subprocess.run([cli, "export", name, "--to", "keras-json", "--precision",
                                      policy], check=True, capture_output=True).stdout
                write("keras_json", "%s-%s.json" % (name, policy), out)
    write("keras_json", "tf-keras-2.json", """{"class_name": "Sequential", "config": {"name": "s",
  "layers": [{"class_name": "InputLayer", "config": {"batch_input_shape": [null, 8, 8, 3],
  "dtype": "float32", "name": "input_1"}}, {"class_name": "Conv2D", "config": {"name": "conv2d",
  "dtype": {"class_name": "Policy", "config": {"name": "mixed_float16"}}, "filters": 4,
  "kernel_size": [3, 3], "strides": [1, 1], "padding": "same", "activation": "relu"}},
  {"class_name": "MaxPool2D", "config": {"name": "p", "pool_size": [2, 2], "strides": null}},
  {"class_name": "Flatten", "config": {"name": "flatten"}}, {"class_name": "Dense", "config":
  {"name": "dense", "units": 2, "activation": "softmax", "dtype": "float32",
  "kernel_initializer": {"class_name": "HeNormal", "config": {"seed": 1}}}}]},
  "keras_version": "2.15.0", "backend": "tensorflow"}""")
    write("keras_json", "functional.json", """{"class_name": "Functional", "config": {"name": "f",
  "layers": [{"class_name": "InputLayer", "config": {"batch_input_shape": [null, 8],
  "name": "in"}, "name": "in", "inbound_nodes": []}, {"class_name": "Dense", "config":
  {"name": "d", "units": 4}, "name": "d", "inbound_nodes": [[["in", 0, 0, {}]]]},
  {"class_name": "ReLU", "config": {"name": "r"}, "name": "r", "inbound_nodes":
  [[["d", 0, 0, {}]]]}], "input_layers": [["in", 0, 0]], "output_layers": [["r", 0, 0]]}}""")


# --- keras_archive: small .keras archives written with libzip and HDF5 by the test helper
# tests/interop/keras_fuzz_seeds (with --keras-seeds), and hostile ones by hand.
def keras_archive_seeds(tool):
    if tool:
        folder = os.path.join(CORPUS, "keras_archive")
        os.makedirs(folder, exist_ok=True)
        subprocess.run([tool, folder], check=True)
    write("keras_archive", "not-a-zip", b"PK\x03\x04 but nothing else")
    write("keras_archive", "empty", b"")


# --- sweep_file: sweep files as users write them and as the store keeps them.
def sweep_seeds():
    write("sweep_file", "grid.json", """{"name": "mp", "models": ["cifar10-mlp", "fashion-mlp"],
  "repeats": 3, "device": "cpu", "settings": {"precision": ["float32", "mixed_bfloat16"],
  "batch-size": [32, 64], "steps": 20, "tf32": true, "learning_rate": 0.01}}""")
    write("sweep_file", "slurm.json", """{"models": ["fashion-cnn"], "settings": {"seed": 7,
  "optimizer": ["sgd", "adam"], "dataset": "synthetic:8x8x1:4:64"},
  "executor": "slurm", "slurm": {"partition": "gpu", "gres": "gpu:1", "time": "00:10:00"}}""")
    write("sweep_file", "minimal.json", '{"models": ["m"]}')
    write("sweep_file", "bad-value.json",
          '{"models": ["m"], "settings": {"precision": "float64", "batch-size": [0, -1]}}')
    write("sweep_file", "too-many.json",
          '{"models": ["m"], "repeats": 1000, "settings": {"batch-size": [1, 2, 3, 4, 5, 6, 7, 8, '
          '9, 10, 11]}}')


# --- gpu_profiles: the built-in profile file, and one profile with every figure.
ONE_PROFILE = """{"format": "mixlab-gpu-profiles-1", "documents": {"doc": "A datasheet"},
  "profiles": [{"name": "Test GPU", "aliases": ["test-gpu"], "compute_capability": "8.6",
    "tensor_cores": true, "sm_count": 10, "boost_clock_mhz": 1500, "memory_bytes": 8589934592,
    "memory_bandwidth_gb_s": 300, "l2_bytes": 4194304,
    "peak_tflops": {"float32": 10, "tf32": 20, "float16_acc32": 40, "float16_acc16": 80,
                    "bfloat16": 40, "fp8": null},
    "sources": {"compute_capability": "doc", "sm_count": "doc", "boost_clock_mhz": "doc",
                "memory_bytes": "doc", "memory_bandwidth_gb_s": "doc", "l2_bytes": "doc",
                "peak_tflops": "doc"}}]}"""


def profile_seeds():
    with open(os.path.join(ROOT, "resources", "doctor", "gpu-profiles.json"), "rb") as f:
        write("gpu_profiles", "builtin.json", f.read())
    write("gpu_profiles", "one.json", ONE_PROFILE)
    write("gpu_profiles", "tiny-bandwidth.json",
          ONE_PROFILE.replace('"memory_bandwidth_gb_s": 300', '"memory_bandwidth_gb_s": 1e-308'))


# --- calibration_cache: the doctor's CPU and GPU caches as it writes them.
CPU_ENTRY = {"cpu": "Intel(R) Xeon(R) Processor", "threads": 2, "isa": "avx512_core_amx",
             "onednn": "2.6.3 avx512_core_amx", "f32_matmul_flops": 342166307316.28,
             "bf16_matmul_flops": 2446674784713.77, "f32_small_matmul_flops": 284477260301.25,
             "f32_conv_flops": 380453781915.96, "stream_bytes_per_s": 53937721814.03,
             "pooling_bytes_per_s": 15643927303.57, "call_overhead_s": 1.988e-06}
GPU_ENTRY = {"gpu": "NVIDIA GeForce RTX 2060", "compute_capability": "7.5",
             "libraries": "CUDA 12.2, cuBLAS 12.2, cuDNN 9.1", "sm_count": 30, "clock_mhz": 1680,
             "memory_bytes": 6442450944, "l2_bytes": 3145728,
             "memory_bus_bytes_per_s": 336e9, "f32_matmul_flops": 6.1e12,
             "tf32_matmul_flops": 0, "f16_matmul_flops": 24.9e12, "bf16_matmul_flops": 0,
             "copy_bytes_per_s": 290e9, "host_copy_bytes_per_s": 12.1e9,
             "call_overhead_s": 6e-06}


def cache_seeds():
    write("calibration_cache", "cpu.json", json.dumps([CPU_ENTRY], indent=2))
    write("calibration_cache", "gpu.json", json.dumps([GPU_ENTRY], indent=2))
    absurd = dict(CPU_ENTRY, threads=4, stream_bytes_per_s=1e-300, f32_matmul_flops=1e-300)
    write("calibration_cache", "mixed.json", json.dumps([CPU_ENTRY, GPU_ENTRY, absurd]))
    write("calibration_cache", "not-a-list.json", '{"cpu": "x"}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixlab-cli", help="records the run_store seeds")
    parser.add_argument("--keras-seeds", help="tests/interop/keras_fuzz_seeds, which writes the "
                        "keras_archive seeds")
    args = parser.parse_args()
    model_seeds()
    idx_seeds()
    cifar_seeds()
    csv_seeds()
    keras_seeds(args.mixlab_cli)
    keras_archive_seeds(args.keras_seeds)
    sweep_seeds()
    profile_seeds()
    cache_seeds()
    if args.mixlab_cli:
        store_seeds(args.mixlab_cli)
    else:
        print("make_corpus.py: no --mixlab-cli, the run_store seeds are left as they are")


if __name__ == "__main__":
    main()
