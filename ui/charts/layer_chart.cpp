// LayerTimeChart on Qt Charts: a QHorizontalStackedBarSeries of two sets (forward, backward)
// over a category axis of layer names, the first layer at the top.
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart.h"
#include "ui/charts/chart_common.h"

namespace mixlab::ui {

struct LayerTimeChart::Impl {
  QChart* chart = nullptr;  // owned by view
  QChartView* view = nullptr;
  QHorizontalStackedBarSeries* series = nullptr;
  QBarSet* forward = nullptr;   // owned by series
  QBarSet* backward = nullptr;  // owned by series
  QBarCategoryAxis* layers_axis = nullptr;
  QValueAxis* ms_axis = nullptr;
  std::vector<Row> rows;

  // Rows in the order the axis draws them: bottom up, so the first layer is at the top.
  std::size_t row_at(int index) const { return rows.size() - 1 - static_cast<std::size_t>(index); }

  void show_tooltip(bool hovering, int index) const {
    if (!hovering || index < 0 || static_cast<std::size_t>(index) >= rows.size()) {
      QToolTip::hideText();
      return;
    }
    const Row& r = rows[row_at(index)];
    QToolTip::showText(QCursor::pos(),
                       QStringLiteral("%1\nforward %2 ms\nbackward %3 ms")
                           .arg(r.layer)
                           .arg(r.forward_ms, 0, 'g', 4)
                           .arg(r.backward_ms, 0, 'g', 4),
                       view);
  }
};

LayerTimeChart::LayerTimeChart(const QString& title, QWidget* parent)
    : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.view = add_chart_view(*this, title);
  d.chart = d.view->chart();
  d.chart->legend()->setVisible(true);
  d.chart->legend()->setAlignment(Qt::AlignBottom);
  d.series = new QHorizontalStackedBarSeries;
  d.forward = new QBarSet(tr("forward"));
  d.backward = new QBarSet(tr("backward"));
  d.series->append(d.forward);
  d.series->append(d.backward);
  d.chart->addSeries(d.series);
  d.layers_axis = new QBarCategoryAxis;
  d.chart->addAxis(d.layers_axis, Qt::AlignLeft);
  d.ms_axis = new QValueAxis;
  d.ms_axis->setTitleText(tr("ms per step (median)"));
  d.ms_axis->setLabelFormat(QStringLiteral("%.4g"));
  d.chart->addAxis(d.ms_axis, Qt::AlignBottom);
  d.series->attachAxis(d.layers_axis);
  d.series->attachAxis(d.ms_axis);
  style_chart(*d.chart, *d.view, palette());
  connect(d.series, &QAbstractBarSeries::hovered, this,
          [this](bool hovering, int index, QBarSet*) { impl_->show_tooltip(hovering, index); });
  set_rows({});
}

LayerTimeChart::~LayerTimeChart() {
  // The view (and the chart in it) first: their last signals must still find impl_.
  delete impl_->view;
}

void LayerTimeChart::set_rows(std::vector<Row> rows) {
  Impl& d = *impl_;
  d.rows = std::move(rows);
  QList<qreal> forward, backward;
  QStringList names;
  double most = 0.0;
  for (std::size_t k = 0; k < d.rows.size(); ++k) {
    const Row& r = d.rows[d.row_at(static_cast<int>(k))];
    const double f = std::isfinite(r.forward_ms) ? r.forward_ms : 0.0;
    const double b = std::isfinite(r.backward_ms) ? r.backward_ms : 0.0;
    forward << f;
    backward << b;
    QString name = r.layer;
    // A category axis merges equal labels: two identical layer names stay apart.
    while (names.contains(name)) name += QLatin1Char(' ');
    names << name;
    most = std::max(most, f + b);
  }
  if (d.forward->count() > 0) d.forward->remove(0, d.forward->count());
  if (d.backward->count() > 0) d.backward->remove(0, d.backward->count());
  d.forward->append(forward);
  d.backward->append(backward);
  d.layers_axis->setCategories(names);
  const AxisRange x = padded_nice_range(0.0, most > 0.0 ? most : 1.0);
  d.ms_axis->setRange(0.0, x.hi);
  d.ms_axis->setTickCount(x.tick_count);
}

std::size_t LayerTimeChart::row_count() const {
  return impl_->rows.size();
}

const std::vector<LayerTimeChart::Row>& LayerTimeChart::rows() const {
  return impl_->rows;
}

void LayerTimeChart::set_title(const QString& title) {
  impl_->chart->setTitle(title);
}

int LayerTimeChart::bar_pixel_count() {
  return colour_pixels_in_plot(*this, *impl_->view, impl_->forward->color());
}

bool LayerTimeChart::save_image(const QString& path, QString* error) {
  return save_chart_image(*this, impl_->chart->title(), path, error);
}

void LayerTimeChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  style_chart(*impl_->chart, *impl_->view, palette());
}

}  // namespace mixlab::ui
