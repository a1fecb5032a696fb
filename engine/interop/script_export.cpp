// Keras 3 and PyTorch training scripts from a spec and a run's settings (script_export.h).
// The Python lives in resources/export/ (embedded, resources/builtin_export.h): a shared head
// (imports, a settings block of Python constants a user can read and change, --steps), a shared
// data loader and timing report, and one template per framework with its training loop. This
// file fills their placeholders: the settings as Python literals and the model as explicit layer
// calls, every value through python_code.h, so that no name or path becomes code.
#include "engine/interop/script_export.h"

#include <cmath>

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/precision.h"
#include "engine/interop/keras_model.h"
#include "engine/interop/python_code.h"
#include "engine/spec/model_graph.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_export.h"

namespace mixlab {
namespace {

PyCode py_pair(Size2 size) {
  return PyCode("(") + py_int(size.h) + ", " + py_int(size.w) + ")";
}

// --- The settings block -------------------------------------------------------------------

PyCode dataset_literal(const DatasetSpec& dataset) {
  using Kind = DatasetSpec::Kind;
  switch (dataset.kind) {
    case Kind::fashion_mnist:
      return PyCode("{\"kind\": \"fashion-mnist\", \"dir\": ") +
             py_str(dataset.dir.empty() ? std::string(kDebianFashionMnistDir)
                                        : dataset.dir.string()) +
             "}";
    case Kind::mnist:
      return PyCode("{\"kind\": \"mnist\", \"dir\": ") + py_str(dataset.dir.string()) + "}";
    case Kind::cifar10:
      return PyCode("{\"kind\": \"cifar10\", \"dir\": ") + py_str(dataset.dir.string()) + "}";
    case Kind::cifar100:
      return PyCode("{\"kind\": \"cifar100\", \"dir\": ") + py_str(dataset.dir.string()) + "}";
    case Kind::synthetic:
      return PyCode("{\"kind\": \"synthetic\", \"shape\": ") + py_tuple(dataset.shape) +
             ", \"classes\": " + py_int(dataset.classes) +
             ", \"train_size\": " + py_int(dataset.train_size) +
             ", \"seed\": " + py_int(dataset.seed) + "}";
    case Kind::text:
      return PyCode("{\"kind\": \"text\", \"path\": ") + py_str(dataset.dir.string()) +
             ", \"sequence_length\": " + py_int(dataset.sequence_length) + "}";
    case Kind::tokens:
      return PyCode("{\"kind\": \"tokens\", \"sequence_length\": ") +
             py_int(dataset.sequence_length) + ", \"vocabulary\": " + py_int(dataset.vocabulary) +
             ", \"classes\": " + py_int(std::max(dataset.classes, 0)) +
             ", \"train_size\": " + py_int(dataset.train_size) + "}";
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

// The optimizer's own hyperparameters, one assignment a line.
PyCode optimizer_settings(const OptimizerConfig& opt) {
  if (opt.kind == OptimizerKind::sgd) {
    return PyCode("MOMENTUM = ") + py_float(opt.momentum, "momentum") +
           "\nNESTEROV = " + py_bool(opt.nesterov);
  }
  return PyCode("BETA_1 = ") + py_float(opt.beta_1, "beta_1") +
         "\nBETA_2 = " + py_float(opt.beta_2, "beta_2") +
         "\nEPSILON = " + py_float(opt.epsilon, "epsilon");
}

// resources/export/script_head.py with the model's and the run's settings.
PyCode script_head(const ModelSpec& spec, const ShapeTable& table, const RunConfig& config,
                   const ScriptOptions& options) {
  const OptimizerConfig& opt = config.optimizer;
  return fill_template(
      py_template(builtin_export_script_head),
      {{"MODEL_NAME", py_str(spec.name)},
       {"INPUT_SHAPE", py_tuple(spec.input_shape)},
       {"OUTPUTS", py_int(table.output_shape.back())},
       {"PARAMS", py_int(table.params_total)},
       {"LOSS", py_str(to_string(spec.loss))},
       {"POLICY", py_str(to_string(config.precision))},
       {"LOSS_SCALE", py_str(loss_scale_mode(config.loss_scale))},
       {"INITIAL_SCALE", py_float(config.loss_scale.initial_scale, "initial loss scale")},
       {"GROWTH_INTERVAL", py_int(config.loss_scale.growth_interval)},
       {"OPTIMIZER", py_str(to_string(opt.kind))},
       {"LEARNING_RATE", py_float(opt.learning_rate, "learning rate")},
       {"OPTIMIZER_SETTINGS", optimizer_settings(opt)},
       {"BATCH_SIZE", py_int(config.batch_size)},
       {"STEPS", py_int(options.steps)},
       {"WARMUP_STEPS", py_int(config.warmup_steps)},
       {"SEED", py_int(config.seed)},
       {"THREADS", py_int(config.threads)},
       {"EVALUATE", py_bool(config.evaluate)},
       {"DATASET", dataset_literal(config.dataset)},
       {"HEAD", py_str(loss_head(spec))}});
}

// A layer's float (its rate, scale or offset), named in the error of a non-finite one.
// Dropout's noise_shape as a Python tuple: (None, 1, 1, 1).
PyCode noise_tuple(const std::vector<std::int64_t>& noise) {
  PyCode code("(");
  for (std::size_t d = 0; d < noise.size(); ++d) {
    if (d > 0) code += ", ";
    code += noise[d] < 0 ? PyCode("None") : py_int(noise[d]);
  }
  return noise.size() == 1 ? code + ",)" : code + ")";
}

PyCode layer_float(std::size_t index, double value, std::string_view field) {
  return py_float(value, "layer " + std::to_string(index) + "'s " + std::string(field));
}

// ReLU's keyword arguments, the same in Keras's layer and the PyTorch script's KerasReLU.
PyCode relu_arguments(const LayerSpec& layer, std::size_t index) {
  return PyCode("max_value=") +
         (std::isfinite(layer.max_value) ? layer_float(index, layer.max_value, "max_value")
                                         : PyCode("None")) +
         ", negative_slope=" + layer_float(index, layer.negative_slope, "negative_slope") +
         ", threshold=" + layer_float(index, layer.threshold, "threshold");
}

// A Normalization's mean or variance as a Python list of floats ("[0.5, 0.25]"), "None" when
// the layer has none.
PyCode float_list(std::size_t index, const std::vector<double>& values, std::string_view field) {
  if (values.empty()) return PyCode("None");
  PyCode list("[");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) list += ", ";
    list += layer_float(index, values[i], field);
  }
  return list + "]";
}

// --- Keras ----------------------------------------------------------------------------------

PyCode keras_layer(const LayerSpec& layer, std::size_t index) {
  PyCode args;
  PyCode type;
  const PyCode activation = layer.activation != ActivationFn::linear
                                ? PyCode(", activation=") + py_str(to_string(layer.activation))
                                : PyCode();
  const PyCode bias = layer.use_bias ? PyCode() : PyCode(", use_bias=False");
  switch (layer.type) {
    case LayerType::Dense:
      type = "Dense";
      args = py_int(layer.units) + activation + bias;
      break;
    case LayerType::Conv2D:
      type = "Conv2D";
      args = py_int(layer.filters) + ", " + py_pair(layer.kernel_size) +
             ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding)) + activation + bias;
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      type = layer.type == LayerType::MaxPooling2D ? PyCode("MaxPooling2D")
                                                   : PyCode("AveragePooling2D");
      args = py_pair(layer.pool_size) + ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding));
      break;
    case LayerType::Flatten:
      type = "Flatten";
      break;
    case LayerType::Dropout:
      type = "Dropout";
      args = layer_float(index, layer.rate, "rate");
      if (!layer.noise_shape.empty())
        args += PyCode(", noise_shape=") + noise_tuple(layer.noise_shape);
      break;
    case LayerType::Activation:
      type = "Activation";
      args = py_str(to_string(layer.activation));
      break;
    case LayerType::Rescaling:
      type = "Rescaling";
      args = layer_float(index, layer.scale, "scale");
      if (layer.offset != 0.0) {
        args += PyCode(", offset=") + layer_float(index, layer.offset, "offset");
      }
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      switch (layer.type) {
        case LayerType::GlobalMaxPooling2D:
          type = "GlobalMaxPooling2D";
          break;
        case LayerType::GlobalAveragePooling1D:
          type = "GlobalAveragePooling1D";
          break;
        case LayerType::GlobalMaxPooling1D:
          type = "GlobalMaxPooling1D";
          break;
        default:
          type = "GlobalAveragePooling2D";
      }
      if (layer.keepdims) args = "keepdims=True";
      break;
    case LayerType::ReLU:
      type = "ReLU";
      args = relu_arguments(layer, index);
      break;
    case LayerType::BatchNormalization:
      type = "BatchNormalization";
      args = PyCode("axis=") + py_int(layer.axis) +
             ", momentum=" + layer_float(index, layer.momentum, "momentum") +
             ", epsilon=" + layer_float(index, layer.epsilon, "epsilon") +
             ", center=" + py_bool(layer.center) + ", scale=" + py_bool(layer.scale_gamma);
      break;
    case LayerType::ZeroPadding2D: {
      const Pad2D& p = layer.zero_padding;
      type = "ZeroPadding2D";
      args = PyCode("((") + py_int(p.top) + ", " + py_int(p.bottom) + "), (" + py_int(p.left) +
             ", " + py_int(p.right) + "))";
      break;
    }
    case LayerType::Reshape: {
      type = "Reshape";
      args = "(";
      for (const std::int64_t d : layer.target_shape) args += py_int(d) + ",";
      args += ")";
      break;
    }
    case LayerType::SeparableConv2D:
      type = "SeparableConv2D";
      args = py_int(layer.filters) + ", " + py_pair(layer.kernel_size) +
             ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding)) +
             ", depth_multiplier=" + py_int(layer.depth_multiplier) + activation + bias;
      break;
    case LayerType::DepthwiseConv2D:
      type = "DepthwiseConv2D";
      args = py_pair(layer.kernel_size) + ", strides=" + py_pair(layer.strides) +
             ", padding=" + py_str(to_string(layer.padding)) +
             ", depth_multiplier=" + py_int(layer.depth_multiplier) + activation + bias;
      break;
    case LayerType::Normalization:
      type = "Normalization";
      // Without a mean and variance Keras's layer is identity until adapt(): MixLab's 0 and 1.
      args = PyCode("axis=") + py_int(layer.axis) + ", mean=" +
             float_list(index, layer.mean.empty() ? std::vector<double>{0.0} : layer.mean, "mean") +
             ", variance=" +
             float_list(index, layer.variance.empty() ? std::vector<double>{1.0} : layer.variance,
                        "variance");
      break;
    case LayerType::Add:
      type = "Add";
      break;
    case LayerType::Subtract:
      type = "Subtract";
      break;
    case LayerType::Multiply:
      type = "Multiply";
      break;
    case LayerType::Average:
      type = "Average";
      break;
    case LayerType::Maximum:
      type = "Maximum";
      break;
    case LayerType::Concatenate:
      type = "Concatenate";
      args = PyCode("axis=") + py_int(layer.axis);
      break;
    case LayerType::Embedding:
      type = "Embedding";
      args = py_int(layer.input_dim) + ", " + py_int(layer.output_dim);
      break;
    case LayerType::LayerNormalization:
      type = "LayerNormalization";
      args = PyCode("axis=") + py_int(layer.axis) +
             ", epsilon=" + layer_float(index, layer.epsilon, "epsilon") +
             ", center=" + py_bool(layer.center) + ", scale=" + py_bool(layer.scale_gamma);
      break;
    case LayerType::MultiHeadAttention:
      // The template's SelfAttention: Keras's layer called on its one input twice.
      type = "SelfAttention";
      args =
          py_int(layer.num_heads) + ", " + py_int(layer.key_dim) +
          (layer.value_dim > 0 ? PyCode(", value_dim=") + py_int(layer.value_dim) : PyCode()) +
          (layer.output_dim > 0 ? PyCode(", output_shape=") + py_int(layer.output_dim) : PyCode()) +
          ", use_causal_mask=" + py_bool(layer.causal) + bias;
      return PyCode("SelfAttention(") + args +
             (layer.name.empty() ? PyCode() : PyCode(", name=") + py_str(layer.name)) + ")";
    case LayerType::PositionEmbedding:
      // The template's PositionEmbedding: keras_hub's layer, without the dependency.
      return PyCode("PositionEmbedding(") + py_int(layer.sequence_length) +
             (layer.name.empty() ? PyCode() : PyCode(", name=") + py_str(layer.name)) + ")";
  }
  std::vector<PyCode> keywords;
  if (layer.force_float32) keywords.emplace_back("dtype=\"float32\"");
  if (!layer.name.empty()) keywords.push_back(PyCode("name=") + py_str(layer.name));
  for (const PyCode& keyword : keywords) {
    if (!args.empty()) args += ", ";
    args += keyword;
  }
  return PyCode("keras.layers.") + type + "(" + args + ")";
}

