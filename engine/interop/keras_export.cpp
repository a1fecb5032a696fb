// Keras 3 JSON out: a Sequential model as keras.models.model_from_json() reads it. Configs give
// the fields MixLab models and leave the rest to Keras's defaults, which are MixLab's.
#include <nlohmann/json.hpp>

#include "engine/interop/keras_model.h"

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
      break;
    case LayerType::Activation:
      c["activation"] = to_string(layer.activation);
      break;
    case LayerType::Rescaling:
      c["scale"] = layer.scale;
      c["offset"] = layer.offset;
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

}  // namespace

std::string export_keras_json(const ModelSpec& spec, Policy policy) {
  const std::string policy_name(to_string(policy));
  ordered_json input_config = ordered_json::object();
  ordered_json batch_shape = ordered_json::array({nullptr});
  for (std::int64_t d : spec.input_shape) batch_shape.push_back(d);
  input_config["batch_shape"] = batch_shape;
  input_config["dtype"] = "float32";
  input_config["sparse"] = false;
  ordered_json layers = ordered_json::array();
  layers.push_back(serialized("keras.layers", "InputLayer", input_config));
  for (const LayerSpec& layer : spec.layers) {
    ordered_json config = layer_config(layer);
    config["trainable"] = true;
    // A layer kept in float32 says so as a plain string, which import_keras_json() reads back
    // under every policy; Keras reads it as DTypePolicy("float32").
    config["dtype"] = layer.force_float32 ? ordered_json("float32") : policy_json(policy_name);
    layers.push_back(serialized("keras.layers", to_string(layer.type), std::move(config)));
  }
  ordered_json model_config = ordered_json::object();
  model_config["name"] = spec.name;
  model_config["trainable"] = true;
  model_config["dtype"] = policy_json(policy_name);
  model_config["layers"] = std::move(layers);
  ordered_json root = serialized("keras", "Sequential", std::move(model_config));
  // The loss is the model's in MixLab; Keras keeps it in the compile config, which
  // model_from_json() applies (the optimizer is a run setting: Keras's default here).
  root["compile_config"] = {{"optimizer", "rmsprop"},
                            {"loss", to_string(spec.loss)},
                            {"metrics", ordered_json::array({"accuracy"})}};
  return root.dump(2) + "\n";
}

}  // namespace mixlab
