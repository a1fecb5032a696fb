#include "ui/editor/canvas_items.h"

#include <QApplication>
#include <QCoreApplication>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QStyleOptionGraphicsItem>
#include <QtMath>
#include <algorithm>
#include <cmath>

namespace mixlab::ui {
namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("ModelCanvas", text);
}

constexpr qreal kRadius = 6.0;
constexpr qreal kStripe = 6.0;  // the type's colour down the left edge
constexpr qreal kStackOffset = 6.0;  // a folded block's second card, down and to the right
constexpr qreal kPadX = 14.0;   // text from the left edge (past the stripe)
constexpr qreal kPadY = 6.0;
constexpr qreal kBarGap = 3.0;  // between the figures and the bars, and between bars
constexpr qreal kBarHeight = 7.0;
constexpr qreal kArrowSize = 6.0;
constexpr qreal kPartGap = 7.0;  // between an open block's parts, room for the arrow

// Dark red on light red, as the table's offending row.
const QColor kErrorText(160, 0, 0);
const QColor kErrorFill(255, 222, 222);
const QColor kParamsBar(74, 120, 194);
const QColor kActivationBar(224, 137, 42);

// One colour per kind of layer, so the stack reads at a glance (as Neural Network Console's
// blocks do): matmuls blue and green, pooling teal, reshapes grey, elementwise warm.
QColor type_colour(const BlockContent& content) {
  if (content.layer < 0 && content.folded_layers == 0) return {85, 85, 85};
  switch (content.type) {
    case LayerType::Dense:
      return {59, 125, 216};
    case LayerType::Conv2D:
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      return {46, 158, 91};
    case LayerType::BatchNormalization:
    case LayerType::Normalization:
    case LayerType::LayerNormalization:
      return {112, 128, 60};
    case LayerType::Embedding:
    case LayerType::PositionEmbedding:
      return {40, 110, 140};
    case LayerType::MultiHeadAttention:
      return {204, 85, 51};
    case LayerType::ZeroPadding2D:
    case LayerType::Reshape:
      return {138, 143, 152};
    case LayerType::ReLU:
      return {224, 138, 30};
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      return {23, 162, 184};
    case LayerType::Flatten:
      return {138, 143, 152};
    case LayerType::Dropout:
      return {142, 91, 216};
    case LayerType::Activation:
      return {224, 138, 30};
    case LayerType::Rescaling:
      return {181, 101, 74};
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
    case LayerType::Concatenate:
      return {196, 69, 128};
  }
  return {85, 85, 85};
}

QPalette palette_of(const QWidget* widget) {
  // No widget when the scene renders into an image or an SVG file.
  return widget != nullptr ? widget->palette() : QApplication::palette();
}

qreal line_height(const QFont& font) {
  return QFontMetricsF(font).height();
}

QString percent_text(double share) {
  if (share < 0) return QStringLiteral("—");
  const double percent = 100.0 * share;
  return QStringLiteral("%1 %").arg(percent, 0, 'f', percent < 9.95 && percent > 0 ? 1 : 0);
}

}  // namespace

LayerBlockItem::LayerBlockItem(BlockContent content, const QFont& font)
    : content_(std::move(content)), font_(font), bold_(font), small_(font) {
  bold_.setBold(true);
  small_.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.85));
  setFlag(ItemIsSelectable, content_.layer >= 0);
  setToolTip(content_.error.isEmpty() ? content_.tooltip : content_.error);
  height_ = kPadY + line_height(bold_) + 2 * line_height(font_) + kPadY;
  // The offending layer has no figures to share out: its message takes the bars' place.
  if (is_error())
    height_ += error_height() + kBarGap;
  else if (content_.layer >= 0 || is_folded())
    height_ += kBarGap + 2 * (line_height(small_) + kBarGap);
  if (is_folded()) height_ += kStackOffset;
  if (has_parts() && !is_error()) height_ += parts_height();
}

qreal LayerBlockItem::parts_height() const {
  // Closed: one line saying what opens. Open: that line and a box per part, arrows between.
  const qreal line = line_height(small_) + kBarGap;
  if (!parts_open()) return line;
  return line + content_.parts.size() * (line_height(small_) + 4.0) +
         (content_.parts.size() - 1) * kPartGap + kBarGap;
}

