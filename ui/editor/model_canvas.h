// The model as a diagram beside the layer table, in the style of Sony's Neural Network Console:
// the input and one block per layer, top to bottom, joined by edges labelled with tensor shapes
// (canvas_items.h). It redraws from the document on every change.
//
// A palette entry dropped on the canvas is inserted in the gap under the pointer; a block
// dragged to another gap moves there; a table row dropped on it moves too. Selecting a block
// selects the layer (layer_selected), and select_layer() follows the table. Every edit is an
// undo command on the document's stack. Ctrl++ / Ctrl+- / Ctrl+0 zoom in, out and to fit while
// the canvas has focus, Ctrl+wheel zooms; the image exports as PNG or SVG.
#pragma once

#include <QGraphicsView>
#include <QList>
#include <vector>

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
  static constexpr double kMinZoom = 0.1;
  static constexpr double kMaxZoom = 4.0;

  explicit ModelCanvas(ModelDocument* doc, QWidget* parent = nullptr);
  ~ModelCanvas() override;

  // Zoom in (Ctrl++), Zoom out (Ctrl+-), Fit (Ctrl+0), Export... (objectNames zoom_in, zoom_out,
  // zoom_fit, export_canvas). The shortcuts work while the canvas has focus.
  QList<QAction*> view_actions() const;

  // The selected layer, or -1.
  int current_layer() const;
  void select_layer(int index);

  // The blocks of the layers, in order (the input's block is not among them), and the edges
  // from the input down.
  int block_count() const { return static_cast<int>(blocks_.size()); }
  LayerBlockItem* block(int index) const;
  LayerBlockItem* input_block() const { return input_; }
  const std::vector<EdgeItem*>& edges() const { return edges_; }

  // The gap between layers (0 before the first, block_count() after the last) that a drop at
  // `view_pos` (viewport coordinates) lands in.
  int gap_at(QPoint view_pos) const;
  // Where in the viewport block `index`'s centre is now shown.
  QPoint block_centre(int index) const;

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

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dragLeaveEvent(QDragLeaveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  void create_actions();
  void rebuild();
  void clear_items();
  void apply_selection();
  void export_with_dialog();
  bool accepts(const QMimeData* data) const;
  // Shows the drop marker in `gap`; -1 hides it.
  void show_drop_marker(int gap);
  // Moves layer `from` into `gap`, as the table's drop does; false when that is where it is.
  bool move_to_gap(int from, int gap);

  ModelDocument* doc_;
  LayerBlockItem* input_ = nullptr;
  std::vector<LayerBlockItem*> blocks_;
  std::vector<EdgeItem*> edges_;
  QGraphicsLineItem* drop_marker_ = nullptr;
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
  QAction* export_ = nullptr;
};

}  // namespace mixlab::ui
