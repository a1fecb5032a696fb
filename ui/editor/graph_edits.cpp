#include "ui/editor/graph_edits.h"

#include <QCoreApplication>
#include <QUndoStack>
#include <algorithm>
#include <set>

#include "engine/interop/keras_model.h"
#include "engine/spec/model_graph.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/model_document.h"
#include "ui/qt_text.h"

namespace mixlab::ui {
namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("GraphEdits", text);
}

bool refuse(QString* why, const QString& message) {
  if (why != nullptr) *why = message;
  return false;
}

const LayerSpec& layer_at(const ModelDocument* doc, int index) {
  return doc->spec().layers.at(static_cast<std::size_t>(index));
}

// 'add_1', or "layer 7 (Add)" for one without a name; "the input" for -1.
QString node_text(const ModelSpec& spec, int node) {
  if (node == kModelInput) return tr("the input");
  return qt_text(edge_name(spec, node));
}

// The name `node` is read by, naming the layer first (one more command in the open macro) when
// it has none.
std::string name_for_reading(ModelDocument* doc, int node) {
  if (node == kModelInput) return std::string(kModelInputName);
  const LayerSpec& layer = layer_at(doc, node);
  if (!layer.name.empty()) return layer.name;
  LayerSpec named = layer;
  named.name = unique_layer_name(doc->spec(), layer.type);
  doc->undo_stack()->push(new EditLayerCommand(doc, node, LayerField::name, named));
  return named.name;
}

// The "inputs" field that makes layer `index` read `sources`: none when that is the layer
// before it.
std::vector<std::string> inputs_field(ModelDocument* doc, int index,
                                      const std::vector<int>& sources) {
  if (sources.size() == 1 && sources.front() == index - 1) return {};
  std::vector<std::string> names;
  for (int source : sources) names.push_back(name_for_reading(doc, source));
  return names;
}

void set_inputs(ModelDocument* doc, int index, const std::vector<int>& sources) {
  LayerSpec after = layer_at(doc, index);
  after.inputs = inputs_field(doc, index, sources);
  if (after != layer_at(doc, index))
    doc->undo_stack()->push(new EditLayerCommand(doc, index, LayerField::inputs, after));
}

// Moves the layers into the order they run in (each after every layer it reads, earliest first,
// as resolve_graph orders them), in the open macro, so that the table lists them as they run.
// A layer whose implicit "the one before" would change is named what it reads first.
void keep_execution_order(ModelDocument* doc) {
  const std::vector<int> order = execution_order(drawn_inputs(doc->spec()));
  const int count = static_cast<int>(order.size());
  bool in_order = true;
  for (int k = 0; k < count; ++k) in_order = in_order && order[static_cast<std::size_t>(k)] == k;
  if (in_order || count != static_cast<int>(doc->spec().layers.size())) return;
  std::vector<int> position(order.size());
  for (int k = 0; k < count; ++k)
    position[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = k;
  // Name every implicit edge that the moves would break: layer i read i - 1 (or the input).
  for (int i = 0; i < count; ++i) {
    if (!layer_at(doc, i).inputs.empty()) continue;
    const int source = i - 1;
    const int at = position[static_cast<std::size_t>(i)];
    const bool kept = source < 0 ? at == 0 : position[static_cast<std::size_t>(source)] == at - 1;
    if (kept) continue;
    LayerSpec after = layer_at(doc, i);
    after.inputs = {name_for_reading(doc, source)};
    doc->undo_stack()->push(new EditLayerCommand(doc, i, LayerField::inputs, after));
  }
  // Then move them, one place at a time from the top: `current` maps places to layers.
  std::vector<int> current(order.size());
  for (int k = 0; k < count; ++k) current[static_cast<std::size_t>(k)] = k;
  for (int k = 0; k < count; ++k) {
    const int layer = order[static_cast<std::size_t>(k)];
    const auto from =
        static_cast<int>(std::find(current.begin(), current.end(), layer) - current.begin());
    if (from == k) continue;
    doc->undo_stack()->push(new MoveLayerCommand(doc, from, k));
    current.erase(current.begin() + from);
    current.insert(current.begin() + k, layer);
  }
}

}  // namespace

std::vector<int> execution_order(const std::vector<std::vector<int>>& inputs) {
  const auto n = inputs.size();
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (std::size_t i = 0; i < n; ++i)
    for (const int source : inputs[i]) {
      if (source < 0) continue;
      ++waiting[i];
      readers[static_cast<std::size_t>(source)].push_back(static_cast<int>(i));
    }
  // Kahn's algorithm, the earliest ready layer first (a set, for ResNet50's 176 it is cheap).
  std::set<int> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.insert(static_cast<int>(i));
  std::vector<int> order;
  while (!ready.empty()) {
    const int next = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(next);
    for (const int reader : readers[static_cast<std::size_t>(next)])
      if (--waiting[static_cast<std::size_t>(reader)] == 0) ready.insert(reader);
  }
  return order;
}