void LayerBlockItem::paint_parts(QPainter* painter, qreal left, qreal y, qreal width,
                                 const QColor& text, const QColor& dim) const {
  painter->setFont(small_);
  painter->setPen(dim);
  const qreal line = line_height(small_);
  const QString head = parts_open()
                           ? tr("▾ %1 parts (double-click to close)").arg(content_.parts.size())
                           : tr("▸ %1 parts (double-click to open)").arg(content_.parts.size());
  painter->drawText(QRectF(left, y, width, line), Qt::AlignLeft | Qt::AlignVCenter, head);
  if (!parts_open()) return;
  y += line + kBarGap;
  const QFontMetricsF metrics(small_);
  const QColor colour = type_colour(content_);
  for (int i = 0; i < content_.parts.size(); ++i) {
    const QRectF part(left, y, width, line + 4.0);
    QPainterPath path;
    path.addRoundedRect(part, 3.0, 3.0);
    QColor fill = colour;
    fill.setAlphaF(0.15f);
    painter->fillPath(path, fill);
    painter->setPen(QPen(colour, 1.0));
    painter->setBrush(Qt::NoBrush);
    painter->drawPath(path);
    painter->setPen(text);
    painter->drawText(part.adjusted(4, 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter,
                      metrics.elidedText(content_.parts[i], Qt::ElideRight, part.width() - 8));
    y += part.height();
    if (i + 1 < content_.parts.size()) {
      // An arrow down to the next part.
      const qreal x = part.center().x();
      painter->setPen(QPen(colour, 1.0));
      painter->drawLine(QPointF(x, y), QPointF(x, y + kPartGap - 1));
      painter->drawLine(QPointF(x - 3, y + kPartGap - 4), QPointF(x, y + kPartGap - 1));
      painter->drawLine(QPointF(x + 3, y + kPartGap - 4), QPointF(x, y + kPartGap - 1));
      y += kPartGap;
    }
  }
}

qreal LayerBlockItem::error_height() const {
  const QRectF bounds(0, 0, kWidth - kPadX - kPadY, 10000);
  return QFontMetricsF(font_)
      .boundingRect(bounds, Qt::TextWordWrap | Qt::AlignLeft, content_.error)
      .height();
}

QRectF LayerBlockItem::boundingRect() const {
  return {0, 0, kWidth, height_ + kPortRadius + 1};
}

QColor LayerBlockItem::fill_colour() const {
  return is_error() ? kErrorFill : QApplication::palette().color(QPalette::Base);
}

QColor LayerBlockItem::frame_colour() const {
  return is_error() ? kErrorText : QApplication::palette().color(QPalette::Mid);
}

void LayerBlockItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option,
                           QWidget* widget) {
  const QPalette palette = palette_of(widget);
  const bool selected = option->state.testFlag(QStyle::State_Selected);
  QRectF box = QRectF(QPointF(), box_size()).adjusted(1, 1, -1, -1);
  painter->setRenderHint(QPainter::Antialiasing);
  const qreal detail = option->levelOfDetailFromTransform(painter->worldTransform());
  if (is_folded()) {
    // A folded block: a stack of cards, the front one smaller by the offset.
    box.adjust(0, 0, -kStackOffset, -kStackOffset);
    QPainterPath back;
    back.addRoundedRect(box.translated(kStackOffset, kStackOffset), kRadius, kRadius);
    painter->fillPath(back, palette.color(QPalette::Base));
    painter->setPen(QPen(type_colour(content_), 1.5));
    painter->drawPath(back);
  }

  QPainterPath outline;
  outline.addRoundedRect(box, kRadius, kRadius);
  if (detail < 0.35) {
    // Too small to read: the type's colour and the title, large.
    painter->fillPath(outline, is_error() ? kErrorFill : type_colour(content_).lighter(150));
    painter->setPen(QPen(selected ? palette.color(QPalette::Highlight) : type_colour(content_),
                         selected ? 8.0 : 2.0));
    painter->drawPath(outline);
    QFont big = bold_;
    big.setPointSizeF(bold_.pointSizeF() * 2.2);
    painter->setFont(big);
    painter->setPen(is_error() ? kErrorText : palette.color(QPalette::Text));
    painter->drawText(box, Qt::AlignCenter, content_.title);
    return;
  }
  painter->fillPath(outline, is_error() ? kErrorFill : palette.color(QPalette::Base));
  // The type's stripe, clipped to the rounded outline.
  painter->save();
  painter->setClipPath(outline);
  painter->fillRect(QRectF(box.left(), box.top(), kStripe, box.height()), type_colour(content_));
  painter->restore();
  QPen frame(selected ? palette.color(QPalette::Highlight)
                      : (is_error() ? kErrorText : palette.color(QPalette::Mid)),
             selected || is_error() ? 2.5 : 1.0);
  painter->setPen(frame);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(outline);

  const QColor text = is_error() ? kErrorText : palette.color(QPalette::Text);
  QColor dim = text;
  dim.setAlphaF(0.65f);
  const qreal left = box.left() + kPadX;
  const qreal width = box.right() - kPadY - left;
  qreal y = box.top() + kPadY;

  // The type in bold, the name after it, the index at the right.
  painter->setFont(bold_);
  painter->setPen(text);
  const qreal title_h = line_height(bold_);
  const QString index = content_.layer >= 0 ? QStringLiteral("#%1").arg(content_.layer) : QString();
  const qreal index_w = QFontMetricsF(font_).horizontalAdvance(index);
  const QRectF title_box(left, y, width - index_w - 6, title_h);
  painter->drawText(title_box, Qt::AlignLeft | Qt::AlignVCenter, content_.title);
  const qreal title_w = QFontMetricsF(bold_).horizontalAdvance(content_.title);
  if (!content_.name.isEmpty()) {
    painter->setFont(font_);
    painter->setPen(dim);
    const qreal name_w = title_box.width() - title_w - 6;
    painter->drawText(QRectF(left + title_w + 6, y, name_w, title_h),
                      Qt::AlignLeft | Qt::AlignVCenter,
                      QFontMetricsF(font_).elidedText(content_.name, Qt::ElideRight, name_w));
  }
  painter->setFont(font_);
  painter->setPen(dim);
  painter->drawText(QRectF(left, y, width, title_h), Qt::AlignRight | Qt::AlignVCenter, index);
  y += title_h;

  const QFontMetricsF metrics(font_);
  const qreal line_h = line_height(font_);
  painter->setPen(text);
  painter->drawText(QRectF(left, y, width, line_h), Qt::AlignLeft | Qt::AlignVCenter,
                    metrics.elidedText(content_.settings, Qt::ElideRight, width));
  y += line_h;
  painter->setPen(dim);
  painter->drawText(QRectF(left, y, width, line_h), Qt::AlignLeft | Qt::AlignVCenter,
                    metrics.elidedText(content_.figures, Qt::ElideRight, width));
  y += line_h;

  if ((content_.layer >= 0 || is_folded()) && !is_error()) {
    y += kBarGap;
    paint_bar(painter, y, tr("params"), content_.param_share, kParamsBar);
    y += line_height(small_) + kBarGap;
    paint_bar(painter, y, tr("activations"), content_.activation_share, kActivationBar);
    y += line_height(small_) + kBarGap;
  }
  if (has_parts() && !is_error()) {
    paint_parts(painter, left, y, width, text, dim);
    y += parts_height();
  }
  if (is_error()) {
    painter->setFont(font_);
    painter->setPen(kErrorText);
    painter->drawText(QRectF(left, y, width, error_height()), Qt::TextWordWrap | Qt::AlignLeft,
                      content_.error);
  }
  // The output port: drag from it to another block to connect.
  painter->setPen(QPen(palette.color(QPalette::Mid), 1.0));
  painter->setBrush(palette.color(QPalette::Base));
  painter->drawEllipse(port_centre(), kPortRadius, kPortRadius);
  painter->setPen(Qt::NoPen);
  painter->setBrush(type_colour(content_));
  painter->drawEllipse(port_centre(), kPortRadius - 2, kPortRadius - 2);
}