// out_of_fp8() marks only what Keras's float8 would quantize: Dense and attention (a float32
// softmax stays as it is, unmarked).
bool has_matmul(LayerType type) {
  return type == LayerType::Dense || type == LayerType::MultiHeadAttention;
}

// keras_layer, wrapped by the template's out_of_fp8() where MixLab keeps the layer out of FP8
// ("dtype": "bfloat16" or "float32"): quantize_float8() leaves it unquantized under
// mixed_float8, where Keras's model.quantize() would quantize every Dense.
PyCode keras_layer_kept(const LayerSpec& layer, std::size_t index, bool fp8) {
  const PyCode code = keras_layer(layer, index);
  const bool kept =
      fp8 && (layer.force_bfloat16 || (layer.force_float32 && has_matmul(layer.type)));
  return kept ? PyCode("out_of_fp8(") + code + ")" : code;
}

// The tensor a layer's output is held in by a functional model's code: t3 (inputs: the input).
PyCode tensor_name(int layer) {
  return layer == kModelInput ? PyCode("inputs") : PyCode("t") + py_int(layer);
}

// build_model()'s body: a Sequential model for a chain, a functional one for a graph (each
// layer called on the tensors it reads, in an order where each follows those). `fp8`: the run is
// mixed_float8 (the layers it keeps out of FP8 are marked).
PyCode keras_model(const ModelSpec& spec, bool fp8) {
  const ModelGraph graph = resolve_graph(spec);
  PyCode lines;
  if (graph.is_chain()) {
    lines = "    return keras.Sequential([\n        keras.Input(shape=INPUT_SHAPE),";
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
      lines += PyCode("\n        ") + keras_layer_kept(spec.layers[i], i, fp8) + ",";
    }
    return lines + "\n    ], name=MODEL_NAME)";
  }
  lines = "    inputs = keras.Input(shape=INPUT_SHAPE)";
  for (const int i : graph.order) {
    const std::vector<int>& reads = graph.inputs[static_cast<std::size_t>(i)];
    PyCode args = tensor_name(reads.front());
    if (is_merge(spec.layers[static_cast<std::size_t>(i)].type)) {
      args = "[";
      for (std::size_t k = 0; k < reads.size(); ++k) {
        args += (k == 0 ? PyCode() : PyCode(", ")) + tensor_name(reads[k]);
      }
      args += "]";
    }
    lines += PyCode("\n    ") + tensor_name(i) + " = " +
             keras_layer_kept(spec.layers[static_cast<std::size_t>(i)], static_cast<std::size_t>(i),
                              fp8) +
             "(" + args + ")";
  }
  return lines + "\n    return keras.Model(inputs, " + tensor_name(graph.output) +
         ", name=MODEL_NAME)";
}

