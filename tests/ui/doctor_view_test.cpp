// The Doctor tab in the main window, as a user drives it on the offscreen platform: the CIFAR-10
// MLP on an RTX 2060 profile at batch 32 with SGD (mixed_float16 predicted slower: weight-bound);
// its findings, a finding selecting its layer in the editor and the editor's badges; a larger
// batch changing the verdict; the three charts; Measure refused for a profile; this CPU's roofs
// measured off the GUI thread, then a measurement beside the prediction, and one cancelled; a
// GPU present whose measurement fails, leaving the tab usable; the report's JSON and CSV.
#include <QAbstractItemView>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/store/doctor_export.h"
#include "app/store/run_store.h"
#include "engine/backend/backend.h"
#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"
#include "tests/ui/chart_labels.h"
#include "ui/charts/chart.h"
#include "ui/doctor/doctor_charts.h"
#include "ui/doctor/doctor_report.h"
#include "ui/doctor/doctor_view.h"
#include "ui/doctor/doctor_worker.h"
#include "ui/doctor/findings_model.h"
#include "ui/editor/editor_widget.h"
#include "ui/history/compare_view.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/model_document.h"
#include "ui/main_window.h"
#include "ui/run/run_panel.h"

namespace mixlab::ui {

namespace {

// The lines of a CSV text split at CRLF (no field of these findings holds a line break).
QStringList csv_records(const std::string& text) {
  QStringList records = QString::fromStdString(text).split(QStringLiteral("\r\n"));
  if (!records.isEmpty() && records.back().isEmpty()) records.removeLast();
  return records;
}

}  // namespace

class DoctorViewTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<store::testing::TempDir> dir_;
  std::unique_ptr<MainWindow> window_;

  DoctorView* doctor() const { return window_->doctor_view(); }
  FindingsModel* findings() const { return doctor()->findings_model(); }

  // The first finding that names layers.
  int row_with_layers() const {
    for (int r = 0; r < findings()->rowCount(); ++r) {
      if (!findings()->findings()[static_cast<std::size_t>(r)].layers.empty()) return r;
    }
    return -1;
  }

 private slots:
  void initTestCase() {
    // No CUDA backend, whatever this machine has: the GPUs listed are the tests' own.
    qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
  }
  void init() {
    dir_ = std::make_unique<store::testing::TempDir>();
    window_ = std::make_unique<MainWindow>(dir_->path() / "runs.sqlite");
    QVERIFY(window_->open_model(QStringLiteral("cifar10-mlp")));
    RunPanel* panel = window_->run_panel();
    panel->set_batch_size(32);
    QVERIFY(panel->set_field_text(run_field("optimizer"), QStringLiteral("sgd")));
    QVERIFY(doctor()->select_device(QStringLiteral("RTX 2060")));
    doctor()->set_mixed_policy(std::nullopt);
    window_->tabs()->setCurrentWidget(doctor());
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    doctor()->refresh_now();
    QVERIFY2(doctor()->diagnosis() != nullptr, qPrintable(doctor()->verdict_text()));
  }
  void cleanup() {
    window_.reset();
    dir_.reset();
  }

  void the_tab_follows_compare_and_ctrl_shift_d_opens_it() {
    QTabWidget* tabs = window_->tabs();
    const int index = tabs->indexOf(doctor());
    QCOMPARE(tabs->tabText(index), QStringLiteral("&Doctor"));
    QCOMPARE(index, tabs->indexOf(window_->compare_view()) + 1);
    tabs->setCurrentWidget(window_->editor());
    QTest::keyClick(window_.get(), Qt::Key_D, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(doctor()));
  }

  void the_verdict_says_mixed_float16_is_slower_at_batch_32() {
    const QString verdict = doctor()->verdict_text();
    QVERIFY2(verdict.startsWith(QStringLiteral("mixed_float16 is predicted")), qPrintable(verdict));
    QVERIFY2(verdict.contains(QStringLiteral("slower")), qPrintable(verdict));
    QVERIFY2(verdict.contains(QStringLiteral("RTX 2060")), qPrintable(verdict));
    QCOMPARE(doctor()->diagnosis()->input.run.batch_size, 32);
    QCOMPARE(doctor()->diagnosis()->input.run.optimizer.kind, OptimizerKind::sgd);
    QCOMPARE(doctor()->diagnosis()->input.mixed, Policy::mixed_float16);  // the device's choice
  }

