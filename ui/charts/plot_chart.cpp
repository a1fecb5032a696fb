// PlotChart on Qt Charts: a QLineSeries or QScatterSeries per series, each axis a QValueAxis or a
// QLogValueAxis. No decimation: its charts hold a few hundred points at most (a model's cost
// items, ten batch sizes).
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "ui/charts/chart.h"
#include "ui/charts/chart_common.h"

namespace mixlab::ui {
namespace {

constexpr qreal kMarkerSize_px = 8.0;
constexpr qreal kLineWidth_px = 2.0;

bool placeable(PlotChart::Scale scale, double v) {
  return std::isfinite(v) && (scale == PlotChart::Scale::linear || v > 0.0);
}

// Where a value sits along its axis: hover distances are measured in these units.
double along(PlotChart::Scale scale, double v) {
  return scale == PlotChart::Scale::linear ? v : std::log2(v);
}

QAbstractAxis* make_axis(PlotChart::Scale scale, const QString& title) {
  QAbstractAxis* axis = nullptr;
  if (scale == PlotChart::Scale::linear) {
    auto* linear = new QValueAxis;
    linear->setLabelFormat(QStringLiteral("%.6g"));
    axis = linear;
  } else {
    auto* log = new QLogValueAxis;
    log->setBase(scale == PlotChart::Scale::log2 ? 2.0 : 10.0);
    log->setLabelFormat(QStringLiteral("%g"));
    log->setMinorTickCount(scale == PlotChart::Scale::log10 ? -1 : 0);  // -1: 2..9 per decade
    axis = log;
  }
  axis->setTitleText(title);
  return axis;
}

QString number(double v) {
  return QString::number(v, 'g', 4);
}

struct Series {
  QString name;
  PlotChart::Kind kind = PlotChart::Kind::line;
  int colour_of = -1;
  QXYSeries* plot = nullptr;    // owned by the chart
  std::vector<QPointF> points;  // as given
  QStringList labels;           // one per point, or none
  std::vector<std::size_t> plotted;  // the index in `points` of each point `plot` holds
};

}  // namespace

struct PlotChart::Impl {
  QChart* chart = nullptr;  // owned by view
  QChartView* view = nullptr;
  Scale x_scale = Scale::linear;
  Scale y_scale = Scale::linear;
  QAbstractAxis* x_axis = nullptr;
  QAbstractAxis* y_axis = nullptr;
  QString x_label, y_label;
  std::vector<std::unique_ptr<Series>> series;  // unique_ptr: hover handlers hold Series*

  Series& at(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= series.size()) {
      throw std::out_of_range("PlotChart: no series " + std::to_string(index));
    }
    return *series[static_cast<std::size_t>(index)];
  }

  // The pen, marker and colour a series' kind asks for; after the theme, which resets them.
  void style(Series& s) const {
    if (s.colour_of >= 0 && static_cast<std::size_t>(s.colour_of) < series.size()) {
      s.plot->setColor(series[static_cast<std::size_t>(s.colour_of)]->plot->color());
    }
    if (s.kind == Kind::markers) {
      static_cast<QScatterSeries*>(s.plot)->setMarkerSize(kMarkerSize_px);
      return;
    }
    QPen pen = s.plot->pen();
    pen.setWidthF(kLineWidth_px);
    pen.setStyle(s.kind == Kind::dashed_line ? Qt::DashLine : Qt::SolidLine);
    s.plot->setPen(pen);
  }

  void publish(Series& s) {
    QList<QPointF> shown;
    s.plotted.clear();
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const QPointF& p = s.points[i];
      if (!placeable(x_scale, p.x()) || !placeable(y_scale, p.y())) continue;
      shown.append(p);
      s.plotted.push_back(i);
    }
    s.plot->replace(shown);
    show_in_legend(*chart, s.plot, !shown.isEmpty());  // not before a measurement, say
  }

  void fit(QAbstractAxis* axis, Scale scale, bool x) const {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const auto& s : series) {
      for (const std::size_t i : s->plotted) {
        const double v = x ? s->points[i].x() : s->points[i].y();
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    if (scale == Scale::linear) {
      const AxisRange r = padded_nice_range(lo, hi);
      auto* linear = static_cast<QValueAxis*>(axis);
      linear->setRange(r.lo, r.hi);
      linear->setTickCount(r.tick_count);
    } else if (scale == Scale::log2) {
      // Every power of two, but labelled at every k-th only (the axis's base 2^k): at most
      // about six labels, which a plot a third of a window wide still prints whole.
      const AxisRange r = log_range(lo, hi, 2.0);
      const int powers = r.tick_count - 1;
      const int fewest = std::max(1, (powers + 5) / 6);
      int k = fewest;
      while (k <= (powers + 2) / 3 && powers % k != 0) ++k;
      if (powers % k != 0) k = fewest;
      const int steps = (powers + k - 1) / k;
      auto* log = static_cast<QLogValueAxis*>(axis);
      log->setBase(std::pow(2.0, k));
      log->setRange(r.lo, r.lo * std::pow(2.0, k * steps));
    } else {
      const AxisRange r = log_range(lo, hi, 10.0);
      axis->setRange(r.lo, r.hi);
    }
  }

  void fit_axes() const {
    fit(x_axis, x_scale, true);
    fit(y_axis, y_scale, false);
  }

  void show_tooltip(const Series& s, QPointF at, bool hovering) const {
    if (!hovering || s.plotted.empty() || !placeable(x_scale, at.x()) ||
        !placeable(y_scale, at.y())) {
      QToolTip::hideText();
      return;
    }
    // The point nearest the cursor, along each axis's own scale.
    const auto distance = [&](const QPointF& p) {
      return std::hypot(along(x_scale, p.x()) - along(x_scale, at.x()),
                        along(y_scale, p.y()) - along(y_scale, at.y()));
    };
    const std::size_t nearest = *std::min_element(
        s.plotted.begin(), s.plotted.end(), [&](std::size_t a, std::size_t b) {
          return distance(s.points[a]) < distance(s.points[b]);
        });
    const QPointF& p = s.points[nearest];
    QString text = nearest < static_cast<std::size_t>(s.labels.size())
                       ? s.labels[static_cast<qsizetype>(nearest)] + QLatin1Char('\n')
                       : QString();
    text += QStringLiteral("%1\n%2: %3\n%4: %5")
                .arg(s.name, x_label, number(p.x()), y_label, number(p.y()));
    QToolTip::showText(QCursor::pos(), text, view);
  }
};

