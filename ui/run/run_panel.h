// The run panel: everything about a run except the model: dataset, precision policy, loss
// scaling, batch size, epochs or steps, optimizer and learning rate, seed, threads, device and
// the GPU options; and Start, Stop, "float32 vs mixed" and Sweep…. A GPU device starts only when
// the CUDA backend can train (else Start says why). It remembers the last settings, every field
// of the run-settings table (engine/train/run_fields.h) through FieldBindings, and flags a policy
// the chosen device cannot run well.
#pragma once

#include <QAction>
#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/spec/shape_inference.h"
#include "engine/train/run_types.h"
#include "ui/run/field_bindings.h"

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QToolButton;

namespace mixlab::ui {

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  // `devices`: the CPU first, then each CUDA GPU (engine available_devices()).
  explicit RunPanel(std::vector<DeviceInfo> devices, QWidget* parent = nullptr);

  // The run as set up. Throws ConfigError naming the field for what the widgets cannot rule
  // out (a dataset folder not chosen). Fields the panel shows no widget for (SGD's momentum,
  // Adam's betas, the warm-up steps) come as remembered or last set with set_field_text(). The
  // GPU options come as their boxes hold them, whatever the device: the run controller applies
  // them as the device runs them (applicable_config), as mixlab-cli train does.
  RunConfig config() const;
  // The same without the dataset (RunConfig's default), which may not be chosen yet: the
  // settings the Doctor tab diagnoses at.
  RunConfig settings() const;
  // The same run under another policy, for the float32-vs-mixed comparison: loss scaling as
  // Keras would pick it for that policy when set to auto.
  RunConfig config_with(Policy precision) const;
  // The mixed policy the comparison runs against float32: the chosen one when it is mixed,
  // else what suits the device (bf16 on a CPU or an Ampere+ GPU, float16 before).
  Policy mixed_policy() const;
  std::string device() const;  // "cpu" or "cuda:N"
  const DeviceInfo& device_info() const;
  Policy precision() const;
  int batch_size() const;
  // The optimizer as the panel holds it (its kind, learning rate and remembered settings).
  OptimizerConfig optimizer() const;
  // The synthetic dataset takes the model's input shape and as many classes as it has outputs
  // (2 for one sigmoid output); the token datasets its steps, its Embedding's `vocabulary` (0:
  // none) and its labels per sample (a language model's steps).
  void set_model_shape(const Shape& input_shape, std::int64_t outputs, int vocabulary = 0,
                       std::int64_t label_positions = 1);
  // Why Start cannot run now (an invalid model); empty when it can.
  void set_blocked_reason(const QString& reason);
  void set_running(bool running);
  // The warning shown next to the precision, empty when none (for tests).
  QString policy_warning() const;

  QAction* start_action() const { return start_; }
  QAction* stop_action() const { return stop_; }
  QAction* compare_action() const { return compare_; }
  QAction* compare_all_action() const { return compare_all_; }
  // The policies "all policies" runs: every one this device runs (emulated included), float32
  // first.
  std::vector<Policy> comparison_policies() const;
  QAction* sweep_action() const { return sweep_; }

  // Sets the dataset as the engine's spec text ("fashion-mnist", "cifar10:/data/c10",
  // "synthetic"). A spec it cannot show leaves no dataset chosen (Start is then blocked with the
  // reason) and returns the error in words; empty when shown.
  QString set_dataset(const QString& spec);
  void set_precision(Policy policy);
  void set_batch_size(int batch);
  void set_steps(int steps);  // limits the run by steps
  void set_epochs(int epochs);

  // A run setting as the panel holds it, in the table's text form: what it remembers. The
  // steps are the step count shown, whether or not the run is limited by steps.
  QString field_text(const RunField& field) const;
  // Shows `text` as the field's value and remembers it (a run's settings to repeat; tests).
  // False, changing nothing, when the field or its widget does not take it.
  bool set_field_text(const RunField& field, const QString& text);

 signals:
  void start_requested();
  void stop_requested();
  void compare_requested();
  void compare_all_requested();  // "all policies": one run per policy the device runs
  void sweep_requested();  // Sweep…: a grid of runs with these settings
  void precision_changed(mixlab::Policy policy);
  // The batch size or the optimizer changed (the editor's memory for training follows).
  void training_changed(int batch_size, const mixlab::OptimizerConfig& optimizer);
  // Any setting changed: settings() (the Doctor tab diagnoses at them).
  void settings_changed(const mixlab::RunConfig& settings);

 private:
  void build();
  void bind_fields();
  void load_settings();
  void save_settings() const;
  void settings_edited();  // a widget's value changed: state, memory and settings_changed
  void update_state();
  void browse_dataset_folder();
  bool show_dataset(const QString& spec);  // false: not a spec the dataset widgets show
  DatasetSpec dataset_spec() const;
  LossScaleConfig loss_scale_for(Policy policy) const;
  RunConfig settings_with(Policy precision) const;  // settings() under another policy

  std::vector<DeviceInfo> devices_;
  Shape model_input_{28, 28, 1};
  std::int64_t model_classes_ = 10;
  int model_vocabulary_ = 0;                // its Embedding's rows (0: it reads no token ids)
  std::int64_t model_label_positions_ = 1;  // labels per sample (a language model's steps)
  QString blocked_reason_;
  QString dataset_error_;  // why no dataset is chosen (a bad --dataset); empty otherwise
  bool running_ = false;

  QComboBox* dataset_kind_ = nullptr;
  QLineEdit* dataset_dir_ = nullptr;
  QToolButton* browse_ = nullptr;
  QSpinBox* synthetic_samples_ = nullptr;
  QLabel* synthetic_shape_ = nullptr;
  QComboBox* precision_ = nullptr;
  QLabel* policy_warning_ = nullptr;
  QComboBox* loss_scale_mode_ = nullptr;
  QDoubleSpinBox* loss_scale_value_ = nullptr;
  QSpinBox* batch_size_ = nullptr;
  QRadioButton* by_epochs_ = nullptr;
  QRadioButton* by_steps_ = nullptr;
  QSpinBox* epochs_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QComboBox* optimizer_ = nullptr;
  QDoubleSpinBox* learning_rate_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* threads_ = nullptr;
  QComboBox* device_ = nullptr;
  // GPU options, enabled for a GPU device only.
  QCheckBox* tf32_ = nullptr;
  QCheckBox* cuda_graphs_ = nullptr;
  QCheckBox* data_on_device_ = nullptr;
  QCheckBox* layer_timing_ = nullptr;
  QComboBox* attention_ = nullptr;  // auto, unfused, fused (engine: AttentionKernels)
  // mixed_float8's delayed scaling (engine: Fp8Recipe)
  QSpinBox* fp8_history_ = nullptr;
  QComboBox* fp8_amax_ = nullptr;
  QSpinBox* fp8_margin_ = nullptr;
  QComboBox* fp8_format_ = nullptr;
  QPushButton* start_button_ = nullptr;
  QPushButton* stop_button_ = nullptr;
  QToolButton* compare_button_ = nullptr;  // float32 vs mixed; its menu: all policies
  QPushButton* sweep_button_ = nullptr;
  QAction* start_ = nullptr;
  QAction* stop_ = nullptr;
  QAction* compare_ = nullptr;
  QAction* compare_all_ = nullptr;
  QAction* sweep_ = nullptr;
  FieldBindings fields_;
};

}  // namespace mixlab::ui
