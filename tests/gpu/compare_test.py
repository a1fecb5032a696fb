#!/usr/bin/env python3
"""Unit test of compare.py (ctest gpu.compare_table, label unit): two small JSON files in,
the table's rows, ratios and pass/FAIL marks out, and the exit status."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402


def row(model, batch, precision, ms, tf32=False, graphs=False):
    return {"model": model, "batch_size": batch, "precision": precision, "tf32": tf32,
            "cuda_graphs": graphs, "median_step_ms": ms}


MIXLAB = [
    row("cifar10-mlp", 32, "float32", 0.9),                  # 0.90x: pass
    row("cifar10-mlp", 32, "float32", 1.2, tf32=True),       # 1.20x: FAIL
    row("cifar10-mlp", 32, "mixed_float16", 0.85, graphs=True),  # 0.85x of eager: FAIL (0.8)
    row("cifar10-mlp", 32, "float32", 0.7, graphs=True),     # 0.70x: pass
    row("cifar100-convnet", 1020, "mixed_bfloat16", 5.0),    # no peer row: FAIL
    row("mlp-4x4096", 4096, "float32", 40.0),                # 1.00x: pass (the bound holds)
    row("mlp-4x4096", 4096, "mixed_float16", 8.0),           # 5x float32: pass
    row("mlp-4x4096", 4096, "mixed_bfloat16", 12.0),         # 3.3x float32: FAIL
    row("mlp-4x4096", 4096, "mixed_float8", 9.0),            # 0.75x bf16: pass; 4.4x float32
]
PEER = [
    row("cifar10-mlp", 32, "float32", 1.0),
    row("cifar10-mlp", 32, "float32", 1.0, tf32=True),
    row("cifar10-mlp", 32, "mixed_float16", 1.0),
    row("mlp-4x4096", 4096, "float32", 40.0),
    row("mlp-4x4096", 4096, "mixed_float16", 7.0),
    row("mlp-4x4096", 4096, "mixed_bfloat16", 11.0),
]


def run_cli(mixlab, peer):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, rows in (("mixlab.json", mixlab), ("peer.json", peer)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w") as f:
                json.dump(rows, f)
        return subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), *paths],
                              capture_output=True, text=True)


class CompareTest(unittest.TestCase):
    def test_checks_have_the_ratios_targets_and_marks(self):
        checks = compare.compare(MIXLAB, PEER)
        got = [(c.row, c.policy, None if c.value is None else round(c.value, 3), c.target, c.ok)
               for c in checks]
        self.assertEqual(got, [
            ("cifar10-mlp b32", "float32", 0.9, "<= 1.0x", True),
            ("cifar10-mlp b32", "float32+tf32", 1.2, "<= 1.0x", False),
            ("cifar10-mlp b32 graphs", "mixed_float16", 0.85, "<= 0.8x", False),
            ("cifar10-mlp b32 graphs", "float32", 0.7, "<= 0.8x", True),
            ("cifar100-convnet b1020", "mixed_bfloat16", None, "<= 1.0x", False),
            ("mlp-4x4096 b4096", "float32", 1.0, "<= 1.0x", True),
            ("mlp-4x4096 b4096", "mixed_float16", 1.143, "<= 1.0x", False),
            ("mlp-4x4096 b4096", "mixed_bfloat16", 1.091, "<= 1.0x", False),
            ("mlp-4x4096 b4096 vs bf16", "mixed_float8", 0.75, "<= 1.0x bf16", True),
            ("mlp-4x4096 b4096 speedup", "mixed_float16", 5.0, ">= 4x float32", True),
            ("mlp-4x4096 b4096 speedup", "mixed_bfloat16", 3.333, ">= 4x float32", False),
            ("mlp-4x4096 b4096 speedup", "mixed_float8", 4.444, ">= 4x float32", True),
        ])

    def test_the_printed_table_marks_each_row_and_the_run_fails(self):
        result = run_cli(MIXLAB, PEER)
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stdout.splitlines()
        table = [l for l in lines if l.startswith(("cifar", "mlp-"))]
        self.assertEqual(len(table), 12)
        self.assertEqual([l.split()[-1] for l in table],
                         ["pass", "FAIL", "FAIL", "pass", "FAIL", "pass", "FAIL", "FAIL", "pass",
                          "pass", "FAIL", "pass"])
        first = table[0].split()
        self.assertEqual(first[:6], ["cifar10-mlp", "b32", "float32", "0.900", "1.000", "0.90"])
        missing = table[4].split()
        self.assertEqual(missing[3:6], ["5.000", "-", "-"])
        self.assertEqual(lines[-1], "6 of 12 checks pass, 6 FAIL")

    def test_all_passing_exits_zero(self):
        mixlab = [row("cifar10-mlp", 32, "float32", 0.5),
                  row("cifar10-mlp", 32, "float32", 0.5, graphs=True),
                  row("mlp-4x4096", 4096, "float32", 40.0),
                  row("mlp-4x4096", 4096, "mixed_bfloat16", 9.0)]
        peer = [row("cifar10-mlp", 32, "float32", 1.0), row("mlp-4x4096", 4096, "float32", 41.0),
                row("mlp-4x4096", 4096, "mixed_bfloat16", 9.5)]
        result = run_cli(mixlab, peer)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.splitlines()[-1], "5 of 5 checks pass")

    def test_unreadable_input_exits_two(self):
        result = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"),
                                 "/nonexistent/a.json", "/nonexistent/b.json"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 2)
        self.assertIn("compare.py:", result.stderr)


if __name__ == "__main__":
    unittest.main()
