// chart_bench: how long a 1200x800 LineChart takes to redraw with 1,000 and 1,000,000 points,
// and to take the live path's 40 new points (median of 20 runs, in ms). Prints figures; it is
// not a pass/fail test. Runs on the offscreen platform unless QT_QPA_PLATFORM says otherwise.
//
//   build/release/tests/ui/chart_bench
#include <QApplication>
#include <QElapsedTimer>
#include <QGraphicsView>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "ui/charts/chart.h"

using mixlab::ui::LineChart;

namespace {

constexpr int kRuns = 20;
constexpr int kAppendCount = 40;

struct Timing {
  double median_ms = 0.0;
  double max_ms = 0.0;
};

// `prepare` runs untimed before each run (copying the data set_points takes by value).
Timing time_runs(const std::function<void()>& prepare, const std::function<void()>& run) {
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) {
    prepare();
    QElapsedTimer timer;
    timer.start();
    run();
    ms.push_back(static_cast<double>(timer.nsecsElapsed()) * 1e-6);
  }
  std::sort(ms.begin(), ms.end());
  return {(ms[kRuns / 2 - 1] + ms[kRuns / 2]) / 2.0, ms.back()};
}

// A training curve: a slow trend, noise, and the odd spike (what min/max must keep).
std::vector<QPointF> step_times(std::size_t n, double first_step) {
  std::vector<QPointF> points;
  points.reserve(n);
  std::uint32_t state = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;  // LCG: the same figures every run
    const double noise = static_cast<double>(state >> 8) / static_cast<double>(1u << 24);
    const double step = first_step + static_cast<double>(i);
    const double spike = (i % 4999 == 0) ? 30.0 : 0.0;
    points.emplace_back(step, 20.0 + 4.0 * std::exp(-step / 2e5) + noise + spike);
  }
  return points;
}

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("step ms"));
  chart.resize(1200, 800);
  chart.show();
  QApplication::processEvents();
  const int series = chart.add_series(QStringLiteral("run"));

  // The chart view's viewport is what paints the chart (LineChart itself paints nothing, so its
  // own repaint() returns at once). repaint(): painted now, into the window's backing store.
  QWidget* viewport = chart.findChild<QGraphicsView*>()->viewport();
  const auto repaint = [viewport] { viewport->repaint(); };
  // Before each timed run: the chart's deferred layout and the update it scheduled, untimed, so
  // that a run paints once.
  const auto settle = [] { QApplication::processEvents(); };

  std::printf("LineChart 1200x800 on \"%s\", median (max) of %d runs, ms\n",
              qPrintable(QGuiApplication::platformName()), kRuns);
  std::printf("%-12s %10s %10s %18s %18s %8s\n", "points", "set_points", "repaint",
              "set_points+repaint", "set_points+grab", "plotted");
  for (const std::size_t n : {std::size_t{1000}, std::size_t{1'000'000}}) {
    const std::vector<QPointF> data = step_times(n, 0.0);
    std::vector<QPointF> copy;
    const auto prepare = [&] {
      copy = data;
      settle();
    };
    chart.set_points(series, data);  // warm-up: first layout, caches
    settle();
    repaint();
    const Timing set = time_runs(prepare, [&] { chart.set_points(series, std::move(copy)); });
    const Timing paint = time_runs(settle, repaint);
    const Timing full = time_runs(prepare, [&] {
      chart.set_points(series, std::move(copy));
      repaint();
    });
    const Timing grabbed = time_runs(prepare, [&] {
      chart.set_points(series, std::move(copy));
      (void)chart.grab();
    });
    std::printf("%-12zu %10.2f %10.2f %9.2f (%6.2f) %9.2f (%6.2f) %8zu\n", n, set.median_ms,
                paint.median_ms, full.median_ms, full.max_ms, grabbed.median_ms, grabbed.max_ms,
                chart.plotted_count(series));
  }

  // The live path: 40 new points a tick onto the million, then the refresh that hands them to
  // the plot (forced here by plotted_count; the chart does it at most 10 times a second), then a
  // repaint.
  double next_step = static_cast<double>(chart.point_count(series));
  std::vector<QPointF> tick;
  const Timing append = time_runs(
      [&] {
        tick = step_times(kAppendCount, next_step);
        next_step += kAppendCount;
        settle();
      },
      [&] {
        chart.append_points(series, tick);
        (void)chart.plotted_count(series);
        repaint();
      });
  const Timing append_only = time_runs(
      [&] {
        tick = step_times(kAppendCount, next_step);
        next_step += kAppendCount;
        settle();
      },
      [&] { chart.append_points(series, tick); });
  std::printf("append %d points to %zu: append_points %.2f (%.2f), +refresh+repaint %.2f (%.2f)\n",
              kAppendCount, chart.point_count(series), append_only.median_ms, append_only.max_ms,
              append.median_ms, append.max_ms);
  return 0;
}
