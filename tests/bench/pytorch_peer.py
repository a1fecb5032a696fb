#!/usr/bin/env python3
"""The PyTorch peer of `mixlab-cli bench`: the same models, batch sizes, optimizers and thread
count, on synthetic data, printing one JSON array like `mixlab-cli bench --json`.

--device cpu (default): the two PRODUCT.md models in float32 and under
torch.autocast('cpu', dtype=torch.bfloat16).
--device cuda: the rows of `mixlab-cli bench --suite gpu` (cifar10-mlp at batch 32 and 1024,
cifar100-convnet at 1020 and 1024, the 4 x Dense(4096) MLP at 4096), each in float32 (TF32 off
in matmuls and cuDNN), float32 with TF32, autocast float16 with a GradScaler and autocast
bfloat16; the convnet in channels_last; the data generated on the GPU, as MixLab keeps it there.

Step time is the whole training step (zero_grad, forward, loss, backward, optimizer step, and on
the GPU loss.item(): MixLab reads every step's loss back too), the median over the steps after
the warm-up, as MixLab measures it; on the GPU bracketed by torch.cuda.synchronize().
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cifar10Mlp(nn.Module):
    """Flatten -> Dense(3000, relu) -> Dense(1000, relu) -> Dense(10) -> sigmoid (float32)."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Linear(32 * 32 * 3, 3000)
        self.d2 = nn.Linear(3000, 1000)
        self.d3 = nn.Linear(1000, 10)

    def forward(self, x):  # x: (N, 32, 32, 3), raw pixels
        x = torch.flatten(x, 1)
        x = F.relu(self.d1(x))
        x = F.relu(self.d2(x))
        return torch.sigmoid(self.d3(x).float())

    @staticmethod
    def loss(y, labels):
        # Keras categorical crossentropy on probabilities: normalise, clip, -log.
        p = y / y.sum(dim=1, keepdim=True)
        p = p.clamp(1e-7, 1 - 1e-7)
        return -torch.log(p.gather(1, labels[:, None])).mean()


class Cifar100Convnet(nn.Module):
    """Rescaling(1/255) -> Conv2D(64, 4x4) -> MaxPool -> Conv2D(32, 2x2) -> MaxPool -> Flatten
    -> 4 x Dense(4096, relu) -> Dropout(0.2) -> Dense(100) -> softmax (float32)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 64, 4)
        self.c2 = nn.Conv2d(64, 32, 2)
        self.dense = nn.ModuleList(
            [nn.Linear(1152, 4096)] + [nn.Linear(4096, 4096) for _ in range(3)])
        self.drop = nn.Dropout(0.2)
        self.out = nn.Linear(4096, 100)

    def forward(self, x):  # x: (N, 32, 32, 3)
        x = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last) * (1 / 255)
        x = F.max_pool2d(self.c1(x), 2)
        x = F.max_pool2d(self.c2(x), 2)
        x = torch.flatten(x.permute(0, 2, 3, 1), 1)  # Keras flattens HWC
        for d in self.dense:
            x = F.relu(d(x))
        return self.out(self.drop(x)).float()  # logits; softmax is fused into the loss

    @staticmethod
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)


class Mlp4096(nn.Module):
    """Rescaling(1/255) -> Flatten(64x64x1) -> 4 x Dense(4096, relu) -> Dense(10) -> softmax
    (float32): `mixlab-cli bench --suite gpu`'s mlp-4x4096."""

    def __init__(self):
        super().__init__()
        self.dense = nn.ModuleList([nn.Linear(4096, 4096) for _ in range(4)])
        self.out = nn.Linear(4096, 10)

    def forward(self, x):  # x: (N, 64, 64, 1)
        x = torch.flatten(x, 1) * (1 / 255)
        for d in self.dense:
            x = F.relu(d(x))
        return self.out(x).float()

    @staticmethod
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)


# name: (class, CPU bench batch, optimizer, classes, input shape)
MODELS = {
    "cifar10-mlp": (Cifar10Mlp, 32, "sgd", 10, (32, 32, 3)),
    "cifar100-convnet": (Cifar100Convnet, 128, "adam", 100, (32, 32, 3)),
    "mlp-4x4096": (Mlp4096, 4096, "sgd", 10, (64, 64, 1)),
}

