// A model's layers as a graph: which layers each one reads, an order to run them in, and who
// reads each. Device-free; shape inference, the plan, the editor and the exporters use it.
//
// The rules (model_spec.h says how a file names the edges):
// - a layer reads the layers named in its "inputs", else the layer before it (the model's input
//   for the first); "input" names the model's input, and no layer may take that name;
// - names are unique; a merge reads two or more layers (Subtract exactly two), any other layer
//   one;
// - the last layer is the model's output; every other layer's output must reach a reader;
// - no cycles.
// Each broken rule is a SpecError naming the layer and the edge.
#pragma once

#include <string>
#include <vector>

#include "engine/spec/model_spec.h"

namespace mixlab {

// The model's input, where a layer index would be.
inline constexpr int kModelInput = -1;
// The name that refers to the model's input in "inputs".
inline constexpr std::string_view kModelInputName = "input";

struct ModelGraph {
  std::vector<std::vector<int>> inputs;   // per layer: the layers it reads, in order
  std::vector<std::vector<int>> readers;  // per layer: the layers that read it
  std::vector<int> order;                 // every layer once, each after all it reads
  int output = -1;                        // the model's output: the last layer
  bool is_chain() const;                  // each layer reads the one before it
};

// Resolves and checks the graph of `spec`; SpecError names the layer and the edge.
ModelGraph resolve_graph(const ModelSpec& spec);

// How a layer is named in messages about edges: 'add_1', else "layer 7".
std::string edge_name(const ModelSpec& spec, int layer);

}  // namespace mixlab
