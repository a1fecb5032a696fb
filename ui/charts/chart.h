// MixLab's charts, behind one adapter: the rest of the UI sees these widgets and never Qt
// Charts (Qt's docs name Qt Graphs as its successor; only chart.cpp changes when we move).
//
// A chart keeps every point a caller gives it but hands a series no more points than the plot
// has pixel columns: min/max per column (decimate_minmax), redone when the data or the plot's
// width changes. So a series of 1,000,000 points redraws as fast as one of 1,000.
#pragma once

#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <span>
#include <vector>

namespace mixlab::ui {

// Min/max decimation of points sorted by x: for each of `columns` equal x-intervals over
// [points.front().x, points.back().x], the first, min-y, max-y and last point of the interval
// (in x order, duplicates dropped). Returns the input unchanged when it has at most
// 2 * columns points. Points with a NaN coordinate are skipped (in both cases).
std::vector<QPointF> decimate_minmax(std::span<const QPointF> points, int columns);

class LineChart : public QWidget {
  Q_OBJECT

 public:
  enum class Scale { linear, log10 };
  enum class Kind { line, markers };  // markers: a scatter series (skipped steps, epochs)

  LineChart(const QString& title, const QString& x_label, const QString& y_label,
            QWidget* parent = nullptr);
  ~LineChart() override;

  // Adds a series; returns its index. Colours follow the palette's order.
  int add_series(const QString& name, Kind kind = Kind::line);
  void set_series_name(int series, const QString& name);
  // Replaces a series' points (x ascending); the axes fit all series' data.
  void set_points(int series, std::vector<QPointF> points);
  // Appends points (x ascending, after the ones it has): the live charts' path. The plot shows
  // them at its next refresh (at most 10 a second, none while hidden).
  void append_points(int series, std::span<const QPointF> points);
  void clear();  // removes every point (the series stay)
  void remove_all_series();
  void set_y_scale(Scale scale);
  void set_x_label(const QString& label);

  int series_count() const;
  Kind series_kind(int series) const;
  QString title() const;
  // The points a series holds / hands to the plot now (after decimation); for tests.
  std::size_t point_count(int series) const;
  std::size_t plotted_count(int series) const;
  // What the plot shows now, without handing it what the live path has queued (checks of the
  // screen: the screenshot tour, GUI tests): the points a series' plot holds, whether appended
  // points still wait for the next refresh, and the pixels of a series' colour inside the plot
  // area as the chart paints now.
  std::size_t drawn_count(int series) const;
  bool drawing_pending() const;
  int curve_pixel_count(int series);

  // Saves the chart as PNG (or any raster format Qt knows by the suffix) or SVG (".svg").
  // Returns false and sets `error` when the file cannot be written.
  bool save_image(const QString& path, QString* error = nullptr);

 protected:
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;  // palette changes: dark or light chart theme

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Bars with p5–p95 whiskers: one bar per run (median step ms, samples/s...).
class BarChart : public QWidget {
  Q_OBJECT

 public:
  BarChart(const QString& title, const QString& y_label, QWidget* parent = nullptr);
  ~BarChart() override;

  struct Bar {
    QString label;
    double value = 0.0;
    double low = 0.0;   // whisker; NaN for none
    double high = 0.0;  // whisker; NaN for none
  };
  void set_bars(std::vector<Bar> bars);
  std::size_t bar_count() const;
  // Pixels of the bars' colour inside the plot area, as the chart paints now.
  int bar_pixel_count();
  bool save_image(const QString& path, QString* error = nullptr);

 protected:
  void changeEvent(QEvent* event) override;  // palette changes: dark or light chart theme

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Per-layer times: one horizontal bar per layer (the first at the top), forward and backward
// stacked, with a legend; for the live view and a run's details.
class LayerTimeChart : public QWidget {
  Q_OBJECT

 public:
  explicit LayerTimeChart(const QString& title, QWidget* parent = nullptr);
  ~LayerTimeChart() override;

  struct Row {
    QString layer;  // as the editor names it: "2 Dense 128, relu"
    double forward_ms = 0.0;
    double backward_ms = 0.0;
  };
  void set_rows(std::vector<Row> rows);
  std::size_t row_count() const;
  const std::vector<Row>& rows() const;
  void set_title(const QString& title);
  // Pixels of the forward bars' colour inside the plot area, as the chart paints now.
  int bar_pixel_count();
  bool save_image(const QString& path, QString* error = nullptr);

 protected:
  void changeEvent(QEvent* event) override;  // palette changes: dark or light chart theme

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A few points per series (no decimation) on linear or logarithmic axes, in any order, each
// point with an optional label its tooltip shows: the doctor's roofline (log-log) and its
// batch-size sweep (log2 x).
class PlotChart : public QWidget {
  Q_OBJECT

 public:
  // log2: powers of two, labelled every few so that about six labels fit.
  enum class Scale { linear, log2, log10 };
  enum class Kind { line, dashed_line, markers };

  PlotChart(const QString& title, const QString& x_label, const QString& y_label, Scale x_scale,
          Scale y_scale, QWidget* parent = nullptr);
  ~PlotChart() override;

  // Adds a series; returns its index. Colours follow the palette's order, or `colour_of`'s
  // series' colour (a roof and the points under it).
  int add_series(const QString& name, Kind kind, int colour_of = -1);
  void set_series_name(int series, const QString& name);
  // Replaces a series' points; the axes fit all series. A log axis leaves out the points it
  // cannot place (not positive), a line joins points in the order given. A series with no
  // point to show stays out of the legend. `labels`: one per
  // point (the tooltip's first line), or none.
  void set_points(int series, std::vector<QPointF> points, QStringList labels = {});
  void clear();  // every series' points

  int series_count() const;
  QString series_name(int series) const;
  Kind series_kind(int series) const;
  QString title() const;
  const std::vector<QPointF>& points(int series) const;
  std::size_t plotted_count(int series) const;  // after leaving out what a log axis cannot place
  // Pixels of a series' colour inside the plot area, as the chart paints now.
  int curve_pixel_count(int series);
  bool save_image(const QString& path, QString* error = nullptr);

 protected:
  void changeEvent(QEvent* event) override;  // palette changes: dark or light chart theme

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Vertical bars, one per category, each stacked from named segments with a legend: where a
// step's time goes, per precision policy.
class StackedBarChart : public QWidget {
  Q_OBJECT

 public:
  StackedBarChart(const QString& title, const QString& value_label, QWidget* parent = nullptr);
  ~StackedBarChart() override;

  struct Segment {
    QString name;
    std::vector<double> values;  // one per bar; missing ones count 0
  };
  void set_bars(QStringList bars, std::vector<Segment> segments);
  std::size_t bar_count() const;
  std::size_t segment_count() const;
  double bar_total(int bar) const;
  // Pixels of the first segment's colour inside the plot area, as the chart paints now.
  int bar_pixel_count();
  bool save_image(const QString& path, QString* error = nullptr);

 protected:
  void changeEvent(QEvent* event) override;  // palette changes: dark or light chart theme

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mixlab::ui
