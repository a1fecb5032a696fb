// The run history and comparison views against a real run store in a temporary folder: rows and
// columns, numeric sorting, filters, edits and their undo, deletion, CSV export byte for byte,
// and the comparison's curves, speed ratios, differing settings and chart export.
#include <QAction>
#include <QBrush>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTest>
#include <QUndoStack>
#include <cmath>
#include <sstream>

#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"
#include "ui/charts/chart.h"
#include "ui/history/compare_view.h"
#include "ui/history/history_filter.h"
#include "ui/history/history_model.h"
#include "ui/history/history_view.h"
#include "ui/settings.h"

using namespace mixlab;
using namespace mixlab::ui;
using store::RunRecord;
using store::RunStore;
using store::testing::sample_environment;
using store::testing::sample_run;
using store::testing::sample_step;
using store::testing::TempDir;

namespace {

struct Figures {
  RunStatus status = RunStatus::finished;
  std::string message;
  double median_ms = kNotMeasured;
  double samples_per_s = kNotMeasured;
  double test_accuracy = kNotMeasured;
  int steps = 0;
};

Figures finished(int steps, double median_ms, double samples_per_s = 1000.0,
                 double test_accuracy = kNotMeasured) {
  Figures f;
  f.steps = steps;
  f.median_ms = median_ms;
  f.samples_per_s = samples_per_s;
  f.test_accuracy = test_accuracy;
  return f;
}

// A run without figures: still running, or failed before measuring.
Figures ended(int steps, RunStatus status, std::string message = {}) {
  Figures f;
  f.steps = steps;
  f.status = status;
  f.message = std::move(message);
  return f;
}

// Records a run as the recorder would: inserted, started, its steps, then finished (unless
// it is still running).
std::int64_t add_run(RunStore& store, RunRecord record, const Figures& f) {
  const std::int64_t planned = record.total_steps;
  const std::int64_t id = store.insert_run(std::move(record));
  store.mark_started(id, 1000, sample_environment(), planned, 1 << 20);
  std::vector<StepMetrics> steps;
  for (int i = 0; i < f.steps; ++i) steps.push_back(sample_step(i));
  store.insert_steps(id, steps);
  if (f.status == RunStatus::running) return id;
  RunSummary s;
  s.status = f.status;
  s.message = f.message;
  s.steps = f.steps;
  s.median_step_ms = f.median_ms;
  s.p5_step_ms = f.median_ms * 0.8;
  s.p95_step_ms = f.median_ms * 1.5;
  s.samples_per_s = f.samples_per_s;
  s.test_accuracy = f.test_accuracy;
  store.finish_run(id, s, 2000);
  return id;
}

// sample_run's settings, without its tags and note.
RunRecord run_named(const std::string& name, Policy precision, std::int64_t created_offset_ms) {
  RunRecord r = sample_run(name);
  r.config.precision = precision;
  r.created_at_ms += created_offset_ms;
  r.tags.clear();
  r.note.clear();
  return r;
}

QList<qint64> ids_in_order(const QAbstractItemModel& model) {
  QList<qint64> ids;
  for (int row = 0; row < model.rowCount(); ++row)
    ids.append(model.index(row, 0).data(int(HistoryModel::Role::RunId)).toLongLong());
  return ids;
}

std::string csv_of(const std::function<void(std::ostream&)>& write) {
  std::ostringstream out;
  write(out);
  return out.str();
}

}  // namespace

class HistoryTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();

  void model_rows_and_columns_match_the_store();
  void model_formats_and_colours();
  void sorting_by_median_is_numeric();
  void filters();
  void filters_are_remembered();
  void reload_keeps_the_selection();
  void rename_through_set_data_is_undoable();
  void rename_through_the_action();
  void tags_and_notes();
  void tags_and_notes_through_the_actions();
  void delete_asks_and_removes();
  void editing_a_run_deleted_elsewhere_reports_it();
  void compare_requested_with_the_selection();
  void csv_export_equals_the_store();
  void csv_export_through_the_menu();
  void compare_curves();
  void compare_speed_ratios();
  void compare_differing_settings();
  void compare_lists_every_run_setting_that_differs();
  void compare_chart_export();

 private:
  std::unique_ptr<TempDir> dir_;
  std::filesystem::path db_;
  std::int64_t fast_ = 0;     // mixed_float16, 2.5 ms, tags, a note
  std::int64_t plain_ = 0;    // float32, 10 ms, a newline in its name
  std::int64_t failed_ = 0;   // mixed_bfloat16, another model, failed, no figures
  std::int64_t half_ = 0;     // float32, interrupted, 4 ms
  std::int64_t running_ = 0;  // float32, still running
};

