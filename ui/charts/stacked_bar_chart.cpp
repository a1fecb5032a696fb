// StackedBarChart on Qt Charts: a QStackedBarSeries with one QBarSet per segment over a
// category axis of bars, a legend naming the segments.
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QLegend>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart.h"
#include "ui/charts/chart_common.h"

namespace mixlab::ui {
namespace {

constexpr qreal kBarWidth = 0.5;  // of a category's width

double value_at(const StackedBarChart::Segment& segment, std::size_t bar) {
  if (bar >= segment.values.size()) return 0.0;
  const double v = segment.values[bar];
  return std::isfinite(v) ? v : 0.0;
}

}  // namespace

struct StackedBarChart::Impl {
  QChart* chart = nullptr;  // owned by view
  QChartView* view = nullptr;
  QStackedBarSeries* series = nullptr;
  QBarCategoryAxis* bars_axis = nullptr;
  QValueAxis* value_axis = nullptr;
  QString value_label;
  QStringList bars;
  std::vector<Segment> segments;

  double total(std::size_t bar) const {
    double sum = 0.0;
    for (const Segment& s : segments) sum += value_at(s, bar);
    return sum;
  }

  void show_tooltip(bool hovering, int index, const QBarSet* set) const {
    if (!hovering || set == nullptr || index < 0 || index >= bars.size()) {
      QToolTip::hideText();
      return;
    }
    const auto bar = static_cast<std::size_t>(index);
    const double v = set->at(index);
    const double sum = total(bar);
    QToolTip::showText(QCursor::pos(),
                       QStringLiteral("%1: %2\n%3 %4 (%5% of %6)")
                           .arg(bars[index], set->label())
                           .arg(v, 0, 'g', 4)
                           .arg(value_label)
                           .arg(sum > 0 ? 100.0 * v / sum : 0.0, 0, 'f', 0)
                           .arg(sum, 0, 'g', 4),
                       view);
  }
};

StackedBarChart::StackedBarChart(const QString& title, const QString& value_label,
                                 QWidget* parent)
    : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.value_label = value_label;
  d.view = add_chart_view(*this, title);
  d.chart = d.view->chart();
  d.chart->legend()->setVisible(true);
  d.chart->legend()->setAlignment(Qt::AlignRight);
  d.series = new QStackedBarSeries;
  d.series->setBarWidth(kBarWidth);
  d.chart->addSeries(d.series);
  d.bars_axis = new QBarCategoryAxis;
  d.chart->addAxis(d.bars_axis, Qt::AlignBottom);
  d.value_axis = new QValueAxis;
  d.value_axis->setTitleText(value_label);
  d.value_axis->setLabelFormat(QStringLiteral("%.4g"));
  d.chart->addAxis(d.value_axis, Qt::AlignLeft);
  d.series->attachAxis(d.bars_axis);
  d.series->attachAxis(d.value_axis);
  style_chart(*d.chart, *d.view, palette());
  connect(d.series, &QAbstractBarSeries::hovered, this,
          [this](bool hovering, int index, QBarSet* set) {
            impl_->show_tooltip(hovering, index, set);
          });
  set_bars({}, {});
}

StackedBarChart::~StackedBarChart() {
  // The view (and the chart in it) first: their last signals must still find impl_.
  delete impl_->view;
}

void StackedBarChart::set_bars(QStringList bars, std::vector<Segment> segments) {
  Impl& d = *impl_;
  d.bars = std::move(bars);
  d.segments = std::move(segments);
  d.series->clear();  // deletes the old sets
  for (const Segment& segment : d.segments) {
    auto* set = new QBarSet(segment.name);
    for (qsizetype b = 0; b < d.bars.size(); ++b)
      set->append(value_at(segment, static_cast<std::size_t>(b)));
    d.series->append(set);
  }
  d.bars_axis->setCategories(d.bars);
  double most = 0.0;
  for (qsizetype b = 0; b < d.bars.size(); ++b)
    most = std::max(most, d.total(static_cast<std::size_t>(b)));
  const AxisRange y = padded_nice_range(0.0, most > 0.0 ? most : 1.0);
  d.value_axis->setRange(0.0, y.hi);
  d.value_axis->setTickCount(y.tick_count);
}

std::size_t StackedBarChart::bar_count() const {
  return static_cast<std::size_t>(impl_->bars.size());
}

std::size_t StackedBarChart::segment_count() const {
  return impl_->segments.size();
}

double StackedBarChart::bar_total(int bar) const {
  return bar < 0 ? 0.0 : impl_->total(static_cast<std::size_t>(bar));
}

int StackedBarChart::bar_pixel_count() {
  const QList<QBarSet*> sets = impl_->series->barSets();
  return sets.isEmpty() ? 0 : colour_pixels_in_plot(*this, *impl_->view, sets.front()->color());
}

bool StackedBarChart::save_image(const QString& path, QString* error) {
  return save_chart_image(*this, impl_->chart->title(), path, error);
}

void StackedBarChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  style_chart(*impl_->chart, *impl_->view, palette());
}

}  // namespace mixlab::ui
