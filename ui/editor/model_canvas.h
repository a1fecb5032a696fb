// The model as a diagram beside the layer table, in the style of Sony's Neural Network Console:
// the input and one block per layer, joined by edges labelled with tensor shapes
// (canvas_items.h), laid out top to bottom by Graphviz's dot (graph_layout.h) so that branches
// and shortcuts show side by side. It redraws from the document on every change.
//
// Editing, each edit one undo step on the document's stack (graph_edits.h for the edges):
// - a palette entry dropped on an edge is inserted into it (for a chain: into the gap under the
//   pointer); dropped below the last block, it is appended;
// - in a chain, a block dragged to another gap moves there, and a table row dropped on the
//   canvas moves too;
// - dragging from a block's output port (the dot at its bottom) to another block connects them;
// - a click selects an edge, and Delete removes it;
// - with two or more blocks selected (Ctrl+click), Ctrl+M joins them with an Add, and the
//   context menu with any merge.
// Selecting a block selects the layer (layer_selected), and select_layer() follows the table.
//
// A block of layers (graph_edits.h's layer_blocks: a residual block, an Inception cell) folds
// into one box, drawn as a stack of cards, so that ResNet50 reads as its 16 blocks: Ctrl+Shift+F
// folds every block, the context menu one; double-clicking a folded box, Ctrl+Shift+E, or
// selecting one of its layers (in the table, by Ctrl+F) opens it. Folding is the view's, not
// an edit of the model, so it is not on the undo stack. A MultiHeadAttention's block opens into
// its parts (projections, scores with their dtype, mask, float32 softmax, weighted values,
// output) by a double-click or the context menu, and closes the same way; also the view's.
// Ctrl++ / Ctrl+- / Ctrl+0 zoom in, out and to fit while the canvas has focus, Ctrl+wheel
// zooms; the image exports as PNG or SVG.
#pragma once

#include <QGraphicsView>
#include <QList>
#include <set>
#include <string>
#include <vector>

#include "engine/spec/model_spec.h"
#include "ui/editor/graph_edits.h"
#include "ui/editor/graph_layout.h"

class QAction;
class QGraphicsLineItem;
class QMimeData;

namespace mixlab::ui {

class EdgeItem;
class LayerBlockItem;
class ModelDocument;

class ModelCanvas : public QGraphicsView {
  Q_OBJECT

 public:
  static constexpr double kMinZoom = 0.02;
  static constexpr double kMaxZoom = 4.0;

  explicit ModelCanvas(ModelDocument* doc, QWidget* parent = nullptr);
  ~ModelCanvas() override;

  // Zoom in (Ctrl++), Zoom out (Ctrl+-), Fit (Ctrl+0), Merge (Ctrl+M: the selected blocks into
  // an Add), Fold blocks (Ctrl+Shift+F), Open blocks (Ctrl+Shift+E), Export... (objectNames
  // zoom_in, zoom_out, zoom_fit, merge_layers, fold_blocks, open_blocks, export_canvas).
  // The shortcuts work while the canvas has focus.
  QList<QAction*> view_actions() const;

  // The selected layer, or -1.
  int current_layer() const;
  void select_layer(int index);
  // Every selected block's layer, in the model's order.
  std::vector<int> selected_layers() const;
  // The selected edge's index in edges(), or -1.
  int selected_edge() const;

  // The edits of the mouse and the keyboard, callable directly. Each is one undo step; a refused
  // one changes nothing and emits notice() with the reason.
  bool connect_layers(int from, int to);
  bool delete_selected_edge();
  bool merge_selected(LayerType type);

  // The model's blocks that can fold, and folding them (false: no block holds the layer, or
  // it is already so). The folded boxes, in the model's order, are folded_box(0...).
  const std::vector<LayerBlock>& foldable_blocks() const { return regions_; }
  bool fold_block_of(int layer);
  bool open_block_of(int layer);
  void fold_all();
  void open_all();
  bool is_folded(int layer) const;
  // A MultiHeadAttention's block opens into its parts (double-click, or the context menu), and
  // closes; the view's, kept by the layer's name across edits. False when the layer has no parts
  // or already is so.
  bool set_parts_open(int layer, bool open);
  bool parts_open(int layer) const;
  int folded_count() const { return static_cast<int>(fold_items_.size()); }
  LayerBlockItem* folded_box(int k) const;

  // True when every layer reads the one before it: then blocks move by dragging, and drops land
  // in gaps.
  bool is_chain() const { return chain_; }
  // How the last layout was made (Graphviz, or the one-column fallback and why).
  const GraphLayout& layout() const { return layout_; }
  // Milliseconds the last rebuild took, layout included.
  double last_rebuild_ms() const { return rebuild_ms_; }

