#include "ui/doctor/doctor_view.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "engine/core/error.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
#include "ui/doctor/doctor_charts.h"
#include "ui/doctor/doctor_figures.h"
#include "ui/doctor/doctor_report.h"
#include "ui/doctor/doctor_worker.h"
#include "ui/doctor/findings_model.h"
#include "ui/editor/model_document.h"
#include "ui/qt_text.h"
#include "ui/settings.h"

namespace mixlab::ui {
namespace {

// The measurement Measure runs: as mixlab-cli doctor --measure does by default.
constexpr int kMeasureSteps = 30;
constexpr int kMeasureWarmup = 5;
constexpr int kTableHeight_px = 240;  // at first: the splitter moves it

}  // namespace

DoctorView::DoctorView(ModelDocument* doc, const std::vector<DeviceInfo>& devices,
                       QWidget* parent)
    : QWidget(parent), doc_(doc), devices_(doctor_devices(devices)) {
  worker_ = new DoctorWorker(this);
  recompute_timer_ = new QTimer(this);
  recompute_timer_->setSingleShot(true);
  recompute_timer_->setInterval(0);
  connect(recompute_timer_, &QTimer::timeout, this, &DoctorView::recompute);

  verdict_ = new QLabel;
  verdict_->setObjectName(QStringLiteral("doctor_verdict"));
  verdict_->setWordWrap(true);
  verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = verdict_->font();
  bold.setBold(true);
  verdict_->setFont(bold);
  figures_ = new QLabel;
  figures_->setWordWrap(true);
  figures_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  findings_ = new FindingsModel(this);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("doctor_findings"));
  table_->setModel(findings_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  QHeaderView* header = table_->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  for (const int c : {FindingsModel::Severity, FindingsModel::Finding, FindingsModel::Layers,
                      FindingsModel::PredictedGain})
    header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  header->setSectionResizeMode(FindingsModel::Message, QHeaderView::Stretch);
  header->resizeSection(FindingsModel::Fix, 320);
  charts_ = new DoctorCharts;

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(charts_);
  // The charts take most of the height; the table scrolls (a model has a handful of findings).
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({kTableHeight_px, 2 * kTableHeight_px});
  splitter->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(build_controls());
  layout->addWidget(verdict_);
  layout->addWidget(figures_);
  layout->addWidget(splitter, 1);

  // A finding's first layer: selected in the editor on a click, shown there on activation.
  const auto first_layer = [this](const QModelIndex& index) {
    const auto layers = index.data(static_cast<int>(FindingsModel::Role::Layers)).value<QList<int>>();
    return layers.isEmpty() ? -1 : layers.front();
  };
  const auto select = [this, first_layer](const QModelIndex& index) {
    if (const int layer = first_layer(index); layer >= 0) emit layer_selected(layer);
  };
  // The keys move the current row; a click on the current row selects its layer again.
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, select);
  connect(table_, &QAbstractItemView::clicked, this, select);
  connect(table_, &QAbstractItemView::activated, this,
          [this, first_layer](const QModelIndex& index) {
            if (const int layer = first_layer(index); layer >= 0) emit layer_activated(layer);
          });
  connect(doc_, &ModelDocument::changed, this, &DoctorView::schedule);
  connect(worker_, &DoctorWorker::device_profiled, this, &DoctorView::on_device_profiled);
  connect(worker_, &DoctorWorker::device_profile_failed, this,
          [this](const QString& device, const QString& message) {
            for (DoctorDevice& d : devices_) {
              if (QString::fromStdString(d.backend_device) == device) d.profile_error = message;
            }
            schedule();
          });
  connect(worker_, &DoctorWorker::progress, this, [this](const QString& text) { set_status(text); });
  connect(worker_, &DoctorWorker::measured, this, &DoctorView::on_measured);
  connect(worker_, &DoctorWorker::kept, this, [this](const QString& text, bool ok) {
    set_status(status_->text() + QStringLiteral(". ") + text, !ok);
  });
  connect(worker_, &DoctorWorker::measure_failed, this, &DoctorView::on_failed);

  select_device(settings::kDoctorDevice.get());
  update_policy_choice();
  connect(device_, &QComboBox::currentIndexChanged, this, [this] {
    settings::kDoctorDevice.set(current_device().label);
    update_policy_choice();
    schedule();
  });
  connect(policy_, &QComboBox::currentIndexChanged, this, &DoctorView::schedule);
  schedule();
}

