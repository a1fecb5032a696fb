#include "ui/history/history_view.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>
#include <span>
#include <utility>
#include <vector>

#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "app/store/safe_file.h"
#include "ui/history/history_filter.h"
#include "ui/history/history_format.h"
#include "ui/history/history_model.h"
#include "ui/history/run_details.h"
#include "ui/history/run_edit_command.h"
#include "ui/settings.h"

namespace mixlab::ui {

namespace {

using history::qstr;
using history::run_label;

// Tags as the Tag… dialog takes them: separated by semicolons, since a tag may hold a comma.
QStringList parse_tags(const QString& text) {
  QStringList tags;
  for (const QString& part : text.split(u';')) {
    const QString tag = part.trimmed();
    if (!tag.isEmpty() && !tags.contains(tag)) tags.append(tag);
  }
  return tags;
}

std::vector<std::int64_t> std_ids(const QList<qint64>& ids) {
  return {ids.begin(), ids.end()};
}

void fill_combo(QComboBox* combo, const QString& any, const QStringList& values) {
  combo->addItem(any, QString());
  for (const QString& value : values) combo->addItem(value, value);
}

// Selects the item whose data is `value`, adding it when missing: a filter restored from the
// settings must stay visible even when no run has that value any more.
void select_value(QComboBox* combo, const QString& value) {
  int index = combo->findData(value);
  if (index < 0) {
    combo->addItem(value, value);
    index = combo->count() - 1;
  }
  combo->setCurrentIndex(index);
}

}  // namespace

HistoryView::HistoryView(std::filesystem::path db_path, QWidget* parent)
    : QWidget(parent), db_path_(std::move(db_path)), prompts_(dialog_prompts(this)) {
  model_ = new HistoryModel(this);
  filter_ = new HistoryFilter(this);
  filter_->setSourceModel(model_);
  undo_stack_ = new QUndoStack(this);
  model_->set_undo_stack(undo_stack_);
  connect(model_, &HistoryModel::error, this, &HistoryView::report);

  build_actions();
  build_layout();
  restore_filters();
  reload();
  if (!table_->horizontalHeader()->restoreState(settings::kHistoryHeaderState.get()))
    table_->sortByColumn(HistoryModel::Created, Qt::DescendingOrder);
  update_actions();
}

HistoryView::~HistoryView() {
  // Widths, order and sort of the columns, as the user left them.
  settings::kHistoryHeaderState.set(table_->horizontalHeader()->saveState());
  // The children (model, table, an open editor) go in ~QWidget, after store_: an editor still
  // open then commits on losing focus, and must find no store rather than a closed one.
  model_->set_undo_stack(nullptr);
  model_->set_store(nullptr);
}

void HistoryView::build_actions() {
  const auto make = [this](Action which, const QString& text, const QString& tip,
                           const QKeySequence& shortcut, void (HistoryView::*slot)()) {
    auto* action = new QAction(text, this);
    action->setToolTip(shortcut.isEmpty() ? tip
                                          : tip + QStringLiteral(" (%1)").arg(
                                                      shortcut.toString(QKeySequence::NativeText)));
    action->setShortcut(shortcut);
    // Only while the history has focus: Delete and F2 mean other things in other panels.
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(action, &QAction::triggered, this, slot);
    addAction(action);
    actions_[int(which)] = action;
  };
  make(Action::rename, tr("Rename"), tr("Rename the run"), QKeySequence(Qt::Key_F2),
       &HistoryView::ask_rename);
  make(Action::tag, tr("Tag…"), tr("Add or remove tags of the selected runs"), {},
       &HistoryView::ask_tags);
  make(Action::note, tr("Note…"), tr("Write a note on the selected runs"), {},
       &HistoryView::ask_note);
  make(Action::remove, tr("Delete…"), tr("Delete the selected runs with their steps"),
       QKeySequence(QKeySequence::Delete), &HistoryView::ask_delete);
  make(Action::compare, tr("Compare"), tr("Compare the selected runs (two or more)"),
       QKeySequence(Qt::CTRL | Qt::Key_Return), &HistoryView::request_compare);

  const auto make_export = [this](Action which, const QString& text, const QString& tip,
                                  CsvKind kind) {
    auto* action = new QAction(text, this);
    action->setToolTip(tip);
    connect(action, &QAction::triggered, this, [this, kind] { ask_export(kind); });
    actions_[int(which)] = action;
  };
  make_export(Action::export_steps, tr("Steps of the run…"),
              tr("One run's steps, one row per step"), CsvKind::steps);
  make_export(Action::export_long, tr("Steps of the selected runs…"),
              tr("The selected runs' steps in long form: one row per run and step, with the "
                 "run's settings as columns"),
              CsvKind::long_steps);
  make_export(Action::export_summary, tr("Summary of the selected runs…"),
              tr("One row per run: settings, environment and figures"), CsvKind::summary);
  make_export(Action::export_layers, tr("Per-layer times of the selected runs…"),
              tr("One row per run and layer: median forward and backward times (runs "
                 "recorded with per-layer timing)"),
              CsvKind::layers);

  QAction* undo = undo_stack_->createUndoAction(this, tr("Undo"));
  QAction* redo = undo_stack_->createRedoAction(this, tr("Redo"));
  undo->setShortcut(QKeySequence::Undo);
  redo->setShortcut(QKeySequence::Redo);
  actions_[int(Action::undo)] = undo;
  actions_[int(Action::redo)] = redo;
}

void HistoryView::build_layout() {
  search_ = new QLineEdit(this);
  search_->setObjectName(QStringLiteral("history_search"));
  search_->setPlaceholderText(tr("Filter by name, model, tag or note"));
  search_->setClearButtonEnabled(true);
  search_->setToolTip(tr("Shows the runs whose name, model, tags or note hold every word"));
  status_combo_ = new QComboBox(this);
  status_combo_->setObjectName(QStringLiteral("history_status_filter"));
  QStringList statuses;
  for (const auto status : {store::RecordStatus::finished, store::RecordStatus::running,
                            store::RecordStatus::stopped, store::RecordStatus::diverged,
                            store::RecordStatus::failed, store::RecordStatus::interrupted}) {
    statuses.append(qstr(store::to_string(status)));
  }
  fill_combo(status_combo_, tr("Any status"), statuses);
  precision_combo_ = new QComboBox(this);
  precision_combo_->setObjectName(QStringLiteral("history_precision_filter"));
  QStringList policies;
  for (const auto policy : kAllPolicies) policies.append(qstr(to_string(policy)));
  fill_combo(precision_combo_, tr("Any precision"), policies);
  model_combo_ = new QComboBox(this);
  model_combo_->setObjectName(QStringLiteral("history_model_filter"));
  model_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  fill_combo(model_combo_, tr("Any model"), {});

  auto* filters = new QHBoxLayout;
  filters->addWidget(search_, 1);
  filters->addWidget(status_combo_);
  filters->addWidget(precision_combo_);
  filters->addWidget(model_combo_);

  auto* toolbar = new QToolBar(this);
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  for (const Action which :
       {Action::rename, Action::tag, Action::note, Action::remove, Action::compare})
    toolbar->addAction(action(which));
  auto* export_menu = new QMenu(this);
  export_menu->addActions(
      {action(Action::export_steps), action(Action::export_long), action(Action::export_summary),
       action(Action::export_layers)});
  auto* export_button = new QToolButton(this);
  export_button->setText(tr("Export CSV"));
  export_button->setToolTip(tr("Save steps or summaries of the selected runs as CSV"));
  export_button->setMenu(export_menu);
  export_button->setPopupMode(QToolButton::InstantPopup);
  toolbar->addWidget(export_button);
  toolbar->addSeparator();
  toolbar->addAction(action(Action::undo));
  toolbar->addAction(action(Action::redo));

  table_ = new QTableView(this);
  table_->setModel(filter_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setSortingEnabled(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionsMovable(true);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  table_->addActions({action(Action::rename), action(Action::tag), action(Action::note),
                      action(Action::compare), action(Action::remove)});
  auto* separator = new QAction(this);
  separator->setSeparator(true);
  table_->addAction(separator);
  table_->addActions(export_menu->actions());
  // Ctrl+Z undoes a history edit while the table has focus, not while another panel's has.
  for (const Action which : {Action::undo, Action::redo}) {
    action(which)->setShortcutContext(Qt::WidgetShortcut);
    table_->addAction(action(which));
  }
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &HistoryView::update_actions);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          &HistoryView::update_details);
  details_ = new RunDetails(this);
  details_->setObjectName(QStringLiteral("run_details"));
  connect(filter_, &QAbstractItemModel::rowsInserted, this, &HistoryView::update_count);
  connect(filter_, &QAbstractItemModel::rowsRemoved, this, &HistoryView::update_count);
  connect(filter_, &QAbstractItemModel::modelReset, this, &HistoryView::update_count);
  connect(filter_, &QAbstractItemModel::layoutChanged, this, &HistoryView::update_count);

  count_label_ = new QLabel(this);
  error_label_ = new QLabel(this);
  error_label_->setWordWrap(true);
  error_label_->setStyleSheet(QStringLiteral("color: #c62828"));
  error_label_->hide();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(toolbar);
  layout->addLayout(filters);
  // The table over the selected run's details; the user moves the boundary.
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(details_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  layout->addWidget(error_label_);
  layout->addWidget(count_label_);
}

void HistoryView::restore_filters() {
  search_->setText(settings::kHistoryFilterText.get());
  select_value(status_combo_, settings::kHistoryFilterStatus.get());
  select_value(precision_combo_, settings::kHistoryFilterPrecision.get());
  select_value(model_combo_, settings::kHistoryFilterModel.get());
  filter_->set_text(search_->text());
  filter_->set_status(status_combo_->currentData().toString());
  filter_->set_precision(precision_combo_->currentData().toString());
  filter_->set_model(model_combo_->currentData().toString());

  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
    filter_->set_text(text);
    settings::kHistoryFilterText.set(text);
  });
  const auto follow = [this](QComboBox* combo, void (HistoryFilter::*set)(const QString&),
                             const settings::Key<QString>& key) {
    connect(combo, &QComboBox::currentIndexChanged, this, [this, combo, set, &key] {
      const QString value = combo->currentData().toString();
      (filter_->*set)(value);
      key.set(value);
    });
  };
  follow(status_combo_, &HistoryFilter::set_status, settings::kHistoryFilterStatus);
  follow(precision_combo_, &HistoryFilter::set_precision, settings::kHistoryFilterPrecision);
  follow(model_combo_, &HistoryFilter::set_model, settings::kHistoryFilterModel);
}

