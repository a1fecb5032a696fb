#!/usr/bin/env python3
"""The PyTorch peer of `mixlab-cli bench`: the same two PRODUCT.md models, batch sizes,
optimizers and thread count, on synthetic CIFAR-shaped data, in float32 and under
torch.autocast('cpu', dtype=torch.bfloat16). Prints one JSON array like `mixlab-cli bench --json`.

Step time is the whole training step (zero_grad, forward, loss, backward, optimizer step), the
median over the steps after the warm-up, as MixLab measures it.
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


MODELS = {
    "cifar10-mlp": (Cifar10Mlp, 32, "sgd", 10),
    "cifar100-convnet": (Cifar100Convnet, 128, "adam", 100),
}


def bench(name, precision, threads, steps, warmup, optimizer_override):
    cls, batch, optimizer, classes = MODELS[name]
    optimizer = optimizer_override or optimizer
    torch.manual_seed(1)
    model = cls()
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
    x = torch.randint(0, 256, (batch, 32, 32, 3)).float()
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
    measured = sorted(times[warmup:])
    q = statistics.quantiles(measured, n=20, method="inclusive")
    median = statistics.median(measured)
    return {
        "model": name, "precision": precision, "optimizer": optimizer, "batch_size": batch,
        "threads": threads, "steps": steps, "warmup_steps": warmup,
        "median_step_ms": median, "p5_step_ms": q[0], "p95_step_ms": q[-1],
        "samples_per_s": batch / (median / 1000),
        "peer": f"PyTorch {torch.__version__}",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--models", default="cifar10-mlp,cifar100-convnet")
    ap.add_argument("--precisions", default="float32,mixed_bfloat16")
    ap.add_argument("--optimizer", choices=["sgd", "adam"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = [bench(m, p, args.threads, args.steps, args.warmup, args.optimizer)
               for m in args.models.split(",") for p in args.precisions.split(",")]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
