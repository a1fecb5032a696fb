#include "ui/history/run_edit_command.h"

#include <utility>

namespace mixlab::ui {

RunEditCommand::RunEditCommand(HistoryModel* model, HistoryModel::Column column,
                               std::vector<Change> changes, const QString& text)
    : QUndoCommand(text), model_(model), column_(column), changes_(std::move(changes)) {}

void RunEditCommand::redo() {
  // A first redo the store refuses (the run was deleted by another process meanwhile) leaves
  // nothing to undo: QUndoStack::push drops an obsolete command. The model has reported why.
  if (!apply(&Change::after)) setObsolete(true);
}

void RunEditCommand::undo() {
  apply(&Change::before);
}

bool RunEditCommand::apply(QVariant Change::*value_of) {
  if (model_ == nullptr) return false;
  for (const Change& change : changes_) {
    if (!model_->write_field(change.run_id, column_, change.*value_of)) return false;
  }
  return true;
}

QList<qint64> RunEditCommand::run_ids() const {
  QList<qint64> ids;
  for (const Change& change : changes_) ids.append(change.run_id);
  return ids;
}

}  // namespace mixlab::ui
