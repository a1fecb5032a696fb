#include "ui/history/history_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QHash>
#include <QSet>
#include <QUndoStack>
#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include "app/store/run_store.h"
#include "ui/history/history_format.h"
#include "ui/history/run_edit_command.h"

namespace mixlab::ui {

namespace {

using history::fixed;
using history::grouped;
using history::percent;
using history::qstr;
using store::RecordStatus;
using store::RunRecord;

// Counts, "1,234", in the locale history_format uses.
QString count(std::int64_t n) {
  return grouped(double(n));
}

// Names and notes may hold line breaks; a table cell shows them on one line.
QString one_line(const std::string& text) {
  QString line = qstr(text);
  for (QChar& c : line) {
    if (c == u'\n' || c == u'\r' || c == u'\t') c = u' ';
  }
  return line;
}

QStringList tag_list(const std::vector<std::string>& tags) {
  QStringList list;
  for (const std::string& tag : tags) list.append(qstr(tag));
  return list;
}

std::vector<std::string> std_list(const QStringList& list) {
  std::vector<std::string> out;
  for (const QString& item : list) out.push_back(item.toStdString());
  return out;
}

QString device_of(const RunRecord& r) {
  return r.environment.device_name.empty() ? qstr(r.device) : qstr(r.environment.device_name);
}

QString device_tooltip(const RunRecord& r) {
  QString tip = qstr(r.device);
  if (!r.environment.device_name.empty())
    tip += QStringLiteral(": ") + qstr(r.environment.device_name);
  if (!r.environment.compute_capability.empty())
    tip += HistoryModel::tr(", compute capability %1").arg(qstr(r.environment.compute_capability));
  if (r.environment.threads > 0)
    tip += HistoryModel::tr(", %n thread(s)", "", r.environment.threads);
  return tip;
}

QString created_text(std::int64_t ms) {
  return QDateTime::fromMSecsSinceEpoch(ms).toLocalTime().toString(
      QStringLiteral("yyyy-MM-dd HH:mm"));
}

QVariant status_colour(const RunRecord& r) {
  if (!r.damage.empty()) return QBrush(QColor(0xc6, 0x28, 0x28));  // red
  switch (r.status) {
    case RecordStatus::failed:
    case RecordStatus::diverged:
      return QBrush(QColor(0xc6, 0x28, 0x28));  // red
    case RecordStatus::interrupted:
      return QBrush(QColor(0xb2, 0x6a, 0x00));  // amber
    case RecordStatus::stopped:
      return QBrush(QColor(0x75, 0x75, 0x75));  // grey
    case RecordStatus::running:
      return QBrush(QColor(0x15, 0x65, 0xc0));  // blue
    case RecordStatus::finished:
      break;
  }
  return {};
}

// "damaged" for a run whose row could not be read whole (a value changed by hand), else its
// status.
QString status_text(const RunRecord& r) {
  return r.damage.empty() ? qstr(store::to_string(r.status)) : HistoryModel::tr("damaged");
}

QString status_tooltip(const RunRecord& r) {
  QString tip = qstr(store::to_string(r.status));
  if (!r.message.empty()) tip += QStringLiteral(": ") + qstr(r.message);
  if (r.status == RecordStatus::running && r.heartbeat_at_ms != 0) {
    tip += HistoryModel::tr(", last heartbeat %1").arg(qstr(store::format_utc(r.heartbeat_at_ms)));
  }
  if (r.damage.empty()) return tip;
  return HistoryModel::tr("Damaged: %1. The settings named show their defaults; delete the run "
                          "or correct the value in the database.\nRecorded status: %2")
      .arg(qstr(store::describe_damage(r)), tip);
}

bool is_numeric(int column) {
  switch (column) {
    case HistoryModel::Id:
    case HistoryModel::Batch:
    case HistoryModel::MedianStepMs:
    case HistoryModel::P95StepMs:
    case HistoryModel::SamplesPerS:
    case HistoryModel::TestAccuracy:
    case HistoryModel::Skipped:
      return true;
    default:
      return false;
  }
}

QString display_text(const RunRecord& r, int column) {
  const RunSummary& s = r.summary;
  switch (column) {
    case HistoryModel::Id:
      return QString::number(r.id);
    case HistoryModel::Name:
      return one_line(r.name);
    case HistoryModel::Status:
      return status_text(r);
    case HistoryModel::Created:
      return created_text(r.created_at_ms);
    case HistoryModel::Model:
      return qstr(r.model_name);
    case HistoryModel::Precision:
      return qstr(to_string(r.config.precision));
    case HistoryModel::LossScaling:
      return qstr(r.config.loss_scale.to_string());
    case HistoryModel::Batch:
      return count(r.config.batch_size);
    case HistoryModel::Device:
      return device_of(r);
    case HistoryModel::MedianStepMs:
      return fixed(s.median_step_ms, 3);
    case HistoryModel::P95StepMs:
      return fixed(s.p95_step_ms, 3);
    case HistoryModel::SamplesPerS:
      return grouped(s.samples_per_s);
    case HistoryModel::TestAccuracy:
      return percent(s.test_accuracy);
    case HistoryModel::Skipped:
      return count(s.skipped_steps);
    case HistoryModel::Tags:
      return tag_list(r.tags).join(QStringLiteral("; "));
    case HistoryModel::Note:
      return one_line(r.note);
    default:
      return {};
  }
}

QVariant sort_value(const RunRecord& r, int column) {
  const RunSummary& s = r.summary;
  switch (column) {
    case HistoryModel::Id:
      return qint64(r.id);
    case HistoryModel::Created:
      return qint64(r.created_at_ms);
    case HistoryModel::Batch:
      return qint64(r.config.batch_size);
    case HistoryModel::MedianStepMs:
      return s.median_step_ms;
    case HistoryModel::P95StepMs:
      return s.p95_step_ms;
    case HistoryModel::SamplesPerS:
      return s.samples_per_s;
    case HistoryModel::TestAccuracy:
      return s.test_accuracy;
    case HistoryModel::Skipped:
      return qint64(s.skipped_steps);
    case HistoryModel::Name:
      return qstr(r.name);
    case HistoryModel::Note:
      return qstr(r.note);
    default:
      return display_text(r, column);
  }
}

QVariant tooltip(const RunRecord& r, int column) {
  const RunSummary& s = r.summary;
  switch (column) {
    case HistoryModel::Name:
      return qstr(r.name) + (r.message.empty() && r.damage.empty()
                                 ? QString()
                                 : QStringLiteral("\n") + status_tooltip(r));
    case HistoryModel::Status:
      return status_tooltip(r);
    case HistoryModel::Created:
      return qstr(store::format_utc(r.created_at_ms));
    case HistoryModel::Device:
      return device_tooltip(r);
    case HistoryModel::MedianStepMs:
    case HistoryModel::P95StepMs:
      return HistoryModel::tr(
                 "p5 %1 ms, median %2 ms, p95 %3 ms; the first %n step(s) left out as warm-up", "",
                 int(s.warmup_steps))
          .arg(fixed(s.p5_step_ms, 3), fixed(s.median_step_ms, 3), fixed(s.p95_step_ms, 3));
    case HistoryModel::Skipped:
      return HistoryModel::tr("%1 of %2 steps skipped (non-finite gradients)")
          .arg(count(s.skipped_steps), count(s.steps));
    case HistoryModel::Tags:
      return tag_list(r.tags).join(u'\n');
    case HistoryModel::Note:
      return qstr(r.note);
    default:
      return {};
  }
}

}  // namespace

HistoryModel::HistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

HistoryModel::~HistoryModel() = default;

void HistoryModel::set_store(store::RunStore* store) {
  store_ = store;
  reload();
}

void HistoryModel::reload() {
  std::vector<RunRecord> fresh;
  if (store_ != nullptr) {
    try {
      fresh = store_->list_runs();
    } catch (const std::exception& e) {
      emit error(tr("Cannot read the run history: %1").arg(QString::fromUtf8(e.what())));
      return;
    }
  }
  QHash<qint64, int> fresh_row;
  for (int i = 0; i < int(fresh.size()); ++i) fresh_row.insert(fresh[i].id, i);

  // Rows of runs that are gone, removed a block at a time from the bottom up.
  for (int last = int(runs_.size()) - 1; last >= 0;) {
    if (fresh_row.contains(runs_[last].id)) {
      --last;
      continue;
    }
    int first = last;
    while (first > 0 && !fresh_row.contains(runs_[first - 1].id)) --first;
    beginRemoveRows({}, first, last);
    runs_.erase(runs_.begin() + first, runs_.begin() + last + 1);
    endRemoveRows();
    last = first - 1;
  }
  // The store orders runs by creation time, which never changes, so the runs left are in the
  // fresh order and new ones only slot in between. Should that ever not hold, start over.
  QSet<qint64> kept;
  int previous = -1;
  for (const RunRecord& r : runs_) {
    const int row = fresh_row.value(r.id);
    if (row < previous) {
      reset_to(std::move(fresh));
      return;
    }
    previous = row;
    kept.insert(r.id);
  }
  for (int i = 0; i < int(fresh.size());) {
    if (kept.contains(fresh[i].id)) {
      runs_[i] = std::move(fresh[i]);
      ++i;
      continue;
    }
    int end = i;
    while (end < int(fresh.size()) && !kept.contains(fresh[end].id)) ++end;
    beginInsertRows({}, i, end - 1);
    runs_.insert(runs_.begin() + i, std::make_move_iterator(fresh.begin() + i),
                 std::make_move_iterator(fresh.begin() + end));
    endInsertRows();
    i = end;
  }
  // Figures of runs that were running when last read may have changed.
  if (!runs_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, Count - 1));
}