void HistoryTest::initTestCase() {
  QCoreApplication::setOrganizationName(QStringLiteral("MixLab tests"));
  QCoreApplication::setApplicationName(QStringLiteral("history_test"));
}

void HistoryTest::init() {
  for (const auto* key : {&settings::kHistoryFilterText, &settings::kHistoryFilterStatus,
                          &settings::kHistoryFilterPrecision, &settings::kHistoryFilterModel})
    key->reset();
  settings::kHistoryHeaderState.reset();
  settings::kCompareByTime.reset();

  dir_ = std::make_unique<TempDir>();
  db_ = *dir_ / "runs.sqlite";
  RunStore store = RunStore::open(db_);
  fast_ = add_run(store, sample_run(), finished(30, 2.5, 38400.4, 0.875));
  plain_ =
      add_run(store, run_named("plain\nnewline", Policy::float32, 1000), finished(25, 10.0, 9600));
  RunRecord failed = run_named("cnn, \"big\"", Policy::mixed_bfloat16, 2000);
  failed.model_name = "cifar-cnn";
  failed.note = "see the log";
  failed_ = add_run(store, failed, ended(5, RunStatus::failed, "out of memory: 12 GiB"));
  half_ = add_run(store, run_named("half done", Policy::float32, 3000), finished(12, 4.0, 24000));
  store.connection().exec("UPDATE runs SET status = 'interrupted', message = 'killed' WHERE id = " +
                          std::to_string(half_));
  running_ = add_run(store, run_named("live", Policy::float32, 4000), ended(3, RunStatus::running));
}

void HistoryTest::cleanup() {
  dir_.reset();
}

// --- the model ------------------------------------------------------------------------------

void HistoryTest::model_rows_and_columns_match_the_store() {
  RunStore store = RunStore::open(db_);
  HistoryModel model;
  model.set_store(&store);
  const std::vector<RunRecord> runs = store.list_runs();
  QCOMPARE(model.rowCount(), int(runs.size()));
  QCOMPARE(model.columnCount(), int(HistoryModel::Count));
  for (int row = 0; row < model.rowCount(); ++row) {
    const RunRecord& r = runs[std::size_t(row)];
    const auto cell = [&](int column, int role = Qt::DisplayRole) {
      return model.index(row, column).data(role);
    };
    QCOMPARE(cell(0, int(HistoryModel::Role::RunId)).toLongLong(), r.id);
    QCOMPARE(cell(HistoryModel::Id).toString(), QString::number(r.id));
    QCOMPARE(cell(HistoryModel::Name, Qt::EditRole).toString(), QString::fromStdString(r.name));
    QCOMPARE(cell(HistoryModel::Status).toString(),
             QString::fromUtf8(store::to_string(r.status).data()));
    QCOMPARE(cell(HistoryModel::Model).toString(), QString::fromStdString(r.model_name));
    QCOMPARE(cell(HistoryModel::Precision).toString(),
             QString::fromUtf8(to_string(r.config.precision).data()));
    QCOMPARE(cell(HistoryModel::LossScaling).toString(),
             QString::fromStdString(r.config.loss_scale.to_string()));
    QCOMPARE(cell(HistoryModel::Batch).toString(), QString::number(r.config.batch_size));
    QCOMPARE(cell(0, int(HistoryModel::Role::Model)).toString(),
             QString::fromStdString(r.model_name));
  }
  // Newest first, as the store lists them.
  QCOMPARE(ids_in_order(model), (QList<qint64>{running_, half_, failed_, plain_, fast_}));
}

