// Keras 3 and PyTorch training scripts from a spec and a run's settings (script_export.h).
// A script is three parts: a settings block written from the spec and the RunConfig (Python
// constants a user can read and change), the model as explicit layer calls, and a fixed body
// (data loading, training loop, timing report) kept here as Python text. The data loader and the
// report are the same text in both scripts, so the two frameworks read the same files the same
// way and print the same lines.
#include "engine/interop/script_export.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/precision.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

// --- Python literals ---------------------------------------------------------------------

// A float literal that reads back as the same double ("0.001", "0.00392156862745098", "1.0").
std::string py_float(double value) {
  char text[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  std::string out = text;
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out;
}

// A double-quoted Python string literal (UTF-8 passes through; quotes, backslashes and control
// characters are escaped).
std::string py_str(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string py_bool(bool value) {
  return value ? "True" : "False";
}

std::string py_tuple(const std::vector<std::int64_t>& values) {
  std::string out = "(";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + (values.size() == 1 ? ",)" : ")");
}

std::string py_pair(Size2 size) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "(" + std::to_string(...).
  std::string out = "(";
  out += std::to_string(size.h);
  out += ", ";
  out += std::to_string(size.w);
  out += ')';
  return out;
}

// --- The settings block -------------------------------------------------------------------

std::string dataset_literal(const DatasetSpec& dataset) {
  using Kind = DatasetSpec::Kind;
  switch (dataset.kind) {
    case Kind::fashion_mnist:
      return "{\"kind\": \"fashion-mnist\", \"dir\": " +
             py_str(dataset.dir.empty() ? std::string(kDebianFashionMnistDir)
                                        : dataset.dir.string()) +
             "}";
    case Kind::mnist:
      return "{\"kind\": \"mnist\", \"dir\": " + py_str(dataset.dir.string()) + "}";
    case Kind::cifar10:
      return "{\"kind\": \"cifar10\", \"dir\": " + py_str(dataset.dir.string()) + "}";
    case Kind::cifar100:
      return "{\"kind\": \"cifar100\", \"dir\": " + py_str(dataset.dir.string()) + "}";
    case Kind::synthetic:
      return "{\"kind\": \"synthetic\", \"shape\": " + py_tuple(dataset.shape) +
             ", \"classes\": " + std::to_string(dataset.classes) +
             ", \"train_size\": " + std::to_string(dataset.train_size) +
             ", \"seed\": " + std::to_string(dataset.seed) + "}";
  }
  return "{}";
}

std::string_view loss_scale_mode(const LossScaleConfig& config) {
  switch (config.mode) {
    case LossScaleConfig::Mode::none:
      return "none";
    case LossScaleConfig::Mode::fixed:
      return "fixed";
    case LossScaleConfig::Mode::dynamic:
      return "dynamic";
  }
  return "none";
}

// How the loss meets the output, as MixLab's execution plan decides it (head_of): from the
// logits of a final softmax (categorical losses) or sigmoid (binary), otherwise from the outputs
// taken as probabilities.
std::string_view loss_head(const ModelSpec& spec) {
  const bool binary = spec.loss == LossKind::binary_crossentropy;
  const LayerSpec& last = spec.layers.back();
  const bool activates = last.type == LayerType::Activation ||
                         ((last.type == LayerType::Dense || last.type == LayerType::Conv2D));
  if (activates && last.activation == ActivationFn::softmax && !binary) {
    return "softmax_crossentropy";
  }
  if (activates && last.activation == ActivationFn::sigmoid && binary) return "sigmoid_binary";
  return binary ? "binary_probabilities" : "crossentropy_probabilities";
}

std::string settings_block(ScriptKind kind, const ModelSpec& spec, const ShapeTable& table,
                           const RunConfig& config, const ScriptOptions& options) {
  const OptimizerConfig& opt = config.optimizer;
  std::string s;
  s += "# Exported by MixLab (mixlab-cli export --to ";
  s += kind == ScriptKind::keras ? "keras" : "pytorch";
  s += ") from the model " + py_str(spec.name) + " and its run settings.\n";
  s += "# Change the settings below freely; `--steps N` overrides STEPS.\n";
  s += "MODEL_NAME = " + py_str(spec.name) + "\n";
  s += "INPUT_SHAPE = " + py_tuple(spec.input_shape) + "  # without the batch; images are HWC\n";
  s += "OUTPUTS = " + std::to_string(table.output_shape.back()) + "\n";
  s += "PARAMS = " + std::to_string(table.params_total) + "  # as MixLab counts them\n";
  s += "LOSS = " + py_str(to_string(spec.loss)) + "\n";
  s += "POLICY = " + py_str(to_string(config.precision)) +
       "  # Keras's names: float32, mixed_float16, mixed_bfloat16\n";
  s += "# Loss scaling, Keras's LossScaleOptimizer semantics: none | dynamic (x2 after\n"
       "# GROWTH_INTERVAL finite steps, x0.5 and the update skipped on a non-finite gradient) |\n"
       "# fixed (one factor; a non-finite gradient still skips the update).\n";
  s += "LOSS_SCALE = " + py_str(loss_scale_mode(config.loss_scale)) + "\n";
  s += "INITIAL_SCALE = " + py_float(config.loss_scale.initial_scale) + "\n";
  s += "GROWTH_INTERVAL = " + std::to_string(config.loss_scale.growth_interval) + "\n";
  s += "OPTIMIZER = " + py_str(to_string(opt.kind)) + "\n";
  s += "LEARNING_RATE = " + py_float(opt.learning_rate) + "\n";
  if (opt.kind == OptimizerKind::sgd) {
    s += "MOMENTUM = " + py_float(opt.momentum) + "\n";
    s += "NESTEROV = " + py_bool(opt.nesterov) + "\n";
  } else {
    s += "BETA_1 = " + py_float(opt.beta_1) + "\n";
    s += "BETA_2 = " + py_float(opt.beta_2) + "\n";
    s += "EPSILON = " + py_float(opt.epsilon) + "\n";
  }
  s += "BATCH_SIZE = " + std::to_string(config.batch_size) + "\n";
  s += "STEPS = " + std::to_string(options.steps) + "\n";
  s += "WARMUP_STEPS = " + std::to_string(config.warmup_steps) +
       "  # left out of the step-time figures (at most half the steps, as in MixLab)\n";
  s += "SEED = " + std::to_string(config.seed) + "\n";
  s += "THREADS = " + std::to_string(config.threads) + "  # 0: the framework's default\n";
  s += "EVALUATE = " + py_bool(config.evaluate) + "  # on the test split after training\n";
  s += "DATASET = " + dataset_literal(config.dataset) + "\n";
  s += "HEAD = " + py_str(loss_head(spec)) +
       "  # how the loss meets the output (from logits after a final softmax/sigmoid)\n";
  return s;
}

// --- Text shared by both scripts ----------------------------------------------------------

constexpr std::string_view kImports = R"PY(import argparse
import gzip
import os
import statistics
import struct
import time
)PY";