DoctorView::~DoctorView() = default;

QWidget* DoctorView::build_controls() {
  device_ = new QComboBox;
  device_->setObjectName(QStringLiteral("doctor_device"));
  device_->setToolTip(tr("The device to diagnose: this machine's (measurable) or a GPU profile "
                         "from published figures (a prediction)"));
  for (const DoctorDevice& d : devices_) device_->addItem(d.label);
  policy_ = new QComboBox;
  policy_->setObjectName(QStringLiteral("doctor_policy"));
  policy_->setToolTip(tr("The mixed policy set against float32"));
  policy_->addItem(QString(), -1);  // the device's choice: update_policy_choice() names it
  for (const Policy p : {Policy::mixed_float16, Policy::mixed_bfloat16})
    policy_->addItem(qt_text(to_string(p)), static_cast<int>(p));

  measure_ = new QPushButton(tr("Measure"));
  measure_->setObjectName(QStringLiteral("doctor_measure"));
  connect(measure_, &QPushButton::clicked, this, &DoctorView::start_measure);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setToolTip(tr("Stop the measurement (within a step)"));
  connect(cancel_, &QPushButton::clicked, worker_, &DoctorWorker::cancel);
  save_ = new QPushButton(tr("Save report…"));
  save_->setToolTip(tr("The diagnosis as JSON (as mixlab-cli doctor --json writes it), its "
                       "findings and layers as CSV and an HTML report beside it"));
  connect(save_, &QPushButton::clicked, this, &DoctorView::save_report_as);
  back_ = new QPushButton(tr("Back to the editor's model"));
  back_->setToolTip(tr("Diagnose the model in the editor at the Run panel's batch size again"));
  back_->hide();
  connect(back_, &QPushButton::clicked, this, &DoctorView::back_to_editor);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("doctor_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* area = new QWidget;
  auto* row = new QHBoxLayout(area);
  row->setContentsMargins(0, 0, 0, 0);
  // No mnemonics: Alt+M, Alt+S... belong to the tabs and menus.
  row->addWidget(new QLabel(tr("Device:")));
  row->addWidget(device_);
  row->addWidget(new QLabel(tr("Mixed policy:")));
  row->addWidget(policy_);
  row->addWidget(measure_);
  row->addWidget(cancel_);
  row->addWidget(save_);
  row->addWidget(back_);
  row->addWidget(status_, 1);
  return area;
}

void DoctorView::set_run(const RunConfig& run) {
  run_ = run;
  schedule();
}

void DoctorView::diagnose_runs(const RunPair& pair) {
  pinned_ = pair;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].measurable() && devices_[i].backend_device == pair.device) {
      device_->setCurrentIndex(static_cast<int>(i));
      break;
    }
  }
  set_mixed_policy(pair.mixed);
  back_->show();
  set_status(tr("Runs %1 and %2 from Compare: their model at batch %3, measured as they ran")
                 .arg(pair.float32_run)
                 .arg(pair.mixed_run)
                 .arg(pair.run.batch_size));
  schedule();
}

void DoctorView::back_to_editor() {
  if (!pinned_) return;
  pinned_.reset();
  back_->hide();
  set_status({});
  schedule();
}

void DoctorView::set_run_active(bool active) {
  run_active_ = active;
  update_actions();
}

bool DoctorView::select_device(const QString& name) {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const DoctorDevice& d = devices_[i];
    const bool named = d.label.compare(name, Qt::CaseInsensitive) == 0 ||
                       (d.profile && QString::fromStdString(d.profile->name)
                                             .compare(name, Qt::CaseInsensitive) == 0);
    if (named) {
      device_->setCurrentIndex(static_cast<int>(i));
      return true;
    }
  }
  return false;
}

void DoctorView::set_mixed_policy(std::optional<Policy> policy) {
  policy_->setCurrentIndex(policy ? policy_->findData(static_cast<int>(*policy)) : 0);
}

DoctorDevice& DoctorView::current_device() {
  return devices_[static_cast<std::size_t>(std::max(0, device_->currentIndex()))];
}

void DoctorView::update_policy_choice() {
  const Policy own = comparison_mixed_policy(current_device().info);
  policy_->setItemText(0, tr("%1 (the device's choice)").arg(qt_text(to_string(own))));
}

