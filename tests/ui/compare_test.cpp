// The comparison of recorded runs against a real run store in a temporary folder: the curves,
// speed ratios, the settings that differ (every run setting of engine/train/run_fields.h), and
// chart export.
#include "tests/ui/chart_labels.h"
#include "tests/ui/history_fixture.h"
#include "ui/history/history_format.h"

using namespace mixlab;
using namespace mixlab::ui;
using namespace mixlab::ui::history_testing;

class CompareTest : public QObject, public HistoryRuns {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("MixLab tests"));
    QCoreApplication::setApplicationName(QStringLiteral("compare_test"));
  }
  void init() { record_runs(); }
  void cleanup() { dir_.reset(); }

  void compare_curves();
  void compare_speed_ratios();
  void compare_differing_settings();
  void compare_lists_every_run_setting_that_differs();
  void compare_chart_export();
  void run_labels_keep_the_words_that_set_names_apart();
  void compare_charts_name_float32_and_mixed_whole();
};

// --- comparison -----------------------------------------------------------------------------

void CompareTest::compare_curves() {
  CompareView view(db_);
  QSignalSpy loaded(&view, &CompareView::curves_loaded);
  view.show_runs({fast_, plain_, half_});
  QVERIFY(view.loading());  // the steps come from the loader's thread
  QVERIFY(loaded.wait(10000));
  QVERIFY(!view.loading());
  QCOMPARE(view.run_ids(), (QList<qint64>{fast_, plain_, half_}));
  const std::size_t steps[] = {30, 25, 12};
  for (int series = 0; series < 3; ++series) {
    QCOMPARE(view.step_time_chart()->point_count(series), steps[series]);
    QCOMPARE(view.loss_chart()->point_count(series), steps[series]);
  }
  QCOMPARE(view.median_chart()->bar_count(), std::size_t(3));
  QCOMPARE(view.throughput_chart()->bar_count(), std::size_t(3));

  QVERIFY(!view.x_by_time());
  view.set_x_by_time(true);
  QVERIFY(settings::kCompareByTime.get());
  QVERIFY(loaded.wait(10000));
  QCOMPARE(view.step_time_chart()->point_count(1), std::size_t(25));
  CompareView again(db_);
  QVERIFY(again.x_by_time());  // remembered

  view.show_runs({plain_});
  QVERIFY(loaded.wait(10000));
  QCOMPARE(view.step_time_chart()->point_count(0), std::size_t(25));
}

void CompareTest::compare_speed_ratios() {
  CompareView view(db_);
  view.show_runs({plain_, fast_, half_, failed_});
  QCOMPARE(view.baseline(), plain_);
  const auto ratios = [&] {
    QList<double> values;
    for (int row = 0; row < view.speed_table()->rowCount(); ++row)
      values.append(
          view.speed_table()->item(row, CompareView::SpeedRatio)->data(Qt::UserRole).toDouble());
    return values;
  };
  QList<double> r = ratios();
  QCOMPARE(r.size(), 4);
  QCOMPARE(r[0], 1.0);
  QCOMPARE(r[1], 10.0 / 2.5);
  QCOMPARE(r[2], 10.0 / 4.0);
  QVERIFY(std::isnan(r[3]));  // no figure
  QCOMPARE(view.speed_table()->item(1, CompareView::SpeedRatio)->text(), QStringLiteral("4.00×"));
  // The failed run has no figures, hence no bars (a zero bar would read as fastest).
  QCOMPARE(view.median_chart()->bar_count(), std::size_t(3));
  QCOMPARE(view.throughput_chart()->bar_count(), std::size_t(3));
  view.set_baseline(fast_);
  r = ratios();
  QCOMPARE(r[0], 2.5 / 10.0);
  QCOMPARE(r[1], 1.0);
  QCOMPARE(r[2], 2.5 / 4.0);
  auto* combo = view.findChild<QComboBox*>("compare_baseline");
  QVERIFY(combo != nullptr);
  combo->setCurrentIndex(2);  // half_
  QCOMPARE(view.baseline(), half_);
  QCOMPARE(ratios()[0], 4.0 / 10.0);
}