  // The blocks of the layers, in order (the input's block is not among them), and the edges
  // from the input down.
  int block_count() const { return static_cast<int>(blocks_.size()); }
  LayerBlockItem* block(int index) const;
  LayerBlockItem* input_block() const { return input_; }
  const std::vector<EdgeItem*>& edges() const { return edges_; }

  // The gap between layers (0 before the first, block_count() after the last) that a drop at
  // `view_pos` (viewport coordinates) lands in, by height: a chain's drops.
  int gap_at(QPoint view_pos) const;
  // The edge near `view_pos` (within a few pixels on screen), or -1.
  int edge_at(QPoint view_pos) const;
  // Where in the viewport block `index`'s centre (-1: the input's) is now shown, and its
  // output port.
  QPoint block_centre(int index) const;
  QPoint port_centre(int index) const;

  double zoom() const { return zoom_; }
  void set_zoom(double zoom);
  void zoom_in();
  void zoom_out();
  // Shows the whole model, at most at 1:1.
  void fit();

  // Writes the whole diagram (not only the part in view) as SVG (".svg") or PNG (any other
  // suffix, at twice the scale for a sharp print). False with *error naming the file when it
  // cannot; a failed write leaves no half-written file.
  bool save_image(const QString& path, QString* error = nullptr);

  // Wide enough for a block at 1:1 beside the vertical scroll bar.
  QSize sizeHint() const override;

 signals:
  // The user selected a block (-1: none).
  void layer_selected(int index);
  // An edit was refused: why, for the status line.
  void notice(const QString& text);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dragLeaveEvent(QDragLeaveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  void create_actions();
  void rebuild();
  void clear_items();
  void apply_selection();
  void export_with_dialog();
  bool accepts(const QMimeData* data) const;
  // Shows the drop marker in `gap`; -1 hides it.
  void show_drop_marker(int gap);
  // Marks edge `edge` as where a drop lands; -1: none.
  void show_drop_edge(int edge);
  // Inserts a palette layer where a drop at `view_pos` lands; false when it lands nowhere.
  bool insert_at(QPoint view_pos, LayerSpec layer);
  // The block (-1: the input's; -2: none) whose output port is at `view_pos`.
  int port_at(QPoint view_pos) const;
  LayerBlockItem* node(int index) const;  // -1: the input's block
  bool refuse(const QString& why);
  // The block that holds `layer` (an index into regions_), or -1; its key in folded_.
  int region_of(int layer) const;
  std::string region_key(int region) const;
  std::string layer_key(int layer) const;
  // The folded box under `view_pos`, or nullptr.
  LayerBlockItem* folded_box_at(QPoint view_pos) const;
  // Moves layer `from` into `gap`, as the table's drop does; false when that is where it is.
  bool move_to_gap(int from, int gap);

  ModelDocument* doc_;
  LayerBlockItem* input_ = nullptr;
  std::vector<LayerBlockItem*> blocks_;
  std::vector<EdgeItem*> edges_;
  // Folding: the blocks, which are folded (by their last layer's name, else "#index"), the
  // boxes drawn for them, the block each box stands for, and each layer's box (-1: its own).
  std::vector<LayerBlock> regions_;
  std::set<std::string> folded_;
  std::set<std::string> open_parts_;  // layers whose parts show, by layer_key
  std::vector<LayerBlockItem*> fold_items_;
  std::vector<int> fold_regions_;
  std::vector<int> fold_of_;
  GraphLayout layout_;
  // The last layout's input, to skip Graphviz when only a block's text changed.
  std::vector<QSizeF> layout_sizes_;
  std::vector<LayoutEdge> layout_edges_;
  bool chain_ = true;
  double rebuild_ms_ = 0.0;
  QGraphicsLineItem* drop_marker_ = nullptr;
  int drop_edge_ = -1;
  // A connection being dragged from a port: the source node (-1 the input) and the line.
  int connect_from_ = -2;
  QGraphicsLineItem* connect_line_ = nullptr;
  int selected_ = -1;
  bool syncing_ = false;  // true while the canvas sets the scene's selection itself
  double zoom_ = 1.0;

  // A block being dragged: the layer and where the press was, in viewport coordinates.
  int press_layer_ = -1;
  QPoint press_pos_;
  bool dragging_ = false;

  QAction* zoom_in_ = nullptr;
  QAction* zoom_out_ = nullptr;
  QAction* fit_ = nullptr;
  QAction* merge_ = nullptr;
  QAction* fold_ = nullptr;
  QAction* open_ = nullptr;
  QAction* export_ = nullptr;
};

}  // namespace mixlab::ui