void DoctorView::schedule() {
  recompute_timer_->start();
}

void DoctorView::refresh_now() {
  recompute_timer_->stop();
  recompute();
}

std::optional<doctor::DiagnosisInput> DoctorView::current_input(QString* why_none) {
  const ModelDocument::Validation& v = doc_->validation();
  if (!pinned_ && !v.ok) {
    *why_none = tr("The model cannot be diagnosed until it is valid: %1").arg(v.message);
    return std::nullopt;
  }
  const DoctorDevice& dev = current_device();
  if (!dev.profile) {
    const QString which = dev.source == DoctorDevice::Source::this_cpu ? tr("this CPU's")
                                                                      : tr("this GPU's");
    *why_none = dev.profile_error.isEmpty()
                    ? tr("Measuring %1 roofs… (a few seconds, once: they are kept)").arg(which)
                    : tr("The roofs of %1 could not be measured: %2")
                          .arg(dev.label, dev.profile_error);
    // "Measuring this CPU's roofs…": the sentence starts with its capital.
    (*why_none)[0] = why_none->at(0).toUpper();
    return std::nullopt;
  }
  doctor::DiagnosisInput input;
  input.spec = pinned_ ? pinned_->spec : doc_->spec();
  input.device = *dev.profile;
  input.run = pinned_ ? pinned_->run : run_;
  const int chosen = policy_->currentData().toInt();
  input.mixed = chosen < 0 ? comparison_mixed_policy(dev.info) : static_cast<Policy>(chosen);
  return input;
}

void DoctorView::recompute() {
  QString why_none;
  const std::optional<doctor::DiagnosisInput> input = current_input(&why_none);
  if (!input) {
    const DoctorDevice& dev = current_device();
    // This machine's devices' roofs are measured when the tab first shows them, not at
    // start-up.
    if (!dev.profile && dev.profile_error.isEmpty() && isVisible() && !worker_->busy())
      worker_->profile_device(dev);
    show_diagnosis(std::nullopt, why_none);
    return;
  }
  // Runs from Compare are the measurement of their own input.
  const std::optional<doctor::Measurement> measurement =
      pinned_ ? std::optional(pinned_->measured) : measured_;
  const bool measured =
      pinned_ || (measured_ && measured_input_ && same_input(*measured_input_, *input));
  // Nothing changed (the tab shown again, a change of the policy the editor shows): the
  // findings keep their selection.
  if (diagnosis_ && same_input(diagnosis_->input, *input) &&
      diagnosis_->measured.has_value() == measured)
    return;
  try {
    show_diagnosis(doctor::diagnose(*input, measured ? measurement : std::nullopt));
  } catch (const std::exception& e) {
    show_diagnosis(std::nullopt, tr("Cannot diagnose: %1").arg(QString::fromUtf8(e.what())));
  }
}

void DoctorView::show_diagnosis(std::optional<doctor::Diagnosis> d, const QString& why_none) {
  diagnosis_ = std::move(d);
  verdict_->setText(diagnosis_ ? QString::fromStdString(diagnosis_->verdict) : why_none);
  figures_->setText(diagnosis_ ? step_figures_text(*diagnosis_) : QString());
  findings_->set_findings(diagnosis_ ? diagnosis_->findings : std::vector<doctor::Finding>{});
  charts_->show_diagnosis(diagnosis_ ? &*diagnosis_ : nullptr);
  emit layer_findings_changed(findings_->findings_by_layer());
  update_actions();
}

void DoctorView::update_actions() {
  const DoctorDevice& dev = current_device();
  const bool measuring = worker_->measuring();
  QString why_not;
  if (!dev.measurable())
    why_not = tr("%1 is a profile of published figures: it can be predicted, not measured. "
                 "Measure runs on this machine's devices.")
                  .arg(dev.profile ? QString::fromStdString(dev.profile->name) : dev.label);
  else if (run_active_)
    why_not = tr("A run is in progress: measure when it has ended (both would share the device)");
  else if (worker_->busy())
    why_not = measuring ? tr("Measuring now") : tr("This CPU's roofs are being measured");
  else if (!diagnosis_)
    why_not = tr("Nothing to measure: %1").arg(verdict_->text());
  measure_->setEnabled(why_not.isEmpty());
  measure_->setToolTip(why_not.isEmpty()
                           ? tr("Run float32 and the mixed policy on %1 (%2 steps each, %3 "
                                "warm-up) and set the measurement beside the prediction")
                                 .arg(dev.label)
                                 .arg(kMeasureSteps)
                                 .arg(kMeasureWarmup)
                           : why_not);
  cancel_->setEnabled(measuring);
  save_->setEnabled(diagnosis_.has_value());
}

