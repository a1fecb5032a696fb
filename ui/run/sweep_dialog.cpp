#include "ui/run/sweep_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/core/error.h"
#include "engine/train/run_fields.h"
#include "resources/builtin_models.h"
#include "ui/run/run_panel.h"

namespace mixlab::ui {

namespace {

constexpr auto& kPolicies = kAllPolicies;

QString text_of(std::string_view text) {
  return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

}  // namespace

SweepBase sweep_base(const RunPanel& panel, std::string model) {
  const RunConfig config = panel.config();
  SweepBase base;
  base.model = std::move(model);
  base.device = panel.device();
  base.precision = panel.precision();
  base.batch_size = panel.batch_size();
  base.length = config.steps > 0 ? QObject::tr("%1 steps").arg(config.steps)
                                 : QObject::tr("%1 epochs").arg(config.epochs);
  for (const RunField& field : run_fields()) {
    // The dialog sweeps these; "auto" loss scaling is what the precision sets (Keras's).
    if (field.cli_flag.empty() || field.name == "precision" || field.name == "batch_size") continue;
    if (field.name == "loss_scale" && panel.field_text(field) == QLatin1String("auto")) continue;
    const std::string text = field_text(field, config);
    if (text != field_default_text(field))
      base.settings.push_back({std::string(field.cli_flag), {text}});
  }
  return base;
}

SweepDialog::SweepDialog(SweepBase base, QWidget* parent)
    : QDialog(parent), base_(std::move(base)) {
  setWindowTitle(tr("Sweep"));
  auto* form = new QFormLayout;

  models_ = new QListWidget;
  models_->setObjectName(QStringLiteral("models"));
  models_->setToolTip(tr("The editor's model, and built-in models to run the same grid on"));
  const auto add_model = [this](const QString& name, bool checked) {
    auto* item = new QListWidgetItem(name, models_);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
  };
  add_model(QString::fromStdString(base_.model), true);
  for (std::string_view name : builtin_model_names()) {
    if (name != base_.model) add_model(text_of(name), false);
  }
  models_->setMaximumHeight(models_->sizeHintForRow(0) * 6 + 2 * models_->frameWidth());
  form->addRow(tr("Models"), models_);

  auto* policy_row = new QHBoxLayout;
  for (Policy p : kPolicies) {
    auto* box = new QCheckBox(text_of(to_string(p)));
    box->setObjectName(text_of(to_string(p)));
    box->setChecked(p == Policy::float32 || p == base_.precision);
    precisions_.push_back(box);
    policy_row->addWidget(box);
    connect(box, &QCheckBox::toggled, this, &SweepDialog::update_count);
  }
  form->addRow(tr("Precision"), policy_row);

  batch_sizes_ = new QLineEdit(QString::number(base_.batch_size));
  batch_sizes_->setObjectName(QStringLiteral("batch_sizes"));
  batch_sizes_->setPlaceholderText(QStringLiteral("32, 64, 128"));
  batch_sizes_->setToolTip(tr("Batch sizes, separated by commas"));
  form->addRow(tr("Batch sizes"), batch_sizes_);

  repeats_ = new QSpinBox;
  repeats_->setObjectName(QStringLiteral("repeats"));
  repeats_->setRange(1, 1000);
  repeats_->setToolTip(
      tr("Runs per grid point, with seeds seed, seed+1, ...: the spread of the "
         "step time"));
  form->addRow(tr("Repeats"), repeats_);

  auto* every = new QLabel(tr("Each run: %1 on %2; the other settings as in the Run panel.")
                               .arg(base_.length, QString::fromStdString(base_.device)));
  every->setWordWrap(true);
  form->addRow(QString(), every);

  count_ = new QLabel;
  count_->setObjectName(QStringLiteral("count"));
  error_ = new QLabel;
  error_->setObjectName(QStringLiteral("error"));
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #c0392b;"));
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons_->button(QDialogButtonBox::Ok)->setText(tr("Start sweep"));
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(count_);
  layout->addWidget(error_);
  layout->addWidget(buttons_);

  connect(models_, &QListWidget::itemChanged, this, &SweepDialog::update_count);
  connect(batch_sizes_, &QLineEdit::textChanged, this, &SweepDialog::update_count);
  connect(repeats_, &QSpinBox::valueChanged, this, &SweepDialog::update_count);
  update_count();
}

QCheckBox* SweepDialog::precision_box(Policy policy) const {
  return precisions_[static_cast<std::size_t>(policy)];
}

store::SweepSpec SweepDialog::spec() const {
  store::SweepSpec spec;
  for (int i = 0; i < models_->count(); ++i) {
    if (models_->item(i)->checkState() == Qt::Checked)
      spec.models.push_back(models_->item(i)->text().toStdString());
  }
  store::SweepSetting precision{"precision", {}};
  for (std::size_t i = 0; i < precisions_.size(); ++i) {
    if (precisions_[i]->isChecked()) precision.values.emplace_back(to_string(kPolicies[i]));
  }
  if (precision.values.empty()) throw ConfigError("choose at least one precision policy");
  spec.settings.push_back(std::move(precision));
  const std::vector<std::string> batches = store::split_list(batch_sizes_->text().toStdString());
  if (batches.empty()) throw ConfigError("batch sizes: give one or more, as \"32, 64, 128\"");
  spec.settings.push_back({"batch-size", batches});
  for (const store::SweepSetting& s : base_.settings) spec.settings.push_back(s);
  spec.repeats = repeats_->value();
  spec.device = base_.device;
  spec.check();
  // Named after the models' file stems ("tiny: precision x batch-size"), not their paths.
  store::SweepSpec named = spec;
  for (std::string& m : named.models)
    m = QFileInfo(QString::fromStdString(m)).completeBaseName().toStdString();
  spec.name = named.display_name();
  return spec;
}

void SweepDialog::update_count() {
  members_ = 0;
  error_text_.clear();
  try {
    members_ = static_cast<int>(store::plan_sweep(spec()).size());
  } catch (const ConfigError& e) {
    error_text_ = QString::fromStdString(e.what());
  }
  count_->setText(members_ == 1 ? tr("1 run") : tr("%1 runs").arg(members_));
  error_->setText(error_text_);
  error_->setVisible(!error_text_.isEmpty());
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(members_ > 0);
}

int SweepDialog::member_count() const {
  return members_;
}

QString SweepDialog::error() const {
  return error_text_;
}

}  // namespace mixlab::ui