bool HistoryView::open_store() {
  if (store_ != nullptr) return true;
  try {
    store_ = std::make_unique<store::RunStore>(store::RunStore::open(db_path_));
  } catch (const std::exception& e) {
    report(tr("Cannot open the run history %1: %2")
               .arg(QString::fromStdString(db_path_.string()), QString::fromUtf8(e.what())));
    return false;
  }
  model_->set_store(store_.get());
  return true;
}

void HistoryView::reload() {
  error_label_->hide();
  // set_store reads the runs once the store opens; later calls re-read them.
  if (store_ == nullptr) {
    open_store();
  } else {
    model_->reload();
  }
  update_model_choices();
  update_count();
  update_actions();
}

void HistoryView::report(const QString& message) {
  error_label_->setText(message);
  error_label_->show();
  emit error(message);
}

void HistoryView::update_model_choices() {
  const QString current = model_combo_->currentData().toString();
  const QSignalBlocker block(model_combo_);  // the filter itself does not change
  model_combo_->clear();
  fill_combo(model_combo_, tr("Any model"), model_->model_names());
  select_value(model_combo_, current);
}

void HistoryView::update_count() {
  if (count_label_ == nullptr) return;
  const int all = model_->rowCount();
  const int shown = filter_->rowCount();
  count_label_->setText(shown == all ? tr("%n run(s)", "", all)
                                     : tr("%1 of %n run(s) shown", "", all).arg(shown));
}

