// Min/max decimation as a stream, for the charts (internal to ui/charts; the rest of the UI uses
// decimate_minmax in chart.h). A live chart appends a few dozen points 25 times a second to a
// series of up to 1,000,000: the stream lets it redo only the pixel column the new points fall
// in instead of the whole series.
#pragma once

#include <QPointF>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace mixlab::ui {

// Which points a decimator keeps; the others are skipped as if absent.
enum class KeepPoints {
  not_nan,            // decimate_minmax's contract: neither coordinate NaN
  finite,             // a linear axis: infinities would stretch it without bound
  finite_y_positive,  // a log axis has no place for y <= 0
};

// Splits [x_lo, x_hi] into `columns` equal intervals and keeps, per interval, the first, min-y,
// max-y and last point (in x order, duplicates dropped). Points must come in ascending x: out of
// order they cost no crash, only a worse decimation.
class MinMaxDecimator {
 public:
  MinMaxDecimator() = default;
  MinMaxDecimator(double x_lo, double x_hi, int columns, KeepPoints keep);

  // Adds points after those added so far.
  void add(std::span<const QPointF> points);
  // The decimated points so far: the closed columns, then the open one.
  std::vector<QPointF> result() const;
  std::size_t size() const;
  // Calls f(point) for each decimated point, in order, without building a vector.
  template <class F>
  void for_each(F&& f) const {
    for (const QPointF& p : closed_) f(p);
    for_each_open(f);
  }
  // The least and greatest y kept (+inf and -inf when none): what a y axis must show, known
  // without another pass over the points.
  double y_min() const;
  double y_max() const;

 private:
  struct Pick {
    QPointF point;
    std::uint64_t order = 0;  // position among all points added: orders min and max in x
  };
  int column_of(double x) const;
  std::size_t run_end(std::span<const QPointF> points, std::size_t begin, int column) const;
  template <class Keep>
  void add_kept(std::span<const QPointF> points, Keep keep);
  void close();
  template <class F>
  void for_each_open(F&& f) const {
    if (column_ < 0) return;
    const Pick* picks[4] = {&first_, &min_, &max_, &last_};
    if (max_.order < min_.order) std::swap(picks[1], picks[2]);
    std::uint64_t previous = UINT64_MAX;
    for (const Pick* pick : picks) {
      if (pick->order == previous) continue;
      previous = pick->order;
      f(pick->point);
    }
  }

  double x_lo_ = 0.0;
  double columns_per_x_ = 0.0;  // 0 when the x range is empty: everything in column 0
  int columns_ = 1;
  KeepPoints keep_ = KeepPoints::not_nan;
  std::uint64_t added_ = 0;  // points added so far, kept or not
  std::vector<QPointF> closed_;
  double closed_y_min_ = std::numeric_limits<double>::infinity();  // over closed_
  double closed_y_max_ = -std::numeric_limits<double>::infinity();
  int column_ = -1;                // the open column; -1 when none is open
  Pick first_, min_, max_, last_;  // the open column's
};

}  // namespace mixlab::ui
