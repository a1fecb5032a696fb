// The edits that change a model's edges, each one undo step on the document's stack (a macro of
// layer_commands.h's commands): connect one layer's output to another's input, remove an edge,
// join layers with a merge, insert a layer into an edge, and rename a layer together with every
// "inputs" entry that names it. The canvas (model_canvas.h) calls them from the mouse and the
// keyboard, the property panel the rename.
//
// Edges are written the way model_spec.h reads them: a layer that reads exactly the one before
// it names no inputs; any other gets the names of what it reads, and a layer that must be named
// to be read gets Keras's kind of name ("add_2"). A refused edit changes nothing and says why.
#pragma once

#include <QString>
#include <string>
#include <vector>

#include "engine/spec/model_spec.h"

namespace mixlab::ui {

class ModelDocument;

// Which nodes each layer reads, as the canvas draws them (kModelInput, -1, for the model's
// input): its "inputs" that name a layer or the input, else the layer before it. Unlike
// resolve_graph it never throws: a name that matches nothing is left out (the document's
// validation names it in red).
std::vector<std::vector<int>> drawn_inputs(const ModelSpec& spec);

// The order the layers run in, given drawn_inputs: each after every layer it reads, the
// earliest ready one first (resolve_graph's rule), so that a model in that order keeps it.
// Layers on a cycle are left out.
std::vector<int> execution_order(const std::vector<std::vector<int>>& inputs);

// Layers first..last that the canvas can fold into one box: only the output of the node before
// `first` (-1: the model's input) enters them and only `last`'s output leaves, and an edge
// skips inside (a residual block, an Inception cell). The blocks are the stretches between the
// layers that no edge passes over, of two layers or more; in the model's order, which must be
// the order they run in (else there are none).
struct LayerBlock {
  int first = 0;
  int last = 0;
  friend bool operator==(const LayerBlock&, const LayerBlock&) = default;
};
std::vector<LayerBlock> layer_blocks(const std::vector<std::vector<int>>& inputs);

// A name no layer has: Keras's snake-case name of the type, then _1, _2, ... ("add_1").
std::string unique_layer_name(const ModelSpec& spec, LayerType type);

// `to` reads `from` (-1: the model's input): a merge gains it as one more input, another layer
// reads it instead of what it read. Refused (false, *why) when `to` already reads it that way,
// when `from` is `to`, or when `from` reads `to` (a cycle). When `from` comes after `to` in the
// model, the layers are then moved into the order they run in, in the same undo step.
bool connect_layers(ModelDocument* doc, int from, int to, QString* why = nullptr);

// `to` stops reading `from`. Refused when `to` would read nothing.
bool remove_edge(ModelDocument* doc, int from, int to, QString* why = nullptr);

// A new merge layer of `type` reading `sources` (two or more), inserted after the last of them
// in the model's order, so that the layer which read that one next reads the merge. Returns the
// new layer's index, or -1 (and *why) when refused.
int merge_layers(ModelDocument* doc, std::vector<int> sources, LayerType type,
                 QString* why = nullptr);

// Inserts `layer` into the edge from -> to: it reads `from`, and `to` reads it instead. Returns
// its index.
int insert_on_edge(ModelDocument* doc, int from, int to, LayerSpec layer);

// Renames layer `index`; the layers that name it in their inputs follow. False when another
// layer has the name (or it is "input").
bool rename_layer(ModelDocument* doc, int index, const std::string& name, QString* why = nullptr);

}  // namespace mixlab::ui
