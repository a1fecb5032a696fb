// The run store both history view tests start from (history_test.cpp, compare_test.cpp): five
// recorded runs of different statuses, precisions and figures, in a temporary folder.
#pragma once

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

namespace mixlab::ui::history_testing {

using store::RunRecord;
using store::RunStore;
using store::testing::sample_environment;
using store::testing::sample_run;
using store::testing::sample_step;
using store::testing::TempDir;


struct Figures {
  RunStatus status = RunStatus::finished;
  std::string message;
  double median_ms = kNotMeasured;
  double samples_per_s = kNotMeasured;
  double test_accuracy = kNotMeasured;
  int steps = 0;
};

inline Figures finished(int steps, double median_ms, double samples_per_s = 1000.0,
                 double test_accuracy = kNotMeasured) {
  Figures f;
  f.steps = steps;
  f.median_ms = median_ms;
  f.samples_per_s = samples_per_s;
  f.test_accuracy = test_accuracy;
  return f;
}

// A run without figures: still running, or failed before measuring.
inline Figures ended(int steps, RunStatus status, std::string message = {}) {
  Figures f;
  f.steps = steps;
  f.status = status;
  f.message = std::move(message);
  return f;
}

// Records a run as the recorder would: inserted, started, its steps, then finished (unless
// it is still running).
inline std::int64_t add_run(RunStore& store, RunRecord record, const Figures& f) {
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
inline RunRecord run_named(const std::string& name, Policy precision, std::int64_t created_offset_ms) {
  RunRecord r = sample_run(name);
  r.config.precision = precision;
  r.created_at_ms += created_offset_ms;
  r.tags.clear();
  r.note.clear();
  return r;
}

inline QList<qint64> ids_in_order(const QAbstractItemModel& model) {
  QList<qint64> ids;
  for (int row = 0; row < model.rowCount(); ++row)
    ids.append(model.index(row, 0).data(int(HistoryModel::Role::RunId)).toLongLong());
  return ids;
}

inline std::string csv_of(const std::function<void(std::ostream&)>& write) {
  std::ostringstream out;
  write(out);
  return out.str();
}


// The five runs, recorded afresh for each test.
struct HistoryRuns {
  std::unique_ptr<TempDir> dir_;
  std::filesystem::path db_;
  std::int64_t fast_ = 0;     // mixed_float16, 2.5 ms, tags, a note
  std::int64_t plain_ = 0;    // float32, 10 ms, a newline in its name
  std::int64_t failed_ = 0;   // mixed_bfloat16, another model, failed, no figures
  std::int64_t half_ = 0;     // float32, interrupted, 4 ms
  std::int64_t running_ = 0;  // float32, still running

  void record_runs() {
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
};

}  // namespace mixlab::ui::history_testing
