// The run panel's settings: each widget bound to its field of the run-settings table
// (FieldBindings), remembered and restored, the dataset shown and read back, and the RunConfig
// they make (config(), settings()). The widgets themselves are run_panel.cpp's.
#include "ui/run/run_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QLineEdit>
#include <QRadioButton>
#include <QSpinBox>
#include <QThread>
#include <cstring>
#include <string_view>

#include "engine/core/error.h"
#include "engine/train/run_fields.h"
#include "ui/run/run_panel_tables.h"
#include "ui/settings.h"

namespace mixlab::ui {

namespace run_panel {

std::span<const DatasetKind> dataset_kinds() {
  static constexpr DatasetKind kinds[] = {
      {"Fashion-MNIST (Debian's dataset-fashion-mnist)", "fashion-mnist", false},
      {"Fashion-MNIST folder (IDX files)", "fashion-mnist:", true},
      {"MNIST folder (IDX files)", "mnist:", true},
      {"CIFAR-10 folder (binary version)", "cifar10:", true},
      {"CIFAR-100 folder (binary version)", "cifar100:", true},
      {"Synthetic (the model's input shape)", "synthetic", false},
      {"Text file (its bytes as tokens)", "text:", true},
      {"Synthetic tokens (the model's steps and vocabulary)", "tokens", false},
  };
  static_assert(std::string_view(kinds[kSyntheticKind].prefix) == "synthetic");
  static_assert(std::string_view(kinds[kTextKind].prefix) == "text:");
  static_assert(std::string_view(kinds[kTokensKind].prefix) == "tokens");
  return kinds;
}

}  // namespace run_panel

using run_panel::dataset_kinds;
using run_panel::DatasetKind;
using run_panel::kSyntheticKind;
using run_panel::kTextKind;
using run_panel::kTokensKind;
using enum run_panel::LossScaleMode;

namespace {

QString text_of(std::string_view text) {
  return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

}  // namespace

// Each widget shows one field of the run-settings table; the fields without one (SGD's momentum,
// Adam's betas and epsilon, evaluation, warm-up steps) are carried by FieldBindings.
void RunPanel::bind_fields() {
  fields_.bind("dataset", {{dataset_kind_, dataset_dir_, synthetic_samples_},
                           [this] {
                             // Unvalidated: a folder may not be chosen yet.
                             const DatasetKind& k =
                                 dataset_kinds()[std::max(0, dataset_kind_->currentIndex())];
                             const int index = dataset_kind_->currentIndex();
                             if (index == kSyntheticKind || index == kTokensKind ||
                                 index == kTextKind) {
                               try {  // the model's shape decides the rest
                                 return QString::fromStdString(dataset_spec().to_string());
                               } catch (const ConfigError&) {
                                 // No file chosen yet, or a model without token ids.
                               }
                             }
                             return QString::fromLatin1(k.prefix) +
                                    (k.folder ? dataset_dir_->text().trimmed() : QString());
                           },
                           [this](const QString& spec) { return show_dataset(spec); },
                           {}});
  fields_.bind("precision", {{precision_},
                             [this] { return text_of(to_string(precision())); },
                             [this](const QString& text) {
                               const auto policy = parse_policy(text.toStdString());
                               if (policy) set_precision(*policy);
                               return policy.has_value();
                             },
                             {}});
  fields_.bind("loss_scale",
               {{loss_scale_mode_, loss_scale_value_},
                [this] {
                  // "auto" follows the precision; the rest is the engine's text.
                  if (loss_scale_mode_->currentIndex() == kAuto) return QStringLiteral("auto");
                  return QString::fromStdString(loss_scale_for(precision()).to_string());
                },
                [this](const QString& text) {
                  if (text == QLatin1String("auto")) {
                    loss_scale_mode_->setCurrentIndex(kAuto);
                    return true;
                  }
                  const auto parsed = parse_loss_scale(text.toStdString());
                  if (!parsed) return false;
                  using Mode = LossScaleConfig::Mode;
                  loss_scale_mode_->setCurrentIndex(parsed->mode == Mode::none      ? kNone
                                                    : parsed->mode == Mode::dynamic ? kDynamic
                                                                                    : kStatic);
                  if (parsed->mode != Mode::none)
                    loss_scale_value_->setValue(parsed->initial_scale);
                  return true;
                },
                QStringLiteral("auto")});
  fields_.bind("batch_size", FieldBindings::spin_box(batch_size_));
  fields_.bind("optimizer", FieldBindings::combo_box(optimizer_));
  fields_.bind("learning_rate", FieldBindings::spin_box(learning_rate_));
  fields_.bind("epochs", FieldBindings::spin_box(epochs_));
  // The step count shown; the panel remembers apart whether it limits the run (kLimitBySteps).
  FieldBindings::Binding steps = FieldBindings::spin_box(steps_);
  steps.widgets += {by_epochs_, by_steps_};
  steps.show = [this, count = steps.show](const QString& text) {
    if (text == QLatin1String("0")) {
      by_epochs_->setChecked(true);
      return true;
    }
    if (!count(text)) return false;
    by_steps_->setChecked(true);
    return true;
  };
  fields_.bind("steps", steps);
  fields_.bind("seed", FieldBindings::spin_box(seed_));
  fields_.bind("threads", FieldBindings::spin_box(threads_));
  fields_.bind("tf32", FieldBindings::check_box(tf32_));
  fields_.bind("cuda_graphs", FieldBindings::check_box(cuda_graphs_));
  fields_.bind("data_on_device", FieldBindings::check_box(data_on_device_));
  fields_.bind("layer_timing", FieldBindings::check_box(layer_timing_));
  fields_.bind("attention", FieldBindings::combo_box(attention_));
  fields_.bind("fp8_history", FieldBindings::spin_box(fp8_history_));
  fields_.bind("fp8_amax", FieldBindings::combo_box(fp8_amax_));
  fields_.bind("fp8_margin", FieldBindings::spin_box(fp8_margin_));
  fields_.bind("fp8_format", FieldBindings::combo_box(fp8_format_));
}

void RunPanel::load_settings() {
  fields_.load();
  const QSignalBlocker blockers[] = {QSignalBlocker(by_epochs_), QSignalBlocker(by_steps_),
                                     QSignalBlocker(device_)};
  (settings::kLimitBySteps.get() ? by_steps_ : by_epochs_)->setChecked(true);
  const QString device = settings::kDevice.get();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const QString name = i == 0 ? QStringLiteral("cpu") : QStringLiteral("cuda:%1").arg(i - 1);
    if (name == device) device_->setCurrentIndex(static_cast<int>(i));
  }
}

void RunPanel::save_settings() const {
  fields_.save();
  settings::kLimitBySteps.set(by_steps_->isChecked());
  settings::kDevice.set(QString::fromStdString(device()));
}

QString RunPanel::field_text(const RunField& field) const {
  return fields_.text(field);
}

bool RunPanel::set_field_text(const RunField& field, const QString& text) {
  if (!fields_.show(field, text)) return false;
  settings_edited();
  return true;
}

QString RunPanel::set_dataset(const QString& spec) {
  if (show_dataset(spec)) return {};
  QString error;
  try {
    parse_dataset_spec(spec.toStdString());
    error = tr("the dataset '%1' cannot be chosen here").arg(spec);
  } catch (const std::exception& e) {
    error = tr("dataset '%1': %2").arg(spec, QString::fromUtf8(e.what()));
  }
  {
    const QSignalBlocker quiet(dataset_kind_);  // not a choice to remember
    dataset_kind_->setCurrentIndex(-1);
  }
  dataset_error_ = error;
  update_state();
  return error;
}

bool RunPanel::show_dataset(const QString& spec) {
  for (int i = 0; i < static_cast<int>(dataset_kinds().size()); ++i) {
    const DatasetKind& k = dataset_kinds()[i];
    const QLatin1String prefix(k.prefix);
    const bool derived = i == kSyntheticKind || i == kTokensKind;
    const bool matches = k.folder  ? spec.startsWith(prefix)
                         : derived ? spec.section(':', 0, 0) == prefix
                                   : spec == prefix;
    if (!matches) continue;
    // A synthetic set's shape and classes follow the model; its sample count is the spec's.
    std::optional<std::int64_t> samples;
    if (derived && spec.contains(':')) {
      try {
        samples = parse_dataset_spec(spec.toStdString()).train_size;
      } catch (const ConfigError&) {
        return false;
      }
    }
    dataset_kind_->setCurrentIndex(i);
    if (k.folder) {
      QString path = spec.mid(int(std::strlen(k.prefix)));
      // A text file's SEQ_LEN follows the model's steps: the path alone is shown.
      if (i == kTextKind) {
        try {
          path = QString::fromStdString(parse_dataset_spec(spec.toStdString()).dir.string());
        } catch (const ConfigError&) {
          return false;
        }
      }
      dataset_dir_->setText(path);
    }
    if (samples) synthetic_samples_->setValue(int(*samples));
    return true;
  }
  return false;
}

void RunPanel::browse_dataset_folder() {
  const QString start =
      dataset_dir_->text().isEmpty() ? settings::kLastDirectory.get() : dataset_dir_->text();
  const QString dir = dataset_kind_->currentIndex() == kTextKind
                          ? QFileDialog::getOpenFileName(this, tr("Text file"), start)
                          : QFileDialog::getExistingDirectory(this, tr("Dataset folder"), start);
  if (dir.isEmpty()) return;
  settings::kLastDirectory.set(dir);
  dataset_dir_->setText(dir);
}

DatasetSpec RunPanel::dataset_spec() const {
  const int kind = dataset_kind_->currentIndex();
  if (kind == kSyntheticKind) {
    DatasetSpec spec;
    spec.kind = DatasetSpec::Kind::synthetic;
    spec.shape = model_input_;
    spec.classes = static_cast<int>(model_classes_);
    spec.train_size = synthetic_samples_->value();
    return spec;
  }
  if (kind == kTokensKind || kind == kTextKind) {
    if (model_input_.size() != 1 || model_vocabulary_ < 1) {
      throw ConfigError(
          "token datasets need a model whose Embedding reads its [steps] input; this one "
          "takes " +
          format_shape(model_input_));
    }
  }
  if (kind == kTokensKind) {
    DatasetSpec spec;
    spec.kind = DatasetSpec::Kind::tokens;
    spec.sequence_length = static_cast<int>(model_input_[0]);
    const bool per_step = model_label_positions_ > 1;
    std::int64_t vocabulary = std::min<std::int64_t>(model_vocabulary_, 256);
    if (per_step) vocabulary = std::min(vocabulary, model_classes_);
    spec.vocabulary = static_cast<int>(std::max<std::int64_t>(2, vocabulary));
    spec.classes = per_step ? 0 : static_cast<int>(model_classes_);
    spec.train_size = synthetic_samples_->value();
    return spec;
  }
  if (kind < 0) throw ConfigError("choose a dataset");
  const DatasetKind& k = dataset_kinds()[kind];
  if (!k.folder) return parse_dataset_spec(k.prefix);
  const QString dir = dataset_dir_->text().trimmed();
  if (dir.isEmpty()) {
    throw ConfigError(kind == kTextKind
                          ? std::string("choose the text file to train on")
                          : std::string("choose the folder of the ") + k.label + " dataset");
  }
  if (kind == kTextKind) {
    DatasetSpec spec;
    spec.kind = DatasetSpec::Kind::text;
    spec.dir = dir.toStdString();
    spec.sequence_length = static_cast<int>(model_input_[0]);
    return spec;
  }
  return parse_dataset_spec(std::string(k.prefix) + dir.toStdString());
}

LossScaleConfig RunPanel::loss_scale_for(Policy policy) const {
  switch (loss_scale_mode_->currentIndex()) {
    case kNone:
      return LossScaleConfig::none();
    case kStatic:
      return LossScaleConfig::fixed(loss_scale_value_->value());
    case kDynamic: {
      LossScaleConfig c = LossScaleConfig::dynamic();
      c.initial_scale = loss_scale_value_->value();
      return c;
    }
    default:
      return LossScaleConfig::keras_default(policy);
  }
}

RunConfig RunPanel::config_with(Policy precision) const {
  const DatasetSpec dataset = dataset_spec();  // says which folder to choose, before the fields
  RunConfig c = settings_with(precision);
  c.dataset = dataset;
  return c;
}

RunConfig RunPanel::settings() const {
  return settings_with(precision());
}

RunConfig RunPanel::settings_with(Policy precision) const {
  RunConfig c;
  // Every field in table order, as the panel holds it, the precision asked for; the dataset
  // aside (config_with() checks it: no later field depends on it).
  const RunField& precision_field = run_field("precision");
  for (const RunField& field : run_fields()) {
    if (field.name == "dataset") continue;
    const QString text =
        &field == &precision_field ? text_of(to_string(precision)) : field_text(field);
    mixlab::set_field_text(field, c, text.toStdString());
  }
  if (by_steps_->isChecked()) {
    c.epochs = RunConfig{}.epochs;
  } else {
    c.steps = 0;
  }
  // "All cores" leaves one to the GUI: a core drawing charts would stall every parallel region
  // of a run that counted on it.
  if (c.threads == 0) c.threads = std::max(1, QThread::idealThreadCount() - 1);
  return c;
}

int RunPanel::batch_size() const {
  return batch_size_->value();
}

OptimizerConfig RunPanel::optimizer() const {
  return settings().optimizer;
}

RunConfig RunPanel::config() const {
  return config_with(precision());
}

}  // namespace mixlab::ui