void HistoryView::update_details() {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid() || !open_store()) {
    details_->clear();
    return;
  }
  details_->show_run(*store_, current.data(int(HistoryModel::Role::RunId)).toLongLong());
}

void HistoryView::update_actions() {
  const qsizetype n = selected_run_ids().size();
  action(Action::rename)->setEnabled(n == 1);
  action(Action::export_steps)->setEnabled(n == 1);
  for (const Action which :
       {Action::tag, Action::note, Action::remove, Action::export_long, Action::export_summary,
        Action::export_layers})
    action(which)->setEnabled(n >= 1);
  action(Action::compare)->setEnabled(n >= 2);
}

QList<qint64> HistoryView::selected_run_ids() const {
  QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(),
            [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QList<qint64> ids;
  for (const QModelIndex& row : rows)
    ids.append(row.data(int(HistoryModel::Role::RunId)).toLongLong());
  return ids;
}

void HistoryView::select_runs(const QList<qint64>& run_ids) {
  QItemSelection selection;
  QModelIndex first;
  for (const qint64 id : run_ids) {
    const QModelIndex index = filter_->mapFromSource(model_->index(model_->row_of(id), 0));
    if (!index.isValid()) continue;
    selection.select(index, index.siblingAtColumn(HistoryModel::Count - 1));
    if (!first.isValid()) first = index;
  }
  QItemSelectionModel* selection_model = table_->selectionModel();
  selection_model->select(selection, QItemSelectionModel::ClearAndSelect);
  if (first.isValid()) selection_model->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
}

// --- edits -------------------------------------------------------------------------------

bool HistoryView::rename_run(qint64 run_id, const QString& name) {
  const QModelIndex index = model_->index(model_->row_of(run_id), HistoryModel::Name);
  if (!index.isValid()) return false;
  return model_->setData(index, name);
}

bool HistoryView::edit_tags(const QList<qint64>& run_ids, const QStringList& add,
                            const QStringList& remove) {
  std::vector<RunEditCommand::Change> changes;
  for (const qint64 id : run_ids) {
    const QStringList before = model_->field(id, HistoryModel::Tags).toStringList();
    QStringList after;
    for (const QString& tag : before)
      if (!remove.contains(tag)) after.append(tag);
    for (const QString& tag : add)
      if (!after.contains(tag)) after.append(tag);
    after.sort();  // the store's order
    if (after != before) changes.push_back({id, before, after});
  }
  if (changes.empty()) return true;
  return push_edit(new RunEditCommand(model_, HistoryModel::Tags, std::move(changes),
                                      tr("Tag %n run(s)", "", int(run_ids.size()))));
}

bool HistoryView::set_note(const QList<qint64>& run_ids, const QString& note) {
  std::vector<RunEditCommand::Change> changes;
  for (const qint64 id : run_ids) {
    const QString before = model_->field(id, HistoryModel::Note).toString();
    if (before != note) changes.push_back({id, before, note});
  }
  if (changes.empty()) return true;
  return push_edit(new RunEditCommand(model_, HistoryModel::Note, std::move(changes),
                                      tr("Note on %n run(s)", "", int(run_ids.size()))));
}

bool HistoryView::push_edit(RunEditCommand* command) {
  // A command whose first redo fails is obsolete, and push drops it: the index stays.
  const int before = undo_stack_->index();
  undo_stack_->push(command);
  return undo_stack_->index() > before;
}

bool HistoryView::delete_runs(const QList<qint64>& run_ids) {
  if (!open_store()) return false;
  bool ok = true;
  for (const qint64 id : run_ids) {
    try {
      store_->delete_run(id);
    } catch (const std::exception& e) {
      report(tr("Cannot delete run %1: %2").arg(id).arg(QString::fromUtf8(e.what())));
      ok = false;
    }
  }
  // Edits of a deleted run can no longer be undone. QUndoStack cannot drop single commands,
  // so the edit history goes when one of its commands touches a deleted run.
  for (int i = 0; i < undo_stack_->count(); ++i) {
    const auto* command = dynamic_cast<const RunEditCommand*>(undo_stack_->command(i));
    if (command == nullptr) continue;
    const QList<qint64> touched = command->run_ids();
    if (std::any_of(touched.begin(), touched.end(),
                    [&](qint64 id) { return run_ids.contains(id); })) {
      undo_stack_->clear();
      break;
    }
  }
  reload();
  return ok;
}

bool HistoryView::export_csv(const std::filesystem::path& file, CsvKind kind,
                             const QList<qint64>& run_ids) {
  if (run_ids.isEmpty() || (kind == CsvKind::steps && run_ids.size() != 1)) return false;
  if (!open_store()) return false;
  const std::vector<std::int64_t> ids = std_ids(run_ids);
  QApplication::setOverrideCursor(Qt::WaitCursor);  // a long run's steps take a while
  bool ok = true;
  try {
    store::write_file_atomically(file, [&](std::ostream& out) {
      switch (kind) {
        case CsvKind::steps:
          store::write_steps_csv(out, *store_, ids.front());
          break;
        case CsvKind::long_steps:
          store::write_long_steps_csv(out, *store_, ids);
          break;
        case CsvKind::summary:
          store::write_summary_csv(out, *store_, ids);
          break;
        case CsvKind::layers:
          store::write_layers_csv(out, *store_, ids);
          break;
      }
    });
  } catch (const std::exception& e) {
    report(tr("Export failed: %1").arg(QString::fromUtf8(e.what())));
    ok = false;
  }
  QApplication::restoreOverrideCursor();
  return ok;
}

// --- the actions' questions ------------------------------------------------------------------

void HistoryView::request_compare() {
  const QList<qint64> ids = selected_run_ids();
  if (ids.size() >= 2) emit compare_requested(ids);
}

void HistoryView::ask_rename() {
  const QList<qint64> ids = selected_run_ids();
  if (ids.size() != 1) return;
  // In place, in the Name cell: the edit then goes through setData and the undo stack.
  const QModelIndex index =
      filter_->mapFromSource(model_->index(model_->row_of(ids.front()), HistoryModel::Name));
  table_->setCurrentIndex(index);
  table_->edit(index);
}

void HistoryView::ask_tags() {
  const QList<qint64> ids = selected_run_ids();
  if (ids.isEmpty() || !prompts_.text) return;
  // The dialog edits the tags every selected run has; others' own tags stay.
  QStringList common = model_->field(ids.front(), HistoryModel::Tags).toStringList();
  for (const qint64 id : ids) {
    const QStringList tags = model_->field(id, HistoryModel::Tags).toStringList();
    common.removeIf([&](const QString& tag) { return !tags.contains(tag); });
  }
  const auto answer =
      prompts_.text(tr("Tags"),
                    tr("Tags of %n run(s), separated by semicolons. A tag taken out of the list "
                       "is removed from every selected run.",
                       "", int(ids.size())),
                    common.join(QStringLiteral("; ")), false);
  if (!answer) return;
  const QStringList wanted = parse_tags(*answer);
  QStringList add, remove;
  for (const QString& tag : wanted)
    if (!common.contains(tag)) add.append(tag);
  for (const QString& tag : common)
    if (!wanted.contains(tag)) remove.append(tag);
  edit_tags(ids, add, remove);
}

void HistoryView::ask_note() {
  const QList<qint64> ids = selected_run_ids();
  if (ids.isEmpty() || !prompts_.text) return;
  // The runs' note when they share one, else an empty one that replaces each.
  QString note = model_->field(ids.front(), HistoryModel::Note).toString();
  for (const qint64 id : ids)
    if (model_->field(id, HistoryModel::Note).toString() != note) note.clear();
  const auto answer =
      prompts_.text(tr("Note"), tr("Note on %n run(s):", "", int(ids.size())), note, true);
  if (answer) set_note(ids, *answer);
}

void HistoryView::ask_delete() {
  const QList<qint64> ids = selected_run_ids();
  if (ids.isEmpty() || !prompts_.confirm) return;
  constexpr int kNamed = 10;  // a longer list would not fit the dialog
  QStringList lines;
  std::int64_t steps = 0;
  for (const qint64 id : ids) {
    const store::RunRecord* r = model_->find(id);
    if (r == nullptr) continue;
    steps += r->summary.steps;
    if (lines.size() < kNamed) lines.append(run_label(*r));
  }
  if (ids.size() > kNamed) lines.append(tr("and %n more", "", int(ids.size() - kNamed)));
  const QString question = tr("Delete %n run(s) with their %1 recorded steps?", "", int(ids.size()))
                               .arg(history::grouped(double(steps))) +
                           QStringLiteral("\n\n") + lines.join(u'\n') + QStringLiteral("\n\n") +
                           tr("This cannot be undone.");
  if (prompts_.confirm(tr("Delete runs"), question)) delete_runs(ids);
}

void HistoryView::ask_export(CsvKind kind) {
  const QList<qint64> ids = selected_run_ids();
  if (ids.isEmpty() || !prompts_.save_file) return;
  if (kind == CsvKind::steps && ids.size() != 1) return;
  QString suggested;
  switch (kind) {
    case CsvKind::steps:
      suggested = QStringLiteral("run-%1-steps.csv").arg(ids.front());
      break;
    case CsvKind::long_steps:
      suggested = QStringLiteral("runs-steps.csv");
      break;
    case CsvKind::summary:
      suggested = QStringLiteral("runs-summary.csv");
      break;
    case CsvKind::layers:
      suggested = QStringLiteral("runs-layers.csv");
      break;
  }
  QString file = prompts_.save_file(tr("Export CSV"), suggested, tr("CSV files (*.csv)"));
  if (file.isEmpty()) return;
  if (QFileInfo(file).suffix().isEmpty()) file += QStringLiteral(".csv");
  export_csv(file.toStdString(), kind, ids);
}

}  // namespace mixlab::ui
