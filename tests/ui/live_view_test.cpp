// The live view with a GPU run's figures: the step's device time (CUDA events) plotted beside
// its wall time, only for steps that have one, and the run's notes shown when it begins; and
// per-layer times as rolling medians per layer.
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QTest>
#include <cmath>

#include "ui/charts/chart.h"
#include "ui/run/live_view.h"
#include "ui/run/overflow_table.h"

namespace mixlab::ui {

class LiveViewTest : public QObject {
  Q_OBJECT

 private slots:
  void deviceTimeIsPlottedWhereMeasured() {
    LiveView view;
    app::StartedRun run;
    run.run_id = 7;
    run.total_steps = 10;
    run.notes << QStringLiteral("the training split is kept on the device");
    view.begin_run(run);
    const auto labels = view.findChildren<QLabel*>();
    bool note_shown = false;
    for (const QLabel* label : labels) {
      note_shown |= label->text().contains(QStringLiteral("kept on the device"));
    }
    QVERIFY2(note_shown, "the run's note is shown");

    app::MetricsBatch batch;
    batch.run_id = 7;
    for (int i = 0; i < 6; ++i) {
      StepMetrics s;
      s.step = i;
      s.step_ms = 2.0 + i;
      s.device_ms = i < 4 ? 1.5 + i : kNotMeasured;  // the last two: not measured
      s.samples = 32;
      batch.steps.push_back(s);
    }
    view.add_metrics(batch);
    LineChart* chart = view.step_time_chart();
    QCOMPARE(chart->point_count(0), std::size_t{6});  // step ms
    QCOMPARE(chart->point_count(2), std::size_t{4});  // device ms: the measured steps only
  }

  void layerTimesShowEachLayersRollingMedianNamedAsInTheEditor() {
    LiveView view;
    view.resize(1200, 900);
    view.show();
    app::StartedRun run;
    run.run_id = 3;
    run.layer_titles = {QStringLiteral("0 Flatten"), QStringLiteral("1 Dense 4, softmax")};
    view.begin_run(run);
    for (int step = 0; step < 5; ++step) {
      // Dense: forward 1, 2, 3, 4, 100 ms (median 3); backward twice that.
      const double f = step < 4 ? step + 1.0 : 100.0;
      view.add_layer_times({3, step, {{0, 0.0, 0.0}, {1, f, 2 * f}}});
    }
    view.add_layer_times({99, 0, {{1, 1000.0, 1000.0}}});  // another run's: ignored
    LayerTimeChart* chart = view.layer_chart();
    QTRY_COMPARE(chart->row_count(), std::size_t(2));  // the chart's refresh, not per step
    QCOMPARE(chart->rows()[1].layer, QStringLiteral("1 Dense 4, softmax"));
    QCOMPARE(chart->rows()[1].forward_ms, 3.0);
    QCOMPARE(chart->rows()[1].backward_ms, 6.0);
    view.end_run(3, RunSummary{});
    QVERIFY(chart->bar_pixel_count() > 20);
    // A new run starts empty.
    view.begin_run(run);
    QCOMPARE(chart->row_count(), std::size_t(0));
  }

