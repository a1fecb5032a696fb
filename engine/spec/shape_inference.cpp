#include "engine/spec/shape_inference.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "engine/spec/layer_checks.h"
#include "engine/spec/model_graph.h"

namespace mixlab {
namespace {

using spec_detail::layer_prefix;

// BatchNormalization and Normalization take Keras's default axis, the last, only.
void require_last_axis(const LayerSpec& layer, const Shape& input, const std::string& where,
                       int index) {
  if (layer.axis != -1 && layer.axis != static_cast<int>(input.size())) {
    throw SpecError(where + "axis " + std::to_string(layer.axis) + " of input " +
                        format_shape(input) +
                        ": MixLab normalizes the last axis (-1) only, Keras's default",
                    index);
  }
}

// Forward FLOPs per element of an activation function (also used when Dense/Conv2D fuse one).
std::int64_t activation_flops(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::linear:
      return 0;
    case ActivationFn::relu:
    case ActivationFn::relu6:
    case ActivationFn::leaky_relu:
    case ActivationFn::sigmoid:
    case ActivationFn::tanh:
      return 1;
    case ActivationFn::hard_sigmoid:
    case ActivationFn::hard_silu:
    case ActivationFn::elu:
      return 2;
    case ActivationFn::softmax:
    case ActivationFn::silu:
      return 3;
    case ActivationFn::gelu:
      return 8;
  }
  return 0;
}

// Products and sums of a layer's figures; a model too large for int64 is a spec error, not UB.
// `layer` is the index the error names (-1 for the totals).
class Counter {
 public:
  Counter(std::string where, int layer) : where_(std::move(where)), layer_(layer) {}
  std::int64_t mul(std::int64_t a, std::int64_t b) const {
    std::int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) overflow();
    return out;
  }
  std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c) const {
    return mul(mul(a, b), c);
  }
  std::int64_t add(std::int64_t a, std::int64_t b) const {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) overflow();
    return out;
  }
  std::int64_t elements(const Shape& shape) const {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n = mul(n, d);
    return n;
  }

 private:
  [[noreturn]] void overflow() const {
    throw SpecError(where_ + "the model is too large (sizes overflow 64-bit integers)", layer_);
  }
  std::string where_;
  int layer_;
};

std::string format_size(Size2 s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w);
}

struct Window {
  std::int64_t out = 0;
  int pad_before = 0;
  int pad_after = 0;
};

// One spatial axis of a convolution or pooling window, as Keras computes it. Returns out = 0 when
// a 'valid' window does not fit.
Window window_axis(std::int64_t in, int k, int s, Padding padding) {
  Window w;
  if (padding == Padding::valid) {
    w.out = in < k ? 0 : (in - k) / s + 1;
    return w;
  }
  w.out = (in + s - 1) / s;  // ceil(in / s)
  const std::int64_t pad_total = std::max<std::int64_t>((w.out - 1) * s + k - in, 0);
  // pad_total < k + s, both ints, so it fits an int.
  w.pad_before = static_cast<int>(pad_total / 2);
  w.pad_after = static_cast<int>(pad_total - pad_total / 2);
  return w;
}

// Computes output shape and padding of Conv2D or pooling, the window being `kernel`.
void spatial(LayerInfo& info, std::string_view field, Size2 kernel, Size2 strides, Padding padding,
             std::int64_t out_channels, const std::string& where) {
  const Shape& in = info.input_shape;
  const Window rows = window_axis(in[0], kernel.h, strides.h, padding);
  const Window cols = window_axis(in[1], kernel.w, strides.w, padding);
  if (rows.out == 0 || cols.out == 0) {
    throw SpecError(where + std::string(field) + " " + format_size(kernel) +
                        " does not fit input " + format_shape(in) + " with padding '" +
                        std::string(to_string(padding)) + "'",
                    info.index);
  }
  info.output_shape = {rows.out, cols.out, out_channels};
  info.pad_top = rows.pad_before;
  info.pad_bottom = rows.pad_after;
  info.pad_left = cols.pad_before;
  info.pad_right = cols.pad_after;
}