  void the_findings_table_has_a_weight_bound_row() {
    const int row = findings()->row_of(QStringLiteral("weight-bound"));
    QVERIFY(row >= 0);
    QCOMPARE(findings()->columnCount(), int(FindingsModel::Count));
    QCOMPARE(findings()->index(row, FindingsModel::Finding).data().toString(),
             QStringLiteral("weight-bound"));
    QCOMPARE(findings()->index(row, FindingsModel::Severity).data().toString(),
             QStringLiteral("high"));
    QVERIFY(!findings()->index(row, FindingsModel::Message).data().toString().isEmpty());
    QVERIFY(!findings()->index(row, FindingsModel::Fix).data().toString().isEmpty());
  }

  void a_finding_selects_its_first_layer_in_the_editor() {
    const int row = row_with_layers();
    QVERIFY(row >= 0);
    const int layer = findings()->findings()[static_cast<std::size_t>(row)].layers.front();
    window_->editor()->select_layer(-1);
    QCOMPARE(window_->editor()->current_layer(), -1);
    // A click selects it there; activating (Enter) also shows the Model tab.
    QAbstractItemView* view = doctor()->findings_view();
    view->setFocus();
    view->setCurrentIndex(findings()->index(row, FindingsModel::Message));
    QCOMPARE(window_->editor()->current_layer(), layer);
    QCOMPARE(window_->tabs()->currentWidget(), static_cast<QWidget*>(doctor()));
    window_->editor()->select_layer(-1);
    emit view->activated(findings()->index(row, FindingsModel::Message));
    QCOMPARE(window_->editor()->current_layer(), layer);
    QCOMPARE(window_->tabs()->currentWidget(), static_cast<QWidget*>(window_->editor()));
  }

  void layers_with_findings_carry_a_badge_in_the_editor() {
    const int row = row_with_layers();
    QVERIFY(row >= 0);
    const doctor::Finding& f = findings()->findings()[static_cast<std::size_t>(row)];
    const int layer = f.layers.front();
    LayerStackModel* stack = window_->editor()->stack_model();
    const QModelIndex badged = stack->index(layer, LayerStackModel::Layer);
    const auto lines = badged.data(static_cast<int>(LayerStackModel::Role::Findings)).toStringList();
    QVERIFY2(!lines.isEmpty() && lines.join(QLatin1Char('\n')).contains(QString::fromStdString(f.id)),
             qPrintable(lines.join(QLatin1Char('\n'))));
    QVERIFY(!badged.data(Qt::DecorationRole).isNull());
    QVERIFY(badged.data(Qt::ToolTipRole).toString().contains(QString::fromStdString(f.message)));
    // Layer 0 (Flatten) has no finding: no badge.
    QVERIFY(layer != 0);
    QVERIFY(stack->index(0, LayerStackModel::Layer)
                .data(static_cast<int>(LayerStackModel::Role::Findings))
                .toStringList()
                .isEmpty());
    QVERIFY(stack->index(0, LayerStackModel::Layer).data(Qt::DecorationRole).isNull());
    // An invalid model has no diagnosis: the badges go.
    ModelSpec bad = window_->document()->spec();
    LayerSpec conv;
    conv.type = LayerType::Conv2D;
    conv.filters = 4;
    bad.layers.insert(bad.layers.begin() + 1, conv);  // a Conv2D after Flatten
    window_->document()->reset(bad);
    doctor()->refresh_now();
    QVERIFY(doctor()->diagnosis() == nullptr);
    QCOMPARE(findings()->rowCount(), 0);
    QVERIFY(stack->layer_findings().isEmpty());
  }

  void a_batch_of_1024_changes_the_verdict() {
    const QString before = doctor()->verdict_text();
    window_->run_panel()->set_batch_size(1024);
    doctor()->refresh_now();
    const QString after = doctor()->verdict_text();
    QVERIFY(after != before);
    QVERIFY2(after.contains(QStringLiteral("batch 1024")), qPrintable(after));
    QVERIFY2(after.contains(QStringLiteral("faster")), qPrintable(after));
    QCOMPARE(doctor()->diagnosis()->input.run.batch_size, 1024);
  }