void HistoryModel::reset_to(std::vector<RunRecord> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

int HistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(runs_.size());
}

int HistoryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  const RunRecord* r = record(index.row());
  if (r == nullptr || index.column() < 0 || index.column() >= Count) return {};
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return display_text(*r, column);
    case Qt::EditRole:
      return column == Name ? qstr(r->name) : display_text(*r, column);
    case Qt::ToolTipRole:
      return tooltip(*r, column);
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(Qt::Alignment(is_numeric(column)
                                                   ? Qt::AlignRight | Qt::AlignVCenter
                                                   : Qt::AlignLeft | Qt::AlignVCenter));
    case Qt::ForegroundRole:
      return column == Status ? status_colour(*r) : QVariant();
    default:
      break;
  }
  switch (Role(role)) {
    case Role::RunId:
      return qint64(r->id);
    case Role::SortValue:
      return sort_value(*r, column);
    case Role::Status:
      return qstr(store::to_string(r->status));
    case Role::Precision:
      return qstr(to_string(r->config.precision));
    case Role::Model:
      return qstr(r->model_name);
  }
  return {};
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= Count) return {};
  struct Header {
    const char* title;
    const char* tooltip;
  };
  static constexpr Header kHeaders[Count] = {
      {QT_TR_NOOP("ID"), QT_TR_NOOP("The run's number in the store")},
      {QT_TR_NOOP("Name"), QT_TR_NOOP("Double-click or F2 to rename")},
      {QT_TR_NOOP("Status"), QT_TR_NOOP("How the run ended; the tooltip says why")},
      {QT_TR_NOOP("Created"), QT_TR_NOOP("When the run was started (local time)")},
      {QT_TR_NOOP("Model"), nullptr},
      {QT_TR_NOOP("Precision"), QT_TR_NOOP("The precision policy")},
      {QT_TR_NOOP("Loss scaling"), nullptr},
      {QT_TR_NOOP("Batch"), QT_TR_NOOP("Batch size")},
      {QT_TR_NOOP("Device"), nullptr},
      {QT_TR_NOOP("Median ms"), QT_TR_NOOP("Median step time, warm-up steps left out")},
      {QT_TR_NOOP("p95 ms"), QT_TR_NOOP("95th percentile of the step time")},
      {QT_TR_NOOP("Samples/s"), QT_TR_NOOP("Training throughput of the measured steps")},
      {QT_TR_NOOP("Test acc."), QT_TR_NOOP("Accuracy on the test split after the last epoch")},
      {QT_TR_NOOP("Skipped"), QT_TR_NOOP("Steps whose update was skipped: non-finite gradients")},
      {QT_TR_NOOP("Tags"), nullptr},
      {QT_TR_NOOP("Note"), nullptr},
  };
  const Header& header = kHeaders[section];
  if (role == Qt::DisplayRole) return tr(header.title);
  if (role == Qt::ToolTipRole && header.tooltip != nullptr) return tr(header.tooltip);
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(
        Qt::Alignment((is_numeric(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
  return {};
}

Qt::ItemFlags HistoryModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags flags = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == Name) flags |= Qt::ItemIsEditable;
  return flags;
}

bool HistoryModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  const RunRecord* r = record(index.row());
  if (r == nullptr || index.column() != Name || role != Qt::EditRole) return false;
  const QString name = value.toString();
  if (name.trimmed().isEmpty()) return false;  // the store keeps no nameless runs
  const QString before = qstr(r->name);
  if (name == before) return true;
  const qint64 id = r->id;
  if (undo_stack_ == nullptr) return write_field(id, Name, name);
  undo_stack_->push(
      new RunEditCommand(this, Name, {{id, before, name}}, tr("Rename run %1").arg(id)));
  const RunRecord* after = find(id);
  return after != nullptr && qstr(after->name) == name;
}

