// Writing a spec as JSON (model_spec.h's file format), fields at their defaults left out.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/error.h"
#include "engine/spec/json_text.h"
#include "engine/spec/layer_checks.h"
#include "engine/spec/model_spec.h"

namespace mixlab {
namespace {

using ordered_json = nlohmann::ordered_json;
using spec_detail::kDefaultLoss;
using spec_detail::kDefaultModelName;
using spec_detail::kDefaultPoolSize;
using spec_detail::kDefaultStrides;

// Compact JSON with a space after ':' and ',' ({"shape": [28, 28, 1]}), one line.
void write_inline(const ordered_json& value, std::string& out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out += ", ";
      first = false;
      out += ordered_json(key).dump();
      out += ": ";
      write_inline(item, out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i != 0) out += ", ";
      write_inline(value[i], out);
    }
    out += ']';
  } else {
    out += value.dump();  // numbers in the shortest form that reads back exactly
  }
}

ordered_json size2_json(Size2 size) {
  if (size.h == size.w) return size.h;
  return ordered_json::array({size.h, size.w});
}

ordered_json layer_json(const LayerSpec& layer) {
  ordered_json j = ordered_json::object();
  j["type"] = to_string(layer.type);
  if (!layer.name.empty()) j["name"] = layer.name;
  if (!layer.inputs.empty()) j["inputs"] = layer.inputs;
  const bool fused = layer.type == LayerType::Dense || layer.type == LayerType::Conv2D ||
                     layer.type == LayerType::DepthwiseConv2D ||
                     layer.type == LayerType::SeparableConv2D;
  switch (layer.type) {
    case LayerType::Dense:
      j["units"] = layer.units;
      break;
    case LayerType::Conv2D:
      j["filters"] = layer.filters;
      j["kernel_size"] = size2_json(layer.kernel_size);
      if (layer.strides != kDefaultStrides) j["strides"] = size2_json(layer.strides);
      if (layer.padding != Padding::valid) j["padding"] = to_string(layer.padding);
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      if (layer.pool_size != kDefaultPoolSize) j["pool_size"] = size2_json(layer.pool_size);
      if (layer.strides != layer.pool_size) j["strides"] = size2_json(layer.strides);
      if (layer.padding != Padding::valid) j["padding"] = to_string(layer.padding);
      break;
    case LayerType::Dropout:
      j["rate"] = layer.rate;
      if (!layer.noise_shape.empty()) j["noise_shape"] = noise_shape_json(layer.noise_shape);
      break;
    case LayerType::Activation:
      j["activation"] = to_string(layer.activation);
      break;
    case LayerType::Rescaling:
      j["scale"] = layer.scale;
      if (layer.offset != 0.0) j["offset"] = layer.offset;
      break;
    case LayerType::Concatenate:
      if (layer.axis != -1) j["axis"] = layer.axis;
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      if (layer.keepdims) j["keepdims"] = true;
      break;
    case LayerType::ReLU:
      if (std::isfinite(layer.max_value)) j["max_value"] = layer.max_value;
      if (layer.negative_slope != 0.0) j["negative_slope"] = layer.negative_slope;
      if (layer.threshold != 0.0) j["threshold"] = layer.threshold;
      break;
    case LayerType::BatchNormalization:
      if (layer.momentum != LayerSpec{}.momentum) j["momentum"] = layer.momentum;
      [[fallthrough]];  // the fields LayerNormalization has too
    case LayerType::LayerNormalization:
      if (layer.axis != -1) j["axis"] = layer.axis;
      if (layer.epsilon != LayerSpec{}.epsilon) j["epsilon"] = layer.epsilon;
      if (!layer.center) j["center"] = false;
      if (!layer.scale_gamma) j["scale"] = false;
      break;
    case LayerType::ZeroPadding2D:
      if (layer.zero_padding != Pad2D{}) {
        const Pad2D& p = layer.zero_padding;
        j["padding"] = ordered_json::array(
            {ordered_json::array({p.top, p.bottom}), ordered_json::array({p.left, p.right})});
      }
      break;
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (layer.type == LayerType::SeparableConv2D) j["filters"] = layer.filters;
      j["kernel_size"] = size2_json(layer.kernel_size);
      if (layer.strides != kDefaultStrides) j["strides"] = size2_json(layer.strides);
      if (layer.padding != Padding::valid) j["padding"] = to_string(layer.padding);
      if (layer.depth_multiplier != 1) j["depth_multiplier"] = layer.depth_multiplier;
      break;
    case LayerType::Reshape:
      j["target_shape"] = layer.target_shape;
      break;
    case LayerType::Embedding:
      j["input_dim"] = layer.input_dim;
      j["output_dim"] = layer.output_dim;
      break;
    case LayerType::PositionEmbedding:
      j["sequence_length"] = layer.sequence_length;
      break;
    case LayerType::MultiHeadAttention:
      j["num_heads"] = layer.num_heads;
      j["key_dim"] = layer.key_dim;
      if (layer.value_dim > 0) j["value_dim"] = layer.value_dim;
      if (layer.attention_dropout != 0.0) j["dropout"] = layer.attention_dropout;
      if (!layer.use_bias) j["use_bias"] = false;
      if (layer.output_dim > 0) j["output_shape"] = layer.output_dim;
      if (layer.causal) j["use_causal_mask"] = true;
      break;
    case LayerType::Normalization:
      if (layer.axis != -1) j["axis"] = layer.axis;
      if (!layer.mean.empty()) j["mean"] = layer.mean;
      if (!layer.variance.empty()) j["variance"] = layer.variance;
      break;
    case LayerType::Flatten:
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      break;
  }
  if (fused) {
    if (layer.activation != ActivationFn::linear) j["activation"] = to_string(layer.activation);
    if (!layer.use_bias) j["use_bias"] = false;
  }
  if (layer.force_float32) j["dtype"] = "float32";
  if (layer.force_bfloat16) j["dtype"] = "bfloat16";
  return j;
}

}  // namespace

std::string to_json(const ModelSpec& spec, int indent) {
  ordered_json root = ordered_json::object();
  if (spec.name != kDefaultModelName) root["name"] = spec.name;
  root["input"] = {{"shape", spec.input_shape}};
  if (spec.loss != kDefaultLoss) root["loss"] = to_string(spec.loss);
  ordered_json layers = ordered_json::array();
  for (const LayerSpec& layer : spec.layers) layers.push_back(layer_json(layer));
  root["layers"] = std::move(layers);

  try {
    if (indent < 0) return root.dump();
    // One key per line at the top level and one layer per line, so that files diff well.
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    std::string out = "{\n";
    bool first = true;
    for (const auto& [key, value] : root.items()) {
      if (!first) out += ",\n";
      first = false;
      out += pad + ordered_json(key).dump() + ": ";
      if (key == "layers") {
        out += "[\n";
        for (std::size_t i = 0; i < value.size(); ++i) {
          out += pad + pad;
          write_inline(value[i], out);
          out += i + 1 < value.size() ? ",\n" : "\n";
        }
        out += pad + "]";
      } else {
        write_inline(value, out);
      }
    }
    out += "\n}\n";
    return out;
  } catch (const nlohmann::json::exception& e) {
    // dump() rejects strings that are not UTF-8 (a layer or model name built in memory).
    throw SpecError("cannot write model " + quote(spec.name) + " as JSON: " + e.what());
  }
}

}  // namespace mixlab
