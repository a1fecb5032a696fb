#include "engine/spec/layer_text.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace mixlab {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// "1/255" when scale is the reciprocal of a whole number (the usual pixel scaling), else "×0.5".
std::string scale_text(double scale) {
  if (scale > 0.0 && scale < 1.0) {
    const double inverse = 1.0 / scale;
    const double rounded = std::round(inverse);
    if (std::abs(inverse - rounded) < 1e-9 * rounded) {
      return "1/" + std::to_string(static_cast<long long>(rounded));
    }
  }
  return "×" + number(scale);
}

std::string strides_text(Size2 strides) {
  return strides.h == strides.w ? std::to_string(strides.h) : format_size2(strides);
}

}  // namespace

std::string format_size2(Size2 size) {
  return std::to_string(size.h) + "x" + std::to_string(size.w);
}

std::string layer_summary(const LayerSpec& layer) {
  std::vector<std::string> parts;
  switch (layer.type) {
    case LayerType::Dense:
      parts.push_back(std::to_string(layer.units));
      break;
    case LayerType::Conv2D:
      parts.push_back(std::to_string(layer.filters));
      parts.push_back(format_size2(layer.kernel_size));
      if (layer.strides != Size2{1, 1}) parts.push_back("stride " + strides_text(layer.strides));
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      parts.push_back(format_size2(layer.pool_size));
      if (layer.strides != layer.pool_size) {
        parts.push_back("stride " + strides_text(layer.strides));
      }
      break;
    case LayerType::Dropout:
      parts.push_back(number(layer.rate));
      if (!layer.noise_shape.empty()) {
        std::string noise = "noise (";
        for (std::size_t d = 0; d < layer.noise_shape.size(); ++d) {
          if (d > 0) noise += ", ";
          noise +=
              layer.noise_shape[d] < 0 ? std::string("None") : std::to_string(layer.noise_shape[d]);
        }
        noise += ")";
        parts.push_back(std::move(noise));
      }
      break;
    case LayerType::Activation:
      parts.emplace_back(to_string(layer.activation));
      break;
    case LayerType::Rescaling: {
      std::string text = scale_text(layer.scale);
      if (layer.offset > 0) text += " + " + number(layer.offset);
      if (layer.offset < 0) text += " − " + number(-layer.offset);
      parts.push_back(text);
      break;
    }
    case LayerType::Concatenate:
      if (layer.axis != -1) parts.push_back("axis " + std::to_string(layer.axis));
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      if (layer.keepdims) parts.emplace_back("keepdims");
      break;
    case LayerType::ReLU:
      if (std::isfinite(layer.max_value)) parts.push_back("max " + number(layer.max_value));
      if (layer.negative_slope != 0.0) parts.push_back("slope " + number(layer.negative_slope));
      if (layer.threshold != 0.0) parts.push_back("threshold " + number(layer.threshold));
      break;
    case LayerType::BatchNormalization:
      if (layer.momentum != LayerSpec{}.momentum) {
        parts.push_back("momentum " + number(layer.momentum));
      }
      if (layer.epsilon != LayerSpec{}.epsilon) parts.push_back("epsilon " + number(layer.epsilon));
      if (!layer.center) parts.emplace_back("no beta");
      if (!layer.scale_gamma) parts.emplace_back("no gamma");
      break;
    case LayerType::ZeroPadding2D: {
      const Pad2D& p = layer.zero_padding;
      if (p.top == p.bottom && p.left == p.right) {
        parts.push_back(p.top == p.left ? std::to_string(p.top)
                                        : std::to_string(p.top) + "x" + std::to_string(p.left));
      } else {
        parts.push_back(std::to_string(p.top) + "/" + std::to_string(p.bottom) + " × " +
                        std::to_string(p.left) + "/" + std::to_string(p.right));
      }
      break;
    }
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (layer.type == LayerType::SeparableConv2D) parts.push_back(std::to_string(layer.filters));
      parts.push_back(format_size2(layer.kernel_size));
      if (layer.depth_multiplier != 1)
        parts.push_back("× " + std::to_string(layer.depth_multiplier));
      if (layer.strides != Size2{1, 1}) parts.push_back("stride " + strides_text(layer.strides));
      break;
    case LayerType::Reshape: {
      std::string shape = "to ";  // appended: GCC 12 warns on "x" + std::string here
      for (std::size_t d = 0; d < layer.target_shape.size(); ++d) {
        if (d != 0) shape += 'x';
        shape += std::to_string(layer.target_shape[d]);
      }
      parts.push_back(shape);
      break;
    }
    case LayerType::Normalization:
      if (layer.mean.empty()) {
        parts.emplace_back("mean 0, variance 1");
      } else {
        // "mean 0.485 / 0.456 / 0.406, variance 0.052 / ..." (three values at most, then "…")
        for (const auto& [field, values] :
             {std::pair{"mean ", &layer.mean}, std::pair{"variance ", &layer.variance}}) {
          std::string text = field;
          for (std::size_t i = 0; i < values->size() && i < 3; ++i) {
            if (i != 0) text += " / ";
            text += number((*values)[i]);
          }
          if (values->size() > 3) text += " / …";
          parts.push_back(text);
        }
      }
      break;
    case LayerType::Embedding:
      parts.push_back(std::to_string(layer.input_dim) + " → " + std::to_string(layer.output_dim));
      break;
    case LayerType::LayerNormalization:
      if (layer.epsilon != LayerSpec{}.epsilon) parts.push_back("epsilon " + number(layer.epsilon));
      if (!layer.center) parts.emplace_back("no beta");
      if (!layer.scale_gamma) parts.emplace_back("no gamma");
      break;
    case LayerType::PositionEmbedding:
      parts.push_back(std::to_string(layer.sequence_length) + " positions");
      break;
    case LayerType::MultiHeadAttention: {
      std::string heads = std::to_string(layer.num_heads);
      heads += " heads × ";
      heads += std::to_string(layer.key_dim);
      parts.push_back(heads);
      if (layer.value_dim > 0) parts.push_back("values " + std::to_string(layer.value_dim));
      if (layer.output_dim > 0) parts.push_back("to " + std::to_string(layer.output_dim));
      if (layer.causal) parts.emplace_back("causal");
      if (!layer.use_bias) parts.emplace_back("no bias");
      break;
    }
    case LayerType::Flatten:
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      break;
  }
  const bool spatial = layer.type == LayerType::Conv2D || layer.type == LayerType::MaxPooling2D ||
                       layer.type == LayerType::AveragePooling2D ||
                       layer.type == LayerType::DepthwiseConv2D ||
                       layer.type == LayerType::SeparableConv2D;
  if (spatial && layer.padding == Padding::same) parts.emplace_back("same");
  if (layer.type == LayerType::Dense || layer.type == LayerType::Conv2D ||
      layer.type == LayerType::DepthwiseConv2D || layer.type == LayerType::SeparableConv2D) {
    if (layer.activation != ActivationFn::linear) parts.emplace_back(to_string(layer.activation));
    if (!layer.use_bias) parts.emplace_back("no bias");
  }
  if (layer.force_float32) parts.emplace_back("float32");
  if (layer.force_bfloat16) parts.emplace_back("bfloat16");
  if (!layer.inputs.empty()) {
    std::string from = "from ";
    for (std::size_t i = 0; i < layer.inputs.size(); ++i) {
      from += (i == 0 ? "" : ", ") + layer.inputs[i];
    }
    parts.push_back(from);
  }

  std::string text(to_string(layer.type));
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? " " : ", ") + parts[i];
  return text;
}

std::string layer_title(const ModelSpec& spec, int index) {
  if (index < 0 || index >= static_cast<int>(spec.layers.size())) {
    return "layer " + std::to_string(index);
  }
  const LayerSpec& layer = spec.layers[static_cast<std::size_t>(index)];
  std::string text = std::to_string(index) + " " + layer_summary(layer);
  if (!layer.name.empty()) text += " (" + layer.name + ")";
  return text;
}

}  // namespace mixlab
