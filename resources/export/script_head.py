import argparse
import gzip
import os
import statistics
import struct
import time

# Change the settings below freely; `--steps N` overrides STEPS.
MODEL_NAME = {{MODEL_NAME}}
INPUT_SHAPE = {{INPUT_SHAPE}}  # without the batch; images are HWC
OUTPUTS = {{OUTPUTS}}
PARAMS = {{PARAMS}}  # as MixLab counts them
LOSS = {{LOSS}}
POLICY = {{POLICY}}  # Keras's names: float32, mixed_float16, mixed_bfloat16; or mixed_float8
# Loss scaling, Keras's LossScaleOptimizer semantics: none | dynamic (x2 after
# GROWTH_INTERVAL finite steps, x0.5 and the update skipped on a non-finite gradient) |
# fixed (one factor; a non-finite gradient still skips the update).
LOSS_SCALE = {{LOSS_SCALE}}
INITIAL_SCALE = {{INITIAL_SCALE}}
GROWTH_INTERVAL = {{GROWTH_INTERVAL}}
OPTIMIZER = {{OPTIMIZER}}
LEARNING_RATE = {{LEARNING_RATE}}
{{OPTIMIZER_SETTINGS}}
BATCH_SIZE = {{BATCH_SIZE}}
STEPS = {{STEPS}}
WARMUP_STEPS = {{WARMUP_STEPS}}  # left out of the step-time figures (at most half the steps, as in MixLab)
SEED = {{SEED}}
THREADS = {{THREADS}}  # 0: the framework's default
EVALUATE = {{EVALUATE}}  # on the test split after training
DATASET = {{DATASET}}
HEAD = {{HEAD}}  # how the loss meets the output (from logits after a final softmax/sigmoid)

parser = argparse.ArgumentParser(description=f"Train {MODEL_NAME} as MixLab would and print ms/step.")
parser.add_argument("--steps", type=int, default=STEPS, help="training steps (default %(default)s)")
STEPS = parser.parse_args().steps
if STEPS < 1:
    parser.error("--steps must be at least 1")
if THREADS > 0:  # best effort: the frameworks read these when they start
    for _name in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(THREADS))
