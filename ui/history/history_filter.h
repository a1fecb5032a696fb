// The run history as the table shows it: filtered by free text (name, model, tags, note),
// status, precision and model, and sorted by each column's Role::SortValue, so that numbers sort
// as numbers ("9.5 ms" before "10.2 ms") and runs without a figure come last.
#pragma once

#include <QSortFilterProxyModel>
#include <QString>
#include <QStringList>

namespace mixlab::ui {

class HistoryFilter : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit HistoryFilter(QObject* parent = nullptr);

  // Each word of `text` must appear (case-insensitively) in the name, model, tags or note.
  void set_text(const QString& text);
  // An empty value accepts any; otherwise the run's value must equal it.
  void set_status(const QString& status);        // "finished", "failed"...
  void set_precision(const QString& precision);  // "float32", "mixed_float16"...
  void set_model(const QString& model);

  QString text() const { return words_.join(u' '); }
  const QString& status() const { return status_; }
  const QString& precision() const { return precision_; }
  const QString& model() const { return model_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  void set_field(QString& field, const QString& value);

  QStringList words_;
  QString status_;
  QString precision_;
  QString model_;
};

}  // namespace mixlab::ui
