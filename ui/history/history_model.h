// The run history as a table model: one row per run in the store, newest first, runs only (their
// steps stay in the store until a comparison or an export asks for them).
//
// The model reads and edits through a RunStore connection that its owner opens on the GUI thread
// (the recording writer has its own; WAL keeps them apart). Inline edits of the Name column go
// through the undo stack when one is set, so that Ctrl+Z restores them like any other edit.
#pragma once

#include <QAbstractTableModel>
#include <QList>
#include <QString>
#include <QStringList>
#include <QVariant>
#include <cstdint>
#include <vector>

#include "app/store/run_record.h"

class QUndoStack;

namespace mixlab::store {
class RunStore;
}

namespace mixlab::ui {

class HistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Id,
    Name,
    Status,
    Created,
    Model,
    Precision,
    LossScaling,
    Batch,
    Device,
    MedianStepMs,
    P95StepMs,
    SamplesPerS,
    TestAccuracy,
    Skipped,
    Tags,
    Note,
    Count
  };
  enum class Role {
    RunId = Qt::UserRole + 1,  // qint64
    SortValue,  // qint64 or double (NaN: not measured) for numbers, QString otherwise
    Status,     // QString: "finished", "failed"...
    Precision,  // QString: "float32", "mixed_float16"...
    Model,      // QString: the model's name
  };

  explicit HistoryModel(QObject* parent = nullptr);
  ~HistoryModel() override;

  // The connection to read and edit through (not owned); nullptr empties the model.
  void set_store(store::RunStore* store);
  store::RunStore* store() const { return store_; }
  // Inline edits push their command here (not owned); without one they write at once.
  void set_undo_stack(QUndoStack* stack) { undo_stack_ = stack; }

  // Re-reads the runs (not their steps). Rows of runs that are still there keep their
  // persistent indexes, so the selection and the current row survive a reload.
  void reload();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

  // The run on a row, or nullptr; the row of a run, or -1.
  const store::RunRecord* record(int row) const;
  const store::RunRecord* find(qint64 run_id) const;
  int row_of(qint64 run_id) const;
  // The distinct model names, sorted (for the model filter).
  QStringList model_names() const;

  // Writes one editable field of a run to the store: Name (QString), Tags (QStringList, the
  // run's whole tag set afterwards) or Note (QString), then re-reads that run. Emits error()
  // and returns false when the store refuses. The undo commands call this.
  bool write_field(qint64 run_id, Column column, const QVariant& value);
  // The current value of an editable field, in write_field's form.
  QVariant field(qint64 run_id, Column column) const;

 signals:
  void error(const QString& message);

 private:
  void reset_to(std::vector<store::RunRecord> runs);
  void refresh_run(qint64 run_id);

  store::RunStore* store_ = nullptr;
  QUndoStack* undo_stack_ = nullptr;
  std::vector<store::RunRecord> runs_;  // in the store's order: newest first
};

}  // namespace mixlab::ui
