#include "ui/editor/model_canvas.h"

#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsLineItem>
#include <QGraphicsScene>
#include <QImage>
#include <QImageWriter>
#include <QKeyEvent>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QPainter>
#include <QSaveFile>
#include <QScopedValueRollback>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QUndoStack>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/spec/model_graph.h"
#include "ui/editor/canvas_items.h"
#include "ui/editor/graph_edits.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_palette.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_document.h"
#include "ui/output_file.h"
#include "ui/qt_text.h"
#include "ui/settings.h"

namespace mixlab::ui {
namespace {

constexpr qreal kEdgeLength = 34.0;  // between one block's bottom and the next one's top
constexpr qreal kNodeGap = 40.0;     // between blocks side by side
constexpr qreal kMargin = 12.0;      // around the diagram, on screen and in exports
constexpr int kPickPixels = 7;       // how near on screen a click must be to a port or an edge
constexpr double kZoomStep = 1.25;
constexpr int kExportScale = 2;  // PNG pixels per scene unit

// The model's totals the shares are of: the table's, or for an invalid stack those of the layers
// that have figures.
struct Totals {
  std::int64_t params = 0;
  std::int64_t activation_bytes = 0;
};

Totals totals_of(const ModelDocument& doc) {
  const ModelDocument::Validation& v = doc.validation();
  if (v.table) return {v.table->params_total, v.table->activation_bytes_total};
  Totals t;
  for (const LayerInfo& info : v.layers_before_error) {
    t.params += info.param_count;
    t.activation_bytes += info.activation_bytes;
  }
  return t;
}

double share(std::int64_t part, std::int64_t total) {
  return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

BlockContent input_content(const ModelDocument& doc) {
  BlockContent c;
  c.layer = -1;
  c.title = ModelCanvas::tr("Input");
  c.settings = ModelCanvas::tr("%1 per sample").arg(qt_text(format_shape(doc.spec().input_shape)));
  c.figures = ModelCanvas::tr("policy %1").arg(qt_text(to_string(doc.policy())));
  const ModelDocument::Validation& v = doc.validation();
  // Errors that are no layer's (the input shape, an empty model) show on the input.
  if (!v.ok && v.layer < 0) c.error = v.message;
  c.tooltip = ModelCanvas::tr("The model's input, per sample (without the batch dimension)");
  return c;
}

// A MultiHeadAttention's parts as the engine runs them (engine/plan: three Dense projections,
// the attention core, the output Dense), with the mixed-precision facts of each: the scores in
// the layer's dtype, the softmax in float32.
QStringList attention_parts(const LayerSpec& layer, const LayerInfo* info) {
  const int heads = layer.num_heads;
  const int kd = layer.key_dim;
  const int vd = layer.value_dim > 0 ? layer.value_dim : layer.key_dim;
  const QString steps = info != nullptr && !info->input_shape.empty()
                            ? QString::number(info->input_shape.front())
                            : QStringLiteral("S");
  const std::int64_t features =
      info != nullptr && !info->input_shape.empty() ? info->input_shape.back() : 0;
  const std::int64_t out = layer.output_dim > 0 ? layer.output_dim : features;
  const QString compute =
      info != nullptr ? qt_text(to_string(info->compute)) : QStringLiteral("the layer's dtype");
  // Short enough for the block's width.
  return {
      ModelCanvas::tr("query: Dense, %1 heads x %2").arg(heads).arg(kd),
      ModelCanvas::tr("key: Dense, %1 heads x %2").arg(heads).arg(kd),
      ModelCanvas::tr("value: Dense, %1 heads x %2").arg(heads).arg(vd),
      ModelCanvas::tr("scores Q K^T: %1x%1, %2").arg(steps, compute),
      layer.causal ? ModelCanvas::tr("x 1/sqrt(%1), causal mask").arg(kd)
                   : ModelCanvas::tr("x 1/sqrt(%1)").arg(kd),
      ModelCanvas::tr("softmax in float32"),
      ModelCanvas::tr("weights x V, per head"),
      out > 0 ? ModelCanvas::tr("output: Dense to %1").arg(out) : ModelCanvas::tr("output: Dense"),
  };
}

BlockContent layer_content(const ModelDocument& doc, int index, const Totals& totals,
                           bool parts_open) {
  const LayerSpec& layer = doc.spec().layers[static_cast<std::size_t>(index)];
  const LayerInfo* info = doc.layer_info(index);
  const ModelDocument::Validation& v = doc.validation();
  BlockContent c;
  c.layer = index;
  c.type = layer.type;
  c.title = qt_text(to_string(layer.type));
  c.name = QString::fromStdString(layer.name);
  // The table's summary without the type it starts with: "Dense 128, relu" -> "128, relu".
  QString settings = layer_summary(layer);
  if (settings.startsWith(c.title)) settings = settings.mid(c.title.size()).trimmed();
  c.settings = settings.isEmpty() ? ModelCanvas::tr("no settings") : settings;
  if (!v.ok && v.layer == index) {
    c.error = v.message;
    c.figures = ModelCanvas::tr("invalid: no output");
  } else if (info == nullptr) {
    c.figures = ModelCanvas::tr("not computed: see the red layer");
  } else {
    c.figures =
        ModelCanvas::tr("out %1 · %2 params")
            .arg(qt_text(format_shape(info->output_shape)), format_count(info->param_count));
    c.param_share = share(info->param_count, totals.params);
    c.activation_share = share(info->activation_bytes, totals.activation_bytes);
  }
  c.tooltip = layer_description(layer.type);
  if (info != nullptr) {
    c.tooltip +=
        ModelCanvas::tr("\n%1 parameters (%2), %3 FLOPs, %4 of activations per sample in %5.")
            .arg(format_count(info->param_count), param_groups_text(*info),
                 format_flops(info->flops), format_bytes(info->activation_bytes),
                 qt_text(to_string(info->compute)));
  }
  c.tooltip += ModelCanvas::tr(
      "\nDrag from the dot at its bottom to another block to connect them; Delete removes "
      "the layer.");
  if (layer.type == LayerType::MultiHeadAttention) {
    c.parts = attention_parts(layer, info);
    c.parts_open = parts_open;
    c.tooltip += ModelCanvas::tr("\nDouble-click to open or close its parts.");
  }
  return c;
}

// A folded block's box: its layers' types counted, the output of its last and the parameters
// of all, and how many blocks of the model look the same (their types in the same order).
BlockContent folded_content(const ModelDocument& doc, const LayerBlock& block, int alike,
                            const Totals& totals) {
  const ModelSpec& spec = doc.spec();
  const auto& layers = spec.layers;
  const ModelDocument::Validation& v = doc.validation();
  BlockContent c;
  c.layer = kFoldedBlock;
  c.folded_layers = block.last - block.first + 1;
  c.type = layers[static_cast<std::size_t>(block.last)].type;
  c.title = ModelCanvas::tr("Block");
  const auto name = [&](int i) {
    const std::string& n = layers[static_cast<std::size_t>(i)].name;
    return n.empty() ? QStringLiteral("#%1").arg(i) : qt_text(n);
  };
  c.name = QStringLiteral("%1 … %2").arg(name(block.first), name(block.last));
  std::vector<std::pair<LayerType, int>> counts;
  std::int64_t params = 0;
  std::int64_t activations = 0;
  bool computed = true;
  for (int i = block.first; i <= block.last; ++i) {
    const LayerType type = layers[static_cast<std::size_t>(i)].type;
    const auto found = std::find_if(counts.begin(), counts.end(),
                                    [type](const auto& entry) { return entry.first == type; });
    if (found == counts.end())
      counts.emplace_back(type, 1);
    else
      ++found->second;
    if (const LayerInfo* info = doc.layer_info(i)) {
      params += info->param_count;
      activations += info->activation_bytes;
    } else {
      computed = false;
    }
    if (!v.ok && v.layer == i) c.error = v.message;
  }
  QStringList types;
  for (const auto& [type, n] : counts)
    types << (n > 1 ? QStringLiteral("%1× %2").arg(n).arg(qt_text(to_string(type)))
                    : qt_text(to_string(type)));
  c.settings = types.join(QStringLiteral(", "));
  const LayerInfo* out = doc.layer_info(block.last);
  if (computed && out != nullptr) {
    c.figures = ModelCanvas::tr("out %1 · %2 params")
                    .arg(qt_text(format_shape(out->output_shape)), format_count(params));
    c.param_share = share(params, totals.params);
    c.activation_share = share(activations, totals.activation_bytes);
  } else {
    c.figures = ModelCanvas::tr("not computed: see the red layer");
  }
  c.tooltip =
      ModelCanvas::tr("%1 layers folded into one box%2. Double-click to open it.")
          .arg(c.folded_layers)
          .arg(alike > 1 ? ModelCanvas::tr(", one of %1 blocks alike").arg(alike) : QString());
  return c;
}

// The shape a layer hands down, with the dtype it is stored in: "28x28x32 · float16".
QString edge_label(const ModelDocument& doc, int from_layer) {
  if (from_layer < 0) return qt_text(format_shape(doc.spec().input_shape));
  const LayerInfo* info = doc.layer_info(from_layer);
  if (info == nullptr) return QStringLiteral("?");
  return QStringLiteral("%1 · %2").arg(qt_text(format_shape(info->output_shape)),
                                       qt_text(to_string(info->compute)));
}

// The box of a block in scene coordinates, without its port.
QRectF box_rect(const LayerBlockItem* block) {
  return block->mapRectToScene(QRectF(QPointF(), block->box_size()));
}

QString cannot_write(const QString& path, const QString& why) {
  return ModelCanvas::tr("Cannot write %1: %2").arg(QDir::toNativeSeparators(path), why);
}

}  // namespace

ModelCanvas::ModelCanvas(ModelDocument* doc, QWidget* parent) : QGraphicsView(parent), doc_(doc) {
  setObjectName(QStringLiteral("model_canvas"));
  setToolTip(
      tr("The model as a diagram. Drag a layer type from the palette onto an edge to insert it; "
         "drag from a block's bottom dot to another block to connect them; Ctrl+click several "
         "blocks and Ctrl+M to join them with an Add; Ctrl++ / Ctrl+- / Ctrl+0 zoom in, out "
         "and to fit."));
  auto* scene = new QGraphicsScene(this);
  scene->setBackgroundBrush(palette().color(QPalette::Window));
  setScene(scene);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setAlignment(Qt::AlignHCenter | Qt::AlignTop);
  setDragMode(QGraphicsView::NoDrag);
  setAcceptDrops(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumWidth(120);

  drop_marker_ = new QGraphicsLineItem;
  drop_marker_->setPen(
      QPen(palette().color(QPalette::Highlight), 3.0, Qt::SolidLine, Qt::RoundCap));
  drop_marker_->setZValue(10);
  drop_marker_->hide();
  scene->addItem(drop_marker_);
  connect_line_ = new QGraphicsLineItem;
  connect_line_->setPen(
      QPen(palette().color(QPalette::Highlight), 2.0, Qt::DashLine, Qt::RoundCap));
  connect_line_->setZValue(10);
  connect_line_->hide();
  scene->addItem(connect_line_);

  create_actions();
  connect(scene, &QGraphicsScene::selectionChanged, this, [this] {
    if (syncing_) return;
    // With several blocks selected, the one last clicked is the current layer.
    const std::vector<int> layers = selected_layers();
    const bool pressed = std::find(layers.begin(), layers.end(), press_layer_) != layers.end();
    selected_ = layers.empty() ? -1 : (pressed ? press_layer_ : layers.front());
    emit layer_selected(selected_);
  });
  connect(doc_, &ModelDocument::changed, this, &ModelCanvas::rebuild);
  rebuild();
}

ModelCanvas::~ModelCanvas() {
  // The scene, a child, goes after this body: its selected block's removal must not reach the
  // editor, which is being destroyed too.
  scene()->disconnect(this);
}

void ModelCanvas::create_actions() {
  const auto make = [this](const QString& name, const QString& text, const QString& tooltip,
                           QList<QKeySequence> keys) {
    auto* action = new QAction(text, this);
    action->setObjectName(name);
    action->setToolTip(tooltip);
    action->setShortcuts(keys);
    action->setShortcutContext(Qt::WidgetShortcut);
    addAction(action);
    return action;
  };
  zoom_in_ = make(QStringLiteral("zoom_in"), tr("Zoom in"), tr("Zoom in (Ctrl++)"),
                  {QKeySequence(Qt::CTRL | Qt::Key_Plus), QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  connect(zoom_in_, &QAction::triggered, this, &ModelCanvas::zoom_in);
  zoom_out_ = make(QStringLiteral("zoom_out"), tr("Zoom out"), tr("Zoom out (Ctrl+-)"),
                   {QKeySequence(Qt::CTRL | Qt::Key_Minus)});
  connect(zoom_out_, &QAction::triggered, this, &ModelCanvas::zoom_out);
  fit_ = make(QStringLiteral("zoom_fit"), tr("Fit"), tr("Show the whole model (Ctrl+0)"),
              {QKeySequence(Qt::CTRL | Qt::Key_0)});
  connect(fit_, &QAction::triggered, this, &ModelCanvas::fit);
  merge_ = make(QStringLiteral("merge_layers"), tr("Merge"),
                tr("Join the selected blocks (Ctrl+click to select several) with an Add layer "
                   "(Ctrl+M); the context menu offers the other merges"),
                {QKeySequence(Qt::CTRL | Qt::Key_M)});
  connect(merge_, &QAction::triggered, this, [this] { merge_selected(LayerType::Add); });
  fold_ = make(QStringLiteral("fold_blocks"), tr("Fold blocks"),
               tr("Fold each block of layers (a residual block, say) into one box "
                  "(Ctrl+Shift+F); double-click a folded box to open it"),
               {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F)});
  connect(fold_, &QAction::triggered, this, &ModelCanvas::fold_all);
  open_ = make(QStringLiteral("open_blocks"), tr("Open blocks"),
               tr("Open every folded block (Ctrl+Shift+E)"),
               {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E)});
  connect(open_, &QAction::triggered, this, &ModelCanvas::open_all);
  export_ = make(QStringLiteral("export_canvas"), tr("Export…"),
                 tr("Save the diagram as a PNG or SVG image"), {});
  connect(export_, &QAction::triggered, this, &ModelCanvas::export_with_dialog);
}

QList<QAction*> ModelCanvas::view_actions() const {
  return {zoom_in_, zoom_out_, fit_, merge_, fold_, open_, export_};
}

QSize ModelCanvas::sizeHint() const {
  const int width = static_cast<int>(LayerBlockItem::kWidth + 2 * kMargin) + 2 * frameWidth() +
                    verticalScrollBar()->sizeHint().width();
  return {width, 400};
}

LayerBlockItem* ModelCanvas::block(int index) const {
  if (index < 0 || index >= block_count()) return nullptr;
  return blocks_[static_cast<std::size_t>(index)];
}

int ModelCanvas::current_layer() const {
  return selected_;
}

LayerBlockItem* ModelCanvas::node(int index) const {
  return index == kModelInput ? input_ : block(index);
}

std::vector<int> ModelCanvas::selected_layers() const {
  std::vector<int> layers;
  for (const LayerBlockItem* b : blocks_)
    if (b->isSelected()) layers.push_back(b->layer());
  return layers;
}

int ModelCanvas::selected_edge() const {
  for (std::size_t i = 0; i < edges_.size(); ++i)
    if (edges_[i]->isSelected()) return static_cast<int>(i);
  return -1;
}

bool ModelCanvas::refuse(const QString& why) {
  emit notice(why);
  return false;
}

bool ModelCanvas::connect_layers(int from, int to) {
  QString why;
  if (!mixlab::ui::connect_layers(doc_, from, to, &why)) return refuse(why);
  return true;
}

bool ModelCanvas::delete_selected_edge() {
  const int index = selected_edge();
  if (index < 0) return refuse(tr("Select an edge first: click on it."));
  const EdgeItem* edge = edges_[static_cast<std::size_t>(index)];
  QString why;
  if (!remove_edge(doc_, edge->from(), edge->to(), &why)) return refuse(why);
  return true;
}

bool ModelCanvas::merge_selected(LayerType type) {
  QString why;
  const int merged = merge_layers(doc_, selected_layers(), type, &why);
  if (merged < 0) return refuse(why);
  select_layer(merged);
  emit layer_selected(merged);
  return true;
}

LayerBlockItem* ModelCanvas::folded_box(int k) const {
  return k >= 0 && k < folded_count() ? fold_items_[static_cast<std::size_t>(k)] : nullptr;
}

int ModelCanvas::region_of(int layer) const {
  for (std::size_t r = 0; r < regions_.size(); ++r)
    if (regions_[r].first <= layer && layer <= regions_[r].last) return static_cast<int>(r);
  return -1;
}

std::string ModelCanvas::region_key(int region) const {
  const int last = regions_[static_cast<std::size_t>(region)].last;
  const std::string& name = doc_->spec().layers[static_cast<std::size_t>(last)].name;
  if (!name.empty()) return name;
  std::string key = "#";
  key += std::to_string(last);
  return key;
}

std::string ModelCanvas::layer_key(int layer) const {
  const std::string& name = doc_->spec().layers[static_cast<std::size_t>(layer)].name;
  if (!name.empty()) return name;
  std::string key = "#";
  key += std::to_string(layer);
  return key;
}

bool ModelCanvas::set_parts_open(int layer, bool open) {
  LayerBlockItem* b = block(layer);
  if (b == nullptr || !b->has_parts() || b->parts_open() == open) return false;
  if (open) {
    open_parts_.insert(layer_key(layer));
  } else {
    open_parts_.erase(layer_key(layer));
  }
  rebuild();
  return true;
}

bool ModelCanvas::parts_open(int layer) const {
  const LayerBlockItem* b = block(layer);
  return b != nullptr && b->parts_open();
}

bool ModelCanvas::is_folded(int layer) const {
  return layer >= 0 && layer < static_cast<int>(fold_of_.size()) &&
         fold_of_[static_cast<std::size_t>(layer)] >= 0;
}

bool ModelCanvas::fold_block_of(int layer) {
  const int region = region_of(layer);
  if (region < 0 || !folded_.insert(region_key(region)).second) return false;
  const LayerBlock& block = regions_[static_cast<std::size_t>(region)];
  if (selected_ >= block.first && selected_ <= block.last) selected_ = -1;
  rebuild();
  return true;
}

bool ModelCanvas::open_block_of(int layer) {
  const int region = region_of(layer);
  if (region < 0 || folded_.erase(region_key(region)) == 0) return false;
  rebuild();
  return true;
}

void ModelCanvas::fold_all() {
  for (int r = 0; r < static_cast<int>(regions_.size()); ++r) folded_.insert(region_key(r));
  if (is_folded(selected_) || region_of(selected_) >= 0) selected_ = -1;
  rebuild();
}

void ModelCanvas::open_all() {
  if (folded_.empty()) return;
  folded_.clear();
  rebuild();
}

void ModelCanvas::select_layer(int index) {
  // A layer inside a folded block: open the block to show it.
  if (is_folded(index)) open_block_of(index);
  selected_ = index;
  apply_selection();
  if (LayerBlockItem* b = block(index)) ensureVisible(b, 8, 8);
}

void ModelCanvas::apply_selection() {
  const QScopedValueRollback guard(syncing_, true);
  for (LayerBlockItem* b : blocks_) b->setSelected(b->layer() == selected_);
  for (EdgeItem* e : edges_) e->setSelected(false);
}

void ModelCanvas::clear_items() {
  const QScopedValueRollback guard(syncing_, true);
  for (LayerBlockItem* b : blocks_) delete b;
  for (LayerBlockItem* b : fold_items_) delete b;
  for (EdgeItem* edge : edges_) delete edge;
  delete input_;
  input_ = nullptr;
  blocks_.clear();
  fold_items_.clear();
  fold_regions_.clear();
  edges_.clear();
  drop_edge_ = -1;
}

void ModelCanvas::rebuild() {
  QElapsedTimer timer;
  timer.start();
  clear_items();
  const QScopedValueRollback guard(syncing_, true);
  const ModelSpec& spec = doc_->spec();
  const int count = static_cast<int>(spec.layers.size());
  if (selected_ >= count) selected_ = -1;
  const Totals totals = totals_of(*doc_);
  const QFont font = this->font();

  input_ = new LayerBlockItem(input_content(*doc_), font);
  scene()->addItem(input_);
  std::vector<QSizeF> sizes{input_->box_size()};
  for (int i = 0; i < count; ++i) {
    auto* b = new LayerBlockItem(
        layer_content(*doc_, i, totals, open_parts_.contains(layer_key(i))), font);
    scene()->addItem(b);
    b->setSelected(i == selected_);
    blocks_.push_back(b);
    sizes.push_back(b->box_size());
  }
  const std::vector<std::vector<int>> inputs = drawn_inputs(spec);
  // The folded blocks, each one node; the folds of blocks that are no more are forgotten.
  regions_ = layer_blocks(inputs);
  fold_of_.assign(static_cast<std::size_t>(count), -1);
  std::set<std::string> still;
  std::map<std::vector<LayerType>, int> alike;
  const auto types_of = [&](const LayerBlock& block) {
    std::vector<LayerType> types;
    for (int i = block.first; i <= block.last; ++i)
      types.push_back(spec.layers[static_cast<std::size_t>(i)].type);
    return types;
  };
  for (const LayerBlock& block : regions_) ++alike[types_of(block)];
  for (int r = 0; r < static_cast<int>(regions_.size()); ++r) {
    const std::string key = region_key(r);
    if (!folded_.contains(key)) continue;
    still.insert(key);
    const LayerBlock& block = regions_[static_cast<std::size_t>(r)];
    auto* box =
        new LayerBlockItem(folded_content(*doc_, block, alike[types_of(block)], totals), font);
    scene()->addItem(box);
    for (int i = block.first; i <= block.last; ++i)
      fold_of_[static_cast<std::size_t>(i)] = folded_count();
    fold_items_.push_back(box);
    fold_regions_.push_back(r);
  }
  folded_ = std::move(still);
  // Node 0 is the input, then each layer that shows, then each folded box; the edges by reader,
  // in the order each reads, one per pair of nodes.
  std::vector<int> node_of(static_cast<std::size_t>(count));
  std::vector<QSizeF> shown{sizes.front()};
  for (int i = 0; i < count; ++i) {
    if (is_folded(i)) continue;
    node_of[static_cast<std::size_t>(i)] = static_cast<int>(shown.size());
    shown.push_back(sizes[static_cast<std::size_t>(i) + 1]);
  }
  for (int k = 0; k < folded_count(); ++k) {
    const LayerBlock& block =
        regions_[static_cast<std::size_t>(fold_regions_[static_cast<std::size_t>(k)])];
    for (int i = block.first; i <= block.last; ++i)
      node_of[static_cast<std::size_t>(i)] = static_cast<int>(shown.size());
    shown.push_back(fold_items_[static_cast<std::size_t>(k)]->box_size());
  }
  sizes = std::move(shown);
  std::vector<LayoutEdge> edges;
  std::vector<std::pair<int, int>> ends;  // per edge: the layers it joins
  chain_ = true;
  for (int i = 0; i < count; ++i) {
    const std::vector<int>& reads = inputs[static_cast<std::size_t>(i)];
    chain_ = chain_ && reads == std::vector<int>{i - 1};
    const int to = node_of[static_cast<std::size_t>(i)];
    for (int from : reads) {
      const LayoutEdge edge{from < 0 ? 0 : node_of[static_cast<std::size_t>(from)], to};
      if (edge.from == edge.to || std::find(edges.begin(), edges.end(), edge) != edges.end())
        continue;
      edges.push_back(edge);
      ends.emplace_back(from, i);
    }
  }
  // A field's edit changes no size: the last layout still holds.
  if (sizes != layout_sizes_ || edges != layout_edges_ || layout_.positions.empty()) {
    layout_ = layout_graph(sizes, edges, kEdgeLength, kNodeGap);
    layout_sizes_ = std::move(sizes);
    layout_edges_ = edges;
  }
  input_->setPos(layout_.positions[0]);
  for (int i = 0; i < count; ++i) {
    LayerBlockItem* b = blocks_[static_cast<std::size_t>(i)];
    b->setPos(layout_.positions[static_cast<std::size_t>(node_of[static_cast<std::size_t>(i)])]);
    b->setVisible(!is_folded(i));
  }
  for (int k = 0; k < folded_count(); ++k) {
    const LayerBlock& block =
        regions_[static_cast<std::size_t>(fold_regions_[static_cast<std::size_t>(k)])];
    fold_items_[static_cast<std::size_t>(k)]->setPos(
        layout_
            .positions[static_cast<std::size_t>(node_of[static_cast<std::size_t>(block.first)])]);
  }
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto [from, to] = ends[e];
    auto* edge = new EdgeItem(layout_.paths[e], from, to, edge_label(*doc_, from), font);
    // An edge into a folded box stands for several (into each layer that reads from outside):
    // open the block to delete one or insert into it.
    if (is_folded(to)) edge->setFlag(QGraphicsItem::ItemIsSelectable, false);
    scene()->addItem(edge);
    edges_.push_back(edge);
  }
  // Everything drawn, with room below the last block for the drop marker.
  QRectF drawn = input_->sceneBoundingRect();
  for (const LayerBlockItem* b : blocks_)
    if (b->isVisible()) drawn |= b->sceneBoundingRect();
  for (const LayerBlockItem* b : fold_items_) drawn |= b->sceneBoundingRect();
  for (const EdgeItem* e : edges_) drawn |= e->sceneBoundingRect();
  drawn.setBottom(drawn.bottom() + kEdgeLength / 2);
  scene()->setSceneRect(drawn.adjusted(-kMargin, -kMargin, kMargin, kMargin));
  rebuild_ms_ = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

int ModelCanvas::gap_at(QPoint view_pos) const {
  const qreal y = mapToScene(view_pos).y();
  int gap = 0;
  for (const LayerBlockItem* b : blocks_)
    if (box_rect(b).center().y() < y) ++gap;
  return gap;
}

int ModelCanvas::edge_at(QPoint view_pos) const {
  const QPointF p = mapToScene(view_pos);
  QPainterPathStroker stroker;
  stroker.setWidth(2.0 * kPickPixels / zoom_);
  for (std::size_t i = 0; i < edges_.size(); ++i)
    if (edges_[i]->flags().testFlag(QGraphicsItem::ItemIsSelectable) &&
        stroker.createStroke(edges_[i]->path()).contains(p))
      return static_cast<int>(i);
  return -1;
}

QPoint ModelCanvas::block_centre(int index) const {
  const LayerBlockItem* b = node(index);
  return b != nullptr ? mapFromScene(box_rect(b).center()) : QPoint();
}

QPoint ModelCanvas::port_centre(int index) const {
  const LayerBlockItem* b = node(index);
  return b != nullptr ? mapFromScene(b->mapToScene(b->port_centre())) : QPoint();
}

int ModelCanvas::port_at(QPoint view_pos) const {
  const qreal reach = std::max<qreal>(kPickPixels, LayerBlockItem::kPortRadius * zoom_ + 3);
  for (int i = kModelInput; i < block_count(); ++i) {
    if (is_folded(i)) continue;
    const QPoint d = port_centre(i) - view_pos;
    if (std::hypot(d.x(), d.y()) <= reach) return i;
  }
  // A folded box's port is its last layer's, the one output that leaves the block.
  for (int k = 0; k < folded_count(); ++k) {
    const LayerBlockItem* b = fold_items_[static_cast<std::size_t>(k)];
    const QPoint d = mapFromScene(b->mapToScene(b->port_centre())) - view_pos;
    if (std::hypot(d.x(), d.y()) <= reach)
      return regions_[static_cast<std::size_t>(fold_regions_[static_cast<std::size_t>(k)])].last;
  }
  return -2;
}

void ModelCanvas::show_drop_marker(int gap) {
  if (gap < 0) {
    drop_marker_->hide();
    return;
  }
  // Halfway along the edge into the gap.
  const QRectF above = box_rect(gap == 0 ? input_ : block(gap - 1));
  const qreal y = above.bottom() + kEdgeLength / 2;
  drop_marker_->setLine(above.left() - 8, y, above.right() + 8, y);
  drop_marker_->show();
}

void ModelCanvas::show_drop_edge(int edge) {
  if (drop_edge_ >= 0 && drop_edge_ < static_cast<int>(edges_.size()))
    edges_[static_cast<std::size_t>(drop_edge_)]->set_hot(false);
  drop_edge_ = edge;
  if (edge >= 0) edges_[static_cast<std::size_t>(edge)]->set_hot(true);
}

bool ModelCanvas::insert_at(QPoint view_pos, LayerSpec layer) {
  const int count = block_count();
  if (chain_) {
    doc_->undo_stack()->push(new InsertLayerCommand(doc_, gap_at(view_pos), std::move(layer)));
    return true;
  }
  if (const int edge = edge_at(view_pos); edge >= 0) {
    const EdgeItem* e = edges_[static_cast<std::size_t>(edge)];
    insert_on_edge(doc_, e->from(), e->to(), std::move(layer));
    return true;
  }
  if (count > 0 && gap_at(view_pos) == count) {
    doc_->undo_stack()->push(new InsertLayerCommand(doc_, count, std::move(layer)));
    return true;
  }
  return refuse(
      tr("Drop the layer on an edge to insert it there, or below the last block to "
         "append it."));
}

bool ModelCanvas::move_to_gap(int from, int gap) {
  const int count = block_count();
  if (from < 0 || from >= count) return false;
  // The gap is counted with the layer still in place; below it, taking it out shifts by one.
  const int to = std::clamp(gap > from ? gap - 1 : gap, 0, count - 1);
  if (to == from) return false;
  doc_->undo_stack()->push(new MoveLayerCommand(doc_, from, to));
  return true;
}

bool ModelCanvas::accepts(const QMimeData* data) const {
  return data != nullptr && (data->hasFormat(LayerPalette::mime_type()) ||
                             data->hasFormat(LayerStackModel::mime_type()));
}

void ModelCanvas::dragEnterEvent(QDragEnterEvent* event) {
  dragMoveEvent(event);
}

void ModelCanvas::dragMoveEvent(QDragMoveEvent* event) {
  if (!accepts(event->mimeData())) {
    event->ignore();
    return;
  }
  // A palette entry is copied in, a table row moved (in a chain).
  const bool palette = event->mimeData()->hasFormat(LayerPalette::mime_type());
  if (!palette && !chain_) {
    event->ignore();
    return;
  }
  event->setDropAction(palette ? Qt::CopyAction : Qt::MoveAction);
  event->accept();
  const QPoint pos = event->position().toPoint();
  const int edge = chain_ ? -1 : edge_at(pos);
  show_drop_edge(edge);
  const int gap = gap_at(pos);
  show_drop_marker(chain_ || (edge < 0 && gap == block_count()) ? gap : -1);
}

void ModelCanvas::dragLeaveEvent(QDragLeaveEvent* event) {
  show_drop_marker(-1);
  show_drop_edge(-1);
  event->accept();
}

void ModelCanvas::dropEvent(QDropEvent* event) {
  show_drop_marker(-1);
  show_drop_edge(-1);
  const QMimeData* data = event->mimeData();
  const int gap = gap_at(event->position().toPoint());
  if (data != nullptr && data->hasFormat(LayerPalette::mime_type())) {
    const std::optional<LayerType> type =
        parse_layer_type(data->data(LayerPalette::mime_type()).toStdString());
    if (!type || !insert_at(event->position().toPoint(), default_layer(*type))) {
      event->ignore();
      return;
    }
    event->setDropAction(Qt::CopyAction);
    event->accept();
    setFocus();
  } else if (chain_ && data != nullptr && data->hasFormat(LayerStackModel::mime_type())) {
    bool ok = false;
    const int from = data->data(LayerStackModel::mime_type()).toInt(&ok);
    if (ok) move_to_gap(from, gap);
    event->setDropAction(Qt::MoveAction);
    event->accept();
  } else {
    event->ignore();
  }
}

void ModelCanvas::mousePressEvent(QMouseEvent* event) {
  press_layer_ = -1;
  dragging_ = false;
  connect_from_ = -2;
  if (event->button() == Qt::LeftButton) {
    // From an output port: a connection.
    if (const int port = port_at(event->position().toPoint()); port != -2) {
      connect_from_ = port;
      // A folded block's port is its box's (its exit layer's own block is hidden).
      const LayerBlockItem* from =
          is_folded(port)
              ? fold_items_[static_cast<std::size_t>(fold_of_[static_cast<std::size_t>(port)])]
              : node(port);
      const QPointF start = from->mapToScene(from->port_centre());
      connect_line_->setLine(QLineF(start, start));
      connect_line_->show();
      viewport()->setCursor(Qt::CrossCursor);
      event->accept();
      return;
    }
    for (QGraphicsItem* item = itemAt(event->position().toPoint()); item != nullptr;
         item = item->parentItem()) {
      if (auto* b = dynamic_cast<LayerBlockItem*>(item); b != nullptr && b->layer() >= 0) {
        press_layer_ = b->layer();
        press_pos_ = event->position().toPoint();
        break;
      }
    }
  }
  QGraphicsView::mousePressEvent(event);
}

void ModelCanvas::mouseMoveEvent(QMouseEvent* event) {
  if (connect_from_ != -2) {
    connect_line_->setLine(
        QLineF(connect_line_->line().p1(), mapToScene(event->position().toPoint())));
    event->accept();
    return;
  }
  // Blocks move by dragging in a chain only: in a graph the order is the edges'.
  if (chain_ && press_layer_ >= 0 && event->buttons().testFlag(Qt::LeftButton)) {
    const QPoint pos = event->position().toPoint();
    if (!dragging_ && (pos - press_pos_).manhattanLength() >= QApplication::startDragDistance()) {
      dragging_ = true;
      viewport()->setCursor(Qt::ClosedHandCursor);
    }
    if (dragging_) {
      show_drop_marker(gap_at(pos));
      event->accept();
      return;
    }
  }
  QGraphicsView::mouseMoveEvent(event);
}

void ModelCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (connect_from_ != -2 && event->button() == Qt::LeftButton) {
    const int from = connect_from_;
    connect_from_ = -2;
    connect_line_->hide();
    viewport()->unsetCursor();
    int to = -1;
    for (QGraphicsItem* item = itemAt(event->position().toPoint()); item != nullptr;
         item = item->parentItem())
      if (auto* b = dynamic_cast<LayerBlockItem*>(item); b != nullptr) to = b->layer();
    if (to >= 0)
      connect_layers(from, to);
    else if (to == kFoldedBlock)
      refuse(tr("Open the folded block (double-click it) to connect to one of its layers."));
    event->accept();
    return;
  }
  if (dragging_ && event->button() == Qt::LeftButton) {
    const int from = press_layer_;
    dragging_ = false;
    press_layer_ = -1;
    show_drop_marker(-1);
    viewport()->unsetCursor();
    move_to_gap(from, gap_at(event->position().toPoint()));
    event->accept();
    return;
  }
  press_layer_ = -1;
  QGraphicsView::mouseReleaseEvent(event);
}

LayerBlockItem* ModelCanvas::folded_box_at(QPoint view_pos) const {
  for (QGraphicsItem* item = itemAt(view_pos); item != nullptr; item = item->parentItem())
    if (auto* b = dynamic_cast<LayerBlockItem*>(item); b != nullptr && b->is_folded()) return b;
  return nullptr;
}

void ModelCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
  if (const LayerBlockItem* box = folded_box_at(event->position().toPoint())) {
    const auto k = std::find(fold_items_.begin(), fold_items_.end(), box) - fold_items_.begin();
    open_block_of(
        regions_[static_cast<std::size_t>(fold_regions_[static_cast<std::size_t>(k)])].first);
    event->accept();
    return;
  }
  // An attention block opens into its parts, or closes.
  for (QGraphicsItem* item = itemAt(event->position().toPoint()); item != nullptr;
       item = item->parentItem()) {
    if (auto* b = dynamic_cast<LayerBlockItem*>(item); b != nullptr && b->has_parts()) {
      set_parts_open(b->layer(), !b->parts_open());
      event->accept();
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

void ModelCanvas::wheelEvent(QWheelEvent* event) {
  if (event->modifiers().testFlag(Qt::ControlModifier)) {
    // 120 per notch of a wheel; touchpads send less, more often.
    set_zoom(zoom_ * std::pow(kZoomStep, event->angleDelta().y() / 120.0));
    event->accept();
    return;
  }
  QGraphicsView::wheelEvent(event);
}

bool ModelCanvas::event(QEvent* event) {
  // Delete removes a selected edge, before the editor's Remove (a layer) sees the key.
  if (event->type() == QEvent::ShortcutOverride) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Delete || key->key() == Qt::Key_Backspace) && selected_edge() >= 0) {
      event->accept();
      return true;
    }
  }
  return QGraphicsView::event(event);
}

void ModelCanvas::keyPressEvent(QKeyEvent* event) {
  if ((event->key() == Qt::Key_Delete || event->key() == Qt::Key_Backspace) &&
      selected_edge() >= 0) {
    delete_selected_edge();
    event->accept();
    return;
  }
  QGraphicsView::keyPressEvent(event);
}

void ModelCanvas::contextMenuEvent(QContextMenuEvent* event) {
  QMenu menu(this);
  QMenu* merges = menu.addMenu(tr("Merge the selected layers with"));
  merges->setEnabled(selected_layers().size() >= 2);
  for (const LayerType type : {LayerType::Add, LayerType::Subtract, LayerType::Multiply,
                               LayerType::Average, LayerType::Maximum, LayerType::Concatenate})
    merges->addAction(qt_text(to_string(type)), this, [this, type] { merge_selected(type); });
  QAction* remove = menu.addAction(tr("Delete the edge"), this, [this] { delete_selected_edge(); });
  remove->setEnabled(selected_edge() >= 0);
  // Folding what is under the pointer: a folded box opens, a layer's block folds.
  if (const LayerBlockItem* box = folded_box_at(event->pos())) {
    const auto k = std::find(fold_items_.begin(), fold_items_.end(), box) - fold_items_.begin();
    const int first =
        regions_[static_cast<std::size_t>(fold_regions_[static_cast<std::size_t>(k)])].first;
    menu.addAction(tr("Open this block"), this, [this, first] { open_block_of(first); });
  } else {
    int layer = -1;
    for (QGraphicsItem* item = itemAt(event->pos()); item != nullptr; item = item->parentItem())
      if (auto* b = dynamic_cast<LayerBlockItem*>(item); b != nullptr) layer = b->layer();
    if (region_of(layer) >= 0)
      menu.addAction(tr("Fold this block"), this, [this, layer] { fold_block_of(layer); });
    if (const LayerBlockItem* b = block(layer); b != nullptr && b->has_parts()) {
      const bool open = b->parts_open();
      menu.addAction(open ? tr("Close the attention's parts") : tr("Open the attention's parts"),
                     this, [this, layer, open] { set_parts_open(layer, !open); });
    }
  }
  menu.addSeparator();
  menu.addActions(view_actions());
  menu.exec(event->globalPos());
}

void ModelCanvas::set_zoom(double zoom) {
  zoom_ = std::clamp(zoom, kMinZoom, kMaxZoom);
  setTransform(QTransform::fromScale(zoom_, zoom_));
}

void ModelCanvas::zoom_in() {
  set_zoom(zoom_ * kZoomStep);
}

void ModelCanvas::zoom_out() {
  set_zoom(zoom_ / kZoomStep);
}

void ModelCanvas::fit() {
  const QRectF rect = sceneRect();
  const QSize view = viewport()->size();
  if (rect.isEmpty() || view.isEmpty()) return;
  set_zoom(std::min({1.0, view.width() / rect.width(), view.height() / rect.height()}));
}

bool ModelCanvas::save_image(const QString& path, QString* error) {
  const auto fail = [error](const QString& message) {
    if (error != nullptr) *error = message;
    return false;
  };
  if (const QString refused = output_refusal(path); !refused.isEmpty()) return fail(refused);
  const QString suffix = QFileInfo(path).suffix().toLower();
  const bool svg = suffix == QLatin1String("svg");
  const QByteArray format = suffix.isEmpty() ? QByteArray("png") : suffix.toLatin1();
  if (!svg && !QImageWriter::supportedImageFormats().contains(format))
    return fail(cannot_write(path, tr("unknown image format \".%1\"").arg(suffix)));
  // QSaveFile: a failed export leaves no half-written file, and a full disk shows in commit().
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(cannot_write(path, file.errorString()));

  // The selection and the drop marker are the screen's, not the model's.
  const int selected = selected_;
  selected_ = -1;
  apply_selection();
  drop_marker_->hide();
  const QRectF source = sceneRect();
  bool drawn = true;
  if (svg) {
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(source.size().toSize());
    generator.setViewBox(QRectF(QPointF(), source.size()));
    generator.setTitle(doc_->display_name());
    generator.setDescription(
        tr("The layer stack of %1, drawn by MixLab").arg(doc_->display_name()));
    QPainter painter;
    drawn = painter.begin(&generator);
    if (drawn) scene()->render(&painter, QRectF(QPointF(), source.size()), source);
  } else {
    QImage image(source.size().toSize() * kExportScale, QImage::Format_ARGB32_Premultiplied);
    image.fill(scene()->backgroundBrush().color());
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene()->render(&painter, QRectF(image.rect()), source);
    painter.end();
    drawn = image.save(&file, format.constData());
  }
  selected_ = selected;
  apply_selection();
  if (!drawn) return fail(cannot_write(path, tr("could not draw the %1").arg(QString(format))));
  if (!file.commit()) return fail(cannot_write(path, file.errorString()));
  return true;
}

void ModelCanvas::export_with_dialog() {
  const QString base = QFileInfo(doc_->display_name()).completeBaseName();
  const QString suggested =
      QDir(settings::kLastDirectory.get())
          .filePath((base.isEmpty() ? QStringLiteral("model") : base) + QStringLiteral(".png"));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the model diagram"), suggested,
                                                    tr("PNG image (*.png);;SVG image (*.svg)"));
  if (path.isEmpty()) return;
  settings::kLastDirectory.set(QFileInfo(path).absolutePath());
  QString why;
  if (!save_image(path, &why)) QMessageBox::warning(this, tr("Export the model diagram"), why);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_model_canvas.cpp"