// Conv2D and pooling need an image; explain how to get one.
void require_image(const LayerInfo& info, const ModelSpec& spec, const std::string& where) {
  if (info.input_shape.size() == 3) return;
  const auto flatten =
      std::find_if(spec.layers.begin(), spec.layers.begin() + info.index,
                   [](const LayerSpec& l) { return l.type == LayerType::Flatten; });
  std::string hint;
  if (flatten != spec.layers.begin() + info.index) {
    hint = "remove the Flatten at layer " + std::to_string(flatten - spec.layers.begin()) +
           " or move it after this layer";
  } else {
    hint = "give the model's input shape as [H, W, C]";
  }
  throw SpecError(where + "needs an [H, W, C] input but gets " + format_shape(info.input_shape) +
                      " (rank " + std::to_string(info.input_shape.size()) + "): " + hint,
                  info.index);
}

void check_input_shape(const Shape& shape) {
  if (shape.size() < 1 || shape.size() > 3) {
    throw SpecError("input: shape must be [features], [steps, features] or [H, W, C], got " +
                    std::to_string(shape.size()) + " dimensions");
  }
  for (std::int64_t d : shape) {
    if (d < 1 || d > spec_detail::kMaxFieldValue) {
      throw SpecError("input: shape " + format_shape(shape) + " has a dimension out of range [1, " +
                      std::to_string(spec_detail::kMaxFieldValue) + "]");
    }
  }
}

// What a merge does, for the message when its inputs disagree: "adds A from 'x' to B from 'y'".
std::string merge_words(const ModelSpec& spec, LayerType type, const LayerInfo& info, int a,
                        int b) {
  const auto part = [&](int k) {
    return format_shape(info.input_shapes[static_cast<std::size_t>(k)]) + " from " +
           edge_name(spec, info.inputs[static_cast<std::size_t>(k)]);
  };
  switch (type) {
    case LayerType::Add:
      return "adds " + part(a) + " to " + part(b);
    case LayerType::Subtract:
      return "subtracts " + part(b) + " from " + part(a);
    case LayerType::Multiply:
      return "multiplies " + part(a) + " by " + part(b);
    case LayerType::Average:
      return "averages " + part(a) + " with " + part(b);
    case LayerType::Maximum:
      return "takes the maximum of " + part(a) + " and " + part(b);
    default:
      return "concatenates " + part(a) + " and " + part(b);
  }
}

// Output shape and FLOPs of a merge (Keras: elementwise merges take inputs of one rank whose
// axes agree or are 1, which broadcasts; Concatenate inputs that agree but on the axis).
void infer_merge(const ModelSpec& spec, const LayerSpec& layer, LayerInfo& info, const Counter& c,
                 const std::string& where) {
  const Shape& first = info.input_shapes.front();
  const auto k = static_cast<std::int64_t>(info.input_shapes.size());
  if (layer.type != LayerType::Concatenate) {
    info.output_shape = first;
    for (std::size_t i = 1; i < info.input_shapes.size(); ++i) {
      const Shape& other = info.input_shapes[i];
      bool agree = other.size() == first.size();
      for (std::size_t d = 0; agree && d < first.size(); ++d) {
        Shape::value_type& out = info.output_shape[d];
        agree = other[d] == out || other[d] == 1 || out == 1;
        out = std::max(out, other[d]);
      }
      if (!agree) {
        throw SpecError(where + merge_words(spec, layer.type, info, 0, static_cast<int>(i)) +
                            ": its inputs must have one shape, or 1 on the axes where they "
                            "differ (broadcast)",
                        info.index);
      }
    }
    const std::int64_t per_element = layer.type == LayerType::Average ? k : k - 1;
    info.flops = c.mul(c.elements(info.output_shape), per_element);
    return;
  }
  const auto rank = static_cast<int>(first.size());
  // Keras counts the batch as axis 0: -1 is the last axis, 1 the first after the batch.
  const int axis = layer.axis < 0 ? layer.axis + rank + 1 : layer.axis;
  if (axis < 1 || axis > rank) {
    throw SpecError(where + "axis " + std::to_string(layer.axis) + " is out of range for inputs " +
                        format_shape(first) + " (with the batch, axes 1 to " +
                        std::to_string(rank) + " or -1 to -" + std::to_string(rank) + ")",
                    info.index);
  }
  const auto d = static_cast<std::size_t>(axis - 1);
  info.output_shape = first;
  for (std::size_t i = 1; i < info.input_shapes.size(); ++i) {
    const Shape& other = info.input_shapes[i];
    bool agree = other.size() == first.size();
    for (std::size_t j = 0; agree && j < first.size(); ++j) agree = j == d || other[j] == first[j];
    if (!agree) {
      throw SpecError(where + merge_words(spec, layer.type, info, 0, static_cast<int>(i)) +
                          ": its inputs must agree on every axis but axis " +
                          std::to_string(layer.axis),
                      info.index);
    }
    info.output_shape[d] = c.add(info.output_shape[d], other[d]);
  }
  info.flops = 0;  // a copy
}

