#include "engine/interop/keras_graph.h"

#include <map>
#include <set>

#include "engine/core/error.h"

namespace mixlab::keras_detail {

namespace {

using json = nlohmann::json;

// "'a', 'b'"
std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + quote(n);
  return out;
}

// The one layer named by "input_layers" / "output_layers": [["name", 0, 0]] (or ["name", 0,
// 0] for a single one, as Keras 3 writes it).
std::string endpoint(const json& config, const char* key, const std::string& prefix) {
  if (!config.contains(key) || !config[key].is_array() || config[key].empty()) {
    throw SpecError(prefix + "the functional model has no \"" + std::string(key) + "\"");
  }
  const json& list = config[key];
  if (list[0].is_string()) return list[0].get<std::string>();
  if (list.size() > 1) {
    throw SpecError(prefix + "the model has " + std::to_string(list.size()) + " " +
                    (std::string(key) == "input_layers" ? "inputs" : "outputs") +
                    ": MixLab imports models with one input and one output");
  }
  if (!list[0].is_array() || list[0].empty() || !list[0][0].is_string()) {
    throw SpecError(prefix + "the functional model's \"" + std::string(key) +
                    "\" is not [[name, node, tensor]]");
  }
  return list[0][0].get<std::string>();
}

// The layers a functional layer's inbound nodes read from, in order (Keras 3 "__keras_tensor__"
// objects with keras_history, or tf.keras 2's [name, node, tensor, kwargs] lists).
std::vector<std::string> inbound_layers(const KerasLayer& layer, const std::string& prefix) {
  std::vector<std::string> from;
  if (!layer.object->contains("inbound_nodes")) return from;
  const json& nodes = (*layer.object)["inbound_nodes"];
  if (!nodes.is_array()) {
    throw SpecError(prefix + where(-1, layer) + ": \"inbound_nodes\" is not an array");
  }
  if (nodes.size() > 1) {
    throw SpecError(prefix + where(-1, layer) + " is called " + std::to_string(nodes.size()) +
                    " times (a shared layer): MixLab imports each layer called once; give each "
                    "call a layer of its own");
  }
  const auto visit = [&](const json& value, const auto& self) -> void {
    if (value.is_object()) {
      if (value.value("class_name", "") == "__keras_tensor__" && value.contains("config")) {
        const json& history = value["config"].value("keras_history", json());
        if (history.is_array() && !history.empty() && history[0].is_string()) {
          from.push_back(history[0].get<std::string>());
        }
        return;
      }
      for (const auto& [k, v] : value.items()) {
        if (k != "kwargs") self(v, self);
      }
    } else if (value.is_array()) {
      // tf.keras 2: ["name", node, tensor, {kwargs}]
      if (value.size() >= 3 && value[0].is_string() && value[1].is_number()) {
        from.push_back(value[0].get<std::string>());
        return;
      }
      for (const json& v : value) self(v, self);
    }
  };
  for (const json& node : nodes) {
    if (node.is_object() && node.contains("args")) {
      visit(node["args"], visit);
      // MultiHeadAttention may be called with query=, value=, key= by keyword.
      if (layer.class_name == "MultiHeadAttention" && node.contains("kwargs") &&
          node["kwargs"].is_object()) {
        for (const char* key : {"query", "value", "key"}) {
          if (node["kwargs"].contains(key)) visit(node["kwargs"][key], visit);
        }
      }
    } else {
      visit(node, visit);
    }
  }
  if (layer.class_name == "MultiHeadAttention" && !from.empty()) {
    // Self-attention: the query, value and key are one layer's output, MixLab's one input.
    for (const std::string& source : from) {
      if (source != from.front()) {
        throw SpecError(prefix + where(-1, layer) + " attends from " + quote(from.front()) +
                        " to " + quote(source) +
                        ": MixLab's MultiHeadAttention is self-attention (query, value and key "
                        "the same layer's output); cross-attention is not supported");
      }
    }
    from.resize(1);
  }
  return from;
}

}  // namespace

std::string where(int index, const KerasLayer& layer) {
  std::string text = index >= 0 ? "layer " + std::to_string(index) + " " : "layer ";
  return text + quote(layer.name) + " (" + printable(layer.class_name) + ")";
}

