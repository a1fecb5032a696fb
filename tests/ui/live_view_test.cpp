// The live view with a GPU run's figures: the step's device time (CUDA events) plotted beside
// its wall time, only for steps that have one, and the run's notes shown when it begins; and
// per-layer times as rolling medians per layer.
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QTest>
#include <cmath>

#include "app/run/run_controller.h"
#include "app/run/run_feed.h"
#include "app/store/run_store.h"
#include "engine/data/dataset.h"
#include "tests/store/store_test_util.h"
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

  // Issue 30: a mixed_float8 run's FP8 tensors, from its first step: the chosen matmul's amaxes
  // and scales (an amax of 0 left off the log axis) and its share of saturated and flushed
  // values; attention's projections named; another run's ignored; a new run starts without.
  void fp8ChartsFollowTheChosenMatmul() {
    LiveView view;
    view.resize(1200, 1100);
    view.show();
    app::StartedRun run;
    run.run_id = 5;
    run.layer_titles = {QStringLiteral("0 Dense 8, relu"),
                        QStringLiteral("1 MultiHeadAttention 2x4")};
    view.begin_run(run);
    QComboBox* box = view.fp8_matmul_box();
    LineChart* amax = view.fp8_amax_chart();
    LineChart* scales = view.fp8_scale_chart();
    LineChart* rounding = view.fp8_rounding_chart();
    QVERIFY(!box->isVisible());
    const auto tensor = [](int layer, int part, Fp8Role role, float amax, float next,
                           std::int64_t saturated) {
      Fp8TensorStep t;
      t.layer = layer;
      t.part = part;
      t.role = role;
      t.amax = amax;
      t.next_scale = next;
      t.values = 100;
      t.saturated = saturated;
      return t;
    };
    const auto step = [&](std::int64_t s, float amax) {
      return app::Fp8Tensors{5,
                             s,
                             {tensor(0, 0, Fp8Role::input, amax, 1.0f, 3),
                              tensor(0, 0, Fp8Role::kernel, 0.5f, 1.0f, 0),
                              tensor(0, 0, Fp8Role::gradient, 0.0f, 1.0f, 0),
                              tensor(1, 2, Fp8Role::input, 2.0f, 0.25f, 0),
                              tensor(1, 2, Fp8Role::kernel, 1.0f, 0.5f, 0),
                              tensor(1, 2, Fp8Role::gradient, 1e-3f, 1e-6f, 30)}};
    };
    view.add_fp8_tensors(step(0, 40.0f));
    view.add_fp8_tensors({99, 0, {tensor(0, 0, Fp8Role::input, 1.0f, 1.0f, 0)}});  // another run
    view.add_fp8_tensors(step(1, 80.0f));
    QVERIFY(box->isVisible());
    QCOMPARE(box->count(), 2);
    QCOMPARE(box->itemText(0), QStringLiteral("0 Dense 8, relu"));
    QCOMPARE(box->itemText(1), QStringLiteral("1 MultiHeadAttention 2x4: value projection"));
    QCOMPARE(amax->point_count(0), 2u);    // input
    QCOMPARE(amax->point_count(2), 0u);    // gradient amax 0: off the log axis
    QCOMPARE(scales->point_count(2), 2u);  // gradient
    QCOMPARE(rounding->point_count(0), 2u);
    box->setCurrentIndex(1);
    QCOMPARE(amax->point_count(2), 2u);
    view.begin_run(run);
    QCOMPARE(box->count(), 0);
    QVERIFY(!box->isVisible());
  }

  // Issue 30, end to end: a mixed_float8 run on the CPU streams its FP8 tensors through the run
  // controller and the feed to the live view, step by step, and the store keeps them.
  void aMixedFloat8RunsTensorsReachTheChartsAndTheStore() {
    store::testing::TempDir dir;
    app::RunController controller(dir / "runs.sqlite");
    app::RunFeed feed(&controller);
    LiveView view;
    view.follow(&feed);
    std::vector<app::Fp8Tensors> received;
    QObject::connect(&feed, &app::RunFeed::fp8_tensors,
                     [&received](const app::Fp8Tensors& t) { received.push_back(t); });
    qint64 run_id = 0;
    QObject::connect(&feed, &app::RunFeed::run_finished,
                     [&run_id](qint64 id, const RunSummary&) { run_id = id; });
    app::RunRequest request;
    request.spec = parse_model_json(store::testing::kTinyModel);
    request.model_name = "tiny";
    request.config.dataset = parse_dataset_spec("synthetic:8x8x1:4:256");
    request.config.steps = 12;
    request.config.threads = 1;
    request.config.evaluate = false;
    request.config.precision = Policy::mixed_float8;
    QVERIFY(controller.start({request}));
    QVERIFY(QTest::qWaitFor([&] { return run_id != 0 && !controller.busy(); }, 30000));
    feed.drain();
    QCOMPARE(received.size(), std::size_t(12));
    QCOMPARE(received[3].step, 3);
    QCOMPARE(received[3].tensors.size(), std::size_t(3));  // the Dense's input, kernel, gradient
    QCOMPARE(view.fp8_matmul_box()->count(), 1);
    QCOMPARE(view.fp8_matmul_box()->itemText(0), QStringLiteral("1 Dense 4, softmax"));
    QCOMPARE(view.fp8_scale_chart()->point_count(0), std::size_t(12));  // input scale
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.fp8_tensors(run_id).size(), std::size_t(12 * 3));
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