// Parses --steps and applies THREADS before the framework is imported.
constexpr std::string_view kArguments = R"PY(
parser = argparse.ArgumentParser(description=f"Train {MODEL_NAME} as MixLab would and print ms/step.")
parser.add_argument("--steps", type=int, default=STEPS, help="training steps (default %(default)s)")
STEPS = parser.parse_args().steps
if STEPS < 1:
    parser.error("--steps must be at least 1")
if THREADS > 0:  # best effort: the frameworks read these when they start
    for _name in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(THREADS))
)PY";

// The dataset as MixLab loads it (engine/data): IDX or CIFAR binary files, plain or gzip,
// pixels as raw 0..255 float32 in HWC order.
constexpr std::string_view kDataLoader = R"PY(

# --- Data, read as MixLab reads it: raw 0..255 pixels as float32 in HWC order (the model
# rescales), integer labels. -------------------------------------------------------------------


def _read(path):
    with open(path, "rb") as f:
        data = f.read()
    # Plain or gzip-compressed alike, told apart by the first bytes.
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _find(directory, base):
    for name in (base, base + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{os.path.join(directory, base)}: not found (nor {base}.gz)")


def _idx_images(path):
    data = _read(path)
    magic, count, rows, cols = struct.unpack(">IIII", data[:16])
    if magic != 0x803:
        raise ValueError(f"{path}: not an IDX image file (magic {magic:#x})")
    return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows, cols, 1)


