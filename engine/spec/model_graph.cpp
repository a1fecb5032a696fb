#include "engine/spec/model_graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/spec/layer_checks.h"

namespace mixlab {
namespace {

using spec_detail::layer_prefix;

std::string where(const ModelSpec& spec, int layer) {
  const LayerSpec& l = spec.layers[static_cast<std::size_t>(layer)];
  return layer_prefix(layer, l.type, l.name);
}

// How many layers a type reads: {at least, at most}.
std::pair<int, int> input_count(LayerType type) {
  if (type == LayerType::Subtract) return {2, 2};
  if (is_merge(type)) return {2, 1 << 20};
  return {1, 1};
}

// One cycle among `left` (layers not ordered), as "'a' -> 'b' -> 'a'".
std::string describe_cycle(const ModelSpec& spec, const ModelGraph& g, std::vector<bool> left) {
  // Every layer left reads at least one layer left (else it would have been ordered): walk
  // back along those until a layer repeats.
  int at = static_cast<int>(std::find(left.begin(), left.end(), true) - left.begin());
  std::vector<int> path;
  std::vector<int> seen_at(spec.layers.size(), -1);
  while (seen_at[static_cast<std::size_t>(at)] < 0) {
    seen_at[static_cast<std::size_t>(at)] = static_cast<int>(path.size());
    path.push_back(at);
    for (const int in : g.inputs[static_cast<std::size_t>(at)]) {
      if (in != kModelInput && left[static_cast<std::size_t>(in)]) {
        at = in;
        break;
      }
    }
  }
  std::vector<int> cycle(path.begin() + seen_at[static_cast<std::size_t>(at)], path.end());
  std::reverse(cycle.begin(), cycle.end());  // in the direction the data flows
  std::string text;
  for (const int layer : cycle) text += edge_name(spec, layer) + " -> ";
  return text + edge_name(spec, cycle.front());
}

}  // namespace

bool is_merge(LayerType type) {
  switch (type) {
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
    case LayerType::Concatenate:
      return true;
    default:
      return false;
  }
}

bool ModelGraph::is_chain() const {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int before = i == 0 ? kModelInput : static_cast<int>(i) - 1;
    if (inputs[i].size() != 1 || inputs[i][0] != before) return false;
  }
  return true;
}

std::string edge_name(const ModelSpec& spec, int layer) {
  if (layer == kModelInput) return "the model's input";
  const LayerSpec& l = spec.layers.at(static_cast<std::size_t>(layer));
  return l.name.empty() ? "layer " + std::to_string(layer) : quote(l.name);
}

ModelGraph resolve_graph(const ModelSpec& spec) {
  const int n = static_cast<int>(spec.layers.size());
  ModelGraph g;
  g.inputs.resize(static_cast<std::size_t>(n));
  g.readers.resize(static_cast<std::size_t>(n));
  if (n == 0) return g;

  std::unordered_map<std::string, int> by_name;
  for (int i = 0; i < n; ++i) {
    const std::string& name = spec.layers[static_cast<std::size_t>(i)].name;
    if (name.empty()) continue;
    if (name == kModelInputName) {
      throw SpecError(where(spec, i) + "the name " + quote(name) +
                          " is the model's input's; give the layer another name",
                      i);
    }
    const auto [it, added] = by_name.emplace(name, i);
    if (!added) {
      throw SpecError(where(spec, i) + "the name " + quote(name) + " is already layer " +
                          std::to_string(it->second) + "'s: names must be unique",
                      i);
    }
  }

  for (int i = 0; i < n; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    std::vector<int>& in = g.inputs[static_cast<std::size_t>(i)];
    if (layer.inputs.empty()) {
      in.push_back(i == 0 ? kModelInput : i - 1);
    }
    for (const std::string& name : layer.inputs) {
      if (name == kModelInputName) {
        in.push_back(kModelInput);
        continue;
      }
      const auto found = by_name.find(name);
      if (found == by_name.end()) {
        throw SpecError(where(spec, i) + "reads " + quote(name) + ", but no layer has that name",
                        i);
      }
      if (found->second == i) {
        throw SpecError(where(spec, i) + "reads itself (" + quote(name) + ")", i);
      }
      in.push_back(found->second);
    }
    const auto [least, most] = input_count(layer.type);
    const int count = static_cast<int>(in.size());
    if (count < least || count > most) {
      const std::string needs =
          least == most ? std::to_string(least) : std::to_string(least) + " or more";
      const std::string noun = least == 1 && most == 1 ? " layer" : " layers";
      const std::string hint =
          is_merge(layer.type) && layer.inputs.empty() ? ": name them in \"inputs\"" : "";
      throw SpecError(
          where(spec, i) + "reads " + needs + noun + ", got " + std::to_string(count) + hint, i);
    }
    for (const int from : in) {
      if (from != kModelInput) g.readers[static_cast<std::size_t>(from)].push_back(i);
    }
  }

  // Execution order: Kahn's algorithm, taking the earliest layer of the file that is ready, so
  // that a file in topological order (every Keras file, every stack) runs in its own order.
  std::vector<int> waiting(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    for (const int from : g.inputs[static_cast<std::size_t>(i)]) {
      if (from != kModelInput) ++waiting[static_cast<std::size_t>(i)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (waiting[static_cast<std::size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    g.order.push_back(i);
    for (const int r : g.readers[static_cast<std::size_t>(i)]) {
      // A layer that reads the same layer twice (Add(x, x)) waits for it twice.
      if (--waiting[static_cast<std::size_t>(r)] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(g.order.size()) < n) {
    std::vector<bool> left(static_cast<std::size_t>(n), true);
    for (const int i : g.order) left[static_cast<std::size_t>(i)] = false;
    const int first = static_cast<int>(std::find(left.begin(), left.end(), true) - left.begin());
    throw SpecError("layers read each other in a cycle: " + describe_cycle(spec, g, left), first);
  }

  g.output = n - 1;
  if (!g.readers[static_cast<std::size_t>(g.output)].empty()) {
    const int reader = g.readers[static_cast<std::size_t>(g.output)].front();
    throw SpecError(where(spec, g.output) + "is the model's output (the last layer), but " +
                        edge_name(spec, reader) + " reads it: put the output layer last",
                    g.output);
  }
  for (int i = 0; i < n - 1; ++i) {
    if (g.readers[static_cast<std::size_t>(i)].empty()) {
      throw SpecError(where(spec, i) +
                          "its output reaches nothing: no layer reads it and it is not the "
                          "model's output (the last layer)",
                      i);
    }
  }
  return g;
}

}  // namespace mixlab