void HistoryTest::model_formats_and_colours() {
  RunStore store = RunStore::open(db_);
  HistoryModel model;
  model.set_store(&store);
  const auto cell = [&](std::int64_t id, int column, int role = Qt::DisplayRole) {
    return model.index(model.row_of(id), column).data(role);
  };
  QCOMPARE(cell(plain_, HistoryModel::Name).toString(), QStringLiteral("plain newline"));
  QCOMPARE(cell(fast_, HistoryModel::MedianStepMs).toString(), QStringLiteral("2.500"));
  QCOMPARE(cell(fast_, HistoryModel::SamplesPerS).toString(), QStringLiteral("38,400"));
  QCOMPARE(cell(fast_, HistoryModel::TestAccuracy).toString(), QStringLiteral("87.50%"));
  QCOMPARE(cell(failed_, HistoryModel::MedianStepMs).toString(), QStringLiteral("–"));
  QCOMPARE(cell(fast_, HistoryModel::Tags).toString(), QStringLiteral("a,b; baseline"));
  QVERIFY(cell(fast_, HistoryModel::MedianStepMs, Qt::TextAlignmentRole).value<Qt::Alignment>() &
          Qt::AlignRight);
  QVERIFY(cell(fast_, HistoryModel::Name, Qt::TextAlignmentRole).value<Qt::Alignment>() &
          Qt::AlignLeft);
  QVERIFY(!cell(fast_, HistoryModel::Status, Qt::ForegroundRole).isValid());
  const QColor red =
      cell(failed_, HistoryModel::Status, Qt::ForegroundRole).value<QBrush>().color();
  QVERIFY(red.red() > 150 && red.green() < 100);
  QVERIFY(cell(half_, HistoryModel::Status, Qt::ForegroundRole).isValid());
  QVERIFY(
      cell(failed_, HistoryModel::Status, Qt::ToolTipRole).toString().contains("out of memory"));
  QVERIFY(model.flags(model.index(0, HistoryModel::Name)) & Qt::ItemIsEditable);
  QVERIFY(!(model.flags(model.index(0, HistoryModel::Note)) & Qt::ItemIsEditable));
  QCOMPARE(model.model_names(), (QStringList{"cifar-cnn", "fashion-mlp"}));
}

void HistoryTest::sorting_by_median_is_numeric() {
  HistoryView view(db_);
  view.table()->sortByColumn(HistoryModel::MedianStepMs, Qt::AscendingOrder);
  // 2.5 < 4 < 10 as numbers ("10.000" < "2.500" as text); runs without a figure last.
  const QList<qint64> ids = ids_in_order(*view.table()->model());
  QCOMPARE(ids.mid(0, 3), (QList<qint64>{fast_, half_, plain_}));
  QCOMPARE(QSet<qint64>(ids.begin() + 3, ids.end()), (QSet<qint64>{failed_, running_}));
  view.table()->sortByColumn(HistoryModel::SamplesPerS, Qt::DescendingOrder);
  const QList<qint64> by_rate = ids_in_order(*view.table()->model());
  QCOMPARE(by_rate.mid(0, 3), (QList<qint64>{fast_, half_, plain_}));
  QCOMPARE(QSet<qint64>(by_rate.begin() + 3, by_rate.end()), (QSet<qint64>{failed_, running_}));
}