def _idx_labels(path):
    data = _read(path)
    magic, count = struct.unpack(">II", data[:8])
    if magic != 0x801:
        raise ValueError(f"{path}: not an IDX label file (magic {magic:#x})")
    return np.frombuffer(data, np.uint8, count, 8)


def _cifar(directory, files, label_bytes):
    record = label_bytes + 3 * 32 * 32
    raw = np.concatenate([np.frombuffer(_read(os.path.join(directory, f)), np.uint8) for f in files])
    records = raw.reshape(-1, record)
    labels = records[:, label_bytes - 1]  # CIFAR-100: the fine label (the second byte)
    images = records[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # planes -> HWC
    return np.ascontiguousarray(images), labels


def _cifar_dir(directory, subdir, probe):
    return directory if os.path.exists(os.path.join(directory, probe)) else os.path.join(directory, subdir)


def load_dataset():
    """(x_train, y_train), (x_test, y_test): float32 (N,) + INPUT_SHAPE and int64 labels."""
    kind = DATASET["kind"]
    if kind in ("fashion-mnist", "mnist"):
        d = DATASET["dir"]
        train = (_idx_images(_find(d, "train-images-idx3-ubyte")), _idx_labels(_find(d, "train-labels-idx1-ubyte")))
        test = (_idx_images(_find(d, "t10k-images-idx3-ubyte")), _idx_labels(_find(d, "t10k-labels-idx1-ubyte")))
    elif kind == "cifar10":
        d = _cifar_dir(DATASET["dir"], "cifar-10-batches-bin", "data_batch_1.bin")
        train = _cifar(d, [f"data_batch_{i}.bin" for i in range(1, 6)], 1)
        test = _cifar(d, ["test_batch.bin"], 1)
    elif kind == "cifar100":
        d = _cifar_dir(DATASET["dir"], "cifar-100-binary", "train.bin")
        train = _cifar(d, ["train.bin"], 2)
        test = _cifar(d, ["test.bin"], 2)
    else:
        # MixLab's synthetic generator (a seeded, learnable set) is not reproduced here: random
        # pixels and labels of the same shape and sizes stand in for it. They time the same; their
        # losses are not comparable with MixLab's.
        rng = np.random.default_rng(DATASET["seed"])
        n, classes = DATASET["train_size"], DATASET["classes"]
        n_test = max(1, n // 5)
        shape = tuple(DATASET["shape"])
        train = (rng.integers(0, 256, (n,) + shape, dtype=np.uint8), rng.integers(0, classes, n))
        test = (rng.integers(0, 256, (n_test,) + shape, dtype=np.uint8), rng.integers(0, classes, n_test))

    def prepare(images, labels):
        # The model's input shape: an image, or its pixels as features ([H*W*C]).
        return images.astype(np.float32).reshape((len(images),) + INPUT_SHAPE), labels.astype(np.int64)

    return prepare(*train), prepare(*test)


def batches(n, rng):
    """Each step's sample indices: a new shuffle every epoch, an epoch's last batch short (as in
    MixLab; its shuffling order itself is MixLab's own and not reproduced)."""
    while True:
        order = rng.permutation(n)
        for start in range(0, n, BATCH_SIZE):
            yield order[start:start + BATCH_SIZE]


def report(step_ms, loss, accuracy):
    """Keras's end-of-epoch line ("N/N - Xs Yms/step - ...", the time per step over the steps after
    warm-up) and the median step time, MixLab's headline figure."""
    warmup = min(WARMUP_STEPS, len(step_ms) // 2)
    measured = step_ms[warmup:]
    per_step_s = statistics.mean(measured) / 1000.0
    if per_step_s >= 1:
        per_step = f"{per_step_s:.0f}s/step"
    elif per_step_s >= 1e-3:
        per_step = f"{per_step_s * 1e3:.0f}ms/step"
    else:
        per_step = f"{per_step_s * 1e6:.0f}us/step"
    n = len(step_ms)
    print(f"{n}/{n} - {sum(step_ms) / 1000.0:.0f}s {per_step} - accuracy: {accuracy:.4f} - loss: {loss:.4f}")
    print(f"median step ms: {statistics.median(measured):.3f} "
          f"(steps {warmup + 1}..{n}; {warmup} warm-up steps left out)", flush=True)
)PY";

// --- Keras ----------------------------------------------------------------------------------

std::string keras_dtype(const LayerSpec& layer) {
  return layer.force_float32 ? ", dtype=\"float32\"" : "";
}
std::string keras_name(const LayerSpec& layer) {
  return layer.name.empty() ? "" : ", name=" + py_str(layer.name);
}

std::string keras_layer(const LayerSpec& layer) {
  std::string args;
  std::string type;
  switch (layer.type) {
    case LayerType::Dense:
      type = "Dense";
      args = std::to_string(layer.units);
      if (layer.activation != ActivationFn::linear)
        args += ", activation=" + py_str(to_string(layer.activation));
      if (!layer.use_bias) args += ", use_bias=False";
      break;
    case LayerType::Conv2D:
      type = "Conv2D";
      args = std::to_string(layer.filters) + ", " + py_pair(layer.kernel_size) +
             ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding));
      if (layer.activation != ActivationFn::linear)
        args += ", activation=" + py_str(to_string(layer.activation));
      if (!layer.use_bias) args += ", use_bias=False";
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      type = layer.type == LayerType::MaxPooling2D ? "MaxPooling2D" : "AveragePooling2D";
      args = py_pair(layer.pool_size) + ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding));
      break;
    case LayerType::Flatten:
      type = "Flatten";
      break;
    case LayerType::Dropout:
      type = "Dropout";
      args = py_float(layer.rate);
      break;
    case LayerType::Activation:
      type = "Activation";
      args = py_str(to_string(layer.activation));
      break;
    case LayerType::Rescaling:
      type = "Rescaling";
      args = py_float(layer.scale);
      if (layer.offset != 0.0) args += ", offset=" + py_float(layer.offset);
      break;
  }
  std::string extra = keras_dtype(layer) + keras_name(layer);
  if (args.empty() && !extra.empty()) extra.erase(0, 2);
  return "keras.layers." + type + "(" + args + extra + ")";
}

