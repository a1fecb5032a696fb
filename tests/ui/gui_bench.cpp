// Benchmark of the GUI during a fast run (prints figures; not a test): the real main window on
// the offscreen platform, a run of the Fashion-MNIST MLP on synthetic data at over 1,000
// steps/s with the live charts updating, and the longest the GUI thread went without serving
// its event loop (a 1 ms timer's largest gap). Target: no stall over 50 ms.
// usage: gui_bench [STEPS]   (default 20000)
#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tests/store/store_test_util.h"
#include "ui/main_window.h"
#include "ui/run/live_view.h"
#include "ui/run/run_panel.h"

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  mixlab::store::testing::TempDir dir;
  qputenv("XDG_CONFIG_HOME", (dir / "config").c_str());
  QApplication app(argc, argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20000;

  mixlab::ui::MainWindow window(dir / "runs.sqlite");
  window.resize(1600, 1000);
  window.open_model(QStringLiteral("fashion-mlp"));
  window.run_panel()->set_dataset(QStringLiteral("synthetic"));
  window.run_panel()->set_steps(steps);
  window.show();

  QElapsedTimer clock;
  qint64 last_tick_ns = 0, worst_gap_ns = 0;
  QTimer ticker;
  ticker.setTimerType(Qt::PreciseTimer);
  ticker.setInterval(1);
  QObject::connect(&ticker, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    if (last_tick_ns != 0) worst_gap_ns = std::max(worst_gap_ns, now - last_tick_ns);
    last_tick_ns = now;
  });
  double run_s = 0.0;
  QObject::connect(window.feed(), &mixlab::app::RunFeed::queue_finished, &app, [&] {
    run_s = clock.nsecsElapsed() / 1e9;
    QTimer::singleShot(200, &app, &QApplication::quit);  // the last drain and redraw
  });
  QTimer::singleShot(0, [&] {
    clock.start();
    ticker.start();
    if (!window.start_run()) {
      std::fprintf(stderr, "gui_bench: the run did not start\n");
      QApplication::exit(1);
    }
  });
  const int rc = QApplication::exec();
  const auto shown = window.live_view()->steps_shown();
  std::printf(
      "run: %d steps of the Fashion-MNIST MLP (synthetic data, batch 32) in %.2f s = %.0f "
      "steps/s; %zu steps reached the live charts\n",
      steps, run_s, steps / run_s, shown);
  std::printf(
      "GUI thread: longest gap between 1 ms timer ticks %.1f ms (target: no stall over "
      "50 ms)\n",
      worst_gap_ns / 1e6);
  return rc != 0 || shown != static_cast<std::size_t>(steps) ? 1 : 0;
}