  // Issue 29: the layers whose gradients overflowed on skipped steps, summed per layer, shown
  // from the first such step; another run's ignored; a new run starts without them.
  void overflowTableSumsEachLayersInfAndNanGradients() {
    LiveView view;
    view.resize(1200, 900);
    view.show();
    app::StartedRun run;
    run.run_id = 4;
    run.layer_titles = {QStringLiteral("0 Flatten"), QStringLiteral("1 Dense 4, softmax")};
    view.begin_run(run);
    OverflowTable* table = view.overflow_table();
    QVERIFY(table->isHidden());
    view.add_layer_overflows({4, 0, {{1, 5, 100}}});
    view.add_layer_overflows({99, 0, {{0, 7, 10}}});  // another run's
    view.add_layer_overflows({4, 3, {{1, 3, 100}}});
    QVERIFY(table->isVisible());
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, OverflowTable::kLayer)->text(), QStringLiteral("1 Dense 4, softmax"));
    QCOMPARE(table->item(0, OverflowTable::kSteps)->data(Qt::UserRole).toLongLong(), 2);
    QCOMPARE(table->item(0, OverflowTable::kNonfinite)->data(Qt::UserRole).toLongLong(), 8);
    QCOMPARE(table->item(0, OverflowTable::kValues)->data(Qt::UserRole).toLongLong(), 100);
    QCOMPARE(table->item(0, OverflowTable::kLastStep)->text(), QStringLiteral("4"));  // 1-based
    view.begin_run(run);
    QCOMPARE(table->rowCount(), 0);
    QVERIFY(table->isHidden());
  }

  void cpuRunsPlotNoDeviceTime() {
    LiveView view;
    app::StartedRun run;
    run.run_id = 1;
    view.begin_run(run);
    app::MetricsBatch batch;
    batch.run_id = 1;
    StepMetrics s;
    s.step_ms = 3.0;  // device_ms stays kNotMeasured
    batch.steps.push_back(s);
    view.add_metrics(batch);
    QCOMPARE(view.step_time_chart()->point_count(0), std::size_t{1});
    QCOMPARE(view.step_time_chart()->point_count(2), std::size_t{0});
  }

  // A CPU run's step-time legend names the series drawn, not the device time it has none of;
  // a GPU run's names it. Its loss scale of 1 (float32: no scaling) lies inside the plot, not
  // on the log axis's frame.
  void cpuRunsLegendAndLossScaleShowOnlyWhatIsDrawn() {
    LiveView view;
    view.resize(1200, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    app::StartedRun run;
    run.run_id = 1;
    view.begin_run(run);
    app::MetricsBatch batch;
    batch.run_id = 1;
    for (int i = 0; i < 40; ++i) {
      StepMetrics s;
      s.step = i;
      s.step_ms = 3.0 + i % 3;  // device_ms stays kNotMeasured, loss_scale 1
      s.samples = 32;
      batch.steps.push_back(s);
    }
    view.add_metrics(batch);
    LineChart* steps = view.step_time_chart();
    QCOMPARE(steps->plotted_count(0), std::size_t{40});  // drawn now
    QCoreApplication::processEvents();
    const QStringList entries = legend_entries(*steps);
    QVERIFY2(entries.contains(QStringLiteral("step ms")), qPrintable(entries.join(", ")));
    QVERIFY2(!entries.contains(QStringLiteral("device ms")), qPrintable(entries.join(", ")));

    LineChart* scale = view.loss_scale_chart();
    QCOMPARE(scale->plotted_count(0), std::size_t{40});
    QCoreApplication::processEvents();
    QChart* chart = scale->findChild<QChartView*>()->chart();
    const QRectF area = chart->plotArea();
    const QPointF at = chart->mapToPosition(QPointF(20, 1.0), chart->series().at(0));
    QVERIFY2(at.y() > area.top() + 2 && at.y() < area.bottom() - 2,
             qPrintable(QStringLiteral("the line at y %1, the plot from %2 to %3")
                            .arg(at.y())
                            .arg(area.top())
                            .arg(area.bottom())));
    QVERIFY(scale->curve_pixel_count(0) > 20);

    // A GPU run's device time is in the legend once it has points.
    batch.steps.clear();
    StepMetrics s;
    s.step = 40;
    s.step_ms = 3.0;
    s.device_ms = 2.0;
    batch.steps.push_back(s);
    view.add_metrics(batch);
    QCOMPARE(steps->plotted_count(2), std::size_t{1});
    QVERIFY(legend_entries(*steps).contains(QStringLiteral("device ms")));
  }

 private:
  // The entries the chart's legend shows; none while it is hidden.
  static QStringList legend_entries(LineChart& chart) {
    const QLegend* legend = chart.findChild<QChartView*>()->chart()->legend();
    QStringList entries;
    if (!legend->isVisible()) return entries;
    for (const QLegendMarker* marker : legend->markers()) {
      if (marker->isVisible()) entries << marker->label();
    }
    return entries;
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::LiveViewTest)
#include "live_view_test.moc"
