// The run history panel: a filter bar over a sortable table of every recorded run, with the
// actions that rename, tag, annotate, delete, compare and export them.
//
// The view opens its own RunStore connection on the GUI thread (read-write, for the edits); the
// recording writer keeps its own, and SQLite's WAL mode lets both go on without waiting for each
// other. Every edit is an undo command on the view's QUndoStack; deleting is not (see
// delete_runs). The actions ask through Prompts, which tests replace; the methods they call
// after asking are public, so that tests and the main window can call them directly.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <filesystem>
#include <memory>
#include <utility>

#include "ui/history/prompts.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
class QUndoStack;

namespace mixlab::store {
class RunStore;
}

namespace mixlab::ui {

class HistoryFilter;
class HistoryModel;
class RunDetails;
class RunEditCommand;

class HistoryView : public QWidget {
  Q_OBJECT

 public:
  enum class CsvKind {
    steps,       // one run's steps (write_steps_csv)
    long_steps,  // several runs' steps, one row per run and step (write_long_steps_csv)
    summary,     // one row per run (write_summary_csv)
    layers,      // per-layer times, one row per run and layer (write_layers_csv)
  };
  enum class Action {
    rename,
    tag,
    note,
    remove,
    compare,
    export_steps,
    export_long,
    export_summary,
    export_layers,
    undo,
    redo
  };

  explicit HistoryView(std::filesystem::path db_path, QWidget* parent = nullptr);
  ~HistoryView() override;

  // Re-reads the runs from the store; the selection stays on the runs still there.
  void reload();
  // The selected runs' ids, top to bottom as the table shows them.
  QList<qint64> selected_run_ids() const;
  // Selects these runs (those the filter shows), the first one current.
  void select_runs(const QList<qint64>& run_ids);

  HistoryModel* model() { return model_; }
  HistoryFilter* filter() { return filter_; }
  QTableView* table() { return table_; }
  RunDetails* details() { return details_; }
  QUndoStack* undo_stack() { return undo_stack_; }
  QAction* action(Action which) const { return actions_[int(which)]; }
  void set_prompts(Prompts prompts) { prompts_ = std::move(prompts); }

  // What the actions do once they have their answer. Each edit is one undo command; each
  // returns false, and emits error(), when the store refuses.
  bool rename_run(qint64 run_id, const QString& name);
  bool edit_tags(const QList<qint64>& run_ids, const QStringList& add, const QStringList& remove);
  bool set_note(const QList<qint64>& run_ids, const QString& note);
  // Deletes the runs with their steps, without asking, and without undo: keeping a deleted
  // run's steps to bring them back would mean copying up to millions of rows aside on every
  // delete, so the Delete action asks for confirmation, naming the runs, instead.
  bool delete_runs(const QList<qint64>& run_ids);
  // Writes FILE.tmp, then renames it to `file`: the bytes of store::write_steps_csv (one run),
  // write_long_steps_csv or write_summary_csv.
  bool export_csv(const std::filesystem::path& file, CsvKind kind, const QList<qint64>& run_ids);

 signals:
  void compare_requested(const QList<qint64>& run_ids);
  void error(QString message);

 private:
  void build_actions();
  void build_layout();
  void restore_filters();
  void update_actions();
  void update_details();
  void update_model_choices();
  void update_count();
  bool open_store();
  void report(const QString& message);
  bool push_edit(RunEditCommand* command);

  void request_compare();
  void ask_rename();
  void ask_tags();
  void ask_note();
  void ask_delete();
  void ask_export(CsvKind kind);

  std::filesystem::path db_path_;
  std::unique_ptr<store::RunStore> store_;
  Prompts prompts_;

  HistoryModel* model_ = nullptr;
  HistoryFilter* filter_ = nullptr;
  QUndoStack* undo_stack_ = nullptr;
  QTableView* table_ = nullptr;
  RunDetails* details_ = nullptr;
  QLineEdit* search_ = nullptr;
  QComboBox* status_combo_ = nullptr;
  QComboBox* precision_combo_ = nullptr;
  QComboBox* model_combo_ = nullptr;
  QLabel* count_label_ = nullptr;
  QLabel* error_label_ = nullptr;
  QAction* actions_[int(Action::redo) + 1] = {};
};

}  // namespace mixlab::ui
