#include "ui/charts/decimate.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ui/charts/chart.h"

namespace mixlab::ui {
namespace {

bool not_nan(QPointF p) {
  return !std::isnan(p.x()) && !std::isnan(p.y());
}
bool finite(QPointF p) {
  return std::isfinite(p.x()) && std::isfinite(p.y());
}
bool finite_y_positive(QPointF p) {
  return finite(p) && p.y() > 0.0;
}

}  // namespace

MinMaxDecimator::MinMaxDecimator(double x_lo, double x_hi, int columns, KeepPoints keep)
    : x_lo_(x_lo), columns_(std::max(columns, 1)), keep_(keep) {
  const double width = x_hi - x_lo;
  if (std::isfinite(width) && width > 0.0) columns_per_x_ = columns_ / width;
}

int MinMaxDecimator::column_of(double x) const {
  // Clamped as a double: points just outside the range (rounding) belong to the edge columns,
  // and the cast to int stays defined (NaN lands in column 0).
  const double at = (x - x_lo_) * columns_per_x_;
  if (!(at > 0.0)) return 0;
  return at < columns_ - 1 ? static_cast<int>(at) : columns_ - 1;
}

std::size_t MinMaxDecimator::run_end(std::span<const QPointF> points, std::size_t begin,
                                     int column) const {
  // A column holds about points / columns points: galloping then bisecting finds its end in
  // O(log) probes instead of placing every point.
  std::size_t lo = begin + 1;  // [begin, lo) are in `column`
  std::size_t step = 1;
  std::size_t hi = lo;
  while (hi < points.size() && column_of(points[hi].x()) == column) {
    lo = hi + 1;
    step *= 2;
    hi = lo + step;
  }
  hi = std::min(hi, points.size());  // the end is in [lo, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (column_of(points[mid].x()) == column) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void MinMaxDecimator::add(std::span<const QPointF> points) {
  // One loop per rule, so the per-point test is inlined rather than dispatched per point.
  switch (keep_) {
    case KeepPoints::not_nan:
      add_kept(points, [](QPointF p) { return not_nan(p); });
      break;
    case KeepPoints::finite:
      add_kept(points, [](QPointF p) { return finite(p); });
      break;
    case KeepPoints::finite_y_positive:
      add_kept(points, [](QPointF p) { return finite_y_positive(p); });
      break;
  }
  added_ += points.size();
}

template <class Keep>
void MinMaxDecimator::add_kept(std::span<const QPointF> points, Keep keep) {
  for (std::size_t begin = 0; begin < points.size();) {
    const int column = column_of(points[begin].x());
    const std::size_t end = run_end(points, begin, column);
    // The run's extremes in locals: this is the loop a million points go through.
    std::size_t first = end, last = end, lo = end, hi = end;
    double lo_y = 0.0, hi_y = 0.0;
    for (std::size_t i = begin; i < end; ++i) {
      const QPointF& p = points[i];
      if (!keep(p)) continue;
      if (first == end) {
        first = lo = hi = i;
        lo_y = hi_y = p.y();
      } else if (p.y() < lo_y) {
        lo_y = p.y();
        lo = i;
      } else if (p.y() > hi_y) {
        hi_y = p.y();
        hi = i;
      }
      last = i;
    }
    begin = end;
    if (first == end) continue;  // nothing kept

    const auto pick = [&](std::size_t i) { return Pick{points[i], added_ + i}; };
    if (column != column_) {
      close();
      column_ = column;
      first_ = pick(first);
      min_ = pick(lo);
      max_ = pick(hi);
    } else {
      // The open column goes on: ties keep the earlier point, as one pass would.
      if (lo_y < min_.point.y()) min_ = pick(lo);
      if (hi_y > max_.point.y()) max_ = pick(hi);
    }
    last_ = pick(last);
  }
}

void MinMaxDecimator::close() {
  if (column_ < 0) return;
  for_each_open([this](QPointF p) { closed_.push_back(p); });
  closed_y_min_ = std::min(closed_y_min_, min_.point.y());
  closed_y_max_ = std::max(closed_y_max_, max_.point.y());
  column_ = -1;
}

double MinMaxDecimator::y_min() const {
  return column_ < 0 ? closed_y_min_ : std::min(closed_y_min_, min_.point.y());
}

double MinMaxDecimator::y_max() const {
  return column_ < 0 ? closed_y_max_ : std::max(closed_y_max_, max_.point.y());
}

std::vector<QPointF> MinMaxDecimator::result() const {
  std::vector<QPointF> out;
  out.reserve(closed_.size() + 4);
  for_each([&out](QPointF p) { out.push_back(p); });
  return out;
}

std::size_t MinMaxDecimator::size() const {
  std::size_t open_count = 0;
  for_each_open([&open_count](QPointF) { ++open_count; });
  return closed_.size() + open_count;
}

std::vector<QPointF> decimate_minmax(std::span<const QPointF> points, int columns) {
  if (points.size() <= 2 * static_cast<std::size_t>(std::max(columns, 1))) {
    std::vector<QPointF> out;
    out.reserve(points.size());
    std::copy_if(points.begin(), points.end(), std::back_inserter(out), not_nan);
    return out;
  }
  MinMaxDecimator decimator(points.front().x(), points.back().x(), columns, KeepPoints::not_nan);
  decimator.add(points);
  return decimator.result();
}

}  // namespace mixlab::ui
