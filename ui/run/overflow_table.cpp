#include "ui/run/overflow_table.h"

#include <QHeaderView>
#include <QLocale>

namespace mixlab::ui {

namespace {

QTableWidgetItem* number(std::int64_t value) {
  auto* item = new QTableWidgetItem(QLocale::c().toString(static_cast<qlonglong>(value)));
  item->setData(Qt::UserRole, static_cast<qlonglong>(value));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setFlags(item->flags() & ~Qt::ItemIsEditable);
  return item;
}

}  // namespace

OverflowTable::OverflowTable(QWidget* parent) : QTableWidget(0, kColumns, parent) {
  setObjectName(QStringLiteral("overflow-table"));
  setHorizontalHeaderLabels({tr("Layer"), tr("Steps with inf/NaN gradients"), tr("inf/NaN values"),
                             tr("Gradient values"), tr("Last such step")});
  horizontalHeader()->setSectionResizeMode(kLayer, QHeaderView::Stretch);
  for (int c = kSteps; c < kColumns; ++c) {
    horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  }
  verticalHeader()->hide();
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setToolTip(
      tr("Layers whose gradients overflowed (inf or NaN) on steps the overflow check "
         "skipped: float16 without loss scaling, or attention scores past 65504. With "
         "dynamic loss scaling the scale backs off and these stop."));
}

void OverflowTable::add(int layer, const QString& title, std::int64_t step, std::int64_t nonfinite,
                        std::int64_t values) {
  Row& row = rows_[layer];
  row.title = title;
  row.steps += 1;
  row.nonfinite += nonfinite;
  row.values = values;
  row.last_step = std::max(row.last_step, step);
  refresh();
}

void OverflowTable::set_rows(const std::map<int, Row>& rows) {
  rows_ = rows;
  refresh();
}

void OverflowTable::clear_rows() {
  rows_.clear();
  refresh();
}

void OverflowTable::refresh() {
  setRowCount(static_cast<int>(rows_.size()));
  int r = 0;
  for (const auto& [layer, row] : rows_) {
    auto* title = new QTableWidgetItem(row.title.isEmpty() ? tr("layer %1").arg(layer) : row.title);
    title->setFlags(title->flags() & ~Qt::ItemIsEditable);
    setItem(r, kLayer, title);
    setItem(r, kSteps, number(row.steps));
    setItem(r, kNonfinite, number(row.nonfinite));
    setItem(r, kValues, number(row.values));
    setItem(r, kLastStep, number(row.last_step + 1));  // steps are 1-based on screen
    ++r;
  }
}

}  // namespace mixlab::ui
