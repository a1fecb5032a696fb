// The Sweep dialog (Run ▸ Sweep…): a grid of runs of the editor's model, and optionally other
// built-in models, over precision policies and batch sizes, repeated; every other setting is the
// run panel's. It shows the number of runs, or why the grid is wrong (store::SweepSpec::check's
// message), as the user types.
#pragma once

#include <QDialog>
#include <QString>
#include <string>
#include <vector>

#include "app/store/sweep_plan.h"
#include "engine/train/run_types.h"

class QCheckBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace mixlab::ui {

class RunPanel;

// What a sweep takes from the run panel: its settings that differ from the defaults (one value
// each, the precision and batch size left out: the dialog sweeps those) and its device.
struct SweepBase {
  std::string model;                          // the editor's model: a file, or its name
  std::vector<store::SweepSetting> settings;  // flag, one value
  std::string device = "cpu";
  Policy precision = Policy::float32;
  int batch_size = 32;
  QString length;  // "30 steps", "2 epochs"
};

// Throws ConfigError as RunPanel::config() does (a dataset folder not chosen).
SweepBase sweep_base(const RunPanel& panel, std::string model);

class SweepDialog : public QDialog {
  Q_OBJECT

 public:
  explicit SweepDialog(SweepBase base, QWidget* parent = nullptr);

  // The grid as set up. Throws ConfigError naming the setting that is wrong.
  store::SweepSpec spec() const;
  int member_count() const;  // 0 while the grid is wrong
  QString error() const;     // why it is wrong; empty when it is not

  QListWidget* models() const { return models_; }
  QCheckBox* precision_box(Policy policy) const;
  QLineEdit* batch_sizes() const { return batch_sizes_; }
  QSpinBox* repeats() const { return repeats_; }
  QLabel* count_label() const { return count_; }

 private:
  void update_count();

  SweepBase base_;
  QListWidget* models_ = nullptr;
  std::vector<QCheckBox*> precisions_;  // kAllPolicies, in order
  QLineEdit* batch_sizes_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QLabel* count_ = nullptr;
  QLabel* error_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
  int members_ = 0;
  QString error_text_;
};

}  // namespace mixlab::ui
