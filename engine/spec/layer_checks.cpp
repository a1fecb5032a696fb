#include "engine/spec/layer_checks.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engine/core/error.h"

namespace mixlab::spec_detail {
namespace {

// `where` names the layer in the message and `index` is that layer's index for SpecError::layer().
void check_count(int value, std::string_view field, const std::string& where, int index) {
  if (value < 1) {
    throw SpecError(where + std::string(field) + " " + std::to_string(value) +
                        " is out of range [1, " + std::to_string(kMaxFieldValue) + "]",
                    index);
  }
}

void check_size(Size2 size, std::string_view field, const std::string& where, int index) {
  if (size.h < 1 || size.w < 1) {
    throw SpecError(where + std::string(field) + " " + std::to_string(size.h) + "x" +
                        std::to_string(size.w) + " is out of range: h and w must be in [1, " +
                        std::to_string(kMaxFieldValue) + "]",
                    index);
  }
}

void check_finite(double value, std::string_view field, const std::string& where, int index) {
  if (!std::isfinite(value)) {
    throw SpecError(
        where + std::string(field) + " " + format_number(value) + " must be a finite number",
        index);
  }
}

}  // namespace

std::string format_target(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return out + "]";
}

std::string layer_prefix(int index, LayerType type) {
  return "layer " + std::to_string(index) + " (" + std::string(to_string(type)) + "): ";
}

std::string layer_prefix(int index, LayerType type, std::string_view name) {
  if (name.empty()) return layer_prefix(index, type);
  return "layer " + std::to_string(index) + " (" + std::string(to_string(type)) + ") " +
         quote(name) + ": ";
}

std::string format_number(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec != std::errc{}) return "?";
  return std::string(buf, end);
}