std::string keras_model(const ModelSpec& spec) {
  std::string s = "\n\ndef build_model():\n";
  s +=
      "    # Keras's default initialisers, as MixLab's: glorot_uniform kernels, zero biases (the\n";
  s += "    # same distributions; not MixLab's draws, which a .keras export carries).\n";
  s += "    return keras.Sequential([\n";
  s += "        keras.Input(shape=INPUT_SHAPE),\n";
  for (const LayerSpec& layer : spec.layers) s += "        " + keras_layer(layer) + ",\n";
  s += "    ], name=MODEL_NAME)\n";
  return s;
}

constexpr std::string_view kKerasBody = R"PY(

def make_optimizer():
    if OPTIMIZER == "sgd":
        optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=MOMENTUM, nesterov=NESTEROV)
    else:
        optimizer = keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=BETA_1, beta_2=BETA_2, epsilon=EPSILON)
    if LOSS_SCALE == "none":
        return optimizer
    # Keras 3's LossScaleOptimizer is dynamic (x2 after dynamic_growth_steps finite steps, x0.5
    # and the update skipped on overflow). MixLab's fixed scale: this initial scale that never
    # grows (Keras still halves it on an overflow, where MixLab keeps the factor).
    growth = GROWTH_INTERVAL if LOSS_SCALE == "dynamic" else 2**31 - 1
    return keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=INITIAL_SCALE, dynamic_growth_steps=growth)


