#!/usr/bin/env python3
"""A MixLab model (MODEL_NAME below) in PyTorch (CUDA when there is one, else the CPU), trained
with MixLab's run settings; prints ms/step as Keras does. Works with torch 1.13 and later.
Images stay NHWC as in Keras; the model switches to NCHW around convolutions and pooling and
back before Flatten, so that the flattened order is Keras's HWC.

Exported by MixLab (mixlab-cli export --to pytorch) from a model and a run's settings."""
{{SETTINGS}}
import contextlib  # noqa: E402
import warnings  # noqa: E402
import numpy as np  # noqa: E402  (after THREADS is applied)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
AMP_DTYPE = {"float32": None, "mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}[POLICY]
EPSILON_KERAS = 1e-7  # Keras's clipping of probabilities in its crossentropies


class Rescaling(nn.Module):
    def __init__(self, scale, offset=0.0):
        super().__init__()
        self.scale, self.offset = scale, offset

    def forward(self, x):
        return x * self.scale + self.offset


class ToNCHW(nn.Module):
    """Keras keeps images NHWC; PyTorch's Conv2d and pooling take NCHW."""

    def forward(self, x):
        return x.permute(0, 3, 1, 2)


class ToNHWC(nn.Module):
    """Back to Keras's layout, so that Flatten, Dense and softmax see HWC order."""

    def forward(self, x):
        return x.permute(0, 2, 3, 1)


class AvgPool2dSame(nn.Module):
    """Keras's AveragePooling2D(padding="same"): padded cells are left out of each mean."""

    def __init__(self, pool_size, strides, pads):
        super().__init__()
        self.pool_size, self.strides, self.pads = pool_size, strides, pads  # pads: (l, r, t, b)

    def forward(self, x):
        ones = torch.ones_like(x[:1, :1])
        return (F.avg_pool2d(F.pad(x, self.pads), self.pool_size, self.strides)
                / F.avg_pool2d(F.pad(ones, self.pads), self.pool_size, self.strides))


class KerasReLU(nn.Module):
    """Keras's ReLU layer: x above threshold (clipped at max_value), else negative_slope * (x - threshold)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0):
        super().__init__()
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def forward(self, x):
        y = torch.where(x > self.threshold, x, self.negative_slope * (x - self.threshold))
        return y if self.max_value is None else torch.clamp(y, max=self.max_value)


class KerasNormalization(nn.Module):
    """Keras's Normalization: (x - mean) / max(sqrt(variance), 1e-7) over the last axis; without
    a mean and variance, Keras's state before adapt() (0 and 1)."""

    def __init__(self, mean=None, variance=None):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean if mean is not None else [0.0]))
        self.register_buffer("variance", torch.tensor(variance if variance is not None else [1.0]))

    def forward(self, x):
        return (x - self.mean) / torch.clamp(torch.sqrt(self.variance), min=1e-7)


class GlobalPool1D(nn.Module):
    """Keras's GlobalAveragePooling1D and GlobalMaxPooling1D: over the steps of (batch, steps,
    features)."""

    def __init__(self, max_pool, keepdims):
        super().__init__()
        self.max_pool, self.keepdims = max_pool, keepdims

    def forward(self, x):
        if self.max_pool:
            return x.amax(dim=1, keepdim=self.keepdims)
        return x.mean(dim=1, keepdim=self.keepdims)


class TokenEmbedding(nn.Module):
    """Keras's Embedding: token ids (float32 whole numbers, as MixLab's batches hold them) to
    rows of a table that starts from uniform(-0.05, 0.05)."""

    def __init__(self, vocabulary, width):
        super().__init__()
        self.table = nn.Embedding(vocabulary, width)
        nn.init.uniform_(self.table.weight, -0.05, 0.05)

    def forward(self, ids):
        return self.table(ids.long())