void check_layer_values(const LayerSpec& layer, int index, const std::string& prefix) {
  const std::string where = prefix + layer_prefix(index, layer.type);
  switch (layer.type) {
    case LayerType::Dense:
      check_count(layer.units, "units", where, index);
      break;
    case LayerType::Conv2D:
      check_count(layer.filters, "filters", where, index);
      check_size(layer.kernel_size, "kernel_size", where, index);
      check_size(layer.strides, "strides", where, index);
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      check_size(layer.pool_size, "pool_size", where, index);
      check_size(layer.strides, "strides", where, index);
      break;
    case LayerType::Dropout:
      // Written so that NaN fails too.
      if (!(layer.rate >= 0.0 && layer.rate < 1.0)) {
        throw SpecError(where + "rate " + format_number(layer.rate) + " is out of range [0, 1)",
                        index);
      }
      break;
    case LayerType::Rescaling:
      check_finite(layer.scale, "scale", where, index);
      check_finite(layer.offset, "offset", where, index);
      break;
    case LayerType::Concatenate:
      if (layer.axis == 0) {
        throw SpecError(where + "axis 0 is the batch: concatenate along another axis", index);
      }
      break;
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (layer.type == LayerType::SeparableConv2D)
        check_count(layer.filters, "filters", where, index);
      check_count(layer.depth_multiplier, "depth_multiplier", where, index);
      check_size(layer.kernel_size, "kernel_size", where, index);
      check_size(layer.strides, "strides", where, index);
      break;
    case LayerType::ReLU:
      // Keras's own checks; written so that NaN fails too. max_value may be infinity (none).
      if (!(layer.max_value >= 0.0)) {
        throw SpecError(where + "max_value " + format_number(layer.max_value) + " must be >= 0",
                        index);
      }
      check_finite(layer.negative_slope, "negative_slope", where, index);
      check_finite(layer.threshold, "threshold", where, index);
      if (layer.negative_slope < 0.0 || layer.threshold < 0.0) {
        throw SpecError(where + (layer.negative_slope < 0.0 ? "negative_slope " : "threshold ") +
                            format_number(std::min(layer.negative_slope, layer.threshold)) +
                            " must be >= 0",
                        index);
      }
      break;
    case LayerType::BatchNormalization:
      if (!(layer.momentum >= 0.0 && layer.momentum <= 1.0)) {
        throw SpecError(
            where + "momentum " + format_number(layer.momentum) + " is out of range [0, 1]", index);
      }
      [[fallthrough]];  // epsilon and axis as LayerNormalization's
    case LayerType::LayerNormalization:
      if (!(layer.epsilon > 0.0 && std::isfinite(layer.epsilon))) {
        throw SpecError(
            where + "epsilon " + format_number(layer.epsilon) + " must be a finite number above 0",
            index);
      }
      if (layer.axis == 0) {
        throw SpecError(where + "axis 0 is the batch: normalize the last axis (-1)", index);
      }
      break;
    case LayerType::Embedding:
      check_count(layer.input_dim, "input_dim", where, index);
      check_count(layer.output_dim, "output_dim", where, index);
      // Token ids travel as float32: every id below 2^24 is exact.
      if (layer.input_dim > (1 << 24)) {
        throw SpecError(where + "input_dim " + std::to_string(layer.input_dim) +
                            " is above 16777216: token ids travel as float32 values, exact "
                            "up to 2^24",
                        index);
      }
      break;
    case LayerType::PositionEmbedding:
      check_count(layer.sequence_length, "sequence_length", where, index);
      break;
    case LayerType::MultiHeadAttention:
      check_count(layer.num_heads, "num_heads", where, index);
      check_count(layer.key_dim, "key_dim", where, index);
      if (layer.value_dim < 0 || layer.output_dim < 0) {
        throw SpecError(where + (layer.value_dim < 0 ? "value_dim " : "output_shape ") +
                            std::to_string(std::min(layer.value_dim, layer.output_dim)) +
                            " is out of range [1, " + std::to_string(kMaxFieldValue) + "]",
                        index);
      }
      if (!(layer.attention_dropout >= 0.0 && layer.attention_dropout < 1.0)) {
        throw SpecError(
            where + "dropout " + format_number(layer.attention_dropout) + " is out of range [0, 1)",
            index);
      }
      if (layer.attention_dropout != 0.0) {
        throw SpecError(where + "dropout " + format_number(layer.attention_dropout) +
                            " on the attention weights is not supported yet: put a Dropout layer "
                            "after the attention instead (keras.io's transformers do)",
                        index);
      }
      break;
    case LayerType::ZeroPadding2D:
      for (const int p : {layer.zero_padding.top, layer.zero_padding.bottom,
                          layer.zero_padding.left, layer.zero_padding.right}) {
        if (p < 0 || p > kMaxFieldValue) {
          throw SpecError(where + "padding " + std::to_string(p) + " is out of range [0, " +
                              std::to_string(kMaxFieldValue) + "]",
                          index);
        }
      }
      break;
    case LayerType::Reshape: {
      int inferred = 0;
      for (const std::int64_t d : layer.target_shape) {
        if (d == -1) ++inferred;
        if ((d < 1 && d != -1) || d > kMaxFieldValue || inferred > 1) {
          throw SpecError(where + "target_shape " + format_target(layer.target_shape) +
                              ": each size must be in [1, " + std::to_string(kMaxFieldValue) +
                              "], or one of them -1 (inferred)",
                          index);
        }
      }
      break;
    }
    case LayerType::Normalization: {
      if (layer.axis == 0) {
        throw SpecError(where + "axis 0 is the batch: normalize the last axis (-1)", index);
      }
      if (layer.mean.empty() != layer.variance.empty()) {
        throw SpecError(where + (layer.mean.empty() ? "variance" : "mean") + " is given without " +
                            (layer.mean.empty() ? "mean" : "variance") +
                            ": give both (or neither: mean 0, variance 1)",
                        index);
      }
      if (layer.mean.size() != layer.variance.size() && layer.mean.size() != 1 &&
          layer.variance.size() != 1) {
        throw SpecError(where + "mean has " + std::to_string(layer.mean.size()) +
                            " values and variance " + std::to_string(layer.variance.size()) +
                            ": give one value, or one per channel, for each",
                        index);
      }
      for (const double m : layer.mean) check_finite(m, "mean", where, index);
      for (const double v : layer.variance) {
        check_finite(v, "variance", where, index);
        if (v < 0.0) {
          throw SpecError(where + "variance " + format_number(v) + " is below 0", index);
        }
      }
      break;
    }
    case LayerType::Flatten:
    case LayerType::Activation:
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      break;
  }
}

}  // namespace mixlab::spec_detail