LayerInfo infer_layer(const ModelSpec& spec, int index, const std::vector<int>& inputs,
                      const std::vector<Shape>& input_shapes, Policy policy) {
  const LayerSpec& layer = spec.layers[static_cast<std::size_t>(index)];
  const std::string where = layer_prefix(index, layer.type, layer.name);
  spec_detail::check_layer_values(layer, index);
  const Counter c(where, index);

  LayerInfo info;
  info.index = index;
  info.type = layer.type;
  info.inputs = inputs;
  info.input_shapes = input_shapes;
  info.input_shape = input_shapes.front();
  info.compute = compute_dtype(policy, layer.force_float32);
  const Shape& input = info.input_shape;
  const std::int64_t in_elements = c.elements(input);

  switch (layer.type) {
    case LayerType::Dense: {
      // Applies to the last axis, as in Keras: (..., in) -> (..., units).
      const std::int64_t in_features = input.back();
      const std::int64_t positions = in_elements / in_features;
      info.output_shape = input;
      info.output_shape.back() = layer.units;
      info.params.push_back({ParamKind::kernel, {in_features, layer.units}});
      const std::int64_t out = c.elements(info.output_shape);
      info.flops = c.mul(2, c.mul(positions, in_features, layer.units));
      if (layer.use_bias) {
        info.params.push_back({ParamKind::bias, {layer.units}});
        info.flops = c.add(info.flops, out);
      }
      info.flops = c.add(info.flops, c.mul(out, activation_flops(layer.activation)));
      break;
    }
    case LayerType::Conv2D: {
      require_image(info, spec, where);
      const std::int64_t in_channels = input[2];
      spatial(info, "kernel_size", layer.kernel_size, layer.strides, layer.padding, layer.filters,
              where);
      info.params.push_back(
          {ParamKind::kernel,
           {layer.kernel_size.h, layer.kernel_size.w, in_channels, layer.filters}});
      const std::int64_t out = c.elements(info.output_shape);
      const std::int64_t macs_per_output =
          c.mul(layer.kernel_size.h, layer.kernel_size.w, in_channels);
      info.flops = c.mul(2, c.mul(out, macs_per_output));
      if (layer.use_bias) {
        info.params.push_back({ParamKind::bias, {layer.filters}});
        info.flops = c.add(info.flops, out);
      }
      info.flops = c.add(info.flops, c.mul(out, activation_flops(layer.activation)));
      break;
    }
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      require_image(info, spec, where);
      spatial(info, "pool_size", layer.pool_size, layer.strides, layer.padding, input[2], where);
      info.flops = c.mul(c.elements(info.output_shape), layer.pool_size.h, layer.pool_size.w);
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
      require_image(info, spec, where);
      info.output_shape = layer.keepdims ? Shape{1, 1, input[2]} : Shape{input[2]};
      info.flops = in_elements;
      break;
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      if (input.size() != 2) {
        throw SpecError(where + "needs a (steps, features) input but gets " + format_shape(input) +
                            " (rank " + std::to_string(input.size()) +
                            "): give the model's input shape as [steps, features]",
                        info.index);
      }
      info.output_shape = layer.keepdims ? Shape{1, input[1]} : Shape{input[1]};
      info.flops = in_elements;
      break;
    case LayerType::Flatten:
      info.output_shape = {in_elements};
      break;
    case LayerType::Dropout:
      info.output_shape = input;
      info.flops = in_elements;
      if (!layer.noise_shape.empty()) {
        // With the batch: None (-1) or the axis's size draws along it, 1 repeats along it.
        bool fits = layer.noise_shape.size() == input.size() + 1 &&
                    (layer.noise_shape[0] == -1 || layer.noise_shape[0] == 1);
        for (std::size_t d = 1; fits && d < layer.noise_shape.size(); ++d) {
          const std::int64_t n = layer.noise_shape[d];
          fits = n == -1 || n == 1 || n == input[d - 1];
        }
        if (!fits) {
          std::string noise;
          for (const std::int64_t n : layer.noise_shape) {
            noise += noise.empty() ? "[" : ", ";
            noise += n < 0 ? std::string("null") : std::to_string(n);
          }
          throw SpecError(where + "noise_shape " + noise + "] does not fit its input " +
                              format_shape(input) +
                              " (with the batch first: null or the axis's size to draw a mask "
                              "value along an axis, 1 to repeat it)",
                          info.index);
        }
      }
      break;
    case LayerType::Activation:
      info.output_shape = input;
      info.flops = c.mul(in_elements, activation_flops(layer.activation));
      break;
    case LayerType::Rescaling:
      info.output_shape = input;
      info.flops = c.mul(2, in_elements);
      break;
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
    case LayerType::Concatenate:
      infer_merge(spec, layer, info, c, where);
      break;
    case LayerType::ReLU:
      info.output_shape = input;
      info.flops = in_elements;
      break;
    case LayerType::Reshape: {
      std::int64_t known = 1;
      int inferred = -1;
      for (std::size_t d = 0; d < layer.target_shape.size(); ++d) {
        if (layer.target_shape[d] == -1) {
          inferred = static_cast<int>(d);
        } else {
          known = c.mul(known, layer.target_shape[d]);
        }
      }
      info.output_shape = layer.target_shape;
      if (inferred >= 0 && in_elements % known == 0) {
        info.output_shape[static_cast<std::size_t>(inferred)] = in_elements / known;
        known = in_elements;
      }
      if (known != in_elements) {
        throw SpecError(where + "target_shape " + spec_detail::format_target(layer.target_shape) +
                            " does not hold the " + std::to_string(in_elements) +
                            " values of input " + format_shape(input),
                        index);
      }
      info.flops = 0;  // a view
      break;
    }
    case LayerType::BatchNormalization:
    case LayerType::LayerNormalization: {
      require_last_axis(layer, input, where, index);
      const std::int64_t channels = input.back();
      info.output_shape = input;
      if (layer.scale_gamma) info.params.push_back({ParamKind::gamma, {channels}});
      if (layer.center) info.params.push_back({ParamKind::beta, {channels}});
      if (layer.type == LayerType::LayerNormalization) {
        // Each row's mean and variance, then a multiply-add per element (and the affine one).
        info.flops = c.mul(5, in_elements);
        break;
      }
      info.params.push_back({ParamKind::moving_mean, {channels}});
      info.params.push_back({ParamKind::moving_variance, {channels}});
      info.flops = c.mul(2, in_elements);  // inference: one multiply-add per element
      break;
    }
    case LayerType::Normalization: {
      require_last_axis(layer, input, where, index);
      const std::int64_t channels = input.back();
      for (const auto& [field, values] :
           {std::pair{"mean", &layer.mean}, std::pair{"variance", &layer.variance}}) {
        if (values->size() > 1 && static_cast<std::int64_t>(values->size()) != channels) {
          throw SpecError(where + field + " has " + std::to_string(values->size()) +
                              " values for the " + std::to_string(channels) +
                              " channels of input " + format_shape(input) +
                              ": give one value, or one per channel",
                          index);
        }
      }
      info.output_shape = input;
      info.flops = c.mul(2, in_elements);  // a subtraction and a division per element
      break;
    }
    case LayerType::Embedding:
      if (inputs.front() != kModelInput || input.size() != 1) {
        throw SpecError(where +
                            "reads token ids, so its input must be the model's input of shape "
                            "[steps], but it reads " +
                            (inputs.front() == kModelInput ? std::string("the model's input ")
                                                           : std::string("another layer's ")) +
                            format_shape(input),
                        index);
      }
      info.output_shape = {input[0], layer.output_dim};
      info.params.push_back({ParamKind::embeddings, {layer.input_dim, layer.output_dim}});
      info.flops = 0;  // a gather
      break;
    case LayerType::PositionEmbedding:
      if (input.size() != 2) {
        throw SpecError(where + "needs a (steps, features) input but gets " + format_shape(input) +
                            " (rank " + std::to_string(input.size()) + ")",
                        index);
      }
      if (layer.sequence_length < input[0]) {
        throw SpecError(where + "sequence_length " + std::to_string(layer.sequence_length) +
                            " is shorter than its input's " + std::to_string(input[0]) +
                            " steps: it needs a vector for every position",
                        index);
      }
      info.output_shape = input;
      info.params.push_back({ParamKind::embeddings, {layer.sequence_length, input[1]}});
      info.flops = 0;  // a broadcast copy
      break;
    case LayerType::MultiHeadAttention: {
      if (input.size() != 2) {
        throw SpecError(where + "needs a (steps, features) input but gets " + format_shape(input) +
                            " (rank " + std::to_string(input.size()) + ")",
                        index);
      }
      const std::int64_t steps = input[0], d = input[1];
      const std::int64_t h = layer.num_heads, kd = layer.key_dim;
      const std::int64_t vd = layer.value_dim > 0 ? layer.value_dim : layer.key_dim;
      const std::int64_t out = layer.output_dim > 0 ? layer.output_dim : d;
      info.output_shape = {steps, out};
      const auto projection = [&](ParamKind kernel, ParamKind bias, std::int64_t width) {
        info.params.push_back({kernel, {d, h, width}});
        if (layer.use_bias) info.params.push_back({bias, {h, width}});
      };
      projection(ParamKind::query_kernel, ParamKind::query_bias, kd);
      projection(ParamKind::key_kernel, ParamKind::key_bias, kd);
      projection(ParamKind::value_kernel, ParamKind::value_bias, vd);
      info.params.push_back({ParamKind::kernel, {h, vd, out}});
      if (layer.use_bias) info.params.push_back({ParamKind::bias, {out}});
      // The projections, the scores, their softmax, the weighted values, the output.
      const std::int64_t projections = c.mul(2, c.mul(steps, d, c.mul(h, c.add(2 * kd, vd))));
      const std::int64_t scores = c.mul(2, c.mul(steps, steps, c.mul(h, kd)));
      const std::int64_t softmax = c.mul(3, c.mul(steps, steps, h));
      const std::int64_t weighted = c.mul(2, c.mul(steps, steps, c.mul(h, vd)));
      const std::int64_t output = c.mul(2, c.mul(steps, c.mul(h, vd), out));
      info.flops = c.add(c.add(projections, scores), c.add(c.add(softmax, weighted), output));
      break;
    }
    case LayerType::ZeroPadding2D: {
      require_image(info, spec, where);
      const Pad2D& p = layer.zero_padding;
      info.output_shape = {c.add(input[0], c.add(p.top, p.bottom)),
                           c.add(input[1], c.add(p.left, p.right)), input[2]};
      info.pad_top = p.top;
      info.pad_bottom = p.bottom;
      info.pad_left = p.left;
      info.pad_right = p.right;
      info.flops = 0;  // a copy
      break;
    }
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D: {
      require_image(info, spec, where);
      const bool separable = layer.type == LayerType::SeparableConv2D;
      const std::int64_t in_channels = input[2];
      const std::int64_t depth_channels = c.mul(in_channels, layer.depth_multiplier);
      const std::int64_t out_channels = separable ? layer.filters : depth_channels;
      spatial(info, "kernel_size", layer.kernel_size, layer.strides, layer.padding, out_channels,
              where);
      info.params.push_back(
          {ParamKind::kernel,
           {layer.kernel_size.h, layer.kernel_size.w, in_channels, layer.depth_multiplier}});
      const std::int64_t out = c.elements(info.output_shape);
      const std::int64_t positions = out / out_channels;
      info.flops = c.mul(
          2, c.mul(c.mul(positions, depth_channels), layer.kernel_size.h, layer.kernel_size.w));
      if (separable) {  // the 1x1 convolution of the depthwise output
        info.params.push_back({ParamKind::pointwise_kernel, {1, 1, depth_channels, layer.filters}});
        info.flops = c.add(info.flops, c.mul(2, c.mul(out, depth_channels)));
      }
      if (layer.use_bias) {
        info.params.push_back({ParamKind::bias, {out_channels}});
        info.flops = c.add(info.flops, out);
      }
      info.flops = c.add(info.flops, c.mul(out, activation_flops(layer.activation)));
      break;
    }
  }

  for (const ParamGroup& group : info.params)
    info.param_count = c.add(info.param_count, c.elements(group.shape));
  if (std::any_of(info.output_shape.begin(), info.output_shape.end(),
                  [](std::int64_t d) { return d < 1; })) {
    throw SpecError(
        where + "output " + format_shape(info.output_shape) + " has a zero-size dimension", index);
  }
  info.activation_bytes =
      c.mul(c.elements(info.output_shape), static_cast<std::int64_t>(dtype_bytes(info.compute)));
  return info;
}

}  // namespace