// --- PyTorch --------------------------------------------------------------------------------

PyCode torch_activation(ActivationFn fn, bool channels_first) {
  switch (fn) {
    case ActivationFn::linear:
      return {};
    case ActivationFn::relu:
      return "nn.ReLU()";
    case ActivationFn::sigmoid:
      return "nn.Sigmoid()";
    case ActivationFn::tanh:
      return "nn.Tanh()";
    case ActivationFn::gelu:
      return "nn.GELU()";  // exact, as Keras's gelu(approximate=False)
    case ActivationFn::softmax:
      return channels_first ? PyCode("nn.Softmax(dim=1)") : PyCode("nn.Softmax(dim=-1)");
    case ActivationFn::silu:
      return "nn.SiLU()";
    case ActivationFn::hard_sigmoid:
      return "nn.Hardsigmoid()";  // relu6(x + 3) / 6, as Keras 3's
    case ActivationFn::hard_silu:
      return "nn.Hardswish()";
    case ActivationFn::elu:
      return "nn.ELU()";
    case ActivationFn::relu6:
      return "nn.ReLU6()";
    case ActivationFn::leaky_relu:
      return "nn.LeakyReLU(0.2)";  // Keras 3's default slope
  }
  return {};
}

// Writes PyTorch modules, one line each ("# layer N" after a layer's main module), with the
// layout (NHWC as Keras, NCHW for PyTorch's convolutions) switched where an op needs the other.
class TorchWriter {
 public:
  enum class Layout : std::uint8_t { nhwc, nchw, flat };
  TorchWriter(Layout layout, PyCode indent) : layout_(layout), indent_(std::move(indent)) {}