class KerasLayerNorm(nn.Module):
    """Keras's LayerNormalization over the last axis, gamma and beta each optional (center,
    scale), in float32 whatever the input's dtype as Keras computes it."""

    def __init__(self, width, eps, center, scale):
        super().__init__()
        self.width, self.eps = width, eps
        self.weight = nn.Parameter(torch.ones(width)) if scale else None
        self.bias = nn.Parameter(torch.zeros(width)) if center else None

    def forward(self, x):
        y = F.layer_norm(x.float(), (self.width,), self.weight, self.bias, self.eps)
        return y.to(x.dtype)


class PositionEmbedding(nn.Module):
    """keras_hub's PositionEmbedding: the first `steps` rows of a learned (sequence_length,
    features) table, the same for every sample (glorot_uniform)."""

    def __init__(self, sequence_length, width):
        super().__init__()
        self.table = nn.Parameter(torch.empty(sequence_length, width))
        nn.init.xavier_uniform_(self.table)

    def forward(self, x):
        return self.table[: x.shape[1]].to(x.dtype).expand(x.shape[0], -1, -1)


class SelfAttention(nn.Module):
    """Keras's MultiHeadAttention as self-attention: query, key and value projections of heads x
    key_dim (value_dim), scaled dot-product attention (causal when asked) in float32 softmax,
    and the output projection."""

    def __init__(self, features, heads, key_dim, value_dim, out, causal, bias):
        super().__init__()
        self.heads, self.key_dim, self.value_dim, self.causal = heads, key_dim, value_dim, causal
        self.query = nn.Linear(features, heads * key_dim, bias=bias)
        self.key = nn.Linear(features, heads * key_dim, bias=bias)
        self.value = nn.Linear(features, heads * value_dim, bias=bias)
        self.output = nn.Linear(heads * value_dim, out, bias=bias)

    def forward(self, x):
        b, s, _ = x.shape

        def split(t, dim):
            return t.reshape(b, s, self.heads, dim).transpose(1, 2)
        q, k, v = split(self.query(x), self.key_dim), split(self.key(x), self.key_dim), split(self.value(x), self.value_dim)
        scores = (q @ k.transpose(-1, -2)).float() / self.key_dim ** 0.5
        if self.causal:
            scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1), -1e9)
        weights = torch.softmax(scores, dim=-1).to(v.dtype)
        return self.output((weights @ v).transpose(1, 2).reshape(b, s, self.heads * self.value_dim))


class NoiseDropout(nn.Module):
    """Keras's Dropout with a noise_shape (in Keras's order, the batch first): one mask value
    per element of the noise shape (None: the input's size), repeated along its axes of 1."""

    def __init__(self, rate, noise_shape):
        super().__init__()
        self.rate, self.noise_shape = rate, noise_shape

    def forward(self, x):
        if not self.training or self.rate == 0:
            return x
        shape = [x.shape[d] if n is None else n for d, n in enumerate(self.noise_shape)]
        keep = torch.bernoulli(torch.full(shape, 1.0 - self.rate, device=x.device, dtype=x.dtype))
        return x * keep / (1.0 - self.rate)


class Merge(nn.Module):
    """Keras's merge layers, on tensors in Keras's layout (NHWC or flat); axis counts the batch."""

    def __init__(self, op, axis=-1):
        super().__init__()
        self.op, self.axis = op, axis

    def forward(self, xs):
        if self.op == "concatenate":
            return torch.cat(xs, dim=self.axis)
        if self.op == "subtract":
            return xs[0] - xs[1]
        out = xs[0]
        for x in xs[1:]:
            out = out * x if self.op == "multiply" else torch.maximum(out, x) if self.op == "maximum" else out + x
        return out / len(xs) if self.op == "average" else out


