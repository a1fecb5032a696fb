// A recorded run's details under the history table: the current run's figures and its
// per-layer times, named as in the editor; the per-layer CSV export from the history menu.
#include <QItemSelectionModel>
#include <QTableView>
#include <QTest>
#include <sstream>

#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "tests/store/store_test_util.h"
#include "ui/charts/chart.h"
#include "ui/history/history_model.h"
#include "ui/history/history_view.h"
#include "ui/history/run_details.h"
#include "ui/run/overflow_table.h"

namespace mixlab::ui {

using store::RunStore;

class HistoryDetailsTest : public QObject {
  Q_OBJECT

 private slots:
  void the_current_runs_layer_times_are_shown_and_exported() {
    store::testing::TempDir dir;
    const auto db = dir.path() / "runs.sqlite";
    std::int64_t timed = 0, plain = 0;
    {
      RunStore store = RunStore::open(db);
      store::RunRecord r = store::testing::sample_run("timed");
      r.model_json = store::testing::kTinyModel;
      r.config.warmup_steps = 0;
      timed = store.insert_run(r);
      for (int step = 0; step < 3; ++step) {
        const std::vector<LayerTiming> layers = {{0, 0.5, 0.0}, {1, 2.0 + step, 4.0 + step}};
        store.insert_layer_times(timed, step, layers);
      }
      // Two skipped steps whose Dense gradients overflowed (issue 29).
      const std::vector<LayerOverflow> step0 = {{1, 36, 36}}, step5 = {{1, 4, 36}};
      store.insert_layer_overflows(timed, 0, step0);
      store.insert_layer_overflows(timed, 5, step5);
      plain = store.insert_run(store::testing::sample_run("plain"));
    }
    HistoryView view(db);
    view.resize(1000, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    RunDetails* details = view.details();
    QCOMPARE(details->run_id(), 0);

    const auto make_current = [&](std::int64_t id) {
      for (int row = 0; row < view.table()->model()->rowCount(); ++row) {
        const QModelIndex index = view.table()->model()->index(row, 0);
        if (index.data(int(HistoryModel::Role::RunId)).toLongLong() == id) {
          view.table()->selectionModel()->setCurrentIndex(
              index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
          return true;
        }
      }
      return false;
    };
    QVERIFY(make_current(timed));
    QCOMPARE(details->run_id(), timed);
    const auto& rows = details->layer_chart()->rows();
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[1].layer, QStringLiteral("1 Dense 4, softmax"));
    QCOMPARE(rows[1].forward_ms, 3.0);  // median of 2, 3, 4
    QCOMPARE(rows[1].backward_ms, 5.0);
    QVERIFY2(details->summary_text().contains(QStringLiteral("timed")),
             qPrintable(details->summary_text()));
    OverflowTable* overflows = details->overflow_table();
    QVERIFY(overflows->isVisible());
    QCOMPARE(overflows->rowCount(), 1);
    QCOMPARE(overflows->item(0, OverflowTable::kLayer)->text(),
             QStringLiteral("1 Dense 4, softmax"));
    QCOMPARE(overflows->item(0, OverflowTable::kSteps)->data(Qt::UserRole).toLongLong(), 2);
    QCOMPARE(overflows->item(0, OverflowTable::kNonfinite)->data(Qt::UserRole).toLongLong(), 40);
    QCOMPARE(overflows->item(0, OverflowTable::kLastStep)->text(), QStringLiteral("6"));

    QVERIFY(make_current(plain));
    QCOMPARE(details->run_id(), plain);
    QCOMPARE(details->layer_chart()->row_count(), std::size_t(0));
    QVERIFY(details->overflow_table()->isHidden());

    // The history's export is the store's CSV, byte for byte.
    const auto file = dir.path() / "layers.csv";
    QVERIFY(view.export_csv(file, HistoryView::CsvKind::layers, {timed, plain}));
    RunStore store = RunStore::open(db, store::StoreOptions{.read_only = true});
    std::ostringstream want;
    const std::vector<std::int64_t> ids{timed, plain};
    store::write_layers_csv(want, store, ids);
    QCOMPARE(store::testing::read_bytes(file), want.str());
    QVERIFY(want.str().find("\"1 Dense 4, softmax\"") != std::string::npos);
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::HistoryDetailsTest)
#include "history_details_test.moc"