Shape pool_image_shape(const LayerSpec& layer, const LayerInfo& info) {
  if (layer.type == LayerType::GlobalAveragePooling1D ||
      layer.type == LayerType::GlobalMaxPooling1D) {
    return {info.input_shape[0], 1, info.input_shape[1]};
  }
  return info.input_shape;
}

PoolWindow pool_window(const LayerSpec& layer, const LayerInfo& info) {
  PoolWindow w;
  w.max = layer.type == LayerType::MaxPooling2D || layer.type == LayerType::GlobalMaxPooling2D ||
          layer.type == LayerType::GlobalMaxPooling1D;
  if (layer.type == LayerType::GlobalAveragePooling1D ||
      layer.type == LayerType::GlobalMaxPooling1D) {  // the steps as an image's height
    w.size = {static_cast<int>(info.input_shape[0]), 1};
    w.strides = {1, 1};
    return w;
  }
  if (layer.type == LayerType::GlobalAveragePooling2D ||
      layer.type == LayerType::GlobalMaxPooling2D) {
    w.size = {static_cast<int>(info.input_shape[0]), static_cast<int>(info.input_shape[1])};
    w.strides = {1, 1};
    return w;
  }
  w.size = layer.pool_size;
  w.strides = layer.strides;
  w.out_h = info.output_shape[0];
  w.out_w = info.output_shape[1];
  return w;
}