void LayerBlockItem::paint_bar(QPainter* painter, qreal y, const QString& label, double share,
                               const QColor& colour) const {
  const QFontMetricsF metrics(small_);
  const qreal h = line_height(small_);
  const qreal left = kPadX + 1;
  const qreal right = kWidth - kPadY - 1 - (is_folded() ? kStackOffset : 0.0);
  const qreal label_w = std::max(metrics.horizontalAdvance(tr("params")),
                                 metrics.horizontalAdvance(tr("activations"))) +
                        6;
  const qreal percent_w = metrics.horizontalAdvance(QStringLiteral("100 %")) + 6;
  QColor text = is_error() ? kErrorText : QApplication::palette().color(QPalette::Text);
  text.setAlphaF(0.65f);
  painter->setFont(small_);
  painter->setPen(text);
  painter->drawText(QRectF(left, y, label_w, h), Qt::AlignLeft | Qt::AlignVCenter, label);
  painter->drawText(QRectF(right - percent_w, y, percent_w, h), Qt::AlignRight | Qt::AlignVCenter,
                    percent_text(share));

  const QRectF track(left + label_w, y + (h - kBarHeight) / 2, right - percent_w - left - label_w,
                     kBarHeight);
  QColor track_colour = text;
  track_colour.setAlphaF(0.12f);
  painter->setPen(Qt::NoPen);
  painter->setBrush(track_colour);
  painter->drawRoundedRect(track, 2, 2);
  if (share > 0) {
    // At least a sliver, so a tiny share still shows as "some".
    const qreal w = std::max(2.0, track.width() * std::min(share, 1.0));
    painter->setBrush(colour);
    painter->drawRoundedRect(QRectF(track.left(), track.top(), w, track.height()), 2, 2);
  }
}

