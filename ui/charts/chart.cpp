// LineChart on Qt Charts. Every point a caller gives stays in a std::vector; the QXYSeries gets
// only the min/max per pixel column of the plot (MinMaxDecimator), so a series of 1,000,000
// points costs Qt Charts no more than one of a few thousand.
#include "ui/charts/chart.h"

#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QEvent>
#include <QLegend>
#include <QLineSeries>
#include <QLocale>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTimer>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "ui/charts/chart_common.h"
#include "ui/charts/decimate.h"

namespace mixlab::ui {
namespace {

// Columns to decimate to before the chart's first layout gives it a plot area.
constexpr int kFallbackColumns = 1000;
constexpr qreal kMarkerSize_px = 7.0;
// Qt's raster engine draws antialiased lines up to 1 px wide on a fast path and wider ones as
// filled outlines: a 1200 px plot of 4 points per pixel column repaints in ~4 ms at 1 px and
// ~12 ms at 2 px. A dense series (more points than columns: an envelope more than a curve) is
// drawn at 1 px; a sparse one at 2 px, which reads better and costs little at that count.
constexpr qreal kLineWidth_px = 2.0;
constexpr qreal kDenseLineWidth_px = 1.0;
// Up to 7 significant digits: step numbers up to 9,999,999 print whole, not as 1e+06.
const char* const kLabelFormat = "%.7g";

QString exact(double value) {
  return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

// The x extent of a series' finite points. Points come in ascending x, so the first and last
// finite points bound it: fitting the x axis never rereads a million points. (The y extent
// comes from the decimation, which sees every point anyway.)
struct XSpan {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();

  void add(std::span<const QPointF> points) {
    const auto finite = [](const QPointF& p) {
      return std::isfinite(p.x()) && std::isfinite(p.y());
    };
    const auto first = std::find_if(points.begin(), points.end(), finite);
    if (first == points.end()) return;
    const auto last = std::find_if(points.rbegin(), points.rend(), finite);
    lo = std::min(lo, first->x());
    hi = std::max(hi, last->x());
  }
};

struct Series {
  QString name;
  bool line = true;             // else markers
  QXYSeries* plot = nullptr;    // owned by the chart
  std::vector<QPointF> points;  // every point given, x ascending
  XSpan x_span;
  MinMaxDecimator decimated;  // what `plot` shows, or will show at the next refresh
  bool stale = false;         // `decimated` has points `plot` has not been given yet
};

// The live path redraws at most this often: handing a series its points costs Qt Charts about a
// millisecond per thousand, and a run appends to ten series 25 times a second.
constexpr int kLiveRefreshMs = 100;

}  // namespace

struct LineChart::Impl {
  QChart* chart = nullptr;  // owned by view
  QChartView* view = nullptr;
  QValueAxis* x_axis = nullptr;
  // Both y axes stay in the chart and the scale picks the one shown and attached: removing an
  // axis leaves its labels drawn until the event loop deletes them, which a save_image right
  // after set_y_scale would catch.
  QValueAxis* y_linear = nullptr;
  QLogValueAxis* y_log = nullptr;
  Scale scale = Scale::linear;
  QString x_label, y_label;
  std::vector<std::unique_ptr<Series>> series;  // unique_ptr: hover handlers hold Series*
  // The x range and pixel columns the decimators split; when either changes, every series is
  // decimated again.
  QTimer* refresh = nullptr;  // single shot: the live path's next redraw
  AxisRange x_range;
  int columns = kFallbackColumns;

  Series& at(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= series.size()) {
      throw std::out_of_range("LineChart: no series " + std::to_string(index));
    }
    return *series[static_cast<std::size_t>(index)];
  }

  KeepPoints keep() const {
    return scale == Scale::log10 ? KeepPoints::finite_y_positive : KeepPoints::finite;
  }

  int plot_columns() const {
    const double width_px = chart->plotArea().width() * view->devicePixelRatioF();
    return width_px >= 1.0 ? static_cast<int>(std::ceil(width_px)) : kFallbackColumns;
  }

  QAbstractAxis* y_axis() const {
    return scale == Scale::log10 ? static_cast<QAbstractAxis*>(y_log) : y_linear;
  }

