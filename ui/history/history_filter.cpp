#include "ui/history/history_filter.h"

#include <cmath>

#include "ui/history/history_model.h"

namespace mixlab::ui {

namespace {

int role(HistoryModel::Role r) {
  return int(r);
}

// Runs without the figure (NaN: not measured, or still running) come last in either order:
// NaN counts as larger than every number when ascending and smaller when descending. Within one
// sort that is a strict weak order, as std::sort needs.
bool number_less(double a, double b, Qt::SortOrder order) {
  const bool ascending = order == Qt::AscendingOrder;
  if (std::isnan(a)) return !ascending && !std::isnan(b);
  if (std::isnan(b)) return ascending;
  return a < b;
}

}  // namespace

HistoryFilter::HistoryFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(role(HistoryModel::Role::SortValue));
  // Rows a reload changes or inserts move to their place at once.
  setDynamicSortFilter(true);
}

void HistoryFilter::set_text(const QString& text) {
  const QStringList words = text.split(u' ', Qt::SkipEmptyParts);
  if (words == words_) return;
  words_ = words;
  invalidateFilter();
}

void HistoryFilter::set_status(const QString& status) {
  set_field(status_, status);
}
void HistoryFilter::set_precision(const QString& precision) {
  set_field(precision_, precision);
}
void HistoryFilter::set_model(const QString& model) {
  set_field(model_, model);
}

void HistoryFilter::set_field(QString& field, const QString& value) {
  if (field == value) return;
  field = value;
  invalidateFilter();
}

bool HistoryFilter::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QAbstractItemModel* source = sourceModel();
  const QModelIndex row = source->index(source_row, 0, source_parent);
  const auto equals = [&](const QString& wanted, HistoryModel::Role r) {
    return wanted.isEmpty() || source->data(row, role(r)).toString() == wanted;
  };
  if (!equals(status_, HistoryModel::Role::Status) ||
      !equals(precision_, HistoryModel::Role::Precision) ||
      !equals(model_, HistoryModel::Role::Model)) {
    return false;
  }
  if (words_.isEmpty()) return true;
  QString haystack;
  for (const int column :
       {HistoryModel::Name, HistoryModel::Model, HistoryModel::Tags, HistoryModel::Note}) {
    haystack += source->index(source_row, column, source_parent).data(Qt::EditRole).toString();
    haystack += u'\n';
  }
  for (const QString& word : words_) {
    if (!haystack.contains(word, Qt::CaseInsensitive)) return false;
  }
  return true;
}

bool HistoryFilter::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(sortRole());
  const QVariant b = right.data(sortRole());
  const auto type = a.metaType().id();
  if (type == QMetaType::Double) return number_less(a.toDouble(), b.toDouble(), sortOrder());
  if (type == QMetaType::LongLong) return a.toLongLong() < b.toLongLong();
  return a.toString().localeAwareCompare(b.toString()) < 0;
}

}  // namespace mixlab::ui