# `mixlab-cli bench --suite gpu`'s models and batches; each runs in every GPU policy.
GPU_ROWS = [("cifar10-mlp", 32), ("cifar10-mlp", 1024), ("cifar100-convnet", 1020),
            ("cifar100-convnet", 1024), ("mlp-4x4096", 4096)]
# (precision, tf32)
GPU_POLICIES = [("float32", False), ("float32", True), ("mixed_float16", False),
                ("mixed_bfloat16", False)]


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    return torch.optim.Adam(params, lr=0.001, eps=1e-7)


def summary(name, precision, optimizer, batch, threads, steps, warmup, times, **extra):
    measured = sorted(times[warmup:])
    q = statistics.quantiles(measured, n=20, method="inclusive")
    median = statistics.median(measured)
    return {
        "model": name, "precision": precision, **extra, "optimizer": optimizer,
        "batch_size": batch, "threads": threads, "steps": steps, "warmup_steps": warmup,
        "median_step_ms": median, "p5_step_ms": q[0], "p95_step_ms": q[-1],
        "samples_per_s": batch / (median / 1000),
        "peer": f"PyTorch {torch.__version__}",
    }


def bench(name, precision, threads, steps, warmup, optimizer_override):
    cls, batch, optimizer, classes, shape = MODELS[name]
    optimizer = optimizer_override or optimizer
    torch.manual_seed(1)
    model = cls()
    opt = make_optimizer(optimizer, model.parameters())
    x = torch.randint(0, 256, (batch, *shape)).float()
    labels = torch.randint(0, classes, (batch,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16"):
            y = model(x)
        loss = cls.loss(y.float(), labels)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1000)
    return summary(name, precision, optimizer, batch, threads, steps, warmup, times)


def grad_scaler(enabled):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)  # PyTorch < 2.3


def bench_cuda(name, batch, precision, tf32, steps, warmup, optimizer_override):
    cls, _, optimizer, classes, shape = MODELS[name]
    optimizer = optimizer_override or optimizer
    # Strict float32 turns TF32 off in cuDNN too (PyTorch's default allows it there).
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    torch.manual_seed(1)
    model = cls().to(device)
    if name == "cifar100-convnet":
        model = model.to(memory_format=torch.channels_last)
    opt = make_optimizer(optimizer, model.parameters())
    x = torch.randint(0, 256, (batch, *shape), device=device).float()
    labels = torch.randint(0, classes, (batch,), device=device)
    dtype = {"mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}.get(precision)
    scaler = grad_scaler(precision == "mixed_float16")
    times, losses = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            y = model(x)
        loss = cls.loss(y.float(), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    return summary(name, precision, optimizer, batch, 0, steps, warmup, times, tf32=tf32,
                   cuda_graphs=False, final_loss=losses[-1],
                   device=torch.cuda.get_device_name())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, help="steps per row (default: cpu 30, cuda 40)")
    ap.add_argument("--warmup", type=int, help="steps left out (default: cpu 5, cuda 10)")
    ap.add_argument("--models", default="cifar10-mlp,cifar100-convnet", help="--device cpu only")
    ap.add_argument("--precisions", default="float32,mixed_bfloat16", help="--device cpu only")
    ap.add_argument("--optimizer", choices=["sgd", "adam"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            ap.exit(3, "pytorch_peer.py: torch.cuda.is_available() is False\n")
        steps = args.steps or 40
        warmup = 10 if args.warmup is None else args.warmup
        results = [bench_cuda(m, b, p, tf32, steps, warmup, args.optimizer)
                   for m, b in GPU_ROWS for p, tf32 in GPU_POLICIES]
    else:
        steps = args.steps or 30
        warmup = 5 if args.warmup is None else args.warmup
        results = [bench(m, p, args.threads, steps, warmup, args.optimizer)
                   for m in args.models.split(",") for p in args.precisions.split(",")]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
