// Every QSettings key of the application, declared once with its default. Code reads
// `settings::kBatchSize.get()` and writes `settings::kBatchSize.set(64)`; no string keys
// elsewhere.
#pragma once

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QVariant>

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

// The run panel's last settings.
extern const Key<QString> kDataset;    // the engine's dataset spec: "fashion-mnist", "cifar10:DIR"
extern const Key<QString> kPrecision;  // "float32", "mixed_float16", "mixed_bfloat16"
extern const Key<QString> kLossScale;  // "auto", "none", "dynamic", "dynamic:1024", "128"
extern const Key<int> kBatchSize;
extern const Key<bool> kLimitBySteps;  // true: run kSteps steps; false: kEpochs epochs
extern const Key<int> kEpochs;
extern const Key<int> kSteps;
extern const Key<QString> kOptimizer;    // "adam", "sgd"
extern const Key<double> kLearningRate;  // 0: the optimizer's Keras default
extern const Key<int> kSeed;
extern const Key<int> kThreads;     // 0: every core
extern const Key<QString> kDevice;  // "cpu", "cuda:0"
// GPU options (RunConfig): used on a GPU device only.
extern const Key<bool> kTf32;
extern const Key<bool> kCudaGraphs;
extern const Key<bool> kDataOnDevice;
extern const Key<bool> kLayerTiming;

// The live charts' x axis and the comparison's.
extern const Key<bool> kCompareByTime;  // false: by step

// The run history: its table's columns (widths, order, sort) and its filters.
extern const Key<QByteArray> kHistoryHeaderState;
extern const Key<QString> kHistoryFilterText;
extern const Key<QString> kHistoryFilterStatus;     // "" (any) or a status: "finished"
extern const Key<QString> kHistoryFilterPrecision;  // "" (any) or a policy: "mixed_float16"
extern const Key<QString> kHistoryFilterModel;      // "" (any) or a model name

}  // namespace mixlab::ui::settings