def targets(labels):
    """The loss's targets, made from the class labels as MixLab makes them."""
    if LOSS == "sparse_categorical_crossentropy":
        return labels
    if LOSS == "binary_crossentropy" and OUTPUTS == 1:
        return labels.astype(np.float32).reshape(-1, 1)
    return np.eye(OUTPUTS, dtype=np.float32)[labels]  # one-hot (binary: one positive output)


def accuracy_metric():
    """MixLab's accuracy: the argmax's for the categorical losses, the fraction of outputs on the
    right side of 0.5 for binary crossentropy (Keras's "accuracy" would pick categorical
    accuracy for a binary loss over several outputs)."""
    if LOSS == "binary_crossentropy":
        return keras.metrics.BinaryAccuracy(name="accuracy")
    if LOSS == "categorical_crossentropy":
        return keras.metrics.CategoricalAccuracy(name="accuracy")
    return keras.metrics.SparseCategoricalAccuracy(name="accuracy")


def main():
    keras.utils.set_random_seed(SEED)
    keras.mixed_precision.set_dtype_policy(POLICY)
    (x_train, y_train), (x_test, y_test) = load_dataset()
    t_train, t_test = targets(y_train), targets(y_test)
    model = build_model()
    compile_args = {}
    if POLICY == "mixed_float16" and LOSS_SCALE == "none":
        compile_args["auto_scale_loss"] = False  # Keras would add a dynamic LossScaleOptimizer
    model.compile(optimizer=make_optimizer(), loss=LOSS, metrics=[accuracy_metric()], **compile_args)
    print(f"{MODEL_NAME}: {model.count_params()} parameters (MixLab: {PARAMS}); Keras {keras.__version__}, "
          f"backend {keras.backend.backend()}; policy {POLICY}, loss scale {LOSS_SCALE}, {OPTIMIZER} "
          f"lr={LEARNING_RATE}, batch {BATCH_SIZE}, {STEPS} steps on {len(y_train)} samples", flush=True)

    rng = np.random.default_rng(SEED)
    step_ms = []
    logs = {}
    # One train_on_batch per step: it returns when the step is done (its logs come back as
    # numbers), so each step is timed whole, as MixLab times its steps. The first steps compile.
    for _, index in zip(range(STEPS), batches(len(y_train), rng)):
        x, t = x_train[index], t_train[index]
        start = time.perf_counter()
        logs = model.train_on_batch(x, t, return_dict=True)
        step_ms.append((time.perf_counter() - start) * 1000.0)
    # Keras's running means since the start, as its progress bar shows them.
    report(step_ms, float(logs["loss"]), float(logs.get("accuracy", float("nan"))))
    if EVALUATE:
        result = model.evaluate(x_test, t_test, batch_size=BATCH_SIZE, verbose=0, return_dict=True)
        print(f"test loss: {result['loss']:.4f} - test accuracy: {result.get('accuracy', float('nan')):.4f}")


if __name__ == "__main__":
    main()
)PY";

std::string keras_script(const ModelSpec& spec, const ShapeTable& table, const RunConfig& config,
                         const ScriptOptions& options) {
  std::string s = "#!/usr/bin/env python3\n";
  s += "\"\"\"" + spec.name +
       " in Keras 3 (any backend: KERAS_BACKEND=jax|tensorflow|torch), trained\n";
  s += "with MixLab's run settings; prints ms/step as Keras does.\"\"\"\n";
  s += kImports;
  s += "\n";
  s += settings_block(ScriptKind::keras, spec, table, config, options);
  s += kArguments;
  s += "\nimport numpy as np  # noqa: E402  (after THREADS is applied)\n";
  s += "import keras  # noqa: E402\n";
  s += kDataLoader;
  s += keras_model(spec);
  s += kKerasBody;
  return s;
}

// --- PyTorch --------------------------------------------------------------------------------

constexpr std::string_view kTorchHelpers = R"PY(

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


