#include "ui/settings.h"

namespace mixlab::ui::settings {

const Key<QByteArray> kWindowGeometry{"window/geometry", {}};
const Key<QByteArray> kWindowState{"window/state", {}};
const Key<int> kCurrentTab{"window/tab", 0};

const Key<QString> kLastModelFile{"model/last_file", {}};
const Key<QString> kLastTemplate{"model/last_template", "fashion-mlp"};
const Key<QString> kLastDirectory{"files/last_directory", {}};

const Key<QString> kDataset{"run/dataset", "fashion-mnist"};
const Key<QString> kPrecision{"run/precision", "float32"};
const Key<QString> kLossScale{"run/loss_scale", "auto"};
const Key<int> kBatchSize{"run/batch_size", 32};
const Key<bool> kLimitBySteps{"run/limit_by_steps", false};
const Key<int> kEpochs{"run/epochs", 1};
const Key<int> kSteps{"run/steps", 1000};
const Key<QString> kOptimizer{"run/optimizer", "adam"};
const Key<double> kLearningRate{"run/learning_rate", 0.0};
const Key<int> kSeed{"run/seed", 42};
const Key<int> kThreads{"run/threads", 0};
const Key<QString> kDevice{"run/device", "cpu"};
const Key<bool> kTf32{"run/tf32", false};
const Key<bool> kCudaGraphs{"run/cuda_graphs", false};
const Key<bool> kDataOnDevice{"run/data_on_device", false};
const Key<bool> kLayerTiming{"run/layer_timing", false};

const Key<bool> kCompareByTime{"compare/by_time", false};

const Key<QByteArray> kHistoryHeaderState{"history/header_state", {}};
const Key<QString> kHistoryFilterText{"history/filter_text", {}};
const Key<QString> kHistoryFilterStatus{"history/filter_status", {}};
const Key<QString> kHistoryFilterPrecision{"history/filter_precision", {}};
const Key<QString> kHistoryFilterModel{"history/filter_model", {}};

}  // namespace mixlab::ui::settings
