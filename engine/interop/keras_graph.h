// The layers of a Keras model's JSON and how they connect: the "layers" of a Sequential's or a
// functional model's config, and a functional model's graph from its input to its output.
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

// One layer of a functional model and the layers it reads, by their Keras names.
struct KerasNode {
  const KerasLayer* layer = nullptr;
  std::vector<std::string> inputs;
};

// A functional model's `layers` in an order where each follows those it reads (the file's order
// where it allows), from its one input (an InputLayer, first, reading nothing) to its one output
// (last). Throws SpecError(prefix + ...) naming what MixLab cannot import: several inputs or
// outputs, a shared layer (called more than once), an input that is no layer, a cycle, a layer
// off every path from the input to the output.
std::vector<KerasNode> functional_graph(const nlohmann::json& config,
                                        const std::vector<KerasLayer>& layers,
                                        const std::string& prefix);

}  // namespace mixlab::keras_detail
