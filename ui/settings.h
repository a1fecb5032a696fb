// Every QSettings key of the application, declared once with its default. Code reads
// `settings::kBatchSize.get()` and writes `settings::kBatchSize.set(64)`; no string keys
// elsewhere.
#pragma once

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QVariant>

namespace mixlab {
struct RunField;
}

namespace mixlab::ui::settings {

template <typename T>
struct Key {
  const char* name;
  T fallback;

  T get() const {
    return QSettings().value(name, QVariant::fromValue(fallback)).template value<T>();
  }
  void set(const T& value) const { QSettings().setValue(name, QVariant::fromValue(value)); }
  void reset() const { QSettings().remove(name); }
};

// The main window.
extern const Key<QByteArray> kWindowGeometry;
extern const Key<QByteArray> kWindowState;
extern const Key<int> kCurrentTab;

// The model: the file last opened or saved, or the built-in template last chosen.
extern const Key<QString> kLastModelFile;
extern const Key<QString> kLastTemplate;
extern const Key<QString> kLastDirectory;  // of file dialogs

// The run panel's last settings: each field of the run-settings table (engine/train/run_fields.h)
// under "run/NAME" in its text form (run_setting_key), the same keys earlier MixLab versions
// wrote one by one; and what the panel holds beyond a RunConfig:
extern const Key<bool> kLimitBySteps;  // true: the run's length is run/steps; false: run/epochs
extern const Key<QString> kDevice;     // "cpu", "cuda:0"

// The Doctor tab's device: its label ("RTX 2060 (prediction)"); "" for the first, this CPU.
extern const Key<QString> kDoctorDevice;

// The live charts' x axis and the comparison's.
extern const Key<bool> kCompareByTime;  // false: by step

// The run history: its table's columns (widths, order, sort) and its filters.
extern const Key<QByteArray> kHistoryHeaderState;
extern const Key<QString> kHistoryFilterText;
extern const Key<QString> kHistoryFilterStatus;     // "" (any) or a status: "finished"
extern const Key<QString> kHistoryFilterPrecision;  // "" (any) or a policy: "mixed_float16"
extern const Key<QString> kHistoryFilterModel;      // "" (any) or a model name

// "run/batch_size": where the run panel remembers a run setting.
QString run_setting_key(const RunField& field);

}  // namespace mixlab::ui::settings
