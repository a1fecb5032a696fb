// The layers of a Keras model's JSON and how they connect: the "layers" of a Sequential's or a
// functional model's config, and a functional model's one chain from its input to its output.
// Internal to engine/interop: keras_json.cpp reads each layer's fields.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixlab::keras_detail {

// One Keras layer as the importer sees it.
struct KerasLayer {
  std::string class_name;
  std::string name;
  const nlohmann::json* config = nullptr;
  const nlohmann::json* object = nullptr;  // the whole serialized layer
};

// "layer 2 'dense' (Dense)", or "layer 'dense' (Dense)" when `index` < 0; the file's text escaped.
std::string where(int index, const KerasLayer& layer);

// The config's "layers", each with its class and name (Keras refuses a name that is not a
// string; null is its "make one up"). Throws SpecError(prefix + ...) naming the layer.
std::vector<KerasLayer> layer_list(const nlohmann::json& config, const std::string& prefix);

// A functional model's `layers` in the order of its one chain from its one input to its one
// output. Throws SpecError(prefix + ...) naming the first connection that is not a chain (a
// layer with two inputs, one feeding two, a shared layer, a cycle, a layer off the chain).
std::vector<const KerasLayer*> functional_chain(const nlohmann::json& config,
                                                const std::vector<KerasLayer>& layers,
                                                const std::string& prefix);

}  // namespace mixlab::keras_detail
