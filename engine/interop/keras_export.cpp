// Keras 3 JSON out, as keras.models.model_from_json() reads it: a stack as a Sequential model, a
// graph as a functional one (each layer's inbound node names the layers it reads). Configs give
// the fields MixLab models and leave the rest to Keras's defaults, which are MixLab's.
#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/json_text.h"
#include "engine/spec/model_graph.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json policy_json(std::string_view name) {
  return {{"module", "keras"},
          {"class_name", "DTypePolicy"},
          {"config", {{"name", name}}},
          {"registered_name", nullptr}};
}

ordered_json size2(Size2 s) {
  return ordered_json::array({s.h, s.w});
}

ordered_json layer_config(const LayerSpec& layer) {
  ordered_json c = ordered_json::object();
  if (!layer.name.empty()) c["name"] = layer.name;
  switch (layer.type) {
    case LayerType::Dense:
      c["units"] = layer.units;
      c["activation"] = to_string(layer.activation);
      c["use_bias"] = layer.use_bias;
      break;
    case LayerType::Conv2D:
      c["filters"] = layer.filters;
      c["kernel_size"] = size2(layer.kernel_size);
      c["strides"] = size2(layer.strides);
      c["padding"] = to_string(layer.padding);
      c["data_format"] = "channels_last";
      c["activation"] = to_string(layer.activation);
      c["use_bias"] = layer.use_bias;
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      c["pool_size"] = size2(layer.pool_size);
      c["strides"] = size2(layer.strides);
      c["padding"] = to_string(layer.padding);
      c["data_format"] = "channels_last";
      break;
    case LayerType::Flatten:
      c["data_format"] = "channels_last";
      break;
    case LayerType::Dropout:
      c["rate"] = layer.rate;
      if (!layer.noise_shape.empty()) c["noise_shape"] = noise_shape_json(layer.noise_shape);
      break;
    case LayerType::Activation:
      c["activation"] = to_string(layer.activation);
      break;
    case LayerType::Rescaling:
      c["scale"] = layer.scale;
      c["offset"] = layer.offset;
      break;
    case LayerType::Concatenate:
      c["axis"] = layer.axis;
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      c["data_format"] = "channels_last";
      c["keepdims"] = layer.keepdims;
      break;
    case LayerType::ReLU:
      if (std::isfinite(layer.max_value)) {
        c["max_value"] = layer.max_value;
      } else {
        c["max_value"] = nullptr;
      }
      c["negative_slope"] = layer.negative_slope;
      c["threshold"] = layer.threshold;
      break;
    case LayerType::BatchNormalization:
      c["momentum"] = layer.momentum;
      [[fallthrough]];  // the fields LayerNormalization has too
    case LayerType::LayerNormalization:
      c["axis"] = layer.axis;
      c["epsilon"] = layer.epsilon;
      c["center"] = layer.center;
      c["scale"] = layer.scale_gamma;
      break;
    case LayerType::ZeroPadding2D: {
      const Pad2D& p = layer.zero_padding;
      c["padding"] = ordered_json::array(
          {ordered_json::array({p.top, p.bottom}), ordered_json::array({p.left, p.right})});
      c["data_format"] = "channels_last";
      break;
    }
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (layer.type == LayerType::SeparableConv2D) c["filters"] = layer.filters;
      c["kernel_size"] = size2(layer.kernel_size);
      c["strides"] = size2(layer.strides);
      c["padding"] = to_string(layer.padding);
      c["depth_multiplier"] = layer.depth_multiplier;
      c["data_format"] = "channels_last";
      c["activation"] = to_string(layer.activation);
      c["use_bias"] = layer.use_bias;
      break;
    case LayerType::Reshape:
      c["target_shape"] = layer.target_shape;
      break;
    case LayerType::Normalization:
      // Keras writes its axis as a list; no mean and variance: its state before adapt().
      c["axis"] = ordered_json::array({layer.axis});
      c["invert"] = false;
      if (layer.mean.empty()) {
        c["mean"] = nullptr;
        c["variance"] = nullptr;
      } else {
        c["mean"] = layer.mean;
        c["variance"] = layer.variance;
      }
      break;
    case LayerType::Embedding:
      c["input_dim"] = layer.input_dim;
      c["output_dim"] = layer.output_dim;
      c["mask_zero"] = false;
      break;
    case LayerType::PositionEmbedding:
      c["sequence_length"] = layer.sequence_length;
      break;
    case LayerType::MultiHeadAttention:
      c["num_heads"] = layer.num_heads;
      c["key_dim"] = layer.key_dim;
      c["value_dim"] = layer.value_dim > 0 ? layer.value_dim : layer.key_dim;
      c["dropout"] = layer.attention_dropout;
      c["use_bias"] = layer.use_bias;
      if (layer.output_dim > 0) {
        c["output_shape"] = layer.output_dim;
      } else {
        c["output_shape"] = nullptr;
      }
      c["attention_axes"] = nullptr;
      break;
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      break;
  }
  return c;
}

ordered_json serialized(std::string_view module, std::string_view cls, ordered_json config) {
  return {{"module", module},
          {"class_name", cls},
          {"config", std::move(config)},
          {"registered_name", nullptr}};
}

// Keras 3's reference to a layer's output in an inbound node.
ordered_json keras_tensor(const std::string& layer, const Shape& shape, DType dtype) {
  ordered_json batch_shape = ordered_json::array({nullptr});
  for (const std::int64_t d : shape) batch_shape.push_back(d);
  return {{"class_name", "__keras_tensor__"},
          {"config",
           {{"shape", batch_shape},
            {"dtype", to_string(dtype)},
            {"keras_history", ordered_json::array({layer, 0, 0})}}}};
}