void CompareTest::compare_differing_settings() {
  CompareView view(db_);
  const auto rows = [&] {
    QStringList names;
    QTableWidget* table = view.settings_table();
    for (int row = 0; row < table->rowCount(); ++row)
      names.append(table->verticalHeaderItem(row)->text());
    return names;
  };
  view.show_runs({fast_, plain_});
  QCOMPARE(rows(), QStringList{"precision"});
  QCOMPARE(view.settings_table()->columnCount(), 2);
  QCOMPARE(view.settings_table()->item(0, 0)->text(), QStringLiteral("mixed_float16"));
  QCOMPARE(view.settings_table()->item(0, 1)->text(), QStringLiteral("float32"));
  view.show_runs({fast_, failed_, plain_});
  QCOMPARE(rows(), (QStringList{"model", "precision"}));
  QCOMPARE(view.settings_table()->item(0, 1)->text(), QStringLiteral("cifar-cnn"));
  {
    RunStore store = RunStore::open(db_);
    RunRecord other = run_named("other", Policy::float32, 5000);
    other.config.batch_size = 1020;
    other.config.optimizer = default_optimizer(OptimizerKind::adam);
    other.config.dataset = parse_dataset_spec("synthetic:32x32x3:100:1000");
    other.config.seed = 7;
    other.device = "cpu";
    const std::int64_t id = add_run(store, other, finished(2, 3.0));
    view.show_runs({plain_, id});
  }
  // Adam's defaults against sample_run's SGD settings: each hyperparameter its own row.
  QCOMPARE(rows(),
           (QStringList{"dataset", "batch size", "optimizer", "learning rate", "seed", "momentum",
                        "Nesterov momentum", "beta_1", "beta_2", "epsilon", "device"}));
  // Equal settings: no rows, and the label says so.
  view.show_runs({plain_, half_});
  QCOMPARE(view.settings_table()->rowCount(), 0);
  bool said = false;
  for (const QLabel* label : view.findChildren<QLabel*>())
    said = said || label->text().contains(QStringLiteral("all settings equal"));
  QVERIFY(said);
}

// Every field of the run-settings table: two recorded runs that differ in it alone (and in what
// it resets) show it under its label, each run's value as people read it.
void CompareTest::compare_lists_every_run_setting_that_differs() {
  CompareView view(db_);
  RunStore store = RunStore::open(db_);
  RunRecord base = run_named("defaults", Policy::float32, 5000);
  base.config = RunConfig{};
  const std::int64_t base_id = add_run(store, base, finished(2, 3.0));
  for (const RunField& field : run_fields()) {
    RunRecord other = base;
    other.name = std::string(field.name);
    set_field_text(field, other.config, field.example);
    view.show_runs({base_id, add_run(store, other, finished(2, 3.0))});
    QTableWidget* table = view.settings_table();
    const QString label = QString::fromUtf8(field.label.data(), qsizetype(field.label.size()));
    int row = -1;
    for (int i = 0; i < table->rowCount(); ++i) {
      if (table->verticalHeaderItem(i)->text() == label) row = i;
    }
    QVERIFY2(row >= 0, qPrintable(label + QStringLiteral(" is not listed")));
    QCOMPARE(table->item(row, 0)->text(),
             QString::fromStdString(field_display(field, base.config)));
    QCOMPARE(table->item(row, 1)->text(),
             QString::fromStdString(field_display(field, other.config)));
  }
}

