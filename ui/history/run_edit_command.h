// One undoable edit of the run history: a new name, tag set or note for one or more runs. Every
// edit the history view makes goes through QUndoStack::push with one of these.
#pragma once

#include <QList>
#include <QPointer>
#include <QUndoCommand>
#include <QVariant>
#include <vector>

#include "ui/history/history_model.h"

namespace mixlab::ui {

class RunEditCommand : public QUndoCommand {
 public:
  struct Change {
    qint64 run_id = 0;
    QVariant before;  // in HistoryModel::write_field's form
    QVariant after;
  };

  // `column` is HistoryModel::Name, Tags or Note.
  RunEditCommand(HistoryModel* model, HistoryModel::Column column, std::vector<Change> changes,
                 const QString& text);

  void redo() override;
  void undo() override;

  QList<qint64> run_ids() const;

 private:
  // Writes `value_of` of each change; stops at the first the store refuses.
  bool apply(QVariant Change::*value_of);

  QPointer<HistoryModel> model_;
  HistoryModel::Column column_;
  std::vector<Change> changes_;
};

}  // namespace mixlab::ui
