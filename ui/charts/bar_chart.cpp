// BarChart on Qt Charts: one QBarSet for the values, and per bar a QLineSeries drawing its
// low-high whisker with caps (Qt Charts bars have no error bars of their own).
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart.h"
#include "ui/charts/chart_common.h"

namespace mixlab::ui {
namespace {

constexpr qreal kBarWidth = 0.6;       // of a category's width
constexpr qreal kCapHalfWidth = 0.12;  // of a category's width
constexpr qreal kWhiskerWidth_px = 1.5;

QString number(double value) {
  return QString::number(value, 'g', 6);
}

// A category axis merges equal labels; two runs may share one ("mixed_float16").
QStringList unique_labels(const std::vector<BarChart::Bar>& bars) {
  QStringList labels;
  for (const BarChart::Bar& bar : bars) {
    QString label = bar.label;
    for (int n = 2; labels.contains(label); ++n)
      label = QStringLiteral("%1 (%2)").arg(bar.label).arg(n);
    labels.append(label);
  }
  return labels;
}

}  // namespace

struct BarChart::Impl {
  BarChart* self = nullptr;
  QChart* chart = nullptr;  // owned by view
  QChartView* view = nullptr;
  QBarSeries* series = nullptr;
  QBarCategoryAxis* x_axis = nullptr;
  QValueAxis* y_axis = nullptr;
  QString y_label;
  std::vector<Bar> bars;
  std::vector<QLineSeries*> whiskers;  // owned by the chart

  void add_whisker(int index, const Bar& bar) {
    // One end NaN: the whisker runs from the bar's value to the other end.
    const double low = std::isnan(bar.low) ? bar.value : bar.low;
    const double high = std::isnan(bar.high) ? bar.value : bar.high;
    if (low == high) return;
    const qreal x = index;
    auto* whisker = new QLineSeries;
    whisker->replace(QList<QPointF>{{x - kCapHalfWidth, high},
                                    {x + kCapHalfWidth, high},
                                    {x, high},
                                    {x, low},
                                    {x - kCapHalfWidth, low},
                                    {x + kCapHalfWidth, low}});
    chart->addSeries(whisker);
    whisker->attachAxis(x_axis);
    whisker->attachAxis(y_axis);
    whiskers.push_back(whisker);
  }

  // After the theme, which gives each series a colour of its own: whiskers take the text colour,
  // which reads on the bars and on the background alike.
  void style_whiskers() {
    QPen pen(self->palette().color(QPalette::WindowText), kWhiskerWidth_px);
    pen.setCapStyle(Qt::FlatCap);
    for (QLineSeries* whisker : whiskers) whisker->setPen(pen);
  }

  void fit_y_axis() {
    double lo = 0.0, hi = 0.0;  // bars grow from zero
    for (const Bar& bar : bars) {
      for (const double v : {bar.value, bar.low, bar.high}) {
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    const AxisRange y = padded_nice_range(lo, hi);
    y_axis->setRange(y.lo, y.hi);
    y_axis->setTickCount(y.tick_count);
  }

  void show_tooltip(bool hovering, int index) const {
    if (!hovering || index < 0 || static_cast<std::size_t>(index) >= bars.size()) {
      QToolTip::hideText();
      return;
    }
    const Bar& bar = bars[static_cast<std::size_t>(index)];
    QString text = QStringLiteral("%1\n%2: %3").arg(bar.label, y_label, number(bar.value));
    if (!std::isnan(bar.low) || !std::isnan(bar.high)) {
      text += QStringLiteral("\n%1 – %2").arg(number(bar.low), number(bar.high));
    }
    QToolTip::showText(QCursor::pos(), text, view);
  }
};

BarChart::BarChart(const QString& title, const QString& y_label, QWidget* parent)
    : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.self = this;
  d.y_label = y_label;
  d.view = add_chart_view(*this, title);  // no legend: one bar set, the axis names the bars
  d.chart = d.view->chart();

  d.series = new QBarSeries;
  d.series->setBarWidth(kBarWidth);
  d.chart->addSeries(d.series);
  d.x_axis = new QBarCategoryAxis;
  d.chart->addAxis(d.x_axis, Qt::AlignBottom);
  d.y_axis = new QValueAxis;
  d.y_axis->setTitleText(y_label);
  d.y_axis->setLabelFormat(QStringLiteral("%.6g"));
  d.chart->addAxis(d.y_axis, Qt::AlignLeft);
  d.series->attachAxis(d.x_axis);
  d.series->attachAxis(d.y_axis);
  style_chart(*d.chart, *d.view, palette());
  d.fit_y_axis();
  connect(d.series, &QAbstractBarSeries::hovered, this,
          [this](bool hovering, int index, QBarSet*) { impl_->show_tooltip(hovering, index); });
}

BarChart::~BarChart() {
  // The view (and the chart in it) first: their last signals must still find impl_.
  delete impl_->view;
}

void BarChart::set_bars(std::vector<Bar> bars) {
  Impl& d = *impl_;
  for (QLineSeries* whisker : d.whiskers) {
    d.chart->removeSeries(whisker);
    delete whisker;
  }
  d.whiskers.clear();
  d.series->clear();  // deletes the old set
  d.bars = std::move(bars);

  auto* values = new QBarSet(d.y_label);
  for (const Bar& bar : d.bars) values->append(bar.value);
  d.series->append(values);
  d.x_axis->setCategories(unique_labels(d.bars));
  for (std::size_t i = 0; i < d.bars.size(); ++i) d.add_whisker(static_cast<int>(i), d.bars[i]);
  d.style_whiskers();
  d.fit_y_axis();
}

std::size_t BarChart::bar_count() const {
  return impl_->bars.size();
}

int BarChart::bar_pixel_count() {
  const QList<QBarSet*> sets = impl_->series->barSets();
  return sets.isEmpty() ? 0 : colour_pixels_in_plot(*this, *impl_->view, sets.front()->color());
}

bool BarChart::save_image(const QString& path, QString* error) {
  return save_chart_image(*this, impl_->chart->title(), path, error);
}

void BarChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  style_chart(*impl_->chart, *impl_->view, palette());
  impl_->style_whiskers();
}

}  // namespace mixlab::ui