class Float32(nn.Module):
    """A layer kept in float32 under a mixed policy (Keras's per-layer dtype="float32")."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        with torch.autocast(device_type=DEVICE, enabled=False):
            return self.layer(x.float())
)PY";

std::string torch_activation(ActivationFn fn, bool channels_first) {
  switch (fn) {
    case ActivationFn::linear:
      return "";
    case ActivationFn::relu:
      return "nn.ReLU()";
    case ActivationFn::sigmoid:
      return "nn.Sigmoid()";
    case ActivationFn::tanh:
      return "nn.Tanh()";
    case ActivationFn::gelu:
      return "nn.GELU()";  // exact, as Keras's gelu(approximate=False)
    case ActivationFn::softmax:
      return channels_first ? "nn.Softmax(dim=1)" : "nn.Softmax(dim=-1)";
  }
  return "";
}

// The PyTorch modules of the stack, one line each, with the layout (NHWC as Keras, NCHW for
// PyTorch's convolutions) switched where an op needs the other.
std::vector<std::string> torch_layers(const ModelSpec& spec, const ShapeTable& table) {
  enum class Layout : std::uint8_t { nhwc, nchw, flat };
  Layout layout = spec.input_shape.size() == 3 ? Layout::nhwc : Layout::flat;
  std::vector<std::string> lines;
  const auto to_nchw = [&] {
    if (layout == Layout::nhwc) lines.emplace_back("ToNCHW()");
    layout = Layout::nchw;
  };
  const auto to_nhwc = [&] {
    if (layout == Layout::nchw) {
      lines.emplace_back("ToNHWC()");
      layout = Layout::nhwc;
    }
  };
  const auto add = [&](const LayerSpec& layer, std::string module, const std::string& comment) {
    if (module.empty()) return;
    if (layer.force_float32) module = "Float32(" + module + ")";
    lines.push_back(comment.empty() ? module : module + "  # " + comment);
  };
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    const LayerInfo& info = table.layers[i];
    std::string pads = "(";  // F.pad's order: left, right, top, bottom
    for (const int pad : {info.pad_left, info.pad_right, info.pad_top, info.pad_bottom}) {
      if (pads.size() > 1) pads += ", ";
      pads += std::to_string(pad);
    }
    pads += ')';
    const bool padded =
        info.pad_left != 0 || info.pad_right != 0 || info.pad_top != 0 || info.pad_bottom != 0;
    const std::string label = layer.name.empty() ? std::string(to_string(layer.type)) : layer.name;
    switch (layer.type) {
      case LayerType::Dense:
        if (layout == Layout::nchw) to_nhwc();
        add(layer,
            "nn.Linear(" + std::to_string(info.input_shape.back()) + ", " +
                std::to_string(layer.units) + (layer.use_bias ? "" : ", bias=False") + ")",
            label);
        add(layer, torch_activation(layer.activation, false), "");
        break;
      case LayerType::Conv2D:
        to_nchw();
        // Keras's 'same' padding, as MixLab computes it (the extra row/column at the bottom/right).
        if (padded) add(layer, "nn.ZeroPad2d(" + pads + ")", "");
        add(layer,
            "nn.Conv2d(" + std::to_string(info.input_shape[2]) + ", " +
                std::to_string(layer.filters) + ", " + py_pair(layer.kernel_size) +
                ", stride=" + py_pair(layer.strides) + (layer.use_bias ? "" : ", bias=False") + ")",
            label);
        add(layer, torch_activation(layer.activation, true), "");
        break;
      case LayerType::MaxPooling2D:
        to_nchw();
        if (padded) add(layer, "nn.ConstantPad2d(" + pads + ", float(\"-inf\"))", "");
        add(layer,
            "nn.MaxPool2d(" + py_pair(layer.pool_size) + ", stride=" + py_pair(layer.strides) + ")",
            label);
        break;
      case LayerType::AveragePooling2D:
        to_nchw();
        add(layer,
            padded ? "AvgPool2dSame(" + py_pair(layer.pool_size) + ", " + py_pair(layer.strides) +
                         ", " + pads + ")"
                   : "nn.AvgPool2d(" + py_pair(layer.pool_size) +
                         ", stride=" + py_pair(layer.strides) + ")",
            label);
        break;
      case LayerType::Flatten:
        to_nhwc();  // Keras flattens in HWC order
        add(layer, "nn.Flatten()", label);
        layout = Layout::flat;
        break;
      case LayerType::Dropout:
        add(layer, "nn.Dropout(" + py_float(layer.rate) + ")", label);
        break;
      case LayerType::Activation:
        add(layer, torch_activation(layer.activation, layout == Layout::nchw), label);
        break;
      case LayerType::Rescaling:
        add(layer,
            "Rescaling(" + py_float(layer.scale) +
                (layer.offset != 0.0 ? ", " + py_float(layer.offset) : "") + ")",
            label);
        break;
    }
  }
  to_nhwc();
  return lines;
}

std::string torch_model(const ModelSpec& spec, const ShapeTable& table) {
  std::string s = "\n\ndef build_model():\n";
  s += "    model = nn.Sequential(\n";
  for (const std::string& line : torch_layers(spec, table)) {
    const std::size_t comment = line.find("  # ");
    s += "        " +
         (comment == std::string::npos ? line + ","
                                       : line.substr(0, comment) + "," + line.substr(comment)) +
         "\n";
  }
  s += "    )\n";
  s += "    # Keras's (and MixLab's) default initialisers: glorot_uniform kernels (PyTorch's\n";
  s += "    # xavier_uniform_ takes the same fans), zero biases. The same distributions, not the\n";
  s += "    # same draws.\n";
  s += "    for module in model.modules():\n";
  s += "        if isinstance(module, (nn.Linear, nn.Conv2d)):\n";
  s += "            nn.init.xavier_uniform_(module.weight)\n";
  s += "            if module.bias is not None:\n";
  s += "                nn.init.zeros_(module.bias)\n";
  s += "    return model\n";
  return s;
}

constexpr std::string_view kTorchBody = R"PY(

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
)PY";

std::string torch_script(const ModelSpec& spec, const ShapeTable& table, const RunConfig& config,
                         const ScriptOptions& options) {
  std::string s = "#!/usr/bin/env python3\n";
  s += "\"\"\"" + spec.name + " in PyTorch (CUDA when there is one, else the CPU), trained with\n";
  s += "MixLab's run settings; prints ms/step as Keras does. Works with torch 1.13 and later.\n";
  s += "Images stay NHWC as in Keras; the model switches to NCHW around convolutions and pooling\n";
  s += "and back before Flatten, so that the flattened order is Keras's HWC.\"\"\"\n";
  s += kImports;
  s += "\n";
  s += settings_block(ScriptKind::pytorch, spec, table, config, options);
  s += kArguments;
  s += "\nimport contextlib  # noqa: E402\nimport warnings  # noqa: E402\n";
  s += "import numpy as np  # noqa: E402  (after THREADS is applied)\n";
  s += "import torch  # noqa: E402\nimport torch.nn.functional as F  # noqa: E402\n";
  s += "from torch import nn  # noqa: E402\n";
  s += kTorchHelpers;
  s += kDataLoader;
  s += torch_model(spec, table);
  s += kTorchBody;
  return s;
}

}  // namespace

std::string export_script(ScriptKind kind, const ModelSpec& spec, const RunConfig& config,
                          const ScriptOptions& options) {
  if (options.steps < 1) {
    throw ConfigError("export: the script's steps must be at least 1, got " +
                      std::to_string(options.steps));
  }
  if (config.batch_size < 1) {
    throw ConfigError("export: batch size must be at least 1, got " +
                      std::to_string(config.batch_size));
  }
  const ShapeTable table = infer_shapes(spec, config.precision);
  return kind == ScriptKind::keras ? keras_script(spec, table, config, options)
                                   : torch_script(spec, table, config, options);
}

}  // namespace mixlab