class Graph(nn.Module):
    """A MixLab graph: (output, module, reads, merge) nodes in an order where each follows what it
    reads; tensor 0 is the input, k + 1 layer k's output; a merge's module takes the list."""

    def __init__(self, nodes):
        super().__init__()
        self.layers = nn.ModuleList(module for _, module, _, _ in nodes)
        self.wiring = [(out, reads, merge) for out, _, reads, merge in nodes]

    def __getitem__(self, index):
        """graph[:-1], as nn.Sequential's: the graph without the last node's last module (the
        softmax or sigmoid that the loss computes fused), sharing the parameters."""
        assert index == slice(None, -1), "a Graph only drops its head"
        nodes = [(out, module, reads, merge) for module, (out, reads, merge) in zip(self.layers, self.wiring)]
        out, module, reads, merge = nodes[-1]
        nodes[-1] = (out, module[:-1], reads, merge)
        return Graph(nodes)

    def forward(self, x):
        tensors = {0: x}
        for module, (out, reads, merge) in zip(self.layers, self.wiring):
            inputs = [tensors[r] for r in reads]
            tensors[out] = module(inputs) if merge else module(inputs[0])
        return tensors[out]


class Float32(nn.Module):
    """A layer kept in float32 under a mixed policy (Keras's per-layer dtype="float32")."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        with torch.autocast(device_type=DEVICE, enabled=False):
            return self.layer([t.float() for t in x] if isinstance(x, list) else x.float())


{{DATA_LOADER}}

def build_model():
    # MixLab's layers ("# layer N": the model's layer N, counted from 0).
{{MODEL}}
    # Keras's (and MixLab's) default initialisers: glorot_uniform kernels (PyTorch's
    # xavier_uniform_ takes the same fans), zero biases. The same distributions, not the
    # same draws.
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


def make_optimizer(parameters):
    if OPTIMIZER == "sgd":
        # PyTorch's momentum form (v = m v + g; w -= lr v) equals Keras's at a constant rate.
        return torch.optim.SGD(parameters, lr=LEARNING_RATE, momentum=MOMENTUM, nesterov=NESTEROV and MOMENTUM > 0)
    # PyTorch adds epsilon to the bias-corrected sqrt(v), Keras to the uncorrected one: with an
    # epsilon of 1e-7 the two differ far below float32's resolution once sqrt(v) >> epsilon.
    return torch.optim.Adam(parameters, lr=LEARNING_RATE, betas=(BETA_1, BETA_2), eps=EPSILON)


def make_autocast():
    """The policy's autocast context (a fresh one per use), or a no-op for float32 and where this
    torch cannot autocast to the policy's dtype (torch 1.13 on the CPU: bfloat16 only)."""
    if AMP_DTYPE is None:
        return contextlib.nullcontext
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast(device_type=DEVICE, dtype=AMP_DTYPE):
                torch.ones(1, device=DEVICE) + 1
    except RuntimeError:
        print(f"note: torch {torch.__version__} cannot autocast to {AMP_DTYPE} on the {DEVICE}: "
              "this run computes in float32")
        return contextlib.nullcontext
    return lambda: torch.autocast(device_type=DEVICE, dtype=AMP_DTYPE)


def make_scaler():
    """A GradScaler with Keras's settings (PyTorch's own default starts at 2^16), or None."""
    if LOSS_SCALE == "none":
        return None
    growth = GROWTH_INTERVAL if LOSS_SCALE == "dynamic" else 2**31 - 1
    kwargs = dict(init_scale=INITIAL_SCALE, growth_factor=2.0, backoff_factor=0.5, growth_interval=growth)
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):  # torch >= 2.3, any device
        return torch.amp.GradScaler(DEVICE, **kwargs)
    if DEVICE == "cuda":
        return torch.cuda.amp.GradScaler(**kwargs)
    print(f"note: torch {torch.__version__} has no GradScaler on the CPU: the loss is not scaled")
    return None