std::vector<LayerBlock> layer_blocks(const std::vector<std::vector<int>>& inputs) {
  const int count = static_cast<int>(inputs.size());
  // over[v]: how many edges pass over layer v (from before it to after it), by differences.
  std::vector<int> over(inputs.size() + 1, 0);
  for (int i = 0; i < count; ++i)
    for (const int source : inputs[static_cast<std::size_t>(i)]) {
      if (source >= i) return {};  // not in the order they run in
      if (i - source < 2) continue;
      ++over[static_cast<std::size_t>(source + 1)];
      --over[static_cast<std::size_t>(i)];
    }
  std::vector<LayerBlock> blocks;
  int passing = 0;
  int cut = kModelInput;  // the last layer no edge passes over
  for (int v = 0; v < count; ++v) {
    passing += over[static_cast<std::size_t>(v)];
    if (passing != 0) continue;
    if (v - cut >= 2) blocks.push_back({cut + 1, v});
    cut = v;
  }
  return blocks;
}

std::vector<std::vector<int>> drawn_inputs(const ModelSpec& spec) {
  std::vector<std::vector<int>> inputs(spec.layers.size());
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    if (layer.inputs.empty()) {
      inputs[i].push_back(static_cast<int>(i) - 1);
      continue;
    }
    for (const std::string& name : layer.inputs) {
      if (name == kModelInputName) {
        inputs[i].push_back(kModelInput);
        continue;
      }
      const auto found = std::find_if(spec.layers.begin(), spec.layers.end(),
                                      [&](const LayerSpec& l) { return l.name == name; });
      if (found != spec.layers.end())
        inputs[i].push_back(static_cast<int>(found - spec.layers.begin()));
    }
  }
  return inputs;
}

std::string unique_layer_name(const ModelSpec& spec, LayerType type) {
  std::set<std::string> taken{std::string(kModelInputName)};
  for (const LayerSpec& layer : spec.layers) taken.insert(layer.name);
  const std::string base = keras_snake_case(to_string(type));
  for (int k = 1;; ++k) {
    std::string name = base;
    name += '_';
    name += std::to_string(k);
    if (!taken.contains(name)) return name;
  }
}

bool connect_layers(ModelDocument* doc, int from, int to, QString* why) {
  const ModelSpec& spec = doc->spec();
  const int count = static_cast<int>(spec.layers.size());
  if (to < 0 || to >= count || from < kModelInput || from >= count)
    return refuse(why, tr("There is no such layer."));
  if (from == to) return refuse(why, tr("A layer cannot read its own output."));
  std::vector<std::vector<int>> inputs = drawn_inputs(spec);
  const std::size_t ordered = execution_order(inputs).size();  // less than all: a cycle already
  std::vector<int>& sources = inputs[static_cast<std::size_t>(to)];
  const bool merge = is_merge(layer_at(doc, to).type);
  const bool reads = std::find(sources.begin(), sources.end(), from) != sources.end();
  if (merge ? reads : sources == std::vector<int>{from})
    return refuse(why, tr("%1 already reads %2.").arg(node_text(spec, to), node_text(spec, from)));
  if (merge)
    sources.push_back(from);
  else
    sources = {from};
  // The new edge puts layers on a cycle: they drop out of the order they run in.
  if (execution_order(inputs).size() < ordered)
    return refuse(why, tr("%1 already reads %2 through other layers: connecting them would make "
                          "a cycle.")
                           .arg(node_text(spec, from), node_text(spec, to)));
  QUndoStack* stack = doc->undo_stack();
  stack->beginMacro(tr("Connect %1 to %2").arg(node_text(spec, from), node_text(spec, to)));
  set_inputs(doc, to, sources);
  keep_execution_order(doc);
  stack->endMacro();
  return true;
}