  void the_roofline_has_both_policies_points_under_two_roofs() {
    PlotChart* roofline = doctor()->charts()->roofline();
    QVERIFY(roofline->plotted_count(DoctorCharts::PredictedFloat32) > 0);
    QVERIFY(roofline->plotted_count(DoctorCharts::PredictedMixed) > 0);
    QCOMPARE(roofline->series_kind(DoctorCharts::Float32Roof), PlotChart::Kind::dashed_line);
    QCOMPARE(roofline->series_kind(DoctorCharts::MixedRoof), PlotChart::Kind::dashed_line);
    QVERIFY(roofline->plotted_count(DoctorCharts::Float32Roof) >= 2);
    QVERIFY(roofline->plotted_count(DoctorCharts::MixedRoof) >= 2);
    QCOMPARE(roofline->plotted_count(DoctorCharts::MeasuredFloat32), std::size_t(0));
    // The RTX 2060's roofs: float16 tensor cores far above float32.
    const auto top = [&](int series) {
      double y = 0.0;
      for (const QPointF& p : roofline->points(series)) y = std::max(y, p.y());
      return y;
    };
    QVERIFY(top(DoctorCharts::MixedRoof) > 2 * top(DoctorCharts::Float32Roof));
    // No predicted point lies above its roof.
    for (const QPointF& p : roofline->points(DoctorCharts::PredictedFloat32))
      QVERIFY(p.y() <= top(DoctorCharts::Float32Roof) * 1.0001);
  }

  void the_time_breakdown_has_a_bar_per_policy() {
    StackedBarChart* time = doctor()->charts()->time_breakdown();
    QCOMPARE(time->bar_count(), std::size_t(2));
    QVERIFY(time->segment_count() >= 3);  // matmul, optimizer, loss scaling...
    const doctor::Diagnosis& d = *doctor()->diagnosis();
    QVERIFY(time->bar_total(0) > 0);
    // Everything but the overlapped data copy: within a few percent of the predicted step.
    QVERIFY(std::abs(time->bar_total(1) - d.mixed.step_s() * 1e3) < 0.1 * d.mixed.step_s() * 1e3);
  }

  void the_sweep_rises_with_the_batch_and_marks_the_current_one() {
    PlotChart* sweep = doctor()->charts()->sweep();
    const std::vector<QPointF>& points = sweep->points(DoctorCharts::Speedup);
    QCOMPARE(points.size(), std::size_t(10));  // 8, 16, ... 4096
    QCOMPARE(points.front().x(), 8.0);
    QCOMPARE(points.back().x(), 4096.0);
    QVERIFY2(points.back().y() > points.front().y(),
             qPrintable(QStringLiteral("%1 at 8, %2 at 4096").arg(points.front().y()).arg(points.back().y())));
    QVERIFY(points.back().y() > 1.0);
    QCOMPARE(sweep->points(DoctorCharts::CurrentBatch).size(), std::size_t(1));
    QCOMPARE(sweep->points(DoctorCharts::CurrentBatch).front().x(), 32.0);
    QCOMPARE(sweep->points(DoctorCharts::CurrentBatch).front().y(),
             doctor()->diagnosis()->predicted_speedup());
    window_->run_panel()->set_batch_size(256);
    doctor()->refresh_now();
    QCOMPARE(sweep->points(DoctorCharts::CurrentBatch).front().x(), 256.0);
  }