PlotChart::PlotChart(const QString& title, const QString& x_label, const QString& y_label,
                 Scale x_scale, Scale y_scale, QWidget* parent)
    : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.x_scale = x_scale;
  d.y_scale = y_scale;
  d.x_label = x_label;
  d.y_label = y_label;
  d.view = add_chart_view(*this, title);
  d.chart = d.view->chart();
  d.chart->legend()->setAlignment(Qt::AlignBottom);
  d.chart->legend()->setVisible(true);
  d.x_axis = make_axis(x_scale, x_label);
  d.y_axis = make_axis(y_scale, y_label);
  d.chart->addAxis(d.x_axis, Qt::AlignBottom);
  d.chart->addAxis(d.y_axis, Qt::AlignLeft);
  style_chart(*d.chart, *d.view, palette());
  d.fit_axes();
}

PlotChart::~PlotChart() {
  // The view (and the chart in it) first: their last signals must still find impl_.
  delete impl_->view;
}

int PlotChart::add_series(const QString& name, Kind kind, int colour_of) {
  Impl& d = *impl_;
  auto s = std::make_unique<Series>();
  s->name = name;
  s->kind = kind;
  s->colour_of = colour_of;
  s->plot = kind == Kind::markers ? static_cast<QXYSeries*>(new QScatterSeries)
                                  : static_cast<QXYSeries*>(new QLineSeries);
  s->plot->setName(name);
  d.chart->addSeries(s->plot);
  s->plot->attachAxis(d.x_axis);
  s->plot->attachAxis(d.y_axis);
  connect(s->plot, &QXYSeries::hovered, this,
          [this, target = s.get()](const QPointF& at, bool hovering) {
            impl_->show_tooltip(*target, at, hovering);
          });
  d.style(*s);
  d.series.push_back(std::move(s));
  return static_cast<int>(d.series.size()) - 1;
}

void PlotChart::set_series_name(int series, const QString& name) {
  Series& s = impl_->at(series);
  s.name = name;
  s.plot->setName(name);
}

void PlotChart::set_points(int series, std::vector<QPointF> points, QStringList labels) {
  Impl& d = *impl_;
  Series& s = d.at(series);
  s.points = std::move(points);
  s.labels = std::move(labels);
  d.publish(s);
  d.fit_axes();
}

void PlotChart::clear() {
  Impl& d = *impl_;
  for (const auto& s : d.series) {
    s->points.clear();
    s->labels.clear();
    d.publish(*s);
  }
  d.fit_axes();
}

int PlotChart::series_count() const {
  return static_cast<int>(impl_->series.size());
}

QString PlotChart::series_name(int series) const {
  return impl_->at(series).name;
}

PlotChart::Kind PlotChart::series_kind(int series) const {
  return impl_->at(series).kind;
}

QString PlotChart::title() const {
  return impl_->chart->title();
}

const std::vector<QPointF>& PlotChart::points(int series) const {
  return impl_->at(series).points;
}

std::size_t PlotChart::plotted_count(int series) const {
  return static_cast<std::size_t>(impl_->at(series).plot->count());
}

int PlotChart::curve_pixel_count(int series) {
  return colour_pixels_in_plot(*this, *impl_->view, impl_->at(series).plot->color());
}

bool PlotChart::save_image(const QString& path, QString* error) {
  return save_chart_image(*this, impl_->chart->title(), path, error);
}

void PlotChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  style_chart(*impl_->chart, *impl_->view, palette());
  for (const auto& s : impl_->series) impl_->style(*s);  // the theme reset pens and colours
}

}  // namespace mixlab::ui