void HistoryTest::filters() {
  HistoryView view(db_);
  HistoryFilter* filter = view.filter();
  const auto shown = [&] {
    QList<qint64> ids = ids_in_order(*filter);
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  QCOMPARE(filter->rowCount(), 5);
  filter->set_text("FAST");  // the name, any case
  QCOMPARE(shown(), QList<qint64>{fast_});
  filter->set_text("baseline");  // a tag
  QCOMPARE(shown(), QList<qint64>{fast_});
  filter->set_text("cifar");  // the model
  QCOMPARE(shown(), QList<qint64>{failed_});
  filter->set_text("comma two");  // the note (sample_run's), every word
  QCOMPARE(shown(), QList<qint64>{fast_});
  filter->set_text("the log");
  QCOMPARE(shown(), QList<qint64>{failed_});
  filter->set_text("");

  // The combos drive the filter.
  auto* status = view.findChild<QComboBox*>("history_status_filter");
  auto* precision = view.findChild<QComboBox*>("history_precision_filter");
  auto* model = view.findChild<QComboBox*>("history_model_filter");
  QVERIFY(status && precision && model);
  status->setCurrentIndex(status->findData(QStringLiteral("failed")));
  QCOMPARE(shown(), QList<qint64>{failed_});
  status->setCurrentIndex(status->findData(QStringLiteral("interrupted")));
  QCOMPARE(shown(), QList<qint64>{half_});
  status->setCurrentIndex(0);
  precision->setCurrentIndex(precision->findData(QStringLiteral("float32")));
  QCOMPARE(shown(), (QList<qint64>{plain_, half_, running_}));
  precision->setCurrentIndex(0);
  QCOMPARE(model->findData(QStringLiteral("cifar-cnn")) > 0, true);
  model->setCurrentIndex(model->findData(QStringLiteral("fashion-mlp")));
  QCOMPARE(shown(), (QList<qint64>{fast_, plain_, half_, running_}));
  view.findChild<QLineEdit*>("history_search")->setText("half");
  QCOMPARE(shown(), QList<qint64>{half_});
}

void HistoryTest::filters_are_remembered() {
  {
    HistoryView view(db_);
    view.findChild<QLineEdit*>("history_search")->setText("live");
    auto* precision = view.findChild<QComboBox*>("history_precision_filter");
    precision->setCurrentIndex(precision->findData(QStringLiteral("float32")));
  }
  HistoryView view(db_);
  QCOMPARE(view.filter()->text(), QStringLiteral("live"));
  QCOMPARE(view.filter()->precision(), QStringLiteral("float32"));
  QCOMPARE(ids_in_order(*view.filter()), QList<qint64>{running_});
}

void HistoryTest::reload_keeps_the_selection() {
  HistoryView view(db_);
  view.select_runs({plain_, half_});
  QCOMPARE(view.selected_run_ids(), (QList<qint64>{half_, plain_}));  // table order
  {
    // Another connection (the recorder's) adds a run and deletes one.
    RunStore other = RunStore::open(db_);
    add_run(other, run_named("newer", Policy::float32, 9000), finished(2, 1.0));
    other.delete_run(fast_);
  }
  view.reload();
  QCOMPARE(view.model()->rowCount(), 5);
  QCOMPARE(view.model()->row_of(fast_), -1);
  QCOMPARE(view.selected_run_ids(), (QList<qint64>{half_, plain_}));
}

// --- edits ----------------------------------------------------------------------------------

void HistoryTest::rename_through_set_data_is_undoable() {
  HistoryView view(db_);
  HistoryModel* model = view.model();
  const QModelIndex name = model->index(model->row_of(plain_), HistoryModel::Name);
  QVERIFY(model->setData(name, QStringLiteral("renamed, \"quoted\"")));
  RunStore store = RunStore::open(db_);
  QCOMPARE(store.run(plain_).name, std::string("renamed, \"quoted\""));
  QCOMPARE(name.data().toString(), QStringLiteral("renamed, \"quoted\""));
  QVERIFY(!model->setData(name, QStringLiteral("  ")));  // no empty names
  QCOMPARE(view.undo_stack()->count(), 1);
  view.undo_stack()->undo();
  QCOMPARE(store.run(plain_).name, std::string("plain\nnewline"));
  QCOMPARE(name.data(Qt::EditRole).toString(), QStringLiteral("plain\nnewline"));
  view.undo_stack()->redo();
  QCOMPARE(store.run(plain_).name, std::string("renamed, \"quoted\""));
  QVERIFY(view.rename_run(plain_, QStringLiteral("third")));
  QCOMPARE(store.run(plain_).name, std::string("third"));
}

void HistoryTest::rename_through_the_action() {
  HistoryView view(db_);
  view.resize(1000, 600);
  view.show();
  view.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&view));
  view.table()->setFocus();
  view.select_runs({fast_});
  QAction* rename = view.action(HistoryView::Action::rename);
  QVERIFY(rename->isEnabled());
  QCOMPARE(rename->shortcut(), QKeySequence(Qt::Key_F2));
  QVERIFY(!rename->toolTip().isEmpty());
  rename->trigger();
  auto* editor = view.table()->viewport()->findChild<QLineEdit*>();
  QVERIFY(editor != nullptr);
  editor->setText(QStringLiteral("from the action"));
  QTest::keyClick(editor, Qt::Key_Return);  // the delegate commits on a queued call
  RunStore store = RunStore::open(db_);
  QTRY_COMPARE(store.run(fast_).name, std::string("from the action"));
  // Ctrl+Z in the table undoes it.
  QTRY_VERIFY(view.table()->hasFocus());
  QTest::keyClick(view.table(), Qt::Key_Z, Qt::ControlModifier);
  QCOMPARE(store.run(fast_).name, sample_run().name);
}