  // The modules of layer i (its spec and shapes).
  void layer(const LayerSpec& layer, const LayerInfo& info, std::size_t i) {
    Layout& layout = layout_;
    const auto add = [&](const PyCode& module, bool main) {
      if (module.empty()) return;
      line(layer.force_float32 ? PyCode("Float32(") + module + ")" : module,
           main ? PyCode("layer ") + py_int(i) : PyCode());
    };
    // F.pad's order: left, right, top, bottom
    const PyCode pads = PyCode("(") + py_int(info.pad_left) + ", " + py_int(info.pad_right) + ", " +
                        py_int(info.pad_top) + ", " + py_int(info.pad_bottom) + ")";
    const bool padded =
        info.pad_left != 0 || info.pad_right != 0 || info.pad_top != 0 || info.pad_bottom != 0;
    const PyCode bias = layer.use_bias ? PyCode() : PyCode(", bias=False");
    switch (layer.type) {
      case LayerType::Dense:
        if (layout == Layout::nchw) to_nhwc();
        add(PyCode("nn.Linear(") + py_int(info.input_shape.back()) + ", " + py_int(layer.units) +
                bias + ")",
            true);
        add(torch_activation(layer.activation, false), false);
        break;
      case LayerType::Conv2D:
        to_nchw();
        // Keras's 'same' padding, as MixLab computes it (the extra row/column at the bottom/right).
        if (padded) add(PyCode("nn.ZeroPad2d(") + pads + ")", false);
        add(PyCode("nn.Conv2d(") + py_int(info.input_shape[2]) + ", " + py_int(layer.filters) +
                ", " + py_pair(layer.kernel_size) + ", stride=" + py_pair(layer.strides) + bias +
                ")",
            true);
        add(torch_activation(layer.activation, true), false);
        break;
      case LayerType::MaxPooling2D:
        to_nchw();
        if (padded) add(PyCode("nn.ConstantPad2d(") + pads + ", float(\"-inf\"))", false);
        add(PyCode("nn.MaxPool2d(") + py_pair(layer.pool_size) +
                ", stride=" + py_pair(layer.strides) + ")",
            true);
        break;
      case LayerType::AveragePooling2D:
        to_nchw();
        add(padded ? PyCode("AvgPool2dSame(") + py_pair(layer.pool_size) + ", " +
                         py_pair(layer.strides) + ", " + pads + ")"
                   : PyCode("nn.AvgPool2d(") + py_pair(layer.pool_size) +
                         ", stride=" + py_pair(layer.strides) + ")",
            true);
        break;
      case LayerType::Flatten:
        to_nhwc();  // Keras flattens in HWC order
        add("nn.Flatten()", true);
        layout = Layout::flat;
        break;
      case LayerType::Dropout:
        if (layer.noise_shape.empty()) {
          add(PyCode("nn.Dropout(") + layer_float(i, layer.rate, "rate") + ")", true);
        } else {
          to_nhwc();  // the noise shape is in Keras's order
          add(PyCode("NoiseDropout(") + layer_float(i, layer.rate, "rate") + ", " +
                  noise_tuple(layer.noise_shape) + ")",
              true);
        }
        break;
      case LayerType::Activation:
        add(torch_activation(layer.activation, layout == Layout::nchw), true);
        break;
      case LayerType::Rescaling: {
        PyCode args = layer_float(i, layer.scale, "scale");
        if (layer.offset != 0.0) {
          args += PyCode(", ") + layer_float(i, layer.offset, "offset");
        }
        add(PyCode("Rescaling(") + args + ")", true);
        break;
      }
      case LayerType::GlobalAveragePooling1D:
      case LayerType::GlobalMaxPooling1D:
        // (batch, steps, features): over the steps.
        add(PyCode("GlobalPool1D(") + py_bool(layer.type == LayerType::GlobalMaxPooling1D) + ", " +
                py_bool(layer.keepdims) + ")",
            true);
        break;
      case LayerType::GlobalAveragePooling2D:
      case LayerType::GlobalMaxPooling2D:
        to_nchw();
        add(layer.type == LayerType::GlobalMaxPooling2D ? PyCode("nn.AdaptiveMaxPool2d(1)")
                                                        : PyCode("nn.AdaptiveAvgPool2d(1)"),
            true);
        if (!layer.keepdims) {
          add("nn.Flatten()", false);
          layout = Layout::flat;
        }
        break;
      case LayerType::ReLU:
        add(PyCode("KerasReLU(") + relu_arguments(layer, i) + ")", true);
        break;
      case LayerType::BatchNormalization:
        // PyTorch's momentum is Keras's 1 - momentum; its running variance is unbiased where
        // Keras's moving variance is not (the trained weights agree, the statistics differ by
        // m / (m - 1)).
        if (layout != Layout::flat) to_nchw();
        add((layout == Layout::flat ? PyCode("nn.BatchNorm1d(") : PyCode("nn.BatchNorm2d(")) +
                py_int(info.input_shape.back()) +
                ", eps=" + layer_float(i, layer.epsilon, "epsilon") + ", momentum=1 - " +
                layer_float(i, layer.momentum, "momentum") +
                ", affine=" + py_bool(layer.center || layer.scale_gamma) + ")",
            true);
        break;
      case LayerType::ZeroPadding2D:
        to_nchw();
        add(PyCode("nn.ZeroPad2d(") + pads + ")", true);
        break;
      case LayerType::Reshape: {
        to_nhwc();  // Keras reshapes in its own (HWC) order: flattened, then the target's axes
        PyCode shape;
        for (const std::int64_t d : info.output_shape) shape += py_int(d) + ", ";
        if (info.input_shape.size() > 1) add("nn.Flatten()", info.output_shape.size() == 1);
        if (info.output_shape.size() > 1) add(PyCode("nn.Unflatten(1, (") + shape + "))", true);
        layout = info.output_shape.size() == 3 ? Layout::nhwc : Layout::flat;
        break;
      }
      case LayerType::DepthwiseConv2D:
      case LayerType::SeparableConv2D: {
        to_nchw();
        const bool separable = layer.type == LayerType::SeparableConv2D;
        const std::int64_t depth = info.input_shape[2] * layer.depth_multiplier;
        if (padded) add(PyCode("nn.ZeroPad2d(") + pads + ")", false);
        add(PyCode("nn.Conv2d(") + py_int(info.input_shape[2]) + ", " + py_int(depth) + ", " +
                py_pair(layer.kernel_size) + ", stride=" + py_pair(layer.strides) + ", groups=" +
                py_int(info.input_shape[2]) + (separable ? PyCode(", bias=False") : bias) + ")",
            !separable);
        if (separable) {  // the pointwise part
          add(PyCode("nn.Conv2d(") + py_int(depth) + ", " + py_int(layer.filters) + ", (1, 1)" +
                  bias + ")",
              true);
        }
        add(torch_activation(layer.activation, true), false);
        break;
      }
      case LayerType::Normalization:
        to_nhwc();  // the channels last, as the constants broadcast
        add(PyCode("KerasNormalization(") + float_list(i, layer.mean, "mean") + ", " +
                float_list(i, layer.variance, "variance") + ")",
            true);
        break;
      case LayerType::Add:
      case LayerType::Subtract:
      case LayerType::Multiply:
      case LayerType::Average:
      case LayerType::Maximum:
        // On Keras's layout (every input made NHWC or flat by the node that wrote it).
        add(PyCode("Merge(") + py_str(keras_snake_case(to_string(layer.type))) + ")", true);
        break;
      case LayerType::Concatenate:
        add(PyCode("Merge(\"concatenate\", axis=") + py_int(layer.axis) + ")", true);
        break;
      case LayerType::Embedding:
        add(PyCode("TokenEmbedding(") + py_int(layer.input_dim) + ", " + py_int(layer.output_dim) +
                ")",
            true);
        break;
      case LayerType::LayerNormalization:
        add(PyCode("KerasLayerNorm(") + py_int(info.input_shape.back()) + ", " +
                layer_float(i, layer.epsilon, "epsilon") + ", " + py_bool(layer.center) + ", " +
                py_bool(layer.scale_gamma) + ")",
            true);
        break;
      case LayerType::PositionEmbedding:
        add(PyCode("PositionEmbedding(") + py_int(layer.sequence_length) + ", " +
                py_int(info.input_shape.back()) + ")",
            true);
        break;
      case LayerType::MultiHeadAttention:
        add(PyCode("SelfAttention(") + py_int(info.input_shape.back()) + ", " +
                py_int(layer.num_heads) + ", " + py_int(layer.key_dim) + ", " +
                py_int(layer.value_dim > 0 ? layer.value_dim : layer.key_dim) + ", " +
                py_int(info.output_shape.back()) + ", " + py_bool(layer.causal) + ", " +
                py_bool(layer.use_bias) + ")",
            true);
        break;
    }
  }