const RunRecord* HistoryModel::record(int row) const {
  return row >= 0 && row < int(runs_.size()) ? &runs_[row] : nullptr;
}

const RunRecord* HistoryModel::find(qint64 run_id) const {
  return record(row_of(run_id));
}

int HistoryModel::row_of(qint64 run_id) const {
  const auto it =
      std::find_if(runs_.begin(), runs_.end(), [&](const RunRecord& r) { return r.id == run_id; });
  return it == runs_.end() ? -1 : int(it - runs_.begin());
}

QStringList HistoryModel::model_names() const {
  QStringList names;
  for (const RunRecord& r : runs_) {
    const QString name = qstr(r.model_name);
    if (!name.isEmpty() && !names.contains(name)) names.append(name);
  }
  names.sort(Qt::CaseInsensitive);
  return names;
}

QVariant HistoryModel::field(qint64 run_id, Column column) const {
  const RunRecord* r = find(run_id);
  if (r == nullptr) return {};
  switch (column) {
    case Name:
      return qstr(r->name);
    case Tags:
      return tag_list(r->tags);
    case Note:
      return qstr(r->note);
    default:
      return {};
  }
}

bool HistoryModel::write_field(qint64 run_id, Column column, const QVariant& value) {
  if (store_ == nullptr) return false;
  try {
    switch (column) {
      case Name:
        store_->rename(run_id, value.toString().toStdString());
        break;
      case Note:
        store_->set_note(run_id, value.toString().toStdString());
        break;
      case Tags: {
        // The tag set asked for, against the store's (another window may have tagged since).
        const QStringList now = tag_list(store_->run(run_id).tags);
        const QStringList wanted = value.toStringList();
        QStringList add, remove;
        for (const QString& tag : wanted)
          if (!now.contains(tag) && !add.contains(tag)) add.append(tag);
        for (const QString& tag : now)
          if (!wanted.contains(tag)) remove.append(tag);
        if (!remove.isEmpty()) store_->remove_tags(run_id, std_list(remove));
        if (!add.isEmpty()) store_->add_tags(run_id, std_list(add));
        break;
      }
      default:
        return false;
    }
  } catch (const std::exception& e) {
    emit error(tr("Cannot edit run %1: %2").arg(run_id).arg(QString::fromUtf8(e.what())));
    refresh_run(run_id);
    return false;
  }
  refresh_run(run_id);
  return true;
}

void HistoryModel::refresh_run(qint64 run_id) {
  const int row = row_of(run_id);
  if (row < 0 || store_ == nullptr) return;
  std::optional<RunRecord> fresh;
  try {
    fresh = store_->find_run(run_id);
  } catch (const std::exception& e) {
    emit error(tr("Cannot read run %1: %2").arg(run_id).arg(QString::fromUtf8(e.what())));
    return;
  }
  if (!fresh) {  // deleted by another process meanwhile
    reload();
    return;
  }
  runs_[row] = std::move(*fresh);
  emit dataChanged(index(row, 0), index(row, Count - 1));
}

}  // namespace mixlab::ui