  void make_y_axes() {
    y_linear = new QValueAxis;
    y_linear->setLabelFormat(QString::fromLatin1(kLabelFormat));
    y_log = new QLogValueAxis;
    y_log->setBase(10.0);
    y_log->setLabelFormat(QStringLiteral("%g"));
    y_log->setMinorTickCount(-1);  // 2..9 within each decade
    y_log->setRange(1.0, 10.0);
    for (QAbstractAxis* axis : std::initializer_list<QAbstractAxis*>{y_linear, y_log}) {
      axis->setTitleText(y_label);
      axis->setVisible(axis == y_axis());
      chart->addAxis(axis, Qt::AlignLeft);
    }
  }

  void move_series(QAbstractAxis* from, QAbstractAxis* to) {
    for (const auto& s : series) {
      s->plot->detachAxis(from);
      s->plot->attachAxis(to);
    }
    from->setVisible(false);
    to->setVisible(true);
  }

  // The x range that fits all series' points.
  AxisRange wanted_x_range() const {
    XSpan all;
    for (const auto& s : series) {
      all.lo = std::min(all.lo, s->x_span.lo);
      all.hi = std::max(all.hi, s->x_span.hi);
    }
    return nice_range(all.lo, all.hi);
  }

  // Fits the x axis to all series' points; returns whether its range moved, which moves every
  // pixel column.
  bool fit_x_axis() {
    const AxisRange x = wanted_x_range();
    x_axis->setRange(x.lo, x.hi);
    x_axis->setTickCount(x.tick_count);
    const bool moved = x.lo != x_range.lo || x.hi != x_range.hi;
    x_range = x;
    return moved;
  }

  // Fits the y axis to the points the series plot (on a log axis: the positive ones).
  void fit_y_axis() {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const auto& s : series) {
      lo = std::min(lo, s->decimated.y_min());
      hi = std::max(hi, s->decimated.y_max());
    }
    if (scale == Scale::log10) {
      const AxisRange y = padded_log10_range(lo, hi);  // a loss scale of 1 off the frame
      y_log->setRange(y.lo, y.hi);
    } else {
      const AxisRange y = padded_nice_range(lo, hi);
      y_linear->setRange(y.lo, y.hi);
      y_linear->setTickCount(y.tick_count);
    }
  }

  void publish(Series& s) {
    s.stale = false;
    QList<QPointF> plotted;
    plotted.reserve(static_cast<qsizetype>(s.decimated.size()));
    s.decimated.for_each([&plotted](QPointF p) { plotted.append(p); });
    fit_line_width(s, plotted.size());  // first: the series outlines its line at the pen's width
    s.plot->replace(plotted);  // one bulk update; clear() + append() would redraw per point
    fit_legend();
  }

  // Only the series with points to show are in the legend, which shows from two of them on:
  // a CPU run's step time names no device time.
  void fit_legend() {
    int shown = 0;
    for (const auto& each : series) {
      const bool has_points = each->plot->count() > 0;
      show_in_legend(*chart, each->plot, has_points);
      shown += has_points ? 1 : 0;
    }
    chart->legend()->setVisible(shown > 1);
  }

  void fit_line_width(Series& s, qsizetype plotted_count) const {
    if (!s.line) return;
    const qreal width_px = plotted_count > columns ? kDenseLineWidth_px : kLineWidth_px;
    QPen pen = s.plot->pen();
    if (pen.widthF() == width_px) return;
    pen.setWidthF(width_px);
    s.plot->setPen(pen);
  }

  void decimate(Series& s) {
    s.decimated = MinMaxDecimator(x_range.lo, x_range.hi, columns, keep());
    s.decimated.add(s.points);
    publish(s);
  }

  void decimate_all() {
    for (const auto& s : series) decimate(*s);
  }

  // After the points of `changed` changed: the axes fit them, and whatever the x axis moved is
  // decimated again.
  void refit(Series& changed) {
    if (fit_x_axis()) {
      decimate_all();
    } else {
      decimate(changed);
    }
    fit_y_axis();
  }