EdgeItem::EdgeItem(QPainterPath path, int from, int to, QString label, const QFont& font)
    : path_(std::move(path)), from_(from), to_(to), label_(std::move(label)), font_(font) {
  font_.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.85));
  setFlag(ItemIsSelectable);
  setToolTip(
      tr("Tensor shape per sample, without the batch dimension. Click to select the "
         "edge, Delete removes it."));
}

void EdgeItem::set_hot(bool hot) {
  if (hot_ == hot) return;
  hot_ = hot;
  update();
}

QRectF EdgeItem::label_rect() const {
  const QFontMetricsF metrics(font_);
  const QPointF middle = path_.pointAtPercent(0.5);
  return {middle.x() + 8, middle.y() - metrics.height() / 2, metrics.horizontalAdvance(label_) + 2,
          metrics.height()};
}

QRectF EdgeItem::boundingRect() const {
  return path_.boundingRect().adjusted(-kArrowSize - 4, -4, kArrowSize + 4, 4) | label_rect();
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path_);
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) {
  const QPalette palette = palette_of(widget);
  const bool selected = option->state.testFlag(QStyle::State_Selected);
  QColor colour = palette.color(QPalette::WindowText);
  colour.setAlphaF(0.7f);
  if (selected || hot_) colour = palette.color(QPalette::Highlight);
  painter->setRenderHint(QPainter::Antialiasing);
  const qreal detail = option->levelOfDetailFromTransform(painter->worldTransform());
  const qreal width = (selected || hot_ ? 3.0 : 1.5) / std::max(0.25, std::min(1.0, detail));
  // The arrow head along the path's last direction, the line stopping at its base.
  const QPointF tip = path_.pointAtPercent(1.0);
  const qreal angle = qDegreesToRadians(path_.angleAtPercent(0.999));
  const QPointF back(-std::cos(angle), std::sin(angle));  // from the tip back along the path
  const QPointF side(back.y(), -back.x());
  const qreal size = kArrowSize * std::max(1.0, width / 1.5);
  painter->setPen(QPen(colour, width));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path_);
  painter->setPen(Qt::NoPen);
  painter->setBrush(colour);
  const QPointF base = tip + back * size;
  const QPointF arrow[3] = {tip, base + side * (size / 1.4), base - side * (size / 1.4)};
  painter->drawPolygon(arrow, 3);
  if (detail < 0.35) return;
  painter->setFont(font_);
  painter->setPen(colour);
  painter->drawText(label_rect(), Qt::AlignLeft | Qt::AlignVCenter, label_);
}

}  // namespace mixlab::ui