  void no_chart_text_is_cut_short() {
    // At the window's first size: the speed-up axis read "...", "...", "..." and the time
    // chart's second bar "mixe...".
    window_->resize(1400, 900);
    QApplication::processEvents();
    const QStringList cut = testing::cut_short_chart_texts(*doctor());
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join(QStringLiteral(" | "))));
  }

  void measure_is_refused_for_a_profile_with_the_reason() {
    QPushButton* measure = doctor()->measure_button();
    QVERIFY(!measure->isEnabled());
    QVERIFY2(measure->toolTip().contains(QStringLiteral("predicted, not measured")),
             qPrintable(measure->toolTip()));
    QVERIFY(!doctor()->cancel_button()->isEnabled());
    QVERIFY(!doctor()->busy());
  }

  void the_policy_picker_sets_the_mixed_policy() {
    QVERIFY(doctor()->policy_picker()->itemText(0).contains(QStringLiteral("mixed_float16")));
    doctor()->set_mixed_policy(Policy::mixed_bfloat16);
    doctor()->refresh_now();
    // Turing has no bfloat16: it cannot run.
    QVERIFY2(doctor()->verdict_text().startsWith(QStringLiteral("mixed_bfloat16 cannot run")),
             qPrintable(doctor()->verdict_text()));
  }

  // The Run panel's GPU options reach a GPU's diagnosis: TF32 speeds float32 up on an A100, so
  // mixed precision gains less over it.
  void the_run_panels_gpu_options_reach_the_diagnosis() {
    QVERIFY(doctor()->select_device(QStringLiteral("A100 40GB")));
    doctor()->refresh_now();
    QVERIFY(!doctor()->diagnosis()->input.run.tf32);
    const double without = doctor()->diagnosis()->predicted_speedup();
    auto* tf32 = window_->run_panel()->findChild<QCheckBox*>(QStringLiteral("tf32"));
    QVERIFY(tf32 != nullptr);
    tf32->setChecked(true);
    doctor()->refresh_now();
    QVERIFY(doctor()->diagnosis()->input.run.tf32);
    QVERIFY2(doctor()->diagnosis()->predicted_speedup() < without,
             qPrintable(QStringLiteral("%1 vs %2")
                            .arg(doctor()->diagnosis()->predicted_speedup())
                            .arg(without)));
    tf32->setChecked(false);
    // Every GPU option of the table, as the panel holds it, with no copy on the way.
    for (const RunField& field : run_fields()) {
      if (!field.gpu_only) continue;
      const auto text = [](std::string_view t) {
        return QString::fromUtf8(t.data(), qsizetype(t.size()));
      };
      QVERIFY(window_->run_panel()->set_field_text(field, text(field.example)));
      doctor()->refresh_now();
      QCOMPARE(field_text(field, doctor()->diagnosis()->input.run), std::string(field.example));
      QVERIFY(window_->run_panel()->set_field_text(field, text(field_default_text(field))));
      doctor()->refresh_now();
      QCOMPARE(field_text(field, doctor()->diagnosis()->input.run), field_default_text(field));
    }
  }

  void the_csv_writer_writes_a_header_and_one_row_per_finding() {
    const doctor::Diagnosis& d = *doctor()->diagnosis();
    QVERIFY(d.findings.size() >= 2);
    std::ostringstream out;
    store::write_doctor_findings_csv(out, d);
    const QStringList records = csv_records(out.str());
    QCOMPARE(records.size(), qsizetype(d.findings.size()) + 1);
    QCOMPARE(records.front(),
             QStringLiteral("id,severity,layers,message,suggestion,predicted_gain,change"));
    const int row = findings()->row_of(QStringLiteral("weight-bound"));
    const QString& weight = records[row + 1];
    QVERIFY2(weight.startsWith(QStringLiteral("weight-bound,high,,\"the step moves")), qPrintable(weight));
    // A field with a quote or comma is quoted, its quotes doubled.
    doctor::Finding odd;
    odd.id = "x";
    odd.message = "a \"quoted\", word";
    odd.layers = {1, 3};
    odd.predicted_gain = 1.5;
    doctor::Diagnosis one_finding = d;
    one_finding.findings = {odd};
    std::ostringstream one;
    store::write_doctor_findings_csv(one, one_finding);
    QCOMPARE(csv_records(one.str()).back(), QStringLiteral("x,info,1;3,\"a \"\"quoted\"\", word\",,1.5,"));
  }

  void this_cpu_is_profiled_off_the_gui_thread_then_measured_beside_the_prediction() {
    // A tiny model: its steps take microseconds, so the measurement is the machinery's.
    window_->document()->reset(parse_model_json(store::testing::kTinyModel));
    QVERIFY(doctor()->select_device(QStringLiteral("This CPU (measured)")));
    // The roofs are measured (or read from the cache) on the worker thread: the event loop
    // keeps running meanwhile and the verdict says what is going on.
    doctor()->refresh_now();
    QVERIFY(doctor()->diagnosis() == nullptr);
    QVERIFY(doctor()->busy());
    QVERIFY2(doctor()->verdict_text().startsWith(QStringLiteral("Measuring this CPU's roofs")),
             qPrintable(doctor()->verdict_text()));
    QVERIFY(!doctor()->measure_button()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(doctor()->diagnosis() != nullptr, 120000);
    const QString predicted = doctor()->verdict_text();
    QVERIFY2(predicted.contains(QStringLiteral("on this CPU")), qPrintable(predicted));
    QVERIFY(!predicted.contains(QStringLiteral("Measured:")));
    QVERIFY(doctor()->diagnosis()->input.device.measured);

    QPushButton* measure = doctor()->measure_button();
    QVERIFY2(measure->isEnabled(), qPrintable(measure->toolTip()));
    QTest::mouseClick(measure, Qt::LeftButton);
    QVERIFY(doctor()->busy());
    QVERIFY(!measure->isEnabled());
    QVERIFY(doctor()->cancel_button()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(doctor()->diagnosis() != nullptr && doctor()->diagnosis()->measured,
                             120000);
    QVERIFY(!doctor()->busy());
    QVERIFY(measure->isEnabled());
    const QString verdict = doctor()->verdict_text();
    QVERIFY2(verdict.contains(QStringLiteral("Measured:")), qPrintable(verdict));
    QVERIFY2(doctor()->status_text().startsWith(QStringLiteral("Measured")),
             qPrintable(doctor()->status_text()));
    // Nothing measured is lost: both runs (tagged "doctor") and the report are in the window's
    // run store, as mixlab-cli doctor --measure keeps them.
    QTRY_VERIFY_WITH_TIMEOUT(
        doctor()->status_text().contains(QStringLiteral("Kept in the history")), 30000);
    {
      store::RunStore kept = store::RunStore::open(dir_->path() / "runs.sqlite",
                                                   store::StoreOptions{.read_only = true});
      const auto runs = kept.list_runs();
      QCOMPARE(runs.size(), std::size_t(2));
      for (const store::RunRecord& r : runs) {
        QCOMPARE(r.status, store::RecordStatus::finished);
        QCOMPARE(r.tags, std::vector<std::string>{"doctor"});
      }
      const auto reports = kept.doctor_reports(runs[0].id);
      QCOMPARE(reports.size(), std::size_t(1));
      QCOMPARE(reports[0].run_ids.size(), std::size_t(2));
      QVERIFY2(doctor()->status_text().contains(QStringLiteral("report %1").arg(reports[0].id)),
               qPrintable(doctor()->status_text()));
    }
    PlotChart* roofline = doctor()->charts()->roofline();
    QVERIFY(roofline->plotted_count(DoctorCharts::MeasuredFloat32) > 0);
    QVERIFY(roofline->plotted_count(DoctorCharts::MeasuredMixed) > 0);
    QCOMPARE(doctor()->charts()->sweep()->points(DoctorCharts::MeasuredSpeedup).size(),
             std::size_t(1));
    // Another batch is not what was measured: the prediction alone again.
    window_->run_panel()->set_batch_size(64);
    doctor()->refresh_now();
    QVERIFY(!doctor()->diagnosis()->measured);
    QVERIFY(!doctor()->verdict_text().contains(QStringLiteral("Measured:")));
  }

  // Issue 28: on this machine's device each layer is timed (or read from the layer-times cache)
  // after the roofline's prediction shows, and replaces it per layer; the Layers table says which
  // figures were timed, beside the roofline model's; a confidence line sits under the verdict.
  void this_cpus_layers_are_timed_and_shown_beside_the_roofline() {
    window_->document()->reset(parse_model_json(store::testing::kTinyModel));
    // A profile is predicted, not timed.
    doctor()->refresh_now();
    QVERIFY(!doctor()->diagnosis()->layer_times);
    QVERIFY2(doctor()->layers_text().contains(QStringLiteral("published figures")),
             qPrintable(doctor()->layers_text()));
    QVERIFY2(doctor()->confidence_text().startsWith(QStringLiteral("Confidence: unknown.")),
             qPrintable(doctor()->confidence_text()));

    QVERIFY(doctor()->select_device(QStringLiteral("This CPU (measured)")));
    doctor()->refresh_now();
    QTRY_VERIFY_WITH_TIMEOUT(doctor()->diagnosis() != nullptr, 120000);
    QTRY_VERIFY_WITH_TIMEOUT(doctor()->diagnosis() && doctor()->diagnosis()->layer_times, 120000);
    QVERIFY(!doctor()->timing_layers());
    const doctor::Diagnosis& d = *doctor()->diagnosis();
    QVERIFY(!d.float32.measured_source.empty());
    QVERIFY2(doctor()->layers_text().startsWith(QStringLiteral("Layers: each timed on This CPU")),
             qPrintable(doctor()->layers_text()));
    QVERIFY2(doctor()->confidence_text().contains(QStringLiteral("with each layer timed")),
             qPrintable(doctor()->confidence_text()));
    QAbstractItemModel* layers = doctor()->layers_view()->model();
    QCOMPARE(layers->rowCount(), static_cast<int>(d.input.spec.layers.size()));
    bool any_timed = false;
    for (int r = 0; r < layers->rowCount(); ++r) {
      any_timed |= layers->index(r, 1).data().toString() == QStringLiteral("timed here");
      // The roofline model's own time beside the timed one, not the timed one again.
      QCOMPARE(layers->index(r, 3).data().toString(),
               QString::number(d.float32.layer_model_seconds(r) * 1e3, 'f', 3));
    }
    QVERIFY(any_timed);
    QCOMPARE(layers->headerData(3, Qt::Horizontal).toString(),
             QStringLiteral("float32 roofline ms"));

    // Unticked, the roofline alone; ticked again, the times already taken.
    doctor()->time_layers_box()->setChecked(false);
    doctor()->refresh_now();
    QVERIFY(!doctor()->diagnosis()->layer_times);
    QVERIFY2(doctor()->layers_text().endsWith(QStringLiteral("(Time layers is off)")),
             qPrintable(doctor()->layers_text()));
    QVERIFY(!doctor()->timing_layers());
    doctor()->time_layers_box()->setChecked(true);
    doctor()->refresh_now();
    QVERIFY(doctor()->diagnosis()->layer_times);
    QVERIFY(!doctor()->timing_layers());

    // A GPU profile with Scale from this CPU: the layers timed here, scaled where the kernels
    // match, which a CPU's never do: every layer modelled, saying why.
    QVERIFY(doctor()->select_device(QStringLiteral("RTX 2060")));
    QVERIFY(doctor()->scale_from_picker()->isVisibleTo(doctor()));
    doctor()->scale_from_picker()->setCurrentIndex(
        doctor()->scale_from_picker()->findText(QStringLiteral("This CPU (measured)")));
    doctor()->refresh_now();
    QTRY_VERIFY_WITH_TIMEOUT(!doctor()->diagnosis()->mixed.scaled_source.empty(), 120000);
    QVERIFY2(doctor()->layers_text().startsWith(QStringLiteral("Layers: each layer timed on ")),
             qPrintable(doctor()->layers_text()));
    QVERIFY2(doctor()->layers_text().contains(QStringLiteral("scaled to RTX 2060 (0 scaled")),
             qPrintable(doctor()->layers_text()));
    QAbstractItemModel* scaled = doctor()->layers_view()->model();
    const QModelIndex dense = scaled->index(1, 1);  // 1 Dense of the tiny model
    QCOMPARE(dense.data().toString(), QStringLiteral("roofline model"));
    QVERIFY2(dense.data(Qt::ToolTipRole).toString().contains(QStringLiteral("CPU kernels")),
             qPrintable(dense.data(Qt::ToolTipRole).toString()));
    QVERIFY(doctor()->select_device(QStringLiteral("This CPU (measured)")));
    QVERIFY(!doctor()->scale_from_picker()->isVisibleTo(doctor()));

    // Another batch is another timing; Measure does not wait for it (it times the layers too).
    window_->run_panel()->set_batch_size(48);
    doctor()->refresh_now();
    QVERIFY(!doctor()->diagnosis()->layer_times);
    QVERIFY2(doctor()->measure_button()->isEnabled(),
             qPrintable(doctor()->measure_button()->toolTip()));
  }

  void the_worker_reports_progress_then_the_measurement() {
    DoctorWorker worker;
    QSignalSpy progress(&worker, &DoctorWorker::progress);
    QSignalSpy measured(&worker, &DoctorWorker::measured);
    doctor::DiagnosisInput input;
    input.spec = parse_model_json(store::testing::kTinyModel);
    input.device = doctor::find_profile(doctor::builtin_gpu_profiles(), "RTX 2060");  // unused
    input.run.batch_size = 16;
    input.mixed = Policy::mixed_bfloat16;
    doctor::MeasureOptions options;
    options.steps = 12;
    options.warmup = 2;
    QVERIFY(worker.measure(input, "cpu", options));
    QVERIFY(worker.measuring());
    QVERIFY(!worker.measure(input, "cpu", options));  // one job at a time
    QTRY_COMPARE_WITH_TIMEOUT(measured.size(), 1, 60000);
    QVERIFY(!worker.busy());
    const auto m = measured[0][0].value<doctor::Measurement>();
    QCOMPARE(m.float32.steps, std::int64_t(12));
    QCOMPARE(m.mixed.policy, Policy::mixed_bfloat16);
    // The first step of each run, and each run's end.
    QVERIFY(progress.size() >= 2);
    const QString last = progress.back()[0].toString();
    QVERIFY2(last.startsWith(QStringLiteral("float32: median step")) &&
                 last.contains(QStringLiteral("mixed_bfloat16: median step")),
             qPrintable(last));
    QVERIFY2(progress.front()[0].toString().startsWith(QStringLiteral("Measuring float32: step 1 of 12")),
             qPrintable(progress.front()[0].toString()));
  }

  void cancel_stops_a_measurement_and_the_tab_stays_usable() {
    window_->document()->reset(parse_model_json(store::testing::kTinyModel));
    QVERIFY(doctor()->select_device(QStringLiteral("This CPU (measured)")));
    doctor()->refresh_now();
    QTRY_VERIFY_WITH_TIMEOUT(doctor()->diagnosis() != nullptr, 120000);
    QTest::mouseClick(doctor()->measure_button(), Qt::LeftButton);
    QVERIFY(doctor()->busy());
    QTest::mouseClick(doctor()->cancel_button(), Qt::LeftButton);
    QVERIFY(!doctor()->busy());
    QCOMPARE(doctor()->status_text(), QStringLiteral("Measurement cancelled"));
    QVERIFY(doctor()->measure_button()->isEnabled());
    QVERIFY(!doctor()->diagnosis()->measured);
    // What the cancelled job still sends is dropped.
    QTest::qWait(300);
    QVERIFY(!doctor()->diagnosis()->measured);
  }

  void a_gpu_present_is_measurable_and_a_failed_measurement_leaves_the_tab_usable() {
    ModelDocument doc;
    doc.reset(parse_model_json(store::testing::kTinyModel));
    DoctorView view(&doc, {available_devices().front(),
                           gpu_device_info("GeForce RTX 2060", 7, 5, std::int64_t(6) << 30)});
    QVERIFY(view.select_device(QStringLiteral("GeForce RTX 2060 (cuda:0, this machine)")));
    RunConfig run;
    run.batch_size = 64;
    view.set_run(run);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh_now();
    // Its roofs cannot be measured here (no CUDA backend): the published profile stands in, and
    // the status line says why.
    QTRY_VERIFY_WITH_TIMEOUT(view.diagnosis() != nullptr, 60000);
    QVERIFY2(view.status_text().startsWith(QStringLiteral("The roofs of GeForce RTX 2060")) &&
                 view.status_text().contains(QStringLiteral("predicting from its published")),
             qPrintable(view.status_text()));
    QCOMPARE(view.diagnosis()->input.device.sm_count, 30);  // its published profile's
    // Nor can its layers be timed: the roofline's predictions stand, and the tab says why.
    QTRY_VERIFY2_WITH_TIMEOUT(
        view.layers_text().contains(QStringLiteral("the layers could not be timed")),
        qPrintable(view.layers_text()), 60000);
    QVERIFY(!view.diagnosis()->layer_times);
    QVERIFY(!view.diagnosis()->input.device.measured);
    QCOMPARE(view.diagnosis()->input.run.batch_size, 64);
    QVERIFY2(view.measure_button()->isEnabled(), qPrintable(view.measure_button()->toolTip()));
    // The CUDA backend cannot load here: the measurement fails, saying why, and the tab goes on.
    QTest::mouseClick(view.measure_button(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 60000);
    QVERIFY2(view.status_text().startsWith(QStringLiteral("The measurement failed: ")),
             qPrintable(view.status_text()));
    QVERIFY(view.measure_button()->isEnabled());
    QVERIFY(view.diagnosis() != nullptr && !view.diagnosis()->measured);
  }

  // Two recorded runs of one model and batch, float32 and mixed, as the Compare tab shows them.
  std::pair<qint64, qint64> record_precision_pair(Policy second = Policy::mixed_float16) {
    store::RunStore runs = store::RunStore::open(dir_->path() / "runs.sqlite");
    std::vector<qint64> ids;
    for (const Policy policy : {Policy::float32, second}) {
      store::RunRecord r;
      r.model_name = "tiny";
      r.model_json = store::testing::kTinyModel;
      r.config.precision = policy;
      r.config.batch_size = 64;
      r.config.optimizer = default_optimizer(OptimizerKind::sgd);
      r.config.warmup_steps = 2;
      r.device = "cuda:7";  // no such device here: the Doctor keeps its device
      const std::int64_t id = runs.insert_run(r);
      std::vector<StepMetrics> steps(10);
      for (std::size_t i = 0; i < steps.size(); ++i) {
        steps[i].step = static_cast<std::int64_t>(i);
        steps[i].step_ms = policy == Policy::float32 ? 10.0 : 12.0;
        steps[i].data_wait_ms = 0.1;
        steps[i].loss_scale = 1.0;
        steps[i].samples = 64;
      }
      runs.insert_steps(id, steps);
      RunSummary summary;
      summary.status = RunStatus::finished;
      summary.steps = 10;
      summary.warmup_steps = 2;
      summary.median_step_ms = steps[0].step_ms;
      runs.finish_run(id, summary, store::now_utc_ms());
      ids.push_back(id);
    }
    return {ids[0], ids[1]};
  }

  void compare_links_a_float32_vs_mixed_pair_to_its_diagnosis() {
    const auto [f32, mixed] = record_precision_pair();
    CompareView* compare = window_->compare_view();
    compare->show_runs({f32, mixed});
    QVERIFY(compare->diagnose_button()->isEnabled());
    QTest::mouseClick(compare->diagnose_button(), Qt::LeftButton);
    QCOMPARE(window_->tabs()->currentWidget(), static_cast<QWidget*>(doctor()));
    QVERIFY(doctor()->showing_runs());
    doctor()->refresh_now();
    const doctor::Diagnosis* d = doctor()->diagnosis();
    QVERIFY(d != nullptr);
    QCOMPARE(d->input.run.batch_size, 64);  // the runs', not the Run panel's 32
    QCOMPARE(d->input.spec.name, std::string("tiny"));
    QCOMPARE(d->input.mixed, Policy::mixed_float16);
    QVERIFY(d->measured.has_value());
    QCOMPARE(d->measured->mixed.step_ms, 12.0);
    QVERIFY2(doctor()->verdict_text().contains(QStringLiteral("Measured: 1.20x slower")),
             qPrintable(doctor()->verdict_text()));
    QVERIFY(doctor()->back_button()->isVisible());
    QTest::mouseClick(doctor()->back_button(), Qt::LeftButton);
    doctor()->refresh_now();
    QVERIFY(!doctor()->showing_runs());
    QCOMPARE(doctor()->diagnosis()->input.run.batch_size, 32);
    QVERIFY(!doctor()->diagnosis()->measured.has_value());
    // Two float32 runs are no such pair.
    const auto [a, b] = record_precision_pair(Policy::float32);
    compare->show_runs({a, b});
    QVERIFY(!compare->diagnose_button()->isEnabled());
  }

  void save_report_writes_the_json_and_the_csv_beside_it() {
    const std::filesystem::path json_path = dir_->path() / "report.json";
    QString error;
    QVERIFY2(doctor()->save_report(QString::fromStdString(json_path.string()), &error),
             qPrintable(error));
    std::ifstream json_in(json_path);
    const nlohmann::json report = nlohmann::json::parse(json_in);
    QCOMPARE(QString::fromStdString(report["verdict"].get<std::string>()), doctor()->verdict_text());
    QCOMPARE(report["batch_size"].get<int>(), 32);
    std::ifstream csv_in(findings_csv_path(json_path), std::ios::binary);
    const std::string csv((std::istreambuf_iterator<char>(csv_in)), {});
    QCOMPARE(csv_records(csv).size(), qsizetype(findings()->rowCount()) + 1);
    // The per-layer CSV and the HTML report beside it, as mixlab-cli doctor writes them.
    std::ifstream layers_in(layers_csv_path(json_path), std::ios::binary);
    const std::string layers((std::istreambuf_iterator<char>(layers_in)), {});
    QVERIFY(layers.starts_with("layer,title,policy,phase,predicted_ms,measured_ms\r\n"));
    std::ifstream html_in(html_report_path(json_path));
    const std::string html((std::istreambuf_iterator<char>(html_in)), {});
    QVERIFY(html.find(doctor()->verdict_text().toStdString().substr(0, 30)) != std::string::npos);
    QVERIFY(!doctor()->save_report(QStringLiteral("/nonexistent-dir/report.json"), &error));
    QVERIFY(error.contains(QStringLiteral("nonexistent-dir")));
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::DoctorViewTest)
#include "doctor_view_test.moc"