  // The live path: decimates now (cheap), hands the series over at the next refresh (not
  // cheap), and not at all while the chart is hidden.
  void append_later(Series& s, std::span<const QPointF> added) {
    const AxisRange x = wanted_x_range();
    if (x.lo != x_range.lo || x.hi != x_range.hi) {
      x_range = x;  // the decimators' columns follow now; the axis at the refresh
      for (const auto& each : series) {
        each->decimated = MinMaxDecimator(x_range.lo, x_range.hi, columns, keep());
        each->decimated.add(each->points);
        each->stale = true;
      }
    } else {
      s.decimated.add(added);
      s.stale = true;
    }
    if (view->isVisible() && !refresh->isActive()) refresh->start();
  }

  // Gives the series whatever the live path decimated since the last refresh.
  void flush() {
    refresh->stop();
    bool any = x_axis->min() != x_range.lo || x_axis->max() != x_range.hi;
    if (any) {
      x_axis->setRange(x_range.lo, x_range.hi);
      x_axis->setTickCount(x_range.tick_count);
    }
    for (const auto& s : series) {
      if (!s->stale) continue;
      any = true;
      publish(*s);
    }
    if (any) fit_y_axis();
  }

  void refit_columns() {
    const int now = plot_columns();
    if (now == columns) return;
    columns = now;
    decimate_all();
  }

  void show_tooltip(const Series& s, QPointF at, bool hovering) const {
    if (!hovering || s.points.empty()) {
      QToolTip::hideText();
      return;
    }
    // The plotted point may stand for a thousand; show the caller's point nearest in x.
    auto it = std::lower_bound(s.points.begin(), s.points.end(), at.x(),
                               [](const QPointF& p, double x) { return p.x() < x; });
    if (it == s.points.end() ||
        (it != s.points.begin() && at.x() - std::prev(it)->x() < it->x() - at.x())) {
      --it;
    }
    const QString x_name = x_label.isEmpty() ? QStringLiteral("x") : x_label;
    const QString y_name = y_label.isEmpty() ? QStringLiteral("y") : y_label;
    QToolTip::showText(QCursor::pos(),
                       QStringLiteral("%1\n%2: %3\n%4: %5")
                           .arg(s.name, x_name, exact(it->x()), y_name, exact(it->y())),
                       view);
  }
};

LineChart::LineChart(const QString& title, const QString& x_label, const QString& y_label,
                     QWidget* parent)
    : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.x_label = x_label;
  d.y_label = y_label;
  d.view = add_chart_view(*this, title);
  d.chart = d.view->chart();
  d.chart->legend()->setAlignment(Qt::AlignBottom);  // shown from the second series plotted on

  d.x_axis = new QValueAxis;
  d.x_axis->setTitleText(x_label);
  d.x_axis->setLabelFormat(QString::fromLatin1(kLabelFormat));
  d.chart->addAxis(d.x_axis, Qt::AlignBottom);
  d.make_y_axes();
  style_chart(*d.chart, *d.view, palette());
  d.fit_x_axis();
  d.fit_y_axis();
  connect(d.chart, &QChart::plotAreaChanged, this, [this] { impl_->refit_columns(); });
  d.refresh = new QTimer(this);
  d.refresh->setSingleShot(true);
  d.refresh->setInterval(kLiveRefreshMs);
  connect(d.refresh, &QTimer::timeout, this, [this] { impl_->flush(); });
}

LineChart::~LineChart() {
  // The view (and the chart in it) first: their last signals must still find impl_.
  delete impl_->view;
}

int LineChart::add_series(const QString& name, Kind kind) {
  Impl& d = *impl_;
  auto s = std::make_unique<Series>();
  s->name = name;
  s->line = kind == Kind::line;
  if (kind == Kind::markers) {
    auto* scatter = new QScatterSeries;
    scatter->setMarkerSize(kMarkerSize_px);
    s->plot = scatter;
  } else {
    s->plot = new QLineSeries;
  }
  s->plot->setName(name);
  d.chart->addSeries(s->plot);
  s->plot->attachAxis(d.x_axis);
  s->plot->attachAxis(d.y_axis());
  connect(s->plot, &QXYSeries::hovered, this,
          [this, target = s.get()](const QPointF& at, bool hovering) {
            impl_->show_tooltip(*target, at, hovering);
          });
  s->decimated = MinMaxDecimator(d.x_range.lo, d.x_range.hi, d.columns, d.keep());
  d.series.push_back(std::move(s));
  d.fit_legend();
  return static_cast<int>(d.series.size()) - 1;
}