def loss_and_accuracy(out, labels):
    """MixLab's loss heads: from the logits after a final softmax (categorical) or sigmoid
    (binary), otherwise from the outputs as probabilities, clipped as Keras clips them."""
    out = out.float()
    if out.dim() == 3:  # (batch, steps, classes): a label per step, the mean over them all
        out, labels = out.reshape(-1, out.shape[-1]), labels.reshape(-1)
    if LOSS == "binary_crossentropy":
        t = labels.float().reshape(-1, 1) if OUTPUTS == 1 else F.one_hot(labels, OUTPUTS).float()
        if HEAD == "sigmoid_binary":
            loss = F.binary_cross_entropy_with_logits(out, t)
            p = torch.sigmoid(out)
        else:
            p = out
            pc = p.clamp(EPSILON_KERAS, 1 - EPSILON_KERAS)
            loss = -(t * pc.log() + (1 - t) * (1 - pc).log()).mean()
        accuracy = ((p > 0.5) == (t > 0.5)).float().mean()
    else:
        if HEAD == "softmax_crossentropy":
            loss = F.cross_entropy(out, labels)
        else:
            p = out / out.sum(dim=1, keepdim=True)
            loss = -p.gather(1, labels.reshape(-1, 1)).clamp(EPSILON_KERAS, 1 - EPSILON_KERAS).log().mean()
        accuracy = (out.argmax(dim=1) == labels).float().mean()
    return loss, accuracy


def main():
    torch.manual_seed(SEED)
    if THREADS > 0:
        torch.set_num_threads(THREADS)
    (x_train, y_train), (x_test, y_test) = load_dataset()
    model = build_model().to(DEVICE)
    # The loss is computed from the logits when the model ends in softmax/sigmoid (HEAD).
    train_net = model[:-1] if HEAD in ("softmax_crossentropy", "sigmoid_binary") else model
    optimizer = make_optimizer(model.parameters())
    scaler = make_scaler()
    autocast = make_autocast()
    params = sum(p.numel() for p in model.parameters())
    print(f"{MODEL_NAME}: {params} parameters (MixLab: {PARAMS}); torch {torch.__version__} on {DEVICE}; "
          f"policy {POLICY}, loss scale {LOSS_SCALE}, {OPTIMIZER} lr={LEARNING_RATE}, batch {BATCH_SIZE}, "
          f"{STEPS} steps on {len(y_train)} samples", flush=True)

    def train_step(x, y):
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            out = train_net(x)
        loss, accuracy = loss_and_accuracy(out, y)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # skipped when a gradient is not finite
            scaler.update(INITIAL_SCALE if LOSS_SCALE == "fixed" else None)
        return loss.item(), accuracy.item()  # .item() waits for the step to finish

    x_all, y_all = torch.from_numpy(x_train), torch.from_numpy(y_train)
    rng = np.random.default_rng(SEED)
    step_ms, losses, accuracies = [], [], []
    model.train()
    for _, index in zip(range(STEPS), batches(len(y_train), rng)):
        index = torch.from_numpy(index)
        x, y = x_all[index], y_all[index]
        start = time.perf_counter()
        loss, accuracy = train_step(x.to(DEVICE), y.to(DEVICE))
        step_ms.append((time.perf_counter() - start) * 1000.0)
        losses.append(loss)
        accuracies.append(accuracy)
    # Running means since the start, as Keras's progress bar shows them.
    report(step_ms, statistics.mean(losses), statistics.mean(accuracies))
    if EVALUATE:
        model.eval()
        total_loss = total_right = 0.0
        with torch.no_grad(), autocast():
            for start in range(0, len(y_test), BATCH_SIZE):
                x = torch.from_numpy(x_test[start:start + BATCH_SIZE]).to(DEVICE)
                y = torch.from_numpy(y_test[start:start + BATCH_SIZE]).to(DEVICE)
                loss, accuracy = loss_and_accuracy(train_net(x), y)
                total_loss += loss.item() * len(y)
                total_right += accuracy.item() * len(y)
        print(f"test loss: {total_loss / len(y_test):.4f} - test accuracy: {total_right / len(y_test):.4f}")


if __name__ == "__main__":
    main()