  // Back to Keras's layout, where the next reader or the loss expects it.
  void to_nhwc() {
    if (layout_ == Layout::nchw) {
      line("ToNHWC()", {});
      layout_ = Layout::nhwc;
    }
  }
  const PyCode& lines() const { return lines_; }

 private:
  void line(const PyCode& module, const PyCode& comment) {
    if (!lines_.empty()) lines_ += "\n";
    lines_ += indent_ + module + ",";
    if (!comment.empty()) lines_ += PyCode("  # ") + comment;
  }
  void to_nchw() {
    if (layout_ == Layout::nhwc) line("ToNCHW()", {});
    layout_ = Layout::nchw;
  }

  Layout layout_;
  PyCode indent_;
  PyCode lines_;
};

TorchWriter::Layout layout_of(const Shape& shape) {
  return shape.size() == 3 ? TorchWriter::Layout::nhwc : TorchWriter::Layout::flat;
}

// build_model()'s `model`: an nn.Sequential for a chain; for a graph, a Graph of one
// nn.Sequential per layer (NHWC or flat in and out, as Keras's tensors), each reading the
// outputs it names (0: the input, k + 1: layer k's).
PyCode torch_model(const ModelSpec& spec, const ShapeTable& table) {
  const ModelGraph graph = resolve_graph(spec);
  if (graph.is_chain()) {
    TorchWriter writer(layout_of(table.input_shape), "        ");
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
      writer.layer(spec.layers[i], table.layers[i], i);
    }
    writer.to_nhwc();
    return PyCode("    model = nn.Sequential(\n") + writer.lines() + "\n    )";
  }
  PyCode lines = "    model = Graph([";
  for (const int i : graph.order) {
    const auto k = static_cast<std::size_t>(i);
    const LayerSpec& layer = spec.layers[k];
    TorchWriter writer(layout_of(table.layers[k].input_shape), "            ");
    writer.layer(layer, table.layers[k], k);
    writer.to_nhwc();
    PyCode reads = "[";
    const std::vector<int>& from = graph.inputs[k];
    for (std::size_t r = 0; r < from.size(); ++r) {
      reads +=
          (r == 0 ? PyCode() : PyCode(", ")) + py_int(from[r] == kModelInput ? 0 : from[r] + 1);
    }
    reads += "]";
    lines += PyCode("\n        (") + py_int(i + 1) + ", nn.Sequential(\n" + writer.lines() +
             "\n        ), " + reads + ", " + py_bool(is_merge(layer.type)) + "),";
  }
  return lines + "\n    ])";
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
  const bool keras = kind == ScriptKind::keras;
  if (!keras && config.precision == Policy::mixed_float8) {
    throw ConfigError(
        "export --to pytorch: PyTorch's autocast has no FP8 (it needs NVIDIA's Transformer "
        "Engine): export the run under mixed_bfloat16, or --to keras, whose "
        "model.quantize(\"float8\") trains as mixed_float8");
  }
  const ShapeTable table = infer_shapes(spec, config.precision);
  return fill_template(
             py_template(keras ? builtin_export_keras_template : builtin_export_pytorch_template),
             {{"SETTINGS", script_head(spec, table, config, options)},
              {"DATA_LOADER", py_template(builtin_export_data_loader)},
              {"MODEL", keras ? keras_model(spec, config.precision == Policy::mixed_float8)
                              : torch_model(spec, table)}})
      .text();
}

}  // namespace mixlab