// The Keras name of each layer of a graph: its own, else one made up from its class that no
// other layer has (dense_3), which import_keras_json() leaves out again.
std::vector<std::string> keras_names(const ModelSpec& spec, std::string& input_name) {
  std::set<std::string> taken;
  for (const LayerSpec& layer : spec.layers) taken.insert(layer.name);
  const auto unique = [&](std::string base) {
    std::string name = base;
    for (int n = 1; taken.contains(name); ++n) name = base + "_" + std::to_string(n);
    taken.insert(name);
    return name;
  };
  input_name = unique("input_layer");
  std::vector<std::string> names;
  for (const LayerSpec& layer : spec.layers) {
    names.push_back(layer.name.empty() ? unique(keras_snake_case(to_string(layer.type)))
                                       : layer.name);
  }
  return names;
}

}  // namespace

std::string export_keras_json(const ModelSpec& spec, Policy policy) {
  const ModelGraph graph = resolve_graph(spec);
  // MultiHeadAttention takes its input twice (query and value): a functional model's call.
  const bool functional =
      !graph.is_chain() ||
      std::any_of(spec.layers.begin(), spec.layers.end(),
                  [](const LayerSpec& l) { return l.type == LayerType::MultiHeadAttention; });
  const ShapeTable table = functional ? infer_shapes(spec, policy) : ShapeTable{};
  std::string input_name;
  const std::vector<std::string> names =
      functional ? keras_names(spec, input_name) : std::vector<std::string>{};
  // mixed_float8 is Keras's mixed_bfloat16 model quantized to float8 after it is built: its
  // JSON names the policy the layers are built under.
  const std::string policy_name(
      to_string(policy == Policy::mixed_float8 ? Policy::mixed_bfloat16 : policy));
  ordered_json input_config = ordered_json::object();
  ordered_json batch_shape = ordered_json::array({nullptr});
  for (std::int64_t d : spec.input_shape) batch_shape.push_back(d);
  input_config["batch_shape"] = batch_shape;
  // Token ids, as Keras models give an Embedding its input; other inputs are float32.
  const bool ids = std::any_of(spec.layers.begin(), spec.layers.end(),
                               [](const LayerSpec& l) { return l.type == LayerType::Embedding; });
  input_config["dtype"] = ids ? "int32" : "float32";
  input_config["sparse"] = false;
  if (functional) input_config["name"] = input_name;
  ordered_json layers = ordered_json::array();
  layers.push_back(serialized("keras.layers", "InputLayer", input_config));
  if (functional) {
    layers.back()["name"] = input_name;
    layers.back()["inbound_nodes"] = ordered_json::array();
  }
  // A graph in the order it runs, so that each layer follows the layers it reads.
  for (const int i : graph.order) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    ordered_json config = layer_config(layer);
    if (functional) config["name"] = names[static_cast<std::size_t>(i)];
    config["trainable"] = true;
    // A layer kept in float32 says so as a plain string, which import_keras_json() reads back
    // under every policy; Keras reads it as DTypePolicy("float32").
    config["dtype"] = layer.force_float32 ? ordered_json("float32") : policy_json(policy_name);
    if (layer.type == LayerType::PositionEmbedding) {
      // keras_hub's layer: model_from_json() needs keras_hub imported.
      layers.push_back(serialized("keras_hub.layers", "PositionEmbedding", std::move(config)));
      layers.back()["registered_name"] = "keras_hub>PositionEmbedding";
    } else {
      layers.push_back(serialized("keras.layers", to_string(layer.type), std::move(config)));
    }
    if (!functional) continue;
    ordered_json args = ordered_json::array();
    for (const int from : graph.inputs[static_cast<std::size_t>(i)]) {
      if (from == kModelInput) {
        args.push_back(keras_tensor(input_name, spec.input_shape, DType::f32));
        if (ids) args.back()["config"]["dtype"] = "int32";
      } else {
        const LayerInfo& source = table.layers[static_cast<std::size_t>(from)];
        args.push_back(keras_tensor(names[static_cast<std::size_t>(from)], source.output_shape,
                                    source.compute));
      }
    }
    // A merge takes the list of its inputs as its one argument; self-attention its input as the
    // query and the value, and the causal mask as a call argument.
    ordered_json kwargs = ordered_json::object();
    if (is_merge(layer.type)) args = ordered_json::array({args});
    if (layer.type == LayerType::MultiHeadAttention) {
      args.push_back(args.front());
      if (layer.causal) kwargs["use_causal_mask"] = true;
    }
    layers.back()["name"] = names[static_cast<std::size_t>(i)];
    layers.back()["inbound_nodes"] = ordered_json::array({{{"args", args}, {"kwargs", kwargs}}});
  }
  ordered_json model_config = ordered_json::object();
  model_config["name"] = spec.name;
  model_config["trainable"] = true;
  if (!functional) model_config["dtype"] = policy_json(policy_name);
  model_config["layers"] = std::move(layers);
  if (functional) {
    model_config["input_layers"] = ordered_json::array({ordered_json::array({input_name, 0, 0})});
    model_config["output_layers"] = ordered_json::array(
        {ordered_json::array({names[static_cast<std::size_t>(graph.output)], 0, 0})});
  }
  ordered_json root =
      functional ? serialized("keras.src.models.functional", "Functional", std::move(model_config))
                 : serialized("keras", "Sequential", std::move(model_config));
  if (functional) root["registered_name"] = "Functional";
  // The loss is the model's in MixLab; Keras keeps it in the compile config, which
  // model_from_json() applies (the optimizer is a run setting: Keras's default here).
  root["compile_config"] = {{"optimizer", "rmsprop"},
                            {"loss", to_string(spec.loss)},
                            {"metrics", ordered_json::array({"accuracy"})}};
  return root.dump(2) + "\n";
}

}  // namespace mixlab