void HistoryTest::tags_and_notes() {
  HistoryView view(db_);
  RunStore store = RunStore::open(db_);
  QVERIFY(view.edit_tags({fast_, plain_}, {"x", "a;b?"}, {"baseline"}));
  QCOMPARE(store.run(fast_).tags, (std::vector<std::string>{"a,b", "a;b?", "x"}));
  QCOMPARE(store.run(plain_).tags, (std::vector<std::string>{"a;b?", "x"}));
  QCOMPARE(view.model()->field(plain_, HistoryModel::Tags).toStringList(),
           (QStringList{"a;b?", "x"}));
  QVERIFY(view.set_note({plain_, half_}, QStringLiteral("note, \"2\"\nline")));
  QCOMPARE(store.run(half_).note, std::string("note, \"2\"\nline"));
  QCOMPARE(view.undo_stack()->count(), 2);
  view.undo_stack()->undo();
  QCOMPARE(store.run(half_).note, std::string());
  QCOMPARE(store.run(plain_).note, std::string());
  view.undo_stack()->undo();
  QCOMPARE(store.run(fast_).tags, (std::vector<std::string>{"a,b", "baseline"}));
  QCOMPARE(store.run(plain_).tags, std::vector<std::string>{});
}

void HistoryTest::tags_and_notes_through_the_actions() {
  HistoryView view(db_);
  QStringList asked;
  Prompts prompts;
  QString answer;
  prompts.text = [&](const QString&, const QString& label, const QString& text, bool) {
    asked.append(text);
    Q_UNUSED(label);
    return std::optional<QString>(answer);
  };
  view.set_prompts(prompts);
  view.select_runs({fast_});
  answer = QStringLiteral("a,b; new tag ;x");
  view.action(HistoryView::Action::tag)->trigger();
  QCOMPARE(asked.last(), QStringLiteral("a,b; baseline"));  // the tags it has
  RunStore store = RunStore::open(db_);
  QCOMPARE(store.run(fast_).tags, (std::vector<std::string>{"a,b", "new tag", "x"}));
  answer = QStringLiteral("written\nin the dialog");
  view.select_runs({fast_, plain_});
  view.action(HistoryView::Action::note)->trigger();
  QCOMPARE(asked.last(), QString());  // their notes differ
  QCOMPARE(store.run(plain_).note, std::string("written\nin the dialog"));
  QCOMPARE(store.run(fast_).note, std::string("written\nin the dialog"));
}

void HistoryTest::delete_asks_and_removes() {
  HistoryView view(db_);
  QString question;
  bool yes = false;
  Prompts prompts;
  prompts.confirm = [&](const QString&, const QString& text) {
    question = text;
    return yes;
  };
  view.set_prompts(prompts);
  view.select_runs({plain_, failed_});
  QAction* remove = view.action(HistoryView::Action::remove);
  QCOMPARE(remove->shortcut(), QKeySequence(QKeySequence::Delete));
  remove->trigger();  // declined
  QVERIFY(question.contains(QStringLiteral("#%1").arg(plain_)));
  QVERIFY(question.contains(QStringLiteral("cnn, \"big\"")));
  QVERIFY(question.contains(QStringLiteral("plain newline")));
  QCOMPARE(view.model()->rowCount(), 5);
  QVERIFY(view.rename_run(plain_, QStringLiteral("edited first")));
  QCOMPARE(view.undo_stack()->count(), 1);
  yes = true;
  remove->trigger();
  QCOMPARE(view.undo_stack()->count(), 0);  // its edits cannot be undone any more
  RunStore store = RunStore::open(db_);
  QVERIFY(!store.find_run(plain_));
  QVERIFY(!store.find_run(failed_));
  QCOMPARE(store.step_count(plain_), 0);
  QCOMPARE(view.model()->rowCount(), 3);
  QCOMPARE(view.model()->row_of(plain_), -1);
  QVERIFY(view.selected_run_ids().isEmpty());
}

void HistoryTest::editing_a_run_deleted_elsewhere_reports_it() {
  HistoryView view(db_);
  QSignalSpy errors(&view, &HistoryView::error);
  RunStore::open(db_).delete_run(fast_);  // another window or mixlab-cli
  QVERIFY(!view.rename_run(fast_, QStringLiteral("too late")));
  QCOMPARE(errors.count(), 1);
  QCOMPARE(view.undo_stack()->count(), 0);    // nothing to undo
  QCOMPARE(view.model()->row_of(fast_), -1);  // and the row is gone
}