void LineChart::set_series_name(int series, const QString& name) {
  Series& s = impl_->at(series);
  s.name = name;
  s.plot->setName(name);
}

void LineChart::set_points(int series, std::vector<QPointF> points) {
  Impl& d = *impl_;
  Series& s = d.at(series);
  s.points = std::move(points);
  s.x_span = XSpan{};
  s.x_span.add(s.points);
  d.refit(s);
}

void LineChart::append_points(int series, std::span<const QPointF> points) {
  Impl& d = *impl_;
  Series& s = d.at(series);
  if (points.empty()) return;
  const std::size_t old_count = s.points.size();
  s.points.insert(s.points.end(), points.begin(), points.end());
  s.x_span.add(points);
  d.append_later(s, std::span<const QPointF>(s.points).subspan(old_count));
}

void LineChart::clear() {
  Impl& d = *impl_;
  for (const auto& s : d.series) {
    std::vector<QPointF>().swap(s->points);  // gives the memory back, not just the size
    s->x_span = XSpan{};
  }
  d.fit_x_axis();
  d.decimate_all();
  d.fit_y_axis();
}

void LineChart::remove_all_series() {
  Impl& d = *impl_;
  d.chart->removeAllSeries();  // deletes them
  d.series.clear();
  d.chart->legend()->hide();
  d.fit_x_axis();
  d.fit_y_axis();
}

void LineChart::set_y_scale(Scale scale) {
  Impl& d = *impl_;
  if (scale == d.scale) return;
  QAbstractAxis* from = d.y_axis();
  d.scale = scale;  // from here on, y_axis(), the decimation and the fit follow it
  // A log axis drops the points at y <= 0: they leave the series before it comes and return
  // only after it has gone, so that it never sees a point it cannot place.
  if (scale == Scale::log10) {
    d.decimate_all();
    d.move_series(from, d.y_axis());
  } else {
    d.move_series(from, d.y_axis());
    d.decimate_all();
  }
  d.fit_y_axis();
}

void LineChart::set_x_label(const QString& label) {
  impl_->x_label = label;
  impl_->x_axis->setTitleText(label);
}

int LineChart::series_count() const {
  return static_cast<int>(impl_->series.size());
}

LineChart::Kind LineChart::series_kind(int series) const {
  return impl_->at(series).line ? Kind::line : Kind::markers;
}

QString LineChart::title() const {
  return impl_->chart->title();
}

std::size_t LineChart::drawn_count(int series) const {
  return static_cast<std::size_t>(impl_->at(series).plot->count());
}

bool LineChart::drawing_pending() const {
  const Impl& d = *impl_;
  if (d.x_axis->min() != d.x_range.lo || d.x_axis->max() != d.x_range.hi) return true;
  return std::any_of(d.series.begin(), d.series.end(), [](const auto& s) { return s->stale; });
}

int LineChart::curve_pixel_count(int series) {
  return colour_pixels_in_plot(*this, *impl_->view, impl_->at(series).plot->color());
}

std::size_t LineChart::point_count(int series) const {
  return impl_->at(series).points.size();
}

std::size_t LineChart::plotted_count(int series) const {
  impl_->flush();
  return static_cast<std::size_t>(impl_->at(series).plot->count());
}

bool LineChart::save_image(const QString& path, QString* error) {
  impl_->flush();
  return save_chart_image(*this, impl_->chart->title(), path, error);
}

void LineChart::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  impl_->flush();  // what arrived while hidden
}

void LineChart::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  impl_->refit_columns();
}

void LineChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  style_chart(*impl_->chart, *impl_->view, palette());
  for (const auto& s : impl_->series)
    impl_->fit_line_width(*s, s->plot->count());  // the theme reset the pens
  impl_->fit_legend();
}

}  // namespace mixlab::ui
