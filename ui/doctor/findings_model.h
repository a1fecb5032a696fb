// The doctor's findings as a table: one row per finding, most severe first (the diagnosis's
// order), with the layers it names, its message, the fix and the gain the model predicts for
// it. Read-only; the Doctor tab sets the findings of each new diagnosis.
#pragma once

#include <QAbstractTableModel>
#include <QList>
#include <QMap>
#include <QStringList>
#include <vector>

#include "engine/doctor/diagnosis.h"

namespace mixlab::ui {

class FindingsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column : int { Severity, Finding, Layers, Message, Fix, PredictedGain, Count };
  enum class Role : int {
    Layers = Qt::UserRole + 1,  // QList<int>: the 0-based layers the finding names
    Severity,                   // int: doctor::Severity, info 0 to high 3
    Id,                         // QString: "weight-bound"
    PredictedGain,              // double: 0 when not predicted
  };

  explicit FindingsModel(QObject* parent = nullptr);

  void set_findings(std::vector<doctor::Finding> findings);
  const std::vector<doctor::Finding>& findings() const { return findings_; }
  // The first row whose finding has this id, or -1.
  int row_of(const QString& id) const;
  // Each layer a finding names, with one line per finding ("[high] alignment: ...").
  QMap<int, QStringList> findings_by_layer() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  QVariant display(const doctor::Finding& f, int column) const;
  QVariant tooltip(const doctor::Finding& f, int column) const;

  std::vector<doctor::Finding> findings_;
};

// "3, 5, 7": a finding's layers as the table shows them.
QString layers_text(const std::vector<int>& layers);

}  // namespace mixlab::ui