void CompareTest::compare_chart_export() {
  CompareView view(db_);
  QSignalSpy loaded(&view, &CompareView::curves_loaded);
  view.resize(1200, 800);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  view.show_runs({fast_, plain_});
  QVERIFY(loaded.wait(10000));
  using Chart = CompareView::Chart;
  for (const auto& [chart, name] :
       {std::pair{Chart::step_time, "step.png"}, std::pair{Chart::loss, "loss.svg"},
        std::pair{Chart::median_step, "median.svg"},
        std::pair{Chart::throughput, "throughput.png"}}) {
    const auto file = *dir_ / name;
    QVERIFY(view.export_chart(chart, QString::fromStdString(file.string())));
    QVERIFY(std::filesystem::file_size(file) > 0);
  }
  QVERIFY(store::testing::read_bytes(*dir_ / "loss.svg").find("<svg") != std::string::npos);
  QVERIFY(store::testing::read_bytes(*dir_ / "step.png").substr(1, 3) == "PNG");

  // Through the button, the file dialog answered.
  Prompts prompts;
  prompts.save_file = [&](const QString&, const QString& suggested, const QString&) {
    return QString::fromStdString((*dir_ / "button-").string()) + suggested;
  };
  view.set_prompts(prompts);
  auto* button = view.findChild<QPushButton*>("export_median-step-time");
  QVERIFY(button != nullptr);
  button->click();
  QVERIFY(std::filesystem::file_size(*dir_ / "button-median-step-time.png") > 0);
  QSignalSpy errors(&view, &CompareView::error);
  QVERIFY(
      !view.export_chart(Chart::loss, QString::fromStdString((*dir_ / "no" / "x.png").string())));
  QCOMPARE(errors.count(), 1);
}

QTEST_MAIN(CompareTest)
#include "compare_test.moc"

// --- naming runs in the charts ---------------------------------------------------------------

void CompareTest::run_labels_keep_the_words_that_set_names_apart() {
  const auto labels = [](std::vector<std::string> names, int max_chars = 24) {
    std::vector<RunRecord> runs;
    for (const std::string& name : names) {
      runs.push_back(run_named(name, Policy::float32, 0));
      runs.back().id = std::int64_t(runs.size());
    }
    return history::distinct_run_labels(runs, max_chars);
  };
  QCOMPARE(labels({"fashion-mlp float32 b32", "fashion-mlp mixed_bfloat16 b32"}),
           (QStringList{"#1 float32", "#2 mixed_bfloat16"}));
  QCOMPARE(labels({"mlp fp16  b32", "mlp fp16 b64", "cnn fp16 b64"}),
           (QStringList{"#1 mlp fp16 b32", "#2 mlp fp16 b64", "#3 cnn fp16 b64"}));
  QCOMPARE(labels({"mlp b32", "mlp b32 again"}), (QStringList{"#1", "#2 again"}));
  QCOMPARE(labels({"same", "same"}), (QStringList{"#1", "#2"}));
  QCOMPARE(labels({"x a-very-long-difference-of-words y", "x short y"}, 10),
           (QStringList{"#1 a-very-lo…", "#2 short"}));
  QCOMPARE(labels({"only one run"}), (QStringList{"#1 “only one run”"}));
  QCOMPARE(labels({}), QStringList());
}

void CompareTest::compare_charts_name_float32_and_mixed_whole() {
  // What "float32 vs mixed" records, compared at the size the Compare tab has in a 1400x900
  // window: every legend, bar name and axis label whole (Qt cut run names to "#1 “fashion-...").
  std::int64_t f32 = 0;
  std::int64_t mixed = 0;
  {
    RunStore store = RunStore::open(db_);
    f32 = add_run(store, run_named("fashion-mlp float32 b32", Policy::float32, 5000),
                  finished(20, 0.18, 150000));
    mixed = add_run(store,
                    run_named("fashion-mlp mixed_bfloat16 b32", Policy::mixed_bfloat16, 6000),
                    finished(20, 0.23, 126000));
  }
  CompareView view(db_);
  QSignalSpy loaded(&view, &CompareView::curves_loaded);
  view.resize(950, 820);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  view.show_runs({f32, mixed});
  QVERIFY(loaded.wait(10000));
  QApplication::processEvents();
  const QStringList cut = testing::cut_short_chart_texts(view);
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join(QStringLiteral(" | "))));
}