bool DoctorView::busy() const {
  return worker_->busy();
}

void DoctorView::start_measure() {
  if (!diagnosis_ || !current_device().measurable()) return;
  doctor::MeasureOptions options;
  options.steps = kMeasureSteps;
  options.warmup = kMeasureWarmup;
  if (worker_->measure(diagnosis_->input, current_device().backend_device, options))
    set_status(tr("Measuring…"));
  update_actions();
}

void DoctorView::on_device_profiled(const QString& device, const doctor::DeviceProfile& profile,
                                    bool measured_now, const QString& not_measured) {
  for (DoctorDevice& d : devices_) {
    if (QString::fromStdString(d.backend_device) != device) continue;
    d.profile = profile;
    if (!not_measured.isEmpty()) {
      set_status(tr("The roofs of %1 could not be measured (%2): predicting from its published "
                    "profile")
                     .arg(d.label, not_measured),
                 true);
    }
    if (!measured_now) continue;
    const bool cpu = d.source == DoctorDevice::Source::this_cpu;
    set_status(tr("Measured the roofs of %1 (kept in %2)")
                   .arg(d.label, QString::fromStdString((cpu ? doctor::default_cpu_profile_cache()
                                                             : doctor::default_gpu_profile_cache())
                                                            .string())));
  }
  schedule();
}

void DoctorView::set_store_path(const std::filesystem::path& db) {
  worker_->set_store_path(db);
}

void DoctorView::on_measured(const doctor::Measurement& m, const doctor::DiagnosisInput& input) {
  measured_ = m;
  measured_input_ = input;
  set_status(tr("Measured: %1 float32 (median step %2 ms against %3 ms)")
                 .arg(qt_text(doctor::speedup_words(m.speedup())))
                 .arg(m.mixed.step_ms, 0, 'f', 2)
                 .arg(m.float32.step_ms, 0, 'f', 2));
  refresh_now();
}

void DoctorView::on_failed(const QString& message, bool cancelled) {
  if (cancelled)
    set_status(tr("Measurement cancelled"));
  else
    set_status(tr("The measurement failed: %1").arg(message), true);
  update_actions();
}

void DoctorView::set_status(const QString& text, bool error) {
  status_->setText(text);
  QPalette palette = status_->palette();
  palette.setColor(QPalette::WindowText, error ? QColor(160, 0, 0)
                                               : this->palette().color(QPalette::WindowText));
  status_->setPalette(palette);
}

QString DoctorView::status_text() const {
  return status_->text();
}

QString DoctorView::verdict_text() const {
  return verdict_->text();
}

const doctor::Diagnosis* DoctorView::diagnosis() const {
  return diagnosis_ ? &*diagnosis_ : nullptr;
}

QAbstractItemView* DoctorView::findings_view() const {
  return table_;
}

bool DoctorView::save_report(const QString& json_path, QString* error) {
  try {
    if (!diagnosis_) throw Error("there is no diagnosis to save: " + verdict_->text().toStdString());
    save_doctor_report(*diagnosis_, json_path.toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

void DoctorView::save_report_as() {
  if (!diagnosis_) return;
  const QString name = QStringLiteral("doctor-%1-%2.json")
                           .arg(QString::fromStdString(diagnosis_->input.spec.name),
                                QString::fromStdString(diagnosis_->input.device.name))
                           .replace(QLatin1Char(' '), QLatin1Char('-'));
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the doctor's report"), QDir(settings::kLastDirectory.get()).filePath(name),
      tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  settings::kLastDirectory.set(QFileInfo(path).absolutePath());
  QString error;
  if (save_report(path, &error)) {
    set_status(tr("Saved %1, with the findings and layers as CSV and an HTML report beside it "
                  "(%2)")
                   .arg(QDir::toNativeSeparators(path),
                        QDir::toNativeSeparators(QString::fromStdString(
                            html_report_path(path.toStdString()).string()))));
  } else {
    set_status(error, true);
  }
}

void DoctorView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  schedule();  // this CPU's roofs are measured on the first look
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_doctor_view.cpp"