std::int64_t num_elements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string format_shape(const Shape& shape) {
  if (shape.empty()) return "()";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

std::string_view to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kernel:
      return "kernel";
    case ParamKind::bias:
      return "bias";
    case ParamKind::gamma:
      return "gamma";
    case ParamKind::beta:
      return "beta";
    case ParamKind::moving_mean:
      return "moving_mean";
    case ParamKind::moving_variance:
      return "moving_variance";
    case ParamKind::pointwise_kernel:
      return "pointwise_kernel";
    case ParamKind::embeddings:
      return "embeddings";
    case ParamKind::query_kernel:
      return "query_kernel";
    case ParamKind::query_bias:
      return "query_bias";
    case ParamKind::key_kernel:
      return "key_kernel";
    case ParamKind::key_bias:
      return "key_bias";
    case ParamKind::value_kernel:
      return "value_kernel";
    case ParamKind::value_bias:
      return "value_bias";
  }
  return "?";
}

ShapeTable infer_shapes(const ModelSpec& spec, Policy policy) {
  check_input_shape(spec.input_shape);
  if (spec.layers.empty()) throw SpecError("layers: the model has no layers");

  const ModelGraph graph = resolve_graph(spec);
  ShapeTable table;
  table.policy = policy;
  table.input_shape = spec.input_shape;
  table.layers.resize(spec.layers.size());
  table.order = graph.order;
  const Counter total("totals: ", -1);
  for (const int i : graph.order) {
    const std::vector<int>& inputs = graph.inputs[static_cast<std::size_t>(i)];
    std::vector<Shape> input_shapes;
    for (const int from : inputs) {
      input_shapes.push_back(from == kModelInput
                                 ? spec.input_shape
                                 : table.layers[static_cast<std::size_t>(from)].output_shape);
    }
    LayerInfo info = infer_layer(spec, i, inputs, input_shapes, policy);
    table.params_total = total.add(table.params_total, info.param_count);
    for (const ParamGroup& group : info.params) {
      if (!is_trainable(group.kind)) {
        table.non_trainable_total = total.add(table.non_trainable_total, group.count());
      }
    }
    table.flops_total = total.add(table.flops_total, info.flops);
    table.activation_bytes_total = total.add(table.activation_bytes_total, info.activation_bytes);
    table.layers[static_cast<std::size_t>(i)] = std::move(info);
  }
  const Shape shape = table.layers[static_cast<std::size_t>(graph.output)].output_shape;
  // Sparse crossentropy takes a (steps, classes) output too: a label per step (a language
  // model's next token), as Keras computes it.
  const bool per_step = shape.size() == 2 && spec.loss == LossKind::sparse_categorical_crossentropy;
  if (shape.size() != 1 && !per_step) {
    const int last = graph.output;
    throw SpecError(layer_prefix(last, spec.layers.back().type) + "the model's output " +
                        format_shape(shape) + " is not flat, but the loss " +
                        std::string(to_string(spec.loss)) + " needs a (classes) output" +
                        (spec.loss == LossKind::sparse_categorical_crossentropy
                             ? std::string(" or a (steps, classes) one")
                             : std::string()) +
                        ": add Flatten and Dense at the end",
                    last);
  }
  table.output_shape = shape;
  return table;
}

}  // namespace mixlab