void HistoryTest::compare_requested_with_the_selection() {
  HistoryView view(db_);
  QSignalSpy spy(&view, &HistoryView::compare_requested);
  QAction* compare = view.action(HistoryView::Action::compare);
  view.select_runs({fast_});
  QVERIFY(!compare->isEnabled());
  view.select_runs({fast_, plain_, half_});
  QVERIFY(compare->isEnabled());
  QCOMPARE(compare->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_Return));
  compare->trigger();
  QCOMPARE(spy.count(), 1);
  QCOMPARE(spy.at(0).at(0).value<QList<qint64>>(), (QList<qint64>{half_, plain_, fast_}));
}

// --- CSV ------------------------------------------------------------------------------------

void HistoryTest::csv_export_equals_the_store() {
  HistoryView view(db_);
  RunStore store = RunStore::open(db_);
  const std::vector<std::int64_t> ids = {fast_, plain_, failed_};
  const QList<qint64> qids(ids.begin(), ids.end());
  const auto file = *dir_ / "out.csv";
  using Kind = HistoryView::CsvKind;

  QVERIFY(view.export_csv(file, Kind::steps, {fast_}));
  QCOMPARE(store::testing::read_bytes(file),
           csv_of([&](std::ostream& o) { store::write_steps_csv(o, store, fast_); }));
  QVERIFY(view.export_csv(file, Kind::long_steps, qids));
  QCOMPARE(store::testing::read_bytes(file),
           csv_of([&](std::ostream& o) { store::write_long_steps_csv(o, store, ids); }));
  QVERIFY(view.export_csv(file, Kind::summary, qids));
  const std::string summary =
      csv_of([&](std::ostream& o) { store::write_summary_csv(o, store, ids); });
  QCOMPARE(store::testing::read_bytes(file), summary);
  QVERIFY(summary.find("\"plain\nnewline\"") != std::string::npos);  // the quoting is there
  QVERIFY(!std::filesystem::exists(*dir_ / "out.csv.tmp"));

  // A failed export keeps the old file and reports why.
  QSignalSpy errors(&view, &HistoryView::error);
  QVERIFY(!view.export_csv(file, Kind::summary, {fast_, 999}));
  QCOMPARE(errors.count(), 1);
  QCOMPARE(store::testing::read_bytes(file), summary);
  QVERIFY(!view.export_csv(*dir_ / "missing" / "x.csv", Kind::summary, {fast_}));
}

void HistoryTest::csv_export_through_the_menu() {
  HistoryView view(db_);
  RunStore store = RunStore::open(db_);
  const auto base = *dir_ / "menu";
  Prompts prompts;
  prompts.save_file = [&](const QString&, const QString& suggested, const QString& filters) {
    [&] { QVERIFY(filters.contains("*.csv")); }();
    return QString::fromStdString(base.string()) + QStringLiteral("-") + suggested;
  };
  view.set_prompts(prompts);
  view.select_runs({plain_});
  QVERIFY(!view.action(HistoryView::Action::export_long)->text().isEmpty());
  view.action(HistoryView::Action::export_steps)->trigger();
  const auto steps_file = *dir_ / ("menu-run-" + std::to_string(plain_) + "-steps.csv");
  QCOMPARE(store::testing::read_bytes(steps_file),
           csv_of([&](std::ostream& o) { store::write_steps_csv(o, store, plain_); }));
  view.select_runs({plain_, fast_});
  QVERIFY(!view.action(HistoryView::Action::export_steps)->isEnabled());
  view.action(HistoryView::Action::export_long)->trigger();
  const std::vector<std::int64_t> ids = {plain_, fast_};  // table order: newer first
  QCOMPARE(store::testing::read_bytes(*dir_ / "menu-runs-steps.csv"),
           csv_of([&](std::ostream& o) { store::write_long_steps_csv(o, store, ids); }));
  view.action(HistoryView::Action::export_summary)->trigger();
  QCOMPARE(store::testing::read_bytes(*dir_ / "menu-runs-summary.csv"),
           csv_of([&](std::ostream& o) { store::write_summary_csv(o, store, ids); }));
}

// --- comparison -----------------------------------------------------------------------------

void HistoryTest::compare_curves() {
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

void HistoryTest::compare_speed_ratios() {
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

void HistoryTest::compare_differing_settings() {
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
void HistoryTest::compare_lists_every_run_setting_that_differs() {
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

void HistoryTest::compare_chart_export() {
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

QTEST_MAIN(HistoryTest)
#include "history_test.moc"