std::vector<KerasLayer> layer_list(const json& config, const std::string& prefix) {
  if (!config.contains("layers") || !config["layers"].is_array()) {
    throw SpecError(prefix + "the model's config has no \"layers\" array");
  }
  std::vector<KerasLayer> layers;
  for (const json& l : config["layers"]) {
    KerasLayer layer;
    layer.object = &l;
    const std::string at = "layer " + std::to_string(layers.size()) + " of the file";
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string()) {
      throw SpecError(prefix + at + " has no \"class_name\"");
    }
    layer.class_name = l["class_name"].get<std::string>();
    if (!l.contains("config") || !l["config"].is_object()) {
      throw SpecError(prefix + "layer " + quote(layer.class_name) + " has no \"config\" object");
    }
    layer.config = &l["config"];
    for (const json* holder : {&l, layer.config}) {
      const auto name = holder->find("name");
      if (name == holder->end() || name->is_null()) continue;
      if (!name->is_string()) {
        throw SpecError(prefix + at + " (" + printable(layer.class_name) + "): \"name\" " +
                        name->dump() + " is not a string");
      }
      if (layer.name.empty()) layer.name = name->get<std::string>();
    }
    layers.push_back(layer);
  }
  return layers;
}

std::vector<KerasNode> functional_graph(const json& config, const std::vector<KerasLayer>& layers,
                                        const std::string& prefix) {
  const auto fail = [&](const std::string& what) { throw SpecError(prefix + what); };
  const std::string input = endpoint(config, "input_layers", prefix);
  const std::string output = endpoint(config, "output_layers", prefix);
  std::map<std::string, std::size_t> index;
  std::vector<KerasNode> nodes;
  for (const KerasLayer& layer : layers) {
    if (!index.emplace(layer.name, nodes.size()).second) {
      fail(where(-1, layer) + ": two layers are named " + quote(layer.name));
    }
    nodes.push_back({&layer, inbound_layers(layer, prefix)});
  }
  if (!index.contains(input)) fail("the model's input " + quote(input) + " is not a layer");
  if (!index.contains(output)) fail("the model's output " + quote(output) + " is not a layer");
  std::vector<std::vector<std::size_t>> readers(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const KerasLayer& layer = *nodes[i].layer;
    if (layer.class_name == "InputLayer" && layer.name != input) {
      fail(where(-1, layer) + " is a second input (the model's is " + quote(input) +
           "): MixLab imports models with one input and one output");
    }
    if (layer.name != input && nodes[i].inputs.empty()) {
      fail(where(-1, layer) + " reads nothing: it is not on a path from the input " + quote(input));
    }
    for (const std::string& source : nodes[i].inputs) {
      if (!index.contains(source)) {
        fail(where(-1, layer) + " takes its input from " + quote(source) +
             ", which is not a layer of the model");
      }
      readers[index.at(source)].push_back(i);
    }
  }
  // Each layer once every layer it reads has run, the earliest in the file first (Kahn).
  std::vector<std::size_t> waiting(nodes.size());
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    waiting[i] = nodes[i].inputs.size();
    if (waiting[i] == 0) ready.insert(i);
  }
  std::vector<KerasNode> order;
  while (!ready.empty()) {
    const std::size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (const std::size_t r : readers[i]) {
      if (--waiting[r] == 0) ready.insert(r);
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] != 0) {
      fail(where(-1, *nodes[i].layer) + " is on a cycle: it reads " + quoted_list(nodes[i].inputs) +
           ", which wait on its own output");
    }
  }
  // Every layer reaches the output; then the output is the last of the order.
  std::vector<bool> reaches(nodes.size(), false);
  std::vector<std::size_t> stack = {index.at(output)};
  reaches[stack.back()] = true;
  while (!stack.empty()) {
    const std::size_t at = stack.back();
    stack.pop_back();
    for (const std::string& source : nodes[at].inputs) {
      const std::size_t s = index.at(source);
      if (reaches[s]) continue;
      reaches[s] = true;
      stack.push_back(s);
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!reaches[i]) {
      fail(where(-1, *nodes[i].layer) + " is not on a path from the input " + quote(input) +
           " to the output " + quote(output) + " (MixLab imports models with one output)");
    }
  }
  return order;
}

}  // namespace mixlab::keras_detail
