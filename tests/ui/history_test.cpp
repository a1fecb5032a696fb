// The run history view against a real run store in a temporary folder: rows and columns,
// numeric sorting, filters, edits and their undo, deletion, and CSV export byte for byte (the
// comparison's tests: compare_test.cpp).
#include "tests/ui/history_fixture.h"

using namespace mixlab;
using namespace mixlab::ui;
using namespace mixlab::ui::history_testing;

class HistoryTest : public QObject, public HistoryRuns {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();

  void model_rows_and_columns_match_the_store();
  void model_formats_and_colours();
  void damaged_run_is_listed_and_marked();
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

};

void HistoryTest::initTestCase() {
  QCoreApplication::setOrganizationName(QStringLiteral("MixLab tests"));
  QCoreApplication::setApplicationName(QStringLiteral("history_test"));
}

void HistoryTest::init() {
  record_runs();
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
  // A running run's last heartbeat (issue 26: how a run of another host is known to live).
  const std::int64_t beat_ms = RunStore::open(db_).run(running_).heartbeat_at_ms;
  QVERIFY(beat_ms > 0);
  QVERIFY(cell(running_, HistoryModel::Status, Qt::ToolTipRole)
              .toString()
              .contains("last heartbeat " + QString::fromStdString(store::format_utc(beat_ms))));
  QVERIFY(model.flags(model.index(0, HistoryModel::Name)) & Qt::ItemIsEditable);
  QVERIFY(!(model.flags(model.index(0, HistoryModel::Note)) & Qt::ItemIsEditable));
  QCOMPARE(model.model_names(), (QStringList{"cifar-cnn", "fashion-mlp"}));
}

// Issue 25: one row made bad by hand (a precision MixLab does not know) must not empty the
// History tab: the other runs are shown, and the damaged one marked, saying why.
void HistoryTest::damaged_run_is_listed_and_marked() {
  {
    RunStore store = RunStore::open(db_);
    store.connection().exec("UPDATE runs SET precision = 'evil' WHERE id = " +
                            std::to_string(plain_));
  }
  HistoryView view(db_);
  QCOMPARE(view.table()->model()->rowCount(), 5);
  RunStore store = RunStore::open(db_);
  HistoryModel model;
  QSignalSpy errors(&model, &HistoryModel::error);
  model.set_store(&store);
  QCOMPARE(errors.count(), 0);
  QCOMPARE(ids_in_order(model), (QList<qint64>{running_, half_, failed_, plain_, fast_}));
  const auto cell = [&](std::int64_t id, int column, int role = Qt::DisplayRole) {
    return model.index(model.row_of(id), column).data(role);
  };
  QCOMPARE(cell(plain_, HistoryModel::Status).toString(), QStringLiteral("damaged"));
  const QString tip = cell(plain_, HistoryModel::Status, Qt::ToolTipRole).toString();
  QVERIFY2(tip.contains(QStringLiteral("precision")) && tip.contains(QStringLiteral("'evil'")),
           qPrintable(tip));
  QVERIFY(cell(plain_, HistoryModel::Name, Qt::ToolTipRole).toString().contains("'evil'"));
  const QColor red = cell(plain_, HistoryModel::Status, Qt::ForegroundRole).value<QBrush>().color();
  QVERIFY(red.red() > 150 && red.green() < 100);
  QCOMPARE(cell(plain_, HistoryModel::Name).toString(), QStringLiteral("plain newline"));
  QCOMPARE(cell(fast_, HistoryModel::Status).toString(), QStringLiteral("finished"));
  QCOMPARE(cell(fast_, HistoryModel::Precision).toString(), QStringLiteral("mixed_float16"));
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

QTEST_MAIN(HistoryTest)
#include "history_test.moc"
