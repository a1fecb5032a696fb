// The run panel's widgets: the settings form with the device and its GPU options, the Start,
// Stop, "float32 vs mixed" and Sweep… actions, and what they enable (update_state). The
// settings they hold, as the run-settings table's fields, are run_panel_settings.cpp's.
#include "ui/run/run_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <limits>

#include "ui/run/run_panel_tables.h"

namespace mixlab::ui {

using run_panel::dataset_kinds;
using run_panel::DatasetKind;
using run_panel::kSyntheticKind;
using run_panel::kTokensKind;
using enum run_panel::LossScaleMode;

namespace {

QString device_label(const DeviceInfo& d) {
  if (d.kind == "cpu") {
    return QStringLiteral("CPU: %1 (%2 threads)")
        .arg(QString::fromStdString(d.name))
        .arg(d.threads);
  }
  return QStringLiteral("GPU: %1 (compute capability %2)")
      .arg(QString::fromStdString(d.name), QString::fromStdString(d.compute_capability));
}

}  // namespace

RunPanel::RunPanel(std::vector<DeviceInfo> devices, QWidget* parent)
    : QWidget(parent), devices_(std::move(devices)) {
  if (devices_.empty() || devices_.front().kind != "cpu") {
    DeviceInfo cpu;
    cpu.kind = "cpu";
    cpu.name = "CPU";
    devices_.insert(devices_.begin(), cpu);
  }
  build();
  bind_fields();
  load_settings();
  update_state();
}

void RunPanel::build() {
  auto* form = new QFormLayout;

  dataset_kind_ = new QComboBox;
  for (const DatasetKind& k : dataset_kinds()) dataset_kind_->addItem(tr(k.label));
  dataset_kind_->setToolTip(
      tr("The data to train on. Images arrive as 0-255 values, as Keras's "
         "load_data gives them; a Rescaling layer scales them."));
  form->addRow(tr("Dataset"), dataset_kind_);

  dataset_dir_ = new QLineEdit;
  dataset_dir_->setPlaceholderText(tr("folder with the dataset's files"));
  dataset_dir_->setToolTip(tr("The folder holding the dataset's files"));
  browse_ = new QToolButton;
  browse_->setText(tr("…"));
  browse_->setToolTip(tr("Choose the dataset's folder"));
  auto* dir_row = new QHBoxLayout;
  dir_row->addWidget(dataset_dir_);
  dir_row->addWidget(browse_);
  form->addRow(tr("Folder"), dir_row);

  synthetic_samples_ = new QSpinBox;
  synthetic_samples_->setRange(16, 1'000'000);
  synthetic_samples_->setValue(10'000);
  synthetic_samples_->setToolTip(
      tr("Training samples of the synthetic set (the test set is a "
         "fifth of it)"));
  synthetic_shape_ = new QLabel;
  synthetic_shape_->setToolTip(
      tr("Synthetic samples take the model's input shape and one class per model output"));
  auto* synth_row = new QHBoxLayout;
  synth_row->addWidget(synthetic_samples_);
  synth_row->addWidget(new QLabel(tr("samples of")));
  synth_row->addWidget(synthetic_shape_, 1);
  form->addRow(tr("Synthetic"), synth_row);

  precision_ = new QComboBox;
  for (Policy p : kAllPolicies)
    precision_->addItem(QString::fromUtf8(to_string(p).data(), int(to_string(p).size())),
                        static_cast<int>(p));
  precision_->setToolTip(
      tr("Keras's precision policy: mixed policies compute in 16 bits and "
         "keep float32 master weights"));
  form->addRow(tr("Precision"), precision_);
  policy_warning_ = new QLabel;
  policy_warning_->setWordWrap(true);
  policy_warning_->setStyleSheet(QStringLiteral("color: #c77c00;"));
  form->addRow(QString(), policy_warning_);

  loss_scale_mode_ = new QComboBox;
  loss_scale_mode_->addItems(
      {tr("auto (Keras: dynamic under mixed_float16)"), tr("none"), tr("static"), tr("dynamic")});
  loss_scale_mode_->setToolTip(
      tr("Loss scaling: dynamic halves the scale and skips the step on "
         "overflow, doubles it after 2000 finite steps"));
  loss_scale_value_ = new QDoubleSpinBox;
  loss_scale_value_->setRange(1.0, 1e12);
  loss_scale_value_->setDecimals(0);
  loss_scale_value_->setValue(32768.0);
  loss_scale_value_->setToolTip(tr("The static factor, or dynamic scaling's initial scale"));
  auto* scale_row = new QHBoxLayout;
  scale_row->addWidget(loss_scale_mode_, 1);
  scale_row->addWidget(loss_scale_value_);
  form->addRow(tr("Loss scaling"), scale_row);

  // mixed_float8's delayed scaling (engine/ops/fp8_scaling.h), on one row.
  fp8_history_ = new QSpinBox;
  fp8_history_->setObjectName(QStringLiteral("fp8_history"));
  fp8_history_->setRange(1, Fp8Recipe::kMaxHistory);
  fp8_history_->setToolTip(
      tr("mixed_float8: how many steps' amaxes make each FP8 tensor's "
         "scale (Keras's amax_history_length, 1024)"));
  fp8_amax_ = new QComboBox;
  fp8_amax_->setObjectName(QStringLiteral("fp8_amax"));
  fp8_amax_->addItems({QStringLiteral("max"), QStringLiteral("most_recent")});
  fp8_amax_->setToolTip(
      tr("mixed_float8: the scale from the history's largest amax (max, "
         "Keras's) or from the last step's (most_recent)"));
  fp8_margin_ = new QSpinBox;
  fp8_margin_->setObjectName(QStringLiteral("fp8_margin"));
  fp8_margin_->setRange(0, Fp8Recipe::kMaxMargin);
  fp8_margin_->setPrefix(tr("margin "));
  fp8_margin_->setToolTip(
      tr("mixed_float8: binades of headroom: the amax is mapped to the "
         "format's largest value / 2^margin"));
  fp8_format_ = new QComboBox;
  fp8_format_->setObjectName(QStringLiteral("fp8_format"));
  fp8_format_->addItems({QStringLiteral("hybrid"), QStringLiteral("e4m3")});
  fp8_format_->setToolTip(
      tr("mixed_float8: E4M3 forward and E5M2 gradients (hybrid), or E4M3 "
         "for both"));
  auto* fp8_row = new QHBoxLayout;
  fp8_row->addWidget(fp8_history_);
  fp8_row->addWidget(fp8_amax_);
  fp8_row->addWidget(fp8_margin_);
  fp8_row->addWidget(fp8_format_);
  form->addRow(tr("FP8 scaling"), fp8_row);

  batch_size_ = new QSpinBox;
  batch_size_->setRange(1, 1 << 16);
  batch_size_->setToolTip(tr("Samples per step (Keras's default: 32)"));
  form->addRow(tr("Batch size"), batch_size_);

  by_epochs_ = new QRadioButton(tr("Epochs"));
  by_steps_ = new QRadioButton(tr("Steps"));
  auto* group = new QButtonGroup(this);
  group->addButton(by_epochs_);
  group->addButton(by_steps_);
  epochs_ = new QSpinBox;
  epochs_->setRange(1, 100'000);
  epochs_->setToolTip(tr("Passes over the training set"));
  steps_ = new QSpinBox;
  steps_->setRange(1, 100'000'000);
  steps_->setValue(1000);  // shown while the run is limited by epochs
  steps_->setToolTip(tr("Training steps; the run passes over the data as often as it needs"));
  by_epochs_->setToolTip(epochs_->toolTip());
  by_steps_->setToolTip(steps_->toolTip());
  auto* limit_row = new QHBoxLayout;
  limit_row->addWidget(by_epochs_);
  limit_row->addWidget(epochs_);
  limit_row->addWidget(by_steps_);
  limit_row->addWidget(steps_);
  form->addRow(tr("Length"), limit_row);

  optimizer_ = new QComboBox;
  optimizer_->addItems({QStringLiteral("adam"), QStringLiteral("sgd")});
  optimizer_->setToolTip(tr("The optimizer, with Keras's defaults"));
  learning_rate_ = new QDoubleSpinBox;
  learning_rate_->setDecimals(6);
  learning_rate_->setRange(1e-6, 10.0);
  learning_rate_->setSingleStep(0.0001);
  learning_rate_->setToolTip(tr("Learning rate (Keras: 0.001 for Adam, 0.01 for SGD)"));
  auto* opt_row = new QHBoxLayout;
  opt_row->addWidget(optimizer_);
  opt_row->addWidget(learning_rate_);
  form->addRow(tr("Optimizer"), opt_row);

  seed_ = new QSpinBox;
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setToolTip(tr("Seed of weights, shuffling and dropout: the same seed repeats a run"));
  threads_ = new QSpinBox;
  threads_->setRange(0, 4096);
  threads_->setSpecialValueText(tr("all but one core"));
  threads_->setToolTip(
      tr("CPU threads; by default every core but one, which the GUI keeps to "
         "draw the live charts"));
  auto* seed_row = new QHBoxLayout;
  seed_row->addWidget(seed_);
  seed_row->addWidget(new QLabel(tr("threads")));
  seed_row->addWidget(threads_);
  form->addRow(tr("Seed"), seed_row);

  device_ = new QComboBox;
  for (const DeviceInfo& d : devices_) device_->addItem(device_label(d));
  device_->setToolTip(tr("Where the run trains"));
  // Long entries (device names, dataset kinds) must not widen the dock.
  for (QComboBox* combo : {dataset_kind_, loss_scale_mode_, device_}) {
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(16);
  }
  form->addRow(tr("Device"), device_);
  device_->setObjectName(QStringLiteral("device"));

  const auto gpu_option = [this](const QString& text, const QString& tip, const char* name) {
    auto* box = new QCheckBox(text);
    box->setToolTip(tip);
    box->setObjectName(QLatin1String(name));
    return box;
  };
  tf32_ = gpu_option(tr("TF32 matmuls"),
                     tr("float32 policy on a GPU: matmuls and convolutions on TF32 tensor "
                        "cores (Ampere and later): faster, with a 10-bit mantissa"),
                     "tf32");
  cuda_graphs_ = gpu_option(tr("CUDA graphs"),
                            tr("Capture the training step once and replay it: less launch "
                               "overhead for small layers and batches"),
                            "cuda_graphs");
  data_on_device_ = gpu_option(tr("Dataset on the GPU"),
                               tr("Keep the training split in GPU memory when it fits: no "
                                  "host-to-device copy per step"),
                               "data_on_device");
  layer_timing_ = gpu_option(tr("Per-layer timing"),
                             tr("Time every layer's forward and backward (a GPU's events or "
                                "the CPU's clock): a per-layer chart on Live and in the "
                                "history (a GPU step slows a little)"),
                             "layer_timing");
  auto* gpu_grid = new QGridLayout;
  gpu_grid->addWidget(tf32_, 0, 0);
  gpu_grid->addWidget(cuda_graphs_, 0, 1);
  gpu_grid->addWidget(data_on_device_, 1, 0);
  gpu_grid->addWidget(layer_timing_, 1, 1);
  form->addRow(tr("GPU"), gpu_grid);
  attention_ = new QComboBox;
  attention_->setObjectName(QStringLiteral("attention"));
  attention_->addItems(
      {QStringLiteral("auto"), QStringLiteral("unfused"), QStringLiteral("fused")});
  attention_->setToolTip(
      tr("GPU: which kernels run MultiHeadAttention's cores: cuDNN 9's fused attention (fused: "
         "16-bit policies from compute capability 8.0, head sizes cuDNN takes; otherwise the run "
         "is refused with the reason), MixLab's unfused kernels (cuBLASLt, the scores through "
         "memory, a float32 softmax), or fused where cuDNN takes it, else unfused (auto). The "
         "run's notes say which ran. The CPU runs attention unfused"));
  form->addRow(tr("Attention"), attention_);

  start_ = new QAction(tr("Start"), this);
  start_->setShortcut(QKeySequence(tr("Ctrl+R")));
  stop_ = new QAction(tr("Stop"), this);
  stop_->setShortcut(QKeySequence(tr("Ctrl+.")));
  stop_->setToolTip(tr("Stop the run after its current step (Ctrl+.)"));
  compare_ = new QAction(tr("float32 vs mixed"), this);
  compare_->setToolTip(
      tr("Run float32 and the mixed policy with otherwise identical settings, "
         "then compare them"));
  sweep_ = new QAction(tr("Sweep…"), this);
  sweep_->setShortcut(QKeySequence(tr("Ctrl+Shift+R")));
  sweep_->setToolTip(
      tr("Run a grid of precision policies and batch sizes with these settings (Ctrl+Shift+R)"));
  start_button_ = new QPushButton(tr("Start"));
  stop_button_ = new QPushButton(tr("Stop"));
  compare_all_ = new QAction(tr("Compare all policies"), this);
  compare_all_->setToolTip(
      tr("Run every precision policy this device runs (float32, mixed_float16, mixed_bfloat16, "
         "mixed_float8) with otherwise identical settings, then compare them"));
  compare_button_ = new QToolButton;
  compare_button_->setObjectName(QStringLiteral("compare"));
  compare_button_->setText(tr("float32 vs mixed"));
  compare_button_->setPopupMode(QToolButton::MenuButtonPopup);
  compare_button_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  compare_button_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  auto* compare_menu = new QMenu(compare_button_);
  compare_menu->addAction(compare_);
  compare_menu->addAction(compare_all_);
  compare_button_->setMenu(compare_menu);
  sweep_button_ = new QPushButton(tr("Sweep…"));
  sweep_button_->setObjectName(QStringLiteral("sweep"));
  connect(start_button_, &QPushButton::clicked, start_, &QAction::trigger);
  connect(stop_button_, &QPushButton::clicked, stop_, &QAction::trigger);
  connect(compare_button_, &QToolButton::clicked, compare_, &QAction::trigger);
  connect(sweep_button_, &QPushButton::clicked, sweep_, &QAction::trigger);
  connect(start_, &QAction::triggered, this, &RunPanel::start_requested);
  connect(stop_, &QAction::triggered, this, &RunPanel::stop_requested);
  connect(compare_, &QAction::triggered, this, &RunPanel::compare_requested);
  connect(compare_all_, &QAction::triggered, this, &RunPanel::compare_all_requested);
  connect(sweep_, &QAction::triggered, this, &RunPanel::sweep_requested);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(start_button_);
  buttons->addWidget(stop_button_);
  buttons->addWidget(compare_button_);
  buttons->addWidget(sweep_button_);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addStretch(1);

  const auto changed = [this] { settings_edited(); };
  connect(dataset_kind_, &QComboBox::currentIndexChanged, this, changed);
  connect(dataset_dir_, &QLineEdit::textChanged, this, changed);
  connect(browse_, &QToolButton::clicked, this, &RunPanel::browse_dataset_folder);
  connect(synthetic_samples_, &QSpinBox::valueChanged, this, changed);
  connect(precision_, &QComboBox::currentIndexChanged, this, [this, changed] {
    changed();
    emit precision_changed(precision());
  });
  connect(loss_scale_mode_, &QComboBox::currentIndexChanged, this, changed);
  connect(loss_scale_value_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(batch_size_, &QSpinBox::valueChanged, this, [this, changed] {
    changed();
    emit training_changed(batch_size(), optimizer());
  });
  connect(by_epochs_, &QRadioButton::toggled, this, changed);
  connect(epochs_, &QSpinBox::valueChanged, this, changed);
  connect(steps_, &QSpinBox::valueChanged, this, changed);
  connect(optimizer_, &QComboBox::currentIndexChanged, this, [this, changed] {
    // A new optimizer starts from its Keras default learning rate.
    const auto kind = parse_optimizer(optimizer_->currentText().toStdString());
    learning_rate_->setValue(default_optimizer(kind.value_or(OptimizerKind::adam)).learning_rate);
    changed();
    emit training_changed(batch_size(), optimizer());
  });
  connect(learning_rate_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(seed_, &QSpinBox::valueChanged, this, changed);
  connect(threads_, &QSpinBox::valueChanged, this, changed);
  connect(device_, &QComboBox::currentIndexChanged, this, changed);
  for (QCheckBox* box : {tf32_, cuda_graphs_, data_on_device_, layer_timing_})
    connect(box, &QCheckBox::toggled, this, changed);
  connect(attention_, &QComboBox::currentIndexChanged, this, changed);
  for (QComboBox* box : {fp8_amax_, fp8_format_})
    connect(box, &QComboBox::currentIndexChanged, this, changed);
  for (QSpinBox* box : {fp8_history_, fp8_margin_})
    connect(box, &QSpinBox::valueChanged, this, changed);
}

void RunPanel::settings_edited() {
  update_state();
  save_settings();
  emit settings_changed(settings());
}

void RunPanel::set_precision(Policy policy) {
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(policy)));
}
void RunPanel::set_batch_size(int batch) {
  batch_size_->setValue(batch);
}
void RunPanel::set_steps(int steps) {
  by_steps_->setChecked(true);
  steps_->setValue(steps);
}
void RunPanel::set_epochs(int epochs) {
  by_epochs_->setChecked(true);
  epochs_->setValue(epochs);
}

Policy RunPanel::precision() const {
  return static_cast<Policy>(precision_->currentData().toInt());
}

std::string RunPanel::device() const {
  const int i = device_->currentIndex();
  return i <= 0 ? std::string("cpu") : "cuda:" + std::to_string(i - 1);
}

const DeviceInfo& RunPanel::device_info() const {
  return devices_[static_cast<std::size_t>(std::max(0, device_->currentIndex()))];
}

void RunPanel::set_model_shape(const Shape& input_shape, std::int64_t outputs, int vocabulary,
                               std::int64_t label_positions) {
  model_input_ = input_shape;
  model_classes_ = std::max<std::int64_t>(2, outputs);
  model_vocabulary_ = vocabulary;
  model_label_positions_ = std::max<std::int64_t>(1, label_positions);
  update_state();
}

void RunPanel::set_blocked_reason(const QString& reason) {
  blocked_reason_ = reason;
  update_state();
}

void RunPanel::set_running(bool running) {
  running_ = running;
  update_state();
}

QString RunPanel::policy_warning() const {
  return policy_warning_->text();
}

std::vector<Policy> RunPanel::comparison_policies() const {
  std::vector<Policy> policies;
  for (const Policy p : kAllPolicies) {
    if (policy_support(device_info(), p).level != Support::unsupported) policies.push_back(p);
  }
  return policies;
}

Policy RunPanel::mixed_policy() const {
  if (precision() != Policy::float32) return precision();
  return comparison_mixed_policy(device_info());
}

void RunPanel::update_state() {
  const int kind = dataset_kind_->currentIndex();
  if (kind >= 0) dataset_error_.clear();
  const bool folder = dataset_kinds()[std::max(0, kind)].folder;
  dataset_dir_->setEnabled(folder);
  browse_->setEnabled(folder);
  const bool synthetic = kind == kSyntheticKind || kind == kTokensKind;
  synthetic_samples_->setEnabled(synthetic);
  if (kind == kTokensKind) {
    synthetic_shape_->setText(model_label_positions_ > 1
                                  ? tr("%1 token ids, the next one at each step")
                                        .arg(QString::fromStdString(format_shape(model_input_)))
                                  : tr("%1 token ids, %2 classes")
                                        .arg(QString::fromStdString(format_shape(model_input_)))
                                        .arg(model_classes_));
  } else {
    synthetic_shape_->setText(tr("%1, %2 classes")
                                  .arg(QString::fromStdString(format_shape(model_input_)))
                                  .arg(model_classes_));
  }
  const int mode = loss_scale_mode_->currentIndex();
  loss_scale_value_->setEnabled(mode == kStatic || mode == kDynamic);
  epochs_->setEnabled(by_epochs_->isChecked());
  steps_->setEnabled(by_steps_->isChecked());

  // Flag a policy the chosen device runs emulated, or cannot run (the engine's one rule).
  const DeviceInfo& d = device_info();
  const PolicySupport support = policy_support(d, precision());
  policy_warning_->setText(QString::fromStdString(support.reason));
  policy_warning_->setVisible(!support.reason.empty());

  const bool gpu = d.is_gpu();
  for (QCheckBox* box : {tf32_, cuda_graphs_, data_on_device_}) box->setEnabled(gpu);
  attention_->setEnabled(gpu);
  const bool fp8 = precision() == Policy::mixed_float8;
  for (QWidget* w :
       std::initializer_list<QWidget*>{fp8_history_, fp8_amax_, fp8_margin_, fp8_format_})
    w->setEnabled(fp8);

  QString reason = blocked_reason_;
  if (reason.isEmpty() && support.level == Support::unsupported)
    reason = QString::fromStdString(support.reason);
  // Asked only once a GPU is chosen: the first answer loads the CUDA backend (then cached per
  // GPU). The GPU chosen, not the first one.
  if (reason.isEmpty() && gpu)
    reason = QString::fromStdString(cuda_device_unavailable_reason(device_->currentIndex() - 1));
  if (reason.isEmpty() && kind < 0)
    reason = dataset_error_.isEmpty() ? tr("choose a dataset") : dataset_error_;
  if (reason.isEmpty() && folder && dataset_dir_->text().trimmed().isEmpty())
    reason = tr("choose the dataset's folder");
  const bool can_start = !running_ && reason.isEmpty();
  start_->setEnabled(can_start);
  compare_->setEnabled(can_start);
  compare_all_->setEnabled(can_start);
  sweep_->setEnabled(can_start);
  sweep_button_->setEnabled(can_start);
  stop_->setEnabled(running_);
  start_button_->setEnabled(can_start);
  compare_button_->setEnabled(can_start);
  stop_button_->setEnabled(running_);
  const QString start_tip = running_           ? tr("A run is in progress")
                            : reason.isEmpty() ? tr("Start the run (Ctrl+R)")
                                               : tr("Cannot start: %1").arg(reason);
  start_->setToolTip(start_tip);
  start_button_->setToolTip(start_tip);
  compare_button_->setToolTip(reason.isEmpty() ? compare_->toolTip()
                                               : tr("Cannot start: %1").arg(reason));
  stop_button_->setToolTip(stop_->toolTip());
  sweep_button_->setToolTip(reason.isEmpty() ? sweep_->toolTip()
                                             : tr("Cannot start: %1").arg(reason));
}

}  // namespace mixlab::ui
