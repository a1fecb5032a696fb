// What the model canvas draws: a block per layer (its type, key settings, output shape and
// parameter count, and bars for its share of the model's parameters and activation memory; red
// with the engine's message when it is the offending layer; an output port at the bottom to
// drag connections from) and the edges between blocks, routed by the layout and labelled with
// the tensor shape that flows along them. The items only paint what they are given;
// model_canvas.cpp works out the content from the document.
//
// Zoomed far out (a ResNet50 fitted in the window) blocks paint as their coloured box and title
// only, and edges without labels, so that scrolling and zooming stay fluid.
#pragma once

#include <QFont>
#include <QGraphicsItem>
#include <QPainterPath>
#include <QString>
#include <QStringList>

#include "engine/spec/model_spec.h"

namespace mixlab::ui {

// What a block shows. Texts are final; shares are in [0, 1], or negative when not computed.
struct BlockContent {
  int layer = -1;  // the layer's index; -1 for the model's input
  LayerType type = LayerType::Dense;
  QString title;     // "Dense", "Input"
  QString name;      // the layer's name, or empty
  QString settings;  // "128, relu"; empty when the layer has none
  QString figures;   // "out 10 · 1,290 params", or why there are none
  double param_share = -1.0;
  double activation_share = -1.0;
  QString error;  // the engine's message when this is the offending layer
  QString tooltip;
  // A folded block (layer kFoldedBlock): how many layers it holds, painted as a stack.
  int folded_layers = 0;
  // A layer made of parts (a MultiHeadAttention: its projections, scores, softmax, weighted
  // values, output), in the order they run; shown as a chain inside the block when open, as a
  // line saying how many when closed.
  QStringList parts;
  bool parts_open = false;
};

// The layer index of a folded block's box, which stands for several layers.
inline constexpr int kFoldedBlock = -2;

class LayerBlockItem : public QGraphicsItem {
 public:
  static constexpr qreal kWidth = 220.0;
  static constexpr qreal kPortRadius = 5.0;

  LayerBlockItem(BlockContent content, const QFont& font);

  // The box, without the port below it: what the layout places.
  QSizeF box_size() const { return {kWidth, height_}; }
  // The output port's centre, in item coordinates: the middle of the bottom edge.
  QPointF port_centre() const { return {kWidth / 2, height_}; }

  const BlockContent& content() const { return content_; }
  int layer() const { return content_.layer; }
  bool is_folded() const { return content_.folded_layers > 0; }
  bool has_parts() const { return !content_.parts.isEmpty(); }
  bool parts_open() const { return has_parts() && content_.parts_open; }
  bool is_error() const { return !content_.error.isEmpty(); }
  // The fill and frame colours it paints with (red for the offending layer).
  QColor fill_colour() const;
  QColor frame_colour() const;

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  qreal error_height() const;
  qreal parts_height() const;
  void paint_parts(QPainter* painter, qreal left, qreal y, qreal width, const QColor& text,
                   const QColor& dim) const;
  void paint_bar(QPainter* painter, qreal y, const QString& label, double share,
                 const QColor& colour) const;

  BlockContent content_;
  QFont font_;
  QFont bold_;
  QFont small_;
  qreal height_ = 0.0;
};

// An arrow along `path` from one block (`from`, -1 the input) into another (`to`) with the
// tensor shape beside it. Selectable, to delete it; "hot" while a palette drop would land in it.
class EdgeItem : public QGraphicsItem {
 public:
  EdgeItem(QPainterPath path, int from, int to, QString label, const QFont& font);

  const QString& label() const { return label_; }
  int from() const { return from_; }
  int to() const { return to_; }
  const QPainterPath& path() const { return path_; }
  void set_hot(bool hot);

  QRectF boundingRect() const override;
  // The path widened, so that a click near it selects it.
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QRectF label_rect() const;

  QPainterPath path_;
  int from_;
  int to_;
  QString label_;
  QFont font_;
  bool hot_ = false;
};

}  // namespace mixlab::ui
