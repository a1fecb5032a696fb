// The chart texts Qt Charts cut short: an axis label, a legend entry or a title that did not fit
// its space ends in "..." (ChartPresenter::truncatedText), and the figure it was is lost.
#pragma once

#include <QChart>
#include <QChartView>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QStringList>
#include <QWidget>

namespace mixlab::ui::testing {

// "chart title: text" for every visible text item ending in "..." in the chart views under `root`.
inline QStringList cut_short_chart_texts(const QWidget& root) {
  QStringList cut;
  for (const QChartView* view : root.findChildren<QChartView*>()) {
    if (!view->isVisible() || view->scene() == nullptr) continue;
    for (const QGraphicsItem* item : view->scene()->items()) {
      const auto* text = dynamic_cast<const QGraphicsTextItem*>(item);
      if (text == nullptr || !text->isVisible()) continue;
      const QString plain = text->toPlainText();
      if (plain.endsWith(QStringLiteral("...")))
        cut << view->chart()->title() + QStringLiteral(": ") + plain;
    }
  }
  return cut;
}

}  // namespace mixlab::ui::testing