bool remove_edge(ModelDocument* doc, int from, int to, QString* why) {
  const ModelSpec& spec = doc->spec();
  if (to < 0 || to >= static_cast<int>(spec.layers.size()))
    return refuse(why, tr("There is no such layer."));
  std::vector<int> sources = drawn_inputs(spec)[static_cast<std::size_t>(to)];
  const auto found = std::find(sources.begin(), sources.end(), from);
  if (found == sources.end())
    return refuse(why, tr("%1 does not read %2.").arg(node_text(spec, to), node_text(spec, from)));
  sources.erase(found);
  if (sources.empty())
    return refuse(why, tr("%1 would read nothing: connect another layer to it first, or remove "
                          "the layer.")
                           .arg(node_text(spec, to)));
  QUndoStack* stack = doc->undo_stack();
  stack->beginMacro(
      tr("Remove the edge from %1 to %2").arg(node_text(spec, from), node_text(spec, to)));
  set_inputs(doc, to, sources);
  stack->endMacro();
  return true;
}

int merge_layers(ModelDocument* doc, std::vector<int> sources, LayerType type, QString* why) {
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  if (sources.size() < 2) {
    refuse(why, tr("Select two or more layers to merge (Ctrl+click adds a block to the "
                   "selection)."));
    return -1;
  }
  if (type == LayerType::Subtract && sources.size() != 2) {
    refuse(why, tr("Subtract takes exactly two layers."));
    return -1;
  }
  const int at = sources.back() + 1;
  QUndoStack* stack = doc->undo_stack();
  stack->beginMacro(tr("Merge with %1").arg(qt_text(to_string(type))));
  LayerSpec merge;
  merge.type = type;
  merge.name = unique_layer_name(doc->spec(), type);
  for (int source : sources) merge.inputs.push_back(name_for_reading(doc, source));
  stack->push(new InsertLayerCommand(doc, at, std::move(merge)));
  stack->endMacro();
  return at;
}

int insert_on_edge(ModelDocument* doc, int from, int to, LayerSpec layer) {
  QUndoStack* stack = doc->undo_stack();
  stack->beginMacro(tr("Add %1").arg(qt_text(to_string(layer.type))));
  // In front of `to`: a layer that reads the one before it then reads the new one.
  // (`to` names `from` when it does not read the one before it implicitly.)
  const bool implicit = layer_at(doc, to).inputs.empty();
  std::string source;
  if (!implicit || from != to - 1) {
    source = name_for_reading(doc, from);
    layer.inputs = {source};
    if (layer.name.empty()) layer.name = unique_layer_name(doc->spec(), layer.type);
  }
  const std::string name = layer.name;
  stack->push(new InsertLayerCommand(doc, to, std::move(layer)));
  if (!implicit) {
    const int target = to + 1;
    LayerSpec after = layer_at(doc, target);
    std::replace(after.inputs.begin(), after.inputs.end(), source, name);
    stack->push(new EditLayerCommand(doc, target, LayerField::inputs, after));
  }
  stack->endMacro();
  return to;
}

bool rename_layer(ModelDocument* doc, int index, const std::string& name, QString* why) {
  const ModelSpec& spec = doc->spec();
  const std::string old = layer_at(doc, index).name;
  if (name == old) return true;
  if (name == kModelInputName)
    return refuse(why, tr("\"input\" names the model's input; choose another name."));
  for (std::size_t i = 0; i < spec.layers.size(); ++i)
    if (!name.empty() && static_cast<int>(i) != index && spec.layers[i].name == name)
      return refuse(why,
                    tr("Layer %1 is already named '%2'.").arg(QString::number(i), qt_text(name)));
  if (name.empty() && !old.empty()) {
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
      const std::vector<std::string>& inputs = spec.layers[i].inputs;
      if (std::find(inputs.begin(), inputs.end(), old) != inputs.end())
        return refuse(why, tr("%1 reads '%2' by its name, which it keeps.")
                               .arg(node_text(spec, static_cast<int>(i)), qt_text(old)));
    }
  }
  QUndoStack* stack = doc->undo_stack();
  stack->beginMacro(tr("Rename %1 to '%2'").arg(node_text(spec, index), qt_text(name)));
  // Its readers follow (an unnamed layer cannot have been read by name), before the rename
  // itself, whose layer the editor then shows selected.
  if (!old.empty() && !name.empty()) {
    for (std::size_t i = 0; i < doc->spec().layers.size(); ++i) {
      LayerSpec reader = doc->spec().layers[i];
      if (std::find(reader.inputs.begin(), reader.inputs.end(), old) == reader.inputs.end())
        continue;
      std::replace(reader.inputs.begin(), reader.inputs.end(), old, name);
      stack->push(
          new EditLayerCommand(doc, static_cast<int>(i), LayerField::inputs, std::move(reader)));
    }
  }
  LayerSpec renamed = layer_at(doc, index);
  renamed.name = name;
  stack->push(new EditLayerCommand(doc, index, LayerField::name, renamed));
  stack->endMacro();
  return true;
}

}  // namespace mixlab::ui
